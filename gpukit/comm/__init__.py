"""gpukit.comm: The network: collective costs (alpha-beta), a cluster's links and ports, size sweeps.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
"""

# isort: skip_file

from gpukit.comm.collectives import (
    OPS,
    ALGORITHMS,
    TREE_OPS,
    busbw_factor,
    algbw_to_busbw,
    busbw_to_algbw,
    coefficients,
    link_params,
    CollectiveCost,
    collective_time,
    CollectiveSweep,
    collective_sweep,
    HierarchicalCost,
    hierarchical_all_reduce,
    hierarchical_phases,
    AlphaBetaFit,
    fit_alpha_beta,
)
from gpukit.comm.curves import (
    SWEEP_SIZES,
    NICS,
    CURVE_OPS,
    CollectiveCurves,
    collective_curves,
)
from gpukit.comm.network import (
    IDEAL_SOURCE,
    port_share_of,
    ClusterNetwork,
    DEFAULT_INTER_LINK,
    cluster_network,
    NetworkCost,
    network_all_reduce,
    network_all_gather,
    network_reduce_scatter,
    TokenBucket,
    token_bucket_refill,
    token_bucket_send,
)

__all__ = [
    "OPS",
    "ALGORITHMS",
    "TREE_OPS",
    "busbw_factor",
    "algbw_to_busbw",
    "busbw_to_algbw",
    "coefficients",
    "link_params",
    "CollectiveCost",
    "collective_time",
    "CollectiveSweep",
    "collective_sweep",
    "HierarchicalCost",
    "hierarchical_all_reduce",
    "hierarchical_phases",
    "AlphaBetaFit",
    "fit_alpha_beta",
    "SWEEP_SIZES",
    "NICS",
    "CURVE_OPS",
    "CollectiveCurves",
    "collective_curves",
    "IDEAL_SOURCE",
    "port_share_of",
    "ClusterNetwork",
    "DEFAULT_INTER_LINK",
    "cluster_network",
    "NetworkCost",
    "network_all_reduce",
    "network_all_gather",
    "network_reduce_scatter",
    "TokenBucket",
    "token_bucket_refill",
    "token_bucket_send",
]
