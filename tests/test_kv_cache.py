"""The one KV-cache formula (gpukit.memory.kv_cache): `gpukit memory --inference` and `gpukit serve` count the
same bytes, byte for byte, over GQA and MHA models, a windowed one, contexts, batches, KV dtypes, tp and pp.

Issue 22 sec. 2: the KV cache was computed twice (gpukit.memory.parts and gpukit.inference.serving), so the two
commands could disagree; both now call gpukit.memory.kv_cache_bytes."""

from __future__ import annotations

import itertools
import json

import pytest

from gpukit import inference as inf
from gpukit import memory as mem
from gpukit.catalog import get_gpu, get_model
from gpukit.cli import main
from gpukit.specs import ModelSpec

# GQA (llama-3-8b 8 KV heads, llama-2-70b 8 of 64, qwen2.5-7b 4, falcon-7b multi-query 1), MHA (llama-2-7b, opt-1.3b,
# gpt2), and a sliding window (mistral-7b, W = 4096, GQA 8)
MODELS = (
    "llama-3-8b",
    "llama-2-70b",
    "qwen2.5-7b",
    "falcon-7b",
    "llama-2-7b",
    "opt-1.3b",
    "gpt2",
    "mistral-7b",
)
CONTEXTS = (1, 1000, 4096, 4097, 16384)
BATCHES = (1, 3, 64)
# the memory side keeps the KV cache in its compute dtype: weights_dtype bf16/fp16/fp32 for serving
MEMORY_KV_DTYPES = ("bf16", "fp16", "fp32")
LAYOUTS = ((1, 1), (2, 1), (8, 1), (16, 1), (1, 2), (4, 2))  # (tp, pp)


def _layouts(m: ModelSpec):
    """The (tp, pp) both commands take for `m`: tp divides n_heads and divides or is a multiple of n_kv_heads."""
    return [(tp, pp) for tp, pp in LAYOUTS if inf.tp_splits_heads(m, tp) and pp <= m.n_layers]


def _grid():
    for name in MODELS:
        m = get_model(name)
        for (tp, pp), ctx, b, dt in itertools.product(_layouts(m), CONTEXTS, BATCHES, MEMORY_KV_DTYPES):
            if ctx <= m.max_seq:
                yield m, tp, pp, ctx, b, dt


def test_the_grid_covers_gqa_mha_windows_and_replicated_kv_heads():
    cases = list(_grid())
    assert len(cases) > 500
    ms = {c[0].name: c[0] for c in cases}
    assert any(m.n_kv_heads < m.n_heads for m in ms.values()) and any(
        m.n_kv_heads == m.n_heads for m in ms.values()
    )
    assert any(m.sliding_window for m in ms.values())
    assert any(c[1] > c[0].n_kv_heads for c in cases)  # tp > n_kv_heads: KV heads replicated
    assert any(c[0].sliding_window and c[3] > c[0].sliding_window for c in cases)  # the window caps the cache


def test_memory_inference_and_serve_count_the_same_kv_bytes():
    """estimate_memory(inference=True) and serving_memory: the same KV bytes on one GPU, exactly."""
    h100 = get_gpu("h100-sxm")
    for m, tp, pp, ctx, b, dt in _grid():
        setup = mem.TrainSetup(inference=True, weights_dtype=dt, tp=tp, pp=pp, batch=b, seq_len=ctx)
        a = mem.estimate_memory(m, setup=setup).kv_cache_bytes
        s = inf.serving_memory(m, h100, kv_dtype=dt, tp=tp, pp=pp, batch=b, context=ctx).kv_cache_bytes
        assert a == s, (m.name, tp, pp, ctx, b, dt, a, s)


@pytest.mark.parametrize("name", MODELS)
def test_the_formula_term_by_term(name):
    """2 (K and V) x ceil(L / pp) x ceil(n_kv_heads / tp) x head_dim x min(context, W) x batch x dtype bytes, and
    every KV dtype serve takes (fp8 and int8 too) goes through the same function."""
    m = get_model(name)
    bytes_of = {"bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "fp32": 4}
    assert set(bytes_of) == set(mem.KV_DTYPES) and inf.KV_DTYPES is mem.KV_DTYPES
    assert inf.kv_bytes_per_token is mem.kv_bytes_per_token  # one object, reachable from both faces
    h100 = get_gpu("h100-sxm")
    for (tp, pp), ctx, b, dt in itertools.product(_layouts(m), (1000, 8192), (1, 7), mem.KV_DTYPES):
        if ctx > m.max_seq:
            continue
        kept = ctx if m.sliding_window is None else min(ctx, m.sliding_window)
        heads = -(-m.n_kv_heads // tp)
        want = 2 * -(-m.n_layers // pp) * heads * m.head_dim * kept * b * bytes_of[dt]
        assert mem.kv_cache_bytes(m, ctx, b, dt, tp, pp) == want
        assert (
            inf.serving_memory(m, h100, kv_dtype=dt, tp=tp, pp=pp, batch=b, context=ctx).kv_cache_bytes
            == want
        )
        # decode reads the whole cache of a micro-batch of ceil(b / pp) sequences once per step
        step = inf.decode_step(
            m, h100, batch=b, context=ctx, kv_dtype=dt, tp=tp, pp=pp, link="nvlink4", pp_link="nvlink4"
        )
        assert step.attn_bytes == mem.kv_cache_bytes(m, ctx, -(-b // pp), dt, tp, pp)


def test_bad_kv_input_names_the_field():
    m = get_model("llama-3-8b")
    with pytest.raises(ValueError, match="kv_dtype must be one of"):
        mem.kv_bytes_per_token(m, "int4")
    with pytest.raises(ValueError, match="tp must be a positive integer"):
        mem.kv_cache_bytes(m, 100, tp=0)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        mem.kv_cache_bytes(m, 100, batch=0)
    with pytest.raises(ValueError, match="context must be a positive integer"):
        mem.kv_cache_bytes(m, 0)


@pytest.mark.parametrize(
    "name, tp, pp, ctx, batch, dtype",
    [
        ("mistral-7b", 2, 1, 8192, 4, "fp16"),  # windowed: 4096 of 8192 tokens cached
        ("llama-3-8b", 8, 1, 4096, 8, "bf16"),  # 8 KV heads over 8 GPUs (serve keeps tp in a node of 8)
        ("llama-2-7b", 1, 2, 2048, 3, "fp32"),  # MHA, two pipeline stages of 16 layers
        ("falcon-7b", 1, 1, 2048, 16, "bf16"),  # multi-query: one KV head
    ],
)
def test_the_two_commands_json_agree(name, tp, pp, ctx, batch, dtype, capsys):
    """`gpukit memory --inference --json` and `gpukit serve --json` print the same kv_cache_bytes."""
    assert (
        main(
            [
                "memory",
                "--model",
                name,
                "--inference",
                "--tp",
                str(tp),
                "--pp",
                str(pp),
                "--batch",
                str(batch),
                "--seq-len",
                str(ctx),
                "--weights-dtype",
                dtype,
                "--json",
            ]
        )
        == 0
    )
    a = json.loads(capsys.readouterr().out)["kv_cache_bytes"]
    assert (
        main(
            [
                "serve",
                "--model",
                name,
                "--gpu",
                "h100-sxm",
                "--gpus",
                str(tp * pp),
                "--tp",
                str(tp),
                "--batch",
                str(batch),
                "--context",
                str(ctx),
                "--kv-dtype",
                dtype,
                "--json",
            ]
        )
        == 0
    )
    s = json.loads(capsys.readouterr().out)["memory"]["kv_cache_bytes"]
    m = get_model(name)
    assert a == s == mem.kv_cache_bytes(m, ctx, batch, dtype, tp, pp)
