"""The planner's training candidates: for each GPU type and count, the layouts to try, the time of
each, the cheapest that fits as a Plan, and the re-estimate of the best ones with 3D layouts.

Holds the layouts tried per GPU count (ZeRO stage x activation recompute, optimizer or full offload
for full training; adapters only for LoRA/QLoRA), the step time of a layout (gpukit.compute's
single-GPU time, the adapters' cheaper backward, gpukit.cost.predicted_efficiency's data-parallel
all-reduce, the offload's PCIe and CPU Adam time, an input pipeline's cap), the training plans with
their binding constraint, and `_refine_with_parallel` (gpukit.parallel's DP x TP x PP search for the
cheapest fitting plans). Units: hours for a run, seconds per step, GB/s decimal, USD.
Sources: ZeRO-Offload (Ren et al. 2021, sec. 4) for the offload traffic; LoRA (Hu et al. 2021) for
the backward that skips the frozen weights' gradients; OFFLOAD_CPU_GBPS is an assumption.
gpukit.plan (the entry point, Plan, ranking and recommendation) calls these and re-exports
OFFLOAD_CPU_GBPS; this module imports Plan, MAX_GLOBAL_BATCH_TOKENS and MIN_STEPS from it.
Used in: gpukit.plan (and through it notebooks/09_decide, gpukit.widgets.plan_view, gpukit.cli.plan,
gpukit.audits.plan, tests/test_plan.py).
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpukit.catalog import get_gpu
from gpukit.compute import time_to_train
from gpukit.cost import predicted_efficiency
from gpukit.memory import TrainSetup, estimate_memory
from gpukit.plan.plans import MAX_GLOBAL_BATCH_TOKENS, MIN_STEPS, Plan
from gpukit.specs import ModelSpec

OFFLOAD_CPU_GBPS = 50.0  # assumed host memory bandwidth for the CPU Adam step with optimizer offload


# ------------------------------------------------------------------------------- training layouts
def _train_setups(workload: str, n: int, seq_len: int, micro_batch: int, dropout: bool = False):
    """Layouts to try, cheapest in time first: (label, TrainSetup, tricks). dropout: the model row's recipe
    (gpukit/data/models.csv `dropout`: GPT-2/OPT/BERT train with it, Llama/Mistral without)."""
    ft = {"pretrain": "full", "finetune": "full", "lora": "lora", "qlora": "qlora"}[workload]
    base = dict(seq_len=seq_len, micro_batch=micro_batch, finetune=ft, dropout=dropout)
    out = []
    zeros = (0,) if ft != "full" or n == 1 else (0, 1, 2, 3)
    for z in zeros:
        for rc in ("none", "selective", "full"):
            tricks = tuple(t for t in ((f"ZeRO-{z}" if z else ""), ("" if rc == "none" else f"{rc} recompute")) if t)
            out.append((tricks, TrainSetup(zero_stage=z, dp=n, recompute=rc, **base)))
    if ft == "full":  # offload: ZeRO-Offload (optimizer) and ZeRO-Infinity (all) on CPU memory
        for rc in ("selective", "full"):
            out.append(((f"{rc} recompute", "optimizer offload"),
                        TrainSetup(zero_stage=1 if n == 1 else 3, dp=n, recompute=rc, offload="optimizer", **base)))
        out.append((("full recompute", "ZeRO-3 + offload all"),
                    TrainSetup(zero_stage=3, dp=n, recompute="full", offload="all", **base)))
    return out


def _layout(n: int, gpus_per_node: int, tricks) -> str:
    scale = "1 GPU" if n == 1 else f"DP {n}" + (f" ({math.ceil(n / gpus_per_node)} nodes)" if n > gpus_per_node else "")
    return scale + ("" if not tricks else ", " + ", ".join(tricks))


def _offload_slowdown_s(n_params: float, setup: TrainSetup, gpu) -> float:
    """Extra seconds per optimizer step from optimizer offload: 16-bit gradients down and parameters up
    over PCIe (Ren et al. 2021, ZeRO-Offload sec. 4) plus a CPU Adam pass over 16 bytes/param read and
    written at OFFLOAD_CPU_GBPS (an assumption). Once per step, whatever its tokens: more tokens per
    step (a larger micro-batch) hide it better."""
    if setup.offload == "none":
        return 0.0
    pcie_gbps = {3: 16.0, 4: 32.0, 5: 64.0}.get(gpu.pcie_gen, 32.0)
    per_gpu = n_params / setup.dp
    return 4 * per_gpu / (pcie_gbps * 1e9) + 32 * per_gpu / (OFFLOAD_CPU_GBPS * 1e9)


def _train_time(model, workload, tokens, g, name, n, s, t1_by_rc, mfu, profile, seq_len, micro_batch,
                gpus_per_node, inter_link, loader_tokens_per_s, ports_per_node=None):
    """(hours, efficiency incl. offload and input, network efficiency, input-bound) of one layout."""
    recompute = "full" if s.recompute == "full" else "none"
    if recompute not in t1_by_rc:
        t1_by_rc[recompute] = time_to_train(model, tokens, g, 1, mfu=mfu, profile=profile, recompute=recompute,
                                            seq_len=seq_len, dtype=g.half_dtype)
    t1 = t1_by_rc[recompute]
    # adapters: the backward skips the frozen weights' gradients (about 4N of 6N; Hu et al. 2021, LoRA)
    t1_s = t1.seconds * (4 / 6) if workload in ("lora", "qlora") else t1.seconds
    tokens_per_gpu = seq_len * micro_batch
    step_compute = t1_s * tokens_per_gpu / tokens
    if workload in ("lora", "qlora"):  # only adapter gradients are all-reduced: negligible traffic
        eff = 1.0
    else:
        eff = predicted_efficiency(model.n_params, name, n, gpus_per_node=gpus_per_node, inter_link=inter_link,
                                   tokens_per_gpu=tokens_per_gpu, mfu=t1.utilization,
                                   zero_stage=s.zero_stage, ports_per_node=ports_per_node).efficiency
    step_s = step_compute / eff + _offload_slowdown_s(model.n_params, s, g)
    input_bound = False
    if loader_tokens_per_s is not None and n * tokens_per_gpu / step_s > loader_tokens_per_s:
        step_s = n * tokens_per_gpu / loader_tokens_per_s  # the input pipeline caps the job (Amdahl)
        input_bound = True
    eff_total = step_compute / step_s
    return t1_s / 3600 / (n * eff_total), eff_total, eff, input_bound


def train_plans(model: ModelSpec, workload, tokens, gpu_names, counts, prices_of, mfu, profile, seq_len,
                 micro_batch, gpus_per_node, inter_link, deadline_hours, budget_usd, loader_tokens_per_s,
                 ports_per_node=None):
    plans = []
    for name in gpu_names:
        g = get_gpu(name)
        usd = prices_of[name]
        t1_by_rc = {}
        for n in counts:
            if n > 1 and n * seq_len * micro_batch > min(MAX_GLOBAL_BATCH_TOKENS, tokens / MIN_STEPS):
                continue  # the global batch would exceed what one run can use
            best = None
            for tricks, s in _train_setups(workload, n, seq_len, micro_batch, model.dropout):
                try:
                    m = estimate_memory(model, setup=s, gpu=g)
                except ValueError:
                    continue
                if not m.fits:
                    continue
                est = _train_time(model, workload, tokens, g, name, n, s, t1_by_rc, mfu, profile, seq_len,
                                  micro_batch, gpus_per_node, inter_link, loader_tokens_per_s, ports_per_node)
                if best is None or est[0] < best[0][0] * (1 - 1e-9):  # ties: the layout with fewer tricks
                    best = (est, tricks, s, m)
            if best is None:
                s = TrainSetup(zero_stage=3 if n > 1 and workload in ("pretrain", "finetune") else 0, dp=n,
                               recompute="full", seq_len=seq_len, micro_batch=micro_batch, dropout=model.dropout,
                               finetune={"lora": "lora", "qlora": "qlora"}.get(workload, "full"))
                m = estimate_memory(model, setup=s, gpu=g)
                plans.append(Plan(gpu=name, gpus=n, nodes=math.ceil(n / gpus_per_node),
                                  layout=_layout(n, gpus_per_node, ("nothing fits",)), memory_per_gpu_bytes=m.total_bytes,
                                  hours=math.inf, cost_usd=math.inf, efficiency=0.0, binding="does not fit",
                                  feasible=False, usd_per_gpu_hour=usd))
                continue
            (hours, eff_total, eff_net, input_bound), tricks, s, m = best
            cost_usd = hours * n * usd
            binding = ("misses the deadline" if deadline_hours is not None and hours > deadline_hours else
                       "over budget" if budget_usd is not None and cost_usd > budget_usd else
                       "input-bound" if input_bound else "network-bound" if eff_net < 0.5 else "compute-bound")
            plans.append(Plan(gpu=name, gpus=n, nodes=math.ceil(n / gpus_per_node),
                              layout=_layout(n, gpus_per_node, tricks), memory_per_gpu_bytes=m.total_bytes,
                              hours=hours, cost_usd=cost_usd, efficiency=eff_total, binding=binding,
                              feasible=binding not in ("misses the deadline", "over budget"),
                              usd_per_gpu_hour=usd, tricks=tricks))
    return plans


def refine_with_parallel(plans, model, tokens, seq_len, gpus_per_node, inter_link, deadline_hours, budget_usd,
                          mfu, profile, loader_tokens_per_s=None, top: int = 2, ports_per_node=None):
    """Re-estimate the `top` cheapest training plans that fit (two: a search of 1024 GPUs takes about 0.4 s,
    and the whole plan must stay under the 2 s a widget allows) with gpukit.parallel's layout search
    (data x tensor x pipeline parallelism); a searched layout replaces the data-parallel one when it
    is faster. Returns (plans, description of what was refined)."""
    from gpukit import parallel

    cands = sorted((i for i, p in enumerate(plans) if p.binding != "does not fit" and p.gpus > 1
                    and (p.gpus <= gpus_per_node or p.gpus % gpus_per_node == 0)),
                   key=lambda i: (not plans[i].feasible, plans[i].cost_usd))[:top]
    done = []
    for i in cands:
        p = plans[i]
        try:
            r = parallel.search(model, p.gpu, p.gpus, gpus_per_node=gpus_per_node, seq_len=seq_len,
                                inter_link=inter_link, ports_per_node=ports_per_node, global_batch=max(p.gpus, 512),
                                top_k=1)
        except ValueError:
            continue
        if r.best is None:
            continue
        e = r.best.estimate
        c = e.config
        # Consistent with the other plans: single-GPU time from gpukit.compute at the planner's MFU, and
        # from the search only the share of its step that is useful compute (bubble, exposed TP/PP/DP
        # communication excluded; full recompute executes 8N instead of 6N FLOPs per token).
        useful = e.share("compute") + e.share("elementwise")
        eff = useful * (0.75 if c.recompute == "full" else 1.0)
        t1 = time_to_train(model, tokens, get_gpu(p.gpu), 1, mfu=mfu, profile=profile, seq_len=seq_len,
                           dtype=get_gpu(p.gpu).half_dtype).seconds / 3600
        hours = t1 / (p.gpus * eff)
        input_bound = loader_tokens_per_s is not None and tokens / loader_tokens_per_s / 3600 > hours
        if input_bound:  # the input pipeline caps the job whatever the layout (Amdahl)
            hours = tokens / loader_tokens_per_s / 3600
            eff = t1 / (p.gpus * hours)
        if hours >= p.hours * (1 - 1e-9):
            continue
        cost_usd = hours * p.gpus * p.usd_per_gpu_hour
        binding = ("misses the deadline" if deadline_hours is not None and hours > deadline_hours else
                   "over budget" if budget_usd is not None and cost_usd > budget_usd else
                   "input-bound" if input_bound else "network-bound" if useful < 0.5 else "compute-bound")
        layout = f"DP {c.dp} x TP {c.tp} x PP {c.pp}, ZeRO-{c.zero_stage}, {c.recompute} recompute (parallel search)"
        tricks = tuple(t for t in (f"TP {c.tp}" if c.tp > 1 else "", f"PP {c.pp}" if c.pp > 1 else "",
                                   f"ZeRO-{c.zero_stage}" if c.zero_stage else "",
                                   f"{c.recompute} recompute" if c.recompute != "none" else "") if t)
        plans[i] = replace(p, layout=layout, tricks=tricks, memory_per_gpu_bytes=int(e.memory_per_gpu_bytes), hours=hours,
                           cost_usd=cost_usd, efficiency=eff, binding=binding,
                           feasible=binding not in ("misses the deadline", "over budget"))
        done.append(f"{p.gpus} x {p.gpu}")
    return plans, ", ".join(done)
