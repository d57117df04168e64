"""Catalogs: load and validate gpukit/data/*.csv; look rows up by name with a "did you mean".

Every row carries `source`, `source_url` and `accessed` (an ISO date); a row without them, a
duplicate name or a non-numeric number is a ValueError naming the file and line. Columns, units
and conventions (GiB capacities, dense peaks, unidirectional bandwidth) are in gpukit/data/README.md.
The CSVs ship inside the package (wheel and sdist), found through importlib.resources, so a plain
`pip install` reads them too. Set GPUKIT_DATA to read another folder. Used in: gpukit/cli/catalogs.py, memory, compute, comm.
"""

from __future__ import annotations

import csv
import datetime as _dt
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, overload

from gpukit.errors import did_you_mean, require_positive_int
from gpukit.hf_config import load_hf_config
from gpukit.specs import ModelSpec
from gpukit.units import GiB

PROVENANCE = ("source", "source_url", "accessed")
PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8")
KINDS = ("gpus", "models", "interconnects")
SCOPES = ("intra-node", "inter-node")
# Names are looked up lower-cased, so a catalog name must already be lower case (no spaces).
_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")

GPU_COLUMNS = ("name", "vendor", "memory_gib", "hbm_bandwidth_gbps", "nvlink_gbps", "pcie_gen", "tdp_w")
MODEL_COLUMNS = (
    "name",
    "n_layers",
    "hidden",
    "n_heads",
    "n_kv_heads",
    "ffn_hidden",
    "vocab",
    "max_seq",
    "train_seq_len",
    "tied_embeddings",
    "mlp",
    "norm",
    "position",
    "bias",
    "arch",
    "dropout",
    "published_params",
    "train_source",
)
# Optional model columns: a catalog without them still loads; an empty cell is None.
# sliding_window: attention window in tokens (Mistral 7B: 4096), empty for full attention.
OPTIONAL_MODEL_COLUMNS = ("sliding_window",)
# Optional ModelSpec fields of mixtures of experts, latent attention and attention patterns (gpukit.specs
# documents each); an empty cell leaves ModelSpec's default (a dense model, standard attention).
SPEC_DEFAULTED_COLUMNS = (
    "head_dim",
    "full_attention_every",
    "n_experts",
    "experts_per_token",
    "n_shared_experts",
    "moe_ffn_hidden",
    "shared_ffn_hidden",
    "first_dense_layers",
    "moe_every",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "v_head_dim",
    "mtp_layers",
)
# Published-figure columns (not ModelSpec fields): the active parameters a mixture of experts' report gives,
# whether that figure leaves the input embedding out (gpt-oss's model card does: true; empty: false), and
# the tolerance within which n_params and active_params must meet the published figures (empty: 1 percent).
PUBLISHED_COLUMNS = ("published_active_params", "active_excludes_embedding", "published_tolerance_pct")
DEFAULT_TOLERANCE_PCT = 1.0
INTERCONNECT_COLUMNS = ("name", "kind", "scope", "bandwidth_gbps", "latency_us")
_REQUIRED = {"gpus": GPU_COLUMNS, "models": MODEL_COLUMNS, "interconnects": INTERCONNECT_COLUMNS}


def peak_column(dtype: str) -> str:
    """gpus.csv column holding the dense peak of `dtype` ('bf16' -> 'bf16_tflops', 'int8' -> 'int8_tops')."""
    return "int8_tops" if dtype == "int8" else f"{dtype}_tflops"


# Numeric columns per catalog (frame() converts them; the loaders validate them).
NUMERIC_COLUMNS = {
    "gpus": (
        "memory_gib",
        "hbm_bandwidth_gbps",
        *(peak_column(d) for d in PEAK_DTYPES),
        "nvlink_gbps",
        "nvlink_domain_gpus",
        "pcie_gen",
        "tdp_w",
    ),
    "models": (
        "n_layers",
        "hidden",
        "n_heads",
        "n_kv_heads",
        "ffn_hidden",
        "vocab",
        "max_seq",
        "train_seq_len",
        "published_params",
        "sliding_window",
        *SPEC_DEFAULTED_COLUMNS,
        "published_active_params",
        "published_tolerance_pct",
    ),
    "interconnects": ("bandwidth_gbps", "latency_us"),
}
# Sane range of every numeric column: (lowest, highest, lowest allowed itself). A row outside it is a
# typo or a unit slip (GB/s typed as bytes/s, GiB as bytes) that would crash or mislead every calculator
# downstream (memory 0 divides by zero; 1e300 overflows), so the loader rejects it with file and line.
# The bounds are generous (about 10-100x today's largest part or model), not a judgement on the value.
RANGES: dict[str, tuple[float, float, bool]] = {
    "memory_gib": (0, 1e5, False),
    "hbm_bandwidth_gbps": (0, 1e5, False),
    **{peak_column(d): (0, 1e5, False) for d in PEAK_DTYPES},
    "nvlink_gbps": (0, 1e5, True),
    "nvlink_domain_gpus": (1, 1e5, True),
    "pcie_gen": (1, 8, True),
    "tdp_w": (0, 1e5, False),
    "n_layers": (1, 1e4, True),
    "hidden": (1, 1e6, True),
    "n_heads": (1, 1e5, True),
    "n_kv_heads": (1, 1e5, True),
    "ffn_hidden": (1, 1e7, True),
    "vocab": (1, 1e8, True),
    "max_seq": (1, 1e9, True),
    "train_seq_len": (1, 1e9, True),
    "published_params": (1, 1e15, True),
    "sliding_window": (1, 1e9, True),
    "head_dim": (1, 1e5, True),
    "full_attention_every": (0, 1e4, True),
    "n_experts": (0, 1e5, True),
    "experts_per_token": (0, 1e5, True),
    "n_shared_experts": (0, 1e5, True),
    "moe_ffn_hidden": (1, 1e7, True),
    "shared_ffn_hidden": (1, 1e7, True),
    "first_dense_layers": (0, 1e4, True),
    "moe_every": (1, 1e4, True),
    "kv_lora_rank": (0, 1e6, True),
    "q_lora_rank": (0, 1e6, True),
    "qk_rope_head_dim": (0, 1e5, True),
    "v_head_dim": (1, 1e5, True),
    "mtp_layers": (0, 1e4, True),
    "published_active_params": (1, 1e15, True),
    "published_tolerance_pct": (0, 100, False),
    "bandwidth_gbps": (0, 1e5, False),
    "latency_us": (0, 1e7, True),
}
BOOL_COLUMNS = {
    "gpus": (),
    "models": ("tied_embeddings", "bias", "dropout", "active_excludes_embedding"),
    "interconnects": (),
}


def data_dir() -> Path:
    """The catalog folder: $GPUKIT_DATA, else the package's own data/ (gpukit/data in the checkout, or
    site-packages/gpukit/data in an installed wheel), located through importlib.resources."""
    env = os.environ.get("GPUKIT_DATA")
    if env:
        return Path(env)
    return _package_data_dir()


@lru_cache(maxsize=1)
def _package_data_dir() -> Path:
    """The package's own data/ (resolved once: a plan asks for a catalog thousands of times)."""
    # files() is a pathlib.Path for a package on disk (a checkout, an editable or a wheel install); a
    # zipped import would give another Traversable, which the CSV readers (open, stat) cannot use.
    return Path(str(resources.files("gpukit") / "data"))


@dataclass(frozen=True)
class GPU:
    """One accelerator's spec sheet. Peaks are dense (no 2:4 sparsity), in TFLOP/s (int8: TOPS)."""

    name: str
    vendor: str
    memory_gib: float  # vendor "80GB" HBM read as 80 GiB (gpukit/data/README.md)
    hbm_bandwidth_gbps: float  # decimal GB/s
    peaks_tflops: tuple[tuple[str, float], ...]  # (dtype, dense peak) for the dtypes it supports
    nvlink_gbps: float  # unidirectional per GPU, decimal GB/s; 0 if none
    pcie_gen: int
    tdp_w: float
    source: str = ""
    source_url: str = ""
    accessed: str = ""
    arch: str = ""
    form_factor: str = ""
    notes: str = ""
    # GPUs one NVLink domain joins at nvlink_gbps each (an HGX/DGX board: 8; GB200 NVL72: 72); None where the
    # row does not state one (PCIe cards: a bridge pair at most). Optional column nvlink_domain_gpus.
    nvlink_domain_gpus: int | None = None

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GiB)

    def peak_tflops(self, dtype: str) -> float:
        """Dense peak for `dtype`; ValueError if the GPU has no such unit (V100 and T4 have no bf16)."""
        peaks = dict(self.peaks_tflops)
        if dtype in peaks:
            return peaks[dtype]
        raise ValueError(f"dtype {dtype!r} has no peak on {self.name}; supported: {', '.join(peaks)}")

    def has(self, dtype: str) -> bool:
        """Whether the GPU has units (a dense peak) for `dtype`."""
        return dtype in dict(self.peaks_tflops)

    @property
    def half_dtype(self) -> str:
        """The 16-bit dtype to default to: bf16, or fp16 on GPUs without bf16 units (V100, T4)."""
        return "bf16" if self.has("bf16") else "fp16"

    @property
    def ridge_flop_per_byte(self) -> dict[str, float]:
        """Roofline ridge point per dtype: peak FLOP/s / HBM bytes/s (Williams et al. 2009)."""
        return {d: p * 1e12 / (self.hbm_bandwidth_gbps * 1e9) for d, p in self.peaks_tflops}


@dataclass(frozen=True)
class Interconnect:
    """A link: unidirectional bandwidth per GPU (decimal GB/s) and typical one-way latency."""

    name: str
    kind: str
    scope: str  # intra-node | inter-node
    bandwidth_gbps: float
    latency_us: float
    source: str = ""
    source_url: str = ""
    accessed: str = ""
    notes: str = ""


# ---------------------------------------------------------------- reading and validating
def _read(path: Path, required: tuple[str, ...] = ()) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs of a catalog CSV; '#' comment lines and blank lines are skipped."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"catalog file {path} not found")
    try:
        raw = path.read_bytes()
    except OSError as e:  # a directory, no permission, ...
        raise ValueError(f"catalog file {path}: cannot read ({e.strerror or type(e).__name__})") from None
    numbered = []
    for i, line_bytes in enumerate(raw.splitlines(keepends=True), start=1):
        try:
            line = line_bytes.decode("utf-8-sig" if i == 1 else "utf-8")  # a BOM (Excel) is not a column
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{path}:{i}: not UTF-8 text ({e.reason} at byte {e.start} of the line)"
            ) from None
        if line.strip() and not line.startswith("#"):
            numbered.append((i, line))
    if not numbered:
        raise ValueError(f"{path}: empty catalog (no header line)")
    # One physical line per record: a quoted newline would make the line numbers in errors lie.
    reader = csv.reader(line for _, line in numbered)
    try:
        records = list(reader)
    except csv.Error as e:  # e.g. a field over csv's size limit: still name the line
        raise ValueError(
            f"{path}:{numbered[max(0, min(reader.line_num, len(numbered)) - 1)][0]}: {e}"
        ) from None
    if len(records) != len(numbered):
        raise ValueError(f"{path}: a quoted field spans lines; keep each row on one line")
    header = [c.strip() for c in records[0]]
    missing = [c for c in (*required, *PROVENANCE) if c not in header]
    if missing:
        raise ValueError(f"{path}:{numbered[0][0]}: missing column(s) {', '.join(missing)}")
    out: list[tuple[int, dict[str, str]]] = []
    seen: dict[str, int] = {}
    for (lineno, _), rec in zip(numbered[1:], records[1:], strict=True):
        where = f"{path}:{lineno}"
        if len(rec) != len(header):
            raise ValueError(f"{where}: {len(rec)} fields, header has {len(header)}")
        row = {k: v.strip() for k, v in zip(header, rec, strict=True)}
        for c in PROVENANCE:
            if not row[c]:
                raise ValueError(f"{where}: empty {c!r} (every row needs its provenance)")
        try:
            _dt.date.fromisoformat(row["accessed"])
        except ValueError:
            raise ValueError(
                f"{where}: 'accessed' must be an ISO date YYYY-MM-DD, got {row['accessed']!r}"
            ) from None
        if "name" in header:
            name = row["name"]
            if not _NAME_RE.match(name):
                raise ValueError(
                    f"{where}: name must be lower case without spaces ([a-z0-9._+-]), got {name!r}"
                )
            if name in seen:
                raise ValueError(f"{where}: duplicate name {name!r} (first on line {seen[name]})")
            seen[name] = lineno
        out.append((lineno, row))
    return out


def read_csv(path: Path, required: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """Rows of a catalog CSV; ValueError naming the file and line for missing fields/duplicates."""
    return [row for _, row in _read(path, required)]


def _num(where: str, row: dict, col: str, kind=float, optional: bool = False):
    raw = row.get(col, "")
    if raw == "":
        if optional:
            return None
        raise ValueError(f"{where}: empty {col!r} in row {row.get('name')!r}")
    try:
        v = kind(raw)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise ValueError(f"{where}: {col!r} must be {what}, got {raw!r}") from None
    if v != v or v in (float("inf"), float("-inf")) or v < 0:
        raise ValueError(f"{where}: {col!r} must be a finite number >= 0, got {raw!r}")
    if col in RANGES:
        lo, hi, lo_ok = RANGES[col]
        if v < lo or (v == lo and not lo_ok):
            raise ValueError(f"{where}: {col!r} must be {'>=' if lo_ok else '>'} {lo:g}, got {raw!r}")
        if v > hi:
            raise ValueError(
                f"{where}: {col!r} must be at most {hi:g} (sane range; a unit slip?), got {raw!r}"
            )
    return v


def _bool(where: str, row: dict, col: str) -> bool:
    raw = row.get(col, "").lower()
    if raw not in ("true", "false"):
        raise ValueError(f"{where}: {col!r} must be true or false, got {raw!r}")
    return raw == "true"


def _stamp(kind: str) -> tuple[str, tuple[int, int]]:
    """(path, (mtime, size)) of a catalog file: the cache key, so an edited CSV is re-read."""
    path = data_dir() / f"{kind}.csv"
    try:
        st = path.stat()
        return str(path), (st.st_mtime_ns, st.st_size)
    except OSError:
        return str(path), (-1, -1)


@lru_cache(maxsize=16)
def _gpus(path: str, _stamp_key: tuple[int, int]) -> dict[str, GPU]:
    out = {}
    for line, r in _read(Path(path), GPU_COLUMNS):
        where = f"{path}:{line}"
        peaks = tuple((d, p) for d in PEAK_DTYPES if (p := _num(where, r, peak_column(d), optional=True)))
        if not peaks:
            raise ValueError(f"{where}: row {r['name']!r} has no peak TFLOPS at all")
        out[r["name"]] = GPU(
            name=r["name"],
            vendor=r["vendor"],
            memory_gib=_num(where, r, "memory_gib"),
            hbm_bandwidth_gbps=_num(where, r, "hbm_bandwidth_gbps"),
            peaks_tflops=peaks,
            nvlink_gbps=_num(where, r, "nvlink_gbps"),
            pcie_gen=_num(where, r, "pcie_gen", int),
            tdp_w=_num(where, r, "tdp_w"),
            source=r["source"],
            source_url=r["source_url"],
            accessed=r["accessed"],
            arch=r.get("arch", ""),
            form_factor=r.get("form_factor", ""),
            notes=r.get("notes", ""),
            nvlink_domain_gpus=_num(where, r, "nvlink_domain_gpus", int, optional=True),
        )
    return out


@lru_cache(maxsize=16)
def _models(path: str, _stamp_key: tuple[int, int]) -> dict[str, ModelSpec]:
    out = {}
    for line, r in _read(Path(path), MODEL_COLUMNS):
        where = f"{path}:{line}"
        ints = {c: _num(where, r, c, int) for c in MODEL_COLUMNS if c in NUMERIC_COLUMNS["models"]}
        ints |= {c: _num(where, r, c, int, optional=True) for c in OPTIONAL_MODEL_COLUMNS}
        ints |= {
            c: v for c in SPEC_DEFAULTED_COLUMNS if (v := _num(where, r, c, int, optional=True)) is not None
        }
        bools = {c: _bool(where, r, c) for c in BOOL_COLUMNS["models"] if c in MODEL_COLUMNS}
        _published(where, r)  # validated here, read by published_counts
        if not r["train_source"]:
            raise ValueError(
                f"{where}: empty 'train_source' (cite where train_seq_len and dropout come from)"
            )
        try:
            out[r["name"]] = ModelSpec(
                name=r["name"],
                mlp=r["mlp"],
                norm=r["norm"],
                position=r["position"],
                arch=r["arch"],
                **ints,
                **bools,
            )
        except ValueError as e:  # ModelSpec's one-line message, placed in the file
            raise ValueError(f"{where}: {e}") from None
    return out


@dataclass(frozen=True)
class PublishedCounts:
    """A model row's published parameter figures and the tolerance its computed counts must meet."""

    name: str
    total: int  # published_params
    active: int | None  # published_active_params (None: a dense model, or no figure published)
    active_excludes_embedding: bool  # the active figure leaves out the input embedding (a lookup, no matmul)
    tolerance_pct: float  # |computed - published| <= tolerance_pct percent of published

    def comparable_active(self, spec: ModelSpec) -> int:
        """spec.active_params in the published figure's convention (less the input embedding when it is
        left out: gpt-oss model card, OpenAI 2025, Table 1 counts the unembedding but not the embedding)."""
        return spec.active_params - (spec.embedding_params() if self.active_excludes_embedding else 0)

    def off_pct(self, computed: int, published: int) -> float:
        return 100.0 * (computed - published) / published


def _published(where: str, r: dict) -> PublishedCounts:
    active = _num(where, r, "published_active_params", int, optional=True)
    tol = _num(where, r, "published_tolerance_pct", optional=True)
    excl = r.get("active_excludes_embedding", "") or "false"
    if excl.lower() not in ("true", "false"):
        raise ValueError(f"{where}: 'active_excludes_embedding' must be true, false or empty, got {excl!r}")
    return PublishedCounts(
        name=r["name"],
        total=_num(where, r, "published_params", int),
        active=active,
        active_excludes_embedding=excl.lower() == "true",
        tolerance_pct=DEFAULT_TOLERANCE_PCT if tol is None else tol,
    )


@lru_cache(maxsize=16)
def _published_all(path: str, _stamp_key: tuple[int, int]) -> dict[str, PublishedCounts]:
    return {r["name"]: _published(f"{path}:{line}", r) for line, r in _read(Path(path), MODEL_COLUMNS)}


def published_counts(name: str) -> PublishedCounts:
    """The published total (and active) parameter figures of catalog model `name`, with the row's tolerance
    (published_tolerance_pct, default 1 percent) and the active figure's embedding convention."""
    table = _published_all(*_stamp("models"))
    return _lookup("model", name, table)


@lru_cache(maxsize=16)
def _interconnects(path: str, _stamp_key: tuple[int, int]) -> dict[str, Interconnect]:
    out = {}
    for line, r in _read(Path(path), INTERCONNECT_COLUMNS):
        where = f"{path}:{line}"
        if r["scope"] not in SCOPES:
            raise ValueError(f"{where}: scope must be one of {', '.join(SCOPES)}, got {r['scope']!r}")
        bw = _num(where, r, "bandwidth_gbps")
        if bw <= 0:
            raise ValueError(f"{where}: 'bandwidth_gbps' must be > 0, got {r['bandwidth_gbps']!r}")
        out[r["name"]] = Interconnect(
            name=r["name"],
            kind=r["kind"],
            scope=r["scope"],
            bandwidth_gbps=bw,
            latency_us=_num(where, r, "latency_us"),
            source=r["source"],
            source_url=r["source_url"],
            accessed=r["accessed"],
            notes=r.get("notes", ""),
        )
    return out


# ---------------------------------------------------------------- public API
def gpus() -> dict[str, GPU]:
    """All GPUs of gpukit/data/gpus.csv by name."""
    return _gpus(*_stamp("gpus"))


def models() -> dict[str, ModelSpec]:
    """All models of gpukit/data/models.csv by name (ModelSpec with published_params)."""
    return _models(*_stamp("models"))


def interconnects() -> dict[str, Interconnect]:
    """All links of gpukit/data/interconnects.csv by name."""
    return _interconnects(*_stamp("interconnects"))


def _lookup(kind: str, name, table: dict):
    key = str(name).strip().lower()
    if key not in table:
        raise did_you_mean(kind, str(name), table)
    return table[key]


def get_gpu(name: str) -> GPU:
    """The GPU row called `name` (case-insensitive); ValueError with suggestions otherwise."""
    return _lookup("gpu", name, gpus())


def get_model(name: str) -> ModelSpec:
    """The model row called `name` (case-insensitive); ValueError with suggestions otherwise."""
    return _lookup("model", name, models())


def get_interconnect(name: str) -> Interconnect:
    """The link row called `name` (case-insensitive); ValueError with suggestions otherwise."""
    return _lookup("link", name, interconnects())


# One InfiniBand port per GPU of the GPU's era between nodes (DGX A100: HDR, DGX H100/H200: NDR, DGX
# B200: NDR too, 8 x ConnectX-7 "up to 400Gbps", docs.nvidia.com/dgx/dgxb200-user-guide/introduction-to-
# dgxb200.html; XDR's 800 Gb/s ConnectX-8 comes with B300; NVIDIA DGX user guides); other GPUs get
# 100 Gb/s Ethernet.
_INTER_NODE = {
    "a100-40gb": "ib-hdr",
    "a100-80gb": "ib-hdr",
    "h100-sxm": "ib-ndr",
    "h200": "ib-ndr",
    "h800": "ib-ndr",  # DeepSeek-V3 report sec. 3.1: InfiniBand, 50 GB/s per GPU
    "gh200": "ib-ndr",  # NVIDIA GH200 datasheet: ConnectX-7 / BlueField-3 at 400 Gb/s
    "b200": "ib-ndr",
    "gb200": "ib-ndr",  # DGX GB200: one ConnectX-7 400 Gb/s port per GPU beyond the NVL72 domain
    "v100-32gb": "ib-hdr",
}


def inter_node_link(gpu) -> Interconnect:
    """The catalog link (per port, one port per GPU) between nodes of this GPU unless told otherwise."""
    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    return get_interconnect(_INTER_NODE.get(g.name, "eth-100g"))


def default_links(
    gpu, gpus_per_node: int = 8, link: str | None = None, inter_link: str | None = None
) -> tuple[str, str | None]:
    """(intra-node, inter-node) link names where not given: intra_node_link inside a node; between
    nodes the link itself when it can leave the node (a network), else inter_node_link (NVLink and
    PCIe stay inside the node). A link object (not a name) passes through with inter_link as given."""
    link = link if link is not None else intra_node_link(gpu, gpus_per_node).name
    if inter_link is None and isinstance(link, str) and get_interconnect(link).scope == "intra-node":
        inter_link = inter_node_link(gpu).name
    return link, inter_link


def intra_node_link(gpu, peers: int = 8) -> Interconnect:
    """The catalog link that `peers` GPUs of this type use inside a node unless told otherwise.

    NVLink (AMD: Infinity Fabric, modelled as NVLink) when it joins every peer: an SXM or OAM board
    (NVSwitch or a full mesh), or a PCIe card's bridge for a pair (peers <= 2: RTX 3090/A6000, H100
    PCIe). The generation is the fastest catalog NVLink whose bandwidth the GPU's own `nvlink_gbps`
    reaches (1% slack: MI300X's 448 GB/s counts as NVLink 4's 450). Otherwise, and for a bridge slower
    than NVLink 2, the card's PCIe generation. Data: gpus.csv nvlink_gbps, form_factor, pcie_gen."""
    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    peers = require_positive_int("peers", peers)
    if g.nvlink_gbps > 0 and (g.form_factor != "pcie" or peers <= 2):
        nv = [
            x
            for x in interconnects().values()
            if x.kind == "nvlink" and x.bandwidth_gbps <= g.nvlink_gbps * 1.01
        ]
        if nv:
            return max(nv, key=lambda x: x.bandwidth_gbps)
    return get_interconnect(f"pcie{min(max(int(g.pcie_gen), 3), 5)}")


def frame(kind: str):
    """The catalog `kind` (gpus, models, interconnects) as a pandas DataFrame, numbers as numbers."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    import pandas as pd

    {"gpus": gpus, "models": models, "interconnects": interconnects}[kind]()  # validate first
    df = pd.DataFrame(read_csv(data_dir() / f"{kind}.csv"))
    for c in NUMERIC_COLUMNS[kind]:
        if c in df:
            df[c] = pd.to_numeric(df[c].mask(df[c] == ""))
    for c in BOOL_COLUMNS[kind]:
        if c in df:
            df[c] = df[c].str.lower() == "true"
    return df


# ---------------------------------------------------------------- names or specs
# optional=False never returns None: the overloads say so to the type checker (issue 25).
@overload
def as_gpu(gpu, name: str = ..., optional: Literal[False] = ...) -> GPU: ...
@overload
def as_gpu(gpu, name: str = ..., optional: bool = ...) -> GPU | None: ...
def as_gpu(gpu, name: str = "gpu", optional: bool = False) -> GPU | None:
    """A catalog GPU from a name ('h100-sxm') or a GPU; ValueError saying what to pass otherwise.
    The API takes names everywhere it takes a spec (estimate_memory(..., gpu='h100-sxm'))."""
    if gpu is None and optional:
        return None
    if isinstance(gpu, str):
        return get_gpu(gpu)
    if isinstance(gpu, GPU):
        return gpu
    raise ValueError(
        f"{name} must be a catalog GPU name (`gpukit gpus`) or a gpukit.catalog.GPU, "
        f"got {type(gpu).__name__} {gpu!r}"
    )


@overload
def as_model(model, name: str = ..., optional: Literal[False] = ...) -> ModelSpec: ...
@overload
def as_model(model, name: str = ..., optional: bool = ...) -> ModelSpec | None: ...
def as_model(model, name: str = "model", optional: bool = False) -> ModelSpec | None:
    """A ModelSpec from a catalog name ('llama-2-7b'), the path of a local Hugging Face config.json (a str
    ending in .json or a pathlib.Path: gpukit.hf_config.load_hf_config, offline) or a ModelSpec; ValueError
    otherwise."""
    if model is None and optional:
        return None
    if isinstance(model, Path) or (isinstance(model, str) and model.strip().lower().endswith(".json")):
        try:
            return load_hf_config(model)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    if isinstance(model, str):
        return get_model(model)
    if isinstance(model, ModelSpec):
        return model
    raise ValueError(
        f"{name} must be a catalog model name (`gpukit models`), a config.json path or a gpukit.specs.ModelSpec, "
        f"got {type(model).__name__} {model!r}"
    )


def as_link(link):
    """A catalog Interconnect from a name ('nvlink4'); any other value is returned as is (gpukit.comm
    also takes a profile LinkFit or an (alpha_s, bandwidth_gbps) pair and checks it)."""
    return get_interconnect(link) if isinstance(link, str) else link
