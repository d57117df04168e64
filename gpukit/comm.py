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
broadcast, reduce and send_recv, and the TOTAL size (n x the per-rank part) for all_gather,
reduce_scatter and all_to_all. algbw = S / t; busbw = algbw x factor(op, n), which makes busbw
comparable to the link's bandwidth whatever n is: all_reduce 2(n-1)/n; all_gather, reduce_scatter,
all_to_all (n-1)/n; broadcast, reduce, send_recv 1.

Used in: notebooks on communication and scaling; gpukit.cli.comm; gpukit.scaling.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import frame as _frame
from gpukit.results import json_safe as _json_safe
from gpukit.units import GB

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


def _link(link) -> tuple[float, float, str]:
    """(alpha_s, bandwidth_gbps, name) from a catalog Interconnect (or its name), a profile LinkFit or a tuple."""
    if isinstance(link, str):
        from gpukit.catalog import as_link

        link = as_link(link)
    if hasattr(link, "latency_us") and hasattr(link, "bandwidth_gbps"):
        return (require_positive("latency_us", link.latency_us, allow_zero=True) * 1e-6,
                require_positive("bandwidth_gbps", link.bandwidth_gbps), link.name)
    if hasattr(link, "alpha_us") and hasattr(link, "beta_gbps"):
        return (require_positive("alpha_us", link.alpha_us, allow_zero=True) * 1e-6,
                require_positive("beta_gbps", link.beta_gbps), getattr(link, "name", "measured"))
    try:
        alpha_s, bw = link
    except (TypeError, ValueError):
        raise ValueError(f"link must be an Interconnect or (alpha_s, bandwidth_gbps), got {link!r}") from None
    return (require_positive("alpha_s", alpha_s, allow_zero=True), require_positive("bandwidth_gbps", bw),
            f"alpha={alpha_s:g}s,B={bw:g}GB/s")


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
        d.update(time_s=self.time_s, algbw_gbps=self.algbw_gbps,
                 busbw_gbps=self.busbw_gbps if math.isfinite(self.algbw_gbps) else None)  # one rank: null
        return _json_safe(d)

    def to_frame(self):
        return _frame(self.breakdown, ("term", "seconds"))


def collective_time(op: str, size_bytes: float, n_ranks: int, link, algorithm: str = "ring") -> CollectiveCost:
    """Alpha-beta time of `op` on `n_ranks` ranks over `link` (an Interconnect, a profile LinkFit or
    (alpha_s, bandwidth_gbps)). `size_bytes` follows the nccl-tests convention (module docstring)."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    size = int(size) if size.is_integer() else size  # whole bytes stay ints (JSON: 1000000000, not 1e9)
    alpha, bw, name = _link(link)
    try:
        ca, cb = coefficients(op, n_ranks, algorithm)
        latency, bandwidth, sent = ca * alpha, cb * size / (bw * GB), cb * size
    except OverflowError:  # n_ranks beyond float range
        latency = bandwidth = sent = math.inf
    if not all(math.isfinite(x) for x in (latency, bandwidth, sent, latency + bandwidth)):
        raise ValueError(f"inputs too large: the time of {op} overflows a float (size_bytes {size:g}, "
                         f"n_ranks {n_ranks}); use smaller sizes")
    return CollectiveCost(op=op, algorithm=algorithm, size_bytes=size, n_ranks=int(n_ranks), link=name,
                          alpha_s=alpha, bandwidth_gbps=bw, latency_s=latency, bandwidth_s=bandwidth,
                          bytes_sent_per_rank=sent)


@dataclass(frozen=True)
class CollectiveSweep:
    """collective_time over a list of sizes: the model's curve, for plotting beside measurements."""

    costs: tuple[CollectiveCost, ...]

    def to_json_dict(self) -> dict:
        return {"rows": [c.to_json_dict() for c in self.costs]}

    def to_frame(self):
        rows = [c.to_json_dict() for c in self.costs]
        return _frame(rows, list(rows[0]) if rows else [])


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
        return _json_safe({"op": "all_reduce", "algorithm": "hierarchical", "size_bytes": self.size_bytes,
                           "n_nodes": self.n_nodes, "ranks_per_node": self.ranks_per_node,
                           "n_ranks": self.n_ranks, "time_s": self.time_s, "latency_s": self.latency_s,
                           "bandwidth_s": self.bandwidth_s, "algbw_gbps": self.algbw_gbps,
                           "busbw_gbps": self.busbw_gbps, "breakdown": dict(self.breakdown),
                           "phases": [p.to_json_dict() for p in self.phases]})

    def to_frame(self):
        rows = [dict(phase=n, **p.to_json_dict()) for (n, _), p in zip(self.breakdown, self.phases, strict=True)]
        return _frame(rows, list(rows[0]))


def hierarchical_all_reduce(size_bytes: float, n_nodes: int, ranks_per_node: int, intra, inter,
                            algorithm: str = "ring") -> HierarchicalCost:
    """All-reduce of a per-rank buffer S on n_nodes x ranks_per_node ranks (k = ranks_per_node):
    ring reduce-scatter of S over the k ranks of a node (intra link), then each rank all-reduces its
    S/k shard with its peers on the other nodes (inter link, `algorithm`; the k shards go in parallel,
    each rank with its own NIC), then ring all-gather of S in the node. With k = 1 this is the flat
    all-reduce over the inter link; with one node, the flat ring over the intra link (Thakur et al.
    2005; NCCL's intra-node ring + inter-node ring/tree)."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    size = int(size) if size.is_integer() else size
    nodes = require_positive_int("n_nodes", n_nodes)
    k = require_positive_int("ranks_per_node", ranks_per_node)
    # whole bytes make whole shards: with S not a multiple of k the largest, ceil(S/k), sets the time
    shard = -(-size // k) if isinstance(size, int) else size / k
    phases = (collective_time("reduce_scatter", size, k, intra),
              collective_time("all_reduce", shard, nodes, inter, algorithm),
              collective_time("all_gather", size, k, intra))
    return HierarchicalCost(size_bytes=size, n_nodes=nodes, ranks_per_node=k, phases=phases)


# ---------------------------------------------------------------------------------------------------
# The cluster network: links, ports per node, the share of line rate a collective reaches
# ---------------------------------------------------------------------------------------------------
IDEAL_SOURCE = "ideal bound: line rate, not calibrated (pass efficiency= or a profile)"


@dataclass(frozen=True)
class ClusterNetwork:
    """The network a data-parallel job runs on: an intra-node link, an inter-node link, how many
    GPUs share how many inter-node ports, and the share of the line rate a collective reaches.

    Inter-node ports (REFERENCE.md sec. 6): rail-optimized InfiniBand/EFA nodes have one NIC per
    GPU (DGX H100: 8 x 400 Gb/s, NVIDIA DGX H100 user guide; AWS p5: 3200 Gb/s per instance), so
    each GPU's inter-node traffic gets one port; commodity Ethernet nodes often share one or two
    ports between all GPUs. In a hierarchical collective the k = gpus_per_node ranks of a node talk
    to the other nodes at the same time, so each gets min(1, ports_per_node / k) of a port:
    per-rank inter bandwidth = port rate x efficiency x min(1, ports / k).

    `efficiency` (0 < e <= 1) multiplies the inter-node line rate: the share a real collective
    reaches (protocol headers, TCP, NCCL channel count). `efficiency_source` says where it comes
    from: a calibrated profile, a named assumption, or IDEAL_SOURCE (e = 1, an upper bound).
    `intra_efficiency` does the same for the intra-node link (default 1, ideal).
    """

    intra_name: str
    intra_alpha_s: float
    intra_bandwidth_gbps: float  # per GPU, per direction
    inter_name: str
    inter_alpha_s: float
    inter_bandwidth_gbps: float  # per port, per direction (line rate)
    gpus_per_node: int = 8
    ports_per_node: int = 8
    efficiency: float = 1.0
    efficiency_source: str = IDEAL_SOURCE
    intra_efficiency: float = 1.0

    def __post_init__(self):
        require_positive_int("gpus_per_node", self.gpus_per_node)
        require_positive_int("ports_per_node", self.ports_per_node)
        for name in ("intra_bandwidth_gbps", "inter_bandwidth_gbps"):
            require_positive(name, getattr(self, name))
        for name in ("intra_alpha_s", "inter_alpha_s"):
            require_positive(name, getattr(self, name), allow_zero=True)
        for name in ("efficiency", "intra_efficiency"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0 < v <= 1):
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")

    @property
    def rail(self) -> bool:
        """True when every GPU has its own inter-node port (rail-optimized)."""
        return self.ports_per_node >= self.gpus_per_node

    @property
    def is_ideal(self) -> bool:
        return self.efficiency_source == IDEAL_SOURCE

    @property
    def port_share(self) -> float:
        """Share of one port each rank of a node gets while all k ranks send: min(1, ports / k)."""
        return min(1.0, self.ports_per_node / self.gpus_per_node)

    @property
    def intra_link(self) -> tuple[float, float]:
        """(alpha_s, effective bandwidth GB/s) inside a node."""
        return self.intra_alpha_s, self.intra_bandwidth_gbps * self.intra_efficiency

    def inter_link(self, ranks_sending: int | None = None) -> tuple[float, float]:
        """(alpha_s, effective per-rank bandwidth GB/s) between nodes while `ranks_sending` ranks of
        a node (default all gpus_per_node) share its ports."""
        k = self.gpus_per_node if ranks_sending is None else require_positive_int("ranks_sending", ranks_sending)
        share = min(1.0, self.ports_per_node / k)
        return self.inter_alpha_s, self.inter_bandwidth_gbps * self.efficiency * share

    def layout(self, n_gpus: int) -> tuple[int, int]:
        """(n_nodes, gpus per node used) for n_gpus: one node while n <= gpus_per_node, else whole nodes."""
        n = require_positive_int("n_gpus", n_gpus)
        if n <= self.gpus_per_node:
            return 1, n
        if n % self.gpus_per_node:
            raise ValueError(f"gpus must be <= gpus_per_node ({self.gpus_per_node}) or a multiple of it, got {n}")
        return n // self.gpus_per_node, self.gpus_per_node

    def assumptions(self) -> tuple[str, ...]:
        share = "one port per GPU (rail)" if self.rail else (
            f"{self.ports_per_node} port(s) shared by {self.gpus_per_node} GPUs: each GPU gets "
            f"{self.port_share:.3g} of a port")
        return (f"intra-node {self.intra_name}: {self.intra_bandwidth_gbps:g} GB/s per direction, alpha "
                f"{self.intra_alpha_s * 1e6:g} us", f"inter-node {self.inter_name}: {self.inter_bandwidth_gbps:g} "
                f"GB/s per port, alpha {self.inter_alpha_s * 1e6:g} us; {share}",
                f"inter-node efficiency {self.efficiency:.3g} of line rate ({self.efficiency_source})")

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(rail=self.rail, port_share=self.port_share, is_ideal=self.is_ideal)
        return _json_safe(d)


DEFAULT_INTER_LINK = "ib-ndr"


def cluster_network(link, inter_link=None, *, gpus_per_node: int = 8, ports_per_node: int | None = None,
                    efficiency: float | None = None, efficiency_source: str | None = None,
                    profile=None, profile_link: str | None = None) -> ClusterNetwork:
    """A ClusterNetwork from catalog link names (or Interconnect / LinkFit / (alpha_s, GB/s) objects).

    `link` is the intra-node link, `inter_link` the inter-node one (default: the same link, unless
    `link` is a catalog link that cannot leave a node (scope intra-node: NVLink, PCIe), then
    DEFAULT_INTER_LINK, InfiniBand NDR, the usual GPU cluster fabric, named in the result). ports
    default to one per GPU (rail). Efficiency: `profile` (a gpukit.profile.Profile) with a fitted
    link `profile_link` (default the inter link's name) gives the calibrated share
    beta_fit / line rate; else `efficiency` labelled as an assumption; else 1 (IDEAL_SOURCE)."""
    from gpukit.catalog import get_interconnect

    def resolve(x):
        return get_interconnect(x) if isinstance(x, str) else x
    intra = resolve(link)
    if inter_link is not None:
        inter = resolve(inter_link)
    else:  # NVLink/PCIe do not leave the node: inter-node traffic needs a network
        inter = resolve(DEFAULT_INTER_LINK) if getattr(intra, "scope", "") == "intra-node" else intra
    ia, ib, iname = _link(intra)
    ea, eb, ename = _link(inter)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    if profile is not None:
        if efficiency is not None:
            raise ValueError("efficiency and profile are exclusive: the profile calibrates the efficiency")
        name = profile_link or ename
        fit = profile.link(name)
        eff = min(1.0, fit.beta_gbps / eb)
        source = (f"calibrated: profile {profile.source} link {name} measured {fit.beta_gbps:.4g} GB/s of "
                  f"{eb:g} GB/s line rate")
        ea = max(ea, fit.alpha_s)
    elif efficiency is not None:
        eff = efficiency
        source = efficiency_source or f"assumption: {efficiency:g} of line rate (not measured)"
    else:
        eff, source = 1.0, IDEAL_SOURCE
    return ClusterNetwork(intra_name=iname, intra_alpha_s=ia, intra_bandwidth_gbps=ib, inter_name=ename,
                          inter_alpha_s=ea, inter_bandwidth_gbps=eb, gpus_per_node=k, ports_per_node=ports,
                          efficiency=eff, efficiency_source=source)


@dataclass(frozen=True)
class NetworkCost:
    """A collective over a ClusterNetwork: its phases (intra / inter), total time, bytes per rank."""

    op: str
    size_bytes: float
    n_gpus: int
    n_nodes: int
    gpus_per_node: int
    phases: tuple[tuple[str, CollectiveCost], ...]
    assumptions: tuple[str, ...] = ()

    @property
    def time_s(self) -> float:
        return sum(p.time_s for _, p in self.phases)

    @property
    def latency_s(self) -> float:
        return sum(p.latency_s for _, p in self.phases)

    @property
    def bandwidth_s(self) -> float:
        return sum(p.bandwidth_s for _, p in self.phases)

    @property
    def inter_bytes_per_rank(self) -> float:
        return sum(p.bytes_sent_per_rank for n, p in self.phases if n.startswith("inter"))

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return tuple((n, p.time_s) for n, p in self.phases)

    def to_json_dict(self) -> dict:
        return _json_safe({"op": self.op, "size_bytes": self.size_bytes, "n_gpus": self.n_gpus,
                           "n_nodes": self.n_nodes, "gpus_per_node": self.gpus_per_node, "time_s": self.time_s,
                           "latency_s": self.latency_s, "bandwidth_s": self.bandwidth_s,
                           "breakdown": dict(self.breakdown), "assumptions": list(self.assumptions),
                           "phases": [dict(phase=n, **p.to_json_dict()) for n, p in self.phases]})

    def to_frame(self):
        return _frame(self.breakdown, ("phase", "seconds"))


def _net_cost(op, size, n, net: ClusterNetwork, phases) -> NetworkCost:
    nodes, k = net.layout(n)
    return NetworkCost(op=op, size_bytes=size, n_gpus=int(n), n_nodes=nodes, gpus_per_node=k,
                       phases=tuple(phases), assumptions=net.assumptions())


def network_all_reduce(size_bytes: float, n_gpus: int, net: ClusterNetwork, algorithm: str = "ring") -> NetworkCost:
    """All-reduce of a per-rank buffer S on n_gpus over `net` (hierarchical when it spans nodes):
    intra reduce-scatter of S over the k GPUs of a node, inter all-reduce of the S/k shard among the
    nodes (every rank at once, sharing the node's ports), intra all-gather of S (Thakur et al. 2005;
    NCCL's intra-node ring + inter-node ring/tree). One node: the flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost("all_reduce", size, n_gpus, net,
                         [("intra_all_reduce", collective_time("all_reduce", size, k, net.intra_link, algorithm))])
    return _net_cost("all_reduce", size, n_gpus, net, [
        ("intra_reduce_scatter", collective_time("reduce_scatter", size, k, net.intra_link)),
        ("inter_all_reduce", collective_time("all_reduce", size / k, nodes, net.inter_link(k), algorithm)),
        ("intra_all_gather", collective_time("all_gather", size, k, net.intra_link))])


def network_all_gather(size_bytes: float, n_gpus: int, net: ClusterNetwork) -> NetworkCost:
    """All-gather of a TOTAL output S (each rank contributes S/n; nccl-tests convention) over `net`:
    inter all-gather among the nodes of the S/k that one local rank index owns (all k ranks at once,
    sharing the ports), then intra all-gather of S in the node. One node: flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost("all_gather", size, n_gpus, net,
                         [("intra_all_gather", collective_time("all_gather", size, k, net.intra_link))])
    return _net_cost("all_gather", size, n_gpus, net, [
        ("inter_all_gather", collective_time("all_gather", size / k, nodes, net.inter_link(k))),
        ("intra_all_gather", collective_time("all_gather", size, k, net.intra_link))])


def network_reduce_scatter(size_bytes: float, n_gpus: int, net: ClusterNetwork) -> NetworkCost:
    """Reduce-scatter of a TOTAL input S over `net`, the mirror of network_all_gather: intra
    reduce-scatter of S in the node (each rank keeps S/k), then inter reduce-scatter of that S/k
    among the nodes (each rank ends with S/n). One node: flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost("reduce_scatter", size, n_gpus, net,
                         [("intra_reduce_scatter", collective_time("reduce_scatter", size, k, net.intra_link))])
    return _net_cost("reduce_scatter", size, n_gpus, net, [
        ("intra_reduce_scatter", collective_time("reduce_scatter", size, k, net.intra_link)),
        ("inter_reduce_scatter", collective_time("reduce_scatter", size / k, nodes, net.inter_link(k)))])


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
        return ca * self.alpha_us * 1e-6 + cb * require_positive("size_bytes", size_bytes, allow_zero=True) / (
            self.beta_gbps * GB)

    @property
    def link(self) -> tuple[float, float]:
        """(alpha_s, bandwidth_gbps), usable as `link` in collective_time."""
        return self.alpha_us * 1e-6, self.beta_gbps

    def to_json_dict(self) -> dict:
        return _json_safe(asdict(self))

    def to_frame(self):
        return _frame(self.to_json_dict().items(), ("quantity", "value"))


def fit_alpha_beta(sizes_bytes, times_s, op: str = "all_reduce", n_ranks: int = 2,
                   algorithm: str = "ring") -> AlphaBetaFit:
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
        raise ValueError(f"sizes_bytes needs at least 2 distinct sizes to fit alpha and beta, got {np.unique(s).size}")
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
        raise ValueError("the fit gives a bandwidth <= 0: the sizes are too small to see the bandwidth term; "
                         "measure larger messages")
    pred = design @ np.array([alpha, inv_b])
    ss_res = float(np.sum((t - pred) ** 2))
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    max_rel = float(np.max(np.abs(pred - t) / t))
    if not all(math.isfinite(x) for x in (alpha, inv_b, 1.0 / inv_b, r2, max_rel)):
        # sizes near float range or subnormal times: the least squares leave float range
        raise ValueError("sizes_bytes and times_s are out of the range a fit can handle (the fit is not finite); "
                         "use sizes in bytes and times in seconds of real measurements")
    return AlphaBetaFit(op=op, n_ranks=int(n_ranks), algorithm=algorithm, alpha_us=float(alpha) * 1e6,
                        beta_gbps=1.0 / float(inv_b) / GB, r2=r2, n_points=int(s.size),
                        max_rel_error=max_rel, note=note)


# ---------------------------------------------------------------------------------------------------
# Curves over a size sweep, for notebook 04's plots and widget (moved from gpukit.widgets.comm_view)
# ---------------------------------------------------------------------------------------------------
SWEEP_SIZES = tuple(2**k for k in range(10, 35))  # 1 KiB .. 16 GiB
NICS = ("per GPU", "per node")  # DGX/HGX nodes give each GPU its own NIC; a plain Ethernet node has one
CURVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


@dataclass(frozen=True)
class CollectiveCurves:
    """Predicted `op` over a size sweep (rows: size_bytes, time_s, algbw_gbps, busbw_gbps), the chosen size,
    and two reference lines: one GPU's network port (`link_gbps`) and the bandwidth bound of this layout
    (`bound_busbw_gbps`: busbw as the size grows without limit, alpha = 0)."""

    op: str
    link: str
    intra: str
    n_ranks: int
    gpus_per_node: int
    nics: str
    algorithm: str
    layout: str  # flat | hierarchical (all-reduce across nodes with gpus_per_node > 1)
    size_bytes: float
    time_s: float
    algbw_gbps: float
    busbw_gbps: float
    link_gbps: float
    bound_busbw_gbps: float
    rows: tuple

    @property
    def n_nodes(self) -> int:
        return self.n_ranks // self.gpus_per_node

    def to_frame(self):
        return _frame([dict(r) for r in self.rows], ["size_bytes", "time_s", "algbw_gbps", "busbw_gbps"])

    def to_json_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("op", "link", "intra", "n_ranks", "gpus_per_node", "nics", "algorithm",
                                           "layout", "size_bytes", "time_s", "algbw_gbps", "busbw_gbps", "link_gbps",
                                           "bound_busbw_gbps")}
        d["rows"] = [dict(r) for r in self.rows]
        return _json_safe(d)


def collective_curves(op: str = "all_reduce", link="ib-ndr", size_bytes: float = 256 * 2**20, n_ranks: int = 16,
                      gpus_per_node: int = 8, intra="nvlink4", nics: str = "per GPU", algorithm: str = "ring",
                      sizes=SWEEP_SIZES) -> CollectiveCurves:
    """`op` on n_ranks ranks over a size sweep. Layout: with gpus_per_node > 1 an all-reduce is hierarchical
    (`hierarchical_all_reduce`: ring inside the node over `intra`, `algorithm` across nodes over `link`;
    Thakur et al. 2005); the other collectives run as one flat ring over `link` (a ring through all GPUs
    crosses the network, its slowest hop; an upper bound on the time). nics='per node': the node's GPUs
    share one `link` port, so each gets bandwidth / gpus_per_node. busbw = algbw x busbw_factor(op, n)
    (nccl-tests doc/PERFORMANCE.md). `link`/`intra` are catalog names or Interconnect objects."""
    from gpukit.catalog import get_interconnect

    require_choice("op", op, CURVE_OPS)
    n_ranks = require_positive_int("n_ranks", n_ranks)
    if n_ranks < 2:
        raise ValueError(f"n_ranks must be >= 2 for a collective, got {n_ranks}")
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node)
    if n_ranks % gpus_per_node:
        raise ValueError(f"n_ranks must be a multiple of gpus_per_node {gpus_per_node}, got {n_ranks}")
    require_choice("algorithm", algorithm, ALGORITHMS)
    if algorithm == "tree" and op not in TREE_OPS:
        raise ValueError(f"algorithm tree applies to {', '.join(TREE_OPS)}; {op} runs as a ring")
    require_choice("nics", nics, NICS)
    size = require_positive("size_bytes", size_bytes)
    inter = get_interconnect(link) if isinstance(link, str) else link
    intra_link = get_interconnect(intra) if isinstance(intra, str) else intra
    alpha_inter, bw_inter, link_name = _link(inter)
    alpha_intra, bw_intra, intra_name = _link(intra_link)
    if nics == "per node" and gpus_per_node > 1:
        bw_inter = bw_inter / gpus_per_node
    hier = op == "all_reduce" and gpus_per_node > 1

    def one(s, a_inter, a_intra):
        if hier:
            return hierarchical_all_reduce(s, n_ranks // gpus_per_node, gpus_per_node, (a_intra, bw_intra),
                                           (a_inter, bw_inter), algorithm)
        return collective_time(op, s, n_ranks, (a_inter, bw_inter), algorithm)

    f = busbw_factor(op, n_ranks)
    rows = []
    for s in sizes:
        c = one(s, alpha_inter, alpha_intra)
        rows.append({"size_bytes": s, "time_s": c.time_s, "algbw_gbps": c.algbw_gbps, "busbw_gbps": c.algbw_gbps * f})
    c = one(size, alpha_inter, alpha_intra)
    big = 2.0**30
    bound = f * big / one(big, 0.0, 0.0).time_s / GB  # no latency: the layout's bandwidth limit
    return CollectiveCurves(op=op, link=link_name, intra=intra_name, n_ranks=n_ranks, gpus_per_node=gpus_per_node,
                            nics=nics, algorithm=algorithm, layout="hierarchical" if hier else "flat",
                            size_bytes=size, time_s=c.time_s, algbw_gbps=c.algbw_gbps, busbw_gbps=c.algbw_gbps * f,
                            link_gbps=bw_inter, bound_busbw_gbps=bound, rows=tuple(rows))
