"""The "pytorch" convention of the memory estimate: the peak of one steady-state eager PyTorch
training step, as the components alive at that moment, in closed form for any ModelSpec.

What gpukit.memory.eager's op-by-op replay (matched to MemTracker tensor by tensor) teaches, in
closed form: each term below is one of its lessons (what each op saves for backward, autocast's
bf16 copies, the loss's fp32 buffers, the backward's moving peak, the optimizer's temporaries).
Float bytes per GPU, one micro-batch. Sources as cited at each function: PyTorch
tools/autograd/derivatives.yaml, aten/src/ATen/autocast_mode.cpp and torch/optim/adam.py;
FlashAttention-2 (Dao 2023); Megatron's TP/SP split (Korthikanti et al. 2022). gpukit.memory's
estimate_memory applies it (TrainSetup.convention "pytorch", full training) and re-exports the
public names here; tests/test_memory_planning.py checks the result against measured peaks of the
GPT and Llama reference models.

Used in: gpukit.memory (estimate_memory), gpukit.bench.measure (pytorch_forward_end_bytes),
tests/test_memory_planning.py.
"""

from __future__ import annotations

import math

from gpukit.catalog import as_model
from gpukit.errors import finite_result, require_positive
from gpukit.memory.parts import stage_layers_and_extra
from gpukit.memory.train_setup import STATE_BYTES_BF16, STATE_BYTES_FP32, TrainSetup, uses_dropout
from gpukit.specs import ModelSpec
from gpukit.units import dtype_bytes


def _amp(setup: TrainSetup) -> bool:
    """torch.autocast: fp32 parameters, 16-bit compute (bf16-mixed / fp16-mixed)."""
    return setup.precision in ("bf16-mixed", "fp16-mixed")


def _separate_projections(model: ModelSpec) -> bool:
    """Llama-family code (Meta's model.py, Hugging Face LlamaAttention/LlamaMLP) has separate q, k, v
    and gate, up Linears; GPT-2/Megatron code fuses QKV. Taken from the MLP kind (an assumption)."""
    return model.mlp == "swiglu"


def pytorch_layer_activation_bytes(
    model: ModelSpec, setup: TrainSetup, recompute: str | None = None
) -> float:
    """Bytes one layer keeps from its forward to its backward in eager PyTorch, per GPU, one micro-batch.

    What each op saves (PyTorch tools/autograd/derivatives.yaml; autocast op lists in
    aten/src/ATen/autocast_mode.cpp), r = bytes of the residual stream (4 while the parameters are
    fp32, also under autocast: embedding output and residual adds are fp32), e = compute bytes:
      norms        input r*sbh each + fp32 stats (LayerNorm mean and rstd 8sb; RMSNorm rstd 4sb and
                   the normalised input r*sbh, nn.RMSNorm being composite ops)
      Linear       its input; under autocast a bf16 copy of a fp32 input *per Linear* (autocast casts
                   activations per call and caches only leaf weights), so Llama's separate q, k, v
                   keep three copies of the norm output and gate, up two; plus the bf16 weight copy
                   (2 bytes per weight) that autocast caches and the Linear saves
      attention    eager: Q, K, V as contiguous (b, a, s, d) copies for bmm (K, V repeated to n_heads
                   for GQA), the softmax output a s^2 b (CUDA autocast runs softmax in fp32 and saves
                   a bf16 copy too: +4 a s^2 b); fused SDPA (flash): q, k, v, its output and an fp32
                   logsumexp 4asb (FlashAttention-2, Dao 2023); eager also the output projection's
                   input (a reshape copy; a fused kernel's output is (b, s, a, d)-major, so a view)
      MLP          GeLU: fc1 output and GeLU output 2e*sbf; SwiGLU: gate, SiLU output, up, product 4e*sbf
      dropout      (setup.dropout) CUDA masks are bool: 1 byte per element after attention and MLP,
                   and for the attention probabilities plus the dropped-out copy e a s^2 b
    Full recompute (torch.utils.checkpoint) keeps the block input only, r*sbh.
    With tp the Linear inputs and norms stay whole (split by sp), the rest is split by tp (Megatron).
    """
    model = as_model(model, "model")  # a catalog name too
    recompute = recompute or setup.recompute
    if recompute == "full":
        r = 2 if setup.precision in ("bf16", "fp16") else 4
        return r * setup.seq_len * setup.micro_batch * model.hidden / (setup.tp if setup.sp else 1)
    attn, mlp = _pytorch_layer_halves(model, setup, recompute)
    return attn + mlp


def _pytorch_layer_halves(model: ModelSpec, setup: TrainSetup, recompute: str) -> tuple[float, float]:
    """(attention half, MLP half) of pytorch_layer_activation_bytes without full recompute: each
    half's norm, Linear inputs, saved tensors and bf16 weight copies. The backward frees the MLP
    half before it reaches the attention (whose score gradients are the largest transient)."""
    s, b, h = setup.seq_len, setup.micro_batch, model.hidden
    q, kv, f, a = model.q_dim, model.kv_dim, model.ffn_hidden, model.n_heads
    T, t = s * b, setup.tp
    sp_div = t if setup.sp else 1
    amp = _amp(setup)
    e = dtype_bytes(setup.compute_dtype)
    r = 2 if setup.precision in ("bf16", "fp16") else 4
    sep = _separate_projections(model)

    def lin_in(n_linears: int) -> float:  # the saved input of n Linears reading one fp32 tensor
        return (2 * n_linears if amp else e) * T * h

    # LayerNorm (one fused op) saves its input and mean, rstd; nn.RMSNorm runs as composite ops
    # (x * rsqrt(mean(x^2) + eps), then * weight) and saves its input, rstd and the normalised x
    # (for the weight's gradient): +r*sbh (measured with saved_tensors_hooks, torch 2.13 CPU)
    norm = r * T * h + 8 * T if model.norm == "layernorm" else 2 * r * T * h + 4 * T
    attn_whole, mlp_whole = norm + lin_in(3 if sep else 1), norm + lin_in(2 if sep else 1)
    sc = a * s * s * b
    if setup.attention == "eager" and recompute != "selective":
        attn = e * T * 3 * q + sc * (e + (4 if amp and setup.device == "cuda" else 0))
    elif setup.attention == "eager":  # selective: scores recomputed, Q, K, V kept
        attn = e * T * 3 * q
    else:
        attn = e * T * (2 * q + 2 * kv) + 4 * a * s * b
    if setup.attention == "eager":  # the output projection's input: the (b, s, a*d) reshape copies
        attn += e * T * q  # (fused kernels return (b, s, a, d)-major outputs: the reshape is a view)
    mlp = (4 if model.mlp == "swiglu" else 2) * e * T * f
    if uses_dropout(model, setup):
        attn_whole += T * h
        mlp_whole += T * h
        if setup.attention == "eager" and recompute != "selective":
            attn += sc * (1 + e)
    shapes = model.linear_shapes
    w_attn = sum(i * o for n, i, o in shapes if n in ("q", "k", "v", "o"))
    w_mlp = sum(i * o for n, i, o in shapes) - w_attn
    copy = autocast_weight_copy_bytes(model, setup)
    w_tot = w_attn + w_mlp
    return (
        attn_whole / sp_div + attn / t + copy * w_attn / w_tot,
        mlp_whole / sp_div + mlp / t + copy * w_mlp / w_tot,
    )


def autocast_weight_copy_bytes(model: ModelSpec, setup: TrainSetup) -> float:
    """One layer's bf16 weight copies that torch.autocast caches and the Linears save (2 bytes per
    Linear weight, split by tp). With ZeRO-3/FSDP the gathered 16-bit layer is the copy (counted with
    the parameters as the working set), so none here."""
    model = as_model(model, "model")  # a catalog name too
    if not _amp(setup) or setup.zero_stage >= 3:
        return 0.0
    return 2 * model.linear_weights[0] / setup.tp


def optimizer_temp_bytes(
    model: ModelSpec | None, setup: TrainSetup, n_elem: float, state_bytes: float
) -> float:
    """Temporaries of the optimizer step. AdamW foreach (torch/optim/adam.py _multi_tensor_adam):
    torch._foreach_sqrt(exp_avg_sqs) allocates sqrt(v) for every tensor at once, 4 bytes per fp32
    state element (torch.optim docs: foreach "uses more memory", about one more copy of the states'
    size); the for-loop (_single_tensor_adam) holds sqrt(v) and the denominator of one tensor, 2 x
    the largest tensor (the previous tensor's denominator, smaller in these layouts, is not counted);
    fused kernels and SGD (in place) allocate none."""
    require_positive("n_elem", n_elem, allow_zero=True)
    require_positive("state_bytes", state_bytes, allow_zero=True)
    model = as_model(model, "model", optional=True)  # a catalog name too
    if setup.optimizer != "adamw":
        return 0.0
    impl = setup.optimizer_impl
    if impl == "default":
        impl = "foreach" if setup.device == "cuda" else "for-loop"
    per_elem = state_bytes / 2  # one state's bytes per element (v)
    if impl == "foreach":
        return finite_result("optimizer temporaries", per_elem * n_elem)
    if impl == "for-loop":
        if model is None:
            return 0.0
        largest = max(model.vocab * model.hidden, *(i * o for _, i, o in model.linear_shapes))
        return 2 * per_elem * largest / setup.tp
    return 0.0


def _pytorch_head_bytes(model: ModelSpec, setup: TrainSetup) -> tuple[float, float, float]:
    """(saved by the final norm and the LM head, logits bytes at the loss in forward, at the start of
    backward). Saved: the final norm's input and stats, the head's input (a bf16 copy under
    autocast) and its bf16 weight copy. The loss (F.cross_entropy = log_softmax + nll_loss): forward
    holds the logits, the fp32 copy autocast makes for log_softmax, and the fp32 log_softmax output
    it saves; backward starts with that output, its gradient and the logits' gradient (3 x 4 sbV)."""
    s, b, h, V, t = setup.seq_len, setup.micro_batch, model.hidden, model.vocab, setup.tp
    T, sp_div = s * b, (setup.tp if setup.sp else 1)
    amp, e = _amp(setup), dtype_bytes(setup.compute_dtype)
    r = 2 if setup.precision in ("bf16", "fp16") else 4
    lsm = e if setup.precision in ("bf16", "fp16") else 4  # log_softmax runs in fp32 under autocast
    norm = r * T * h + 8 * T if model.norm == "layernorm" else 2 * r * T * h + 4 * T  # as in the layers
    head = norm / sp_div + (2 if amp else e) * T * h / sp_div
    head += 2 * V * h / t if amp and setup.zero_stage < 3 else 0.0
    return head, (e + (4 if amp else 0) + lsm) * T * V / t, 3 * lsm * T * V / t


def pytorch_forward_end_bytes(model: ModelSpec, setup: TrainSetup) -> float:
    """Activations alive at the end of the forward (after the loss) in eager PyTorch, one GPU without
    pipeline parallelism: every layer's saved tensors, the head's, and the log_softmax output."""
    model = as_model(model, "model")  # a catalog name too
    head, _, logits_bwd = _pytorch_head_bytes(model, setup)
    return model.n_layers * pytorch_layer_activation_bytes(model, setup) + head + logits_bwd / 3


def pytorch_step_applies(setup: TrainSetup) -> bool:
    """The pytorch convention's step model applies: full training (what tests/test_memory_planning.py
    measured). LoRA/QLoRA dequantize or freeze the base weights per op (no autocast weight cache of the
    whole model), inference has no backward, and offload is DeepSpeed's engine (ZeRO-Offload, Ren et al.
    2021 sec. 4.1; ZeRO-Infinity): the model itself is 16-bit on the GPU, the fp32 master on the CPU, no
    autocast. Those keep the megatron terms, and the text says so; so do fp8 (Transformer Engine, not
    autocast), expert and context parallelism (Megatron-Core), and mixtures of experts (estimate_memory
    checks the model: the step model was measured on dense GPT/Llama blocks only)."""
    return (
        setup.convention == "pytorch"
        and not setup.inference
        and setup.finetune == "full"
        and setup.offload == "none"
        and setup.precision != "fp8"
        and setup.ep == 1
        and setup.cp == 1
    )


def pytorch_step_parts(model: ModelSpec, setup: TrainSetup, stage: str, p: dict) -> dict:
    """The peak of one steady-state training step in eager PyTorch, as the components alive at that
    moment (so they still sum to the total), from the model states `p` of stage_parts.

    Phases (gpukit.memory.eager's docstring; zero_grad(set_to_none=True), so no gradients exist
    while the forward runs unless grad_accum > 1):
      forward end   P + S + saved activations + the loss: logits, the fp32 copy autocast makes for
                    cross_entropy and the fp32 log_softmax output it saves
      backward      starts with the log_softmax output beside its gradient and the logits' gradient
                    (3 x 4 sbV bytes); then each layer frees its activations while its gradients
                    appear, so memory moves linearly from the top layer to the bottom one: the peak
                    is at one end (evaluated at both, with one layer's backward working set: two
                    residual-stream gradients and the score gradients a s^2 b or dq, dk, dv)
      optimizer     P + G + S + the update's temporaries (optimizer_temp_bytes)
    Full recompute: the forward under autocast still caches every layer's bf16 weight copy until
    autocast exits (forward phase only), and the backward re-runs one layer at a time.
    DDP without ZeRO (dp > 1) keeps gradient buckets as large as the gradients (torch DDP docs,
    gradient_as_bucket_view=False by default): + G in backward and optimizer. Not measured here.
    Step 1 creates AdamW's states (and SGD's momentum) in its optimizer step, so its forward and
    backward hold less and its step holds as much as a later one: the steady state is the peak (the
    replay checks both steps). tp, pp, sp and ZeRO scale the terms as in the megatron convention
    (offload is not modelled here: see pytorch_step_applies); only single-GPU steps were measured.
    """
    model = as_model(model, "model")  # a catalog name too
    layers, _ = stage_layers_and_extra(model, setup, stage)
    t = setup.tp
    s, b, h = setup.seq_len, setup.micro_batch, model.hidden
    T = s * b
    e = dtype_bytes(setup.compute_dtype)
    r = 2 if setup.precision in ("bf16", "fp16") else 4
    sp_div = t if setup.sp else 1
    holds_head, first = stage in ("only", "last"), stage in ("only", "first")
    in_flight = min(setup.pp, setup.grad_accum) if stage == "first" else 1
    P, G, S = p["params"], p["grads"], p["optimizer"]
    lay_saved = pytorch_layer_activation_bytes(model, setup)
    lay_full = pytorch_layer_activation_bytes(model, setup, recompute="none")
    w16 = autocast_weight_copy_bytes(model, setup)
    acts = layers * lay_saved * in_flight
    if first and uses_dropout(model, setup):
        acts += T * h / sp_div * in_flight
    head, logits_fwd, logits_bwd = _pytorch_head_bytes(model, setup) if holds_head else (0.0, 0.0, 0.0)
    extra_fwd = layers * w16 if setup.recompute == "full" else 0.0  # cached until autocast exits
    g_acc = G if setup.grad_accum > 1 else 0.0
    bucket = G if (setup.dp > 1 and setup.zero_stage == 0) else 0.0
    # Gradients appear in backward order: the head's first, then layer by layer, the embedding's last.
    _, extra = stage_layers_and_extra(model, setup, stage)
    elems = layers * model.layer_params() + extra
    per_elem = G / elems if elems else 0.0
    g_head = model.head_params() * holds_head * per_elem
    g_layer, g_mlp = model.layer_params() * per_elem, (model.mlp_params() + model.norm_params()) * per_elem
    g_below = G - model.embedding_params() * first * per_elem - g_layer  # all but the bottom layer's
    # One layer's backward, two moments: (M) the MLP's backward beside the whole layer's activations;
    # (A) the attention's (score gradients 2e*as^2b, or dq, dk, dv) once the MLP half is freed and
    # its weight gradients exist. Both with the residual stream's two gradients.
    sc = model.n_heads * s * s * b / t
    _, mlp_half = _pytorch_layer_halves(model, setup, "none")
    attn_work = 2 * e * sc if setup.attention == "eager" else e * T * (model.q_dim + 2 * model.kv_dim) / t
    # autograd frees a node's saved tensors once it has run, so the MLP's gradients replace its inputs:
    # net +e*sbf (GeLU) or +2e*sbf (SwiGLU: the SiLU and up gradients beside the product's)
    mlp_work = (2 if model.mlp == "swiglu" else 1) * e * T * model.ffn_hidden / t
    resid = 2 * r * T * h / sp_div
    moments = ((0.0, lay_full + mlp_work + resid), (g_mlp, lay_full - mlp_half + attn_work + resid))
    opt_temp = optimizer_temp_bytes(model, setup, S / adam_state_bytes(setup), adam_state_bytes(setup))
    top_rest = (layers - 1) * lay_saved * in_flight + (acts - layers * lay_saved * in_flight)

    # Tied embeddings (one tensor, two uses): the LM head's weight gradient is held from the head's
    # backward until the embedding's, then the two are summed out of place before AccumulateGrad
    # (gpukit.memory.eager replay, matched to MemTracker): + V h during backward, + 2 V h at its end.
    tied = model.vocab * model.hidden * per_elem if (model.tied_embeddings and stage == "only") else 0.0

    def layer_moment(g_before: float, rest: float) -> dict:
        g, a = max(moments, key=lambda m: m[0] + m[1])
        return dict(
            params=P,
            grads=max(g_acc, g_before + g) + tied + bucket,
            optimizer=S,
            activations=rest + a,
            logits=0.0,
        )

    phases = {
        "forward": dict(
            params=P, grads=g_acc, optimizer=S, activations=acts + head + extra_fwd, logits=logits_fwd
        ),
        "backward-start": dict(
            params=P, grads=g_acc + bucket, optimizer=S, activations=acts + head, logits=logits_bwd
        ),
        "backward-top": layer_moment(g_head, top_rest),
        "backward-bottom": layer_moment(g_below, 0.0),
        "backward-end": dict(
            params=P, grads=G + 2 * tied + bucket, optimizer=S, activations=r * T * h / sp_div, logits=0.0
        ),
        "optimizer": dict(params=P, grads=G + bucket, optimizer=S + opt_temp, activations=0.0, logits=0.0),
    }
    totals = {k: sum(v.values()) for k, v in phases.items()}
    phase = max(totals, key=totals.__getitem__)
    out = dict(p, **phases[phase])
    out["phase"] = phase
    out["phase_peaks"] = tuple((k, int(math.ceil(v))) for k, v in totals.items())
    return out


def adam_state_bytes(setup: TrainSetup) -> float:
    """Bytes of AdamW's two states per element: 8 (fp32), 4 in pure bf16 (torch allocates them like
    the parameters)."""
    return STATE_BYTES_BF16["adamw"] if setup.precision == "bf16" else STATE_BYTES_FP32["adamw"]
