"""Fitting tricks, modelled (pure, no torch): what each trick does to the memory of a training step.

`trick_stack(model, gpu, ...)` starts from fp32 AdamW full training and adds the chosen tricks one
by one through gpukit.memory (mixed precision, recompute, ZeRO-Offload, 8-bit Adam, LoRA, QLoRA,
...); `lora_trainable_params(spec, rank)` counts LoRA's adapter parameters (Hu et al. 2021).
TRICKS names the tricks measured for real by gpukit.bench.measure_tricks (`measure_trick`: the reference
GPT with and without each trick, MemTracker + step times; the measuring half lives there).

    mixed_precision   fp32 vs bf16 autocast (Micikevicius et al. 2018; fp32 master weights kept)
    grad_accum        one micro-batch of b*k sequences vs k micro-batches of b (same tokens per step)
    recompute         none vs full activation checkpointing (Chen et al. 2016; Korthikanti 2022 sec. 4)
    optimizer         AdamW vs SGD with momentum vs plain SGD (optimizer-state bytes)
    lora              full training vs LoRA adapters on every block Linear, base frozen (Hu et al. 2021)

Used in: notebooks/02_fitting_tricks, gpukit/widgets/memory_view.py, gpukit/bench/measure_tricks.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gpukit.catalog import as_gpu, as_model
from gpukit.compute import flops_per_token
from gpukit.errors import MAX_COUNT, require_choice, require_positive_int
from gpukit.memory.analytic import MemoryBreakdown, estimate_memory
from gpukit.memory.train_setup import TrainSetup
from gpukit.specs import ModelSpec
from gpukit.units import GiB

TRICKS = ("mixed_precision", "grad_accum", "recompute", "optimizer", "lora")
LORA_TARGET_MODULES = ("qkv", "proj", "fc1", "fc2")  # every Linear inside a block of models.Block
# Full recompute runs the forward twice: 2N + 2N + 4N = 8N FLOPs per token instead of 6N
# (Chen et al. 2016; Narayanan et al. 2021 sec. 5.1, the 8TP/(nX) time formula): +33% compute.
RECOMPUTE_COMPUTE_RATIO = 8 / 6


# ---- modelled: tricks added one by one (pure) -------------------------------------------------


@dataclass(frozen=True)
class TrickStack:
    """Modelled memory of a baseline and of each trick added on top, in order (bytes per GPU)."""

    rows: tuple  # ((label, gpukit.memory.MemoryBreakdown), ...), the baseline first

    @property
    def baseline(self) -> MemoryBreakdown:
        return self.rows[0][1]

    @property
    def final(self) -> MemoryBreakdown:
        return self.rows[-1][1]

    def to_frame(self):
        import pandas as pd

        recs = []
        for label, bd in self.rows:
            r = {"setup": label}
            r.update({f"{c}_gib": getattr(bd, f"{c}_bytes") / GiB for c in MemoryBreakdown.COMPONENTS})
            r.update(
                total_gib=bd.total_bytes / GiB,
                cpu_gib=bd.cpu_bytes / GiB,
                trainable=bd.trainable_params,
                fits=bd.fits,
            )
            recs.append(r)
        return pd.DataFrame(recs)

    def to_json_dict(self) -> dict:
        return {"rows": [{"setup": label, **bd.to_json_dict()} for label, bd in self.rows]}


def trick_stack(
    model: ModelSpec,
    gpu=None,
    *,
    micro_batch: int = 1,
    seq_len: int = 1024,
    precision: str = "bf16-mixed",
    recompute: str = "none",
    optimizer: str = "adamw",
    finetune: str = "full",
    offload: str = "none",
    lora_rank: int = 16,
    lora_targets: str = "all",
    grad_accum: int = 1,
    zero_stage: int = 0,
    dp: int = 1,
) -> TrickStack:
    """fp32 AdamW full training of `model`, then each chosen trick added in this order: precision,
    recompute, optimizer, finetune (lora | qlora), gradient accumulation (`grad_accum` micro-batches per
    step: the same activations per micro-batch, `grad_accum` x the tokens per step), ZeRO (`zero_stage`
    over `dp` GPUs: Rajbhandari et al. 2019 sec. 5), offload ('optimizer': ZeRO-Offload, Ren et al.
    2021, at least ZeRO stage 1; 'all': ZeRO-Infinity, Rajbhandari et al. 2021, stage 3, parameters
    too). Each row: gpukit.memory.estimate_memory (`cpu_bytes` is the host RAM offload needs)."""
    require_choice("offload", offload, ("none", "optimizer", "all"))
    require_positive_int("grad_accum", grad_accum)
    require_positive_int("dp", dp)
    if zero_stage not in (0, 1, 2, 3) or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be one of 0, 1, 2, 3, got {zero_stage!r}")
    model, gpu = as_model(model), as_gpu(gpu, optional=True)  # catalog names accepted
    setup = TrainSetup(precision="fp32", optimizer="adamw", micro_batch=micro_batch, seq_len=seq_len)
    rows = [("baseline: fp32 AdamW, full", setup)]
    off_stage = {"none": zero_stage, "optimizer": max(zero_stage, 1), "all": 3}[offload]
    steps = (
        (precision != "fp32", f"+ {precision}", dict(precision=precision)),
        (recompute != "none", f"+ recompute {recompute}", dict(recompute=recompute)),
        (optimizer != "adamw", f"+ {optimizer}", dict(optimizer=optimizer)),
        (
            finetune != "full",
            f"+ {'QLoRA (nf4 base)' if finetune == 'qlora' else 'LoRA'} r={lora_rank}",
            dict(finetune=finetune, lora_rank=lora_rank, lora_targets=lora_targets),
        ),
        (grad_accum > 1, f"+ grad accumulation x{grad_accum}", dict(grad_accum=grad_accum)),
        (zero_stage > 0 or dp > 1, f"+ ZeRO-{zero_stage}, dp={dp}", dict(zero_stage=zero_stage, dp=dp)),
        (
            offload == "optimizer",
            "+ ZeRO-Offload (optimizer, grads -> CPU)",
            dict(offload=offload, zero_stage=off_stage),
        ),
        (offload == "all", "+ ZeRO-Infinity (everything -> CPU)", dict(offload=offload, zero_stage=3)),
    )
    for on, label, change in steps:
        if on:
            setup = replace(setup, **change)
            rows.append((label, setup))
    return TrickStack(tuple((label, estimate_memory(model, setup=s, gpu=gpu)) for label, s in rows))


@dataclass(frozen=True)
class StepTimeEstimate:
    """Compute time of one optimizer step on one GPU: tokens x FLOPs per token / (peak x MFU)."""

    tokens_per_gpu: int  # micro_batch x grad_accum x seq_len
    flops_per_token: float  # hardware FLOPs (recompute included)
    peak_tflops: float
    mfu: float
    seconds: float
    note: str

    def to_text(self) -> str:
        return (
            f"~{self.seconds:.3g} s per optimizer step ({self.tokens_per_gpu:,} tokens per GPU x "
            f"{self.flops_per_token / 1e9:.1f} GFLOPs / ({self.peak_tflops:g} TFLOP/s x MFU {self.mfu:g}); {self.note})"
        )


def step_time_estimate(model: ModelSpec, gpu, setup: TrainSetup, *, mfu: float = 0.4) -> StepTimeEstimate:
    """Compute time of one optimizer step of `setup` on catalog `gpu` at utilization `mfu` (an assumption):
    C_token (gpukit.compute.flops_per_token, recompute included: 8N instead of 6N for full) x tokens /
    (peak x MFU) (Narayanan et al. 2021 eq. 4). Leaves out what is not compute: dp all-reduces
    (notebook 04) and offload's PCIe traffic and CPU optimizer step, which ZeRO-Offload overlaps
    (Ren et al. 2021 sec. 5) and ZeRO-Infinity often cannot."""
    model = as_model(model, "model")  # a catalog name too
    gpu = as_gpu(gpu)
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    fpt = flops_per_token(model, seq_len=setup.seq_len, recompute=setup.recompute)
    dtype = "fp32" if setup.precision == "fp32" else "bf16"
    peak = gpu.peak_tflops(dtype)
    tokens = setup.micro_batch * setup.grad_accum * setup.seq_len
    flops = (
        fpt.hardware_flops
    )  # LoRA/QLoRA: counted in full (an upper bound: frozen weights skip their weight gradients)
    secs = tokens * flops / (peak * 1e12 * mfu)
    note = f"{dtype} peak; compute only, no communication or offload traffic"
    return StepTimeEstimate(tokens, flops, peak, mfu, secs, note)


# ---- measured: the reference model with and without a trick ----------------------------------


def lora_trainable_params(spec: ModelSpec, rank: int, targets=LORA_TARGET_MODULES) -> int:
    """r (d_in + d_out) per adapted matrix (Hu et al. 2021), for the reference model's layout: one
    fused QKV Linear h -> 3q (as GPT-2's c_attn with PEFT), proj q -> h, fc1 h -> f, fc2 f -> h."""
    rank = require_positive_int("rank", rank, at_most=MAX_COUNT)
    spec = as_model(spec, "spec")  # a catalog name too
    h, q, f = spec.hidden, spec.q_dim, spec.ffn_hidden
    dims = {"qkv": h + 3 * q, "proj": q + h, "fc1": h + f, "fc2": f + h}
    return spec.n_layers * sum(rank * dims[t] for t in targets)
