"""Widgets of notebooks 08 and 09: defaults compute, controls recompute, bad values show one error line."""

from __future__ import annotations

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
