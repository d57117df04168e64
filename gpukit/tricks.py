"""Fitting tricks: measured for real on the reference GPT, and modelled where this machine cannot.

Measured (torch imported lazily, inside the functions): `measure_trick(name, spec, ...)` trains the
reference model (gpukit.bench.models) with and without a trick and returns a `TrickResult`: one `RunStats`
per variant with the peak bytes of a steady-state step, the bytes of each category (params, grads,
optimizer states, activations alive at the end of forward) and the median step time.

    mixed_precision   fp32 vs bf16 autocast (Micikevicius et al. 2018; fp32 master weights kept)
    grad_accum        one micro-batch of b*k sequences vs k micro-batches of b (same tokens per step)
    recompute         none vs full activation checkpointing (Chen et al. 2016; Korthikanti 2022 sec. 4)
    optimizer         AdamW vs SGD with momentum vs plain SGD (optimizer-state bytes)
    lora              full training vs LoRA adapters on every block Linear, base frozen (Hu et al. 2021)

How it measures. Memory: one untimed step first (AdamW creates its states at step 1), then one step
under MemTracker (torch.distributed._tools.mem_tracker, every tensor storage by category; CPU and
CUDA); on CUDA the peak is torch.cuda.max_memory_allocated minus what was allocated before the model
existed. Time: `warmup` untimed steps, then `steps` timed steps with time.perf_counter (CUDA:
synchronize first), with torch's thread count set to `threads` and stated; median and interquartile
range are reported. On a shared 2-core CPU the times move by 10-50% between runs: read the ratios,
not the digits, and look at the spread.

Modelled (pure, no torch): `trick_stack(model, gpu, ...)` starts from fp32 AdamW full training and
adds the chosen tricks one by one through gpukit.memory (ZeRO-Offload, 8-bit Adam, QLoRA, ...).

Used in: notebooks/02_fitting_tricks, gpukit/widgets/memory_view.py, gpukit/claims_memory.py.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field, replace

from gpukit import memory as mem
from gpukit.errors import require_choice, require_positive_int
from gpukit.specs import ModelSpec
from gpukit.units import GiB, MiB

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
    def baseline(self) -> mem.MemoryBreakdown:
        return self.rows[0][1]

    @property
    def final(self) -> mem.MemoryBreakdown:
        return self.rows[-1][1]

    def to_frame(self):
        import pandas as pd

        recs = []
        for label, bd in self.rows:
            r = {"setup": label}
            r.update({f"{c}_gib": getattr(bd, f"{c}_bytes") / GiB for c in mem.MemoryBreakdown.COMPONENTS})
            r.update(total_gib=bd.total_bytes / GiB, cpu_gib=bd.cpu_bytes / GiB, trainable=bd.trainable_params,
                     fits=bd.fits)
            recs.append(r)
        return pd.DataFrame(recs)

    def to_json_dict(self) -> dict:
        return {"rows": [{"setup": label, **bd.to_json_dict()} for label, bd in self.rows]}


def trick_stack(model: ModelSpec, gpu=None, *, micro_batch: int = 1, seq_len: int = 1024,
                precision: str = "bf16-mixed", recompute: str = "none", optimizer: str = "adamw",
                finetune: str = "full", offload: str = "none", lora_rank: int = 16,
                lora_targets: str = "all", grad_accum: int = 1, zero_stage: int = 0, dp: int = 1) -> TrickStack:
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
    setup = mem.TrainSetup(precision="fp32", optimizer="adamw", micro_batch=micro_batch, seq_len=seq_len)
    rows = [("baseline: fp32 AdamW, full", setup)]
    off_stage = {"none": zero_stage, "optimizer": max(zero_stage, 1), "all": 3}[offload]
    steps = (
        (precision != "fp32", f"+ {precision}", dict(precision=precision)),
        (recompute != "none", f"+ recompute {recompute}", dict(recompute=recompute)),
        (optimizer != "adamw", f"+ {optimizer}", dict(optimizer=optimizer)),
        (finetune != "full", f"+ {'QLoRA (nf4 base)' if finetune == 'qlora' else 'LoRA'} r={lora_rank}",
         dict(finetune=finetune, lora_rank=lora_rank, lora_targets=lora_targets)),
        (grad_accum > 1, f"+ grad accumulation x{grad_accum}", dict(grad_accum=grad_accum)),
        (zero_stage > 0 or dp > 1, f"+ ZeRO-{zero_stage}, dp={dp}", dict(zero_stage=zero_stage, dp=dp)),
        (offload == "optimizer", "+ ZeRO-Offload (optimizer, grads -> CPU)", dict(offload=offload, zero_stage=off_stage)),
        (offload == "all", "+ ZeRO-Infinity (everything -> CPU)", dict(offload=offload, zero_stage=3)),
    )
    for on, label, change in steps:
        if on:
            setup = replace(setup, **change)
            rows.append((label, setup))
    return TrickStack(tuple((label, mem.estimate_memory(model, setup=s, gpu=gpu)) for label, s in rows))


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
        return (f"~{self.seconds:.3g} s per optimizer step ({self.tokens_per_gpu:,} tokens per GPU x "
                f"{self.flops_per_token / 1e9:.1f} GFLOPs / ({self.peak_tflops:g} TFLOP/s x MFU {self.mfu:g}); {self.note})")


def step_time_estimate(model: ModelSpec, gpu, setup: mem.TrainSetup, *, mfu: float = 0.4) -> StepTimeEstimate:
    """Compute time of one optimizer step of `setup` on catalog `gpu` at utilization `mfu` (an assumption):
    C_token (gpukit.compute.flops_per_token, recompute included: 8N instead of 6N for full) x tokens /
    (peak x MFU) (Narayanan et al. 2021 eq. 4). Leaves out what is not compute: dp all-reduces
    (notebook 04) and offload's PCIe traffic and CPU optimizer step, which ZeRO-Offload overlaps
    (Ren et al. 2021 sec. 5) and ZeRO-Infinity often cannot."""
    from gpukit.compute import flops_per_token

    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    fpt = flops_per_token(model, seq_len=setup.seq_len, recompute=setup.recompute)
    dtype = "fp32" if setup.precision == "fp32" else "bf16"
    peak = gpu.peak_tflops(dtype)
    tokens = setup.micro_batch * setup.grad_accum * setup.seq_len
    flops = fpt.hardware_flops  # LoRA/QLoRA: counted in full (an upper bound: frozen weights skip their weight gradients)
    secs = tokens * flops / (peak * 1e12 * mfu)
    note = f"{dtype} peak; compute only, no communication or offload traffic"
    return StepTimeEstimate(tokens, flops, peak, mfu, secs, note)


# ---- measured: the reference model with and without a trick ----------------------------------

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
        d = {k: getattr(self, k) for k in ("label", "peak_bytes", "params_bytes", "grads_bytes", "optimizer_bytes",
                                           "activations_bytes", "trainable_params", "total_params",
                                           "step_median_s", "step_q1_s", "step_q3_s", "tokens_per_step",
                                           "threads", "device", "method")}
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
        return pd.DataFrame([{
            "variant": v.label, "peak_mib": v.peak_bytes / MiB, "params_mib": v.params_bytes / MiB,
            "grads_mib": v.grads_bytes / MiB, "optimizer_mib": v.optimizer_bytes / MiB,
            "activations_mib": v.activations_bytes / MiB, "trainable": v.trainable_params,
            "step_ms": 1e3 * v.step_median_s, "iqr_ms": 1e3 * v.step_iqr_s,
            "peak_vs_base": v.peak_bytes / b.peak_bytes, "time_vs_base": v.step_median_s / b.step_median_s,
        } for v in self.variants])

    def to_json_dict(self) -> dict:
        return {"name": self.name, "model": self.spec_name, "variants": [v.to_json_dict() for v in self.variants]}

    def to_text(self) -> str:
        v0 = self.baseline
        head = (f"{self.name} on {self.spec_name} ({v0.device.upper()}, {v0.threads} threads, "
                f"median of {len(v0.step_times_s)} steps; {v0.method})")
        lines = [head] + [f"  {v.label:<34} peak {v.peak_bytes / MiB:8.2f} MiB  step {1e3 * v.step_median_s:8.1f} ms "
                          f"(IQR {1e3 * v.step_iqr_s:.1f})" for v in self.variants]
        return "\n".join(lines)


def _lora_module():
    """LoRALinear, defined on first use so that importing gpukit.tricks does not import torch."""
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


def lora_trainable_params(spec: ModelSpec, rank: int, targets=LORA_TARGET_MODULES) -> int:
    """r (d_in + d_out) per adapted matrix (Hu et al. 2021), for the reference model's layout: one
    fused QKV Linear h -> 3q (as GPT-2's c_attn with PEFT), proj q -> h, fc1 h -> f, fc2 f -> h."""
    h, q, f = spec.hidden, spec.q_dim, spec.ffn_hidden
    dims = {"qkv": h + 3 * q, "proj": q + h, "fc1": h + f, "fc2": f + h}
    return spec.n_layers * sum(rank * dims[t] for t in targets)


def _quantiles(xs: list[float]) -> tuple[float, float, float]:
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, statistics.median(xs), q3


def _snapshot_total(mt) -> dict:
    """MemTracker 'current' snapshot summed over devices: {'Parameter': bytes, ..., 'Total': bytes}."""
    out: dict[str, int] = {}
    for dev in mt.get_tracker_snapshot("current").values():
        for k, v in dev.items():
            key = getattr(k, "value", str(k))
            out[key] = out.get(key, 0) + int(v)
    return out


def _peak_total(mt) -> int:
    return sum(int(dev.get("Total", 0)) for dev in mt.get_tracker_snapshot("peak").values())


def _train_step(model, opt, batches, amp: dict, probe=None, tracker=None) -> None:
    """One optimizer step over len(batches) micro-batches (loss / k each, gradients accumulate).
    `probe(phase)` is called at the end of the last forward, of backward and of the optimizer step."""
    import torch

    k = len(batches)
    for i, (idx, targets) in enumerate(batches):
        if tracker is not None:  # MemTracker refuses a second forward of a module without this
            tracker.reset_mod_stats()
        with torch.autocast(**amp):
            loss = model(idx, targets) / k
        if probe and i == k - 1:
            probe("forward")
        loss.backward()
        del loss
    if probe:
        probe("backward")
    opt.step()
    if probe:
        probe("optimizer")
    opt.zero_grad(set_to_none=True)


class _NoHook:
    """Stands in for a hook handle on a frozen parameter (see _skip_frozen)."""

    def remove(self) -> None:
        pass


def _skip_frozen(mt, model) -> None:
    # MemTracker (torch 2.13) registers a gradient hook on every parameter a module forward touches,
    # which raises for frozen ones (LoRA). Marking them as hooked (a private field) skips that; they
    # get no gradient anyway.
    for p in model.parameters():
        if not p.requires_grad:
            mt._param_to_grad_hook_handles[p] = (_NoHook(), _NoHook())


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
    import torch

    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer

    if cfg.seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq}, got {cfg.seq_len}")
    model = build_reference_model(spec, recompute=cfg.recompute, device=device, seed=seed)
    trainable = apply_lora(model, cfg.lora_rank) if cfg.lora_rank else sum(p.numel() for p in model.parameters())
    total = sum(p.numel() for p in model.parameters())  # with adapters
    model.train()
    batches = [make_batch(spec, cfg.micro_batch, cfg.seq_len, device=device, seed=seed + i)
               for i in range(cfg.grad_accum)]
    amp = dict(device_type=device, dtype=torch.bfloat16, enabled=cfg.precision == "bf16-mixed")
    return _Run(cfg, model, make_optimizer(model, cfg.optimizer), batches, amp, total, trainable)


def _measure_memory(spec: ModelSpec, cfg: RunConfig, device: str, seed: int) -> _Run:
    """Build the run, take step 1 (optimizer states appear), then measure step 2 under MemTracker."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    base = 0
    if cuda:  # what exists before this model (earlier variants, CUDA context tensors) is not ours
        sync()
        base = torch.cuda.memory_allocated()
    run = _prepare(spec, cfg, device, seed)
    _train_step(run.model, run.opt, run.batches, run.amp)
    sync()
    seen: dict[str, dict] = {}
    mt = MemTracker()
    _skip_frozen(mt, run.model)
    mt.track_external(run.model, run.opt, *[t for b in run.batches for t in b])
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    with mt:
        seen["start"] = _snapshot_total(mt)
        _train_step(run.model, run.opt, run.batches, run.amp, tracker=mt,
                    probe=lambda ph: seen.__setitem__(ph, _snapshot_total(mt)))
        sync()
        seen["peak"] = torch.cuda.max_memory_allocated() - base if cuda else _peak_total(mt)
    run.memory = seen
    return run


def _stats(run: _Run, threads: int, device: str) -> RunStats:
    q1, med, q3 = _quantiles(run.times)
    m, cfg = run.memory, run.cfg
    return RunStats(
        label=cfg.label, peak_bytes=int(m["peak"]), params_bytes=m["start"].get("Parameter", 0),
        grads_bytes=m["backward"].get("Gradient", 0), optimizer_bytes=m["optimizer"].get("Optstate", 0),
        activations_bytes=m["forward"].get("Activation", 0), trainable_params=int(run.trainable),
        total_params=int(run.total), step_median_s=med, step_q1_s=q1, step_q3_s=q3,
        step_times_s=tuple(run.times), tokens_per_step=cfg.micro_batch * cfg.grad_accum * cfg.seq_len,
        threads=threads, device=device,
        method="torch.cuda.max_memory_allocated + MemTracker" if device == "cuda" else "MemTracker (CPU)",
        config=cfg)


def _cuda_warmup() -> None:
    """Create the CUDA context and the cuBLAS workspaces (fp32 and bf16) before any baseline is read,
    so that the first variant is not charged for them (as gpukit.bench.measure does)."""
    import torch

    for dtype in (torch.float32, torch.bfloat16):
        w = torch.randn(64, 64, device="cuda", dtype=dtype, requires_grad=True)
        (torch.randn(64, 64, device="cuda", dtype=dtype) @ w).sum().backward()
    del w
    torch.cuda.synchronize()


def run_configs(spec: ModelSpec, cfgs, *, steps: int = 5, warmup: int = 2, threads: int | None = None,
                device: str = "cpu", seed: int = 0) -> tuple[RunStats, ...]:
    """Measure each RunConfig's memory (one after another), then time them interleaved: round i
    runs one step of every config, so a neighbour's load on a shared machine hits all alike."""
    import torch

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
        if device == "cuda":
            _cuda_warmup()
        runs = [_measure_memory(spec, c, device, seed) for c in cfgs]
        for _ in range(warmup):
            for r in runs:
                _train_step(r.model, r.opt, r.batches, r.amp)
        for _ in range(steps):
            for r in runs:
                sync()
                t0 = time.perf_counter()
                _train_step(r.model, r.opt, r.batches, r.amp)
                sync()
                r.times.append(time.perf_counter() - t0)
    finally:
        torch.set_num_threads(old)
    return tuple(_stats(r, threads, device) for r in runs)


def run_config(spec: ModelSpec, cfg: RunConfig, **kwargs) -> RunStats:
    """Measure one RunConfig (keyword arguments as `run_configs`)."""
    return run_configs(spec, (cfg,), **kwargs)[0]


def trick_configs(name: str, *, micro_batch: int = 4, seq_len: int = 64, grad_accum: int = 4,
                  precision: str = "fp32", lora_rank: int = 8) -> tuple[RunConfig, ...]:
    """The RunConfigs compared for trick `name` (baseline first), with everything else equal."""
    require_choice("trick", name, TRICKS)
    base = RunConfig("baseline", micro_batch=micro_batch, seq_len=seq_len, precision=precision)
    if name == "mixed_precision":
        return (replace(base, label="fp32", precision="fp32"), replace(base, label="bf16 autocast", precision="bf16-mixed"))
    if name == "grad_accum":
        require_positive_int("grad_accum", grad_accum)
        if grad_accum < 2:
            raise ValueError(f"grad_accum must be at least 2 to compare with one big micro-batch, got {grad_accum}")
        return (replace(base, label=f"micro-batch {micro_batch * grad_accum} x 1", micro_batch=micro_batch * grad_accum),
                replace(base, label=f"micro-batch {micro_batch} x {grad_accum} accumulated", grad_accum=grad_accum))
    if name == "recompute":
        return (replace(base, label="no recompute"), replace(base, label="full recompute", recompute="full"))
    if name == "optimizer":
        return tuple(replace(base, label=o, optimizer=o) for o in ("adamw", "sgd-momentum", "sgd"))
    return (replace(base, label="full training"), replace(base, label=f"LoRA r={lora_rank}", lora_rank=lora_rank))


def measure_trick(name: str, spec: ModelSpec, *, micro_batch: int = 4, seq_len: int = 64, grad_accum: int = 4,
                  precision: str = "fp32", lora_rank: int = 8, steps: int = 5, warmup: int = 2,
                  threads: int | None = None, device: str = "cpu", seed: int = 0) -> TrickResult:
    """Measure trick `name` (one of TRICKS) on the reference model `spec`: every variant of
    `trick_configs` with the same seed, batch and step count."""
    cfgs = trick_configs(name, micro_batch=micro_batch, seq_len=seq_len, grad_accum=grad_accum,
                         precision=precision, lora_rank=lora_rank)
    runs = run_configs(spec, cfgs, steps=steps, warmup=warmup, threads=threads, device=device, seed=seed)
    return TrickResult(name, runs, spec.name)


def _ratio_columns(est) -> dict:
    return {"time_ratio_paired": est.median, "time_ratio_lo": est.lo, "time_ratio_hi": est.hi,
            "time_verdict": est.verdict}


def results_frame(results):
    """One row per trick: peak saved, activations saved and time ratio of its first trick variant."""
    import pandas as pd

    rows = []
    for r in results:
        for i in range(1, len(r.variants)):
            rows.append({"trick": r.name, "variant": r.variants[i].label, "vs": r.baseline.label,
                         "peak_saved_pct": 100 * r.peak_saved_fraction(i),
                         "activations_saved_pct": 100 * r.activations_saved_fraction(i),
                         "time_ratio": r.time_ratio(i), **_ratio_columns(r.time_ratio_estimate(i)),
                         "device": r.baseline.device, "threads": r.baseline.threads})
    return pd.DataFrame(rows)
