"""The MoE block measured on CPU (gpukit.bench.moe_memory, MemTracker) against gpukit.memory's MoE
activation model (moe_mlp_activation_bytes: router softmax, shared experts, capacity-padded routed rows,
the combine's top_k copies) within 10%, and its expert weights exactly n_experts / ep experts."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpukit.bench.moe_memory import measure_moe_block  # noqa: E402


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),  # 8 experts, top-2, one shared expert, capacity factor 1.0
        dict(capacity_factor=1.5),  # a larger padded dispatch buffer
        dict(ep=2),  # this rank's 4 of 8 experts: the same rows per rank, half the expert weights
        dict(n_shared=0, experts_per_token=1, n_experts=4),
    ],
)
def test_moe_block_activations_within_10_percent(kwargs):
    r = measure_moe_block(tokens=1024, hidden=128, moe_ffn_hidden=256, **kwargs)
    assert 0.9 <= r.activation_ratio <= 1.1, r.to_json_dict()
    assert r.measured_param_bytes == r.predicted_param_bytes


def test_capacity_factor_grows_the_measured_and_predicted_alike():
    a = measure_moe_block(tokens=1024, hidden=128, moe_ffn_hidden=256, capacity_factor=1.0)
    b = measure_moe_block(tokens=1024, hidden=128, moe_ffn_hidden=256, capacity_factor=2.0)
    grown_measured = b.measured_activation_bytes - a.measured_activation_bytes
    grown_predicted = b.predicted_activation_bytes - a.predicted_activation_bytes
    assert grown_measured > 0 and abs(grown_measured / grown_predicted - 1) < 0.1
    assert b.dropped_token_copies == 0  # capacity 2x: nothing dropped with 8 experts, top-2


def test_ep_halves_the_expert_weights():
    one = measure_moe_block(tokens=256, hidden=128, moe_ffn_hidden=256, ep=1, n_shared=0)
    two = measure_moe_block(tokens=256, hidden=128, moe_ffn_hidden=256, ep=2, n_shared=0)
    router = 4 * 128 * 8
    assert two.measured_param_bytes - router == (one.measured_param_bytes - router) // 2


@pytest.mark.parametrize("cp", [1, 2, 4])
def test_cp_rank_attention_activations_match_the_prediction(cp):
    from gpukit.bench.moe_memory import measure_cp_attention_block

    r = measure_cp_attention_block(seq_len=2048, cp=cp)
    assert 0.9 <= r.activation_ratio <= 1.1, r.to_json_dict()


def test_cp_divides_the_measured_attention_activations():
    from gpukit.bench.moe_memory import measure_cp_attention_block

    one = measure_cp_attention_block(seq_len=2048, cp=1).measured_activation_bytes
    four = measure_cp_attention_block(seq_len=2048, cp=4).measured_activation_bytes
    assert four == pytest.approx(one / 4, rel=0.02)  # flash attention: no s^2 term, linear in s
