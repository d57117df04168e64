"""The inputs of the memory estimate: what a training or serving setup may say (TrainSetup and its
choices) and the bytes each trainable parameter costs.

Pure calculator (no torch, no I/O). Sizes are counts (tokens, sequences, GPUs). Bytes per parameter
(weight, gradient, optimizer states with the fp32 master copy): mixed-precision Adam 2 + 2 + 12
(ZeRO, Rajbhandari et al. 2019 sec. 3.1); optimizer states after Transformer Math 101 (Anthony et al.
2023) and 8-bit Adam (Dettmers et al. 2022 sec. 2); QLoRA adapters (Dettmers et al. 2023 sec. 3 and
4); the gradient conventions (Megatron's fp32 main grads, an fp32 accumulation buffer after the
Ultra-Scale Playbook) are named TrainSetup fields. gpukit.memory re-exports every public name here
(memory.TrainSetup, memory.PRECISIONS, ...), which is how callers reach them.

Used in: gpukit.memory, gpukit.memory.parts, gpukit.memory.pytorch, gpukit.memory.fit,
gpukit.parallel, gpukit.memory.tricks, gpukit.plan.train, gpukit.cli.memory, gpukit.widgets, gpukit.bench.measure,
gpukit.audits and notebooks 01, 02, 04, 06 (through gpukit.memory).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from gpukit.catalog import as_model
from gpukit.errors import MAX_COUNT, require_choice, require_positive, require_positive_int
from gpukit.quant import LORA_TARGETS
from gpukit.specs import ModelSpec
from gpukit.units import dtype_bytes

# "fp8": FP8 training as Transformer Engine runs it (NVIDIA TE docs, "Using FP8 with Transformer Engine":
# the GEMMs of the linear layers take fp8 inputs with per-tensor scales from an amax history, delayed
# scaling; weights stay bf16 with an fp32 master copy and fp32 Adam states), the recipe DeepSeek-V3 also
# trains with (arXiv:2412.19437 sec. 3.3: fp8 GEMMs, master weights and gradients kept in fp32). See
# FP8_RECIPE and gpukit.memory.parts.fp8_extra_bytes.
PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16", "fp8")
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
# FP8 training recipe (precision="fp8"), each number with its source:
# - weights bf16 (2 B), gradients bf16 (2 B; grad_dtype="fp32" for Megatron's fp32 main grads, which
#   DeepSeek-V3 sec. 3.3.3 keeps), fp32 master + fp32 AdamW m, v (12 B): TE's default with Megatron's
#   mixed-precision optimizer, 2 + 2 + 12 = 16 B/param as bf16-mixed (DeepSeek-V3 keeps the moments in
#   bf16, sec. 3.3.3: not modelled, stated);
# - an fp8 copy of every GEMM weight and its transpose, cached across micro-batches (TE Linear's
#   weight cache with is_first_microbatch; Hopper's fp8 GEMM takes only the "TN" layout, so the
#   backward needs the transposed copy): FP8_WEIGHT_CACHE_BYTES per GEMM weight;
# - the inputs of the GEMMs saved for backward in fp8 (1 B instead of 2): TE Linear / LayerNormLinear
#   save their fp8-cast input; other activations (norms, softmax stats, SwiGLU products) stay bf16;
# - an amax history per fp8 tensor (input, weight, grad output of every GEMM): FP8_AMAX_HISTORY_LEN
#   fp32 values each (TE DelayedScaling default amax_history_len 1024), plus an fp32 scale and inverse.
FP8_WEIGHT_CACHE_BYTES = 2.0  # fp8 weight + fp8 transpose, 1 + 1 byte per GEMM weight (TE, Hopper)
FP8_AMAX_HISTORY_LEN = 1024  # transformer_engine.common.recipe.DelayedScaling(amax_history_len=1024)
FP8_RECIPE = (
    "fp8 recipe (Transformer Engine delayed scaling; DeepSeek-V3 arXiv:2412.19437 sec. 3.3): GEMMs in "
    "fp8 (fwd and bwd), bf16 weights + fp8 weight cache (weight and transpose, 2 B per GEMM weight), "
    "fp32 master + fp32 AdamW (12 B/param), GEMM inputs saved in fp8, amax history 1024 x fp32 per "
    "fp8 tensor"
)


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
    convention: "pytorch" (default: the peak of a step as eager PyTorch keeps it, gpukit.memory.pytorch's
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
    grad_dtype: str | None = (
        None  # None: the precision's (16-bit mixed, fp32 in fp32); "fp32": Megatron main grads
    )
    grad_accum_buffer: str = (
        "none"  # "fp32": separate fp32 accumulation buffer (Ultra-Scale Playbook, 20 B/param)
    )
    virtual_stages: int = (
        1  # interleaved 1F1B model chunks per pipeline stage (Narayanan et al. 2021 sec. 2.2.2)
    )
    zero3_prefetch_layers: int = 0  # ZeRO-3/FSDP layers gathered ahead of the working one
    # Expert and context parallelism (Megatron-Core MoE docs, "parallel folding"; DeepSeek-V3 sec. 3.1):
    # routed experts split over ep ranks (and, inside an expert, over expert_tp ranks; None = tp,
    # Megatron-Core's default expert_tensor_parallel_size), the sequence over cp ranks. ep * expert_tp
    # ranks come from the dp * cp * tp ranks of a stage; the experts' gradients and optimizer states
    # shard under ZeRO over the expert-data-parallel group dp * cp * tp / (ep * expert_tp) ranks.
    ep: int = 1
    cp: int = 1
    expert_tp: int | None = None
    # tokens an expert takes = capacity_factor * tokens * top_k / n_experts (GShard, Lepikhin et al.
    # 2020 sec. 2.2; Switch, Fedus et al. 2021 sec. 2.1); 1.0 = balanced routing with no padding
    capacity_factor: float = 1.0

    def __post_init__(self):
        for name, allowed in (
            ("precision", PRECISIONS),
            ("optimizer", OPTIMIZERS),
            ("recompute", RECOMPUTE),
            ("attention", ATTENTION),
            ("offload", OFFLOAD),
            ("finetune", FINETUNE),
            ("lora_targets", LORA_TARGETS),
            ("convention", CONVENTIONS),
            ("device", DEVICES),
            ("optimizer_impl", OPTIMIZER_IMPLS),
        ):
            require_choice(name, getattr(self, name), allowed)
        if self.weights_dtype is not None:
            require_choice("weights_dtype", self.weights_dtype, WEIGHT_DTYPES)
        if (
            isinstance(self.zero_stage, bool)
            or not isinstance(self.zero_stage, numbers.Integral)
            or self.zero_stage not in (0, 1, 2, 3)
        ):  # 1.0 printed "ZeRO-1.0"
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        for name in (
            "dp",
            "tp",
            "pp",
            "seq_len",
            "micro_batch",
            "grad_accum",
            "lora_rank",
            "batch",
            "virtual_stages",
            "ep",
            "cp",
        ):
            # counts of GPUs, sequences and steps: at most MAX_COUNT (1e9; larger is a typo); seq_len and
            # lora_rank are sizes, bounded by the model (its window, its hidden size)
            limit = None if name in ("seq_len", "lora_rank") else MAX_COUNT
            object.__setattr__(self, name, require_positive_int(name, getattr(self, name), at_most=limit))
        self._check_conventions()
        self._check_ep_cp()
        for name in ("sp", "dropout", "inference"):
            if not isinstance(getattr(self, name), bool) and not (name == "dropout" and self.dropout is None):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if self.finetune == "qlora":
            if self.precision == "fp32":
                raise ValueError(
                    "finetune='qlora' needs a 16-bit precision (bf16-mixed, fp16-mixed or bf16), got 'fp32'"
                )
            if self.weights_dtype not in (None, "nf4"):
                raise ValueError(
                    f"finetune='qlora' keeps the base in nf4; weights_dtype must be nf4, got {self.weights_dtype!r}"
                )
        if self.precision == "fp8" and (self.inference or self.finetune != "full" or self.offload != "none"):
            raise ValueError(
                "precision fp8 is the FP8 training recipe for full training without offload (Transformer "
                "Engine), got it with inference, LoRA/QLoRA or offload; fp8 serving is gpukit serve --precision fp8"
            )
        if self.inference:
            if self.finetune != "full":
                raise ValueError(
                    "finetune applies to training; with inference=True leave finetune='full' (use weights_dtype for a quantized base)"
                )
            if self.zero_stage:
                raise ValueError(
                    f"zero_stage applies to training; inference splits weights with tp/pp, got zero_stage {self.zero_stage}"
                )
            if self.offload == "optimizer":
                raise ValueError(
                    "offload='optimizer' applies to training; inference allows offload none or all"
                )
            training_only = [
                f"{k} {v!r}"
                for k, v, unset in (
                    ("micro_batch", self.micro_batch, 1),
                    ("grad_accum", self.grad_accum, 1),
                    ("recompute", self.recompute, "none"),
                    ("grad_dtype", self.grad_dtype, None),
                    ("grad_accum_buffer", self.grad_accum_buffer, "none"),
                    ("virtual_stages", self.virtual_stages, 1),
                    ("zero3_prefetch_layers", self.zero3_prefetch_layers, 0),
                )
                if v != unset
            ]
            if training_only:
                raise ValueError(
                    f"{training_only[0].split()[0]} applies to training (micro-batches, recompute, "
                    f"gradients, pipeline schedule, ZeRO-3; serving takes batch), got {training_only[0]} "
                    "with inference=True"
                )
        else:
            if self.batch != 1:  # the training side of the same mistake: batch would be ignored
                raise ValueError(
                    f"batch applies to inference=True (sequences in the KV cache); training takes "
                    f"micro_batch, got batch {self.batch}"
                )
            if self.finetune == "full" and self.weights_dtype not in (None, self.compute_dtype):
                raise ValueError(
                    f"weights_dtype {self.weights_dtype!r} applies to inference or a LoRA base; full training keeps weights in {self.compute_dtype}"
                )
            if self.offload == "optimizer" and self.zero_stage < 1:
                raise ValueError(
                    "offload='optimizer' needs zero_stage >= 1 (ZeRO-Offload partitions the optimizer), got 0"
                )
            if self.offload == "all" and self.zero_stage != 3:
                raise ValueError(
                    f"offload='all' needs zero_stage 3 (ZeRO-Infinity offloads partitioned parameters), got {self.zero_stage}"
                )
            if self.zero3_prefetch_layers and self.zero_stage != 3:
                raise ValueError(
                    f"zero3_prefetch_layers {self.zero3_prefetch_layers} needs zero_stage 3 (only ZeRO-3/FSDP "
                    f"gathers layers ahead), got zero_stage {self.zero_stage}"
                )
            check_zero_pp(self.zero_stage, self.pp)

    def _check_ep_cp(self) -> None:
        """Validate ep, cp, expert_tp and capacity_factor (the model-dependent rules are in check_layout)."""
        if self.expert_tp is not None:
            object.__setattr__(
                self, "expert_tp", require_positive_int("expert_tp", self.expert_tp, at_most=MAX_COUNT)
            )
        cf = self.capacity_factor
        if isinstance(cf, bool) or not isinstance(cf, numbers.Real) or not (0 < cf < float("inf")):
            raise ValueError(
                f"capacity_factor must be a finite number > 0 (1.0: balanced routing), got {cf!r}"
            )
        object.__setattr__(self, "capacity_factor", float(cf))
        if self.cp > 1 and self.attention != "flash":
            raise ValueError(
                f"attention must be flash with cp {self.cp}: ring attention is blockwise (flash-style) attention"
            )
        if self.cp > 1 and self.seq_len % self.cp:
            raise ValueError(
                f"seq_len must be a multiple of cp {self.cp} (s/cp tokens per rank), got {self.seq_len}"
            )
        etp = self.expert_tensor_parallel
        if (self.dp * self.cp * self.tp) % (self.ep * etp):
            raise ValueError(
                f"ep*expert_tp must divide dp*cp*tp = {self.dp * self.cp * self.tp} (expert ranks are folded "
                f"into a stage's data-, context- and tensor-parallel ranks, Megatron-Core), got "
                f"{self.ep}*{etp} = {self.ep * etp}"
            )

    @property
    def expert_tensor_parallel(self) -> int:
        """expert_tp, or tp when None (Megatron-Core's default expert_tensor_parallel_size)."""
        return self.tp if self.expert_tp is None else self.expert_tp

    @property
    def expert_dp(self) -> int:
        """Ranks an expert's weights are replicated on, over which ZeRO shards its gradients and optimizer
        states: dp * cp * tp / (ep * expert_tp) (Megatron-Core's expert-data-parallel group; dp*cp/ep
        with expert_tp = tp)."""
        return self.dp * self.cp * self.tp // (self.ep * self.expert_tensor_parallel)

    @property
    def dense_dp(self) -> int:
        """Ranks a dense (non-expert) weight shard is replicated on: dp * cp (the CP ranks hold the same
        weights; Megatron-Core's data-parallel group with context parallelism)."""
        return self.dp * self.cp

    def _check_conventions(self) -> None:
        """Validate the gradient / schedule / prefetch options (issue 10)."""
        if self.grad_dtype is not None:
            require_choice("grad_dtype", self.grad_dtype, GRAD_DTYPES)
            # Gradients are fp32 (Megatron's main grads) or the dtype the precision computes in: bf16
            # gradients of fp16 training, or 16-bit gradients of fp32 training, exist in no framework.
            # Eager PyTorch (torch.autocast) keeps fp32 parameters, so their gradients are fp32 too.
            mixed_pytorch = self.convention == "pytorch" and self.precision.endswith("-mixed")
            if self.grad_dtype != "fp32" and (self.grad_dtype != self.compute_dtype or mixed_pytorch):
                why = (
                    "torch.autocast keeps fp32 parameters and so fp32 gradients (use convention megatron for "
                    "16-bit gradients)"
                    if mixed_pytorch and self.grad_dtype == self.compute_dtype
                    else f"it computes in {self.compute_dtype}"
                )
                raise ValueError(
                    f"grad_dtype must be fp32 or the precision's own dtype: {self.grad_dtype} gradients "
                    f"do not exist in {self.precision} training{' (convention pytorch)' if mixed_pytorch else ''}, "
                    f"{why}; got {self.grad_dtype!r}"
                )
        require_choice("grad_accum_buffer", self.grad_accum_buffer, GRAD_ACCUM_BUFFERS)
        if self.grad_accum_buffer == "fp32" and self.grad_dtype == "fp32":
            raise ValueError(
                "grad_accum_buffer fp32 with grad_dtype fp32 counts the fp32 gradients twice: Megatron's "
                "fp32 main grads are the accumulation buffer; use one of them"
            )
        if self.grad_accum_buffer == "fp32" and self.precision == "fp32":
            raise ValueError(
                "grad_accum_buffer fp32 applies to 16-bit training; with precision fp32 the gradients "
                "already are fp32"
            )
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(
                f"virtual_stages {self.virtual_stages} needs pp > 1 (interleaving splits pipeline "
                "stages into model chunks), got pp 1"
            )
        if (
            isinstance(self.zero3_prefetch_layers, bool)
            or not isinstance(self.zero3_prefetch_layers, int)
            or self.zero3_prefetch_layers < 0
        ):
            raise ValueError(
                f"zero3_prefetch_layers must be an integer >= 0, got {self.zero3_prefetch_layers!r}"
            )

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
        return self.dp * self.tp * self.pp * self.cp

    @property
    def compute_dtype(self) -> str:
        """dtype of activations, KV cache and unquantized weights."""
        if self.inference and self.weights_dtype in ("bf16", "fp16", "fp32"):
            return self.weights_dtype
        return {"fp32": "fp32", "fp16-mixed": "fp16"}.get(self.precision, "bf16")  # fp8: bf16 outside GEMMs

    @property
    def base_dtype(self) -> str:
        """dtype of frozen or served weights: nf4 for QLoRA, else weights_dtype or the compute dtype."""
        if self.finetune == "qlora":
            return "nf4"
        return self.weights_dtype or self.compute_dtype


def check_zero_pp(zero_stage: int, pp: int) -> None:
    """ValueError for ZeRO-2/3 with pipeline stages: they reduce-scatter every micro-batch's gradients to
    keep only their partition, and DeepSpeed's PipelineEngine asserts stage < 2 ("ZeRO-2 and ZeRO-3 are
    incompatible with pipeline parallelism", deepspeed/runtime/pipe/engine.py); Megatron's distributed
    optimizer shards the optimizer states only (ZeRO-1). The one rule: TrainSetup and
    gpukit.parallel.ParallelConfig call it."""
    if isinstance(zero_stage, bool) or zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    pp = require_positive_int("pp", pp)
    if zero_stage >= 2 and pp > 1:
        raise ValueError(
            f"zero_stage {zero_stage} with pp {pp}: ZeRO-2/3 are not combined with pipeline stages (DeepSpeed's "
            "pipeline engine refuses them; Megatron's distributed optimizer is ZeRO-1); use zero 0-1"
        )


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
    elif setup.precision == "fp8":  # FP8_RECIPE: bf16 weights and gradients, fp32 master + states
        w, g, o = 2.0, 2.0, MASTER_BYTES + STATE_BYTES_FP32[setup.optimizer]
    elif setup.precision == "bf16":
        w, g, o = 2.0, 2.0, STATE_BYTES_BF16[setup.optimizer]
    elif setup.convention == "pytorch" and setup.offload == "none":
        # torch.autocast keeps the parameters (and so their gradients and AdamW's states) in fp32: the
        # fp32 parameters are the master copy (PyTorch AMP docs, "Automatic Mixed Precision"); the bf16
        # weights exist only as autocast's per-forward copies (counted with the activations). Offload
        # runs in DeepSpeed's engine instead: 16-bit model on the GPU, fp32 master with the optimizer
        # states on the CPU (ZeRO-Offload, Ren et al. 2021 sec. 4.1), as below.
        w, g, o = 4.0, 4.0, STATE_BYTES_FP32[setup.optimizer]
    else:
        w, g, o = 2.0, 2.0, MASTER_BYTES + STATE_BYTES_FP32[setup.optimizer]
    return w, grad_bytes_per_param(setup, g), o


def grad_bytes_per_param(setup: TrainSetup, default: float) -> float:
    """Gradient bytes per trainable parameter under the named convention: the precision's `default`
    (ZeRO sec. 3.1: 2), Megatron's fp32 main grads (grad_dtype='fp32': 4; 2 + 4 + 12 = 18 B/param),
    plus an fp32 accumulation buffer (grad_accum_buffer='fp32': + 4; 20 B/param, Ultra-Scale Playbook)."""
    default = require_positive("default", default)
    g = default if setup.grad_dtype is None else float(dtype_bytes(setup.grad_dtype))
    return g + (4.0 if setup.grad_accum_buffer == "fp32" else 0.0)


def uses_dropout(model: ModelSpec, setup: TrainSetup) -> bool:
    """Dropout masks are stored: setup.dropout if given, else the model row's `dropout` (gpukit/data/models.csv:
    Llama, Mistral, Qwen, Falcon train without dropout, GPT-2/OPT/Megatron with 0.1)."""
    model = as_model(model, "model")  # a catalog name too
    return model.dropout if setup.dropout is None else setup.dropout
