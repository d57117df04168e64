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
  7B's rolling buffer cache, Jiang et al. 2023 arXiv:2310.06825 sec. 2). ModelSpec has one window for
  every layer (no per-layer pattern of windowed and global layers), so every layer caches the same
  number of tokens here.
- KV dtype: bf16/fp16 2 bytes, fp8/int8 1 byte (vLLM's kv_cache_dtype fp8; TensorRT-LLM's INT8/FP8 KV
  cache), fp32 4 (gpukit.units.dtype_bytes); per-tensor scales are a few bytes per layer and left out.

Used in: gpukit.memory.parts (`gpukit memory --inference`), gpukit.inference.serving (`gpukit serve`,
decode and prefill reads), tests/test_kv_cache.py (the two commands byte for byte).
"""

from __future__ import annotations

import math

from gpukit.catalog import as_model
from gpukit.errors import require_choice, require_positive_int
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
    model = as_model(model, "model")  # a catalog name too
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    layers = math.ceil(model.n_layers / require_positive_int("pp", pp))  # the fuller pipeline stage
    # K and V (factor 2), n_kv_heads heads of head_dim each (Ainslie et al. 2023 sec. 2)
    return 2.0 * layers * kv_heads_per_gpu(model, tp) * model.head_dim * dtype_bytes(kv_dtype)


def kv_cache_bytes(
    model: ModelSpec, context: int, batch: int = 1, kv_dtype: str = "bf16", tp: int = 1, pp: int = 1
) -> float:
    """KV-cache bytes on one GPU for `batch` sequences of `context` tokens: kv_bytes_per_token x batch x
    min(context, sliding_window) (ModelSpec.kv_tokens; Jiang et al. 2023 sec. 2)."""
    model = as_model(model, "model")  # a catalog name too
    batch = require_positive_int("batch", batch)
    return kv_bytes_per_token(model, kv_dtype, tp, pp) * batch * model.kv_tokens(context)
