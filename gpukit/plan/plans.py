"""The planner's types and constants: Plan (one candidate), PlanResult (the ranked answer), the
workloads, the binding constraints, the global-batch cap, the models the planner names and the one
ranking rule (RANK_RULE, rank_plans) the recommendation follows.

Its own module so that the planner (gpukit.plan.planner) and the training candidates
(gpukit.plan.train) both import it, and neither imports the other back.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from gpukit.results import json_safe
from gpukit.units import GiB

WORKLOADS = ("pretrain", "finetune", "lora", "qlora", "serve")
PLAN_PRECISIONS = ("bf16-mixed", "fp8")  # training precision of full-training plans (fp8: the FP8 recipe)
BINDINGS = (
    "does not fit",
    "misses the deadline",
    "over budget",
    "network-bound",
    "input-bound",
    "offload-bound",
    "compute-bound",
    "memory-bandwidth-bound",
)
DEFAULT_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
MAX_GLOBAL_BATCH_TOKENS = 16 * 2**20  # Llama 3 405B's largest batch, 16M tokens (Dubey et al. 2024, sec. 3.4)
MIN_STEPS = 100  # a run shorter than this many optimizer steps is not worth spreading wider
PLAN_MODELS = (
    'memory: gpukit.memory planning model (convention "pytorch": the peak of an eager step for full training; '
    "the papers' sum of parts for LoRA/QLoRA), with overhead",
    "time: the one step model, gpukit.parallel.estimate (through gpukit.cost.training_run, as `cost train` and "
    "`parallel estimate`): executed FLOPs (6N of the layers' matmul weights and the LM head plus attention at "
    "seq_len; 8N with full recompute) at the matmul efficiency and elementwise kernels at HBM bandwidth (or the MFU "
    "given), the optimizer step, offload once per optimizer step",
    "scaling: the same estimate: the gradient sync of gpukit.comm.grad_sync (DDP buckets during the backward, "
    "ZeRO-3 gathers per micro-batch with prefetch depth 1, fp32 gradients as PyTorch AMP keeps them), overlap stated "
    "per term; tensor/pipeline layouts only where a 'layout' line below names them",
    "price: gpukit.prices (median market row) or the price given per GPU",
)


COST_TIE = 0.01  # plans within 1% of the cheapest cost the same money
RANK_RULE = (
    "plans that meet every constraint first, then those that fit but miss one, then those that do not fit; "
    f"in each group, the plans that cost within {COST_TIE:.0%} of the group's cheapest and that no plan of the "
    "group beats on both time and cost come first, fewest GPUs first (then cheaper, then faster); then the "
    "rest, cheapest first. The recommendation is the first plan: the cheapest plan that meets the constraints, "
    f"or one within {COST_TIE:.0%} of its cost with fewer GPUs, never one that another plan beats on both time "
    "and cost"
)


def rank_plans(plans) -> list:
    """The plans in the order of RANK_RULE. The 1% band is measured from the group's cheapest plan, never
    chained from plan to plan; serving plans have no hours, so among them only cost counts."""
    if not isinstance(plans, (list, tuple)) or not all(isinstance(p, Plan) for p in plans):
        raise ValueError(f"plans must be a list or tuple of gpukit.plan.Plan, got {type(plans).__name__}")
    plans = list(plans)

    def num(x, none=0.0):
        return none if x is None else x if math.isfinite(x) else math.inf

    group = [(not p.feasible, p.binding == "does not fit") for p in plans]
    cost = [num(p.cost_usd, math.inf) for p in plans]
    hours = [num(p.hours) for p in plans]
    cheapest: dict = {}
    for g, c in zip(group, cost, strict=True):
        cheapest[g] = min(cheapest.get(g, math.inf), c)
    band = [c < math.inf and c <= cheapest[g] * (1 + COST_TIE) for g, c in zip(group, cost, strict=True)]

    def beaten(i):  # another plan of the group at most as slow and as dear, and better in one
        return any(
            group[j] == group[i]
            and cost[j] <= cost[i]
            and hours[j] <= hours[i]
            and (cost[j] < cost[i] or hours[j] < hours[i])
            for j in range(len(plans))
            if band[j]
        )

    first = [band[i] and not beaten(i) for i in range(len(plans))]

    def key(i):
        if first[i]:
            return (*group[i], False, plans[i].gpus, cost[i], hours[i])
        return (*group[i], True, cost[i], hours[i], plans[i].gpus)

    return [plans[i] for i in sorted(range(len(plans)), key=key)]


@dataclass(frozen=True)
class Plan:
    """One candidate: GPU type and count, layout, memory per GPU, time, cost, what binds."""

    gpu: str
    gpus: int
    nodes: int
    layout: str
    memory_per_gpu_bytes: int
    hours: float | None  # training: wall hours; serve: None
    cost_usd: float | None  # training: whole run; serve: USD per hour
    efficiency: float
    binding: str
    feasible: bool
    usd_per_gpu_hour: float
    pareto: bool = False
    tricks: tuple[str, ...] = ()
    usd_per_million_tokens: float | None = None
    # every setting that reproduces the plan (dp, tp, pp, cp, ep, sp, virtual_stages, micro_batch,
    # grad_accum, global_batch, seq_len, zero_stage, recompute, offload); None for a plan that does not fit
    settings: dict | None = None
    memory_convention: str = "pytorch"  # the gpukit.memory convention its memory and "fits" follow
    reason: str = ""  # why a count has no plan (does not fit, over the global batch, not whole nodes)
    holds_back: str = ""  # what limits the layout most (gpukit.parallel's search: bubble, traffic, memory)
    reproduce: str = ""  # the command that gives the same memory and step time (gpukit parallel estimate)

    @property
    def scale(self) -> str:
        return (
            "one GPU"
            if self.gpus == 1
            else f"one node of {self.gpus}"
            if self.nodes == 1
            else f"{self.nodes} nodes"
        )

    def settings_text(self) -> str:
        """Every setting of the plan in the project's vocabulary, one line."""
        if not self.settings:
            return ""
        return ", ".join(f"{k} {v}" for k, v in self.settings.items())

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["tricks"] = list(self.tricks)
        d["scale"] = self.scale
        return d


@dataclass(frozen=True)
class PlanResult:
    """Ranked plans, the Pareto set, the recommendation and what would have to change."""

    workload: str
    model: str
    plans: tuple[Plan, ...]
    recommendation: str
    changes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    models: tuple[str, ...] = PLAN_MODELS
    assumptions: tuple[str, ...] = field(default=())
    global_batch: int | None = None  # sequences per optimizer step every training plan assumes
    seq_len: int | None = None
    critical_batch_tokens: int | None = None  # gpukit.scaling.critical_batch

    @property
    def best(self) -> Plan | None:
        return self.plans[0] if self.plans and self.plans[0].feasible else None

    @property
    def feasible(self) -> tuple[Plan, ...]:
        return tuple(p for p in self.plans if p.feasible)

    def to_json_dict(self) -> dict:
        # a plan that does not fit has no hours or cost: null, never Infinity (not JSON; docs/CONTRACTS.md)
        return json_safe(
            {
                "workload": self.workload,
                "model": self.model,
                "plans": [p.to_json_dict() for p in self.plans],
                "recommendation": self.recommendation,
                "changes": list(self.changes),
                "skipped": list(self.skipped),
                "models": list(self.models),
                "assumptions": list(self.assumptions),
                "global_batch": self.global_batch,
                "seq_len": self.seq_len,
                "critical_batch_tokens": self.critical_batch_tokens,
            }
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            [{k: v for k, v in p.to_json_dict().items() if k != "tricks"} for p in self.plans]
        )

    def to_text(self, top: int = 12) -> str:
        serve = self.workload == "serve"
        head = (
            f"{'gpu':<12} {'gpus':>5} {'layout':<34} {'GiB/GPU':>8} "
            + (f"{'$/h':>9} {'$/1M tok':>9}" if serve else f"{'hours':>10} {'cost USD':>12}")
            + f" {'eff':>5}  binding"
        )
        lines = [head]
        for p in self.plans[:top]:
            mid = (
                f"{cell(p.cost_usd, ',.2f', 9)} {cell(p.usd_per_million_tokens, '.3f', 9)}"
                if serve
                else f"{cell(p.hours, ',.1f', 10)} {cell(p.cost_usd, ',.0f', 12)}"
            )
            layout = p.layout if len(p.layout) <= 34 else p.layout[:33] + "…"  # cut, and say so
            lines.append(
                f"{p.gpu:<12} {p.gpus:>5} {layout:<34} {p.memory_per_gpu_bytes / GiB:>8.1f} {mid} "
                f"{p.efficiency:>5.0%}  {p.binding}{' *' if p.pareto else ''}"
            )
        if len(self.plans) > top:
            lines.append(f"... {len(self.plans) - top} more (--json for all); * = Pareto set (time, cost)")
        lines.append(f"RECOMMENDATION: {self.recommendation}")
        shown = self.best or next((p for p in self.plans if p.settings), None)
        if shown is not None and shown.settings:
            lines.append(f"settings ({shown.gpus} x {shown.gpu}): {shown.settings_text()}")
            lines.append(f"memory convention: {shown.memory_convention}")
            if shown.holds_back:
                lines.append(f"holds it back: {shown.holds_back}")
            if shown.reproduce:
                lines.append(f"reproduce: {shown.reproduce}")
        lines += [f"change: {c}" for c in self.changes]
        lines += [f"skipped: {s}" for s in self.skipped]
        lines += [f"assumes: {a}" for a in self.assumptions]
        lines += [f"model: {m}" for m in self.models]
        return "\n".join(lines)


def cell(v, spec: str, width: int) -> str:
    """A number right-aligned in `width`, or n/a when there is none (a plan that does not fit)."""
    return f"{v:>{width}{spec}}" if v is not None and math.isfinite(v) else f"{'n/a':>{width}}"
