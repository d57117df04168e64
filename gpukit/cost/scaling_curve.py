"""Data-parallel scaling priced by the one step model: the speed-up and efficiency per GPU count that
`gpukit scaling` prints, from the same training_run (gpukit.parallel.estimate) as `gpukit cost train`,
`plan` and `parallel estimate`, so that the four agree on the same run by construction (issue 23 sec. 1).

gpukit.scaling keeps its pure DDP bucket model (6N at peak x MFU, comm hooks, overlap off, bucket sizes)
for the lessons of notebooks 04-05 that pass their own numbers; this module is the answer for a run.
Speed-up over one GPU's step, always (computed even when 1 is not among the counts): throughput(n) /
throughput(1) = n x T(n) x step(1) / (T(1) x step(n)) with T tokens per GPU per optimizer step; the
efficiency is speed-up / n, which is what the hours of `cost train` imply (hours(1) / (n hours(n))).
predicted_efficiency is that efficiency for a bare parameter count (params_only_spec's shape), the number the
audits and article_table (notebook 08's article table) use: one step model behind every training answer.
Used in: gpukit.cli.scaling, gpukit.audits, notebooks 08; tests/test_consistency.py.
"""

from __future__ import annotations

import math
from dataclasses import replace

from gpukit import parallel
from gpukit.catalog import as_model, default_links, get_gpu, intra_node_link
from gpukit.comm import cluster_network
from gpukit.cost.efficiency import DEFAULT_TOKENS_PER_GPU, Efficiency, ports_words
from gpukit.cost.training import (
    ARTICLE_TABLE,
    PARAMS_ONLY_LAYERS,
    ArticleTableRow,
    data_parallel_setup,
    params_only_spec,
    training_run,
)
from gpukit.errors import finite_result, require_positive, require_positive_int
from gpukit.memory import state_bytes_per_param
from gpukit.scaling import GRAD_DTYPE, ScalingResult, ScalingRow, overlap_threshold_tokens
from gpukit.specs import ModelSpec
from gpukit.units import GiB


def _sequences(tokens: float, seq_len: int, what: str) -> tuple[int, int]:
    """(seq_len, micro_batch) of a micro-step of `tokens` tokens per GPU: whole sequences of the model's
    seq_len, or one shorter sequence when fewer tokens than seq_len are given."""
    if tokens < 1:  # a global batch of 4 tokens on 8 GPUs would give half a token per GPU
        raise ValueError(f"{what} must be at least 1 token, got {tokens:g}")
    if tokens != int(tokens):
        raise ValueError(f"{what} must be a whole number of tokens, got {tokens:g}")
    t = int(tokens)
    if t <= seq_len:
        return t, 1
    if t % seq_len:
        raise ValueError(
            f"{what} must be at most seq_len {seq_len} or a multiple of it (whole sequences per micro-step), "
            f"got {t:,} (the nearest whole number of sequences: {max(1, round(t / seq_len)) * seq_len:,})"
        )
    return seq_len, t // seq_len


def _dp_run(model, n, tokens, seq_len, what, g, net, **kw):
    """One optimizer step of `n` GPUs in data parallelism at `tokens` per GPU per micro-step (whole sequences
    of seq_len, _sequences): training_run of data_parallel_setup, priced at nothing (the step is compared).
    kw: zero_stage and grad_accum for the setup, convention for its memory convention, the rest training_run's.
    -> (the TrainingRun, tokens per GPU per micro-step)."""
    setup_kw = {k: kw.pop(k) for k in ("zero_stage", "grad_accum") if k in kw}
    convention = kw.pop("convention", None)
    s, mb = _sequences(require_positive("tokens", tokens), seq_len, what)
    setup = data_parallel_setup(model, n, seq_len=s, micro_batch=mb, **setup_kw)
    if convention is not None:
        setup = replace(setup, convention=convention)
    tokens_step = float(n * s * mb * setup.grad_accum)  # one optimizer step: the step is what is compared
    r = training_run(model, tokens_step, g.name, setup, usd_per_gpu_hour=0.0, network=net, **kw)
    return r, float(s * mb)


def _dp_comm(r) -> tuple[float, float]:
    """(all, exposed) seconds of the data-parallel sync in a TrainingRun's step (DDP/ZeRO-1/2 and ZeRO-3)."""
    breakdown, totals = dict(r.estimate.breakdown), dict(r.estimate.comm_total_s)
    return totals["dp_comm"] + totals["zero3_comm"], breakdown["dp_comm"] + breakdown["zero3_comm"]


def dp_scaling(
    model,
    *,
    gpu: str = "h100-sxm",
    gpus=(1, 2, 4, 8),
    tokens_per_gpu: float | None = None,
    global_batch_tokens: float | None = None,
    grad_accum: int = 1,
    zero_stage: int = 0,
    seq_len: int | None = None,
    mfu: float | None = None,
    profile=None,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    ports_per_node: int | None = None,
    network=None,
) -> ScalingResult:
    """Speed-up and efficiency of data parallelism per GPU count, each count one gpukit.cost.training_run
    (the step of gpukit.parallel.estimate: compute at the cluster's matmul efficiency, elementwise kernels,
    the gradient sync of gpukit.comm.grad_sync with DDP's overlap, the optimizer step; DDP's bucket copies are
    not in the step model, so not here either: gpukit.scaling.scaling charges them in the lesson)
    of data_parallel_setup(model, n, zero_stage, seq_len, micro_batch, grad_accum), ZeRO-0 on one GPU as
    `cost train` prices it. `model`: a catalog name, ModelSpec or n_params (params_only_spec).
    Weak scaling: `tokens_per_gpu` per micro-step; strong: `global_batch_tokens` per optimizer step split
    over the n GPUs and grad_accum micro-steps. A micro-step is whole sequences of the model's train_seq_len
    (or `seq_len`), or one shorter sequence. Gradients in the memory model's dtype (fp32 under PyTorch AMP,
    gpukit.scaling.GRAD_DTYPE). `network`: a gpukit.comm.ClusterNetwork replacing the cluster's links."""
    if isinstance(model, str):
        model = as_model(model)
    spec = model if isinstance(model, ModelSpec) else None
    n_params = spec.n_params if spec is not None else require_positive("n_params", model)
    name = spec.name if spec is not None else f"{n_params / 1e9:.3g}B params"
    if (tokens_per_gpu is None) == (global_batch_tokens is None):
        raise ValueError("give exactly one of tokens_per_gpu (weak scaling) or global_batch_tokens (strong)")
    k = require_positive_int("grad_accum", grad_accum)
    counts = sorted({require_positive_int("gpus", g) for g in ([gpus] if isinstance(gpus, int) else gpus)})
    if not counts:
        raise ValueError("gpus must list at least one GPU count")
    g = get_gpu(gpu)
    # the cluster training_run builds (cost train's), unless a network is given: one network for every count
    net = (
        network
        or parallel.make_cluster(
            g, gpus_per_node, inter_link=inter_link, ports_per_node=ports_per_node, profile=profile
        ).network
    )
    s_model = (
        seq_len
        if seq_len is not None
        else (spec.default_seq_len()[0] if spec is not None else data_parallel_setup(None, 1).seq_len)
    )

    def run(n):
        t = (
            tokens_per_gpu
            if tokens_per_gpu is not None
            else require_positive("global_batch_tokens", global_batch_tokens) / (n * k)
        )
        what = (
            "tokens_per_gpu"
            if tokens_per_gpu is not None
            else f"global_batch_tokens / (gpus x grad_accum) = {global_batch_tokens:g} / ({n} x {k})"
        )
        if t < 1:  # a global batch of 4 tokens on 8 GPUs would give half a token per GPU
            raise ValueError(
                f"global_batch_tokens must be at least gpus x grad_accum = {n} x {k} (one token per GPU per "
                f"micro-step), got {global_batch_tokens:g}"
                if tokens_per_gpu is None
                else f"tokens_per_gpu must be at least 1, got {tokens_per_gpu:g}"
            )
        return _dp_run(
            model,
            n,
            t,
            s_model,
            what,
            g,
            net,
            zero_stage=zero_stage if n > 1 else 0,
            grad_accum=k,
            mfu=mfu,
            profile=profile,
            gpus_per_node=gpus_per_node,
            inter_link=inter_link,
            ports_per_node=ports_per_node,
        )

    base, t1 = run(1)  # the one-GPU reference, listed or not
    rows, runs = [], {}
    for n in counts:
        r, t = (base, t1) if n == 1 else run(n)
        runs[n] = r
        comm, exposed = _dp_comm(r)
        speed = n * t * base.step_s / (t1 * r.step_s)  # throughput(n) / throughput(1)
        rows.append(
            ScalingRow(
                gpus=n,
                compute_s=r.compute_s,
                comm_s=comm,
                exposed_comm_s=exposed,
                step_s=r.step_s,
                speedup=speed,
                efficiency=speed / n,
                comm_bytes_per_step=int(
                    round(sum(v for kind, v in r.estimate.comm_bytes if kind.startswith(("dp_", "zero3"))))
                ),
                tokens_per_gpu=t,
                other_s=r.step_s - r.compute_s - exposed,
            )
        )
    top = runs[counts[-1]]
    comm_top = rows[-1].comm_s
    # tokens per GPU at which the backward (4 of 6 parts of the compute) lasts as long as the whole sync
    rate = 6 * n_params * rows[-1].tokens_per_gpu * k / top.compute_s  # effective model FLOP/s of the step
    threshold = overlap_threshold_tokens(n_params, rate, comm_top) if counts[-1] > 1 else math.inf
    e = top.estimate
    setup = top.setup
    gbytes = state_bytes_per_param(setup)[1]  # the memory model's gradients, what the sync moves
    assumptions = (
        "the one step model (gpukit.cost.training_run -> gpukit.parallel.estimate), the step `gpukit cost train`, "
        "`plan` and `parallel estimate` price: its compute, gradient sync and optimizer step (DDP's bucket copies "
        "are not charged there, so not here)",
        f"compute: {top.utilization_source}",
        *e.assumptions,
        *net.assumptions(),
        f"gradients {gbytes:g} B per parameter on the wire ({GRAD_DTYPE if gbytes == 4 else 'bf16'}: the memory "
        f"model's, convention {setup.convention}; gpukit.scaling.GRAD_DTYPE is {GRAD_DTYPE})",
        f"ZeRO-{zero_stage} data parallelism (ZeRO-0 on one GPU); {setup.micro_batch} x {setup.seq_len} tokens "
        f"per micro-step x grad_accum {k} at the largest count",
        "other_s: the optimizer step, in every step",
        *(f"overlap: {t}: {w}" for t, w in e.overlap if t in ("dp_comm", "zero3_comm")),
        "speedup over 1 GPU (its step computed whether listed or not); eff = speedup / gpus",
    )
    no_fit = [n for n in counts if not runs[n].fits]
    notes: tuple[str, ...] = ()
    if no_fit:
        need = ", ".join(f"{runs[n].memory_per_gpu_bytes / GiB:.1f} GiB at {n}" for n in no_fit)
        notes = (
            f"this layout does not fit {g.name}'s {g.memory_bytes / GiB:.0f} GiB (gpukit.memory, convention "
            f"{setup.convention}): {need}; the times are the step model's only (gpukit plan, gpukit parallel "
            "search: ZeRO, TP, PP, recompute)",
        )
    return ScalingResult(
        model=name,
        n_params=float(n_params),
        gpu=g.name,
        rows=tuple(rows),
        threshold_tokens_per_gpu=threshold,
        network=net.to_json_dict(),
        assumptions=assumptions,
        notes=notes,
    )


def predicted_efficiency(
    n_params: float,
    gpu: str,
    gpus: int,
    *,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    intra_link: str | None = None,
    tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU,
    mfu: float | None = None,
    grad_dtype: str | None = None,
    zero_stage: int = 0,
    overlap: float = 0.0,
    ports_per_node: int | None = None,
    efficiency: float | None = None,
    n_layers: int = PARAMS_ONLY_LAYERS,
) -> Efficiency:
    """Data-parallel efficiency of `gpus` GPUs for a model of `n_params`: training_run's network_efficiency, the
    useful compute (matmuls + elementwise) over the step less its optimizer and offload terms, of the one step
    model (gpukit.cost.training_run -> gpukit.parallel.estimate) that `cost train`, `plan`, `parallel estimate`
    and `gpukit scaling` price, so all agree on the same run (issue 23 sec. 1). It is 1 on one GPU and at most 1:
    the share of the step the data parallelism costs (exposed sync, ZeRO-3 gathers), so the callers' speed-up
    gpus x efficiency, extra cost 1 / efficiency - 1 and hours(1) / (gpus x efficiency) are weak scaling at the
    same tokens per GPU with the optimizer step left out (ZeRO's sharded optimizer step, which makes dp_scaling's
    speed-up over a ZeRO-0 GPU exceed gpus, is not counted as a gain).

    Shape: params_only_spec(n_params, 2048, n_layers): `n_layers` uniform GPT layers of hidden
    sqrt(N / (12 L)) rounded to 64 (Narayanan et al. 2021 sec. 3), the shape `cost train` prices a bare n_params
    with. Run: DP `gpus` x TP 1 x PP 1 with ZeRO `zero_stage` (ZeRO-0 on the one-GPU reference),
    `tokens_per_gpu` per GPU per optimizer step (whole 2048-token sequences, or one shorter one), compute at the
    step model's matmul efficiency (or `mfu` of the peak), its elementwise kernels and optimizer step, the gradient
    sync of gpukit.comm.grad_sync with the step model's own overlap (DDP buckets during the backward; ZeRO-3
    prefetch), `overlap` hiding a further share of what stays exposed (training_run's). Gradients: the memory
    model's (fp32 under PyTorch AMP, `grad_dtype` None or "fp32"); "bf16" = a bf16-held model (convention
    megatron). Network: the cluster of `cost train` (`ports_per_node` ports of `inter_link` per node, default one
    per GPU of the link of the GPU's era); `intra_link` or a link `efficiency` given build it with
    gpukit.comm.cluster_network. DDP's bucket copies are not charged (the step model does not;
    gpukit.scaling's lesson model does). compute_s, comm_s, exposed_comm_s: per optimizer step at `gpus`."""
    n = require_positive_int("gpus", gpus)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    if grad_dtype not in (None, "fp32", "bf16"):
        raise ValueError(
            f"grad_dtype must be fp32 (PyTorch AMP's, the default) or bf16 (a bf16-held model), got {grad_dtype!r}"
        )
    convention = "megatron" if grad_dtype == "bf16" else "pytorch"
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    g = get_gpu(gpu)
    if intra_link is not None or efficiency is not None:
        intra, inter = default_links(g, k, intra_link or intra_node_link(g, min(n, k)).name, inter_link)
        net = cluster_network(intra, inter, gpus_per_node=k, ports_per_node=ports, efficiency=efficiency)
    else:  # the network training_run's cluster has (cost train's)
        net = parallel.make_cluster(g, k, inter_link=inter_link, ports_per_node=ports_per_node).network
    seq = data_parallel_setup(None, 1).seq_len  # TrainSetup's 2048, the length a bare n_params is priced at
    spec = params_only_spec(n_params, seq, n_layers)
    t = require_positive("tokens_per_gpu", tokens_per_gpu)
    r, _ = _dp_run(
        spec,
        n,
        t,
        seq,
        "tokens_per_gpu",
        g,
        net,
        zero_stage=zero_stage,
        convention=convention,
        mfu=mfu,
        gpus_per_node=k,
        inter_link=inter_link,
        ports_per_node=ports_per_node,
        overlap=overlap,
    )
    comm, exposed = _dp_comm(r)
    nodes = math.ceil(n / k)
    last = n - (nodes - 1) * k  # GPUs (and ports) of the last node: fewer than k when n does not fill nodes
    words = (
        f"the one step model (gpukit.cost.training_run -> gpukit.parallel.estimate, as cost train, "
        f"plan and gpukit scaling price it): {spec.name}, DP {n} ZeRO-{zero_stage}, {t:,.0f} tokens/GPU per step, "
        f"{'bf16 gradients (a bf16-held model)' if grad_dtype == 'bf16' else 'fp32 gradients (PyTorch AMP)'}; "
        f"compute: {r.utilization_source}; {net.intra_name} in a node and {net.inter_name} between nodes"
        f"{ports_words(ports, k)}, link efficiency {net.efficiency:g} ({net.efficiency_source}); overlap: "
        "the step model's (DDP buckets during the backward, ZeRO-3 prefetch)"
        + (f" and {overlap:.0%} of what stays exposed" if overlap else "")
        + "; efficiency = useful compute / (step - optimizer - offload), training_run's network_efficiency; "
        "DDP's bucket copies not charged"
    )
    if nodes > 1 and last < k:
        words += (
            f"; {n} GPUs = {nodes - 1} node(s) of {k} + one of {last}: the last node's "
            f"{min(last, ports)} port(s) carry the gradient across"
        )
    return Efficiency(
        gpus=n,
        nodes=nodes,
        compute_s=r.compute_s,
        comm_s=comm,
        exposed_comm_s=exposed,
        efficiency=r.network_efficiency,
        model=words,
    )


def article_table(
    *,
    n_params: float = 10e9,
    usd_per_gpu_hour: float = 4.0,
    hours_one_gpu: float = 200.0,
    efficiency=None,
    inter_link: str = "ib-ndr",
    tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU,
    overlap: float = 0.0,
) -> tuple[ArticleTableRow, ...]:
    """Article 000's table (1/4/16/64 H100, 200 GPU-hours at $4, "identical total cost") with a
    scaling efficiency applied: predicted (predicted_efficiency, the one step model, data-parallel ZeRO-3 for a
    10B model, which does not fit one GPU without sharding; hours = hours_one_gpu / (gpus x efficiency)) or
    given (number or {gpus: e})."""
    hours_one_gpu = require_positive("hours_one_gpu", hours_one_gpu)  # validated before use (issue 25)
    usd_per_gpu_hour = require_positive("usd_per_gpu_hour", usd_per_gpu_hour)
    out = []
    for n, h, c in ARTICLE_TABLE:
        if efficiency is None:
            eff = predicted_efficiency(
                n_params,
                "h100-sxm",
                n,
                inter_link=inter_link,
                tokens_per_gpu=tokens_per_gpu,
                zero_stage=3,
                overlap=overlap,
            ).efficiency
        else:
            given = efficiency.get(n, 1.0) if isinstance(efficiency, dict) else efficiency
            eff = require_positive("efficiency", given)  # <= 0 gave negative hours and cost
        hours = finite_result("hours", hours_one_gpu / (n * eff))
        out.append(ArticleTableRow(n, h, c, eff, hours, finite_result("cost", hours * n * usd_per_gpu_hour)))
    return tuple(out)
