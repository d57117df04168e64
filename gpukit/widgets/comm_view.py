"""Notebook 04's views and plots: all-reduce time and bandwidth vs message size, measured vs fitted.

- `allreduce_curves(link, size_mib, n_ranks, gpus_per_node, intra, nics, algorithm, op)` ->
  gpukit.comm.CollectiveCurves (computed by the pure `gpukit.comm.collective_curves`): the alpha-beta
  collective (an all-reduce is hierarchical when gpus_per_node > 1) over a size sweep, with algbw,
  busbw, the layout's bandwidth bound and the chosen size. `allreduce_view()` is its widget.
- `plot_interconnects()`: the catalog's links side by side (bandwidth and latency).
- `plot_sweep(rows, holdout)`: a measured collective sweep with the fitted alpha-beta curve laid
  over it and the held-out sizes marked. `plot_netlab(results)`: measured busbw vs configured rate.
- `plot_ddp_scaling(...)`: DDP speedup vs GPU count over several links (gpukit.scaling.ddp_step_estimate).

A bad value (n_ranks not a multiple of gpus_per_node, size 0) shows one error line (View).
Used in: notebooks/04_communication.
"""

from __future__ import annotations

from gpukit.catalog import frame, get_interconnect, interconnects
from gpukit.comm import CURVE_OPS, NICS, CollectiveCurves, collective_curves
from gpukit.comm import SWEEP_SIZES as SWEEP_SIZES
from gpukit.errors import require_positive
from gpukit.units import GB, MiB
from gpukit.widgets.base import View, dropdown, number, slider

GPUS_PER_NODE = (1, 2, 4, 8)
# The curves are computed in gpukit.comm (pure); these names stay importable from here.
AllReduceCurves = CollectiveCurves


def allreduce_curves(
    link: str = "ib-ndr",
    size_mib: float = 256.0,
    n_ranks: int = 16,
    gpus_per_node: int = 8,
    intra: str = "nvlink4",
    nics: str = "per GPU",
    algorithm: str = "ring",
    op: str = "all_reduce",
) -> CollectiveCurves:
    """gpukit.comm.collective_curves with the size in MiB (the widget's slider): `op` (all-reduce by
    default; hierarchical when gpus_per_node > 1) over 1 KiB..16 GiB, algbw, busbw, the chosen size, one
    GPU's network port and the bandwidth bound of the layout."""
    size = require_positive("size_mib", size_mib) * MiB
    return collective_curves(op, link, size, n_ranks, gpus_per_node, intra, nics, algorithm)


def draw_allreduce(r: CollectiveCurves):
    """Time vs size (left) and algbw/busbw vs size (right), log axes, the chosen size marked; on the right
    the layout's bandwidth bound (dashed: busbw as the size grows, no latency) and one GPU's network port
    (dotted). A hierarchical all-reduce's busbw can sit above the port: most of its bytes cross NVLink."""
    import matplotlib.pyplot as plt

    from gpukit.units import fmt_bytes, fmt_seconds

    df = r.to_frame()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    a1.plot(df["size_bytes"], df["time_s"], color="tab:blue")
    a1.plot([r.size_bytes], [r.time_s], "o", color="tab:orange", ms=8)
    name = r.op.replace("_", "-")
    a1.set(
        xscale="log", yscale="log", xlabel="message size S (bytes)", ylabel="time (s)", title=f"{name} time"
    )
    a2.plot(df["size_bytes"], df["algbw_gbps"], label="algbw = S / t", color="tab:blue")
    a2.plot(df["size_bytes"], df["busbw_gbps"], label="busbw = algbw x busbw factor", color="tab:green")
    a2.axhline(
        r.bound_busbw_gbps,
        color="black",
        ls="--",
        lw=1,
        label=f"bound of this layout: {r.bound_busbw_gbps:.3g} GB/s busbw",
    )
    a2.axhline(
        r.link_gbps, color="gray", ls=":", lw=1, label=f"one GPU's {r.link} port: {r.link_gbps:.3g} GB/s"
    )
    a2.plot([r.size_bytes, r.size_bytes], [r.algbw_gbps, r.busbw_gbps], "o", color="tab:orange", ms=8)
    a2.set(xscale="log", yscale="log", xlabel="message size S (bytes)", ylabel="GB/s", title="bandwidth")
    a2.legend(fontsize=8, loc="lower right")
    how = (
        f"{r.n_nodes} nodes x {r.gpus_per_node} ({r.intra} inside, {r.link} {r.nics} across)"
        if r.gpus_per_node > 1
        else f"{r.n_ranks} ranks over {r.link}"
    )
    fig.suptitle(
        f"{fmt_bytes(r.size_bytes)} {name}, {how}, {r.layout} {r.algorithm}: {fmt_seconds(r.time_s)}, "
        f"busbw {r.busbw_gbps:.3g} GB/s",
        fontsize=10,
    )
    fig.tight_layout()
    return fig


def link_options(scope: str | None = None) -> list[str]:
    """Catalog links (gpukit/data/interconnects.csv), optionally one scope (intra-node / inter-node)."""
    return [n for n, ln in interconnects().items() if scope is None or ln.scope == scope]


def allreduce_view(
    link: str = "ib-ndr",
    size_mib: float = 256.0,
    n_ranks: int = 16,
    gpus_per_node: int = 8,
    intra: str = "nvlink4",
    nics: str = "per GPU",
    op: str = "all_reduce",
    algorithm: str = "ring",
) -> View:
    """The collectives widget: link, collective (all-reduce, all-gather, reduce-scatter, broadcast),
    algorithm (ring or tree), message size, ranks, GPUs per node, intra-node link, NICs -> curves."""
    controls = {
        "link": dropdown("link across nodes", link_options("inter-node"), link),
        "op": dropdown("collective", CURVE_OPS, op),
        "algorithm": dropdown("algorithm", ("ring", "tree"), algorithm),
        "size_mib": slider("size (MiB)", 2**-10, 2**14, size_mib, log=True),
        "n_ranks": number("n_ranks", n_ranks, integer=True),
        "gpus_per_node": dropdown("GPUs per node", GPUS_PER_NODE, gpus_per_node),
        "intra": dropdown("link inside a node", link_options("intra-node"), intra),
        "nics": dropdown("network ports", NICS, nics),
    }
    return View(allreduce_curves, controls, draw_allreduce, title="Collectives: time and bandwidth")


# ------------------------------------------------------------------------------------ plots
def plot_interconnects():
    """Bandwidth per direction and latency of every catalog link, side by side (log axes)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    df = frame("interconnects").sort_values("bandwidth_gbps")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4.5), sharey=True)
    sns.barplot(data=df, y="name", x="bandwidth_gbps", hue="scope", dodge=False, ax=a1)
    a1.set(xscale="log", xlabel="bandwidth per GPU, per direction (GB/s, log)", ylabel="")
    sns.barplot(data=df, y="name", x="latency_us", hue="scope", dodge=False, ax=a2, legend=False)
    a2.set(xscale="log", xlabel="latency alpha (us, log)", ylabel="")
    fig.tight_layout()
    return fig


def plot_sweep(rows, holdout: dict, *, title: str = ""):
    """Measured time per size (points), the alpha-beta fit (line), held-out sizes (open circles)."""
    import matplotlib.pyplot as plt
    import numpy as np

    from gpukit.comm import coefficients

    rows = sorted((r for r in (rows.rows if hasattr(rows, "rows") else rows)), key=lambda r: r["size_bytes"])
    s = np.array([r["size_bytes"] for r in rows], dtype=float)
    t = np.array([r["time_us"] for r in rows], dtype=float)
    ca, cb = coefficients("all_reduce", holdout["n_ranks"])
    grid = np.logspace(np.log10(s.min()), np.log10(s.max()), 100)
    fit_us = ca * holdout["alpha_us"] + cb * grid / (holdout["beta_gbps"] * GB) * 1e6
    fit_sizes = set(holdout["fit_sizes_bytes"])
    fig, ax = plt.subplots(figsize=(6, 3.8))
    used = np.array([x in fit_sizes for x in s])
    ax.plot(s[used], t[used], "o", color="tab:blue", label="measured, used in the fit")
    ax.plot(s[~used], t[~used], "o", mfc="none", color="tab:red", label="measured, held out")
    ax.plot(
        grid,
        fit_us,
        color="tab:blue",
        lw=1,
        label=f"fit: alpha {holdout['alpha_us']:.0f} us, B {holdout['beta_gbps']:.2f} GB/s",
    )
    ax.set(xscale="log", yscale="log", xlabel="message size S (bytes)", ylabel="time per call (us)")
    ax.set_title(title or f"worst held-out error {holdout['holdout_error_max']:.0%}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_netlab(results):
    """Measured busbw per size for each emulated link rate, with the configured rate as a dashed line."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for i, res in enumerate(results):
        color = f"C{i}"
        rows = sorted(res.rows, key=lambda r: r["size_bytes"])
        ax.plot(
            [r["size_bytes"] for r in rows],
            [r["busbw_gbps"] for r in rows],
            "o-",
            color=color,
            label=f"{res.rate}: measured busbw",
        )
        ax.axhline(res.configured_rate_gbps, color=color, ls="--", lw=1, label=f"{res.rate}: configured")
    ax.set(xscale="log", xlabel="message size S (bytes)", ylabel="busbw (GB/s)", ylim=(0, None))
    ax.set_title("all-reduce between 2 emulated nodes (CPU, gloo over veth + tbf)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_ddp_scaling(
    n_params: float = 7e9,
    tokens_per_gpu: float = 16384,
    links=("nvlink4", "ib-ndr", "eth-100g", "eth-10g"),
    n_gpus=(1, 2, 4, 8, 16, 32, 64, 128, 256),
    gpu: str = "h100-sxm",
    mfu: float = 0.4,
):
    """DDP speedup vs GPU count, one line per link, no overlap (gpukit.scaling.ddp_step_estimate)."""
    import matplotlib.pyplot as plt

    from gpukit.scaling import ddp_step_estimate

    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.plot(n_gpus, n_gpus, color="gray", ls="--", lw=1, label="perfect")
    for ln in links:
        # an intra-node link joins the GPUs of one node only (8 in HGX/DGX servers)
        ns = [n for n in n_gpus if get_interconnect(ln).scope == "inter-node" or n <= 8]
        sp = [
            ddp_step_estimate(
                n, n_params=n_params, tokens_per_gpu=tokens_per_gpu, link=ln, gpu=gpu, mfu=mfu
            ).speedup
            for n in ns
        ]
        ax.plot(ns, sp, "o-", ms=3, label=ln)
    ax.set(xscale="log", yscale="log", xlabel="GPUs", ylabel="speedup over one GPU")
    ax.set_title(
        f"DDP, {n_params / 1e9:g}B params, {tokens_per_gpu:,.0f} tokens/GPU/step, bf16 grads, no overlap",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def netlab_table(results, threshold: float = 0.8):
    """One row per emulated rate: configured GB/s, measured busbw at the largest size, their ratio,
    and whether the article's '80% of theoretical busbw' rule would call the link healthy."""
    import pandas as pd

    return pd.DataFrame(
        [
            {
                "rate": r.rate,
                "configured_gbps": r.configured_rate_gbps,
                "size_bytes": r.size_bytes,
                "busbw_gbps": r.busbw_gbps,
                "busbw_over_configured": r.ratio,
                f"above_{threshold:.0%}": r.ratio >= threshold,
            }
            for r in results
        ]
    )
