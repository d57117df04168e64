"""Cost claims of the seed articles (the cost table, equal total cost, cluster vs single GPU), audited
by their own arithmetic. Registered under topic "cost" in gpukit.audits.claims (see there for Claim and
the registry). The economics claims (prices, buy vs rent, spot, cluster budgets; issue 12) follow, audited
with gpukit.prices and gpukit.cost. Used in: notebooks/03_compute_and_time, notebooks/08_cluster_economics,
tests/test_claims.py, tests/test_claims_plan_cost.py.
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


# ------------------------------------------------------------------------------------ economics (issue 12)
# Prices: data/prices.csv through gpukit.prices (market rows only unless a claim is about the articles'
# own rows); cost models: gpukit.cost. H100 training rate: dense BF16 peak x 40% MFU (assumed).
def _market_h100() -> tuple[float, float, float]:
    """(lowest, median, highest) market on-demand USD per H100 SXM GPU-hour in data/prices.csv."""
    from gpukit.prices import quote

    return tuple(quote("h100-sxm", policy=p).usd_per_gpu_hour for p in ("lowest", "median", "highest"))


def _h100_tokens_per_hour(n_params: float, gpus: int = 1, mfu: float = 0.4) -> float:
    from gpukit.catalog import get_gpu

    return gpus * 3600 * get_gpu("h100-sxm").peak_tflops("bf16") * 1e12 * mfu / (6 * n_params)


@register("h100_4_per_hour", "cost")
def h100_4_per_hour(claimed_usd: float = 4.0) -> Claim:
    """The table's stylized $4 per H100-hour against the market rows of data/prices.csv."""
    lo, med, hi = _market_h100()
    return Claim(
        key="h100_4_per_hour", topic="cost", article="000",
        text="An H100 costs about $4 per hour to rent (the cost table's stylized price)",
        quote="Cost comparison (stylized cloud pricing, July 2026):",
        claimed=claimed_usd, claimed_unit="USD/GPU-hour", computed=med, unit="USD/GPU-hour",
        verdict="plausible" if lo <= claimed_usd <= hi else "doubtful",
        check=(f"Market H100 SXM rows in data/prices.csv: ${lo:.2f} (lowest) to ${hi:.2f} (AWS p5 on demand, 98.32/8), "
               f"median ${med:.2f}. $4 sits inside the range, above the specialist clouds and a third of AWS on demand."),
        assumptions=("on-demand prices; the rows' dates are in data/prices.csv",),
        figures=(("lowest market row", lo, "USD/GPU-hour"), ("median market row", med, "USD/GPU-hour"),
                 ("highest market row", hi, "USD/GPU-hour")))


@register("cost_64_gpus_4_5_hours", "cost")
def cost_64_gpus_4_5_hours(n_params: float = 10e9, overlap: float = 0.0) -> Claim:
    """The article's 64-GPU correction ($1,024-1,280, +30-60%) against the predicted efficiency."""
    from gpukit.cost import article_table

    pred = article_table(n_params=n_params, overlap=overlap)[-1]
    eth = article_table(n_params=n_params, overlap=overlap, inter_link="eth-100g")[-1]
    low, high = 4 * 256, 5 * 256
    return Claim(
        key="cost_64_gpus_4_5_hours", topic="cost", article="000",
        text="In practice the 64-GPU run needs 4-5 h and costs $1,024-1,280: networking adds 30-60%",
        quote=("In practice, the 64-GPU cluster might need 4-5 hours (cost $1,024-1,280). Networking overhead adds "
               "30-60%."),
        claimed=low, claimed_unit="USD", computed=pred.cost_usd, unit="USD",
        verdict="plausible",
        check=(f"Arithmetic: 4 h x $256 = ${low:,}, 5 h x $256 = ${high:,}; 4/3.125 and 5/3.125 are +28% and +60% "
               f"(right). Predicted for a 10B model (ZeRO-3, NVLink + InfiniBand NDR, no overlap): efficiency "
               f"{pred.efficiency:.0%}, {pred.hours:.1f} h, ${pred.cost_usd:,.0f} (+{pred.cost_usd / 800 - 1:.0%}); over "
               f"100 GbE between nodes {eth.efficiency:.0%}, ${eth.cost_usd:,.0f} (+{eth.cost_usd / 800 - 1:.0%}). "
               "The range is the right order; InfiniBand with overlap lands below it."),
        assumptions=("8,192 tokens per GPU per step", f"overlap {overlap:.0%} of the all-reduce hidden"),
        figures=(("predicted efficiency, IB", pred.efficiency, "fraction"), ("predicted cost, IB", pred.cost_usd, "USD"),
                 ("predicted cost, 100 GbE", eth.cost_usd, "USD")))


@register("decision_single_budget_1k", "cost")
def decision_single_budget_1k(budget_usd: float = 1000.0, n_params: float = 3e9) -> Claim:
    """What $1K buys on one H100 against the rule's 'hours to a day' and a 3B model."""
    _, med, _ = _market_h100()
    gpu_hours = budget_usd / med
    day_usd = 24 * med
    tokens = gpu_hours * _h100_tokens_per_hour(n_params)
    return Claim(
        key="decision_single_budget_1k", topic="cost", article="000",
        text="Stay on one GPU when the training budget is under $1K per experiment",
        quote="Training budget < $1K per experiment",
        claimed=budget_usd, claimed_unit="USD", computed=gpu_hours, unit="GPU-hours",
        verdict="plausible",
        check=(f"At the median ${med:.2f}/H100-hour, $1K buys {gpu_hours:,.0f} GPU-hours = {gpu_hours / 24:.0f} days of "
               f"one GPU; the same rule's 'hours to a day' costs at most ${day_usd:,.0f}. The budget line is loose but "
               f"consistent: {tokens / 1e9:.0f}B tokens of a 3B model (a compute-optimal 3B run needs "
               f"{20 * n_params / 1e9:.0f}B)."),
        assumptions=("median market H100 price", "6N FLOPs per token at 40% MFU"),
        figures=(("GPU-hours for $1K", gpu_hours, "GPU-hours"), ("one GPU-day", day_usd, "USD"),
                 ("3B tokens for $1K", tokens, "tokens")))


@register("decision_cluster_5_20_per_hr", "cost")
def decision_cluster_5_20_per_hr(low: float = 5.0, high: float = 20.0) -> Claim:
    """Market prices of 4- and 8-GPU A100/H100 configurations against $5-20/hr."""
    from gpukit.prices import load_prices

    rows = [r for r in load_prices().rows if not r.is_article and r.price_usd_per_h and r.count in (4, 8)
            and r.gpu in ("h100-sxm", "h100-pcie", "a100-80gb", "a100-40gb")]
    per_gpu = [r.usd_per_gpu_hour for r in rows]
    # a 4-8 GPU cluster at each single-GPU market price too
    from gpukit.prices import quote

    med = quote("h100-sxm", policy="median").usd_per_gpu_hour
    inside = sum(low <= r.price_usd_per_h <= high for r in rows)
    return Claim(
        key="decision_cluster_5_20_per_hr", topic="cost", article="000",
        text="A 4-8 GPU cluster costs $5-20/hr in the cloud",
        quote="Budget allows $5-20/hr on cloud clusters",
        claimed=high, claimed_unit="USD/hour", computed=8 * med, unit="USD/hour",
        verdict="plausible" if inside >= len(rows) / 2 else "doubtful",
        check=(f"{inside} of {len(rows)} market 4- and 8-GPU A100/H100 rows fall in $5-20/hr; 4 H100s at the median "
               f"${med:.2f}/GPU-hour are ${4 * med:.2f}/hr, 8 are ${8 * med:.2f}/hr; AWS p5 is $98.32. $5-20 fits A100 "
               "nodes and 4-GPU H100 slices on specialist clouds, not 8 H100s or the hyperscalers."),
        assumptions=("on-demand list prices of data/prices.csv",),
        figures=tuple((f"{r.cloud} {r.instance_type}", r.price_usd_per_h, "USD/hour") for r in rows)
        + (("cheapest per GPU-hour", min(per_gpu), "USD/GPU-hour"),))


@register("decision_big_50k", "cost")
def decision_big_50k(n_params: float = 20e9, gpus: int = 64) -> Claim:
    """Cost of a compute-optimal 20B run (20 tokens/param) on 64 H100s at the median price."""
    from gpukit.cost import training_cost

    t = training_cost(n_params, 20 * n_params, "h100-sxm", [gpus], zero_stage=3)
    r = t.rows[0]
    return Claim(
        key="decision_big_50k", topic="cost", article="000",
        text="Going big (>20B, 16+ GPUs across nodes) means a budget over $50K per training run",
        quote="Budget > $50K per training run",
        claimed=50_000, claimed_unit="USD", computed=r.cost_usd, unit="USD",
        verdict="correct" if r.cost_usd > 50_000 else "doubtful",
        check=(f"A compute-optimal 20B run ({20 * n_params / 1e9:.0f}B tokens) on {gpus} H100s at ${r.usd_per_gpu_hour:.2f}"
               f"/GPU-hour: {r.gpu_hours:,.0f} GPU-hours, {r.hours / 24:.1f} days, ${r.cost_usd:,.0f}: above $50K, so the "
               "threshold is consistent with the model sizes it names."),
        assumptions=("Hoffmann et al. 2022: 20 tokens per parameter", "40% MFU, ZeRO-3, predicted efficiency"),
        figures=(("GPU-hours", r.gpu_hours, "GPU-hours"), ("days", r.hours / 24, "days"), ("cost", r.cost_usd, "USD")))


@register("infiniband_doubles_cost", "cost")
def infiniband_doubles_cost(cluster_usd: float = 1.2e6, network_usd: float = 150e3) -> Claim:
    """Article 002's own networking figure as a share of its cluster."""
    premium = network_usd / cluster_usd
    return Claim(
        key="infiniband_doubles_cost", topic="cost", article="000",
        text="InfiniBand doubles the cost of a cluster",
        quote="InfiniBand changes that — but it doubles cluster cost.",
        claimed=1.0, claimed_unit="cost added", computed=premium, unit="cost added",
        verdict=verdict_from_ratio(premium / 1.0),
        check=(f"Article 002 prices InfiniBand switches and cables for 32 H100s at $150K on a $1.2M cluster: "
               f"+{premium:.1%}, not +100%. Doubling would need $1.2M of networking ($37,500 per GPU port)."),
        assumptions=("the companion article's own prices (gpukit has no switch price list)",),
        figures=(("networking share", premium, "fraction"), ("per GPU", network_usd / 32, "USD")))


@register("node_30_50_per_hr", "cost")
def node_30_50_per_hr(low: float = 30.0, high: float = 50.0) -> Claim:
    """8-GPU instance prices of data/prices.csv against $30-50/hr."""
    from statistics import median

    from gpukit.prices import load_prices

    rows = [r for r in load_prices().rows if not r.is_article and r.count == 8 and r.price_usd_per_h]
    prices = sorted(r.price_usd_per_h for r in rows)
    med = median(prices)
    return Claim(
        key="node_30_50_per_hr", topic="cost", article="000",
        text="Renting one 8-GPU node costs about $30-50/hr",
        quote="Cost ~$30-50/hr.",
        claimed=(low + high) / 2, claimed_unit="USD/hour", computed=med, unit="USD/hour",
        verdict=verdict_from_ratio(med / ((low + high) / 2)),
        check=(f"8-GPU market rows: {', '.join(f'${p:g}' for p in prices)} (median ${med:.2f}). Specialist clouds rent "
               "8 H100s for $22-28, 8 A100s for $10-15; AWS p4d on demand is $32.77 and p5 $98.32: $30-50 is one "
               "hyperscaler A100 node."),
        assumptions=("the article names Lambda, Vast.ai, AWS p4d/p5; no GPU type is given",),
        figures=tuple((f"{r.cloud} {r.instance_type}", r.price_usd_per_h, "USD/hour") for r in rows))


@register("startup_80k_32gpu_1b_2x", "cost")
def startup_80k_32gpu_1b_2x(spend_usd: float = 80_000, gpus: int = 32, speedup: float = 2.0,
                            n_params: float = 1e9) -> Claim:
    """Amdahl: 2x on 32 GPUs = 6.25% efficiency; the same work on one GPU costs spend x speedup / gpus."""
    from gpukit.catalog import get_model
    from gpukit.plan import plan

    eff = speedup / gpus
    one_gpu = spend_usd * speedup / gpus
    a100_tok_s = 3600 * 312e12 * 0.4 / (6 * n_params) / 3600  # A100 bf16 peak 312 TFLOP/s
    loader = speedup * a100_tok_s
    r = plan("pretrain", get_model("opt-1.3b"), tokens=26e9, gpus={"a100-80gb": 1.9}, counts=(1, 2, 4, 8, 16, 32),
             loader_tokens_per_s=loader)
    return Claim(
        key="startup_80k_32gpu_1b_2x", topic="cost", article="000",
        text="$80K on a 32-GPU cluster for a 1B model gave 2x: the data pipeline was the bottleneck",
        quote=("A friend at a Series A startup in 2025 spent $80K on a 32-GPU cluster to train a 1B model. They got 2x "
               "speedup over a single GPU because their data pipeline was I/O bound."),
        claimed=spend_usd, claimed_unit="USD", computed=one_gpu, unit="USD",
        verdict="plausible",
        check=(f"2x on 32 GPUs = {eff:.2%} efficiency: every unit of work cost {gpus / speedup:.0f}x, so one GPU would "
               f"have done it for ${one_gpu:,.0f} in twice the time (the article's conclusion holds). The loader "
               f"delivered only {loader:,.0f} tokens/s (2 A100s' appetite at 40% MFU), about {loader * 4 / 1e6:.2f} MB/s "
               f"of text at 4 bytes/token: slow for text, plausible for images or audio. With that loader the planner "
               f"picks {r.best.gpus if r.best else '?'} GPU(s) and marks more as input-bound."),
        assumptions=("A100 80GB, 40% MFU", "the $80K bought rented GPU time"),
        figures=(("efficiency", eff, "fraction"), ("same work on one GPU", one_gpu, "USD"),
                 ("loader rate implied", loader, "tokens/s")))


@register("h100_30k_retail", "cost")
def h100_30k_retail(price_usd: float = 30_000, years: float = 3.0) -> Claim:
    """Owned cost per GPU-hour of a $30K H100 (plus power) against the market rent."""
    from gpukit.cost import buy_vs_rent

    _, med, _ = _market_h100()
    b = buy_vs_rent("h100-sxm", 1, price_usd, rent_per_gpu_hour=med, years=years, utilization=1.0)
    return Claim(
        key="h100_30k_retail", topic="cost", article="002",
        text="One H100 costs about $30,000 to buy",
        quote="Buying a single H100 today (August 2026) costs around $30,000 retail.",
        claimed=price_usd, claimed_unit="USD", computed=b.owned_cost_per_gpu_hour, unit="USD/GPU-hour owned",
        verdict="plausible",
        check=(f"gpukit ships no retail price list, so check consistency: $30K over {years:g} years at full use is "
               f"${b.capital_per_gpu_hour:.2f}/h of capital + ${b.energy_per_gpu_hour:.2f}/h of energy = "
               f"${b.owned_cost_per_gpu_hour:.2f}/h against a median rent of ${med:.2f}; it pays back in "
               f"{b.break_even_months:.0f} months of full use. The same article's cluster is $37.5K per GPU with servers."),
        assumptions=("GPU only: no server, network, staff", "PUE 1.56, $0.10/kWh"),
        figures=(("owned per GPU-hour at 100%", b.owned_cost_per_gpu_hour, "USD/GPU-hour"),
                 ("break-even months at 100%", b.break_even_months, "months")))


@register("h100_50k_invoice", "cost")
def h100_50k_invoice(invoice_usd: float = 50_000, retail_usd: float = 30_000) -> Claim:
    """The opening $50K per H100 against the same article's $30K; four GPUs for $50K is $12.5K each."""
    return Claim(
        key="h100_50k_invoice", topic="cost", article="002",
        text="A single H100 invoices at $50K, the price of a four-GPU cluster",
        quote=("You’re staring at a $50K invoice for a single H100 GPU. Your colleague just bought a four-GPU cluster "
               "for the same price."),
        claimed=invoice_usd, claimed_unit="USD", computed=retail_usd, unit="USD",
        verdict="doubtful",
        check=(f"The same article later prices an H100 at ~${retail_usd:,} retail: $50K is {invoice_usd / retail_usd:.2f}x "
               f"that. Four GPUs for $50K are ${invoice_usd / 4:,.0f} each: workstation cards (RTX 6000 Ada, L40S "
               "class, 48 GB), not H100s, so the two options differ in memory per GPU and interconnect."),
        assumptions=("the article's own figures",),
        figures=(("per GPU in the four-GPU cluster", invoice_usd / 4, "USD"),))


@register("cluster_1_2m", "cost")
def cluster_1_2m(cluster_usd: float = 1.2e6, gpus: int = 32, gpu_usd: float = 30_000) -> Claim:
    """$1.2M for 32 H100 in 4 servers against 32 x $30K."""
    gpus_only = gpus * gpu_usd
    return Claim(
        key="cluster_1_2m", topic="cost", article="002",
        text="A 4-node cluster with 8 H100s each costs $1.2M",
        quote="A 4-node cluster with 8 H100s each? $1.2 million.",
        claimed=cluster_usd, claimed_unit="USD", computed=gpus_only, unit="USD",
        verdict=verdict_from_ratio(cluster_usd / gpus_only, correct=1.3),
        check=(f"32 x $30K (the article's GPU price) = ${gpus_only:,.0f}; $1.2M leaves ${(cluster_usd - gpus_only) / 4:,.0f} "
               "per 8-GPU server for CPUs, memory, NVMe, NVSwitch baseboard and chassis: consistent."),
        assumptions=("the article's own $30K per GPU",),
        figures=(("GPUs only", gpus_only, "USD"), ("per server besides GPUs", (cluster_usd - gpus_only) / 4, "USD")))


@register("networking_150k", "cost")
def networking_150k(network_usd: float = 150e3, gpus: int = 32) -> Claim:
    return Claim(
        key="networking_150k", topic="cost", article="002",
        text="InfiniBand networking for the 32-GPU cluster costs $150K",
        quote="Add networking (InfiniBand switches, cables): $150k.",
        claimed=network_usd, claimed_unit="USD", computed=network_usd / gpus, unit="USD per GPU",
        verdict="not checkable",
        check=(f"gpukit has no price source for switches, adapters and cables. The figure is ${network_usd / gpus:,.0f} "
               "per GPU port (12.5% of the cluster): compare with the other article's 'doubles cluster cost' "
               "(claim infiniband_doubles_cost)."))


@register("p4d_p5_prices", "cost")
def p4d_p5_prices(p4d: float = 32.77, p5: float = 98.32) -> Claim:
    """The articles' AWS prices against data/prices.csv's AWS p5 row."""
    from gpukit.prices import load_prices

    aws = [r for r in load_prices().rows if r.cloud == "aws" and r.instance_type == "p5.48xlarge"]
    row = aws[0].price_usd_per_h if aws else float("nan")
    return Claim(
        key="p4d_p5_prices", topic="cost", article="002",
        text="AWS p4d.24xlarge is $32.77/h and p5.48xlarge $98.32/h on demand",
        quote=("Renting on AWS: a single p4d.24xlarge instance (8 A100 GPUs) costs $32.77/hour on-demand. An 8-GPU "
               "p5.48xlarge (8 H100) is $98.32/hour."),
        claimed=p5, claimed_unit="USD/hour", computed=row, unit="USD/hour",
        verdict=verdict_from_ratio(row / p5, correct=1.01),
        check=(f"data/prices.csv: p5.48xlarge ${row:g}/h (AWS list price reported July 2023); per GPU ${p5 / 8:.2f} "
               f"(H100) and ${p4d / 8:.2f} (A100 40GB), 2-5x the specialist clouds. AWS capacity blocks were "
               "$39.33 (p5) and $14.75 (p4d) per hour."),
        assumptions=("us-east-1 on demand; a reported 2026 price cut could not be confirmed on an AWS page",),
        figures=(("p5 per GPU-hour", p5 / 8, "USD/GPU-hour"), ("p4d per GPU-hour", p4d / 8, "USD/GPU-hour")))


@register("hundred_hours_3277_9832", "cost")
def hundred_hours_3277_9832(hours: float = 100.0, p4d: float = 32.77, p5: float = 98.32) -> Claim:
    """Same hours on both instances vs the same job: the H100 finishes ~3x sooner (dense BF16 peak)."""
    from gpukit.catalog import get_gpu

    speed = get_gpu("h100-sxm").peak_tflops("bf16") / get_gpu("a100-40gb").peak_tflops("bf16")
    p5_job = hours / speed * p5
    return Claim(
        key="hundred_hours_3277_9832", topic="cost", article="002",
        text="A 100-hour run costs $3,277 on p4d and $9,832 on p5",
        quote="If you train a model that takes 100 hours, that’s $3,277 vs $9,832.",
        claimed=hours * p5, claimed_unit="USD", computed=p5_job, unit="USD",
        verdict="misleading",
        check=(f"100 x $32.77 = ${hours * p4d:,.0f} and 100 x $98.32 = ${hours * p5:,.0f} (arithmetic right). But a job "
               f"that takes 100 h on 8 A100s takes about {hours / speed:.0f} h on 8 H100s ({speed:.1f}x the dense BF16 "
               f"peak): ${p5_job:,.0f}, about the same as on p4d. Compare jobs, not hours."),
        assumptions=("equal MFU on both GPUs (compute-bound training)",),
        figures=(("p4d, 100 h", hours * p4d, "USD"), ("p5, same job", p5_job, "USD"), ("H100/A100 peak", speed, "x")))


@register("rental_6_months_1_4m", "cost")
def rental_6_months_1_4m(months: float = 6.0, nodes: int = 4, p5: float = 98.32) -> Claim:
    """Six months 24/7 of the 32-GPU cluster rented as 4 p5.48xlarge."""
    from gpukit.cost import HOURS_PER_MONTH

    rent = nodes * p5 * HOURS_PER_MONTH * months
    return Claim(
        key="rental_6_months_1_4m", topic="cost", article="002",
        text="Renting 24/7 for 6 months adds up to $1.4M",
        quote="But if you train 24/7 for 6 months, rental adds up to $1.4M.",
        claimed=1.4e6, claimed_unit="USD", computed=rent, unit="USD",
        verdict=verdict_from_ratio(rent / 1.4e6),
        check=(f"The 32-GPU cluster the article prices at $1.35M, rented as {nodes} p5.48xlarge at ${p5}/h for "
               f"{months:g} x 730 h: ${rent / 1e6:.2f}M; $1.4M is {1.4e6 / (HOURS_PER_MONTH * months * 32):.2f} per "
               "GPU-hour. At specialist-cloud prices the same half-year costs about a quarter of that."),
        assumptions=("AWS on-demand list price, no savings plan",),
        figures=(("rent, 4 x p5, 6 months", rent, "USD"),))


@register("buy_at_90_utilization", "cost")
def buy_at_90_utilization(capex: float = 1.2e6, network: float = 150e3, gpus: int = 32, years: float = 3.0) -> Claim:
    """Break-even utilization of the article's cluster against AWS p5 and against the median market rent."""
    from gpukit.cost import buy_vs_rent

    lo, med, _ = _market_h100()
    aws = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=98.32 / 8, years=years)
    mkt = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=med, years=years)
    low = buy_vs_rent("h100-sxm", gpus, capex, network_usd=network, rent_per_gpu_hour=lo, years=years)
    return Claim(
        key="buy_at_90_utilization", topic="cost", article="002",
        text="If the cluster runs at 90% utilization for months, buy",
        quote="But if your GPU cluster runs at 90% utilization for months, buy.",
        claimed=0.9, claimed_unit="utilization", computed=mkt.break_even_utilization, unit="utilization",
        verdict="plausible" if mkt.break_even_utilization <= 0.9 else "misleading",
        check=(f"$1.35M over {years:g} years (PUE 1.56, $0.10/kWh, no staff): owning matches renting at "
               f"{aws.break_even_utilization:.0%} utilization against AWS p5 on demand, {mkt.break_even_utilization:.0%} "
               f"against the median market H100 (${med:.2f}), {low.break_even_utilization:.0%} against the cheapest "
               f"(${lo:.2f}). At 90%, 'buy' holds against the hyperscaler and the median, and the break-even against "
               "the cheapest rows is the one to check."),
        assumptions=("straight-line depreciation, no resale, no operations staff (add them: ops_usd_per_year)",),
        figures=(("break-even vs AWS p5", aws.break_even_utilization, "fraction"),
                 ("break-even vs median market", mkt.break_even_utilization, "fraction"),
                 ("break-even vs cheapest market", low.break_even_utilization, "fraction"),
                 ("break-even months at 70% vs AWS", aws.break_even_months, "months")))


@register("eight_weeks_vs_one_week", "cost")
def eight_weeks_vs_one_week(single_usd: float = 4000.0, cluster_usd: float = 3000.0) -> Claim:
    """Same GPU-hours in both plans: the cluster can be cheaper only at a lower price per GPU-hour."""
    from gpukit.cost import buy_vs_rent, predicted_efficiency

    gpu_hours = 8 * 7 * 24  # 1 GPU x 8 weeks = 8 GPUs x 1 week
    p1, p8 = single_usd / gpu_hours, cluster_usd / gpu_hours
    eff = predicted_efficiency(70e9, "h100-sxm", 8, zero_stage=3).efficiency
    owned = buy_vs_rent("h100-sxm", 1, 30_000, rent_per_gpu_hour=p1, utilization=1.0)
    return Claim(
        key="eight_weeks_vs_one_week", topic="cost", article="002",
        text="1 GPU for 8 weeks: $0 owned or ~$4,000 spot; 8 GPUs for 1 week on spot: ~$3,000, cheaper",
        quote=("The choice: 1 GPU for 8 weeks (single GPU, using quantized training) vs 8 GPUs for 1 week. Single GPU "
               "cost: $0 (owned) or ~$4,000 rental (spot). 8-GPU cluster (spot): ~$3,000."),
        claimed=cluster_usd, claimed_unit="USD", computed=single_usd / eff, unit="USD",
        verdict="misleading",
        check=(f"Both plans are {gpu_hours:,} GPU-hours (8 weeks x 1 = 1 week x 8, i.e. perfect scaling). $4,000 is "
               f"${p1:.2f}/GPU-hour, $3,000 is ${p8:.2f}: the cluster is cheaper only because its spot price per GPU-hour "
               f"is {1 - p8 / p1:.0%} lower, not because of the cluster. At the same price and the predicted "
               f"{eff:.0%} efficiency (70B, ZeRO-3) it costs ${single_usd / eff:,.0f}. '$0 owned' ignores "
               f"${owned.owned_cost_per_gpu_hour * gpu_hours:,.0f} of depreciation and power for those 8 weeks."),
        assumptions=("a $30K H100 over 3 years for the owned cost", "8 GPUs in one node"),
        figures=(("GPU-hours", gpu_hours, "GPU-hours"), ("single GPU USD/GPU-hour", p1, "USD"),
                 ("cluster USD/GPU-hour", p8, "USD"), ("owned cost of 8 weeks", owned.owned_cost_per_gpu_hour * gpu_hours,
                                                       "USD")))


@register("spot_60_90", "cost")
def spot_60_90(discount: float = 0.6, preemptions_per_day: float = 2.0, checkpoint_minutes: float = 5.0,
               work_hours: float = 100.0) -> Claim:
    """Net saving of spot at a 60% (and 90%) discount after Daly-optimal checkpoints and restarts."""
    from gpukit.cost import spot_run
    from gpukit.prices import load_prices

    lo = spot_run(work_hours, 8, 1.0, 1 - discount, preemptions_per_day=preemptions_per_day,
                  checkpoint_minutes=checkpoint_minutes)
    hi = spot_run(work_hours, 8, 1.0, 0.1, preemptions_per_day=preemptions_per_day,
                  checkpoint_minutes=checkpoint_minutes)
    both = [r for r in load_prices().rows if r.price_usd_per_h and r.spot_usd_per_h and not r.is_article]
    row_disc = [1 - r.spot_usd_per_h / r.price_usd_per_h for r in both]
    return Claim(
        key="spot_60_90", topic="cost", article="002",
        text="Spot instances save 60-90% against on demand",
        quote="Spot saves 60–90% vs on-demand.",
        claimed=discount, claimed_unit="saving", computed=lo.savings, unit="saving",
        verdict="plausible",
        check=(f"60-90% is the list discount hyperscalers advertise (Google Cloud: 60-91%; AWS: up to 90%). What is "
               f"saved is less: at {preemptions_per_day:g} interruptions/day, {checkpoint_minutes:g}-min checkpoints "
               f"every {lo.daly_interval_hours:.1f} h (Daly) and 10-min restarts the job runs {lo.time_overhead:.0%} "
               f"longer, so a 60% discount saves {lo.savings:.0%} and 90% saves {hi.savings:.0%}. The one market row "
               f"with both prices (RunPod A100) is {max(row_disc, default=0):.0%} off."),
        assumptions=("interruptions of the whole job, exponential (Daly 2006)", f"{work_hours:g}-hour job on 8 GPUs"),
        figures=(("net saving at 60%", lo.savings, "fraction"), ("net saving at 90%", hi.savings, "fraction"),
                 ("time overhead", lo.time_overhead, "fraction")))


@register("inference_90pct_gpu_hours", "cost")
def inference_90pct_gpu_hours() -> Claim:
    return Claim(
        key="inference_90pct_gpu_hours", topic="cost", article="002",
        text="More than 90% of GPU hours in a typical AI company go to inference",
        quote="More than 90% of GPU hours in a typical AI company go to inference, not training.",
        claimed=0.9, claimed_unit="share of GPU-hours", computed=0.0, unit="n/a",
        verdict="not checkable",
        check=("No source is given and 'a typical AI company' is not defined; gpukit can price a given serving load "
               "(gpukit.cost.serving_cost) and a given training run, not an industry's mix."))
