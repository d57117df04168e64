"""The planner: one GPU (with fitting tricks), one node, or many nodes, for a workload, a deadline and
a budget; every plan with its memory per GPU, layout, time, cost, efficiency and binding constraint.

Workloads: pretrain / finetune (full) / lora / qlora (training on `tokens`), serve (a request rate
with input and output lengths). For each allowed GPU type and count the planner picks the cheapest
memory layout that fits (gpukit.memory: ZeRO stage, activation recompute, optimizer offload on one
GPU; QLoRA/LoRA adapters), each layout priced by gpukit.cost.training_run (time from gpukit.compute,
6ND at peak x MFU or the calibrated profile, divided by n x the data-parallel efficiency of
gpukit.cost.predicted_efficiency; the same price loop as `gpukit cost train`), at prices from gpukit.prices. Serving uses the decode roofline (weights +
KV cache per step at HBM bandwidth) and prefill at peak x MFU. Plans are checked against the
deadline and the budget, ranked (feasible first, cheapest first), the Pareto set (time, cost) is
marked, and a recommendation names the reason. An infeasible request gets the nearest plan and
what would have to change. Every output names the models it used (`models`).

Split by reason to change: the training candidates (layouts tried per GPU count, the fastest that
fits, the 3D-layout refinement) in gpukit.plan.train, the articles' decision
frameworks beside the planner (frameworks_grid, article_000_size_rule, ...) in gpukit.plan.frameworks
(both reachable from here too: plan.frameworks_grid, plan.train_plans, ...); a layout is priced by
gpukit.cost.training_run, the price loop of `gpukit cost train`.

Used in: notebooks/09_decide, gpukit.widgets.plan_view, gpukit.cli.plan, gpukit.audits.plan,
gpukit.plan.train, gpukit.plan.frameworks.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpukit import inference
from gpukit.catalog import as_model, get_gpu, get_interconnect
from gpukit.catalog import gpus as catalog_gpus
from gpukit.cost import pareto_front, rail_ports
from gpukit.errors import named_field, require_choice, require_positive, require_positive_int
from gpukit.plan.plans import (
    DEFAULT_COUNTS,
    MAX_GLOBAL_BATCH_TOKENS,
    MIN_STEPS,
    PLAN_MODELS,
    WORKLOADS,
    Plan,
    PlanResult,
)
from gpukit.plan.train import refine_with_parallel, train_plans
from gpukit.prices import load_prices, price_warning, quote
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
    max_gpus,
):
    """Serving plans from gpukit.inference (issue 11): for each GPU type, precision and tensor-parallel
    degree, one replica's capacity at its largest batch (serve(...) without a simulation) and the
    replicas a rate needs (replicas_for_rate); the cheapest combination per GPU type."""
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
                if n > max_gpus:
                    if too_many is None or n < too_many[0]:
                        too_many = (n, p)
                    continue
                cand = (n * usd, n, prec, tp, replicas, p)
                if best is None or cand[:2] < best[:2]:
                    best = cand
                break  # the smallest tp that fits this precision
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
                    binding=f"needs {too_many} GPUs for the rate, more than the {max_gpus} allowed",
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


def _usd(x: float) -> str:
    return f"${x:,.2f}" if x < 1000 else f"${x:,.0f}"


def _h(hours: float) -> str:
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:,.1f} h"


def _recommend(workload, plans, deadline_hours, budget_usd) -> tuple[str, tuple[str, ...]]:
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
        why = (
            ("the cheapest plan that " + " and ".join(limits))
            if limits
            else "the cheapest plan (no deadline given)"
        )
        if b.gpus == 1 and b.tricks:
            why += f"; one GPU is enough with {', '.join(b.tricks)}"
        elif b.gpus == 1:
            why += "; the job fits one GPU and more GPUs only add cost"
        elif any(p.gpus < b.gpus and p.gpu == b.gpu and p.binding == "misses the deadline" for p in plans):
            why += f"; fewer {b.gpu} GPUs miss the deadline"
        elif any(p.gpus < b.gpus and p.gpu == b.gpu and p.binding == "does not fit" for p in plans):
            why += f"; fewer {b.gpu} GPUs cannot hold the training state"
        if b.binding == "input-bound" or any(
            p.gpus > b.gpus and p.gpu == b.gpu and p.binding == "input-bound" for p in plans
        ):
            why += "; more GPUs would only wait for the input pipeline (input-bound)"
        faster = [p for p in feas if p.pareto and p.hours < b.hours]
        if faster:
            f = min(faster, key=lambda p: p.hours)
            why += f". Fastest on the Pareto set: {f.gpus} x {f.gpu} in {_h(f.hours)} for ${f.cost_usd:,.0f}"
        return f"{what}: {_h(b.hours)}, ${b.cost_usd:,.0f}. Reason: {why}.", ()
    fitting = [p for p in plans if p.binding != "does not fit"]
    if not fitting:
        return (
            "Nothing fits: no allowed GPU type and count holds this model for this workload.",
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
    counts=DEFAULT_COUNTS,
    prices=None,
    mfu: float | None = None,
    profile=None,
    seq_len: int | None = None,
    micro_batch: int = 1,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    loader_tokens_per_s: float | None = None,
    suggest_alternatives: bool = True,
    refine: bool = True,
    ports_per_node: int | None = None,
) -> PlanResult:
    """Plans for `workload` on `model` (see the module docstring). gpus: allowed GPU types, a list
    of names (priced from `prices`, gpukit/data/prices.csv by default) or a {name: usd_per_gpu_hour} dict;
    None = every catalog GPU that has a price. counts: GPU counts to consider. For serve, budget_usd
    is USD per hour. loader_tokens_per_s caps throughput (an input pipeline slower than the GPUs).
    ports_per_node: inter-node network ports per node shared by its GPUs (default one per GPU,
    rail-optimized), for the training plans' all-reduce and layout search (gpukit.cost.predicted_efficiency,
    gpukit.parallel.search); serving plans keep tensor parallelism inside a node, so it is an error there."""

    require_choice("workload", workload, WORKLOADS)
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
    counts = tuple(sorted({require_positive_int("gpus", c) for c in counts}))
    if not counts:
        raise ValueError("counts must list at least one GPU count")
    if loader_tokens_per_s is not None:
        loader_tokens_per_s = require_positive("loader_tokens_per_s", loader_tokens_per_s)
    if seq_len is not None:  # 0 is an error, not "the default"
        seq_len = require_positive_int("seq_len", seq_len)
    micro_batch = require_positive_int("micro_batch", micro_batch)
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
    mfu_v = mfu if mfu is not None or profile is not None else 0.4
    models_used: tuple[str, ...] = PLAN_MODELS
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
            max(counts),
        )
        models_used = (
            "serving: gpukit.inference (memory per GPU with the KV cache, prefill and decode from the "
            "roofline, replicas for the rate at the largest batch)",
            PLAN_MODELS[-1],
        )
    else:
        plans = train_plans(
            model,
            workload,
            tokens,
            names,
            counts,
            prices_of,
            mfu,  # None: the step model's compute (matmul efficiency + elementwise)
            profile,
            seq_len or model.default_seq_len()[0],
            micro_batch,
            gpus_per_node,
            inter_link,
            deadline_hours,
            budget_usd,
            loader_tokens_per_s,
            ports_per_node,
        )
    if workload in ("pretrain", "finetune") and refine:
        plans, refined = refine_with_parallel(
            plans,
            model,
            tokens,
            seq_len or model.default_seq_len()[0],
            gpus_per_node,
            inter_link,
            deadline_hours,
            budget_usd,
            mfu,  # None: the step model's compute (matmul efficiency + elementwise)
            profile,
            loader_tokens_per_s,
            ports_per_node=ports_per_node,
        )
        if refined:
            models_used = (*models_used, f"layout: gpukit.parallel search (3D layouts) for {refined}")
    # rank: feasible first, then cost, then time; Pareto set over the plans that fit
    fit_idx = [i for i, p in enumerate(plans) if p.binding != "does not fit"]
    flags = pareto_front(
        [((plans[i].hours if plans[i].hours is not None else 0.0), plans[i].cost_usd) for i in fit_idx]
    )
    for i, f in zip(fit_idx, flags, strict=True):
        plans[i] = replace(plans[i], pareto=f)
    # within 1% of cost the plan with fewer GPUs ranks first (simpler, same money)
    plans.sort(
        key=lambda p: (
            not p.feasible,
            p.binding == "does not fit",
            round(math.log(p.cost_usd) / math.log(1.01)) if 0 < p.cost_usd < math.inf else math.inf,
            p.gpus,
            p.hours if p.hours is not None else 0.0,
        )
    )
    rec, changes = _recommend(workload, plans, deadline_hours, budget_usd)
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
                counts=counts,
                mfu=mfu,
                profile=profile,
                seq_len=seq_len,
                micro_batch=micro_batch,
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
        assumptions = [
            (
                f"MFU {mfu_v:.2f} of the peak on the executed FLOPs (given)"
                if mfu is not None
                else "compute: gpukit.parallel.estimate's (matmuls at the stated matmul efficiency of the peak, "
                "elementwise kernels at HBM bandwidth); no MFU assumed"
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
        assumptions.append(
            f"{seq_words}, micro_batch {micro_batch} per GPU, {drop_words} ({model.name}'s recipe, "
            f"gpukit/data/models.csv); GPU counts limited to a global batch of at most "
            f"{MAX_GLOBAL_BATCH_TOKENS:,} tokens and at least {MIN_STEPS} optimizer steps"
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
        skipped=tuple(skipped),
        models=models_used,
        assumptions=tuple(assumptions),
    )
