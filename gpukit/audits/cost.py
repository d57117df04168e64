"""Cost claims of the seed articles (the cost table, equal total cost, cluster vs single GPU), audited
by their own arithmetic. Registered under topic "cost" in gpukit.audits.claims (see there for Claim and
the registry). The economics claims (prices, buy vs rent, spot, cluster budgets; issue 12) follow, audited
with gpukit.prices and gpukit.cost: article 000's here, article 002's (buying, renting on AWS, buy vs rent,
spot) in gpukit.audits.cost_buy_rent, which this module imports after its own audits (the registry keeps
that order: the rows of gpukit/data/claims.csv) and whose audits it re-exports (cost.spot_60_90, ...).
Used in: notebooks/03_compute_and_time, notebooks/08_cluster_economics, tests/test_claims.py,
tests/test_claims_plan_cost.py, gpukit.audits.cost_buy_rent.
"""

from __future__ import annotations

from gpukit.audits.claims import Claim, register, verdict_from_ratio
from gpukit.prices import market_range

_TABLE_000 = (
    (1, 4.0, 200.0, 800.0),
    (4, 16.0, 50.0, 800.0),
    (16, 64.0, 12.5, 800.0),
    (64, 256.0, 3.1, 794.0),
)
P5_PRICE_USD_PER_H, P5_GPUS = 98.32, 8  # article 002: "An 8-GPU p5.48xlarge (8 H100) is $98.32/hour"


@register("cost_table_arithmetic", "cost")
def cost_table_arithmetic(
    usd_per_gpu_hour: float = 4.0, hours_one_gpu: float = 200.0, table=_TABLE_000
) -> Claim:
    """Rows of the cost table at perfect scaling: $/h = n x price, hours = h1 / n, cost = their product."""
    rows, worst = [], 0.0
    for n, usd_h, hours, cost in table:
        exact_h, exact_usd_h = hours_one_gpu / n, usd_per_gpu_hour * n
        exact_cost = exact_h * exact_usd_h
        worst = max(
            worst,
            abs(cost - exact_cost) / exact_cost,
            abs(usd_h - exact_usd_h) / exact_usd_h,
            abs(hours - exact_h) / exact_h,
        )
        rows.append((n, exact_h, exact_cost))
    n_last, h_last, cost_last = rows[-1]
    claimed_last = table[-1][3]
    p5 = P5_PRICE_USD_PER_H / P5_GPUS
    return Claim(
        key="cost_table_arithmetic",
        topic="cost",
        article="000",
        text="The cost table's rows: 1 to 64 H100s at $4/GPU-hour, 200 GPU-hours, about $800 each",
        quote="| 64x H100 (8 nodes, IB) | $256 | 3.1 hrs | $794 |",
        claimed=claimed_last,
        claimed_unit="USD",
        computed=cost_last,
        unit="USD",
        verdict=verdict_from_ratio(cost_last / claimed_last, correct=1.02),
        check=(
            f"200 / {n_last} = {h_last:.4g} h x ${usd_per_gpu_hour * n_last:g}/h = ${cost_last:,.0f}; the $794 is "
            f"the rounded 3.1 h x $256 = ${3.1 * 256:,.1f}. Largest deviation of any cell from the exact "
            f"arithmetic: {worst:.1%}."
        ),
        assumptions=(
            "perfect linear scaling (the table's own premise)",
            f"$4/GPU-hour; the AWS p5 on-demand price quoted in article 002 is ${p5:.2f}/GPU-hour",
        ),
        figures=tuple((f"exact hours on {n} GPUs", h, "hours") for n, h, _ in rows)
        + tuple((f"exact cost on {n} GPUs", c, "USD") for n, _, c in rows)
        + (
            ("largest deviation from exact", worst, "fraction"),
            ("AWS p5 on-demand per GPU-hour", p5, "USD/h"),
            ("200 GPU-hours at the p5 price", p5 * hours_one_gpu, "USD"),
        ),
    )


@register("identical_total_cost", "cost")
def identical_total_cost(
    hours_64_low: float = 4.0,
    hours_64_high: float = 5.0,
    n_gpus: int = 64,
    usd_per_gpu_hour: float = 4.0,
    hours_one_gpu: float = 200.0,
) -> Claim:
    """Cost at scaling efficiency e: n x price x h1 / (n e) = h1 x price / e."""
    ideal_h = hours_one_gpu / n_gpus
    mid = (hours_64_low + hours_64_high) / 2
    eff = ideal_h / mid
    cost_ideal = hours_one_gpu * usd_per_gpu_hour
    cost_mid = cost_ideal / eff
    return Claim(
        key="identical_total_cost",
        topic="cost",
        article="000",
        text="Spreading a run over more GPUs keeps the total cost identical",
        quote="Identical total cost for the same model? Roughly.",
        claimed=cost_ideal,
        claimed_unit="USD",
        computed=cost_mid,
        unit="USD",
        verdict="correct" if eff >= 0.95 else "misleading",
        check=(
            f"cost = 200 GPU-h x $4 / efficiency. The article's own 4-5 h for 64 GPUs means efficiency "
            f"{ideal_h / hours_64_high:.0%}-{ideal_h / hours_64_low:.0%}, so ${cost_ideal / (ideal_h / hours_64_low):,.0f}"
            f"-${cost_ideal / (ideal_h / hours_64_high):,.0f}, not ${cost_ideal:,.0f}: equal cost holds only at 100%."
        ),
        assumptions=("the article's own estimate: 'the 64-GPU cluster might need 4-5 hours'",),
        figures=(
            ("ideal hours on 64 GPUs", ideal_h, "hours"),
            ("scaling efficiency at 4.5 h", eff, "fraction"),
            ("cost at 4 h", cost_ideal / (ideal_h / hours_64_low), "USD"),
            ("cost at 5 h", cost_ideal / (ideal_h / hours_64_high), "USD"),
        ),
    )


@register("asr_3b_cluster_cost", "cost")
def asr_3b_cluster_cost(
    days_one_gpu: float = 4.0, hours_cluster: float = 12.0, n_gpus: int = 8, price_ratio: float = 6.0
) -> Claim:
    """Relative cost of the cluster run: price_ratio x hours_cluster / hours_one_gpu."""
    hours_one = days_one_gpu * 24
    rel_cost = price_ratio * hours_cluster / hours_one
    speedup = hours_one / hours_cluster
    return Claim(
        key="asr_3b_cluster_cost",
        topic="cost",
        article="000",
        text="A 3B model: 4 days on one GPU or 12 h on 8 GPUs, but the cluster costs 6x more per hour, so stay single",
        quote=(
            "Training our 3B parameter ASR model takes 4 days on one GPU — we could cut that to 12 hours with a "
            "8-GPU cluster, but the cluster costs 6x more per hour."
        ),
        claimed=price_ratio,
        claimed_unit="x price per hour",
        computed=rel_cost,
        unit="x total cost",
        verdict="wrong" if rel_cost < 1 else "correct",
        check=(
            f"96 h x 1 vs 12 h x 6 = {rel_cost:.2f}: by its own numbers the cluster run costs {1 - rel_cost:.0%} less "
            f"and finishes {speedup:.0f}x sooner ({speedup / n_gpus:.0%} scaling efficiency, which the article "
            "elsewhere says never happens)."
        ),
        assumptions=("cost = price per hour x hours",),
        figures=(
            ("speedup", speedup, "x"),
            ("scaling efficiency", speedup / n_gpus, "fraction"),
            ("cluster cost / single-GPU cost", rel_cost, "ratio"),
        ),
    )


# ------------------------------------------------------------------------------------ economics (issue 12)
# Prices: gpukit/data/prices.csv through gpukit.prices (market rows only unless a claim is about the articles'
# own rows); cost models: gpukit.cost. H100 training rate: dense BF16 peak x 40% MFU (assumed).
def _h100_tokens_per_hour(n_params: float, gpus: int = 1, mfu: float = 0.4) -> float:
    from gpukit.catalog import get_gpu

    return gpus * 3600 * get_gpu("h100-sxm").peak_tflops("bf16") * 1e12 * mfu / (6 * n_params)


@register("h100_4_per_hour", "cost")
def h100_4_per_hour(claimed_usd: float = 4.0) -> Claim:
    """The table's stylized $4 per H100-hour against the market rows of gpukit/data/prices.csv."""
    lo, med, hi = market_range("h100-sxm")
    return Claim(
        key="h100_4_per_hour",
        topic="cost",
        article="000",
        text="An H100 costs about $4 per hour to rent (the cost table's stylized price)",
        quote="Cost comparison (stylized cloud pricing, July 2026):",
        claimed=claimed_usd,
        claimed_unit="USD/GPU-hour",
        computed=med,
        unit="USD/GPU-hour",
        verdict="plausible" if lo <= claimed_usd <= hi else "doubtful",
        check=(
            f"Market H100 SXM rows in gpukit/data/prices.csv: ${lo:.2f} (lowest) to ${hi:.2f} (AWS p5 on demand, 98.32/8), "
            f"median ${med:.2f}. $4 sits inside the range, above the specialist clouds and a third of AWS on demand."
        ),
        assumptions=("on-demand prices; the rows' dates are in gpukit/data/prices.csv",),
        figures=(
            ("lowest market row", lo, "USD/GPU-hour"),
            ("median market row", med, "USD/GPU-hour"),
            ("highest market row", hi, "USD/GPU-hour"),
        ),
    )


@register("cost_64_gpus_4_5_hours", "cost")
def cost_64_gpus_4_5_hours(n_params: float = 10e9, overlap: float = 0.0) -> Claim:
    """The article's 64-GPU correction ($1,024-1,280, +30-60%) against the predicted efficiency."""
    from gpukit.cost import article_table

    pred = article_table(n_params=n_params, overlap=overlap)[-1]
    eth = article_table(n_params=n_params, overlap=overlap, inter_link="eth-100g")[-1]
    low, high = 4 * 256, 5 * 256
    return Claim(
        key="cost_64_gpus_4_5_hours",
        topic="cost",
        article="000",
        text="In practice the 64-GPU run needs 4-5 h and costs $1,024-1,280: networking adds 30-60%",
        quote=(
            "In practice, the 64-GPU cluster might need 4-5 hours (cost $1,024-1,280). Networking overhead adds "
            "30-60%."
        ),
        claimed=low,
        claimed_unit="USD",
        computed=pred.cost_usd,
        unit="USD",
        verdict="plausible",
        check=(
            f"Arithmetic: 4 h x $256 = ${low:,}, 5 h x $256 = ${high:,}; 4/3.125 and 5/3.125 are +28% and +60% "
            f"(right). Predicted by the one step model for a 10B model (ZeRO-3 with its prefetch, NVLink + InfiniBand "
            f"NDR, fp32 gradients): efficiency "
            f"{pred.efficiency:.0%}, {pred.hours:.1f} h, ${pred.cost_usd:,.0f} (+{pred.cost_usd / 800 - 1:.0%}); over "
            f"100 GbE between nodes {eth.efficiency:.0%}, ${eth.cost_usd:,.0f} (+{eth.cost_usd / 800 - 1:.0%}). "
            + (
                "The range lies between the two networks: InfiniBand rails add less, one 100 GbE port per GPU more; "
                "30-60% describes a middling network, not every cluster."
                if pred.cost_usd < low < high < eth.cost_usd
                else "The range is the right order."
            )
        ),
        assumptions=(
            "8,192 tokens per GPU per step",
            f"the step model's overlap (ZeRO-3 prefetch) and {overlap:.0%} of what stays exposed hidden",
        ),
        figures=(
            ("predicted efficiency, IB", pred.efficiency, "fraction"),
            ("predicted cost, IB", pred.cost_usd, "USD"),
            ("predicted cost, 100 GbE", eth.cost_usd, "USD"),
        ),
    )


@register("decision_single_budget_1k", "cost")
def decision_single_budget_1k(budget_usd: float = 1000.0, n_params: float = 3e9) -> Claim:
    """What $1K buys on one H100 against the rule's 'hours to a day' and a 3B model."""
    _, med, _ = market_range("h100-sxm")
    gpu_hours = budget_usd / med
    day_usd = 24 * med
    tokens = gpu_hours * _h100_tokens_per_hour(n_params)
    return Claim(
        key="decision_single_budget_1k",
        topic="cost",
        article="000",
        text="Stay on one GPU when the training budget is under $1K per experiment",
        quote="Training budget < $1K per experiment",
        claimed=budget_usd,
        claimed_unit="USD",
        computed=day_usd,
        unit="USD",
        verdict="plausible",
        check=(
            f"Computed: what the same rule's other line, 'hours to a day' on one GPU, costs at the median "
            f"${med:.2f}/H100-hour: at most ${day_usd:,.0f}. $1K buys {gpu_hours:,.0f} GPU-hours = "
            f"{gpu_hours / 24:.0f} days of one GPU, so the budget line is the looser of the two, but consistent "
            f"with staying on one GPU: {tokens / 1e9:.0f}B tokens of a 3B model (a compute-optimal 3B run needs "
            f"{20 * n_params / 1e9:.0f}B)."
        ),
        assumptions=("median market H100 price", "6N FLOPs per token at 40% MFU"),
        figures=(
            ("GPU-hours for $1K", gpu_hours, "GPU-hours"),
            ("one GPU-day", day_usd, "USD"),
            ("3B tokens for $1K", tokens, "tokens"),
        ),
    )


@register("decision_cluster_5_20_per_hr", "cost")
def decision_cluster_5_20_per_hr(low: float = 5.0, high: float = 20.0) -> Claim:
    """Market prices of 4- and 8-GPU A100/H100 configurations against $5-20/hr."""
    from gpukit.prices import load_prices

    rows = [
        r
        for r in load_prices().rows
        if not r.is_article
        and r.price_usd_per_h
        and r.count in (4, 8)
        and r.gpu in ("h100-sxm", "h100-pcie", "a100-80gb", "a100-40gb")
    ]
    per_gpu = [r.usd_per_gpu_hour for r in rows]
    # a 4-8 GPU cluster at each single-GPU market price too
    from gpukit.prices import quote

    med = quote("h100-sxm", policy="median").usd_per_gpu_hour
    inside = sum(low <= r.price_usd_per_h <= high for r in rows)
    return Claim(
        key="decision_cluster_5_20_per_hr",
        topic="cost",
        article="000",
        text="A 4-8 GPU cluster costs $5-20/hr in the cloud",
        quote="Budget allows $5-20/hr on cloud clusters",
        claimed=high,
        claimed_unit="USD/hour",
        computed=8 * med,
        unit="USD/hour",
        verdict="plausible" if inside >= len(rows) / 2 else "doubtful",
        check=(
            f"{inside} of {len(rows)} market 4- and 8-GPU A100/H100 rows fall in $5-20/hr; 4 H100s at the median "
            f"${med:.2f}/GPU-hour are ${4 * med:.2f}/hr, 8 are ${8 * med:.2f}/hr; AWS p5 is $98.32. $5-20 fits A100 "
            "nodes and 4-GPU H100 slices on specialist clouds, not 8 H100s or the hyperscalers."
        ),
        assumptions=("on-demand list prices of gpukit/data/prices.csv",),
        figures=tuple((f"{r.cloud} {r.instance_type}", r.price_usd_per_h, "USD/hour") for r in rows)
        + (("cheapest per GPU-hour", min(per_gpu), "USD/GPU-hour"),),
    )


@register("decision_big_50k", "cost")
def decision_big_50k(n_params: float = 20e9, gpus: int = 64) -> Claim:
    """Cost of a compute-optimal 20B run (20 tokens/param) on 64 H100s at the median price."""
    from gpukit.cost import training_cost

    t = training_cost(n_params, 20 * n_params, "h100-sxm", [gpus], zero_stage=3)
    r = t.rows[0]
    return Claim(
        key="decision_big_50k",
        topic="cost",
        article="000",
        text="Going big (>20B, 16+ GPUs across nodes) means a budget over $50K per training run",
        quote="Budget > $50K per training run",
        claimed=50_000,
        claimed_unit="USD",
        computed=r.cost_usd,
        unit="USD",
        verdict="correct" if r.cost_usd > 50_000 else "doubtful",
        check=(
            f"A compute-optimal 20B run ({20 * n_params / 1e9:.0f}B tokens) on {gpus} H100s at ${r.usd_per_gpu_hour:.2f}"
            f"/GPU-hour: {r.gpu_hours:,.0f} GPU-hours, {r.hours / 24:.1f} days, ${r.cost_usd:,.0f}: above $50K, so the "
            "threshold is consistent with the model sizes it names."
        ),
        assumptions=(
            "Hoffmann et al. 2022: 20 tokens per parameter",
            "40% MFU, ZeRO-3, predicted efficiency",
        ),
        figures=(
            ("GPU-hours", r.gpu_hours, "GPU-hours"),
            ("days", r.hours / 24, "days"),
            ("cost", r.cost_usd, "USD"),
        ),
    )


@register("infiniband_doubles_cost", "cost")
def infiniband_doubles_cost(cluster_usd: float = 1.2e6, network_usd: float = 150e3) -> Claim:
    """Article 002's own networking figure as a share of its cluster."""
    premium = network_usd / cluster_usd
    return Claim(
        key="infiniband_doubles_cost",
        topic="cost",
        article="000",
        text="InfiniBand doubles the cost of a cluster",
        quote="InfiniBand changes that — but it doubles cluster cost.",
        claimed=1.0,
        claimed_unit="cost added",
        computed=premium,
        unit="cost added",
        verdict=verdict_from_ratio(premium / 1.0),
        check=(
            f"Article 002 prices InfiniBand switches and cables for 32 H100s at $150K on a $1.2M cluster: "
            f"+{premium:.1%}, not +100%. Doubling would need $1.2M of networking ($37,500 per GPU port)."
        ),
        assumptions=("the companion article's own prices (gpukit has no switch price list)",),
        figures=(("networking share", premium, "fraction"), ("per GPU", network_usd / 32, "USD")),
    )


@register("node_30_50_per_hr", "cost")
def node_30_50_per_hr(low: float = 30.0, high: float = 50.0) -> Claim:
    """8-GPU instance prices of gpukit/data/prices.csv against $30-50/hr."""
    from statistics import median

    from gpukit.prices import load_prices

    rows = [r for r in load_prices().rows if not r.is_article and r.count == 8 and r.price_usd_per_h]
    prices = sorted(r.price_usd_per_h for r in rows)
    med = median(prices)
    return Claim(
        key="node_30_50_per_hr",
        topic="cost",
        article="000",
        text="Renting one 8-GPU node costs about $30-50/hr",
        quote="Cost ~$30-50/hr.",
        claimed=(low + high) / 2,
        claimed_unit="USD/hour",
        computed=med,
        unit="USD/hour",
        verdict=verdict_from_ratio(med / ((low + high) / 2)),
        check=(
            f"8-GPU market rows: {', '.join(f'${p:g}' for p in prices)} (median ${med:.2f}). Specialist clouds rent "
            "8 H100s for $22-28, 8 A100s for $10-15; AWS p4d on demand is $32.77 and p5 $98.32: $30-50 is one "
            "hyperscaler A100 node."
        ),
        assumptions=("the article names Lambda, Vast.ai, AWS p4d/p5; no GPU type is given",),
        figures=tuple((f"{r.cloud} {r.instance_type}", r.price_usd_per_h, "USD/hour") for r in rows),
    )


@register("startup_80k_32gpu_1b_2x", "cost")
def startup_80k_32gpu_1b_2x(
    spend_usd: float = 80_000, gpus: int = 32, speedup: float = 2.0, n_params: float = 1e9
) -> Claim:
    """Amdahl: 2x on 32 GPUs = 6.25% efficiency; the same work on one GPU costs spend x speedup / gpus."""
    from gpukit.catalog import get_model
    from gpukit.plan import plan

    eff = speedup / gpus
    one_gpu = spend_usd * speedup / gpus
    a100_tok_s = 3600 * 312e12 * 0.4 / (6 * n_params) / 3600  # A100 bf16 peak 312 TFLOP/s
    loader = speedup * a100_tok_s
    r = plan(
        "pretrain",
        get_model("opt-1.3b"),
        tokens=26e9,
        gpus={"a100-80gb": 1.9},
        counts=(1, 2, 4, 8, 16, 32),
        loader_tokens_per_s=loader,
    )
    return Claim(
        key="startup_80k_32gpu_1b_2x",
        topic="cost",
        article="000",
        text="$80K on a 32-GPU cluster for a 1B model gave 2x: the data pipeline was the bottleneck",
        quote=(
            "A friend at a Series A startup in 2025 spent $80K on a 32-GPU cluster to train a 1B model. They got 2x "
            "speedup over a single GPU because their data pipeline was I/O bound."
        ),
        claimed=spend_usd,
        claimed_unit="USD",
        computed=one_gpu,
        unit="USD",
        verdict="plausible",
        check=(
            f"2x on 32 GPUs = {eff:.2%} efficiency: every unit of work cost {gpus / speedup:.0f}x, so one GPU would "
            f"have done it for ${one_gpu:,.0f} in twice the time (the article's conclusion holds). The loader "
            f"delivered only {loader:,.0f} tokens/s (2 A100s' appetite at 40% MFU), about {loader * 4 / 1e6:.2f} MB/s "
            f"of text at 4 bytes/token: slow for text, plausible for images or audio. With that loader the planner "
            f"picks {r.best.gpus if r.best else '?'} GPU(s) and marks more as input-bound."
        ),
        assumptions=("A100 80GB, 40% MFU", "the $80K bought rented GPU time"),
        figures=(
            ("efficiency", eff, "fraction"),
            ("same work on one GPU", one_gpu, "USD"),
            ("loader rate implied", loader, "tokens/s"),
        ),
    )
