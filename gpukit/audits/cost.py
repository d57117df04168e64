"""Cost claims of the seed articles (the cost table, equal total cost, cluster vs single GPU), audited
by their own arithmetic. Registered under topic "cost" in gpukit.audits.claims (see there for Claim and
the registry). Used in: notebooks/03_compute_and_time, tests/test_claims.py.
"""

from __future__ import annotations

from gpukit.audits.claims import Claim, register, verdict_from_ratio

_TABLE_000 = ((1, 4.0, 200.0, 800.0), (4, 16.0, 50.0, 800.0), (16, 64.0, 12.5, 800.0), (64, 256.0, 3.1, 794.0))
P5_PRICE_USD_PER_H, P5_GPUS = 98.32, 8  # article 002: "An 8-GPU p5.48xlarge (8 H100) is $98.32/hour"


@register("cost_table_arithmetic", "cost")
def cost_table_arithmetic(usd_per_gpu_hour: float = 4.0, hours_one_gpu: float = 200.0, table=_TABLE_000) -> Claim:
    """Rows of the cost table at perfect scaling: $/h = n x price, hours = h1 / n, cost = their product."""
    rows, worst = [], 0.0
    for n, usd_h, hours, cost in table:
        exact_h, exact_usd_h = hours_one_gpu / n, usd_per_gpu_hour * n
        exact_cost = exact_h * exact_usd_h
        worst = max(worst, abs(cost - exact_cost) / exact_cost, abs(usd_h - exact_usd_h) / exact_usd_h,
                    abs(hours - exact_h) / exact_h)
        rows.append((n, exact_h, exact_cost))
    n_last, h_last, cost_last = rows[-1]
    claimed_last = table[-1][3]
    p5 = P5_PRICE_USD_PER_H / P5_GPUS
    return Claim(
        key="cost_table_arithmetic", topic="cost", article="000",
        text="The cost table's rows: 1 to 64 H100s at $4/GPU-hour, 200 GPU-hours, about $800 each",
        quote="| 64x H100 (8 nodes, IB) | $256 | 3.1 hrs | $794 |",
        claimed=claimed_last, claimed_unit="USD", computed=cost_last, unit="USD",
        verdict=verdict_from_ratio(cost_last / claimed_last, correct=1.02),
        check=(f"200 / {n_last} = {h_last:.4g} h x ${usd_per_gpu_hour * n_last:g}/h = ${cost_last:,.0f}; the $794 is "
               f"the rounded 3.1 h x $256 = ${3.1 * 256:,.1f}. Largest deviation of any cell from the exact "
               f"arithmetic: {worst:.1%}."),
        assumptions=("perfect linear scaling (the table's own premise)", f"$4/GPU-hour; the AWS p5 on-demand price "
                     f"quoted in article 002 is ${p5:.2f}/GPU-hour"),
        figures=tuple((f"exact hours on {n} GPUs", h, "hours") for n, h, _ in rows)
        + tuple((f"exact cost on {n} GPUs", c, "USD") for n, _, c in rows)
        + (("largest deviation from exact", worst, "fraction"), ("AWS p5 on-demand per GPU-hour", p5, "USD/h"),
           ("200 GPU-hours at the p5 price", p5 * hours_one_gpu, "USD")))


@register("identical_total_cost", "cost")
def identical_total_cost(hours_64_low: float = 4.0, hours_64_high: float = 5.0, n_gpus: int = 64,
                         usd_per_gpu_hour: float = 4.0, hours_one_gpu: float = 200.0) -> Claim:
    """Cost at scaling efficiency e: n x price x h1 / (n e) = h1 x price / e."""
    ideal_h = hours_one_gpu / n_gpus
    mid = (hours_64_low + hours_64_high) / 2
    eff = ideal_h / mid
    cost_ideal = hours_one_gpu * usd_per_gpu_hour
    cost_mid = cost_ideal / eff
    return Claim(
        key="identical_total_cost", topic="cost", article="000",
        text="Spreading a run over more GPUs keeps the total cost identical",
        quote="Identical total cost for the same model? Roughly.",
        claimed=cost_ideal, claimed_unit="USD", computed=cost_mid, unit="USD",
        verdict="correct" if eff >= 0.95 else "misleading",
        check=(f"cost = 200 GPU-h x $4 / efficiency. The article's own 4-5 h for 64 GPUs means efficiency "
               f"{ideal_h / hours_64_high:.0%}-{ideal_h / hours_64_low:.0%}, so ${cost_ideal / (ideal_h / hours_64_low):,.0f}"
               f"-${cost_ideal / (ideal_h / hours_64_high):,.0f}, not ${cost_ideal:,.0f}: equal cost holds only at 100%."),
        assumptions=("the article's own estimate: 'the 64-GPU cluster might need 4-5 hours'",),
        figures=(("ideal hours on 64 GPUs", ideal_h, "hours"), ("scaling efficiency at 4.5 h", eff, "fraction"),
                 ("cost at 4 h", cost_ideal / (ideal_h / hours_64_low), "USD"),
                 ("cost at 5 h", cost_ideal / (ideal_h / hours_64_high), "USD")))


@register("asr_3b_cluster_cost", "cost")
def asr_3b_cluster_cost(days_one_gpu: float = 4.0, hours_cluster: float = 12.0, n_gpus: int = 8,
                        price_ratio: float = 6.0) -> Claim:
    """Relative cost of the cluster run: price_ratio x hours_cluster / hours_one_gpu."""
    hours_one = days_one_gpu * 24
    rel_cost = price_ratio * hours_cluster / hours_one
    speedup = hours_one / hours_cluster
    return Claim(
        key="asr_3b_cluster_cost", topic="cost", article="000",
        text="A 3B model: 4 days on one GPU or 12 h on 8 GPUs, but the cluster costs 6x more per hour, so stay single",
        quote=("Training our 3B parameter ASR model takes 4 days on one GPU — we could cut that to 12 hours with a "
               "8-GPU cluster, but the cluster costs 6x more per hour."),
        claimed=price_ratio, claimed_unit="x price per hour", computed=rel_cost, unit="x total cost",
        verdict="wrong" if rel_cost < 1 else "correct",
        check=(f"96 h x 1 vs 12 h x 6 = {rel_cost:.2f}: by its own numbers the cluster run costs {1 - rel_cost:.0%} less "
               f"and finishes {speedup:.0f}x sooner ({speedup / n_gpus:.0%} scaling efficiency, which the article "
               "elsewhere says never happens)."),
        assumptions=("cost = price per hour x hours",),
        figures=(("speedup", speedup, "x"), ("scaling efficiency", speedup / n_gpus, "fraction"),
                 ("cluster cost / single-GPU cost", rel_cost, "ratio")))
