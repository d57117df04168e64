"""gpukit.compute: FLOPs per token, MFU/HFU, GPU and CPU rooflines, time to train.

The family's public face: every name other families, layers, notebooks and tests use is
imported here from its part (parts listed in dependency order) and named in __all__.
"""

# isort: skip_file

from gpukit.compute.flops import (
    RECOMPUTE,
    MODES,
    FlopsPerToken,
    layer_matmul_params,
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
