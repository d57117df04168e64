"""Collective communication cost: the alpha-beta (Hockney) model, algbw <-> busbw, hierarchical links.

Model: t = c_alpha * alpha + c_beta * S / B, with alpha the per-message latency (s), B the link's
unidirectional bandwidth per rank (decimal GB/s, full duplex) and (c_alpha, c_beta) set by the
collective and algorithm (Hockney 1994; Thakur, Rabenseifner & Gropp 2005, "Optimization of
collective communication operations in MPICH", sec. 4). Ring algorithms (Patarasuk & Yuan 2009,
"Bandwidth optimal all-reduce algorithms for clusters of workstations"):

    all_reduce      2(n-1) alpha + 2(n-1)/n S/B      reduce-scatter then all-gather
    reduce_scatter   (n-1) alpha +  (n-1)/n S/B
    all_gather       (n-1) alpha +  (n-1)/n S/B
    all_to_all       (n-1) alpha +  (n-1)/n S/B      pairwise exchange (Thakur et al. 2005 sec. 4.5)
    broadcast,reduce (n-1) alpha +        S/B      pipelined chain (large messages)
    send_recv              alpha +        S/B

Tree (NCCL's double binary tree; Sanders, Speck & Traeff 2009, "Two-tree algorithms for full
bandwidth broadcast, reduction and scan"): all_reduce 2 ceil(log2 n) alpha + 2 S/B (each half of
the data goes up one tree and down again: every rank sends and receives ~2S); broadcast and reduce
ceil(log2 n) alpha + S/B. Tree for the other collectives is not modelled (NCCL runs them as rings).

Size convention (nccl-tests doc/PERFORMANCE.md): S is the per-rank buffer for all_reduce,
broadcast, reduce and send_recv, and the TOTAL size (n x the per-rank part) for all_gather and
reduce_scatter; for all_to_all S is each rank's send buffer, S/n to every rank (nccl-tests
src/alltoall.cu: sendcount = count, paramcount = count / nranks), so (n-1)/n S leaves each rank.
algbw = S / t; busbw = algbw x factor(op, n), which makes busbw
comparable to the link's bandwidth whatever n is: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
all_to_all (n-1)/n; broadcast, reduce, send_recv 1.

Also here: fitting alpha and B to measured times (`fit_alpha_beta`). The cluster network (ports per
node, efficiency, collectives over it) is in gpukit.comm.network, the curves over a size sweep in
gpukit.comm.curves; both re-exported here.

Used in: notebooks on communication and scaling; gpukit.cli.comm; gpukit.scaling.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.errors import MAX_COUNT, require_choice, require_positive, require_positive_int
from gpukit.results import frame, json_safe
from gpukit.units import GB

# NCCL's fixed base latency per collective, on top of the per-hop alpha: NCCL src/graph/tuning.cc,
# table `baseLat` (us, per algorithm x protocol; recent 2.2x releases: Tree {LL 6.8, LL128 14.0, Simple 8.4
# or 0}, Ring {LL 6.6, LL128 14.0, Simple 8.4}; older 2.1x releases had Ring LL 3.6, Tree LL 4.4); the per-hop
# term is its `hwLat` table (NVLink ring LL 0.6 us, network ring LL 2.7 us: our link alpha). The LL
# protocol's value is used: NCCL picks LL for the small messages where this term matters; for large
# ones (Simple, 8.4 us) it is under 1% of the time. Point-to-point (send_recv) has no baseLat: none.
NCCL_BASE_LATENCY_S = {"ring": 6.6e-6, "tree": 6.8e-6}
BASE_LATENCY_SOURCE = (
    "NCCL src/graph/tuning.cc baseLat (LL protocol): ring 6.6 us, tree 6.8 us per collective"
)

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
ALGORITHMS = ("ring", "tree")
TREE_OPS = ("all_reduce", "broadcast", "reduce")


def busbw_factor(op: str, n_ranks: int) -> float:
    """nccl-tests bus-bandwidth factor (doc/PERFORMANCE.md, "Summary"): busbw = algbw x factor."""
    require_choice("op", op, OPS)
    n = require_positive_int("n_ranks", n_ranks)
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    return 1.0


def algbw_to_busbw(algbw_gbps: float, op: str, n_ranks: int) -> float:
    """busbw = algbw x busbw_factor(op, n_ranks)."""
    return require_positive("algbw_gbps", algbw_gbps, allow_zero=True) * busbw_factor(op, n_ranks)


def busbw_to_algbw(busbw_gbps: float, op: str, n_ranks: int) -> float:
    """algbw = busbw / busbw_factor(op, n_ranks); ValueError where the factor is 0 (one rank)."""
    f = busbw_factor(op, n_ranks)
    if f == 0:
        raise ValueError(f"n_ranks must be >= 2 to turn busbw into algbw for {op}, got {n_ranks}")
    return require_positive("busbw_gbps", busbw_gbps, allow_zero=True) / f


def coefficients(op: str, n_ranks: int, algorithm: str = "ring") -> tuple[float, float]:
    """(c_alpha, c_beta) of t = c_alpha * alpha + c_beta * S / B (table in the module docstring)."""
    require_choice("op", op, OPS)
    require_choice("algorithm", algorithm, ALGORITHMS)
    n = require_positive_int("n_ranks", n_ranks)
    if n == 1:
        return 0.0, 0.0  # nothing leaves the rank
    if algorithm == "tree":
        if op not in TREE_OPS:
            raise ValueError(f"algorithm tree is modelled for {', '.join(TREE_OPS)}; got op {op} (use ring)")
        depth = math.ceil(math.log2(n))
        return (2.0 * depth, 2.0) if op == "all_reduce" else (float(depth), 1.0)
    if op == "all_reduce":
        return 2.0 * (n - 1), 2 * (n - 1) / n
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return float(n - 1), (n - 1) / n
    if op == "send_recv":
        return 1.0, 1.0
    return float(n - 1), 1.0  # broadcast, reduce: pipelined chain


def is_measured_fit(link) -> bool:
    """True for a measured alpha-beta fit (a profile LinkFit, an AlphaBetaFit): its alpha already holds
    NCCL's base latency and its rate is what a collective reached, so neither is applied again."""
    return hasattr(link, "alpha_us") and hasattr(link, "beta_gbps")


def link_params(link) -> tuple[float, float, str]:
    """(alpha_s, bandwidth_gbps, name) from a catalog Interconnect (or its name), a profile LinkFit or a tuple."""
    if isinstance(link, str):
        from gpukit.catalog import as_link

        link = as_link(link)
    if hasattr(link, "latency_us") and hasattr(link, "bandwidth_gbps"):
        return (
            require_positive("latency_us", link.latency_us, allow_zero=True) * 1e-6,
            require_positive("bandwidth_gbps", link.bandwidth_gbps),
            link.name,
        )
    if is_measured_fit(link):
        return (
            require_positive("alpha_us", link.alpha_us, allow_zero=True) * 1e-6,
            require_positive("beta_gbps", link.beta_gbps),
            getattr(link, "name", "measured"),
        )
    try:
        alpha_s, bw = link
    except (TypeError, ValueError):
        raise ValueError(f"link must be an Interconnect or (alpha_s, bandwidth_gbps), got {link!r}") from None
    return (
        require_positive("alpha_s", alpha_s, allow_zero=True),
        require_positive("bandwidth_gbps", bw),
        f"alpha={alpha_s:g}s,B={bw:g}GB/s",
    )


@dataclass(frozen=True)
class CollectiveCost:
    """Predicted time of one collective, split into latency and bandwidth terms, with algbw/busbw."""

    op: str
    algorithm: str
    size_bytes: float
    n_ranks: int
    link: str
    alpha_s: float
    bandwidth_gbps: float
    latency_s: float
    bandwidth_s: float
    bytes_sent_per_rank: float  # c_beta * S: what one rank pushes through its link
    base_latency_s: float = 0.0  # NCCL's fixed cost per collective (in latency_s; NCCL_BASE_LATENCY_S)

    @property
    def time_s(self) -> float:
        return self.latency_s + self.bandwidth_s

    @property
    def algbw_gbps(self) -> float:
        """size / time in GB/s; inf when nothing takes time (one rank), null in to_json_dict."""
        return self.size_bytes / self.time_s / GB if self.time_s > 0 else math.inf

    @property
    def busbw_gbps(self) -> float:
        f = busbw_factor(self.op, self.n_ranks)
        return self.algbw_gbps * f if f else 0.0

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (("latency_s", self.latency_s), ("bandwidth_s", self.bandwidth_s))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        # unit in the name, whole bytes (issue 25): c_beta * S rounded, as nccl-tests' byte counts are
        d["sent_per_rank_bytes"] = round(d.pop("bytes_sent_per_rank"))
        d.update(
            time_s=self.time_s,
            algbw_gbps=self.algbw_gbps,
            busbw_gbps=self.busbw_gbps if math.isfinite(self.algbw_gbps) else None,
        )  # one rank: null
        return json_safe(d)

    def to_frame(self):
        return frame(self.breakdown, ("term", "seconds"))


def base_latency_of(
    op: str, n_ranks: int, algorithm: str = "ring", base_latency_s: float | None = None
) -> float:
    """The fixed latency one collective pays before its per-hop terms: `base_latency_s` when given,
    else NCCL's baseLat for `algorithm` (NCCL_BASE_LATENCY_S); 0 for one rank and for send_recv."""
    require_choice("op", op, OPS)
    require_choice("algorithm", algorithm, ALGORITHMS)
    if require_positive_int("n_ranks", n_ranks) == 1 or op == "send_recv":
        return 0.0
    if base_latency_s is not None:
        return require_positive("base_latency_s", base_latency_s, allow_zero=True)
    return NCCL_BASE_LATENCY_S[algorithm]


def collective_time(
    op: str,
    size_bytes: float,
    n_ranks: int,
    link,
    algorithm: str = "ring",
    base_latency_s: float | None = None,
) -> CollectiveCost:
    """Alpha-beta time of `op` on `n_ranks` ranks over `link` (an Interconnect, a profile LinkFit or
    (alpha_s, bandwidth_gbps)). `size_bytes` follows the nccl-tests convention (module docstring).
    latency = NCCL's base latency per collective (base_latency_of; 0 to leave it out, and by default
    for a measured fit, whose alpha was fitted on whole collective times) + c_alpha x alpha per hop."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    size = int(size) if size.is_integer() else size  # whole bytes stay ints (JSON: 1000000000, not 1e9)
    alpha, bw, name = link_params(link)
    if base_latency_s is None and is_measured_fit(link):
        base_latency_s = (
            0.0  # a measured fit (profile LinkFit, AlphaBetaFit): its alpha already holds the base
        )
    try:
        ca, cb = coefficients(op, n_ranks, algorithm)
        base = base_latency_of(op, n_ranks, algorithm, base_latency_s)
        latency, bandwidth, sent = base + ca * alpha, cb * size / (bw * GB), cb * size
    except OverflowError:  # n_ranks beyond float range
        base = latency = bandwidth = sent = math.inf
    if not all(math.isfinite(x) for x in (latency, bandwidth, sent, latency + bandwidth)):
        raise ValueError(
            f"inputs too large: the time of {op} overflows a float (size_bytes {size:g}, "
            f"n_ranks {n_ranks}); use smaller sizes"
        )
    return CollectiveCost(
        op=op,
        algorithm=algorithm,
        size_bytes=size,
        n_ranks=int(n_ranks),
        link=name,
        alpha_s=alpha,
        bandwidth_gbps=bw,
        latency_s=latency,
        bandwidth_s=bandwidth,
        bytes_sent_per_rank=sent,
        base_latency_s=base,
    )


@dataclass(frozen=True)
class CollectiveSweep:
    """collective_time over a list of sizes: the model's curve, for plotting beside measurements."""

    costs: tuple[CollectiveCost, ...]

    def to_json_dict(self) -> dict:
        return {"rows": [c.to_json_dict() for c in self.costs]}

    def to_frame(self):
        rows = [c.to_json_dict() for c in self.costs]
        return frame(rows, list(rows[0]) if rows else [])


def collective_sweep(op: str, sizes_bytes, n_ranks: int, link, algorithm: str = "ring") -> CollectiveSweep:
    """collective_time for each size in `sizes_bytes`."""
    return CollectiveSweep(tuple(collective_time(op, s, n_ranks, link, algorithm) for s in sizes_bytes))


# ---------------------------------------------------------------------------------------------------
# Hierarchical all-reduce
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HierarchicalCost:
    """Two-level all-reduce: reduce-scatter in the node, all-reduce across nodes, all-gather in the node."""

    size_bytes: float
    n_nodes: int
    ranks_per_node: int
    phases: tuple[CollectiveCost, ...]  # intra reduce_scatter, inter all_reduce, intra all_gather

    @property
    def n_ranks(self) -> int:
        return self.n_nodes * self.ranks_per_node

    @property
    def time_s(self) -> float:
        return sum(p.time_s for p in self.phases)

    @property
    def latency_s(self) -> float:
        return sum(p.latency_s for p in self.phases)

    @property
    def bandwidth_s(self) -> float:
        return sum(p.bandwidth_s for p in self.phases)

    @property
    def algbw_gbps(self) -> float:
        return self.size_bytes / self.time_s / GB if self.time_s > 0 else math.inf

    @property
    def busbw_gbps(self) -> float:
        f = busbw_factor("all_reduce", self.n_ranks)
        return self.algbw_gbps * f if f else 0.0

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        names = ("intra_reduce_scatter_s", "inter_all_reduce_s", "intra_all_gather_s")
        return tuple((n, p.time_s) for n, p in zip(names, self.phases, strict=True))

    def to_json_dict(self) -> dict:
        return json_safe(
            {
                "op": "all_reduce",
                "algorithm": "hierarchical",
                "size_bytes": self.size_bytes,
                "n_nodes": self.n_nodes,
                "ranks_per_node": self.ranks_per_node,
                "n_ranks": self.n_ranks,
                "time_s": self.time_s,
                "latency_s": self.latency_s,
                "bandwidth_s": self.bandwidth_s,
                "algbw_gbps": self.algbw_gbps,
                "busbw_gbps": self.busbw_gbps,
                "breakdown": dict(self.breakdown),
                "phases": [p.to_json_dict() for p in self.phases],
            }
        )

    def to_frame(self):
        rows = [
            dict(phase=n, **p.to_json_dict()) for (n, _), p in zip(self.breakdown, self.phases, strict=True)
        ]
        return frame(rows, list(rows[0]))


def hierarchical_all_reduce(
    size_bytes: float,
    n_nodes: int,
    ranks_per_node: int,
    intra,
    inter,
    algorithm: str = "ring",
    base_latency_s: float | None = None,
) -> HierarchicalCost:
    """All-reduce of a per-rank buffer S on n_nodes x ranks_per_node ranks (k = ranks_per_node):
    ring reduce-scatter of S over the k ranks of a node (intra link), then each rank all-reduces its
    S/k shard with its peers on the other nodes (inter link, `algorithm`; the k shards go in parallel,
    each rank with its own NIC), then ring all-gather of S in the node. With k = 1 this is the flat
    all-reduce over the inter link; with one node, the flat ring over the intra link (Thakur et al.
    2005; NCCL's intra-node ring + inter-node ring/tree)."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    size = int(size) if size.is_integer() else size
    nodes = require_positive_int("n_nodes", n_nodes, at_most=MAX_COUNT)
    k = require_positive_int("ranks_per_node", ranks_per_node, at_most=MAX_COUNT)
    return HierarchicalCost(
        size_bytes=size,
        n_nodes=nodes,
        ranks_per_node=k,
        phases=hierarchical_phases(size, nodes, k, intra, inter, algorithm, base_latency_s),
    )


def hierarchical_phases(
    size, n_nodes: int, k: int, intra, inter, algorithm: str = "ring", base_latency_s: float | None = None
):
    """The three phases of a two-level all-reduce of S (validated): intra reduce-scatter of S over k,
    inter all-reduce of the S/k shard over n_nodes, intra all-gather of S; NCCL's base latency
    (`base_latency_s`, collective_time) once, on the first phase. Whole bytes make whole shards: with an integer S not a multiple of k the largest, ceil(S/k), sets the time."""
    n_nodes, k = require_positive_int("n_nodes", n_nodes), require_positive_int("ranks_per_node", k)
    size = require_positive("size_bytes", size, allow_zero=True) if not isinstance(size, int) else size
    if isinstance(size, int) and size < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size}")
    shard = -(-size // k) if isinstance(size, int) else size / k
    # one collective for NCCL (one kernel launch): its base latency is paid once, on the first phase
    # that moves data (NCCL_BASE_LATENCY_S)
    first = "rs" if k > 1 else "ar" if n_nodes > 1 else None
    return (
        collective_time(
            "reduce_scatter", size, k, intra, base_latency_s=base_latency_s if first == "rs" else 0.0
        ),
        collective_time(
            "all_reduce",
            shard,
            n_nodes,
            inter,
            algorithm,
            base_latency_s=base_latency_s if first == "ar" else 0.0,
        ),
        collective_time("all_gather", size, k, intra, base_latency_s=0.0),
    )


# ---------------------------------------------------------------------------------------------------
# Fitting alpha and beta to measurements
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AlphaBetaFit:
    """alpha (us) and bandwidth (decimal GB/s) fitted to measured times of one collective."""

    op: str
    n_ranks: int
    algorithm: str
    alpha_us: float
    beta_gbps: float  # bandwidth B of t = c_a alpha + c_b S / B (not seconds per byte)
    r2: float
    n_points: int
    max_rel_error: float
    note: str = ""

    def predict(self, size_bytes: float) -> float:
        """Predicted seconds for `size_bytes` (same size convention as the data)."""
        ca, cb = coefficients(self.op, self.n_ranks, self.algorithm)
        return ca * self.alpha_us * 1e-6 + cb * require_positive(
            "size_bytes", size_bytes, allow_zero=True
        ) / (self.beta_gbps * GB)

    @property
    def link(self) -> tuple[float, float]:
        """(alpha_s, bandwidth_gbps), usable as `link` in collective_time."""
        return self.alpha_us * 1e-6, self.beta_gbps

    def to_json_dict(self) -> dict:
        return json_safe(asdict(self))

    def to_frame(self):
        return frame(self.to_json_dict().items(), ("quantity", "value"))


def fit_alpha_beta(
    sizes_bytes, times_s, op: str = "all_reduce", n_ranks: int = 2, algorithm: str = "ring"
) -> AlphaBetaFit:
    """Least squares of t = c_a * alpha + c_b * S / B on measured (size, time) pairs.

    Each row is divided by its measured time, so the fit minimizes relative error: small messages
    (which carry alpha) count as much as large ones (which carry B). A negative alpha (noise at tiny
    sizes) is refitted with alpha = 0 and `note` says so. r2 is computed on the times themselves."""
    import numpy as np

    try:
        s = np.asarray(sizes_bytes, dtype=float).ravel()
        t = np.asarray(times_s, dtype=float).ravel()
    except (OverflowError, TypeError, ValueError):  # strings, None, ints beyond float range
        raise ValueError("sizes_bytes and times_s must be lists of finite numbers (bytes, seconds)") from None
    if s.shape != t.shape:
        raise ValueError(f"sizes_bytes and times_s must have the same length, got {s.size} and {t.size}")
    if s.size < 2 or np.unique(s).size < 2:
        raise ValueError(
            f"sizes_bytes needs at least 2 distinct sizes to fit alpha and beta, got {np.unique(s).size}"
        )
    if not (np.all(np.isfinite(s)) and np.all(s >= 0)):
        raise ValueError("sizes_bytes must be finite and >= 0")
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ValueError("times_s must be finite and > 0")
    ca, cb = coefficients(op, n_ranks, algorithm)
    if ca == 0 or cb == 0:
        raise ValueError(f"n_ranks must be >= 2 to fit a collective, got {n_ranks}")
    design = np.column_stack([np.full_like(s, ca), cb * s])  # unknowns: alpha (s), 1/B (s/byte)
    w = 1.0 / t
    (alpha, inv_b), *_ = np.linalg.lstsq(design * w[:, None], t * w, rcond=None)
    note = ""
    if alpha < 0:
        inv_b = float(np.sum(cb * s * w * w * t) / np.sum((cb * s * w) ** 2))
        alpha, note = 0.0, "alpha < 0 in the free fit (noise at small sizes): refitted with alpha = 0"
    if inv_b <= 0:
        raise ValueError(
            "the fit gives a bandwidth <= 0: the sizes are too small to see the bandwidth term; "
            "measure larger messages"
        )
    pred = design @ np.array([alpha, inv_b])
    ss_res = float(np.sum((t - pred) ** 2))
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    max_rel = float(np.max(np.abs(pred - t) / t))
    if not all(math.isfinite(x) for x in (alpha, inv_b, 1.0 / inv_b, r2, max_rel)):
        # sizes near float range or subnormal times: the least squares leave float range
        raise ValueError(
            "sizes_bytes and times_s are out of the range a fit can handle (the fit is not finite); "
            "use sizes in bytes and times in seconds of real measurements"
        )
    return AlphaBetaFit(
        op=op,
        n_ranks=int(n_ranks),
        algorithm=algorithm,
        alpha_us=float(alpha) * 1e6,
        beta_gbps=1.0 / float(inv_b) / GB,
        r2=r2,
        n_points=int(s.size),
        max_rel_error=max_rel,
        note=note,
    )
