"""Measure the memory of real training steps of the reference GPT and compare with the prediction.

`measure_training_memory(spec, setup)` builds gpukit.bench.models.ReferenceGPT, runs real training steps
(forward, backward, optimizer step, zero_grad(set_to_none=True)) and records, per step and per phase,
what torch.distributed._tools.mem_tracker.MemTracker sees (every tensor storage, by category:
Parameter, Buffer, Gradient, Activation, Temp, Optstate, Other). On CUDA it also reads the caching
allocator (torch.cuda.max_memory_allocated, reset per phase) and subtracts the baseline that exists
before the model is built (CUDA context tensors, cuBLAS workspaces created by a warm-up matmul).
`measure_step_trace` records MemTracker's total after every aten op of one step.

This module is the harness: `measure_step` is the one memory measurement of gpukit (`cuda_baseline`:
the bytes CUDA holds before a model exists). Built on it, each in its own module (import them from
there): gpukit.bench.measure_validate (`compare`, `validate_grid`, the grids: predicted vs measured
per category) and gpukit.bench.measure_tricks (`measure_trick`, `run_configs`: the fitting tricks
measured and timed).

Categories are read at the moment they are complete: params at the start of a step, activations at
the end of forward, gradients at the end of backward, optimizer states after the step (temporaries
freed). MemTracker is a private torch module (keep torch pinned); resetting its running peak between
phases uses its private fields `_peak_mem` and `_peak_mem_snap` (torch 2.13).
Used in: gpukit.bench.measure_validate, gpukit.bench.measure_tricks, gpukit.cli.validate,
tests/test_memory_validation.py, notebooks/01_what_fits_on_one_gpu.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from gpukit.bench.envinfo import env_stamp
from gpukit.errors import require_choice
from gpukit.memory import CategoryBreakdown, EagerSetup, predict_training_memory, reference_spec
from gpukit.specs import ModelSpec

PHASES = ("forward", "backward", "optimizer")


@dataclass(frozen=True)
class MeasuredMemory(CategoryBreakdown):
    """Measured bytes of real training steps; peak = max over all steps and phases."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int  # alive at the end of forward (last step)
    buffers_bytes: int
    inputs_bytes: int
    peak_bytes: int
    peak_phase: str
    peak_step: int  # 1-based
    phase_peaks: tuple  # ((phase, bytes), ...) of the last step
    step_peaks: tuple  # (bytes, ...) one per step
    peak_breakdown: tuple  # ((category, bytes), ...) MemTracker snapshot at the peak
    method: str
    device: str
    tracker_peak_bytes: int  # MemTracker's peak total (on CPU: = peak_bytes)
    allocator_peak_bytes: int | None  # CUDA: max_memory_allocated - baseline
    baseline_bytes: int  # CUDA: allocated before the model existed; CPU: 0
    counted: tuple  # ((category, bytes), ...) summed from model/optimizer tensors (a cross-check)
    env: tuple  # ((key, value), ...)
    wall_s: float

    def to_json_dict(self) -> dict:
        d = {k: v for k, v in self.breakdown()}
        d.update(
            peak_phase=self.peak_phase,
            peak_step=self.peak_step,
            phase_peaks=dict(self.phase_peaks),
            step_peaks=list(self.step_peaks),
            peak_breakdown=dict(self.peak_breakdown),
            buffers=self.buffers_bytes,
            inputs=self.inputs_bytes,
            method=self.method,
            counted=dict(self.counted),
            device=self.device,
            tracker_peak=self.tracker_peak_bytes,
            allocator_peak=self.allocator_peak_bytes,
            baseline=self.baseline_bytes,
            wall_s=round(self.wall_s, 3),
        )
        return d


def _plain(snap, device_type: str) -> dict:
    """MemTracker snapshot {device: {RefType|'Total': bytes}} -> {'Parameter': bytes, ...} for the
    devices of `device_type` (on CUDA, AdamW's CPU-side step counters are not GPU memory)."""
    out: dict[str, int] = {}
    for dev, dev_snap in snap.items():
        if getattr(dev, "type", str(dev)) != device_type:
            continue
        for k, v in dev_snap.items():
            key = getattr(k, "value", str(k))
            out[key] = out.get(key, 0) + int(v)
    return out


def _storage_bytes(tensors, device_type: str) -> int:
    """Bytes of the distinct storages of `tensors` on `device_type` (CUDA: rounded to 512 B)."""
    seen, total = set(), 0
    for t in tensors:
        if t is None or t.device.type != device_type:
            continue
        st = t.untyped_storage()
        if st.data_ptr() in seen:
            continue
        seen.add(st.data_ptr())
        n = st.nbytes()
        total += -(-n // 512) * 512 if device_type == "cuda" else n
    return total


def _reset_peak(mt) -> None:
    # private fields (torch 2.13): restart the running peak at the current snapshot
    cur = mt.get_tracker_snapshot("current")
    mt._peak_mem = {dev: snap.get("Total", 0) for dev, snap in cur.items()}
    mt._peak_mem_snap = cur


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
class StepMemory:
    """What one measured training step showed: the snapshot at its start, and per phase (forward,
    backward, optimizer) the peak total (the allocator's on CUDA, MemTracker's on CPU), MemTracker's
    peak snapshot, the snapshot at the phase's end, and storage bytes counted from the tensors."""

    start: dict
    totals: dict
    peaks: dict
    snaps: dict
    counted: dict


def measure_step(model, opt, batches, amp: dict, device: str, baseline: int = 0) -> StepMemory:
    """The one memory measurement of gpukit: one training step (gpukit.bench.models.run_step) under a
    fresh MemTracker, the running peak restarted at each phase (and torch.cuda's on CUDA, minus
    `baseline`). Frozen parameters (LoRA) are skipped by MemTracker's gradient hooks."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from gpukit.bench.models import run_step

    cuda = device == "cuda"
    mt = MemTracker()
    _skip_frozen(mt, model)
    mt.track_external(model, opt, *[t for b in batches for t in b])
    out = StepMemory({}, {}, {}, {}, {})

    def restart_peaks():
        _reset_peak(mt)
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def probe(phase):
        """End of a phase: its peak and what is alive; then restart the peaks for the next phase."""
        if phase == "backward":
            out.counted["grads"] = _storage_bytes([p.grad for p in model.parameters()], device)
        elif phase == "optimizer":
            out.counted["optimizer"] = _storage_bytes(
                [v for st in opt.state.values() for v in st.values() if torch.is_tensor(v)], device
            )
        if cuda:
            torch.cuda.synchronize()
        out.peaks[phase] = _plain(mt.get_tracker_snapshot("peak"), device)
        out.totals[phase] = (
            torch.cuda.max_memory_allocated() - baseline if cuda else out.peaks[phase]["Total"]
        )
        out.snaps[phase] = _plain(mt.get_tracker_snapshot("current"), device)
        restart_peaks()

    with mt:
        out.start = _plain(mt.get_tracker_snapshot("current"), device)
        restart_peaks()
        # MemTracker refuses a second forward of a module unless its module stats are reset in between
        run_step(model, opt, batches, amp, probe=probe, tracker=mt if len(batches) > 1 else None)
    return out


def cuda_baseline(precisions=("fp32",), optimizer: str = "adamw") -> int:
    """Run one step of a tiny reference model per precision so that the CUDA context, cuBLAS/cuBLASLt
    workspaces and any other lazily created buffers exist; return the bytes still allocated afterwards."""
    import torch

    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer, train_step

    spec = reference_spec(n_layers=1, hidden=64, n_heads=2, vocab=64, seq=16)
    model = build_reference_model(spec, device="cuda")
    opt = make_optimizer(model, optimizer)
    for precision in precisions:
        train_step(model, opt, make_batch(spec, 2, 16, device="cuda"), precision)
    del model, opt
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def is_gpt_layout(spec: ModelSpec) -> bool:
    """True for the layout gpukit.memory.eager replays (ReferenceGPT: gelu, LayerNorm, learned positions)."""
    return spec.mlp == "gelu" and spec.norm == "layernorm" and spec.position == "learned"


def train_setup(setup: EagerSetup, attention: str = "eager", convention: str = "pytorch"):
    """The gpukit.memory.TrainSetup of one measured step: same shape, precision, optimizer and
    recompute, no dropout, one device, torch's default optimizer implementation for the device.
    attention 'sdpa' is the planning model's 'flash' (a fused kernel that keeps no scores)."""
    from gpukit.memory import TrainSetup

    return TrainSetup(
        precision=setup.precision,
        optimizer=setup.optimizer,
        seq_len=setup.seq_len,
        micro_batch=setup.micro_batch,
        recompute=setup.recompute,
        attention="flash" if attention == "sdpa" else "eager",
        dropout=False,
        convention=convention,
        device=setup.device,
    )


def planning_prediction(
    spec: ModelSpec, setup: EagerSetup, attention: str = "eager", convention: str = "pytorch"
):
    """gpukit.memory.estimate_memory for the measured step (no GPU: tensor bytes only). The
    measurement also holds the input batch (2 x 8 sb bytes of int64 ids) and, for the reference
    models, one bool causal-mask buffer (max_seq^2 bytes) and Llama's rotary tables: those are added
    to the 'params' row here, since the planning model knows only the transformer's tensors."""
    from gpukit.memory import estimate_memory

    return estimate_memory(spec, setup=train_setup(setup, attention, convention))


def _check_fits(spec: ModelSpec, setup: EagerSetup) -> None:
    """Refuse to run a step whose predicted peak exceeds half of the free memory (shared machines)."""
    import os

    from gpukit.units import fmt_bytes

    need = (
        predict_training_memory(spec, setup).peak_bytes
        if is_gpt_layout(spec)
        else planning_prediction(spec, setup).total_bytes
    )
    if setup.device == "cuda":
        import torch

        free = torch.cuda.mem_get_info()[0]
    else:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # not POSIX: skip the check
            return
    if need > free / 2:
        raise ValueError(
            f"seq_len/micro_batch too large to measure here: predicted peak {fmt_bytes(need)} "
            f"exceeds half of the free {setup.device} memory {fmt_bytes(free)}"
        )


def measure_training_memory(
    spec: ModelSpec, setup: EagerSetup | None = None, steps: int = 2, seed: int = 0, attention: str = "eager"
) -> MeasuredMemory:
    """Run `steps` (>= 2, so optimizer states exist) real training steps of the reference model of
    `spec`'s layout (ReferenceGPT or ReferenceLlama, gpukit.bench.models.build_model) with eager or
    SDPA attention and measure params, grads, optimizer states, forward-end activations and the peak."""
    setup = setup or EagerSetup()
    import torch

    from gpukit.bench.models import ATTENTION_KINDS, autocast_args, build_model, make_batch, make_optimizer

    require_choice("attention", attention, ATTENTION_KINDS)

    if steps < 2:
        raise ValueError(f"steps must be >= 2 (optimizer states appear at step 1), got {steps}")
    cuda = setup.device == "cuda"
    if cuda and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch.cuda.is_available() is False")
    if setup.seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq}, got {setup.seq_len}")
    _check_fits(spec, setup)
    t0 = time.perf_counter()
    baseline = 0
    if cuda:
        torch.cuda.empty_cache()
        baseline = cuda_baseline((setup.precision,), setup.optimizer)
    model = build_model(spec, recompute=setup.recompute, attention=attention, device=setup.device, seed=seed)
    model.train()
    opt = make_optimizer(model, setup.optimizer)
    batch = make_batch(spec, setup.micro_batch, setup.seq_len, device=setup.device, seed=seed)
    amp = autocast_args(setup.device, setup.precision)

    step_peaks, best, tracker_peak = [], None, 0
    for step in range(1, steps + 1):
        m = measure_step(model, opt, [batch], amp, setup.device, baseline)
        start, snaps, totals, phase_peaks = m.start, m.snaps, m.totals, m.peaks
        grads, states = m.counted["grads"], m.counted["optimizer"]
        tracker_peak = max(tracker_peak, *(phase_peaks[p]["Total"] for p in PHASES))
        phase = max(PHASES, key=lambda p: totals[p])
        step_peaks.append(totals[phase])
        if best is None or totals[phase] > best[0]:
            best = (totals[phase], phase, step, phase_peaks[phase])
        last = (start, snaps, totals)
    start, snaps, totals = last
    peak, phase, peak_step, peak_snap = best
    cats = ("Parameter", "Buffer", "Gradient", "Activation", "Temp", "Optstate", "Other")
    return MeasuredMemory(
        params_bytes=start.get("Parameter", 0),
        grads_bytes=snaps["backward"].get("Gradient", 0),
        optimizer_bytes=snaps["optimizer"].get("Optstate", 0),
        activations_bytes=snaps["forward"].get("Activation", 0),
        buffers_bytes=start.get("Buffer", 0),
        inputs_bytes=start.get("Other", 0),
        peak_bytes=int(peak),
        peak_phase=phase,
        peak_step=peak_step,
        phase_peaks=tuple((p, int(totals[p])) for p in PHASES),
        step_peaks=tuple(int(x) for x in step_peaks),
        peak_breakdown=tuple((c, peak_snap.get(c, 0)) for c in cats),
        method="MemTracker + torch.cuda.max_memory_allocated" if cuda else "MemTracker (CPU)",
        device=setup.device,
        tracker_peak_bytes=int(tracker_peak),
        allocator_peak_bytes=int(peak) if cuda else None,
        baseline_bytes=int(baseline),
        counted=(
            ("params", _storage_bytes(model.parameters(), setup.device)),
            ("grads", grads),
            ("optimizer", states),
        ),
        env=tuple(env_stamp(setup.device).items()),
        wall_s=time.perf_counter() - t0,
    )


def measure_step_trace(
    spec: ModelSpec, setup: EagerSetup | None = None, attention: str = "eager", seed: int = 0
) -> tuple:
    """((phase, bytes), ...): MemTracker's running total after every aten op of one steady-state
    training step (the second step: the optimizer states exist), on CPU. A TorchDispatchMode entered
    inside MemTracker sees every op (backward ones too) and reads MemTracker's current total after it,
    so the trace is what the allocator held op by op (plot it beside memory_eager.replay_timeline)."""
    setup = setup or EagerSetup()
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker
    from torch.utils._python_dispatch import TorchDispatchMode

    from gpukit.bench.models import ATTENTION_KINDS, build_model, make_batch, make_optimizer, train_step

    require_choice("attention", attention, ATTENTION_KINDS)
    if setup.device != "cpu":
        raise ValueError(f"device must be cpu for the op-by-op trace, got {setup.device}")
    _check_fits(spec, setup)
    model = build_model(spec, recompute=setup.recompute, attention=attention, seed=seed)
    opt = make_optimizer(model, setup.optimizer)
    batch = make_batch(spec, setup.micro_batch, setup.seq_len, seed=seed)
    train_step(model, opt, batch, setup.precision)  # step 1 creates the optimizer states
    trace, state = [], {"phase": "forward"}
    mt = MemTracker()

    class _Trace(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            trace.append((state["phase"], _plain(mt.get_tracker_snapshot("current"), "cpu").get("Total", 0)))
            return out

    mt.track_external(model, opt, *batch)
    with mt, _Trace():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=setup.precision == "bf16-mixed"):
            loss = model(*batch)
        state["phase"] = "backward"
        loss.backward()
        state["phase"] = "optimizer"
        opt.step()
        opt.zero_grad(set_to_none=True)
    return tuple(trace)
