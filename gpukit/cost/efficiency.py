"""The data-parallel scaling efficiency that gpukit.cost prices runs with, and the inter-node port
assumption in words.

predicted_efficiency: t_compute / (t_compute + exposed gradient communication) per optimizer step, from
gpukit.scaling's DDP bucket model where it applies, else the alpha-beta all-reduce of gpukit.comm
(ring in a node, hierarchical across nodes; a partial node paced by its own ports). Split from
gpukit.cost because it changes with the communication model, not with prices.
Used in: gpukit.cost (re-exported there), gpukit.plan, gpukit.plan.train, gpukit.audits.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from gpukit.catalog import get_gpu, get_interconnect, inter_node_link, intra_node_link
from gpukit.comm import collective_time, hierarchical_all_reduce, port_share_of
from gpukit.errors import require_positive, require_positive_int
from gpukit.units import dtype_bytes

DEFAULT_TOKENS_PER_GPU = 8192  # tokens per GPU per optimizer step for the efficiency estimate (4 x 2048)

@dataclass(frozen=True)
class Efficiency:
    """Predicted data-parallel scaling efficiency of one GPU count (weak scaling per step)."""

    gpus: int
    nodes: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    efficiency: float
    model: str  # which model produced it, in words

    def to_json_dict(self) -> dict:
        return asdict(self)


def predicted_efficiency(n_params: float, gpu: str, gpus: int, *, gpus_per_node: int = 8,
                         inter_link: str | None = None, intra_link: str | None = None,
                         tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU, mfu: float = 0.4,
                         grad_dtype: str = "bf16", zero_stage: int = 0, overlap: float = 0.0,
                         use_scaling: bool = True, ports_per_node: int | None = None) -> Efficiency:
    """Efficiency = t_compute / (t_compute + exposed communication) for one optimizer step.

    Compute: 6 N T / (peak x MFU) (Kaplan et al. 2020). Communication: the gradient all-reduce of N
    values in grad_dtype, ring inside a node (gpukit.comm.collective_time) or hierarchical across
    nodes (reduce-scatter in the node, all-reduce across on S/k, all-gather; Thakur et al. 2005,
    gpukit.comm.hierarchical_all_reduce), `ports_per_node` ports of `inter_link` per node (default one
    per GPU, rail-optimized; default link catalog.inter_node_link: the InfiniBand of the GPU's era); the
    r GPUs of a node that send at once share its ports, min(1, ports / r) of a port each (REFERENCE
    sec. 6: per-port rate x ports used; gpukit.comm.network.ClusterNetwork.inter_link). ZeRO-3
    moves 1.5x the bytes of an all-reduce (Rajbhandari et al. 2019, sec. 7). `overlap` is the share
    hidden behind backward (0 = none, a lower bound on efficiency; PyTorch DDP buckets hide part of it).

    When gpukit.scaling (the DDP bucket model, issue 9) is installed and the layout is plain data
    parallel or ZeRO-1/2, its prediction is used instead (buckets overlapped with the backward when
    overlap > 0); `model` says which one produced the figure.
    """
    n = require_positive_int("gpus", gpus)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    g = get_gpu(gpu)
    inter_link = inter_link or inter_node_link(g).name
    if use_scaling and zero_stage < 3 and n > 1:
        est = _from_scaling(n_params, gpu, n, k, intra_link or intra_node_link(g, min(n, k)).name, inter_link, tokens_per_gpu, mfu,
                            grad_dtype, overlap, ports)
        if est is not None:
            return est
    compute_s = 6 * require_positive("n_params", n_params) * require_positive("tokens_per_gpu", tokens_per_gpu) / (
        g.peak_tflops(g.half_dtype) * 1e12 * require_positive("mfu", mfu))
    size = n_params * dtype_bytes(grad_dtype) * (1.5 if zero_stage == 3 else 1.0)
    intra = get_interconnect(intra_link) if intra_link else intra_node_link(g, min(n, k))
    nodes = math.ceil(n / k)
    last = n - (nodes - 1) * k  # GPUs (and ports) of the last node: fewer than k when n does not fill whole nodes
    if n == 1:
        comm_s = 0.0
    elif nodes == 1:
        comm_s = collective_time("all_reduce", size, n, intra).time_s
    elif last == k:
        comm_s = hierarchical_all_reduce(size, nodes, min(k, n), intra, _shared(inter_link, ports, k)).time_s
    else:
        # a partial node: after its reduce-scatter its `last` GPUs hold shards of S/last, so each of its ports
        # carries k/last times a full node's bytes across and paces the inter-node all-reduce (the node still
        # sends all of S); the full nodes' reduce-scatter and all-gather over k GPUs pace the intra-node phases
        rs, _, ag = hierarchical_all_reduce(size, nodes, k, intra, _shared(inter_link, ports, k)).phases
        _, across, _ = hierarchical_all_reduce(size, nodes, last, intra, _shared(inter_link, ports, last)).phases
        comm_s = rs.time_s + across.time_s + ag.time_s
    exposed = (1 - overlap) * comm_s
    model = (f"data-parallel step: 6N x {tokens_per_gpu:,.0f} tokens/GPU at {mfu:.0%} MFU, {grad_dtype} gradient "
             f"all-reduce over {intra.name} in a node and {inter_link} between nodes{_ports_words(ports, k)}, "
             f"{overlap:.0%} overlap (gpukit.comm alpha-beta)")
    if nodes > 1 and last < k:
        model += (f"; {n} GPUs = {nodes - 1} node(s) of {k} + one of {last}: the last node's "
                  f"{min(last, ports)} port(s) carry the gradient across, and DDP's bucket copies are left out")
    return Efficiency(gpus=n, nodes=nodes, compute_s=compute_s, comm_s=comm_s, exposed_comm_s=exposed,
                      efficiency=compute_s / (compute_s + exposed), model=model)


def _shared(inter_link: str, ports: int, ranks_sending: int):
    """`inter_link` as each of `ranks_sending` GPUs of a node sees it while they share its `ports` ports:
    line rate x min(1, ports / ranks) per GPU (REFERENCE sec. 6; as ClusterNetwork.inter_link)."""
    link = get_interconnect(inter_link)
    share = port_share_of(ports, ranks_sending)
    return link if share == 1.0 else replace(link, bandwidth_gbps=link.bandwidth_gbps * share)


def _ports_words(ports: int, k: int) -> str:
    """How the GPUs of a node share its inter-node ports, in words ('' for one port per GPU)."""
    if ports == k:
        return ""
    if ports > k:
        return f" ({ports} ports per node for {k} GPUs: one per GPU is used)"
    return f" ({ports} port(s) per node shared by its {k} GPUs: {ports / k:.3g} of a port each)"


_SCALING_CACHE: dict = {}


def _from_scaling(n_params, gpu, n, k, intra, inter, tokens_per_gpu, mfu, grad_dtype, overlap, ports=None):
    """gpukit.scaling.scaling(...) efficiency at n GPUs (cached), or None for a layout it does not take."""
    from gpukit.scaling import scaling

    ports = k if ports is None else ports
    key = (round(n_params), gpu, n, k, intra, inter, round(tokens_per_gpu), round(mfu, 6), grad_dtype, overlap > 0,
           ports)
    if key not in _SCALING_CACHE:
        try:
            r = scaling(n_params=n_params, gpu=gpu, gpus=(1, n), gpus_per_node=k, link=intra,
                        inter_link=inter if n > k else None, tokens_per_gpu=tokens_per_gpu, mfu=mfu,
                        grad_dtype=grad_dtype, overlap=overlap > 0, ports_per_node=ports)
        except ValueError:  # a layout that model does not take (e.g. a partial node): the alpha-beta step
            return None
        row = r.rows[-1]
        model = (f"gpukit.scaling DDP bucket model: 6N x {tokens_per_gpu:,.0f} tokens/GPU at {mfu:.0%} MFU, "
                 f"{grad_dtype} gradients over {intra} in a node and {inter} between nodes"
                 f"{_ports_words(ports, k) if n > k else ''}, "
                 f"{'overlapped with the backward' if overlap > 0 else 'no overlap'}")
        _SCALING_CACHE[key] = Efficiency(gpus=n, nodes=math.ceil(n / k), compute_s=row.compute_s, comm_s=row.comm_s,
                                         exposed_comm_s=row.exposed_comm_s, efficiency=row.efficiency, model=model)
    return _SCALING_CACHE[key]


def rail_ports(inter_link: str | None, ports_per_node: int | None = None, gpus_per_node: int = 8) -> str:
    """The inter-node assumption in words, as the efficiency models it: `ports_per_node` ports (default
    one per GPU, rail-optimized) shared by the GPUs of a node. Commodity Ethernet nodes often share one
    or two ports between all GPUs, and a collective between nodes gets per-port rate x ports used
    (REFERENCE sec. 6)."""
    k = require_positive_int("gpus_per_node", gpus_per_node)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    era = " of the link of its era (catalog.inter_node_link: InfiniBand; 100 Gb/s Ethernet for GPUs without one)"
    if ports >= k:
        extra = f"; {ports} ports per node, one per GPU used" if ports > k else ""
        link = f"one {inter_link} port per GPU" if inter_link else f"one port per GPU{era}"
        return f"{link} (rail-optimized{extra}): a node with fewer ports is slower (--ports-per-node models it)"
    link = f"{ports} {inter_link} port(s) per node" if inter_link else f"{ports} port(s) per node{era}"
    return (f"{link} shared by its {k} GPUs, {ports / k:.3g} of a port per GPU while all send "
            f"(--ports-per-node {ports}; default: one per GPU)")
