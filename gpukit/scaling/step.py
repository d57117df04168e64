"""One DDP step, bucket by bucket: when each bucket is ready, when its all-reduce runs, what is exposed.

Holds `step_prediction` -> StepPrediction (forward, backward, optimizer, all-reduce time, exposed
communication, hook compute, input time, bytes per rank, and the BucketTiming of every bucket),
`input_exposed_s` (the input pipeline as Amdahl's serial part) and `predict_measured_ddp` (the step
gpukit.bench.ddp measures, predicted from this machine's own calibrations). Seconds from the step's
start; bytes per rank per optimizer step.

Model: PyTorch DDP (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB 13(12), sec. 3.2-3.3 and Fig. 2): the backward produces buckets in reverse layer
order, each all-reduced as soon as it is ready (overlap on) or after the backward (off), back to
back on one channel; what finishes after the backward is exposed. Gradient accumulation over K
micro-steps (`no_sync`) syncs the last one only. The buckets, their ready times and their schedule
are the one gradient-sync model's (gpukit.comm.grad_sync); this module adds DDP's comm hooks, their
kernels, the input pipeline and the token bucket's steady state. The all-reduce time is
gpukit.comm.dp_all_reduce_s over the cluster network (or any `allreduce_time` given).

Used in: gpukit.scaling (the calculator), gpukit.bench.ddp (predict_measured_ddp),
gpukit.widgets.scaling_view (plot_predicted_overlap), notebook 05_data_parallel_scaling;
tests/test_scaling.py. gpukit.scaling re-exports every public name here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.comm import (
    BucketTiming,
    TokenBucket,
    bucket_ready_times,
    bucket_schedule,
    collective_time,
    ddp_buckets,
    token_bucket_refill,
)
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import json_safe
from gpukit.scaling.buckets import HOOKS, hook_collectives, hook_compute_s


# ---------------------------------------------------------------------------------------------------
# One step, bucket by bucket
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepPrediction:
    """A predicted DDP step (seconds from the step's start) and what it sends."""

    n_gpus: int
    forward_s: float
    backward_s: float
    optimizer_s: float
    comm_s: float  # all-reduce time of every bucket, back to back (no overlap)
    exposed_comm_s: float  # what finishes after the backward
    hook_compute_s: float
    input_s: float  # the part of the input pipeline the loader cannot hide
    comm_bytes: int  # per rank per optimizer step (the all-reduce buffers)
    grad_accum: int = 1
    buckets: tuple[BucketTiming, ...] = ()
    assumptions: tuple[str, ...] = ()

    @property
    def compute_s(self) -> float:
        return self.grad_accum * (self.forward_s + self.backward_s) + self.optimizer_s

    @property
    def step_s(self) -> float:
        return self.compute_s + self.exposed_comm_s + self.hook_compute_s + self.input_s

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(compute_s=self.compute_s, step_s=self.step_s)
        return json_safe(d)

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([asdict(b) for b in self.buckets])


def step_prediction(
    param_shapes,
    *,
    forward_s: float,
    backward_s: float,
    optimizer_s: float,
    n_gpus: int,
    allreduce_time,
    hook: str = "none",
    bucket_mb: float = 25.0,
    first_bucket_mb: float | None = None,
    grad_accum: int = 1,
    powersgd_rank: int = 1,
    grad_bytes: int = 4,
    overlap: bool = True,
    kernel_s: dict | None = None,
    input_s: float = 0.0,
    allreduce_time_1=None,
    token_bucket: TokenBucket | None = None,
    assumptions: tuple[str, ...] = (),
) -> StepPrediction:
    """The step of one rank: K micro-steps of forward + backward, the last one synced. Buckets are
    all-reduced back to back on one channel (`allreduce_time(bytes, n_gpus)` -> seconds), each from
    when it is ready (overlap on) or after the backward (off); the hook's own work (`hook_compute_s`
    with the measured `kernel_s`) runs on the training thread. With one GPU DDP still calls the hook:
    `allreduce_time_1(bytes)` prices that call (default 0). `token_bucket` (a rate limiter on the
    link, gpukit.comm.network.TokenBucket): each all-reduce's wire bytes per rank (ring: 2(n-1)/n S)
    covered by tokens cost no wire time (never below the all-reduce's latency nor the one-rank call's
    own work, `allreduce_time_1`); the tokens refill while the link idles, within the step and from
    the end of one step's last send to the next step's first (the steady state of a step that
    repeats)."""
    n = require_positive_int("n_gpus", n_gpus)
    k = require_positive_int("grad_accum", grad_accum)
    require_choice("hook", hook, HOOKS)
    for name, v in (
        ("forward_s", forward_s),
        ("backward_s", backward_s),
        ("optimizer_s", optimizer_s),
        ("input_s", input_s),
    ):
        require_positive(name, v, allow_zero=True)
    buckets = ddp_buckets(param_shapes, bucket_mb, first_bucket_mb)
    last_fwd_end = (k - 1) * (forward_s + backward_s) + forward_s
    ready = bucket_ready_times(buckets, last_fwd_end, backward_s)
    bwd_end = last_fwd_end + backward_s
    hook_total = sum(hook_compute_s(b, hook, kernel_s, powersgd_rank) for b in buckets)
    sizes = [hook_collectives(b, hook, powersgd_rank, grad_bytes) for b in buckets]
    bucket = token_bucket if n > 1 else None

    def schedule(tokens):
        """The one bucket schedule of gpukit.comm.grad_sync (buckets back to back on one channel)."""
        return bucket_schedule(
            buckets,
            ready,
            sizes,
            allreduce_time,
            n_gpus=n,
            overlap=overlap,
            bwd_end_s=bwd_end,
            allreduce_time_1=allreduce_time_1,
            token_bucket=bucket,
            tokens=tokens,
        )

    tokens = bucket.burst_bytes if bucket is not None else 0.0
    for _ in range(50 if bucket is not None else 1):  # steady state: the tokens one step leaves the next
        free, timings, comm_total, left = schedule(tokens)
        if bucket is None:
            break
        step = k * (forward_s + backward_s) + optimizer_s + max(0.0, free - bwd_end) + hook_total + input_s
        idle = step - free + (timings[0].start_s if timings else 0.0)
        nxt = token_bucket_refill(left, idle, bucket)
        if abs(nxt - tokens) <= 1e-9 * max(1.0, bucket.burst_bytes):
            break
        tokens = nxt
    exposed = max(0.0, free - bwd_end)
    if bucket is not None:
        line = (
            "no wire time"
            if math.isinf(bucket.line_bytes_per_s)
            else f"{bucket.line_bytes_per_s / 1e9:.3g} GB/s"
        )
        assumptions = (
            *assumptions,
            f"token bucket on the link: burst {bucket.burst_bytes:,.0f} B refilled at "
            f"{bucket.rate_bytes_per_s / 1e9:.3g} GB/s while idle (tc-tbf(8)); "
            f"bytes it covers take {line}",
        )
    return StepPrediction(
        n_gpus=n,
        forward_s=forward_s,
        backward_s=backward_s,
        optimizer_s=optimizer_s,
        comm_s=comm_total,
        exposed_comm_s=exposed,
        hook_compute_s=hook_total,
        input_s=input_s,
        comm_bytes=int(sum(map(sum, sizes))),
        grad_accum=k,
        buckets=tuple(timings),
        assumptions=assumptions,
    )


def input_exposed_s(
    train_step_s: float,
    loader_latency_s: float,
    loader_workers: int = 0,
    n_ranks: int = 1,
    shared: bool = False,
    batches_per_step: int = 1,
) -> float:
    """Input time the step cannot hide (Amdahl's serial part). Each step needs `batches_per_step`
    batches per rank, each taking L. W = 0: the loader runs in the training loop, L is added per
    batch. W >= 1 workers prefetch: a step lasts at least the loader's time per step, k L / W; with
    one shared storage (a lock: one batch at a time for all ranks) at least n k L."""
    require_positive("loader_latency_s", loader_latency_s, allow_zero=True)
    w = require_positive_int("loader_workers", loader_workers, allow_zero=True)
    n = require_positive_int("n_ranks", n_ranks)
    k = require_positive_int("batches_per_step", batches_per_step)
    if loader_latency_s == 0:
        return 0.0
    if shared:
        need = n * k * loader_latency_s
        return need if w == 0 else max(0.0, need - train_step_s)
    if w == 0:
        return k * loader_latency_s
    return max(0.0, k * loader_latency_s / w - train_step_s)


# ---------------------------------------------------------------------------------------------------
# The measured CPU runs: prediction from this machine's own compute and link calibration
# ---------------------------------------------------------------------------------------------------
def predict_measured_ddp(
    param_shapes,
    compute_1_s: float,
    micro_batch_1: int,
    micro_batch: int,
    n_ranks: int,
    link,
    *,
    hook: str = "none",
    bucket_mb: float = 25.0,
    grad_accum: int = 1,
    powersgd_rank: int = 1,
    phases_s=None,
    kernel_s: dict | None = None,
    link_1=None,
    loader_latency_s: float = 0.0,
    loader_workers: int = 0,
    loader_shared: bool = False,
    overlap: bool = True,
    token_bucket: TokenBucket | None = None,
) -> StepPrediction:
    """The step gpukit.bench.ddp measures, predicted from calibrations of this machine, never from
    the step being predicted: `compute_1_s` = the compute-only step at world size 1 with
    `micro_batch_1` sequences (time scales with the batch), split into forward/backward/optimizer as
    `phases_s` (seconds measured in that step; default 1/3 : 2/3 forward : backward, no optimizer), `link` = (alpha_s, GB/s) of an all-reduce sweep
    (ring, gpukit.comm), `link_1` = (seconds per call, GB/s) of the same sweep on one rank, `kernel_s` =
    measured per-element times of DDP's copies and the hook's kernels (hook_compute_s),
    `token_bucket` = the link's rate limiter where it has one (netlab's tbf)."""
    compute_1_s = require_positive("compute_1_s", compute_1_s)
    f, b, o_s = (float(x) for x in (phases_s or (1.0, 2.0, 0.0)))
    o = min(0.9, o_s / compute_1_s)
    k = require_positive_int("grad_accum", grad_accum)
    scale = require_positive_int("micro_batch", micro_batch) / require_positive_int(
        "micro_batch_1", micro_batch_1
    )
    # compute_1_s covers K micro-steps and one optimizer step
    micro = compute_1_s * (1 - o) / k
    fwd, bwd, opt = micro * f / (f + b) * scale, micro * b / (f + b) * scale, compute_1_s * o
    if link is None and n_ranks > 1:
        raise ValueError("link must be (alpha_s, bandwidth_gbps) for more than one rank")

    def allreduce(
        size, n
    ):  # the link is a fit of whole all-reduce times: NCCL's base latency is inside its alpha
        return collective_time("all_reduce", size, n, link, base_latency_s=0.0).time_s

    train = k * (fwd + bwd) + opt
    inp = input_exposed_s(train, loader_latency_s, loader_workers, n_ranks, loader_shared, k)
    return step_prediction(
        param_shapes,
        forward_s=fwd,
        backward_s=bwd,
        optimizer_s=opt,
        n_gpus=n_ranks,
        allreduce_time=allreduce,
        hook=hook,
        bucket_mb=bucket_mb,
        grad_accum=k,
        powersgd_rank=powersgd_rank,
        kernel_s=kernel_s,
        input_s=inp,
        overlap=overlap,
        allreduce_time_1=(lambda size: link_1[0] + size / (link_1[1] * 1e9)) if link_1 else None,
        token_bucket=token_bucket,
        assumptions=(
            "compute and its phase split measured at world size 1 (compute-only steps)",
            "link: alpha-beta fit of an all-reduce sweep in the same run",
        ),
    )
