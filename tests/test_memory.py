"""Unit and property tests of the analytical memory model (gpukit.memory, gpukit.quant)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import memory as mem
from gpukit.catalog import GPU, get_gpu, get_model
from gpukit.memory import TrainSetup, estimate_memory, layer_activation_bytes
from gpukit.quant import lora_params, nf4_constant_bits, quantized_bytes
from gpukit.specs import ModelSpec
from gpukit.units import GiB

PAPER = "megatron"  # these tests pin the papers' convention (formulas and published figures)

GPT = ModelSpec("gpt-test", n_layers=24, hidden=2048, n_heads=16, vocab=50257, max_seq=2048)
LLAMA7 = ModelSpec(
    "llama-2-7b-like",
    32,
    4096,
    32,
    vocab=32000,
    max_seq=4096,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
)
LLAMA70 = ModelSpec(
    "llama-2-70b-like",
    80,
    8192,
    64,
    n_kv_heads=8,
    ffn_hidden=28672,
    vocab=32000,
    max_seq=4096,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
)
EAGER = TrainSetup(convention=PAPER, attention="eager")


def gpu(gib: float, name: str = "test-gpu") -> GPU:
    return GPU(
        name=name,
        vendor="test",
        memory_gib=gib,
        hbm_bandwidth_gbps=1000.0,
        peaks_tflops=(("bf16", 100.0),),
        nvlink_gbps=0.0,
        pcie_gen=4,
        tdp_w=300.0,
    )


def states(r) -> int:
    return r.params_bytes + r.grads_bytes + r.optimizer_bytes


# ---- activations: the Megatron convention (Korthikanti et al. 2022, Table 2) ---------------------


@settings(max_examples=60, deadline=None)
@given(
    s=st.integers(1, 4096),
    b=st.integers(1, 16),
    heads=st.integers(1, 64),
    head_dim=st.sampled_from([32, 64, 128]),
)
def test_gpt_layout_reduces_to_34sbh_plus_5as2b(s, b, heads, head_dim):
    h = heads * head_dim
    model = ModelSpec("gpt", 2, h, heads)
    got = layer_activation_bytes(model, replace(EAGER, seq_len=s, micro_batch=b))
    assert got == pytest.approx(s * b * h * 34 + 5 * heads * s * s * b, rel=1e-12)


@pytest.mark.parametrize("t", [2, 4, 8])
def test_tp_sp_selective_rows_of_table2(t):
    m = ModelSpec("gpt", 4, 4096, 32)
    s, b, h, a = 2048, 2, 4096, 32
    base = replace(EAGER, seq_len=s, micro_batch=b, tp=t)
    rows = {
        (False, "none"): s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
        (True, "none"): s * b * h * (34 / t + 5 * a * s / (h * t)),
        (False, "selective"): s * b * h * (10 + 24 / t),
        (True, "selective"): s * b * h * 34 / t,
        (False, "full"): 2 * s * b * h,
    }
    for (sp, rc), want in rows.items():
        assert layer_activation_bytes(m, replace(base, sp=sp, recompute=rc)) == pytest.approx(want, rel=1e-12)


def test_flash_drops_the_score_term_and_keeps_a_logsumexp():
    s, b, h, a = 1024, 1, 2048, 16
    flash = layer_activation_bytes(GPT, TrainSetup(convention=PAPER, seq_len=s, micro_batch=b))
    assert flash == pytest.approx(34 * s * b * h + 4 * a * s * b)


def test_no_dropout_and_fp32_change_the_constants():
    s, b, h, a = 512, 1, 2048, 16
    nodrop = layer_activation_bytes(GPT, replace(EAGER, seq_len=s, dropout=False))
    assert nodrop == pytest.approx(32 * s * b * h + 2 * a * s * s * b)  # 16sbh + as^2b elements of 2 bytes
    fp32 = layer_activation_bytes(GPT, replace(EAGER, seq_len=s, precision="fp32"))
    assert fp32 == pytest.approx(66 * s * b * h + 9 * a * s * s * b)  # elements x 4 bytes, masks 1 byte


def test_gqa_and_swiglu_change_the_per_layer_count():
    s = 1024
    mha = ModelSpec("mha", 2, 4096, 32, ffn_hidden=11008, mlp="swiglu")
    gqa = replace(mha, n_kv_heads=8)
    setup = TrainSetup(convention=PAPER, seq_len=s)
    # attention: 2 bytes x (2q + 2kv) per token; GQA cuts kv from 4096 to 1024
    diff = layer_activation_bytes(mha, setup) - layer_activation_bytes(gqa, setup)
    assert diff == pytest.approx(2 * 2 * (4096 - 1024) * s)
    gelu = replace(mha, mlp="gelu")
    assert layer_activation_bytes(mha, setup) - layer_activation_bytes(gelu, setup) == pytest.approx(
        2 * 2 * 11008 * s
    )


@settings(max_examples=40, deadline=None)
@given(
    layers=st.integers(2, 48),
    heads=st.sampled_from([8, 16, 32]),
    s=st.integers(16, 8192),
    b=st.integers(1, 8),
    swiglu=st.booleans(),
    tp=st.sampled_from([1, 2, 8]),
    sp=st.booleans(),
)
def test_full_le_selective_le_none(layers, heads, s, b, swiglu, tp, sp):
    model = ModelSpec("m", layers, heads * 64, heads, mlp="swiglu" if swiglu else "gelu")
    base = TrainSetup(convention=PAPER, seq_len=s, micro_batch=b, tp=tp, sp=sp)
    act = {
        rc: estimate_memory(model, setup=replace(base, recompute=rc)).activations_bytes
        for rc in mem.RECOMPUTE
    }
    assert act["full"] <= act["selective"] <= act["none"]
    eager = {
        rc: estimate_memory(model, setup=replace(base, recompute=rc, attention="eager")).activations_bytes
        for rc in mem.RECOMPUTE
    }
    assert eager["selective"] <= eager["none"] and eager["full"] <= eager["none"]


def test_full_recompute_counts_one_layer_working_set():
    setup = TrainSetup(convention=PAPER, seq_len=1024, micro_batch=2, recompute="full")
    r = estimate_memory(GPT, setup=setup)
    s, b, h = 1024, 2, GPT.hidden
    stored = GPT.n_layers * 2 * s * b * h
    working = layer_activation_bytes(GPT, replace(setup, recompute="none"))
    extras = s * b * h + 2 * 2 * s * b * h  # embedding dropout mask; final-norm and LM-head inputs
    assert r.activations_bytes == pytest.approx(stored + working + extras, abs=1)


def test_grad_accum_does_not_change_activations_without_pp():
    a = estimate_memory(GPT, setup=TrainSetup(convention=PAPER, grad_accum=1)).activations_bytes
    assert estimate_memory(GPT, setup=TrainSetup(convention=PAPER, grad_accum=64)).activations_bytes == a


def test_pipeline_stage_holds_pp_microbatches_and_reports_most_loaded():
    one = estimate_memory(GPT, setup=TrainSetup(convention=PAPER, pp=4, grad_accum=1))
    many = estimate_memory(GPT, setup=TrainSetup(convention=PAPER, pp=4, grad_accum=16))
    assert many.stage == "first" and many.activations_bytes > 3 * one.activations_bytes
    big_vocab = replace(GPT, vocab=256_000, n_layers=4)
    assert estimate_memory(big_vocab, setup=TrainSetup(convention=PAPER, pp=4, seq_len=4096)).stage == "last"


def test_logits_convention():
    s, b = 1024, 4
    r = estimate_memory(GPT, setup=TrainSetup(convention=PAPER, seq_len=s, micro_batch=b, tp=2))
    assert r.logits_bytes == pytest.approx((2 + 4) * s * b * GPT.vocab / 2, abs=1)


# ---- model states: ZeRO ---------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(10**6, 10**12),
    z=st.integers(1, 3),
    dp1=st.integers(1, 512),
    dp2=st.integers(1, 512),
    opt=st.sampled_from(mem.OPTIMIZERS),
    prec=st.sampled_from(mem.PRECISIONS),
)
def test_model_states_non_increasing_in_dp(n, z, dp1, dp2, opt, prec):
    lo, hi = sorted((dp1, dp2))
    a = estimate_memory(
        n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=z, dp=lo, optimizer=opt, precision=prec)
    )
    b = estimate_memory(
        n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=z, dp=hi, optimizer=opt, precision=prec)
    )
    assert states(b) <= states(a)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(10**6, 10**12), dp=st.integers(1, 1024))
def test_zero3_states_scale_as_one_over_dp(n, dp):
    one = states(estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=3, dp=1)))
    sharded = states(estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=3, dp=dp)))
    assert sharded * dp == pytest.approx(one, abs=3 * dp)
    assert one == 16 * n  # 2 + 2 + K=12 (ZeRO sec. 3.1)


def test_zero0_ignores_dp_and_stage_formulas():
    n = 10**9
    assert states(estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, dp=64))) == 16 * n
    assert (
        states(estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=1, dp=8)))
        == 4 * n + 12 * n // 8
    )
    assert (
        states(estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, zero_stage=2, dp=8)))
        == 2 * n + 14 * n // 8
    )


def test_bytes_per_param_by_precision_and_optimizer():
    n = 10**9
    per = {
        (p, o): states(
            estimate_memory(n_params=n, setup=TrainSetup(convention=PAPER, precision=p, optimizer=o))
        )
        / n
        for p in mem.PRECISIONS
        for o in mem.OPTIMIZERS
    }
    assert per["fp32", "adamw"] == 16 and per["bf16-mixed", "adamw"] == 16 and per["bf16", "adamw"] == 8
    assert (
        per["bf16-mixed", "sgd"] == 8 and per["fp32", "sgd"] == 8 and per["bf16-mixed", "sgd-momentum"] == 12
    )
    assert per["bf16-mixed", "adamw-8bit"] == pytest.approx(10, abs=0.01)


def test_zero3_with_a_shape_keeps_one_gathered_layer():
    r = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, zero_stage=3, dp=64))
    sharded = estimate_memory(
        n_params=LLAMA7.n_params, setup=TrainSetup(convention=PAPER, zero_stage=3, dp=64)
    ).params_bytes
    assert r.params_bytes == pytest.approx(sharded + 2 * LLAMA7.layer_params(), abs=2)


def test_tp_divides_model_states():
    one = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER))
    four = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, tp=4))
    assert states(four) == pytest.approx(states(one) / 4, rel=1e-9)


# ---- offload --------------------------------------------------------------------------------------


@pytest.mark.parametrize("offload,zero", [("optimizer", 1), ("optimizer", 2), ("all", 3)])
def test_offload_moves_states_to_cpu_and_conserves_them(offload, zero):
    ref = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, zero_stage=zero, dp=2))
    off = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, zero_stage=zero, dp=2, offload=offload))
    assert off.optimizer_bytes == 0 and off.cpu_bytes > 0
    gathered = LLAMA7.layer_params() * 2 if zero == 3 else 0  # ZeRO-3's working layer, counted once
    assert states(off) + off.cpu_bytes + gathered == pytest.approx(states(ref), abs=4)
    assert off.total_bytes < ref.total_bytes
    if offload == "all":
        assert off.params_bytes == pytest.approx(LLAMA7.layer_params() * 2, abs=1)


# ---- quantization, LoRA, inference --------------------------------------------------------------


def test_nf4_constants_match_qlora():
    assert nf4_constant_bits(double_quant=False) == 0.5
    assert nf4_constant_bits() == pytest.approx(0.127, abs=5e-4)
    assert quantized_bytes(4096 * 4096, "int8", n_rows=4096) == 4096 * 4096 + 4 * 4096


@settings(max_examples=30, deadline=None)
@given(
    layers=st.integers(1, 64),
    heads=st.sampled_from([8, 16, 32, 64]),
    swiglu=st.booleans(),
    vocab=st.integers(1000, 200_000),
)
def test_weight_bytes_ordered_nf4_int8_bf16_fp32(layers, heads, swiglu, vocab):
    model = ModelSpec("m", layers, heads * 128, heads, vocab=vocab, mlp="swiglu" if swiglu else "gelu")
    w = {
        d: estimate_memory(
            model, setup=TrainSetup(convention=PAPER, inference=True, weights_dtype=d)
        ).params_bytes
        for d in ("nf4", "int8", "bf16", "fp32")
    }
    assert w["nf4"] < w["int8"] < w["bf16"] < w["fp32"]
    assert w["fp32"] == 2 * w["bf16"] == 4 * model.n_params


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 64), seq=st.integers(1, 32768), k=st.integers(2, 8))
def test_kv_cache_linear_in_batch_and_context(batch, seq, k):
    setup = TrainSetup(convention=PAPER, inference=True, batch=batch, seq_len=seq)
    kv = estimate_memory(LLAMA70, setup=setup).kv_cache_bytes
    assert kv == 2 * 80 * 8 * 128 * 2 * batch * seq  # grouped-query: 8 KV heads, not 64
    assert estimate_memory(LLAMA70, setup=replace(setup, batch=batch * k)).kv_cache_bytes == k * kv
    assert estimate_memory(LLAMA70, setup=replace(setup, seq_len=seq * k)).kv_cache_bytes == k * kv


def test_kv_heads_replicate_when_tp_exceeds_them():
    s = TrainSetup(convention=PAPER, inference=True, seq_len=4096)
    kv8 = estimate_memory(LLAMA70, setup=replace(s, tp=8)).kv_cache_bytes
    assert (
        estimate_memory(LLAMA70, setup=replace(s, tp=16)).kv_cache_bytes == kv8
    )  # 1 KV head per GPU either way
    assert estimate_memory(LLAMA70, setup=replace(s, tp=4)).kv_cache_bytes == 2 * kv8


def test_inference_has_no_training_state():
    r = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, inference=True, seq_len=4096))
    assert r.grads_bytes == r.optimizer_bytes == r.trainable_params == 0
    assert r.params_bytes == 2 * LLAMA7.n_params and r.kv_cache_bytes == 2 * 32 * 4096 * 2 * 4096


def test_lora_trains_a_tiny_fraction_and_qlora_is_smallest():
    full = estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, recompute="full", seq_len=512))
    lora = estimate_memory(
        LLAMA7, setup=TrainSetup(convention=PAPER, finetune="lora", recompute="full", seq_len=512)
    )
    qlora = estimate_memory(
        LLAMA7, setup=TrainSetup(convention=PAPER, finetune="qlora", recompute="full", seq_len=512)
    )
    assert lora.trainable_params == lora_params(LLAMA7, 8, "all") < 0.01 * LLAMA7.n_params
    assert lora.optimizer_bytes == pytest.approx(lora.trainable_params * 12, abs=1)  # fp32 master + m + v
    assert qlora.optimizer_bytes == pytest.approx(
        qlora.trainable_params * 8, abs=1
    )  # paged 32-bit, no master
    assert qlora.total_bytes < lora.total_bytes < full.total_bytes
    assert qlora.params_bytes < 0.3 * lora.params_bytes


def test_lora_targets_count_adapted_matrices():
    h = LLAMA7.hidden
    r = 16
    assert lora_params(LLAMA7, r, "qv") == LLAMA7.n_layers * 2 * r * (h + h)
    assert lora_params(LLAMA7, r, "attention") == LLAMA7.n_layers * 4 * r * (h + h)
    assert lora_params(LLAMA7, r, "all") == LLAMA7.n_layers * (4 * r * 2 * h + 3 * r * (h + 11008))


# ---- overhead, results, questions ----------------------------------------------------------------


def test_overhead_only_with_a_gpu():
    bare = estimate_memory(GPT, setup=TrainSetup(convention=PAPER))
    assert bare.overhead_bytes == 0 and bare.fits is None and bare.gpu_memory_bytes is None
    on = estimate_memory(GPT, setup=TrainSetup(convention=PAPER), gpu=gpu(80))
    tensors = bare.total_bytes
    assert on.cuda_context_bytes == mem.CUDA_CONTEXT_BYTES
    assert on.fragmentation_bytes == pytest.approx(mem.FRAGMENTATION_FRACTION * tensors, abs=1)
    assert on.total_bytes == tensors + on.overhead_bytes and on.fits is True


def test_result_views():
    r = estimate_memory(GPT, setup=TrainSetup(convention=PAPER), gpu=gpu(1, "tiny"))
    d = r.to_json_dict()
    for k in (
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "logits_bytes",
        "kv_cache_bytes",
        "overhead_bytes",
        "total_bytes",
        "n_params",
        "gpu_memory_bytes",
        "fits",
    ):
        assert k in d
    assert all(isinstance(v, int) for k, v in d.items() if k.endswith("_bytes"))
    assert d["fits"] is False and "does NOT fit" in r.to_text()
    df = r.to_frame()
    assert list(df.columns) == ["component", "bytes", "gib", "share"]
    assert df.iloc[-1]["bytes"] == r.total_bytes == sum(v for _, v in r.items())


def test_max_micro_batch_is_the_edge():
    g = gpu(80)
    setup = TrainSetup(convention=PAPER, recompute="selective", seq_len=2048)
    n = mem.max_micro_batch(LLAMA7, replace(setup, finetune="lora"), g)
    assert n >= 1
    assert mem.fits(LLAMA7, replace(setup, finetune="lora", micro_batch=n), g)
    assert not mem.fits(LLAMA7, replace(setup, finetune="lora", micro_batch=n + 1), g)
    assert mem.max_micro_batch(LLAMA7, setup, g) == 0  # full AdamW finetuning of 7B: 16 B/param > 80 GiB


def test_max_micro_batch_for_inference_varies_batch():
    g = gpu(80)
    setup = TrainSetup(convention=PAPER, inference=True, seq_len=4096)
    n = mem.max_micro_batch(LLAMA7, setup, g)
    assert mem.fits(LLAMA7, replace(setup, batch=n), g) and not mem.fits(
        LLAMA7, replace(setup, batch=n + 1), g
    )


def test_max_seq_len_is_the_edge():
    g = gpu(24)
    setup = TrainSetup(convention=PAPER, finetune="qlora", recompute="full")
    n = mem.max_seq_len(LLAMA7, setup, g, limit=1 << 22)  # beyond the context window: the memory edge
    assert n > 1024
    assert mem.fits(LLAMA7, replace(setup, seq_len=n), g) and not mem.fits(
        LLAMA7, replace(setup, seq_len=n + 1), g
    )


def test_min_gpus_finds_smallest_dp_per_stage():
    g = gpu(80)
    plan = mem.min_gpus(LLAMA7, TrainSetup(convention=PAPER, seq_len=2048), g, max_gpus=64)
    stages = {o.zero_stage: o for o in plan.options}
    assert 0 not in stages and 3 in stages  # 16 B/param x 6.7B > 80 GiB without sharding
    for o in plan.options:
        s = TrainSetup(convention=PAPER, seq_len=2048, zero_stage=o.zero_stage, dp=o.dp)
        assert mem.fits(LLAMA7, s, g)
        if o.dp > 1:
            assert not mem.fits(LLAMA7, replace(s, dp=o.dp - 1), g)
    assert plan.best.world_size == min(o.world_size for o in plan.options)
    assert plan.to_json_dict()["best"]["dp"] == plan.best.dp and "smallest" in plan.to_text()


def test_min_gpus_for_inference_picks_tp():
    plan = mem.min_gpus(LLAMA70, TrainSetup(convention=PAPER, inference=True, seq_len=4096), gpu(80))
    assert plan.best.tp == 2 and plan.best.zero_stage == 0


def test_min_gpus_for_inference_says_when_the_heads_stop_it():
    """falcon-7b has 71 heads: no power-of-two tp above 1 divides them, so when tp 1 does not fit the search
    ends empty; it said 'no option fits within the GPU limit', which blamed the limit, not the layout."""
    falcon = get_model("falcon-7b")
    setup = TrainSetup(convention=PAPER, inference=True, batch=16, precision="fp16-mixed")
    plan = mem.min_gpus(falcon, setup, get_gpu("t4"))
    assert plan.best is None and "71 heads" in plan.why_none and "tp 1 does not fit" in plan.why_none
    assert "GPU limit" in plan.to_text() and "try pp > 1" in plan.to_text()
    assert plan.to_json_dict()["why_none"] == plan.why_none
    assert mem.min_gpus(falcon, replace(setup, pp=2), get_gpu("t4")).best.world_size == 2
    assert (
        mem.min_gpus(
            LLAMA70, TrainSetup(convention=PAPER, inference=True), get_gpu("t4"), max_gpus=2
        ).why_none
        == ""
    )


def test_min_gpus_for_training_says_when_more_gpus_would_not_help():
    """llama-3.1-405b at 2048 tokens without recompute: each layer's activations (not split by dp) exceed an
    H100 alone, so no dp fits; the plan said 'within the GPU limit', as if more GPUs would do."""
    setup = TrainSetup(seq_len=2048)
    plan = mem.min_gpus(get_model("llama-3.1-405b"), setup, get_gpu("h100-sxm"))
    assert (
        plan.best is None and "more GPUs would not help" in plan.why_none and "activations" in plan.to_text()
    )
    r = estimate_memory("llama-3.1-405b", setup=replace(setup, zero_stage=3, dp=1024), gpu="h100-sxm")
    assert r.activations_bytes + r.logits_bytes > get_gpu("h100-sxm").memory_bytes
    # with the limit the reason (recompute: activations fit, the states need more GPUs than 16): no such claim
    short = mem.min_gpus(
        get_model("llama-3.1-405b"), replace(setup, recompute="full"), get_gpu("h100-sxm"), max_gpus=16
    )
    assert short.best is None and short.why_none == "" and short.to_text().endswith("within the GPU limit")


# ---- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        (dict(zero_stage=4), "zero_stage must be 0, 1, 2 or 3"),
        (dict(precision="fp4"), "precision must be one of"),
        (dict(precision="fp8", finetune="lora"), "precision fp8 is the FP8 training recipe"),
        (dict(micro_batch=0), "micro_batch must be a positive integer"),
        (dict(dp=-2), "dp must be a positive integer"),
        (dict(finetune="qlora", precision="fp32"), "finetune='qlora' needs a 16-bit precision"),
        (dict(offload="optimizer"), "offload='optimizer' needs zero_stage >= 1"),
        (dict(offload="all", zero_stage=2), "offload='all' needs zero_stage 3"),
        (dict(inference=True, zero_stage=3), "zero_stage applies to training"),
        (dict(weights_dtype="nf4"), "weights_dtype 'nf4' applies to inference"),
        (dict(sp="yes"), "sp must be True or False"),
    ],
)
def test_setup_errors_are_one_line(kwargs, fragment):
    with pytest.raises(ValueError) as e:
        TrainSetup(convention=PAPER, **kwargs)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_layout_errors():
    with pytest.raises(ValueError, match="tp must divide n_heads 32, got 5"):
        estimate_memory(LLAMA7, setup=TrainSetup(convention=PAPER, tp=5))
    with pytest.raises(ValueError, match="pp must be at most n_layers 24"):
        estimate_memory(GPT, setup=TrainSetup(convention=PAPER, pp=25))
    with pytest.raises(ValueError, match="exactly one"):
        estimate_memory(GPT, n_params=10**9)
    with pytest.raises(ValueError, match="exactly one"):
        estimate_memory()
    with pytest.raises(ValueError, match="needs the model's shape"):
        estimate_memory(n_params=10**9, setup=TrainSetup(convention=PAPER, finetune="lora"))
    with pytest.raises(ValueError, match="n_params must be a positive integer"):
        estimate_memory(n_params=-5)


def test_sp_without_tp_is_harmless():
    assert (
        estimate_memory(GPT, setup=TrainSetup(convention=PAPER, sp=True)).total_bytes
        == estimate_memory(GPT, setup=TrainSetup(convention=PAPER)).total_bytes
    )


def test_catalog_models():
    from gpukit import catalog

    model, h100 = catalog.get_model("llama-2-7b"), catalog.get_gpu("h100-sxm")
    r = estimate_memory(model, setup=TrainSetup(convention=PAPER, inference=True, seq_len=4096), gpu=h100)
    assert r.fits and r.params_bytes == 2 * model.n_params
    assert r.total_bytes / GiB < h100.memory_gib
