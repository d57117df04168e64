"""gpukit.plan: The planner: one GPU, one node or a cluster; the training candidates and the articles' rules.

The face of gpukit.plan: what other families, layers, notebooks and tests import, by part
(dependency order):

- plans: The planner's types and constants: Plan (one candidate), PlanResult (the ranked answer), the workloads, the binding constraints, the global-batch cap, the models the planner names and the one ranking rule (RANK_RULE, rank_plans) the recommendation follows.
- train: The planner's training candidates: for each GPU type and count, the layouts to try, the cheapest that fits as a Plan, and the re-estimate of the best ones with 3D layouts.
- planner: The planner: one GPU (with fitting tricks), one node, or many nodes, for a workload, a deadline and a budget; every plan with its memory per GPU, layout, time, cost, efficiency and binding constraint.
- frameworks: The articles' decision frameworks beside the planner: who should use one GPU, one node or many nodes, by the articles' rules and by gpukit.plan, over a grid of (model, tokens, deadline, budget).
"""

# isort: skip_file

from gpukit.plan.plans import (
    WORKLOADS,
    BINDINGS,
    DEFAULT_COUNTS,
    MAX_GLOBAL_BATCH_TOKENS,
    MIN_STEPS,
    PLAN_MODELS,
    PLAN_PRECISIONS,
    COST_TIE,
    RANK_RULE,
    Plan,
    PlanResult,
    cell,
    rank_plans,
)
from gpukit.plan.train import (
    train_plans,
    refine_with_parallel,
    planner_grad_accum,
    GLOBAL_BATCH_SEQUENCES,
)
from gpukit.plan.planner import (
    SERVE_INPUT_TOKENS,
    SERVE_OUTPUT_TOKENS,
    auto_counts,
    global_batch_of,
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
    "PLAN_PRECISIONS",
    "COST_TIE",
    "RANK_RULE",
    "Plan",
    "PlanResult",
    "cell",
    "rank_plans",
    "train_plans",
    "planner_grad_accum",
    "GLOBAL_BATCH_SEQUENCES",
    "refine_with_parallel",
    "SERVE_INPUT_TOKENS",
    "SERVE_OUTPUT_TOKENS",
    "auto_counts",
    "global_batch_of",
    "plan",
    "article_000_size_rule",
    "article_000_decision_table",
    "strategy_table",
    "frameworks_grid",
]
