"""Notebook 09's wizard over gpukit.plan: workload, model, tokens or rate, deadline, budget -> plans.

- `plan_for(workload, model, tokens_b, rate, deadline_hours, budget_usd, gpu_set)` -> gpukit.plan.PlanResult
  (deadline or budget 0 = none). `draw_plans(result)` plots every plan that fits (hours against cost,
  feasible ones filled, the Pareto set joined) and prints the recommendation. `plan_wizard()`.

Bad values (a serve workload with rate 0, a negative deadline) show one error line (View).

Callback time (issue 25: over 2 s in 4 of 28 changes under load): a plan over every priced GPU takes
seconds for a training workload, so plan_for keeps the last PLAN_CACHE answers (PlanResult is frozen:
sharing one is safe) and a control set back to a value seen before redraws without re-planning;
sliders recompute on release only (gpukit.widgets.base.slider). `callback_timings()` times the
wizard's callbacks over CALLBACK_CHANGES for `make bench` (gpukit/cli/benchreport.py, section 8).
Used in: notebooks/09_decide, gpukit.cli.benchreport.
"""

from __future__ import annotations

import functools
import statistics
import time

from gpukit.catalog import get_model
from gpukit.plan import WORKLOADS, PlanResult, plan
from gpukit.widgets.base import View, dropdown, number, slider

MODELS = (
    "gpt2",
    "opt-1.3b",
    "mistral-7b",
    "llama-2-7b",
    "llama-3-8b",
    "llama-2-13b",
    "opt-30b",
    "llama-2-70b",
    "llama-3.1-405b",
)
GPU_SETS = {
    "every priced GPU": None,
    "H100 only": ["h100-sxm"],
    "A100 80GB only": ["a100-80gb"],
    "H100 + A100": ["h100-sxm", "a100-80gb"],
    "workstation (RTX A6000)": ["rtx-a6000"],
}


PLAN_CACHE = 64  # plans kept (one per distinct set of the wizard's seven inputs)
CALLBACK_BUDGET_S = 2.0  # a widget answers within this (issue 12's planner budget)
# a session of 28 control changes: new values and values set back (undo, comparing two models)
CALLBACK_CHANGES = (
    {"tokens_b": 100.0},
    {"tokens_b": 20.0},
    {"model": "llama-2-13b"},
    {"model": "llama-2-7b"},
    {"deadline_hours": 500.0},
    {"deadline_hours": 0.0},
    {"budget_usd": 50_000.0},
    {"budget_usd": 0.0},
    {"gpu_set": "H100 only"},
    {"gpu_set": "every priced GPU"},
    {"workload": "lora"},
    {"workload": "pretrain"},
    {"workload": "serve"},
    {"rate": 20.0},
    {"rate": 5.0},
    {"workload": "pretrain"},
    {"model": "gpt2"},
    {"model": "llama-2-7b"},
    {"tokens_b": 1000.0},
    {"tokens_b": 20.0},
    {"workload": "finetune"},
    {"workload": "pretrain"},
    {"gpu_set": "H100 + A100"},
    {"gpu_set": "every priced GPU"},
    {"deadline_hours": 500.0},
    {"deadline_hours": 0.0},
    {"model": "llama-2-13b"},
    {"model": "llama-2-7b"},
)


def plan_for(
    workload: str = "pretrain",
    model: str = "llama-2-7b",
    tokens_b: float = 20.0,
    rate: float = 5.0,
    deadline_hours: float = 0.0,
    budget_usd: float = 0.0,
    gpu_set: str = "every priced GPU",
    loader_k_tokens_per_s: float = 0.0,
    mfu: float = 0.0,
) -> PlanResult:
    """gpukit.plan.plan with widget-friendly inputs: tokens in billions, 0 for no deadline / budget, the
    input pipeline's speed in thousands of tokens/s (0: not a limit) and the MFU (0: the planner's
    default per GPU). The last PLAN_CACHE answers are kept (module docstring); bad input raises every time."""
    return _plan_cached(
        workload, model, tokens_b, rate, deadline_hours, budget_usd, gpu_set, loader_k_tokens_per_s, mfu
    )


@functools.lru_cache(maxsize=PLAN_CACHE)
def _plan_cached(
    workload, model, tokens_b, rate, deadline_hours, budget_usd, gpu_set, loader_k_tokens_per_s=0.0, mfu=0.0
) -> PlanResult:
    if gpu_set not in GPU_SETS:
        raise ValueError(f"gpu_set must be one of {', '.join(GPU_SETS)}; got {gpu_set!r}")
    kw = {"rate": rate} if workload == "serve" else {"tokens": tokens_b * 1e9}
    if deadline_hours < 0 or budget_usd < 0:
        raise ValueError("deadline_hours and budget_usd must be >= 0 (0 = none)")
    if loader_k_tokens_per_s < 0 or not 0 <= mfu <= 1:
        raise ValueError("loader_k_tokens_per_s must be >= 0 (0 = no limit) and mfu in [0, 1] (0 = default)")
    if workload != "serve":
        kw |= {"mfu": mfu or None, "loader_tokens_per_s": loader_k_tokens_per_s * 1e3 or None}
    return plan(
        workload,
        get_model(model),
        deadline_hours=deadline_hours or None,
        budget_usd=budget_usd or None,
        gpus=GPU_SETS[gpu_set],
        **kw,
    )


def draw_plans(result: PlanResult, ax=None):
    """Training: hours against cost of every plan that fits; serve: USD/hour per GPU type. The
    recommendation is the title's second line."""
    import textwrap

    import matplotlib.pyplot as plt

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.0, 4.2))
    fitting = [p for p in result.plans if p.binding != "does not fit"]
    if result.workload == "serve":
        ax.barh(
            [f"{p.gpus} x {p.gpu}" for p in fitting][::-1],
            [p.cost_usd for p in fitting][::-1],
            color=["tab:green" if p.feasible else "tab:grey" for p in fitting][::-1],
        )
        ax.set_xlabel("USD per hour")
    else:
        for feas, style in ((False, dict(mfc="none", color="tab:grey")), (True, dict(color="tab:blue"))):
            pts = [p for p in fitting if p.feasible == feas]
            ax.plot(
                [p.hours for p in pts],
                [p.cost_usd for p in pts],
                "o",
                label="feasible" if feas else "infeasible",
                **style,
            )
        front = sorted((p for p in fitting if p.pareto), key=lambda p: p.hours)
        ax.plot([p.hours for p in front], [p.cost_usd for p in front], "k--", lw=1, label="Pareto set")
        if result.best is not None:
            b = result.best
            ax.plot([b.hours], [b.cost_usd], "*", ms=14, color="tab:orange", label="recommended")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("hours (log)")
        ax.set_ylabel("cost USD (log)")
        ax.legend(fontsize=8)
    width = 80 if result.workload == "serve" else 95  # characters: the serve axes start further right
    # a literal "$" (every price) would open matplotlib mathtext and garble the title: escape it
    ax.set_title("\n".join(textwrap.wrap(result.recommendation.replace("$", r"\$"), width)[:3]), fontsize=8)
    if fig is not None:  # fixed margins: tight_layout measured every log tick, half of a redraw's time
        left = 0.24 if result.workload == "serve" else 0.12  # room for the "8 x h100-sxm" bar labels
        fig.subplots_adjust(left=left, right=0.97, bottom=0.12, top=0.84)
    return fig or ax.figure


def draw_gpu_counts(result: PlanResult, deadline_hours: float | None = None):
    """One GPU type's plans by GPU count: memory per GPU against the GPU's capacity (left), hours of
    the plans that fit with the deadline (right). `result` comes from plan(..., gpus=[one type])."""
    import matplotlib.pyplot as plt

    from gpukit.catalog import get_gpu

    gpu_names = {p.gpu for p in result.plans}
    if len(gpu_names) != 1:
        raise ValueError(f"draw_gpu_counts needs the plans of one GPU type, got {sorted(gpu_names)}")
    name = gpu_names.pop()
    plans = sorted(result.plans, key=lambda p: p.gpus)
    fits = [p for p in plans if p.binding != "does not fit"]
    cap = get_gpu(name).memory_gib
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.4))
    a1.plot([p.gpus for p in plans], [p.memory_per_gpu_bytes / 2**30 for p in plans], "o-")
    a1.axhline(cap, color="grey", ls="--", label=f"{cap:g} GiB")
    a1.set(xlabel="GPUs", ylabel="GiB per GPU")
    a1.set_xscale("log", base=2)
    a2.plot([p.gpus for p in fits], [p.hours for p in fits], "o-", label="hours")
    a2.set(yscale="log", xlabel="GPUs", ylabel="hours (log)")
    a2.set_xscale("log", base=2)
    if deadline_hours:
        a2.axhline(deadline_hours, color="tab:red", ls="--", label="deadline")
    for a in (a1, a2):
        a.legend(fontsize=8)
    fig.suptitle(f"{result.model} on {name}: memory and time by GPU count", fontsize=10)
    fig.tight_layout()
    return fig


def plan_wizard(**defaults) -> View:
    """The planner as a wizard."""
    d = (
        dict(
            workload="pretrain",
            model="llama-2-7b",
            tokens_b=20.0,
            rate=5.0,
            deadline_hours=0.0,
            budget_usd=0.0,
            gpu_set="every priced GPU",
            loader_k_tokens_per_s=0.0,
            mfu=0.0,
        )
        | defaults
    )
    controls = {
        "workload": dropdown("workload", WORKLOADS, d["workload"]),
        "model": dropdown("model", MODELS, d["model"]),
        "tokens_b": slider("tokens (B)", 0.01, 5000, d["tokens_b"], log=True),
        "rate": slider("requests/s (serve)", 0.1, 1000, d["rate"], log=True),
        "deadline_hours": number("deadline h (0 = none)", d["deadline_hours"]),
        "budget_usd": number("budget $ (0 = none)", d["budget_usd"]),
        "gpu_set": dropdown("GPUs", list(GPU_SETS), d["gpu_set"]),
        "loader_k_tokens_per_s": slider(
            "loader (k tokens/s, 0 = no limit)", 0, 2000, d["loader_k_tokens_per_s"], step=10
        ),
        "mfu": slider("MFU (0 = default)", 0.0, 0.8, d["mfu"], step=0.05),
    }
    return View(plan_for, controls, draw_plans, title="The planner: one GPU, one node or many nodes?")


def callback_timings(changes=CALLBACK_CHANGES, *, fresh: bool = True) -> list[dict]:
    """Seconds of each wizard callback (plan and redraw, as View.update runs them) over `changes`,
    applied in turn from the wizard's defaults: [{change, seconds, over_budget}]. fresh: start with
    an empty plan cache (a new kernel). Wall clock on this machine: a `make bench` figure."""
    import contextlib
    import io

    import matplotlib.pyplot as plt

    if fresh:
        _plan_cached.cache_clear()
    sink = io.StringIO()  # outside a kernel an Output widget prints what it shows: keep the report clean
    with contextlib.redirect_stdout(sink):
        view = plan_wizard()
    rows = []
    for change in changes:
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            view.set(**change)
        dt = time.perf_counter() - t0
        plt.close("all")
        rows.append({"change": change, "seconds": dt, "over_budget": dt > CALLBACK_BUDGET_S})
    return rows


def summarize_timings(rows: list[dict]) -> dict:
    """Median, max and the number of callbacks over CALLBACK_BUDGET_S."""
    secs = [r["seconds"] for r in rows]
    return {
        "changes": len(secs),
        "median_s": statistics.median(secs),
        "max_s": max(secs),
        "over_budget": sum(r["over_budget"] for r in rows),
        "budget_s": CALLBACK_BUDGET_S,
    }
