"""Efficiency by hardware generation (issue 23 sec. 3): gpukit/data/efficiency.csv, the lookup that every
Cluster uses by default, the GEMM tile/wave quantization, and the validation against published runs."""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from gpukit import parallel as par
from gpukit.catalog import get_gpu, gpus
from gpukit.profile import profile_from_dict

ROOT = Path(__file__).resolve().parent.parent
cl = par  # the efficiency names are on the face (gpukit.parallel)


def test_every_efficiency_row_is_cited():
    rows = cl.efficiency_rows()
    assert rows
    for r in rows:
        assert r.source.strip() and r.source_url.startswith("http") and len(r.accessed) == 10, r
        assert 0 < r.share <= 1


def test_every_gpu_row_resolves_to_a_cited_matmul_and_hbm_row():
    for name, g in gpus().items():
        dtype = "bf16" if g.has("bf16") else "fp16"
        m = cl.efficiency_row(g, "matmul", dtype)
        h = cl.efficiency_row(g, "hbm", "any")
        assert m.generation in (g.arch, f"{g.arch}-pcie"), (name, m.generation)
        assert m.source_url and h.source_url and m.sm_count
        assert 0 < cl.matmul_efficiency_for(g, dtype) < m.share  # a training step runs below the best shape


def test_a_new_gpu_row_of_a_known_generation_resolves():
    """Rows added to gpus.csv later (h100-nvl, gh200, h800, gb200, mi325x) resolve by generation."""
    gh200 = dataclasses.replace(get_gpu("h100-sxm"), name="gh200-test")
    assert cl.matmul_efficiency_for(gh200) == cl.matmul_efficiency_for("h100-sxm")
    unknown = dataclasses.replace(get_gpu("h100-sxm"), name="x", arch="nogen")
    with pytest.raises(ValueError, match="no matmul efficiency for x"):
        cl.efficiency_row(unknown)


def test_published_shares_and_the_ampere_default():
    a100 = cl.efficiency_row("a100-80gb")
    assert (
        a100.share == 0.869 == pytest.approx(cl.MATMUL_EFFICIENCY / cl.TRAINING_MATMUL_SHARE)
    )  # 271.2 / 312
    assert (
        cl.matmul_efficiency_for("a100-80gb") == cl.MATMUL_EFFICIENCY == 0.70
    )  # the name other code imports
    assert cl.efficiency_row("h100-sxm").share == 0.803 and cl.efficiency_row("mi300x").share == 0.514
    assert cl.matmul_efficiency_for("h100-sxm") < cl.matmul_efficiency_for("a100-80gb")
    # an fp8 row per generation where the MAMF table publishes one (helper F's fp8 training reads it)
    assert cl.efficiency_row("h100-sxm", dtype="fp8").share == 0.709
    assert cl.efficiency_row("b200", dtype="fp8").share == 0.763
    with pytest.raises(ValueError, match="fp8"):
        cl.efficiency_row("mi300x", dtype="fp8")  # the table has no MI300X fp8 measurement


def test_cluster_names_its_efficiency_source():
    c = par.make_cluster("h100-sxm", 8)
    assert c.matmul_efficiency == cl.matmul_efficiency_for("h100-sxm") and c.sm_count == 132
    assert c.efficiency_source.startswith("catalog: efficiency.csv hopper,matmul,bf16")
    given = par.make_cluster("h100-sxm", 8, matmul_efficiency=0.5)
    assert given.matmul_efficiency == 0.5 and given.efficiency_source == "given by the caller"
    prof = profile_from_dict(
        {
            "version": 1,
            "device": {"name": "t", "kind": "cuda"},
            "matmul_tflops": {"bf16": 700.0},
            "memory_bandwidth_gbps": {"triad": 3000.0},
            "links": {},
            "env": {},
        }
    )
    p = par.make_cluster("h100-sxm", 8, profile=prof)
    assert p.matmul_efficiency == pytest.approx(700 / 989.4) and "calibration profile" in p.efficiency_source
    e = par.estimate("gpt2", par.ParallelConfig(dp=8), c, global_batch=8, seq_len=1024)
    assert any("catalog: efficiency.csv hopper" in a for a in e.assumptions)


def test_gemm_wave_quantization():
    # NVIDIA Matrix Multiplication Background guide: tiles = ceil(M/tm) ceil(N/tn), waves of one tile per SM
    # 2048 x 2304 on 108 SMs: 256x128 and 128x256 tiles give 144 tiles (2 waves, 0.667), 128x128 288 (3, 0.889)
    assert cl.gemm_shape_efficiency(2048, 2304, 2304, 108) == pytest.approx(
        2048 * 2304 / (3 * 108 * 128 * 128)
    )
    assert cl.gemm_shape_efficiency(2048, 2304, 2304, None) == 1.0
    assert cl.gemm_shape_efficiency(1 << 16, 16384, 4096, 132) > 0.99
    small = cl.layer_gemm_efficiency(get_gpu_model(), 128, 8, 132)
    big = cl.layer_gemm_efficiency(get_gpu_model(), 8192, 1, 132)
    assert small < big <= 1
    # the hook: estimate's compute time grows when the GEMMs quantize badly (fewer SMs -> fewer waves lost)
    h = par.make_cluster("h100-sxm", 8)
    cfg = par.ParallelConfig(tp=8, micro_batch=1)
    t = par.estimate("llama-2-7b", cfg, h, global_batch=1, seq_len=128).breakdown[0][1]
    t1 = par.estimate("llama-2-7b", cfg, dataclasses.replace(h, sm_count=1), global_batch=1, seq_len=128)
    assert t > t1.breakdown[0][1]


def get_gpu_model():
    from gpukit.catalog import get_model

    return get_model("llama-2-7b")


def _median(rows, role):
    return statistics.median(abs(v.error) for v in rows if v.run.role == role)


def test_held_out_hopper_dense_error_meets_issue_23():
    """Held-out dense Hopper rows (the MPT H100 table, Llama 3 405B, Megatron-Bridge's FP8 tables): issue
    23's goal is a median |error| within 15% (docs/VALIDATION.md); the generation lookup does better than
    the one 0.70 for every GPU, and the A100 fit rows stay where the 0.70 had them."""
    assert {r.role for r in par.PUBLISHED_RUNS} == {"fit", "held-out"}
    assert all(r.role == "fit" for r in par.PUBLISHED_RUNS if r.gpu.startswith("a100"))
    after = par.validate_published()
    before = par.validate_published(matmul_efficiency=cl.MATMUL_EFFICIENCY)
    hopper = par.VALIDATION_GROUPS[1]
    med_after, n = par.validation_summary(after)[hopper]
    assert n >= 18 and med_after <= 0.15
    assert med_after < par.validation_summary(before)[hopper][0] - 0.05
    assert _median(after, "fit") < 0.06


def test_llama3_virtual_stages_follow_the_paper():
    """Llama 3 sec. 3.3.2: one layer a chunk, the embedding and the loss a chunk each: 126 + 2 = 16 x 8."""
    rows = [r for r in par.PUBLISHED_RUNS if r.name.startswith("Llama 3 ")]
    assert rows and all(r.config.pp * r.config.virtual_stages == r.model.n_layers + 2 for r in rows)
    m = rows[0].model
    par.ParallelConfig(tp=8, pp=16, virtual_stages=8).validate(m)  # 128 chunks for 126 layers: allowed
    with pytest.raises(ValueError, match=r"at most n_layers 126 \+ 2"):
        par.ParallelConfig(tp=8, pp=43, virtual_stages=3).validate(m)  # 129 chunks
    with pytest.raises(ValueError, match="at most n_layers 126 .one layer"):
        par.ParallelConfig(tp=8, pp=127).validate(m)  # without virtual stages no chunk is spare


def test_validation_doc_is_current():
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "validate_published.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert r.returncode == 0, r.stderr


# ---- the fused attention kernel at its generation's published share (FlashAttention-2: Dao 2023, Shah 2024)
def test_attention_efficiency_rows_and_fallbacks():
    share = {r.generation: r.share for r in cl.efficiency_rows() if r.kind == "attention"}
    assert share["hopper"] == 0.35 and 0.50 <= share["ampere"] <= 0.73  # the papers' stated figures
    h100, a100 = cl.make_cluster("h100-sxm", 8), cl.make_cluster("a100-80gb", 8)
    assert h100.attention_efficiency == pytest.approx(0.35 * cl.TRAINING_MATMUL_SHARE, abs=1e-4)
    assert a100.attention_efficiency == pytest.approx(share["ampere"] * cl.TRAINING_MATMUL_SHARE, abs=1e-4)
    assert h100.attention_efficiency < h100.matmul_efficiency  # FA2 on H100 runs far below its GEMMs
    # a generation without a published row, and a caller's or profile's efficiency: attention at the matmul rate
    assert cl.attention_efficiency_for("b200") is None
    assert cl.make_cluster("b200", 8).attention_efficiency == cl.make_cluster("b200", 8).matmul_efficiency
    given = cl.make_cluster("h100-sxm", 8, matmul_efficiency=0.6)
    assert given.attention_efficiency == 0.6
    with pytest.raises(ValueError, match="attention_efficiency must be in"):
        dataclasses.replace(h100, attention_efficiency=1.5)


def test_attention_flops_are_timed_at_the_attention_share():
    """The compute term = the GEMM FLOPs at the matmul rate x the wave factor + the attention FLOPs at the
    attention share; a long sequence on a small model makes the difference (fails when attention is timed
    as a GEMM)."""
    from gpukit.catalog import get_model
    from gpukit.compute import flops_per_token

    model, s = get_model("llama-3-8b"), 8192
    h100 = cl.make_cluster("h100-sxm", 8)
    cfg = par.ParallelConfig(dp=8, micro_batch=1)
    e = par.estimate(model, cfg, h100, global_batch=8, seq_len=s)
    f = flops_per_token(model, seq_len=s, causal=True, include_embeddings=True, recompute="none")
    att = f.get("attention_forward") + f.get("attention_backward")
    gemm_rate = (
        h100.peak_flops * h100.matmul_efficiency * par.layer_gemm_efficiency(model, s, 1, h100.sm_count)
    )
    want = (f.hardware_flops - att) * s / gemm_rate + att * s / (h100.peak_flops * h100.attention_efficiency)
    assert dict(e.breakdown)["compute"] == pytest.approx(want)
    flat = dataclasses.replace(h100, attention_efficiency=h100.matmul_efficiency)  # attention timed as a GEMM
    as_gemm = par.estimate(model, cfg, flat, global_batch=8, seq_len=s)
    assert e.step_time_s > as_gemm.step_time_s * 1.05
    assert any("attention (FlashAttention" in a for a in e.assumptions)
    # eager attention is batched GEMMs: timed at the matmul rate whatever the attention share
    eager = par.estimate(model, cfg, h100, global_batch=8, seq_len=s, attention="eager")
    eager_gemm = par.estimate(model, cfg, flat, global_batch=8, seq_len=s, attention="eager")
    assert dict(eager.breakdown)["compute"] == pytest.approx(dict(eager_gemm.breakdown)["compute"])


def test_validation_groups_and_what_the_prose_says_of_them():
    """docs/VALIDATION.md and notebook 06 sec. 6: every row in one group; the Hopper dense median improves on
    the one-constant model; NVIDIA's Megatron-Bridge dense H100 rows (stated layouts, FP8) within 15%; every
    MoE row over-predicted (the prose calls gpukit's MoE times a lower bound)."""
    rows = par.validate_published()
    before = par.validate_published(matmul_efficiency=par.MATMUL_EFFICIENCY)
    groups = {par.validation_group(v) for v in rows}
    assert groups == set(par.VALIDATION_GROUPS)
    after_s, before_s = par.validation_summary(rows), par.validation_summary(before)
    hopper = par.VALIDATION_GROUPS[1]
    assert after_s[hopper][0] < before_s[hopper][0]
    assert sum(n for _, n in after_s.values()) == len(rows)
    bridge = [
        v
        for v in rows
        if "Megatron-Bridge" in v.run.name and v.run.gpu == "h100-sxm" and not v.run.model.is_moe
    ]
    assert len(bridge) >= 5 and all(abs(v.error) <= 0.15 for v in bridge)  # issue 23's 15%
    moe = [v for v in rows if par.validation_group(v) == par.VALIDATION_GROUPS[3]]
    assert moe and all(v.error > 0 for v in moe)
    assert all(v.run.precision in ("bf16-mixed", "fp8") for v in rows)


def test_moe_time_caveat_is_said_where_moe_time_is_given():
    """The MoE rows are over-predicted (test above), so every MoE time says it is a lower bound."""
    from gpukit.plan import plan

    h100 = cl.make_cluster("h100-sxm", 8)
    moe = par.estimate("mixtral-8x7b", par.ParallelConfig(dp=8, ep=8), h100, global_batch=64, seq_len=4096)
    dense = par.estimate("llama-3-8b", par.ParallelConfig(dp=8), h100, global_batch=64, seq_len=4096)
    assert par.MOE_TIME_CAVEAT in moe.notes and par.MOE_TIME_CAVEAT not in dense.notes
    r = plan("pretrain", "mixtral-8x7b", tokens=1e10, gpus=["h100-sxm"], counts=[8, 16])
    assert par.MOE_TIME_CAVEAT in r.assumptions
