"""The planner's training candidates: for each GPU type and count, the layouts to try, the cheapest
that fits as a Plan, and the re-estimate of the best ones with 3D layouts.

Holds the layouts tried per GPU count (ZeRO stage x activation recompute, optimizer or full offload
for full training; adapters only for LoRA/QLoRA), the choice of the fastest that fits, the plan's
binding constraint (deadline and budget first), and `refine_with_parallel` (gpukit.parallel's
DP x TP x PP search for the cheapest fitting plans). Pricing a layout (memory per GPU, the step, the
adapters' cheaper backward, the data-parallel efficiency, offload and input caps, hours, cost) is
gpukit.cost.training_run, the one price loop `gpukit cost train` uses too, whose step is gpukit.parallel.estimate's
(the one step model); the searched 3D layouts are priced by the same estimate: for the same model, GPU, count
and layout cost train, plan and parallel estimate give the same hours. Offload plans take the gradient
accumulation a real run would use (gpukit.cost.offload_grad_accum: the CPU Adam under 10% of the step within
the global batch). Units: hours for a run, USD.
This module imports Plan, MAX_GLOBAL_BATCH_TOKENS and MIN_STEPS from gpukit.plan.plans.
Used in: gpukit.plan (and through it notebooks/09_decide, gpukit.widgets.plan_view, gpukit.cli.plan,
gpukit.audits.plan, tests/test_plan.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from gpukit import parallel
from gpukit.catalog import as_model, get_gpu
from gpukit.cost import NETWORK_BOUND_BELOW, TrainingRun, offload_grad_accum, training_run
from gpukit.errors import MAX_COUNT, require_positive, require_positive_int
from gpukit.memory import TrainSetup, estimate_memory
from gpukit.plan.plans import MAX_GLOBAL_BATCH_TOKENS, MIN_STEPS, Plan
from gpukit.specs import ModelSpec

# ------------------------------------------------------------------------------- training layouts
GLOBAL_BATCH_SEQUENCES = (
    512  # the global batch the planner prices every layout at, in sequences (GPT-3 small's
)
# 0.5M tokens at 1,024; 2M at 4,096; Brown et al. 2020 table 2.1), unless the GPUs x micro_batch exceed it


def planner_grad_accum(n: int, seq_len: int, micro_batch: int, tokens: float) -> int:
    """The gradient accumulation that brings n GPUs x micro_batch sequences to the planner's global batch,
    GLOBAL_BATCH_SEQUENCES (the same for the data-parallel plans and the 3D search), within the caps that limit
    the GPU count (MAX_GLOBAL_BATCH_TOKENS, tokens / MIN_STEPS): the optimizer step (and an offload's CPU Adam)
    is paid once per that many tokens, as a real run pays it."""
    n = require_positive_int("n", n, at_most=MAX_COUNT)
    seq_len = require_positive_int("seq_len", seq_len, at_most=MAX_COUNT)
    micro_batch = require_positive_int("micro_batch", micro_batch, at_most=MAX_COUNT)
    tokens = require_positive("tokens", tokens)
    if not math.isfinite(tokens):
        raise ValueError(f"tokens must be finite, got {tokens}")
    ga = max(1, GLOBAL_BATCH_SEQUENCES // (n * micro_batch))
    cap = int(min(MAX_GLOBAL_BATCH_TOKENS, tokens / MIN_STEPS) // (n * micro_batch * seq_len))
    ga = max(1, min(ga, cap))
    return 1 << (ga.bit_length() - 1)  # a power of two, as batch sizes are chosen


def _train_setups(
    workload: str, n: int, seq_len: int, micro_batch: int, dropout: bool = False, grad_accum: int = 1
):
    """Layouts to try, cheapest in time first: (label, TrainSetup, tricks). dropout: the model row's recipe
    (gpukit/data/models.csv `dropout`: GPT-2/OPT/BERT train with it, Llama/Mistral without)."""
    ft = {"pretrain": "full", "finetune": "full", "lora": "lora", "qlora": "qlora"}[workload]
    base: dict[str, Any] = dict(
        seq_len=seq_len, micro_batch=micro_batch, finetune=ft, dropout=dropout, grad_accum=grad_accum
    )
    out = []
    zeros = (0,) if ft != "full" or n == 1 else (0, 1, 2, 3)
    for z in zeros:
        for rc in ("none", "selective", "full"):
            tricks = tuple(
                t for t in ((f"ZeRO-{z}" if z else ""), ("" if rc == "none" else f"{rc} recompute")) if t
            )
            out.append((tricks, TrainSetup(zero_stage=z, dp=n, recompute=rc, **base)))
    if ft == "full":  # offload: ZeRO-Offload (optimizer) and ZeRO-Infinity (all) on CPU memory
        for rc in ("selective", "full"):
            out.append(
                (
                    (f"{rc} recompute", "optimizer offload"),
                    TrainSetup(
                        zero_stage=1 if n == 1 else 3, dp=n, recompute=rc, offload="optimizer", **base
                    ),
                )
            )
        out.append(
            (
                ("full recompute", "ZeRO-3 + offload all"),
                TrainSetup(zero_stage=3, dp=n, recompute="full", offload="all", **base),
            )
        )
    return out


def _layout(n: int, gpus_per_node: int, tricks) -> str:
    scale = (
        "1 GPU"
        if n == 1
        else f"DP {n}" + (f" ({math.ceil(n / gpus_per_node)} nodes)" if n > gpus_per_node else "")
    )
    return scale + ("" if not tricks else ", " + ", ".join(tricks))


def _binding(run: TrainingRun, deadline_hours, budget_usd) -> str:
    """The planner's constraints first (deadline, budget), then what limits the run (TrainingRun.binding)."""
    if deadline_hours is not None and run.hours > deadline_hours:
        return "misses the deadline"
    if budget_usd is not None and run.cost_usd > budget_usd:
        return "over budget"
    return run.binding


def train_plans(
    model: ModelSpec,
    workload,
    tokens,
    gpu_names,
    counts,
    prices_of,
    mfu,
    profile,
    seq_len,
    micro_batch,
    gpus_per_node,
    inter_link,
    deadline_hours,
    budget_usd,
    loader_tokens_per_s,
    ports_per_node=None,
    zero_stages=None,
    global_batch=None,
):
    """For each GPU type and count, the fastest layout of _train_setups that fits, priced by
    gpukit.cost.training_run (the price loop of `gpukit cost train`), as a Plan; "does not fit" when none does.
    zero_stages: only the layouts with these ZeRO stages (None: every stage), to fix a layout as cost train
    prices it. global_batch: sequences per optimizer step (gpukit.plan's stated batch): each count runs
    grad_accum = global_batch / (n x micro_batch) and counts with n x micro_batch > global_batch are left
    out; None: grad_accum 1 and the cap below."""
    model = as_model(model, "model")  # a catalog name too
    plans = []
    kw = dict(
        mfu=mfu,
        profile=profile,
        gpus_per_node=gpus_per_node,
        inter_link=inter_link,
        ports_per_node=ports_per_node,
        loader_tokens_per_s=loader_tokens_per_s,
    )
    for name in gpu_names:
        usd = prices_of[name]
        for n in counts:
            if global_batch is not None:
                if n * micro_batch > global_batch:
                    continue  # more data-parallel ranks than the global batch has micro-batches
                ga = max(1, global_batch // (n * micro_batch))
            elif n > 1 and n * seq_len * micro_batch > min(MAX_GLOBAL_BATCH_TOKENS, tokens / MIN_STEPS):
                continue  # the global batch would exceed what one run can use
            else:
                ga = 1
            best = None
            # one GPU's share of the batch: the stated global batch, else what one run can use
            cap_tokens = (
                global_batch * seq_len / n
                if global_batch is not None
                else min(MAX_GLOBAL_BATCH_TOKENS, tokens / MIN_STEPS) / n
            )
            base_ga = ga if global_batch is not None else planner_grad_accum(n, seq_len, micro_batch, tokens)
            for tricks, s in _train_setups(workload, n, seq_len, micro_batch, model.dropout):
                if zero_stages is not None and s.zero_stage not in zero_stages:
                    continue
                try:
                    ga = base_ga
                    if (
                        s.offload != "none"
                    ):  # the accumulation a real offload run uses (once-per-step CPU Adam)
                        ga = max(
                            ga,
                            offload_grad_accum(
                                model,
                                name,
                                s,
                                max_tokens_per_gpu=cap_tokens,
                                **{k: v for k, v in kw.items() if k != "loader_tokens_per_s"},
                            ),
                        )
                    if ga > 1:
                        s, tricks = replace(s, grad_accum=ga), (*tricks, f"grad_accum {ga}")
                    run = training_run(model, tokens, name, s, usd_per_gpu_hour=usd, **kw)
                except ValueError:
                    continue
                if not run.fits:
                    continue
                if best is None or run.hours < best[0].hours * (
                    1 - 1e-9
                ):  # ties: the layout with fewer tricks
                    best = (run, tricks)
            if best is None:
                s = TrainSetup(
                    zero_stage=3 if n > 1 and workload in ("pretrain", "finetune") else 0,
                    dp=n,
                    recompute="full",
                    seq_len=seq_len,
                    micro_batch=micro_batch,
                    dropout=model.dropout,
                    finetune={"lora": "lora", "qlora": "qlora"}.get(workload, "full"),
                )
                m = estimate_memory(model, setup=s, gpu=get_gpu(name))  # what the lightest layout would need
                plans.append(
                    Plan(
                        gpu=name,
                        gpus=n,
                        nodes=math.ceil(n / gpus_per_node),
                        layout=_layout(n, gpus_per_node, ("nothing fits",)),
                        memory_per_gpu_bytes=m.total_bytes,
                        hours=math.inf,
                        cost_usd=math.inf,
                        efficiency=0.0,
                        binding="does not fit",
                        feasible=False,
                        usd_per_gpu_hour=usd,
                    )
                )
                continue
            run, tricks = best
            binding = _binding(run, deadline_hours, budget_usd)
            plans.append(
                Plan(
                    gpu=name,
                    gpus=n,
                    nodes=run.nodes,
                    layout=_layout(n, gpus_per_node, tricks),
                    memory_per_gpu_bytes=run.memory_per_gpu_bytes,
                    hours=run.hours,
                    cost_usd=run.cost_usd,
                    efficiency=run.efficiency,
                    binding=binding,
                    feasible=binding not in ("misses the deadline", "over budget"),
                    usd_per_gpu_hour=usd,
                    tricks=tricks,
                )
            )
    return plans


def refine_with_parallel(
    plans,
    model,
    tokens,
    seq_len,
    gpus_per_node,
    inter_link,
    deadline_hours,
    budget_usd,
    mfu,
    profile,
    loader_tokens_per_s=None,
    top: int = 2,
    ports_per_node=None,
):
    """Re-estimate the `top` cheapest training plans that fit (two: a search of 1024 GPUs takes about 0.4 s,
    and the whole plan must stay under the 2 s a widget allows) with gpukit.parallel's layout search
    (data x tensor x pipeline parallelism); a searched layout replaces the data-parallel one when it
    is faster. Returns (plans, description of what was refined)."""
    model = as_model(model, "model")  # a catalog name too
    cands = sorted(
        (
            i
            for i, p in enumerate(plans)
            if p.binding != "does not fit"
            and p.gpus > 1
            and (p.gpus <= gpus_per_node or p.gpus % gpus_per_node == 0)
        ),
        key=lambda i: (not plans[i].feasible, plans[i].cost_usd),
    )[:top]
    done = []
    for i in cands:
        p = plans[i]
        try:
            r = parallel.search(
                model,
                p.gpu,
                p.gpus,
                gpus_per_node=gpus_per_node,
                seq_len=seq_len,
                inter_link=inter_link,
                ports_per_node=ports_per_node,
                global_batch=p.gpus * planner_grad_accum(p.gpus, seq_len, 1, tokens),
                top_k=1,
            )
        except ValueError:
            continue
        if r.best is None:
            continue
        c = r.best.estimate.config
        # the one step model: gpukit.parallel.estimate of the layout found, priced as training_run prices the
        # data-parallel plans (the planner's mfu or profile, fp32 gradients on the wire, Megatron's main grads:
        # bf16 runs accumulate and all-reduce gradients in fp32); a 3D layout runs in Megatron, so its memory is
        # the megatron convention's with those fp32 gradients, and a layout that does not fit by it is dropped
        cluster = parallel.make_cluster(
            p.gpu, gpus_per_node, inter_link=inter_link, ports_per_node=ports_per_node, profile=profile
        )
        try:
            e = parallel.estimate(
                model,
                c,
                cluster,
                global_batch=r.best.estimate.global_batch,
                seq_len=seq_len,
                mfu=mfu,
                grad_dtype="fp32",
            )
        except ValueError:
            continue
        if not e.fits:
            continue
        useful = e.share("compute") + e.share("elementwise")
        hours = tokens / e.tokens_per_s / 3600
        eff = useful
        input_bound = loader_tokens_per_s is not None and tokens / loader_tokens_per_s / 3600 > hours
        if input_bound:  # the input pipeline caps the job whatever the layout (Amdahl)
            eff *= hours / (tokens / loader_tokens_per_s / 3600)
            hours = tokens / loader_tokens_per_s / 3600
        if hours >= p.hours * (1 - 1e-9):
            continue
        cost_usd = hours * p.gpus * p.usd_per_gpu_hour
        binding = (
            "misses the deadline"
            if deadline_hours is not None and hours > deadline_hours
            else "over budget"
            if budget_usd is not None and cost_usd > budget_usd
            else "input-bound"
            if input_bound
            else "network-bound"
            if useful < NETWORK_BOUND_BELOW
            else "compute-bound"
        )
        layout = f"DP {c.dp} x TP {c.tp} x PP {c.pp}, ZeRO-{c.zero_stage}, {c.recompute} recompute (parallel search)"
        tricks = tuple(
            t
            for t in (
                f"TP {c.tp}" if c.tp > 1 else "",
                f"PP {c.pp}" if c.pp > 1 else "",
                f"ZeRO-{c.zero_stage}" if c.zero_stage else "",
                f"{c.recompute} recompute" if c.recompute != "none" else "",
            )
            if t
        )
        plans[i] = replace(
            p,
            layout=layout,
            tricks=tricks,
            memory_per_gpu_bytes=int(e.memory_per_gpu_bytes),
            hours=hours,
            cost_usd=cost_usd,
            efficiency=eff,
            binding=binding,
            feasible=binding not in ("misses the deadline", "over budget"),
        )
        done.append(f"{p.gpus} x {p.gpu}")
    return plans, ", ".join(done)
