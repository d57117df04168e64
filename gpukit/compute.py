"""FLOPs per token, MFU/HFU, roofline and time-to-train: pure calculators (no torch, no I/O).

What N is. With a ModelSpec, N is the number of *matmul weights in the transformer layers* (attention
q, k, v, o and the MLP matrices; Narayanan et al. 2021 eq. 2's 12*l*h^2 term for a GPT layer). Biases
and norms are elementwise (< 0.1 % of the FLOPs) and are not counted, as in PaLM and Megatron. The
input embedding and learned positions are table lookups: zero FLOPs. The LM head is a real h x V
matmul; it is counted, as separate rows, when `include_embeddings=True` (PaLM counts it: its N =
540.35B includes the tied 256k x 18432 embedding; Kaplan et al. 2020's non-embedding N leaves it out).
With `n_params=` instead of a model, N is the number you pass (decide yourself what it includes).

Counting (one FLOP = one multiply or one add; a multiply-add is 2):
- dense matmuls, per token: forward 2N, backward 4N (Kaplan et al. 2020 sec. 2.1: C = 6N).
- attention scores and attention-over-values, per token, forward: 4*L*H*Q*T for full attention
  (QK^T and AV are 2*H*Q*T each per layer); training 3x = 12*L*H*Q*T (PaLM, Chowdhery et al. 2022,
  appendix B, which counts full, non-causal attention). With causal=True each token sees T/2 keys on
  average and the term halves (Kaplan et al. 2020 table 1's 2*n_layer*n_ctx*d_attn is this causal
  forward term). L layers, H query heads, Q head_dim, T seq_len; grouped-query attention does not
  change it (H counts query heads).
- full recompute replays the layers' forward: +2N + the attention forward (Narayanan et al. 2021
  eq. 3: 96Bslh^2(1 + s/(6h) + V/(16lh)) = 8N + 16LHQT + 6Vh per token; the LM head is not replayed).
  Selective recompute (Korthikanti et al. 2022 sec. 5) replays only QK^T, softmax, dropout and AV: we
  add the attention forward (4LHQT, halved if causal). Korthikanti's own HFU accounting (their sec. 6,
  72Bslh^2(1 + s/(3h) + V/(12lh))) charges 12LHQT instead; we count the matmuls actually replayed.
- inference: prefill 2N + attention forward per prompt token; decode 2N + 4*L*H*Q*context per
  generated token (one query against `context` cached keys and values).
MFU uses model FLOPs (no recompute), HFU the FLOPs the hardware executes (Korthikanti et al. 2022
sec. 6; PaLM sec. 4.1 and appendix B).

Used in: notebooks on compute, roofline and time-to-train; gpukit.cli.compute.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.catalog import as_gpu, as_model
from gpukit.errors import check_finite as _require_finite
from gpukit.errors import overflow_error as _overflow
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import frame as _frame
from gpukit.results import json_safe as _json_safe
from gpukit.specs import ModelSpec
from gpukit.units import GB, dtype_bytes

RECOMPUTE = ("none", "selective", "full")
MODES = ("train", "prefill", "decode")
DEFAULT_MFU = 0.40  # assumption when neither mfu nor a profile is given; see time_to_train


# ---------------------------------------------------------------------------------------------------
# FLOPs per token
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FlopsPerToken:
    """FLOPs per token with an ordered breakdown; model_flops excludes recompute, hardware_flops not."""

    mode: str
    seq_len: int
    context: int | None
    causal: bool
    recompute: str
    n_params: float  # N counted in the dense rows (see the module docstring)
    lm_head_params: float  # V*h counted in the lm_head rows (0 unless include_embeddings)
    breakdown: tuple[tuple[str, float], ...]
    note: str = ""

    @property
    def model_flops(self) -> float:
        return sum(v for k, v in self.breakdown if not k.startswith("recompute"))

    @property
    def hardware_flops(self) -> float:
        return sum(v for _, v in self.breakdown)

    @property
    def total_flops(self) -> float:
        return self.hardware_flops

    def get(self, name: str) -> float:
        return dict(self.breakdown).get(name, 0.0)

    def to_frame(self):
        df = _frame(self.breakdown, ("part", "flops_per_token"))
        df["share"] = df["flops_per_token"] / self.hardware_flops
        return df

    def to_json_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "breakdown"}
        d.update(breakdown=dict(self.breakdown), model_flops=self.model_flops,
                 hardware_flops=self.hardware_flops)
        return _json_safe(d)


def _attention_width(model, n_layers, hidden):
    """(layers, H*Q) for the attention term, or (None, None) when unknown."""
    if model is not None:
        return model.n_layers, model.n_heads * model.head_dim
    if n_layers is not None and hidden is not None:
        return require_positive_int("n_layers", n_layers), require_positive_int("hidden", hidden)
    if (n_layers is None) != (hidden is None):
        raise ValueError("n_layers and hidden go together (attention term 4*n_layers*hidden*seq_len); got one")
    return None, None


def layer_matmul_params(model: ModelSpec) -> int:
    """Matmul weights of all transformer layers: q,k,v,o and the MLP matrices (no biases, no norms)."""
    return as_model(model).n_layers * as_model(model).linear_weights[0]


def flops_per_token(model: ModelSpec | None = None, *, n_params: float | None = None, seq_len: int,
                    causal: bool = True, include_embeddings: bool = False, recompute: str = "none",
                    mode: str = "train", context: int | None = None, n_layers: int | None = None,
                    hidden: int | None = None) -> FlopsPerToken:
    """FLOPs per token for training, prefill or decode (formulas and sources in the module docstring).

    model or n_params (N) is required. Without a model, the attention term needs n_layers and hidden
    (= n_heads * head_dim); otherwise it is left out and `note` says so. `context` is the KV length a
    decoded token attends to (default seq_len).
    """
    require_choice("mode", mode, MODES)
    require_choice("recompute", recompute, RECOMPUTE)
    seq_len = require_positive_int("seq_len", seq_len)
    if mode != "train" and recompute != "none":
        raise ValueError(f"recompute must be none for mode {mode} (recompute is a training trick), got {recompute}")
    if (model is None) == (n_params is None):
        raise ValueError("give exactly one of model or n_params")
    if model is not None:
        model = as_model(model)  # a catalog name or a ModelSpec
        try:
            n = float(layer_matmul_params(model))
            head = float(model.vocab * model.hidden) if include_embeddings else 0.0
        except OverflowError:
            raise _overflow("the model's parameter count") from None
    else:
        n = require_positive("n_params", n_params)
        if include_embeddings:
            raise ValueError("include_embeddings needs a model (vocab, hidden); with n_params, count the LM head "
                             "in n_params yourself")
        head = 0.0
    layers, width = _attention_width(model, n_layers, hidden)
    note = "" if layers else "attention term left out: pass a model, or n_layers and hidden"
    try:
        if mode == "decode":
            context = require_positive_int("context", seq_len if context is None else context)
            attn_fwd = 4.0 * layers * width * context if layers else 0.0  # one query, `context` keys
        else:
            context = None
            attn_fwd = 4.0 * layers * width * seq_len * (0.5 if causal else 1.0) if layers else 0.0
    except OverflowError:
        raise _overflow("the attention FLOPs (n_layers x hidden x seq_len/context)") from None

    rows = [("dense_forward", 2 * n)]
    if mode == "train":
        rows.append(("dense_backward", 4 * n))
    if layers:
        rows.append(("attention_forward", attn_fwd))
        if mode == "train":
            rows.append(("attention_backward", 2 * attn_fwd))
    if head:
        rows.append(("lm_head_forward", 2 * head))
        if mode == "train":
            rows.append(("lm_head_backward", 4 * head))
    if recompute == "full":
        rows.append(("recompute_dense_forward", 2 * n))
        if layers:
            rows.append(("recompute_attention_forward", attn_fwd))
    elif recompute == "selective" and layers:
        rows.append(("recompute_attention_forward", attn_fwd))
    _require_finite("FLOPs per token", *(v for _, v in rows))
    return FlopsPerToken(mode=mode, seq_len=seq_len, context=context, causal=bool(causal), recompute=recompute,
                         n_params=n, lm_head_params=head, breakdown=tuple(rows), note=note)


@dataclass(frozen=True)
class StepFlops:
    """FLOPs of one optimizer step (all GPUs together): per-token FLOPs x tokens per step."""

    tokens: float
    per_token: FlopsPerToken

    @property
    def model_flops(self) -> float:
        return self.tokens * self.per_token.model_flops

    @property
    def hardware_flops(self) -> float:
        return self.tokens * self.per_token.hardware_flops

    def to_frame(self):
        df = self.per_token.to_frame()
        df["flops_per_step"] = df["flops_per_token"] * self.tokens
        return df

    def to_json_dict(self) -> dict:
        return {"tokens": self.tokens, "model_flops": self.model_flops, "hardware_flops": self.hardware_flops,
                "per_token": self.per_token.to_json_dict()}


def step_flops(model: ModelSpec | None, seq_len: int, global_batch_tokens: float, *,
               n_params: float | None = None, causal: bool = True, include_embeddings: bool = False,
               recompute: str = "none", n_layers: int | None = None, hidden: int | None = None) -> StepFlops:
    """Training FLOPs of one step of `global_batch_tokens` tokens (Narayanan et al. 2021 eq. 3 with
    recompute='full', causal=False, include_embeddings=True)."""
    tokens = require_positive("global_batch_tokens", global_batch_tokens)
    fpt = flops_per_token(model, n_params=n_params, seq_len=seq_len, causal=causal,
                          include_embeddings=include_embeddings, recompute=recompute, n_layers=n_layers,
                          hidden=hidden)
    return StepFlops(tokens=tokens, per_token=fpt)


def mfu(model_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilization: model FLOP/s (no recompute) / peak FLOP/s (PaLM sec. 4.1)."""
    return require_positive("model_flops_per_s", model_flops_per_s) / require_positive(
        "peak_flops_per_s", peak_flops_per_s)


def hfu(hardware_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Hardware FLOPs utilization: executed FLOP/s incl. recompute / peak (Korthikanti et al. 2022 sec. 6)."""
    return require_positive("hardware_flops_per_s", hardware_flops_per_s) / require_positive(
        "peak_flops_per_s", peak_flops_per_s)


def achieved_tflops(flops: float, step_time_s: float, n_gpus: int = 1) -> float:
    """TFLOP/s per GPU: flops / (step_time_s * n_gpus) / 1e12."""
    return require_positive("flops", flops) / (require_positive("step_time_s", step_time_s)
                                                * require_positive_int("n_gpus", n_gpus)) / 1e12


# ---------------------------------------------------------------------------------------------------
# Roofline (Williams, Waterman & Patterson 2009)
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roofline:
    """One matmul (or `batch` identical ones) on the roofline: compute- or memory-bound."""

    name: str
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float
    peak_tflops: float
    bandwidth_gbps: float
    attainable_tflops: float
    bound: str  # compute | memory
    compute_time_s: float
    memory_time_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s)

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (("compute_time_s", self.compute_time_s), ("memory_time_s", self.memory_time_s))

    def to_frame(self):
        return _frame([self.to_json_dict()], list(self.to_json_dict()))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["time_s"] = self.time_s
        return _json_safe(d)


def _peak_and_bw(dtype, gpu, peak_tflops, bandwidth_gbps):
    if peak_tflops is None or bandwidth_gbps is None:
        if gpu is None:
            raise ValueError("give gpu, or both peak_tflops and bandwidth_gbps")
        gpu = as_gpu(gpu)
    peak = require_positive("peak_tflops", gpu.peak_tflops(dtype) if peak_tflops is None else peak_tflops)
    bw = require_positive("bandwidth_gbps", gpu.hbm_bandwidth_gbps if bandwidth_gbps is None else bandwidth_gbps)
    return peak, bw


def roofline_matmul(m: int, n: int, k: int, dtype: str = "bf16", gpu=None, *, batch: int = 1,
                    name: str = "matmul", peak_tflops: float | None = None,
                    bandwidth_gbps: float | None = None) -> Roofline:
    """(m x k) @ (k x n): intensity = 2mnk / ((mk + kn + mn) * bytes per element); attainable
    = min(peak, intensity * bandwidth); ridge = peak / bandwidth (Williams et al. 2009). Each operand
    is assumed to cross HBM once (ideal tiling). `gpu` is a catalog GPU (peak for `dtype`, HBM GB/s);
    peak_tflops / bandwidth_gbps override it (e.g. measured values from a profile)."""
    m, n, k = (require_positive_int(x, v) for x, v in (("m", m), ("n", n), ("k", k)))
    batch = require_positive_int("batch", batch)
    size = dtype_bytes(dtype)
    peak, bw = _peak_and_bw(dtype, gpu, peak_tflops, bandwidth_gbps)
    try:
        flops = 2.0 * m * n * k * batch
        moved = (m * k + k * n + m * n) * size * batch
    except OverflowError:
        raise _overflow("the matmul's FLOPs or bytes (m x n x k)") from None
    _require_finite("the matmul's FLOPs or bytes (m x n x k)", flops, moved)
    ai = flops / moved
    ridge = peak * 1e12 / (bw * GB)
    attainable = min(peak, ai * bw * GB / 1e12)
    return Roofline(name=name, m=m, n=n, k=k, batch=batch, dtype=dtype, flops=flops, bytes=moved,
                    intensity_flop_per_byte=ai, ridge_flop_per_byte=ridge, peak_tflops=peak,
                    bandwidth_gbps=bw, attainable_tflops=attainable,
                    bound="compute" if ai >= ridge else "memory",
                    compute_time_s=flops / (peak * 1e12), memory_time_s=moved / (bw * GB))


@dataclass(frozen=True)
class LayerRoofline:
    """The main matmuls of one transformer layer (forward) on the roofline, and their sum."""

    mode: str
    seq_len: int
    micro_batch: int
    context: int | None
    ops: tuple[Roofline, ...]

    @property
    def flops(self) -> float:
        return sum(o.flops for o in self.ops)

    @property
    def bytes(self) -> float:
        return sum(o.bytes for o in self.ops)

    @property
    def time_s(self) -> float:
        """Each op at its own roof, one after another (no overlap between ops)."""
        return sum(o.time_s for o in self.ops)

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flops / self.bytes

    @property
    def memory_bound_time_share(self) -> float:
        return sum(o.time_s for o in self.ops if o.bound == "memory") / self.time_s

    @property
    def attainable_tflops(self) -> float:
        return self.flops / self.time_s / 1e12

    def to_frame(self):
        rows = [o.to_json_dict() for o in self.ops]
        return _frame(rows, list(rows[0]))

    def to_json_dict(self) -> dict:
        return _json_safe({"mode": self.mode, "seq_len": self.seq_len, "micro_batch": self.micro_batch,
                           "context": self.context, "flops": self.flops, "bytes": self.bytes,
                           "time_s": self.time_s, "intensity_flop_per_byte": self.intensity_flop_per_byte,
                           "attainable_tflops": self.attainable_tflops,
                           "memory_bound_time_share": self.memory_bound_time_share,
                           "ops": [o.to_json_dict() for o in self.ops]})


def roofline_layer(model: ModelSpec, seq_len: int, micro_batch: int, dtype: str = "bf16", gpu=None, *,
                   mode: str = "prefill", context: int | None = None, peak_tflops: float | None = None,
                   bandwidth_gbps: float | None = None) -> LayerRoofline:
    """Roofline of one layer's forward matmuls: QKV, scores QK^T, attention x V, output projection,
    MLP up (gate+up for swiglu) and down. mode='prefill' (also a training forward): micro_batch*seq_len
    tokens at once. mode='decode': one new token per sequence against `context` cached keys (default
    seq_len); weight matmuls then have m = micro_batch, so their intensity is ~ micro_batch FLOP/byte
    in 16-bit: decode is memory-bound until the batch reaches the ridge point."""
    require_choice("mode", mode, ("prefill", "decode"))
    model = as_model(model)
    seq_len = require_positive_int("seq_len", seq_len)
    b = require_positive_int("micro_batch", micro_batch)
    kw = dict(dtype=dtype, gpu=gpu, peak_tflops=peak_tflops, bandwidth_gbps=bandwidth_gbps)
    h, d, f = model.hidden, model.head_dim, model.ffn_hidden
    up = f * (2 if model.mlp == "swiglu" else 1)
    if mode == "prefill":
        tokens, context = b * seq_len, None
        # scores: per (sequence, head) (s x d) @ (d x s); values: (s x s) @ (s x d)
        scores = roofline_matmul(seq_len, seq_len, d, batch=b * model.n_heads, name="attn_scores", **kw)
        values = roofline_matmul(seq_len, d, seq_len, batch=b * model.n_heads, name="attn_values", **kw)
    else:
        tokens = b
        context = require_positive_int("context", seq_len if context is None else context)
        g = model.n_heads // model.n_kv_heads  # query heads sharing one cached K/V head
        scores = roofline_matmul(g, context, d, batch=b * model.n_kv_heads, name="attn_scores", **kw)
        values = roofline_matmul(g, d, context, batch=b * model.n_kv_heads, name="attn_values", **kw)
    ops = (roofline_matmul(tokens, model.q_dim + 2 * model.kv_dim, h, name="qkv", **kw), scores, values,
           roofline_matmul(tokens, h, model.q_dim, name="attn_out", **kw),
           roofline_matmul(tokens, up, h, name="mlp_up", **kw),
           roofline_matmul(tokens, h, f, name="mlp_down", **kw))
    _require_finite("the layer's FLOPs, bytes or time", math.fsum(o.flops for o in ops),
                    math.fsum(o.bytes for o in ops), math.fsum(o.time_s for o in ops))
    return LayerRoofline(mode=mode, seq_len=seq_len, micro_batch=b, context=context, ops=ops)


# ---------------------------------------------------------------------------------------------------
# Time to train
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainTime:
    """Time to train on `tokens` tokens: FLOPs, seconds, days, GPU-hours and the utilization used."""

    n_params: float
    tokens: float
    gpu: str
    n_gpus: int
    dtype: str
    recompute: str
    seq_len: int | None  # None: n_params only, no attention term
    peak_tflops: float
    utilization: float  # share of peak sustained on the executed (hardware) FLOPs
    utilization_source: str
    model_flops: float
    flops: float  # executed FLOPs, incl. recompute
    seconds: float
    seq_len_source: str = ""  # where seq_len came from: given, or the model's pretraining length

    @property
    def days(self) -> float:
        return self.seconds / 86400

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.n_gpus / 3600

    @property
    def effective_tflops_per_gpu(self) -> float:
        return self.flops / self.seconds / self.n_gpus / 1e12

    @property
    def mfu(self) -> float:
        return self.model_flops / self.seconds / self.n_gpus / (self.peak_tflops * 1e12)

    @property
    def hfu(self) -> float:
        return self.utilization

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (("model_flops", self.model_flops), ("recompute_flops", self.flops - self.model_flops))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(days=self.days, gpu_hours=self.gpu_hours, effective_tflops_per_gpu=self.effective_tflops_per_gpu,
                 mfu=self.mfu, hfu=self.hfu)
        return _json_safe(d)

    def to_frame(self):
        d = self.to_json_dict()
        return _frame(d.items(), ("quantity", "value"))

    def to_text(self) -> str:
        from gpukit.units import fmt_seconds

        seq = f", seq_len {self.seq_len}" if self.seq_len else ""
        if self.seq_len and self.seq_len_source:
            seq += f" ({self.seq_len_source})"
        return (f"{self.model_flops:.3e} model FLOPs ({self.flops:.3e} executed{seq}) on {self.n_gpus} x {self.gpu} "
                f"at {self.effective_tflops_per_gpu:.1f} TFLOP/s per GPU ({self.dtype}, {self.utilization_source}): "
                f"{fmt_seconds(self.seconds)}, {self.gpu_hours:,.0f} GPU-hours; "
                f"MFU {self.mfu:.1%}, HFU {self.hfu:.1%}")


def time_to_train(model, tokens: float, gpu, n_gpus: int, *, mfu: float | None = None, profile=None,
                  efficiency: float | None = None, recompute: str = "none", dtype: str | None = None,
                  seq_len: int | None = None, causal: bool = True,
                  include_embeddings: bool = False) -> TrainTime:
    """seconds = executed FLOPs / (n_gpus * peak * utilization) (Narayanan et al. 2021 eq. 4:
    8TP/(nX) with full recompute, X the per-GPU throughput on executed FLOPs).

    model: a ModelSpec, or a number = n_params (then 6N or 8N per token, no attention term).
    Utilization, in order: `mfu` (the share of peak sustained on the executed FLOPs: MFU without
    recompute, HFU with it, as Narayanan's X/peak); else a calibration `profile`: its measured matmul
    TFLOP/s for `dtype` (default the GPU's 16-bit dtype) x `efficiency` (default 1.0, an upper bound: every FLOP at measured matmul
    speed); else DEFAULT_MFU = 0.40 (assumed: Llama 3 reports 38-43 % BF16 MFU on H100, Dubey et al.
    2024 table 4; PaLM 46 %). seq_len defaults to model.train_seq_len, the pretraining sequence
    length, not the context window max_seq (Llama 3.1: pretrained at 8192, window 131072); the
    result's seq_len_source says which was used.
    """
    tokens = require_positive("tokens", tokens)
    n_gpus = require_positive_int("n_gpus", n_gpus)
    gpu = as_gpu(gpu)  # a catalog name ('h100-sxm') or a catalog.GPU
    if isinstance(model, str):
        model = as_model(model)
    if mfu is not None and profile is not None:
        raise ValueError("give mfu or profile, not both")
    if isinstance(model, ModelSpec):
        if seq_len is None:
            seq_len = model.train_seq_len
            seq_source = (f"{model.name}'s pretraining sequence length, train_seq_len; context window "
                          f"max_seq {model.max_seq}")
        else:
            seq_source = "given"
        fpt = flops_per_token(model, seq_len=seq_len, causal=causal, include_embeddings=include_embeddings,
                              recompute=recompute)
    else:
        if seq_len is not None:  # it would be ignored without a word: the 6N/8N count has no attention term
            raise ValueError("seq_len needs a model (the attention FLOPs need its layers and width); with "
                             "n_params alone there is no attention term")
        seq_len, seq_source = None, "n_params only: no attention term"
        fpt = flops_per_token(n_params=model, seq_len=1, recompute=recompute)
    dtype = dtype or gpu.half_dtype  # bf16, fp16 on GPUs without bf16 units (V100, T4)
    peak = gpu.peak_tflops(dtype)
    if mfu is not None:
        util = require_positive("mfu", mfu)
        if util > 1:
            raise ValueError(f"mfu must be in (0, 1], got {mfu}")
        source = f"given utilization {util:.3f}"
    elif profile is not None:
        eff = 1.0 if efficiency is None else require_positive("efficiency", efficiency)
        if eff > 1:
            raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
        measured = profile.matmul_tflops(dtype)
        if measured > peak:
            raise ValueError(f"profile {profile.source} measured {dtype} matmul {measured:.1f} TFLOP/s, above the "
                             f"{gpu.name} peak {peak:.1f}: is the profile from another device?")
        util = measured * eff / peak
        source = (f"profile {profile.device_name}: measured {dtype} matmul {measured:.1f} TFLOP/s x efficiency "
                  f"{eff:.2f}" + (" (upper bound)" if eff == 1.0 else ""))
    else:
        util = DEFAULT_MFU
        source = f"assumed utilization {DEFAULT_MFU:.2f} (no mfu or profile given)"
    try:
        flops = tokens * fpt.hardware_flops
        seconds = flops / (n_gpus * peak * 1e12 * util)
    except OverflowError:
        raise _overflow("tokens x FLOPs per token") from None
    _require_finite("tokens x FLOPs per token", flops, tokens * fpt.model_flops, seconds)
    if seconds <= 0:  # n_gpus beyond float range makes the time underflow to 0
        raise ValueError(f"n_gpus is too large for a meaningful time, got {n_gpus}")
    return TrainTime(n_params=fpt.n_params + fpt.lm_head_params, tokens=tokens, gpu=gpu.name, n_gpus=n_gpus,
                     dtype=dtype, recompute=recompute, seq_len=seq_len, peak_tflops=peak, utilization=util,
                     utilization_source=source, model_flops=tokens * fpt.model_flops, flops=flops, seconds=seconds,
                     seq_len_source=seq_source)


# ---------------------------------------------------------------------------------------------------
# Tokens a time budget buys
# ---------------------------------------------------------------------------------------------------
def _rate_flops(gpu: str, mfu: float, dtype: str = "bf16") -> float:
    """Sustained FLOP/s of one GPU: catalog dense peak x utilization (PaLM sec. 4.1 MFU)."""
    return as_gpu(gpu).peak_tflops(dtype) * 1e12 * require_positive("mfu", mfu)


def tokens_for_time(seconds: float, n_params: float, gpu: str, mfu: float, n_gpus: int = 1,
                    flops_per_param: float = 6.0) -> float:
    """Tokens trainable in `seconds`: seconds x n_gpus x peak x MFU / (6N) (Kaplan et al. 2020: C = 6ND)."""
    return seconds * n_gpus * _rate_flops(gpu, mfu) / (flops_per_param * require_positive("n_params", n_params))
