"""The knobs learners asked for (issue 23, section 4): each one reaches its calculator and moves the answer.

05 share of line rate and gradient dtype (scaling_view), 06 ports per node in the layout search
(parallel_view), 07 output tokens (inference_view), 08 MFU and operations cost (cost_view), 09 loader
speed and MFU in the planner (plan_view). Each test changes one knob and checks the output changes the
way the physics says it must.
"""

from __future__ import annotations

import pytest

from gpukit.widgets import cost_view, inference_view, parallel_view, plan_view, scaling_view


def _eff(**kw):
    return scaling_view.efficiency_curve(inter_link="eth-100g", ports_per_node=1, max_gpus=64, **kw).rows[-1]


def test_scaling_line_share_and_grad_dtype_move_the_efficiency():
    full, low = _eff(line_share=1.0), _eff(line_share=0.3)
    assert low.efficiency < full.efficiency
    bf16, fp32 = _eff(grad_dtype="bf16"), _eff(grad_dtype="fp32")
    assert fp32.comm_bytes_per_step == pytest.approx(2 * bf16.comm_bytes_per_step)
    assert fp32.efficiency < bf16.efficiency
    view = scaling_view.threshold_view()
    assert {"line_share", "grad_dtype"} <= set(view.controls)


def test_search_ports_per_node_changes_the_winner_or_its_speed():
    kw = dict(
        model="llama-2-13b", gpu="h100-sxm", gpus=16, global_batch=64, seq_len=2048, inter_link="eth-100g"
    )
    rail = parallel_view.search_compute(ports_per_node=8, **kw)
    shared = parallel_view.search_compute(ports_per_node=1, **kw)
    assert shared.best.estimate.tokens_per_s < rail.best.estimate.tokens_per_s
    assert "ports_per_node" in parallel_view.search_view().controls


def test_serving_output_tokens_change_latency_and_cost():
    short = inference_view.serving_choice(output_tokens=50, simulate_requests=0)
    long = inference_view.serving_choice(output_tokens=1000, simulate_requests=0)
    assert long.plan.request_latency_s > short.plan.request_latency_s
    assert "output_tokens" in inference_view.serving_view().controls


def test_cost_mfu_and_operations_cost():
    slow = cost_view.cost_curve(tokens_b=10, mfu=0.2).rows[0]
    fast = cost_view.cost_curve(tokens_b=10, mfu=0.5).rows[0]
    # the step model: the matmul time scales with 1/MFU, the optimizer step and exposed traffic do not
    assert 1.5 * fast.hours < slow.hours <= fast.hours * 0.5 / 0.2 * (1 + 1e-9)
    no_ops, ops = cost_view.buy_rent(), cost_view.buy_rent(ops_k_usd_per_year=200)
    assert ops.owned_cost_per_gpu_hour > no_ops.owned_cost_per_gpu_hour
    assert (
        "mfu" in cost_view.cost_view().controls
        and "ops_k_usd_per_year" in cost_view.buy_vs_rent_view().controls
    )


def test_planner_loader_speed_and_mfu():
    kw = dict(workload="pretrain", model="opt-1.3b", tokens_b=26.0, gpu_set="H100 + A100")
    free = plan_view.plan_for(**kw)
    slow_loader = plan_view.plan_for(loader_k_tokens_per_s=20, **kw)
    assert min(p.hours for p in slow_loader.plans) > min(p.hours for p in free.plans)
    low_mfu = plan_view.plan_for(mfu=0.1, **kw)
    assert min(p.hours for p in low_mfu.plans) > min(p.hours for p in free.plans)
    with pytest.raises(ValueError, match="mfu"):
        plan_view.plan_for(mfu=1.5, **kw)
    assert {"loader_k_tokens_per_s", "mfu"} <= set(plan_view.plan_wizard().controls)
