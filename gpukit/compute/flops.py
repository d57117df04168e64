"""FLOPs per token, MFU/HFU and achieved TFLOP/s: pure calculators (no torch, no I/O).

The roofline (Roofline, roofline_matmul, LayerRoofline, roofline_layer) is in gpukit.compute.roofline,
time to train (TrainTime, time_to_train, DEFAULT_MFU, tokens_for_time) in gpukit.compute.train_time; both are
re-exported here, so `gpukit.compute.<name>` keeps working.

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
  change it (H counts query heads). Sliding-window attention (ModelSpec.sliding_window W, Mistral 7B:
  Jiang et al. 2023 sec. 2): causal T/2 becomes the mean of min(x, W) over positions, W - W^2/(2T)
  for W < T (ModelSpec.mean_attended_keys); a decoded token sees min(context, W) keys. causal=False
  stays T keys per token, the full s x s matrix (PaLM's count; what an eager kernel computes, the
  window being only a mask there).
- full recompute replays the layers' forward: +2N + the attention forward (Narayanan et al. 2021
  eq. 3: 96Bslh^2(1 + s/(6h) + V/(16lh)) = 8N + 16LHQT + 6Vh per token; the LM head is not replayed).
  Selective recompute (Korthikanti et al. 2022 sec. 5) replays only QK^T, softmax, dropout and AV: we
  add the attention forward (4LHQT, halved if causal). Korthikanti's own HFU accounting (their sec. 6,
  72Bslh^2(1 + s/(3h) + V/(12lh))) charges 12LHQT instead; we count the matmuls actually replayed.
- inference: prefill 2N + attention forward per prompt token; decode 2N + 4*L*H*Q*context per
  generated token (one query against `context` cached keys and values; min(context, W) with a
  sliding window).
- mixture of experts: N is the matmul weights one token passes through (`active_matmul_params`: attention,
  dense layers' MLPs, and per MoE layer the router h x E, top-k routed experts and the shared experts),
  so 6N is the MoE reports' training compute per token (DeepSeek-V3 arXiv:2412.19437; Mixtral
  arXiv:2401.04088 sec. 2: 13B active of 47B) and MFU is on active-parameter FLOPs, as they report it.
  Multi-head latent attention: N holds its down/up projections, and the score term's width is
  n_heads x (qk_head_dim + v_head_dim) / 2 (`attention_width`; the naive, non-absorbed form).
- fp8 training (`fp8_gemm_share`, `fp8_matmul_time_factor`, `matmul_time_scale`): the block GEMMs less the
  routers run in fp8; attention, LM head, routers, norms keep bf16 (FP8_KEPT_HIGH); FP8_TIME_ASSUMPTION.
MFU uses model FLOPs (no recompute), HFU the FLOPs the hardware executes (Korthikanti et al. 2022
sec. 6; PaLM sec. 4.1 and appendix B).

Used in: notebooks/03_compute_and_time; gpukit.cli.compute (`gpukit flops`); flops_per_token in
gpukit.compute.train_time, gpukit.inference, gpukit.parallel, gpukit.memory.tricks, gpukit.compute.cpu_roofline, gpukit.audits.memory
and gpukit.bench.compute_check; tests/test_compute.py, tests/test_fuzz.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.catalog import as_model
from gpukit.errors import (
    check_finite,
    finite_result,
    overflow_error,
    require_choice,
    require_positive,
    require_positive_int,
)
from gpukit.results import frame, json_safe
from gpukit.specs import ModelSpec

RECOMPUTE = ("none", "selective", "full")
MODES = ("train", "prefill", "decode")


# ---------------------------------------------------------------------------------------------------
# FLOPs per token
# ---------------------------------------------------------------------------------------------------
# The terms a FlopsPerToken breakdown can hold, in order (its JSON names each, null when not counted).
FLOPS_TERMS = (
    "dense_forward",
    "dense_backward",
    "attention_forward",
    "attention_backward",
    "lm_head_forward",
    "lm_head_backward",
    "recompute_dense_forward",
    "recompute_attention_forward",
)


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
    breakdown: tuple[tuple[str, float], ...]  # (term, FLOPs per token), terms from FLOPS_TERMS
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
        df = frame(self.breakdown, ("part", "flops_per_token"))
        df["share"] = df["flops_per_token"] / self.hardware_flops
        return df

    def to_json_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k != "breakdown"}
        terms = dict(self.breakdown)
        d.update(  # every term named whatever the options (issue 25): null where it is not counted
            breakdown={k: terms.get(k) for k in FLOPS_TERMS},
            model_flops=self.model_flops,
            hardware_flops=self.hardware_flops,
        )
        return json_safe(d)


def _attention_width(model, n_layers, hidden):
    """(layers, H*Q) for the attention term, or (None, None) when unknown."""
    if model is not None:
        return model.n_layers, attention_width(model)
    if n_layers is not None and hidden is not None:
        return require_positive_int("n_layers", n_layers), require_positive_int("hidden", hidden)
    if (n_layers is None) != (hidden is None):
        raise ValueError(
            "n_layers and hidden go together (attention term 4*n_layers*hidden*seq_len); got one"
        )
    return None, None


def layer_matmul_params(model: ModelSpec) -> int:
    """Matmul weights of all transformer layers: q,k,v,o and the MLP matrices (no biases, no norms).
    For a dense model; a mixture of experts' per-token FLOPs use `active_matmul_params`."""
    return as_model(model).n_layers * as_model(model).linear_weights[0]


def attention_matmul_params(model: ModelSpec) -> int:
    """Matmul weights of one block's attention (no biases, no norms). Standard: q, k, v, o. Multi-head
    latent attention (DeepSeek-V2 arXiv:2405.04434 sec. 2.1.2-2.1.3): W^DQ, W^UQ (with the rotary part),
    W^DKV + W^KR, W^UK, W^UV and W^O, i.e. ModelSpec.attention_params less its two latent norms."""
    model = as_model(model)
    if model.is_mla:
        return model.attention_params() - model.q_lora_rank - model.kv_lora_rank
    h, q, kv = model.hidden, model.q_dim, model.kv_dim
    return h * q + 2 * h * kv + q * h


def router_matmul_params(model: ModelSpec) -> int:
    """The routers' matmul weights over all MoE layers, hidden x n_experts each (0 for a dense model)."""
    model = as_model(model)
    return model.n_moe_layers * model.hidden * model.n_experts


def active_matmul_params(model: ModelSpec) -> int:
    """Matmul weights one token passes through in all blocks (Kaplan's N, per token): attention, and the
    MLP: dense layers' MLP matrices, MoE layers' router + top-k routed experts + shared experts
    (DeepSeek-V3 arXiv:2412.19437 sec. 2.1.2; Mixtral arXiv:2401.04088 sec. 2: 'each token has access
    to 47B parameters, but only uses 13B active parameters'). Equals layer_matmul_params for a dense
    standard-attention model. 6 x this x tokens is the MoE reports' training compute (plus attention)."""
    model = as_model(model)
    h, mats = model.hidden, (3 if model.mlp == "swiglu" else 2)
    attn = attention_matmul_params(model)
    dense_mlp = mats * h * model.ffn_hidden
    if not model.is_moe:
        return model.n_layers * (attn + dense_mlp)
    moe_mlp = (
        h * model.n_experts
        + model.experts_per_token * mats * h * model.moe_ffn_hidden
        + model.n_shared_experts * mats * h * model.shared_ffn_hidden
    )
    n_moe = model.n_moe_layers
    return model.n_layers * attn + n_moe * moe_mlp + (model.n_layers - n_moe) * dense_mlp


def attention_width(model: ModelSpec) -> float:
    """H*Q of the attention-score term 4*L*H*Q*T: n_heads * head_dim, or with MLA the mean of the q/k
    width (qk_nope + qk_rope = qk_head_dim, for QK^T) and the value width (v_head_dim, for AV): QK^T
    costs 2*H*qk*T and AV 2*H*v*T per token (DeepSeek-V2 sec. 2.1; naive, non-absorbed MLA)."""
    model = as_model(model)
    if model.is_mla:
        return model.n_heads * (model.qk_head_dim + model.v_head_dim) / 2
    return model.n_heads * model.head_dim


def flops_per_token(
    model: ModelSpec | None = None,
    *,
    n_params: float | None = None,
    seq_len: int,
    causal: bool | None = None,
    include_embeddings: bool = False,
    recompute: str = "none",
    mode: str = "train",
    context: int | None = None,
    n_layers: int | None = None,
    hidden: int | None = None,
) -> FlopsPerToken:
    """FLOPs per token for training, prefill or decode (formulas and sources in the module docstring).

    model or n_params (N) is required. Without a model, the attention term needs n_layers and hidden
    (= n_heads * head_dim); otherwise it is left out and `note` says so. `context` is the KV length a
    decoded token attends to (default seq_len). causal None: the model's own attention, causal for a
    decoder, full for an encoder (BERT attends both ways: Devlin et al. 2019 sec. 3), causal without
    a model; an encoder has no causal attention and does not decode (ValueError).
    """
    require_choice("mode", mode, MODES)
    require_choice("recompute", recompute, RECOMPUTE)
    seq_len = require_positive_int("seq_len", seq_len)
    if mode != "train" and recompute != "none":
        raise ValueError(
            f"recompute must be none for mode {mode} (recompute is a training trick), got {recompute}"
        )
    if (model is None) == (n_params is None):
        raise ValueError("give exactly one of model or n_params")
    if model is not None and (n_layers is not None or hidden is not None):  # they would be ignored
        raise ValueError("n_layers and hidden go with n_params (for the attention term); a model has its own")
    if mode != "decode" and context is not None:  # it would be ignored
        raise ValueError(
            f"context applies to mode decode (the KV length a generated token attends to); mode {mode} "
            "uses seq_len"
        )
    if model is not None:
        model = as_model(model)  # a catalog name or a ModelSpec
        if model.arch == "encoder":  # bidirectional attention: BERT-large's was once counted causal, half
            if mode == "decode":
                raise ValueError(
                    f"mode decode needs a decoder: {model.name} is an encoder (no generated tokens, "
                    "no KV cache); use train or prefill (one forward pass)"
                )
            if causal:
                raise ValueError(
                    f"causal attention does not apply to {model.name}: an encoder attends both ways "
                    "(full attention)"
                )
            causal = False
    if causal is None:
        causal = True
    if model is not None:
        try:
            n = float(active_matmul_params(model))  # = layer_matmul_params for a dense model
            head = float(model.vocab * model.hidden) if include_embeddings else 0.0
        except OverflowError:
            raise overflow_error("the model's parameter count") from None
    else:
        n = require_positive("n_params", n_params)
        if include_embeddings:
            raise ValueError(
                "include_embeddings needs a model (vocab, hidden); with n_params, count the LM head "
                "in n_params yourself"
            )
        head = 0.0
    layers, width = _attention_width(model, n_layers, hidden)
    note = "" if layers else "attention term left out: pass a model, or n_layers and hidden"
    keys: float  # keys a token attends to: a count (decode) or a mean (train, prefill)
    try:
        if mode == "decode":
            context = require_positive_int("context", seq_len if context is None else context)
            # min(context, W) with a window, averaged over windowed and full layers (ModelSpec.mean_kv_tokens)
            keys = model.mean_kv_tokens(context) if model is not None else context
            attn_fwd = 4.0 * layers * width * keys if layers else 0.0  # one query, `keys` cached keys
            span = context
        else:
            context = None
            # causal: mean keys per token, seq_len/2 (or W - W^2/(2 seq_len) with a sliding window); full: seq_len
            keys = (
                (model.mean_attended_keys(seq_len) if model is not None else 0.5 * seq_len)
                if causal
                else seq_len
            )
            attn_fwd = 4.0 * layers * width * keys if layers else 0.0
            span = seq_len if causal else 0
    except OverflowError:
        raise overflow_error("the attention FLOPs (n_layers x hidden x seq_len/context)") from None

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
    check_finite("FLOPs per token", *(v for _, v in rows))
    capped = model.sliding_window_note(span) if model is not None and layers and span else None
    if capped:
        note = f"{note}; {capped}" if note else capped
    return FlopsPerToken(
        mode=mode,
        seq_len=seq_len,
        context=context,
        causal=bool(causal),
        recompute=recompute,
        n_params=n,
        lm_head_params=head,
        breakdown=tuple(rows),
        note=note,
    )


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
        return {
            "tokens": self.tokens,
            "model_flops": self.model_flops,
            "hardware_flops": self.hardware_flops,
            "per_token": self.per_token.to_json_dict(),
        }


def step_flops(
    model: ModelSpec | None,
    seq_len: int,
    global_batch_tokens: float,
    *,
    n_params: float | None = None,
    causal: bool = True,
    include_embeddings: bool = False,
    recompute: str = "none",
    n_layers: int | None = None,
    hidden: int | None = None,
) -> StepFlops:
    """Training FLOPs of one step of `global_batch_tokens` tokens (Narayanan et al. 2021 eq. 3 with
    recompute='full', causal=False, include_embeddings=True)."""
    model = as_model(model, "model", optional=True)  # a catalog name too
    tokens = require_positive("global_batch_tokens", global_batch_tokens)
    fpt = flops_per_token(
        model,
        n_params=n_params,
        seq_len=seq_len,
        causal=causal,
        include_embeddings=include_embeddings,
        recompute=recompute,
        n_layers=n_layers,
        hidden=hidden,
    )
    return StepFlops(tokens=tokens, per_token=fpt)


def mfu(model_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Model FLOPs utilization: model FLOP/s (no recompute) / peak FLOP/s (PaLM sec. 4.1)."""
    return finite_result(
        "mfu",
        require_positive("model_flops_per_s", model_flops_per_s)
        / require_positive("peak_flops_per_s", peak_flops_per_s),
    )


def hfu(hardware_flops_per_s: float, peak_flops_per_s: float) -> float:
    """Hardware FLOPs utilization: executed FLOP/s incl. recompute / peak (Korthikanti et al. 2022 sec. 6)."""
    return finite_result(
        "hfu",
        require_positive("hardware_flops_per_s", hardware_flops_per_s)
        / require_positive("peak_flops_per_s", peak_flops_per_s),
    )


def achieved_tflops(flops: float, step_time_s: float, n_gpus: int = 1) -> float:
    """TFLOP/s per GPU: flops / (step_time_s * n_gpus) / 1e12."""
    return finite_result(
        "achieved_tflops",
        require_positive("flops", flops)
        / (require_positive("step_time_s", step_time_s) * require_positive_int("n_gpus", n_gpus))
        / 1e12,
    )


# ---------------------------------------------------------------------------------------------------
# FP8 training: which FLOPs run in fp8 and how much faster they run
# ---------------------------------------------------------------------------------------------------
FP8_KEPT_HIGH = (
    "attention scores and AV, the LM head, the MoE routers, norms and elementwise ops stay in bf16/fp32 "
    "(DeepSeek-V3 arXiv:2412.19437 sec. 3.3.1: embedding, output head, gating, normalization and "
    "attention keep their precision; Transformer Engine casts only the Linear GEMMs)"
)
FP8_TIME_ASSUMPTION = (
    "fp8 GEMMs reach the same share of the fp8 peak as bf16 GEMMs of the bf16 peak (assumption until "
    "per-generation achievable fp8/bf16 rates are cataloged): an fp8 GEMM FLOP takes bf16_peak / fp8_peak "
    "of a bf16 one"
)


def fp8_gemm_share(fpt: FlopsPerToken, model: ModelSpec) -> float:
    """Share of the hardware FLOPs per token that run as fp8 GEMMs under the FP8 recipe: the block
    linears (forward, both backward GEMMs, their recompute) less the routers; FP8_KEPT_HIGH says what
    stays bf16."""
    model = as_model(model)
    if not isinstance(fpt, FlopsPerToken):
        raise ValueError(f"fpt must be a FlopsPerToken (from flops_per_token), got {type(fpt).__name__}")
    gemm = fpt.get("dense_forward") + fpt.get("dense_backward") + fpt.get("recompute_dense_forward")
    if fpt.n_params:
        gemm *= 1.0 - router_matmul_params(model) / fpt.n_params
    return gemm / fpt.hardware_flops


def fp8_matmul_time_factor(gpu, share_ratio: float = 1.0) -> float:
    """Time of an fp8 GEMM FLOP relative to a bf16 one on `gpu`: (bf16 peak x bf16 share) / (fp8 peak
    x fp8 share), the shares being the achievable fraction of each peak. FP8_TIME_ASSUMPTION: equal
    shares, so bf16_peak / fp8_peak from the catalog (0.5 on H100/H200/B200: fp8 doubles the dense
    peak), unless the caller gives share_ratio = bf16 share / fp8 share (gpukit.parallel.layout.estimate passes
    the cataloged achievable shares of gpukit/data/efficiency.csv). ValueError when the GPU has no fp8 units
    (A100, V100)."""
    from gpukit.catalog import as_gpu

    g = as_gpu(gpu)
    if not g.has("fp8"):
        raise ValueError(
            f"precision fp8 needs a GPU with fp8 tensor cores (Hopper, Ada, Blackwell, MI300): {g.name} has "
            "none; use bf16-mixed"
        )
    share_ratio = require_positive("share_ratio", share_ratio)
    return g.peak_tflops(g.half_dtype) / g.peak_tflops("fp8") * share_ratio


def matmul_time_scale(
    model: ModelSpec,
    seq_len: int,
    causal: bool,
    recompute: str,
    precision: str,
    gpu,
    share_ratio: float = 1.0,
) -> float:
    """Time of a step's hardware FLOPs relative to running them all at the bf16 rate: 1 unless precision
    is fp8, then (1 - share) + share x fp8_matmul_time_factor(gpu) with share = fp8_gemm_share (the
    attention, LM head and routers keep the bf16 rate). What gpukit.parallel.layout.estimate multiplies
    its compute time by; FLOPs and MFU are unchanged (MFU stays on the bf16 peak, as reports state it)."""
    if precision != "fp8":
        return 1.0
    model = as_model(model)
    f = flops_per_token(model, seq_len=seq_len, causal=causal, include_embeddings=True, recompute=recompute)
    share = fp8_gemm_share(f, model)
    return (1.0 - share) + share * fp8_matmul_time_factor(gpu, share_ratio)


def fp8_time_note(
    model: ModelSpec, seq_len: int, causal: bool, recompute: str, gpu, share_ratio: float | None = None
) -> str:
    """One line stating the FP8 recipe's time model: the share of the step's FLOPs run as fp8 GEMMs, the
    factor on their time, what stays bf16 and the assumption (for gpukit.parallel.layout.estimate's notes)."""
    model = as_model(model)
    f = flops_per_token(model, seq_len=seq_len, causal=causal, include_embeddings=True, recompute=recompute)
    share, k = (
        fp8_gemm_share(f, model),
        fp8_matmul_time_factor(gpu, 1.0 if share_ratio is None else share_ratio),
    )
    rates = (
        FP8_TIME_ASSUMPTION
        if share_ratio is None
        else f"achievable shares of the bf16 and fp8 peaks from the catalog (bf16/fp8 share ratio {share_ratio:.3f})"
    )
    return (
        f"precision fp8: {share:.0%} of the step's FLOPs are fp8 GEMMs, timed at {k:.2f} x the bf16 time; "
        f"{FP8_KEPT_HIGH}; {rates}; MFU stays on the bf16 peak"
    )
