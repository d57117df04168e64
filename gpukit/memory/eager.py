"""Training-step memory of the eager-PyTorch reference GPT (gpukit.bench.models), predicted op by op.

Pure (no torch): `predict_training_memory(spec, setup)` replays one training step of
gpukit.bench.models.ReferenceGPT as a list of allocations and frees and returns the bytes of each category
and the peak, which gpukit.bench.measure compares with MemTracker (CPU) or the CUDA allocator.
The replay itself (EagerSetup, param_shapes, the tape and the events each op emits) lives in
gpukit.memory.replay; its names are reachable from here too.
Used in: gpukit.cli.validate, tests/test_memory_validation.py, notebooks/01_* (memory).

Why not just params + grads + optimizer + activations? Because the peak is a moment, not a sum.
The phases of one steady-state step (zero_grad(set_to_none=True), so no gradients exist at the
start of a step; the optimizer states exist from the end of step 1 on):

  (a) forward      P + S + inputs + activations saved so far + the op's transient outputs.
                   Ends with the loss: logits and log_softmax(logits) coexist (2 x T V x 4 B; under
                   autocast also the bf16 logits and every cached bf16 weight/bias copy).
  (b) backward     P + S + gradients written so far + activations not yet freed + transients.
                   Activations of layer i are freed while its gradients appear, so memory falls
                   layer by layer. Without recompute the peak is at the start (log_softmax output,
                   its gradient and the logits gradient, 3 x T V x 4 B, beside every activation) or,
                   for long sequences, in the last layer's attention backward (the saved a s^2 b
                   probabilities plus two a s^2 b gradients). With full recompute it moves to the
                   end (layer 0): nearly all gradients plus one recomputed layer and its transients.
  (c) optimizer    P + G + S + update temporaries: torch's CPU AdamW loops over tensors and holds
                   sqrt(v) and sqrt(v)/c of the current tensor plus the previous tensor's denom;
                   CUDA's foreach AdamW allocates sqrt(v) for all tensors at once (+P x 4 B).
                   SGD (momentum or not) updates in place. Peaks here when activations are small.
  peak = max(a, b, c). Step 1 has no optimizer states in (a), (b) and creates them in (c), so its
  peak is never above the steady state's. The replay (gpukit.memory.replay's ReplayStep) names every
  tensor, so EagerPrediction.peak_event says which allocation reached the peak.

What each op saves for backward (what stays alive from forward end until its backward runs),
elements per layer; T = s b tokens, h hidden, f = ffn_hidden, a heads, [B] bytes fp32 / bf16-mixed:
  LayerNorm 1, 2    its input (the fp32 residual stream) [4/4] + mean, rstd (T each, fp32)
  QKV Linear        its input: the LayerNorm output [4] / its bf16 copy made by autocast [2],
                    and under autocast the bf16 copy of the weight (3 h^2) [-/2]
  Q K^T (matmul)    contiguous copies of Q and K made by reshape for bmm: 2 T h [4/2]
  scale, mask       nothing (python scalar; the mask is a view of one shared bool buffer)
  softmax           its output a s^2 b [4/2] (CUDA autocast runs softmax in fp32: [-/4] + the bf16
                    copy a s^2 b [-/2] that the next matmul saves)
  (attn) @ V        the softmax output (same tensor) and a contiguous copy of V: T h [4/2]
  output Linear     its input T h [4/2] (+ bf16 weight h^2 [-/2])
  FC1 Linear        its input (LayerNorm output / its bf16 copy) T h [4/2] (+ bf16 weight h f)
  GELU              its input T f [4/2]
  FC2 Linear        its input (GELU output) T f [4/2] (+ bf16 weight f h)
  residual adds     nothing; the sums are the next LayerNorm's input (counted there)
  LM head, loss     final LayerNorm input + stats, the head input T h, log_softmax output T V [4/4]
  (micro_batch 1 or 1 head: the head views can be reshaped without a copy, so bmm saves views of the
   QKV output instead of copies of Q, K, V: same bytes at forward end, freed later in backward)
fp32, f = 4h:        per layer 16 sbh + a s^2 b elements (+ 4 sb LayerNorm stats) = 64 sbh + 4 a s^2 b B
bf16-mixed, CPU:     36 sbh + 2 a s^2 b + 16 sb bytes + 24 h^2 (bf16 weight copies)
bf16-mixed, CUDA:    36 sbh + 6 a s^2 b + 16 sb bytes + 24 h^2
full recompute:      the layer input only, 4 sbh (fp32 residual stream) per layer
Megatron convention (Korthikanti et al. 2022, Table 2, 16-bit, dropout masks included):
sbh(34 + 5as/h) per layer; full recompute 2 sbh. Why eager PyTorch differs: (1) fp32 training
stores every tensor in 4 bytes, not 2, so 2x; (2) without dropout there are no masks (-2 sbh,
-3 a s^2 b per layer, Korthikanti counts the masks and the dropout output); (3) autocast keeps the
residual stream and LayerNorm inputs in fp32 (+4 sbh) and saves bf16 copies of every Linear weight
(+2 bytes/param, Megatron's bf16 weights are the model itself); (4) LayerNorm mean/rstd (16 sb) are
not counted by the paper; (5) the checkpointed layer input is the fp32 residual stream (4 sbh, not 2).

Full recompute (torch.utils.checkpoint, use_reentrant=False): the forward keeps only each block's
input; in backward the block is re-run up to the last op whose saved tensors are needed (FC2's
inputs: the FC2 output and the residual add are never recomputed) and its tensors die as they are
unpacked. Under autocast the checkpointed forward still caches every bf16 weight copy until autocast
exits, which can make the forward the peak phase.

Categories follow MemTracker (torch.distributed._tools.mem_tracker): Parameter, Buffer, Gradient,
Activation (created in forward or recompute), Temp (created in backward), Optstate (created in the
optimizer step, its temporaries included), Other (the input batch). Sizes on CUDA are rounded up to
512 bytes per tensor (CUDACachingAllocator kMinBlockSize, as MemTracker does); on CPU nothing is
rounded. Not modelled: dropout > 0 (CPU dropout saves a mask of the input's dtype), SDPA attention,
the CUDA context and cuBLAS workspace (gpukit.bench.measure subtracts them as a measured baseline),
allocations made inside kernels below the dispatcher (invisible to MemTracker). The CUDA branches
(fp32 softmax under autocast, foreach AdamW, 512-byte rounding) follow torch's source and had no GPU
to meet yet; the CPU branches were checked tensor by tensor against MemTracker traces (torch 2.13).
Sources: what each op saves, tools/autograd/derivatives.yaml (PyTorch); autocast op lists,
aten/src/ATen/autocast_mode.cpp; optimizer temporaries, torch/optim/adam.py (_single_tensor_adam,
_multi_tensor_adam) and sgd.py; recompute, torch/utils/checkpoint.py (non-reentrant, early stop).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from gpukit.catalog import as_model
from gpukit.errors import require_choice
from gpukit.memory.parts import layer_activation_bytes
from gpukit.memory.replay import CATEGORIES, RECOMPUTE_KINDS, EagerSetup, ReplayStep, ReplayTape, param_shapes
from gpukit.memory.train_setup import TrainSetup
from gpukit.specs import ModelSpec

PHASES = ("forward", "backward", "optimizer")
# The replay walks every layer (~0.3 ms each): cap it so a typo cannot hang a caller for minutes.
MAX_REPLAY_LAYERS = 1024


def reference_spec(
    n_layers: int = 2,
    hidden: int = 128,
    n_heads: int = 4,
    vocab: int = 512,
    seq: int = 128,
    tied_embeddings: bool = False,
) -> ModelSpec:
    """A small GPT-2/Megatron-layout ModelSpec (gelu MLP 4h, LayerNorm, learned positions, biases),
    the shape gpukit.bench.models.build_reference_model builds; max_seq = seq."""
    return ModelSpec(
        name=f"ref-L{n_layers}-h{hidden}-a{n_heads}-V{vocab}-s{seq}",
        n_layers=n_layers,
        hidden=hidden,
        n_heads=n_heads,
        vocab=vocab,
        max_seq=seq,
        tied_embeddings=tied_embeddings,
        mlp="gelu",
        norm="layernorm",
        position="learned",
        bias=True,
        arch="decoder",
    )


def llama_spec(
    n_layers: int = 2,
    hidden: int = 128,
    n_heads: int = 4,
    n_kv_heads: int = 2,
    vocab: int = 512,
    seq: int = 128,
    ffn_hidden: int | None = None,
    tied_embeddings: bool = False,
) -> ModelSpec:
    """A small Llama-layout ModelSpec (RMSNorm, SwiGLU, GQA, RoPE, no biases): what
    build_llama_model builds. ffn_hidden None -> Llama's rounding of 8h/3 (gpukit.specs)."""
    return ModelSpec(
        name=f"llama-L{n_layers}-h{hidden}-a{n_heads}-kv{n_kv_heads}-V{vocab}-s{seq}",
        n_layers=n_layers,
        hidden=hidden,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        vocab=vocab,
        max_seq=seq,
        ffn_hidden=ffn_hidden,
        tied_embeddings=tied_embeddings,
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        bias=False,
        arch="decoder",
    )


def _check_spec(spec: ModelSpec, setup: EagerSetup) -> None:
    if spec.n_layers > MAX_REPLAY_LAYERS:
        raise ValueError(
            f"n_layers must be <= {MAX_REPLAY_LAYERS} for the op-by-op replay of the reference "
            f"model, got {spec.n_layers}"
        )
    for f, want in (("mlp", "gelu"), ("norm", "layernorm"), ("position", "learned"), ("arch", "decoder")):
        if getattr(spec, f) != want:
            raise ValueError(f"{f} must be {want} for the eager reference model, got {getattr(spec, f)}")
    if not spec.bias:
        raise ValueError("bias must be True for the eager reference model, got False")
    if spec.n_kv_heads != spec.n_heads:
        raise ValueError(f"n_kv_heads must equal n_heads {spec.n_heads}, got {spec.n_kv_heads}")
    if setup.seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq}, got {setup.seq_len}")


class CategoryBreakdown:
    """The categories that prediction (EagerPrediction) and measurement (measure.MeasuredMemory)
    share, in one order, so the two line up row by row."""

    # the fields every subclass (a frozen dataclass) declares; bare annotations: no class attribute
    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    peak_bytes: int

    def breakdown(self) -> tuple:
        return (
            ("params", self.params_bytes),
            ("grads", self.grads_bytes),
            ("optimizer", self.optimizer_bytes),
            ("activations", self.activations_bytes),
            ("peak", self.peak_bytes),
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([{"category": k, "bytes": v} for k, v in self.breakdown()])


@dataclass(frozen=True)
class EagerPrediction(CategoryBreakdown):
    """Predicted bytes of one training step of the eager reference model (see module docstring)."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int  # alive at the end of forward (saved for backward + loss)
    buffers_bytes: int
    inputs_bytes: int
    peak_bytes: int  # max over the phases of step 1 and of a steady-state step
    step1_peak_bytes: int  # step 1: no optimizer states until its optimizer step creates them
    peak_phase: str
    peak_event: str  # the allocation that reached the peak, e.g. 'L1.gsoftmax' (names: ReplayStep)
    phase_peaks: tuple  # ((phase, bytes), ...) steady state
    peak_breakdown: tuple  # ((category, bytes), ...) at the peak
    activation_formula_bytes: int  # closed form, all layers + head (equals activations_bytes on CPU)
    layer_activation_bytes: int  # closed form, the n_layers transformer layers only
    megatron_activation_bytes: int  # Korthikanti et al. 2022 Table 2, 16-bit, layers only
    n_params: int
    setup: EagerSetup

    @property
    def total_bytes(self) -> int:
        return self.peak_bytes

    def to_json_dict(self) -> dict:
        d = {k: v for k, v in self.breakdown()}
        d.update(
            step1_peak=self.step1_peak_bytes,
            peak_phase=self.peak_phase,
            peak_event=self.peak_event,
            phase_peaks=dict(self.phase_peaks),
            peak_breakdown=dict(self.peak_breakdown),
            buffers=self.buffers_bytes,
            inputs=self.inputs_bytes,
            activation_formula=self.activation_formula_bytes,
            layer_activations=self.layer_activation_bytes,
            megatron_activation=self.megatron_activation_bytes,
            n_params=self.n_params,
            setup=asdict(self.setup),
        )
        return d


def _run_step(spec, setup, tape, first_step):
    step = ReplayStep(spec, setup, tape)
    step.forward()
    fwd_end = tape.bytes_of("Activation")
    step.backward()
    grads = tape.bytes_of("Gradient")
    step.optimizer(first_step)
    step.zero_grad()
    tape.free(*[k for k in tape.live if k.startswith("F.loss")])
    leftovers = [k for k, (_, c) in tape.live.items() if c in ("Activation", "Temp")]
    if leftovers:
        raise AssertionError(f"tape: not freed at the end of the step: {leftovers[:5]}")
    return fwd_end, grads


def predict_training_memory(spec: ModelSpec, setup: EagerSetup | None = None) -> EagerPrediction:
    """Predict params, grads, optimizer states, forward-end activations and the peak (bytes) of a
    training step of gpukit.bench.models.ReferenceGPT(spec), replaying what each op allocates and frees."""
    spec = as_model(spec, "spec")  # a catalog name too
    setup = setup or EagerSetup()
    _check_spec(spec, setup)
    tape = ReplayTape(setup.device == "cuda")
    for name, n in param_shapes(spec):
        tape.alloc(f"p.{name}", n * 4, "Parameter")
    tape.alloc("mask", spec.max_seq**2, "Buffer")  # bool causal mask, one per model
    tape.alloc("idx", setup.micro_batch * setup.seq_len * 8, "Other")
    tape.alloc("targets", setup.micro_batch * setup.seq_len * 8, "Other")
    _run_step(spec, setup, tape, first_step=True)
    step1 = max(v[0] for k, v in tape.peaks.items() if k in PHASES)
    opt_bytes = tape.bytes_of("Optstate")
    fwd_end, grads = _run_step(spec, setup, tape, first_step=False)
    phase_peaks = tuple((p, tape.peaks[p][0]) for p in PHASES)
    phase, (peak, snap) = max(((p, tape.peaks[p]) for p in PHASES), key=lambda kv: kv[1][0])
    acts_formula = eager_activation_bytes(spec, setup)
    return EagerPrediction(
        params_bytes=tape.bytes_of("Parameter"),
        grads_bytes=grads,
        optimizer_bytes=opt_bytes,
        activations_bytes=fwd_end,
        buffers_bytes=tape.bytes_of("Buffer"),
        inputs_bytes=tape.bytes_of("Other"),
        peak_bytes=max(peak, step1),
        step1_peak_bytes=step1,
        peak_phase=phase,
        peak_event=tape.peak_at[phase],
        phase_peaks=phase_peaks,
        peak_breakdown=tuple((c, snap[c]) for c in CATEGORIES),
        activation_formula_bytes=acts_formula,
        layer_activation_bytes=spec.n_layers * eager_layer_activation_bytes(spec, setup),
        megatron_activation_bytes=megatron_activation_bytes(
            spec, setup.seq_len, setup.micro_batch, setup.recompute
        ),
        n_params=spec.n_params,
        setup=setup,
    )


def replay_timeline(spec: ModelSpec, setup: EagerSetup | None = None) -> tuple:
    """((phase, bytes), ...): the replay's total after every allocation and free of one steady-state
    step (the second: optimizer states exist), for a plot of memory over one training step."""
    spec = as_model(spec, "spec")  # a catalog name too
    setup = setup or EagerSetup()
    _check_spec(spec, setup)
    tape = ReplayTape(setup.device == "cuda")
    for name, n in param_shapes(spec):
        tape.alloc(f"p.{name}", n * 4, "Parameter")
    tape.alloc("mask", spec.max_seq**2, "Buffer")
    tape.alloc("idx", setup.micro_batch * setup.seq_len * 8, "Other")
    tape.alloc("targets", setup.micro_batch * setup.seq_len * 8, "Other")
    _run_step(spec, setup, tape, first_step=True)
    start = len(tape.trace)
    _run_step(spec, setup, tape, first_step=False)
    return tuple((ph, b) for ph, b in tape.trace[start:] if ph in PHASES)


def eager_layer_activation_bytes(spec: ModelSpec, setup: EagerSetup) -> int:
    """Closed form: bytes one layer keeps from forward to backward in eager PyTorch (CPU allocator,
    no rounding). Derivation: the per-op table in the module docstring."""
    spec = as_model(spec, "spec")  # a catalog name too
    s, b, h, f, a = setup.seq_len, setup.micro_batch, spec.hidden, spec.ffn_hidden, spec.n_heads
    T, q, sc = s * b, spec.q_dim, b * a * s * s
    if setup.recompute == "full":
        return 4 * T * h  # the checkpoint keeps the fp32 layer input
    stats = 2 * 2 * T * 4  # LayerNorm mean + rstd, two norms, fp32
    if setup.precision == "fp32":
        # x, xmid, ln1 out, ln2 out (T h); q, k, v, y (T q); h1, gelu out (T f); probs (a s^2 b)
        return 4 * (4 * T * h + 4 * T * q + 2 * T * f + sc) + stats
    probs = sc * (4 + 2 if setup.device == "cuda" else 2)
    weights = 2 * (3 * q * h + q * h + 2 * h * f)  # bf16 weight copies saved by the four Linears
    # fp32: x, xmid; bf16: ln1 copy, q, k, v, y, ln2 copy, h1, gelu out
    return 4 * 2 * T * h + 2 * (T * h + 4 * T * q + T * h + 2 * T * f) + probs + weights + stats


def eager_activation_bytes(spec: ModelSpec, setup: EagerSetup) -> int:
    """Closed form of all bytes alive at the end of forward, layers + embedding + head + loss."""
    spec = as_model(spec, "spec")  # a catalog name too
    s, b, h, V = setup.seq_len, setup.micro_batch, spec.hidden, spec.vocab
    T = s * b
    head = 4 * T * h + 2 * T * 4 + T * V * 4 + 8  # final LN input + stats, log_softmax out, loss
    head += 2 * T * h + 2 * V * h if setup.precision == "bf16-mixed" else 4 * T * h  # LM head input
    return spec.n_layers * eager_layer_activation_bytes(spec, setup) + head + 8 * s  # + positions


def megatron_activation_bytes(
    spec: ModelSpec, seq_len: int, micro_batch: int, recompute: str = "none", dropout: bool = True
) -> int:
    """The 'Megatron convention': activations of all layers in 16-bit (Korthikanti et al. 2022,
    Table 2, no parallelism): sbh(34 + 5as/h) per layer, 2sbh with full recompute. dropout=False
    removes the masks and the dropout output: sbh(32 + 2as/h). Table 2 is coded once, in
    gpukit.memory.layer_activation_bytes: here it is evaluated for Table 2's GPT layer (q = kv = h,
    f = 4h, GeLU, eager attention, 16-bit) with this spec's h, a and layers."""
    spec = as_model(spec, "spec")  # a catalog name too
    require_choice("recompute", recompute, RECOMPUTE_KINDS)
    # head_dim None: __post_init__ derives hidden // n_heads (the field is int once built, ModelSpec)
    gpt = replace(spec, n_kv_heads=spec.n_heads, head_dim=None, ffn_hidden=4 * spec.hidden, mlp="gelu")  # type: ignore[arg-type]
    setup = TrainSetup(
        seq_len=seq_len,
        micro_batch=micro_batch,
        precision="bf16-mixed",
        attention="eager",
        dropout=dropout,
        recompute=recompute,
    )
    return spec.n_layers * int(round(layer_activation_bytes(gpt, setup)))


def reconcile_megatron(spec: ModelSpec, setup: EagerSetup) -> tuple:
    """From the Megatron convention to eager PyTorch, one layer, in bytes: ((step, delta), ...) whose
    running sum starts at Korthikanti et al. 2022 Table 2 and ends at eager_layer_activation_bytes.
    The last step ('other layout') is 0 for the reference layout (ffn_hidden = 4h, head_dim*heads = h)."""
    spec = as_model(spec, "spec")  # a catalog name too
    s, b, h, a = setup.seq_len, setup.micro_batch, spec.hidden, spec.n_heads
    sbh, as2b = s * b * h, a * s * s * b

    def table2(**kw) -> int:  # one layer, Korthikanti et al. 2022 Table 2
        return megatron_activation_bytes(spec, s, b, **kw) // spec.n_layers

    eager = eager_layer_activation_bytes(spec, setup)
    if setup.recompute == "full":
        steps = [
            ("Megatron convention: full recompute keeps the layer input, 2sbh", table2(recompute="full")),
            ("the residual stream is fp32 in eager PyTorch (also under autocast): +2sbh", 2 * sbh),
        ]
    else:
        no_dropout = table2(dropout=False)
        steps = [
            ("Megatron convention: sbh(34 + 5as/h), 16-bit", table2()),
            ("no dropout: no masks (2sbh + as^2b) and no dropout output (2as^2b)", no_dropout - table2()),
        ]
        if setup.precision == "fp32":
            steps.append(("fp32 training stores 4 bytes, not 2: x2", no_dropout))
        else:
            steps.append(("autocast keeps the residual stream (2 LayerNorm inputs) in fp32: +4sbh", 4 * sbh))
            w = 2 * (4 * spec.q_dim * h + 2 * h * spec.ffn_hidden)
            steps.append(("autocast saves bf16 copies of the 4 Linear weights: +2 bytes/weight", w))
            if setup.device == "cuda":
                steps.append(("CUDA autocast runs softmax in fp32 and saves a bf16 copy: +4as^2b", 4 * as2b))
        steps.append(("LayerNorm mean and rstd, fp32, 2 norms: +16sb", 16 * s * b))
    steps.append(("other layout (ffn_hidden != 4h, head_dim*heads != h)", eager - sum(d for _, d in steps)))
    return tuple(steps)
