"""`make bench`: how fast the planner answers over the whole GPU catalog (the widget budget is 2 s;
the layout search at every GPU count and type, issue 23),
and the published training-run costs reproduced (gpukit.cost.published_check).

The timing is wall-clock on this machine: medians of `repeats` runs, the workloads interleaved so a
busy neighbour slows every workload alike; the spread (min-max) is reported beside the median.
Used in: gpukit/cli/benchreport.py (section "Planner and published costs").
"""

from __future__ import annotations

import statistics
import time

WIDGET_BUDGET_S = 2.0


def planner_benchmark(repeats: int = 5) -> list[dict]:
    """Median/min/max seconds of gpukit.plan.plan for seven workloads: the issue-23 pretraining request on
    the priced catalog (gpukit/data/prices.csv, as `gpukit plan` runs it) and six workloads over every
    catalog GPU (each given a price so none is skipped), a mixture of experts among them, at the counts the
    planner picks (powers of two up to what the global batch allows; the layout search at every count and
    GPU type)."""
    from gpukit.catalog import get_model, gpus
    from gpukit.plan import plan

    every = {g: 2.0 for g in gpus()}
    cases = {
        "pretrain llama-2-70b 2T 720h (priced)": (
            "pretrain",
            "llama-2-70b",
            {"tokens": 2e12, "deadline_hours": 720},
            None,
        ),
        "pretrain llama-2-70b 1T": (
            "pretrain",
            "llama-2-70b",
            {"tokens": 1e12, "deadline_hours": 720},
            every,
        ),
        # a mixture of experts (EP sizes in the search) at its 32k training context (CP sizes too)
        "pretrain mixtral-8x7b 1T": (
            "pretrain",
            "mixtral-8x7b",
            {"tokens": 1e12, "deadline_hours": 720},
            every,
        ),
        "finetune llama-2-13b 1B": ("finetune", "llama-2-13b", {"tokens": 1e9, "budget_usd": 5000}, every),
        "lora llama-2-7b 100M": ("lora", "llama-2-7b", {"tokens": 1e8}, every),
        "qlora llama-2-70b 100M": ("qlora", "llama-2-70b", {"tokens": 1e8}, every),
        "serve llama-3-70b 10 req/s": ("serve", "llama-3-70b", {"rate": 10}, every),
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    last = {}
    for _ in range(repeats):
        for name, (workload, model, kw, allowed) in cases.items():
            t0 = time.perf_counter()
            r = plan(workload, get_model(model), gpus=allowed, **kw)
            times[name].append(time.perf_counter() - t0)
            last[name] = r
    rows = []
    for k, v in times.items():
        r = last[k]
        best = r.best
        rows.append(
            {
                "workload": k,
                "gpu_types": len({p.gpu for p in r.plans}),
                "plans": len(r.plans),
                "largest_count": max((p.gpus for p in r.plans), default=0),
                "best": None if best is None else f"{best.gpus} x {best.gpu}",
                "best_hours": None if best is None else best.hours,
                "median_s": statistics.median(v),
                "min_s": min(v),
                "max_s": max(v),
                "within_budget": statistics.median(v) < WIDGET_BUDGET_S,
            }
        )
    return rows


def published_costs() -> list[dict]:
    """Every published run: cost at its disclosed price (or $2), implied MFU, predicted GPU-hours error."""
    from gpukit.cost import PUBLISHED_RUNS, published_check

    return [published_check(r.key).to_json_dict() for r in PUBLISHED_RUNS]


def economics_section() -> dict:
    """Print and return both tables (for benchreport)."""
    bench = planner_benchmark()
    print(f"  planner over the catalog (budget {WIDGET_BUDGET_S:g} s for a widget), median of 5 (min-max):")
    for b in bench:
        best = (
            ""
            if b["best"] is None
            else f"; best {b['best']}"
            + (f" in {b['best_hours']:,.1f} h" if b["best_hours"] is not None else "")
        )
        print(
            f"    {b['workload']:<38} {b['gpu_types']:>2} GPU types {b['plans']:>4} plans up to "
            f"{b['largest_count']:>5} GPUs  {b['median_s'] * 1e3:7.1f} ms "
            f"({b['min_s'] * 1e3:.1f}-{b['max_s'] * 1e3:.1f})  {'ok' if b['within_budget'] else 'OVER BUDGET'}{best}"
        )
    pub = published_costs()
    print(
        "  published runs: cost at the disclosed price ($2/GPU-h where none), GPU-hours predicted at 40% MFU:"
    )
    for p in pub:
        err = "" if p["cost_error"] is None else f", cost error {p['cost_error']:+.2%}"
        print(
            f"    {p['key']:<16} {p['gpu_hours']:>12,.0f} GPU-h  ${p['cost_usd']:>13,.0f}{err}; implied MFU "
            f"{p['implied_mfu']:.1%}; predicted GPU-h {p['gpu_hours_error']:+.1%}"
        )
    return {"planner": bench, "published": pub}
