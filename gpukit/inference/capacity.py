"""Serving plans over gpukit.inference's roofline: TTFT, ITL, a replica's capacity, replicas for a rate,
the smallest instance that fits, TP against replicas, a load sweep, and the cost per million tokens.

Pure calculator (no torch, no I/O); times in seconds, rates in requests/s or tokens/s, prices in USD
per GPU-hour. Each step time comes from gpukit.inference (decode_step, prefill_step) and the memory
from gpukit.inference.serving_memory, under the same `Assumptions`.

Serving: TTFT = non-GPU time + prefill of the prompt (which also yields the first token); ITL = one
decode step at the batch; request latency = TTFT + (O - 1) x ITL. Capacity of a replica under
continuous batching (Orca, Yu et al. 2022; vLLM): GPU seconds per request = prefill(I) +
O x ITL(B) / B at the largest batch B the KV cache allows. Replicas for a rate = ceil(rate /
(capacity x target utilization)). A fixed per-request time outside the GPUs on a shared resource
(database, state store, tokenizer) caps throughput at workers / time whatever the GPUs do
(Amdahl 1967). `simulate` (gpukit.inference.simulate) runs a discrete-event simulation of continuous batching
with simpy. gpukit.inference re-exports every name here lazily (this module imports it).

Used in: notebooks/07_inference, gpukit.cli.serve, gpukit.widgets.inference_view, gpukit.audits.inference,
gpukit.cost, gpukit.plan, gpukit.inference.published, tests/test_inference.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from gpukit.catalog import as_gpu, as_link, as_model, inter_node_link, intra_node_link
from gpukit.errors import MAX_COUNT, finite_result, require_choice, require_positive, require_positive_int
from gpukit.inference.serving import (
    PRECISIONS,
    Assumptions,
    ServingMemory,
    StepTime,
    check_ep,
    decode_step,
    default_kv_dtype,
    prefill_step,
    serving_memory,
)
from gpukit.inference.simulate import SimResult, check_rate, check_requests, simulate
from gpukit.memory import KV_DTYPES
from gpukit.prices import price_warning
from gpukit.results import json_safe, whole_bytes
from gpukit.specs import ModelSpec
from gpukit.units import GiB

MAX_NUM_SEQS = 256  # vLLM's default max_num_seqs below 70 GiB and on A100 (engine_max_batch)
# vLLM V1 EngineArgs.get_batch_defaults (vllm/engine/arg_utils.py): on a GPU of >= 70 GiB that is not an
# A100, the OpenAI server's defaults are max_num_seqs 1024 and max_num_batched_tokens 8192; otherwise 256
# and 2048 (the LLM class, offline: 16384 / 8192 tokens). TensorRT-LLM's LLM API: max_batch_size 2048,
# max_num_tokens 8192 (tensorrt_llm/llmapi/llm_args.py).
MAX_NUM_SEQS_LARGE_GPU = 1024
TRTLLM_MAX_BATCH_SIZE, TRTLLM_MAX_NUM_TOKENS = 2048, 8192  # TensorRT-LLM LLM API defaults (llm_args.py)
MAX_BATCHED_TOKENS, MAX_BATCHED_TOKENS_LARGE_GPU = 2048, 8192
LARGE_GPU_GIB = 70
# the largest batch `serve` prices: 100x the largest static batches published (TensorRT-LLM's 1,024);
# 10**20 once printed a KV cache of 1.5e19 GiB and an ITL of 1e19 ms as a plan
MAX_BATCH = 100_000
DEFAULT_GPUS_PER_NODE = 8
# the scales each quantized weight format carries (gpukit.inference.layer_weight_bytes, gpukit.quant)
QUANT_SCALES = {
    "fp8": "1 byte each, one fp32 scale per matrix",
    "int8": "1 byte each, one fp32 scale per output row, LLM.int8()",
    "int4": "NF4, 0.5 byte each plus block-64 double-quantized scales, QLoRA",
}


# ------------------------------------------------------------------------------------ serving
def serving_cost_per_million_tokens(price_per_gpu_hour: float, gpus: int, tokens_per_s: float) -> float:
    """USD per million tokens: (price per GPU-hour x GPUs) / (tokens per hour) x 1e6. Used by gpukit.cost."""
    price = require_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    gpus = require_positive_int("gpus", gpus, at_most=MAX_COUNT)
    rate = require_positive("tokens_per_s", tokens_per_s)
    return finite_result("cost per million tokens", price * gpus / (rate * 3600.0) * 1e6)


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
    link: object = None  # the TP link the steps were priced over (an Interconnect or a (alpha_s, GB/s) pair)
    pp_link: object = None  # between pipeline stages (pp > 1)
    ep: int = 1  # expert parallelism inside a stage (MoE)

    @property
    def step_kwargs(self) -> dict:
        """What prefill_step / decode_step need to price another step of this layout the same way
        (precision, KV dtype, tp, pp, the links chosen, the assumptions)."""
        return dict(
            precision=self.precision,
            kv_dtype=self.kv_dtype,
            tp=self.tp,
            pp=self.pp,
            link=self.link,
            pp_link=self.pp_link,
            assumptions=self.assumptions,
            ep=self.ep,
        )

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
        d = {
            "model": self.model,
            "gpu": self.gpu,
            "precision": self.precision,
            "kv_dtype": self.kv_dtype,
            "tp": self.tp,
            "pp": self.pp,
            "ep": self.ep,
            "gpus_per_replica": self.gpus_per_replica,
            "batch": self.batch,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "context": self.context,
            "memory_per_gpu_bytes": self.memory.total_bytes,
            "fits": self.fits,
            "max_batch": self.max_batch,
            "ttft_s": self.ttft_s,
            "itl_s": self.itl_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "total_tokens_per_s": self.total_tokens_per_s,
            "max_total_tokens_per_s": self.max_total_tokens_per_s,
            "request_latency_s": self.request_latency_s,
            "capacity_req_per_s": self.capacity_req_per_s,
            "decode_bound": self.decode.step_bound,
            "decode_dense_bound": self.decode.bound,
            "memory": self.memory.to_json_dict(),
        }
        # the same keys with or without a rate and a price (issue 25): null where they do not apply
        rated = self.rate is not None
        s = self.simulation if rated else None
        d.update(
            rate_req_per_s=self.rate,
            replicas=self.replicas if rated else None,
            gpus=self.gpus if rated else None,
            p50_latency_s=s.p50_latency_s if s else None,
            p99_latency_s=s.p99_latency_s if s else None,
            p50_ttft_s=s.p50_ttft_s if s else None,
            p99_ttft_s=s.p99_ttft_s if s else None,
            simulated_requests=s.completed if s else None,
            usd_per_gpu_hour=self.price_per_gpu_hour,
            cost_per_million_tokens_usd=self.cost_per_million_tokens_usd,
        )
        d["assumptions"] = list(self.assumptions.lines())
        d["notes"] = list(self.notes)
        return whole_bytes(json_safe(d))  # bytes are whole: ints in JSON (issue 25)

    def _decode_bound_text(self) -> str:
        """'memory-bound', or, when the weight matmuls and the step disagree (a large batch: the matmuls
        turn compute-bound while the KV-cache reads take most of the step), both with their times."""
        d = self.decode
        if d.step_bound == d.bound:
            return f"{d.bound}-bound"
        return (
            f"{d.step_bound}-bound: attention over the KV cache {d.attn_s * 1e3:.2f} ms per stage, the weight "
            f"matmuls {d.dense_s * 1e3:.2f} ms {d.bound}-bound"
        )

    def to_text(self) -> str:
        m = self.memory
        lines = [
            f"{self.model} on {self.gpu}: tp={self.tp} pp={self.pp} ({self.gpus_per_replica} GPU(s) per replica), "
            f"{self.precision} weights, {self.kv_dtype} KV cache",
            f"  memory per GPU: {m.total_bytes / GiB:.1f} GiB (weights {m.weights_bytes / GiB:.1f}, KV "
            f"{m.kv_cache_bytes / GiB:.1f}, activations {m.activations_bytes / GiB:.2f}) of "
            f"{m.usable_bytes / GiB:.1f} usable -> {'fits' if self.fits else 'DOES NOT FIT'}; max batch "
            f"{self.max_batch} at {self.context} tokens"
            + (
                f" (the engine's cap: vLLM max_num_seqs, and chunked prefill's token budget; memory holds {m.max_batch})"
                if m.max_batch > self.max_batch
                else ""
            ),
            f"  batch {self.batch}, {self.input_tokens} + {self.output_tokens} tokens per request: TTFT "
            f"{self.ttft_s * 1e3:.1f} ms, ITL {self.itl_s * 1e3:.2f} ms "
            f"({self._decode_bound_text()}), {self.decode_tokens_per_s:.1f} tok/s per sequence, "
            f"{self.total_tokens_per_s:.0f} tok/s total",
            f"  one replica at capacity: {self.capacity_req_per_s:.3g} req/s, {self.max_total_tokens_per_s:.0f} "
            f"output tok/s",
        ]
        if self.rate is not None:
            lines.append(f"  rate {self.rate:g} req/s -> {self.replicas} replica(s), {self.gpus} GPU(s)")
            if self.simulation is not None:
                s = self.simulation
                lines.append(
                    f"  simulated latency p50 {s.p50_latency_s:.3g} s, p99 {s.p99_latency_s:.3g} s; TTFT p50 "
                    f"{s.p50_ttft_s * 1e3:.3g} ms, p99 {s.p99_ttft_s * 1e3:.3g} ms"
                )
        if self.cost_per_million_tokens_usd is not None:
            lines.append(f"  cost: ${self.cost_per_million_tokens_usd:.3g} per million output tokens")
        elif self.price_per_gpu_hour is not None:  # the price was given: say why there is no cost
            lines.append("  cost: n/a (no replica has capacity: the model does not fit this layout)")
        lines += [f"  assumes: {x}" for x in self.assumptions.lines()] + [f"  note: {x}" for x in self.notes]
        return "\n".join(lines)


def engine_max_batch(gpu) -> int:
    """The batch cap a serving engine takes by default on this GPU: vLLM V1's max_num_seqs, 1024 on a GPU
    of at least 70 GiB that is not an A100, else 256 (EngineArgs.get_batch_defaults, OpenAI server)."""
    gpu = as_gpu(gpu)  # a catalog name too
    large = gpu.memory_bytes >= LARGE_GPU_GIB * GiB and "a100" not in gpu.name.lower()
    return MAX_NUM_SEQS_LARGE_GPU if large else MAX_NUM_SEQS


def engine_batched_tokens(gpu) -> int:
    """Tokens one engine step may process by default (prefill chunks + decode tokens): vLLM V1's
    max_num_batched_tokens for the OpenAI server, 8192 on a GPU of >= 70 GiB that is not an A100, else
    2048 (EngineArgs.get_batch_defaults); TensorRT-LLM's max_num_tokens default is 8192 as well."""
    gpu = as_gpu(gpu)  # a catalog name too
    return (
        MAX_BATCHED_TOKENS_LARGE_GPU
        if engine_max_batch(gpu) == MAX_NUM_SEQS_LARGE_GPU
        else MAX_BATCHED_TOKENS
    )


def chunked_batch(max_batch: int, batched_tokens: int, input_tokens: int, output_tokens: int) -> int:
    """The largest steady-state decode batch B under chunked prefill: each step carries B decode tokens
    and, to admit requests as fast as they finish (Little's law: B / O requests a step), B x I / O prompt
    tokens; the step's token budget caps B (1 + I/O) (vLLM max_num_batched_tokens; Sarathi-Serve,
    Agrawal et al. 2024 sec. 4: a token budget per hybrid batch). At least 1."""
    max_batch = require_positive_int("max_batch", max_batch, allow_zero=True)
    budget = require_positive_int("batched_tokens", batched_tokens)
    i, o = (
        require_positive_int("input_tokens", input_tokens),
        require_positive_int("output_tokens", output_tokens),
    )
    return min(max_batch, max(1, budget * o // (i + o)))


def default_link(gpu, tp: int):
    """The link inside a node for a tp-way group of this GPU (catalog.intra_node_link); None for tp 1."""
    gpu = as_gpu(gpu)  # a catalog name too
    return None if tp == 1 else intra_node_link(gpu, tp)


def default_pp_link(gpu, gpus: int, gpus_per_node: int = DEFAULT_GPUS_PER_NODE):
    """The link between pipeline stages: the node's own link (catalog.intra_node_link) when the whole
    replica sits in one node, else the network between nodes of this GPU's era (catalog.inter_node_link:
    one InfiniBand port per GPU, as gpukit.cost assumes)."""
    gpu = as_gpu(gpu)  # a catalog name too
    return intra_node_link(gpu, gpus) if gpus <= gpus_per_node else inter_node_link(gpu)


DEFAULT_INPUT_TOKENS, DEFAULT_OUTPUT_TOKENS = 1000, 200


def default_precision(gpu) -> str:
    """bf16, or fp16 on GPUs without bf16 units (V100, T4): what an engine loads 16-bit weights as."""
    gpu = as_gpu(gpu)  # a catalog name too
    return default_kv_dtype(gpu)


def default_lengths(
    model: ModelSpec,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    context: int | None = None,
) -> tuple[int, int]:
    """Prompt and output lengths when not given: 1000 and 200, shrunk to fit the model's context window
    (or `context`) when they would not (GPT-2's 1024 tokens: 824 + 200); a length the user gave is kept."""
    model = as_model(model, "model")  # a catalog name too
    for name, v in (("input_tokens", input_tokens), ("output_tokens", output_tokens), ("context", context)):
        if v is not None:
            require_positive_int(name, v)
    limit = model.max_seq if context is None else context
    o = output_tokens if output_tokens is not None else min(DEFAULT_OUTPUT_TOKENS, max(1, limit // 5))
    i = input_tokens if input_tokens is not None else max(1, min(DEFAULT_INPUT_TOKENS, limit - o))
    return i, o


def default_tp(model: ModelSpec, gpus: int, gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> int:
    """The largest tensor-parallel degree that fits the replica: at most min(gpus, gpus_per_node)
    (tensor parallelism stays inside a node), dividing gpus (tp x pp = gpus) and the model's heads
    (Megatron-LM splits whole heads; KV heads divided or replicated), so 3 GPUs of a 32-head model
    give tp 1 x pp 3 rather than an impossible tp 3."""
    model = as_model(model, "model")  # a catalog name too
    # a node holds at most 4,096 GPUs (an NVLink domain is 72 to 576): the search runs up to it
    gpus = require_positive_int("gpus", gpus, at_most=MAX_COUNT)
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node, at_most=4096)
    return max(
        t for t in range(1, min(gpus, gpus_per_node) + 1) if gpus % t == 0 and tp_splits_heads(model, t)
    )


def tp_splits_heads(model: ModelSpec, tp: int) -> bool:
    """tp divides the attention heads and divides or is a multiple of the KV heads (gpukit.inference's
    check: Megatron-LM splits whole heads, GQA's KV heads are split or replicated)."""
    model = as_model(model, "model")  # a catalog name too
    return model.tp_note(tp) is None


def serve(
    model: ModelSpec,
    gpu,
    *,
    gpus: int | None = None,
    tp: int | None = None,
    precision: str | None = None,
    kv_dtype: str | None = None,
    batch: int = 1,
    context: int | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    rate: float | None = None,
    price_per_gpu_hour: float | None = None,
    link=None,
    pp_link=None,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    assumptions: Assumptions = Assumptions(),
    simulate_requests: int = 400,
    seed: int = 0,
    max_batch: int | None = None,
    ep: int = 1,
    batched_tokens: int | None = None,
) -> ServePlan:
    """Plan serving `model` on `gpu` (module docstring). max_batch: the engine's batch cap (None:
    engine_max_batch, vLLM's default for the GPU); batched_tokens: the step's token budget for chunked
    prefill (None: engine_batched_tokens); ep: expert parallelism inside a stage (divides tp). gpus = GPUs per replica (tp x pp); tp defaults
    to default_tp (the largest that divides gpus and the heads within a node); pp = gpus / tp. With `rate` (requests/s): replicas and a simulated
    p50/p99 latency at rate / replicas per replica. precision None: default_precision(gpu); input and
    output tokens None: default_lengths (fitted to the model's context window). model, gpu, link and
    pp_link take catalog names too."""
    model, gpu, link, pp_link = as_model(model), as_gpu(gpu), as_link(link), as_link(pp_link)
    if model.arch != "decoder":
        raise ValueError(f"model must be a decoder to serve tokens, got {model.name} ({model.arch})")
    precision = require_choice(
        "precision", default_precision(gpu) if precision is None else precision, PRECISIONS
    )
    kv_default = kv_dtype is None
    kv_dtype = default_kv_dtype(gpu, precision) if kv_dtype is None else kv_dtype
    require_choice("kv_dtype", kv_dtype, KV_DTYPES)
    cap_given = max_batch is not None
    cap = (
        engine_max_batch(gpu)
        if max_batch is None
        else require_positive_int("max_batch", max_batch, at_most=MAX_BATCH)
    )
    budget = (
        engine_batched_tokens(gpu)
        if batched_tokens is None
        else require_positive_int("batched_tokens", batched_tokens, at_most=MAX_COUNT)
    )
    ep = require_positive_int("ep", ep)
    if context is not None:
        context = require_positive_int("context", context)
    i, o = default_lengths(model, input_tokens, output_tokens, context)
    i, o = require_positive_int("input_tokens", i), require_positive_int("output_tokens", o)
    batch = require_positive_int("batch", batch)
    if batch > MAX_BATCH:
        raise ValueError(
            f"batch must be <= {MAX_BATCH:,} sequences (engines batch at most a few thousand; vLLM's "
            f"default max_num_seqs is {MAX_NUM_SEQS}), got {batch:,}"
        )
    gpn = require_positive_int("gpus_per_node", gpus_per_node)
    # the field that is too long is named: context when given, else the request's own lengths
    what = "context" if context is not None else f"input_tokens + output_tokens ({i:,} + {o:,})"
    context = i + o if context is None else require_positive_int("context", context)
    if context < i + o:
        raise ValueError(f"context must be >= input_tokens + output_tokens = {i + o}, got {context}")
    if context > model.max_seq:
        raise ValueError(f"{what} must be <= {model.name}'s max_seq {model.max_seq}, got {context:,}")
    if gpus is None:
        gpus = tp or 1
    gpus = require_positive_int("gpus", gpus)
    tp_given = tp is not None
    tp = require_positive_int("tp", tp) if tp_given else default_tp(model, gpus, gpn)
    if gpus % tp:
        raise ValueError(f"tp must divide gpus (GPUs per replica = tp x pp) {gpus}, got {tp}")
    if tp > gpn:
        raise ValueError(
            f"tp must be <= gpus_per_node {gpn} (tensor parallelism stays inside a node), got {tp}"
        )
    pp = gpus // tp
    check_ep(model, ep, tp)  # ep divides the stage's tp GPUs and the experts
    if pp > model.n_layers:  # named here (gpus), not later as a pipeline depth the caller never gave
        raise ValueError(
            f"gpus must be <= tp x n_layers = {tp} x {model.n_layers} (a pipeline stage holds at least one "
            f"layer), got {gpus:,}"
        )
    if simulate_requests:  # checked before any work (the simulation is the slow part)
        simulate_requests = check_requests("simulate_requests", simulate_requests)
    if price_per_gpu_hour is not None:
        price_per_gpu_hour = require_positive("price_per_gpu_hour", price_per_gpu_hour, allow_zero=True)
    if rate is not None:
        rate = check_rate("rate", rate) if simulate_requests else require_positive("rate", rate)
    link = link if link is not None else default_link(gpu, tp)
    if pp > 1 and pp_link is None:
        pp_link = default_pp_link(gpu, gpus, gpn)
    notes = []
    if price_per_gpu_hour:  # a node's price typed per GPU-hour is said, as cost train and plan say it
        w = price_warning(
            gpu.name, price_per_gpu_hour, gpus_per_node=gpn, field="price_per_gpu_hour (--price-per-gpu-hour)"
        )
        if w:
            notes.append(f"WARNING: {w}")
    if not tp_given and tp < min(gpus, gpn):
        notes.append(
            f"tp {tp} (default): the largest degree that divides {gpus} GPUs and {model.name}'s "
            f"{model.n_heads} heads within a node; the rest is pipeline"
        )
    if pp > 1:
        notes.append(
            f"pipeline stages talk over {getattr(pp_link, 'name', pp_link)}; each token passes all {pp} stages"
        )
    shortened = [
        w
        for w, given, got, default in (
            ("prompt", input_tokens, i, DEFAULT_INPUT_TOKENS),
            ("output", output_tokens, o, DEFAULT_OUTPUT_TOKENS),
        )
        if given is None and got != default
    ]
    if shortened:  # name what was shortened from what: the user's own length is kept as given
        want_i = DEFAULT_INPUT_TOKENS if input_tokens is None else i
        want_o = DEFAULT_OUTPUT_TOKENS if output_tokens is None else o
        notes.append(
            f"default {' and '.join(shortened)} length shortened: {i} + {o} tokens, as {want_i} + {want_o} "
            f"do not fit {model.name}'s {context}-token context"
        )
    if input_tokens is None and context > i + o:  # --context alone is not the prompt length
        notes.append(
            f"context {context} sizes the KV cache (memory, max batch); TTFT, ITL and capacity are for "
            f"requests of {i} input + {o} output tokens (--input-tokens, --output-tokens)"
        )
    if window := model.sliding_window_note(context):  # the KV cache and decode's reads stop growing at W
        notes.append(window)
    if precision == "bf16" and not gpu.has("bf16"):
        notes.append(f"{gpu.name} has no bf16 units: 16-bit weights run as fp16 (same bytes, the fp16 peak)")
    if precision == "fp8" and not gpu.has("fp8"):
        notes.append(f"{gpu.name} has no fp8 units: fp8 weights are dequantized to 16-bit (weight-only)")
    if kv_dtype == "bf16" and not gpu.has("bf16"):  # as for the weights: the same bytes, held as fp16
        notes.append(f"{gpu.name} has no bf16 units: a 16-bit KV cache is held as fp16 (same bytes)")
    if precision in QUANT_SCALES:  # what the weight bytes assume (gpukit.inference module docstring)
        notes.append(
            f"{precision} weights: the linear layers of the transformer blocks ({QUANT_SCALES[precision]}); "
            "embeddings, LM head and norms stay 16-bit, as vLLM and TensorRT-LLM keep them"
        )
    a = assumptions
    kw = dict(
        precision=precision, kv_dtype=kv_dtype, tp=tp, pp=pp, link=link, pp_link=pp_link, assumptions=a, ep=ep
    )
    mem = serving_memory(
        model,
        gpu,
        precision=precision,
        kv_dtype=kv_dtype,
        tp=tp,
        pp=pp,
        batch=batch,
        context=context,
        assumptions=a,
    )
    steady = chunked_batch(cap, budget, i, o) if a.chunked_prefill else cap
    max_batch = min(mem.max_batch, steady)
    if batch > cap:
        notes.append(
            f"batch {batch} is above the engine's {'' if cap_given else 'default '}cap of {cap} sequences "
            "(vLLM max_num_seqs, --max-batch): the batch line needs it raised; capacity is at the cap"
        )
    if a.chunked_prefill and steady < min(cap, mem.max_batch):
        notes.append(
            f"chunked prefill: a step's budget of {budget} tokens (vLLM max_num_batched_tokens) holds {steady} "
            f"decode sequences beside the {i}/{o} prompt tokens each needs per output token"
        )
    if kv_default and kv_dtype == "fp8":
        notes.append("fp8 KV cache beside fp8 weights (the engine default for FP8 checkpoints; --kv-dtype)")
    if model.is_moe:
        notes.append(
            f"MoE: all {model.n_experts} experts resident; a step reads the experts its tokens touch, "
            f"E(1-(1-k/E)^B) under uniform routing (k={model.experts_per_token}; skewed routing reads fewer)"
            + (f"; experts split over ep={ep}, all-to-all dispatch and combine" if ep > 1 else "")
        )
    if not mem.fits:
        try:
            need_tp, need_pp = min_gpus_to_fit(
                model,
                gpu,
                precision,
                context=context,
                batch=batch,
                gpus_per_node=gpn,
                assumptions=assumptions,
                kv_dtype=kv_dtype,
            )
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
    if max_batch >= 1 and a.chunked_prefill:  # prompt chunks ride on the decode steps (Sarathi-Serve sec. 4)
        chunk = -(-max_batch * i // o)  # prompt tokens per step in the steady state (chunked_batch)
        dec_max = decode_step(
            model, gpu, batch=max_batch, context=mean_ctx, prefill_tokens=chunk, prompt_tokens=i, **kw
        )
        capacity = replica_capacity(0.0, dec_max.time_s, max_batch, o, pp)
        capacity = 1.0 / (1.0 / capacity + a.request_overhead_s) if a.request_overhead_s else capacity
    elif max_batch >= 1:
        dec_max = decode_step(model, gpu, batch=max_batch, context=mean_ctx, **kw)
        capacity = replica_capacity(pre.time_s + a.request_overhead_s * pp, dec_max.time_s, max_batch, o, pp)
    if a.non_gpu_workers:
        notes.append(
            f"non-GPU cap {a.non_gpu_workers / a.non_gpu_s:.4g} req/s for all replicas together (Amdahl)"
        )
    replicas = sim = None
    if rate is not None:
        replicas = replicas_for_rate(rate, capacity, a)
        if simulate_requests and capacity > 0:
            sim = simulate(
                lambda n, ctx: decode_step(model, gpu, batch=n, context=ctx, **kw).time_s,
                lambda n: prefill_step(model, gpu, prompt_tokens=i, batch=n, **kw).time_s,
                rate=rate / replicas,
                input_tokens=i,
                output_tokens=o,
                max_batch=max_batch,
                n_requests=simulate_requests,
                seed=seed,
                non_gpu_s=a.non_gpu_s,
            )
    return ServePlan(
        model=model.name,
        gpu=gpu.name,
        precision=precision,
        kv_dtype=kv_dtype,
        tp=tp,
        pp=pp,
        gpus_per_replica=gpus,
        batch=batch,
        input_tokens=i,
        output_tokens=o,
        context=context,
        memory=mem,
        prefill=pre,
        decode=dec,
        decode_at_max=dec_max,
        ttft_s=ttft,
        itl_s=itl,
        request_latency_s=ttft + (o - 1) * itl,
        capacity_req_per_s=capacity,
        max_batch=max_batch,
        assumptions=a,
        rate=rate,
        replicas=replicas,
        simulation=sim,
        price_per_gpu_hour=price_per_gpu_hour,
        notes=tuple(notes),
        link=link,
        pp_link=pp_link,
        ep=ep,
    )


def replica_capacity(
    prefill_s: float, decode_step_s: float, batch: int, output_tokens: int, pp: int = 1
) -> float:
    """Requests/s of one replica under continuous batching: 1 / (prefill + O x step / batch).
    Prefill time is the single-prompt latency; with pp stages pipelined it occupies 1/pp of it."""
    prefill_s = require_positive("prefill_s", prefill_s, allow_zero=True)
    decode_step_s = require_positive("decode_step_s", decode_step_s)
    batch, pp = require_positive_int("batch", batch, at_most=MAX_COUNT), require_positive_int("pp", pp)
    output_tokens = require_positive_int("output_tokens", output_tokens, at_most=MAX_COUNT)
    per_request = prefill_s / pp + output_tokens * decode_step_s / batch
    return finite_result("replica capacity", 1.0 / finite_result("time per request", per_request))


def replicas_for_rate(
    rate: float, capacity_req_per_s: float, assumptions: Assumptions = Assumptions()
) -> int:
    """Smallest replica count that keeps each under target_utilization; ValueError if the non-GPU
    cap (non_gpu_workers / non_gpu_s) is below the rate, since no number of GPUs helps then."""
    rate = require_positive("rate", rate)
    a = assumptions
    if a.non_gpu_workers and a.non_gpu_s > 0 and rate > a.non_gpu_workers / a.non_gpu_s:
        raise ValueError(
            f"rate must be <= the non-GPU cap {a.non_gpu_workers / a.non_gpu_s:.4g} req/s "
            f"({a.non_gpu_workers} worker(s) x 1/{a.non_gpu_s:g} s): more GPUs cannot help (Amdahl)"
        )
    if require_positive("capacity_req_per_s", capacity_req_per_s, allow_zero=True) <= 0:
        raise ValueError(
            "the model does not fit this layout: no replica has capacity (more GPUs or a smaller precision)"
        )
    need = finite_result("replicas", rate / (capacity_req_per_s * a.target_utilization))
    return max(1, math.ceil(need - 1e-9))


def system_capacity(
    replicas: int, capacity_req_per_s: float, non_gpu_s: float = 0.0, non_gpu_workers: int | None = None
) -> float:
    """Requests/s of the whole service: min(replicas x replica capacity, workers / non-GPU time)."""
    replicas = require_positive_int("replicas", replicas, at_most=MAX_COUNT)
    gpu_cap = replicas * require_positive("capacity_req_per_s", capacity_req_per_s, allow_zero=True)
    non_gpu_s = require_positive("non_gpu_s", non_gpu_s, allow_zero=True)
    if non_gpu_workers is not None:
        non_gpu_workers = require_positive_int("non_gpu_workers", non_gpu_workers, at_most=MAX_COUNT)
    if non_gpu_workers and non_gpu_s > 0:
        return finite_result("system capacity", min(gpu_cap, non_gpu_workers / non_gpu_s))
    return finite_result("system capacity", gpu_cap)


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


def tp_vs_replicas(
    model: ModelSpec,
    gpu,
    gpus: int = 8,
    *,
    precision: str = "bf16",
    input_tokens: int = 1000,
    output_tokens: int = 200,
    assumptions: Assumptions = Assumptions(),
) -> tuple[LayoutRow, ...]:
    """The same `gpus` GPUs as tp x replicas for every power-of-two tp: per-user latency (batch 1)
    against output tokens/s per GPU at capacity."""
    model, gpu = as_model(model), as_gpu(gpu)
    gpus = require_positive_int("gpus", gpus)
    rows = []
    tp = 1
    while tp <= gpus:
        if gpus % tp == 0 and tp_splits_heads(model, tp):
            p = serve(
                model,
                gpu,
                gpus=tp,
                tp=tp,
                precision=precision,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                assumptions=assumptions,
            )
            reps = gpus // tp
            cap = reps * p.max_total_tokens_per_s
            rows.append(
                LayoutRow(
                    layout=f"{reps} x tp{tp}",
                    gpus=gpus,
                    tp=tp,
                    replicas=reps,
                    fits=p.memory.max_batch >= 1,
                    itl_s=p.itl_s,
                    ttft_s=p.ttft_s,
                    tokens_per_s_per_seq=p.decode_tokens_per_s,
                    capacity_tokens_per_s=cap,
                    tokens_per_s_per_gpu=cap / gpus,
                )
            )
        tp *= 2
    return tuple(rows)


def layouts_frame(rows):
    import pandas as pd

    return pd.DataFrame([asdict(r) for r in rows])


def min_gpus_to_fit(
    model: ModelSpec,
    gpu,
    precision: str = "bf16",
    context: int = 4096,
    batch: int = 1,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    max_gpus: int = 1024,
    assumptions: Assumptions = Assumptions(),
    kv_dtype: str | None = None,
) -> tuple[int, int]:
    """(tp, pp) of the smallest instance that holds the weights and `batch` x `context` of KV cache in
    `kv_dtype` (None: the GPU's 16-bit type): tp inside a node first (1, 2, 4, 8), then pipeline stages
    across nodes. ValueError if none."""
    model, gpu = as_model(model), as_gpu(gpu)
    context = min(require_positive_int("context", context), model.max_seq)
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node, at_most=4096)  # 0: gpus % 0
    max_gpus = require_positive_int("max_gpus", max_gpus, at_most=MAX_COUNT)
    for gpus in range(1, max_gpus + 1):
        tp = min(gpus, gpus_per_node)
        if gpus % tp or not tp_splits_heads(model, tp):
            continue
        pp = gpus // tp
        if pp > model.n_layers:
            break
        if serving_memory(
            model,
            gpu,
            precision=precision,
            kv_dtype=kv_dtype,
            tp=tp,
            pp=pp,
            batch=batch,
            context=context,
            assumptions=assumptions,
        ).fits:
            return tp, pp
    raise ValueError(f"{model.name} does not fit on up to {max_gpus} x {gpu.name} in {precision}")


def load_sweep(
    model: ModelSpec,
    gpu,
    loads=(0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.1),
    *,
    n_requests: int = 300,
    seed: int = 0,
    **serve_kw,
):
    """Simulated latency percentiles of one replica at each offered load (a fraction of its capacity).
    Returns (ServePlan, pandas DataFrame with load, rate, p50/p99 latency and TTFT, mean batch)."""
    import pandas as pd

    model, gpu = as_model(model), as_gpu(gpu)
    plan = serve(model, gpu, **serve_kw)
    if plan.capacity_req_per_s <= 0:
        raise ValueError(
            f"{model.name} does not fit {plan.tp}x{gpu.name} in {plan.precision}: nothing to simulate"
        )
    kw = plan.step_kwargs  # the links serve chose (or was given)
    rows = []
    for load in loads:
        r = require_positive("load", load) * plan.capacity_req_per_s
        s = simulate(
            lambda n, ctx: decode_step(model, gpu, batch=n, context=ctx, **kw).time_s,
            lambda n: prefill_step(model, gpu, prompt_tokens=plan.input_tokens, batch=n, **kw).time_s,
            rate=r,
            input_tokens=plan.input_tokens,
            output_tokens=plan.output_tokens,
            max_batch=plan.max_batch,
            n_requests=n_requests,
            seed=seed,
            non_gpu_s=plan.assumptions.non_gpu_s,
        )
        rows.append({"load": load, **s.to_json_dict()})
    return plan, pd.DataFrame(rows)
