"""gpukit.cost: Cluster economics: cost vs time, scaling efficiency, buy vs rent, spot, published training runs.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
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
    predicted_efficiency,
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
    article_table,
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
]
