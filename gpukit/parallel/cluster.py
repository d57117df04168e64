"""The cluster a parallel layout runs on: the GPU, its ClusterNetwork (gpukit.comm's one network type:
node size, intra and inter links, ports per node, link efficiency with its source, collective
latency), and the stated compute efficiencies (matmul, HBM) that gpukit.parallel's step-time model
applies.

Pure calculator (no torch, no I/O). The efficiencies are stated, not fitted per layout; their
sources are in the comment above them (stas00/ml-engineering matmul FLOPS; the link's is
gpukit.comm.LINK_EFFICIENCY, nccl-tests busbw). Every link question goes to `Cluster.network`.
`cluster_from_network` takes a ClusterNetwork built elsewhere (e.g. calibrated by a profile).
gpukit.parallel re-exports every name here (parallel.make_cluster, parallel.Cluster, ...).

Used in: notebooks/06_beyond_data_parallel, gpukit.parallel, gpukit.parallel.layout_search,
gpukit.parallel.published, gpukit.cli.parallel, gpukit.audits.parallel, tests/test_parallel.py,
tests/test_widgets_parallel.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from gpukit.catalog import (
    GPU,
    as_model,
    data_dir,
    get_gpu,
    get_interconnect,
    inter_node_link,
    intra_node_link,
    read_csv,
)
from gpukit.comm import LINK_EFFICIENCY, ClusterNetwork, cluster_network
from gpukit.errors import MAX_COUNT, require_positive, require_positive_int

# Efficiency by hardware generation (issue 23, sec. 3): gpukit/data/efficiency.csv holds, per generation
# (gpus.csv's `arch`) and dtype, the published maximum achievable matmul share of the dense peak (MAMF,
# stas00/ml-engineering's comparison table: A100 SXM 0.869, H100 SXM 0.803, B200 0.776, MI300X 0.514 in
# bf16) and the elementwise share of HBM bandwidth, each row cited. A training step's GEMMs run below the
# best-shape MAMF (real shapes, attention kernels, launch gaps): one ratio for every generation,
# TRAINING_MATMUL_SHARE = MATMUL_EFFICIENCY / the ampere MAMF, set on the A100 fit rows (Narayanan 2021
# table 1, Korthikanti 2022 table 5, the MPT A100 table: docs/VALIDATION.md), held out on H100/H200.
# MATMUL_EFFICIENCY stays exported: it is the ampere (A100 SXM) default, 0.70 = 0.869 x 0.806.
# link: gpukit.comm.LINK_EFFICIENCY (NCCL busbw ~0.8 of the link, nccl-tests), held by the ClusterNetwork.
MATMUL_EFFICIENCY = 0.70  # the ampere bf16 default (A100 SXM MAMF 0.869 x TRAINING_MATMUL_SHARE)
HBM_EFFICIENCY = 0.80  # efficiency.csv's `*,hbm` row (a stated assumption, named as one)
AMPERE_MAMF_BF16 = 0.869  # efficiency.csv ampere,matmul,bf16 (A100 SXM 271.2 / 312); a test checks the row
TRAINING_MATMUL_SHARE = (
    MATMUL_EFFICIENCY / AMPERE_MAMF_BF16
)  # one ratio for every generation (fit: A100 rows)
# GEMM tiles of the wave-quantization model (NVIDIA "Matrix Multiplication Background User's Guide", sec.
# "Dimension Quantization Effects": the output is split into tiles, one thread block per tile, run in waves
# of one tile per SM; cuBLAS picks the tile per shape by heuristics, the guide's examples use 256 x 128 and
# 128 x 128). The model takes the best of these tiles for each GEMM, all at the same per-tile speed (stated:
# optimistic for the smaller tile).
GEMM_TILES = ((256, 128), (128, 256), (128, 128))


@dataclass(frozen=True)
class EfficiencyRow:
    """One row of gpukit/data/efficiency.csv: a share of a peak for a hardware generation, cited."""

    generation: str
    kind: str  # "matmul" / "attention" (share of the dense tensor peak) or "hbm" (share of the HBM bandwidth)
    dtype: str
    share: float
    sm_count: int | None
    source: str
    source_url: str
    accessed: str
    notes: str = ""

    @property
    def assumed(self) -> bool:
        """Whether the row is an assumption (no published figure for the generation), said as one."""
        return self.source.lower().startswith(("assumed", "stated assumption"))

    def label(self) -> str:
        return f"efficiency.csv {self.generation},{self.kind},{self.dtype} = {self.share:g}" + (
            " (assumed)" if self.assumed else ""
        )


@lru_cache(maxsize=4)
def _efficiency_rows(path: str) -> tuple[EfficiencyRow, ...]:
    rows = []
    for r in read_csv(Path(path), required=("generation", "kind", "dtype", "share")):
        share = float(r["share"])
        if not 0 < share <= 1:
            raise ValueError(f"{path}: share must be in (0, 1], got {share} ({r['generation']},{r['kind']})")
        sm = r.get("sm_count", "").strip()
        rows.append(
            EfficiencyRow(
                r["generation"].strip(),
                r["kind"].strip(),
                r["dtype"].strip(),
                share,
                int(sm) if sm else None,
                r["source"],
                r["source_url"],
                r["accessed"],
                r.get("notes", ""),
            )
        )
    return tuple(rows)


def efficiency_rows() -> tuple[EfficiencyRow, ...]:
    """Every row of gpukit/data/efficiency.csv (cited; a test checks each has source, URL and date)."""
    return _efficiency_rows(str(data_dir() / "efficiency.csv"))


def efficiency_row(gpu, kind: str = "matmul", dtype: str = "bf16") -> EfficiencyRow:
    """The efficiency.csv row for `gpu`'s generation (gpus.csv `arch`), `kind` and `dtype`: a PCIe part
    takes its generation's `<arch>-pcie` row where one exists; fp16 falls back to bf16 and back (same
    tensor units); the `*` generation answers for every GPU. ValueError naming what exists otherwise."""
    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    rows = efficiency_rows()
    gens = ([f"{g.arch}-pcie"] if g.form_factor == "pcie" else []) + [g.arch, "*"]
    dtypes = [dtype] + {"bf16": ["fp16"], "fp16": ["bf16"]}.get(dtype, []) + ["any"]
    for gen in gens:
        for dt in dtypes:
            for r in rows:
                if r.generation == gen and r.kind == kind and r.dtype == dt:
                    return r
    have = sorted({f"{r.generation}/{r.dtype}" for r in rows if r.kind == kind})
    raise ValueError(
        f"no {kind} efficiency for {g.name} (generation {g.arch!r}, dtype {dtype!r}) in efficiency.csv; "
        f"rows: {', '.join(have)}"
    )


def matmul_efficiency_for(gpu, dtype: str = "bf16") -> float:
    """Share of `gpu`'s dense `dtype` peak a training step's GEMMs sustain: the generation's published
    MAMF share (efficiency.csv) x TRAINING_MATMUL_SHARE (one ratio, set on the A100 fit rows)."""
    return round(efficiency_row(gpu, "matmul", dtype).share * TRAINING_MATMUL_SHARE, 4)


def attention_efficiency_for(gpu, dtype: str = "bf16") -> float | None:
    """Share of `gpu`'s dense `dtype` peak the fused attention kernel sustains in training (scores and
    values, forward and backward): the generation's published FlashAttention share (efficiency.csv
    `attention` rows: A100 50-73%, Dao 2023; H100 35% for FlashAttention-2, Shah et al. 2024) x
    TRAINING_MATMUL_SHARE, like the GEMMs. None where the generation has no published row: its attention
    then runs at the matmul efficiency (stated by the estimate)."""
    try:
        return round(efficiency_row(gpu, "attention", dtype).share * TRAINING_MATMUL_SHARE, 4)
    except ValueError:  # no attention row for the generation (efficiency_row's one-line error)
        return None


def hbm_efficiency_for(gpu) -> float:
    """Share of `gpu`'s HBM bandwidth its elementwise kernels reach (efficiency.csv's hbm row)."""
    return efficiency_row(gpu, "hbm", "any").share


def gemm_shape_efficiency(tokens: int, n: int, k: int, sm_count: int | None, tiles=GEMM_TILES) -> float:
    """Useful share of a (tokens x k) @ (k x n) GEMM's tile work: tile and wave quantization (NVIDIA
    "Matrix Multiplication Background User's Guide", "Dimension Quantization Effects"): tiles =
    ceil(M/tm) ceil(N/tn) thread blocks run in ceil(tiles / SMs) waves, each wave as long as a full one,
    so the share is M N / (ceil(tiles / SMs) SMs tm tn), the best over `tiles` (cuBLAS picks one per
    shape). 1 when sm_count is unknown. K does not quantize the output tiles; it is here for the caller's
    FLOP weight."""
    tokens, n = require_positive_int("tokens", tokens), require_positive_int("n", n)
    require_positive_int("k", k)
    del k
    if sm_count is None:
        return 1.0
    sm_count = require_positive_int("sm_count", sm_count)
    if tokens > MAX_COUNT or n > MAX_COUNT or sm_count > MAX_COUNT:
        raise ValueError(f"tokens, n and sm_count must be at most {MAX_COUNT}, got {tokens}, {n}, {sm_count}")
    return max(
        tokens * n / (math.ceil(math.ceil(tokens / tm) * math.ceil(n / tn) / sm_count) * sm_count * tm * tn)
        for tm, tn in tiles
    )


def layer_gemm_efficiency(model, tokens: int, tp: int, sm_count: int | None) -> float:
    """FLOP-weighted gemm_shape_efficiency of one transformer layer's forward GEMMs on a TP rank
    (Megatron's split, Shoeybi et al. 2019 sec. 3: QKV and fc1/gate+up column-parallel, n / tp; the
    attention projection and fc2/down row-parallel, k / tp), M = the rank's tokens per micro-batch.
    The backward GEMMs are taken at the forward shapes (stated simplification)."""
    model = as_model(model)
    tokens, tp = require_positive_int("tokens", tokens), require_positive_int("tp", tp)
    if sm_count is None or type(sm_count) is int:  # hashable: a layout search asks it thousands of times
        return _layer_gemm_efficiency(model, tokens, tp, sm_count)
    return _layer_gemm_efficiency.__wrapped__(model, tokens, tp, sm_count)


@lru_cache(maxsize=4096)
def _layer_gemm_efficiency(model, tokens: int, tp: int, sm_count: int | None) -> float:
    """layer_gemm_efficiency of checked inputs, cached."""
    h = model.hidden
    kv = model.n_kv_heads * model.head_dim
    ffn_n = model.ffn_hidden * (2 if model.mlp == "swiglu" else 1)
    gemms = (  # (n, k) per TP rank
        ((model.n_heads * model.head_dim + 2 * kv) // tp or 1, h),
        (h, (model.n_heads * model.head_dim) // tp or 1),
        (ffn_n // tp or 1, h),
        (h, model.ffn_hidden // tp or 1),
    )
    work = sum(n * k for n, k in gemms)
    return work / sum(n * k / gemm_shape_efficiency(tokens, n, k, sm_count) for n, k in gemms)


@dataclass(frozen=True)
class Cluster:
    """GPUs over a gpukit.comm.ClusterNetwork (every link, port and link-efficiency question) with the
    stated compute efficiencies."""

    gpu: GPU
    network: ClusterNetwork
    matmul_efficiency: float = None  # type: ignore[assignment]  # None -> matmul_efficiency_for(gpu, dtype)
    hbm_efficiency: float = None  # type: ignore[assignment]  # None -> hbm_efficiency_for(gpu)
    dtype: str = "bf16"
    efficiency_source: str = ""  # which set the matmul efficiency: catalog row, profile or caller
    # the fused attention kernel's share of the peak: None -> attention_efficiency_for(gpu) when the matmul
    # efficiency is the catalog's, else (caller, profile, or no attention row) the matmul efficiency
    attention_efficiency: float = None  # type: ignore[assignment]
    sm_count: int | None = field(default=None, compare=False)  # the generation row's SMs (wave model)

    def __post_init__(self):
        row = None
        if self.matmul_efficiency is None:
            row = efficiency_row(self.gpu, "matmul", self.dtype)
            object.__setattr__(self, "matmul_efficiency", matmul_efficiency_for(self.gpu, self.dtype))
            if not self.efficiency_source:
                object.__setattr__(
                    self,
                    "efficiency_source",
                    f"catalog: {row.label()} x training share {TRAINING_MATMUL_SHARE:.3f} (set on A100 runs)",
                )
        elif not self.efficiency_source:
            object.__setattr__(self, "efficiency_source", "given by the caller")
        if self.attention_efficiency is None:
            att = attention_efficiency_for(self.gpu, self.dtype) if row is not None else None
            object.__setattr__(
                self, "attention_efficiency", att if att is not None else self.matmul_efficiency
            )
        elif not 0 < self.attention_efficiency <= 1:
            raise ValueError(f"attention_efficiency must be in (0, 1], got {self.attention_efficiency}")
        if self.hbm_efficiency is None:
            object.__setattr__(self, "hbm_efficiency", hbm_efficiency_for(self.gpu))
        if self.sm_count is None:
            try:
                row = row or efficiency_row(self.gpu, "matmul", self.dtype)
                object.__setattr__(self, "sm_count", row.sm_count)
            except ValueError:
                pass

    @property
    def gpus_per_node(self) -> int:
        return self.network.gpus_per_node

    @property
    def peak_flops(self) -> float:
        return self.gpu.peak_tflops(self.dtype) * 1e12

    def describe(self) -> str:
        n = self.network
        return (
            f"{self.gpu.name}, {n.gpus_per_node} per node, {n.intra_name} in the node, "
            f"{n.ports_per_node} x {n.inter_name} per node (efficiency {n.efficiency:g}: {n.efficiency_source})"
        )


def as_cluster_network(network) -> ClusterNetwork:
    """`network` as a gpukit.comm.ClusterNetwork: itself, or an object with its interface (intra_link,
    inter_link(k), gpus_per_node, ports_per_node, efficiency, names) turned into one (its effective
    intra link at efficiency 1, its inter line rate = one port's effective rate / efficiency)."""
    if isinstance(network, ClusterNetwork):
        return network
    for attr in ("intra_link", "inter_link", "gpus_per_node", "ports_per_node", "efficiency"):
        if not hasattr(network, attr):
            raise ValueError(
                f"network must be a gpukit.comm.ClusterNetwork (missing {attr}), got {type(network).__name__}"
            )
    (ia, ib), (ea, eb) = network.intra_link, network.inter_link(1)
    return ClusterNetwork(
        intra_name=getattr(network, "intra_name", "intra"),
        intra_alpha_s=ia,
        intra_bandwidth_gbps=ib,
        inter_name=getattr(network, "inter_name", "inter"),
        inter_alpha_s=ea,
        inter_bandwidth_gbps=eb / network.efficiency,
        gpus_per_node=network.gpus_per_node,
        ports_per_node=network.ports_per_node,
        efficiency=network.efficiency,
        efficiency_source=getattr(network, "efficiency_source", "given"),
        intra_efficiency=1.0,
    )


def cluster_from_network(
    gpu,
    network,
    *,
    matmul_efficiency: float | None = None,
    hbm_efficiency: float | None = None,
    profile=None,
) -> Cluster:
    """A Cluster over a gpukit.comm.ClusterNetwork: its links, ports and efficiency with provenance."""
    net = as_cluster_network(network)
    base = make_cluster(
        gpu,
        net.gpus_per_node,
        ports_per_node=net.ports_per_node,
        matmul_efficiency=matmul_efficiency,
        hbm_efficiency=hbm_efficiency,
        profile=profile,
    )
    return replace(base, network=net)


def make_cluster(
    gpu,
    gpus_per_node: int = 8,
    link=None,
    inter_link=None,
    ports_per_node: int | None = None,
    *,
    link_efficiency: float | None = None,
    matmul_efficiency: float | None = None,
    hbm_efficiency: float | None = None,
    profile=None,
) -> Cluster:
    """A Cluster from names or catalog objects. Links default by GPU (NVLink of its generation, one IB
    port per GPU). The ClusterNetwork's link efficiency: `link_efficiency` when given (both links),
    else a calibrated `profile`'s fit of the inter link where it has one, else gpukit.comm's one
    default LINK_EFFICIENCY; the network says which. matmul_efficiency: the caller's value, else a
    `profile`'s measured bf16 matmul / peak, else the GPU generation's cited row
    (matmul_efficiency_for); hbm_efficiency: the caller's, else hbm_efficiency_for. The Cluster's
    `efficiency_source` names which."""
    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    k = require_positive_int("gpus_per_node", gpus_per_node)
    lk = intra_node_link(g, k) if link is None else get_interconnect(link) if isinstance(link, str) else link
    il = (
        inter_node_link(g)
        if inter_link is None
        else get_interconnect(inter_link)
        if isinstance(inter_link, str)
        else inter_link
    )
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    for name, v in (
        ("link_efficiency", LINK_EFFICIENCY if link_efficiency is None else link_efficiency),
        ("matmul_efficiency", MATMUL_EFFICIENCY if matmul_efficiency is None else matmul_efficiency),
        ("hbm_efficiency", HBM_EFFICIENCY if hbm_efficiency is None else hbm_efficiency),
    ):
        if not 0 < require_positive(name, v) <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {v}")
    calibrated = (
        profile is not None
        and link_efficiency is None
        and hasattr(profile, "has_link")
        and profile.has_link(il.name)
    )
    net = cluster_network(
        lk,
        il,
        gpus_per_node=k,
        ports_per_node=ports,
        efficiency=link_efficiency,
        profile=profile if calibrated else None,
    )
    if link_efficiency is not None:
        net = replace(net, intra_efficiency=link_efficiency)
    source = "given by the caller" if matmul_efficiency is not None else ""
    if profile is not None:
        matmul_efficiency = min(1.0, profile.matmul_tflops("bf16") / g.peak_tflops("bf16"))
        source = f"calibration profile {getattr(profile, 'source', '')}: measured bf16 matmul / peak".replace(
            "  ", " "
        )
    return Cluster(
        gpu=g,
        network=net,
        matmul_efficiency=matmul_efficiency,  # type: ignore[arg-type]  # None -> the generation's row
        hbm_efficiency=hbm_efficiency,  # type: ignore[arg-type]
        efficiency_source=source,
    )
