"""gpukit.plan: The planner: one GPU, one node or a cluster; the training candidates and the articles' rules.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
"""

# isort: skip_file

from gpukit.plan.plans import (
    WORKLOADS,
    BINDINGS,
    DEFAULT_COUNTS,
    MAX_GLOBAL_BATCH_TOKENS,
    MIN_STEPS,
    PLAN_MODELS,
    Plan,
    PlanResult,
    cell,
)
from gpukit.plan.train import (
    train_plans,
    refine_with_parallel,
)
from gpukit.plan.planner import (
    SERVE_INPUT_TOKENS,
    SERVE_OUTPUT_TOKENS,
    plan,
)
from gpukit.plan.frameworks import (
    article_000_size_rule,
    article_000_decision_table,
    strategy_table,
    frameworks_grid,
)

__all__ = [
    "WORKLOADS",
    "BINDINGS",
    "DEFAULT_COUNTS",
    "MAX_GLOBAL_BATCH_TOKENS",
    "MIN_STEPS",
    "PLAN_MODELS",
    "Plan",
    "PlanResult",
    "cell",
    "train_plans",
    "refine_with_parallel",
    "SERVE_INPUT_TOKENS",
    "SERVE_OUTPUT_TOKENS",
    "plan",
    "article_000_size_rule",
    "article_000_decision_table",
    "strategy_table",
    "frameworks_grid",
]
