"""Memory views: where the bytes of a training step go (notebook 01) and what each trick saves (02).

Thin views over pure functions (STYLE principle 2):

- `memory_compute(model, gpu, precision, optimizer, micro_batch, seq_len, recompute, tp, zero_stage,
  dp, pp, sp, attention, inference, batch, params_b, convention)` -> `gpukit.memory.MemoryBreakdown`
  for a catalog model (or a custom parameter count) on a catalog GPU, with the setup of
  `gpukit.memory.resolve_setup` (`memory_setup`: `gpukit memory`'s defaults and notes); `memory_view()`
  puts controls on it (`memory_view_extra_controls`: the issue-8 additions; `memory_shown`: the
  breakdown and the notes, printed under the plot) and draws `plot_breakdown` (one stacked bar, the
  GPU's capacity as a line, the verdict as the title).
- `plot_step_timeline(trace, replay, planning_phase_peaks)`: memory over one training step, measured
  op by op, replayed, and the planning model's phase peaks (notebook 01, section 4).
- `tricks_compute(...)` -> `gpukit.memory.tricks.TrickStack` (baseline, then each chosen trick added on
  top); `tricks_view()` draws `plot_stack`, one stacked bar per row.
- `compare_frame(result)` / `plot_predicted_vs_measured(frame)`: MemTracker's measurement
  (gpukit.bench.measure_validate.compare) beside the eager replay (gpukit.memory.eager), the planning model
  (gpukit.memory, pytorch convention) and the Megatron convention, per category.

Bad input (a micro-batch of 0, tp not dividing the heads, a sequence longer than the model's
positions) is a ValueError: a view shows its one line in place of the plot.

Used in: notebooks/01_what_fits_on_one_gpu (sections 1, 3, 5), notebooks/02_fitting_tricks.
"""

from __future__ import annotations

from gpukit import catalog
from gpukit import memory as mem
from gpukit.errors import require_positive_int
from gpukit.units import GiB
from gpukit.widgets.base import View, dropdown, number, slider

# One colour per component, the same in every memory plot of the course (matplotlib tab10).
COLORS = {
    "params": "tab:blue",
    "grads": "tab:orange",
    "optimizer": "tab:green",
    "activations": "tab:red",
    "logits": "tab:purple",
    "kv_cache": "tab:brown",
    "overhead": "tab:gray",
}
PARTS = tuple(COLORS)


CUSTOM = "custom (parameter count)"  # the model dropdown's entry for a bare parameter count


def memory_setup(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    precision: str | None = "bf16-mixed",
    optimizer: str = "adamw",
    micro_batch: int = 1,
    seq_len: int | None = 1024,
    recompute: str = "none",
    tp: int = 1,
    zero_stage: int = 0,
    dp: int = 1,
    pp: int = 1,
    sp: bool = False,
    attention: str = "flash",
    inference: bool = False,
    batch: int = 1,
    params_b: float = 7.0,
    convention: str = "pytorch",
):
    """(ModelSpec or None, n_params or None, GPU, gpukit.memory.ResolvedSetup) of memory_compute's
    arguments: the memory policy of `gpukit memory` (gpukit.memory.resolve_setup), the same defaults
    and notes. seq_len None: the model's pretraining length; precision None: bf16-mixed, fp16-mixed on
    a GPU without bf16 units; pp > 1: pp micro-batches per step (grad_accum = pp)."""
    card = catalog.get_gpu(gpu)
    require_positive_int("micro_batch", micro_batch)
    require_positive_int("tp", tp)
    spec = n_params = None
    if model != CUSTOM:
        spec = catalog.get_model(model)
        if seq_len is not None and require_positive_int("seq_len", seq_len) > spec.max_seq:
            # positions beyond what the model was built for (its config.json)
            raise ValueError(f"seq_len must be <= max_seq {spec.max_seq} of {spec.name}, got {seq_len}")
    else:
        if not isinstance(params_b, (int, float)) or not params_b > 0:
            raise ValueError(f"params_b must be a positive number of billions, got {params_b!r}")
        n_params = int(params_b * 1e9)
    kw = dict(precision=precision, seq_len=seq_len, tp=tp, pp=pp, attention=attention, convention=convention)
    if inference:  # ZeRO, dp, optimizer and recompute do not apply to serving: not passed
        kw |= dict(inference=True, batch=batch, sp=sp or None)
    else:
        kw |= dict(
            optimizer=optimizer,
            micro_batch=micro_batch,
            recompute=recompute,
            zero_stage=zero_stage,
            dp=dp,
            sp=sp,
        )
    return spec, n_params, card, mem.resolve_setup(spec, gpu=card, n_params=n_params, **kw)


def memory_compute(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    precision: str | None = "bf16-mixed",
    optimizer: str = "adamw",
    micro_batch: int = 1,
    seq_len: int | None = 1024,
    recompute: str = "none",
    tp: int = 1,
    zero_stage: int = 0,
    dp: int = 1,
    pp: int = 1,
    sp: bool = False,
    attention: str = "flash",
    inference: bool = False,
    batch: int = 1,
    params_b: float = 7.0,
    convention: str = "pytorch",
) -> mem.MemoryBreakdown:
    """Per-GPU memory (bytes) of training (or serving) catalog `model` on catalog `gpu`:
    gpukit.memory.estimate_memory with the TrainSetup gpukit.memory.resolve_setup makes of these
    arguments (`memory_setup`), overhead included.

    model CUSTOM uses a bare count of params_b billion parameters (model states only: activations,
    logits and KV cache need a shape). inference=True serves `batch` sequences of seq_len tokens of
    context (weights + KV cache; ZeRO, dp, optimizer and recompute do not apply and are ignored).
    With pp > 1 the step runs pp micro-batches (grad_accum = pp, the fewest that fill a 1F1B
    pipeline), so the first stage holds pp micro-batches of activations (Korthikanti et al. 2022 sec.
    4.2.3). convention: "pytorch" (what eager PyTorch keeps at the peak of a step) or "megatron"."""
    spec, n_params, card, resolved = memory_setup(
        model,
        gpu,
        precision,
        optimizer,
        micro_batch,
        seq_len,
        recompute,
        tp,
        zero_stage,
        dp,
        pp,
        sp,
        attention,
        inference,
        batch,
        params_b,
        convention,
    )
    return mem.estimate_memory(spec, n_params=n_params, setup=resolved.setup, gpu=card)


class ShownMemory:
    """What the memory view shows: the breakdown (its fields read through, view.result.total_bytes) and
    the notes of the memory policy, the same `gpukit memory` prints."""

    def __init__(self, breakdown: mem.MemoryBreakdown, notes: tuple[str, ...]):
        self.breakdown, self.notes = breakdown, notes

    def __getattr__(self, name):
        return getattr(self.breakdown, name)


def memory_shown(**values) -> ShownMemory:
    """memory_compute's breakdown with memory_setup's notes (the view's compute)."""
    spec, n_params, card, resolved = memory_setup(**values)
    return ShownMemory(
        mem.estimate_memory(spec, n_params=n_params, setup=resolved.setup, gpu=card), resolved.notes
    )


def parts_gib(bd: mem.MemoryBreakdown) -> dict[str, float]:
    """The plotted components of a breakdown in GiB (overhead = CUDA context + fragmentation)."""
    return {p: getattr(bd, f"{p}_bytes") / GiB for p in PARTS}


def verdict_text(bd: mem.MemoryBreakdown) -> str:
    """One line: 'fits: 45.1 of 80.0 GiB (56%) on h100-sxm' or 'does NOT fit: ...' (needs a GPU)."""
    if bd.gpu_memory_bytes is None:
        return f"{bd.total_bytes / GiB:.1f} GiB of tensors (no GPU given)"
    word = "fits" if bd.fits else "does NOT fit"
    cap = bd.gpu_memory_bytes / GiB
    return (
        f"{word}: {bd.total_bytes / GiB:.1f} of {cap:.1f} GiB "
        f"({100 * bd.total_bytes / bd.gpu_memory_bytes:.0f}%) on {bd.gpu_name}"
    )


def _bars(ax, rows, capacity_gib=None):
    """Stacked horizontal bars, one per (label, {part: GiB}); the capacity as a dashed line."""
    labels = [label for label, _ in rows]
    right = max([sum(parts.values()) for _, parts in rows] + [capacity_gib or 0.0])
    ax.set_xlim(0, 1.15 * right or 1.0)  # room for the totals written after each bar
    for i, (_, parts) in enumerate(rows):
        left = 0.0
        for p in PARTS:
            v = parts.get(p, 0.0)
            if v > 0:
                ax.barh(
                    i,
                    v,
                    left=left,
                    color=COLORS[p],
                    label=p if p not in ax.get_legend_handles_labels()[1] else None,
                )
                left += v
        ax.text(left, i, f" {left:.1f}", va="center", fontsize=8)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    if capacity_gib:
        ax.axvline(capacity_gib, color="black", ls="--", lw=1, label="GPU memory")
    ax.set_xlabel("GiB per GPU")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)


def plot_breakdown(bd: mem.MemoryBreakdown, ax=None):
    """One stacked bar of a MemoryBreakdown with the GPU's capacity; the verdict is the title."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 2.2))
    s = bd.setup
    label = f"{bd.model_name}\n{s.precision} {s.optimizer}\nb={s.micro_batch} s={s.seq_len} {s.recompute}"
    cap = bd.gpu_memory_bytes / GiB if bd.gpu_memory_bytes else None
    _bars(ax, [(label, parts_gib(bd))], cap)
    ax.set_title(verdict_text(bd), fontsize=10, color="black" if bd.fits in (None, True) else "#b00020")
    ax.figure.tight_layout()
    return ax.figure


def _render_memory(shown):
    bd = shown.breakdown if isinstance(shown, ShownMemory) else shown
    where = (
        f"the peak of a step in eager PyTorch, reached in phase '{bd.peak_phase}'"
        if bd.convention == "pytorch" and bd.peak_phase != "sum"
        else "a sum of parts (papers' convention)"
    )
    print(f"{verdict_text(bd)}; components at {where}")
    if (
        bd.setup.inference is False
        and bd.activations_bytes == 0
        and bd.peak_phase in ("sum", "optimizer")
        and bd.model_name.endswith("params")
    ):
        print("custom parameter count: model states only (activations need a model's shape)")
    for note in getattr(shown, "notes", ()):
        print(f"note: {note}")
    plot_breakdown(bd)


def memory_view(**defaults) -> View:
    """Notebook 01's widget: model (or a custom parameter count), GPU, precision, optimizer,
    micro-batch, sequence, recompute, attention, ZeRO stage, dp, tp, pp, sp, inference (batch and
    context: the KV cache) and the convention -> stacked breakdown and the fits verdict
    (`memory_compute`)."""
    import inspect

    import ipywidgets as widgets

    v = {k: p.default for k, p in inspect.signature(memory_compute).parameters.items()} | defaults
    controls = {
        "model": dropdown("model", [*catalog.models(), CUSTOM], v["model"]),
        "gpu": dropdown("GPU", list(catalog.gpus()), v["gpu"]),
        "micro_batch": slider("micro-batch", 0, 64, v["micro_batch"], integer=True),
        "seq_len": slider("seq_len", 128, 8192, v["seq_len"], 128, integer=True),
        "precision": dropdown("precision", mem.PRECISIONS, v["precision"]),
        "optimizer": dropdown("optimizer", mem.OPTIMIZERS, v["optimizer"]),
        "recompute": dropdown("recompute", mem.RECOMPUTE, v["recompute"]),
        "tp": number("tp", v["tp"], integer=True),
        **memory_view_extra_controls(v, widgets),
    }
    return View(memory_shown, controls, _render_memory, title="Memory of one training step, per GPU")


def memory_view_extra_controls(v: dict, widgets) -> dict:
    """The controls issue 8 added to notebook 01's widget: attention, ZeRO stage, dp, pp, sp,
    inference (batch; seq_len is then the context), a custom parameter count and the convention."""
    return {
        "attention": dropdown("attention", mem.ATTENTION, v["attention"]),
        "zero_stage": dropdown("ZeRO stage", (0, 1, 2, 3), v["zero_stage"]),
        "dp": number("dp", v["dp"], integer=True),
        "pp": number("pp", v["pp"], integer=True),
        "sp": widgets.Checkbox(value=v["sp"], description="sp (with tp)"),
        "inference": widgets.Checkbox(value=v["inference"], description="inference (KV cache)"),
        "batch": slider("batch (inference)", 1, 256, v["batch"], integer=True),
        "params_b": number("params, billions (custom)", v["params_b"]),
        "convention": dropdown("convention", mem.CONVENTIONS, v["convention"]),
    }


# ---- notebook 02: tricks ----------------------------------------------------------------------


def tricks_compute(
    model: str = "llama-2-7b",
    gpu: str = "rtx-4090",
    micro_batch: int = 1,
    seq_len: int = 1024,
    precision: str = "bf16-mixed",
    recompute: str = "full",
    optimizer: str = "adamw",
    finetune: str = "qlora",
    offload: str = "none",
    lora_rank: int = 16,
    grad_accum: int = 1,
    zero_stage: int = 0,
    dp: int = 1,
):
    """gpukit.memory.tricks.trick_stack for catalog names: fp32 AdamW full training, then each chosen trick.
    Defaults: the article's case, a 7B model QLoRA-finetuned on a 24 GB RTX 4090."""
    from gpukit.memory import trick_stack

    spec, card = catalog.get_model(model), catalog.get_gpu(gpu)
    if require_positive_int("seq_len", seq_len) > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq} of {spec.name}, got {seq_len}")
    return trick_stack(
        spec,
        card,
        micro_batch=micro_batch,
        seq_len=seq_len,
        precision=precision,
        recompute=recompute,
        optimizer=optimizer,
        finetune=finetune,
        offload=offload,
        lora_rank=lora_rank,
        grad_accum=grad_accum,
        zero_stage=zero_stage,
        dp=dp,
    )


def stack_time(stack, mfu: float = 0.4):
    """Compute time of one optimizer step for every row of a TrickStack (gpukit.memory.tricks.step_time_estimate)."""
    from gpukit.memory import step_time_estimate

    card = catalog.get_gpu(stack.final.gpu_name)
    spec = catalog.get_model(stack.final.model_name)
    return [step_time_estimate(spec, card, bd.setup, mfu=mfu) for _, bd in stack.rows]


def plot_stack(stack, ax=None, *, mfu: float = 0.4):
    """One stacked bar per row of a TrickStack (baseline first), the GPU's capacity as a line, the host
    RAM that offload needs as a grey bar under each row, and beside it the estimated step time."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, (ax, tax) = plt.subplots(
            1, 2, figsize=(10, 0.7 + 0.6 * len(stack.rows)), width_ratios=(3, 1), sharey=True
        )
    else:
        tax = None
    rows = [(label, parts_gib(bd)) for label, bd in stack.rows]
    _bars(ax, rows, stack.final.gpu_memory_bytes / GiB)
    host = [bd.cpu_bytes / GiB for _, bd in stack.rows]
    if any(h > 0 for h in host):
        right = max(ax.get_xlim()[1], 1.15 * max(host))
        ax.set_xlim(0, right)
        for i, h in enumerate(host):
            if h > 0:
                ax.barh(
                    i + 0.38,
                    h,
                    height=0.22,
                    color="lightgray",
                    edgecolor="dimgray",
                    hatch="//",
                    label="host RAM (offload)"
                    if "host RAM (offload)" not in ax.get_legend_handles_labels()[1]
                    else None,
                )
                ax.text(h, i + 0.38, f" host {h:.0f} GiB", va="center", fontsize=7)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    ax.set_title(
        f"{stack.final.model_name}, all chosen tricks: {verdict_text(stack.final)}",
        fontsize=10,
        color="black" if stack.final.fits else "#b00020",
    )
    if tax is not None:
        times = stack_time(stack, mfu)
        tax.barh(range(len(times)), [t.seconds for t in times], color="tab:cyan")
        for i, t in enumerate(times):
            tax.text(t.seconds, i, f" {t.seconds:.3g} s", va="center", fontsize=7)
        tax.set_xlim(0, 1.35 * max(t.seconds for t in times))
        tax.set_xlabel(f"compute s / optimizer step\n(MFU {mfu:g}, no comm/offload)", fontsize=8)
    ax.figure.tight_layout()
    return ax.figure


def _render_stack(stack):
    print(verdict_text(stack.final))
    if stack.final.cpu_bytes:
        print(f"host RAM needed for offload: {stack.final.cpu_bytes / GiB:.1f} GiB")
    print("time:", stack_time(stack)[-1].to_text())
    plot_stack(stack)


def tricks_view(**defaults) -> View:
    """Notebook 02's widget: toggle tricks on a catalog model and GPU -> modelled memory per step (with the
    host RAM offload needs) and the compute time of one optimizer step."""
    import inspect

    v = {k: p.default for k, p in inspect.signature(tricks_compute).parameters.items()} | defaults
    controls = {
        "model": dropdown("model", list(catalog.models()), v["model"]),
        "gpu": dropdown("GPU", list(catalog.gpus()), v["gpu"]),
        "micro_batch": slider("micro-batch", 1, 32, v["micro_batch"], integer=True),
        "seq_len": slider("seq_len", 128, 8192, v["seq_len"], 128, integer=True),
        "grad_accum": slider("grad accumulation", 1, 64, v["grad_accum"], integer=True),
        "precision": dropdown("precision", ("fp32", "bf16-mixed"), v["precision"]),
        "recompute": dropdown("recompute", mem.RECOMPUTE, v["recompute"]),
        "optimizer": dropdown("optimizer", ("adamw", "adamw-8bit", "sgd-momentum", "sgd"), v["optimizer"]),
        "finetune": dropdown("finetune", mem.FINETUNE, v["finetune"]),
        "lora_rank": slider("LoRA rank", 1, 256, v["lora_rank"], integer=True),
        "zero_stage": dropdown("ZeRO stage", (0, 1, 2, 3), v["zero_stage"]),
        "dp": number("dp", v["dp"], integer=True),
        "offload": dropdown("offload", ("none", "optimizer", "all"), v["offload"]),
    }
    return View(tricks_compute, controls, _render_stack, title="Fitting tricks, modelled (gpukit.memory)")


# ---- notebook 01: predicted vs measured -------------------------------------------------------

CATEGORIES = ("params", "grads", "optimizer", "activations", "peak")


def compare_frame(result: dict):
    """gpukit.bench.measure_validate.compare(...) -> DataFrame, one row per category: measured bytes and each
    model's bytes and error (%): the eager replay ('replay_*', NaN where it does not apply), the
    planning model ('planning_*', gpukit.memory convention pytorch) and the papers' convention
    ('megatron_*'); MiB columns for plotting."""
    import pandas as pd

    missing = [k for k in ("predicted", "planning", "megatron", "measured", "error") if k not in result]
    if missing:
        raise ValueError(
            f"result must be gpukit.bench.measure_validate.compare's dict; missing {', '.join(missing)}"
        )
    m, e, nan = result["measured"], result["error"], float("nan")
    rows = []
    for k in CATEGORIES:
        row = {"category": k, "measured_bytes": int(m[k]), "measured_mib": m[k] / 2**20}
        for key, name in (("predicted", "replay"), ("planning", "planning"), ("megatron", "megatron")):
            d = result[key]
            row[f"{name}_bytes"] = int(d[k]) if d else nan
            row[f"{name}_mib"] = d[k] / 2**20 if d else nan
            row[f"{name}_err_pct"] = 100 * e[key][k] if d else nan
        rows.append(row)
    return pd.DataFrame(rows)


def plot_predicted_vs_measured(frame, ax=None, title: str = ""):
    """Grouped bars per category: measured, the replay, the planning model and the Megatron convention."""
    import matplotlib.pyplot as plt
    import numpy as np

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    x, w = np.arange(len(frame)), 0.2
    for i, (col, label, color) in enumerate(
        (
            ("measured_mib", "measured (MemTracker)", "tab:orange"),
            ("replay_mib", "replay (memory_eager)", "tab:blue"),
            ("planning_mib", "planning model (pytorch)", "tab:green"),
            ("megatron_mib", "Megatron convention", "tab:gray"),
        )
    ):
        ax.bar(x + (i - 1.5) * w, frame[col].fillna(0), w, label=label, color=color)
    ax.set_xticks(x, frame["category"])
    ax.set_ylabel("MiB")
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure


STEP_PHASES = ("forward", "backward", "optimizer")
# Where the planning model's phase peaks sit on the stretched step axis (phase index + position)
_PLAN_SPANS = {
    "forward": (0.6, 1.0),
    "backward-start": (1.0, 1.15),
    "backward-top": (1.1, 1.5),
    "backward-bottom": (1.5, 1.9),
    "backward-end": (1.9, 2.0),
    "optimizer": (2.0, 3.0),
}


def stretch_trace(points) -> tuple[list, list]:
    """((phase, bytes), ...) -> (x, MiB): x = phase index + position inside the phase (0..1), so
    traces with different numbers of events (replay allocations, measured aten ops) line up."""
    xs, ys = [], []
    for i, ph in enumerate(STEP_PHASES):
        ys_ph = [b for p, b in points if p == ph]
        xs += [i + k / max(len(ys_ph), 1) for k in range(len(ys_ph))]
        ys += [y / 2**20 for y in ys_ph]
    return xs, ys


def plot_step_timeline(trace, replay=None, planning_phase_peaks=None, ax=None, title: str = ""):
    """Memory over one training step: the measured op-by-op trace (gpukit.bench.measure.measure_step_trace),
    the replay's timeline (gpukit.memory.eager.replay_timeline) and the planning model's phase peaks
    (MemoryBreakdown.phase_peaks, as dotted segments in their phases)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(*stretch_trace(trace), color="tab:orange", lw=2.5, label="measured (MemTracker, op by op)")
    if replay is not None:
        ax.plot(*stretch_trace(replay), color="tab:blue", lw=1, label="replay (memory_eager)")
    for ph, val in dict(planning_phase_peaks or {}).items():
        ax.hlines(val / 2**20, *_PLAN_SPANS[ph], colors="tab:green", linestyles=":", lw=2)
    if planning_phase_peaks:
        ax.plot([], [], "g:", lw=2, label="planning model, phase peaks")
    ax.set_xticks([0.5, 1.5, 2.5], STEP_PHASES)
    ax.set_ylabel("MiB alive (CPU)")
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    ax.figure.tight_layout()
    return ax.figure


def phase_frame(result: dict):
    """Peak bytes per phase of a step (forward, backward, optimizer): the replay vs measured (MiB)."""
    import pandas as pd

    if not result.get("predicted"):
        raise ValueError("phase_frame needs the replay's phases: the GPT layout with eager attention")
    p, m = result["predicted"]["phase_peaks"], result["measured"]["phase_peaks"]
    return pd.DataFrame(
        [
            {
                "phase": ph,
                "predicted_mib": p[ph] / 2**20,
                "measured_mib": m[ph] / 2**20,
                "error_pct": 100 * (p[ph] - m[ph]) / m[ph] if m[ph] else 0.0,
            }
            for ph in p
        ]
    )


def activation_frame(model: str, seq_len: int, micro_batch: int = 1, dropout: bool | None = None):
    """Activations of one layer and of all layers (GiB) for recompute none/selective/full and eager vs
    flash attention: gpukit.memory.layer_activation_bytes (Korthikanti et al. 2022 Table 2, generalised).
    dropout None: the model row's own recipe (no masks for Llama, Mistral)."""
    import pandas as pd

    spec = catalog.get_model(model)
    rows = []
    for attention in mem.ATTENTION:
        setup = mem.TrainSetup(seq_len=seq_len, micro_batch=micro_batch, attention=attention, dropout=dropout)
        for rc in mem.RECOMPUTE:
            layer = mem.layer_activation_bytes(spec, setup, rc)
            rows.append(
                {
                    "attention": attention,
                    "recompute": rc,
                    "per_layer_gib": layer / GiB,
                    "all_layers_gib": spec.n_layers * layer / GiB,
                    "per_layer_over_sbh": layer / (seq_len * micro_batch * spec.hidden),
                }
            )
    return pd.DataFrame(rows)


def plot_trick_results(results, ax=None):
    """Measured peak (MiB) of every variant of every trick, grouped by trick; time ratio as text."""
    import matplotlib.pyplot as plt

    results = list(results)
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3))
    x, ticks, labels = 0, [], []
    for r in results:
        for i, v in enumerate(r.variants):
            ax.bar(x, v.peak_bytes / 2**20, color="tab:gray" if i == 0 else "tab:green")
            est = r.time_ratio_estimate(i) if i else None
            text = "1x" if est is None else (f"{est.median:.2f}x" if est.measurable else "~1x?")
            ax.text(x, v.peak_bytes / 2**20, text, ha="center", va="bottom", fontsize=7)
            ticks.append(x)
            labels.append(v.label)
            x += 1
        x += 0.6
    ax.set_xticks(ticks, labels, rotation=35, ha="right", fontsize=8)
    ax.set_ylim(0, 1.15 * max((v.peak_bytes for r in results for v in r.variants), default=1) / 2**20)
    ax.set_ylabel("peak MiB (measured)")
    dev = results[0].baseline.device.upper() if results else ""
    ax.set_title(
        f"Each trick, measured on the reference model ({dev}; grey = baseline; labels: step time vs "
        "baseline, ~1x? = no measurable difference)",
        fontsize=9,
    )
    ax.figure.tight_layout()
    return ax.figure


def plot_time_ratios(results, ax=None):
    """Step time of every trick variant over its baseline: the median of the paired (interleaved)
    ratios with its 95% bootstrap interval (gpukit.timing_stats); grey = no measurable difference."""
    import matplotlib.pyplot as plt

    results = list(results)
    rows = [
        (f"{r.name}: {r.variants[i].label}", r.time_ratio_estimate(i))
        for r in results
        for i in range(1, len(r.variants))
    ]
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.2))
    for y, (_label, est) in enumerate(rows):
        color = "tab:gray" if not est.measurable else ("tab:red" if est.median > 1 else "tab:green")
        ax.errorbar(
            est.median,
            y,
            xerr=[[est.median - est.lo], [est.hi - est.median]],
            fmt="o",
            color=color,
            capsize=3,
        )
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)), [lab for lab, _ in rows], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("step time / baseline (median of paired repeats, 95% bootstrap interval)")
    dev = results[0].baseline.device.upper() if results else ""
    ax.set_title(
        f"Time cost of each trick ({dev}); red slower, green faster, grey: no measurable difference",
        fontsize=9,
    )
    ax.figure.tight_layout()
    return ax.figure
