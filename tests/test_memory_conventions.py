"""gpukit.memory conventions of the papers (issue 10): fp32 main grads, distributed optimizer, fp32
accumulation buffer, interleaved stages, the two full-recompute figures, ZeRO-3 working set terms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.catalog import get_model
from gpukit.memory import TrainSetup, estimate_memory, layer_activation_bytes

N = 10**9
GPT = get_model("gpt3-175b")


def per_param(setup):
    r = estimate_memory(n_params=N, setup=setup)
    return (r.params_bytes + r.grads_bytes + r.optimizer_bytes) / N


def test_zero_paper_default_is_16():
    assert per_param(TrainSetup(convention="megatron")) == 16  # Rajbhandari et al. 2019 sec. 3.1: 2 + 2 + 12


def test_megatron_fp32_main_grads_18():
    assert (
        per_param(TrainSetup(convention="megatron", grad_dtype="fp32")) == 18
    )  # Megatron-LM: fp32 main-grad buffer


@pytest.mark.parametrize("dp", [1, 2, 8, 64])
def test_megatron_distributed_optimizer_6_plus_12_over_dp(dp):
    assert per_param(
        TrainSetup(convention="megatron", grad_dtype="fp32", zero_stage=1, dp=dp)
    ) == pytest.approx(6 + 12 / dp)


def test_playbook_fp32_accumulation_buffer_20():
    assert (
        per_param(TrainSetup(convention="megatron", grad_accum_buffer="fp32")) == 20
    )  # Ultra-Scale Playbook


def test_interleave_factor_korthikanti():
    s = TrainSetup(convention="megatron", pp=8, virtual_stages=4, grad_accum=32)
    assert s.interleave_factor == pytest.approx(1 + 7 / 32)
    assert s.in_flight_micro_batches == 8
    assert TrainSetup(convention="megatron", pp=8, grad_accum=3).in_flight_micro_batches == 3


def test_interleaving_scales_first_stage_activations():
    base = dict(pp=8, grad_accum=32, recompute="selective", tp=8, sp=True)
    one = estimate_memory(GPT, setup=TrainSetup(convention="megatron", **base))
    four = estimate_memory(GPT, setup=TrainSetup(convention="megatron", virtual_stages=4, **base))
    assert four.term("interleave_factor") == pytest.approx(1 + 7 / 32)
    assert four.activations_bytes > one.activations_bytes
    assert four.to_json_dict()["terms"]["in_flight_micro_batches"] == 8


def test_full_recompute_two_named_figures():
    s = TrainSetup(convention="megatron", recompute="full", seq_len=2048, micro_batch=1, tp=8)
    r = estimate_memory(GPT, setup=s)
    stored, layer = r.term("stored_checkpoints_bytes"), r.term("recompute_layer_bytes")
    assert stored == pytest.approx(GPT.n_layers * 2 * 2048 * GPT.hidden)  # 2sbh per layer (Korthikanti)
    assert layer == pytest.approx(layer_activation_bytes(GPT, s, recompute="none"))
    assert r.activations_bytes >= stored + layer


@settings(max_examples=30, deadline=None)
@given(k=st.integers(0, 3), dp=st.integers(2, 64))
def test_zero3_gathered_and_prefetch_terms(k, dp):
    a = estimate_memory(GPT, setup=TrainSetup(convention="megatron", zero_stage=3, dp=dp))
    b = estimate_memory(
        GPT, setup=TrainSetup(convention="megatron", zero_stage=3, dp=dp, zero3_prefetch_layers=k)
    )
    layer = GPT.layer_params() * 2
    assert b.term("zero3_gathered_bytes") == pytest.approx(layer)
    assert b.term("zero3_prefetch_bytes") == pytest.approx(k * layer)
    assert b.params_bytes - a.params_bytes == pytest.approx(k * layer, abs=2)


@pytest.mark.parametrize(
    "kw,msg",
    [
        (dict(grad_dtype="int8"), "grad_dtype"),
        (dict(grad_accum_buffer="bf16"), "grad_accum_buffer"),
        (dict(grad_dtype="fp32", grad_accum_buffer="fp32"), "counts the fp32 gradients twice"),
        (dict(precision="fp32", grad_accum_buffer="fp32"), "applies to 16-bit training"),
        (dict(virtual_stages=2), "needs pp > 1"),
        (dict(virtual_stages=0, pp=2), "virtual_stages"),
        (dict(zero3_prefetch_layers=-1), "zero3_prefetch_layers"),
        # gradients are fp32 or the precision's dtype: fp16 grads of fp32 training were counted 2 B/param
        (dict(precision="fp32", grad_dtype="fp16"), "grad_dtype must be fp32 or the precision's own dtype"),
        (dict(precision="fp16-mixed", grad_dtype="bf16"), "bf16 gradients do not exist in fp16-mixed"),
        # flags that changed nothing: training conventions with inference, prefetch without ZeRO-3
        (dict(inference=True, grad_dtype="fp32"), "grad_dtype applies to training"),
        (dict(inference=True, grad_accum_buffer="fp32"), "grad_accum_buffer applies to training"),
        (dict(inference=True, pp=2, virtual_stages=2), "virtual_stages applies to training"),
        (dict(inference=True, zero3_prefetch_layers=1), "zero3_prefetch_layers applies to training"),
        (dict(zero3_prefetch_layers=1, zero_stage=2, dp=2), "needs zero_stage 3"),
        # the API side of the CLI's mode checks: micro_batch 64 with inference=True served batch 1
        (dict(inference=True, micro_batch=64), "micro_batch applies to training"),
        (dict(inference=True, grad_accum=8), "grad_accum applies to training"),
        (dict(inference=True, recompute="full"), "recompute applies to training"),
        (dict(batch=8), "batch applies to inference=True"),
        (dict(zero_stage=1.0, dp=8), "zero_stage must be 0, 1, 2 or 3"),  # was taken, printed "ZeRO-1.0"
        (dict(zero_stage=True, dp=8), "zero_stage must be 0, 1, 2 or 3"),
    ],
)
def test_bad_conventions(kw, msg):
    with pytest.raises(ValueError, match=msg):
        TrainSetup(convention="megatron", **kw)


def test_pytorch_convention_gradients_follow_fp32_parameters():
    """torch.autocast keeps fp32 parameters, so their .grad is fp32: 16-bit grad_dtype under the pytorch
    convention (4 B weights, 2 B grads, 7B: 12.55 GiB of grads beside 25.10 GiB of weights) is an error."""
    with pytest.raises(ValueError, match="torch.autocast keeps fp32 parameters"):
        TrainSetup(grad_dtype="bf16")
    assert TrainSetup(grad_dtype="fp32").grad_dtype == "fp32"
    assert TrainSetup(convention="megatron", grad_dtype="bf16").grad_dtype == "bf16"
    assert TrainSetup(precision="bf16", grad_dtype="bf16").grad_dtype == "bf16"  # pure bf16: bf16 grads


def test_too_many_chunks():
    with pytest.raises(ValueError, match=r"pp\*virtual_stages must be at most n_layers"):
        estimate_memory(GPT, setup=TrainSetup(convention="megatron", pp=48, virtual_stages=3))


@pytest.mark.parametrize("zero", [1, 2])
def test_pytorch_zero_text_says_what_it_splits_and_the_numbers_agree(zero):
    """ZeRO-1/2 in the pytorch convention keep autocast's fp32 parameters whole on every rank (and,
    for ZeRO-1, the fp32 gradients); DeepSpeed's 2 + 2 + 12/dp is the megatron convention. The text
    says so, and the components it describes are the ones computed."""
    m, dp = get_model("llama-2-7b"), 8
    n = m.n_params
    torch_like = estimate_memory(m, setup=TrainSetup(zero_stage=zero, dp=dp))
    deepspeed = estimate_memory(m, setup=TrainSetup(convention="megatron", zero_stage=zero, dp=dp))
    line = next(ln for ln in torch_like.to_text().splitlines() if ln.startswith(f"ZeRO-{zero} here"))
    assert "convention megatron" in line and ("2 + 2 + 12/dp" if zero == 1 else "2 + (2 + 12)/dp") in line
    assert torch_like.params_bytes == pytest.approx(4 * n, rel=1e-6)  # fp32, whole
    assert deepspeed.params_bytes == pytest.approx(2 * n, rel=1e-6)
    assert deepspeed.optimizer_bytes == pytest.approx(12 * n / dp, rel=1e-6)
    assert deepspeed.grads_bytes == pytest.approx((2 if zero == 1 else 2 / dp) * n, rel=1e-6)
    if zero == 1:  # the optimizer phase holds the whole fp32 gradients
        assert torch_like.grads_bytes == pytest.approx(4 * n, rel=1e-6)
    assert "ZeRO-" not in "".join(ln for ln in deepspeed.to_text().splitlines() if " here:" in ln)
    assert not any(
        " here:" in ln
        for ln in estimate_memory(m, setup=TrainSetup(zero_stage=zero, dp=dp, precision="bf16"))
        .to_text()
        .splitlines()
    )
