"""gpukit.memory: What fits: the analytical per-GPU memory model, its setup, the eager-PyTorch replay, fitting tricks.

The face of gpukit.memory: what other families, layers, notebooks and tests import, by part
(dependency order):

- train_setup: The inputs of the memory estimate: what a training or serving setup may say (TrainSetup and its choices) and the bytes each trainable parameter costs.
- kv_cache: The KV cache: the one formula for its bytes on one GPU, used by every family that counts it.
- parts: The sum of parts of the memory estimate: the bytes of every component (params, grads, optimizer, activations, logits, KV cache, CPU) on one pipeline stage, and the named terms inside them.
- pytorch: The "pytorch" convention of the memory estimate: the peak of one steady-state eager PyTorch training step, as the components alive at that moment, in closed form for any ModelSpec.
- analytic: Analytical GPU memory model: weights, gradients, optimizer states, activations, logits, KV cache and overhead of one training or inference setup, per GPU.
- replay: The op-by-op replay of one training step of the eager reference GPT (gpukit.bench.models): the step's setup (EagerSetup), its parameter tensors (ReferenceGPT's, in order), the tape of allocations ...
- eager: Training-step memory of the eager-PyTorch reference GPT (gpukit.bench.models), predicted op by op.
- fit: Questions asked of the memory estimate: does a setup fit a GPU, the largest micro-batch or sequence that fits (binary search over a monotone estimate), the fewest GPUs (and which layout) that hold ...
- tricks: Fitting tricks, modelled (pure, no torch): what each trick does to the memory of a training step.
- resolve: The memory policy: from what a user gave to the TrainSetup that is estimated, with every default said.
"""

# isort: skip_file

from gpukit.memory.train_setup import (
    PRECISIONS,
    OPTIMIZERS,
    RECOMPUTE,
    ATTENTION,
    OFFLOAD,
    FINETUNE,
    WEIGHT_DTYPES,
    CONVENTIONS,
    DEVICES,
    OPTIMIZER_IMPLS,
    GRAD_DTYPES,
    GRAD_ACCUM_BUFFERS,
    STATE_BYTES_FP32,
    STATE_BYTES_BF16,
    MASTER_BYTES,
    TrainSetup,
    state_bytes_per_param,
    grad_bytes_per_param,
    uses_dropout,
)
from gpukit.memory.kv_cache import (
    KV_DTYPES,
    kv_heads_per_gpu,
    kv_bytes_per_token,
    kv_bytes_per_token_layer,
    stage_layer_kinds,
    kv_cached_token_layers,
    kv_cache_bytes,
)
from gpukit.memory.parts import (
    layer_activation_bytes,
    stage_layers_and_extra,
    stage_parts,
    stage_terms,
    n_params_parts,
)
from gpukit.memory.pytorch import (
    pytorch_layer_activation_bytes,
    autocast_weight_copy_bytes,
    optimizer_temp_bytes,
    pytorch_forward_end_bytes,
    pytorch_step_applies,
    pytorch_step_parts,
    adam_state_bytes,
)
from gpukit.memory.analytic import (
    CUDA_CONTEXT_BYTES,
    FRAGMENTATION_FRACTION,
    MemoryBreakdown,
    check_layout,
    estimate_memory,
)
from gpukit.memory.replay import (
    CATEGORIES,
    RECOMPUTE_KINDS,
    REPLAY_PRECISIONS,
    REPLAY_OPTIMIZERS,
    REPLAY_DEVICES,
    EagerSetup,
    param_shapes,
    ReplayTape,
    ReplayStep,
)
from gpukit.memory.eager import (
    PHASES,
    MAX_REPLAY_LAYERS,
    reference_spec,
    llama_spec,
    CategoryBreakdown,
    EagerPrediction,
    predict_training_memory,
    replay_timeline,
    eager_layer_activation_bytes,
    eager_activation_bytes,
    megatron_activation_bytes,
    reconcile_megatron,
)
from gpukit.memory.fit import (
    MAX_GPUS,
    fits,
    max_micro_batch,
    max_seq_len,
    GpuOption,
    GpuPlan,
    min_gpus,
)
from gpukit.memory.tricks import (
    TRICKS,
    LORA_TARGET_MODULES,
    RECOMPUTE_COMPUTE_RATIO,
    TrickStack,
    trick_stack,
    StepTimeEstimate,
    step_time_estimate,
    lora_trainable_params,
)
from gpukit.memory.resolve import (
    SETUP_FIELDS,
    TRAINING_ONLY,
    ResolvedSetup,
    resolve_setup,
)

__all__ = [
    "PRECISIONS",
    "OPTIMIZERS",
    "RECOMPUTE",
    "ATTENTION",
    "OFFLOAD",
    "FINETUNE",
    "WEIGHT_DTYPES",
    "CONVENTIONS",
    "DEVICES",
    "OPTIMIZER_IMPLS",
    "GRAD_DTYPES",
    "GRAD_ACCUM_BUFFERS",
    "STATE_BYTES_FP32",
    "STATE_BYTES_BF16",
    "MASTER_BYTES",
    "TrainSetup",
    "state_bytes_per_param",
    "grad_bytes_per_param",
    "uses_dropout",
    "KV_DTYPES",
    "kv_heads_per_gpu",
    "kv_bytes_per_token",
    "kv_bytes_per_token_layer",
    "stage_layer_kinds",
    "kv_cached_token_layers",
    "kv_cache_bytes",
    "layer_activation_bytes",
    "stage_layers_and_extra",
    "stage_parts",
    "stage_terms",
    "n_params_parts",
    "pytorch_layer_activation_bytes",
    "autocast_weight_copy_bytes",
    "optimizer_temp_bytes",
    "pytorch_forward_end_bytes",
    "pytorch_step_applies",
    "pytorch_step_parts",
    "adam_state_bytes",
    "CUDA_CONTEXT_BYTES",
    "FRAGMENTATION_FRACTION",
    "MemoryBreakdown",
    "check_layout",
    "estimate_memory",
    "CATEGORIES",
    "RECOMPUTE_KINDS",
    "REPLAY_PRECISIONS",
    "REPLAY_OPTIMIZERS",
    "REPLAY_DEVICES",
    "EagerSetup",
    "param_shapes",
    "ReplayTape",
    "ReplayStep",
    "PHASES",
    "MAX_REPLAY_LAYERS",
    "reference_spec",
    "llama_spec",
    "CategoryBreakdown",
    "EagerPrediction",
    "predict_training_memory",
    "replay_timeline",
    "eager_layer_activation_bytes",
    "eager_activation_bytes",
    "megatron_activation_bytes",
    "reconcile_megatron",
    "MAX_GPUS",
    "fits",
    "max_micro_batch",
    "max_seq_len",
    "GpuOption",
    "GpuPlan",
    "min_gpus",
    "TRICKS",
    "LORA_TARGET_MODULES",
    "RECOMPUTE_COMPUTE_RATIO",
    "TrickStack",
    "trick_stack",
    "StepTimeEstimate",
    "step_time_estimate",
    "lora_trainable_params",
    "SETUP_FIELDS",
    "TRAINING_ONLY",
    "ResolvedSetup",
    "resolve_setup",
]
