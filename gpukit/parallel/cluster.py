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

from dataclasses import dataclass, replace

from gpukit.catalog import GPU, get_gpu, get_interconnect, inter_node_link, intra_node_link
from gpukit.comm import LINK_EFFICIENCY, ClusterNetwork, cluster_network
from gpukit.errors import require_positive, require_positive_int

# Stated assumptions (one set for every layout and every validation row; none fitted per row).
# matmul: share of the dense peak that large bf16 GEMMs sustain inside a training step. 0.70 is the
# order of what cuBLAS reaches on transformer shapes (stas00/ml-engineering "Maximum Achievable Matmul
# FLOPS": A100 bf16 ~267 of 312 TFLOP/s on the best shape, i.e. 0.86; real shapes and the attention
# kernels run below it). hbm: elementwise kernels reach ~0.8 of HBM bandwidth (STREAM-like copy
# kernels on A100/H100). link: gpukit.comm.LINK_EFFICIENCY (NCCL busbw ~0.8 of the link, nccl-tests),
# the one default of every command, held by the ClusterNetwork.
MATMUL_EFFICIENCY = 0.70
HBM_EFFICIENCY = 0.80


@dataclass(frozen=True)
class Cluster:
    """GPUs over a gpukit.comm.ClusterNetwork (every link, port and link-efficiency question) with the
    stated compute efficiencies."""

    gpu: GPU
    network: ClusterNetwork
    matmul_efficiency: float = MATMUL_EFFICIENCY
    hbm_efficiency: float = HBM_EFFICIENCY
    dtype: str = "bf16"

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
    matmul_efficiency: float = MATMUL_EFFICIENCY,
    hbm_efficiency: float = HBM_EFFICIENCY,
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
    matmul_efficiency: float = MATMUL_EFFICIENCY,
    hbm_efficiency: float = HBM_EFFICIENCY,
    profile=None,
) -> Cluster:
    """A Cluster from names or catalog objects. Links default by GPU (NVLink of its generation, one IB
    port per GPU). The ClusterNetwork's link efficiency: `link_efficiency` when given (both links),
    else a calibrated `profile`'s fit of the inter link where it has one, else gpukit.comm's one
    default LINK_EFFICIENCY; the network says which. With a `profile`, matmul_efficiency = its
    measured bf16 matmul / peak."""
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
        ("matmul_efficiency", matmul_efficiency),
        ("hbm_efficiency", hbm_efficiency),
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
    if profile is not None:
        matmul_efficiency = min(1.0, profile.matmul_tflops("bf16") / g.peak_tflops("bf16"))
    return Cluster(gpu=g, network=net, matmul_efficiency=matmul_efficiency, hbm_efficiency=hbm_efficiency)
