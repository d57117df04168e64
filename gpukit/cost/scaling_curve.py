"""Data-parallel scaling priced by the one step model: the speed-up and efficiency per GPU count that
`gpukit scaling` prints, from the same training_run (gpukit.parallel.estimate) as `gpukit cost train`,
`plan` and `parallel estimate`, so that the four agree on the same run by construction (issue 23 sec. 1).

gpukit.scaling keeps its pure DDP bucket model (6N at peak x MFU, comm hooks, overlap off, bucket sizes)
for the lessons of notebooks 04-05 that pass their own numbers; this module is the answer for a run.
Speed-up over one GPU's step, always (computed even when 1 is not among the counts): throughput(n) /
throughput(1) = n x T(n) x step(1) / (T(1) x step(n)) with T tokens per GPU per optimizer step; the
efficiency is speed-up / n, which is what the hours of `cost train` imply (hours(1) / (n hours(n))).
Used in: gpukit.cli.scaling; tests/test_consistency.py.
"""

from __future__ import annotations

import math

from gpukit import parallel
from gpukit.catalog import as_model, get_gpu
from gpukit.cost.training import data_parallel_setup, training_run
from gpukit.errors import require_positive, require_positive_int
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
        s, mb = _sequences(require_positive("tokens", t), s_model, what)
        setup = data_parallel_setup(
            model, n, zero_stage=zero_stage if n > 1 else 0, seq_len=s, micro_batch=mb, grad_accum=k
        )
        r = training_run(
            model,
            float(n * s * mb * k),  # one optimizer step: the step is what is compared
            g.name,
            setup,
            usd_per_gpu_hour=0.0,
            mfu=mfu,
            profile=profile,
            gpus_per_node=gpus_per_node,
            inter_link=inter_link,
            ports_per_node=ports_per_node,
            network=net,
        )
        return r, float(s * mb)

    base, t1 = run(1)  # the one-GPU reference, listed or not
    rows, runs = [], {}
    for n in counts:
        r, t = (base, t1) if n == 1 else run(n)
        runs[n] = r
        parts = dict(r.estimate.breakdown)
        totals = dict(r.estimate.comm_total_s)
        comm = totals["dp_comm"] + totals["zero3_comm"]
        exposed = parts["dp_comm"] + parts["zero3_comm"]
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
