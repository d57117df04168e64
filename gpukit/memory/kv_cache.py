"""The KV cache: the one formula for its bytes on one GPU, used by every family that counts it.

bytes = 2 (keys and values) x layers on the GPU x KV heads on the GPU x head_dim x cached tokens x
bytes per KV element, per sequence. Pure calculator (no torch, no I/O); float bytes.

- Grouped-query attention caches n_kv_heads heads, not n_heads (Ainslie et al. 2023, "GQA",
  arXiv:2305.13245, sec. 2); multi-head attention is the case n_kv_heads = n_heads.
- Tensor parallelism splits the KV heads over tp (Megatron-LM, Shoeybi et al. 2019 sec. 3: each rank
  owns n_heads / tp query heads and their KV heads); with tp > n_kv_heads each KV head is replicated on
  tp / n_kv_heads ranks (vLLM and TensorRT-LLM replicate them), so a GPU holds ceil(n_kv_heads / tp).
- Pipeline parallelism gives a stage ceil(n_layers / pp) layers (the fuller stage sets the memory).
- Sliding-window attention keeps min(context, W) tokens per sequence (ModelSpec.kv_tokens: Mistral
  7B's rolling buffer cache, Jiang et al. 2023 arXiv:2310.06825 sec. 2). With a per-layer pattern
  (ModelSpec.full_attention_every = k: every k-th layer global, the others windowed; gpt-oss alternates
  128-token windows with full attention, k = 2, OpenAI gpt-oss model card 2025) a global layer caches the
  whole context and a windowed one min(context, W): kv_cache_bytes sums the two kinds of layer.
- Multi-head latent attention (DeepSeek-V2, arXiv:2405.04434 sec. 2.1.2-2.1.3; DeepSeek-V3): a layer
  caches the compressed latent c^KV (kv_lora_rank, 512) and the decoupled RoPE key (qk_rope_head_dim, 64)
  per token, shared by all heads: (kv_lora_rank + qk_rope_head_dim) x bytes, not 2 x heads x head_dim.
  The latent is not split by heads, so every tensor-parallel rank holds all of it (vLLM's MLA backend
  caches the full latent on each TP rank; DeepSeek's data-parallel attention avoids that copy).
- KV dtype: bf16/fp16 2 bytes, fp8/int8 1 byte (vLLM's kv_cache_dtype fp8; TensorRT-LLM's INT8/FP8 KV
  cache), fp32 4 (gpukit.units.dtype_bytes); per-tensor scales are a few bytes per layer and left out.

Used in: gpukit.memory.parts (`gpukit memory --inference`), gpukit.inference.serving (`gpukit serve`,
decode and prefill reads), tests/test_kv_cache.py (the two commands byte for byte).
"""

from __future__ import annotations

import math

from gpukit.catalog import as_model
from gpukit.errors import MAX_COUNT, require_choice, require_positive_int
from gpukit.specs import ModelSpec
from gpukit.units import dtype_bytes

KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp32")


def kv_heads_per_gpu(model: ModelSpec, tp: int = 1) -> int:
    """KV heads one GPU caches: n_kv_heads / tp, or 1 (a replica) when tp > n_kv_heads."""
    model = as_model(model, "model")  # a catalog name too
    return math.ceil(model.n_kv_heads / require_positive_int("tp", tp))  # replicated past n_kv_heads


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16", tp: int = 1, pp: int = 1) -> float:
    """KV-cache bytes per cached token on one GPU: 2 x layers x kv_heads x head_dim x bytes (module
    docstring: GQA-aware, kv heads split over tp and replicated past n_kv_heads, layers split over pp)."""
    model = as_model(model, "model")  # a catalog name too
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    layers = math.ceil(model.n_layers / require_positive_int("pp", pp))  # the fuller pipeline stage
    return layers * kv_bytes_per_token_layer(model, kv_dtype, tp)


def kv_bytes_per_token_layer(model: ModelSpec, kv_dtype: str = "bf16", tp: int = 1) -> float:
    """KV-cache bytes of one cached token in one layer on one GPU: MLA's latent + RoPE key
    (kv_lora_rank + qk_rope_head_dim, DeepSeek-V2 sec. 2.1.3, on every TP rank), else K and V of the
    GPU's KV heads (2 x kv_heads x head_dim, Ainslie et al. 2023 sec. 2)."""
    model = as_model(model, "model")  # a catalog name too
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    tp = require_positive_int("tp", tp)
    if model.is_mla:  # DeepSeek-V2 sec. 2.1.3: c^KV_t (d_c) and k^R_t (d^R_h) cached per token per layer
        return float(model.kv_lora_rank + model.qk_rope_head_dim) * dtype_bytes(kv_dtype)
    # K and V (factor 2), n_kv_heads heads of head_dim each (Ainslie et al. 2023 sec. 2)
    return 2.0 * kv_heads_per_gpu(model, tp) * model.head_dim * dtype_bytes(kv_dtype)


def stage_layer_kinds(model: ModelSpec, pp: int = 1) -> tuple[int, int]:
    """(global layers, windowed layers) of the pipeline stage that caches the most: stages take
    contiguous blocks of ceil(n_layers / pp) layers; a layer is global when it attends over the whole
    context (ModelSpec.is_full_attention_layer: no window, or the pattern's full-attention layer)."""
    model = as_model(model, "model")  # a catalog name too
    per = math.ceil(model.n_layers / require_positive_int("pp", pp))
    best = (0, 0)
    for start in range(0, model.n_layers, per):
        idx = range(start, min(start + per, model.n_layers))
        full = sum(1 for i in idx if model.is_full_attention_layer(i))
        kinds = (full, len(idx) - full)
        if kinds > best:  # the most global layers (they hold the most), then the most layers
            best = kinds
    return best


def kv_cached_token_layers(model: ModelSpec, context: int, pp: int = 1) -> float:
    """Token-layers one sequence caches after `context` tokens on the fullest stage: global layers x
    context + windowed layers x min(context, W) (Jiang et al. 2023 sec. 2; the gpt-oss pattern)."""
    model = as_model(model, "model")  # a catalog name too
    context = require_positive_int("context", context, at_most=MAX_COUNT)
    full, windowed = stage_layer_kinds(model, pp)
    return float(full * context + windowed * model.kv_tokens(context))


def kv_cache_bytes(
    model: ModelSpec, context: int, batch: int = 1, kv_dtype: str = "bf16", tp: int = 1, pp: int = 1
) -> float:
    """KV-cache bytes on one GPU for `batch` sequences of `context` tokens: bytes per token per layer x
    batch x (global layers x context + windowed layers x min(context, W)) (kv_cached_token_layers;
    ModelSpec.kv_tokens, Jiang et al. 2023 sec. 2). MLA: kv_lora_rank + qk_rope_head_dim per token per
    layer (DeepSeek-V2 sec. 2.1.3)."""
    model = as_model(model, "model")  # a catalog name too
    batch = require_positive_int("batch", batch)
    pp = require_positive_int("pp", pp)
    return kv_bytes_per_token_layer(model, kv_dtype, tp) * batch * kv_cached_token_layers(model, context, pp)
