"""gpukit.cost: Cluster economics: cost vs time, scaling efficiency, buy vs rent, spot, published training runs.

The face of gpukit.cost: what other families, layers, notebooks and tests import, by part
(dependency order):

- buy: Buy or rent: the owned cost of a GPU-hour (capital over the depreciation period, operations, energy at a PUE) against a rent, with the break-even utilization and months. Split from gpukit.cost ...
- efficiency: The data-parallel scaling efficiency that gpukit.cost prices runs with, and the inter-node port assumption in words.
- published: Training runs whose GPU-hours (and sometimes price) were disclosed, and gpukit's check of each: cost at a price, implied MFU, predicted GPU-hours (gpukit.compute.time_to_train). Pure calculator; ...
- scaling_curve: Data-parallel scaling priced by the one step model: the speed-up and efficiency per GPU count that `gpukit scaling` prints, from the same training_run as `cost train`.
- spot: Spot (preemptible) training: the checkpoint interval (Young 1974; Daly 2006), the expected wall time of a run that is preempted, and its cost against on-demand. Pure calculator; gpukit.cost ...
- training: Cluster economics: the cost of a training run with its scaling efficiency, cost vs time with the Pareto set, buy vs rent, spot instances with the optimal checkpoint interval, serving cost per ...
"""

# isort: skip_file

from gpukit.cost.buy import (
    HOURS_PER_YEAR,
    HOURS_PER_MONTH,
    SERVER_POWER_FACTOR,
    DEFAULT_PUE,
    DEFAULT_USD_PER_KWH,
    BuyVsRent,
    buy_vs_rent,
)
from gpukit.cost.efficiency import (
    DEFAULT_TOKENS_PER_GPU,
    Efficiency,
    ports_words,
    rail_ports,
)
from gpukit.cost.published import (
    PublishedRun,
    PUBLISHED_RUNS,
    PublishedCheck,
    published_check,
)
from gpukit.cost.spot import (
    young_interval_s,
    daly_interval_s,
    expected_wall_s,
    SpotEstimate,
    spot_run,
)
from gpukit.cost.training import (
    OFFLOAD_CPU_GBPS,
    ADAPTER_BACKWARD_SHARE,
    NETWORK_BOUND_BELOW,
    TrainingRun,
    data_parallel_setup,
    offload_slowdown_s,
    offload_grad_accum,
    params_only_spec,
    training_run,
    CostRow,
    CostTable,
    pareto_front,
    training_cost,
    ServingCost,
    serving_cost_per_million,
    serving_cost,
    ARTICLE_TABLE,
    ArticleTableRow,
)
from gpukit.cost.scaling_curve import (
    article_table,
    dp_scaling,
    predicted_efficiency,
)

__all__ = [
    "HOURS_PER_YEAR",
    "HOURS_PER_MONTH",
    "SERVER_POWER_FACTOR",
    "DEFAULT_PUE",
    "DEFAULT_USD_PER_KWH",
    "BuyVsRent",
    "buy_vs_rent",
    "DEFAULT_TOKENS_PER_GPU",
    "Efficiency",
    "predicted_efficiency",
    "ports_words",
    "rail_ports",
    "PublishedRun",
    "PUBLISHED_RUNS",
    "PublishedCheck",
    "published_check",
    "young_interval_s",
    "daly_interval_s",
    "expected_wall_s",
    "SpotEstimate",
    "spot_run",
    "OFFLOAD_CPU_GBPS",
    "ADAPTER_BACKWARD_SHARE",
    "NETWORK_BOUND_BELOW",
    "TrainingRun",
    "data_parallel_setup",
    "offload_slowdown_s",
    "offload_grad_accum",
    "params_only_spec",
    "training_run",
    "CostRow",
    "CostTable",
    "pareto_front",
    "training_cost",
    "ServingCost",
    "serving_cost_per_million",
    "serving_cost",
    "ARTICLE_TABLE",
    "ArticleTableRow",
    "article_table",
    "dp_scaling",
]
