"""Serving a model: memory per GPU and the prefill and decode steps on the roofline, with TP/PP.

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
- KV cache: gpukit.memory.kv_cache, the one formula `gpukit memory --inference` uses too: 2 x layers x
  kv_heads x head_dim x bytes per token (keys and values; grouped-query attention stores n_kv_heads
  heads, Ainslie et al. 2023), kv heads split over tp (replicated when tp > n_kv_heads), in the KV
  dtype, for min(context, W) tokens per sequence with a sliding window W (ModelSpec.kv_tokens: Mistral
  7B's rolling buffer cache, Jiang et al. 2023 sec. 2; vLLM frees the blocks outside the window,
  TensorRT-LLM's cyclic KV cache and HF's SlidingWindowCache hold W).
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

Split by reason to change: the serving plan (TTFT, ITL, a replica's capacity, replicas for a rate,
the smallest instance that fits, TP against replicas, `serve`) in gpukit.inference.capacity, the
continuous-batching simulation in gpukit.inference.simulate, the validation against published serving
measurements in gpukit.inference.published (all reachable from here too: inference.serve,
inference.simulate, inference.validate_published, ...).

Used in: notebooks/07_inference, gpukit.inference.capacity, gpukit.inference.published, gpukit.bench.decode,
gpukit.cli.serve, gpukit.audits.inference, gpukit.plan.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from gpukit import quant
from gpukit.catalog import as_gpu, as_model
from gpukit.comm import (
    cluster_network,
    collective_time,
    ep_dispatch_bytes,
    is_measured_fit,
    network_all_reduce,
    network_all_to_all,
)
from gpukit.compute import flops_per_token, layer_matmul_params
from gpukit.errors import MAX_COUNT, require_choice, require_positive, require_positive_int
from gpukit.inference.simulate import MAX_TOKENS_PER_STEP, SimResult, simulate  # noqa: F401 (public here too)
from gpukit.memory import (  # noqa: F401 (public here too)
    KV_DTYPES,
    kv_bytes_per_token,
    kv_bytes_per_token_layer,
    kv_cache_bytes,
    kv_cached_token_layers,
    kv_heads_per_gpu,
)
from gpukit.results import whole_bytes
from gpukit.specs import ModelSpec
from gpukit.units import GB, GiB

PRECISIONS = ("bf16", "fp16", "fp8", "int8", "int4", "mxfp4")
ACT_BYTES = 2  # activations and TP all-reduce messages in 16-bit
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
    chunked_prefill: prompts are split into chunks that ride on the batched decode steps (vLLM V1's
      default scheduler; Sarathi-Serve, Agrawal et al. 2024, arXiv:2403.02310 sec. 4): a replica's
      capacity comes from the steady-state step of B decode tokens + B x I / O prompt tokens, one weight
      read for both, instead of a full weight read per prompt. False: one prefill per request (Orca).
    request_overhead_s: engine time per request that no step hides. Default 0: vLLM V1 runs the
      API server (tokenization, detokenization) in a process apart from the engine core, overlapped with
      the GPU (vLLM blog, "vLLM V1: A Major Upgrade to vLLM's Core Architecture", 2025-01-27,
      https://blog.vllm.ai/2025/01/27/v1-alpha-release.html); TensorRT-LLM's executor likewise.
    step_overhead_s: fixed time per forward pass. Default 0: both engines replay decode steps as CUDA
      graphs (vLLM V1's piecewise CUDA graphs, same blog; TensorRT-LLM perf-overview's cuda_graph_config),
      which removes most launch cost; the 60 offline rows of serving_published.csv leave no positive
      residual for an overhead to explain (the 8B rows, where it would weigh most, come out 5-14% low).
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
    chunked_prefill: bool = True
    request_overhead_s: float = 0.0  # engine time per request outside the steps (scheduling, detokenizing)

    def __post_init__(self):
        for f in ("hbm_share", "flops_share", "reserve_fraction", "target_utilization"):
            v = require_positive(f, getattr(self, f))
            if v > 1:
                raise ValueError(f"{f} must be in (0, 1], got {v}")
        require_positive_int("prefill_chunk_tokens", self.prefill_chunk_tokens)
        require_positive("non_gpu_s", self.non_gpu_s, allow_zero=True)
        require_positive("step_overhead_s", self.step_overhead_s, allow_zero=True)
        require_positive("request_overhead_s", self.request_overhead_s, allow_zero=True)
        if not isinstance(self.chunked_prefill, bool):
            raise ValueError(f"chunked_prefill must be True or False, got {self.chunked_prefill!r}")
        if self.non_gpu_workers is not None:
            require_positive_int("non_gpu_workers", self.non_gpu_workers)

    def lines(self) -> tuple[str, ...]:
        out = [
            f"decode reaches {self.hbm_share:.0%} of HBM bandwidth, prefill {self.flops_share:.0%} of the "
            f"dense peak (stated shares, not measured)",
            f"the engine pre-allocates {self.reserve_fraction:.0%} of GPU memory (vLLM gpu_memory_utilization)",
            f"activations sized for a prefill chunk of {self.prefill_chunk_tokens} tokens",
            "weights, KV cache and activations each cross HBM once per step (ideal tiling)",
        ]
        if not self.gqa_kv_reuse:
            out.append(
                "decode attention reads each KV head once per query head (no GQA reuse: TensorRT-LLM "
                "masked MHA before the XQA kernel)"
            )
        if self.chunked_prefill:
            out.append(
                "chunked prefill: prompts enter the batched decode steps in chunks, one weight read per step "
                "(vLLM V1 default; Sarathi-Serve, Agrawal et al. 2024)"
            )
        if self.step_overhead_s:
            out.append(f"fixed {self.step_overhead_s * 1e3:.3g} ms per forward pass (dispatch/launch)")
        if self.request_overhead_s:
            out.append(
                f"{self.request_overhead_s * 1e3:.3g} ms of engine time per request (scheduling, detokenizing)"
            )
        if self.non_gpu_s:
            cap = (
                f", on {self.non_gpu_workers} shared worker(s): at most {self.non_gpu_workers / self.non_gpu_s:.4g} "
                "req/s"
                if self.non_gpu_workers
                else ""
            )
            out.append(f"{self.non_gpu_s * 1e3:.3g} ms per request outside the GPUs{cap}")
        return tuple(out)


# ------------------------------------------------------------------------------------ helpers
def compute_dtype(gpu, precision: str) -> str:
    """The dtype whose dense peak sets prefill speed: fp8 where the GPU has fp8 units (W8A8), else
    16-bit (weight-only int8/int4/fp8 dequantize to 16-bit before the matmul: W8A16, W4A16)."""
    gpu = as_gpu(gpu)  # a catalog name too
    require_choice("precision", precision, PRECISIONS)
    if precision == "fp8" and gpu.has("fp8"):
        return "fp8"
    if precision == "fp16" or not gpu.has("bf16"):
        return "fp16"
    return "bf16"


def default_kv_dtype(gpu, precision: str | None = None) -> str:
    """The KV-cache dtype an engine picks by default: fp8 beside fp8 weights on a GPU with fp8 units
    (NVIDIA's ModelOpt FP8 checkpoints carry kv_cache_quant_algo FP8, which TensorRT-LLM applies, and
    vLLM reads their KV scales with kv_cache_dtype fp8; TensorRT-LLM perf-overview's FP8 models), else
    the 16-bit type: bf16, or fp16 on GPUs without bf16 units (V100, T4); bf16 with no GPU (a CPU).
    `--kv-dtype` overrides it."""
    gpu = as_gpu(gpu)  # a catalog name too
    if precision == "fp8" and gpu is not None and gpu.has("fp8"):
        return "fp8"
    return "bf16" if gpu is None else gpu.half_dtype


def expected_experts_touched(n_experts: int, experts_per_token: int, tokens: float) -> float:
    """Distinct routed experts of one MoE layer that `tokens` tokens touch, in expectation:
    E (1 - (1 - k/E)^B). Assumption (stated with every MoE result): uniform, independent routing, each
    token picking k of the E experts with equal chance (the occupancy expectation, Feller 1968 vol. 1
    ch. II.11; load-balanced routers aim at it: Switch, Fedus et al. 2021 sec. 2.2; DeepSeek-V3 sec.
    2.1.2). An expert misses one token with probability 1 - k/E, so B tokens leave E (1 - k/E)^B
    untouched; at batch 1 exactly k are read, at large B all E (real routing is skewed: fewer)."""
    e = require_positive_int("n_experts", n_experts, at_most=MAX_COUNT)
    k = require_positive_int("experts_per_token", experts_per_token, at_most=e)
    b = require_positive("tokens", tokens, allow_zero=True)
    return e * (1.0 - (1.0 - k / e) ** b)


def _linear_bytes(n_weights: float, n_mats: int, n_rows: int, precision: str) -> float:
    """Bytes of linear weights in `precision` (module docstring; gpukit.quant)."""
    if precision in ("bf16", "fp16"):
        return 2.0 * n_weights
    if precision == "fp8":
        return 1.0 * n_weights + FP8_SCALE_BYTES * n_mats
    if precision == "int8":
        return quant.quantized_bytes(n_weights, "int8", n_rows=n_rows)
    if precision == "mxfp4":  # OCP MX spec v1.0: 4.25 bits per weight
        return quant.quantized_bytes(n_weights, "mxfp4")
    return quant.quantized_bytes(n_weights, "nf4", double_quant=True)


def _mlp_linear(model: ModelSpec, ffn: int) -> tuple[int, int, int]:
    """(weights, matrices, output rows) of one MLP (or expert) of intermediate size `ffn`."""
    h = model.hidden
    if model.mlp == "swiglu":  # gate, up (h x f), down (f x h)
        return 3 * h * ffn, 3, 2 * ffn + h
    return 2 * h * ffn, 2, ffn + h


def _attention_linear(model: ModelSpec) -> tuple[int, int, int]:
    """(weights, matrices, output rows) of one block's attention projections. MLA: all of
    attention_params (its two small norms, kv_lora_rank + q_lora_rank elements, counted with them)."""
    if (
        model.is_mla
    ):  # DeepSeek-V2 sec. 2.1: W^DQ, W^UQ, W^DKV, W^UK, W^UV, W^KR, W^O (output rows ~ hidden each)
        n = model.attention_params()
        return n, 7, 7 * model.hidden
    shapes = model.linear_shapes[:4]  # q, k, v, o
    return sum(i * o for _, i, o in shapes), 4, sum(o for _, _, o in shapes)


def block_weight_bytes(
    model: ModelSpec, precision: str, i: int, routed_experts: float | None = None
) -> float:
    """Bytes of block i's weights in `precision` with `routed_experts` of its routed experts (None: all;
    a fraction: the expected experts a step reads). Linear layers in `precision` (mxfp4: the MLP's,
    every expert's, the attention in bf16, as the gpt-oss checkpoint), router, norms and biases 16-bit."""
    model = as_model(model, "model")  # a catalog name too
    require_choice("precision", precision, PRECISIONS)
    i = require_positive_int("i", i, allow_zero=True)
    if i >= model.n_layers:
        raise ValueError(f"i must be a layer index in [0, n_layers {model.n_layers}), got {i}")
    if routed_experts is not None:
        routed_experts = require_positive("routed_experts", routed_experts, allow_zero=True)
        if routed_experts > model.n_experts:
            raise ValueError(f"routed_experts must be <= n_experts {model.n_experts}, got {routed_experts}")
    a_w, a_m, a_r = _attention_linear(model)
    attn_prec = "bf16" if precision == "mxfp4" else precision  # gpt-oss: attention bf16 (model card sec. 2)
    total = _linear_bytes(a_w, a_m, a_r, attn_prec) + 2.0 * (model.attention_params() - a_w)
    total += 2.0 * 2 * model.norm_params()
    if not model.is_moe_layer(i):
        m_w, m_m, m_r = _mlp_linear(model, model.ffn_hidden)
        return total + _linear_bytes(m_w, m_m, m_r, precision) + 2.0 * (model.mlp_params() - m_w)
    n = model.n_experts if routed_experts is None else routed_experts
    e_w, e_m, e_r = _mlp_linear(model, model.moe_ffn_hidden)
    expert = _linear_bytes(e_w, e_m, e_r, precision) + 2.0 * (model.expert_params() - e_w)
    s_w, s_m, s_r = _mlp_linear(model, model.shared_ffn_hidden)
    shared = _linear_bytes(s_w, s_m, s_r, precision) + 2.0 * (
        model.expert_params(model.shared_ffn_hidden) - s_w
    )
    # the router (gate) stays 16-bit: engines keep it unquantized (ModelOpt/vLLM exclude the gate)
    return total + n * expert + model.n_shared_experts * shared + 2.0 * model.router_params()


def layer_weight_bytes(model: ModelSpec, precision: str) -> float:
    """Bytes of one transformer block's weights in `precision` (linear layers quantized, rest 16-bit);
    for a mixture of experts with dense and MoE blocks, the mean block (stage_weight_bytes is exact)."""
    model = as_model(model, "model")  # a catalog name too
    require_choice("precision", precision, PRECISIONS)
    if not model.is_moe:
        return block_weight_bytes(model, precision, 0)
    return sum(block_weight_bytes(model, precision, i) for i in range(model.n_layers)) / model.n_layers


def stage_weight_bytes(model: ModelSpec, precision: str, pp: int = 1, tokens: float | None = None) -> float:
    """Block bytes of the fullest pipeline stage (contiguous ceil(L/pp) layers), all experts (tokens None)
    or the experts `tokens` tokens touch in expectation (expected_experts_touched)."""
    model = as_model(model, "model")  # a catalog name too
    require_choice("precision", precision, PRECISIONS)
    per = math.ceil(model.n_layers / require_positive_int("pp", pp))
    if not model.is_moe:
        return per * block_weight_bytes(model, precision, 0)
    routed = None
    if tokens is not None:
        routed = expected_experts_touched(model.n_experts, model.experts_per_token, tokens)
    return max(
        sum(
            block_weight_bytes(model, precision, i, routed)
            for i in range(start, min(start + per, model.n_layers))
        )
        for start in range(0, model.n_layers, per)
    )


def active_matmul_params(model: ModelSpec) -> float:
    """Matmul weights one token passes through in the blocks (2 FLOPs each, Kaplan et al. 2020 table 1):
    attention projections, a dense MLP or the router + top-k routed + shared experts (active parameters,
    DeepSeek-V3 sec. 2.1.2). A dense model: gpukit.compute.layer_matmul_params."""
    model = as_model(model, "model")  # a catalog name too
    if not model.is_moe:
        return float(layer_matmul_params(model))
    a_w = _attention_linear(model)[0]
    dense = _mlp_linear(model, model.ffn_hidden)[0]
    moe = (
        model.hidden * model.n_experts
        + model.experts_per_token * _mlp_linear(model, model.moe_ffn_hidden)[0]
        + model.n_shared_experts * _mlp_linear(model, model.shared_ffn_hidden)[0]
    )
    n_moe = model.n_moe_layers
    return float(model.n_layers * a_w + n_moe * moe + (model.n_layers - n_moe) * dense)


def _split(model: ModelSpec, tp: int, pp: int) -> None:
    if model.arch != "decoder":
        raise ValueError(f"model must be a decoder to serve tokens, got {model.name} ({model.arch})")
    model.check_tp(tp)  # ModelSpec's rule: whole heads, KV heads split or replicated
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
    kv_tokens: int | None = None  # tokens cached per sequence: min(context, sliding_window); None -> context
    sliding_window: int | None = None  # the model's attention window (None: full attention)
    max_seq: int | None = None  # the model's context window (what max_context reports once the window fits)
    window_layer_share: float = (
        1.0  # share of layers with the sliding window (gpt-oss: 0.5); 1 with no pattern
    )

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
        """Tokens one sequence may hold at batch `batch` (0 if the weights do not fit). With a sliding
        window W the cache of a sequence stops growing at W tokens (Jiang et al. 2023 sec. 2): once the
        budget holds W per sequence, the KV cache no longer bounds the context and this is the model's
        context window max_seq (its position limit), else the tokens that fit (< W). Full attention: the
        tokens that fit, capped at max_seq."""
        fit = int(self.kv_budget_bytes // (self.kv_bytes_per_token * self.batch))
        w, share = self.sliding_window, self.window_layer_share
        if w is not None and fit >= w and share < 1.0:  # the full-attention layers keep growing past W
            fit = int(
                (self.kv_budget_bytes / (self.kv_bytes_per_token * self.batch) - share * w) / (1.0 - share)
            )
            return fit if self.max_seq is None else min(fit, self.max_seq)
        if w is not None and fit >= w and self.max_seq is not None:
            return self.max_seq
        # never past the model's own window: its positions end there whatever memory is left (issue 23 sec. 5)
        return fit if self.max_seq is None else min(fit, self.max_seq)

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(
            total_bytes=self.total_bytes,
            fits=self.fits,
            kv_budget_bytes=self.kv_budget_bytes,
            max_context=self.max_context,
        )
        return whole_bytes(d)  # bytes are whole: ints in JSON (issue 25)

    def to_frame(self):
        import pandas as pd

        rows = [
            ("weights", self.weights_bytes),
            ("kv_cache", self.kv_cache_bytes),
            ("activations", self.activations_bytes),
            ("free", max(0.0, self.usable_bytes - self.total_bytes)),
            ("engine reserve", self.gpu_memory_bytes - self.usable_bytes),
        ]
        return pd.DataFrame([(k, v, v / GiB) for k, v in rows], columns=["part", "bytes", "gib"])


def weights_per_gpu(model: ModelSpec, precision: str = "bf16", tp: int = 1, pp: int = 1) -> float:
    """Weight bytes on the fullest GPU of a tp x pp instance (module docstring)."""
    model = as_model(model, "model")  # a catalog name too
    _split(model, tp, pp)
    emb = 2.0 * model.embedding_params()
    head = 2.0 * model.head_params()
    extra = emb + head if pp == 1 else max(emb, head)
    # every expert resident; experts split over ep x (tp/ep) = tp GPUs of a stage, dense parts over tp
    return (stage_weight_bytes(model, precision, pp) + extra) / tp


def weight_bytes_read_per_step(
    model: ModelSpec, precision: str = "bf16", tp: int = 1, pp: int = 1, tokens: float | None = None
) -> float:
    """Weight bytes one GPU reads per decode step: its layers and the LM head; the embedding table is
    a lookup (b rows), unless tied to the head. Per pipeline stage when pp > 1 (the larger stage).
    A mixture of experts reads the shared experts always and, of the routed ones, those the step's
    `tokens` touch (expected_experts_touched: k at one token, all E at a large batch); tokens None:
    all of them (the upper bound)."""
    model = as_model(model, "model")  # a catalog name too
    _split(model, tp, pp)
    head = 2.0 * (model.vocab * model.hidden + model.norm_params())
    return (stage_weight_bytes(model, precision, pp, tokens) + head) / tp


def serving_memory(
    model: ModelSpec,
    gpu,
    *,
    precision: str = "bf16",
    kv_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    batch: int = 1,
    context: int = 2048,
    assumptions: Assumptions = Assumptions(),
) -> ServingMemory:
    """Memory on the fullest GPU of one instance (module docstring) and the largest batch that fits.
    The KV cache holds model.kv_tokens(context) tokens per sequence: `context`, or the sliding window W
    when shorter (Jiang et al. 2023 sec. 2: 1/8 of the full cache at 32k tokens for W = 4096)."""
    model, gpu = as_model(model), as_gpu(gpu)  # catalog names or specs
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    batch, context = require_positive_int("batch", batch), require_positive_int("context", context)
    kv_dtype = default_kv_dtype(gpu, precision) if kv_dtype is None else kv_dtype
    _split(model, tp, pp)
    w = weights_per_gpu(model, precision, tp, pp)
    kvt = kv_bytes_per_token(model, kv_dtype, tp, pp)
    chunk = min(assumptions.prefill_chunk_tokens, batch * context)
    mlp = (3 if model.mlp == "swiglu" else 1) * model.ffn_hidden  # gate, up and their product
    live = 2 * model.hidden + (2 * model.q_dim + 2 * model.kv_dim + mlp) / tp
    act = ACT_BYTES * chunk * live + 4.0 * batch * model.vocab / tp
    usable = assumptions.reserve_fraction * gpu.memory_bytes
    budget = usable - w - act
    kept = round(model.mean_kv_tokens(context))  # min(context, W) on windowed layers, context on full ones
    per_seq = kv_cache_bytes(model, context, 1, kv_dtype, tp, pp)  # global and windowed layers (kv_cache)
    max_batch = int(budget // per_seq) if budget > 0 else 0
    kv = kv_cache_bytes(model, context, batch, kv_dtype, tp, pp)  # gpukit.memory.kv_cache
    return ServingMemory(
        weights_bytes=w,
        kv_cache_bytes=kv,
        activations_bytes=act,
        usable_bytes=usable,
        gpu_memory_bytes=float(gpu.memory_bytes),
        kv_bytes_per_token=kvt,
        context=context,
        batch=batch,
        max_batch=max_batch,
        kv_tokens=kept,
        sliding_window=model.sliding_window,
        max_seq=model.max_seq,
        window_layer_share=model.window_layer_share if model.sliding_window is not None else 1.0,
    )


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
    attn_bound: str = "memory"  # attention part: memory | compute

    @property
    def step_bound(self) -> str:
        """What bounds the step as a whole: the resource whose parts take more of it (dense and attention
        each count for their own bound). At a large decode batch the weight matmuls turn compute-bound
        while the KV-cache reads, which grow with the batch, take most of the step: memory."""
        mem = (self.dense_s if self.bound == "memory" else 0.0) + (
            self.attn_s if self.attn_bound == "memory" else 0.0
        )
        cmp = (self.dense_s if self.bound == "compute" else 0.0) + (
            self.attn_s if self.attn_bound == "compute" else 0.0
        )
        return "memory" if mem >= cmp else "compute"

    @property
    def stage_s(self) -> float:
        return self.dense_s + self.attn_s + self.tp_comm_s + self.overhead_s

    @property
    def time_s(self) -> float:
        """Latency of the pass: all pp stages one after another, plus the sends between them."""
        return self.pp * self.stage_s + self.pp_comm_s

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(stage_s=self.stage_s, time_s=self.time_s, step_bound=self.step_bound)
        return d


def _rates(gpu, precision: str, a: Assumptions, peak_tflops: float | None, bandwidth_gbps: float | None):
    if gpu is None and (peak_tflops is None or bandwidth_gbps is None):
        raise ValueError("give gpu, or both peak_tflops and bandwidth_gbps (e.g. measured on this machine)")
    peak = peak_tflops if peak_tflops is not None else gpu.peak_tflops(compute_dtype(gpu, precision))
    bw = bandwidth_gbps if bandwidth_gbps is not None else gpu.hbm_bandwidth_gbps
    return require_positive("peak_tflops", peak) * 1e12 * a.flops_share, require_positive(
        "bandwidth_gbps", bw
    ) * GB * a.hbm_share


def _tp_comm(model: ModelSpec, tokens: int, tp: int, pp: int, link, ep: int = 1) -> float:
    """Two all-reduces per layer of tokens x hidden x 2 bytes (Megatron-LM sec. 3), per stage. With
    expert parallelism (ep > 1) a MoE layer's MLP all-reduce gives way to the dispatch and combine
    all-to-alls of tokens x top_k x hidden x 2 bytes each (GShard, Lepikhin et al. 2020 sec. 2.2;
    gpukit.comm.ep_dispatch_bytes), over the ep GPUs of the stage."""
    if tp == 1:
        return 0.0
    if link is None:
        raise ValueError("link is required when tp > 1 (e.g. catalog nvlink4)")
    size = tokens * model.hidden * ACT_BYTES
    measured = is_measured_fit(link)
    net = None if measured else cluster_network(link, gpus_per_node=tp, ports_per_node=tp)
    if measured:  # its own alpha and rate
        per = collective_time("all_reduce", size, tp, link).time_s
    else:  # a catalog link: the one network model (gpukit.comm.ClusterNetwork: its link efficiency, base latency)
        assert net is not None
        per = network_all_reduce(size, tp, net).time_s
    layers = math.ceil(model.n_layers / pp)
    if ep == 1 or not model.is_moe:
        return 2 * layers * per
    moe = math.ceil(model.n_moe_layers / pp)
    buf = ep_dispatch_bytes(tokens, model.hidden, model.experts_per_token, ACT_BYTES)
    if measured:
        a2a = collective_time("all_to_all", buf, ep, link).time_s
    else:
        a2a = network_all_to_all(buf, ep, cluster_network(link, gpus_per_node=ep, ports_per_node=ep)).time_s
    return (2 * layers - moe) * per + moe * 2 * a2a  # dispatch + combine replace the MLP's all-reduce


def _pp_comm(model: ModelSpec, tokens: int, pp: int, link) -> float:
    if pp == 1:
        return 0.0
    if link is None:
        raise ValueError("pp_link is required when pp > 1 (e.g. catalog ib-ndr)")
    if not is_measured_fit(link):  # a catalog link: at the network's efficiency
        link = cluster_network(link, gpus_per_node=2, ports_per_node=2).intra_link
    return (pp - 1) * collective_time("send_recv", tokens * model.hidden * ACT_BYTES, 2, link).time_s


def decode_step(
    model: ModelSpec,
    gpu,
    *,
    batch: int = 1,
    context: int = 2048,
    precision: str = "bf16",
    kv_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    link=None,
    pp_link=None,
    assumptions: Assumptions = Assumptions(),
    peak_tflops: float | None = None,
    bandwidth_gbps: float | None = None,
    attn_tflops: float | None = None,
    ep: int = 1,
    prefill_tokens: int = 0,
    prompt_tokens: int | None = None,
) -> StepTime:
    """One decode step: `batch` sequences each add one token after `context` cached tokens (with pp
    stages, as pp micro-batches of ceil(batch/pp): the figures are per stage and micro-batch).

    Per GPU: dense part max(weight bytes read / bw, batch x (2N + 2Vh) / tp / flops); attention part
    max(batch x keys x KV bytes / bw, batch x 4 L H Q keys / tp / attention flops), keys =
    min(context, sliding window) (ModelSpec.kv_tokens; Jiang et al. 2023 sec. 2); + TP all-reduces.
    peak_tflops / bandwidth_gbps replace the catalog figures (e.g. a measured CPU profile).
    attn_tflops: the rate of decode attention's products, which are matrix-vector products (each
    sequence multiplies its own cache by the query rows of one KV group, n_heads / n_kv_heads rows), not
    the batch-wide GEMM of the dense part; None takes the dense rate (a GPU's decode attention is
    bandwidth-bound either way). A CPU's one-row product runs far below its GEMM rate
    (gpukit.bench.decode measures it).
    Mixture of experts: the dense FLOPs are the active ones (active_matmul_params) and the weight reads
    the experts the step's tokens touch (expected_experts_touched, uniform routing); ep > 1 swaps the MoE
    layers' MLP all-reduce for the EP all-to-alls (_tp_comm).
    prefill_tokens: prompt tokens of `prompt_tokens`-token prompts chunked into this step (chunked
    prefill: vLLM's scheduler fills each step's max_num_batched_tokens with decode tokens first, then
    prompt chunks; Agrawal et al. 2024, Sarathi-Serve, arXiv:2403.02310 sec. 4): their FLOPs and KV
    writes ride on the same weight read."""
    model, gpu = (
        as_model(model),
        as_gpu(gpu, optional=True),
    )  # catalog names or specs; no GPU with rates given
    batch, context = require_positive_int("batch", batch), require_positive_int("context", context)
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    ep = check_ep(model, ep, tp)
    prefill_tokens = require_positive_int("prefill_tokens", prefill_tokens, allow_zero=True)
    prompt = require_positive_int("prompt_tokens", prompt_tokens if prompt_tokens is not None else context)
    kv_dtype = default_kv_dtype(gpu, precision) if kv_dtype is None else kv_dtype
    _split(model, tp, pp)
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    f = flops_per_token(model, seq_len=context, mode="decode", context=context, include_embeddings=True)
    share = 1.0 / (tp * pp)
    mb = -(-batch // pp)  # with pp stages the batch runs as pp micro-batches, one per stage at a time
    pf = -(-prefill_tokens // pp)  # prompt tokens per micro-batch
    dense_per_token = 2.0 * active_matmul_params(model)  # 2N, N the active matmul weights (Kaplan table 1)
    dense_flops = (mb * (dense_per_token + f.get("lm_head_forward")) + pf * dense_per_token) * share
    attn_flops = mb * f.get("attention_forward") * share
    if (
        model.is_mla
    ):  # absorbed MLA decode (DeepSeek-V2 sec. 2.1.3: W^UK into W^Q, W^UV into W^O): per head and
        # cached key, scores over kv_lora_rank + rope dims and values over kv_lora_rank, 2 FLOPs a product
        per_key = 2.0 * model.n_heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim)
        attn_flops = mb * per_key * kv_cached_token_layers(model, context, pp) / tp
    attn_bytes = kv_cache_bytes(
        model, context, mb, kv_dtype, tp, pp
    )  # the cache read (gpukit.memory.kv_cache)
    if pf:  # chunked prompt tokens: causal attention over their prompt, and their KV written once
        fp = flops_per_token(model, seq_len=prompt, mode="prefill", causal=True)
        attn_flops += pf * fp.get("attention_forward") * share
        per_layer = kv_bytes_per_token_layer(model, kv_dtype, tp)
        attn_bytes += pf * per_layer * kv_cached_token_layers(model, prompt, pp) / prompt
    dense_bytes = weight_bytes_read_per_step(model, precision, tp, pp, tokens=mb + pf)
    if not assumptions.gqa_kv_reuse and not model.is_mla:  # each query head streams its group's KV head
        attn_bytes *= (model.n_heads / tp) / kv_heads_per_gpu(model, tp)
    dense_mem, dense_cmp = dense_bytes / bw, dense_flops / flops_rate
    attn_rate = (
        flops_rate
        if attn_tflops is None
        else (require_positive("attn_tflops", attn_tflops) * 1e12 * assumptions.flops_share)
    )
    attn_mem, attn_cmp = attn_bytes / bw, attn_flops / attn_rate
    return StepTime(
        mode="decode",
        tokens=batch + prefill_tokens,
        dense_flops=dense_flops,
        dense_bytes=dense_bytes,
        attn_flops=attn_flops,
        attn_bytes=attn_bytes,
        dense_s=max(dense_mem, dense_cmp),
        attn_s=max(attn_mem, attn_cmp),
        tp_comm_s=_tp_comm(model, mb + pf, tp, pp, link, ep),
        pp_comm_s=_pp_comm(model, mb + pf, pp, pp_link),
        overhead_s=assumptions.step_overhead_s,
        pp=pp,
        bound="compute" if dense_cmp > dense_mem else "memory",
        attn_bound="compute" if attn_cmp > attn_mem else "memory",
    )


def check_ep(model: ModelSpec, ep: int, tp: int) -> int:
    """ep divides the GPUs of a stage (tp) and the routed experts; 1 for a dense model."""
    model = as_model(model, "model")  # a catalog name too
    ep, tp = require_positive_int("ep", ep), require_positive_int("tp", tp)
    if ep == 1:
        return ep
    if not model.is_moe:
        raise ValueError(
            f"ep must be 1 for {model.name}: expert parallelism needs a mixture of experts, got {ep}"
        )
    if tp % ep or model.n_experts % ep:
        raise ValueError(
            f"ep must divide the GPUs of a stage (tp {tp}) and n_experts {model.n_experts}, got {ep} "
            "(experts split whole over ep GPUs, each expert's matrices over tp/ep)"
        )
    return ep


def prefill_step(
    model: ModelSpec,
    gpu,
    *,
    prompt_tokens: int = 1024,
    batch: int = 1,
    precision: str = "bf16",
    kv_dtype: str | None = None,
    tp: int = 1,
    pp: int = 1,
    link=None,
    pp_link=None,
    assumptions: Assumptions = Assumptions(),
    peak_tflops: float | None = None,
    bandwidth_gbps: float | None = None,
    ep: int = 1,
) -> StepTime:
    """Prefill of `batch` prompts of `prompt_tokens` tokens: causal attention (half the score FLOPs; with
    a sliding window each token sees min(position, W) keys, ModelSpec.mean_attended_keys), LM head for the
    last position only; compute-bound unless the prompt is a few tokens. The KV cache is written once,
    for the positions it keeps: min(prompt_tokens, W) with a window (HF transformers' SlidingWindowCache
    stores the last W of a longer prompt; an engine that writes every position into a cyclic buffer
    moves prompt_tokens x KV bytes instead, which the FLOPs of so long a prefill outweigh)."""
    model, gpu = (
        as_model(model),
        as_gpu(gpu, optional=True),
    )  # catalog names or specs; no GPU with rates given
    s, batch = require_positive_int("prompt_tokens", prompt_tokens), require_positive_int("batch", batch)
    tp, pp = require_positive_int("tp", tp), require_positive_int("pp", pp)
    ep = check_ep(model, ep, tp)
    kv_dtype = default_kv_dtype(gpu, precision) if kv_dtype is None else kv_dtype
    _split(model, tp, pp)
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    f = flops_per_token(model, seq_len=s, mode="prefill", causal=True)
    share = 1.0 / (tp * pp)
    dense_per_token = 2.0 * active_matmul_params(model)  # the active weights (MoE: top-k + shared experts)
    dense_flops = batch * (s * dense_per_token + 2.0 * model.vocab * model.hidden) * share
    attn_flops = batch * s * f.get("attention_forward") * share
    dense_bytes = weight_bytes_read_per_step(model, precision, tp, pp, tokens=batch * s)
    attn_bytes = kv_cache_bytes(
        model, s, batch, kv_dtype, tp, pp
    )  # the cache written once (gpukit.memory.kv_cache)
    dense_mem, dense_cmp = dense_bytes / bw, dense_flops / flops_rate
    attn_mem, attn_cmp = attn_bytes / bw, attn_flops / flops_rate
    return StepTime(
        mode="prefill",
        tokens=batch * s,
        dense_flops=dense_flops,
        dense_bytes=dense_bytes,
        attn_flops=attn_flops,
        attn_bytes=attn_bytes,
        dense_s=max(dense_mem, dense_cmp),
        attn_s=max(attn_mem, attn_cmp),
        tp_comm_s=_tp_comm(model, batch * s, tp, pp, link, ep),
        pp_comm_s=_pp_comm(model, batch * s, pp, pp_link),
        overhead_s=assumptions.step_overhead_s,
        pp=pp,
        bound="compute" if dense_cmp > dense_mem else "memory",
        attn_bound="compute" if attn_cmp > attn_mem else "memory",
    )


def ridge_batch(
    model: ModelSpec,
    gpu,
    precision: str = "bf16",
    assumptions: Assumptions = Assumptions(),
    peak_tflops: float | None = None,
    bandwidth_gbps: float | None = None,
) -> float:
    """Decode batch at which the dense part turns compute-bound: weight bytes / bw = batch x 2N / flops."""
    model = as_model(model, "model")  # a catalog name too
    gpu = as_gpu(gpu)
    flops_rate, bw = _rates(gpu, precision, assumptions, peak_tflops, bandwidth_gbps)
    n = active_matmul_params(model) + model.vocab * model.hidden
    return weight_bytes_read_per_step(model, precision) / bw * flops_rate / (2.0 * n)


def with_assumptions(a: Assumptions | None = None, **changes) -> Assumptions:
    """Assumptions with some fields changed (ValueError for unknown names)."""
    a = a or Assumptions()
    unknown = [k for k in changes if k not in Assumptions.__dataclass_fields__]
    if unknown:
        raise ValueError(
            f"unknown assumption {unknown[0]!r}; known: {', '.join(Assumptions.__dataclass_fields__)}"
        )
    return replace(a, **changes)
