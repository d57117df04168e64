"""gpukit.inference: memory, roofline step times, TP/PP, replicas, simulation, cost, published figures, CLI."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpukit import inference as inf
from gpukit.catalog import get_gpu, get_interconnect, get_model
from gpukit.cli import main
from gpukit.units import GB, GiB

H100 = get_gpu("h100-sxm")
L8 = get_model("llama-3-8b")
L70 = get_model("llama-3.1-70b")
DECODERS = ("llama-3-8b", "llama-2-7b", "mistral-7b", "llama-3.1-70b", "gpt2", "opt-1.3b", "qwen2.5-7b")


# ------------------------------------------------------------------------------------ memory
def test_kv_cache_per_token_gqa():
    # Llama 3 8B: 2 x 32 layers x 8 kv heads x 128 x 2 B = 131072 B (128 KiB); Llama 2 7B has 32 kv heads: 4x
    assert inf.kv_bytes_per_token(L8, "bf16") == 2 * 32 * 8 * 128 * 2 == 131072
    assert inf.kv_bytes_per_token(get_model("llama-2-7b"), "bf16") == 4 * 131072
    assert inf.kv_bytes_per_token(L8, "fp8") == 131072 / 2
    assert inf.kv_bytes_per_token(L8, "bf16", tp=2) == 131072 / 2
    assert inf.kv_bytes_per_token(L8, "bf16", tp=16) == 131072 / 8  # kv heads replicated past 8


def test_weights_by_precision_use_quant_constants():
    lin, rows = L8.linear_weights
    rest = 2 * (L8.layer_params() - lin)
    assert inf.layer_weight_bytes(L8, "bf16") == 2 * lin + rest
    assert inf.layer_weight_bytes(L8, "int8") == lin + 4 * rows + rest
    assert inf.layer_weight_bytes(L8, "int4") == pytest.approx(lin * (0.5 + 0.127 / 8) + rest, rel=1e-3)
    assert inf.layer_weight_bytes(L8, "fp8") == lin + 4 * 7 + rest
    # whole bf16 model = 2 bytes per parameter
    assert inf.weights_per_gpu(L8, "bf16") == 2 * L8.n_params


def test_largest_batch_that_fits_is_consistent():
    m = inf.serving_memory(L8, H100, context=4096)
    assert m.max_batch >= 1
    fits = inf.serving_memory(L8, H100, context=4096, batch=m.max_batch)
    over = inf.serving_memory(L8, H100, context=4096, batch=m.max_batch + 1)
    assert fits.fits and not over.fits
    assert m.usable_bytes == 0.9 * H100.memory_bytes
    assert inf.serving_memory(L70, H100).max_batch == 0 and not inf.serving_memory(L70, H100).fits


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(DECODERS), ctx=st.integers(1, 4096), b=st.integers(1, 64), k=st.integers(2, 5))
def test_kv_cache_linear_in_context_and_batch(name, ctx, b, k):
    """Linear in the tokens cached: the context, up to the sliding window where there is one (mistral-7b)."""
    m = get_model(name)
    base = inf.serving_memory(m, H100, context=ctx, batch=b).kv_cache_bytes
    grown = m.kv_tokens(k * ctx) / m.kv_tokens(ctx)  # k without a window
    assert inf.serving_memory(m, H100, context=k * ctx, batch=b).kv_cache_bytes == pytest.approx(grown * base)
    assert inf.serving_memory(m, H100, context=ctx, batch=k * b).kv_cache_bytes == pytest.approx(k * base)


# Mistral 7B v0.1: sliding window W = 4096 (Jiang et al. 2023, arXiv:2310.06825, sec. 2: the rolling buffer
# cache "reduces the cache memory usage by 8x" on a sequence of 32k tokens)
MISTRAL = get_model("mistral-7b")


def full_attention(m):
    """The same shape attending to every previous token."""
    return replace(m, sliding_window=None)


@pytest.mark.parametrize("b", [1, 8])
def test_sliding_window_kv_cache_is_an_eighth_at_32k(b):
    win = inf.serving_memory(MISTRAL, H100, context=32768, batch=b)
    full_m = full_attention(MISTRAL)
    full = inf.serving_memory(full_m, H100, context=32768, batch=b)
    assert win.kv_cache_bytes * 8 == full.kv_cache_bytes  # the paper's 8x
    assert win.kv_cache_bytes == b * 4096 * inf.kv_bytes_per_token(MISTRAL) and win.kv_tokens == 4096
    assert win.max_batch > 7 * full.max_batch
    for ctx in (1, 1000, 4096):  # within the window: nothing changes
        w, f = (inf.serving_memory(m, H100, context=ctx, batch=b) for m in (MISTRAL, full_m))
        assert w.kv_cache_bytes == f.kv_cache_bytes and w.max_batch == f.max_batch
    # max_context: the KV cache stops growing at W, so once W fits the model's context window is the limit
    assert win.max_context == MISTRAL.max_seq
    # full attention: the tokens the budget holds, capped at the model's window (issue 23 sec. 5: it was
    # reported past max_seq, 477,402 tokens against 32,768)
    fit = int(full.kv_budget_bytes // (inf.kv_bytes_per_token(MISTRAL) * b))
    assert full.max_context == min(fit, full_m.max_seq)
    crowded = [inf.serving_memory(m, H100, context=32768, batch=200) for m in (MISTRAL, full_m)]
    assert (
        crowded[0].max_context == crowded[1].max_context < 4096
    )  # W does not fit at batch 200: the budget limits
    # the training-style estimate (gpukit.memory, inference=True) caps its KV cache the same way
    from gpukit import memory as mem

    setup = mem.TrainSetup(inference=True, seq_len=32768, batch=b)
    assert (
        mem.estimate_memory(MISTRAL, setup=setup).kv_cache_bytes * 8
        == mem.estimate_memory(full_m, setup=setup).kv_cache_bytes
    )


@settings(max_examples=60, deadline=None)
@given(c1=st.integers(1, 40000), c2=st.integers(1, 40000), b=st.integers(1, 64))
def test_decode_kv_reads_stop_growing_at_the_window(c1, c2, b):
    lo, hi = sorted((c1, c2))
    step = lambda ctx: inf.decode_step(MISTRAL, H100, batch=b, context=ctx)  # noqa: E731
    assert step(lo).attn_bytes <= step(hi).attn_bytes and step(lo).attn_flops <= step(hi).attn_flops
    assert step(hi).time_s >= step(lo).time_s
    if lo >= 4096:  # beyond the window: the same 4096 cached tokens are read, whatever the context
        assert step(lo).attn_bytes == step(hi).attn_bytes == step(4096).attn_bytes
        assert step(lo).attn_flops == step(hi).attn_flops == step(4096).attn_flops
    assert step(hi).attn_bytes == b * min(hi, 4096) * inf.kv_bytes_per_token(MISTRAL)


def test_sliding_window_prefill():
    """A 32k prompt writes the 4096 positions the cache keeps and attends to 4096 - 4096^2 / (2 x 32768) = 3840
    keys per token on average, not 16384."""
    full_m = full_attention(MISTRAL)
    win = inf.prefill_step(MISTRAL, H100, prompt_tokens=32768)
    full = inf.prefill_step(full_m, H100, prompt_tokens=32768)
    assert win.attn_bytes * 8 == full.attn_bytes
    assert win.attn_flops == pytest.approx(full.attn_flops * 3840 / 16384)
    same = [inf.prefill_step(m, H100, prompt_tokens=4096) for m in (MISTRAL, full_m)]
    assert same[0] == same[1]


def test_cli_serve_names_the_sliding_window(capsys):
    assert (
        main(["serve", "--model", "mistral-7b", "--gpu", "h100-sxm", "--context", "32768", "--batch", "8"])
        == 0
    )
    out = capsys.readouterr().out
    assert out.count("sliding window of 4096 tokens") == 1 and "Jiang et al. 2023" in out
    assert "KV 4.0" in out  # 8 x 4096 tokens x 128 KiB, not 8 x 32768
    assert main(["serve", "--model", "mistral-7b", "--gpu", "h100-sxm", "--context", "32768", "--json"]) == 0
    assert any("sliding window" in n for n in json.loads(capsys.readouterr().out)["notes"])
    for argv in (
        ["--model", "mistral-7b", "--context", "4096"],
        ["--model", "llama-2-7b", "--context", "4096"],
    ):
        assert main(["serve", "--gpu", "h100-sxm", *argv]) == 0
        assert "sliding window" not in capsys.readouterr().out


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(DECODERS),
    prec=st.sampled_from(inf.PRECISIONS),
    ctx=st.integers(16, 2048),
    b=st.integers(1, 32),
)
def test_tp_never_raises_per_gpu_memory(name, prec, ctx, b):
    m = get_model(name)
    prev = None
    for tp in (1, 2, 4, 8):
        if m.n_heads % tp or (m.n_kv_heads % tp and tp % m.n_kv_heads):
            continue
        cur = inf.serving_memory(m, H100, precision=prec, tp=tp, context=ctx, batch=b).total_bytes
        if prev is not None:
            assert cur <= prev
        prev = cur


# ------------------------------------------------------------------------------------ roofline
@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(DECODERS),
    prec=st.sampled_from(inf.PRECISIONS),
    b=st.integers(1, 512),
    ctx=st.integers(1, 1024),
    gpu=st.sampled_from(["h100-sxm", "a100-80gb", "l4", "h200"]),
    share=st.floats(0.1, 1.0),
)
def test_decode_never_faster_than_bandwidth_over_bytes(name, prec, b, ctx, gpu, share):
    m, g = get_model(name), get_gpu(gpu)
    a = inf.Assumptions(hbm_share=share)
    st_ = inf.decode_step(m, g, batch=b, context=ctx, precision=prec, assumptions=a)
    kv = inf.default_kv_dtype(g, prec)  # fp8 beside fp8 weights on fp8 GPUs (the engine default)
    bytes_read = inf.weight_bytes_read_per_step(m, prec) + b * ctx * inf.kv_bytes_per_token(m, kv)
    ceiling = b * g.hbm_bandwidth_gbps * GB / bytes_read  # tokens/s at 100% of HBM bandwidth
    assert b / st_.time_s <= ceiling * (1 + 1e-9)


def test_decode_bandwidth_bound_then_compute_bound():
    ridge = inf.ridge_batch(L8, H100)
    small = inf.decode_step(L8, H100, batch=1, context=1)
    big = inf.decode_step(L8, H100, batch=int(4 * ridge), context=1)
    assert small.bound == "memory" and big.bound == "compute"
    # bandwidth-bound: time ~ weight bytes / (share x bandwidth)
    expect = inf.weight_bytes_read_per_step(L8) / (0.65 * H100.hbm_bandwidth_gbps * GB)
    assert small.dense_s == pytest.approx(expect)
    # almost flat below the ridge, growing past it
    assert inf.decode_step(L8, H100, batch=8, context=1).time_s < 1.1 * small.time_s


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 512), ctx=st.integers(1, 8192), slow=st.floats(1e-4, 1.0))
def test_decode_attention_rate(b, ctx, slow):
    """attn_tflops (the one-row rate of decode attention's matrix-vector products): None is the dense
    rate; a slower attention rate never shortens the step and touches only the attention part."""
    peak = H100.peak_tflops("bf16")
    base = inf.decode_step(L8, H100, batch=b, context=ctx)
    same = inf.decode_step(L8, H100, batch=b, context=ctx, attn_tflops=peak)
    slower = inf.decode_step(L8, H100, batch=b, context=ctx, attn_tflops=peak * slow)
    assert same.time_s == pytest.approx(base.time_s)
    assert slower.attn_s >= base.attn_s * (1 - 1e-12) and slower.dense_s == base.dense_s
    # the attention part is at least its compute time at the given rate
    assert slower.attn_s >= slower.attn_flops / (peak * slow * 1e12 * inf.Assumptions().flops_share) * (
        1 - 1e-9
    )


def test_decode_attention_rate_bad_input():
    for bad in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="attn_tflops must be a finite number > 0"):
            inf.decode_step(L8, H100, batch=1, context=16, attn_tflops=bad)


def test_prefill_compute_bound_2n_flops():
    p = inf.prefill_step(L8, H100, prompt_tokens=2048)
    assert p.bound == "compute"
    from gpukit.compute import layer_matmul_params

    assert p.dense_flops == pytest.approx(2 * 2048 * layer_matmul_params(L8) + 2 * L8.vocab * L8.hidden)


def test_tp_adds_two_allreduces_per_layer():
    from gpukit.catalog import get_interconnect
    from gpukit.comm import cluster_network, network_all_reduce

    link = get_interconnect("nvlink4")
    d = inf.decode_step(L70, H100, batch=4, context=100, tp=4, link=link)
    # the one network model (issue 22): the TP group's link at the network's stated efficiency + base latency
    net = cluster_network(link, gpus_per_node=4, ports_per_node=4)
    one = network_all_reduce(4 * L70.hidden * 2, 4, net).time_s
    assert d.tp_comm_s == pytest.approx(2 * L70.n_layers * one)
    assert one < 20e-6  # latency-bound: microseconds for a 64 KB message on NVLink
    with pytest.raises(ValueError, match="link is required"):
        inf.decode_step(L70, H100, tp=4)


def test_pipeline_for_a_model_that_does_not_fit_a_node():
    tp, pp = inf.min_gpus_to_fit(get_model("llama-3.1-405b"), H100, "bf16")
    assert tp == 8 and pp >= 2
    plan = inf.serve(get_model("llama-3.1-405b"), H100, gpus=tp * pp, tp=tp)
    assert plan.fits and plan.pp == pp and plan.decode.pp_comm_s > 0
    assert plan.itl_s > pp * plan.decode.stage_s * 0.99


# ------------------------------------------------------------------------------------ serving
def test_serve_keys_and_cost():
    p = inf.serve(L8, H100, rate=30, price_per_gpu_hour=2.0, simulate_requests=150)
    d = p.to_json_dict()
    for k in (
        "memory_per_gpu_bytes",
        "fits",
        "max_batch",
        "ttft_s",
        "itl_s",
        "decode_tokens_per_s",
        "total_tokens_per_s",
        "replicas",
        "gpus",
        "p50_latency_s",
        "p99_latency_s",
        "cost_per_million_tokens_usd",
    ):
        assert k in d, k
    assert d["replicas"] == math.ceil(30 / (p.capacity_req_per_s * 0.8))
    tps = 30 * p.output_tokens
    assert d["cost_per_million_tokens_usd"] == pytest.approx(2.0 * p.gpus / (tps * 3600) * 1e6)
    assert inf.serving_cost_per_million_tokens(3.0, 1, 1000.0) == pytest.approx(3.0 / 3.6)


@settings(max_examples=50, deadline=None)
@given(rate=st.floats(0.1, 5000), cap=st.floats(0.1, 1000), extra=st.floats(1.0, 3.0))
def test_more_replicas_never_lower_capacity(rate, cap, extra):
    r = inf.replicas_for_rate(rate, cap)
    assert r * cap * 0.8 >= rate * (1 - 1e-9)
    assert inf.replicas_for_rate(rate * extra, cap) >= r
    for n in (1, 2, 5, 17):
        assert inf.system_capacity(n + 1, cap) >= inf.system_capacity(n, cap)
        assert inf.system_capacity(n + 1, cap, 0.01, 2) >= inf.system_capacity(n, cap, 0.01, 2)


def test_amdahl_cap_from_the_non_gpu_part():
    assert inf.system_capacity(1000, 50.0, non_gpu_s=0.005, non_gpu_workers=1) == pytest.approx(200.0)
    a = inf.Assumptions(non_gpu_s=0.005, non_gpu_workers=1)
    with pytest.raises(ValueError, match="more GPUs cannot help"):
        inf.replicas_for_rate(500, 20.0, a)


def test_tp_vs_replicas_ordering_published():
    o = inf.tp_ordering(L70, H100, 8, precision="fp8")
    assert o["latency_falls_with_tp"] and o["per_gpu_throughput_falls_with_tp"]
    rows = inf.tp_vs_replicas(L8, H100, 8)
    assert [r.tp for r in rows] == [1, 2, 4, 8]
    assert rows[0].tokens_per_s_per_gpu == max(r.tokens_per_s_per_gpu for r in rows)


def test_simulation_latency_grows_with_load():
    plan, df = inf.load_sweep(L8, H100, (0.2, 0.6, 1.2), n_requests=150)
    assert list(df["load"]) == [0.2, 0.6, 1.2]
    assert df["p50_latency_s"].is_monotonic_increasing and df["mean_batch"].is_monotonic_increasing
    assert df["p50_latency_s"].iloc[0] >= plan.request_latency_s * 0.95  # never faster than unloaded
    assert bool(df["saturated"].iloc[-1]) and not bool(df["saturated"].iloc[0])


def test_simulation_is_simpy_and_deterministic():
    kw = dict(rate=5.0, input_tokens=10, output_tokens=5, max_batch=4, n_requests=50, seed=3)
    a = inf.simulate(lambda b, c: 0.01 * b, lambda n: 0.02 * n, **kw)
    b = inf.simulate(lambda b, c: 0.01 * b, lambda n: 0.02 * n, **kw)
    assert a == b and a.completed == 50
    assert a.p50_latency_s >= 0.02 + 4 * 0.01 - 1e-9  # prefill + 4 decode steps at least


# ------------------------------------------------------------------------------------ published
def test_published_rows_have_sources():
    rows = inf.published_serving()
    assert len(rows) >= 6
    assert all(r["source_url"].startswith("https://") and r["accessed"] for r in rows)


def _errors(pred):
    return {
        r["name"]: inf.predict_published(r) / float(r["value"]) - 1
        for r in inf.published_serving()
        if pred(r)
    }


def test_published_itl_within_30pct():
    """Every published inter-token latency (NIM Llama-3.3-70B, 2 x H100 fp8 TP2, concurrency 1, 5, 25)."""
    errs = _errors(lambda r: r["metric"] == "itl")
    assert len(errs) >= 4 and all(abs(e) <= 0.30 for e in errs.values()), errs


def test_published_ttft_of_real_prompts():
    """Single-user TTFT of prompts of >= 500 tokens (NIM and TensorRT-LLM v0.5 tables, H100 fp8 and A100
    fp16): median |error| within 30%, none beyond 35%. Shorter prompts are reported by `make bench` but
    not held to it: their prefill takes a few ms, where per-pass overheads the model leaves out
    (kernel launches, scheduling) dominate; the model underestimates them."""
    import statistics

    errs = _errors(
        lambda r: r["metric"] == "ttft" and r["concurrency"] == "1" and int(r["input_tokens"]) >= 500
    )
    assert len(errs) >= 6
    assert statistics.median(abs(e) for e in errs.values()) <= 0.30, errs
    assert all(abs(e) <= 0.35 for e in errs.values()), errs
    short = _errors(lambda r: r["metric"] == "ttft" and int(r["input_tokens"]) < 500)
    assert all(e < 0 for e in short.values()), short  # the known direction: overheads left out


def test_implied_share_reproduces_the_row_and_says_what_notebook_07_says():
    """implied_share: the share at which the prediction meets the published figure (within the bisection's
    0.5%); None for throughputs and where no share in range reproduces the figure. Notebook 07's prose:
    long single-user prompts imply shares on either side of the stated flops_share, lower for H100 fp8
    than for A100 fp16; short prompts a much smaller share than long ones on the same GPU."""
    from dataclasses import replace

    rows = {r["name"]: r for r in inf.published_serving()}
    r = rows["trtllm05-l2-7b-a100-tp1-2048-ttft"]
    share = inf.implied_share(r)
    pred = inf.predict_published(r, replace(inf.Assumptions(), flops_share=share))
    assert pred == pytest.approx(float(r["value"]), rel=0.01)
    itl = rows["nim-70b-500-2000-c1-itl"]
    pred = inf.predict_published(itl, replace(inf.Assumptions(), hbm_share=inf.implied_share(itl)))
    assert pred == pytest.approx(float(itl["value"]), rel=0.01)
    assert inf.implied_share(rows["nim-70b-5000-500-c5-throughput"]) is None
    assert inf.implied_share({**r, "value": "1"}) is None  # faster than the peak allows
    stated = inf.Assumptions().flops_share
    single = [x for x in rows.values() if x["metric"] == "ttft" and x["concurrency"] == "1"]
    long_ = {x["name"]: inf.implied_share(x) for x in single if int(x["input_tokens"]) >= 500}
    h100 = [v for k, v in long_.items() if rows[k]["gpu"] == "h100-sxm"]
    a100 = [v for k, v in long_.items() if rows[k]["gpu"] == "a100-80gb"]
    assert h100 and a100 and max(h100) < stated < min(a100), long_
    for x in single:
        if int(x["input_tokens"]) < 500:
            same = [v for k, v in long_.items() if rows[k]["gpu"] == x["gpu"]]
            assert inf.implied_share(x) < 0.6 * min(same), x["name"]


def test_published_throughput_under_load_within_30pct():
    errs = _errors(lambda r: r["metric"] == "throughput")
    assert errs and all(abs(e) <= 0.30 for e in errs.values()), errs


def test_published_static_batch_throughput():
    """TensorRT-LLM v0.6.1 peak throughput, H100 fp8, batches 48-1024 (past the ridge): every row within
    30%. v0.6.1 predates the XQA kernel, so its Llama-2-70B (GQA) decode reads a KV head once per query
    head (the rows say gqa_kv_reuse=false); with the KV read once per group the two long-output 70B
    rows would come out about 2x above the published figure, as NVIDIA's XQA blog reports."""
    errs = _errors(
        lambda r: r["metric"] == "throughput_static"
        and r["name"].startswith("trtllm061-")
        and r["gpu"] == "h100-sxm"
    )
    assert len(errs) == 8
    assert all(abs(e) <= 0.30 for e in errs.values()), errs
    rows = {r["name"]: r for r in inf.published_serving()}
    long_70b = (
        "trtllm061-l2-70b-h100-b480-tp4-128-2048-tput",
        "trtllm061-l2-70b-h100-b64-tp2-2048-2048-tput",
    )
    reuse = {
        k: inf.predict_published(rows[k], engine_notes=False) / float(rows[k]["value"]) - 1 for k in long_70b
    }
    assert all(e > 0.8 for e in reuse.values()), reuse


def test_published_static_batch_throughput_other_gpus_and_releases():
    """The other static-batch rows: TensorRT-LLM performance.md's L40S fp8 (v0.5) and A100 fp16 TP1 (v0.6.1)
    Llama 2 7B rows, the H200 launch blog's Llama 2 13B/70B fp8 rows (v0.5) and the Falcon180B-H200 blog's
    Llama 2 70B fp8 1 x H200 rows (v0.7a). Every pre-XQA row (v0.5, v0.6.1) is within 30%. The two
    long-output v0.7a rows (batch 192 at 128/2048, batch 96 at 128/4096) are known misses, predicted
    above the published figure: their decode is dominated by the KV-cache reads of a GQA model, which
    v0.7a's new GQA kernel (read once per group, the gpukit default) did not stream at the weights'
    hbm_share; reading the KV head once per query head (gqa_kv_reuse=False) puts them below instead."""
    from dataclasses import replace

    errs = _errors(
        lambda r: r["metric"] == "throughput_static"
        and not (r["name"].startswith("trtllm061-") and r["gpu"] == "h100-sxm")
    )
    assert len(errs) == 17
    long_v07 = ("trtllm07a-l2-70b-h200-b192-tp1-128-2048-tput", "trtllm07a-l2-70b-h200-b96-tp1-128-4096-tput")
    assert all(abs(e) <= 0.30 for k, e in errs.items() if k not in long_v07), errs
    assert all(errs[k] > 0.30 for k in long_v07), errs
    rows = {r["name"]: r for r in inf.published_serving()}
    no_reuse = replace(inf.Assumptions(), gqa_kv_reuse=False)
    assert all(inf.predict_published(rows[k], no_reuse) < float(rows[k]["value"]) for k in long_v07)


def test_gqa_kv_reuse_scales_only_the_kv_reads():
    """Without GQA reuse the decode KV traffic is n_heads / n_kv_heads times larger (per GPU under TP);
    an MHA model (Llama 2 7B) is unchanged; weights and compute are untouched."""
    no = inf.Assumptions(gqa_kv_reuse=False)
    for name, tp in (("llama-3-8b", 1), ("llama-3.1-70b", 2), ("llama-3.1-70b", 8), ("llama-2-7b", 1)):
        m = get_model(name)
        a = inf.decode_step(m, H100, batch=32, context=2048, tp=tp, link=get_interconnect("nvlink4"))
        b = inf.decode_step(
            m, H100, batch=32, context=2048, tp=tp, link=get_interconnect("nvlink4"), assumptions=no
        )
        group = (m.n_heads / tp) / math.ceil(m.n_kv_heads / tp)
        assert b.attn_bytes == pytest.approx(a.attn_bytes * group) and b.dense_bytes == a.dense_bytes
        assert (b.time_s > a.time_s) == (group > 1)
    assert any("no GQA reuse" in line for line in no.lines())


# ------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(precision="fp4"), "precision must be one of"),
        (dict(kv_dtype="int3"), "kv_dtype must be one of"),
        (dict(tp=3), "tp must divide n_heads"),
        (dict(tp=16), "tp must be <= gpus_per_node"),
        (dict(gpus=6, tp=4), "tp must divide gpus"),
        (dict(batch=0), "batch must be a positive integer"),
        (dict(context=100, input_tokens=1000), "context must be >= input_tokens"),
        (dict(context=10**7), "max_seq"),
        (dict(rate=-1), "rate must be a finite number > 0"),
        (dict(price_per_gpu_hour=float("nan")), "price_per_gpu_hour"),
    ],
)
def test_bad_input_one_line(kw, msg):
    with pytest.raises(ValueError, match=msg) as e:
        inf.serve(L8, H100, **kw)
    assert "\n" not in str(e.value)


def test_bad_assumptions():
    with pytest.raises(ValueError, match="hbm_share must be in"):
        inf.Assumptions(hbm_share=1.5)
    with pytest.raises(ValueError, match="unknown assumption"):
        inf.with_assumptions(None, mfu=0.5)
    with pytest.raises(ValueError, match="decoder"):
        inf.serve(get_model("bert-large"), H100)


# ------------------------------------------------------------------------------------ CLI
def test_cli_serve_json(capsys):
    assert (
        main(
            [
                "serve",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h100-sxm",
                "--rate",
                "10",
                "--price-per-gpu-hour",
                "2",
                "--simulate-requests",
                "100",
                "--json",
            ]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    assert d["fits"] is True and d["replicas"] >= 1 and d["p99_latency_s"] >= d["p50_latency_s"] > 0
    assert d["memory_per_gpu_bytes"] < 80 * GiB and d["cost_per_million_tokens_usd"] > 0


def test_cli_serve_text_and_layouts(capsys):
    assert (
        main(
            [
                "serve",
                "--model",
                "llama-3.1-70b",
                "--gpu",
                "h100-sxm",
                "--gpus",
                "2",
                "--precision",
                "fp8",
                "--input-tokens",
                "5000",
                "--output-tokens",
                "500",
                "--kv-dtype",
                "fp8",
                "--batch",
                "4",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "tp=2" in out and "fits" in out and "assumes:" in out


def test_cli_serve_link_choice(capsys):
    args = ["serve", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--gpus", "4", "--json"]
    assert main(args) == 0
    nv = json.loads(capsys.readouterr().out)["itl_s"]
    assert main([*args, "--link", "pcie4"]) == 0
    pcie = json.loads(capsys.readouterr().out)["itl_s"]
    assert pcie > nv
    assert main([*args, "--link", "nvlonk"]) == 2 and "unknown" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "fp4"], "invalid choice"),
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--tp", "3"], "tp must divide"),
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "0"], "expected a finite number > 0"),
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--price-per-gpu-hour", "-2"], "price"),
        (["--model", "nope", "--gpu", "h100-sxm"], "unknown model"),
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--batch", "0"], "--batch"),
        # flags that changed nothing (a link with no TP / no pipeline stage, a simulation without a rate) and a
        # simulation size that ran for hours: errors before any work
        (
            ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--link", "nvlink4"],
            "--link is the link of the tensor-parallel",
        ),
        (
            ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--gpus", "2", "--inter-link", "ib-ndr"],
            "--inter-link is",
        ),
        # 3 GPUs of a 32-head model: the default tp is 1 (pipeline of 3), so a TP link has nothing to carry
        (
            ["--model", "llama-2-7b", "--gpu", "h100-sxm", "--gpus", "3", "--link", "nvlink4"],
            "--link is the link of the tensor-parallel",
        ),
        (["--model", "llama-3-8b", "--gpu", "h100-sxm", "--simulate-requests", "100"], "give --rate"),
        (
            ["--model", "llama-3-8b", "--gpu", "h100-sxm", "--rate", "1", "--simulate-requests", "100000000"],
            "simulate_requests must be <= 100,000",
        ),
    ],
)
def test_cli_serve_bad_input_exit_2(argv, msg, capsys):
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert msg in err and err.count("\n") == 1


# ------------------------------------------------------------------------------------ fuzzing the CLI
def _opt(flag, strategy):
    return st.one_of(st.just([]), strategy.map(lambda v: [flag, str(v)]))


SERVE_ARGV = st.tuples(
    st.sampled_from(DECODERS + ("bert-large",)),
    st.sampled_from(["h100-sxm", "a100-80gb", "v100-32gb", "t4", "l4", "b200"]),
    _opt("--gpus", st.integers(1, 64)),
    _opt("--tp", st.integers(1, 16)),
    _opt("--precision", st.sampled_from(inf.PRECISIONS)),
    _opt("--kv-dtype", st.sampled_from(inf.KV_DTYPES)),
    _opt("--batch", st.integers(1, 10**6)),
    _opt("--context", st.integers(1, 10**6)),
    _opt("--input-tokens", st.integers(1, 10**5)),
    _opt("--output-tokens", st.integers(1, 5000)),
    _opt("--rate", st.floats(1e-3, 1e5)),
    _opt("--price-per-gpu-hour", st.floats(0, 100)),
    st.booleans(),
).map(
    lambda t: [
        "serve",
        "--model",
        t[0],
        "--gpu",
        t[1],
        *[x for part in t[2:12] for x in part],
        *(["--simulate-requests", "40"] if t[10] else []),
        *(["--json"] if t[12] else []),
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(argv=SERVE_ARGV)
def test_cli_serve_fuzz(argv, capsys):
    """Any combination: exit 0 with finite, consistent JSON, or exit 2 with one line."""
    capsys.readouterr()
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc in (0, 2), (argv, err)
    if rc == 2:
        assert err.count("\n") == 1 and "Traceback" not in err
    elif "--json" in argv:
        d = json.loads(out)
        assert d["ttft_s"] > 0 and d["itl_s"] > 0 and d["memory_per_gpu_bytes"] > 0
        if d["replicas"] is not None:  # issue 25: stable keys, null without --rate (was: key absent)
            assert d["replicas"] >= 1 and d["gpus"] == d["replicas"] * d["gpus_per_replica"]


# ------------------------------------------------------------------------------------ defaults
def test_default_precision_follows_the_gpu():
    """16-bit weights default to bf16, fp16 on a GPU without bf16 units; asking bf16 there says so."""
    t4 = get_gpu("t4")
    assert inf.serve(L8, t4).precision == "fp16" and inf.serve(L8, H100).precision == "bf16"
    assert not any("bf16" in n for n in inf.serve(L8, t4).notes)
    assert any("no bf16 units" in n for n in inf.serve(L8, t4, precision="bf16").notes)


@pytest.mark.parametrize("name", DECODERS)
def test_default_lengths_fit_every_decoder(name):
    """The default 1000 + 200 tokens shrink to fit a short context window (GPT-2: 1024) and say so;
    lengths the user gives are kept, and too long ones are an error."""
    m = get_model(name)
    p = inf.serve(m, H100)
    assert p.context <= m.max_seq and p.input_tokens >= 1 and p.output_tokens >= 1
    shrunk = (p.input_tokens, p.output_tokens) != (inf.DEFAULT_INPUT_TOKENS, inf.DEFAULT_OUTPUT_TOKENS)
    assert shrunk == (m.max_seq < 1200) == any("length shortened" in n for n in p.notes)
    assert inf.serve(m, H100, context=64).input_tokens + inf.serve(m, H100, context=64).output_tokens <= 64
    with pytest.raises(ValueError, match="max_seq"):
        inf.serve(m, H100, input_tokens=m.max_seq, output_tokens=1)


def test_cli_serve_defaults_for_a_short_context(capsys):
    assert main(["serve", "--model", "gpt2", "--gpu", "t4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["precision"] == "fp16" and out["input_tokens"] + out["output_tokens"] <= 1024


def test_serve_text_names_the_engine_cap_when_it_binds():
    """max_batch is min(memory's, vLLM max_num_seqs); the text says which one binds (notebook 07's prose)."""
    small = inf.serve(
        get_model("llama-3-8b"), H100, max_batch=inf.MAX_NUM_SEQS
    )  # memory holds more than the cap
    assert small.memory.max_batch > small.max_batch == inf.MAX_NUM_SEQS
    assert f"memory holds {small.memory.max_batch}" in small.to_text()
    big = inf.serve(
        get_model("llama-3.1-70b"), H100, gpus=2, precision="fp8", kv_dtype="bf16"
    )  # memory binds
    assert big.max_batch == big.memory.max_batch < inf.MAX_NUM_SEQS
    assert "max_num_seqs" not in big.to_text()


def test_fmt_number_reads_as_the_published_tables_show_it():
    """gpukit.units.fmt_number (notebooks 07-09's tables): thousands separated from 100 up, 3 significant
    digits below, n/a without a finite value."""
    from gpukit.units import fmt_number

    assert [fmt_number(v) for v in (19694.0, 406.77, 99.96, 18.58, 0.3081, -1234.5)] == [
        "19,694",
        "407",
        "100",
        "18.6",
        "0.308",
        "-1,234",
    ]
    assert fmt_number(float("nan")) == fmt_number(None) == "n/a"


def test_simulation_size_is_capped_before_the_work():
    """serve(simulate_requests=10**8) and simulate(n_requests=10**8) ran for hours (0.3 ms a request):
    both raise at once, naming the limit."""
    import time

    m, g = get_model("llama-3-8b"), get_gpu("h100-sxm")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="simulate_requests must be <= 100,000"):
        inf.serve(m, g, rate=1.0, simulate_requests=10**8)
    with pytest.raises(ValueError, match="n_requests must be <= 100,000"):
        inf.simulate(
            lambda n, c: 0.01,
            lambda n: 0.02,
            rate=1.0,
            input_tokens=10,
            output_tokens=10,
            max_batch=4,
            n_requests=10**8,
        )
    assert time.perf_counter() - t0 < 5


def test_vllm_figure1_opt13b_on_a100_40gb():
    """vLLM (Kwon et al. 2023, SOSP), Figure 1 (left): serving a 13B model on an A100-40GB, the
    parameters take 26 GB (65%) and the KV cache over 30% of the memory; sec. 3: 800 KB of KV cache
    per OPT-13B token. The serving path (serving_memory, vLLM's 0.9 pre-allocation) gives the same.
    The figure's shares are of '40 GB' read as decimal (26 GB / 40 GB = 65%), so both are here."""
    m, g = get_model("opt-13b"), get_gpu("a100-40gb")
    assert inf.kv_bytes_per_token(m, "fp16") == 800 * 1024
    mem = inf.serving_memory(m, g, precision="fp16", kv_dtype="fp16", context=2048)
    assert mem.weights_bytes / GB == pytest.approx(26, rel=0.03)
    assert mem.weights_bytes / (40 * GB) == pytest.approx(0.65, abs=0.02)
    assert 0.30 < mem.kv_budget_bytes / (40 * GB) < 0.35


def test_pipeline_stages_default_to_the_link_they_sit_on():
    """Pipeline stages talked over InfiniBand NDR in every layout, also two stages inside one NVLink
    node (llama-3-8b, --gpus 2 --tp 1: 2.9 us per send instead of 0.6) and A100 nodes (HDR era)."""
    p = inf.serve(get_model("llama-3-8b"), get_gpu("h100-sxm"), gpus=2, tp=1)
    assert p.pp == 2 and any("over nvlink4" in n for n in p.notes)
    p = inf.serve(get_model("llama-3.1-405b"), get_gpu("a100-80gb"), gpus=32)
    assert p.pp == 4 and any("over ib-hdr" in n for n in p.notes)
    assert inf.default_pp_link(get_gpu("h100-sxm"), 16).name == "ib-ndr"


def test_batch_above_the_engine_cap_is_noted():
    """gpt2 on a T4 at --batch 400 printed 5836 tok/s at batch 400 beside a capacity of 5133 at the
    engine's cap of 256 without saying the batch line needs the cap raised."""
    p = inf.serve(get_model("gpt2"), get_gpu("t4"), batch=400)
    assert p.max_batch == inf.MAX_NUM_SEQS and any(
        "above the engine's default cap of 256" in n for n in p.notes
    )
    assert not any(
        "engine's default cap" in n for n in inf.serve(get_model("gpt2"), get_gpu("t4"), batch=256).notes
    )


def test_serving_api_takes_catalog_names():
    """docs/CONTRACTS.md: the API takes catalog names wherever it takes a spec. serve('llama-3-8b',
    'h100-sxm') raised AttributeError ('str' object has no attribute 'arch'), as did serving_memory,
    decode_step, prefill_step; cost.training_cost and plan.plan refused a model name."""
    from gpukit import cost
    from gpukit.plan import plan

    m, g = get_model("llama-3-8b"), get_gpu("h100-sxm")
    assert inf.serve("llama-3-8b", "h100-sxm", tp=2, link="nvlink4") == inf.serve(
        m, g, tp=2, link=get_interconnect("nvlink4")
    )
    assert inf.serving_memory("llama-3-8b", "h100-sxm") == inf.serving_memory(m, g)
    assert inf.decode_step("llama-3-8b", "h100-sxm") == inf.decode_step(m, g)
    assert inf.prefill_step("llama-3-8b", "h100-sxm") == inf.prefill_step(m, g)
    assert inf.min_gpus_to_fit("llama-3.1-70b", "h100-sxm") == (2, 1)
    assert (
        cost.training_cost("llama-2-7b", 1e12, "h100-sxm", 8, price_per_gpu_hour=2.0).rows
        == cost.training_cost(get_model("llama-2-7b"), 1e12, "h100-sxm", 8, price_per_gpu_hour=2.0).rows
    )
    assert plan("serve", "llama-3-8b", rate=1, gpus={"h100-sxm": 3.0}).model == "llama-3-8b"
    with pytest.raises(ValueError, match="model must be a catalog model name"):
        inf.serve(5, "h100-sxm")


@pytest.mark.parametrize("kw, field", [({"kv_dtype": ""}, "kv_dtype"), ({"precision": ""}, "precision")])
def test_empty_dtype_is_an_error_not_the_default(kw, field):
    """serve(kv_dtype='') ran with the GPU's default KV dtype (an empty string read as 'not given')."""
    with pytest.raises(ValueError, match=f"{field} must be one of"):
        inf.serve(get_model("llama-3-8b"), get_gpu("h100-sxm"), **kw)
    if field == "kv_dtype":
        with pytest.raises(ValueError, match="kv_dtype must be one of"):
            inf.decode_step(get_model("llama-3-8b"), get_gpu("h100-sxm"), kv_dtype="")


def test_shortened_length_note_names_what_was_shortened():
    """--context 600 --output-tokens 500 on llama-3-8b said '1000 + 200 do not fit', the 200 being a
    default the user had replaced with 500; the note now says the prompt was shortened from 1000 + 500."""
    p = inf.serve(get_model("llama-3-8b"), get_gpu("h100-sxm"), context=600, output_tokens=500)
    (note,) = [n for n in p.notes if "shortened" in n]
    assert (
        note
        == "default prompt length shortened: 100 + 500 tokens, as 1000 + 500 do not fit llama-3-8b's 600-token context"
    )


def test_default_tp_divides_the_gpus_and_the_heads():
    """serve --gpus 3 without --tp failed with 'tp must divide n_heads 32, got 3' (the default was
    min(gpus, gpus_per_node)); the default is now the largest tp that divides both, the rest pipeline,
    and a note says so."""
    from gpukit.inference import default_tp

    m = get_model("llama-3-8b")
    assert (
        default_tp(m, 3) == 1 and default_tp(m, 6) == 2 and default_tp(m, 8) == 8 and default_tp(m, 16) == 8
    )
    assert default_tp(get_model("falcon-7b"), 2) == 1  # 71 heads
    p = inf.serve(m, "h100-sxm", gpus=3)
    assert (p.tp, p.pp) == (1, 3) and any("tp 1 (default)" in n for n in p.notes)
    assert not any("(default)" in n for n in inf.serve(m, "h100-sxm", gpus=8).notes)


def test_context_alone_is_said_not_to_be_the_prompt():
    """--context sizes the KV cache; TTFT and ITL are for the request's own lengths, and the text says
    which (a 32768-token context once printed a 1000-token prompt's TTFT without a word)."""
    m = get_model("llama-3-8b")
    p = inf.serve(m, H100, context=8192)
    assert (p.input_tokens, p.output_tokens) == (inf.DEFAULT_INPUT_TOKENS, inf.DEFAULT_OUTPUT_TOKENS)
    assert f"{p.input_tokens} + {p.output_tokens} tokens per request" in p.to_text()
    assert any("context 8192 sizes the KV cache" in n for n in p.notes)
    long_prompt = inf.serve(m, H100, context=8192, input_tokens=7000)
    assert not any("sizes the KV cache" in n for n in long_prompt.notes)
    assert long_prompt.ttft_s > 5 * p.ttft_s  # prefill grows with the prompt, not with the context
    assert not any("sizes the KV cache" in n for n in inf.serve(m, H100).notes)


def test_max_context_never_exceeds_the_models_window():
    """serve's max_context is the tokens the KV budget holds, capped at the model's context window
    (issue 23 sec. 5: llama-2-7b on an H100 at batch 1 reported ~100k tokens against a 4,096 window)."""
    m = get_model("llama-2-7b")
    mem = inf.serving_memory(m, H100, precision="bf16", batch=1, context=1000)
    assert mem.max_context == m.max_seq
    big = inf.serving_memory(m, H100, precision="bf16", batch=256, context=1000)
    assert 0 < big.max_context < m.max_seq  # the budget binds first at a large batch
