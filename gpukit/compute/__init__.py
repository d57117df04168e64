"""gpukit.compute: FLOPs per token, MFU/HFU, GPU and CPU rooflines, time to train.

The face of gpukit.compute: what other families, layers, notebooks and tests import, by part
(dependency order):

- flops: FLOPs per token, MFU/HFU and achieved TFLOP/s: pure calculators (no torch, no I/O).
- cpu_roofline: CPU peaks from what the CPU is, the ridge point, mixed-dtype matmul rooflines, and notebook 03's small checks (MFU against a peak, the attention share of training FLOPs). Pure: no torch, no files.
- roofline: Matmuls and one transformer layer on the roofline: compute- or memory-bound, attainable TFLOP/s.
- train_time: Time to train and the tokens a time budget buys: executed FLOPs / (GPUs x peak x utilization).
"""

# isort: skip_file

from gpukit.compute.flops import (
    RECOMPUTE,
    MODES,
    FlopsPerToken,
    layer_matmul_params,
    active_matmul_params,
    attention_matmul_params,
    router_matmul_params,
    attention_width,
    fp8_gemm_share,
    fp8_matmul_time_factor,
    matmul_time_scale,
    fp8_time_note,
    FP8_KEPT_HIGH,
    FP8_TIME_ASSUMPTION,
    flops_per_token,
    StepFlops,
    step_flops,
    mfu,
    hfu,
    achieved_tflops,
)
from gpukit.compute.cpu_roofline import (
    INTEL_AVX512_CLIENT_MODELS,
    FmaConfig,
    cpu_fma_config,
    CpuPeakEstimate,
    cpu_peak,
    cpu_peak_from_identity,
    PeakCheck,
    peak_check,
    ridge_point,
    attention_share,
    MixedRoofline,
    matmul_roofline_mixed,
)
from gpukit.compute.roofline import (
    Roofline,
    roofline_matmul,
    LayerRoofline,
    roofline_layer,
)
from gpukit.compute.train_time import (
    TRAIN_INT_DTYPES,
    DEFAULT_MFU,
    TrainTime,
    time_to_train,
    rate_flops,
    tokens_for_time,
)

__all__ = [
    "RECOMPUTE",
    "MODES",
    "FlopsPerToken",
    "layer_matmul_params",
    "active_matmul_params",
    "attention_matmul_params",
    "router_matmul_params",
    "attention_width",
    "fp8_gemm_share",
    "fp8_matmul_time_factor",
    "matmul_time_scale",
    "fp8_time_note",
    "FP8_KEPT_HIGH",
    "FP8_TIME_ASSUMPTION",
    "flops_per_token",
    "StepFlops",
    "step_flops",
    "mfu",
    "hfu",
    "achieved_tflops",
    "INTEL_AVX512_CLIENT_MODELS",
    "FmaConfig",
    "cpu_fma_config",
    "CpuPeakEstimate",
    "cpu_peak",
    "cpu_peak_from_identity",
    "PeakCheck",
    "peak_check",
    "ridge_point",
    "attention_share",
    "MixedRoofline",
    "matmul_roofline_mixed",
    "Roofline",
    "roofline_matmul",
    "LayerRoofline",
    "roofline_layer",
    "TRAIN_INT_DTYPES",
    "DEFAULT_MFU",
    "TrainTime",
    "time_to_train",
    "rate_flops",
    "tokens_for_time",
]
