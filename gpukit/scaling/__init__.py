"""gpukit.scaling: Data-parallel scaling: DDP steps bucket by bucket, efficiency, the measured-DDP prediction.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
"""

# isort: skip_file

# the parameter shapes, DDP's buckets and their timing belong to the one gradient-sync model
# (gpukit.comm.grad_sync); offered here too for the DDP step's users
from gpukit.comm import (
    MIB,
    gpt_param_shapes,
    uniform_param_shapes,
    numel,
    Bucket,
    ddp_buckets,
    BucketTiming,
)
from gpukit.scaling.buckets import (
    HOOKS,
    PSGD_MIN_COMPRESSION_RATE,
    powersgd_split,
    hook_bytes,
    hook_collectives,
    hook_compute_s,
    gpu_kernel_s,
)
from gpukit.scaling.step import (
    StepPrediction,
    step_prediction,
    input_exposed_s,
    predict_measured_ddp,
)
from gpukit.scaling.data_parallel import (
    ScalingRow,
    ScalingResult,
    overlap_threshold_tokens,
    scaling,
    ddp_allreduce_bytes,
    AllReduceTraffic,
    allreduce_traffic,
    DdpEstimate,
    ddp_step_estimate,
)

__all__ = [
    "HOOKS",
    "MIB",
    "PSGD_MIN_COMPRESSION_RATE",
    "gpt_param_shapes",
    "uniform_param_shapes",
    "numel",
    "Bucket",
    "ddp_buckets",
    "powersgd_split",
    "hook_bytes",
    "hook_collectives",
    "hook_compute_s",
    "gpu_kernel_s",
    "BucketTiming",
    "StepPrediction",
    "step_prediction",
    "input_exposed_s",
    "predict_measured_ddp",
    "ScalingRow",
    "ScalingResult",
    "overlap_threshold_tokens",
    "scaling",
    "ddp_allreduce_bytes",
    "AllReduceTraffic",
    "allreduce_traffic",
    "DdpEstimate",
    "ddp_step_estimate",
]
