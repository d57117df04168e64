"""Serving a mixture of experts and latent / sliding-window attention (issue 24 sec. 2-3): MLA's KV cache,
the per-layer window pattern, MXFP4 weights, the experts a decode step touches, EP, and what fits where.

The models are built here from their published config.json values (the catalog rows are another
change's): DeepSeek-V3 (https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json) and
gpt-oss-120b / -20b (https://huggingface.co/openai/gpt-oss-120b/blob/main/config.json), accessed 2026-12-05.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import gpukit.inference as inf
from gpukit.catalog import get_gpu, get_interconnect, get_model
from gpukit.cli import main
from gpukit.memory import kv_bytes_per_token, kv_cache_bytes, stage_layer_kinds
from gpukit.quant import mxfp4_bits_per_weight, quantized_bytes
from gpukit.specs import ModelSpec

H100, H200 = get_gpu("h100-sxm"), get_gpu("h200")

DEEPSEEK_V3 = ModelSpec(
    name="deepseek-v3",
    n_layers=61,
    hidden=7168,
    n_heads=128,
    n_kv_heads=128,
    head_dim=128,  # qk_nope_head_dim
    ffn_hidden=18432,  # intermediate_size of the 3 dense layers
    vocab=129280,
    max_seq=163840,
    train_seq_len=4096,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
    dropout=False,
    n_experts=256,
    experts_per_token=8,
    n_shared_experts=1,
    moe_ffn_hidden=2048,
    first_dense_layers=3,
    kv_lora_rank=512,
    q_lora_rank=1536,
    qk_rope_head_dim=64,
    v_head_dim=128,
    mtp_layers=1,
)


def gpt_oss(n_layers: int, n_experts: int, name: str) -> ModelSpec:
    return ModelSpec(
        name=name,
        n_layers=n_layers,
        hidden=2880,
        n_heads=64,
        n_kv_heads=8,
        head_dim=64,
        ffn_hidden=2880,
        vocab=201088,
        max_seq=131072,
        train_seq_len=4096,
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        bias=True,
        dropout=False,
        n_experts=n_experts,
        experts_per_token=4,
        sliding_window=128,
        full_attention_every=2,  # layer_types: sliding, full, sliding, full, ...
    )


GPT_OSS_120B = gpt_oss(36, 128, "gpt-oss-120b")
GPT_OSS_20B = gpt_oss(24, 32, "gpt-oss-20b")


# ------------------------------------------------------------------------------------ KV cache
@pytest.mark.parametrize("kv, nbytes", [("bf16", 2), ("fp8", 1)])
def test_mla_kv_bytes_of_deepseek_v3(kv, nbytes):
    """DeepSeek-V2 sec. 2.1.3: latent (512) + decoupled RoPE key (64) per token per layer, all 61 layers."""
    assert kv_bytes_per_token(DEEPSEEK_V3, kv) == 61 * (512 + 64) * nbytes
    assert kv_cache_bytes(DEEPSEEK_V3, 4096, batch=3, kv_dtype=kv) == 3 * 4096 * 61 * (512 + 64) * nbytes
    # the latent is not split by heads: each TP rank holds all of it
    assert kv_bytes_per_token(DEEPSEEK_V3, kv, tp=8) == kv_bytes_per_token(DEEPSEEK_V3, kv)
    # 2 x heads x head_dim would be 2 x 128 x 128 per layer: MLA is 57x smaller
    assert 2 * 128 * 128 / (512 + 64) > 50


def test_gpt_oss_alternating_window_caches_the_context_in_half_the_layers():
    """gpt-oss: 18 full-attention layers cache the whole context, 18 windowed ones 128 tokens."""
    m = GPT_OSS_120B
    assert stage_layer_kinds(m) == (18, 18)
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 KV heads x 64, bf16
    assert kv_cache_bytes(m, 8192) == per_layer * (18 * 8192 + 18 * 128)
    assert kv_cache_bytes(m, 100) == per_layer * 36 * 100  # shorter than the window: every layer holds it
    # one window for every layer (Mistral-style) would cache 128 tokens in all 36
    uniform = replace(GPT_OSS_120B, full_attention_every=0)
    assert kv_cache_bytes(uniform, 8192) == per_layer * 36 * 128
    # pipeline stages of 18 contiguous layers: 9 global each
    assert stage_layer_kinds(m, pp=2) == (9, 9)


# ------------------------------------------------------------------------------------ weights
def test_mxfp4_is_4_25_bits_per_weight():
    """OCP MX spec v1.0: 32 E2M1 elements share one E8M0 scale."""
    assert mxfp4_bits_per_weight() == 4.25
    assert quantized_bytes(32_000, "mxfp4") == 32_000 * 4.25 / 8


def test_gpt_oss_120b_fits_one_h100_in_mxfp4_not_in_bf16():
    assert GPT_OSS_120B.n_params == pytest.approx(116.83e9, rel=0.005)  # model card: 116.83B total
    mx = inf.serve(GPT_OSS_120B, H100, precision="mxfp4")
    assert mx.fits and mx.max_batch >= 1 and mx.capacity_req_per_s > 0
    assert 60e9 < mx.memory.weights_bytes < 70e9  # experts at 4.25 bits, attention/embeddings bf16
    bf = inf.serve(GPT_OSS_120B, H100, precision="bf16")
    assert not bf.fits and bf.max_batch == 0 and any("DOES NOT FIT" in n for n in bf.notes)
    assert inf.serve(GPT_OSS_20B, get_gpu("l4"), precision="mxfp4").fits  # 21B in a 24 GB card


def test_deepseek_v3_needs_a_node_of_h200_in_fp8():
    assert DEEPSEEK_V3.n_params == pytest.approx(671e9, rel=0.01)
    h200 = inf.serve(DEEPSEEK_V3, H200, gpus=8, precision="fp8")
    assert h200.fits and h200.kv_dtype == "fp8"
    assert not inf.serve(DEEPSEEK_V3, H100, gpus=8, precision="fp8").fits
    assert not inf.serve(DEEPSEEK_V3, H200, gpus=4, tp=4, precision="fp8").fits
    # all experts resident: the weights per GPU are the total / 8, not the active parameters
    assert h200.memory.weights_bytes > 0.95 * DEEPSEEK_V3.n_params / 8


def test_dense_weights_unchanged_by_the_moe_path():
    """A dense model's bytes per block are its linear layers in the precision + the rest 16-bit."""
    m = get_model("llama-3.1-70b")
    n_lin, _ = m.linear_weights
    assert inf.layer_weight_bytes(m, "bf16") == 2.0 * m.layer_params()
    assert inf.layer_weight_bytes(m, "fp8") == n_lin + 4 * 7 + 2.0 * (m.layer_params() - n_lin)


# ------------------------------------------------------------------------------------ experts touched
def test_experts_touched_rises_from_k_to_all():
    e, k = 256, 8
    assert inf.expected_experts_touched(e, k, 1) == pytest.approx(k)
    seq = [inf.expected_experts_touched(e, k, b) for b in (1, 2, 8, 32, 128, 1024)]
    assert all(a < b for a, b in zip(seq, seq[1:], strict=False))
    assert seq[-1] == pytest.approx(e, rel=1e-9)
    assert inf.expected_experts_touched(e, k, 16) == pytest.approx(e * (1 - (1 - k / e) ** 16))


def test_decode_reads_more_expert_weights_as_the_batch_grows():
    m = DEEPSEEK_V3
    kw = dict(precision="fp8", tp=8, link=get_interconnect("nvlink4"))
    b1 = inf.decode_step(m, H200, batch=1, context=1000, **kw)
    b64 = inf.decode_step(m, H200, batch=64, context=1000, **kw)
    big = inf.decode_step(m, H200, batch=2048, context=1000, **kw)
    assert b1.dense_bytes < b64.dense_bytes < big.dense_bytes
    everything = inf.weight_bytes_read_per_step(m, "fp8", tp=8)
    assert big.dense_bytes == pytest.approx(everything, rel=1e-6)
    assert b1.dense_bytes < 0.1 * everything  # 8 of 256 experts + shared + attention
    # FLOPs per token follow the active parameters, not the total
    assert b1.dense_flops == pytest.approx(
        (2 * inf.active_matmul_params(m) + 2 * m.vocab * m.hidden) / 8, rel=1e-9
    )
    assert inf.active_matmul_params(m) < 0.06 * m.n_params


def test_ep_swaps_the_moe_all_reduce_for_all_to_alls():
    kw = dict(batch=256, context=1000, precision="fp8", tp=8, link=get_interconnect("nvlink4"))
    tp_only = inf.decode_step(DEEPSEEK_V3, H200, **kw)
    ep8 = inf.decode_step(DEEPSEEK_V3, H200, ep=8, **kw)
    assert ep8.tp_comm_s != tp_only.tp_comm_s and ep8.dense_bytes == tp_only.dense_bytes
    p = inf.serve(DEEPSEEK_V3, H200, gpus=8, precision="fp8", ep=8)
    assert p.ep == 8 and p.to_json_dict()["ep"] == 8 and p.step_kwargs["ep"] == 8
    with pytest.raises(ValueError, match="ep must divide"):
        inf.serve(DEEPSEEK_V3, H200, gpus=8, precision="fp8", ep=3)
    with pytest.raises(ValueError, match="ep must be 1"):
        inf.serve(get_model("llama-3-8b"), H100, ep=2)


def test_mla_decode_attention_flops_are_the_absorbed_form():
    """Absorbed MLA decode: per head and cached key 2 x (512 + 64) + 2 x 512 FLOPs, heads split over tp."""
    st = inf.decode_step(
        DEEPSEEK_V3, H200, batch=4, context=1000, precision="fp8", tp=8, link=get_interconnect("nvlink4")
    )
    assert st.attn_flops == pytest.approx(4 * 2 * 128 * (2 * 512 + 64) * 61 * 1000 / 8)


def test_cli_serve_ep_and_mxfp4_flags(capsys):
    assert main(["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--ep", "2"]) == 2
    assert "ep must be 1" in capsys.readouterr().err
    assert (
        main(["serve", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--precision", "mxfp4", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["precision"] == "mxfp4" and out["ep"] == 1


def test_an_alternating_window_caps_only_its_windowed_layers():
    """gpt-oss (every other layer full attention): the mean cached tokens, the keys attended and serve's
    max_context grow with the context through the full layers; a model windowed on every layer stops at W."""
    from gpukit.catalog import get_model
    from gpukit.inference import serving_memory

    m = get_model("gpt-oss-120b")
    assert m.window_layer_share == pytest.approx(0.5)
    assert m.mean_kv_tokens(32768) == pytest.approx(0.5 * 32768 + 0.5 * 128)
    assert m.mean_attended_keys(32768) == pytest.approx(0.5 * 16384 + 0.5 * (128 - 128 * 128 / (2 * 32768)))
    assert "alternates attention" in m.sliding_window_note(32768)
    mem = serving_memory(m, "h100-sxm", precision="mxfp4", batch=64, context=2048)
    per_token_full = mem.kv_bytes_per_token * mem.batch
    expect = int((mem.kv_budget_bytes / per_token_full - 0.5 * 128) / 0.5)
    assert mem.max_context == min(expect, m.max_seq) < m.max_seq  # not the window's "unbounded" answer
    mistral = get_model("mistral-7b")
    assert mistral.window_layer_share == 1.0 and mistral.mean_kv_tokens(32768) == mistral.sliding_window
