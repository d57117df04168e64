"""The articles' decision frameworks beside the planner: who should use one GPU, one node or many
nodes, by the articles' rules and by gpukit.plan, over a grid of (model, tokens, deadline, budget).

Holds article 000's size rule and decision table, a practitioner's strategy table (by scale x
whether the model fits one GPU), and `frameworks_grid`, which puts each rule beside the planner's
best plan for pretraining on one GPU type. Units: n_params in parameters, tokens, hours, USD.
Sources: article 000 (shared/seeds/, N. Dixit, "GPU Cluster vs Single GPU for Deep Learning: The Real
Trade-offs"); S. Bekman, ML Engineering, 'Which strategy to use when'; Hugging Face transformers
'Efficient training on multiple GPUs'. gpukit.plan re-exports every name here.
Used in: notebooks/09_decide, tests/test_plan.py (both through gpukit.plan).
"""

from __future__ import annotations

from gpukit.catalog import get_model
from gpukit.errors import require_choice
from gpukit.plan.planner import plan


def article_000_size_rule(n_params: float) -> str:
    """Article 000: '<1B: single GPU; 1B-10B: a small cluster (4-8 GPUs); >10B: clusters are mandatory'."""
    return "one GPU" if n_params < 1e9 else "one node" if n_params <= 10e9 else "many nodes"


def article_000_decision_table(n_params: float, budget_usd: float | None) -> str:
    """Article 000's decision framework: stay single (<3B, budget < $1K), 4-8 GPUs (3B-20B),
    16+ GPUs across nodes (>20B, budget > $50K)."""
    if n_params < 3e9 and (budget_usd is None or budget_usd < 1000):
        return "one GPU"
    if n_params <= 20e9:
        return "one node"
    return "many nodes"


def strategy_table(fits_one_gpu: bool, nodes: str) -> str:
    """A practitioner's strategy table (S. Bekman, ML Engineering, 'Which strategy to use when';
    Hugging Face transformers 'Efficient training on multiple GPUs'): by scale x whether the model fits."""
    table = {
        ("one GPU", True): "plain training",
        ("one GPU", False): "ZeRO-Offload / quantization / LoRA; or go multi-GPU",
        ("one node", True): "DDP (or ZeRO-1/2)",
        ("one node", False): "ZeRO-3/FSDP, or tensor/pipeline parallelism",
        ("many nodes", True): "DDP/ZeRO across nodes (fast interconnect)",
        ("many nodes", False): "ZeRO-3/FSDP or TP inside nodes + PP/DP across",
    }
    require_choice("nodes", nodes, ("one GPU", "one node", "many nodes"))
    if not isinstance(fits_one_gpu, bool):
        raise ValueError(f"fits_one_gpu must be True or False, got {fits_one_gpu!r}")
    return table[(nodes, fits_one_gpu)]


def frameworks_grid(cases=None, *, gpu: str = "h100-sxm") -> list[dict]:
    """The articles' rules beside the planner over a grid of (model, tokens, deadline, budget)."""
    cases = cases or [
        ("gpt2-xl", 20e9, 48, None),
        ("opt-1.3b", 26e9, 24, 1000),
        ("llama-2-7b", 1e9, 24, 500),
        ("llama-2-7b", 140e9, 72, None),
        ("llama-2-13b", 260e9, 168, None),
        ("opt-30b", 600e9, 336, None),
        ("llama-2-70b", 1.4e12, 720, None),
        ("llama-2-70b", 2e9, 48, None),
    ]
    rows = []
    for name, tokens, deadline, budget in cases:
        m = get_model(name)
        r = plan("pretrain", m, tokens=tokens, deadline_hours=deadline, budget_usd=budget, gpus=[gpu])
        b = r.best
        scale = (
            None
            if b is None
            else ("one GPU" if b.gpus == 1 else "one node" if b.nodes == 1 else "many nodes")
        )
        fits1 = any(p.gpus == 1 and p.binding != "does not fit" and not p.tricks for p in r.plans)
        rows.append(
            {
                "model": name,
                "n_params": m.n_params,
                "tokens": tokens,
                "deadline_hours": deadline,
                "budget_usd": budget,
                "planner": scale or "infeasible",
                "planner_plan": None if b is None else f"{b.gpus} x {gpu}, {b.layout}",
                "article_000_size_rule": article_000_size_rule(m.n_params),
                "article_000_decision_table": article_000_decision_table(m.n_params, budget),
                "strategy_table": strategy_table(fits1, scale or "many nodes"),
                "agree_size_rule": scale == article_000_size_rule(m.n_params),
                "agree_decision_table": scale == article_000_decision_table(m.n_params, budget),
            }
        )
    return rows
