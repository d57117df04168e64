"""Notebook 03's views: time to train (model, GPU, n_gpus, MFU, tokens) and one matmul on the roofline.

Each view is a thin layer over a pure function that the notebook also calls directly:

- `train_time(model, gpu, n_gpus, mfu, tokens_b, seq_len)` -> TrainTimeView: gpukit.compute.time_to_train
  for the choice, and the same run on every catalog GPU (for the bar plot). `train_time_view()`.
- `matmul_roofline(tokens, hidden, gpu, dtype)` -> gpukit.compute.Roofline of (tokens x hidden) @
  (hidden x hidden): decode (few tokens) is memory-bound, prefill and training compute-bound.
  `roofline_view()`; `plot_roofline(ax, ...)` draws a roof for any peak and bandwidth (the notebook
  also draws this CPU's measured points with it).

A bad value (MFU 0, n_gpus 0, seq_len above the model's max_seq) shows one error line (View).
Used in: notebooks/03_compute_and_time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpukit.catalog import get_gpu, get_model, gpus, models
from gpukit.compute import Roofline, TrainTime, roofline_matmul, time_to_train
from gpukit.errors import require_positive, require_positive_int
from gpukit.widgets.base import View, dropdown, number, slider

N_GPUS_OPTIONS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
SEQ_LENS = (512, 1024, 2048, 4096, 8192)
DTYPE = "bf16"  # every time-to-train here is at the GPU's dense bf16 peak (gpukit/data/gpus.csv)


def model_options() -> list[str]:
    """Decoder models of gpukit/data/models.csv with max_seq >= 2048 (what the widget's dropdown lists)."""
    return [n for n, m in models().items() if m.arch == "decoder" and m.max_seq >= 2048]


def gpu_options(dtype: str = DTYPE) -> list[str]:
    """Catalog GPUs with a dense peak for `dtype`."""
    return [n for n, g in gpus().items() if dtype in dict(g.peaks_tflops)]


@dataclass(frozen=True)
class TrainTimeView:
    """time_to_train for the chosen GPU, plus (gpu, days) for the same run on each catalog GPU."""

    model: str
    train: TrainTime
    by_gpu: tuple[tuple[str, float], ...]

    @property
    def days(self) -> float:
        return self.train.days

    @property
    def gpu_hours(self) -> float:
        return self.train.gpu_hours

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.by_gpu), columns=["gpu", "days"])

    def to_json_dict(self) -> dict:
        return {"model": self.model, "train": self.train.to_json_dict(), "by_gpu": dict(self.by_gpu)}


def train_time(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    n_gpus: int = 64,
    mfu: float = 0.4,
    tokens_b: float = 2000.0,
    seq_len: int = 2048,
) -> TrainTimeView:
    """Days and GPU-hours to train `model` on tokens_b billion tokens (Narayanan et al. 2021 eq. 4 via
    gpukit.compute.time_to_train, attention included at seq_len, bf16 peak, perfect scaling)."""
    spec = get_model(model)
    seq_len = require_positive_int("seq_len", seq_len)
    if seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= {model}'s max_seq {spec.max_seq}, got {seq_len}")
    tokens = require_positive("tokens_b", tokens_b) * 1e9
    tt = time_to_train(spec, tokens, get_gpu(gpu), n_gpus, mfu=mfu, seq_len=seq_len, dtype=DTYPE)
    by_gpu = tuple(
        (name, time_to_train(spec, tokens, get_gpu(name), n_gpus, mfu=mfu, seq_len=seq_len, dtype=DTYPE).days)
        for name in gpu_options()
    )
    return TrainTimeView(model=model, train=tt, by_gpu=by_gpu)


def draw_train_time(r: TrainTimeView):
    """Horizontal bars: days on each catalog GPU, the chosen one highlighted."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = r.to_frame().sort_values("days")
    t = r.train
    fig, ax = plt.subplots(figsize=(7, 4))
    colors = ["tab:orange" if g == t.gpu else "tab:gray" for g in df["gpu"]]
    sns.barplot(
        data=df,
        y="gpu",
        x="days",
        hue="gpu",
        palette=dict(zip(df["gpu"], colors, strict=True)),
        legend=False,
        ax=ax,
    )
    ax.set_xscale("log")
    ax.set_xlabel(f"days on {t.n_gpus} GPUs (log scale)")
    ax.set_ylabel("")
    ax.set_title(
        f"{r.model}, {t.tokens / 1e9:,.0f}B tokens, {t.n_gpus} x {t.gpu} at {t.utilization:.0%} MFU:\n"
        f"{t.days:,.1f} days, {t.gpu_hours:,.0f} GPU-hours",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def train_time_view(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    n_gpus: int = 64,
    mfu: float = 0.4,
    tokens_b: float = 2000.0,
    seq_len: int = 2048,
) -> View:
    """The time-to-train widget: model, GPU, n_gpus, MFU, tokens, seq_len -> days + bar plot."""
    controls = {
        "model": dropdown("model", model_options(), model),
        "gpu": dropdown("GPU", gpu_options(), gpu),
        "n_gpus": dropdown("n_gpus", N_GPUS_OPTIONS, n_gpus),
        "mfu": slider("MFU", 0.0, 1.0, mfu, 0.01),
        "tokens_b": number("tokens (billions)", tokens_b),
        "seq_len": dropdown("seq_len", SEQ_LENS, seq_len),
    }
    return View(train_time, controls, draw_train_time, title="Time to train")


# ------------------------------------------------------------------------------------ roofline
def matmul_roofline(
    tokens: float = 1, hidden: int = 4096, gpu: str = "h100-sxm", dtype: str = DTYPE
) -> Roofline:
    """(tokens x hidden) @ (hidden x hidden) on `gpu`'s roofline (Williams et al. 2009): one weight
    matrix applied to `tokens` tokens, as in decode (1 token per sequence) or prefill (thousands)."""
    t = require_positive("tokens", tokens)
    t = max(1, int(round(t)))  # a log slider sends floats
    return roofline_matmul(
        t, hidden, hidden, dtype, get_gpu(gpu), name=f"({t} x {hidden}) @ ({hidden} x {hidden})"
    )


def plot_roofline(
    ax,
    peak_tflops: float,
    bandwidth_gbps: float,
    *,
    label: str = "",
    color: str = "tab:blue",
    intensity_range=(0.1, 1e4),
):
    """Draw min(peak, intensity x bandwidth) on log-log axes (FLOP/byte -> TFLOP/s) and the ridge point."""
    import numpy as np

    x = np.logspace(math.log10(intensity_range[0]), math.log10(intensity_range[1]), 200)
    y = np.minimum(peak_tflops, x * bandwidth_gbps * 1e9 / 1e12)
    ax.plot(x, y, color=color, label=label or f"{peak_tflops:g} TFLOP/s, {bandwidth_gbps:g} GB/s")
    ridge = peak_tflops * 1e12 / (bandwidth_gbps * 1e9)
    ax.axvline(ridge, color=color, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable TFLOP/s")
    return ridge


def draw_roofline(r: Roofline):
    """The GPU's roof with the chosen matmul as a point."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    plot_roofline(
        ax,
        r.peak_tflops,
        r.bandwidth_gbps,
        label=f"roof: {r.peak_tflops:g} TFLOP/s, {r.bandwidth_gbps:g} GB/s",
    )
    ax.plot(
        [r.intensity_flop_per_byte],
        [r.attainable_tflops],
        "o",
        color="tab:orange",
        ms=9,
        label=f"{r.name}: {r.bound}-bound",
    )
    ax.set_title(
        f"{r.intensity_flop_per_byte:.1f} FLOP/byte -> at most {r.attainable_tflops:.1f} TFLOP/s "
        f"({r.attainable_tflops / r.peak_tflops:.0%} of peak), {r.time_s * 1e6:.1f} us",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def roofline_view(tokens: float = 1, hidden: int = 4096, gpu: str = "h100-sxm", dtype: str = DTYPE) -> View:
    """The roofline widget: tokens (log slider), hidden, GPU, dtype -> the matmul's point on the roof."""
    controls = {
        "tokens": slider("tokens (m)", 1, 65536, tokens, log=True),
        "hidden": dropdown("hidden", (1024, 2048, 4096, 8192, 16384), hidden),
        "gpu": dropdown("GPU", gpu_options(dtype), gpu),
        "dtype": dropdown("dtype", ("bf16", "fp16", "fp8", "fp32"), dtype),
    }
    return View(matmul_roofline, controls, draw_roofline, title="A matmul on the roofline")


def mixed_roofline(
    tokens: float = 1,
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    weight_dtype: str = "bf16",
    compute_dtype: str = DTYPE,
):
    """(tokens x hidden) @ (hidden x hidden) of catalog `model` with its weights stored in `weight_dtype` and
    computed in `compute_dtype` (gpukit.compute.cpu_roofline.matmul_roofline_mixed), and whether the model's weights
    alone fit in `gpu`'s memory in that dtype (`fits`)."""
    from gpukit.compute import matmul_roofline_mixed

    t = max(1, int(round(require_positive("tokens", tokens))))
    spec, card = get_model(model), get_gpu(gpu)
    return matmul_roofline_mixed(
        t,
        spec.hidden,
        spec.hidden,
        weight_dtype=weight_dtype,
        compute_dtype=compute_dtype,
        peak_tflops=card.peak_tflops(compute_dtype),
        bandwidth_gbps=card.hbm_bandwidth_gbps,
        model_params=spec.n_params,
        gpu_memory_bytes=card.memory_bytes,
    )


def draw_mixed_roofline(r):
    """The roof of the compute dtype with the matmul as a point; the title says whether the weights fit."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    plot_roofline(
        ax,
        r.peak_tflops,
        r.bandwidth_gbps,
        label=f"roof ({r.compute_dtype}): {r.peak_tflops:g} TFLOP/s, {r.bandwidth_gbps:g} GB/s",
    )
    ax.plot(
        [r.intensity_flop_per_byte],
        [r.attainable_tflops],
        "o",
        color="tab:orange",
        ms=9,
        label=f"({r.tokens} x {r.k}) @ ({r.k} x {r.n}), {r.weight_dtype} weights: {r.bound}-bound",
    )
    fits = ("fits?: yes" if r.fits else "fits?: NO") if r.fits is not None else ""
    weights = (
        f"weights {r.model_weights_bytes / 2**30:.1f} GiB of {r.gpu_memory_bytes / 2**30:.0f} GiB, "
        if r.fits is not None
        else ""
    )
    ax.set_title(
        f"{r.intensity_flop_per_byte:.1f} FLOP/byte -> at most {r.attainable_tflops:.1f} TFLOP/s "
        f"({r.attainable_tflops / r.peak_tflops:.0%} of peak)\n{weights}{fits}",
        fontsize=9,
        color="black" if r.fits in (None, True) else "#b00020",
    )
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def mixed_roofline_view(
    tokens: float = 1,
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    weight_dtype: str = "bf16",
    compute_dtype: str = DTYPE,
) -> View:
    """Roofline widget with the weight dtype apart from the compute dtype, and a fits? flag for the weights."""
    controls = {
        "tokens": slider("tokens (m)", 1, 65536, tokens, log=True),
        "model": dropdown("model", model_options(), model),
        "gpu": dropdown("GPU", gpu_options(compute_dtype), gpu),
        "weight_dtype": dropdown("weights", ("fp32", "bf16", "fp8", "int8", "int4"), weight_dtype),
        "compute_dtype": dropdown("compute", ("bf16", "fp16", "fp8", "fp32"), compute_dtype),
    }
    return View(mixed_roofline, controls, draw_mixed_roofline, title="A weight matmul on the roofline")


def roofline_table(rows, peak_tflops: float, bandwidth_gbps: float, dtype: str = "fp32"):
    """Measured matmul rows (gpukit.bench.matmul) beside the roofline's attainable TFLOP/s for each shape."""
    import pandas as pd

    out = []
    for r in rows:
        roof = roofline_matmul(
            r["m"], r["n"], r["k"], dtype, peak_tflops=peak_tflops, bandwidth_gbps=bandwidth_gbps
        )
        out.append(
            {
                "shape": r["shape"],
                "intensity_flop_per_byte": roof.intensity_flop_per_byte,
                "bound": roof.bound,
                "predicted_tflops": roof.attainable_tflops,
                "measured_tflops": r["tflops"],
                "measured_over_predicted": r["tflops"] / roof.attainable_tflops,
            }
        )
    return pd.DataFrame(out)


def draw_measured_roofline(table, peak_tflops: float, bandwidth_gbps: float, *, label: str, title: str = ""):
    """A roof with measured points (the output of roofline_table)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    plot_roofline(ax, peak_tflops, bandwidth_gbps, label=label, intensity_range=(0.5, 2e3))
    ax.plot(
        table["intensity_flop_per_byte"], table["measured_tflops"], "o", color="tab:orange", label="measured"
    )
    for _, row in table.iterrows():
        ax.annotate(
            row["shape"],
            (row["intensity_flop_per_byte"], row["measured_tflops"]),
            fontsize=7,
            xytext=(4, -10),
            textcoords="offset points",
        )
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
