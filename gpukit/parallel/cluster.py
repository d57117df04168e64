"""The cluster a parallel layout runs on: the GPU, the link inside a node, the inter-node link per
port, the NIC ports a node shares, and the stated efficiencies (matmul, HBM, link) that
gpukit.parallel's step-time model applies.

Pure calculator (no torch, no I/O); latencies in seconds, bandwidths in GB/s (decimal, nccl-tests
convention). The efficiencies are stated, not fitted per layout; their sources are in the comment
above them (stas00/ml-engineering matmul FLOPS, nccl-tests busbw). `cluster_from_network` takes the
links and efficiency of a gpukit.comm.ClusterNetwork instead. gpukit.parallel re-exports every name
here (parallel.make_cluster, parallel.Cluster, parallel.MATMUL_EFFICIENCY, ...).

Used in: notebooks/06_beyond_data_parallel, gpukit.parallel, gpukit.parallel.layout_search,
gpukit.parallel.published, gpukit.cli.parallel, gpukit.audits.parallel, tests/test_parallel.py,
tests/test_widgets_parallel.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpukit.catalog import get_gpu, get_interconnect, inter_node_link, intra_node_link
from gpukit.errors import require_positive, require_positive_int

# Stated assumptions (one set for every layout and every validation row; none fitted per row).
# matmul: share of the dense peak that large bf16 GEMMs sustain inside a training step. 0.70 is the
# order of what cuBLAS reaches on transformer shapes (stas00/ml-engineering "Maximum Achievable Matmul
# FLOPS": A100 bf16 ~267 of 312 TFLOP/s on the best shape, i.e. 0.86; real shapes and the attention
# kernels run below it). hbm: elementwise kernels reach ~0.8 of HBM bandwidth (STREAM-like copy
# kernels on A100/H100). link: NCCL busbw reaches ~0.8 of the link (nccl-tests all_reduce on DGX A100
# ~230 of 300 GB/s NVLink; ~20-23 of 25 GB/s per HDR port).
MATMUL_EFFICIENCY = 0.70
HBM_EFFICIENCY = 0.80
LINK_EFFICIENCY = 0.80


@dataclass(frozen=True)
class Cluster:
    """GPUs and the hierarchical network: `link` inside a node, `inter_link` across nodes (per port),
    `ports_per_node` NICs shared by `gpus_per_node` GPUs, and the stated efficiencies."""

    gpu: object
    gpus_per_node: int
    link: object
    inter_link: object
    ports_per_node: int
    link_efficiency: float = LINK_EFFICIENCY
    matmul_efficiency: float = MATMUL_EFFICIENCY
    hbm_efficiency: float = HBM_EFFICIENCY
    dtype: str = "bf16"

    network: object = None  # a gpukit.comm.ClusterNetwork: when given, its links and efficiency are used

    def _eff(self, link, share: float = 1.0) -> tuple[float, float]:
        """(alpha_s, bandwidth GB/s) of a catalog link after efficiency and port sharing."""
        return link.latency_us * 1e-6, link.bandwidth_gbps * self.link_efficiency * share

    @property
    def intra(self) -> tuple[float, float]:
        if self.network is not None:
            return tuple(self.network.intra_link)
        return self._eff(self.link)

    @property
    def inter(self) -> tuple[float, float]:
        """Per-GPU inter-node (alpha_s, GB/s) while every GPU of a node sends (ports shared)."""
        if self.network is not None:
            return tuple(self.network.inter_link(self.gpus_per_node))
        return self._eff(self.inter_link, min(1.0, self.ports_per_node / self.gpus_per_node))

    @property
    def peak_flops(self) -> float:
        return self.gpu.peak_tflops(self.dtype) * 1e12

    def describe(self) -> str:
        if self.network is not None:
            n = self.network
            return (f"{self.gpu.name}, {n.gpus_per_node} per node, {n.intra_name} in the node, "
                    f"{n.ports_per_node} x {n.inter_name} per node (efficiency {n.efficiency:g}: {n.efficiency_source})")
        return (f"{self.gpu.name}, {self.gpus_per_node} per node, {self.link.name} in the node, "
                f"{self.ports_per_node} x {self.inter_link.name} per node")


def cluster_from_network(gpu, network, *, matmul_efficiency: float = MATMUL_EFFICIENCY,
                         hbm_efficiency: float = HBM_EFFICIENCY, profile=None) -> Cluster:
    """A Cluster over a gpukit.comm.ClusterNetwork (engineer C's hierarchical network model): its intra
    link, its per-GPU inter-node bandwidth with ports shared, and its efficiency with provenance."""
    for attr in ("intra_link", "inter_link", "gpus_per_node", "ports_per_node", "efficiency"):
        if not hasattr(network, attr):
            raise ValueError(f"network must be a gpukit.comm.ClusterNetwork (missing {attr}), got {type(network).__name__}")
    base = make_cluster(gpu, network.gpus_per_node, ports_per_node=network.ports_per_node,
                        matmul_efficiency=matmul_efficiency, hbm_efficiency=hbm_efficiency, profile=profile)
    return replace(base, network=network, link_efficiency=network.efficiency)


def make_cluster(gpu, gpus_per_node: int = 8, link=None, inter_link=None, ports_per_node: int | None = None, *,
                 link_efficiency: float = LINK_EFFICIENCY, matmul_efficiency: float = MATMUL_EFFICIENCY,
                 hbm_efficiency: float = HBM_EFFICIENCY, profile=None) -> Cluster:
    """A Cluster from names or catalog objects. Links default by GPU (NVLink of its generation, one IB
    port per GPU). With a calibrated `profile`, matmul_efficiency = its measured bf16 matmul / peak."""
    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    k = require_positive_int("gpus_per_node", gpus_per_node)
    lk = (intra_node_link(g, k) if link is None else get_interconnect(link) if isinstance(link, str) else link)
    il = (inter_node_link(g) if inter_link is None else
          get_interconnect(inter_link) if isinstance(inter_link, str) else inter_link)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    for name, v in (("link_efficiency", link_efficiency), ("matmul_efficiency", matmul_efficiency),
                    ("hbm_efficiency", hbm_efficiency)):
        if not 0 < require_positive(name, v) <= 1:
            raise ValueError(f"{name} must be in (0, 1], got {v}")
    if profile is not None:
        matmul_efficiency = min(1.0, profile.matmul_tflops("bf16") / g.peak_tflops("bf16"))
    return Cluster(gpu=g, gpus_per_node=k, link=lk, inter_link=il, ports_per_node=ports,
                   link_efficiency=link_efficiency, matmul_efficiency=matmul_efficiency,
                   hbm_efficiency=hbm_efficiency)
