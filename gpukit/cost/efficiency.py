"""The data-parallel scaling efficiency that gpukit.cost prices runs with, and the inter-node port
assumption in words.

predicted_efficiency: t_compute / (t_compute + exposed gradient sync + DDP's bucket copies) per
optimizer step. The sync is gpukit.comm.grad_sync, the one gradient-sync model that gpukit.scaling and
gpukit.parallel use too (DDP buckets, hierarchical across nodes, a partial node paced by its own ports,
ZeRO stages), over a gpukit.comm.ClusterNetwork at its one default link efficiency (or a given one).
Split from gpukit.cost because it changes with the communication model, not with prices.
Used in: gpukit.cost (re-exported there), gpukit.plan, gpukit.plan.train, gpukit.audits.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.catalog import default_links, get_gpu, intra_node_link
from gpukit.comm import cluster_network, grad_sync
from gpukit.errors import finite_result, require_positive, require_positive_int
from gpukit.scaling import GRAD_DTYPE, gpu_kernel_s
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


def predicted_efficiency(
    n_params: float,
    gpu: str,
    gpus: int,
    *,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    intra_link: str | None = None,
    tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU,
    mfu: float = 0.4,
    grad_dtype: str = GRAD_DTYPE,
    zero_stage: int = 0,
    overlap: float = 0.0,
    ports_per_node: int | None = None,
    efficiency: float | None = None,
    n_layers: int = 32,
) -> Efficiency:
    """Efficiency = t_compute / (t_compute + exposed sync + DDP's bucket copies) for one optimizer step.

    Compute: 6 N T / (peak x MFU) (Kaplan et al. 2020), 1/3 forward, 2/3 backward. Sync:
    gpukit.comm.grad_sync of N gradients in grad_dtype over a DP group of `gpus` (DDP's 25 MiB buckets;
    ring in a node, hierarchical across nodes, a partial node paced by its own ports; ZeRO-1/2 the bytes
    of an all-reduce, ZeRO-3 1.5x: Rajbhandari et al. 2019 sec. 7) over a ClusterNetwork: intra link
    catalog.intra_node_link, `ports_per_node` ports of `inter_link` per node (default one per GPU,
    rail-optimized; default link catalog.inter_node_link: the InfiniBand of the GPU's era), shared by
    the GPUs of a node that send at once (REFERENCE sec. 6), at `efficiency` of line rate (default
    gpukit.comm.LINK_EFFICIENCY, the stated nccl-tests share). `overlap`: 0 = the sync after the
    backward (a lower bound on efficiency); > 0 = DDP's buckets start as soon as the backward has
    produced them (ZeRO-3: prefetch behind compute), and the bucket schedule says what is hidden.
    DDP's copies of the gradients into its buckets and back (and the division by the world size) are
    memory-bound kernels at HBM bandwidth (gpukit.scaling.gpu_kernel_s; not for ZeRO-3). `n_layers`:
    the model's layers, whose gradients fill the buckets (uniform_param_shapes; 32 when not known).
    """
    n = require_positive_int("gpus", gpus)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    g = get_gpu(gpu)
    intra = intra_link or intra_node_link(g, min(n, k)).name
    intra, inter = default_links(g, k, intra, inter_link)
    net = cluster_network(intra, inter, gpus_per_node=k, ports_per_node=ports, efficiency=efficiency)
    compute_s = (
        6
        * require_positive("n_params", n_params)
        * require_positive("tokens_per_gpu", tokens_per_gpu)
        / (g.peak_tflops(g.half_dtype) * 1e12 * require_positive("mfu", mfu))
    )
    finite_result("compute time per step", compute_s)
    if compute_s <= 0:  # n_params x tokens below float range (1e-320): the efficiency would be 0 / 0
        raise ValueError(
            f"n_params x tokens_per_gpu must be above float range, got {n_params!r} x {tokens_per_gpu!r}"
        )
    sync = grad_sync(
        n_params,
        n,
        net,
        grad_bytes_per_param=dtype_bytes(grad_dtype),
        zero_stage=zero_stage,
        ranks_per_node=k,
        n_layers=n_layers,
        backward_s=compute_s * 4 / 6,
        overlap=overlap > 0,
        micro_step_s=compute_s,
    )
    copies = 0.0
    if n > 1 and zero_stage < 3:
        kernels = gpu_kernel_s(g)
        copies = (kernels["copy"] + kernels["div"]) * sync.n_elements
    nodes = math.ceil(n / k)
    last = (
        n - (nodes - 1) * k
    )  # GPUs (and ports) of the last node: fewer than k when n does not fill whole nodes
    exposed = sync.exposed_s
    model = (
        f"data-parallel step: 6N x {tokens_per_gpu:,.0f} tokens/GPU at {mfu:.0%} MFU, {grad_dtype} gradient "
        f"sync (gpukit.comm.grad_sync DDP bucket model: {sync.assumptions[0] if sync.assumptions else 'one GPU, none'}) over "
        f"{net.intra_name} in a node and {net.inter_name} between nodes{_ports_words(ports, k)}, link "
        f"efficiency {net.efficiency:g} ({net.efficiency_source}), "
        f"{'overlapped with the backward' if overlap > 0 else 'no overlap'}"
        + ("; DDP's bucket copies at HBM bandwidth" if copies else "")
    )
    if nodes > 1 and last < k:
        model += (
            f"; {n} GPUs = {nodes - 1} node(s) of {k} + one of {last}: the last node's "
            f"{min(last, ports)} port(s) carry the gradient across"
        )
    return Efficiency(
        gpus=n,
        nodes=nodes,
        compute_s=compute_s,
        comm_s=sync.comm_s,
        exposed_comm_s=exposed,
        efficiency=compute_s / (compute_s + exposed + copies),
        model=model,
    )


def _ports_words(ports: int, k: int) -> str:
    """How the GPUs of a node share its inter-node ports, in words ('' for one port per GPU)."""
    if ports == k:
        return ""
    if ports > k:
        return f" ({ports} ports per node for {k} GPUs: one per GPU is used)"
    return f" ({ports} port(s) per node shared by its {k} GPUs: {ports / k:.3g} of a port each)"


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
        return (
            f"{link} (rail-optimized{extra}): a node with fewer ports is slower (--ports-per-node models it)"
        )
    link = f"{ports} {inter_link} port(s) per node" if inter_link else f"{ports} port(s) per node{era}"
    return (
        f"{link} shared by its {k} GPUs, {ports / k:.3g} of a port per GPU while all send "
        f"(--ports-per-node {ports}; default: one per GPU)"
    )
