"""Catalogs: load and validate data/*.csv; look rows up by name with a "did you mean".

Every row carries `source`, `source_url` and `accessed` (validated here; tests fail without them).
Columns and units are documented in data/README.md. Set GPUKIT_DATA to use another folder.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import did_you_mean
from .specs import ModelSpec
from .units import GiB

PROVENANCE = ("source", "source_url", "accessed")
PEAK_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")


def data_dir() -> Path:
    return Path(os.environ.get("GPUKIT_DATA") or Path(__file__).resolve().parent.parent / "data")


@dataclass(frozen=True)
class GPU:
    """One accelerator's spec sheet. Peaks are dense (no 2:4 sparsity), in TFLOP/s (int8: TOPS)."""

    name: str
    vendor: str
    memory_gib: float
    hbm_bandwidth_gbps: float  # decimal GB/s
    peaks_tflops: tuple[tuple[str, float], ...]  # (dtype, dense peak) for the dtypes it supports
    nvlink_gbps: float  # unidirectional per GPU, decimal GB/s; 0 if none
    pcie_gen: int
    tdp_w: float
    source: str = ""
    source_url: str = ""
    accessed: str = ""

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GiB)

    def peak_tflops(self, dtype: str) -> float:
        """Dense peak for `dtype` (fp16 falls back to bf16 and vice versa); ValueError if unsupported."""
        peaks = dict(self.peaks_tflops)
        alias = {"fp16": "bf16", "bf16": "fp16"}
        if dtype in peaks:
            return peaks[dtype]
        if dtype in alias and alias[dtype] in peaks:
            return peaks[alias[dtype]]
        raise ValueError(f"dtype {dtype!r} has no peak on {self.name}; supported: {', '.join(peaks)}")

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


def read_csv(path: Path, required: tuple[str, ...] = ()) -> list[dict[str, str]]:
    """Rows of a catalog CSV; ValueError naming the file and line for missing fields/duplicates."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"catalog file {path} not found")
    with path.open(newline="") as f:
        reader = csv.DictReader(line for line in f if not line.startswith("#"))
        rows = list(reader)
        cols = reader.fieldnames or []
    missing_cols = [c for c in (*required, *PROVENANCE) if c not in cols]
    if missing_cols:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing_cols)}")
    seen: set[str] = set()
    for i, row in enumerate(rows, start=2):
        if None in row or any(v is None for v in row.values()):
            raise ValueError(f"{path}:{i}: wrong number of fields")
        for c in PROVENANCE:
            if not (row.get(c) or "").strip():
                raise ValueError(f"{path}:{i}: empty {c!r} (every row needs its provenance)")
        name = row.get("name", "").strip()
        if "name" in cols:
            if not name:
                raise ValueError(f"{path}:{i}: empty 'name'")
            if name in seen:
                raise ValueError(f"{path}:{i}: duplicate name {name!r}")
            seen.add(name)
    return rows


def _num(path, row, col, kind=float, optional=False):
    raw = (row.get(col) or "").strip()
    if raw == "":
        if optional:
            return None
        raise ValueError(f"{path}: row {row.get('name')!r}: empty {col!r}")
    try:
        v = kind(raw)
    except ValueError:
        raise ValueError(f"{path}: row {row.get('name')!r}: {col!r} must be a {kind.__name__}, got {raw!r}") from None
    if v < 0:
        raise ValueError(f"{path}: row {row.get('name')!r}: {col!r} must be >= 0, got {raw!r}")
    return v


def _bool(path, row, col) -> bool:
    raw = (row.get(col) or "").strip().lower()
    if raw not in ("true", "false"):
        raise ValueError(f"{path}: row {row.get('name')!r}: {col!r} must be true or false, got {raw!r}")
    return raw == "true"


@lru_cache(maxsize=8)
def _gpus(folder: str) -> dict[str, GPU]:
    path = Path(folder) / "gpus.csv"
    out = {}
    for r in read_csv(path, ("name", "vendor", "memory_gib", "hbm_bandwidth_gbps", "nvlink_gbps", "pcie_gen", "tdp_w")):
        peaks = tuple((d, p) for d in PEAK_DTYPES
                      if (p := _num(path, r, f"{d}_tflops" if d != "int8" else "int8_tops", optional=True)))
        if not peaks:
            raise ValueError(f"{path}: row {r['name']!r}: no peak TFLOPS at all")
        out[r["name"]] = GPU(
            name=r["name"], vendor=r["vendor"], memory_gib=_num(path, r, "memory_gib"),
            hbm_bandwidth_gbps=_num(path, r, "hbm_bandwidth_gbps"), peaks_tflops=peaks,
            nvlink_gbps=_num(path, r, "nvlink_gbps"), pcie_gen=_num(path, r, "pcie_gen", int),
            tdp_w=_num(path, r, "tdp_w"), source=r["source"], source_url=r["source_url"], accessed=r["accessed"])
    return out


@lru_cache(maxsize=8)
def _models(folder: str) -> dict[str, ModelSpec]:
    path = Path(folder) / "models.csv"
    out = {}
    cols = ("name", "n_layers", "hidden", "n_heads", "n_kv_heads", "ffn_hidden", "vocab", "max_seq",
            "tied_embeddings", "mlp", "norm", "position", "bias", "arch", "published_params")
    for r in read_csv(path, cols):
        try:
            out[r["name"]] = ModelSpec(
                name=r["name"], n_layers=_num(path, r, "n_layers", int), hidden=_num(path, r, "hidden", int),
                n_heads=_num(path, r, "n_heads", int), n_kv_heads=_num(path, r, "n_kv_heads", int),
                ffn_hidden=_num(path, r, "ffn_hidden", int), vocab=_num(path, r, "vocab", int),
                max_seq=_num(path, r, "max_seq", int), tied_embeddings=_bool(path, r, "tied_embeddings"),
                mlp=r["mlp"], norm=r["norm"], position=r["position"], bias=_bool(path, r, "bias"),
                arch=r["arch"], published_params=_num(path, r, "published_params", int))
        except ValueError as e:
            if str(e).startswith(str(path)):
                raise
            raise ValueError(f"{path}: row {r['name']!r}: {e}") from None
    return out


@lru_cache(maxsize=8)
def _interconnects(folder: str) -> dict[str, Interconnect]:
    path = Path(folder) / "interconnects.csv"
    out = {}
    for r in read_csv(path, ("name", "kind", "scope", "bandwidth_gbps", "latency_us")):
        out[r["name"]] = Interconnect(
            name=r["name"], kind=r["kind"], scope=r["scope"], bandwidth_gbps=_num(path, r, "bandwidth_gbps"),
            latency_us=_num(path, r, "latency_us"), source=r["source"], source_url=r["source_url"],
            accessed=r["accessed"])
    return out


def gpus() -> dict[str, GPU]:
    return _gpus(str(data_dir()))


def models() -> dict[str, ModelSpec]:
    return _models(str(data_dir()))


def interconnects() -> dict[str, Interconnect]:
    return _interconnects(str(data_dir()))


def get_gpu(name: str) -> GPU:
    """The GPU row called `name` (case-insensitive); ValueError with suggestions otherwise."""
    table = gpus()
    key = str(name).strip().lower()
    if key not in table:
        raise did_you_mean("gpu", str(name), table)
    return table[key]


def get_model(name: str) -> ModelSpec:
    table = models()
    key = str(name).strip().lower()
    if key not in table:
        raise did_you_mean("model", str(name), table)
    return table[key]


def get_interconnect(name: str) -> Interconnect:
    table = interconnects()
    key = str(name).strip().lower()
    if key not in table:
        raise did_you_mean("link", str(name), table)
    return table[key]


def frame(kind: str):
    """The raw catalog `kind` (gpus, models, interconnects) as a pandas DataFrame."""
    import pandas as pd

    return pd.DataFrame(read_csv(data_dir() / f"{kind}.csv"))
