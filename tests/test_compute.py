"""Tests for gpukit.compute (FLOPs, MFU, roofline, time-to-train), gpukit.profile and their CLI.

Published figures checked here (sources in each test): PaLM 540B MFU 46.2 % / 45.7 % without attention
(Chowdhery et al. 2022 sec. 4.1 and appendix B), Megatron eq. 3 and the 34-day / 84-day estimates
(Narayanan et al. 2021 sec. 5.1). FLOP counts are also met by a measurement: torch's FlopCounterMode on
the reference GPT (gpukit.bench.models).
"""

from __future__ import annotations

import json

import pytest
from helpers import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit.catalog import GPU
from gpukit.cli.compute import parse_count
from gpukit.compute import (
    DEFAULT_MFU,
    achieved_tflops,
    flops_per_token,
    hfu,
    layer_matmul_params,
    mfu,
    roofline_layer,
    roofline_matmul,
    step_flops,
    time_to_train,
)
from gpukit.profile import load_profile, profile_from_dict
from gpukit.specs import ModelSpec

# A100 as Narayanan et al. 2021 sec. 5 state it: "peak device throughput of an A100 GPU with 16-bit
# precision is 312 teraFLOP/s"; HBM 2039 GB/s (NVIDIA A100 80GB SXM datasheet).
A100 = GPU(
    name="a100-test",
    vendor="nvidia",
    memory_gib=80,
    hbm_bandwidth_gbps=2039.0,
    peaks_tflops=(("fp32", 19.5), ("bf16", 312.0)),
    nvlink_gbps=300,
    pcie_gen=4,
    tdp_w=400,
)

# GPT-3 175B shape (Brown et al. 2020 table 2.1; Narayanan et al. 2021 sec. 5.3.2: 96 layers,
# 96 heads, hidden 12288; vocabulary 51,200 in their runs, sec. 5.1).
GPT3 = ModelSpec(
    name="gpt3-175b", n_layers=96, hidden=12288, n_heads=96, vocab=51200, max_seq=2048, bias=False
)

# PaLM 540B shape (Chowdhery et al. 2022 table 1): 118 layers, d_model 18432, 48 heads of 256,
# multi-query attention, SwiGLU with d_ff = 4 d_model, 256k shared (tied) vocabulary, no biases.
PALM = ModelSpec(
    name="palm-540b",
    n_layers=118,
    hidden=18432,
    n_heads=48,
    n_kv_heads=1,
    head_dim=256,
    ffn_hidden=73728,
    vocab=256000,
    max_seq=2048,
    tied_embeddings=True,
    mlp="swiglu",
    norm="layernorm",
    position="rope",
    bias=False,
)

small_models = st.builds(
    lambda L, heads, d, mult, V: ModelSpec(
        name="h",
        n_layers=L,
        hidden=heads * d,
        n_heads=heads,
        ffn_hidden=mult * heads * d,
        vocab=V,
        max_seq=4096,
    ),
    st.integers(1, 8),
    st.integers(1, 16),
    st.sampled_from([8, 16, 64]),
    st.integers(1, 4),
    st.integers(16, 5000),
)


# ---------------------------------------------------------------- FLOPs per token
@given(n=st.floats(1e3, 1e13), s=st.integers(1, 32768))
def test_dense_train_is_6n_prefill_2n_recompute_adds_2n(n, s):
    train = flops_per_token(n_params=n, seq_len=s)
    assert train.model_flops == pytest.approx(6 * n)
    assert train.get("dense_forward") == pytest.approx(2 * n) and train.get(
        "dense_backward"
    ) == pytest.approx(4 * n)
    assert flops_per_token(n_params=n, seq_len=s, mode="prefill").model_flops == pytest.approx(2 * n)
    full = flops_per_token(n_params=n, seq_len=s, recompute="full")
    assert full.model_flops == pytest.approx(6 * n)
    assert full.hardware_flops - full.model_flops == pytest.approx(2 * n)  # 8N with full recompute
    assert train.note  # no attention term without shapes, and it says so


@settings(max_examples=40, deadline=None)
@given(model=small_models, s=st.integers(1, 4096))
def test_causal_halves_attention_and_palm_term(model, s):
    full = flops_per_token(model, seq_len=s, causal=False)
    causal = flops_per_token(model, seq_len=s, causal=True)
    attn = lambda f: f.get("attention_forward") + f.get("attention_backward")  # noqa: E731
    assert attn(full) == pytest.approx(
        12 * model.n_layers * model.n_heads * model.head_dim * s
    )  # PaLM 12LHQT
    assert attn(causal) == pytest.approx(attn(full) / 2)
    # the dense part does not depend on the mask
    assert full.get("dense_forward") == causal.get("dense_forward") == 2 * layer_matmul_params(model)


@settings(max_examples=30, deadline=None)
@given(model=small_models, s=st.integers(2, 2048))
def test_recompute_ordering_and_mfu_le_hfu(model, s):
    f = {r: flops_per_token(model, seq_len=s, recompute=r) for r in ("none", "selective", "full")}
    assert f["none"].model_flops == f["selective"].model_flops == f["full"].model_flops
    assert f["none"].hardware_flops < f["selective"].hardware_flops < f["full"].hardware_flops
    # selective replays exactly the attention forward (QK^T and AV)
    assert f["selective"].hardware_flops - f["none"].hardware_flops == pytest.approx(
        f["none"].get("attention_forward")
    )


def test_decode_and_prefill_terms():
    f = flops_per_token(GPT3, seq_len=2048, mode="decode", context=1000)
    n = layer_matmul_params(GPT3)
    assert f.get("dense_forward") == 2 * n
    assert f.get("attention_forward") == 4 * 96 * 96 * 128 * 1000  # 4 L H Q context
    assert f.hardware_flops == f.model_flops  # no backward, no recompute
    longer = flops_per_token(GPT3, seq_len=2048, mode="decode", context=2000)
    assert longer.get("attention_forward") == 2 * f.get("attention_forward")
    pre = flops_per_token(GPT3, seq_len=2048, mode="prefill", causal=True)
    assert pre.get("attention_forward") == 2 * 96 * 96 * 128 * 2048  # causal: T/2 keys on average
    with pytest.raises(ValueError, match="recompute must be none"):
        flops_per_token(GPT3, seq_len=8, mode="decode", recompute="full")


# ---------------------------------------------------------------- sliding-window attention
# Mistral 7B v0.1's shape with its window (Jiang et al. 2023, arXiv:2310.06825, Table 1 and sec. 2: W = 4096).
def mistral(window: int | None = 4096) -> ModelSpec:
    return ModelSpec(
        name="mistral-like",
        n_layers=32,
        hidden=4096,
        n_heads=32,
        n_kv_heads=8,
        ffn_hidden=14336,
        vocab=32000,
        max_seq=32768,
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        bias=False,
        sliding_window=window,
    )


@settings(max_examples=80, deadline=None)
@given(s=st.integers(1, 10**6), w=st.integers(1, 10**6))
def test_mean_attended_keys_is_the_causal_half_without_a_window_and_never_more(s, w):
    """W >= s reproduces today's causal convention s/2 exactly; a window never adds keys; the mean of
    min(x, W) over x in [0, s] is W - W^2/(2s) (Jiang et al. 2023 sec. 2)."""
    spec = ModelSpec(name="w", n_layers=1, hidden=64, n_heads=4, max_seq=2 * 10**6, sliding_window=w)
    full = ModelSpec(name="w", n_layers=1, hidden=64, n_heads=4, max_seq=2 * 10**6)
    assert full.mean_attended_keys(s) == s / 2
    assert spec.mean_attended_keys(s) <= s / 2
    if w >= s:
        assert spec.mean_attended_keys(s) == s / 2
    else:
        assert spec.mean_attended_keys(s) == pytest.approx(w - w * w / (2 * s))
        assert w / 2 <= spec.mean_attended_keys(s) <= w
    assert spec.kv_tokens(s) == min(s, w) and full.kv_tokens(s) == s


def test_sliding_window_caps_the_attention_flops():
    win, full = mistral(), mistral(None)
    attn = lambda m, **kw: flops_per_token(m, **kw).get("attention_forward")  # noqa: E731
    # within the window: today's numbers exactly, training and decode
    for s in (1, 1000, 4096):
        assert attn(win, seq_len=s) == attn(full, seq_len=s)
        assert attn(win, seq_len=s, mode="decode", context=s) == attn(
            full, seq_len=s, mode="decode", context=s
        )
    # Mistral's 8192-token pretraining: the mean token sees 4096 - 4096^2 / (2 x 8192) = 3072 keys, not 4096
    assert attn(win, seq_len=8192) == 4 * 32 * 4096 * 3072 == attn(full, seq_len=8192) * 3 / 4
    # decode: one query against min(context, 4096) cached keys
    assert attn(win, seq_len=1, mode="decode", context=32768) == 4 * 32 * 4096 * 4096
    assert attn(full, seq_len=1, mode="decode", context=32768) == 8 * attn(
        win, seq_len=1, mode="decode", context=32768
    )
    # causal=False is the full s x s matrix (PaLM's count; what an eager kernel computes): no window there
    assert attn(win, seq_len=8192, causal=False) == attn(full, seq_len=8192, causal=False)
    f = flops_per_token(win, seq_len=8192)
    assert "sliding window of 4096" in f.note and "Jiang et al. 2023" in f.note
    assert not flops_per_token(win, seq_len=4096).note
    # the decode roofline's attention reads the window too
    r = roofline_layer(win, 1, 1, mode="decode", context=32768, peak_tflops=989.4, bandwidth_gbps=3350)
    assert dict((o.name, o.k) for o in r.ops)["attn_values"] == 4096


def test_cli_flops_names_the_sliding_window(capsys):
    rc, out, _ = run_cli(capsys, "flops", "--model", "mistral-7b", "--seq-len", "8192")
    assert rc == 0 and "sliding window 4096 (mean 3072 keys per token)" in out and "Jiang et al. 2023" in out
    rc, out, _ = run_cli(capsys, "flops", "--model", "llama-3-8b", "--seq-len", "8192")
    assert rc == 0 and "sliding window" not in out
    rc, out, _ = run_cli(
        capsys, "train-time", "--model", "mistral-7b", "--tokens", "1T", "--gpu", "h100-sxm", "--gpus", "64"
    )  # pretrained at 8192 tokens: the window shapes the attention FLOPs
    assert rc == 0 and out.count("sliding window of 4096 tokens") == 1


@pytest.mark.parametrize("bad", [0, -1, 2.5, "x", True, float("nan")])
def test_sliding_window_must_be_a_positive_integer_or_none(bad):
    with pytest.raises(ValueError, match="sliding_window must be a positive integer") as e:
        mistral(bad)
    assert "\n" not in str(e.value)
    assert mistral(4096.0).sliding_window == 4096  # 4096.0 -> 4096, as the other ints


def test_bad_inputs_are_one_line_value_errors():
    for kw in (
        dict(seq_len=8),
        dict(n_params=1e9, seq_len=0),
        dict(n_params=-1, seq_len=8),
        dict(n_params=1e9, seq_len=8, recompute="some"),
        dict(n_params=1e9, seq_len=8, mode="infer"),
        dict(n_params=1e9, seq_len=8, include_embeddings=True),
        dict(n_params=1e9, seq_len=8, n_layers=2),
    ):
        with pytest.raises(ValueError) as e:
            flops_per_token(**kw)
        assert "\n" not in str(e.value)


def test_flags_that_would_be_ignored_are_errors(capsys):
    """With a model, n_layers/hidden were ignored; context outside decode was ignored; a decode
    context beyond gpt2's 1024 learned positions was computed (only seq_len was checked)."""
    with pytest.raises(ValueError, match="n_layers and hidden go with n_params"):
        flops_per_token(GPT3, seq_len=8, n_layers=4, hidden=64)
    with pytest.raises(ValueError, match="context applies to mode decode"):
        flops_per_token(GPT3, seq_len=8, context=4)
    from gpukit.cli import main

    for argv, word in (
        (["--seq-len", "1024", "--layers", "4", "--hidden", "64"], "--layers"),
        (["--seq-len", "1024", "--context", "512"], "--context"),
        (["--seq-len", "1024", "--mode", "decode", "--context", "2048"], "context window 1024"),
        (["--seq-len", "1024", "--mode", "decode", "--no-causal"], "--no-causal"),
    ):
        assert main(["flops", "--model", "gpt2", *argv]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and word in err, err


def test_cli_roofline_layer_context_and_attention_assumption(capsys):
    """roofline --model: --context outside decode was ignored and a decode --context past gpt2's 1024
    learned positions was computed; prefill names its eager-attention assumption (scores via HBM)."""
    from gpukit.cli import main

    base = ["roofline", "--gpu", "h100-sxm", "--model", "gpt2", "--seq-len", "512"]
    for extra, word in (
        (["--context", "4096"], "--context applies to --mode decode"),
        (["--mode", "decode", "--context", "4096"], "context window 1024"),
    ):
        assert main(base + extra) == 2
        assert word in capsys.readouterr().err
    assert main(base) == 0
    assert "assumes: attn_scores and attn_values are separate matmuls" in capsys.readouterr().out


def test_cli_flops_text_says_what_n_counts(capsys):
    """The text showed 4.83e10 for llama-3-8b (8.03B parameters) without saying that N is the 6.98B
    layer matmul weights, the LM head left out and attention causal; the JSON alone had n_params."""
    from gpukit.cli import main

    assert main(["flops", "--model", "llama-3-8b", "--seq-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert "N = 6.979e+09 matmul weights" in out and "LM head is not counted" in out and "causal" in out


def test_palm_540b_mfu_matches_the_paper():
    """PaLM sec. 4.1: 238.3K tokens/s on 6144 TPU v4 (275 TFLOP/s bf16 peak each); 'The MFU of PaLM 540B
    is 45.7% without self-attention or 46.2% with it.' Appendix B: 6N + 12LHQT, N = 540.35B."""
    f = flops_per_token(PALM, seq_len=2048, causal=False, include_embeddings=True)
    assert (f.n_params + f.lm_head_params) / 1e9 == pytest.approx(540.35, abs=0.01)
    peak = 6144 * 275e12
    assert mfu(238.3e3 * f.model_flops, peak) == pytest.approx(0.462, abs=0.0005)
    dense_only = (
        f.get("dense_forward")
        + f.get("dense_backward")
        + f.get("lm_head_forward")
        + f.get("lm_head_backward")
    )
    assert mfu(238.3e3 * dense_only, peak) == pytest.approx(0.457, abs=0.0005)


def test_megatron_eq3_exactly():
    """Narayanan et al. 2021 eq. 3: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) per iteration, with full
    recompute, full attention and the logit layer."""
    B, s, l, h, V = 1536, 2048, 96, 12288, 51200  # noqa: E741 (the paper's symbols)
    sf = step_flops(GPT3, s, B * s, causal=False, include_embeddings=True, recompute="full")
    assert sf.hardware_flops == pytest.approx(
        96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)), rel=1e-12
    )
    # model FLOPs (no recompute) are Korthikanti et al. 2022's 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
    assert sf.model_flops == pytest.approx(
        72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12
    )


def test_narayanan_time_to_train_examples():
    """Narayanan et al. 2021 sec. 5.1, eq. 4 (8TP/(nX)): GPT-3 175B, 300B tokens, 1024 A100 at 140
    TFLOP/s -> '34 days'; 1T parameters, 450B tokens, 3072 A100 at 163 TFLOP/s -> '84 days'."""
    t = time_to_train(175e9, 300e9, A100, 1024, mfu=140 / 312, recompute="full")
    assert t.flops == pytest.approx(8 * 300e9 * 175e9)
    assert t.days == pytest.approx(34, abs=0.5)
    assert t.effective_tflops_per_gpu == pytest.approx(140)
    assert t.gpu_hours == pytest.approx(t.seconds * 1024 / 3600)
    assert t.mfu == pytest.approx(t.hfu * 6 / 8)  # model FLOPs are 6/8 of the executed ones
    assert time_to_train(1e12, 450e9, A100, 3072, mfu=163 / 312, recompute="full").days == pytest.approx(
        84, abs=1
    )
    # 3072 GPUs at 163 TFLOP/s: '52% of peak', 502 PFLOP/s aggregate (Table 1 row, sec. 5.1 text)
    assert hfu(achieved_tflops(502e15, 1.0, 3072) * 1e12, 312e12) == pytest.approx(0.52, abs=0.005)


def test_time_to_train_validation_and_sources():
    with pytest.raises(ValueError, match="mfu must be in"):
        time_to_train(1e9, 1e9, A100, 8, mfu=1.5)
    prof = profile_from_dict(_profile_dict())
    with pytest.raises(ValueError, match="not both"):
        time_to_train(1e9, 1e9, A100, 8, mfu=0.5, profile=prof)
    default = time_to_train(1e9, 1e9, A100, 8)
    assert default.utilization == DEFAULT_MFU and "assumed" in default.utilization_source
    p = time_to_train(1e9, 1e9, A100, 8, profile=prof, efficiency=0.5)
    assert p.utilization == pytest.approx(250.0 * 0.5 / 312)
    assert "measured bf16 matmul 250.0" in p.utilization_source and "0.50" in p.utilization_source
    with pytest.raises(ValueError, match="fp8"):
        time_to_train(1e9, 1e9, A100, 8, profile=prof, dtype="fp8")
    big = profile_from_dict({**_profile_dict(), "matmul_tflops": {"bf16": 900.0}})
    with pytest.raises(ValueError, match="another device"):
        time_to_train(1e9, 1e9, A100, 8, profile=big)
    # with a ModelSpec the attention and LM-head terms come in: more FLOPs than 6N
    spec = time_to_train(GPT3, 300e9, A100, 1024, mfu=0.45)
    assert spec.model_flops > 6 * layer_matmul_params(GPT3) * 300e9


@pytest.mark.parametrize("dtype", ["int8", "int4", "nf4"])
def test_time_to_train_refuses_integer_dtypes(dtype):
    """--dtype int8 timed a training run at the catalog's int8 TOPS (H100: 1978.9) as if they were FLOP/s."""
    with pytest.raises(ValueError, match="dtype must be a floating-point format"):
        time_to_train("llama-2-7b", 2e12, "h100-sxm", 8, dtype=dtype)


def test_train_time_with_n_params_says_what_it_counts(capsys):
    """--params: the text did not say that it counts 6N (8N with full recompute) and no attention (the
    JSON did); selective recompute, which replays only attention, changed nothing and is an error."""
    from gpukit.cli import main

    assert (
        main(["train-time", "--params", "70B", "--tokens", "1.4T", "--gpu", "a100-80gb", "--gpus", "1024"])
        == 0
    )
    assert "6N per token, n_params only: no attention term" in capsys.readouterr().out
    assert "8N per token" in time_to_train(70e9, 1.4e12, A100, 1024, recompute="full").to_text()
    with pytest.raises(ValueError, match="recompute selective replays the attention"):
        time_to_train(70e9, 1.4e12, A100, 1024, recompute="selective")


def test_time_to_train_counts_the_lm_head_like_parallel_estimate():
    """The LM head is a real h x V matmul every token (Narayanan et al. 2021 eq. 3's V/(16lh) term; PaLM's
    N includes it). train-time left it out by default: gpt2 5.662e17 FLOPs per 1B tokens instead of
    7.978e17 (29% of the work), while gpukit.parallel.estimate counted it for the same model."""
    from gpukit import parallel as par

    t = time_to_train("gpt2", 1e9, A100, 1)
    with_head = flops_per_token("gpt2", seq_len=1024, include_embeddings=True)
    assert t.model_flops == pytest.approx(1e9 * with_head.model_flops)
    assert t.lm_head_params == 50257 * 768 and "LM head 3.86e+07" in t.to_text()
    e = par.estimate(
        "gpt2", par.ParallelConfig(), par.make_cluster("a100-80gb", 8), global_batch=8, seq_len=1024
    )
    assert e.tflops_per_gpu * 1e12 * e.step_time_s / (8 * 1024) == pytest.approx(with_head.model_flops)
    without = time_to_train("gpt2", 1e9, A100, 1, include_embeddings=False)
    assert "LM head not counted" in without.to_text() and without.model_flops < 0.75 * t.model_flops


@pytest.mark.parametrize(
    "args, field",
    [
        ((-1, 1e9, "h100-sxm", 0.4), "seconds"),
        ((float("nan"), 1e9, "h100-sxm", 0.4), "seconds"),
        ((3600, 1e9, "h100-sxm", 1.5), "mfu"),
        ((3600, 1e9, "h100-sxm", 0.4, 0), "n_gpus"),
        ((3600, 1e9, "h100-sxm", 0.4, 1, 0), "flops_per_param"),
    ],
)
def test_tokens_for_time_bad_input(args, field):
    """Negative seconds gave negative tokens, mfu 1.5 was taken, flops_per_param 0 a ZeroDivisionError."""
    from gpukit.compute import tokens_for_time

    with pytest.raises(ValueError, match=field):
        tokens_for_time(*args)


def test_tokens_for_time_uses_the_gpus_16_bit_format():
    """V100 has no bf16 peak: tokens_for_time raised; it uses fp16 there, as time_to_train does."""
    from gpukit.compute import tokens_for_time

    t = tokens_for_time(3600, 1e9, "v100-32gb", 0.4)
    assert t == pytest.approx(3600 * 125e12 * 0.4 / 6e9)
    assert time_to_train(1e9, t, "v100-32gb", 1, mfu=0.4).seconds == pytest.approx(3600)


def test_mfu_with_recompute_is_said_to_be_the_hfu(capsys):
    """`--mfu 0.4 --recompute full` printed 'given utilization 0.400 ... MFU 30.0%': the utilization is
    applied to the executed FLOPs (Narayanan et al. 2021 eq. 4's X), so it is the HFU; the text says so."""
    t = time_to_train(1e9, 1e9, A100, 8, mfu=0.4, recompute="full")
    assert t.hfu == pytest.approx(0.4) and t.mfu == pytest.approx(0.3)
    assert "it is the HFU" in t.utilization_source and "0.750 x" in t.utilization_source
    assert "HFU" not in time_to_train(1e9, 1e9, A100, 8, mfu=0.4).utilization_source
    from gpukit.cli import main

    assert (
        main(
            [
                "train-time",
                "--model",
                "gpt2",
                "--tokens",
                "1e9",
                "--gpu",
                "a100-80gb",
                "--gpus",
                "1",
                "--recompute",
                "full",
                "--mfu",
                "0.4",
            ]
        )
        == 0
    )
    assert "it is the HFU" in capsys.readouterr().out


@settings(max_examples=30, deadline=None)
@given(n=st.floats(1e6, 1e12), tokens=st.floats(1e6, 1e13), gpus=st.integers(1, 4096), u=st.floats(0.05, 1.0))
def test_time_to_train_scales_inversely(n, tokens, gpus, u):
    a = time_to_train(n, tokens, A100, gpus, mfu=u)
    b = time_to_train(n, tokens, A100, gpus * 2, mfu=u)
    assert b.seconds == pytest.approx(a.seconds / 2)
    assert a.seconds == pytest.approx(6 * n * tokens / (gpus * 312e12 * u))


# ---------------------------------------------------------------- measured: torch's FLOP counter
def test_flops_match_torch_flop_counter_on_the_reference_model():
    """A measurement, not a timing: FlopCounterMode counts the matmul FLOPs the reference GPT really
    issues (eager attention computes the full s x s scores, hence causal=False)."""
    torch = pytest.importorskip("torch")
    from torch.utils.checkpoint import set_checkpoint_early_stop
    from torch.utils.flop_counter import FlopCounterMode

    from gpukit.bench.models import build_reference_model, make_batch, reference_spec

    torch.set_num_threads(1)
    spec = reference_spec(n_layers=2, hidden=64, n_heads=4, vocab=256, seq=64)
    tokens = 2 * 64

    def counted(recompute, early_stop=True):
        model = build_reference_model(spec, recompute=recompute)
        batch = make_batch(spec, 2, 64)
        fc = FlopCounterMode(display=False)
        with fc, set_checkpoint_early_stop(early_stop):
            model(*batch).backward()
        return fc.get_total_flops()

    pred = {
        r: flops_per_token(
            spec, seq_len=64, causal=False, include_embeddings=True, recompute=r
        ).hardware_flops
        * tokens
        for r in ("none", "full")
    }
    assert counted("none") == pred["none"]
    assert counted("full", early_stop=False) == pred["full"]
    # torch's non-reentrant checkpoint stops replaying once the saved tensors are back: the last
    # matmul of each block (MLP down projection, ffn x h) is not recomputed
    assert counted("full") == pred["full"] - 2 * spec.n_layers * spec.ffn_hidden * spec.hidden * tokens


# ---------------------------------------------------------------- roofline
def test_roofline_matmul_formula_and_bounds():
    r = roofline_matmul(8192, 8192, 8192, "bf16", A100)
    assert r.intensity_flop_per_byte == pytest.approx(2 * 8192**3 / (3 * 8192**2 * 2))
    assert r.ridge_flop_per_byte == pytest.approx(312e12 / 2039e9)
    assert r.bound == "compute" and r.attainable_tflops == 312.0
    v = roofline_matmul(1, 8192, 8192, "bf16", A100)  # a matrix-vector product
    assert v.bound == "memory" and v.intensity_flop_per_byte < 1.01
    assert v.time_s == v.memory_time_s > v.compute_time_s
    with pytest.raises(ValueError):
        roofline_matmul(0, 1, 1, "bf16", A100)
    with pytest.raises(ValueError, match="fp8"):
        roofline_matmul(8, 8, 8, "fp8", A100)


@given(
    m=st.integers(1, 1 << 14),
    n=st.integers(1, 1 << 14),
    k=st.integers(1, 1 << 14),
    dtype=st.sampled_from(["fp32", "bf16"]),
)
def test_roofline_attainable_is_min_of_roofs(m, n, k, dtype):
    r = roofline_matmul(m, n, k, dtype, A100)
    assert r.attainable_tflops == pytest.approx(min(r.peak_tflops, r.intensity_flop_per_byte * 2039e9 / 1e12))
    assert r.attainable_tflops <= r.peak_tflops
    assert (r.bound == "compute") == (r.intensity_flop_per_byte >= r.ridge_flop_per_byte)
    assert r.flops / r.time_s / 1e12 == pytest.approx(r.attainable_tflops)


@pytest.mark.parametrize("b", [1, 2, 4, 8, 16])
def test_decode_intensity_is_about_the_batch(b):
    r = roofline_layer(GPT3, 2048, b, "bf16", A100, mode="decode")
    for op in r.ops:
        if op.name in ("qkv", "attn_out", "mlp_up", "mlp_down"):
            assert op.intensity_flop_per_byte == pytest.approx(b, rel=0.01)
    assert r.memory_bound_time_share == 1.0  # far below the ridge (153 FLOP/B)
    pre = roofline_layer(GPT3, 2048, b, "bf16", A100)
    assert pre.ops[0].bound == "compute" and pre.attainable_tflops > r.attainable_tflops


# ---------------------------------------------------------------- profile contract
def _profile_dict():
    return {
        "version": 1,
        "device": {"name": "test-gpu", "kind": "cuda"},
        "matmul_tflops": {"fp32": 19.0, "bf16": 250.0},
        "memory_bandwidth_gbps": {"copy": 1800.0, "triad": 1700.0},
        "links": {"nvlink-test": {"alpha_us": 8.0, "beta_gbps": 200.0}},
        "env": {"torch": "2.13"},
    }


def test_load_profile_and_errors(tmp_path):
    good = tmp_path / "p.json"
    good.write_text(json.dumps(_profile_dict()))
    p = load_profile(good)
    assert p.matmul_tflops("bf16") == 250.0 and p.link("nvlink-test").alpha_s == pytest.approx(8e-6)
    assert p.memory_bandwidth_gbps("triad") == 1700.0 and p.device_name == "test-gpu"
    assert profile_from_dict(p.to_json_dict()).to_json_dict() == p.to_json_dict()
    cases = [
        ("matmul_tflops", None, "missing key 'matmul_tflops'"),
        ("version", 2, "version must be 1"),
        ("links", {"x": {"alpha_us": 1}}, "links['x'] is missing key 'beta_gbps'"),
        ("matmul_tflops", {"bf16": -3}, "matmul_tflops['bf16']"),
        ("env", [], "env must be an object"),
    ]
    for key, value, msg in cases:
        d = _profile_dict()
        if value is None:
            del d[key]
        else:
            d[key] = value
        bad = tmp_path / f"bad-{key}.json"
        bad.write_text(json.dumps(d))
        with pytest.raises(ValueError) as e:
            load_profile(bad)
        assert str(bad) in str(e.value) and msg in str(e.value)
    broken = tmp_path / "broken.json"
    broken.write_text("{nope")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_profile(broken)
    with pytest.raises(ValueError, match="not found"):
        load_profile(tmp_path / "missing.json")


# ---------------------------------------------------------------- CLI
@pytest.fixture
def catalog_dir(tmp_path, monkeypatch):
    """A tiny catalog (fixture rows, values from the cited datasheets) so the CLI tests do not depend on
    gpukit/data/*.csv."""
    prov = "test fixture,https://www.nvidia.com/en-us/data-center/a100/,2025-01-01"
    (tmp_path / "gpus.csv").write_text(
        "name,vendor,memory_gib,hbm_bandwidth_gbps,fp32_tflops,tf32_tflops,bf16_tflops,fp16_tflops,fp8_tflops,"
        "int8_tops,nvlink_gbps,pcie_gen,tdp_w,source,source_url,accessed\n"
        f"a100-80gb,nvidia,80,2039,19.5,156,312,312,,624,300,4,400,{prov}\n"
    )
    (tmp_path / "interconnects.csv").write_text(
        "name,kind,scope,bandwidth_gbps,latency_us,source,source_url,accessed\n"
        f"nvlink3,nvlink,intra-node,300,3,{prov}\n"
    )
    (tmp_path / "models.csv").write_text(
        "name,n_layers,hidden,n_heads,n_kv_heads,ffn_hidden,vocab,max_seq,train_seq_len,tied_embeddings,mlp,norm,"
        "position,bias,arch,dropout,published_params,source,source_url,accessed,train_source\n"
        f"gpt3-175b,96,12288,96,96,49152,50257,2048,2048,true,gelu,layernorm,learned,true,decoder,true,175000000000,"
        f"{prov},Brown et al. 2020 sec. 2.1\n"
    )
    monkeypatch.setenv("GPUKIT_DATA", str(tmp_path))
    return tmp_path


_run = run_cli


def test_cli_train_time_json(catalog_dir, capsys):
    rc, out, err = _run(
        capsys,
        "train-time",
        "--params",
        "175B",
        "--tokens",
        "300B",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "1024",
        "--mfu",
        str(140 / 312),
        "--recompute",
        "full",
        "--json",
    )
    assert rc == 0, err
    d = json.loads(out)
    for key in ("flops", "seconds", "days", "gpu_hours", "mfu", "hfu", "effective_tflops_per_gpu"):
        assert key in d
    assert d["days"] == pytest.approx(34, abs=0.5) and d["flops"] == pytest.approx(4.2e23)
    rc, out, _ = _run(
        capsys,
        "train-time",
        "--model",
        "gpt3-175b",
        "--tokens",
        "3e11",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "1024",
    )
    assert rc == 0 and "days" in out and "assumed" in out


BASE = ["train-time", "--params", "7B", "--tokens", "1T", "--gpu", "a100-80gb"]


@pytest.mark.parametrize(
    "argv",
    [
        BASE + ["--gpus", "8", "--mfu", "1.5"],
        BASE + ["--gpus", "8", "--mfu", "0"],
        BASE + ["--gpus", "8", "--mfu", "x"],
        BASE + ["--gpus", "0"],
        BASE + ["--gpus", "8", "--tokens", "12Q"],
        ["train-time", "--params", "7B", "--tokens", "1T", "--gpu", "a100-80", "--gpus", "8"],
        BASE + ["--gpus", "8", "--mfu", "0.4", "--profile", "p.json"],
        BASE + ["--gpus", "8", "--efficiency", "0.5"],
        BASE + ["--gpus", "8", "--profile", "missing.json"],
        ["train-time", "--tokens", "1T", "--gpu", "a100-80gb", "--gpus", "8"],
    ],
)
def test_cli_train_time_bad_input_exit_2(catalog_dir, capsys, argv):
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_cli_train_time_profile(catalog_dir, capsys, tmp_path):
    prof = tmp_path / "prof.json"
    prof.write_text(json.dumps(_profile_dict()))
    rc, out, err = _run(
        capsys,
        "train-time",
        "--params",
        "7B",
        "--tokens",
        "1T",
        "--gpu",
        "a100-80gb",
        "--gpus",
        "8",
        "--profile",
        str(prof),
        "--efficiency",
        "0.6",
        "--json",
    )
    assert rc == 0, err
    d = json.loads(out)
    assert d["utilization"] == pytest.approx(250 * 0.6 / 312) and "test-gpu" in d["utilization_source"]


def test_cli_flops_and_roofline(catalog_dir, capsys):
    rc, out, err = _run(capsys, "flops", "--params", "1e9", "--seq-len", "2048", "--json")
    assert rc == 0, err
    assert json.loads(out)["model_flops"] == pytest.approx(6e9)
    rc, out, _ = _run(
        capsys, "flops", "--model", "gpt3-175b", "--seq-len", "2048", "--mode", "decode", "--json"
    )
    assert rc == 0 and json.loads(out)["mode"] == "decode"
    rc, out, _ = _run(
        capsys, "roofline", "--gpu", "a100-80gb", "--m", "1", "--n", "4096", "--k", "4096", "--json"
    )
    assert rc == 0 and json.loads(out)["bound"] == "memory"
    rc, out, _ = _run(capsys, "roofline", "--gpu", "a100-80gb", "--model", "gpt3-175b", "--seq-len", "2048")
    assert rc == 0 and "attn_scores" in out
    rc, _, err = _run(capsys, "roofline", "--gpu", "a100-80gb", "--m", "8")
    assert rc == 2 and "--n" in err


def test_real_catalog_reproduces_narayanan(capsys):
    """With gpukit/data/*.csv (the catalog's own parameter counts): GPT-3 175B -> ~34 days, Megatron 1T
    (1008B) -> ~84 days (Narayanan et al. 2021 sec. 5.1)."""
    from gpukit.catalog import data_dir

    if not (data_dir() / "models.csv").exists() or not (data_dir() / "gpus.csv").exists():
        pytest.skip("gpukit/data/models.csv or gpukit/data/gpus.csv not written yet")
    for model, tokens, gpus, x, days in (
        ("gpt3-175b", "300B", "1024", 140, 34),
        ("megatron-1t", "450B", "3072", 163, 84),
    ):
        from gpukit.catalog import get_model

        rc, out, err = _run(
            capsys,
            "train-time",
            "--params",
            str(get_model(model).n_params),
            "--tokens",
            tokens,
            "--gpu",
            "a100-80gb",
            "--gpus",
            gpus,
            "--mfu",
            str(x / 312),
            "--recompute",
            "full",
            "--json",
        )
        assert rc == 0, err
        assert json.loads(out)["days"] == pytest.approx(days, abs=0.5)


@pytest.mark.parametrize(
    "text,value",
    [
        ("2e12", 2e12),
        ("2T", 2e12),
        ("300B", 3e11),
        ("1.5M", 1.5e6),
        ("10k", 1e4),
        ("2_000", 2000.0),
        ("7G", 7e9),
    ],
)
def test_parse_count(text, value):
    assert parse_count(text) == value


@pytest.mark.parametrize("text", ["", "B", "-3B", "0", "3X", "1e400"])
def test_parse_count_rejects(text):
    with pytest.raises(ValueError):
        parse_count(text)


def test_frames_and_json_dicts():
    f = flops_per_token(GPT3, seq_len=2048, recompute="full", include_embeddings=True)
    df = f.to_frame()
    assert list(df["part"])[0] == "dense_forward" and df["share"].sum() == pytest.approx(1.0)
    assert df["flops_per_token"].sum() == pytest.approx(f.hardware_flops)
    layer = roofline_layer(GPT3, 2048, 2, "bf16", A100)
    assert list(layer.to_frame()["name"]) == [
        "qkv",
        "attn_scores",
        "attn_values",
        "attn_out",
        "mlp_up",
        "mlp_down",
    ]
    t = time_to_train(GPT3, 1e9, A100, 8, mfu=0.5)
    assert "days" in set(t.to_frame()["quantity"]) and t.to_json_dict()["seq_len"] == 2048
    sf = step_flops(GPT3, 2048, 2048 * 8)
    assert sf.to_frame()["flops_per_step"].sum() == pytest.approx(sf.hardware_flops)
    for obj in (f, layer, t, sf, roofline_matmul(64, 64, 64, "fp32", A100)):
        json.dumps(obj.to_json_dict(), allow_nan=False)
