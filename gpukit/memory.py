"""Analytical GPU memory model: weights, gradients, optimizer states, activations, logits, KV cache
and overhead of one training or inference setup, per GPU.

Conventions (each one is a choice; tests/test_memory*.py pin them down):

- Units: every field is an integer number of bytes; text output shows GiB (2**30), the unit of
  torch.cuda and DeepSpeed. Papers quoting decimal GB are compared in decimal GB.
- "Per GPU" is the most loaded rank. ZeRO shards over dp (Rajbhandari et al. 2019, sec. 5: stage 1
  optimizer states / Nd, stage 2 also gradients, stage 3 also parameters, plus, given a model shape,
  one gathered layer of full weights as the working set); tensor parallelism divides
  every layer by tp (norms are replicated in Megatron; we divide them too, they are tiny); pipeline
  parallelism gives each stage ceil(n_layers / pp) layers. With pp > 1 the first stage also holds the
  embedding and p micro-batches of activations in flight (1F1B, Korthikanti et al. 2022 sec. 4.2.3),
  the last stage the final norm, the LM head (a second copy of the embedding if tied, as Megatron
  does) and the logits; both are computed and the larger total is reported (`stage`).
- Mixed precision (bf16-mixed / fp16-mixed): 16-bit weights and gradients, and an fp32 master copy
  that is counted in optimizer_bytes: Adam costs K = 12 (4 master + 4 m + 4 v), 2 + 2 + 12 = 16
  bytes/param (ZeRO sec. 3.1). Named alternatives (TrainSetup fields, see `GRADIENT CONVENTIONS`):
  grad_dtype="fp32" is Megatron's fp32 main-grad buffer, 2 + 4 + 12 = 18 bytes/param, and with
  zero_stage=1 Megatron's distributed optimizer, 6 + 12/dp (Megatron-LM docs, "Distributed
  optimizer"); grad_accum_buffer="fp32" adds an fp32 gradient-accumulation buffer next to 16-bit
  gradients, 2 + 2 + 4 + 12 = 20 bytes/param (Ultra-Scale Playbook, "Memory usage in Transformers").
  Pure "bf16" keeps everything in bf16, optimizer states included (PyTorch's AdamW allocates them
  like the parameters), 8 bytes/param with AdamW: accelerate's "Training using Adam" convention.
- Activations follow the Megatron convention of Korthikanti et al. 2022, Table 2: 16-bit activations,
  1-byte dropout masks (dropout=True), generalised to grouped-query attention and SwiGLU; see
  `layer_activation_bytes`. Gradient accumulation does not change them (with pp > 1 it sets how many
  micro-batches are in flight, min(pp, grad_accum), stated as the term `in_flight_micro_batches`).
  Interleaved 1F1B with virtual_stages v > 1 multiplies the first stage's in-flight activations by
  (1 + (p-1)/(p v)) (Korthikanti et al. 2022, sec. 4.2.3; term `interleave_factor`).
- Full recompute reports two named figures (terms): `stored_checkpoints_bytes`, the layer inputs
  kept for the backward pass (what the papers report, 2sbh per layer), and `recompute_layer_bytes`,
  the one layer being recomputed with all its activations (what the GPU must also hold at the peak);
  activations_bytes is their sum plus the non-layer terms.
- ZeRO-3/FSDP: besides the 1/dp shard, the GPU holds the gathered full weights of the layer being
  computed (`zero3_gathered_bytes`) and of `zero3_prefetch_layers` layers gathered ahead
  (`zero3_prefetch_bytes`; FSDP2's implicit prefetch keeps one: pass 1; the default 0 counts
  only the working layer). Both are included in params_bytes.
- attention defaults to "flash": fused kernels (FlashAttention, PyTorch SDPA) are what people train
  with, and they never store the s^2 score matrix (Dao et al. 2022, sec. 3.1), only a per-row fp32
  logsumexp. attention="eager" adds Table 2's 5as^2b term.
- Two conventions (TrainSetup.convention). "pytorch", the default for every "does it fit" answer
  (CLI `gpukit memory`, widgets, fits/max_micro_batch/min_gpus): what eager PyTorch really keeps at
  the peak of a steady-state step, the largest of the phases forward (with the loss), backward start,
  the top and the bottom layer's backward, and the optimizer step (`pytorch_step_parts`); components
  are those alive at that moment (they still sum to the total) and `peak_phase` names it. Checked
  against measured steps of a GPT and a Llama reference model on CPU (gpukit.bench.measure, `gpukit
  validate memory`; CUDA branches follow torch's source and are not yet run on a GPU). "megatron":
  the papers' sum of parts (ZeRO sec. 3.1 states + Korthikanti Table 2 activations + logits), in
  which their published figures are given (tests/test_memory_published.py) and the articles' claims
  audited (gpukit.audits.memory). Where they differ: torch.autocast keeps fp32 parameters (4 + 4 + 8
  bytes/param instead of 2 + 2 + 12: same sum) plus bf16 weight copies during forward/backward;
  foreach AdamW's sqrt(v) adds 4 bytes/param at the step; eager activations are what each op saves;
  and params + grads + optimizer + activations never all exist at once.
- Overhead (CUDA context + allocator slack) is counted only when a `gpu` is given. Without one the
  result is the bytes of tensors, which is what the formulas predict.

The questions asked of the estimate (fits, max_micro_batch, max_seq_len, min_gpus) live in
gpukit.memory_fit and are reachable from here too.

Used in: notebooks on fitting a model on one GPU and on ZeRO / parallelism (memory).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpukit.catalog import as_gpu, as_model
from gpukit.errors import require_choice, require_positive_int
from gpukit.quant import (
    LORA_TARGETS,
    QUANT_DTYPES,
    lora_layer_params,
    quantized_bytes,
)
from gpukit.specs import ModelSpec
from gpukit.units import GiB, MiB, dtype_bytes

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd-momentum", "sgd")
RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("flash", "eager")
OFFLOAD = ("none", "optimizer", "all")
FINETUNE = ("full", "lora", "qlora")
WEIGHT_DTYPES = ("bf16", "fp16", "fp32", "int8", "nf4")
# Which bookkeeping a breakdown follows (see the module docstring, "Two conventions"):
# "pytorch": what eager PyTorch really keeps at the peak of a training step (the default for "does it
# fit"); "megatron": the papers' sum of parts (Korthikanti et al. 2022, ZeRO), in which their
# published figures are given.
CONVENTIONS = ("pytorch", "megatron")
DEVICES = ("cuda", "cpu")
# torch.optim's implementation of the update: "default" is torch's choice for the device (foreach on
# CUDA, a per-tensor for-loop on CPU: torch/optim/optimizer.py _default_to_fused_or_foreach).
OPTIMIZER_IMPLS = ("default", "foreach", "for-loop", "fused")
GRAD_DTYPES = ("bf16", "fp16", "fp32")
GRAD_ACCUM_BUFFERS = ("none", "fp32")

# Optimizer states per trainable parameter in bytes, without the fp32 master copy. Transformer Math
# 101 (Anthony et al. 2023, "Optimizer states"): AdamW 8 (m, v in fp32), SGD with momentum 4. 8-bit
# Adam (Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization", sec. 2): two 1-byte
# states plus one fp32 absmax per block of 2048 values for each of them.
STATE_BYTES_FP32 = {"adamw": 8.0, "adamw-8bit": 2.0 + 2 * 4 / 2048, "sgd-momentum": 4.0, "sgd": 0.0}
STATE_BYTES_BF16 = {"adamw": 4.0, "adamw-8bit": 2.0 + 2 * 4 / 2048, "sgd-momentum": 2.0, "sgd": 0.0}
MASTER_BYTES = 4.0  # fp32 master weights in mixed precision (Micikevicius et al. 2018, sec. 3.1)

# CUDA context and kernel images created on the first CUDA call: 300 MiB to 2 GiB depending on GPU,
# driver and lazy module loading (https://vram.asmirnov.xyz notes the range). 512 MiB is a typical
# value with lazy loading; it was NOT measured on these machines (no GPU here).
CUDA_CONTEXT_BYTES = 512 * MiB
# Slack of the PyTorch caching allocator (block rounding, fragmentation), as a share of tensor bytes.
# ZeRO sec. 3.2 saw OOM with over 30% of memory free in extreme cases; 5% for a steady training loop
# is our assumption, not a measurement.
FRAGMENTATION_FRACTION = 0.05


@dataclass(frozen=True)
class TrainSetup:
    """How a model is trained or served. Sizes are counts (tokens, sequences, GPUs).

    Training: precision, optimizer, zero_stage (0-3) over dp, tensor parallel tp (sp = Megatron
    sequence parallelism, no effect when tp == 1), pipeline parallel pp, seq_len tokens x micro_batch
    sequences per GPU, grad_accum micro-batches per step, recompute, attention, dropout (masks counted
    as in Korthikanti Table 2; Llama-style training has none), offload (ZeRO-Offload "optimizer",
    ZeRO-Infinity "all"), finetune (full | lora | qlora) with lora_rank and lora_targets.
    Inference (inference=True): weights in weights_dtype (default: the precision's dtype), a KV cache
    for `batch` sequences of seq_len tokens each (prompt + generated), split by tp and pp.
    convention: "pytorch" (default: the peak of a step as eager PyTorch keeps it, gpukit.memory's
    `pytorch_step_parts`) or "megatron" (the papers' sum of parts); device and optimizer_impl say which
    torch kernels run (they matter only to the "pytorch" convention).
    """

    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    zero_stage: int = 0
    dp: int = 1
    tp: int = 1
    pp: int = 1
    sp: bool = False
    seq_len: int = 2048
    micro_batch: int = 1
    grad_accum: int = 1
    recompute: str = "none"
    attention: str = "flash"
    dropout: bool | None = None  # None: the model's own recipe (ModelSpec.dropout; Llama, Mistral: none)
    offload: str = "none"
    finetune: str = "full"
    lora_rank: int = 8  # PEFT's LoraConfig default
    lora_targets: str = "all"  # QLoRA sec. 4: all linear layers are needed to match full finetuning
    weights_dtype: str | None = None
    inference: bool = False
    batch: int = 1
    convention: str = "pytorch"
    device: str = "cuda"
    optimizer_impl: str = "default"
    # GRADIENT CONVENTIONS and schedule/sharding terms (issue 10): named options, defaults = ZeRO paper.
    grad_dtype: str | None = None  # None: the precision's (16-bit mixed, fp32 in fp32); "fp32": Megatron main grads
    grad_accum_buffer: str = "none"  # "fp32": separate fp32 accumulation buffer (Ultra-Scale Playbook, 20 B/param)
    virtual_stages: int = 1  # interleaved 1F1B model chunks per pipeline stage (Narayanan et al. 2021 sec. 2.2.2)
    zero3_prefetch_layers: int = 0  # ZeRO-3/FSDP layers gathered ahead of the working one

    def __post_init__(self):
        for name, allowed in (("precision", PRECISIONS), ("optimizer", OPTIMIZERS), ("recompute", RECOMPUTE),
                              ("attention", ATTENTION), ("offload", OFFLOAD), ("finetune", FINETUNE),
                              ("lora_targets", LORA_TARGETS), ("convention", CONVENTIONS),
                              ("device", DEVICES), ("optimizer_impl", OPTIMIZER_IMPLS)):
            require_choice(name, getattr(self, name), allowed)
        if self.weights_dtype is not None:
            require_choice("weights_dtype", self.weights_dtype, WEIGHT_DTYPES)
        if self.zero_stage not in (0, 1, 2, 3) or isinstance(self.zero_stage, bool):
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        for name in ("dp", "tp", "pp", "seq_len", "micro_batch", "grad_accum", "lora_rank", "batch",
                     "virtual_stages"):
            object.__setattr__(self, name, require_positive_int(name, getattr(self, name)))
        self._check_conventions()
        for name in ("sp", "dropout", "inference"):
            if not isinstance(getattr(self, name), bool) and not (name == "dropout" and self.dropout is None):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.finetune == "qlora":
            if self.precision == "fp32":
                raise ValueError("finetune='qlora' needs a 16-bit precision (bf16-mixed, fp16-mixed or bf16), got 'fp32'")
            if self.weights_dtype not in (None, "nf4"):
                raise ValueError(f"finetune='qlora' keeps the base in nf4; weights_dtype must be nf4, got {self.weights_dtype!r}")
        if self.inference:
            if self.finetune != "full":
                raise ValueError("finetune applies to training; with inference=True leave finetune='full' (use weights_dtype for a quantized base)")
            if self.zero_stage:
                raise ValueError(f"zero_stage applies to training; inference splits weights with tp/pp, got zero_stage {self.zero_stage}")
            if self.offload == "optimizer":
                raise ValueError("offload='optimizer' applies to training; inference allows offload none or all")
        else:
            if self.finetune == "full" and self.weights_dtype not in (None, self.compute_dtype):
                raise ValueError(f"weights_dtype {self.weights_dtype!r} applies to inference or a LoRA base; full training keeps weights in {self.compute_dtype}")
            if self.offload == "optimizer" and self.zero_stage < 1:
                raise ValueError("offload='optimizer' needs zero_stage >= 1 (ZeRO-Offload partitions the optimizer), got 0")
            if self.offload == "all" and self.zero_stage != 3:
                raise ValueError(f"offload='all' needs zero_stage 3 (ZeRO-Infinity offloads partitioned parameters), got {self.zero_stage}")

    def _check_conventions(self) -> None:
        """Validate the gradient / schedule / prefetch options (issue 10)."""
        if self.grad_dtype is not None:
            require_choice("grad_dtype", self.grad_dtype, GRAD_DTYPES)
        require_choice("grad_accum_buffer", self.grad_accum_buffer, GRAD_ACCUM_BUFFERS)
        if self.grad_accum_buffer == "fp32" and self.grad_dtype == "fp32":
            raise ValueError("grad_accum_buffer fp32 with grad_dtype fp32 counts the fp32 gradients twice: Megatron's "
                             "fp32 main grads are the accumulation buffer; use one of them")
        if self.grad_accum_buffer == "fp32" and self.precision == "fp32":
            raise ValueError("grad_accum_buffer fp32 applies to 16-bit training; with precision fp32 the gradients "
                             "already are fp32")
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(f"virtual_stages {self.virtual_stages} needs pp > 1 (interleaving splits pipeline "
                             "stages into model chunks), got pp 1")
        if isinstance(self.zero3_prefetch_layers, bool) or not isinstance(self.zero3_prefetch_layers, int) \
                or self.zero3_prefetch_layers < 0:
            raise ValueError(f"zero3_prefetch_layers must be an integer >= 0, got {self.zero3_prefetch_layers!r}")

    @property
    def in_flight_micro_batches(self) -> int:
        """Micro-batches whose activations the first pipeline stage holds: min(pp, grad_accum) (1F1B,
        Narayanan et al. 2021 sec. 2.2.1; Korthikanti et al. 2022 sec. 4.2.3)."""
        return min(self.pp, self.grad_accum)

    @property
    def interleave_factor(self) -> float:
        """(1 + (p-1)/(p v)) for the interleaved schedule (Korthikanti et al. 2022 sec. 4.2.3), 1 without."""
        if self.virtual_stages == 1:
            return 1.0
        p, v = self.pp, self.virtual_stages
        return 1.0 + (p - 1) / (p * v)

    @property
    def world_size(self) -> int:
        return self.dp * self.tp * self.pp

    @property
    def compute_dtype(self) -> str:
        """dtype of activations, KV cache and unquantized weights."""
        if self.inference and self.weights_dtype in ("bf16", "fp16", "fp32"):
            return self.weights_dtype
        return {"fp32": "fp32", "fp16-mixed": "fp16"}.get(self.precision, "bf16")

    @property
    def base_dtype(self) -> str:
        """dtype of frozen or served weights: nf4 for QLoRA, else weights_dtype or the compute dtype."""
        if self.finetune == "qlora":
            return "nf4"
        return self.weights_dtype or self.compute_dtype


def state_bytes_per_param(setup: TrainSetup, adapters: bool = False) -> tuple[float, float, float]:
    """(weight, gradient, optimizer) bytes per trainable parameter; optimizer includes fp32 master.

    ZeRO sec. 3.1 (mixed precision Adam: 2 + 2 + 12); QLoRA adapters (adapters=True with qlora) are
    bf16 with a paged 32-bit optimizer and no master copy (Dettmers et al. 2023, sec. 3 and 4).
    Paged states can be evicted to CPU under memory pressure; they are counted on the GPU here.
    """
    if adapters and setup.finetune == "qlora":
        return 2.0, 2.0, STATE_BYTES_FP32[setup.optimizer]
    if setup.precision == "fp32":
        w, g, o = 4.0, 4.0, STATE_BYTES_FP32[setup.optimizer]
    elif setup.precision == "bf16":
        w, g, o = 2.0, 2.0, STATE_BYTES_BF16[setup.optimizer]
    elif setup.convention == "pytorch":
        # torch.autocast keeps the parameters (and so their gradients and AdamW's states) in fp32: the
        # fp32 parameters are the master copy (PyTorch AMP docs, "Automatic Mixed Precision"); the bf16
        # weights exist only as autocast's per-forward copies (counted with the activations).
        w, g, o = 4.0, 4.0, STATE_BYTES_FP32[setup.optimizer]
    else:
        w, g, o = 2.0, 2.0, MASTER_BYTES + STATE_BYTES_FP32[setup.optimizer]
    return w, grad_bytes_per_param(setup, g), o


def grad_bytes_per_param(setup: TrainSetup, default: float) -> float:
    """Gradient bytes per trainable parameter under the named convention: the precision's `default`
    (ZeRO sec. 3.1: 2), Megatron's fp32 main grads (grad_dtype='fp32': 4; 2 + 4 + 12 = 18 B/param),
    plus an fp32 accumulation buffer (grad_accum_buffer='fp32': + 4; 20 B/param, Ultra-Scale Playbook)."""
    g = default if setup.grad_dtype is None else float(dtype_bytes(setup.grad_dtype))
    return g + (4.0 if setup.grad_accum_buffer == "fp32" else 0.0)


def uses_dropout(model: ModelSpec, setup: TrainSetup) -> bool:
    """Dropout masks are stored: setup.dropout if given, else the model row's `dropout` (data/models.csv:
    Llama, Mistral, Qwen, Falcon train without dropout, GPT-2/OPT/Megatron with 0.1)."""
    return model.dropout if setup.dropout is None else setup.dropout


def layer_activation_bytes(model: ModelSpec, setup: TrainSetup, recompute: str | None = None) -> float:
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
    """
    recompute = recompute or setup.recompute
    model = as_model(model)  # a catalog name or a ModelSpec
    s, b, h = setup.seq_len, setup.micro_batch, model.hidden
    q, kv, f, a = model.q_dim, model.kv_dim, model.ffn_hidden, model.n_heads
    t = setup.tp
    sp_div = t if setup.sp else 1
    e = dtype_bytes(setup.compute_dtype)
    m = 1 if uses_dropout(model, setup) else 0  # dropout masks are 1 byte per element (Table 2)
    if recompute == "full":
        return e * s * b * h / sp_div
    # Not split by TP (split by SP): two norm inputs, the QKV and MLP-input linear inputs, two masks.
    whole = s * b * h * (4 * e + 2 * m)
    # Split by TP: Q, K (for QK^T), V, the output-projection input; the MLP's activation input and
    # output (GeLU), or gate, up, SiLU output and their product (SwiGLU).
    mlp = (4 if model.mlp == "swiglu" else 2) * e * f
    split = s * b * (e * (2 * q + 2 * kv) + mlp)
    if recompute != "selective":
        if setup.attention == "eager":  # softmax output, its dropout mask and the dropout output
            split += a * s * s * b * (e + m + (e if m else 0))
        else:  # fused attention keeps one fp32 logsumexp per row (FlashAttention-2, Dao 2023)
            split += 4 * a * s * b
    return whole / sp_div + split / t


def _stage_layers_and_extra(model: ModelSpec, setup: TrainSetup, stage: str) -> tuple[int, int]:
    """Layers on a pipeline stage and its non-layer parameters (elements, before TP)."""
    layers = math.ceil(model.n_layers / setup.pp)
    if stage == "only":
        return layers, model.embedding_params() + model.head_params()
    if stage == "first":
        return layers, model.embedding_params()
    tied_copy = model.vocab * model.hidden if model.tied_embeddings and model.arch == "decoder" else 0
    return layers, model.head_params() + tied_copy


def _base_weight_bytes(model: ModelSpec, setup: TrainSetup, layers: int, extra: int) -> tuple[float, float]:
    """(bytes of the frozen/served weights on one GPU, bytes of one layer) in setup.base_dtype."""
    dt, ce = setup.base_dtype, dtype_bytes(setup.compute_dtype)
    if dt in QUANT_DTYPES:  # only block linears are quantized; norms, biases, embeddings stay 16-bit
        lin, rows = model.linear_weights
        layer = quantized_bytes(lin, dt, rows) + (model.layer_params() - lin) * ce
        return (layers * layer + extra * ce) / setup.tp, layer / setup.tp
    layer = model.layer_params() * dtype_bytes(dt)
    return (layers * layer + extra * dtype_bytes(dt)) / setup.tp, layer / setup.tp


def _stage_parts(model: ModelSpec, setup: TrainSetup, stage: str) -> dict:
    """Float bytes of every component on one pipeline stage (see module docstring)."""
    layers, extra = _stage_layers_and_extra(model, setup, stage)
    t, dp, z = setup.tp, setup.dp, setup.zero_stage
    ce = dtype_bytes(setup.compute_dtype)
    p = dict(params=0.0, grads=0.0, optimizer=0.0, activations=0.0, logits=0.0, kv_cache=0.0, cpu=0.0)
    holds_head = stage in ("only", "last")
    s, b = setup.seq_len, setup.micro_batch
    if setup.inference:
        p["params"], layer_w = _base_weight_bytes(model, setup, layers, extra)
        if model.arch == "decoder":  # KV cache: 2 x layers x kv_heads x head_dim x bytes per token
            kv_heads = math.ceil(model.n_kv_heads / t)  # replicated when tp > n_kv_heads
            p["kv_cache"] = 2.0 * layers * kv_heads * model.head_dim * ce * setup.batch * s
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
        n_elem = (layers * model.layer_params() + extra) / t
        layer_elem = model.layer_params() / t
        p["params"] = n_elem * w / (dp if z >= 3 else 1)
        layer_w = layer_elem * w
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
    act = layers * layer_activation_bytes(model, setup) * in_flight
    if setup.recompute == "full":  # the layer being recomputed holds its full activations
        act += layer_activation_bytes(model, setup, recompute="none")
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


# ---- the "pytorch" convention: the peak of one eager PyTorch training step ----------------------
# What gpukit.memory_eager's op-by-op replay (matched to MemTracker tensor by tensor) teaches, in
# closed form for any ModelSpec. Each term below is one of its lessons; tests/test_memory_planning.py
# checks the result against measured peaks of the GPT and Llama reference models.

def _amp(setup: TrainSetup) -> bool:
    """torch.autocast: fp32 parameters, 16-bit compute (bf16-mixed / fp16-mixed)."""
    return setup.precision in ("bf16-mixed", "fp16-mixed")


def _separate_projections(model: ModelSpec) -> bool:
    """Llama-family code (Meta's model.py, Hugging Face LlamaAttention/LlamaMLP) has separate q, k, v
    and gate, up Linears; GPT-2/Megatron code fuses QKV. Taken from the MLP kind (an assumption)."""
    return model.mlp == "swiglu"


def pytorch_layer_activation_bytes(model: ModelSpec, setup: TrainSetup, recompute: str | None = None) -> float:
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
    copy = _autocast_weight_copy_bytes(model, setup)
    w_tot = w_attn + w_mlp
    return (attn_whole / sp_div + attn / t + copy * w_attn / w_tot,
            mlp_whole / sp_div + mlp / t + copy * w_mlp / w_tot)


def _autocast_weight_copy_bytes(model: ModelSpec, setup: TrainSetup) -> float:
    """One layer's bf16 weight copies that torch.autocast caches and the Linears save (2 bytes per
    Linear weight, split by tp). With ZeRO-3/FSDP the gathered 16-bit layer is the copy (counted with
    the parameters as the working set), so none here."""
    if not _amp(setup) or setup.zero_stage >= 3:
        return 0.0
    return 2 * model.linear_weights[0] / setup.tp


def _optimizer_temp_bytes(model: ModelSpec | None, setup: TrainSetup, n_elem: float, state_bytes: float) -> float:
    """Temporaries of the optimizer step. AdamW foreach (torch/optim/adam.py _multi_tensor_adam):
    torch._foreach_sqrt(exp_avg_sqs) allocates sqrt(v) for every tensor at once, 4 bytes per fp32
    state element (torch.optim docs: foreach "uses more memory", about one more copy of the states'
    size); the for-loop (_single_tensor_adam) holds sqrt(v) and the denominator of one tensor, 2 x
    the largest tensor (the previous tensor's denominator, smaller in these layouts, is not counted);
    fused kernels and SGD (in place) allocate none."""
    if setup.optimizer != "adamw":
        return 0.0
    impl = setup.optimizer_impl
    if impl == "default":
        impl = "foreach" if setup.device == "cuda" else "for-loop"
    per_elem = state_bytes / 2  # one state's bytes per element (v)
    if impl == "foreach":
        return per_elem * n_elem
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
    head, _, logits_bwd = _pytorch_head_bytes(model, setup)
    return model.n_layers * pytorch_layer_activation_bytes(model, setup) + head + logits_bwd / 3


def _pytorch_step(setup: TrainSetup) -> bool:
    """The pytorch convention's step model applies: full training (what tests/test_memory_planning.py
    measured). LoRA/QLoRA dequantize or freeze the base weights per op (no autocast weight cache of the
    whole model) and inference has no backward: those keep the megatron terms, and the text says so."""
    return setup.convention == "pytorch" and not setup.inference and setup.finetune == "full"


def pytorch_step_parts(model: ModelSpec, setup: TrainSetup, stage: str, p: dict) -> dict:
    """The peak of one steady-state training step in eager PyTorch, as the components alive at that
    moment (so they still sum to the total), from the model states `p` of _stage_parts.

    Phases (gpukit.memory_eager's docstring; zero_grad(set_to_none=True), so no gradients exist
    while the forward runs unless grad_accum > 1):
      forward end   P + S + saved activations + the loss: logits, the fp32 copy autocast makes for
                    cross_entropy and the fp32 log_softmax output it saves
      backward      starts with the log_softmax output beside its gradient and the logits' gradient
                    (3 x 4 sbV bytes); then each layer frees its activations while its gradients
                    appear, so memory moves linearly from the top layer to the bottom one: the peak
                    is at one end (evaluated at both, with one layer's backward working set: two
                    residual-stream gradients and the score gradients a s^2 b or dq, dk, dv)
      optimizer     P + G + S + the update's temporaries (_optimizer_temp_bytes)
    Full recompute: the forward under autocast still caches every layer's bf16 weight copy until
    autocast exits (forward phase only), and the backward re-runs one layer at a time.
    DDP without ZeRO (dp > 1) keeps gradient buckets as large as the gradients (torch DDP docs,
    gradient_as_bucket_view=False by default): + G in backward and optimizer. Not measured here.
    Step 1 creates AdamW's states (and SGD's momentum) in its optimizer step, so its forward and
    backward hold less and its step holds as much as a later one: the steady state is the peak (the
    replay checks both steps). tp, pp, sp, ZeRO and offload scale the terms as in the megatron
    convention; only single-GPU steps were measured.
    """
    layers, _ = _stage_layers_and_extra(model, setup, stage)
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
    w16 = _autocast_weight_copy_bytes(model, setup)
    acts = layers * lay_saved * in_flight
    if first and uses_dropout(model, setup):
        acts += T * h / sp_div * in_flight
    head, logits_fwd, logits_bwd = _pytorch_head_bytes(model, setup) if holds_head else (0.0, 0.0, 0.0)
    extra_fwd = layers * w16 if setup.recompute == "full" else 0.0  # cached until autocast exits
    g_acc = G if setup.grad_accum > 1 else 0.0
    bucket = G if (setup.dp > 1 and setup.zero_stage == 0) else 0.0
    # Gradients appear in backward order: the head's first, then layer by layer, the embedding's last.
    _, extra = _stage_layers_and_extra(model, setup, stage)
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
    opt_temp = _optimizer_temp_bytes(model, setup, S / _adam_state_bytes(setup), _adam_state_bytes(setup))
    top_rest = (layers - 1) * lay_saved * in_flight + (acts - layers * lay_saved * in_flight)

    # Tied embeddings (one tensor, two uses): the LM head's weight gradient is held from the head's
    # backward until the embedding's, then the two are summed out of place before AccumulateGrad
    # (gpukit.memory_eager replay, matched to MemTracker): + V h during backward, + 2 V h at its end.
    tied = model.vocab * model.hidden * per_elem if (model.tied_embeddings and stage == "only") else 0.0

    def layer_moment(g_before: float, rest: float) -> dict:
        g, a = max(moments, key=lambda m: m[0] + m[1])
        return dict(params=P, grads=max(g_acc, g_before + g) + tied + bucket, optimizer=S,
                    activations=rest + a, logits=0.0)

    phases = {
        "forward": dict(params=P, grads=g_acc, optimizer=S, activations=acts + head + extra_fwd,
                        logits=logits_fwd),
        "backward-start": dict(params=P, grads=g_acc + bucket, optimizer=S, activations=acts + head,
                               logits=logits_bwd),
        "backward-top": layer_moment(g_head, top_rest),
        "backward-bottom": layer_moment(g_below, 0.0),
        "backward-end": dict(params=P, grads=G + 2 * tied + bucket, optimizer=S, activations=r * T * h / sp_div,
                             logits=0.0),
        "optimizer": dict(params=P, grads=G + bucket, optimizer=S + opt_temp, activations=0.0, logits=0.0),
    }
    totals = {k: sum(v.values()) for k, v in phases.items()}
    phase = max(totals, key=totals.get)
    out = dict(p, **phases[phase])
    out["phase"] = phase
    out["phase_peaks"] = tuple((k, int(math.ceil(v))) for k, v in totals.items())
    return out


def _adam_state_bytes(setup: TrainSetup) -> float:
    """Bytes of AdamW's two states per element: 8 (fp32), 4 in pure bf16 (torch allocates them like
    the parameters)."""
    return STATE_BYTES_BF16["adamw"] if setup.precision == "bf16" else STATE_BYTES_FP32["adamw"]
def _stage_terms(model: ModelSpec, setup: TrainSetup, stage: str) -> tuple[tuple[str, float], ...]:
    """Named terms of the issue-10 conventions on one stage (bytes, or counts where named so); each is
    already inside the components of `_stage_parts`, listed so that none hides in a sum."""
    if setup.inference:
        return ()
    layers, _ = _stage_layers_and_extra(model, setup, stage)
    first = stage == "first"
    terms = [("in_flight_micro_batches", float(setup.in_flight_micro_batches if first else 1)),
             ("interleave_factor", setup.interleave_factor if first else 1.0)]
    in_flight = setup.in_flight_micro_batches * setup.interleave_factor if first else 1
    if setup.recompute == "full":
        terms += [("stored_checkpoints_bytes", layers * layer_activation_bytes(model, setup) * in_flight),
                  ("recompute_layer_bytes", layer_activation_bytes(model, setup, recompute="none"))]
    if setup.zero_stage >= 3 and setup.offload != "all":
        if setup.finetune == "full":
            w = state_bytes_per_param(setup)[0]
            layer_w = model.layer_params() / setup.tp * w
        else:
            layer_w = _base_weight_bytes(model, setup, layers, 0)[1]
        terms += [("zero3_gathered_bytes", layer_w), ("zero3_prefetch_bytes", layer_w * setup.zero3_prefetch_layers)]
    return tuple(terms)


def _n_params_parts(n_params: int, setup: TrainSetup) -> dict:
    """Model states only, for a bare parameter count: split evenly by tp*pp; no activations."""
    if setup.finetune != "full":
        raise ValueError(f"finetune={setup.finetune!r} needs the model's shape; pass model= (CLI: --model or --layers/--hidden/--heads)")
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


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU (most loaded rank) of one setup, in order; total = sum of the GPU components."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    logits_bytes: int
    kv_cache_bytes: int
    cuda_context_bytes: int
    fragmentation_bytes: int
    overhead_bytes: int
    total_bytes: int
    cpu_bytes: int
    n_params: int
    trainable_params: int
    gpu_memory_bytes: int | None
    fits: bool | None
    stage: str
    model_name: str
    gpu_name: str | None
    setup: TrainSetup
    convention: str = "megatron"
    peak_phase: str = "sum"  # "pytorch": the phase of the step at the peak; "megatron": a sum of parts
    phase_peaks: tuple = ()  # ((phase, bytes of tensors), ...) in the "pytorch" convention
    terms: tuple[tuple[str, float], ...] = ()  # named terms inside the components (issue 10 conventions)

    COMPONENTS = ("params", "grads", "optimizer", "activations", "logits", "kv_cache", "overhead")

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GiB

    def term(self, name: str) -> float:
        """A named term (e.g. 'stored_checkpoints_bytes'); ValueError listing the terms present."""
        d = dict(self.terms)
        if name not in d:
            raise ValueError(f"term must be one of {', '.join(d) or '(none for this setup)'}; got {name!r}")
        return d[name]

    def items(self) -> list[tuple[str, int]]:
        """Ordered (component, bytes) on the GPU; overhead split into its two line items."""
        rows = [(c, getattr(self, f"{c}_bytes")) for c in self.COMPONENTS[:-1]]
        return rows + [("cuda_context", self.cuda_context_bytes), ("fragmentation", self.fragmentation_bytes)]

    def to_json_dict(self) -> dict:
        d = {f"{c}_bytes": getattr(self, f"{c}_bytes") for c in self.COMPONENTS}
        d.update(total_bytes=self.total_bytes, n_params=self.n_params, trainable_params=self.trainable_params,
                 cpu_bytes=self.cpu_bytes)
        if self.gpu_memory_bytes is not None:
            d.update(gpu_memory_bytes=self.gpu_memory_bytes, fits=self.fits)
        if self.terms:
            d["terms"] = {k: (int(math.ceil(v)) if k.endswith("_bytes") else v) for k, v in self.terms}
        return d

    def to_frame(self):
        import pandas as pd

        rows = self.items() + [("total", self.total_bytes)]
        tot = self.total_bytes or 1
        return pd.DataFrame([{"component": c, "bytes": v, "gib": v / GiB, "share": v / tot if c != "total" else 1.0}
                             for c, v in rows])

    def to_text(self) -> str:
        s = self.setup
        what = (f"inference {s.base_dtype}, batch {s.batch} x {s.seq_len} tokens" if s.inference else
                f"{s.precision} {s.optimizer} ZeRO-{s.zero_stage} {s.finetune}, seq {s.seq_len} x micro-batch "
                f"{s.micro_batch}, recompute {s.recompute}, attention {s.attention}")
        how = ("convention pytorch: the parts alive at the peak of a step, phase " + self.peak_phase
               if self.convention == "pytorch" and self.peak_phase != "sum" else
               f"convention {self.convention}: a sum of parts" + (
                   " (the megatron terms: the pytorch step model is measured for full training only, not "
                   "for LoRA/QLoRA or inference)" if self.convention == "pytorch" else ""))
        lines = [f"{self.model_name}: {what}",
                 f"dp {s.dp} x tp {s.tp} x pp {s.pp}; per GPU (stage: {self.stage}); {self.n_params:,} params, "
                 f"{self.trainable_params:,} trainable",
                 *([_pipeline_line(s)] if s.pp > 1 and not s.inference else []),
                 how,
                 f"{'component':<14}{'GiB':>10}{'share':>8}"]
        tot = self.total_bytes or 1
        for c, v in self.items():
            lines.append(f"{c:<14}{v / GiB:>10.2f}{100 * v / tot:>7.1f}%")
        lines.append(f"{'total':<14}{self.total_bytes / GiB:>10.2f}")
        if self.cpu_bytes:
            lines.append(f"{'offloaded/CPU':<14}{self.cpu_bytes / GiB:>10.2f}")
        for k, v in self.terms:  # named terms inside the components above
            shown = f"{v / GiB:.2f} GiB" if k.endswith("_bytes") else f"{v:g}"
            lines.append(f"  of which {k}: {shown}")
        if self.gpu_memory_bytes is not None:
            verdict = "fits" if self.fits else "does NOT fit"
            lines.append(f"{self.gpu_name}: {self.gpu_memory_bytes / GiB:.1f} GiB -> {verdict} "
                         f"({100 * self.total_bytes / self.gpu_memory_bytes:.0f}% used)")
        else:
            lines.append("no GPU given: tensor bytes only (no CUDA context or allocator slack)")
        return "\n".join(lines)


def _pipeline_line(s: TrainSetup) -> str:
    """What the first pipeline stage holds, said in the output (1F1B: min(pp, grad_accum) micro-batches in
    flight, Korthikanti et al. 2022 sec. 4.2.3; bubble (p-1)/(m+p-1), Narayanan et al. 2021 sec. 2.2)."""
    line = f"pipeline: the first stage holds min(pp, grad_accum) = {min(s.pp, s.grad_accum)} micro-batches in flight"
    if s.grad_accum < s.pp:
        line += (f" (grad_accum {s.grad_accum} < pp {s.pp}: the pipeline bubble is "
                 f"{(s.pp - 1) / (s.grad_accum + s.pp - 1):.0%} of a step)")
    return line


def check_layout(model: ModelSpec, setup: TrainSetup) -> None:
    """ValueError when the parallel layout does not fit the model's shape."""
    model = as_model(model)
    if model.n_heads % setup.tp:
        raise ValueError(f"tp must divide n_heads {model.n_heads}, got {setup.tp}")
    if model.n_kv_heads % setup.tp and setup.tp % model.n_kv_heads:
        raise ValueError(f"tp must divide n_kv_heads {model.n_kv_heads} or be a multiple of it, got {setup.tp}")
    if setup.pp > model.n_layers:
        raise ValueError(f"pp must be at most n_layers {model.n_layers}, got {setup.pp}")
    if setup.pp * setup.virtual_stages > model.n_layers:
        raise ValueError(f"pp*virtual_stages must be at most n_layers {model.n_layers} (one layer per model chunk "
                         f"at least), got {setup.pp}*{setup.virtual_stages}={setup.pp * setup.virtual_stages}")


_GPU_PARTS = ("params", "grads", "optimizer", "activations", "logits", "kv_cache")


def estimate_memory(model: ModelSpec | None = None, *, n_params: int | None = None,
                    setup: TrainSetup = TrainSetup(), gpu=None) -> MemoryBreakdown:  # noqa: B008 (frozen)
    """Per-GPU memory of training (or serving, setup.inference) `model` with `setup`, in bytes.

    Give a ModelSpec (all terms) or a bare n_params (model states only: activations, logits and KV
    cache are 0). With `gpu` (catalog.GPU) overhead is added and `fits` is decided.
    """
    if not isinstance(setup, TrainSetup):
        raise ValueError(f"setup must be a TrainSetup, got {type(setup).__name__}")
    model, gpu = as_model(model, optional=True), as_gpu(gpu, optional=True)  # catalog names accepted
    if (model is None) == (n_params is None):
        raise ValueError("pass either model or n_params (exactly one)")
    try:  # sizes beyond float range (e.g. micro_batch 1e400) overflow: a ValueError, not OverflowError
        if model is not None:
            check_layout(model, setup)
            stages = ("only",) if setup.pp == 1 else ("first", "last")
            parts = [(st, _stage_parts(model, setup, st)) for st in stages]
            if _pytorch_step(setup):
                parts = [(st, pytorch_step_parts(model, setup, st, p)) for st, p in parts]
            stage, p = max(parts, key=lambda sp: sum(v for k, v in sp[1].items() if k in _GPU_PARTS))
            terms = _stage_terms(model, setup, stage)
            total_params, name = model.n_params, model.name
            trainable = 0 if setup.inference else (total_params if setup.finetune == "full" else
                                                   model.n_layers * lora_layer_params(model, setup.lora_rank, setup.lora_targets))
        else:
            total_params = require_positive_int("n_params", n_params)
            stage, p, name = "only", _n_params_parts(total_params, setup), f"{total_params:,} params"
            terms = ()
            trainable = 0 if setup.inference else total_params
            if _pytorch_step(setup):  # peak at the optimizer step
                p["optimizer"] += _optimizer_temp_bytes(None, setup, p["optimizer"] / _adam_state_bytes(setup),
                                                        _adam_state_bytes(setup))
                if setup.dp > 1 and setup.zero_stage == 0:  # DDP gradient buckets
                    p["grads"] *= 2
                p["phase"] = "optimizer"
        phase = p.pop("phase", "sum")
        phase_peaks = p.pop("phase_peaks", ())
        if not all(math.isfinite(v) for v in p.values()) or not math.isfinite(math.fsum(p.values())):  # inf, nan
            raise OverflowError
        b = {k: int(math.ceil(v)) for k, v in p.items()}
    except OverflowError:
        raise ValueError("inputs too large: the byte count overflows a float (over 1e308 bytes); "
                         "check seq_len, micro_batch, batch and the model size") from None
    tensors = sum(b[k] for k in ("params", "grads", "optimizer", "activations", "logits", "kv_cache"))
    ctx = CUDA_CONTEXT_BYTES if gpu is not None else 0
    frag = int(math.ceil(FRAGMENTATION_FRACTION * tensors)) if gpu is not None else 0
    total = tensors + ctx + frag
    cap = gpu.memory_bytes if gpu is not None else None
    return MemoryBreakdown(
        params_bytes=b["params"], grads_bytes=b["grads"], optimizer_bytes=b["optimizer"],
        activations_bytes=b["activations"], logits_bytes=b["logits"], kv_cache_bytes=b["kv_cache"],
        cuda_context_bytes=ctx, fragmentation_bytes=frag, overhead_bytes=ctx + frag, total_bytes=total,
        cpu_bytes=b["cpu"], n_params=total_params, trainable_params=trainable, gpu_memory_bytes=cap,
        fits=None if cap is None else total <= cap, stage=stage, model_name=name,
        gpu_name=getattr(gpu, "name", None), setup=setup, convention=setup.convention,
        peak_phase=phase, phase_peaks=phase_peaks, terms=terms)


_FIT_NAMES = ("fits", "max_micro_batch", "max_seq_len", "GpuOption", "GpuPlan", "min_gpus")


def __getattr__(name):  # the questions live in gpukit.memory_fit (it imports this module)
    if name in _FIT_NAMES:
        from gpukit import memory_fit

        return getattr(memory_fit, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
