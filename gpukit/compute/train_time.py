"""Time to train and the tokens a time budget buys: executed FLOPs / (GPUs x peak x utilization).

Holds TrainTime and time_to_train (seconds, days, GPU-hours, MFU and HFU for a model, a token count
and n_gpus of a catalog GPU; Narayanan et al. 2021 eq. 4, 8TP/(nX) with full recompute), the
utilization it assumes when given none (DEFAULT_MFU), tokens_for_time (Kaplan et al. 2020: C = 6ND,
solved for D) and rate_flops, one GPU's sustained FLOP/s (catalog dense peak x MFU, PaLM sec. 4.1;
gpukit.scaling imports it). Units: tokens, seconds (days and GPU-hours derived), TFLOP/s, FLOP/s.
FLOPs per token come from gpukit.compute.flops_per_token. Pure: no torch, no I/O. gpukit.compute
re-exports every name here (lazily: this module imports it).

Used in: notebooks/03_compute_and_time, gpukit.cli.compute (`gpukit train-time`),
gpukit.widgets.compute_view, gpukit.cost, gpukit.cost.published, gpukit.plan, gpukit.scaling,
gpukit.audits.compute, gpukit.audits.plan, tests/test_compute.py, tests/test_claims.py, tests/test_fuzz.py.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.catalog import as_gpu, as_model
from gpukit.compute.flops import flops_per_token
from gpukit.errors import (
    MAX_COUNT,
    check_finite,
    finite_result,
    overflow_error,
    require_positive,
    require_positive_int,
)
from gpukit.results import frame, json_safe
from gpukit.specs import ModelSpec
from gpukit.units import fmt_seconds

TRAIN_INT_DTYPES = ("int8", "int4", "nf4")  # quantized formats: no training FLOP/s
DEFAULT_MFU = 0.40  # assumption when neither mfu nor a profile is given; see time_to_train


# ---------------------------------------------------------------------------------------------------
# Time to train
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainTime:
    """Time to train on `tokens` tokens: FLOPs, seconds, days, GPU-hours and the utilization used."""

    n_params: float
    tokens: float
    gpu: str
    n_gpus: int
    dtype: str
    recompute: str
    seq_len: int | None  # None: n_params only, no attention term
    peak_tflops: float
    utilization: float  # share of peak sustained on the executed (hardware) FLOPs
    utilization_source: str
    model_flops: float
    flops: float  # executed FLOPs, incl. recompute
    seconds: float
    seq_len_source: str = ""  # where seq_len came from: given, or the model's pretraining length
    lm_head_params: float = 0.0  # the part of n_params that is the LM head (counted with a model by default)

    @property
    def days(self) -> float:
        return self.seconds / 86400

    @property
    def gpu_hours(self) -> float:
        return self.seconds * self.n_gpus / 3600

    @property
    def effective_tflops_per_gpu(self) -> float:
        return self.flops / self.seconds / self.n_gpus / 1e12

    @property
    def mfu(self) -> float:
        return self.model_flops / self.seconds / self.n_gpus / (self.peak_tflops * 1e12)

    @property
    def hfu(self) -> float:
        return self.utilization

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (("model_flops", self.model_flops), ("recompute_flops", self.flops - self.model_flops))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(
            days=self.days,
            gpu_hours=self.gpu_hours,
            effective_tflops_per_gpu=self.effective_tflops_per_gpu,
            mfu=self.mfu,
            hfu=self.hfu,
            bound=self.bound,
        )
        return json_safe(d)

    @property
    def bound(self) -> str:
        """What this time is: perfect scaling, a bound, in words (the output says it)."""
        if self.n_gpus == 1:
            return (
                "perfect-scaling bound: FLOPs at the stated utilization only (no optimizer step, offload or "
                "input waits); `gpukit cost train` prices the run with the one step model (gpukit.parallel.estimate)"
            )
        return (
            f"perfect-scaling bound: {self.n_gpus} GPUs at the one-GPU rate, no communication, pipeline bubble, "
            "optimizer step or offload; at this utilization no real run is faster. `gpukit cost train`, "
            "`gpukit plan` and `gpukit parallel estimate` price the run with the one step model "
            "(gpukit.parallel.estimate)"
        )

    def to_frame(self):
        d = self.to_json_dict()
        return frame(d.items(), ("quantity", "value"))

    def to_text(self) -> str:
        seq = f", seq_len {self.seq_len}" if self.seq_len else ""
        if self.seq_len and self.seq_len_source:
            seq += f" ({self.seq_len_source})"
        elif not self.seq_len:  # n_params alone: say what was counted
            seq = f", {6 + 2 * (self.recompute == 'full')}N per token, {self.seq_len_source}"
        if self.seq_len:  # a model: say what N counts
            seq += f"; N {self.n_params:.4g} = layer matmuls" + (
                f" + LM head {self.lm_head_params:.4g}" if self.lm_head_params else " (LM head not counted)"
            )
        return (
            f"{self.model_flops:.3e} model FLOPs ({self.flops:.3e} executed{seq}) on {self.n_gpus} x {self.gpu} "
            f"at {self.effective_tflops_per_gpu:.1f} TFLOP/s per GPU ({self.dtype}, {self.utilization_source}): "
            f"{fmt_seconds(self.seconds)}, {self.gpu_hours:,.0f} GPU-hours; "
            f"MFU {self.mfu:.1%}, HFU {self.hfu:.1%}\n{self.bound}"
        )


def time_to_train(
    model,
    tokens: float,
    gpu,
    n_gpus: int,
    *,
    mfu: float | None = None,
    profile=None,
    efficiency: float | None = None,
    recompute: str = "none",
    dtype: str | None = None,
    seq_len: int | None = None,
    causal: bool | None = None,
    include_embeddings: bool = True,
) -> TrainTime:
    """seconds = executed FLOPs / (n_gpus * peak * utilization) (Narayanan et al. 2021 eq. 4:
    8TP/(nX) with full recompute, X the per-GPU throughput on executed FLOPs).

    model: a ModelSpec, or a number = n_params (then 6N or 8N per token, no attention term).
    Utilization, in order: `mfu` (the share of peak sustained on the executed FLOPs: MFU without
    recompute, HFU with it, as Narayanan's X/peak); else a calibration `profile`: its measured matmul
    TFLOP/s for `dtype` (default the GPU's 16-bit dtype) x `efficiency` (default 1.0, an upper bound: every FLOP at measured matmul
    speed); else DEFAULT_MFU = 0.40 (assumed: Llama 3 reports 38-43 % BF16 MFU on H100, Dubey et al.
    2024 table 4; PaLM 46 %). seq_len defaults to model.train_seq_len, the pretraining sequence
    length, not the context window max_seq (Llama 3.1: pretrained at 8192, window 131072); the
    result's seq_len_source says which was used. With a model, the LM head's h x V matmul is counted
    (include_embeddings=True, as Megatron's eq. 3 V/(16lh) term and PaLM's N do, and as
    gpukit.parallel.estimate does): it is executed every token (gpt2: 29% of its training FLOPs,
    llama-3-8b: 6%); the result's lm_head_params says how much of n_params it is.
    """
    tokens = require_positive("tokens", tokens)
    n_gpus = require_positive_int("n_gpus", n_gpus)
    if tokens < n_gpus:  # 1e20 GPUs on 15T tokens once printed "0.0 us" as a training time
        raise ValueError(
            f"tokens must be at least n_gpus (the time assumes every GPU busy, each on at least one "
            f"token), got {tokens:g} tokens for {n_gpus:,} GPUs"
        )
    gpu = as_gpu(gpu)  # a catalog name ('h100-sxm') or a catalog.GPU
    if isinstance(model, str):
        model = as_model(model)
    if mfu is not None and profile is not None:
        raise ValueError("give mfu or profile, not both")
    if isinstance(model, ModelSpec):
        if seq_len is None:
            seq_len, _ = model.default_seq_len()  # the one default (ModelSpec owns it)
            seq_source = model.train_seq_len_source
        else:
            seq_source = "given"
        fpt = flops_per_token(
            model, seq_len=seq_len, causal=causal, include_embeddings=include_embeddings, recompute=recompute
        )
    else:
        if seq_len is not None:  # it would be ignored without a word: the 6N/8N count has no attention term
            raise ValueError(
                "seq_len needs a model (the attention FLOPs need its layers and width); with "
                "n_params alone there is no attention term"
            )
        if recompute == "selective":  # it would change nothing: the replayed attention is not counted
            raise ValueError(
                "recompute selective replays the attention, which n_params alone does not count (6N): "
                "give a model, or recompute none or full"
            )
        seq_len, seq_source = None, "n_params only: no attention term"
        fpt = flops_per_token(n_params=model, seq_len=1, recompute=recompute)
    dtype = dtype or gpu.half_dtype  # bf16, fp16 on GPUs without bf16 units (V100, T4)
    if (
        dtype in TRAIN_INT_DTYPES
    ):  # the catalog's int8 column is TOPS of inference kernels, not training FLOP/s
        raise ValueError(
            f"dtype must be a floating-point format for training (fp32, tf32, bf16, fp16, fp8), got "
            f"{dtype}: integer formats are for inference"
        )
    peak = gpu.peak_tflops(dtype)
    if mfu is not None:
        util = require_positive("mfu", mfu)
        if util > 1:
            raise ValueError(f"mfu must be in (0, 1], got {mfu}")
        source = f"given utilization {util:.3f}"
    elif profile is not None:
        eff = 1.0 if efficiency is None else require_positive("efficiency", efficiency)
        if eff > 1:
            raise ValueError(f"efficiency must be in (0, 1], got {efficiency}")
        measured = profile.matmul_tflops(dtype)
        if measured > peak:
            raise ValueError(
                f"profile {profile.source} measured {dtype} matmul {measured:.1f} TFLOP/s, above the "
                f"{gpu.name} peak {peak:.1f}: is the profile from another device?"
            )
        util = measured * eff / peak
        source = (
            f"profile {profile.device_name}: measured {dtype} matmul {measured:.1f} TFLOP/s x efficiency "
            f"{eff:.2f}" + (" (upper bound)" if eff == 1.0 else "")
        )
    else:
        util = DEFAULT_MFU
        source = f"assumed utilization {DEFAULT_MFU:.2f} (no mfu or profile given)"
    if (
        recompute != "none" and profile is None and fpt.hardware_flops > fpt.model_flops
    ):  # the flag says mfu; with recompute it is the HFU (Narayanan's X)
        source += (
            f" on the executed FLOPs, {recompute} recompute included: it is the HFU, the MFU is lower "
            f"({fpt.model_flops / fpt.hardware_flops:.3f} x)"
        )
    try:
        flops = tokens * fpt.hardware_flops
        seconds = flops / (n_gpus * peak * 1e12 * util)
    except OverflowError:
        raise overflow_error("tokens x FLOPs per token") from None
    check_finite("tokens x FLOPs per token", flops, tokens * fpt.model_flops, seconds)
    if seconds <= 0:  # n_gpus beyond float range makes the time underflow to 0
        raise ValueError(f"n_gpus is too large for a meaningful time, got {n_gpus}")
    return TrainTime(
        n_params=fpt.n_params + fpt.lm_head_params,
        tokens=tokens,
        gpu=gpu.name,
        n_gpus=n_gpus,
        dtype=dtype,
        recompute=recompute,
        seq_len=seq_len,
        peak_tflops=peak,
        utilization=util,
        utilization_source=source,
        model_flops=tokens * fpt.model_flops,
        flops=flops,
        seconds=seconds,
        seq_len_source=seq_source,
        lm_head_params=fpt.lm_head_params,
    )


# ---------------------------------------------------------------------------------------------------
# Tokens a time budget buys
# ---------------------------------------------------------------------------------------------------
def rate_flops(gpu: str, mfu: float, dtype: str | None = None) -> float:
    """Sustained FLOP/s of one GPU: catalog dense peak x utilization (PaLM sec. 4.1 MFU); dtype
    defaults to the GPU's 16-bit format (bf16, fp16 on V100/T4)."""
    g = as_gpu(gpu)
    m = require_positive("mfu", mfu)
    if m > 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    return g.peak_tflops(dtype or g.half_dtype) * 1e12 * m


def tokens_for_time(
    seconds: float, n_params: float, gpu: str, mfu: float, n_gpus: int = 1, flops_per_param: float = 6.0
) -> float:
    """Tokens trainable in `seconds`: seconds x n_gpus x peak x MFU / (6N) (Kaplan et al. 2020: C = 6ND)."""
    seconds = require_positive("seconds", seconds)
    n_gpus = require_positive_int("n_gpus", n_gpus, at_most=MAX_COUNT)
    per_token = require_positive("flops_per_param", flops_per_param) * require_positive("n_params", n_params)
    return finite_result("tokens", seconds * n_gpus * rate_flops(gpu, mfu) / per_token)
