"""Measure the memory of real training steps of the reference GPT and compare with the prediction.

`measure_training_memory(spec, setup)` builds gpukit.bench.models.ReferenceGPT, runs real training steps
(forward, backward, optimizer step, zero_grad(set_to_none=True)) and records, per step and per phase,
what torch.distributed._tools.mem_tracker.MemTracker sees (every tensor storage, by category:
Parameter, Buffer, Gradient, Activation, Temp, Optstate, Other). On CUDA it also reads the caching
allocator (torch.cuda.max_memory_allocated, reset per phase) and subtracts the baseline that exists
before the model is built (CUDA context tensors, cuBLAS workspaces created by a warm-up matmul).
`validate_grid()` runs VALIDATION_GRID and returns predicted vs measured per category.

The same harness measures the fitting tricks (moved here from gpukit.tricks): `measure_trick(name,
spec)` builds each variant of `trick_configs(name)` (a `RunConfig`), takes one untimed step (AdamW
creates its states at step 1), measures one step under MemTracker (on CUDA the peak is
torch.cuda.max_memory_allocated minus what was allocated before the model existed), then times
`steps` steps of all variants interleaved (time.perf_counter, CUDA synchronized, torch threads set
to `threads`; median and interquartile range). On a shared 2-core CPU times move by 10-50% between
runs: read the ratios, not the digits. One training step for everything: gpukit.bench.models.run_step.

Categories are read at the moment they are complete: params at the start of a step, activations at
the end of forward, gradients at the end of backward, optimizer states after the step (temporaries
freed). MemTracker is a private torch module (keep torch pinned); resetting its running peak between
phases uses its private fields `_peak_mem` and `_peak_mem_snap` (torch 2.13).
Used in: gpukit.cli.validate, tests/test_memory_validation.py, tests/test_tricks.py, notebooks 01-02.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

from gpukit.bench.envinfo import env_stamp
from gpukit.bench.timing import percentile
from gpukit.errors import require_choice, require_positive_int
from gpukit.memory_eager import (
    CategoryBreakdown,
    EagerSetup,
    llama_spec,
    predict_training_memory,
    reconcile_megatron,
    reference_spec,
)
from gpukit.results import format_table
from gpukit.specs import ModelSpec
from gpukit.tricks import LORA_TARGET_MODULES, TRICKS
from gpukit.units import MiB

PHASES = ("forward", "backward", "optimizer")
COMPARED = ("params", "grads", "optimizer", "activations", "peak")
TOLERANCE = {"params": 0.02, "grads": 0.02, "optimizer": 0.02, "peak": 0.10}  # the targets


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
        d.update(peak_phase=self.peak_phase, peak_step=self.peak_step, phase_peaks=dict(self.phase_peaks),
                 step_peaks=list(self.step_peaks), peak_breakdown=dict(self.peak_breakdown),
                 buffers=self.buffers_bytes, inputs=self.inputs_bytes, method=self.method,
                 counted=dict(self.counted), device=self.device, tracker_peak=self.tracker_peak_bytes, allocator_peak=self.allocator_peak_bytes, baseline=self.baseline_bytes,
                 wall_s=round(self.wall_s, 3))
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
class _StepMemory:
    """What one measured training step showed: the snapshot at its start, and per phase (forward,
    backward, optimizer) the peak total (the allocator's on CUDA, MemTracker's on CPU), MemTracker's
    peak snapshot, the snapshot at the phase's end, and storage bytes counted from the tensors."""

    start: dict
    totals: dict
    peaks: dict
    snaps: dict
    counted: dict


def _measure_step(model, opt, batches, amp: dict, device: str, baseline: int = 0) -> _StepMemory:
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
    out = _StepMemory({}, {}, {}, {}, {})

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
            out.counted["optimizer"] = _storage_bytes([v for st in opt.state.values() for v in st.values()
                                                       if torch.is_tensor(v)], device)
        if cuda:
            torch.cuda.synchronize()
        out.peaks[phase] = _plain(mt.get_tracker_snapshot("peak"), device)
        out.totals[phase] = torch.cuda.max_memory_allocated() - baseline if cuda else out.peaks[phase]["Total"]
        out.snaps[phase] = _plain(mt.get_tracker_snapshot("current"), device)
        restart_peaks()

    with mt:
        out.start = _plain(mt.get_tracker_snapshot("current"), device)
        restart_peaks()
        # MemTracker refuses a second forward of a module unless its module stats are reset in between
        run_step(model, opt, batches, amp, probe=probe, tracker=mt if len(batches) > 1 else None)
    return out


def _cuda_baseline(precisions=("fp32",), optimizer: str = "adamw") -> int:
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
    """True for the layout gpukit.memory_eager replays (ReferenceGPT: gelu, LayerNorm, learned positions)."""
    return spec.mlp == "gelu" and spec.norm == "layernorm" and spec.position == "learned"


def train_setup(setup: EagerSetup, attention: str = "eager", convention: str = "pytorch"):
    """The gpukit.memory.TrainSetup of one measured step: same shape, precision, optimizer and
    recompute, no dropout, one device, torch's default optimizer implementation for the device.
    attention 'sdpa' is the planning model's 'flash' (a fused kernel that keeps no scores)."""
    from gpukit.memory import TrainSetup

    return TrainSetup(precision=setup.precision, optimizer=setup.optimizer, seq_len=setup.seq_len,
                      micro_batch=setup.micro_batch, recompute=setup.recompute,
                      attention="flash" if attention == "sdpa" else "eager", dropout=False,
                      convention=convention, device=setup.device)


def planning_prediction(spec: ModelSpec, setup: EagerSetup, attention: str = "eager",
                        convention: str = "pytorch"):
    """gpukit.memory.estimate_memory for the measured step (no GPU: tensor bytes only). The
    measurement also holds the input batch (2 x 8 sb bytes of int64 ids) and, for the reference
    models, one bool causal-mask buffer (max_seq^2 bytes) and Llama's rotary tables: those are added
    to the 'params' row here, since the planning model knows only the transformer's tensors."""
    from gpukit.memory import estimate_memory

    return estimate_memory(spec, setup=train_setup(setup, attention, convention))


def _fixed_bytes(spec: ModelSpec, setup: EagerSetup) -> int:
    """Bytes the harness holds besides the model's own tensors: input ids and targets (int64), the
    causal-mask buffer, and the rotary cos/sin tables (fp32, max_seq x head_dim each) of the Llama layout."""
    n = 2 * 8 * setup.seq_len * setup.micro_batch + spec.max_seq ** 2
    if spec.position == "rope":
        n += 2 * 4 * spec.max_seq * spec.head_dim
    return n


def _check_fits(spec: ModelSpec, setup: EagerSetup) -> None:
    """Refuse to run a step whose predicted peak exceeds half of the free memory (shared machines)."""
    import os

    from gpukit.units import fmt_bytes

    need = (predict_training_memory(spec, setup).peak_bytes if is_gpt_layout(spec) else
            planning_prediction(spec, setup).total_bytes)
    if setup.device == "cuda":
        import torch

        free = torch.cuda.mem_get_info()[0]
    else:
        try:
            free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):  # not POSIX: skip the check
            return
    if need > free / 2:
        raise ValueError(f"seq_len/micro_batch too large to measure here: predicted peak {fmt_bytes(need)} "
                         f"exceeds half of the free {setup.device} memory {fmt_bytes(free)}")


def measure_training_memory(spec: ModelSpec, setup: EagerSetup | None = None, steps: int = 2,
                            seed: int = 0, attention: str = "eager") -> MeasuredMemory:
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
        baseline = _cuda_baseline((setup.precision,), setup.optimizer)
    model = build_model(spec, recompute=setup.recompute, attention=attention, device=setup.device, seed=seed)
    model.train()
    opt = make_optimizer(model, setup.optimizer)
    batch = make_batch(spec, setup.micro_batch, setup.seq_len, device=setup.device, seed=seed)
    amp = autocast_args(setup.device, setup.precision)

    step_peaks, best, tracker_peak = [], None, 0
    for step in range(1, steps + 1):
        m = _measure_step(model, opt, [batch], amp, setup.device, baseline)
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
        params_bytes=start.get("Parameter", 0), grads_bytes=snaps["backward"].get("Gradient", 0),
        optimizer_bytes=snaps["optimizer"].get("Optstate", 0),
        activations_bytes=snaps["forward"].get("Activation", 0), buffers_bytes=start.get("Buffer", 0),
        inputs_bytes=start.get("Other", 0), peak_bytes=int(peak), peak_phase=phase, peak_step=peak_step,
        phase_peaks=tuple((p, int(totals[p])) for p in PHASES), step_peaks=tuple(int(x) for x in step_peaks),
        peak_breakdown=tuple((c, peak_snap.get(c, 0)) for c in cats),
        method="MemTracker + torch.cuda.max_memory_allocated" if cuda else "MemTracker (CPU)",
        device=setup.device, tracker_peak_bytes=int(tracker_peak),
        allocator_peak_bytes=int(peak) if cuda else None, baseline_bytes=int(baseline),
        counted=(("params", _storage_bytes(model.parameters(), setup.device)), ("grads", grads),
                 ("optimizer", states)),
        env=tuple(env_stamp(setup.device).items()), wall_s=time.perf_counter() - t0)


def measure_step_trace(spec: ModelSpec, setup: EagerSetup | None = None, attention: str = "eager",
                       seed: int = 0) -> tuple:
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


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured; 0 when both are 0 (e.g. plain SGD has no states)."""
    if measured == 0:
        return 0.0 if predicted == 0 else float("inf")
    return (predicted - measured) / measured


MODELS = ("predicted", "planning", "megatron")  # the replay, the planning model, the paper convention


def planning_categories(spec: ModelSpec, setup: EagerSetup, attention: str = "eager",
                        convention: str = "pytorch") -> dict:
    """The planning model (gpukit.memory.estimate_memory) for one measured step, in the measured
    categories: params, grads, optimizer (model states as the convention sizes them), activations
    (pytorch: alive at the end of the forward; megatron: activations + logits, its sum's terms) and
    peak (its total plus the harness's own tensors, `_fixed_bytes`), with the phase of the peak."""
    from gpukit import memory as mem

    ts = train_setup(setup, attention, convention)
    bd = mem.estimate_memory(spec, setup=ts)
    w, g, o = mem.state_bytes_per_param(ts)
    n = spec.n_params
    acts = (mem.pytorch_forward_end_bytes(spec, ts) if convention == "pytorch"
            else bd.activations_bytes + bd.logits_bytes)
    return {"params": int(w * n), "grads": int(g * n), "optimizer": int(o * n), "activations": int(acts),
            "peak": bd.total_bytes + _fixed_bytes(spec, setup), "peak_phase": bd.peak_phase,
            "phase_peaks": dict(bd.phase_peaks), "convention": convention}


def compare(spec: ModelSpec, setup: EagerSetup, steps: int = 2, seed: int = 0, attention: str = "eager") -> dict:
    """Predict and measure one configuration with three models: 'predicted' (the eager replay,
    gpukit.memory_eager; None where it does not apply: the Llama layout or SDPA attention),
    'planning' (gpukit.memory, pytorch convention) and 'megatron' (gpukit.memory, the papers'
    convention). error[model][category] = (model - measured) / measured."""
    meas = measure_training_memory(spec, setup, steps=steps, seed=seed, attention=attention)
    m = dict(meas.breakdown())
    replay = is_gpt_layout(spec) and attention == "eager"
    out = {"predicted": None}
    if replay:
        pred = predict_training_memory(spec, setup)
        out["predicted"] = {**dict(pred.breakdown()), "peak_phase": pred.peak_phase,
                            "phase_peaks": dict(pred.phase_peaks), "peak_breakdown": dict(pred.peak_breakdown),
                            "megatron_activations": pred.megatron_activation_bytes,
                            "layer_activations": pred.layer_activation_bytes,
                            "activation_formula": pred.activation_formula_bytes}
    out["planning"] = planning_categories(spec, setup, attention, "pytorch")
    out["megatron"] = planning_categories(spec, setup, attention, "megatron")
    err = {k: (None if out[k] is None else {c: relative_error(out[k][c], m[c]) for c in COMPARED}) for k in MODELS}
    config = {"arch": "gpt" if is_gpt_layout(spec) else "llama", "attention": attention,
              "n_layers": spec.n_layers, "hidden": spec.hidden, "n_heads": spec.n_heads,
              "n_kv_heads": spec.n_kv_heads, "ffn_hidden": spec.ffn_hidden, "vocab": spec.vocab,
              "n_params": spec.n_params, "tied": spec.tied_embeddings, **asdict(setup)}
    if attention == "sdpa":  # which fused kernel torch picked (CPU, torch 2.13: flash attention for CPU)
        from gpukit.bench.models import sdpa_kernel

        config["sdpa_kernel"] = sdpa_kernel(setup.device, "bf16" if setup.precision == "bf16-mixed" else "fp32",
                                            spec.n_kv_heads != spec.n_heads)
    measured = {**m, "peak_phase": meas.peak_phase, "phase_peaks": dict(meas.phase_peaks),
                "peak_breakdown": dict(meas.peak_breakdown), "method": meas.method,
                "baseline": meas.baseline_bytes, "wall_s": round(meas.wall_s, 3)}
    return {"config": config, **out, "measured": measured, "error": err, "env": dict(meas.env),
            "reconcile": [list(x) for x in reconcile_megatron(spec, setup)] if replay else []}


def config_label(c: dict) -> str:
    """One line naming a configuration of compare()'s 'config'."""
    kv = f"/kv{c['n_kv_heads']}" if c.get("n_kv_heads", c["n_heads"]) != c["n_heads"] else ""
    return (f"{c.get('arch', 'gpt')}-{c.get('attention', 'eager')} L{c['n_layers']} h{c['hidden']} "
            f"a{c['n_heads']}{kv} V{c['vocab']} s{c['seq_len']} b{c['micro_batch']} {c['recompute']} "
            f"{c['precision']} {c['optimizer']}" + (" tied" if c.get("tied") else ""))


def _grid_entry(L, h, a, V, s, b, rec, prec, opt, tied=False):
    return (reference_spec(n_layers=L, hidden=h, n_heads=a, vocab=V, seq=s, tied_embeddings=tied),
            EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt))


# (layers, hidden, heads, vocab, seq, micro_batch, recompute, precision, optimizer[, tied]):
# dims 64-256, layers 2-4, heads 1-8, micro-batch 1-8, seq 64-512, recompute none/full, fp32/bf16
# autocast, AdamW / SGD momentum / SGD; sized to measure in well under a minute on 2 cores.
VALIDATION_GRID = tuple(_grid_entry(*row) for row in (
    (2, 128, 4, 512, 128, 2, "none", "fp32", "adamw"),
    (2, 128, 4, 512, 128, 2, "full", "fp32", "adamw"),
    (2, 128, 4, 512, 128, 2, "none", "bf16-mixed", "adamw"),
    (2, 128, 4, 512, 128, 2, "full", "bf16-mixed", "adamw"),
    (3, 64, 2, 256, 256, 4, "none", "fp32", "sgd-momentum"),
    (2, 256, 8, 1024, 64, 8, "none", "fp32", "sgd"),
    (4, 96, 3, 384, 192, 1, "none", "bf16-mixed", "sgd-momentum"),
    (2, 64, 4, 512, 512, 1, "none", "fp32", "adamw"),
    (2, 64, 4, 512, 512, 1, "full", "fp32", "sgd"),
    (3, 192, 6, 512, 128, 4, "full", "bf16-mixed", "sgd-momentum"),
    (2, 128, 2, 2048, 64, 4, "none", "bf16-mixed", "sgd"),
    (4, 128, 8, 512, 256, 2, "none", "fp32", "adamw"),
    (2, 128, 4, 512, 128, 2, "none", "fp32", "adamw", True),
    (3, 256, 4, 768, 96, 2, "full", "fp32", "sgd-momentum"),
    (2, 256, 4, 2048, 32, 1, "full", "fp32", "adamw"),  # small activations: the optimizer step peaks
    (2, 64, 1, 512, 128, 1, "full", "bf16-mixed", "adamw"),  # cached bf16 weight casts: forward peaks
))


def _llama_entry(L, h, a, kv, V, s, b, rec, prec, opt, attention):
    return (llama_spec(n_layers=L, hidden=h, n_heads=a, n_kv_heads=kv, vocab=V, seq=s),
            EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt), attention)


# The Llama layout (RMSNorm, SwiGLU, GQA, RoPE, no biases): (layers, hidden, heads, kv heads, vocab, seq,
# micro_batch, recompute, precision, optimizer, attention eager|sdpa). No replay: planning + megatron.
LLAMA_GRID = tuple(_llama_entry(*row) for row in (
    (2, 128, 4, 2, 512, 128, 2, "none", "fp32", "adamw", "eager"),
    (2, 128, 4, 2, 512, 128, 2, "none", "fp32", "adamw", "sdpa"),
    (2, 128, 4, 2, 512, 128, 2, "full", "bf16-mixed", "adamw", "sdpa"),
    (2, 128, 4, 4, 512, 128, 2, "none", "bf16-mixed", "adamw", "eager"),
    (3, 96, 6, 2, 384, 256, 1, "none", "bf16-mixed", "sgd-momentum", "sdpa"),
    (2, 64, 4, 1, 512, 512, 1, "none", "fp32", "adamw", "eager"),
    (2, 256, 8, 2, 1024, 64, 4, "full", "fp32", "sgd", "sdpa"),
    (4, 128, 8, 8, 512, 192, 2, "full", "bf16-mixed", "sgd-momentum", "eager"),
))


def random_configs(n: int, seed: int, arch: str = "gpt"):
    """n configurations drawn at random (shapes, batch, precision, recompute, optimizer and, for the
    Llama layout, kv heads and attention): the check on shapes that no grid or test names. The
    sizes are bounded so that one step measures in a few seconds on 2 CPU cores."""
    import random

    require_choice("arch", arch, ("gpt", "llama"))
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.choice((1, 2, 3, 4, 6, 8))
        d = rng.choice((8, 16, 24, 32))
        L, V = rng.randint(1, 4), rng.choice((128, 320, 512, 1000, 2048))
        s, b = rng.choice((16, 48, 64, 100, 128, 200, 256)), rng.randint(1, 4)
        st = EagerSetup(seq_len=s, micro_batch=b, recompute=rng.choice(("none", "full")),
                        precision=rng.choice(("fp32", "bf16-mixed")),
                        optimizer=rng.choice(("adamw", "sgd-momentum", "sgd")))
        if arch == "gpt":
            out.append((reference_spec(n_layers=L, hidden=a * d, n_heads=a, vocab=V, seq=s,
                                       tied_embeddings=rng.random() < 0.2), st, rng.choice(("eager", "sdpa"))))
        else:
            kv = rng.choice([k for k in (1, 2, 4, 8) if a % k == 0])
            out.append((llama_spec(n_layers=L, hidden=a * d, n_heads=a, n_kv_heads=kv, vocab=V, seq=s), st,
                        rng.choice(("eager", "sdpa"))))
    return tuple(out)


def _entry(e):
    return (*e, "eager") if len(e) == 2 else tuple(e)


def validate_grid(grid=VALIDATION_GRID, device: str = "cpu", steps: int = 2):
    """Predict and measure every (spec, setup[, attention]) in `grid`; one DataFrame row per
    configuration with each model's bytes and relative errors per category (replay columns
    `{k}_pred`/`{k}_err`, NaN where the replay does not apply; `planning_{k}`/`planning_{k}_err`;
    `megatron_{k}`/`megatron_{k}_err`), and whether the targets are met."""
    import dataclasses

    import pandas as pd

    rows = []
    for spec, setup, attention in map(_entry, grid):
        if setup.device != device:
            setup = dataclasses.replace(setup, device=device)
        r = compare(spec, setup, steps=steps, attention=attention)
        row = {"config": config_label(r["config"]), "arch": r["config"]["arch"], "attention": attention}
        nan = float("nan")
        for k in COMPARED:
            row[f"{k}_meas"] = r["measured"][k]
            row[f"{k}_pred"] = r["predicted"][k] if r["predicted"] else nan
            row[f"{k}_err"] = r["error"]["predicted"][k] if r["predicted"] else nan
            for mdl in ("planning", "megatron"):
                row[f"{mdl}_{k}"] = r[mdl][k]
                row[f"{mdl}_{k}_err"] = r["error"][mdl][k]
        row["peak_phase_pred"] = r["predicted"]["peak_phase"] if r["predicted"] else ""
        row["peak_phase_planning"] = r["planning"]["peak_phase"]
        row["peak_phase_meas"] = r["measured"]["peak_phase"]
        row["megatron_act"] = r["predicted"]["megatron_activations"] if r["predicted"] else nan
        replay_ok = (not r["predicted"]) or all(abs(row[f"{k}_err"]) <= tol for k, tol in TOLERANCE.items())
        row["ok"] = bool(replay_ok and abs(row["planning_peak_err"]) <= TOLERANCE["peak"])
        row["wall_s"] = r["measured"]["wall_s"]
        rows.append(row)
    return pd.DataFrame(rows)


def error_table(df) -> "object":
    """Worst and median |error| of the peak per model (replay, planning, megatron) over a
    validate_grid frame, in %, one row per model: the table `make bench` and notebook 01 show."""
    import pandas as pd

    rows = []
    for name, col in (("replay (memory_eager)", "peak_err"), ("planning (pytorch)", "planning_peak_err"),
                      ("megatron convention", "megatron_peak_err")):
        e = df[col].dropna().abs() * 100
        rows.append({"model": name, "configs": int(e.size), "median_abs_err_pct": e.median() if e.size else float("nan"),
                     "max_abs_err_pct": e.max() if e.size else float("nan"),
                     "worst": df.loc[e.idxmax(), "config"] if e.size else "",
                     "within_10pct": int((e <= 10).sum())})
    return pd.DataFrame(rows)


def grid_report(grid=VALIDATION_GRID, device: str = "cpu", print_table: bool = True):
    """Run the validation grid, print a compact table (errors in %) and the max |error| per
    category, and return the full DataFrame (for `make bench`)."""
    df = validate_grid(grid, device=device)
    if print_table:
        cols = (["config"] + [f"{k}_err" for k in COMPARED] + ["planning_peak_err", "megatron_peak_err",
                                                                 "peak_phase_meas", "ok"])
        view = df[cols].copy()
        for k in [f"{k}_err" for k in COMPARED] + ["planning_peak_err", "megatron_peak_err"]:
            view[k] = (100 * view[k]).map(lambda x: "-" if x != x else f"{x:+.2f}%")
        view = view.rename(columns={"peak_err": "replay_peak_err"})
        print(view.to_string(index=False))
        rep = df.dropna(subset=["peak_err"])
        if len(rep):
            worst = {k: f"{100 * rep[f'{k}_err'].abs().max():.2f}% "
                        f"({int((rep[f'{k}_pred'] - rep[f'{k}_meas']).abs().max())} B)" for k in COMPARED}
            print("replay max |error|:", ", ".join(f"{k} {v}" for k, v in worst.items()))
        print(error_table(df).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        print(f"targets: replay params/grads/optimizer 2%, peaks 10% | {df['ok'].sum()}/{len(df)} configs OK"
              f" | {df['wall_s'].sum():.1f} s ({device.upper()} measurement)")
    return df


# ---------------------------------------------------------------------------------------------------
# Fitting tricks measured: the reference model with and without a trick (moved from gpukit.tricks)
# ---------------------------------------------------------------------------------------------------

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
        rows = [(v.label, v.peak_bytes / MiB, 1e3 * v.step_median_s, 1e3 * v.step_iqr_s) for v in self.variants]
        return head + "\n" + format_table(rows, ("variant", "peak_mib", "step_ms", "iqr_ms"),
                                           formats={"variant": str, "peak_mib": "{:.2f}", "step_ms": "{:.1f}",
                                                    "iqr_ms": "{:.1f}"})


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
    trainable = apply_lora(model, cfg.lora_rank) if cfg.lora_rank else sum(p.numel() for p in model.parameters())
    total = sum(p.numel() for p in model.parameters())  # with adapters
    model.train()
    batches = [make_batch(spec, cfg.micro_batch, cfg.seq_len, device=device, seed=seed + i)
               for i in range(cfg.grad_accum)]
    amp = autocast_args(device, cfg.precision)
    return _Run(cfg, model, make_optimizer(model, cfg.optimizer), batches, amp, total, trainable)


def _measure_memory(spec: ModelSpec, cfg: RunConfig, device: str, seed: int) -> _Run:
    """Build the run, take step 1 (optimizer states appear), then measure step 2 (_measure_step)."""
    import torch

    from gpukit.bench.models import run_step

    base = 0
    if device == "cuda":  # what exists before this model (earlier variants, CUDA context tensors) is not ours
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
    run = _prepare(spec, cfg, device, seed)
    run_step(run.model, run.opt, run.batches, run.amp)
    m = _measure_step(run.model, run.opt, run.batches, run.amp, device, base)
    run.memory = {"start": m.start, **m.snaps, "peak": max(m.totals.values())}
    return run


def _stats(run: _Run, threads: int, device: str) -> RunStats:
    q1, med, q3 = (percentile(run.times, q) for q in (25, 50, 75))
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


def run_configs(spec: ModelSpec, cfgs, *, steps: int = 5, warmup: int = 2, threads: int | None = None,
                device: str = "cpu", seed: int = 0) -> tuple[RunStats, ...]:
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
            _cuda_baseline(tuple(dict.fromkeys(c.precision for c in cfgs)), "adamw")
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
