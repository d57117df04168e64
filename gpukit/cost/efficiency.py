"""The data-parallel scaling efficiency's result type and defaults, and the inter-node port assumption in
words.

Efficiency is what gpukit.cost.predicted_efficiency returns (gpukit.cost.scaling_curve: the speed-up of the one
step model, gpukit.parallel.estimate through gpukit.cost.training_run, over one GPU, per GPU; issue 23 sec. 1).
rail_ports states the ports-per-node assumption the step model's network makes.
Used in: gpukit.cost (re-exported there), gpukit.cost.training, gpukit.cost.scaling_curve, gpukit.audits.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.errors import require_positive_int

DEFAULT_TOKENS_PER_GPU = 8192  # tokens per GPU per optimizer step for the efficiency estimate (4 x 2048)


@dataclass(frozen=True)
class Efficiency:
    """Predicted data-parallel scaling efficiency of one GPU count (weak scaling per step): efficiency = speed-up
    over one GPU / gpus; compute_s, comm_s and exposed_comm_s per optimizer step of one GPU at that count."""

    gpus: int
    nodes: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    efficiency: float
    model: str  # which model produced it, in words

    def to_json_dict(self) -> dict:
        return asdict(self)


def ports_words(ports: int, k: int) -> str:
    """How the GPUs of a node share its inter-node ports, in words ('' for one port per GPU)."""
    ports, k = require_positive_int("ports", ports), require_positive_int("gpus_per_node", k)
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
