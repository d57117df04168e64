"""gpukit.parallel: 3D layouts (DP x TP x PP, ZeRO): memory, communication, bubble, step time, the search, published runs.

The face of gpukit.parallel: what other families, layers, notebooks and tests import, by part
(dependency order):

- cluster: The cluster a parallel layout runs on: the GPU, its ClusterNetwork (gpukit.comm's one network type: node size, intra and inter links, ports per node, link efficiency with its source, collective ...
- pipeline_schedule: Pipeline schedules: the bubble in both conventions and the task timeline of GPipe, 1F1B and the interleaved 1F1B (Narayanan et al. 2021 sec. 2.2.1-2.2.2), for the diagram of notebook 06.
- layout: 3D parallel layouts: memory, communication, pipeline bubble and step time of (dp, tp, pp, v, ZeRO stage, micro-batch, recompute, sequence parallelism) on a cluster, and a search over every layout.
- layout_search: The search over 3D parallel layouts: every valid (dp, tp, pp, virtual stages, ZeRO stage, micro-batch, recompute, sp) on a number of GPUs, those that fit, ranked by predicted tokens/s, and what ...
- published: gpukit.parallel against published training runs: Megatron-LM (Narayanan et al. 2021 table 1, Korthikanti et al. 2022 tables), BLOOM, OPT and Llama 3 405B, each with its stated layout, measured ...
"""

# isort: skip_file

from gpukit.parallel.cluster import (
    MATMUL_EFFICIENCY,
    HBM_EFFICIENCY,
    LINK_EFFICIENCY,
    TRAINING_MATMUL_SHARE,
    Cluster,
    EfficiencyRow,
    as_cluster_network,
    attention_efficiency_for,
    cluster_from_network,
    efficiency_row,
    efficiency_rows,
    gemm_shape_efficiency,
    hbm_efficiency_for,
    layer_gemm_efficiency,
    make_cluster,
    matmul_efficiency_for,
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
    layout_convention,
    layout_train_setup,
    estimate,
    comm_volume,
    offload_step_s,
    OFFLOAD_CPU_GBPS,
    PCIE_GBPS,
    ADAPTER_BACKWARD_SHARE,
)
from gpukit.parallel.layout_search import (
    MAX_SEARCH_GPUS,
    LONG_CONTEXT_SEQ_LEN,
    cp_candidates,
    ep_candidates,
    Ranked,
    SearchResult,
    check_search_gpus,
    enumerate_layouts,
    search,
    CountBest,
    team_layouts,
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
    "TRAINING_MATMUL_SHARE",
    "Cluster",
    "EfficiencyRow",
    "as_cluster_network",
    "attention_efficiency_for",
    "cluster_from_network",
    "efficiency_row",
    "efficiency_rows",
    "gemm_shape_efficiency",
    "hbm_efficiency_for",
    "layer_gemm_efficiency",
    "make_cluster",
    "matmul_efficiency_for",
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
    "layout_convention",
    "estimate",
    "comm_volume",
    "offload_step_s",
    "OFFLOAD_CPU_GBPS",
    "PCIE_GBPS",
    "ADAPTER_BACKWARD_SHARE",
    "LONG_CONTEXT_SEQ_LEN",
    "cp_candidates",
    "ep_candidates",
    "Ranked",
    "SearchResult",
    "enumerate_layouts",
    "search",
    "CountBest",
    "team_layouts",
    "PublishedRun",
    "PUBLISHED_RUNS",
    "ValidationRow",
    "validate_published",
    "validation_frame",
]
