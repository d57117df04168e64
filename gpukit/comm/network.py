"""The cluster network: an intra-node link, an inter-node link, ports per node, and collectives over it.

Holds ClusterNetwork (links, GPUs and inter-node ports per node, the share of line rate a collective
reaches, with where that share comes from), `cluster_network` (one from catalog names, a calibrated
profile or an assumed efficiency) and the collectives over it: `network_all_reduce`,
`network_all_gather`, `network_reduce_scatter`, `network_all_to_all` -> NetworkCost (phases intra / inter, seconds, bytes
per rank). Times are gpukit.comm's alpha-beta model (s); bandwidth is decimal GB/s per direction.

Hierarchical collectives (Thakur, Rabenseifner & Gropp 2005, "Optimization of collective
communication operations in MPICH"; NCCL's intra-node ring + inter-node ring/tree); inter-node ports
per node (REFERENCE.md sec. 6; NVIDIA DGX H100 user guide; AWS p5). TokenBucket: a rate limiter
in front of a link (tc-tbf(8), as netlab's emulated links; cloud network credits), with
`token_bucket_refill` and `token_bucket_send`.

Used in: gpukit.scaling (the DDP step over a cluster), gpukit.cli.scaling, gpukit.audits.scaling,
gpukit.parallel (a Cluster over a ClusterNetwork), notebook 05_data_parallel_scaling;
tests/test_comm_network.py, tests/test_scaling.py. gpukit.comm re-exports every public name here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.comm.collectives import (
    BASE_LATENCY_SOURCE,
    CollectiveCost,
    collective_time,
    hierarchical_phases,
    link_params,
)
from gpukit.errors import MAX_COUNT, finite_result, require_positive, require_positive_int
from gpukit.results import frame, json_safe

IDEAL_SOURCE = "ideal bound: line rate, not calibrated (pass efficiency= or a profile)"
# The one default share of a link's line rate that a collective reaches, for every command (scaling,
# cost, plan, parallel): NCCL busbw reaches ~0.8 of the link (nccl-tests all_reduce on DGX A100 ~230 of
# 300 GB/s NVLink; ~20-23 of 25 GB/s per HDR InfiniBand port). A calibrated profile overrides it.
LINK_EFFICIENCY = 0.80
LINK_EFFICIENCY_SOURCE = (
    "stated: nccl-tests all_reduce busbw ~0.8 of line rate (DGX A100 ~230 of 300 GB/s "
    "NVLink, ~20-23 of 25 GB/s per HDR port); calibrate with a profile"
)


def port_share_of(ports_per_node: int, ranks_sending: int) -> float:
    """Share of one inter-node port each of `ranks_sending` GPUs of a node gets while they send at once
    through its `ports_per_node` ports: min(1, ports / ranks) (REFERENCE sec. 6: per-port rate x ports used)."""
    return min(
        1.0,
        require_positive_int("ports_per_node", ports_per_node, at_most=MAX_COUNT)
        / require_positive_int("ranks_sending", ranks_sending, at_most=MAX_COUNT),
    )


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
    from: a calibrated profile, a named assumption, the stated default LINK_EFFICIENCY (nccl-tests
    busbw, LINK_EFFICIENCY_SOURCE) or IDEAL_SOURCE (e = 1, an upper bound). `intra_efficiency` does
    the same for the intra-node link (default LINK_EFFICIENCY as well).

    The one network type of gpukit: comm, scaling, parallel (Cluster holds one) and cost ask it
    every link question. Every collective over it also pays NCCL's base latency (collective_time).
    """

    intra_name: str
    intra_alpha_s: float
    intra_bandwidth_gbps: float  # per GPU, per direction
    inter_name: str
    inter_alpha_s: float
    inter_bandwidth_gbps: float  # per port, per direction (line rate)
    gpus_per_node: int = 8
    ports_per_node: int = 8
    efficiency: float = LINK_EFFICIENCY
    efficiency_source: str = LINK_EFFICIENCY_SOURCE
    intra_efficiency: float = LINK_EFFICIENCY

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
        return port_share_of(self.ports_per_node, self.gpus_per_node)

    @property
    def intra_link(self) -> tuple[float, float]:
        """(alpha_s, effective bandwidth GB/s) inside a node."""
        return self.intra_alpha_s, self.intra_bandwidth_gbps * self.intra_efficiency

    def inter_link(self, ranks_sending: int | None = None) -> tuple[float, float]:
        """(alpha_s, effective per-rank bandwidth GB/s) between nodes while `ranks_sending` ranks of
        a node (default all gpus_per_node) share its ports."""
        k = (
            self.gpus_per_node
            if ranks_sending is None
            else require_positive_int("ranks_sending", ranks_sending)
        )
        return self.inter_alpha_s, self.inter_bandwidth_gbps * self.efficiency * port_share_of(
            self.ports_per_node, k
        )

    def layout(self, n_gpus: int) -> tuple[int, int]:
        """(n_nodes, gpus per node used) for n_gpus: one node while n <= gpus_per_node, else whole nodes."""
        n = require_positive_int("n_gpus", n_gpus)
        if n <= self.gpus_per_node:
            return 1, n
        if n % self.gpus_per_node:
            raise ValueError(
                f"gpus must be <= gpus_per_node ({self.gpus_per_node}) or a multiple of it, got {n}"
            )
        return n // self.gpus_per_node, self.gpus_per_node

    def assumptions(self) -> tuple[str, ...]:
        share = (
            "one port per GPU (rail)"
            if self.rail
            else (
                f"{self.ports_per_node} port(s) shared by {self.gpus_per_node} GPUs: each GPU gets "
                f"{self.port_share:.3g} of a port"
            )
        )
        return (
            f"intra-node {self.intra_name}: {self.intra_bandwidth_gbps:g} GB/s per direction, alpha "
            f"{self.intra_alpha_s * 1e6:g} us",
            f"inter-node {self.inter_name}: {self.inter_bandwidth_gbps:g} "
            f"GB/s per port, alpha {self.inter_alpha_s * 1e6:g} us; {share}",
            f"inter-node efficiency {self.efficiency:.3g} of line rate ({self.efficiency_source})",
            f"intra-node efficiency {self.intra_efficiency:.3g} of line rate",
            f"collective latency: {BASE_LATENCY_SOURCE}, plus alpha per hop",
        )

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(rail=self.rail, port_share=self.port_share, is_ideal=self.is_ideal)
        return json_safe(d)


DEFAULT_INTER_LINK = "ib-ndr"


def cluster_network(
    link,
    inter_link=None,
    *,
    gpus_per_node: int = 8,
    ports_per_node: int | None = None,
    efficiency: float | None = None,
    efficiency_source: str | None = None,
    profile=None,
    profile_link: str | None = None,
    intra_efficiency: float | None = None,
) -> ClusterNetwork:
    """A ClusterNetwork from catalog link names (or Interconnect / LinkFit / (alpha_s, GB/s) objects).

    `link` is the intra-node link, `inter_link` the inter-node one (default: the same link, unless
    `link` is a catalog link that cannot leave a node (scope intra-node: NVLink, PCIe), then
    DEFAULT_INTER_LINK, InfiniBand NDR, the usual GPU cluster fabric, named in the result). ports
    default to one per GPU (rail). Efficiency: `profile` (a gpukit.profile.Profile) with a fitted
    link `profile_link` (default the inter link's name) gives the calibrated share
    beta_fit / line rate; else `efficiency` labelled as an assumption; else LINK_EFFICIENCY (0.8, the
    stated nccl-tests busbw share, LINK_EFFICIENCY_SOURCE), the one default of every command.
    `intra_efficiency` (default LINK_EFFICIENCY) does the same for the intra-node link."""
    from gpukit.catalog import get_interconnect

    def resolve(x):
        return get_interconnect(x) if isinstance(x, str) else x

    intra = resolve(link)
    if inter_link is not None:
        inter = resolve(inter_link)
    else:  # NVLink/PCIe do not leave the node: inter-node traffic needs a network
        inter = resolve(DEFAULT_INTER_LINK) if getattr(intra, "scope", "") == "intra-node" else intra
    ia, ib, iname = link_params(intra)
    ea, eb, ename = link_params(inter)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    if profile is not None:
        if efficiency is not None:
            raise ValueError("efficiency and profile are exclusive: the profile calibrates the efficiency")
        name = profile_link or ename
        fit = profile.link(name)
        eff = min(1.0, fit.beta_gbps / eb)
        source = (
            f"calibrated: profile {profile.source} link {name} measured {fit.beta_gbps:.4g} GB/s of "
            f"{eb:g} GB/s line rate"
        )
        ea = max(ea, fit.alpha_s)
    elif efficiency is not None:
        eff = efficiency
        source = efficiency_source or (
            IDEAL_SOURCE if efficiency == 1 else f"assumption: {efficiency:g} of line rate (not measured)"
        )
    else:
        eff, source = LINK_EFFICIENCY, LINK_EFFICIENCY_SOURCE
    return ClusterNetwork(
        intra_name=iname,
        intra_alpha_s=ia,
        intra_bandwidth_gbps=ib,
        inter_name=ename,
        inter_alpha_s=ea,
        inter_bandwidth_gbps=eb,
        gpus_per_node=k,
        ports_per_node=ports,
        efficiency=eff,
        efficiency_source=source,
        intra_efficiency=LINK_EFFICIENCY if intra_efficiency is None else intra_efficiency,
    )


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
        return json_safe(
            {
                "op": self.op,
                "size_bytes": self.size_bytes,
                "n_gpus": self.n_gpus,
                "n_nodes": self.n_nodes,
                "gpus_per_node": self.gpus_per_node,
                "time_s": self.time_s,
                "latency_s": self.latency_s,
                "bandwidth_s": self.bandwidth_s,
                "breakdown": dict(self.breakdown),
                "assumptions": list(self.assumptions),
                "phases": [dict(phase=n, **p.to_json_dict()) for n, p in self.phases],
            }
        )

    def to_frame(self):
        return frame(self.breakdown, ("phase", "seconds"))


def _net_cost(op, size, n, net: ClusterNetwork, phases) -> NetworkCost:
    nodes, k = net.layout(n)
    return NetworkCost(
        op=op,
        size_bytes=size,
        n_gpus=int(n),
        n_nodes=nodes,
        gpus_per_node=k,
        phases=tuple(phases),
        assumptions=net.assumptions(),
    )


def network_all_reduce(
    size_bytes: float, n_gpus: int, net: ClusterNetwork, algorithm: str = "ring"
) -> NetworkCost:
    """All-reduce of a per-rank buffer S on n_gpus over `net` (hierarchical when it spans nodes):
    intra reduce-scatter of S over the k GPUs of a node, inter all-reduce of the S/k shard among the
    nodes (every rank at once, sharing the node's ports), intra all-gather of S (Thakur et al. 2005;
    NCCL's intra-node ring + inter-node ring/tree). One node: the flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost(
            "all_reduce",
            size,
            n_gpus,
            net,
            [("intra_all_reduce", collective_time("all_reduce", size, k, net.intra_link, algorithm))],
        )
    names = ("intra_reduce_scatter", "inter_all_reduce", "intra_all_gather")
    phases = hierarchical_phases(size, nodes, k, net.intra_link, net.inter_link(k), algorithm)
    return _net_cost("all_reduce", size, n_gpus, net, list(zip(names, phases, strict=True)))


def network_all_gather(size_bytes: float, n_gpus: int, net: ClusterNetwork) -> NetworkCost:
    """All-gather of a TOTAL output S (each rank contributes S/n; nccl-tests convention) over `net`:
    inter all-gather among the nodes of the S/k that one local rank index owns (all k ranks at once,
    sharing the ports), then intra all-gather of S in the node. One node: flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost(
            "all_gather",
            size,
            n_gpus,
            net,
            [("intra_all_gather", collective_time("all_gather", size, k, net.intra_link))],
        )
    return _net_cost(
        "all_gather",
        size,
        n_gpus,
        net,
        [
            ("inter_all_gather", collective_time("all_gather", size / k, nodes, net.inter_link(k))),
            ("intra_all_gather", collective_time("all_gather", size, k, net.intra_link, base_latency_s=0.0)),
        ],
    )


def network_reduce_scatter(size_bytes: float, n_gpus: int, net: ClusterNetwork) -> NetworkCost:
    """Reduce-scatter of a TOTAL input S over `net`, the mirror of network_all_gather: intra
    reduce-scatter of S in the node (each rank keeps S/k), then inter reduce-scatter of that S/k
    among the nodes (each rank ends with S/n). One node: flat ring over the intra link."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    nodes, k = net.layout(n_gpus)
    if nodes == 1:
        return _net_cost(
            "reduce_scatter",
            size,
            n_gpus,
            net,
            [("intra_reduce_scatter", collective_time("reduce_scatter", size, k, net.intra_link))],
        )
    return _net_cost(
        "reduce_scatter",
        size,
        n_gpus,
        net,
        [
            ("intra_reduce_scatter", collective_time("reduce_scatter", size, k, net.intra_link)),
            (
                "inter_reduce_scatter",
                collective_time("reduce_scatter", size / k, nodes, net.inter_link(k), base_latency_s=0.0),
            ),
        ],
    )


def network_all_to_all(
    size_bytes: float, n_gpus: int, net: ClusterNetwork, ranks_per_node: int | None = None
) -> NetworkCost:
    """All-to-all of a per-rank send buffer S (S/n to every rank; nccl-tests alltoall convention) on
    n_gpus ranks over `net`, `ranks_per_node` k of them per node (default: min(n, gpus_per_node)).
    One node: the pairwise exchange over the intra link, (n-1)/n S leaves each rank (Thakur et al.
    2005 sec. 4.5). Across n/k nodes each rank sends S(k-1)/n to its node's peers over the intra link
    and S(n-k)/n = (nodes-1)/nodes S to the other nodes over its share of the ports while every GPU of
    the node sends at once (the EP groups of a node run together): the inter phase is
    collective_time("all_to_all", S, nodes, inter_link(gpus_per_node)), the intra one
    collective_time("all_to_all", S / nodes, k, intra). The phases are summed (NVLink and NIC traffic
    not assumed concurrent: an upper bound; the inter phase dominates), NCCL's base latency once."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    n = require_positive_int("n_gpus", n_gpus, at_most=MAX_COUNT)
    k = (
        min(n, net.gpus_per_node)
        if ranks_per_node is None
        else require_positive_int("ranks_per_node", ranks_per_node)
    )
    if n % k or k > net.gpus_per_node:
        raise ValueError(
            f"ranks_per_node must divide n_gpus {n} and be at most gpus_per_node {net.gpus_per_node}, got {k}"
        )
    nodes = n // k
    if nodes == 1:
        phases = [("intra_all_to_all", collective_time("all_to_all", size, n, net.intra_link))]
    else:
        phases = [
            (
                "inter_all_to_all",
                collective_time("all_to_all", size, nodes, net.inter_link(net.gpus_per_node)),
            ),
            (
                "intra_all_to_all",
                collective_time("all_to_all", size / nodes, k, net.intra_link, base_latency_s=0.0),
            ),
        ]
    return NetworkCost(
        op="all_to_all",
        size_bytes=size,
        n_gpus=n,
        n_nodes=nodes,
        gpus_per_node=k,
        phases=tuple(phases),
        assumptions=net.assumptions(),
    )


# ---------------------------------------------------------------------------------------------------
# A rate limiter in front of the link: the token bucket
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenBucket:
    """A token-bucket rate limiter on a link's egress (Linux tc-tbf(8); the network I/O credits of
    cloud instances rated "up to" a bandwidth work the same way, AWS EC2 instance network
    bandwidth docs). Tokens (bytes) accrue at `rate_bytes_per_s` while the link is idle, up to
    `burst_bytes`; bytes covered by tokens leave at `line_bytes_per_s`, the speed of the wire behind
    the limiter (default: no time at all), the rest at the rate."""

    burst_bytes: float
    rate_bytes_per_s: float
    line_bytes_per_s: float = math.inf

    def __post_init__(self):
        require_positive("burst_bytes", self.burst_bytes, allow_zero=True)
        require_positive("rate_bytes_per_s", self.rate_bytes_per_s)
        if not self.line_bytes_per_s >= self.rate_bytes_per_s:
            raise ValueError(
                f"line_bytes_per_s must be >= rate_bytes_per_s ({self.rate_bytes_per_s:g}): the "
                f"limiter cannot be faster than its wire, got {self.line_bytes_per_s!r}"
            )


def token_bucket_refill(tokens: float, idle_s: float, bucket: TokenBucket) -> float:
    """Tokens after `idle_s` of an idle link: they grow at the rate, capped at the burst."""
    tokens = require_positive("tokens", tokens, allow_zero=True)
    idle_s = require_positive("idle_s", idle_s, allow_zero=True)
    return finite_result("tokens", min(bucket.burst_bytes, tokens + bucket.rate_bytes_per_s * idle_s))


def token_bucket_send(wire_bytes: float, tokens: float, bucket: TokenBucket) -> tuple[float, float]:
    """Sending `wire_bytes` (per rank, per direction) with `tokens` in the bucket -> (seconds saved
    against sending every byte at the rate, tokens left). Covered bytes take 1 / line rate each
    instead of 1 / rate; while the bucket is empty the bytes go at the rate and the tokens that
    accrue are spent as they come."""
    tokens = require_positive("tokens", tokens, allow_zero=True)
    wire_bytes = require_positive("wire_bytes", wire_bytes, allow_zero=True)
    free = min(tokens, wire_bytes)
    saved = free / bucket.rate_bytes_per_s - free / bucket.line_bytes_per_s
    return finite_result("time saved", saved), tokens - free
