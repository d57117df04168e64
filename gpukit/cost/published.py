"""Training runs whose GPU-hours (and sometimes price) were disclosed, and gpukit's check of each:
cost at a price, implied MFU, predicted GPU-hours (gpukit.compute.time_to_train). Pure calculator;
gpukit.cost re-exports every name here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.catalog import get_gpu
from gpukit.compute import time_to_train
from gpukit.errors import require_positive


@dataclass(frozen=True)
class PublishedRun:
    """A training run whose GPU-hours (and sometimes price) were disclosed."""

    key: str
    model: str
    gpu: str  # gpukit/data/gpus.csv name of the GPU (or its compute twin)
    n_params: float  # active parameters per token
    tokens: float
    gpu_hours: float
    usd_per_gpu_hour: float | None  # disclosed price, else None
    cost_usd: float | None  # disclosed cost, else None
    source: str
    notes: str = ""

    def to_json_dict(self) -> dict:
        return asdict(self)


PUBLISHED_RUNS = (
    PublishedRun(
        "deepseek-v3",
        "DeepSeek-V3 (671B MoE, 37B active)",
        "h100-sxm",
        37e9,
        14.8e12,
        2.788e6,
        2.0,
        5.576e6,
        "DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv 2412.19437), Table 1: 2,664K pre-training + 119K "
        "context extension + 5K post-training H800 GPU-hours = 2,788K, $5.576M at $2 per GPU-hour",
        "H800: the H100's compute (same dense BF16 peak) with reduced NVLink; trained mostly in FP8",
    ),
    PublishedRun(
        "llama-2-70b",
        "Llama 2 70B",
        "a100-80gb",
        70e9,
        2e12,
        1_720_320,
        None,
        None,
        "Touvron et al. 2023, Llama 2 (arXiv 2307.09288), Table 2 (CO2 emissions): 1,720,320 GPU-hours on "
        "A100-80GB, 2T tokens",
    ),
    PublishedRun(
        "llama-2-7b",
        "Llama 2 7B",
        "a100-80gb",
        7e9,
        2e12,
        184_320,
        None,
        None,
        "Touvron et al. 2023, Llama 2, Table 2: 184,320 GPU-hours on A100-80GB, 2T tokens",
    ),
    PublishedRun(
        "llama-3-8b",
        "Llama 3 8B",
        "h100-sxm",
        8e9,
        15e12,
        1.3e6,
        None,
        None,
        "Meta Llama 3 model card (github.com/meta-llama/llama3 MODEL_CARD.md): 1.3M H100-80GB GPU-hours, "
        "15T+ tokens",
    ),
    PublishedRun(
        "llama-3-70b",
        "Llama 3 70B",
        "h100-sxm",
        70e9,
        15e12,
        6.4e6,
        None,
        None,
        "Meta Llama 3 model card: 6.4M H100-80GB GPU-hours, 15T+ tokens",
    ),
    PublishedRun(
        "llama-3.1-405b",
        "Llama 3.1 405B",
        "h100-sxm",
        405e9,
        15.6e12,
        30.84e6,
        None,
        None,
        "Meta Llama 3.1 model card: 30.84M H100-80GB GPU-hours; Dubey et al. 2024 (arXiv 2407.21783): "
        "15.6T tokens, 38-43% BF16 MFU (Table 4)",
    ),
    PublishedRun(
        "bloom-176b",
        "BLOOM 176B",
        "a100-80gb",
        176e9,
        366e9,
        1_082_990,
        None,
        None,
        "Luccioni et al. 2022, Estimating the Carbon Footprint of BLOOM (arXiv 2211.02001), Table 1: "
        "1,082,990 GPU-hours on A100-80GB; BigScience model card: 366B tokens",
    ),
)


@dataclass(frozen=True)
class PublishedCheck:
    """A published run beside gpukit: cost = GPU-hours x price, implied MFU, predicted GPU-hours."""

    key: str
    gpu_hours: float
    usd_per_gpu_hour: float
    cost_usd: float
    published_cost_usd: float | None
    cost_error: float | None  # cost_usd / published - 1
    implied_mfu: float  # 6ND / (GPU-hours x peak)
    mfu_assumed: float
    predicted_gpu_hours: float  # 6ND / (peak x mfu_assumed)
    gpu_hours_error: float  # predicted / published - 1
    source: str

    def to_json_dict(self) -> dict:
        return asdict(self)


def published_check(key: str, *, usd_per_gpu_hour: float | None = None, mfu: float = 0.4) -> PublishedCheck:
    """Reproduce a published run: its cost at its disclosed (or a given) price, the MFU its GPU-hours
    imply (6ND FLOPs, dense BF16 peak of gpukit/data/gpus.csv), and the GPU-hours gpukit predicts at `mfu`."""
    runs = {r.key: r for r in PUBLISHED_RUNS}
    if key not in runs:
        raise ValueError(f"key must be one of {', '.join(runs)}; got {key!r}")
    r = runs[key]
    price = usd_per_gpu_hour if usd_per_gpu_hour is not None else (r.usd_per_gpu_hour or 2.0)
    price = require_positive("usd_per_gpu_hour", price)
    cost = r.gpu_hours * price
    g = get_gpu(r.gpu)
    peak = g.peak_tflops("bf16") * 1e12
    flops = 6 * r.n_params * r.tokens
    implied = flops / (r.gpu_hours * 3600 * peak)
    predicted = time_to_train(r.n_params, r.tokens, g, 1, mfu=mfu).gpu_hours
    return PublishedCheck(
        key=key,
        gpu_hours=r.gpu_hours,
        usd_per_gpu_hour=price,
        cost_usd=cost,
        published_cost_usd=r.cost_usd,
        cost_error=None if r.cost_usd is None else cost / r.cost_usd - 1,
        implied_mfu=implied,
        mfu_assumed=mfu,
        predicted_gpu_hours=predicted,
        gpu_hours_error=predicted / r.gpu_hours - 1,
        source=r.source,
    )
