"""gpukit.parallel: 3D layouts (DP x TP x PP, ZeRO): memory, communication, bubble, step time, the search, published runs.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
"""

# isort: skip_file

from gpukit.parallel.cluster import (
    MATMUL_EFFICIENCY,
    HBM_EFFICIENCY,
    LINK_EFFICIENCY,
    Cluster,
    as_cluster_network,
    cluster_from_network,
    make_cluster,
)
from gpukit.parallel.pipeline_schedule import (
    Bubble,
    bubble,
    Task,
    Schedule,
    MAX_SCHEDULE_TASKS,
    schedule,
)
from gpukit.parallel.layout import (
    RECOMPUTE,
    ZERO_STAGES,
    ASSUMPTIONS,
    ParallelConfig,
    Estimate,
    cluster_assumptions,
    dp_group_shape,
    as_model_spec,
    default_seq_len_note,
    layout_train_setup,
    estimate,
    comm_volume,
)
from gpukit.parallel.layout_search import (
    MAX_SEARCH_GPUS,
    Ranked,
    SearchResult,
    check_search_gpus,
    enumerate_layouts,
    search,
)
from gpukit.parallel.published import (
    PublishedRun,
    PUBLISHED_RUNS,
    ValidationRow,
    validate_published,
    validation_frame,
)

__all__ = [
    "MAX_SEARCH_GPUS",
    "check_search_gpus",
    "MATMUL_EFFICIENCY",
    "HBM_EFFICIENCY",
    "LINK_EFFICIENCY",
    "Cluster",
    "as_cluster_network",
    "cluster_from_network",
    "make_cluster",
    "Bubble",
    "bubble",
    "Task",
    "Schedule",
    "MAX_SCHEDULE_TASKS",
    "schedule",
    "RECOMPUTE",
    "ZERO_STAGES",
    "ASSUMPTIONS",
    "ParallelConfig",
    "Estimate",
    "cluster_assumptions",
    "dp_group_shape",
    "as_model_spec",
    "default_seq_len_note",
    "layout_train_setup",
    "estimate",
    "comm_volume",
    "Ranked",
    "SearchResult",
    "enumerate_layouts",
    "search",
    "PublishedRun",
    "PUBLISHED_RUNS",
    "ValidationRow",
    "validate_published",
    "validation_frame",
]
