"""Parallelism views: the pipeline schedule (drawn from gpukit.parallel.schedule's own timeline), a
layout's step breakdown, and the layout search (model, GPU, GPUs, nodes -> ranked layouts + reason).

Thin views over pure functions (gpukit.parallel): `schedule_view()` and `search_view()` wire
controls to `schedule_compute` / `search_compute`; bad input (micro-batches not a multiple of pp with
interleaving, GPUs not whole nodes, an unknown GPU) shows its one-line ValueError instead of the plot.

Used in: notebooks/06_beyond_data_parallel (sections 3, 5, 6).
"""

from __future__ import annotations

from gpukit import catalog
from gpukit import parallel as par
from gpukit.errors import require_positive_int
from gpukit.units import GiB
from gpukit.widgets.base import View, dropdown, number, slider

PART_COLORS = {
    "compute": "tab:blue",
    "elementwise": "tab:cyan",
    "tp_comm": "tab:orange",
    "pp_comm": "tab:olive",
    "bubble": "lightgray",
    "dp_comm": "tab:red",
    "zero3_comm": "tab:purple",
    "optimizer": "tab:green",
}


def plot_schedule(sched: par.Schedule, ax=None, title: str | None = None):
    """Stages x time: one box per forward (blue) and backward (orange) task, labelled with its
    micro-batch; chunks of an interleaved schedule in lighter/darker shades; gaps are the bubble."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba

    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.5 + 0.45 * sched.pp))
    v = sched.virtual_stages
    for t in sched.tasks:
        base = "tab:blue" if t.kind == "F" else "tab:orange"
        alpha = 1.0 - 0.5 * t.chunk / max(v - 1, 1) if v > 1 else 1.0
        ax.broken_barh(
            [(t.start, t.end - t.start)],
            (t.stage - 0.4, 0.8),
            facecolors=to_rgba(base, alpha),
            edgecolor="white",
            linewidth=0.5,
        )
        if (t.end - t.start) >= 0.35 * sched.makespan / max(1, sched.microbatches * v):
            ax.text(
                (t.start + t.end) / 2,
                t.stage,
                str(t.microbatch),
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
    ax.set_yticks(range(sched.pp), [f"stage {s}" for s in range(sched.pp)])
    ax.invert_yaxis()
    ax.set_xlim(0, sched.makespan)
    ax.set_xlabel("time (units of one micro-batch's forward)")
    ax.set_title(
        title
        or (
            f"{'interleaved ' if v > 1 else ''}1F1B: pp={sched.pp}, m={sched.microbatches}, v={v}; "
            f"idle share {sched.bubble_fraction:.1%} (blue forward, orange backward, gaps = bubble)"
        ),
        fontsize=9,
    )
    return ax


def schedule_compute(pp: int = 4, microbatches: int = 8, virtual_stages: int = 1) -> par.Schedule:
    return par.schedule(pp, microbatches, virtual_stages)


def schedule_view(**defaults) -> View:
    d = dict(pp=4, microbatches=8, virtual_stages=1) | defaults
    return View(
        schedule_compute,
        {
            "pp": slider("pp", 1, 16, d["pp"], step=1, integer=True),
            "microbatches": slider("micro-batches", 1, 64, d["microbatches"], step=1, integer=True),
            "virtual_stages": dropdown("v", [1, 2, 3, 4], d["virtual_stages"]),
        },
        render=lambda s: plot_schedule(s),
        title="Pipeline schedule",
    )


def plot_step(est: par.Estimate, ax=None):
    """One horizontal stacked bar: the step split into compute, elementwise, comm by kind, bubble."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 1.6))
    left = 0.0
    for k, v in est.breakdown:
        if v > 0:
            ax.barh(0, v, left=left, color=PART_COLORS.get(k, "k"), label=f"{k} {v / est.step_time_s:.0%}")
            left += v
    ax.set_yticks([])
    ax.set_xlabel("seconds per step")
    ax.set_title(f"{est.config.label()}: {est.tokens_per_s:,.0f} tok/s, MFU {est.mfu:.0%}", fontsize=9)
    ax.legend(ncol=4, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.5))
    return ax


def plot_validation(val, highlight=(), ax=None, clip_pct: float = 100.0):
    """The model's error against each published run (gpukit.parallel.validation_frame), one bar per run;
    runs in `highlight` in blue; the axis stops at +-clip_pct and a larger error is written on its bar."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, max(4.0, 0.2 * len(val))))
    errors = list(val["error"] * 100)
    runs = list(val["run"])
    keep = set(highlight)
    ax.barh(
        runs,
        [max(-clip_pct, min(clip_pct, e)) for e in errors],
        color=["tab:blue" if r in keep else "tab:gray" for r in runs],
    )
    for i, e in enumerate(errors):
        if abs(e) > clip_pct:
            x = 0.95 * clip_pct if e > 0 else -0.95 * clip_pct
            ax.text(x, i, f"{e:+.0f}%", va="center", ha="right" if e > 0 else "left", color="w", fontsize=7)
    for x in (-10, 10):
        ax.axvline(x, color="k", ls=":")
    ax.set_xlim(-clip_pct, clip_pct)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_xlabel("model error vs published (%)")
    ax.invert_yaxis()
    return ax


def search_compute(
    model: str = "llama-2-70b",
    gpu: str = "a100-80gb",
    gpus: int = 16,
    gpus_per_node: int = 8,
    global_batch: int = 64,
    seq_len: int = 4096,
    inter_link: str = "ib-hdr",
    ports_per_node: int | None = None,
) -> par.SearchResult:
    """gpukit.parallel.search for catalog names (the widget's compute function); `ports_per_node` inter-node
    ports per node (None: one per GPU, rail-optimized; 1: one shared NIC)."""
    spec = catalog.get_model(model)
    require_positive_int("gpus", gpus)
    seq_len = require_positive_int("seq_len", seq_len)
    if seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq} of {spec.name}, got {seq_len}")
    return par.search(
        spec,
        gpu,
        gpus,
        gpus_per_node=gpus_per_node,
        global_batch=global_batch,
        seq_len=seq_len,
        inter_link=inter_link,
        ports_per_node=ports_per_node,
    )


def render_search(res: par.SearchResult, top: int = 8):
    """Bar chart of the top layouts' tokens/s with the binding reason of the top three, and the table."""
    import matplotlib.pyplot as plt
    from IPython.display import display

    if not res.ranked:
        return f"no layout fits: {res.enumerated} enumerated, none within {res.cluster}'s memory"
    rows = res.ranked[:top]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1))
    ax.barh(range(len(rows)), [r.estimate.tokens_per_s for r in rows], color="tab:blue")
    ax.set_yticks(range(len(rows)), [r.estimate.config.label() for r in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("predicted tokens/s")
    ax.set_title(
        f"{res.model_name} on {res.gpus} GPUs: {res.fitting} of {res.enumerated} layouts fit", fontsize=9
    )
    for i, r in enumerate(rows[:3]):
        ax.text(0, i, f"  {r.binding}", va="center", fontsize=7, color="white")
    display(fig)
    plt.close(fig)
    df = res.to_frame()
    df["memory_gib"] = df["memory_gib"].round(1)
    return df.head(top)


def search_view(**defaults) -> View:
    d = (
        dict(
            model="llama-2-70b",
            gpu="a100-80gb",
            gpus=16,
            gpus_per_node=8,
            global_batch=64,
            seq_len=4096,
            inter_link="ib-hdr",
            ports_per_node=8,
        )
        | defaults
    )
    inter = [n for n, i in catalog.interconnects().items() if i.scope == "inter-node"]
    return View(
        search_compute,
        {
            "model": dropdown("model", sorted(catalog.models()), d["model"]),
            "gpu": dropdown("GPU", sorted(catalog.gpus()), d["gpu"]),
            "gpus": number("GPUs", d["gpus"], integer=True),
            "gpus_per_node": dropdown("GPUs/node", [1, 2, 4, 8], d["gpus_per_node"]),
            "global_batch": number("global batch", d["global_batch"], integer=True),
            "seq_len": number("seq_len", d["seq_len"], integer=True),
            "inter_link": dropdown("inter-node", inter, d["inter_link"]),
            "ports_per_node": slider("ports/node", 1, 8, d["ports_per_node"], step=1, integer=True),
        },
        render=render_search,
        title="Layout search",
    )


def memory_gib(est: par.Estimate) -> float:
    return est.memory_per_gpu_bytes / GiB


def conventions_compute(
    model: str = "llama-2-70b",
    gpu: str = "a100-80gb",
    grad_dtype: str = "bf16",
    grad_accum_buffer: str = "none",
    zero_stage: int = 1,
    dp: int = 8,
    tp: int = 8,
    pp: int = 4,
    virtual_stages: int = 1,
    grad_accum: int = 16,
    seq_len: int = 4096,
    recompute: str = "selective",
):
    """gpukit.memory with the papers' conventions (issue 10 names: grad_dtype, grad_accum_buffer,
    virtual_stages) for a catalog model on a catalog GPU."""
    from gpukit import memory as mem

    spec = catalog.get_model(model)
    setup = mem.TrainSetup(
        convention="megatron",
        grad_dtype=grad_dtype,
        grad_accum_buffer=grad_accum_buffer,
        zero_stage=zero_stage,
        dp=dp,
        tp=tp,
        pp=pp,
        sp=tp > 1,
        virtual_stages=virtual_stages,
        grad_accum=grad_accum,
        seq_len=seq_len,
        recompute=recompute,
        dropout=spec.dropout,
    )
    return mem.estimate_memory(spec, setup=setup, gpu=catalog.get_gpu(gpu))


def conventions_view(**defaults) -> View:
    """Memory per GPU under Megatron's / the playbook's conventions, drawn like notebook 01's breakdown."""
    from gpukit import memory as mem
    from gpukit.widgets.memory_view import plot_breakdown

    d = (
        dict(
            model="llama-2-70b",
            gpu="a100-80gb",
            grad_dtype="bf16",
            grad_accum_buffer="none",
            zero_stage=1,
            dp=8,
            tp=8,
            pp=4,
            virtual_stages=1,
        )
        | defaults
    )
    return View(
        conventions_compute,
        {
            "model": dropdown("model", sorted(catalog.models()), d["model"]),
            "gpu": dropdown("GPU", sorted(catalog.gpus()), d["gpu"]),
            # bf16-mixed (fixed here) has bf16 or fp32 gradients; fp16 ones are refused by TrainSetup
            "grad_dtype": dropdown("grad_dtype", ("bf16", "fp32"), d["grad_dtype"]),
            "grad_accum_buffer": dropdown(
                "grad_accum_buffer", mem.GRAD_ACCUM_BUFFERS, d["grad_accum_buffer"]
            ),
            "zero_stage": dropdown("ZeRO", [0, 1, 2, 3], d["zero_stage"]),
            "dp": number("dp", d["dp"], integer=True),
            "tp": number("tp", d["tp"], integer=True),
            "pp": number("pp", d["pp"], integer=True),
            "virtual_stages": dropdown("virtual_stages", [1, 2, 4, 5], d["virtual_stages"]),
        },
        render=lambda bd: plot_breakdown(bd),
        title="Memory conventions",
    )
