"""The fitting tricks measured for real: the reference model with and without each trick.

`measure_trick(name, spec)` builds each variant of `trick_configs(name)` (a `RunConfig`), takes one
untimed step (AdamW creates its states at step 1), measures one step with the harness
(gpukit.bench.measure.measure_step: MemTracker; on CUDA the peak is torch.cuda.max_memory_allocated
minus what was allocated before the model existed), then times `steps` steps of all variants
interleaved (time.perf_counter, CUDA synchronized, torch threads set to `threads`; median and
interquartile range). On a shared 2-core CPU times move by 10-50% between runs: read the ratios, not
the digits. One training step for everything: gpukit.bench.models.run_step. Memory in bytes (MiB in
tables), times in seconds (ms in tables). LoRA: Hu et al. 2021 (`apply_lora`).
Used in: gpukit.cli.benchreport, tests/test_tricks.py, notebooks/02_fitting_tricks.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

from gpukit.bench.measure import cuda_baseline, measure_step
from gpukit.bench.timing import percentile
from gpukit.errors import require_choice, require_positive_int
from gpukit.memory import LORA_TARGET_MODULES, TRICKS
from gpukit.results import format_table
from gpukit.specs import ModelSpec
from gpukit.units import MiB


@dataclass(frozen=True)
class RunConfig:
    """One training configuration of the reference model (tokens per step = micro_batch*grad_accum*seq_len)."""

    label: str
    micro_batch: int = 4
    seq_len: int = 64
    grad_accum: int = 1
    precision: str = "fp32"  # fp32 | bf16-mixed (autocast; params, grads, states stay fp32)
    recompute: str = "none"  # none | full
    optimizer: str = "adamw"  # adamw | sgd-momentum | sgd
    lora_rank: int = 0  # 0: full training; r > 0: LoRA on every block Linear, everything else frozen

    def __post_init__(self):
        for name in ("micro_batch", "seq_len", "grad_accum"):
            require_positive_int(name, getattr(self, name))
        require_positive_int("lora_rank", self.lora_rank, allow_zero=True)
        require_choice("precision", self.precision, ("fp32", "bf16-mixed"))
        require_choice("recompute", self.recompute, ("none", "full"))
        require_choice("optimizer", self.optimizer, ("adamw", "sgd-momentum", "sgd"))


@dataclass(frozen=True)
class RunStats:
    """Measured memory (bytes) and step time (seconds) of one RunConfig."""

    label: str
    peak_bytes: int  # steady-state step (the second), all tensors
    params_bytes: int
    grads_bytes: int  # at the end of the last backward
    optimizer_bytes: int  # after the optimizer step
    activations_bytes: int  # alive at the end of the last micro-batch's forward
    trainable_params: int
    total_params: int  # adapters included
    step_median_s: float
    step_q1_s: float
    step_q3_s: float
    step_times_s: tuple
    tokens_per_step: int
    threads: int
    device: str
    method: str
    config: RunConfig = field(repr=False)

    @property
    def step_iqr_s(self) -> float:
        return self.step_q3_s - self.step_q1_s

    def to_json_dict(self) -> dict:
        d = {
            k: getattr(self, k)
            for k in (
                "label",
                "peak_bytes",
                "params_bytes",
                "grads_bytes",
                "optimizer_bytes",
                "activations_bytes",
                "trainable_params",
                "total_params",
                "step_median_s",
                "step_q1_s",
                "step_q3_s",
                "tokens_per_step",
                "threads",
                "device",
                "method",
            )
        }
        d["step_times_s"] = list(self.step_times_s)
        return d


@dataclass(frozen=True)
class TrickResult:
    """Variants of one trick measured on the same model; the first is the baseline."""

    name: str
    variants: tuple  # (RunStats, ...)
    spec_name: str

    @property
    def baseline(self) -> RunStats:
        return self.variants[0]

    @property
    def trick(self) -> RunStats:
        return self.variants[1]

    def peak_saved_fraction(self, i: int = 1) -> float:
        """1 - peak(variant i) / peak(baseline): the share of peak memory the trick removes."""
        return 1 - self.variants[i].peak_bytes / self.baseline.peak_bytes

    def activations_saved_fraction(self, i: int = 1) -> float:
        """1 - activations(variant i) / activations(baseline), both at the end of forward."""
        return 1 - self.variants[i].activations_bytes / self.baseline.activations_bytes

    def time_ratio(self, i: int = 1) -> float:
        """Median step time of variant i / the baseline's (>1: slower)."""
        return self.variants[i].step_median_s / self.baseline.step_median_s

    def time_ratio_estimate(self, i: int = 1):
        """Variant i's step time over the baseline's with its uncertainty: median of the paired
        (interleaved) per-round ratios, a 95% bootstrap interval, and a verdict that says "no
        measurable difference at this size" when the interval contains 1 (gpukit.timing_stats)."""
        from gpukit.timing_stats import ratio_estimate

        return ratio_estimate(self.baseline.step_times_s, self.variants[i].step_times_s, paired=True)

    def to_frame(self):
        import pandas as pd

        b = self.baseline
        return pd.DataFrame(
            [
                {
                    "variant": v.label,
                    "peak_mib": v.peak_bytes / MiB,
                    "params_mib": v.params_bytes / MiB,
                    "grads_mib": v.grads_bytes / MiB,
                    "optimizer_mib": v.optimizer_bytes / MiB,
                    "activations_mib": v.activations_bytes / MiB,
                    "trainable": v.trainable_params,
                    "step_ms": 1e3 * v.step_median_s,
                    "iqr_ms": 1e3 * v.step_iqr_s,
                    "peak_vs_base": v.peak_bytes / b.peak_bytes,
                    "time_vs_base": v.step_median_s / b.step_median_s,
                }
                for v in self.variants
            ]
        )

    def to_json_dict(self) -> dict:
        return {
            "name": self.name,
            "model": self.spec_name,
            "variants": [v.to_json_dict() for v in self.variants],
        }

    def to_text(self) -> str:
        v0 = self.baseline
        head = (
            f"{self.name} on {self.spec_name} ({v0.device.upper()}, {v0.threads} threads, "
            f"median of {len(v0.step_times_s)} steps; {v0.method})"
        )
        rows = [
            (v.label, v.peak_bytes / MiB, 1e3 * v.step_median_s, 1e3 * v.step_iqr_s) for v in self.variants
        ]
        return (
            head
            + "\n"
            + format_table(
                rows,
                ("variant", "peak_mib", "step_ms", "iqr_ms"),
                formats={"variant": str, "peak_mib": "{:.2f}", "step_ms": "{:.1f}", "iqr_ms": "{:.1f}"},
            )
        )


def _lora_module():
    """LoRALinear, defined on first use (torch is imported lazily in this module)."""
    import torch
    from torch import nn

    class LoRALinear(nn.Module):
        """y = base(x) + (x A^T B^T) * alpha/r, base frozen, A ~ Kaiming-uniform, B = 0 (Hu et al.
        2021 sec. 4.1: the update starts at zero; PEFT's default initialisation)."""

        def __init__(self, base: nn.Linear, rank: int, alpha: float | None = None):
            super().__init__()
            self.base, self.rank = base, rank
            self.scaling = (alpha if alpha is not None else 2 * rank) / rank  # alpha = 2r: scaling 2
            base.weight.requires_grad_(False)
            if base.bias is not None:
                base.bias.requires_grad_(False)
            dev = base.weight.device
            self.lora_A = nn.Parameter(torch.empty(rank, base.in_features, device=dev))
            self.lora_B = nn.Parameter(torch.zeros(base.out_features, rank, device=dev))
            nn.init.kaiming_uniform_(self.lora_A, a=5**0.5)

        def forward(self, x):
            return self.base(x) + (x @ self.lora_A.t() @ self.lora_B.t()) * self.scaling

    return LoRALinear


def apply_lora(model, rank: int, targets=LORA_TARGET_MODULES, alpha: float | None = None) -> int:
    """Freeze every parameter of `model` and wrap each block Linear named in `targets` (qkv, proj,
    fc1, fc2 of gpukit.bench.models.Block) in a LoRALinear; returns the number of trainable parameters."""
    from torch import nn

    require_positive_int("lora_rank", rank)
    for name in targets:
        require_choice("LoRA target", name, LORA_TARGET_MODULES)
    LoRALinear = _lora_module()
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.blocks:
        for parent in (block.attn, block.mlp):
            for name, child in list(parent.named_children()):
                if name in targets and isinstance(child, nn.Linear):
                    setattr(parent, name, LoRALinear(child, rank, alpha))
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


@dataclass
class _Run:
    """A built model, optimizer and batches of one RunConfig, and what has been measured of it."""

    cfg: RunConfig
    model: object
    opt: object
    batches: list
    amp: dict
    total: int
    trainable: int
    memory: dict = field(default_factory=dict)
    times: list = field(default_factory=list)


def _prepare(spec: ModelSpec, cfg: RunConfig, device: str, seed: int) -> _Run:
    from gpukit.bench.models import autocast_args, build_reference_model, make_batch, make_optimizer

    if cfg.seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq}, got {cfg.seq_len}")
    model = build_reference_model(spec, recompute=cfg.recompute, device=device, seed=seed)
    trainable = (
        apply_lora(model, cfg.lora_rank) if cfg.lora_rank else sum(p.numel() for p in model.parameters())
    )
    total = sum(p.numel() for p in model.parameters())  # with adapters
    model.train()
    batches = [
        make_batch(spec, cfg.micro_batch, cfg.seq_len, device=device, seed=seed + i)
        for i in range(cfg.grad_accum)
    ]
    amp = autocast_args(device, cfg.precision)
    return _Run(cfg, model, make_optimizer(model, cfg.optimizer), batches, amp, total, trainable)


def _measure_memory(spec: ModelSpec, cfg: RunConfig, device: str, seed: int) -> _Run:
    """Build the run, take step 1 (optimizer states appear), then measure step 2 (measure_step)."""
    import torch

    from gpukit.bench.models import run_step

    base = 0
    if device == "cuda":  # what exists before this model (earlier variants, CUDA context tensors) is not ours
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
    run = _prepare(spec, cfg, device, seed)
    run_step(run.model, run.opt, run.batches, run.amp)
    m = measure_step(run.model, run.opt, run.batches, run.amp, device, base)
    run.memory = {"start": m.start, **m.snaps, "peak": max(m.totals.values())}
    return run


def _stats(run: _Run, threads: int, device: str) -> RunStats:
    q1, med, q3 = (percentile(run.times, q) for q in (25, 50, 75))
    m, cfg = run.memory, run.cfg
    return RunStats(
        label=cfg.label,
        peak_bytes=int(m["peak"]),
        params_bytes=m["start"].get("Parameter", 0),
        grads_bytes=m["backward"].get("Gradient", 0),
        optimizer_bytes=m["optimizer"].get("Optstate", 0),
        activations_bytes=m["forward"].get("Activation", 0),
        trainable_params=int(run.trainable),
        total_params=int(run.total),
        step_median_s=med,
        step_q1_s=q1,
        step_q3_s=q3,
        step_times_s=tuple(run.times),
        tokens_per_step=cfg.micro_batch * cfg.grad_accum * cfg.seq_len,
        threads=threads,
        device=device,
        method="torch.cuda.max_memory_allocated + MemTracker" if device == "cuda" else "MemTracker (CPU)",
        config=cfg,
    )


def run_configs(
    spec: ModelSpec,
    cfgs,
    *,
    steps: int = 5,
    warmup: int = 2,
    threads: int | None = None,
    device: str = "cpu",
    seed: int = 0,
) -> tuple[RunStats, ...]:
    """Measure each RunConfig's memory (one after another), then time them interleaved: round i
    runs one step of every config, so a neighbour's load on a shared machine hits all alike."""
    import torch

    from gpukit.bench.models import run_step

    require_positive_int("steps", steps)
    require_positive_int("warmup", warmup, allow_zero=True)
    require_choice("device", device, ("cpu", "cuda"))
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device cuda requested but torch.cuda.is_available() is False")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    old = torch.get_num_threads()
    threads = require_positive_int("threads", threads) if threads is not None else old
    torch.set_num_threads(threads)
    try:
        if device == "cuda":  # context and cuBLAS workspaces exist before any variant's baseline is read
            cuda_baseline(tuple(dict.fromkeys(c.precision for c in cfgs)), "adamw")
        runs = [_measure_memory(spec, c, device, seed) for c in cfgs]
        for _ in range(warmup):
            for r in runs:
                run_step(r.model, r.opt, r.batches, r.amp)
        for _ in range(steps):
            for r in runs:
                sync()
                t0 = time.perf_counter()
                run_step(r.model, r.opt, r.batches, r.amp)
                sync()
                r.times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)
    return tuple(_stats(r, threads, device) for r in runs)


def run_config(spec: ModelSpec, cfg: RunConfig, **kwargs) -> RunStats:
    """Measure one RunConfig (keyword arguments as `run_configs`)."""
    return run_configs(spec, (cfg,), **kwargs)[0]


def trick_configs(
    name: str,
    *,
    micro_batch: int = 4,
    seq_len: int = 64,
    grad_accum: int = 4,
    precision: str = "fp32",
    lora_rank: int = 8,
) -> tuple[RunConfig, ...]:
    """The RunConfigs compared for trick `name` (baseline first), with everything else equal."""
    require_choice("trick", name, TRICKS)
    base = RunConfig("baseline", micro_batch=micro_batch, seq_len=seq_len, precision=precision)
    if name == "mixed_precision":
        return (
            replace(base, label="fp32", precision="fp32"),
            replace(base, label="bf16 autocast", precision="bf16-mixed"),
        )
    if name == "grad_accum":
        require_positive_int("grad_accum", grad_accum)
        if grad_accum < 2:
            raise ValueError(
                f"grad_accum must be at least 2 to compare with one big micro-batch, got {grad_accum}"
            )
        return (
            replace(
                base,
                label=f"micro-batch {micro_batch * grad_accum} x 1",
                micro_batch=micro_batch * grad_accum,
            ),
            replace(
                base, label=f"micro-batch {micro_batch} x {grad_accum} accumulated", grad_accum=grad_accum
            ),
        )
    if name == "recompute":
        return (replace(base, label="no recompute"), replace(base, label="full recompute", recompute="full"))
    if name == "optimizer":
        return tuple(replace(base, label=o, optimizer=o) for o in ("adamw", "sgd-momentum", "sgd"))
    return (
        replace(base, label="full training"),
        replace(base, label=f"LoRA r={lora_rank}", lora_rank=lora_rank),
    )


def measure_trick(
    name: str,
    spec: ModelSpec,
    *,
    micro_batch: int = 4,
    seq_len: int = 64,
    grad_accum: int = 4,
    precision: str = "fp32",
    lora_rank: int = 8,
    steps: int = 5,
    warmup: int = 2,
    threads: int | None = None,
    device: str = "cpu",
    seed: int = 0,
) -> TrickResult:
    """Measure trick `name` (one of TRICKS) on the reference model `spec`: every variant of
    `trick_configs` with the same seed, batch and step count."""
    cfgs = trick_configs(
        name,
        micro_batch=micro_batch,
        seq_len=seq_len,
        grad_accum=grad_accum,
        precision=precision,
        lora_rank=lora_rank,
    )
    runs = run_configs(spec, cfgs, steps=steps, warmup=warmup, threads=threads, device=device, seed=seed)
    return TrickResult(name, runs, spec.name)


def _ratio_columns(est) -> dict:
    return {
        "time_ratio_paired": est.median,
        "time_ratio_lo": est.lo,
        "time_ratio_hi": est.hi,
        "time_verdict": est.verdict,
    }


def results_frame(results):
    """One row per trick: peak saved, activations saved and time ratio of its first trick variant."""
    import pandas as pd

    rows = []
    for r in results:
        for i in range(1, len(r.variants)):
            rows.append(
                {
                    "trick": r.name,
                    "variant": r.variants[i].label,
                    "vs": r.baseline.label,
                    "peak_saved_pct": 100 * r.peak_saved_fraction(i),
                    "activations_saved_pct": 100 * r.activations_saved_fraction(i),
                    "time_ratio": r.time_ratio(i),
                    **_ratio_columns(r.time_ratio_estimate(i)),
                    "device": r.baseline.device,
                    "threads": r.baseline.threads,
                }
            )
    return pd.DataFrame(rows)
