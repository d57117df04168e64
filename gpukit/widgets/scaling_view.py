"""Notebook 05's views and plots: DDP's overlap as a Gantt chart, measured scaling beside the model,
and the threshold widget (model, GPU, link, tokens per GPU -> efficiency vs GPUs).

- `plot_overlap(timeline)`: one measured DDP step (gpukit.bench.ddp): forward, backward (from the
  compute-only step), each bucket's all-reduce from hand-off to completion.
- `plot_predicted_overlap(prediction)`: the same picture from gpukit.scaling's StepPrediction.
- `plot_scaling(rows)`: measured tokens/s efficiency per world size beside the predicted one.
- `efficiency_curve(...)` / `threshold_view()`: efficiency vs GPU count from gpukit.scaling, with the
  overlap threshold (tokens per GPU) printed; bad input shows one error line (View).
Used in: notebooks/05_data_parallel_scaling.
"""

from __future__ import annotations

from gpukit.catalog import gpus, interconnects, models
from gpukit.comm import LINK_EFFICIENCY
from gpukit.scaling import GRAD_DTYPE, scaling
from gpukit.widgets.base import View, dropdown, slider

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def plot_overlap(timeline: dict, ax=None, title: str = "one measured DDP step (rank 0)"):
    """Gantt chart of a measured step: forward and backward bars, then one bar per bucket all-reduce
    (start = the hook got the bucket, end = its future completed); the synced backward's end marked."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 3.2))[1]
    comp = timeline.get("compute", {})
    fwd0, fwd1 = timeline.get("fwd_start", 0.0), timeline["fwd_end"]
    ax.barh("forward", (fwd1 - fwd0) * 1e3, left=fwd0 * 1e3, color="tab:blue")
    ax.barh("backward (synced)", (timeline["bwd_end"] - fwd1) * 1e3, left=fwd1 * 1e3, color="tab:orange")
    if comp:
        ax.barh(
            "backward (no_sync)",
            (comp["bwd_end"] - comp["fwd_end"]) * 1e3,
            left=comp["fwd_end"] * 1e3,
            color="tab:orange",
            alpha=0.5,
        )
    for e in sorted(timeline.get("events", []), key=lambda e: e["bucket"]):
        if e.get("end_s") is None:
            continue
        ax.barh(
            f"bucket {e['bucket']} ({e['bytes'] / 2**20:.2f} MiB)",
            (e["end_s"] - e["start_s"]) * 1e3,
            left=e["start_s"] * 1e3,
            color="tab:green",
        )
    ax.axvline(timeline["bwd_end"] * 1e3, color="k", ls="--", lw=1, label="synced backward returns")
    ax.set_xlabel("ms since the step started")
    ax.set_title(title)
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    return ax


def plot_predicted_overlap(pred, ax=None, title: str = "the model's step (gpukit.scaling)"):
    """Gantt chart of a StepPrediction: forward, backward, each bucket from ready to done."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(8, 3.2))[1]
    k = pred.grad_accum
    f0 = (k - 1) * (pred.forward_s + pred.backward_s)
    ax.barh("forward", pred.forward_s * 1e3, left=f0 * 1e3, color="tab:blue")
    ax.barh("backward", pred.backward_s * 1e3, left=(f0 + pred.forward_s) * 1e3, color="tab:orange")
    for b in pred.buckets:
        ax.barh(
            f"bucket {b.index} ({b.bytes / 2**20:.2f} MiB sent)",
            (b.end_s - b.start_s) * 1e3,
            left=b.start_s * 1e3,
            color="tab:green",
        )
        ax.plot([b.ready_s * 1e3], [f"bucket {b.index} ({b.bytes / 2**20:.2f} MiB sent)"], "k|", ms=10)
    ax.axvline((f0 + pred.forward_s + pred.backward_s) * 1e3, color="k", ls="--", lw=1, label="backward ends")
    ax.set_xlabel("ms since the step started (| = bucket ready)")
    ax.set_title(title)
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    return ax


def plot_scaling(rows, ax=None, title: str = "DDP on this machine (CPU, gloo)"):
    """Efficiency (linear axis) per world size: measured points and the model's prediction."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(5.5, 3.5))[1]
    n = [r["ranks"] for r in rows]
    ax.plot(n, [r["efficiency"] for r in rows], "o-", label="measured")
    if all(r.get("predicted_efficiency") is not None for r in rows):
        ax.plot(n, [r["predicted_efficiency"] for r in rows], "s--", label="predicted (gpukit.scaling)")
    ax.set_xlabel("ranks")
    ax.set_ylabel("efficiency = tokens/s / (n x tokens/s at 1)")
    ax.set_ylim(0, 1.15)
    ax.set_xticks(n)
    ax.set_title(title)
    ax.legend()
    return ax


def efficiency_curve(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    link: str = "nvlink4",
    inter_link: str = "ib-ndr",
    ports_per_node: int = 8,
    tokens_per_gpu: float = 4096,
    hook: str = "none",
    overlap: bool = True,
    grad_dtype: str = GRAD_DTYPE,
    max_gpus: int = 512,
    line_share: float = LINK_EFFICIENCY,
):
    """gpukit.scaling over GPU_COUNTS up to `max_gpus` (8 GPUs per node): a ScalingResult. `line_share` is
    the share of each link's line rate a collective reaches (gpukit.comm's LINK_EFFICIENCY, the nccl-tests
    busbw share, by default; 1.0 is the ideal bound); `grad_dtype` the gradients' dtype (GRAD_DTYPE)."""
    counts = [g for g in GPU_COUNTS if g <= max_gpus]
    if not counts:
        raise ValueError(f"max_gpus must be >= 1, got {max_gpus}")
    return scaling(
        model,
        gpu=gpu,
        gpus=counts,
        link=link,
        inter_link=inter_link,
        ports_per_node=ports_per_node,
        tokens_per_gpu=tokens_per_gpu,
        hook=hook,
        overlap=overlap,
        grad_dtype=grad_dtype,
        efficiency=line_share,
    )


def plot_efficiency(res, ax=None):
    """Efficiency vs GPUs (log x, linear y) with the threshold in the title."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    g = [r.gpus for r in res.rows]
    ax.plot(g, [r.efficiency for r in res.rows], "o-")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("efficiency")
    t = res.rows[-1].tokens_per_gpu
    ax.set_title(
        f"{res.model}: hides above {res.threshold_tokens_per_gpu:,.0f} tokens/GPU (now {t:,.0f})", fontsize=9
    )
    return ax


def threshold_view(**defaults) -> View:
    """The threshold widget: model, GPU, links, ports, tokens per GPU, hook, overlap, gradient dtype, share
    of line rate -> efficiency vs GPUs."""
    d = dict(
        model="llama-2-7b",
        gpu="h100-sxm",
        link="nvlink4",
        inter_link="ib-ndr",
        ports_per_node=8,
        tokens_per_gpu=4096,
        hook="none",
        overlap=True,
        grad_dtype=GRAD_DTYPE,
        line_share=LINK_EFFICIENCY,
    )
    d.update(defaults)
    links = sorted(interconnects())
    controls = {
        "model": dropdown("model", sorted(models()), d["model"]),
        "gpu": dropdown("GPU", sorted(gpus()), d["gpu"]),
        "link": dropdown("intra-node", links, d["link"]),
        "inter_link": dropdown("inter-node", links, d["inter_link"]),
        "ports_per_node": slider("ports/node", 1, 8, d["ports_per_node"], step=1, integer=True),
        "tokens_per_gpu": slider("tokens/GPU", 256, 65536, d["tokens_per_gpu"], log=True),
        "hook": dropdown("hook", ["none", "fp16", "powersgd"], d["hook"]),
        "overlap": dropdown("overlap", [True, False], d["overlap"]),
        "grad_dtype": dropdown("gradients", ["bf16", "fp32"], d["grad_dtype"]),
        "line_share": slider("share of line rate", 0.1, 1.0, d["line_share"], step=0.05),
    }
    return View(efficiency_curve, controls, render=plot_efficiency)
