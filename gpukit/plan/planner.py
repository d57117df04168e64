"""The planner: one GPU (with fitting tricks), one node, or many nodes, for a workload, a deadline and
a budget; every plan with its memory per GPU, layout, time, cost, efficiency and binding constraint.

Workloads: pretrain / finetune (full) / lora / qlora (training on `tokens`), serve (a request rate
with input and output lengths). Training first fixes the global batch (sequences per optimizer step):
the one given, else the critical batch (gpukit.scaling.critical_batch: the model's published batch or
the DeepSeek LLM fit), capped at MIN_STEPS optimizer steps; it is stated, and a batch beyond the critical
one is flagged. The GPU counts run from 1 up to what that batch allows (auto_counts). Full training
takes, at every count and GPU type, the fastest layout of gpukit.parallel.team_layouts (DP x TP x PP,
sequence parallelism, interleaving, ZeRO, micro-batch, recompute), its memory in the layout's
convention and its step from gpukit.parallel.estimate; each plan carries every setting and the
`gpukit parallel estimate` command that reproduces it. One GPU with optimizer offload, counts that are
not whole nodes, and LoRA/QLoRA are the data-parallel candidates of gpukit.plan.train_plans, priced by
gpukit.cost.training_run (the price loop of `gpukit cost train`) at the same global batch. Serving
tries every precision and TP inside a node on the decode roofline (gpukit.inference) within the
allowed counts. Plans are checked against the deadline and the budget, ranked by the one rule
gpukit.plan.plans.RANK_RULE (rank_plans), the Pareto set (time, cost) is marked, and a recommendation
names the reason, read off the ranked list (it never claims what the list contradicts). An
infeasible request gets the nearest plan and what would have to change; a count left out for another
reason than memory says that reason. Every output names the models it used (`models`).

Used in: notebooks/09_decide, gpukit.widgets.plan_view, gpukit.cli.plan, gpukit.audits.plan,
gpukit.plan.train, gpukit.plan.frameworks.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpukit import inference
from gpukit.catalog import as_model, get_gpu, get_interconnect
from gpukit.catalog import gpus as catalog_gpus
from gpukit.cost import NETWORK_BOUND_BELOW, pareto_front, rail_ports
from gpukit.errors import MAX_COUNT, named_field, require_choice, require_positive, require_positive_int
from gpukit.parallel import MAX_SEARCH_GPUS, MOE_TIME_CAVEAT, layout_convention, team_layouts
from gpukit.plan.plans import (
    COST_TIE,
    MIN_STEPS,
    PLAN_MODELS,
    PLAN_PRECISIONS,
    WORKLOADS,
    Plan,
    PlanResult,
    rank_plans,
)
from gpukit.plan.train import train_plans
from gpukit.prices import load_prices, price_warning, quote
from gpukit.scaling import beyond_critical, critical_batch
from gpukit.specs import ModelSpec


# ------------------------------------------------------------------------------- serving
def _serve_plans_inference(
    inference,
    model: ModelSpec,
    gpu_names,
    prices_of,
    rate,
    input_tokens,
    output_tokens,
    gpus_per_node,
    budget_usd,
    counts=None,
):
    """Serving plans from gpukit.inference (issue 11): for each GPU type, every precision and every
    tensor-parallel degree inside a node (a larger TP can be cheaper: fp8 TP 2 on 2 GPUs against three
    int4 replicas), one replica's capacity at its largest batch (serve(...) without a simulation) and the
    replicas a rate needs (replicas_for_rate); the cheapest combination per GPU type. counts: the GPU
    counts allowed (None: any); a count above the replicas needed adds replicas (more headroom)."""
    max_gpus = max(counts) if counts else math.inf
    plans = []
    for name in gpu_names:
        g = get_gpu(name)
        usd = prices_of[name]
        best = too_many = None
        for prec in ("bf16", "fp8", "int8", "int4"):
            for tp in (1, 2, 4, 8):
                if tp > min(gpus_per_node, max_gpus) or model.tp_note(tp) is not None:
                    continue
                try:
                    p = inference.serve(
                        model,
                        g,
                        gpus=tp,
                        tp=tp,
                        precision=prec,
                        input_tokens=input_tokens,
                        output_tokens=output_tokens,
                        gpus_per_node=gpus_per_node,
                    )
                    if not p.fits or p.capacity_req_per_s <= 0:
                        continue
                    replicas = inference.replicas_for_rate(rate, p.capacity_req_per_s)
                except ValueError:  # precision not supported on this GPU, or the layout does not fit
                    continue
                n = replicas * tp
                if counts:  # the smallest allowed count that holds whole replicas of tp and serves the rate
                    ok = [c for c in counts if c >= n and c % tp == 0]
                    if not ok:
                        if too_many is None or n < too_many[0]:
                            too_many = (n, p)
                        continue
                    n = min(ok)
                    replicas = n // tp
                cand = (n * usd, n, prec, tp, replicas, p)
                if best is None or cand[:2] < best[:2]:
                    best = cand
        if best is None and too_many is not None:  # it fits; the rate needs more GPUs than allowed
            too_many, p = too_many
            plans.append(
                Plan(
                    gpu=name,
                    gpus=too_many,
                    nodes=math.ceil(too_many / gpus_per_node),
                    layout=f"fits; {rate:g} req/s needs {too_many} GPUs",
                    memory_per_gpu_bytes=int(p.memory.total_bytes),
                    hours=None,
                    cost_usd=too_many * usd,
                    efficiency=1.0,
                    binding=f"needs {too_many} GPUs for the rate; the allowed counts ({', '.join(map(str, counts))}) "
                    "hold no whole set of replicas that large",
                    feasible=False,
                    usd_per_gpu_hour=usd,
                    usd_per_million_tokens=too_many * usd / (rate * output_tokens * 3600) * 1e6,
                )
            )
            continue
        if best is None:
            plans.append(
                Plan(
                    gpu=name,
                    gpus=0,
                    nodes=0,
                    layout="does not fit (any precision, TP up to 8)",
                    memory_per_gpu_bytes=0,
                    hours=None,
                    cost_usd=math.inf,
                    efficiency=0.0,
                    binding="does not fit",
                    feasible=False,
                    usd_per_gpu_hour=usd,
                )
            )
            continue
        usd_h, n, prec, tp, replicas, p = best
        binding = "over budget" if budget_usd is not None and usd_h > budget_usd else _serve_binding(p)
        plans.append(
            Plan(
                gpu=name,
                gpus=n,
                nodes=math.ceil(n / gpus_per_node),
                layout=f"{replicas} replica(s) x TP {tp}, {prec} weights, batch up to {p.max_batch}",
                memory_per_gpu_bytes=int(p.memory.total_bytes),
                hours=None,
                cost_usd=usd_h,
                efficiency=1.0,
                binding=binding,
                feasible=binding != "over budget",
                usd_per_gpu_hour=usd,
                tricks=(prec,) if prec != "bf16" else (),
                usd_per_million_tokens=usd_h / (rate * output_tokens * 3600) * 1e6,
            )
        )
    return plans


def _serve_binding(p) -> str:
    """What bounds a replica at capacity: its GPU seconds per request (gpukit.inference.capacity.replica_capacity:
    prefill / pp + O x decode step / batch) split into the parts limited by FLOPs (prefill, and the
    decode matmuls past the ridge batch) and by HBM bandwidth (decode attention over the KV cache, and
    the matmuls below the ridge batch); the larger share names the binding (llama-3-8b on one H100 at
    batch 256 spends 22 ms of its 32 ms per request in compute-bound prefill and matmuls). TP/PP
    messages count for neither."""
    pre, dec = p.prefill, p.decode_at_max
    per_token = p.output_tokens / p.max_batch
    compute_s = memory_s = 0.0
    for part_s, bound, scale in (
        (pre.dense_s, pre.bound, 1.0 / p.pp),
        (pre.attn_s, "compute", 1.0 / p.pp),
        (dec.dense_s, dec.bound, per_token),
        (dec.attn_s, "memory", per_token),
    ):
        if bound == "compute":
            compute_s += part_s * scale
        else:
            memory_s += part_s * scale
    return "compute-bound" if compute_s > memory_s else "memory-bandwidth-bound"


# ------------------------------------------------------------------------------- training layouts
def auto_counts(global_batch: int, micro_batch: int | None, gpus_per_node: int) -> tuple[int, ...]:
    """The GPU counts the planner tries when none are given: powers of two up to a node, then whole
    nodes doubling, up to what the global batch allows: dp x pp <= global_batch / micro_batch (each
    data-parallel rank's pipeline of pp stages runs at least pp micro-batches, its bubble under half
    the step, Narayanan et al. 2021 sec. 2.2.1), times tensor parallelism inside one node (up to 8)."""
    global_batch = require_positive_int("global_batch", global_batch, at_most=MAX_SEARCH_GPUS)
    if micro_batch is not None:
        micro_batch = require_positive_int("micro_batch", micro_batch)
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node, at_most=1024)
    top = min(global_batch // (micro_batch or 1) * min(gpus_per_node, 8), MAX_SEARCH_GPUS)
    out = [c for c in (2**k for k in range(gpus_per_node.bit_length())) if c <= gpus_per_node]
    n = gpus_per_node
    while n <= top:
        out.append(n)
        n *= 2
    return tuple(sorted({c for c in out if c <= max(top, 1)}))


def global_batch_of(model, tokens, seq_len, global_batch, micro_batch):
    """(global batch in sequences, CriticalBatch, note): the batch `global_batch` given, else the critical
    batch (gpukit.scaling.critical_batch) capped at tokens / MIN_STEPS, rounded down to a power of two
    so that data-parallel degrees of whole nodes divide it."""
    tokens = require_positive("tokens", tokens)
    seq_len = require_positive_int("seq_len", seq_len, at_most=MAX_COUNT)
    if micro_batch is not None:
        micro_batch = require_positive_int("micro_batch", micro_batch, at_most=MAX_COUNT)
    cb = critical_batch(model, tokens, seq_len)
    if global_batch is not None:
        g = require_positive_int("global_batch", global_batch)
        if micro_batch is not None and g % micro_batch:
            raise ValueError(f"global_batch must be a multiple of micro_batch {micro_batch}, got {g}")
        return g, cb, f"global batch {g:,} sequences x {seq_len} = {g * seq_len:,} tokens (given)"
    cap = max(1, int(tokens / MIN_STEPS / seq_len))
    g = max(1, min(cb.sequences, cap))
    g = 2 ** (g.bit_length() - 1)
    g = max(g, micro_batch or 1)
    why = (
        "the critical batch" if g <= cb.sequences and cb.sequences <= cap else f"{MIN_STEPS} optimizer steps"
    )
    return (
        g,
        cb,
        (
            f"global batch {g:,} sequences x {seq_len} = {g * seq_len:,} tokens, set by {why} (a power of two; "
            f"--global-batch changes it)"
        ),
    )


def _reproduce(
    model_name, gpu, n, c, G, s, gpus_per_node, inter_link, ports_per_node, precision="bf16-mixed"
) -> str:
    """The `gpukit parallel estimate` command with every setting of a layout plan."""
    parts = [
        f"gpukit parallel estimate --model {model_name} --gpu {gpu} --gpus-per-node {gpus_per_node}",
        f"--seq-len {s} --global-batch {G} --dp {c.dp} --tp {c.tp} --pp {c.pp}",
        f"--virtual-stages {c.virtual_stages} --zero {c.zero_stage} --micro-batch {c.micro_batch}",
        f"--recompute {c.recompute}",
    ]
    if c.sp:
        parts.append("--sp")
    if c.cp > 1:
        parts.append(f"--cp {c.cp}")
    if c.ep > 1:
        parts.append(f"--ep {c.ep}")
    if inter_link:
        parts.append(f"--inter-link {inter_link}")
    if ports_per_node:
        parts.append(f"--ports-per-node {ports_per_node}")
    if precision != "bf16-mixed":
        parts.append(f"--precision {precision}")
    return " ".join(parts)


def _layout_plans(
    model,
    tokens,
    names,
    counts,
    prices_of,
    G,
    s,
    micro_batch,
    gpus_per_node,
    inter_link,
    ports_per_node,
    mfu,
    profile,
    deadline_hours,
    budget_usd,
    loader_tokens_per_s,
    cb,
    precision="bf16-mixed",
):
    """Full training (pretrain, finetune) on every GPU type and count: the fastest layout a team would
    try (gpukit.parallel.team_layouts: DP x TP x PP x CP, ZeRO, interleaving, micro-batch, recompute;
    its memory in the layout's convention (layout_convention), its step from gpukit.parallel.estimate), priced as
    hours = tokens / tokens per second. Returns (plans, counts with no layout: {gpu: [(n, reason)]})."""
    cache: dict = {}
    plans = []
    none_at: dict[str, list] = {}
    eff_kw = {"matmul_efficiency": mfu} if mfu is not None else {}
    for name in names:
        usd = prices_of[name]
        rows = team_layouts(
            model,
            name,
            counts,
            global_batch=G,
            seq_len=s,
            micro_batch=micro_batch,
            gpus_per_node=gpus_per_node,
            inter_link=inter_link,
            ports_per_node=ports_per_node,
            profile=profile,
            memory_cache=cache,
            **eff_kw,
            **({"precision": precision} if precision != "bf16-mixed" else {}),
        )
        for r in rows:
            n = r.gpus
            if r.best is None:
                none_at.setdefault(name, []).append((n, r.reason))
                plans.append(
                    Plan(
                        gpu=name,
                        gpus=n,
                        nodes=math.ceil(n / gpus_per_node),
                        layout="nothing fits" if r.lightest_bytes else r.reason,
                        memory_per_gpu_bytes=r.lightest_bytes,
                        hours=math.inf,
                        cost_usd=math.inf,
                        efficiency=0.0,
                        binding="does not fit",
                        feasible=False,
                        usd_per_gpu_hour=usd,
                        memory_convention="megatron",
                        reason=r.reason,
                    )
                )
                continue
            e = r.best.estimate
            c = e.config
            hours = tokens / e.tokens_per_s / 3600  # the layout estimate's step, G x s tokens per step
            useful = e.share("compute") + e.share("elementwise")
            eff = useful * (0.75 if c.recompute == "full" else 1.0)  # full recompute runs 8N for 6N useful
            input_bound = loader_tokens_per_s is not None and tokens / loader_tokens_per_s / 3600 > hours
            if input_bound:  # the input pipeline caps the job whatever the layout (Amdahl)
                eff *= hours / (tokens / loader_tokens_per_s / 3600)
                hours = tokens / loader_tokens_per_s / 3600
            cost = hours * n * usd
            binding = (
                "misses the deadline"
                if deadline_hours is not None and hours > deadline_hours
                else "over budget"
                if budget_usd is not None and cost > budget_usd
                else "input-bound"
                if input_bound
                else "network-bound"
                if useful < NETWORK_BOUND_BELOW
                else "compute-bound"
            )
            m = G // (c.dp * c.micro_batch)
            sp = "+SP" if c.sp else ""
            v = f" (v{c.virtual_stages})" if c.virtual_stages > 1 else ""
            layout = (
                f"DP {c.dp} x TP {c.tp}{sp} x PP {c.pp}{v}"
                + (f" x CP {c.cp}" if c.cp > 1 else "")
                + (f" (EP {c.ep})" if c.ep > 1 else "")
                + f", ZeRO-{c.zero_stage}, {c.recompute} recompute, micro_batch {c.micro_batch} x grad_accum {m}"
            )
            tricks = tuple(
                t
                for t in (
                    f"TP {c.tp}" if c.tp > 1 else "",
                    "sequence parallel" if c.sp else "",
                    f"PP {c.pp}" if c.pp > 1 else "",
                    f"{c.virtual_stages} virtual stages" if c.virtual_stages > 1 else "",
                    f"CP {c.cp}" if c.cp > 1 else "",
                    f"EP {c.ep}" if c.ep > 1 else "",
                    f"ZeRO-{c.zero_stage}" if c.zero_stage else "",
                    f"{c.recompute} recompute" if c.recompute != "none" else "",
                    "FP8 recipe" if precision == "fp8" else "",
                )
                if t
            )
            settings = {
                "dp": c.dp,
                "tp": c.tp,
                "pp": c.pp,
                "cp": c.cp,
                "ep": c.ep,
                "sp": c.sp,
                "virtual_stages": c.virtual_stages,
                "micro_batch": c.micro_batch,
                "grad_accum": m,
                "global_batch": G,
                "seq_len": s,
                "zero_stage": c.zero_stage,
                "recompute": c.recompute,
                "offload": "none",
                "precision": precision,
            }
            flag = beyond_critical(G * s, cb)
            plans.append(
                Plan(
                    gpu=name,
                    gpus=n,
                    nodes=math.ceil(n / gpus_per_node),
                    layout=layout,
                    memory_per_gpu_bytes=int(e.memory_per_gpu_bytes),
                    hours=hours,
                    cost_usd=cost,
                    efficiency=eff,
                    binding=binding,
                    feasible=binding not in ("misses the deadline", "over budget"),
                    usd_per_gpu_hour=usd,
                    tricks=tricks,
                    settings=settings,
                    memory_convention=layout_convention(c),
                    holds_back=r.best.binding + (f"; {flag}" if flag else ""),
                    reproduce=_reproduce(
                        model.name, name, n, c, G, s, gpus_per_node, inter_link, ports_per_node, precision
                    ),
                )
            )
    return plans, none_at


def _dp_settings(p: Plan, micro_batch: int, seq_len: int, global_batch: int) -> dict | None:
    """The settings of a plan of gpukit.plan.train_plans (data parallel, no tensor or pipeline split)."""
    if p.binding == "does not fit":
        return None
    zero = next((int(t[5]) for t in p.tricks if t.startswith("ZeRO-")), 0)
    rc = next((t.split()[0] for t in p.tricks if t.endswith(" recompute")), "none")
    off = (
        "all"
        if "ZeRO-3 + offload all" in p.tricks
        else "optimizer"
        if "optimizer offload" in p.tricks
        else "none"
    )
    if off == "all":
        zero = 3
    elif off == "optimizer":
        zero = 1 if p.gpus == 1 else 3
    ga = max(1, global_batch // (p.gpus * micro_batch))
    return {
        "dp": p.gpus,
        "tp": 1,
        "pp": 1,
        "cp": 1,
        "ep": 1,
        "sp": False,
        "virtual_stages": 1,
        "micro_batch": micro_batch,
        "grad_accum": ga,
        "global_batch": p.gpus * micro_batch * ga,
        "seq_len": seq_len,
        "zero_stage": zero,
        "recompute": rc,
        "offload": off,
        "precision": "bf16-mixed",  # the data-parallel and offload plans of gpukit.cost are bf16
    }


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x < 1000 else f"${x:,.0f}"


def _h(hours: float) -> str:
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:,.1f} h"


def _recommend(workload, plans, deadline_hours, budget_usd, count_notes=()) -> tuple[str, tuple[str, ...]]:
    feas = [p for p in plans if p.feasible]
    serve = workload == "serve"
    if feas:
        b = feas[0]
        what = f"{b.scale}: {b.gpus} x {b.gpu} ({b.layout})"
        if serve:
            return (
                f"{what}, ${b.cost_usd:,.2f}/h, ${b.usd_per_million_tokens:.3f} per million output tokens. "
                f"Reason: the cheapest set of GPUs that holds the model and serves the rate."
            ), ()
        limits = []
        if deadline_hours is not None:
            limits.append(f"meets the {deadline_hours:g} h deadline")
        if budget_usd is not None:
            limits.append(f"stays within ${budget_usd:,.0f}")
        # the reason is read off the plan list (RANK_RULE), so it never claims what the list contradicts
        cheapest = min(feas, key=lambda p: (p.cost_usd, p.hours, p.gpus))
        ref = ("the cheapest plan that " + " and ".join(limits)) if limits else "the cheapest plan"
        none_given = "" if limits else " (no deadline or budget given)"
        if b.cost_usd <= cheapest.cost_usd:
            why = ref + none_given
        else:
            why = (
                f"fewer GPUs within {COST_TIE:.0%} of the cost of {ref}, {cheapest.gpus} x {cheapest.gpu} "
                f"({_h(cheapest.hours)}, {_usd(cheapest.cost_usd)}): {b.cost_usd / cheapest.cost_usd - 1:+.1%} "
                f"cost{none_given}"
            )
        fewer = [p for p in plans if p.gpu == b.gpu and p.gpus < b.gpus]
        words = {"misses the deadline": "miss the deadline", "over budget": "go over the budget"}
        words["does not fit"] = "cannot hold the training state"
        if b.gpus == 1 and b.tricks:
            why += f"; one GPU is enough with {', '.join(b.tricks)}"
        elif b.gpus == 1 and all(p.cost_usd > b.cost_usd for p in feas if p.gpus > 1):
            why += "; the job fits one GPU and more GPUs only add cost"
        elif fewer and all(
            not p.feasible or p.cost_usd > b.cost_usd for p in fewer
        ):  # say why, count by count
            by: dict[str, list[str]] = {}
            for p in sorted(fewer, key=lambda p: p.gpus):
                w = (
                    words.get(p.binding, p.binding)
                    if not p.feasible
                    else "take longer and cost more"
                    if p.hours > b.hours
                    else "cost more"
                )
                by.setdefault(w, []).append(str(p.gpus))
            why += f"; fewer {b.gpu} GPUs " + (
                next(iter(by))
                if len(by) == 1
                else " or ".join(
                    f"{w} ({', '.join(ns)} GPU{'s' if ns != ['1'] else ''})" for w, ns in by.items()
                )
            )
        quick = min(
            (p for p in feas if p.cost_usd <= cheapest.cost_usd * (1 + COST_TIE)), key=lambda p: p.hours
        )
        if quick.hours < b.hours:  # the same money buys time: say what, so the trade is the reader's
            why += (
                f". Within {COST_TIE:.0%} of the cheapest cost: {quick.gpus} x {quick.gpu} in {_h(quick.hours)} "
                f"for {_usd(quick.cost_usd)}"
            )
        if b.binding == "input-bound" or any(
            p.gpus > b.gpus and p.gpu == b.gpu and p.binding == "input-bound" for p in plans
        ):
            why += "; more GPUs would only wait for the input pipeline (input-bound)"
        faster = [p for p in feas if p.pareto and p.hours < b.hours]
        if faster and min(faster, key=lambda p: p.hours) is not quick:
            f = min(faster, key=lambda p: p.hours)
            why += f". Fastest on the Pareto set: {f.gpus} x {f.gpu} in {_h(f.hours)} for {_usd(f.cost_usd)}"
        return f"{what}: {_h(b.hours)}, {_usd(b.cost_usd)}. Reason: {why}.", ()
    fitting = [p for p in plans if p.binding != "does not fit"]
    if not fitting:
        memory = [
            p for p in plans if "fits in memory" in p.reason or (not p.reason and p.memory_per_gpu_bytes)
        ]
        other = sorted({p.reason for p in plans if p.reason and "fits in memory" not in p.reason})
        reasons = [*count_notes, *other]
        if not memory:  # no count was tried for memory: say why, not "bigger GPUs"
            return (
                "No plan: " + ("; ".join(reasons) if reasons else "no GPU count to try") + ".",
                ("change the GPU counts or the global batch (--gpus, --global-batch)",),
            )
        return (
            "Nothing fits: no allowed GPU type and count holds this model for this workload"
            + (f" (other counts not tried: {'; '.join(reasons)})" if reasons else "")
            + ".",
            (
                "allow more GPUs or GPUs with more memory, or a lighter workload (LoRA/QLoRA instead of full "
                "training; int8/4-bit weights for serving)",
            ),
        )

    def badness(p):
        r = 1.0
        if not serve and deadline_hours is not None:
            r = max(r, p.hours / deadline_hours)
        if budget_usd is not None:
            r = max(r, p.cost_usd / budget_usd)
        return (r, p.cost_usd)

    near = min(fitting, key=badness)
    changes = []
    if serve:
        if near.binding.startswith("needs "):
            changes.append(f"allow {near.gpus} GPUs (or a lower rate, or lower-precision weights)")
        if budget_usd is not None and near.cost_usd > budget_usd:
            changes.append(f"a budget of ${near.cost_usd:,.2f}/h (now ${budget_usd:,.2f}/h)")
    else:
        if deadline_hours is not None and near.hours > deadline_hours:
            changes.append(f"a deadline of {near.hours:,.1f} h (now {deadline_hours:g} h)")
        if budget_usd is not None and near.cost_usd > budget_usd:
            changes.append(f"a budget of {_usd(near.cost_usd)} (now {_usd(budget_usd)})")
    return (
        f"No plan meets every constraint. Nearest: {near.gpus} x {near.gpu} ({near.layout}), "
        + (f"{_usd(near.cost_usd)}/h" if serve else f"{_h(near.hours)}, {_usd(near.cost_usd)}")
        + f"; it {'is ' if near.binding == 'over budget' else ''}{near.binding}."
    ), tuple(changes)


SERVE_INPUT_TOKENS, SERVE_OUTPUT_TOKENS = 512, 256  # a served request's default prompt and output lengths


def plan(
    workload: str,
    model: ModelSpec,
    *,
    tokens: float | None = None,
    rate: float | None = None,
    input_tokens: int = SERVE_INPUT_TOKENS,
    output_tokens: int = SERVE_OUTPUT_TOKENS,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    gpus: dict | list | tuple | None = None,
    counts=None,
    prices=None,
    mfu: float | None = None,
    profile=None,
    seq_len: int | None = None,
    micro_batch: int | None = None,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    loader_tokens_per_s: float | None = None,
    suggest_alternatives: bool = True,
    refine: bool = True,
    ports_per_node: int | None = None,
    global_batch: int | None = None,
    precision: str = "bf16-mixed",
) -> PlanResult:
    """Plans for `workload` on `model` (see the module docstring). gpus: allowed GPU types, a list
    of names (priced from `prices`, gpukit/data/prices.csv by default) or a {name: usd_per_gpu_hour} dict;
    None = every catalog GPU that has a price. counts: GPU counts to consider (None: powers of two up
    to what the global batch allows, auto_counts; serving: any number of replicas). global_batch:
    sequences of seq_len per optimizer step (None: the critical batch, gpukit.scaling.critical_batch);
    micro_batch: sequences per GPU per micro-step (None: the layout search picks 1-8; 1 for LoRA/QLoRA and
    the one-GPU offload plans). refine: kept for compatibility; full-training plans always come from the
    layout search (False: only the data-parallel candidates of gpukit.plan.train_plans). For serve, budget_usd
    is USD per hour. loader_tokens_per_s caps throughput (an input pipeline slower than the GPUs).
    ports_per_node: inter-node network ports per node shared by its GPUs (default one per GPU,
    rail-optimized), for the training plans' all-reduce and layout search (gpukit.cost.training_run,
    gpukit.parallel.search); serving plans keep tensor parallelism inside a node, so it is an error there.
    precision: "bf16-mixed" or "fp8" (the FP8 training recipe of gpukit.memory / gpukit.parallel.estimate, issue 24):
    full training only (pretrain, finetune), on the allowed GPUs with fp8 tensor cores, from the layout search
    (whole nodes; no one-GPU offload plan); serving tries every weight precision on its own."""

    require_choice("workload", workload, WORKLOADS)
    require_choice("precision", precision, PLAN_PRECISIONS)
    if precision == "fp8" and workload not in ("pretrain", "finetune"):
        raise ValueError(
            f"precision fp8 applies to full training (pretrain, finetune), got workload {workload}"
            + (": serving plans try every weight precision already" if workload == "serve" else "")
        )
    if isinstance(model, str):  # a catalog name
        model = as_model(model)
    if not isinstance(model, ModelSpec):
        raise ValueError(
            f"model must be a ModelSpec (catalog.get_model(name) or specs.ModelSpec), got {type(model).__name__}"
        )
    if deadline_hours is not None:
        deadline_hours = require_positive("deadline_hours", deadline_hours)
    if budget_usd is not None:
        budget_usd = require_positive("budget_usd", budget_usd)
    counts_given = counts is not None
    if counts_given:
        counts = tuple(sorted({require_positive_int("gpus", c) for c in counts}))
        if not counts:
            raise ValueError("counts must list at least one GPU count")
    if loader_tokens_per_s is not None:
        loader_tokens_per_s = require_positive("loader_tokens_per_s", loader_tokens_per_s)
    if seq_len is not None:  # 0 is an error, not "the default"
        seq_len = require_positive_int("seq_len", seq_len)
    if micro_batch is not None:
        micro_batch = require_positive_int("micro_batch", micro_batch)
    if global_batch is not None:
        global_batch = require_positive_int("global_batch", global_batch)
        if workload == "serve":
            raise ValueError("global_batch applies to training workloads, not serve")
    if micro_batch is not None and workload == "serve":
        raise ValueError("micro_batch applies to training workloads, not serve")
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node)  # 0: nodes = n / 0
    if inter_link is not None:  # checked even when no count leaves a node (else a typo passes unseen)
        named_field("inter_link", get_interconnect, inter_link)
    if ports_per_node is not None:
        ports_per_node = require_positive_int("ports_per_node", ports_per_node)
        if workload == "serve":  # it would change nothing: a serving replica's TP stays inside one node
            raise ValueError(
                "ports_per_node applies to training workloads: a serving replica (TP up to 8) stays in "
                "one node"
            )
    if workload == "serve":
        if rate is None:
            raise ValueError("workload serve needs rate (requests per second)")
        rate = require_positive("rate", rate)
        input_tokens = require_positive_int("input_tokens", input_tokens)
        output_tokens = require_positive_int("output_tokens", output_tokens)
        if input_tokens + output_tokens > model.max_seq:  # else every GPU reads "does not fit"
            raise ValueError(
                f"input_tokens + output_tokens must be <= {model.name}'s max_seq {model.max_seq}, "
                f"got {input_tokens} + {output_tokens}"
            )
    else:
        if tokens is None:
            raise ValueError(f"workload {workload} needs tokens (training tokens)")
        tokens = require_positive("tokens", tokens)
    # prices
    skipped = []
    price_notes: list[str] = []
    if isinstance(gpus, dict):
        prices_of = {}
        for k, v in gpus.items():
            get_gpu(k)
            prices_of[k] = require_positive(f"price of {k}", v)
            # a node's price typed per GPU-hour is said, as cost train and serve say it (gpukit.prices)
            w = price_warning(
                k,
                prices_of[k],
                prices,
                gpus_per_node=gpus_per_node,
                field=f"the price of {k} (--gpu {k}:PRICE, USD per GPU-hour)",
                fix="divide it by the node's GPU count",
            )
            if w:
                price_notes.append(f"WARNING: {w}")
    else:
        table = prices if prices is not None else load_prices()
        names = list(gpus) if gpus else list(catalog_gpus())
        prices_of = {}
        for k in names:
            get_gpu(k)
            try:
                prices_of[k] = quote(k, table, policy="median").usd_per_gpu_hour
            except ValueError:
                skipped.append(k)
        if not prices_of:
            raise ValueError("none of the allowed GPUs has a price; give prices per GPU-hour")
    if skipped:
        skipped = [
            f"no price in {table.path} for {', '.join(skipped)} (give one: gpus={{name: usd}}, --gpu NAME:PRICE)"
        ]
    names = list(prices_of)
    if precision == "fp8":  # the FP8 recipe needs fp8 tensor cores (gpukit.compute.fp8_matmul_time_factor)
        no_fp8 = [k for k in names if not get_gpu(k).has("fp8")]
        names = [k for k in names if k not in no_fp8]
        if not names:
            raise ValueError(
                "precision fp8 needs a GPU with fp8 tensor cores (Hopper, Ada, Blackwell, MI300); none of the "
                f"allowed GPUs has them: {', '.join(no_fp8)}"
            )
        if no_fp8:
            skipped.append(f"precision fp8: left out {', '.join(no_fp8)} (no fp8 tensor cores)")
    models_used: tuple[str, ...] = PLAN_MODELS
    s_len = seq_len or model.default_seq_len()[0]
    G = cb = None
    batch_note = ""
    count_notes: list[str] = []
    if workload == "serve":
        plans = _serve_plans_inference(
            inference,
            model,
            names,
            prices_of,
            rate,
            input_tokens,
            output_tokens,
            gpus_per_node,
            budget_usd,
            counts,
        )
        models_used = (
            "serving: gpukit.inference (memory per GPU with the KV cache, prefill and decode from the "
            "roofline, replicas for the rate at the largest batch; every precision and TP 1-8 inside a node)",
            PLAN_MODELS[-1],
        )
    else:
        G, cb, batch_note = global_batch_of(model, tokens, s_len, global_batch, micro_batch)
        full = workload in ("pretrain", "finetune") and refine
        # what the global batch allows: layouts need dp x pp <= G / micro_batch; data parallelism alone dp <= G
        top = auto_counts(G, micro_batch, gpus_per_node)[-1] if full else G // (micro_batch or 1)
        if counts_given:
            over = [c for c in counts if c > top]
            counts = tuple(c for c in counts if c <= top)
            if over:
                count_notes.append(
                    f"{', '.join(map(str, over))} GPUs: over what the global batch of {G:,} sequences allows "
                    f"(at most {top:,} GPUs"
                    + (
                        f": dp x pp <= {G // (micro_batch or 1):,} micro-batches x TP up to {min(gpus_per_node, 8)})"
                        if full
                        else " with data parallelism)"
                    )
                    + "; --global-batch raises it"
                )
        else:
            counts = (
                auto_counts(G, micro_batch, gpus_per_node)
                if full
                else tuple(c for c in auto_counts(G, micro_batch, gpus_per_node) if c <= top)
            )
        if full:
            plans, _ = _layout_plans(
                model,
                tokens,
                names,
                counts,
                prices_of,
                G,
                s_len,
                micro_batch,
                gpus_per_node,
                inter_link,
                ports_per_node,
                mfu,
                profile,
                deadline_hours,
                budget_usd,
                loader_tokens_per_s,
                cb,
                precision,
            )
            # a count that is not whole nodes (12 GPUs on nodes of 8): the layout search takes whole nodes,
            # so such a count keeps the data-parallel candidates of train_plans (ZeRO, recompute, offload);
            # those are bf16 plans: with fp8 such a count keeps the layout search's reason
            part = tuple(n for n in counts if n > gpus_per_node and n % gpus_per_node)
            if part and precision == "bf16-mixed":
                dp_part = {
                    (p.gpu, p.gpus): replace(
                        p,
                        settings=_dp_settings(p, micro_batch or 1, s_len, G),
                        reason=""
                        if p.binding != "does not fit"
                        else "no data-parallel layout fits in memory",
                    )
                    for p in train_plans(
                        model,
                        workload,
                        tokens,
                        names,
                        part,
                        prices_of,
                        mfu if profile is None else None,
                        profile,
                        s_len,
                        micro_batch or 1,
                        gpus_per_node,
                        inter_link,
                        deadline_hours,
                        budget_usd,
                        loader_tokens_per_s,
                        ports_per_node,
                        global_batch=G,
                    )
                }
                plans = [dp_part.get((p.gpu, p.gpus), p) for p in plans]
            # one GPU where no layout fits: the offload layouts (ZeRO-Offload / ZeRO-Infinity) of train_plans
            one = [p.gpu for p in plans if p.gpus == 1 and p.binding == "does not fit"]
            if one and precision == "bf16-mixed":  # the offload plans are bf16 (gpukit.cost's step)
                extra = train_plans(
                    model,
                    workload,
                    tokens,
                    one,
                    (1,),
                    prices_of,
                    mfu if profile is None else None,
                    profile,
                    s_len,
                    micro_batch or 1,
                    gpus_per_node,
                    inter_link,
                    deadline_hours,
                    budget_usd,
                    loader_tokens_per_s,
                    ports_per_node,
                    global_batch=G,
                )
                fits1 = {p.gpu: p for p in extra if p.binding != "does not fit"}
                plans = [
                    replace(
                        fits1[p.gpu],
                        settings=_dp_settings(fits1[p.gpu], micro_batch or 1, s_len, G),
                        memory_convention="pytorch",
                    )
                    if p.gpus == 1 and p.gpu in fits1 and p.binding == "does not fit"
                    else p
                    for p in plans
                ]
            models_used = (
                'memory: gpukit.memory, the layout\'s convention (gpukit.parallel.layout_convention: "pytorch" for '
                'data parallelism alone, "megatron" with tensor or pipeline parallelism; the bytes '
                '`gpukit parallel estimate` prints); convention "pytorch" for a one-GPU offload plan; each plan '
                "names its convention (memory_convention) and fits by it",
                "time: gpukit.parallel.estimate, the step of the layout (compute and elementwise kernels, TP/PP/DP "
                "traffic, bubble, optimizer) at the global batch; a one-GPU offload plan and a count that is not "
                'whole nodes (data parallel only, convention "pytorch"): gpukit.cost.training_run, which prices '
                "its layout with the same gpukit.parallel.estimate (the all-reduce and the offload transfer once per "
                "optimizer step)",
                "layout: gpukit.parallel search (team_layouts) at every GPU count and type (TP in a node with sequence "
                "parallelism, PP, DP, ZeRO 1-3, interleaving, micro-batch 1-8, the lightest recompute that fits)",
                PLAN_MODELS[-1],
            )
        else:
            plans = [
                replace(p, settings=_dp_settings(p, micro_batch or 1, s_len, G))
                for p in train_plans(
                    model,
                    workload,
                    tokens,
                    names,
                    counts,
                    prices_of,
                    mfu if profile is None else None,
                    profile,
                    s_len,
                    micro_batch or 1,
                    gpus_per_node,
                    inter_link,
                    deadline_hours,
                    budget_usd,
                    loader_tokens_per_s,
                    ports_per_node,
                    global_batch=G,
                )
            ]
    # Pareto set over the plans that fit; then the order of RANK_RULE
    fit_idx = [i for i, p in enumerate(plans) if p.binding != "does not fit"]
    flags = pareto_front(
        [((plans[i].hours if plans[i].hours is not None else 0.0), plans[i].cost_usd) for i in fit_idx]
    )
    for i, f in zip(fit_idx, flags, strict=True):
        plans[i] = replace(plans[i], pareto=f)
    plans = rank_plans(plans)  # RANK_RULE: the cheapest that meets the request, or one within 1% and faster
    rec, changes = _recommend(workload, plans, deadline_hours, budget_usd, count_notes)
    if (
        not any(p.feasible for p in plans)
        and suggest_alternatives
        and workload in ("pretrain", "finetune", "lora")
    ):
        alt_w = {"pretrain": None, "finetune": "qlora", "lora": "qlora"}[workload]
        if alt_w:
            alt = plan(
                alt_w,
                model,
                tokens=tokens,
                deadline_hours=deadline_hours,
                budget_usd=budget_usd,
                gpus=prices_of,
                counts=counts if counts_given else None,
                mfu=mfu,
                profile=profile,
                seq_len=seq_len,
                micro_batch=micro_batch,
                global_batch=global_batch,
                gpus_per_node=gpus_per_node,
                inter_link=inter_link,
                suggest_alternatives=False,
                ports_per_node=ports_per_node,
            )
            if alt.best is not None:
                b = alt.best
                changes = (
                    *changes,
                    f"QLoRA instead of {workload}: {b.gpus} x {b.gpu}, {b.hours:,.1f} h, "
                    f"${b.cost_usd:,.0f} meets the constraints",
                )
    if workload == "serve":  # serving times come from gpukit.inference's stated shares, not the MFU
        assumptions = [*inference.Assumptions().lines()[:1], f"{gpus_per_node} GPUs per node"]
        if deadline_hours is not None:
            assumptions.append(
                f"deadline {deadline_hours:g} h not used: a serving plan has a rate, not a run length"
            )
    else:
        full = workload in ("pretrain", "finetune") and refine
        assumptions = [
            (
                f"MFU {mfu:.2f} of the dense peak on the executed FLOPs (given, --mfu) in the one-GPU and "
                f"data-parallel plans; matmul efficiency {mfu:.2f} of the dense peak in the layout estimate of the others"
                if mfu is not None
                else "compute: gpukit.parallel.estimate's (matmuls at the matmul efficiency of the GPU's generation, "
                "gpukit/data/efficiency.csv; elementwise kernels at HBM bandwidth) for every plan; no MFU assumed"
            )
            if profile is None
            else f"profile {getattr(profile, 'source', '')}",
            f"{gpus_per_node} GPUs per node; between nodes "
            f"{rail_ports(inter_link, ports_per_node, gpus_per_node)}",
        ]
    if workload != "serve":
        seq_words = (
            f"seq_len {seq_len}"
            if seq_len
            else f"seq_len {model.default_seq_len()[0]} ({model.train_seq_len_source})"
        )
        drop_words = "dropout masks counted" if model.dropout else "no dropout"
        mb_words = (
            f"micro_batch {micro_batch} per GPU (given)"
            if micro_batch is not None
            else "micro_batch chosen per layout (1-8)"
            if workload in ("pretrain", "finetune") and refine
            else "micro_batch 1 per GPU"
        )
        assumptions.append(
            f"{seq_words}, {mb_words}, {drop_words} ({model.name}'s recipe, gpukit/data/models.csv)"
        )
        if cb is not None and G is not None:
            assumptions.append(batch_note + f"; {cb.line()}")
            flag = beyond_critical(G * s_len, cb)
            if flag:
                assumptions.insert(0, f"WARNING: {flag}")
        if model.is_moe:
            assumptions.append(MOE_TIME_CAVEAT)
        assumptions.append(
            f"GPU counts {', '.join(map(str, counts)) if counts else 'none'}"
            + (" (given)" if counts_given else " (powers of two up to what the global batch allows)")
        )
    else:
        assumptions.append(
            f"rate {rate:g} req/s, {input_tokens} input + {output_tokens} output tokens; budget is USD "
            f"per hour; the serving engine pre-allocates "
            f"{inference.Assumptions().reserve_fraction:.0%} of GPU memory (gpukit.inference)"
        )
    assumptions = price_notes + assumptions
    return PlanResult(
        workload=workload,
        model=model.name,
        plans=tuple(plans),
        recommendation=rec,
        changes=changes,
        skipped=tuple(skipped) + tuple(count_notes),
        models=models_used,
        assumptions=tuple(assumptions),
        global_batch=G,
        seq_len=None if workload == "serve" else s_len,
        critical_batch_tokens=None if cb is None else cb.tokens,
    )
