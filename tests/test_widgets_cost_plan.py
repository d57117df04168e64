"""Widgets of notebooks 08 and 09: defaults compute, controls recompute, bad values show one error line."""

from __future__ import annotations

import pytest

from gpukit.widgets.cost_view import buy_vs_rent_view, cost_view, spot_view
from gpukit.widgets.plan_view import plan_wizard


def test_cost_view_recomputes_and_is_linear_in_price():
    v = cost_view()
    assert v.error is None and v.result.rows[0].gpus == 1
    c3 = v.result.rows[0].cost_usd
    v.set(usd_per_gpu_hour=6.0)
    assert abs(v.result.rows[0].cost_usd - 2 * c3) < 1e-6 * c3


def test_buy_vs_rent_and_spot_views():
    b = buy_vs_rent_view()
    assert b.error is None and b.result.break_even_utilization > 0
    b.set(utilization=0.3)
    assert b.result.utilization == 0.3
    s = spot_view()
    assert s.error is None and s.result.expected_hours > s.result.work_hours


def test_plan_wizard_errors_in_place():
    v = plan_wizard()
    assert v.error is None and v.result.recommendation
    v.set(deadline_hours=-5)
    assert v.error and "deadline_hours" in v.error
    v.set(deadline_hours=0, workload="serve", rate=10)
    assert v.error is None and v.result.workload == "serve"


def test_draw_gpu_counts_one_gpu_type():
    """Notebook 09's memory and time by GPU count: the GPU's capacity line comes from the catalog."""
    from gpukit.catalog import get_gpu, get_model
    from gpukit.plan import plan
    from gpukit.widgets.plan_view import draw_gpu_counts

    r = plan("pretrain", get_model("llama-2-7b"), tokens=20e9, deadline_hours=500, gpus=["a100-80gb"])
    fig = draw_gpu_counts(r, 500)
    mem_ax, time_ax = fig.axes
    assert get_gpu("a100-80gb").memory_gib in {ln.get_ydata()[0] for ln in mem_ax.get_lines()}
    assert 500 in {ln.get_ydata()[0] for ln in time_ax.get_lines()}
    assert len(mem_ax.get_lines()[0].get_xdata()) == len(r.plans)
    with pytest.raises(ValueError, match="one GPU type"):
        draw_gpu_counts(
            plan("pretrain", get_model("llama-2-7b"), tokens=20e9, gpus=["a100-80gb", "h100-sxm"])
        )


def test_plan_wizard_replans_only_new_inputs(monkeypatch):
    """Issue 25 (callback over 2 s under load): a control set back to a value seen before redraws
    from the kept plan; a new value plans once; bad input raises every time (nothing cached)."""
    from gpukit.widgets import plan_view

    calls = []
    real = plan_view.plan

    def counting(*a, **kw):
        calls.append(kw.get("tokens"))
        return real(*a, **kw)

    monkeypatch.setattr(plan_view, "plan", counting)
    plan_view._plan_cached.cache_clear()
    v = plan_wizard(workload="lora")
    v.set(tokens_b=100.0)
    v.set(tokens_b=20.0)
    v.set(tokens_b=100.0)
    assert (
        calls == [20e9, 100e9] and v.error is None and v.result is plan_view.plan_for("lora", tokens_b=100.0)
    )
    for _ in range(2):
        v.set(deadline_hours=-1)
        assert v.error and "deadline_hours" in v.error
    plan_view._plan_cached.cache_clear()


def test_callback_timings_reports_every_change():
    """make bench's planner-widget figure: one row per change, the summary counts them (no timing
    is asserted: wall clock under load is a bench figure, not a test)."""
    from gpukit.widgets import plan_view

    rows = plan_view.callback_timings(({"workload": "serve"}, {"rate": 20.0}))
    assert [r["change"] for r in rows] == [{"workload": "serve"}, {"rate": 20.0}]
    s = plan_view.summarize_timings(rows)
    assert s["changes"] == 2 and 0 < s["median_s"] <= s["max_s"] and s["budget_s"] == 2.0
    assert s["over_budget"] == sum(r["seconds"] > 2.0 for r in rows)


def test_draw_cost_time_takes_a_plan_result_as_notebook_08_prices_the_job():
    """Notebook 08 prices its job with the planner's layout at each count (the figure notebook 09 gives): the
    cost-time chart draws a PlanResult's plans that fit, with the planner's Pareto set, as it draws a CostTable."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gpukit.catalog import get_model
    from gpukit.plan import plan
    from gpukit.widgets.cost_view import draw_cost_time

    r = plan("pretrain", get_model("opt-1.3b"), tokens=26e9, gpus={"h100-sxm": 3.0}, counts=(1, 8, 64))
    fig = draw_cost_time(r, title="t")
    front = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "Pareto set"][0]
    pareto = sorted((p for p in r.plans if p.pareto), key=lambda p: p.hours)
    assert list(front.get_xdata()) == [p.hours for p in pareto]
    plt.close(fig)
