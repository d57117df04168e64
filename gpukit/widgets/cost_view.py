"""Notebook 08's views over gpukit.cost: cost vs time with the Pareto set, buy vs rent, spot.

- `cost_curve(model, gpu, tokens_b, usd_per_gpu_hour, inter_link, overlap, zero_stage)` ->
  gpukit.cost.CostTable over 1..1024 GPUs; `draw_cost_time(table)` plots hours against cost with the
  Pareto set of the plans that fit (the others as open markers).
  `cost_view()`.
- `buy_rent(gpus, purchase_k_usd, rent, utilization, years, pue, usd_per_kwh)` -> gpukit.cost.BuyVsRent;
  `draw_buy_rent` plots owned cost per GPU-hour against utilization beside the rent line. `buy_vs_rent_view()`.
- `spot(work_hours, gpus, on_demand, spot_price, preemptions_per_day, checkpoint_minutes,
  restart_minutes)` -> gpukit.cost.SpotEstimate; `draw_spot` plots expected hours against the
  checkpoint interval (the Daly optimum marked). `spot_view()`.

Bad values show one error line (gpukit.widgets.View). Used in: notebooks/08_cluster_economics.
"""

from __future__ import annotations

from types import SimpleNamespace

from gpukit import cost
from gpukit.catalog import get_model
from gpukit.widgets.base import View, dropdown, slider

COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
MODELS = ("gpt2-xl", "opt-1.3b", "llama-2-7b", "llama-2-13b", "opt-30b", "llama-2-70b")
GPUS = ("h100-sxm", "a100-80gb", "h100-pcie", "a100-40gb", "rtx-a6000")
LINKS = ("ib-ndr", "ib-hdr", "efa", "roce-100g", "eth-100g", "eth-25g")


def cost_curve(
    model: str = "llama-2-7b",
    gpu: str = "h100-sxm",
    tokens_b: float = 100.0,
    usd_per_gpu_hour: float = 3.0,
    inter_link: str = "ib-ndr",
    overlap: float = 0.0,
    zero_stage: int = 3,
    mfu: float = 0.0,
) -> cost.CostTable:
    """Cost and time of training `model` on `tokens_b` billion tokens, 1..1024 GPUs, predicted efficiency, data
    parallel with ZeRO stage `zero_stage` (each row says whether it fits). `mfu` 0 takes gpukit.cost's
    default for the GPU (its efficiency model names the source); a value in (0, 1] is the user's, so named."""
    return cost.training_cost(
        get_model(model),
        tokens_b * 1e9,
        gpu,
        list(COUNTS),
        price_per_gpu_hour=usd_per_gpu_hour,
        inter_link=inter_link,
        overlap=overlap,
        zero_stage=int(zero_stage),
        mfu=mfu or None,
    )


def _cost_points(table) -> list[SimpleNamespace]:
    """(gpu, gpus, hours, cost_usd, fits, pareto) of a gpukit.cost.CostTable's rows or a gpukit.plan.PlanResult's
    plans (a plan that does not fit has no hours: it is left out, as the planner prices nothing for it)."""
    if hasattr(table, "rows"):
        return [
            SimpleNamespace(
                gpu=r.gpu, gpus=r.gpus, hours=r.hours, cost_usd=r.cost_usd, fits=r.fits, pareto=r.pareto
            )
            for r in table.rows
        ]
    return [
        SimpleNamespace(
            gpu=p.gpu, gpus=p.gpus, hours=p.hours, cost_usd=p.cost_usd, fits=True, pareto=p.pareto
        )
        for p in table.plans
        if p.binding != "does not fit"
    ]


def draw_cost_time(table, ax=None, title: str = ""):
    """Hours (x) against cost (y), every count labelled; the Pareto set (of the rows that fit) joined by a
    line; a row whose layout does not fit its GPUs is an open marker and the title says so. `table`: a
    gpukit.cost.CostTable (`cost train`'s layout at every count) or a gpukit.plan.PlanResult (the planner's
    layout at every count, as notebook 08 prices the job)."""
    import matplotlib.pyplot as plt

    points = _cost_points(table)
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.8))
    for g in dict.fromkeys(r.gpu for r in points):
        rows = [r for r in points if r.gpu == g]
        (line,) = ax.plot(
            [r.hours for r in rows if r.fits is not False],
            [r.cost_usd for r in rows if r.fits is not False],
            "o",
            label=g,
            alpha=0.8,
        )
        out = [r for r in rows if r.fits is False]
        if out:
            ax.plot(
                [r.hours for r in out],
                [r.cost_usd for r in out],
                "o",
                mfc="none",
                color=line.get_color(),
                label=f"{g}: does not fit",
                alpha=0.8,
            )
        for r in rows:
            ax.annotate(
                str(r.gpus), (r.hours, r.cost_usd), fontsize=7, xytext=(3, 3), textcoords="offset points"
            )
    front = sorted((r for r in points if r.pareto), key=lambda r: r.hours)
    ax.plot([r.hours for r in front], [r.cost_usd for r in front], "k--", lw=1, label="Pareto set")
    ax.set_xscale("log")
    ax.set_xlabel("wall-clock hours (log)")
    ax.set_ylabel("cost, USD")
    n_out = sum(r.fits is False for r in points)
    ax.set_title(
        (title or "Cost against time (labels: number of GPUs)")
        + (f"\n{n_out} of {len(points)} plans do not fit their GPUs (open markers)" if n_out else ""),
        fontsize=10,
    )
    ax.legend(fontsize=8)
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure


def cost_view(**defaults) -> View:
    """The cost-vs-time widget: model, GPU, tokens, price, inter-node link, overlap, ZeRO stage."""
    d = (
        dict(
            model="llama-2-7b",
            gpu="h100-sxm",
            tokens_b=100.0,
            usd_per_gpu_hour=3.0,
            inter_link="ib-ndr",
            overlap=0.0,
            zero_stage=3,
            mfu=0.0,
        )
        | defaults
    )
    controls = {
        "model": dropdown("model", MODELS, d["model"]),
        "gpu": dropdown("GPU", GPUS, d["gpu"]),
        "tokens_b": slider("tokens (B)", 1, 2000, d["tokens_b"], log=True),
        "usd_per_gpu_hour": slider("$/GPU-hour", 0.5, 15, d["usd_per_gpu_hour"], step=0.25),
        "inter_link": dropdown("between nodes", LINKS, d["inter_link"]),
        "overlap": slider("overlap", 0, 1, d["overlap"], step=0.1),
        "zero_stage": dropdown("ZeRO stage", (0, 1, 2, 3), d["zero_stage"]),
        "mfu": slider("MFU (0 = default)", 0.0, 0.8, d["mfu"], step=0.05),
    }
    return View(cost_curve, controls, draw_cost_time, title="Cost of a training run against its time")


def buy_rent(
    gpus: int = 32,
    purchase_k_usd: float = 1350.0,
    rent: float = 12.29,
    utilization: float = 0.9,
    years: float = 3.0,
    pue: float = cost.DEFAULT_PUE,
    usd_per_kwh: float = cost.DEFAULT_USD_PER_KWH,
    gpu: str = "h100-sxm",
    ops_k_usd_per_year: float = 0.0,
) -> cost.BuyVsRent:
    """gpukit.cost.buy_vs_rent with the purchase in thousands of USD (GPUs, servers, networking) and the
    yearly operations cost (staff, colocation, support contracts) in thousands of USD; 0 leaves it out."""
    return cost.buy_vs_rent(
        gpu,
        int(gpus),
        purchase_k_usd * 1e3,
        rent_per_gpu_hour=rent,
        utilization=utilization,
        years=years,
        pue=pue,
        usd_per_kwh=usd_per_kwh,
        ops_usd_per_year=ops_k_usd_per_year * 1e3,
    )


def draw_buy_rent(r: cost.BuyVsRent, ax=None):
    """Owned cost per GPU-hour against utilization, the rent line, the break-even point."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
    u = np.linspace(0.05, 1, 96)
    fixed = r.capital_per_gpu_hour * r.utilization + r.ops_per_gpu_hour * r.utilization
    ax.plot(u, fixed / u + r.energy_per_gpu_hour, label="owned, per GPU-hour used")
    ax.axhline(r.rent_per_gpu_hour, color="tab:red", ls="--", label=f"rent ${r.rent_per_gpu_hour:.2f}")
    ax.axvline(r.utilization, color="grey", lw=0.8, label=f"your utilization {r.utilization:.0%}")
    if r.break_even_utilization <= 1:
        ax.plot(
            [r.break_even_utilization],
            [r.rent_per_gpu_hour],
            "ko",
            label=f"break-even {r.break_even_utilization:.0%}",
        )
    ax.set_ylim(0, max(2.5 * r.rent_per_gpu_hour, r.owned_cost_per_gpu_hour * 1.2))
    ax.set_xlabel("utilization (share of hours in use)")
    ax.set_ylabel("USD per GPU-hour")
    ax.set_title(f"Buy vs rent, {r.gpus} x {r.gpu}, {r.years:g}-year depreciation", fontsize=10)
    ax.legend(fontsize=8)
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure


def buy_vs_rent_view(**defaults) -> View:
    d = (
        dict(
            gpus=32,
            purchase_k_usd=1350.0,
            rent=12.29,
            utilization=0.9,
            years=3.0,
            pue=cost.DEFAULT_PUE,
            usd_per_kwh=cost.DEFAULT_USD_PER_KWH,
            ops_k_usd_per_year=0.0,
        )
        | defaults
    )
    controls = {
        "gpus": dropdown("GPUs", (8, 16, 32, 64, 128, 256), d["gpus"]),
        "purchase_k_usd": slider("purchase (k$)", 50, 10000, d["purchase_k_usd"], log=True),
        "rent": slider("rent $/GPU-h", 0.5, 15, d["rent"], step=0.1),
        "utilization": slider("utilization", 0.05, 1, d["utilization"], step=0.05),
        "years": slider("years", 1, 6, d["years"], step=0.5),
        "pue": slider("PUE", 1.0, 2.0, d["pue"], step=0.05),
        "usd_per_kwh": slider("$/kWh", 0.02, 0.4, d["usd_per_kwh"], step=0.01),
        "ops_k_usd_per_year": slider("operations (k$/year)", 0, 2000, d["ops_k_usd_per_year"], step=10),
    }
    return View(buy_rent, controls, draw_buy_rent, title="Buy or rent?")


def spot(
    work_hours: float = 100.0,
    gpus: int = 8,
    on_demand: float = 3.0,
    spot_price: float = 1.2,
    preemptions_per_day: float = 2.0,
    checkpoint_minutes: float = 5.0,
    restart_minutes: float = 10.0,
):
    """gpukit.cost.spot_run."""
    return cost.spot_run(
        work_hours,
        int(gpus),
        on_demand,
        spot_price,
        preemptions_per_day=preemptions_per_day,
        checkpoint_minutes=checkpoint_minutes,
        restart_minutes=restart_minutes,
    )


def draw_spot(s: cost.SpotEstimate, ax=None):
    """Expected wall hours against the checkpoint interval (Daly 2006), the optimum and on-demand."""
    import matplotlib.pyplot as plt
    import numpy as np

    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 3.6))
    m = 86400 / s.preemptions_per_day
    d, r = s.checkpoint_minutes * 60, s.restart_minutes * 60
    taus = np.geomspace(d / 4, 20 * s.daly_interval_hours * 3600, 120)
    if s.expected_hours is None:  # never finishes in practice: say so in place of the plot
        raise ValueError(
            f"the job never finishes on spot: {s.preemptions_per_day:g} interruptions a day against "
            f"{s.checkpoint_minutes:g}-min checkpoints; run on demand"
        )

    def hours(tau_s: float) -> float:  # a checkpoint interval whose job never finishes: not drawn
        try:
            return cost.expected_wall_s(s.work_hours * 3600, tau_s, d, r, m) / 3600
        except ValueError:
            return float("nan")

    ax.plot(taus / 3600, [hours(t) for t in taus], label="expected hours on spot")
    ax.axhline(s.work_hours, color="tab:green", ls="--", label="on demand (no interruptions)")
    ax.plot(
        [s.daly_interval_hours],
        [s.expected_hours],
        "ko",
        label=f"Daly optimum {s.daly_interval_hours:.2f} h: {s.savings:.0%} cheaper",
    )
    ax.set_xscale("log")
    ax.set_xlabel("hours between checkpoints (log)")
    ax.set_ylabel("expected wall hours")
    ax.set_title(
        f"Spot: {s.preemptions_per_day:g} interruptions/day, {s.checkpoint_minutes:g} min checkpoints",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure


def spot_view(**defaults) -> View:
    d = (
        dict(
            work_hours=100.0,
            gpus=8,
            on_demand=3.0,
            spot_price=1.2,
            preemptions_per_day=2.0,
            checkpoint_minutes=5.0,
            restart_minutes=10.0,
        )
        | defaults
    )
    controls = {
        "work_hours": slider("job hours", 1, 2000, d["work_hours"], log=True),
        "gpus": dropdown("GPUs", (1, 8, 16, 32, 64, 128), d["gpus"]),
        "on_demand": slider("on-demand $/GPU-h", 0.5, 15, d["on_demand"], step=0.1),
        "spot_price": slider("spot $/GPU-h", 0.1, 15, d["spot_price"], step=0.1),
        "preemptions_per_day": slider("interruptions/day", 0.1, 48, d["preemptions_per_day"], log=True),
        "checkpoint_minutes": slider("checkpoint (min)", 0.5, 60, d["checkpoint_minutes"], log=True),
        "restart_minutes": slider("restart (min)", 0, 60, d["restart_minutes"], step=1),
    }
    return View(spot, controls, draw_spot, title="Spot instances and checkpoints")
