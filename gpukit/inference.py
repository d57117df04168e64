"""Serving a model: memory per GPU, prefill and decode on the roofline, TP/PP, replicas, a queue, cost.

Pure calculator (no torch, no I/O). Every time here is a prediction under the named assumptions
(`Assumptions`, printed with every result); nothing is fitted to a configuration.

Memory per GPU (one model instance = tp x pp GPUs):
- weights: the linear layers of the transformer blocks in the serving precision, everything else
  (embeddings, LM head, norms, biases) in 16-bit, as bitsandbytes / vLLM / TensorRT-LLM keep them.
  bf16/fp16 2 B per weight; fp8 1 B + one fp32 scale per matrix (per-tensor scaling, the FP8 recipe
  of TensorRT-LLM and vLLM); int8 1 B + one fp32 scale per output row (LLM.int8(), Dettmers et al.
  2022 sec. 3.1); int4 = NF4 with block-64 absmax, double-quantized (QLoRA, Dettmers et al. 2023
  sec. 3: 0.5 B + 0.127 bit per weight; AWQ/GPTQ group-128 fp16 scales cost about the same). Bytes
  come from gpukit.quant. Tensor parallelism shards every matrix and the vocabulary (Megatron-LM,
  Shoeybi et al. 2019 sec. 3); pipeline parallelism gives each stage ceil(L/pp) layers, the first the
  embedding and the last the LM head (the larger stage sets the memory per GPU).
- KV cache: 2 x layers x kv_heads x head_dim x bytes per token (keys and values; grouped-query
  attention stores n_kv_heads heads, Ainslie et al. 2023), kv heads split over tp (replicated when
  tp > n_kv_heads), in the KV dtype.
- activations: one layer's working set for the largest prefill chunk (no backward: nothing is kept
  across layers), the same convention as gpukit.memory's inference branch, plus fp32 logits of the
  sampled positions.
- the runtime's reserve: a serving engine pre-allocates a fixed share of GPU memory and pages the KV
  cache inside it (vLLM, Kwon et al. 2023 sec. 4; `gpu_memory_utilization` default 0.9). The usable
  memory is that share; the KV cache gets what weights and activations leave.

Time per step, per-op roofline (Williams et al. 2009): each part takes max(bytes / (share x HBM
bandwidth), FLOPs / (share x dense peak)); the dense matmuls (weights read once per step for the
whole batch) and the attention over the KV cache (each sequence reads its own cache) are separate
parts, so at small batch decode is bandwidth-bound (time ~ weight bytes / bandwidth, Databricks 2023
"LLM Inference Performance Engineering: Best Practices", MBU) and past the ridge point
(batch ~ peak / bandwidth x bytes per weight / 2) the dense part becomes compute-bound. FLOPs per
token from gpukit.compute.flops_per_token (2N + attention, Kaplan et al. 2020 table 1).
Tensor parallelism adds two all-reduces per layer per step (after attention and after the MLP,
Megatron-LM sec. 3) of tokens x hidden x 2 bytes, timed with gpukit.comm.collective_time over the
chosen link: in decode these messages are a few KB, so the latency term dominates. Pipeline
parallelism: a token passes every stage (ITL = pp x stage time + pp-1 point-to-point sends); with
pp micro-batches in flight every stage stays busy, so the throughput is batch / ITL.

Serving: TTFT = non-GPU time + prefill of the prompt (which also yields the first token); ITL = one
decode step at the batch; request latency = TTFT + (O - 1) x ITL. Capacity of a replica under
continuous batching (Orca, Yu et al. 2022; vLLM): GPU seconds per request = prefill(I) +
O x ITL(B) / B at the largest batch B the KV cache allows. Replicas for a rate = ceil(rate /
(capacity x target utilization)). A fixed per-request time outside the GPUs on a shared resource
(database, state store, tokenizer) caps throughput at workers / time whatever the GPUs do
(Amdahl 1967). `simulate` (gpukit.serving_sim) runs a discrete-event simulation of continuous batching
with simpy. Validation against published serving measurements: gpukit.serving_published (its names
are also reachable here: inference.validate_published, ...).

Used in: notebooks/07_inference, gpukit.cli.serve, gpukit.audits.inference, gpukit.cost.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

from gpukit import quant
from gpukit.comm import collective_time
from gpukit.compute import flops_per_token, layer_matmul_params
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import json_safe as _json_safe
from gpukit.serving_sim import MAX_TOKENS_PER_STEP, SimResult, simulate  # noqa: F401 (public here too)
from gpukit.specs import ModelSpec
from gpukit.units import GB, GiB, dtype_bytes

PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4")
KV_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp32")
ACT_BYTES = 2  # activations and TP all-reduce messages in 16-bit
MAX_NUM_SEQS = 256  # vLLM's default max_num_seqs (engine arguments): the batch cap of a replica
DEFAULT_GPUS_PER_NODE = 8
FP8_SCALE_BYTES = 4  # one fp32 scale per weight matrix (per-tensor FP8)


@dataclass(frozen=True)
class Assumptions:
    """What the predictions assume (printed with every result). Change any with keyword arguments.

    hbm_share: achieved / peak HBM bandwidth in decode. Databricks (2023, "LLM Inference Performance
      Engineering", fig. 2-3) measured a model-bandwidth utilization of 55-60% at batch 1 on A100/H100
      with TensorRT-LLM at 1-2-way TP; well-tuned kernels reach 70-80% of HBM peak on large reads.
      Default 0.65: between the two.
    flops_share: achieved / dense peak in prefill (large matmuls): 0.5, the MFU that well-tuned
      serving prefills and Megatron training report (Narayanan et al. 2021: 52% of peak on A100).
    reserve_fraction: the share of GPU memory the engine pre-allocates (vLLM gpu_memory_utilization
      default 0.9).
    prefill_chunk_tokens: tokens per prefill pass when sizing activations (vLLM's default
      max_num_batched_tokens with chunked prefill is 2048 on large GPUs).
    non_gpu_s: per-request time outside the GPUs (network, tokenization, a database): added to the
      latency; with non_gpu_workers it also caps throughput (Amdahl).
    target_utilization: replicas are sized so that each runs at most this share of its capacity.
    gqa_kv_reuse: decode attention reads each KV head once per step for all the query heads of its
      group (FlashDecoding, vLLM's paged attention, TensorRT-LLM's XQA kernel from v0.8). False: once
      per query head, n_heads / n_kv_heads times (TensorRT-LLM's masked MHA before XQA; NVIDIA's XQA
      blog reports 1.9-2.4x more Llama-70B throughput at 128/2048 tokens with it:
      https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/XQA-kernel.md).
    """

    hbm_share: float = 0.65
    flops_share: float = 0.5
    reserve_fraction: float = 0.9
    prefill_chunk_tokens: int = 2048
    non_gpu_s: float = 0.0
    non_gpu_workers: int | None = None  # None: the non-GPU part scales with the load (no cap)
    target_utilization: float = 0.8
    step_overhead_s: float = 0.0  # fixed time per forward pass (kernel launches, framework dispatch)
    gqa_kv_reuse: bool = True

    def __post_init__(self):
        for f in ("hbm_share", "flops_share", "reserve_fraction", "target_utilization"):
            v = require_positive(f, getattr(self, f))
            if v > 1:
                raise ValueError(f"{f} must be in (0, 1], got {v}")
        require_positive_int("prefill_chunk_tokens", self.prefill_chunk_tokens)
        require_positive("non_gpu_s", self.non_gpu_s, allow_zero=True)
        require_positive("step_overhead_s", self.step_overhead_s, allow_zero=True)
        if self.non_gpu_workers is not None:
            require_positive_int("non_gpu_workers", self.non_gpu_workers)

    def lines(self) -> tuple[str, ...]:
        out = [f"decode reaches {self.hbm_share:.0%} of HBM bandwidth, prefill {self.flops_share:.0%} of the "
               f"dense peak (stated shares, not measured)",
               f"the engine pre-allocates {self.reserve_fraction:.0%} of GPU memory (vLLM gpu_memory_utilization)",
               f"activations sized for a prefill chunk of {self.prefill_chunk_tokens} tokens",
               "weights, KV cache and activations each cross HBM once per step (ideal tiling)"]
        if not self.gqa_kv_reuse:
            out.append("decode attention reads each KV head once per query head (no GQA reuse: TensorRT-LLM "
                       "masked MHA before the XQA kernel)")
        if self.step_overhead_s:
            out.append(f"fixed {self.step_overhead_s * 1e3:.3g} ms per forward pass (dispatch/launch)")
        if self.non_gpu_s:
            cap = (f", on {self.non_gpu_workers} shared worker(s): at most {self.non_gpu_workers / self.non_gpu_s:.4g} "
                   "req/s" if self.non_gpu_workers else "")
            out.append(f"{self.non_gpu_s * 1e3:.3g} ms per request outside the GPUs{cap}")
        return tuple(out)


# ------------------------------------------------------------------------------------ helpers
def compute_dtype(gpu, precision: str) -> str:
    """The dtype whose dense peak sets prefill speed: fp8 where the GPU has fp8 units (W8A8), else
    16-bit (weight-only int8/int4/fp8 dequantize to 16-bit before the matmul: W8A16, W4A16)."""
    require_choice("precision", precision, PRECISIONS)
    if precision == "fp8" and gpu.has("fp8"):
        return "fp8"
    if precision == "fp16" or not gpu.has("bf16"):
        return "fp16"
    return "bf16"


def default_kv_dtype(gpu) -> str:
    """bf16, or fp16 on GPUs without bf16 units (V100, T4); bf16 when no GPU is given (a CPU)."""
    return "bf16" if gpu is None else gpu.half_dtype


def layer_weight_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of one transformer block's weights in `precision` (linear layers quantized, rest 16-bit)."""
    require_choice("precision", precision, PRECISIONS)
    n_lin, rows = model.linear_weights
    n_mats = len(model.linear_shapes)
    if precision in ("bf16", "fp16"):
        lin = 2.0 * n_lin
    elif precision == "fp8":
        lin = 1.0 * n_lin + FP8_SCALE_BYTES * n_mats
    elif precision == "int8":
        lin = quant.quantized_bytes(n_lin, "int8", n_rows=rows)
    else:
        lin = quant.quantized_bytes(n_lin, "nf4", double_quant=True)
    return lin + 2.0 * (model.layer_params() - n_lin)


def kv_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16", tp: int = 1, pp: int = 1) -> float:
    """KV-cache bytes per token on one GPU: 2 x layers x kv_heads x head_dim x bytes (GQA-aware;
    kv heads split over tp, replicated when tp > n_kv_heads; layers split over pp)."""
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    kv_heads = math.ceil(model.n_kv_heads / require_positive_int("tp", tp))
    layers = math.ceil(model.n_layers / require_positive_int("pp", pp))
    return 2.0 * layers * kv_heads * model.head_dim * dtype_bytes(kv_dtype)


def _split(model: ModelSpec, tp: int, pp: int) -> None:
    if model.arch != "decoder":
        raise ValueError(f"model must be a decoder to serve tokens, got {model.name} ({model.arch})")
    if model.n_heads % tp:
        raise ValueError(f"tp must divide n_heads {model.n_heads} of {model.name}, got {tp}")
    if model.n_kv_heads % tp and tp % model.n_kv_heads:
        raise ValueError(f"tp must divide n_kv_heads {model.n_kv_heads} or be a multiple of it, got {tp}")
    if pp > model.n_layers:
        raise ValueError(f"pp must be <= n_layers {model.n_layers}, got {pp}")


# ------------------------------------------------------------------------------------ memory
@dataclass(frozen=True)
class ServingMemory:
    """Bytes on the fullest GPU of one instance and what the KV cache can hold."""

    weights_bytes: float
    kv_cache_bytes: float  # for `batch` sequences of `context` tokens
    activations_bytes: float
    usable_bytes: float  # reserve_fraction x GPU memory
    gpu_memory_bytes: float
    kv_bytes_per_token: float  # per GPU
    context: int
    batch: int
    max_batch: int  # sequences of `context` tokens the KV budget holds (0: the weights do not fit)

    @property
    def total_bytes(self) -> float:
        return self.weights_bytes + self.kv_cache_bytes + self.activations_bytes

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.usable_bytes

    @property
    def kv_budget_bytes(self) -> float:
        return max(0.0, self.usable_bytes - self.weights_bytes - self.activations_bytes)

    @property
    def max_context(self) -> int:
        """Tokens one sequence may hold at batch `batch` (0 if the weights do not fit)."""
        return int(self.kv_budget_bytes // (self.kv_bytes_per_token * self.batch))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(total_bytes=self.total_bytes, fits=self.fits, kv_budget_bytes=self.kv_budget_bytes,
                 max_context=self.max_context)
        return d

    def to_frame(self):
        import pandas as pd

        rows = [("weights", self.weights_bytes), ("kv_cache", self.kv_cache_bytes),
                ("activations", self.activations_bytes), ("free", max(0.0, self.usable_bytes - self.total_bytes)),
                ("engine reserve", self.gpu_memory_bytes - self.usable_bytes)]
        return pd.DataFrame([(k, v, v / GiB) for k, v in rows], columns=["part", "bytes", "gib"])


def weights_per_gpu(model: ModelSpec, precision: str = "bf16", tp: int = 1, pp: int = 1) -> float:
    """Weight bytes on the fullest GPU of a tp x pp instance (module docstring)."""
    _split(model, tp, pp)
    layers = math.ceil(model.n_layers / pp)
    emb = 2.0 * model.embedding_params()
    head = 2.0 * model.head_params()
    extra = emb + head if pp == 1 else max(emb, head)
    return (layers * layer_weight_bytes(model, precision) + extra) / tp


def weight_bytes_read_per_step(model: ModelSpec, precision: str = "bf16", tp: int = 1, pp: int = 1) -> float:
    """Weight bytes one GPU reads per decode step: its layers and the LM head; the embedding table is
    a lookup (b rows), unless tied to the head. Per pipeline stage when pp > 1 (the larger stage)."""
    _split(model, tp, pp)
    layers = math.ceil(model.n_layers / pp)
    head = 2.0 * (model.vocab * model.hidden + model.norm_params())
    return (layers * layer_weight_bytes(model, precision) + head) / tp


def serving_memory(model: ModelSpec, gpu, *, precision: str = "bf16", kv_dtype: str | None = None,
                   tp: int = 1, pp: int = 1, batch: int = 1, context: int = 2048,
                   assumptions: Assumptions = Assumptions()) -> ServingMemory:  # noqa: B008 (frozen)
    """Memory on the fullest GPU of one instance (module docstring) and the largest batch that fits."""
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    batch, context = require_positive_int("batch", batch), require_positive_int("context", context)
    kv_dtype = kv_dtype or default_kv_dtype(gpu)
    _split(model, tp, pp)
    w = weights_per_gpu(model, precision, tp, pp)
    kvt = kv_bytes_per_token(model, kv_dtype, tp, pp)
    chunk = min(assumptions.prefill_chunk_tokens, batch * context)
    mlp = (3 if model.mlp == "swiglu" else 1) * model.ffn_hidden  # gate, up and their product
    live = 2 * model.hidden + (2 * model.q_dim + 2 * model.kv_dim + mlp) / tp
    act = ACT_BYTES * chunk * live + 4.0 * batch * model.vocab / tp
    usable = assumptions.reserve_fraction * gpu.memory_bytes
    budget = usable - w - act
    max_batch = int(budget // (kvt * context)) if budget > 0 else 0
    return ServingMemory(weights_bytes=w, kv_cache_bytes=kvt * batch * context, activations_bytes=act,
                         usable_bytes=usable, gpu_memory_bytes=float(gpu.memory_bytes), kv_bytes_per_token=kvt,
                         context=context, batch=batch, max_batch=max_batch)


# ------------------------------------------------------------------------------------ step times
@dataclass(frozen=True)
class StepTime:
    """One forward pass of an instance (prefill or decode) on the roofline, with its TP/PP terms."""

    mode: str
    tokens: int  # tokens processed per step (decode: batch; prefill: batch x prompt)
    dense_flops: float  # per GPU
    dense_bytes: float
    attn_flops: float
    attn_bytes: float
    dense_s: float
    attn_s: float
    tp_comm_s: float
    pp_comm_s: float
    overhead_s: float
    pp: int
    bound: str  # dense part: memory | compute

    @property
    def stage_s(self) -> float:
        return self.dense_s + self.attn_s + self.tp_comm_s + self.overhead_s

    @property
    def time_s(self) -> float:
        """Latency of the pass: all pp stages one after another, plus the sends between them."""
        return self.pp * self.stage_s + self.pp_comm_s

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(stage_s=self.stage_s, time_s=self.time_s)
        return d


def _rates(gpu, precision: str, a: Assumptions, peak_tflops: float | None, bandwidth_gbps: float | None):
    if gpu is None and (peak_tflops is None or bandwidth_gbps is None):
        raise ValueError("give gpu, or both peak_tflops and bandwidth_gbps (e.g. measured on this machine)")
    peak = peak_tflops if peak_tflops is not None else gpu.peak_tflops(compute_dtype(gpu, precision))
    bw = bandwidth_gbps if bandwidth_gbps is not None else gpu.hbm_bandwidth_gbps
    return require_positive("peak_tflops", peak) * 1e12 * a.flops_share, require_positive(
        "bandwidth_gbps", bw) * GB * a.hbm_share


def _tp_comm(model: ModelSpec, tokens: int, tp: int, pp: int, link) -> float:
    """Two all-reduces per layer of tokens x hidden x 2 bytes (Megatron-LM sec. 3), per stage."""
    if tp == 1:
        return 0.0
    if link is None:
        raise ValueError("link is required when tp > 1 (e.g. catalog nvlink4)")
    per = collective_time("all_reduce", tokens * model.hidden * ACT_BYTES, tp, link).time_s
    return 2 * math.ceil(model.n_layers / pp) * per


def _pp_comm(model: ModelSpec, tokens: int, pp: int, link) -> float:
    if pp == 1:
        return 0.0
    if link is None:
        raise ValueError("pp_link is required when pp > 1 (e.g. catalog ib-ndr)")
    return (pp - 1) * collective_time("send_recv", tokens * model.hidden * ACT_BYTES, 2, link).time_s


def decode_step(model: ModelSpec, gpu, *, batch: int = 1, context: int = 2048, precision: str = "bf16",
                kv_dtype: str | None = None, tp: int = 1, pp: int = 1, link=None, pp_link=None,
                assumptions: Assumptions = Assumptions(),  # noqa: B008 (frozen)
                peak_tflops: float | None = None, bandwidth_gbps: float | None = None,
                attn_tflops: float | None = None) -> StepTime:
    """One decode step: `batch` sequences each add one token after `context` cached tokens (with pp
    stages, as pp micro-batches of ceil(batch/pp): the figures are per stage and micro-batch).

    Per GPU: dense part max(weight bytes read / bw, batch x (2N + 2Vh) / tp / flops); attention part
    max(batch x context x KV bytes / bw, batch x 4 L H Q context / tp / attention flops); + TP all-reduces.
    peak_tflops / bandwidth_gbps replace the catalog figures (e.g. a measured CPU profile).
    attn_tflops: the rate of decode attention's products, which are matrix-vector products (each
    sequence multiplies its own cache by the query rows of one KV group, n_heads / n_kv_heads rows), not
    the batch-wide GEMM of the dense part; None takes the dense rate (a GPU's decode attention is
    bandwidth-bound either way). A CPU's one-row product runs far below its GEMM rate
    (gpukit.bench.decode measures it)."""
    batch, context = require_positive_int("batch", batch), require_positive_int("context", context)
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    kv_dtype = kv_dtype or default_kv_dtype(gpu)
    _split(model, tp, pp)
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    f = flops_per_token(model, seq_len=context, mode="decode", context=context, include_embeddings=True)
    share = 1.0 / (tp * pp)
    mb = -(-batch // pp)  # with pp stages the batch runs as pp micro-batches, one per stage at a time
    dense_flops = mb * (f.get("dense_forward") + f.get("lm_head_forward")) * share
    attn_flops = mb * f.get("attention_forward") * share
    dense_bytes = weight_bytes_read_per_step(model, precision, tp, pp)
    attn_bytes = mb * context * kv_bytes_per_token(model, kv_dtype, tp, pp)
    if not assumptions.gqa_kv_reuse:  # each query head streams its group's KV head on its own
        attn_bytes *= (model.n_heads / tp) / math.ceil(model.n_kv_heads / tp)
    dense_mem, dense_cmp = dense_bytes / bw, dense_flops / flops_rate
    attn_rate = flops_rate if attn_tflops is None else (
        require_positive("attn_tflops", attn_tflops) * 1e12 * assumptions.flops_share)
    attn_s = max(attn_bytes / bw, attn_flops / attn_rate)
    return StepTime(mode="decode", tokens=batch, dense_flops=dense_flops, dense_bytes=dense_bytes,
                    attn_flops=attn_flops, attn_bytes=attn_bytes, dense_s=max(dense_mem, dense_cmp), attn_s=attn_s,
                    tp_comm_s=_tp_comm(model, mb, tp, pp, link), pp_comm_s=_pp_comm(model, mb, pp, pp_link),
                    overhead_s=assumptions.step_overhead_s, pp=pp,
                    bound="compute" if dense_cmp > dense_mem else "memory")


def prefill_step(model: ModelSpec, gpu, *, prompt_tokens: int = 1024, batch: int = 1, precision: str = "bf16",
                 kv_dtype: str | None = None, tp: int = 1, pp: int = 1, link=None, pp_link=None,
                 assumptions: Assumptions = Assumptions(),  # noqa: B008 (frozen)
                 peak_tflops: float | None = None, bandwidth_gbps: float | None = None) -> StepTime:
    """Prefill of `batch` prompts of `prompt_tokens` tokens: causal attention (half the score FLOPs),
    LM head for the last position only; compute-bound unless the prompt is a few tokens."""
    s, batch = require_positive_int("prompt_tokens", prompt_tokens), require_positive_int("batch", batch)
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    kv_dtype = kv_dtype or default_kv_dtype(gpu)
    _split(model, tp, pp)
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    f = flops_per_token(model, seq_len=s, mode="prefill", causal=True)
    share = 1.0 / (tp * pp)
    dense_flops = batch * (s * f.get("dense_forward") + 2.0 * model.vocab * model.hidden) * share
    attn_flops = batch * s * f.get("attention_forward") * share
    dense_bytes = weight_bytes_read_per_step(model, precision, tp, pp)
    attn_bytes = batch * s * kv_bytes_per_token(model, kv_dtype, tp, pp)  # the cache written once
    dense_mem, dense_cmp = dense_bytes / bw, dense_flops / flops_rate
    return StepTime(mode="prefill", tokens=batch * s, dense_flops=dense_flops, dense_bytes=dense_bytes,
                    attn_flops=attn_flops, attn_bytes=attn_bytes, dense_s=max(dense_mem, dense_cmp),
                    attn_s=max(attn_bytes / bw, attn_flops / flops_rate),
                    tp_comm_s=_tp_comm(model, batch * s, tp, pp, link),
                    pp_comm_s=_pp_comm(model, batch * s, pp, pp_link), overhead_s=assumptions.step_overhead_s,
                    pp=pp, bound="compute" if dense_cmp > dense_mem else "memory")


def ridge_batch(model: ModelSpec, gpu, precision: str = "bf16", assumptions: Assumptions = Assumptions(),  # noqa: B008
                peak_tflops: float | None = None, bandwidth_gbps: float | None = None) -> float:
    """Decode batch at which the dense part turns compute-bound: weight bytes / bw = batch x 2N / flops."""
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    n = layer_matmul_params(model) + model.vocab * model.hidden
    return weight_bytes_read_per_step(model, precision) / bw * flops_rate / (2.0 * n)


# ------------------------------------------------------------------------------------ serving
def serving_cost_per_million_tokens(price_per_gpu_hour: float, gpus: int, tokens_per_s: float) -> float:
    """USD per million tokens: (price per GPU-hour x GPUs) / (tokens per hour) x 1e6. Used by gpukit.cost."""
    price = require_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    gpus = require_positive_int("gpus", gpus)
    rate = require_positive("tokens_per_s", tokens_per_s)
    return price * gpus / (rate * 3600.0) * 1e6


@dataclass(frozen=True)
class ServePlan:
    """Everything `gpukit serve` prints: memory, TTFT, ITL, throughput, replicas, percentiles, cost."""

    model: str
    gpu: str
    precision: str
    kv_dtype: str
    tp: int
    pp: int
    gpus_per_replica: int
    batch: int
    input_tokens: int
    output_tokens: int
    context: int
    memory: ServingMemory
    prefill: StepTime
    decode: StepTime
    decode_at_max: StepTime | None  # decode step at the largest batch (capacity)
    ttft_s: float
    itl_s: float
    request_latency_s: float
    capacity_req_per_s: float  # one replica, at the largest batch (0 if nothing fits)
    max_batch: int
    assumptions: Assumptions
    rate: float | None = None
    replicas: int | None = None
    simulation: SimResult | None = None
    price_per_gpu_hour: float | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def fits(self) -> bool:
        return self.memory.fits

    @property
    def decode_tokens_per_s(self) -> float:
        return 1.0 / self.itl_s

    @property
    def total_tokens_per_s(self) -> float:
        return self.batch / self.itl_s

    @property
    def max_total_tokens_per_s(self) -> float:
        """Output tokens/s of one replica at capacity (continuous batching at the largest batch)."""
        return self.capacity_req_per_s * self.output_tokens

    @property
    def gpus(self) -> int:
        return self.gpus_per_replica * (self.replicas or 1)

    @property
    def cost_per_million_tokens_usd(self) -> float | None:
        """At the offered rate (with --rate) or at one replica's capacity; output tokens."""
        if self.price_per_gpu_hour is None:
            return None
        tps = self.rate * self.output_tokens if self.rate else self.max_total_tokens_per_s
        if tps <= 0:
            return None
        return serving_cost_per_million_tokens(self.price_per_gpu_hour, self.gpus, tps)

    def to_json_dict(self) -> dict:
        d = {"model": self.model, "gpu": self.gpu, "precision": self.precision, "kv_dtype": self.kv_dtype,
             "tp": self.tp, "pp": self.pp, "gpus_per_replica": self.gpus_per_replica, "batch": self.batch,
             "input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "context": self.context,
             "memory_per_gpu_bytes": self.memory.total_bytes, "fits": self.fits, "max_batch": self.max_batch,
             "ttft_s": self.ttft_s, "itl_s": self.itl_s, "decode_tokens_per_s": self.decode_tokens_per_s,
             "total_tokens_per_s": self.total_tokens_per_s, "max_total_tokens_per_s": self.max_total_tokens_per_s,
             "request_latency_s": self.request_latency_s, "capacity_req_per_s": self.capacity_req_per_s,
             "decode_bound": self.decode.bound, "memory": self.memory.to_json_dict()}
        if self.rate is not None:
            d.update(rate=self.rate, replicas=self.replicas, gpus=self.gpus)
            if self.simulation is not None:
                s = self.simulation
                d.update(p50_latency_s=s.p50_latency_s, p99_latency_s=s.p99_latency_s, p50_ttft_s=s.p50_ttft_s,
                         p99_ttft_s=s.p99_ttft_s, simulated_requests=s.completed)
        if self.price_per_gpu_hour is not None:
            d.update(price_per_gpu_hour=self.price_per_gpu_hour,
                     cost_per_million_tokens_usd=self.cost_per_million_tokens_usd)
        d["assumptions"] = list(self.assumptions.lines())
        d["notes"] = list(self.notes)
        return _json_safe(d)

    def to_text(self) -> str:
        m = self.memory
        lines = [f"{self.model} on {self.gpu}: tp={self.tp} pp={self.pp} ({self.gpus_per_replica} GPU(s) per replica), "
                 f"{self.precision} weights, {self.kv_dtype} KV cache",
                 f"  memory per GPU: {m.total_bytes / GiB:.1f} GiB (weights {m.weights_bytes / GiB:.1f}, KV "
                 f"{m.kv_cache_bytes / GiB:.1f}, activations {m.activations_bytes / GiB:.2f}) of "
                 f"{m.usable_bytes / GiB:.1f} usable -> {'fits' if self.fits else 'DOES NOT FIT'}; max batch "
                 f"{self.max_batch} at {self.context} tokens",
                 f"  batch {self.batch}: TTFT {self.ttft_s * 1e3:.1f} ms, ITL {self.itl_s * 1e3:.2f} ms "
                 f"({self.decode.bound}-bound), {self.decode_tokens_per_s:.1f} tok/s per sequence, "
                 f"{self.total_tokens_per_s:.0f} tok/s total",
                 f"  one replica at capacity: {self.capacity_req_per_s:.3g} req/s, {self.max_total_tokens_per_s:.0f} "
                 f"output tok/s"]
        if self.rate is not None:
            lines.append(f"  rate {self.rate:g} req/s -> {self.replicas} replica(s), {self.gpus} GPU(s)")
            if self.simulation is not None:
                s = self.simulation
                lines.append(f"  simulated latency p50 {s.p50_latency_s:.3g} s, p99 {s.p99_latency_s:.3g} s; TTFT p50 "
                             f"{s.p50_ttft_s * 1e3:.0f} ms, p99 {s.p99_ttft_s * 1e3:.0f} ms")
        if self.cost_per_million_tokens_usd is not None:
            lines.append(f"  cost: ${self.cost_per_million_tokens_usd:.3g} per million output tokens")
        lines += [f"  assumes: {x}" for x in self.assumptions.lines()] + [f"  note: {x}" for x in self.notes]
        return "\n".join(lines)


def default_link(gpu, tp: int):
    """The link inside a node for a tp-way group of this GPU (catalog.intra_node_link); None for tp 1."""
    from gpukit.catalog import intra_node_link

    return None if tp == 1 else intra_node_link(gpu, tp)


DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS = 1000, 200


def default_precision(gpu) -> str:
    """bf16, or fp16 on GPUs without bf16 units (V100, T4): what an engine loads 16-bit weights as."""
    return default_kv_dtype(gpu)


def default_lengths(model: ModelSpec, input_tokens: int | None = None, output_tokens: int | None = None,
                    context: int | None = None) -> tuple[int, int]:
    """Prompt and output lengths when not given: 1000 and 200, shrunk to fit the model's context window
    (or `context`) when they would not (GPT-2's 1024 tokens: 824 + 200); a length the user gave is kept."""
    limit = model.max_seq if context is None else context
    o = output_tokens if output_tokens is not None else min(DEFAULT_OUTPUT_TOKENS, max(1, limit // 5))
    i = input_tokens if input_tokens is not None else max(1, min(DEFAULT_INPUT_TOKENS, limit - o))
    return i, o


def serve(model: ModelSpec, gpu, *, gpus: int | None = None, tp: int | None = None, precision: str | None = None,
          kv_dtype: str | None = None, batch: int = 1, context: int | None = None, input_tokens: int | None = None,
          output_tokens: int | None = None, rate: float | None = None, price_per_gpu_hour: float | None = None,
          link=None, pp_link=None, gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
          assumptions: Assumptions = Assumptions(),  # noqa: B008 (frozen)
          simulate_requests: int = 400, seed: int = 0) -> ServePlan:
    """Plan serving `model` on `gpu` (module docstring). gpus = GPUs per replica (tp x pp); tp defaults
    to min(gpus, gpus_per_node); pp = gpus / tp. With `rate` (requests/s): replicas and a simulated
    p50/p99 latency at rate / replicas per replica. precision None: default_precision(gpu); input and
    output tokens None: default_lengths (fitted to the model's context window)."""
    if model.arch != "decoder":
        raise ValueError(f"model must be a decoder to serve tokens, got {model.name} ({model.arch})")
    precision = require_choice("precision", precision or default_precision(gpu), PRECISIONS)
    kv_dtype = kv_dtype or default_kv_dtype(gpu)
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    if context is not None:
        context = require_positive_int("context", context)
    i, o = default_lengths(model, input_tokens, output_tokens, context)
    i, o = require_positive_int("input_tokens", i), require_positive_int("output_tokens", o)
    batch = require_positive_int("batch", batch)
    gpn = require_positive_int("gpus_per_node", gpus_per_node)
    context = i + o if context is None else require_positive_int("context", context)
    if context < i + o:
        raise ValueError(f"context must be >= input_tokens + output_tokens = {i + o}, got {context}")
    if context > model.max_seq:
        raise ValueError(f"context must be <= {model.name}'s max_seq {model.max_seq}, got {context}")
    if gpus is None:
        gpus = tp or 1
    gpus = require_positive_int("gpus", gpus)
    tp = require_positive_int("tp", tp) if tp is not None else min(gpus, gpn)
    if gpus % tp:
        raise ValueError(f"tp must divide gpus (GPUs per replica = tp x pp) {gpus}, got {tp}")
    if tp > gpn:
        raise ValueError(f"tp must be <= gpus_per_node {gpn} (tensor parallelism stays inside a node), got {tp}")
    pp = gpus // tp
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = require_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    if rate is not None:
        rate = require_positive("rate", rate)
    link = link if link is not None else default_link(gpu, tp)
    if pp > 1 and pp_link is None:
        from gpukit.catalog import get_interconnect

        pp_link = get_interconnect("ib-ndr")
    notes = []
    if pp > 1:
        notes.append(f"pipeline stages talk over {getattr(pp_link, 'name', pp_link)}; each token passes all {pp} stages")
    if (input_tokens is None and i != DEFAULT_INPUT_TOKENS) or (output_tokens is None and o != DEFAULT_OUTPUT_TOKENS):
        notes.append(f"default lengths {i} + {o} tokens: 1000 + 200 do not fit {model.name}'s "
                     f"{context or model.max_seq}-token context")
    if precision == "bf16" and not gpu.has("bf16"):
        notes.append(f"{gpu.name} has no bf16 units: 16-bit weights run as fp16 (same bytes, the fp16 peak)")
    if precision == "fp8" and not gpu.has("fp8"):
        notes.append(f"{gpu.name} has no fp8 units: fp8 weights are dequantized to 16-bit (weight-only)")
    a = assumptions
    kw = dict(precision=precision, kv_dtype=kv_dtype, tp=tp, pp=pp, link=link, pp_link=pp_link, assumptions=a)
    mem = serving_memory(model, gpu, precision=precision, kv_dtype=kv_dtype, tp=tp, pp=pp, batch=batch,
                         context=context, assumptions=a)
    max_batch = min(mem.max_batch, MAX_NUM_SEQS)
    if not mem.fits:
        try:
            need_tp, need_pp = min_gpus_to_fit(model, gpu, precision, context=context, batch=batch,
                                               gpus_per_node=gpn, assumptions=assumptions)
            hint = f"needs --gpus {need_tp * need_pp} (tp={need_tp}, pp={need_pp}) or a smaller precision"
        except ValueError:
            hint = "fits no layout of up to 1024 GPUs"
        notes.append(f"DOES NOT FIT: the times are what this layout would give with enough memory; {hint}")
    mean_ctx = i + (o + 1) // 2  # the average cached length over a request's decode
    pre = prefill_step(model, gpu, prompt_tokens=i, **kw)
    dec = decode_step(model, gpu, batch=batch, context=mean_ctx, **kw)
    ttft = a.non_gpu_s + pre.time_s
    itl = dec.time_s
    dec_max, capacity = None, 0.0
    if max_batch >= 1:
        dec_max = decode_step(model, gpu, batch=max_batch, context=mean_ctx, **kw)
        capacity = replica_capacity(pre.time_s, dec_max.time_s, max_batch, o, pp)
    if a.non_gpu_workers:
        notes.append(f"non-GPU cap {a.non_gpu_workers / a.non_gpu_s:.4g} req/s for all replicas together (Amdahl)")
    replicas = sim = None
    if rate is not None:
        replicas = replicas_for_rate(rate, capacity, a)
        if simulate_requests and capacity > 0:
            sim = simulate(lambda n, ctx: decode_step(model, gpu, batch=n, context=ctx, **kw).time_s,
                           lambda n: prefill_step(model, gpu, prompt_tokens=i, batch=n, **kw).time_s,
                           rate=rate / replicas, input_tokens=i, output_tokens=o, max_batch=max_batch,
                           n_requests=simulate_requests, seed=seed, non_gpu_s=a.non_gpu_s)
    return ServePlan(model=model.name, gpu=gpu.name, precision=precision, kv_dtype=kv_dtype, tp=tp, pp=pp,
                     gpus_per_replica=gpus, batch=batch, input_tokens=i, output_tokens=o, context=context, memory=mem,
                     prefill=pre, decode=dec, decode_at_max=dec_max, ttft_s=ttft, itl_s=itl,
                     request_latency_s=ttft + (o - 1) * itl, capacity_req_per_s=capacity, max_batch=max_batch,
                     assumptions=a, rate=rate, replicas=replicas, simulation=sim,
                     price_per_gpu_hour=price_per_gpu_hour, notes=tuple(notes))


def replica_capacity(prefill_s: float, decode_step_s: float, batch: int, output_tokens: int, pp: int = 1) -> float:
    """Requests/s of one replica under continuous batching: 1 / (prefill + O x step / batch).
    Prefill time is the single-prompt latency; with pp stages pipelined it occupies 1/pp of it."""
    per_request = prefill_s / pp + output_tokens * decode_step_s / batch
    return 1.0 / per_request


def replicas_for_rate(rate: float, capacity_req_per_s: float, assumptions: Assumptions = Assumptions()) -> int:  # noqa: B008
    """Smallest replica count that keeps each under target_utilization; ValueError if the non-GPU
    cap (non_gpu_workers / non_gpu_s) is below the rate, since no number of GPUs helps then."""
    rate = require_positive("rate", rate)
    a = assumptions
    if a.non_gpu_workers and a.non_gpu_s > 0 and rate > a.non_gpu_workers / a.non_gpu_s:
        raise ValueError(f"rate must be <= the non-GPU cap {a.non_gpu_workers / a.non_gpu_s:.4g} req/s "
                         f"({a.non_gpu_workers} worker(s) x 1/{a.non_gpu_s:g} s): more GPUs cannot help (Amdahl)")
    if capacity_req_per_s <= 0:
        raise ValueError("the model does not fit this layout: no replica has capacity (more GPUs or a smaller "
                         "precision)")
    return max(1, math.ceil(rate / (capacity_req_per_s * a.target_utilization) - 1e-9))


def system_capacity(replicas: int, capacity_req_per_s: float, non_gpu_s: float = 0.0,
                    non_gpu_workers: int | None = None) -> float:
    """Requests/s of the whole service: min(replicas x replica capacity, workers / non-GPU time)."""
    replicas = require_positive_int("replicas", replicas)
    gpu_cap = replicas * require_positive("capacity_req_per_s", capacity_req_per_s, allow_zero=True)
    if non_gpu_workers and non_gpu_s > 0:
        return min(gpu_cap, non_gpu_workers / non_gpu_s)
    return gpu_cap


# ------------------------------------------------------------------------------------ TP vs replicas
@dataclass(frozen=True)
class LayoutRow:
    layout: str
    gpus: int
    tp: int
    replicas: int
    fits: bool
    itl_s: float
    ttft_s: float
    tokens_per_s_per_seq: float
    capacity_tokens_per_s: float  # output tokens/s of all replicas at capacity
    tokens_per_s_per_gpu: float


def tp_vs_replicas(model: ModelSpec, gpu, gpus: int = 8, *, precision: str = "bf16", input_tokens: int = 1000,
                   output_tokens: int = 200, assumptions: Assumptions = Assumptions()) -> tuple[LayoutRow, ...]:  # noqa: B008
    """The same `gpus` GPUs as tp x replicas for every power-of-two tp: per-user latency (batch 1)
    against output tokens/s per GPU at capacity."""
    gpus = require_positive_int("gpus", gpus)
    rows = []
    tp = 1
    while tp <= gpus:
        if gpus % tp == 0 and model.n_heads % tp == 0 and (model.n_kv_heads % tp == 0 or tp % model.n_kv_heads == 0):
            p = serve(model, gpu, gpus=tp, tp=tp, precision=precision, input_tokens=input_tokens,
                      output_tokens=output_tokens, assumptions=assumptions)
            reps = gpus // tp
            cap = reps * p.max_total_tokens_per_s
            rows.append(LayoutRow(layout=f"{reps} x tp{tp}", gpus=gpus, tp=tp, replicas=reps, fits=p.memory.max_batch >= 1,
                                  itl_s=p.itl_s, ttft_s=p.ttft_s, tokens_per_s_per_seq=p.decode_tokens_per_s,
                                  capacity_tokens_per_s=cap, tokens_per_s_per_gpu=cap / gpus))
        tp *= 2
    return tuple(rows)


def layouts_frame(rows):
    import pandas as pd

    return pd.DataFrame([asdict(r) for r in rows])


def min_gpus_to_fit(model: ModelSpec, gpu, precision: str = "bf16", context: int = 4096, batch: int = 1,
                    gpus_per_node: int = DEFAULT_GPUS_PER_NODE, max_gpus: int = 1024,
                    assumptions: Assumptions = Assumptions()) -> tuple[int, int]:  # noqa: B008
    """(tp, pp) of the smallest instance that holds the weights and `batch` x `context` of KV cache:
    tp inside a node first (1, 2, 4, 8), then pipeline stages across nodes. ValueError if none."""
    context = min(context, model.max_seq)
    for gpus in range(1, max_gpus + 1):
        tp = min(gpus, gpus_per_node)
        if gpus % tp or model.n_heads % tp or (model.n_kv_heads % tp and tp % model.n_kv_heads):
            continue
        pp = gpus // tp
        if pp > model.n_layers:
            break
        if serving_memory(model, gpu, precision=precision, tp=tp, pp=pp, batch=batch, context=context,
                          assumptions=assumptions).fits:
            return tp, pp
    raise ValueError(f"{model.name} does not fit on up to {max_gpus} x {gpu.name} in {precision}")


def load_sweep(model: ModelSpec, gpu, loads=(0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.1), *, n_requests: int = 300,
               seed: int = 0, **serve_kw):
    """Simulated latency percentiles of one replica at each offered load (a fraction of its capacity).
    Returns (ServePlan, pandas DataFrame with load, rate, p50/p99 latency and TTFT, mean batch)."""
    import pandas as pd

    plan = serve(model, gpu, **serve_kw)
    if plan.capacity_req_per_s <= 0:
        raise ValueError(f"{model.name} does not fit {plan.tp}x{gpu.name} in {plan.precision}: nothing to simulate")
    kw = dict(precision=plan.precision, kv_dtype=plan.kv_dtype, tp=plan.tp, pp=plan.pp,
              link=default_link(gpu, plan.tp), assumptions=plan.assumptions)
    if plan.pp > 1:
        from gpukit.catalog import get_interconnect

        kw["pp_link"] = get_interconnect("ib-ndr")
    rows = []
    for load in loads:
        r = require_positive("load", load) * plan.capacity_req_per_s
        s = simulate(lambda n, ctx: decode_step(model, gpu, batch=n, context=ctx, **kw).time_s,
                     lambda n: prefill_step(model, gpu, prompt_tokens=plan.input_tokens, batch=n, **kw).time_s, rate=r,
                     input_tokens=plan.input_tokens, output_tokens=plan.output_tokens, max_batch=plan.max_batch,
                     n_requests=n_requests, seed=seed, non_gpu_s=plan.assumptions.non_gpu_s)
        rows.append({"load": load, **s.to_json_dict()})
    return plan, pd.DataFrame(rows)


def with_assumptions(a: Assumptions | None = None, **changes) -> Assumptions:
    """Assumptions with some fields changed (ValueError for unknown names)."""
    a = a or Assumptions()
    unknown = [k for k in changes if k not in Assumptions.__dataclass_fields__]
    if unknown:
        raise ValueError(f"unknown assumption {unknown[0]!r}; known: {', '.join(Assumptions.__dataclass_fields__)}")
    return replace(a, **changes)


_PUBLISHED_NAMES = ("PUBLISHED_FILE", "TP_ORDERING_SOURCE", "SHARE_OF_METRIC", "published_serving",
                    "predict_published", "implied_share", "validate_published", "tp_ordering")


def __getattr__(name):  # the published-figure validation lives in gpukit.serving_published (it imports this module)
    if name in _PUBLISHED_NAMES:
        from gpukit import serving_published

        return getattr(serving_published, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
