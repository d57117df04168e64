"""Tests for gpukit/data/*.csv, gpukit.catalog and `gpukit gpus|models|links`.

The raw CSVs are read with the csv module (not the loader) for the provenance and unit checks, so
a loader bug cannot hide a bad row. Malformed catalogs are written to a tmp folder and loaded via
GPUKIT_DATA.
"""

from __future__ import annotations

import csv
import datetime
import json
import math
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpukit import catalog
from gpukit.catalog import get_gpu, get_interconnect, get_model
from gpukit.cli import main
from gpukit.units import GiB

DATA = Path(__file__).resolve().parent.parent / "gpukit" / "data"  # the catalogs ship inside the package
KINDS = ("gpus", "models", "interconnects")
PEAKS = tuple(catalog.peak_column(d) for d in catalog.PEAK_DTYPES)

REQUIRED_ROWS = {
    "gpus": {
        "v100-32gb",
        "a100-40gb",
        "a100-80gb",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "b200",
        "l4",
        "l40s",
        "a10g",
        "t4",
        "rtx-3090",
        "rtx-4090",
        "rtx-a6000",
        "rtx-6000-ada",
        "mi300x",
    },
    "models": {
        "gpt2",
        "gpt2-medium",
        "gpt2-large",
        "gpt2-xl",
        "bert-base-cased",
        "bert-large",
        "llama-2-7b",
        "llama-2-13b",
        "llama-2-70b",
        "llama-3-8b",
        "llama-3-70b",
        "llama-3.1-405b",
        "mistral-7b",
        "gpt3-175b",
    },
    "interconnects": {
        "pcie3",
        "pcie4",
        "pcie5",
        "nvlink2",
        "nvlink3",
        "nvlink4",
        "nvlink5",
        "ib-hdr",
        "ib-ndr",
        "ib-xdr",
        "eth-1g",
        "eth-10g",
        "eth-25g",
        "eth-100g",
        "eth-400g",
        "roce-100g",
        "roce-400g",
        "efa",
    },
}


@pytest.fixture(autouse=True)
def _real_data(monkeypatch):
    monkeypatch.delenv("GPUKIT_DATA", raising=False)


def raw(kind: str) -> list[dict[str, str]]:
    with (DATA / f"{kind}.csv").open(newline="") as f:
        return list(csv.DictReader(f))


def raw_row(name: str, kind: str = "models") -> dict[str, str]:
    return next(r for r in raw(kind) if r["name"] == name)


def num(row: dict, col: str) -> float | None:
    return float(row[col]) if row[col].strip() else None


# ---------------------------------------------------------------- provenance and names
def test_catalogs_ship_inside_the_package(monkeypatch):
    """data_dir() is the package's own data/ (importlib.resources), so an installed wheel finds its
    catalogs wherever it lives; GPUKIT_DATA points elsewhere (tests/test_install.py checks a real wheel)."""
    from importlib import resources

    import gpukit

    assert catalog.data_dir() == Path(gpukit.__file__).resolve().parent / "data" == DATA
    assert catalog.data_dir() == Path(str(resources.files("gpukit") / "data"))
    for kind in (*KINDS, "prices", "serving_published", "claims"):
        assert (catalog.data_dir() / f"{kind}.csv").is_file(), kind
    monkeypatch.setenv("GPUKIT_DATA", "/elsewhere")
    assert catalog.data_dir() == Path("/elsewhere")


@pytest.mark.parametrize("kind", KINDS)
def test_every_row_has_provenance(kind):
    rows = raw(kind)
    assert rows
    for r in rows:
        assert r["source"].strip(), r["name"]
        assert r["source_url"].startswith(("https://", "http://")), r["name"]
        day = datetime.date.fromisoformat(r["accessed"])  # ValueError if not ISO
        assert datetime.date(2019, 1, 1) <= day <= datetime.date(2100, 1, 1), r["name"]


@pytest.mark.parametrize("kind", KINDS)
def test_names_unique_lower_case_and_required_rows_present(kind):
    names = [r["name"] for r in raw(kind)]
    assert len(names) == len({n.lower() for n in names})
    assert all(n == n.lower() and " " not in n for n in names)
    assert REQUIRED_ROWS[kind] <= set(names), REQUIRED_ROWS[kind] - set(names)


@pytest.mark.parametrize("kind", KINDS)
def test_readme_documents_every_column(kind):
    readme = (DATA / "README.md").read_text()
    for col in raw(kind)[0]:
        assert f"`{col}`" in readme, f"{kind}.csv column {col!r} is not documented in gpukit/data/README.md"


# ---------------------------------------------------------------- GPU units
@pytest.mark.parametrize("row", raw("gpus"), ids=lambda r: r["name"])
def test_gpu_units_sane(row):
    assert 8 <= float(row["memory_gib"]) <= 300
    assert 100 <= float(row["hbm_bandwidth_gbps"]) <= 20000
    assert 0 <= float(row["nvlink_gbps"]) <= 1000
    assert int(row["pcie_gen"]) in (3, 4, 5, 6)
    assert 50 <= float(row["tdp_w"]) <= 1500
    peaks = {c: num(row, c) for c in PEAKS}
    assert all(v is None or v > 0 for v in peaks.values())
    half = peaks["bf16_tflops"] or peaks["fp16_tflops"]
    chain = [
        v
        for v in (peaks["fp4_tflops"], peaks["fp8_tflops"], half, peaks["tf32_tflops"], peaks["fp32_tflops"])
        if v is not None
    ]
    assert chain == sorted(chain, reverse=True), f"expected fp4 >= fp8 >= bf16 >= tf32 >= fp32, got {chain}"
    if peaks["fp4_tflops"]:
        assert peaks["fp8_tflops"] and row["arch"] == "blackwell"  # FP4 tensor cores arrive with Blackwell
        assert peaks["fp4_tflops"] == 2 * peaks["fp8_tflops"]
    if row["nvlink_domain_gpus"]:
        assert int(row["nvlink_domain_gpus"]) in (1, 2, 4, 8, 72) and float(row["nvlink_gbps"]) > 0
    if peaks["bf16_tflops"] and peaks["fp16_tflops"]:
        assert peaks["bf16_tflops"] == peaks["fp16_tflops"]  # same tensor rate with FP32 accumulate


@pytest.mark.parametrize(
    "name, col, value",
    [
        # dense figures fixed by the task brief (= half the datasheets' sparse figures)
        ("h100-sxm", "bf16_tflops", 989.4),
        ("h100-sxm", "fp8_tflops", 1978.9),
        ("h100-sxm", "fp32_tflops", 66.9),
        ("h100-sxm", "tf32_tflops", 494.7),
        ("h100-sxm", "hbm_bandwidth_gbps", 3350),
        ("h100-sxm", "nvlink_gbps", 450),
        ("h200", "bf16_tflops", 989.4),
        ("h200", "hbm_bandwidth_gbps", 4800),
        ("a100-80gb", "bf16_tflops", 312),
        ("a100-80gb", "tf32_tflops", 156),
        ("a100-80gb", "fp32_tflops", 19.5),
        ("a100-80gb", "hbm_bandwidth_gbps", 2039),
        ("a100-40gb", "hbm_bandwidth_gbps", 1555),
        ("a100-40gb", "nvlink_gbps", 300),
        ("v100-32gb", "nvlink_gbps", 150),
        ("b200", "nvlink_gbps", 900),
        ("mi300x", "memory_gib", 192),
        ("mi300x", "hbm_bandwidth_gbps", 5300),
        ("mi300x", "bf16_tflops", 1307.4),
        ("mi300x", "fp8_tflops", 2614.9),
        ("mi300x", "nvlink_gbps", 448),
        ("rtx-3090", "nvlink_gbps", 56.25),
        # issue 24's rows (datasheets cited in each row; sparse figures halved)
        ("h100-nvl", "memory_gib", 94),
        ("h100-nvl", "hbm_bandwidth_gbps", 3900),
        ("h100-nvl", "bf16_tflops", 835.5),
        ("h100-nvl", "fp8_tflops", 1670.5),
        ("h100-nvl", "nvlink_domain_gpus", 2),
        ("gh200", "memory_gib", 96),
        ("gh200", "hbm_bandwidth_gbps", 4000),
        ("gh200", "fp8_tflops", 1978.9),
        ("h800", "nvlink_gbps", 200),  # 400 GB/s both directions: the export variant's NVLink
        ("h800", "fp8_tflops", 1978.9),
        ("b200", "fp4_tflops", 9000),
        ("gb200", "bf16_tflops", 2500),
        ("gb200", "fp8_tflops", 5000),
        ("gb200", "fp4_tflops", 10000),
        ("gb200", "memory_gib", 186),
        ("gb200", "hbm_bandwidth_gbps", 8000),
        ("gb200", "nvlink_domain_gpus", 72),
        ("mi325x", "memory_gib", 256),
        ("mi325x", "hbm_bandwidth_gbps", 6000),
        ("mi325x", "fp8_tflops", 2614.9),
    ],
)
def test_gpu_spot_values(name, col, value):
    row = next(r for r in raw("gpus") if r["name"] == name)
    assert float(row[col]) == pytest.approx(value)


def test_unsupported_dtypes_are_empty_and_raise():
    rows = {r["name"]: r for r in raw("gpus")}
    for name in ("v100-32gb", "t4"):
        assert (
            not rows[name]["tf32_tflops"] and not rows[name]["bf16_tflops"] and not rows[name]["fp8_tflops"]
        )
    for name in ("a100-40gb", "a100-80gb", "rtx-3090", "rtx-a6000", "a10g"):
        assert not rows[name]["fp8_tflops"]
    with pytest.raises(ValueError, match="has no peak"):
        get_gpu("a100-80gb").peak_tflops("fp8")
    assert get_gpu("h100-sxm").peak_tflops("fp16") == 989.4


def test_notes_say_what_peak_tflops_does():
    """A row's notes that describe GPU.peak_tflops on a missing dtype must say what it does (t4's said it fell
    back to the fp16 figure; it raises, and callers take GPU.half_dtype)."""
    for r in raw("gpus"):
        g = get_gpu(r["name"])
        for dtype in ("bf16", "tf32", "fp8"):
            said = f"peak_tflops('{dtype}')"
            if said in r["notes"]:
                if "falls back" in r["notes"].split(said, 1)[1][:40]:
                    assert g.peak_tflops(dtype) == g.peak_tflops("fp16"), r["name"]
                else:
                    with pytest.raises(ValueError, match="has no peak"):
                        g.peak_tflops(dtype)
        if "half_dtype is fp16" in r["notes"]:
            assert g.half_dtype == "fp16"


def test_fp4_peak_and_nvlink_domain():
    """FP4 is a peak like the others (Blackwell only); GB200 NVL72 is one NVLink domain of 72 GPUs."""
    assert get_gpu("gb200").peak_tflops("fp4") == 10000 and get_gpu("b200").has("fp4")
    with pytest.raises(ValueError, match="has no peak"):
        get_gpu("h100-sxm").peak_tflops("fp4")
    assert get_gpu("gb200").nvlink_domain_gpus == 72 and get_gpu("h100-sxm").nvlink_domain_gpus == 8
    assert get_gpu("l4").nvlink_domain_gpus is None and get_gpu("gh200").nvlink_domain_gpus is None
    assert get_gpu("h800").peaks_tflops == get_gpu("h100-sxm").peaks_tflops  # same GH100 tensor peaks
    assert get_gpu("mi325x").peaks_tflops == get_gpu("mi300x").peaks_tflops  # same CDNA3 compute


def test_cli_gpus_json_has_fp4_and_domain(capsys):
    assert main(["gpus", "gb200", "t4", "--json"]) == 0
    gb, t4 = json.loads(capsys.readouterr().out)
    assert (gb["fp4_tflops"], gb["nvlink_domain_gpus"]) == (10000, 72)
    assert (t4["fp4_tflops"], t4["nvlink_domain_gpus"]) == (None, None)


def test_gpu_object_units():
    h100 = get_gpu("h100-sxm")
    assert h100.memory_bytes == 80 * GiB  # "80GB" HBM is 80 GiB
    assert h100.ridge_flop_per_byte["bf16"] == pytest.approx(989.4e12 / 3350e9)
    assert get_gpu("h200").peaks_tflops == h100.peaks_tflops  # same GH100 compute
    assert get_gpu("  H100-SXM ") is h100


@pytest.mark.parametrize(
    "gpu, link",
    [
        ("v100-32gb", "nvlink2"),
        ("a100-40gb", "nvlink3"),
        ("a100-80gb", "nvlink3"),
        ("h100-sxm", "nvlink4"),
        ("h200", "nvlink4"),
        ("b200", "nvlink5"),
        ("gb200", "nvlink5"),
        ("gh200", "nvlink4"),
        ("h800", "nvlink4-h800"),
    ],
)
def test_gpu_nvlink_matches_interconnect_catalog(gpu, link):
    assert get_gpu(gpu).nvlink_gbps == get_interconnect(link).bandwidth_gbps


# ---------------------------------------------------------------- interconnects
@pytest.mark.parametrize("row", raw("interconnects"), ids=lambda r: r["name"])
def test_interconnect_units_sane(row):
    assert 0 < float(row["bandwidth_gbps"]) <= 1000
    assert 0 < float(row["latency_us"]) <= 1000
    assert row["scope"] in ("intra-node", "inter-node")


@pytest.mark.parametrize(
    "name, gbit",
    [
        ("ib-hdr", 200),
        ("ib-ndr", 400),
        ("ib-xdr", 800),
        ("eth-1g", 1),
        ("eth-10g", 10),
        ("eth-25g", 25),
        ("eth-100g", 100),
        ("eth-400g", 400),
        ("roce-100g", 100),
        ("roce-400g", 400),
        ("efa", 3200 / 8),
    ],
)
def test_network_bandwidth_is_gbit_over_8(name, gbit):
    assert get_interconnect(name).bandwidth_gbps == pytest.approx(gbit / 8)


def test_interconnect_orderings():
    links = catalog.interconnects()
    bw = {n: link.bandwidth_gbps for n, link in links.items()}
    assert (
        bw["pcie3"]
        < bw["pcie4"]
        < bw["pcie5"]
        < bw["nvlink2"]
        < bw["nvlink3"]
        < bw["nvlink4"]
        < bw["nvlink5"]
    )
    for gen, gt_per_s in (("pcie3", 8), ("pcie4", 16), ("pcie5", 32)):  # x16, 128b/130b encoding
        assert bw[gen] == pytest.approx(16 * gt_per_s * 128 / 130 / 8, abs=1e-3)
    assert links["nvlink4"].latency_us < links["pcie5"].latency_us < links["ib-ndr"].latency_us
    assert links["ib-ndr"].latency_us < links["eth-100g"].latency_us < links["eth-1g"].latency_us


# ---------------------------------------------------------------- models
@pytest.mark.parametrize("name", sorted(r["name"] for r in raw("models")))
def test_model_params_match_published_within_the_rows_tolerance(name):
    """n_params meets published_params, and a mixture of experts' active_params meets published_active_params
    (in the figure's embedding convention), within published_tolerance_pct: 1% unless the row states why not."""
    m, pub = get_model(name), catalog.published_counts(name)
    assert m.published_params == pub.total > 0
    assert pub.tolerance_pct <= 2, "a tolerance over 2% hides a wrong shape: fix the row instead"
    if pub.tolerance_pct != catalog.DEFAULT_TOLERANCE_PCT:
        assert "olerance" in raw_row(name)["notes"], (
            f"{name}: say in notes why the tolerance is {pub.tolerance_pct}%"
        )
    assert abs(pub.off_pct(m.n_params, pub.total)) <= pub.tolerance_pct, (m.n_params, pub.total)
    if m.is_moe:
        assert pub.active is not None, f"{name}: a mixture of experts needs published_active_params"
        got = pub.comparable_active(m)
        assert abs(pub.off_pct(got, pub.active)) <= pub.tolerance_pct, (got, pub.active)
        assert m.active_params < m.n_params
    else:
        assert pub.active is None and m.active_params == m.n_params


# Published figures (model cards and reports): total and active parameters of today's mixtures of experts.
# Each is the rounded figure its source prints, so the check is within the row's tolerance, not exact.
MOE_PUBLISHED = {
    "mixtral-8x7b": (46.7e9, 12.9e9),  # Mistral AI, Mixtral of experts (2023)
    "mixtral-8x22b": (141e9, 39e9),  # Mistral AI, Mixtral 8x22B announcement (2024)
    "deepseek-v3": (671e9, 37e9),  # DeepSeek-V3 report, abstract
    "qwen3-30b-a3b": (30.5e9, 3.3e9),  # Qwen3-30B-A3B model card
    "qwen3-235b-a22b": (235e9, 22e9),  # Qwen3-235B-A22B model card
    "gpt-oss-20b": (20.91e9, 3.61e9),  # gpt-oss model card Table 1 (active without the input embedding)
    "gpt-oss-120b": (116.83e9, 5.13e9),
    "llama-4-scout": (109e9, 17e9),  # Meta, The Llama 4 herd (total includes the vision encoder)
    "llama-4-maverick": (400e9, 17e9),
}


@pytest.mark.parametrize("name", sorted(MOE_PUBLISHED))
def test_moe_rows_carry_the_published_total_and_active_figures(name):
    pub = catalog.published_counts(name)
    assert (pub.total, pub.active) == MOE_PUBLISHED[name]
    m = get_model(name)
    assert m.is_moe and m.n_experts >= 8 and 1 <= m.experts_per_token <= 8


def test_moe_mla_rows_have_the_published_shapes():
    """The config.json fields that make each count: DeepSeek-V3 MLA, 256 routed + 1 shared, top-8, 3 dense
    layers, one MTP module; gpt-oss alternating windows of 128; Llama 4 Scout top-1 + shared."""
    ds = get_model("deepseek-v3")
    assert (ds.n_experts, ds.n_shared_experts, ds.experts_per_token, ds.first_dense_layers) == (256, 1, 8, 3)
    assert (ds.kv_lora_rank, ds.q_lora_rank, ds.qk_rope_head_dim, ds.v_head_dim, ds.mtp_layers) == (
        512,
        1536,
        64,
        128,
        1,
    )
    assert ds.n_moe_layers == 58 and ds.is_mla
    oss = get_model("gpt-oss-120b")
    assert (oss.sliding_window, oss.full_attention_every, oss.n_experts, oss.experts_per_token) == (
        128,
        2,
        128,
        4,
    )
    assert [oss.is_full_attention_layer(i) for i in range(4)] == [False, True, False, True]
    scout = get_model("llama-4-scout")
    assert (scout.n_experts, scout.experts_per_token, scout.n_shared_experts, scout.moe_ffn_hidden) == (
        16,
        1,
        1,
        8192,
    )
    mav = get_model("llama-4-maverick")
    assert (mav.n_experts, mav.moe_every, mav.n_moe_layers) == (128, 2, 24)
    assert [mav.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    # the dense rows that differ from hidden / n_heads
    assert get_model("qwen3-32b").head_dim == 128 and get_model("gemma-2-9b").head_dim == 256


def test_bad_moe_column_names_the_column_and_line(tmp_path, monkeypatch):
    _copy_data(tmp_path)
    _edit(
        tmp_path / "models.csv",
        lambda r: _set(r, [x[0] for x in r].index("mixtral-8x7b"), "experts_per_token", "9"),
    )
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    with pytest.raises(
        ValueError, match=r"models\.csv:\d+: experts_per_token must be in \[1, n_experts 8\]"
    ) as e:
        catalog.models()
    assert "\n" not in str(e.value)


def test_bad_active_excludes_embedding_is_rejected(tmp_path, monkeypatch):
    _copy_data(tmp_path)
    _edit(
        tmp_path / "models.csv",
        lambda r: _set(r, [x[0] for x in r].index("gpt-oss-20b"), "active_excludes_embedding", "yes"),
    )
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    with pytest.raises(ValueError, match=r"models\.csv:\d+: 'active_excludes_embedding' must be true, false"):
        catalog.models()


def test_model_layouts():
    gpt2, llama, bert = get_model("gpt2"), get_model("llama-2-7b"), get_model("bert-base-cased")
    assert (gpt2.tied_embeddings, gpt2.position, gpt2.mlp, gpt2.norm, gpt2.bias) == (
        True,
        "learned",
        "gelu",
        "layernorm",
        True,
    )
    assert (llama.tied_embeddings, llama.position, llama.mlp, llama.norm, llama.bias) == (
        False,
        "rope",
        "swiglu",
        "rmsnorm",
        False,
    )
    assert bert.arch == "encoder" and get_model("bert-large").arch == "encoder"
    assert get_model("llama-2-70b").n_kv_heads == 8 and get_model("llama-2-7b").n_kv_heads == 32
    assert get_model("gpt2").n_params == 124_439_808  # exact count of the released checkpoint
    assert get_model("llama-2-7b").n_params == 6_738_415_616


# ---------------------------------------------------------------- lookups
@pytest.mark.parametrize(
    "lookup, typo, expected",
    [
        (get_gpu, "h100", "h100-sxm"),
        (get_gpu, "a100", "a100-80gb"),
        (get_model, "llama2-7b", "llama-2-7b"),
        (get_interconnect, "nvlink", "nvlink4"),
    ],
)
def test_unknown_name_suggests(lookup, typo, expected):
    with pytest.raises(ValueError) as e:
        lookup(typo)
    msg = str(e.value)
    assert "did you mean" in msg and expected in msg and "\n" not in msg


def test_unknown_name_without_close_match_lists_known():
    with pytest.raises(ValueError, match="known: .*h100-sxm"):
        get_gpu("zzzzzz")


def test_frame():
    df = catalog.frame("gpus")
    assert len(df) == len(catalog.gpus())
    assert df["memory_gib"].dtype.kind in "if" and math.isnan(df.set_index("name").loc["t4", "bf16_tflops"])
    assert catalog.frame("models")["tied_embeddings"].dtype == bool
    with pytest.raises(ValueError, match="kind must be one of"):
        catalog.frame("prices")


# ---------------------------------------------------------------- malformed catalogs
def _copy_data(folder: Path) -> None:
    for kind in KINDS:
        shutil.copy(DATA / f"{kind}.csv", folder / f"{kind}.csv")


def _edit(path: Path, fn) -> None:
    rows = list(csv.reader(path.open(newline="")))
    rows = fn(rows)
    with path.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def _set(rows, i, col, value):
    rows[i][rows[0].index(col)] = value
    return rows


@pytest.mark.parametrize(
    "kind, edit, match",
    [
        ("gpus", lambda r: _set(r, 2, "source", ""), r"gpus\.csv:3: empty 'source'"),
        ("gpus", lambda r: _set(r, 3, "source_url", ""), r"gpus\.csv:4: empty 'source_url'"),
        (
            "gpus",
            lambda r: _set(r, 3, "name", r[1][0]),
            r"gpus\.csv:4: duplicate name 'v100-32gb' \(first on line 2\)",
        ),
        ("gpus", lambda r: _set(r, 4, "tdp_w", "n/a"), r"gpus\.csv:5: 'tdp_w' must be a number, got 'n/a'"),
        (
            "gpus",
            lambda r: _set(r, 4, "bf16_tflops", "-3"),
            r"gpus\.csv:5: 'bf16_tflops' must be a finite number >= 0",
        ),
        (
            "gpus",
            lambda r: _set(r, 2, "accessed", "Dec 2026"),
            r"gpus\.csv:3: 'accessed' must be an ISO date",
        ),
        ("gpus", lambda r: _set(r, 2, "name", "H100 SXM"), r"gpus\.csv:3: name must be lower case"),
        (
            "gpus",
            lambda r: [[c for c, h in zip(row, r[0], strict=True) if h != "accessed"] for row in r],
            r"gpus\.csv:1: missing column\(s\) accessed",
        ),
        ("gpus", lambda r: r[:3] + [r[3][:5]] + r[4:], r"gpus\.csv:4: 5 fields, header has"),
        (
            "models",
            lambda r: _set(r, 5, "n_layers", "twelve"),
            r"models\.csv:6: 'n_layers' must be an integer",
        ),
        ("models", lambda r: _set(r, 5, "bias", "yes"), r"models\.csv:6: 'bias' must be true or false"),
        ("models", lambda r: _set(r, 5, "mlp", "relu"), r"models\.csv:6: mlp must be one of gelu, swiglu"),
        (
            "interconnects",
            lambda r: _set(r, 2, "scope", "rack"),
            r"interconnects\.csv:3: scope must be one of",
        ),
        (
            "interconnects",
            lambda r: _set(r, 2, "bandwidth_gbps", "0"),
            r"interconnects\.csv:3: 'bandwidth_gbps' must be > 0",
        ),
    ],
)
def test_malformed_catalog_names_file_and_line(tmp_path, monkeypatch, kind, edit, match):
    _copy_data(tmp_path)
    _edit(tmp_path / f"{kind}.csv", edit)
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    load = {"gpus": catalog.gpus, "models": catalog.models, "interconnects": catalog.interconnects}[kind]
    with pytest.raises(ValueError, match=match) as e:
        load()
    assert "\n" not in str(e.value)


def test_sliding_window_column():
    """Mistral 7B v0.1 attends to a window of 4096 tokens (config.json "sliding_window": 4096; Jiang et al.
    2023 sec. 2); every other row is full attention (an empty cell)."""
    assert get_model("mistral-7b").sliding_window == 4096
    assert get_model("llama-2-7b").sliding_window is None
    windowed = {n for n, m in catalog.models().items() if m.sliding_window is not None}
    assert windowed == {
        "mistral-7b",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "llama-4-scout",
        "llama-4-maverick",
        "gemma-2-9b",
    }
    # only Mistral's window covers every layer; the others alternate with global layers
    assert {n for n in windowed if get_model(n).full_attention_every == 0} == {"mistral-7b"}


@pytest.mark.parametrize("bad", ["0", "-1", "2.5", "x"])
def test_bad_sliding_window_names_the_column(tmp_path, monkeypatch, bad):
    _copy_data(tmp_path)
    _edit(
        tmp_path / "models.csv",
        lambda r: _set(r, [x[0] for x in r].index("mistral-7b"), "sliding_window", bad),
    )
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    with pytest.raises(ValueError, match=r"models\.csv:\d+: 'sliding_window' must be") as e:
        catalog.models()
    assert "\n" not in str(e.value)


def test_sliding_window_column_is_optional(tmp_path, monkeypatch):
    """A models.csv written before the optional columns existed still loads: full attention everywhere,
    dense models, published counts without an active figure."""
    optional = (*catalog.OPTIONAL_MODEL_COLUMNS, *catalog.SPEC_DEFAULTED_COLUMNS, *catalog.PUBLISHED_COLUMNS)

    def drop(r):
        keep = [i for i, c in enumerate(r[0]) if c not in optional]
        return [[row[i] for i in keep] for row in r]

    _copy_data(tmp_path)
    _edit(tmp_path / "models.csv", drop)
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    assert get_model("mistral-7b").sliding_window is None
    assert not get_model("mixtral-8x7b").is_moe
    assert catalog.published_counts("mixtral-8x7b").active is None


def test_line_numbers_count_comment_and_blank_lines(tmp_path, monkeypatch):
    _copy_data(tmp_path)
    lines = (tmp_path / "gpus.csv").read_text().splitlines(keepends=True)
    cells = next(csv.reader([lines[2]]))  # a100-40gb
    cells[cells.index("400")] = "four hundred"  # a100-40gb tdp_w
    with (tmp_path / "gpus.csv").open("w", newline="") as f:
        f.write("# a comment line\n")
        f.write(lines[0] + "\n" + lines[1])  # blank line after the header
        csv.writer(f, lineterminator="\n").writerow(cells)
        f.writelines(lines[3:])
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    with pytest.raises(ValueError, match=r"gpus\.csv:5: 'tdp_w' must be a number, got 'four hundred'"):
        catalog.gpus()


def test_edited_catalog_is_reread(tmp_path, monkeypatch):
    _copy_data(tmp_path)
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    assert get_gpu("t4").tdp_w == 70
    _edit(
        tmp_path / "gpus.csv", lambda r: _set(r, [x[0] for x in r].index("t4"), "tdp_w", "71.5")
    )  # size changes too
    assert get_gpu("t4").tdp_w == 71.5


def test_missing_catalog_file(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="gpus.csv not found"):
        catalog.gpus()


GPU_HEADER = [
    "name",
    "vendor",
    "memory_gib",
    "hbm_bandwidth_gbps",
    "fp32_tflops",
    "bf16_tflops",
    "nvlink_gbps",
    "pcie_gen",
    "tdp_w",
    "source",
    "source_url",
    "accessed",
]
finite = st.floats(min_value=0.01, max_value=1e5, allow_nan=False, allow_infinity=False)


def _write_gpu(folder: Path, cells: dict) -> None:
    base = {
        "name": "x1",
        "vendor": "acme",
        "memory_gib": "16",
        "hbm_bandwidth_gbps": "500",
        "fp32_tflops": "10",
        "bf16_tflops": "100",
        "nvlink_gbps": "0",
        "pcie_gen": "4",
        "tdp_w": "300",
        "source": "s",
        "source_url": "https://example.org",
        "accessed": "2026-12-02",
        **cells,
    }
    with (folder / "gpus.csv").open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(GPU_HEADER)
        w.writerow([base[c] for c in GPU_HEADER])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mem=finite, bw=finite, bf16=finite, tdp=finite)
def test_gpu_row_round_trips(monkeypatch, mem, bw, bf16, tdp):
    with tempfile.TemporaryDirectory() as d:
        _write_gpu(
            Path(d),
            {
                "memory_gib": repr(mem),
                "hbm_bandwidth_gbps": repr(bw),
                "bf16_tflops": repr(bf16),
                "tdp_w": repr(tdp),
            },
        )
        monkeypatch.setenv("GPUKIT_DATA", d)
        g = get_gpu("X1")
        assert (g.memory_gib, g.hbm_bandwidth_gbps, g.peak_tflops("bf16"), g.tdp_w) == (mem, bw, bf16, tdp)
        assert g.memory_bytes == int(mem * GiB)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    col=st.sampled_from(["memory_gib", "hbm_bandwidth_gbps", "bf16_tflops", "nvlink_gbps", "tdp_w"]),
    junk=st.text(alphabet="abcxyz%$ /", min_size=1, max_size=8).filter(lambda s: s.strip()),
)
def test_non_numeric_cell_names_file_line_and_column(monkeypatch, col, junk):
    with tempfile.TemporaryDirectory() as d:
        _write_gpu(Path(d), {col: junk})
        monkeypatch.setenv("GPUKIT_DATA", d)
        with pytest.raises(ValueError, match=rf"gpus\.csv:2: '{col}' must be a number"):
            catalog.gpus()


# ---------------------------------------------------------------- CLI
@pytest.mark.parametrize("cmd, kind", [("gpus", "gpus"), ("models", "models"), ("links", "interconnects")])
def test_cli_json_lists_every_row_with_provenance(capsys, cmd, kind):
    assert main([cmd, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert isinstance(rows, list)
    assert {r["name"] for r in rows} == {r["name"] for r in raw(kind)}
    assert all(r["source"] and r["source_url"] and r["accessed"] for r in rows)


def test_cli_gpus_json_values(capsys):
    assert main(["gpus", "h100-sxm", "t4", "--json"]) == 0
    h100, t4 = json.loads(capsys.readouterr().out)
    assert h100["bf16_tflops"] == 989.4 and h100["memory_bytes"] == 80 * GiB
    assert t4["bf16_tflops"] is None and t4["fp16_tflops"] == 65


def test_cli_models_json_has_computed_params(capsys):
    assert main(["models", "llama-2-7b", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["n_params"] == get_model("llama-2-7b").n_params
    assert abs(row["params_diff_pct"]) < 1
    assert row["active_params"] == row["n_params"] and row["published_active_params"] is None


def test_cli_models_json_and_table_show_active_params(capsys):
    assert main(["models", "gpt-oss-120b", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    m = get_model("gpt-oss-120b")
    assert row["active_params"] == m.active_params < row["n_params"]
    assert row["published_active_params"] == 5_130_000_000 and row["active_excludes_embedding"] is True
    assert abs(row["active_diff_pct"]) < row["published_tolerance_pct"]
    assert main(["models", "mixtral-8x7b"]) == 0
    header, line = capsys.readouterr().out.splitlines()[1:3]
    assert line.split()[header.split().index("active")] == "12.88B"
    assert line.split()[header.split().index("experts")] == "2/8"


def test_cli_models_title_states_diff_pct_as_printed(capsys):
    """The title gave diff_pct as (n_params - published) / published, a fraction, over a column in percent
    (gpt3-175b: 174.6B vs 175B prints -0.226, which that formula would read as -22.6%)."""
    assert main(["models", "gpt3-175b"]) == 0
    title, header, row = capsys.readouterr().out.splitlines()[:3]
    m = get_model("gpt3-175b")
    pct = 100 * (m.n_params - m.published_params) / m.published_params
    assert float(row.split()[header.split().index("diff_pct")]) == pytest.approx(pct, abs=1e-3)
    assert "diff_pct = 100 x (n_params - published) / published, in percent" in title


def test_cli_text_tables(capsys):
    assert main(["gpus"]) == 0
    out = capsys.readouterr().out
    assert "h100-sxm" in out and "989.4" in out and "dense" in out
    assert main(["models", "gpt2", "--sources"]) == 0
    out = capsys.readouterr().out
    assert "124.44M" in out and "2026-12-02" in out
    assert main(["links", "ib-ndr"]) == 0
    assert "50.0" in capsys.readouterr().out


def test_cli_text_says_dash_for_unsupported_even_alone(capsys):
    """The title promises '-' for an unsupported dtype; rows shown alone (t4, v100: no tf32, bf16, fp8)
    printed 'None', since an all-None column escapes pandas' na_rep."""
    assert main(["gpus", "t4", "v100-32gb"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "'-' = unsupported" in out
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("t4"))
    assert row[5:9] == ["-", "-", "65.0", "-"]  # tf32 bf16 fp16 fp8


def test_cli_unknown_name_exits_2(capsys):
    assert main(["models", "nosuch-model"]) == 2
    err = capsys.readouterr().err
    assert "unknown model 'nosuch-model'" in err and err.count("\n") == 1
    assert main(["gpus", "h100"]) == 2
    assert "did you mean" in capsys.readouterr().err


def test_cli_malformed_catalog_exits_2(tmp_path, monkeypatch, capsys):
    _copy_data(tmp_path)
    _edit(tmp_path / "gpus.csv", lambda r: _set(r, 2, "tdp_w", "n/a"))
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    assert main(["gpus", "--json"]) == 2
    assert "gpus.csv:3: 'tdp_w' must be a number" in capsys.readouterr().err


@pytest.mark.parametrize(
    "gpu, peers, link",
    [
        ("v100-32gb", 8, "nvlink2"),
        ("a100-80gb", 8, "nvlink3"),
        ("h100-sxm", 8, "nvlink4"),
        ("b200", 8, "nvlink5"),
        ("mi300x", 8, "nvlink4"),  # Infinity Fabric 448 GB/s, within 1% of NVLink 4's 450
        ("mi325x", 8, "nvlink4"),
        ("h800", 8, "nvlink4-h800"),  # the cut NVLink (200 GB/s one way), not NVLink 2's 150
        ("gb200", 8, "nvlink5"),
        ("h100-nvl", 2, "nvlink3"),  # a 300 GB/s bridge pair
        ("h100-nvl", 8, "pcie5"),
        ("h100-pcie", 2, "nvlink3"),
        ("h100-pcie", 8, "pcie5"),  # a bridge joins a pair, not eight cards
        ("rtx-3090", 2, "pcie4"),  # a 56 GB/s bridge is slower than any catalog NVLink: the card's PCIe
        ("l4", 8, "pcie4"),
        ("t4", 4, "pcie3"),
    ],
)
def test_intra_node_link_one_rule_for_every_gpu(gpu, peers, link):
    """One default in-node link for memory/scaling/parallel/inference/cost (catalog.intra_node_link)."""
    assert catalog.intra_node_link(gpu, peers).name == link


def test_intra_node_link_bad_peers():
    with pytest.raises(ValueError, match="peers must be a positive integer"):
        catalog.intra_node_link("h100-sxm", 0)


@pytest.mark.parametrize(
    "gpu, link",
    [
        ("a100-80gb", "ib-hdr"),
        ("h100-sxm", "ib-ndr"),
        ("h200", "ib-ndr"),
        ("b200", "ib-ndr"),
        ("h800", "ib-ndr"),
        ("gh200", "ib-ndr"),
        ("gb200", "ib-ndr"),
        ("l4", "eth-100g"),
    ],
)
def test_inter_node_link_of_the_gpus_era(gpu, link):
    """DGX B200 has 8 x ConnectX-7, InfiniBand 'up to 400Gbps' (NDR; NVIDIA DGX B200 user guide,
    Hardware Overview); the default was XDR (800 Gb/s, ConnectX-8), twice the node's network."""
    assert catalog.inter_node_link(gpu).name == link
