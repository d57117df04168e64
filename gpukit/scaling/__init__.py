"""gpukit.scaling: Data-parallel scaling: DDP steps bucket by bucket, efficiency, the measured-DDP prediction.

The face of gpukit.scaling: what other families, layers, notebooks and tests import, by part
(dependency order):

- buckets: DDP's gradient buckets and what each comm hook sends: parameter shapes, buckets, bytes, kernels.
- step: One DDP step, bucket by bucket: when each bucket is ready, when its all-reduce runs, what is exposed.
- data_parallel: Data-parallel scaling: step = compute + exposed communication (+ input), bucket by bucket.
- critical_batch: The critical batch size: the largest global batch a run can use before more data parallelism buys no fewer optimizer steps.
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
    GRAD_DTYPE,
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
from gpukit.scaling.critical_batch import (
    PUBLISHED_BATCH,
    CriticalBatch,
    critical_batch,
    beyond_critical,
)

__all__ = [
    "GRAD_DTYPE",
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
    "PUBLISHED_BATCH",
    "CriticalBatch",
    "critical_batch",
    "beyond_critical",
]
