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

Where the parts live: buckets, hooks and their bytes in gpukit.scaling.buckets; the step, bucket by
bucket, the input pipeline and the measured-run prediction in gpukit.scaling.step (both re-exported
here); the cluster network in gpukit.comm.network. This module holds the calculator (`scaling`),
the overlap threshold and the seed.

Used in: gpukit.cli.scaling, gpukit.widgets.scaling_view, gpukit.widgets.comm_view, gpukit.cost,
gpukit.audits (comm, compute, scaling), notebooks 04_communication and 05_data_parallel_scaling.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import cast

from gpukit.catalog import get_interconnect
from gpukit.comm import (
    ClusterNetwork,
    cluster_network,
    coefficients,
    dp_all_reduce_s,
    uniform_param_shapes,
)
from gpukit.compute import rate_flops
from gpukit.errors import finite_result, require_choice, require_positive, require_positive_int
from gpukit.results import frame, json_safe
from gpukit.scaling.buckets import (
    HOOKS,
    gpu_kernel_s,
)
from gpukit.scaling.step import (
    step_prediction,
)
from gpukit.units import dtype_bytes


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
    other_s: float = (
        0.0  # the rest of the step: optimizer, DDP's bucket copies (the step model's; 0 in the lesson's)
    )

    def to_json_dict(self) -> dict:
        return json_safe(asdict(self))


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
    notes: tuple[str, ...] = field(default_factory=tuple)  # warnings about the question itself (memory)

    def to_json_dict(self) -> dict:
        return json_safe(
            {
                "model": self.model,
                "n_params": self.n_params,
                "gpu": self.gpu,
                "rows": [r.to_json_dict() for r in self.rows],
                "threshold_tokens_per_gpu": self.threshold_tokens_per_gpu,
                "network": self.network,
                "assumptions": list(self.assumptions),
                "notes": list(self.notes),
            }
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([r.to_json_dict() for r in self.rows])

    def to_text(self) -> str:
        lines = [
            f"DDP scaling of {self.model} ({self.n_params / 1e9:.3g}B params) on {self.gpu}",
            f"{'gpus':>6} {'compute_s':>10} {'comm_s':>10} {'exposed_s':>10} {'step_s':>10} {'speedup':>8} "
            f"{'eff':>6}",
        ]
        other = any(r.other_s for r in self.rows)
        if other:
            lines[1] = lines[1].replace(" exposed_s", " exposed_s    other_s", 1)
        for r in self.rows:
            lines.append(
                f"{r.gpus:>6} {r.compute_s:>10.4g} {r.comm_s:>10.4g} {r.exposed_comm_s:>10.4g} "
                + (f"{r.other_s:>10.4g} " if other else "")
                + f"{r.step_s:>10.4g} {r.speedup:>8.3g} {r.efficiency:>6.1%}"
            )
        if max(r.gpus for r in self.rows) == 1:
            lines.append("one GPU: no gradient all-reduce to hide")
        elif math.isfinite(self.threshold_tokens_per_gpu):
            lines.append(
                f"all-reduce hides behind the backward above {self.threshold_tokens_per_gpu:,.0f} tokens per GPU "
                f"in the synced micro-step (a step without gradient accumulation; at the largest GPU count)"
            )
        else:  # overlap off: the sync starts after the backward, whatever the tokens per GPU
            lines.append(
                "all-reduce never hides behind the backward (overlap off: it starts after the backward), "
                "whatever the tokens per GPU"
            )
        lines += [f"assumes: {a}" for a in self.assumptions]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def _rate(gpu, mfu, dtype, profile):
    from gpukit.catalog import get_gpu

    dtype = dtype or get_gpu(gpu).half_dtype  # bf16, fp16 on GPUs without bf16 units
    if profile is not None:
        if mfu is not None:
            raise ValueError(
                "mfu and profile are exclusive: the profile's measured matmul rate replaces peak x MFU"
            )
        r = profile.matmul_tflops(dtype) * 1e12
        return r, f"compute: {r / 1e12:.4g} TFLOP/s {dtype} measured (profile {profile.source})"
    g = get_gpu(gpu)
    m = 0.4 if mfu is None else mfu
    if not 0 < m <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {m}")
    return g.peak_tflops(
        dtype
    ) * 1e12 * m, f"compute: {g.name} {dtype} peak {g.peak_tflops(dtype):g} TFLOP/s x MFU {m:g}" + (
        " (assumed)" if mfu is None else ""
    )


def overlap_threshold_tokens(n_params: float, rate_flops: float, allreduce_s: float) -> float:
    """Tokens per GPU per step above which the gradient all-reduce (allreduce_s) hides behind the
    backward (4 N FLOPs per token, Kaplan et al. 2020): T* = allreduce_s x rate / (4 N)."""
    return finite_result(
        "overlap threshold",
        require_positive("allreduce_s", allreduce_s, allow_zero=True)
        * require_positive("rate_flops", rate_flops)
        / (4 * require_positive("n_params", n_params)),
    )


# The gradient dtype the course, `cost train`, the planner and the audits assume: fp32. An eager AMP step keeps
# fp32 parameters, so PyTorch DDP's buckets all-reduce fp32 gradients (Li et al. 2020; torch.amp autocast
# casts the matmul inputs, not the parameters); Megatron-LM accumulates and reduces fp32 main grads by default
# for bf16 runs (--accumulate-allreduce-grads-in-fp32). A bf16-held model or DDP's bf16_compress_hook halves
# it (grad_dtype="bf16"). One name, used by scaling(), cost.predicted_efficiency, the widgets of notebooks
# 05/06/08/09 and the audits, so that every lesson states the same choice as the memory model's gradients.
GRAD_DTYPE = "fp32"


def scaling(
    model=None,
    *,
    n_params: float | None = None,
    gpu: str = "h100-sxm",
    gpus=(1, 2, 4, 8),
    gpus_per_node: int = 8,
    link: str | None = None,
    inter_link: str | None = None,
    ports_per_node: int | None = None,
    efficiency: float | None = None,
    tokens_per_gpu: float | None = None,
    global_batch_tokens: float | None = None,
    grad_dtype: str = GRAD_DTYPE,
    hook: str = "none",
    powersgd_rank: int = 1,
    bucket_mb: float = 25.0,
    grad_accum: int = 1,
    overlap: bool = True,
    mfu: float | None = None,
    profile=None,
    compute_dtype: str | None = None,
    network: ClusterNetwork | None = None,
    hook_kernels: bool = True,
) -> ScalingResult:
    """Predicted DDP step, speedup and efficiency for each GPU count in `gpus`.

    Weak scaling with `tokens_per_gpu` (per micro-step), strong with `global_batch_tokens` (per
    optimizer step, split over the GPUs and the grad_accum micro-steps). Compute 6 N T / (peak x MFU) or the profile's measured rate; 1/3 forward, 2/3
    backward (Kaplan et al. 2020), optimizer time left out. Communication: bucket all-reduces over
    the ClusterNetwork (hierarchical across nodes), overlapped with the backward when `overlap`.
    Links default by GPU: `link` catalog.intra_node_link (NVLink of its generation, else PCIe; a T4
    box has no NVLink), `inter_link` catalog.inter_node_link (one InfiniBand port per GPU of its era)
    when `link` cannot leave a node.
    speedup = n x tokens per GPU x t_step(1) / (tokens per GPU at 1 x t_step(n)); efficiency = speedup / n,
    always over one GPU's step (computed when 1 is not among the counts: a lone count of 64 reads its real
    efficiency, not 100 %).
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
    counts = sorted(
        {require_positive_int("gpus", g) for g in (gpus if not isinstance(gpus, int) else [gpus])}
    )
    if not counts:
        raise ValueError("gpus must list at least one GPU count")
    rate, rate_note = _rate(gpu, mfu, compute_dtype, profile)
    if network is None:
        from gpukit.catalog import default_links

        link, inter_link = default_links(gpu, gpus_per_node, link, inter_link)
    net = network or cluster_network(
        link, inter_link, gpus_per_node=gpus_per_node, ports_per_node=ports_per_node, efficiency=efficiency
    )
    for n in counts:  # whole nodes (a partial node is gpukit.comm.grad_sync's, as cost prices it)
        net.layout(n)
    if hook == "powersgd":
        shapes = uniform_param_shapes(n_par) if spec is None else _catalog_shapes(spec)
    else:
        shapes = uniform_param_shapes(n_par, spec.n_layers if spec is not None else 32)
    gb = int(dtype_bytes(grad_dtype))  # fp32, bf16, fp16 (checked above): whole bytes, 4 or 2
    kernels = gpu_kernel_s(gpu) if hook_kernels and profile is None else None

    def allreduce(size, n):  # the one DP all-reduce (gpukit.comm.grad_sync): hierarchical, partial nodes
        return dp_all_reduce_s(float(size), n, net)

    def step(n):
        # per GPU per micro-step; a global batch is per optimizer step: n GPUs x grad_accum micro-steps
        # exactly one of the two is given (checked above)
        t = (
            tokens_per_gpu
            if tokens_per_gpu is not None
            else cast(float, global_batch_tokens) / (n * grad_accum)
        )
        require_positive("tokens", t)
        if t < 1:  # a global batch of 4 tokens on 8 GPUs once gave a step of half a token per GPU
            raise ValueError(
                f"global_batch_tokens must be at least gpus x grad_accum = {n} x {grad_accum} (one token "
                f"per GPU per micro-step), got {global_batch_tokens:g}"
                if tokens_per_gpu is None
                else f"tokens_per_gpu must be at least 1, got {tokens_per_gpu:g}"
            )
        fwd, bwd = 2 * n_par * t / rate, 4 * n_par * t / rate
        p = step_prediction(
            shapes,
            forward_s=fwd,
            backward_s=bwd,
            optimizer_s=0.0,
            n_gpus=n,
            allreduce_time=allreduce,
            hook=hook,
            bucket_mb=bucket_mb,
            grad_accum=grad_accum,
            powersgd_rank=powersgd_rank,
            grad_bytes=gb,
            overlap=overlap,
            kernel_s=kernels if n > 1 else None,
        )
        return p, t

    base = step(1)  # one GPU's step, the reference of every speed-up (listed or not: audit, issue 23)
    base_per_tok = base[0].step_s / (base[1] * grad_accum)  # seconds per token per GPU
    rows = []
    for n in counts:
        p, t = base if n == 1 else step(n)
        speed = n * base_per_tok / (p.step_s / (t * grad_accum))  # throughput(n) / throughput(1)
        rows.append(
            ScalingRow(
                gpus=n,
                compute_s=p.compute_s,
                comm_s=p.comm_s,
                exposed_comm_s=p.exposed_comm_s,
                step_s=p.step_s,
                speedup=speed,
                efficiency=speed / n,
                comm_bytes_per_step=p.comm_bytes,
                tokens_per_gpu=t,
            )
        )
    top = counts[-1]
    full = sum(allreduce(s, top) for s in (n_par * gb,)) if top > 1 else 0.0
    threshold = overlap_threshold_tokens(n_par, rate, full) if overlap else math.inf
    assumptions = (
        rate_note,
        *net.assumptions(),
        f"{grad_dtype} gradients ({gb} B per parameter), hook {hook}"
        + (
            f" rank {powersgd_rank}"
            + (" (PyTorch's PowerSGDState default)" if powersgd_rank == 1 else " (PyTorch's default is 1)")
            if hook == "powersgd"
            else ""
        ),
        "forward 2N, backward 4N FLOPs per token; optimizer step and input pipeline left out: this is the DDP "
        "bucket model of one step (notebooks 04-05); `gpukit scaling`, `cost train`, `plan` and `parallel estimate` "
        "price a run with the one step model, gpukit.parallel.estimate (gpukit.cost.dp_scaling; its gradient sync is "
        "this one, gpukit.comm.grad_sync)",
        "DDP's bucket copies and the hook's kernels memory-bound at the GPU's HBM bandwidth"
        if kernels
        else "DDP's bucket copies and hook kernels left out",
        "speedup over 1 GPU (its step computed whether listed or not); eff = speedup / gpus",
    )
    if net.is_ideal:
        assumptions += (
            "the inter-node figures are an IDEAL BOUND (line rate): calibrate with --profile or give "
            "--efficiency",
        )
    return ScalingResult(
        model=name,
        n_params=n_par,
        gpu=gpu,
        rows=tuple(rows),
        threshold_tokens_per_gpu=threshold,
        network=net.to_json_dict(),
        assumptions=assumptions,
        notes=_replica_note(n_par, gpu),
    )


def _replica_note(n_params: float, gpu) -> tuple[str, ...]:
    """DDP keeps a whole replica per GPU: say so when its model states alone exceed the GPU's memory
    (gpukit.memory's bytes per parameter of mixed-precision AdamW, 2 + 2 + 12: Rajbhandari et al. 2019
    sec. 3.1)."""
    from gpukit.catalog import as_gpu
    from gpukit.memory import TrainSetup, state_bytes_per_param
    from gpukit.units import GiB

    g = as_gpu(gpu)
    per_param = sum(state_bytes_per_param(TrainSetup(convention="megatron")))
    need = n_params * per_param
    if need <= g.memory_bytes:
        return ()
    return (
        f"DDP keeps a full replica on every GPU: weights, gradients and Adam states alone take "
        f"{per_param:g} B per parameter = {need / GiB:,.0f} GiB, more than {g.name}'s "
        f"{g.memory_bytes / GiB:.0f} GiB, so this layout cannot train as is; the times above are the DDP "
        "step model only (gpukit memory, gpukit parallel search: ZeRO, TP, PP)",
    )


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
    return finite_result("allreduce bytes", require_positive("n_params", n_params) * dtype_bytes(grad_dtype))


@dataclass(frozen=True)
class AllReduceTraffic:
    """Bytes per rank and on all links together for an all-reduce of S, as the rank count grows."""

    size_bytes: float
    algorithm: str
    rows: tuple[dict, ...]

    def to_json_dict(self) -> dict:
        return {
            "size_bytes": self.size_bytes,
            "algorithm": self.algorithm,
            "rows": [dict(r) for r in self.rows],
        }

    def to_frame(self):
        return frame(self.rows)


def allreduce_traffic(
    size_bytes: float, ranks=(2, 4, 8, 16, 32, 64), algorithm: str = "ring"
) -> AllReduceTraffic:
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
        rows.append(
            {
                "n_ranks": int(n),
                "bytes_sent_per_rank": cb * size,
                "per_rank_over_size": cb,
                "bytes_all_links": cb * size * n,
                "naive_n_times_size_bytes": n * size,
            }
        )
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


def ddp_step_estimate(
    n_gpus: int,
    *,
    n_params: float,
    tokens_per_gpu: float,
    link,
    gpu: str = "h100-sxm",
    mfu: float = 0.4,
    grad_dtype: str = "bf16",
    overlap: float = 0.0,
    link_efficiency: float = 1.0,
) -> DdpEstimate:
    """Weak scaling of DDP with all n GPUs on one `link` (the articles' "GPUs over link X" question): each
    GPU computes 6N x tokens_per_gpu FLOPs (Kaplan et al. 2020) at peak x MFU, then all-reduces N
    gradients as one ring over that link (gpukit.comm.dp_all_reduce, the one data-parallel all-reduce,
    NCCL's base latency included), at `link_efficiency` of its line rate (default 1: line rate, as the
    claims audited with it state; gpukit.comm.LINK_EFFICIENCY is the measured-busbw assumption);
    `overlap` is the share of the all-reduce hidden behind backward (PyTorch DDP buckets, Li et al.
    2020, VLDB). speedup = n x t_compute / t_step."""
    n = require_positive_int("n_gpus", n_gpus)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    compute_s = (
        6
        * require_positive("n_params", n_params)
        * require_positive("tokens_per_gpu", tokens_per_gpu)
        / (rate_flops(gpu, mfu))
    )
    link_obj = get_interconnect(link) if isinstance(link, str) else link
    net = cluster_network(
        link_obj,
        gpus_per_node=n,
        ports_per_node=n,
        efficiency=link_efficiency,
        intra_efficiency=link_efficiency,
    )  # one node: every rank on `link`
    comm_s = dp_all_reduce_s(n_params * dtype_bytes(grad_dtype), n, net)
    return DdpEstimate(
        n_gpus=n, compute_s=compute_s, comm_s=comm_s, overlap=float(overlap), link=net.intra_name
    )
