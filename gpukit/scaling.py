"""Data-parallel scaling: step = compute + exposed communication (+ input), bucket by bucket.

The model of one DDP step (PyTorch DDP: Li et al. 2020, "PyTorch Distributed: Experiences on
Accelerating Data Parallel Training", VLDB 13(12), sec. 3.2-3.3 and Fig. 2):
- gradients are grouped into buckets of `bucket_mb` MiB in reverse parameter order (`ddp_buckets`,
  DDP's rule: a bucket closes once it reaches the cap, so one can exceed it);
- backward produces them in reverse layer order: bucket i is ready when the backward has covered
  its parameters (time proportional to their matmul FLOPs; the input embeddings last);
- each bucket is all-reduced (gpukit.comm alpha-beta, ring/tree, hierarchical over a
  ClusterNetwork) one after the other as soon as it is ready; what finishes after the backward is
  the exposed communication. Overlap 'off' = every all-reduce after the backward;
- comm hooks change the bytes (fp16: 2 per parameter, PowerSGD (Vogels et al. 2019) rank-r factors
  P (n x r) and Q (m x r) per matrix where (n + m) r x 2 < n m, other tensors uncompressed, three
  all-reduces per bucket) and add their own compute (casts; PowerSGD's matrix products);
- gradient accumulation over K micro-steps (`no_sync`) all-reduces once per K (only the last
  micro-step's backward can hide it);
- the input pipeline is Amdahl's serial part: with W loader workers each taking L per batch, a
  step cannot be shorter than L / W (W = 0: L is added); with one shared storage the n ranks' L
  add up (n L / max(W, 1)) and the job saturates.

Compute per GPU: 6 N T FLOPs for T tokens (Kaplan et al. 2020; forward 2NT, backward 4NT) at
peak x MFU, or the measured compute time of this machine (`predict_measured_ddp`).

The overlap threshold (JAX scaling book, "How to scale your model", training chapter: data
parallelism is compute-bound when the per-chip batch exceeds C / W; Ultra-Scale Playbook appendix
A3): the all-reduce of the gradients hides behind the backward when 4 N T / R >= t_allreduce(n),
i.e. T >= t_allreduce x R / (4 N) tokens per GPU per step (`overlap_threshold_tokens`). For a
bandwidth-bound ring with b-byte gradients that is (n-1)/n x b R / (2 B): about R / B for bf16.

Also here (the seed, moved from gpukit.audits.claims and gpukit.comm in issue 7): `ddp_allreduce_bytes`,
`allreduce_traffic` (ring all-reduce bytes per rank, Patarasuk & Yuan 2009) and `ddp_step_estimate`
(weak-scaling step = 6N compute + one alpha-beta all-reduce, with an overlap share) used by the audits.
Pure: catalog numbers and gpukit calculators only.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from gpukit.catalog import get_interconnect
from gpukit.comm import ClusterNetwork, cluster_network, coefficients, collective_time, network_all_reduce
from gpukit.compute import _rate_flops
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import frame
from gpukit.results import json_safe as _json_safe
from gpukit.units import dtype_bytes

HOOKS = ("none", "fp16", "bf16", "powersgd")
MIB = 1024 * 1024
PSGD_MIN_COMPRESSION_RATE = 2  # torch powerSGD_hook default (PowerSGDState min_compression_rate)


# ---------------------------------------------------------------------------------------------------
# Parameters, buckets, bytes per hook
# ---------------------------------------------------------------------------------------------------
def gpt_param_shapes(spec) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every parameter of gpukit.bench.models.ReferenceGPT in registration order
    (nn.Linear weights are (out, in)); tied embeddings appear once (as wte)."""
    h, f, q, v, s = spec.hidden, spec.ffn_hidden, spec.q_dim, spec.vocab, spec.max_seq
    out = [("wte.weight", (v, h)), ("wpe.weight", (s, h))]
    for i in range(spec.n_layers):
        p = f"blocks.{i}."
        out += [(p + "ln1.weight", (h,)), (p + "ln1.bias", (h,)), (p + "attn.qkv.weight", (3 * q, h)),
                (p + "attn.qkv.bias", (3 * q,)), (p + "attn.proj.weight", (h, q)), (p + "attn.proj.bias", (h,)),
                (p + "ln2.weight", (h,)), (p + "ln2.bias", (h,)), (p + "mlp.fc1.weight", (f, h)),
                (p + "mlp.fc1.bias", (f,)), (p + "mlp.fc2.weight", (h, f)), (p + "mlp.fc2.bias", (h,))]
    out += [("ln_f.weight", (h,)), ("ln_f.bias", (h,))]
    if not spec.tied_embeddings:
        out.append(("lm_head.weight", (v, h)))
    return out


def uniform_param_shapes(n_params: float, n_layers: int = 32) -> list[tuple[str, tuple[int, ...]]]:
    """A model known only by its parameter count: n_layers equal square-ish matrices (for bucket
    timing of catalog models; PowerSGD on these is an approximation)."""
    n = int(require_positive("n_params", n_params))
    layers = require_positive_int("n_layers", n_layers)
    per = n // layers
    side = max(1, int(math.isqrt(per)))
    return [(f"layer{i}", (side, max(1, per // side))) for i in range(layers)]


def _numel(shape) -> int:
    return int(math.prod(shape))


@dataclass(frozen=True)
class Bucket:
    """One DDP gradient bucket: its parameters (reverse order), element count and fp32 bytes."""

    index: int
    names: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    numel: int

    def nbytes(self, elem_bytes: int = 4) -> int:
        return self.numel * elem_bytes


def ddp_buckets(param_shapes, bucket_mb: float = 25.0, first_bucket_mb: float | None = None,
                elem_bytes: int = 4) -> tuple[Bucket, ...]:
    """DDP's bucket assignment (torch reducer `compute_bucket_assignment_by_size`): parameters in
    reverse registration order, a bucket closes as soon as its bytes reach the limit; the first
    bucket's limit is `first_bucket_mb` (DDP: 1 MiB when bucket_cap_mb is left at its default, else
    the same cap; torch.nn.parallel.distributed BucketCapacityConfig). MiB = 2**20 bytes."""
    cap = require_positive("bucket_mb", bucket_mb) * MIB
    first = cap if first_bucket_mb is None else require_positive("first_bucket_mb", first_bucket_mb) * MIB
    out, names, shapes, size, limit = [], [], [], 0, first
    for name, shape in reversed(list(param_shapes)):
        names.append(name)
        shapes.append(tuple(int(x) for x in shape))
        size += _numel(shape) * elem_bytes
        if size >= limit:
            out.append(Bucket(len(out), tuple(names), tuple(shapes), size // elem_bytes))
            names, shapes, size, limit = [], [], 0, cap
    if names:
        out.append(Bucket(len(out), tuple(names), tuple(shapes), size // elem_bytes))
    return tuple(out)


def powersgd_split(shapes, rank: int = 1, min_compression_rate: float = PSGD_MIN_COMPRESSION_RATE):
    """(uncompressed elements, P elements, Q elements, compressed matrices' elements) for one bucket,
    torch's powerSGD_hook rule: each gradient is viewed as (shape[0], -1) = n x m, r' = min(n, m, r),
    compressed when (n + m) r' x min_compression_rate < n m (1-D tensors never are)."""
    r = require_positive_int("powersgd_rank", rank)
    unc = p = q = comp = 0
    for shape in shapes:
        n = int(shape[0]) if shape else 1
        m = _numel(shape) // n if n else 0
        rr = min(n, m, r)
        if len(shape) > 1 and (n + m) * rr * min_compression_rate < n * m:
            p, q, comp = p + n * rr, q + m * rr, comp + n * m
        else:
            unc += _numel(shape)
    return unc, p, q, comp


def hook_bytes(bucket: Bucket, hook: str = "none", powersgd_rank: int = 1, grad_bytes: int = 4) -> int:
    """Bytes the hook hands to all-reduce for one bucket (per rank, the all-reduce buffer S)."""
    require_choice("hook", hook, HOOKS)
    if hook == "none":
        return bucket.numel * grad_bytes
    if hook in ("fp16", "bf16"):
        return bucket.numel * 2
    unc, p, q, _ = powersgd_split(bucket.shapes, powersgd_rank)
    return (unc + p + q) * grad_bytes


def hook_collectives(bucket: Bucket, hook: str, powersgd_rank: int = 1, grad_bytes: int = 4) -> tuple[int, ...]:
    """Sizes (bytes) of the all-reduces one bucket costs, in order: one for none/fp16/bf16; three for
    PowerSGD (uncompressed tensors, then P, then Q; torch powerSGD_hook)."""
    if hook != "powersgd":
        return (hook_bytes(bucket, hook, powersgd_rank, grad_bytes),)
    unc, p, q, _ = powersgd_split(bucket.shapes, powersgd_rank)
    return (unc * grad_bytes, p * grad_bytes, q * grad_bytes)


def hook_compute_s(bucket: Bucket, hook: str, kernel_s: dict | None, powersgd_rank: int = 1) -> float:
    """Seconds of the training thread's own work to sync one bucket, from measured per-element kernel
    times `kernel_s` (gpukit.bench.ddp calibrates them on this machine): 'copy' = DDP copying the
    gradients into the bucket and back; 'div' = allreduce_hook dividing by the world size; 'fp16' = the
    cast down, divide and cast back of
    fp16_compress_hook; 'psgd_compressed' / 'psgd_uncompressed' = PowerSGD's error feedback, products
    and orthogonalization per compressed matrix element / per uncompressed element. None: 0."""
    if not kernel_s:
        return 0.0
    t = kernel_s.get("copy", 0.0) * bucket.numel
    if hook == "none":
        t += kernel_s.get("div", 0.0) * bucket.numel
    elif hook in ("fp16", "bf16"):
        t += kernel_s.get("fp16", 0.0) * bucket.numel
    elif hook == "powersgd":
        unc, _, _, comp = powersgd_split(bucket.shapes, powersgd_rank)
        t += kernel_s.get("psgd_compressed", 0.0) * comp + kernel_s.get("psgd_uncompressed", 0.0) * unc
    return t


def gpu_kernel_s(gpu) -> dict:
    """Per-element times of DDP's copies and the hooks' kernels on a GPU, taken as memory-bound at
    the catalog HBM bandwidth (an assumption: these kernels stream their operands once): bytes read
    and written per fp32 gradient element / bandwidth. copy: into the bucket and back (16 B); div: by the
    world size (8 B); fp16:
    cast, divide, cast back (16 B); PowerSGD compressed: error feedback add, clone, three products
    reading the matrix, the write of P Q^T, new error (56 B); uncompressed: add, clone, sub, cat (40 B)."""
    from gpukit.catalog import get_gpu

    g = get_gpu(gpu) if isinstance(gpu, str) else gpu
    bw = g.hbm_bandwidth_gbps * 1e9
    return {"copy": 16 / bw, "div": 8 / bw, "fp16": 16 / bw, "psgd_compressed": 56 / bw, "psgd_uncompressed": 40 / bw}


# ---------------------------------------------------------------------------------------------------
# One step, bucket by bucket
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BucketTiming:
    index: int
    bytes: int
    ready_s: float
    start_s: float
    end_s: float


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
        return _json_safe(d)

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([asdict(b) for b in self.buckets])


def _ready_times(buckets, fwd_end: float, backward_s: float) -> list[float]:
    """When each bucket is ready: the backward walks the parameters in reverse, spending time in
    proportion to their elements (matmul FLOPs are 4 x elements x tokens); the embeddings (wte,
    wpe: gathers, not matmuls) are ready at the very end."""
    def cost(name, shape):
        return 0 if name.startswith(("wte", "wpe")) else _numel(shape)
    total = sum(cost(n, s) for b in buckets for n, s in zip(b.names, b.shapes, strict=True)) or 1
    done, out = 0, []
    for b in buckets:
        done += sum(cost(n, s) for n, s in zip(b.names, b.shapes, strict=True))
        end_of_bwd = any(n.startswith(("wte", "wpe")) for n in b.names)
        out.append(fwd_end + backward_s * (1.0 if end_of_bwd else done / total))
    return out


def step_prediction(param_shapes, *, forward_s: float, backward_s: float, optimizer_s: float, n_gpus: int,
                    allreduce_time, hook: str = "none", bucket_mb: float = 25.0, first_bucket_mb: float | None = None,
                    grad_accum: int = 1, powersgd_rank: int = 1, grad_bytes: int = 4, overlap: bool = True,
                    kernel_s: dict | None = None, input_s: float = 0.0, allreduce_time_1=None,
                    assumptions: tuple[str, ...] = ()) -> StepPrediction:
    """The step of one rank: K micro-steps of forward + backward, the last one synced. Buckets are
    all-reduced back to back on one channel (`allreduce_time(bytes, n_gpus)` -> seconds), each from
    when it is ready (overlap on) or after the backward (off); the hook's own work (`hook_compute_s`
    with the measured `kernel_s`) runs on the training thread. With one GPU DDP still calls the hook:
    `allreduce_time_1(bytes)` prices that call (default 0)."""
    n = require_positive_int("n_gpus", n_gpus)
    k = require_positive_int("grad_accum", grad_accum)
    require_choice("hook", hook, HOOKS)
    for name, v in (("forward_s", forward_s), ("backward_s", backward_s), ("optimizer_s", optimizer_s),
                    ("input_s", input_s)):
        require_positive(name, v, allow_zero=True)
    buckets = ddp_buckets(param_shapes, bucket_mb, first_bucket_mb)
    last_fwd_end = (k - 1) * (forward_s + backward_s) + forward_s
    ready = _ready_times(buckets, last_fwd_end, backward_s)
    bwd_end = last_fwd_end + backward_s
    free, timings, comm_total, hook_total, sent = 0.0, [], 0.0, 0.0, 0
    for b, r in zip(buckets, ready, strict=True):
        hook_total += hook_compute_s(b, hook, kernel_s, powersgd_rank)
        sizes = hook_collectives(b, hook, powersgd_rank, grad_bytes)
        if n > 1:
            t = sum(allreduce_time(s, n) for s in sizes)
        else:
            t = sum(allreduce_time_1(s) for s in sizes) if allreduce_time_1 else 0.0
        sent += sum(sizes)
        comm_total += t
        start = max(r if overlap else bwd_end, free)
        free = start + t
        timings.append(BucketTiming(b.index, sum(sizes), r, start, free))
    exposed = max(0.0, free - bwd_end)
    return StepPrediction(n_gpus=n, forward_s=forward_s, backward_s=backward_s, optimizer_s=optimizer_s,
                          comm_s=comm_total, exposed_comm_s=exposed, hook_compute_s=hook_total, input_s=input_s,
                          comm_bytes=int(sent), grad_accum=k, buckets=tuple(timings), assumptions=assumptions)


def input_exposed_s(train_step_s: float, loader_latency_s: float, loader_workers: int = 0, n_ranks: int = 1,
                    shared: bool = False, batches_per_step: int = 1) -> float:
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
def predict_measured_ddp(param_shapes, compute_1_s: float, micro_batch_1: int, micro_batch: int, n_ranks: int,
                         link, *, hook: str = "none", bucket_mb: float = 25.0, grad_accum: int = 1,
                         powersgd_rank: int = 1, phases_s=None, kernel_s: dict | None = None, link_1=None,
                         loader_latency_s: float = 0.0, loader_workers: int = 0,
                         loader_shared: bool = False, overlap: bool = True) -> StepPrediction:
    """The step gpukit.bench.ddp measures, predicted from calibrations of this machine, never from
    the step being predicted: `compute_1_s` = the compute-only step at world size 1 with
    `micro_batch_1` sequences (time scales with the batch), split into forward/backward/optimizer as
    `phases_s` (seconds measured in that step; default 1/3 : 2/3 forward : backward, no optimizer), `link` = (alpha_s, GB/s) of an all-reduce sweep
    (ring, gpukit.comm), `link_1` = (seconds per call, GB/s) of the same sweep on one rank, `kernel_s` =
    measured per-element times of DDP's copies and the hook's kernels (hook_compute_s)."""
    compute_1_s = require_positive("compute_1_s", compute_1_s)
    f, b, o_s = (float(x) for x in (phases_s or (1.0, 2.0, 0.0)))
    o = min(0.9, o_s / compute_1_s)
    k = require_positive_int("grad_accum", grad_accum)
    scale = require_positive_int("micro_batch", micro_batch) / require_positive_int("micro_batch_1", micro_batch_1)
    # compute_1_s covers K micro-steps and one optimizer step
    micro = compute_1_s * (1 - o) / k
    fwd, bwd, opt = micro * f / (f + b) * scale, micro * b / (f + b) * scale, compute_1_s * o
    if link is None and n_ranks > 1:
        raise ValueError("link must be (alpha_s, bandwidth_gbps) for more than one rank")

    def allreduce(size, n):
        return collective_time("all_reduce", size, n, link).time_s
    train = k * (fwd + bwd) + opt
    inp = input_exposed_s(train, loader_latency_s, loader_workers, n_ranks, loader_shared, k)
    return step_prediction(param_shapes, forward_s=fwd, backward_s=bwd, optimizer_s=opt, n_gpus=n_ranks,
                           allreduce_time=allreduce, hook=hook, bucket_mb=bucket_mb, grad_accum=k,
                           powersgd_rank=powersgd_rank, kernel_s=kernel_s, input_s=inp, overlap=overlap,
                           allreduce_time_1=(lambda size: link_1[0] + size / (link_1[1] * 1e9)) if link_1 else None,
                           assumptions=("compute and its phase split measured at world size 1 (compute-only steps)",
                                        "link: alpha-beta fit of an all-reduce sweep in the same run"))


# ---------------------------------------------------------------------------------------------------
# The calculator: a model on a GPU over a cluster network
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ScalingRow:
    gpus: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    step_s: float
    speedup: float
    efficiency: float
    comm_bytes_per_step: int
    tokens_per_gpu: float

    def to_json_dict(self) -> dict:
        return _json_safe(asdict(self))


@dataclass(frozen=True)
class ScalingResult:
    """DDP step per GPU count, the overlap threshold, and every assumption made."""

    model: str
    n_params: float
    gpu: str
    rows: tuple[ScalingRow, ...]
    threshold_tokens_per_gpu: float
    network: dict
    assumptions: tuple[str, ...] = field(default_factory=tuple)

    def to_json_dict(self) -> dict:
        return _json_safe({"model": self.model, "n_params": self.n_params, "gpu": self.gpu,
                           "rows": [r.to_json_dict() for r in self.rows],
                           "threshold_tokens_per_gpu": self.threshold_tokens_per_gpu, "network": self.network,
                           "assumptions": list(self.assumptions)})

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([r.to_json_dict() for r in self.rows])

    def to_text(self) -> str:
        lines = [f"DDP scaling of {self.model} ({self.n_params / 1e9:.3g}B params) on {self.gpu}",
                 f"{'gpus':>6} {'compute_s':>10} {'comm_s':>10} {'exposed_s':>10} {'step_s':>10} {'speedup':>8} "
                 f"{'eff':>6}"]
        for r in self.rows:
            lines.append(f"{r.gpus:>6} {r.compute_s:>10.4g} {r.comm_s:>10.4g} {r.exposed_comm_s:>10.4g} "
                         f"{r.step_s:>10.4g} {r.speedup:>8.3g} {r.efficiency:>6.1%}")
        lines.append(f"all-reduce hides behind the backward above {self.threshold_tokens_per_gpu:,.0f} tokens per GPU "
                     f"per step (at the largest GPU count)")
        lines += [f"assumes: {a}" for a in self.assumptions]
        return "\n".join(lines)


def _rate(gpu, mfu, dtype, profile):
    from gpukit.catalog import get_gpu

    dtype = dtype or get_gpu(gpu).half_dtype  # bf16, fp16 on GPUs without bf16 units
    if profile is not None:
        if mfu is not None:
            raise ValueError("mfu and profile are exclusive: the profile's measured matmul rate replaces peak x MFU")
        r = profile.matmul_tflops(dtype) * 1e12
        return r, f"compute: {r / 1e12:.4g} TFLOP/s {dtype} measured (profile {profile.source})"
    g = get_gpu(gpu)
    m = 0.4 if mfu is None else mfu
    if not 0 < m <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {m}")
    return g.peak_tflops(dtype) * 1e12 * m, f"compute: {g.name} {dtype} peak {g.peak_tflops(dtype):g} TFLOP/s x MFU {m:g}" + (
        " (assumed)" if mfu is None else "")


def overlap_threshold_tokens(n_params: float, rate_flops: float, allreduce_s: float) -> float:
    """Tokens per GPU per step above which the gradient all-reduce (allreduce_s) hides behind the
    backward (4 N FLOPs per token, Kaplan et al. 2020): T* = allreduce_s x rate / (4 N)."""
    return require_positive("allreduce_s", allreduce_s, allow_zero=True) * require_positive(
        "rate_flops", rate_flops) / (4 * require_positive("n_params", n_params))


def scaling(model=None, *, n_params: float | None = None, gpu: str = "h100-sxm", gpus=(1, 2, 4, 8),
            gpus_per_node: int = 8, link: str | None = None, inter_link: str | None = None,
            ports_per_node: int | None = None, efficiency: float | None = None, tokens_per_gpu: float | None = None,
            global_batch_tokens: float | None = None, grad_dtype: str = "bf16", hook: str = "none",
            powersgd_rank: int = 4, bucket_mb: float = 25.0, grad_accum: int = 1, overlap: bool = True,
            mfu: float | None = None, profile=None, compute_dtype: str | None = None,
            network: ClusterNetwork | None = None,
            hook_kernels: bool = True) -> ScalingResult:
    """Predicted DDP step, speedup and efficiency for each GPU count in `gpus`.

    Weak scaling with `tokens_per_gpu` (per micro-step), strong with `global_batch_tokens` (split
    over the GPUs). Compute 6 N T / (peak x MFU) or the profile's measured rate; 1/3 forward, 2/3
    backward (Kaplan et al. 2020), optimizer time left out. Communication: bucket all-reduces over
    the ClusterNetwork (hierarchical across nodes), overlapped with the backward when `overlap`.
    Links default by GPU: `link` catalog.intra_node_link (NVLink of its generation, else PCIe; a T4
    box has no NVLink), `inter_link` catalog.inter_node_link (one InfiniBand port per GPU of its era)
    when `link` cannot leave a node.
    speedup = n x tokens per GPU x t_step(1) / (tokens per GPU at 1 x t_step(n)); efficiency = speedup / n.
    """
    from gpukit.catalog import get_model
    from gpukit.units import dtype_bytes

    require_choice("hook", hook, HOOKS)
    require_choice("grad_dtype", grad_dtype, ("fp32", "bf16", "fp16"))
    spec = get_model(model) if isinstance(model, str) else model
    if spec is None and n_params is None:
        raise ValueError("give model or n_params")
    if spec is not None and n_params is not None:
        raise ValueError("model and n_params are exclusive")
    n_par = float(spec.n_params if spec is not None else require_positive("n_params", n_params))
    name = spec.name if spec is not None else f"{n_par / 1e9:.3g}B params"
    if (tokens_per_gpu is None) == (global_batch_tokens is None):
        raise ValueError("give exactly one of tokens_per_gpu (weak scaling) or global_batch_tokens (strong)")
    counts = sorted({require_positive_int("gpus", g) for g in (gpus if not isinstance(gpus, int) else [gpus])})
    if not counts:
        raise ValueError("gpus must list at least one GPU count")
    rate, rate_note = _rate(gpu, mfu, compute_dtype, profile)
    if network is None:
        from gpukit.catalog import default_links

        link, inter_link = default_links(gpu, gpus_per_node, link, inter_link)
    net = network or cluster_network(link, inter_link, gpus_per_node=gpus_per_node, ports_per_node=ports_per_node,
                                     efficiency=efficiency)
    for n in counts:
        net.layout(n)
    if hook == "powersgd":
        shapes = uniform_param_shapes(n_par) if spec is None else _catalog_shapes(spec)
    else:
        shapes = uniform_param_shapes(n_par, spec.n_layers if spec is not None else 32)
    gb = dtype_bytes(grad_dtype)
    kernels = gpu_kernel_s(gpu) if hook_kernels and profile is None else None

    def allreduce(size, n):
        return network_all_reduce(size, n, net).time_s
    rows, base = [], None
    for n in counts:
        t = tokens_per_gpu if tokens_per_gpu is not None else global_batch_tokens / n
        require_positive("tokens", t)
        fwd, bwd = 2 * n_par * t / rate, 4 * n_par * t / rate
        p = step_prediction(shapes, forward_s=fwd, backward_s=bwd, optimizer_s=0.0, n_gpus=n, allreduce_time=allreduce,
                            hook=hook, bucket_mb=bucket_mb, grad_accum=grad_accum, powersgd_rank=powersgd_rank,
                            grad_bytes=gb, overlap=overlap, kernel_s=kernels if n > 1 else None)
        thr_per_tok = p.step_s / (t * grad_accum)  # seconds per token per GPU
        if base is None:
            base = (thr_per_tok, n)
        speed = base[0] * n / thr_per_tok / base[1]
        rows.append(ScalingRow(gpus=n, compute_s=p.compute_s, comm_s=p.comm_s, exposed_comm_s=p.exposed_comm_s,
                               step_s=p.step_s, speedup=speed, efficiency=speed / n,
                               comm_bytes_per_step=p.comm_bytes, tokens_per_gpu=t))
    top = counts[-1]
    full = sum(allreduce(s, top) for s in (n_par * gb,)) if top > 1 else 0.0
    threshold = overlap_threshold_tokens(n_par, rate, full) if overlap else math.inf
    assumptions = (rate_note, *net.assumptions(), f"{grad_dtype} gradients ({gb} B per parameter), hook {hook}",
                   "forward 2N, backward 4N FLOPs per token; optimizer step and input pipeline left out",
                   "DDP's bucket copies and the hook's kernels memory-bound at the GPU's HBM bandwidth"
                   if kernels else "DDP's bucket copies and hook kernels left out",
                   "speedup relative to the smallest GPU count given" if counts[0] != 1 else "speedup over 1 GPU")
    if net.is_ideal:
        assumptions += ("the inter-node figures are an IDEAL BOUND (line rate): calibrate with --profile or give "
                        "--efficiency",)
    return ScalingResult(model=name, n_params=n_par, gpu=gpu, rows=tuple(rows), threshold_tokens_per_gpu=threshold,
                         network=net.to_json_dict(), assumptions=assumptions)


def _catalog_shapes(spec):
    """Shapes of a catalog model for PowerSGD: the transformer's linear weights per layer (q, k, v,
    o, MLP) from ModelSpec, embeddings as (vocab, hidden)."""
    h, f = spec.hidden, spec.ffn_hidden
    q, kv = spec.q_dim, spec.n_kv_heads * spec.head_dim
    mlp = [(f, h), (f, h), (h, f)] if spec.mlp == "swiglu" else [(f, h), (h, f)]
    layer = [(q, h), (kv, h), (kv, h), (h, q), *mlp, (h,), (h,)]
    out = [("wte.weight", (spec.vocab, h))]
    for i in range(spec.n_layers):
        out += [(f"l{i}.{j}", s) for j, s in enumerate(layer)]
    if not spec.tied_embeddings:
        out.append(("lm_head.weight", (spec.vocab, h)))
    return out


# ---------------------------------------------------------------------------------------------------
# The seed (issue 7): DDP traffic and a weak-scaling estimate for the audits
# ---------------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------------
# Data-parallel gradient traffic
# ---------------------------------------------------------------------------------------------------
def ddp_allreduce_bytes(n_params: float, grad_dtype: str = "fp32") -> float:
    """Bytes DDP all-reduces per step: one gradient per parameter (the per-rank buffer S)."""
    return require_positive("n_params", n_params) * dtype_bytes(grad_dtype)


@dataclass(frozen=True)
class AllReduceTraffic:
    """Bytes per rank and on all links together for an all-reduce of S, as the rank count grows."""

    size_bytes: float
    algorithm: str
    rows: tuple[dict, ...]

    def to_json_dict(self) -> dict:
        return {"size_bytes": self.size_bytes, "algorithm": self.algorithm, "rows": [dict(r) for r in self.rows]}

    def to_frame(self):
        return frame(self.rows)


def allreduce_traffic(size_bytes: float, ranks=(2, 4, 8, 16, 32, 64), algorithm: str = "ring") -> AllReduceTraffic:
    """What "16 GPUs means 16x the data transfer" gets wrong. In a ring all-reduce each rank sends
    2(n-1)/n x S bytes (Patarasuk & Yuan 2009): at most 2S, almost the same for 4 or 64 ranks, and all
    links carry their share at the same time, so the bandwidth term of the time does not grow with n.
    What grows is the sum over all links, 2(n-1)S, and the ring's latency term 2(n-1) alpha (a tree's
    grows as 2 log2 n alpha). Rows: n_ranks, per-rank bytes sent, per-rank / S, all-links bytes, the
    naive n x S claim."""
    size = require_positive("size_bytes", size_bytes)
    rows = []
    for n in ranks:
        _, cb = coefficients("all_reduce", n, algorithm)
        rows.append({"n_ranks": int(n), "bytes_sent_per_rank": cb * size, "per_rank_over_size": cb,
                     "bytes_all_links": cb * size * n, "naive_n_times_size_bytes": n * size})
    return AllReduceTraffic(size_bytes=size, algorithm=algorithm, rows=tuple(rows))


@dataclass(frozen=True)
class DdpEstimate:
    """Data-parallel step on n GPUs: compute, gradient all-reduce, speedup over one GPU (no overlap)."""

    n_gpus: int
    compute_s: float
    comm_s: float
    overlap: float
    link: str

    @property
    def step_s(self) -> float:
        return self.compute_s + (1 - self.overlap) * self.comm_s

    @property
    def speedup(self) -> float:
        return self.n_gpus * self.compute_s / self.step_s

    @property
    def efficiency(self) -> float:
        return self.speedup / self.n_gpus

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(step_s=self.step_s, speedup=self.speedup, efficiency=self.efficiency)
        return d


def ddp_step_estimate(n_gpus: int, *, n_params: float, tokens_per_gpu: float, link, gpu: str = "h100-sxm",
                      mfu: float = 0.4, grad_dtype: str = "bf16", overlap: float = 0.0) -> DdpEstimate:
    """Weak scaling of DDP: each GPU computes 6N x tokens_per_gpu FLOPs (Kaplan et al. 2020) at peak x
    MFU, then all-reduces N gradients (ring, gpukit.comm.collective_time); `overlap` is the share of
    the all-reduce hidden behind backward (PyTorch DDP buckets, Li et al. 2020, VLDB). speedup =
    n x t_compute / t_step."""
    n = require_positive_int("n_gpus", n_gpus)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    compute_s = 6 * require_positive("n_params", n_params) * require_positive("tokens_per_gpu", tokens_per_gpu) / (
        _rate_flops(gpu, mfu))
    link_obj = get_interconnect(link) if isinstance(link, str) else link
    comm = collective_time("all_reduce", n_params * dtype_bytes(grad_dtype), n, link_obj)
    return DdpEstimate(n_gpus=n, compute_s=compute_s, comm_s=comm.time_s, overlap=float(overlap), link=comm.link)
