"""Cost claims of the second seed article (002, "A Practical Guide for 2026"), audited: buying an H100
and a 32-GPU cluster, renting on AWS, buy vs rent at a utilization, spot against on demand.

Holds the audits of article 002's buy-or-rent section (registered under topic "cost" in
gpukit.audits.claims, after gpukit.audits.cost's own; see there for Claim and the registry). Prices
in USD, USD per hour and per GPU-hour: gpukit/data/prices.csv through gpukit.prices (market rows only),
cost models from gpukit.cost (buy_vs_rent: PUE 1.56, $0.10/kWh; spot_run: Daly 2006; predicted
efficiency), the article's own figures where gpukit has no price list (switches, retail GPUs).
gpukit.audits.claims imports this module right after gpukit.audits.cost (TOPIC_MODULES keeps that
order: the rows of gpukit/data/claims.csv); both take the market price range from gpukit.prices.market_range.
Used in: notebooks/08_cluster_economics (claim("spot_60_90")), and through the registry
notebooks/08_cluster_economics, notebooks/09_decide, gpukit/data/claims.csv (python -m gpukit.audits.export),
tests/test_claims.py, tests/test_claims_plan_cost.py.
"""

from __future__ import annotations

from gpukit.audits.claims import Claim, register, verdict_from_ratio
from gpukit.prices import market_range


@register("h100_30k_retail", "cost")
def h100_30k_retail(price_usd: float = 30_000, years: float = 3.0) -> Claim:
    """Owned cost per GPU-hour of a $30K H100 (plus power) against the market rent."""
    from gpukit.cost import buy_vs_rent

    _, med, _ = market_range("h100-sxm")
    b = buy_vs_rent("h100-sxm", 1, price_usd, rent_per_gpu_hour=med, years=years, utilization=1.0)
    return Claim(
        key="h100_30k_retail",
        topic="cost",
        article="002",
        text="One H100 costs about $30,000 to buy",
        quote="Buying a single H100 today (August 2026) costs around $30,000 retail.",
        claimed=price_usd,
        claimed_unit="USD",
        computed=b.owned_cost_per_gpu_hour,
        unit="USD/GPU-hour owned",
        verdict="plausible",
        check=(
            f"gpukit ships no retail price list, so check consistency: $30K over {years:g} years at full use is "
            f"${b.capital_per_gpu_hour:.2f}/h of capital + ${b.energy_per_gpu_hour:.2f}/h of energy = "
            f"${b.owned_cost_per_gpu_hour:.2f}/h against a median rent of ${med:.2f}; it pays back in "
            f"{b.break_even_months:.0f} months of full use. The same article's cluster is $37.5K per GPU with servers."
        ),
        assumptions=("GPU only: no server, network, staff", "PUE 1.56, $0.10/kWh"),
        figures=(
            ("owned per GPU-hour at 100%", b.owned_cost_per_gpu_hour, "USD/GPU-hour"),
            ("break-even months at 100%", b.break_even_months, "months"),
        ),
    )


@register("h100_50k_invoice", "cost")
def h100_50k_invoice(invoice_usd: float = 50_000, retail_usd: float = 30_000) -> Claim:
    """The opening $50K per H100 against the same article's $30K; four GPUs for $50K is $12.5K each."""
    return Claim(
        key="h100_50k_invoice",
        topic="cost",
        article="002",
        text="A single H100 invoices at $50K, the price of a four-GPU cluster",
        quote=(
            "You’re staring at a $50K invoice for a single H100 GPU. Your colleague just bought a four-GPU cluster "
            "for the same price."
        ),
        claimed=invoice_usd,
        claimed_unit="USD",
        computed=retail_usd,
        unit="USD",
        verdict="doubtful",
        check=(
            f"The same article later prices an H100 at ~${retail_usd:,} retail: $50K is {invoice_usd / retail_usd:.2f}x "
            f"that. Four GPUs for $50K are ${invoice_usd / 4:,.0f} each: workstation cards (RTX 6000 Ada, L40S "
            "class, 48 GB), not H100s, so the two options differ in memory per GPU and interconnect."
        ),
        assumptions=("the article's own figures",),
        figures=(("per GPU in the four-GPU cluster", invoice_usd / 4, "USD"),),
    )


@register("cluster_1_2m", "cost")
def cluster_1_2m(cluster_usd: float = 1.2e6, gpus: int = 32, gpu_usd: float = 30_000) -> Claim:
    """$1.2M for 32 H100 in 4 servers against 32 x $30K."""
    gpus_only = gpus * gpu_usd
    return Claim(
        key="cluster_1_2m",
        topic="cost",
        article="002",
        text="A 4-node cluster with 8 H100s each costs $1.2M",
        quote="A 4-node cluster with 8 H100s each? $1.2 million.",
        claimed=cluster_usd,
        claimed_unit="USD",
        computed=gpus_only,
        unit="USD",
        verdict=verdict_from_ratio(cluster_usd / gpus_only, correct=1.3),
        check=(
            f"32 x $30K (the article's GPU price) = ${gpus_only:,.0f}; $1.2M leaves ${(cluster_usd - gpus_only) / 4:,.0f} "
            "per 8-GPU server for CPUs, memory, NVMe, NVSwitch baseboard and chassis: consistent."
        ),
        assumptions=("the article's own $30K per GPU",),
        figures=(
            ("GPUs only", gpus_only, "USD"),
            ("per server besides GPUs", (cluster_usd - gpus_only) / 4, "USD"),
        ),
    )


@register("networking_150k", "cost")
def networking_150k(network_usd: float = 150e3, gpus: int = 32) -> Claim:
    return Claim(
        key="networking_150k",
        topic="cost",
        article="002",
        text="InfiniBand networking for the 32-GPU cluster costs $150K",
        quote="Add networking (InfiniBand switches, cables): $150k.",
        claimed=network_usd,
        claimed_unit="USD",
        computed=network_usd / gpus,
        unit="USD per GPU",
        verdict="not checkable",
        check=(
            f"gpukit has no price source for switches, adapters and cables. The figure is ${network_usd / gpus:,.0f} "
            "per GPU port (12.5% of the cluster): compare with the other article's 'doubles cluster cost' "
            "(claim infiniband_doubles_cost)."
        ),
    )


@register("p4d_p5_prices", "cost")
def p4d_p5_prices(p4d: float = 32.77, p5: float = 98.32) -> Claim:
    """The articles' AWS prices against gpukit/data/prices.csv's AWS p5 row."""
    from gpukit.prices import load_prices

    aws = [r for r in load_prices().rows if r.cloud == "aws" and r.instance_type == "p5.48xlarge"]
    row = aws[0].price_usd_per_h if aws else float("nan")
    return Claim(
        key="p4d_p5_prices",
        topic="cost",
        article="002",
        text="AWS p4d.24xlarge is $32.77/h and p5.48xlarge $98.32/h on demand",
        quote=(
            "Renting on AWS: a single p4d.24xlarge instance (8 A100 GPUs) costs $32.77/hour on-demand. An 8-GPU "
            "p5.48xlarge (8 H100) is $98.32/hour."
        ),
        claimed=p5,
        claimed_unit="USD/hour",
        computed=row,
        unit="USD/hour",
        verdict=verdict_from_ratio(row / p5, correct=1.01),
        check=(
            f"gpukit/data/prices.csv: p5.48xlarge ${row:g}/h (AWS list price reported July 2023); per GPU ${p5 / 8:.2f} "
            f"(H100) and ${p4d / 8:.2f} (A100 40GB), 2-5x the specialist clouds. AWS capacity blocks were "
            "$39.33 (p5) and $14.75 (p4d) per hour."
        ),
        assumptions=("us-east-1 on demand; a reported 2026 price cut could not be confirmed on an AWS page",),
        figures=(("p5 per GPU-hour", p5 / 8, "USD/GPU-hour"), ("p4d per GPU-hour", p4d / 8, "USD/GPU-hour")),
    )


@register("hundred_hours_3277_9832", "cost")
def hundred_hours_3277_9832(hours: float = 100.0, p4d: float = 32.77, p5: float = 98.32) -> Claim:
    """Same hours on both instances vs the same job: the H100 finishes ~3x sooner (dense BF16 peak)."""
    from gpukit.catalog import get_gpu

    speed = get_gpu("h100-sxm").peak_tflops("bf16") / get_gpu("a100-40gb").peak_tflops("bf16")
    p5_job = hours / speed * p5
    return Claim(
        key="hundred_hours_3277_9832",
        topic="cost",
        article="002",
        text="A 100-hour run costs $3,277 on p4d and $9,832 on p5",
        quote="If you train a model that takes 100 hours, that’s $3,277 vs $9,832.",
        claimed=hours * p5,
        claimed_unit="USD",
        computed=p5_job,
        unit="USD",
        verdict="misleading",
        check=(
            f"100 x $32.77 = ${hours * p4d:,.0f} and 100 x $98.32 = ${hours * p5:,.0f} (arithmetic right). But a job "
            f"that takes 100 h on 8 A100s takes about {hours / speed:.0f} h on 8 H100s ({speed:.1f}x the dense BF16 "
            f"peak): ${p5_job:,.0f}, about the same as on p4d. Compare jobs, not hours."
        ),
        assumptions=("equal MFU on both GPUs (compute-bound training)",),
        figures=(
            ("p4d, 100 h", hours * p4d, "USD"),
            ("p5, same job", p5_job, "USD"),
            ("H100/A100 peak", speed, "x"),
        ),
    )


@register("rental_6_months_1_4m", "cost")
def rental_6_months_1_4m(months: float = 6.0, nodes: int = 4, p5: float = 98.32) -> Claim:
    """Six months 24/7 of the 32-GPU cluster rented as 4 p5.48xlarge."""
    from gpukit.cost import HOURS_PER_MONTH

    rent = nodes * p5 * HOURS_PER_MONTH * months
    return Claim(
        key="rental_6_months_1_4m",
        topic="cost",
        article="002",
        text="Renting 24/7 for 6 months adds up to $1.4M",
        quote="But if you train 24/7 for 6 months, rental adds up to $1.4M.",
        claimed=1.4e6,
        claimed_unit="USD",
        computed=rent,
        unit="USD",
        verdict=verdict_from_ratio(rent / 1.4e6),
        check=(
            f"The 32-GPU cluster the article prices at $1.35M, rented as {nodes} p5.48xlarge at ${p5}/h for "
            f"{months:g} x 730 h: ${rent / 1e6:.2f}M; $1.4M is {1.4e6 / (HOURS_PER_MONTH * months * 32):.2f} per "
            "GPU-hour. At specialist-cloud prices the same half-year costs about a quarter of that."
        ),
        assumptions=("AWS on-demand list price, no savings plan",),
        figures=(("rent, 4 x p5, 6 months", rent, "USD"),),
    )


@register("buy_at_90_utilization", "cost")
def buy_at_90_utilization(
    capex: float = 1.2e6, network: float = 150e3, gpus: int = 32, years: float = 3.0
) -> Claim:
    """Break-even utilization of the article's cluster against AWS p5 and against the median market rent."""
    from gpukit.cost import buy_vs_rent

    lo, med, _ = market_range("h100-sxm")
    aws = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=98.32 / 8, years=years)
    mkt = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=med, years=years)
    low = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=lo, years=years)
    return Claim(
        key="buy_at_90_utilization",
        topic="cost",
        article="002",
        text="If the cluster runs at 90% utilization for months, buy",
        quote="But if your GPU cluster runs at 90% utilization for months, buy.",
        claimed=0.9,
        claimed_unit="utilization",
        computed=mkt.break_even_utilization,
        unit="utilization",
        verdict="plausible" if mkt.break_even_utilization <= 0.9 else "misleading",
        check=(
            f"$1.35M over {years:g} years (PUE 1.56, $0.10/kWh, no staff): owning matches renting at "
            f"{aws.break_even_utilization:.0%} utilization against AWS p5 on demand, {mkt.break_even_utilization:.0%} "
            f"against the median market H100 (${med:.2f}), {low.break_even_utilization:.0%} against the cheapest "
            f"(${lo:.2f}). At 90%, 'buy' holds against the hyperscaler and the median, and the break-even against "
            "the cheapest rows is the one to check."
        ),
        assumptions=(
            "straight-line depreciation, no resale, no operations staff (add them: ops_usd_per_year)",
        ),
        figures=(
            ("break-even vs AWS p5", aws.break_even_utilization, "fraction"),
            ("break-even vs median market", mkt.break_even_utilization, "fraction"),
            ("break-even vs cheapest market", low.break_even_utilization, "fraction"),
            ("break-even months at 70% vs AWS", aws.break_even_months, "months"),
        ),
    )


@register("eight_weeks_vs_one_week", "cost")
def eight_weeks_vs_one_week(single_usd: float = 4000.0, cluster_usd: float = 3000.0) -> Claim:
    """Same GPU-hours in both plans: the cluster can be cheaper only at a lower price per GPU-hour."""
    from gpukit.cost import buy_vs_rent, predicted_efficiency

    gpu_hours = 8 * 7 * 24  # 1 GPU x 8 weeks = 8 GPUs x 1 week
    p1, p8 = single_usd / gpu_hours, cluster_usd / gpu_hours
    eff = predicted_efficiency(70e9, "h100-sxm", 8, zero_stage=3).efficiency
    owned = buy_vs_rent("h100-sxm", 1, 30_000, rent_per_gpu_hour=p1, utilization=1.0)
    return Claim(
        key="eight_weeks_vs_one_week",
        topic="cost",
        article="002",
        text="1 GPU for 8 weeks: $0 owned or ~$4,000 spot; 8 GPUs for 1 week on spot: ~$3,000, cheaper",
        quote=(
            "The choice: 1 GPU for 8 weeks (single GPU, using quantized training) vs 8 GPUs for 1 week. Single GPU "
            "cost: $0 (owned) or ~$4,000 rental (spot). 8-GPU cluster (spot): ~$3,000."
        ),
        claimed=cluster_usd,
        claimed_unit="USD",
        computed=single_usd / eff,
        unit="USD",
        verdict="misleading",
        check=(
            f"Both plans are {gpu_hours:,} GPU-hours (8 weeks x 1 = 1 week x 8, i.e. perfect scaling). $4,000 is "
            f"${p1:.2f}/GPU-hour, $3,000 is ${p8:.2f}: the cluster is cheaper only because its spot price per GPU-hour "
            f"is {1 - p8 / p1:.0%} lower, not because of the cluster. At the same price and the predicted "
            f"{eff:.0%} efficiency (70B, ZeRO-3) it costs ${single_usd / eff:,.0f}. '$0 owned' ignores "
            f"${owned.owned_cost_per_gpu_hour * gpu_hours:,.0f} of depreciation and power for those 8 weeks."
        ),
        assumptions=("a $30K H100 over 3 years for the owned cost", "8 GPUs in one node"),
        figures=(
            ("GPU-hours", gpu_hours, "GPU-hours"),
            ("single GPU USD/GPU-hour", p1, "USD"),
            ("cluster USD/GPU-hour", p8, "USD"),
            ("owned cost of 8 weeks", owned.owned_cost_per_gpu_hour * gpu_hours, "USD"),
        ),
    )


@register("spot_60_90", "cost")
def spot_60_90(
    discount: float = 0.6,
    preemptions_per_day: float = 2.0,
    checkpoint_minutes: float = 5.0,
    work_hours: float = 100.0,
) -> Claim:
    """Net saving of spot at a 60% (and 90%) discount after Daly-optimal checkpoints and restarts."""
    from gpukit.cost import spot_run
    from gpukit.prices import load_prices

    lo = spot_run(
        work_hours,
        8,
        1.0,
        1 - discount,
        preemptions_per_day=preemptions_per_day,
        checkpoint_minutes=checkpoint_minutes,
    )
    hi = spot_run(
        work_hours,
        8,
        1.0,
        0.1,
        preemptions_per_day=preemptions_per_day,
        checkpoint_minutes=checkpoint_minutes,
    )
    both = [r for r in load_prices().rows if r.price_usd_per_h and r.spot_usd_per_h and not r.is_article]
    row_disc = [1 - r.spot_usd_per_h / r.price_usd_per_h for r in both]
    return Claim(
        key="spot_60_90",
        topic="cost",
        article="002",
        text="Spot instances save 60-90% against on demand",
        quote="Spot saves 60–90% vs on-demand.",
        claimed=discount,
        claimed_unit="saving",
        computed=lo.savings,
        unit="saving",
        verdict="plausible",
        check=(
            f"60-90% is the list discount hyperscalers advertise (Google Cloud: 60-91%; AWS: up to 90%). What is "
            f"saved is less: at {preemptions_per_day:g} interruptions/day, {checkpoint_minutes:g}-min checkpoints "
            f"every {lo.daly_interval_hours:.1f} h (Daly) and 10-min restarts the job runs {lo.time_overhead:.0%} "
            f"longer, so a 60% discount saves {lo.savings:.0%} and 90% saves {hi.savings:.0%}. The one market row "
            f"with both prices (RunPod A100) is {max(row_disc, default=0):.0%} off."
        ),
        assumptions=(
            "interruptions of the whole job, exponential (Daly 2006)",
            f"{work_hours:g}-hour job on 8 GPUs",
        ),
        figures=(
            ("net saving at 60%", lo.savings, "fraction"),
            ("net saving at 90%", hi.savings, "fraction"),
            ("time overhead", lo.time_overhead, "fraction"),
        ),
    )


@register("inference_90pct_gpu_hours", "cost")
def inference_90pct_gpu_hours() -> Claim:
    return Claim(
        key="inference_90pct_gpu_hours",
        topic="cost",
        article="002",
        text="More than 90% of GPU hours in a typical AI company go to inference",
        quote="More than 90% of GPU hours in a typical AI company go to inference, not training.",
        claimed=0.9,
        claimed_unit="share of GPU-hours",
        computed=0.0,
        unit="n/a",
        verdict="not checkable",
        check=(
            "No source is given and 'a typical AI company' is not defined; gpukit can price a given serving load "
            "(gpukit.cost.serving_cost) and a given training run, not an industry's mix."
        ),
    )
