"""Audits of the articles' data-parallel scaling claims with gpukit.scaling (notebook 05).

Every audit computes the claim with the bucket/overlap model over a ClusterNetwork and lists its
assumptions; where the verdict depends on one (overlap, ports per node, tokens per GPU), the
`figures` carry the same calculation with that assumption changed (the sensitivity).
Registered under the topic 'scaling' of gpukit.audits.claims.
"""

from __future__ import annotations

from gpukit.audits.claims import Claim, register, verdict_from_ratio
from gpukit.comm import cluster_network, coefficients
from gpukit.scaling import GRAD_DTYPE, ddp_buckets, hook_bytes, input_exposed_s, scaling, uniform_param_shapes
from gpukit.units import fmt_count

TOPIC = "scaling"


def _eff(
    model=None,
    n_params=None,
    *,
    gpu="h100-sxm",
    gpus,
    tokens_per_gpu,
    link="nvlink4",
    inter_link=None,
    ports_per_node=None,
    overlap=True,
    hook="none",
    grad_dtype=GRAD_DTYPE,
    efficiency=None,
    mfu=0.4,
    gpus_per_node=8,
    grad_accum=1,
    powersgd_rank=4,
):
    """(efficiency at the largest count, ScalingResult) of the DDP model. The audits argue at line rate (an
    ideal bound, stated in each claim's assumptions) unless a claim gives `efficiency` (the inter link's)."""
    net = cluster_network(
        link,
        inter_link,
        gpus_per_node=gpus_per_node,
        ports_per_node=ports_per_node,
        efficiency=1.0 if efficiency is None else efficiency,
        intra_efficiency=1.0,
    )
    r = scaling(
        model,
        n_params=n_params,
        gpu=gpu,
        gpus=gpus,
        network=net,
        tokens_per_gpu=tokens_per_gpu,
        grad_dtype=grad_dtype,
        hook=hook,
        overlap=overlap,
        mfu=mfu,
        grad_accum=grad_accum,
        powersgd_rank=powersgd_rank,
    )
    return r.rows[-1].efficiency, r


@register("sixteen_gpus_6x", TOPIC)
def sixteen_gpus_6x(
    n_params: float = 7e9,
    tokens_per_gpu: float = 4096,
    inter_link: str = "eth-100g",
    claimed_speedup: float = 6.0,
) -> Claim:
    """16 GPUs = 2 nodes x 8 (H100, NVLink inside): speedup over one GPU, GRAD_DTYPE gradients. The one
    audit of this quote (notebooks 03, 04 and 05 cite it)."""
    kw = dict(n_params=n_params, gpus=[1, 16], tokens_per_gpu=tokens_per_gpu, inter_link=inter_link)
    shared, _ = _eff(ports_per_node=1, **kw)
    shared_off, _ = _eff(ports_per_node=1, overlap=False, **kw)
    rail, _ = _eff(**kw)
    ib, _ = _eff(**{**kw, "inter_link": "ib-ndr"})
    return Claim(
        key="sixteen_gpus_6x",
        topic=TOPIC,
        article="000",
        text="A 16-GPU job ran only 6x faster than one GPU; the bottleneck was networking",
        quote="The first time I ran a 16-GPU training job and saw only 6x improvement over a single GPU, I was "
        "pissed. The bottleneck? Networking.",
        claimed=claimed_speedup,
        claimed_unit="x",
        computed=16 * shared,
        unit="x",
        verdict="plausible" if 16 * shared <= 2 * claimed_speedup else "doubtful",
        check=(
            f"{fmt_count(n_params)} params, {tokens_per_gpu:g} tokens per GPU, 2 nodes x 8 H100: one shared "
            f"{inter_link} port per node gives {16 * shared:.1f}x ({16 * shared_off:.1f}x without overlap); one "
            f"{inter_link} port per GPU {16 * rail:.1f}x; InfiniBand NDR per GPU {16 * ib:.1f}x. 6x fits a "
            "node that shares one Ethernet port, not a rail-optimized cluster."
        ),
        assumptions=(
            f"{GRAD_DTYPE} gradients (gpukit.scaling.GRAD_DTYPE), 40% MFU, hierarchical all-reduce",
            "line rate (ideal bound): real TCP reaches less, which lowers every figure",
        ),
        figures=(
            ("speedup, 1 shared Ethernet port per node", 16 * shared, "x"),
            ("speedup, shared port, no overlap", 16 * shared_off, "x"),
            ("speedup, Ethernet port per GPU", 16 * rail, "x"),
            ("speedup, IB NDR per GPU", 16 * ib, "x"),
        ),
    )


@register("dp_sagemaker_13b", TOPIC)
def dp_sagemaker_13b(
    tokens_per_gpu: float = 2048, claimed_4: float = 0.90, claimed_64: float = 0.65
) -> Claim:
    """13B on p4d (8 x A100, 400 Gb/s EFA per node = 4 x 100 Gb/s ports): efficiency at 4 and 64 GPUs."""
    kw = dict(gpu="a100-80gb", tokens_per_gpu=tokens_per_gpu, inter_link="efa-p4d", mfu=0.4)
    e4, _ = _eff("llama-2-13b", gpus=[1, 4], **kw)
    e64, r = _eff("llama-2-13b", gpus=[1, 64], **kw)
    e64_off, _ = _eff("llama-2-13b", gpus=[1, 64], overlap=False, **kw)
    e64_big, _ = _eff("llama-2-13b", gpus=[1, 64], **{**kw, "tokens_per_gpu": 4 * tokens_per_gpu})
    return Claim(
        key="dp_sagemaker_13b",
        topic=TOPIC,
        article="002",
        text="SageMaker: a 13B model's scaling efficiency fell from 90% at 4 GPUs to 65% at 64",
        quote="Distributed training in Amazon SageMaker AI shows that scaling efficiency for a 13B parameter model "
        "dropped from 90% at 4 GPUs to 65% at 64 GPUs.",
        claimed=claimed_64,
        claimed_unit="efficiency",
        computed=e64,
        unit="efficiency",
        verdict=verdict_from_ratio(e64 / claimed_64, correct=1.15),
        check=(
            f"A100 nodes with 8 x {r.network['inter_bandwidth_gbps']:g} GB/s EFA (p4d), {tokens_per_gpu:g} tokens "
            f"per GPU, fp32 gradients: {e4:.0%} at 4 GPUs (NVLink, one node), {e64:.0%} at 64 with overlap, "
            f"{e64_off:.0%} without; with 4x the tokens per GPU {e64_big:.0%}. The drop comes from leaving the "
            "node (EFA has a fraction of NVLink's bandwidth), not from all-reduce growing with N."
        ),
        assumptions=(
            "p4d: 400 Gb/s EFA per 8 GPUs (gpukit/data/interconnects.csv efa-p4d), line rate",
            "40% MFU; SageMaker's own setup (sharded data parallel?) is not stated in the article",
        ),
        figures=(
            ("efficiency at 4 GPUs", e4, "fraction"),
            ("efficiency at 64, overlap", e64, "fraction"),
            ("efficiency at 64, no overlap", e64_off, "fraction"),
            ("efficiency at 64, 4x tokens per GPU", e64_big, "fraction"),
        ),
    )


@register("dp_8x8_a100_ethernet", TOPIC)
def dp_8x8_a100_ethernet(
    n_params: float = 7e9, tokens_per_gpu: float = 4096, inter_link: str = "eth-100g", claimed: float = 0.35
) -> Claim:
    """8 nodes x 8 A100 over Ethernet: efficiency with one shared port per node vs one per GPU."""
    kw = dict(
        n_params=n_params,
        gpu="a100-80gb",
        gpus=[1, 64],
        tokens_per_gpu=tokens_per_gpu,
        link="nvlink3",
        inter_link=inter_link,
    )
    shared, _ = _eff(ports_per_node=1, **kw)
    shared_real, _ = _eff(ports_per_node=1, efficiency=0.6, **kw)
    rail, _ = _eff(**kw)
    off, _ = _eff(ports_per_node=1, overlap=False, **kw)
    return Claim(
        key="dp_8x8_a100_ethernet",
        topic=TOPIC,
        article="000",
        text="8 nodes of 8 A100s over Ethernet reach only 30-40% scaling efficiency",
        quote="I've seen clusters with 8 nodes of 8 A100s achieve only 30-40% scaling efficiency because the network "
        "couldn't keep up.",
        claimed=claimed,
        claimed_unit="efficiency",
        computed=shared,
        unit="efficiency",
        verdict="plausible" if min(shared, shared_real, off) <= 0.45 else "doubtful",
        check=(
            f"{fmt_count(n_params)} params, {tokens_per_gpu:g} tokens per GPU, fp32 gradients, one {inter_link} "
            f"port per node: {shared:.0%} at line rate, {shared_real:.0%} at 60% of it, {off:.0%} without overlap; "
            f"one port per GPU: {rail:.0%}. 30-40% is what a shared commodity port gives, not Ethernet as such."
        ),
        assumptions=(
            "A100, NVLink3 inside nodes, 40% MFU",
            "ports per node is the assumption the verdict hangs on",
        ),
        figures=(
            ("efficiency, 1 port per node", shared, "fraction"),
            ("efficiency, 1 port per node at 60% of line rate", shared_real, "fraction"),
            ("efficiency, 1 port per node, no overlap", off, "fraction"),
            ("efficiency, 1 port per GPU", rail, "fraction"),
        ),
    )


@register("dp_16_nodes_ethernet_below_50", TOPIC)
def dp_16_nodes_ethernet_below_50(
    comm_share_at_2: float = 0.10, inter_link: str = "eth-100g", claimed: float = 0.50
) -> Claim:
    """The article's premise (comm = 10% of compute on 2 NVLink GPUs) carried to 16 nodes x 8 over Ethernet:
    the all-reduce time scales with the bandwidth each GPU sees (hierarchical model)."""
    line = dict(efficiency=1.0, intra_efficiency=1.0)  # the claim's stated assumption: line rate
    net_rail = cluster_network("nvlink4", inter_link, **line)
    net_shared = cluster_network("nvlink4", inter_link, ports_per_node=1, **line)
    from gpukit.comm import network_all_reduce

    s = 1e9  # any size: the ratio is what matters (bandwidth-bound)
    t2 = network_all_reduce(s, 2, net_rail).time_s
    effs = {}
    for name, net in (("rail", net_rail), ("shared", net_shared)):
        ratio = network_all_reduce(s, 128, net).time_s / t2
        effs[name] = 1 / (1 + comm_share_at_2 * ratio)
    return Claim(
        key="dp_16_nodes_ethernet_below_50",
        topic=TOPIC,
        article="000",
        text="If comm is 10% of compute on 2 GPUs, efficiency is below 50% across 16 nodes on Ethernet",
        quote="and below 50% across 16 nodes on Ethernet.",  # the sentence's first half: comm_10pct_efficiency
        claimed=claimed,
        claimed_unit="efficiency",
        computed=effs["rail"],
        unit="efficiency",
        verdict="correct" if max(effs.values()) < claimed else "plausible",
        check=(
            f"over NVLink the all-reduce is 10% of compute; across 16 nodes it runs at {inter_link} speed: "
            f"{effs['rail']:.0%} with a port per GPU, {effs['shared']:.1%} with one port per node (no overlap). "
            "'Below 50%' is true, and by far: the premise (10% over NVLink) makes Ethernet 30-300x slower."
        ),
        assumptions=(
            "no overlap (the article's formula), weak scaling, line rate",
            "bandwidth-bound all-reduce",
        ),
        figures=(
            ("efficiency, port per GPU", effs["rail"], "fraction"),
            ("efficiency, one port per node", effs["shared"], "fraction"),
        ),
    )


@register("dp_fp16_hook_15_20", TOPIC)
def dp_fp16_hook_15_20(n_params: float = 7e9, tokens_per_gpu: float = 4096, claimed: float = 0.175) -> Claim:
    """fp16_compress_hook on 8 nodes x 8 H100 over InfiniBand NDR: speedup of the step; bytes halved."""
    kw = dict(n_params=n_params, gpus=[1, 64], tokens_per_gpu=tokens_per_gpu, inter_link="ib-ndr")
    gains = {}
    for name, extra in (
        ("overlap", {}),
        ("no overlap", {"overlap": False}),
        ("shared 100G port", {"inter_link": "eth-100g", "ports_per_node": 1}),
    ):
        _, a = _eff(**{**kw, **extra})
        _, b = _eff(hook="fp16", **{**kw, **extra})
        gains[name] = a.rows[-1].step_s / b.rows[-1].step_s - 1
    full = ddp_buckets(uniform_param_shapes(n_params), 25.0)
    ratio = sum(hook_bytes(b, "fp16") for b in full) / sum(hook_bytes(b, "none") for b in full)
    return Claim(
        key="dp_fp16_hook_15_20",
        topic=TOPIC,
        article="000",
        text="fp16_compress_hook halves the bytes and made an 8-node InfiniBand job 15-20% faster",
        quote="This hook casts gradients to FP16 before all-reduce, cutting bandwidth in half. On an 8-node cluster "
        "with InfiniBand, I measured a 15-20% speedup using this alone.",
        claimed=claimed,
        claimed_unit="speedup",
        computed=gains["no overlap"],
        unit="speedup",
        verdict="plausible" if min(gains.values()) <= claimed <= 1.5 * max(gains.values()) else "doubtful",
        check=(
            f"bytes: fp16/fp32 = {ratio:.2f} (exact, also measured by gpukit bench ddp). Step speedup on 64 H100s, "
            f"{tokens_per_gpu:g} tokens per GPU: {gains['overlap']:.0%} with overlap (the all-reduce is mostly "
            f"hidden), {gains['no overlap']:.0%} without, {gains['shared 100G port']:.0%} on a shared 100G port. "
            "15-20% needs an exposed all-reduce of roughly a third of the step."
        ),
        assumptions=("fp32 gradients before the hook; cast kernels at HBM bandwidth",),
        figures=(
            ("bytes ratio fp16/fp32", ratio, "x"),
            ("speedup, IB NDR, overlap", gains["overlap"], "fraction"),
            ("speedup, IB NDR, no overlap", gains["no overlap"], "fraction"),
            ("speedup, shared 100G port", gains["shared 100G port"], "fraction"),
        ),
    )


@register("dp_hook_overlaps", TOPIC)
def dp_hook_overlaps(n_params: float = 7e9, tokens_per_gpu: float = 4096) -> Claim:
    """Overlap comes from DDP's buckets (Li et al. 2020), hook or not: the model with and without overlap."""
    kw = dict(n_params=n_params, gpus=[1, 16], tokens_per_gpu=tokens_per_gpu, inter_link="ib-ndr")
    on, _ = _eff(**kw)
    off, _ = _eff(overlap=False, **kw)
    on16, _ = _eff(hook="fp16", **kw)
    return Claim(
        key="dp_hook_overlaps",
        topic=TOPIC,
        article="000",
        text="Registering fp16_compress_hook overlaps all-reduce with backward",
        quote="# Register hook that overlaps all-reduce with backward",
        claimed=1.0,
        claimed_unit="overlap from the hook",
        computed=0.0,
        unit="overlap from the hook",
        verdict="misleading",
        check=(
            f"DDP overlaps bucket all-reduces with the backward by itself (buckets in reverse order, Li et al. 2020): "
            f"16 H100s, efficiency {on:.0%} with DDP's overlap, {off:.0%} if it had none, {on16:.0%} with the fp16 "
            "hook (fewer bytes, same overlap). The snippet's default_hooks.DefaultState() does not exist in torch "
            "2.x (the fp16 hook takes state=None or a process group; checked in tests/test_scaling_bench.py)."
        ),
        assumptions=("fp32 gradients, IB NDR per GPU, 40% MFU",),
        figures=(
            ("efficiency, DDP overlap", on, "fraction"),
            ("efficiency, no overlap", off, "fraction"),
            ("efficiency, overlap + fp16 hook", on16, "fraction"),
        ),
    )


@register("dp_compression_90pct", TOPIC)
def dp_compression_90pct(
    n_params: float = 7e9, tokens_per_gpu: float = 4096, powersgd_rank: int = 4
) -> Claim:
    """PowerSGD bytes vs fp32, and step time with/without it at 8 GPUs (NVLink) and 64 (Ethernet)."""
    shapes = uniform_param_shapes(n_params)
    bk = ddp_buckets(shapes, 25.0)
    red = 1 - sum(hook_bytes(b, "powersgd", powersgd_rank) for b in bk) / sum(
        hook_bytes(b, "none") for b in bk
    )
    out = {}
    for name, kw in (
        ("8 GPUs NVLink", dict(gpus=[1, 8])),
        ("64 GPUs shared 25G", dict(gpus=[1, 64], inter_link="eth-25g", ports_per_node=1)),
    ):
        _, a = _eff(n_params=n_params, tokens_per_gpu=tokens_per_gpu, **kw)
        _, b = _eff(
            n_params=n_params,
            tokens_per_gpu=tokens_per_gpu,
            hook="powersgd",
            powersgd_rank=powersgd_rank,
            **kw,
        )
        out[name] = a.rows[-1].step_s / b.rows[-1].step_s - 1
    return Claim(
        key="dp_compression_90pct",
        topic=TOPIC,
        article="000",
        text="Top-k/QSGD/PowerSGD cut gradients by 90%+; under 8 GPUs the overhead exceeds the savings",
        quote="These add compute overhead but can reduce gradient sizes by 90%+. For large clusters (>32 GPUs) with "
        "slow interconnects, they're often worth it. For <8 GPUs, the overhead usually exceeds the savings",
        claimed=0.90,
        claimed_unit="byte reduction",
        computed=red,
        unit="byte reduction",
        verdict="correct"
        if red >= 0.9 and out["8 GPUs NVLink"] <= 0 < out["64 GPUs shared 25G"]
        else "plausible",
        check=(
            f"PowerSGD rank {powersgd_rank} (torch's rule) on {fmt_count(n_params)} params sends {1 - red:.2%} of the "
            f"fp32 bytes ({red:.1%} less). Step change: {out['8 GPUs NVLink']:+.1%} on 8 NVLink GPUs (nothing to "
            f"save, the all-reduce hides), {out['64 GPUs shared 25G']:+.0%} on 64 GPUs over a shared 25G port."
        ),
        assumptions=(
            "PowerSGD kernels memory-bound at HBM bandwidth; square-ish weight matrices",
            "measured on CPU too (gpukit bench ddp --hook powersgd): bytes exact, kernel cost visible",
        ),
        figures=(
            ("byte reduction", red, "fraction"),
            ("step speedup, 8 GPUs NVLink", out["8 GPUs NVLink"], "fraction"),
            ("step speedup, 64 GPUs shared 25G", out["64 GPUs shared 25G"], "fraction"),
        ),
    )


@register("dp_grad_accum_frequency", TOPIC)
def dp_grad_accum_frequency(
    n_params: float = 7e9, tokens_per_gpu: float = 4096, grad_accum: int = 8
) -> Claim:
    """All-reduces per token fall by K with accumulation over K micro-steps (no_sync)."""
    kw = dict(
        n_params=n_params,
        gpus=[1, 64],
        tokens_per_gpu=tokens_per_gpu,
        inter_link="eth-100g",
        ports_per_node=1,
        overlap=False,
    )
    e1, r1 = _eff(**kw)
    ek, rk = _eff(grad_accum=grad_accum, **kw)
    per_tok_1 = r1.rows[-1].comm_bytes_per_step / tokens_per_gpu
    per_tok_k = rk.rows[-1].comm_bytes_per_step / (tokens_per_gpu * grad_accum)
    return Claim(
        key="dp_grad_accum_frequency",
        topic=TOPIC,
        article="000",
        text="Gradient accumulation reduces the frequency of communication",
        quote="These reduce the frequency of communication by accumulating gradients over multiple micro-batches "
        "before syncing.",  # the next sentence (activations): accum_checkpoint_activations
        claimed=float(grad_accum),
        claimed_unit="x fewer all-reduces",
        computed=per_tok_1 / per_tok_k,
        unit="x fewer all-reduces",
        verdict="correct",
        check=(
            f"one all-reduce per {grad_accum} micro-steps: bytes per token fall {per_tok_1 / per_tok_k:.0f}x and "
            f"64 GPUs on a shared 100G port go from {e1:.0%} to {ek:.0%} efficiency (no overlap). Not said: the "
            "global batch grows K-fold; activations do NOT grow (each micro-step keeps its own), and gradient "
            "checkpointing, named in the same sentence, changes no communication."
        ),
        assumptions=("the all-reduce of the last micro-step cannot hide behind the earlier ones",),
        figures=(
            ("efficiency, K=1", e1, "fraction"),
            (f"efficiency, K={grad_accum}", ek, "fraction"),
            ("bytes per token ratio", per_tok_1 / per_tok_k, "x"),
        ),
    )


@register("dp_allreduce_olog_n", TOPIC)
def dp_allreduce_olog_n(size_bytes: float = 14e9, link: str = "ib-ndr") -> Claim:
    """Ring all-reduce: bandwidth term 2(n-1)/n S/B (flat in n), latency 2(n-1) alpha; tree 2 log2 n alpha."""
    from gpukit.catalog import get_interconnect
    from gpukit.comm import collective_time

    ln = get_interconnect(link)
    t8, t1024 = (collective_time("all_reduce", size_bytes, n, ln).time_s for n in (8, 1024))
    l8, l1024 = (collective_time("all_reduce", 4, n, ln).time_s for n in (8, 1024))
    tr8, tr1024 = (collective_time("all_reduce", 4, n, ln, "tree").time_s for n in (8, 1024))
    return Claim(
        key="dp_allreduce_olog_n",
        topic=TOPIC,
        article="002",
        text="All-reduce scales O(log N), but the overhead per step grows because you communicate more often",
        quote="The all-reduce operation scales O(log N) — it's efficient — but the overhead per step grows with the "
        "number of GPUs because you're communicating more often.",
        claimed=t8 * (1024 / 8) ** 0,
        claimed_unit="s",
        computed=t1024,
        unit="s",
        verdict="misleading",
        check=(
            f"a {size_bytes / 1e9:g} GB all-reduce over {link}: {t8:.2f} s at 8 ranks, {t1024:.2f} s at 1024 (the "
            f"bandwidth term is flat, 2(n-1)/n). A tiny one is latency: ring {l8 * 1e6:.0f} -> {l1024 * 1e6:.0f} us "
            f"(O(N)), tree {tr8 * 1e6:.0f} -> {tr1024 * 1e6:.0f} us (O(log N)). DDP all-reduces once per step "
            "whatever N: not 'more often'."
        ),
        assumptions=("alpha-beta model, NCCL ring / double binary tree",),
        figures=(
            ("large, 8 ranks", t8, "s"),
            ("large, 1024 ranks", t1024, "s"),
            ("tiny, ring, 1024", l1024, "s"),
            ("tiny, tree, 1024", tr1024, "s"),
        ),
    )


@register("dp_n_times_4_bytes", TOPIC)
def dp_n_times_4_bytes(n_params: float = 7e9, n_ranks: int = 16) -> Claim:
    """N x 4 bytes is the all-reduce buffer; a ring rank sends 2(n-1)/n of it."""
    per_rank = coefficients("all_reduce", n_ranks)[1] * 4 * n_params
    return Claim(
        key="dp_n_times_4_bytes",
        topic=TOPIC,
        article="002",
        text="Each gradient step moves N x 4 bytes (fp32) across the network",
        quote="For a model with N parameters, you're moving N * 4 bytes (float32) across the network per gradient step.",
        claimed=4 * n_params,
        claimed_unit="B",
        computed=4 * n_params,
        unit="B",
        verdict="correct",
        check=(
            f"DDP hands 4 B per parameter to all-reduce (measured exactly: gpukit bench ddp counts the hook's bytes); "
            f"a ring rank sends 2(n-1)/n of it: {per_rank / 1e9:.1f} GB at {n_ranks} ranks. bf16 gradients or the "
            "fp16 hook halve it."
        ),
        assumptions=("fp32 gradients",),
        figures=(("buffer per step", 4 * n_params, "B"), (f"sent per rank, {n_ranks} ranks", per_rank, "B")),
    )


@register("dp_input_bound_32_gpus", TOPIC)
def dp_input_bound_32_gpus(n_gpus: int = 32, claimed_speedup: float = 2.0, loader_workers: int = 4) -> Claim:
    """One shared storage serving L seconds per batch to all ranks: step(n) = max(t, n L) (gpukit.scaling
    input_exposed_s), so speedup(n) = n t / max(t, n L) saturates at t / L."""
    t = 1.0
    lat = t / claimed_speedup

    def speedup(n):
        return n * t / (t + input_exposed_s(t, lat, loader_workers, n, shared=True))

    curve = {n: speedup(n) for n in (1, 2, 4, 8, 16, n_gpus)}
    serial = (n_gpus / claimed_speedup - 1) / (n_gpus - 1)  # Amdahl: 1/((1-p) + p/N) = S
    return Claim(
        key="dp_input_bound_32_gpus",
        topic=TOPIC,
        article="000",
        text="32 GPUs gave a 2x speedup because the data pipeline was I/O bound",
        quote="They got 2x speedup over a single GPU because their data pipeline was I/O bound. The networking wasn't "
        "the bottleneck — the data loading was.",
        claimed=claimed_speedup,
        claimed_unit="x",
        computed=curve[2],
        unit="x at 2 GPUs",
        verdict="plausible",
        check=(
            f"with one shared storage every step needs n batches from it, so the speedup stops at the storage's rate "
            f"/ one GPU's rate. 2x at {n_gpus} GPUs means storage for 2 GPUs' worth of batches: the job was already "
            f"saturated at 2 GPUs ({curve[2]:.1f}x; {curve[4]:.1f}x at 4): {n_gpus - 2} GPUs idle. As Amdahl a "
            f"serial share of {serial:.0%}. Measured for real by gpukit bench ddp --loader-latency-ms L "
            "--loader-shared (notebook 05)."
        ),
        assumptions=("the shared storage is the only serial part; per-GPU local loaders would not saturate",),
        figures=tuple((f"speedup at {n} GPUs", v, "x") for n, v in curve.items())
        + (("Amdahl serial share for the claim", serial, "fraction"),),
    )


@register("dp_gid_index_10x", TOPIC)
def dp_gid_index_10x(claimed: float = 10.0) -> Claim:
    """What can be checked: a wrong GID index makes NCCL fall back from RDMA to TCP sockets."""
    from gpukit.catalog import get_interconnect

    ib, eth = get_interconnect("ib-ndr"), get_interconnect("eth-100g")
    ratio = ib.bandwidth_gbps / (eth.bandwidth_gbps * 0.5)
    return Claim(
        key="dp_gid_index_10x",
        topic=TOPIC,
        article="000",
        text="Changing the IB GID index changed all-reduce throughput 10x",
        quote="I've seen 10x variation in all-reduce throughput by simply changing the IB GID index.",
        claimed=claimed,
        claimed_unit="x",
        computed=ratio,
        unit="x",
        verdict="plausible",
        check=(
            f"NCCL_IB_GID_INDEX picks the RoCE GID (v1/v2, IPv4/IPv6); a wrong one fails to connect or pushes NCCL "
            f"onto TCP sockets (NCCL docs, Environment Variables). RDMA at {ib.bandwidth_gbps:g} GB/s against one TCP "
            f"socket path at ~half of 100 GbE is {ratio:.0f}x: the order of magnitude fits. Not checkable without "
            "RoCE hardware; NCCL_DEBUG=INFO shows the transport NCCL chose (NET/IB or NET/Socket)."
        ),
        assumptions=("a TCP fallback reaching half of 100 GbE line rate (assumption)",),
        figures=(("RDMA / TCP fallback", ratio, "x"),),
    )


@register("dp_nccl_topology_40pct", TOPIC)
def dp_nccl_topology_40pct(n_params: float = 7e9, claimed: float = 0.40) -> Claim:
    """A topology mistake modelled: GPUs sharing NICs (4 ports for 8 GPUs) instead of one each."""
    from gpukit.comm import network_all_reduce

    size = 2 * n_params
    rail = cluster_network("nvlink4", "ib-ndr")
    half = cluster_network("nvlink4", "ib-ndr", ports_per_node=4)
    loss = 1 - network_all_reduce(size, 64, rail).time_s / network_all_reduce(size, 64, half).time_s
    return Claim(
        key="dp_nccl_topology_40pct",
        topic=TOPIC,
        article="002",
        text="A suboptimal NCCL topology can reduce throughput by 40%",
        quote="Their paper shows that a suboptimal NCCL topology can reduce throughput by 40% even with high-end "
        "networking.",
        claimed=claimed,
        claimed_unit="throughput loss",
        computed=loss,
        unit="throughput loss",
        verdict="plausible",
        check=(
            f"one example: 8 GPUs sharing 4 NDR ports instead of 8 (wrong NIC affinity or NCCL_IB_HCA) costs the "
            f"64-GPU all-reduce {loss:.0%} of its throughput. The cited paper is not named well enough to check its "
            "40%; the size of the effect is ordinary."
        ),
        assumptions=("bf16 gradients; NCCL ring through the NICs", "the paper's own setup is unknown"),
        figures=(("all-reduce throughput loss, half the ports", loss, "fraction"),),
    )
