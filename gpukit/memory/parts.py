"""The sum of parts of the memory estimate: the bytes of every component (params, grads, optimizer,
activations, logits, KV cache, CPU) on one pipeline stage, and the named terms inside them.

Pure calculator (no torch, no I/O); float bytes per GPU, the most loaded rank of a stage. Model states
per ZeRO (Rajbhandari et al. 2019, sec. 3.1 and 5), ZeRO-Offload (Ren et al. 2021) and ZeRO-Infinity
(Rajbhandari et al. 2021); frozen or served bases per LoRA (Hu et al. 2021) and QLoRA (Dettmers et
al. 2023), quantized through gpukit.quant; activations per Korthikanti et al. 2022 (Table 2, sec.
4.2.3 and 4.3), generalised to grouped-query attention and SwiGLU (`layer_activation_bytes`); the
KV cache from gpukit.memory.kv_cache (the one formula `gpukit serve` uses too), in the compute dtype.
These are the "megatron" convention's components and the model states from which the "pytorch" convention (gpukit.memory.pytorch) starts. gpukit.memory's
docstring states every convention, and gpukit.memory re-exports the public names here.

Used in: gpukit.memory (estimate_memory), gpukit.memory.pytorch, gpukit.memory.eager
(megatron_activation_bytes), gpukit.parallel, gpukit.audits.memory, gpukit.widgets.memory_view,
tests/test_memory*.py (all through gpukit.memory).
"""

from __future__ import annotations

import math

from gpukit.catalog import as_model
from gpukit.errors import require_choice, require_n_params, require_positive_int
from gpukit.memory.kv_cache import kv_cache_bytes
from gpukit.memory.train_setup import (
    FP8_AMAX_HISTORY_LEN,
    FP8_WEIGHT_CACHE_BYTES,
    TrainSetup,
    state_bytes_per_param,
    uses_dropout,
)
from gpukit.quant import QUANT_DTYPES, lora_layer_params, quantized_bytes
from gpukit.specs import ModelSpec
from gpukit.units import dtype_bytes


def layer_activation_bytes(
    model: ModelSpec, setup: TrainSetup, recompute: str | None = None, moe: bool = False
) -> float:
    """Bytes one transformer layer keeps for its backward pass, per GPU, for one micro-batch.

    Korthikanti et al. 2022, sec. 4.1 and Table 2, with a = n_heads, t = tp, in 16-bit:
    attention 11sbh + 5as^2b (QKV input 2, Q and K 4, V 2, output-projection input 2, dropout mask 1;
    softmax 2as^2b, its dropout mask as^2b and output 2as^2b), MLP 19sbh (input 2, GeLU input 8 and
    output 8, mask 1), two LayerNorm inputs 4sbh: sbh(34 + 5as/h). Generalised with
    q = n_heads*head_dim, kv = n_kv_heads*head_dim, f = ffn_hidden, e bytes per activation, m = 1
    byte per dropout mask (0 without dropout):
      attention  sb(e*h + e*(2q + 2kv) + m*h) + as^2b(e + m + e*[m])
      MLP        sb(e*h + 2e*f + m*h)   (SwiGLU: 4e*f: gate, up, SiLU output, product)
      norms      2e*sbh
    For the GPT layout (q = kv = h, f = 4h, GeLU, e = 2, dropout) this is exactly Table 2. With TP
    the norm inputs, QKV/MLP inputs and masks (10sbh) stay whole unless sp; selective recompute
    drops the score terms; full recompute keeps only the layer input, 2sbh (/t with sp: Megatron
    stores the SP-sharded input). attention="flash" replaces the score terms by a 4asb logsumexp.

    Context parallelism: each cp rank holds s/cp tokens of every activation (Megatron-Core CP; ring
    attention, Liu et al. 2023), so s is seq_len / cp throughout.
    MoE layer (moe=True, `moe_mlp_activation_bytes`): the dense MLP is replaced by the router, the
    shared experts and the routed experts' tokens, capacity_factor * top_k * tokens per rank.
    precision fp8 (FP8_RECIPE): the inputs of the GEMMs (QKV input, output-projection input, MLP input,
    the fc2/down input) are saved in fp8, 1 byte (Transformer Engine Linear saves its fp8-cast input).
    """
    recompute = recompute or setup.recompute
    model = as_model(model)  # a catalog name or a ModelSpec
    s, b, h = setup.seq_len / setup.cp, setup.micro_batch, model.hidden
    f = model.ffn_hidden
    t = setup.tp
    sp_div = t if setup.sp else 1
    e = dtype_bytes(setup.compute_dtype)
    e8 = 1 if setup.precision == "fp8" else e  # saved GEMM inputs (FP8_RECIPE)
    m = 1 if uses_dropout(model, setup) else 0  # dropout masks are 1 byte per element (Table 2)
    if recompute == "full":
        return e * s * b * h / sp_div
    # Not split by TP (split by SP): two norm inputs, the MLP-input linear input, its mask (the QKV
    # input and the attention's mask: attention_activation_bytes).
    whole = s * b * h * (2 * e + e8 + m)
    # Split by TP: the MLP's activation input and output (GeLU), or gate, up, SiLU output and their
    # product (SwiGLU); the last one feeds fc2/down.
    mlp = ((3 if model.mlp == "swiglu" else 1) * e + e8) * f
    split = 0.0
    if moe:
        w, sp_ = moe_mlp_activation_bytes(model, setup)
        whole += w
        split += sp_
    else:
        split += s * b * mlp
    return attention_activation_bytes(model, setup, recompute) + whole / sp_div + split / t


def attention_activation_bytes(model: ModelSpec, setup: TrainSetup, recompute: str | None = None) -> float:
    """The attention's share of `layer_activation_bytes` (no norms, no MLP), per GPU and micro-batch,
    s = seq_len / cp tokens (context parallelism): the QKV linear input (e*h; fp8: 1 byte) and the
    output dropout mask (m*h), whole unless sp; Q, K, V and the output-projection input
    (e*(q + 2kv) + e8*q) split by tp; the scores (eager: softmax output, its mask and the dropout output,
    as^2b(e + m + e*[m])) or, fused, one fp32 logsumexp per row and head (4asb), split by tp, none with
    selective recompute. Korthikanti et al. 2022 Table 2 (11sbh + 5as^2b with dropout, GPT layout).
    Multi-head latent attention: the latents and the per-head widths of DeepSeek-V2 sec. 2.1 (below)."""
    recompute = recompute or setup.recompute
    model = as_model(model)
    s, b, h = setup.seq_len / setup.cp, setup.micro_batch, model.hidden
    q, kv, a, t = model.q_dim, model.kv_dim, model.n_heads, setup.tp
    sp_div = t if setup.sp else 1
    e = dtype_bytes(setup.compute_dtype)
    e8 = 1 if setup.precision == "fp8" else e
    m = 1 if uses_dropout(model, setup) else 0
    if recompute == "full":
        return 0.0  # the layer input only, counted by layer_activation_bytes
    whole = s * b * h * (e8 + m)
    if model.is_mla:
        # Multi-head latent attention (DeepSeek-V2 arXiv:2405.04434 sec. 2.1.2-2.1.3): the latents c^Q
        # (q_lora_rank) and c^KV (kv_lora_rank) are saved as their norms' inputs and, normed, as the
        # up-projections' inputs, with the decoupled rotary key (qk_rope_head_dim), whole (one copy per
        # TP rank); the heads hold Q and K at qk_head_dim and V and the output at v_head_dim, split by tp.
        lat = model.q_lora_rank + model.kv_lora_rank
        whole += s * b * (e * (lat + model.qk_rope_head_dim) + e8 * lat)
        qk, v = model.n_heads * model.qk_head_dim, model.n_heads * model.v_head_dim
        split = s * b * (e * (2 * qk + v) + e8 * v)
    else:
        split = s * b * (e * (q + 2 * kv) + e8 * q)
    if recompute != "selective":
        if setup.attention == "eager":  # softmax output, its dropout mask and the dropout output
            split += a * s * s * b * (e + m + (e if m else 0))
        else:  # fused attention keeps one fp32 logsumexp per row (FlashAttention-2, Dao 2023)
            split += 4 * a * s * b
    return whole / sp_div + split / t


def moe_mlp_activation_bytes(model: ModelSpec, setup: TrainSetup) -> tuple[float, float]:
    """(bytes split by sp, bytes split by tp) that an MoE layer's MLP keeps for backward, per GPU and
    micro-batch, T = seq_len / cp * micro_batch tokens on the rank:
    - router: its fp32 softmax over n_experts per token, 4*T*E (Megatron-Core's router computes the
      scores in fp32), split by sp like the tokens;
    - shared experts (DeepSeek-V3 sec. 2.1.2): a dense MLP of shared_ffn_hidden each, split by tp;
    - routed experts: each rank receives capacity_factor * top_k * T token rows (tokens per expert
      = capacity_factor * tokens * top_k / n_experts, GShard sec. 2.2: the dispatch buffer is padded to
      capacity, times its n_experts / ep experts over the ep ranks' tokens, balanced routing); per row the
      permuted expert input (h wide) and the expert MLP's intermediates (moe_ffn_hidden / expert_tp wide,
      as a dense MLP's); and the expert output gathered back to its top_k * T token copies (h wide)
      that the weighted combine keeps (its gradient w.r.t. the gate probabilities needs it). With sp the rank dispatches its T/tp tokens and the expert-TP
      group gathers expert_tp of those shares (Megatron-Core MoE, "parallel folding"); without sp every
      TP rank holds all T rows. Returned as TP-split bytes scaled so that the caller's / tp gives this.
    The routed rows depend on routing: with dropless training and imbalance a rank can receive more
    (capacity_factor names the bound; 1.0 = perfectly balanced)."""
    model = as_model(model)
    s, b, h = setup.seq_len / setup.cp, setup.micro_batch, model.hidden
    t, etp = setup.tp, setup.expert_tensor_parallel
    sp_div = t if setup.sp else 1
    e = dtype_bytes(setup.compute_dtype)
    e8 = 1 if setup.precision == "fp8" else e
    tokens = s * b
    per_f = (3 if model.mlp == "swiglu" else 1) * e + e8  # as the dense MLP: intermediates, fc2 input
    router = 4.0 * tokens * model.n_experts  # / sp_div by the caller
    shared = tokens * model.n_shared_experts * per_f * model.shared_ffn_hidden  # / tp by the caller
    gathered = model.experts_per_token * tokens * (etp / sp_div if setup.sp else 1.0)  # token copies
    rows = setup.capacity_factor * gathered  # capacity buffer: E/ep experts x capacity each, padded
    routed = rows * (e8 * h + per_f * model.moe_ffn_hidden / etp) + gathered * e * h  # per GPU, divided
    return router, shared + routed * t


def stage_layers_and_extra(model: ModelSpec, setup: TrainSetup, stage: str) -> tuple[int, int]:
    """Layers on a pipeline stage and its non-layer parameters (elements, before TP)."""
    model = as_model(model, "model")  # a catalog name too
    layers = math.ceil(model.n_layers / setup.pp)
    if stage == "only":
        return layers, model.embedding_params() + model.head_params()
    if stage == "first":
        return layers, model.embedding_params()
    tied_copy = model.vocab * model.hidden if model.tied_embeddings and model.arch == "decoder" else 0
    return layers, model.head_params() + tied_copy


STAGES = ("only", "first", "last")  # pipeline stages a breakdown is computed for (pp 1: only)


def stage_moe_layers(model: ModelSpec, setup: TrainSetup, layers: int) -> int:
    """MoE layers on the heaviest pipeline stage: all of them with pp 1, else their share of the stage's
    layers rounded up (the rule of gpukit.parallel.layout's expert sharding)."""
    model = as_model(model, "model")
    layers = require_positive_int("layers", layers)
    return model.n_moe_layers if setup.pp == 1 else model.stage_moe_layers(layers)


def stage_param_split(model: ModelSpec, setup: TrainSetup, stage: str) -> tuple[float, float]:
    """(dense, expert) parameter elements one GPU of `stage` holds before ZeRO: the dense part (attention,
    router, shared experts, dense MLPs, norms, embedding/head) split by tp; the routed experts of the
    stage's MoE layers split by ep * expert_tp (Megatron-Core MoE: each EP rank holds n_experts / ep
    whole experts, each split over the expert-TP ranks; DeepSeek-V3 sec. 3.1: 64-way EP)."""
    model = as_model(model, "model")
    require_choice("stage", stage, STAGES)
    layers, extra = stage_layers_and_extra(model, setup, stage)
    blocks = model.blocks_params() if stage == "only" else model.stage_blocks_params(layers)
    expert = stage_moe_layers(model, setup, layers) * model.n_experts * model.expert_params()
    return (blocks - expert + extra) / setup.tp, expert / (setup.ep * setup.expert_tensor_parallel)


def _base_weight_bytes(model: ModelSpec, setup: TrainSetup, layers: int, extra: int) -> tuple[float, float]:
    """(bytes of the frozen/served weights on one GPU, bytes of one layer) in setup.base_dtype."""
    dt, ce = setup.base_dtype, dtype_bytes(setup.compute_dtype)
    if dt in QUANT_DTYPES and model.is_moe:  # every expert's linears quantized (QLoRA / bitsandbytes 4-bit
        # replaces every nn.Linear of the blocks, experts included; Dettmers et al. 2023 sec. 3); the router, the
        # norms and the embeddings stay 16-bit. Output rows for int8's per-row scales: weights / hidden (stated)
        blocks = model.blocks_params() if setup.pp == 1 else model.stage_blocks_params(layers)
        moe_l = model.n_moe_layers if setup.pp == 1 else model.stage_moe_layers(layers)
        keep = layers * 2 * model.norm_params() + moe_l * model.router_params()
        lin = blocks - keep
        q = quantized_bytes(lin, dt, lin / model.hidden)
        return (q + (keep + extra) * ce) / setup.tp, (q + keep * ce) / layers / setup.tp
    if dt in QUANT_DTYPES:  # only block linears are quantized; norms, biases, embeddings stay 16-bit
        lin, rows = model.linear_weights
        layer = quantized_bytes(lin, dt, rows) + (model.layer_params() - lin) * ce
        return (layers * layer + extra * ce) / setup.tp, layer / setup.tp
    if model.is_moe and setup.ep > 1:  # routed experts split over ep * expert_tp (stage_param_split)
        dense, expert = stage_param_split(model, setup, "only" if setup.pp == 1 else "first")
        return (dense + expert) * dtype_bytes(dt), _layer_elem(model, setup) * dtype_bytes(dt)
    layer = model.layer_params() * dtype_bytes(dt)
    return (layers * layer + extra * dtype_bytes(dt)) / setup.tp, layer / setup.tp


def stage_parts(model: ModelSpec, setup: TrainSetup, stage: str) -> dict:
    """Float bytes of every component on one pipeline stage (see module docstring)."""
    model = as_model(model, "model")  # a catalog name too
    layers, extra = stage_layers_and_extra(model, setup, stage)
    t, dp, z = setup.tp, setup.dp, setup.zero_stage
    ce = dtype_bytes(setup.compute_dtype)
    p = dict(params=0.0, grads=0.0, optimizer=0.0, activations=0.0, logits=0.0, kv_cache=0.0, cpu=0.0)
    holds_head = stage in ("only", "last")
    s, b = setup.seq_len, setup.micro_batch
    if setup.inference:
        p["params"], layer_w = _base_weight_bytes(model, setup, layers, extra)
        if model.arch == "decoder":  # the one KV formula (gpukit.memory.kv_cache), in the compute dtype
            p["kv_cache"] = kv_cache_bytes(model, s, setup.batch, setup.compute_dtype, t, setup.pp)
        # Prefill working set of one layer for the whole batch at once (an upper bound: servers that
        # chunk the prefill need less): residual and normed input, Q/K/V and attention output, the
        # MLP intermediates; nothing is kept across layers without a backward pass.
        mlp = (3 if model.mlp == "swiglu" else 1) * model.ffn_hidden
        live = 2 * model.hidden + (2 * model.q_dim + 2 * model.kv_dim + mlp) / t
        p["activations"] = ce * setup.batch * s * live
        if setup.attention == "eager":
            p["activations"] += ce * model.n_heads / t * s * s * setup.batch
        if holds_head:  # fp32 logits of the last position only, for sampling
            p["logits"] = 4.0 * setup.batch * model.vocab / t
        if setup.offload == "all":  # weights streamed from CPU; one layer resident at a time
            p["cpu"], p["params"] = p["params"] - layer_w, layer_w
        return p

    w, g, o = state_bytes_per_param(setup)
    if setup.finetune == "full":
        # dense parts shard under ZeRO over dp*cp ranks, routed experts over the expert-data-parallel
        # group dp*cp*tp/(ep*expert_tp) (Megatron-Core MoE docs; ZeRO sec. 5 per group): `n_elem` is the
        # elements of one GPU's shard-equivalent, the sum of both parts each divided by its group
        dense, expert = stage_param_split(model, setup, stage)
        n_elem = dense + expert  # held before ZeRO

        def sharded(bytes_per: float, on: bool) -> float:
            return (
                dense * bytes_per / setup.dense_dp + expert * bytes_per / setup.expert_dp
                if on
                else n_elem * bytes_per
            )

        layer_elem = _layer_elem(model, setup)
        p["params"] = sharded(w, z >= 3)
        layer_w = layer_elem * w
        p["grads"] = sharded(g, z >= 2)
        p["optimizer"] = sharded(o, z >= 1)
        if setup.precision == "fp8":  # FP8_RECIPE: fp8 weight cache and amax histories, beside the weights
            p["params"] += fp8_extra_bytes(model, setup, stage) / (setup.dense_dp if z >= 3 else 1)
    else:  # frozen base + trainable adapters (LoRA, Hu et al. 2021; QLoRA, Dettmers et al. 2023)
        base, layer_w = _base_weight_bytes(model, setup, layers, extra)
        w, g, o = state_bytes_per_param(setup, adapters=True)
        layer_elem = lora_layer_params(model, setup.lora_rank, setup.lora_targets) / t
        n_elem = layers * layer_elem
        p["params"] = (base + n_elem * w) / (dp if z >= 3 else 1)
        p["grads"] = n_elem * g / (dp if z >= 2 else 1)
        p["optimizer"] = n_elem * o / (dp if z >= 1 else 1)
    layer_g = layer_elem * g
    if setup.offload in ("optimizer", "all"):
        # ZeRO-Offload (Ren et al. 2021, sec. 4.1): optimizer states, fp32 master and the 16-bit
        # gradients live on the CPU; the GPU keeps a gradient buffer (here: one layer's).
        p["cpu"] += p["optimizer"] + max(p["grads"] - layer_g, 0.0)
        p["optimizer"], p["grads"] = 0.0, min(p["grads"], layer_g)
    if setup.offload == "all":  # ZeRO-Infinity (Rajbhandari et al. 2021): parameters too
        p["cpu"] += max(p["params"] - layer_w, 0.0)
        p["params"] = min(p["params"], layer_w)
    elif z >= 3:  # ZeRO-3 / FSDP gathers one layer's full weights to compute it, plus prefetched ones
        p["params"] += layer_w * (1 + setup.zero3_prefetch_layers)

    # 1F1B: the first stage holds min(pp, m) micro-batches (Korthikanti 4.2.3); interleaved x (1+(p-1)/(pv))
    in_flight = setup.in_flight_micro_batches * setup.interleave_factor if stage == "first" else 1
    sp_div = t if setup.sp else 1
    if setup.cp > 1:
        s = (
            s // setup.cp
        )  # context parallelism: s/cp tokens of the sequence on this rank (cp divides seq_len)
    n_moe = stage_moe_layers(model, setup, layers)
    act = (
        (layers - n_moe) * layer_activation_bytes(model, setup)
        + n_moe * layer_activation_bytes(model, setup, moe=True)
    ) * in_flight
    if setup.recompute == "full":  # the layer being recomputed holds its full activations
        act += layer_activation_bytes(model, setup, recompute="none", moe=n_moe > 0)
    if stage in ("only", "first") and uses_dropout(model, setup):  # mask after the embeddings, sec. 4.3
        act += s * b * model.hidden / sp_div * in_flight
    if holds_head:  # final-norm input and LM-head input, Korthikanti sec. 4.3 (4sbh/t); encoders: an MLM head
        act += 2 * ce * s * b * model.hidden / sp_div
        # Logits: the 16-bit output of the LM head and the fp32 softmax that cross entropy keeps for
        # backward (Megatron's vocab-parallel cross entropy writes the gradient into that buffer);
        # Korthikanti sec. 4.3 counts the fp32 part, 4sbv/t.
        p["logits"] = (ce + 4.0) * s * b * model.vocab / t
    if setup.base_dtype == "nf4" and not setup.inference:  # one weight dequantized to 16-bit at a time
        act += max(i * o_ for _, i, o_ in model.linear_shapes) / t * ce
    p["activations"] = act
    return p


def _layer_elem(model: ModelSpec, setup: TrainSetup) -> float:
    """Elements of the largest block on one GPU (what ZeRO-3 gathers to compute it): a MoE block's dense
    part / tp plus its experts / (ep * expert_tp), or a dense block / tp."""
    if not model.is_moe:
        return model.layer_params() / setup.tp
    i = model.n_layers - 1 if model.is_moe_layer(model.n_layers - 1) else model.first_dense_layers
    experts = model.n_experts * model.expert_params()
    moe = (model.layer_params_at(i) - experts) / setup.tp + experts / (
        setup.ep * setup.expert_tensor_parallel
    )
    return max(moe, model.layer_params_at(0) / setup.tp)


def fp8_extra_bytes(model: ModelSpec, setup: TrainSetup, stage: str) -> float:
    """Bytes the FP8 recipe (train_setup.FP8_RECIPE) adds beside the bf16 weights on one GPU before
    ZeRO: the fp8 weight cache (weight + transpose, FP8_WEIGHT_CACHE_BYTES per GEMM weight; the
    stage's block weights stand for the GEMM weights: norms and biases are < 0.1 %) and the amax
    history of every fp8 tensor (input, weight and output gradient of each GEMM, FP8_AMAX_HISTORY_LEN
    fp32 values plus a scale and its inverse; TE DelayedScaling)."""
    model = as_model(model, "model")
    require_choice("stage", stage, STAGES)
    layers, extra = stage_layers_and_extra(model, setup, stage)
    dense, expert = stage_param_split(model, setup, stage)
    gemm_w = dense - extra / setup.tp + expert
    per_dense = len(model.linear_shapes)
    mlp_mats = 3 if model.mlp == "swiglu" else 2
    n_moe = stage_moe_layers(model, setup, layers)
    local_experts = model.n_experts / setup.ep + model.n_shared_experts
    gemms = (layers - n_moe) * per_dense + n_moe * (4 + mlp_mats * local_experts)
    return FP8_WEIGHT_CACHE_BYTES * gemm_w + gemms * 3 * (FP8_AMAX_HISTORY_LEN + 2) * 4.0


def stage_terms(model: ModelSpec, setup: TrainSetup, stage: str) -> tuple[tuple[str, float], ...]:
    """Named terms of the issue-10 conventions on one stage (bytes, or counts where named so); each is
    already inside the components of `stage_parts`, listed so that none hides in a sum."""
    model = as_model(model, "model")  # a catalog name too
    if setup.inference:
        return ()
    layers, _ = stage_layers_and_extra(model, setup, stage)
    first = stage == "first"
    terms = [
        ("in_flight_micro_batches", float(setup.in_flight_micro_batches if first else 1)),
        ("interleave_factor", setup.interleave_factor if first else 1.0),
    ]
    in_flight = setup.in_flight_micro_batches * setup.interleave_factor if first else 1
    if setup.recompute == "full":
        terms += [
            ("stored_checkpoints_bytes", layers * layer_activation_bytes(model, setup) * in_flight),
            ("recompute_layer_bytes", layer_activation_bytes(model, setup, recompute="none")),
        ]
    if model.is_moe and setup.finetune == "full":  # what EP shards, said (Megatron-Core MoE docs)
        dense, expert = stage_param_split(model, setup, stage)
        terms += [
            ("experts_per_gpu", model.n_experts / setup.ep),
            ("expert_params_per_gpu", expert),
            ("dense_params_per_gpu", dense),
            ("expert_dp", float(setup.expert_dp)),
            (
                "routed_token_rows_per_gpu",
                setup.capacity_factor
                * model.experts_per_token
                * setup.seq_len
                / setup.cp
                * setup.micro_batch,
            ),
        ]
    if setup.precision == "fp8":
        terms.append(("fp8_extra_bytes", fp8_extra_bytes(model, setup, stage)))
    if setup.zero_stage >= 3 and setup.offload != "all":
        if setup.finetune == "full":
            w = state_bytes_per_param(setup)[0]
            layer_w = model.layer_params() / setup.tp * w
        else:
            layer_w = _base_weight_bytes(model, setup, layers, 0)[1]
        terms += [
            ("zero3_gathered_bytes", layer_w),
            ("zero3_prefetch_bytes", layer_w * setup.zero3_prefetch_layers),
        ]
    return tuple(terms)


def n_params_parts(n_params: int, setup: TrainSetup) -> dict:
    """Model states only, for a bare parameter count: split evenly by tp*pp; no activations."""
    require_n_params(n_params)  # checked (<= errors.MAX_N_PARAMS), kept as given (an int keeps whole bytes)
    if setup.finetune != "full":
        raise ValueError(
            f"finetune={setup.finetune!r} needs the model's shape; pass model= (CLI: --model or --layers/--hidden/--heads)"
        )
    if setup.zero3_prefetch_layers:  # a layer's size is what is gathered ahead
        raise ValueError(
            f"zero3_prefetch_layers {setup.zero3_prefetch_layers} needs the model's shape (the size of a "
            "layer); pass model= (CLI: --model or --layers/--hidden/--heads)"
        )
    n = n_params / (setup.tp * setup.pp)
    p = dict(params=0.0, grads=0.0, optimizer=0.0, activations=0.0, logits=0.0, kv_cache=0.0, cpu=0.0)
    if setup.inference:  # int8 row scales need the shapes; omitted here
        dt = setup.base_dtype
        p["params"] = quantized_bytes(n, dt) if dt == "nf4" else n * dtype_bytes(dt)
    else:
        w, g, o = state_bytes_per_param(setup)
        z, dp = setup.zero_stage, setup.dp
        p["params"] = n * w / (dp if z >= 3 else 1)
        p["grads"] = n * g / (dp if z >= 2 else 1)
        p["optimizer"] = n * o / (dp if z >= 1 else 1)
        if setup.offload in ("optimizer", "all"):
            p["cpu"], p["optimizer"], p["grads"] = p["optimizer"] + p["grads"], 0.0, 0.0
    if setup.offload == "all":
        p["cpu"], p["params"] = p["cpu"] + p["params"], 0.0
    return p
