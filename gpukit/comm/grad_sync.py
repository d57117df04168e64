"""The one gradient-sync model of data parallelism: DDP's buckets, the DP group's all-reduce over a
ClusterNetwork (hierarchical across nodes, a partial node paced by its own ports), ZeRO stages,
overlap with the backward, once per optimizer step.

Holds the parameter shapes of a model (`gpt_param_shapes` for gpukit.bench.models.ReferenceGPT,
`uniform_param_shapes` for a model known by its count), DDP's bucket assignment (`ddp_buckets`,
Bucket), when each bucket is ready and how the buckets queue on one channel (`bucket_ready_times`,
`bucket_schedule`, BucketTiming), the DP group's all-reduce (`dp_all_reduce`, `dp_all_reduce_s`) and
the sync of one optimizer step (`grad_sync` -> GradSync). Sizes in bytes (MiB = 2**20 for bucket
caps), times in s.

Sources: PyTorch DDP (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB 13(12), sec. 3.2-3.3 and Fig. 2; torch reducer `compute_bucket_assignment_by_size`,
torch.nn.parallel.distributed BucketCapacityConfig): buckets in reverse parameter order, each
all-reduced as soon as the backward has produced it, back to back on one channel; gradient
accumulation (`no_sync`) syncs once per optimizer step. Hierarchical all-reduce (Thakur, Rabenseifner
& Gropp 2005; NCCL's intra-node ring + inter-node ring): reduce-scatter in the node, all-reduce of the
shard across nodes, all-gather in the node; the GPUs of a node that send at once share its ports
(REFERENCE sec. 6, ClusterNetwork.inter_link). ZeRO (Rajbhandari et al. 2019, sec. 7): stages 1-2 move
the bytes of an all-reduce (reduce-scatter of gradients + all-gather of parameters); stage 3 gathers
the 16-bit parameters in forward and again in backward and reduce-scatters the gradients, per
micro-batch and layer (FSDP unit): 3 collectives of half an all-reduce each (1.5x DP); prefetch depth 1 hides
a layer's behind the previous layer's compute, and what a gather outlasts that compute is exposed (FSDP,
Zhao et al. 2023 sec. 3.3.2).

Used by every owner of the question (one path): gpukit.scaling (the DDP step, with its comm hooks),
gpukit.parallel.layout (DP and ZeRO terms), gpukit.cost.efficiency; tests/test_grad_sync.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache

from gpukit.catalog import as_model
from gpukit.comm.collectives import CollectiveCost, busbw_factor, collective_time
from gpukit.comm.network import ClusterNetwork, NetworkCost, token_bucket_refill, token_bucket_send
from gpukit.errors import MAX_COUNT, finite_result, require_positive, require_positive_int
from gpukit.results import json_safe

MIB = 1024 * 1024
ZERO_STAGES = (0, 1, 2, 3)


# ---------------------------------------------------------------------------------------------------
# Parameters and DDP's buckets
# ---------------------------------------------------------------------------------------------------
def gpt_param_shapes(spec) -> list[tuple[str, tuple[int, ...]]]:
    """(name, shape) of every parameter of gpukit.bench.models.ReferenceGPT in registration order
    (nn.Linear weights are (out, in)); tied embeddings appear once (as wte)."""
    spec = as_model(spec, "spec")  # a catalog name too
    h, f, q, v, s = spec.hidden, spec.ffn_hidden, spec.q_dim, spec.vocab, spec.max_seq
    out: list[tuple[str, tuple[int, ...]]] = [("wte.weight", (v, h)), ("wpe.weight", (s, h))]
    for i in range(spec.n_layers):
        p = f"blocks.{i}."
        out += [
            (p + "ln1.weight", (h,)),
            (p + "ln1.bias", (h,)),
            (p + "attn.qkv.weight", (3 * q, h)),
            (p + "attn.qkv.bias", (3 * q,)),
            (p + "attn.proj.weight", (h, q)),
            (p + "attn.proj.bias", (h,)),
            (p + "ln2.weight", (h,)),
            (p + "ln2.bias", (h,)),
            (p + "mlp.fc1.weight", (f, h)),
            (p + "mlp.fc1.bias", (f,)),
            (p + "mlp.fc2.weight", (h, f)),
            (p + "mlp.fc2.bias", (h,)),
        ]
    out += [("ln_f.weight", (h,)), ("ln_f.bias", (h,))]
    if not spec.tied_embeddings:
        out.append(("lm_head.weight", (v, h)))
    return out


def uniform_param_shapes(n_params: float, n_layers: int = 32) -> list[tuple[str, tuple[int, ...]]]:
    """A model known only by its parameter count: n_layers equal square-ish matrices (for bucket
    timing of catalog models; PowerSGD on these is an approximation)."""
    n = int(require_positive("n_params", n_params))
    # one shape per layer: a list this long is built (1e5 is far above any model: GPT-3 has 96 layers)
    layers = require_positive_int("n_layers", n_layers, at_most=100_000)
    per = n // layers
    side = max(1, int(math.isqrt(per)))
    return [(f"layer{i}", (side, max(1, per // side))) for i in range(layers)]


def numel(shape) -> int:
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


def ddp_buckets(
    param_shapes, bucket_mb: float = 25.0, first_bucket_mb: float | None = None, elem_bytes: int = 4
) -> tuple[Bucket, ...]:
    """DDP's bucket assignment (torch reducer `compute_bucket_assignment_by_size`): parameters in
    reverse registration order, a bucket closes as soon as its bytes reach the limit; the first
    bucket's limit is `first_bucket_mb` (DDP: 1 MiB when bucket_cap_mb is left at its default, else
    the same cap; torch.nn.parallel.distributed BucketCapacityConfig). MiB = 2**20 bytes."""
    require_positive_int("elem_bytes", elem_bytes, at_most=64)  # bytes per element: 0 never fills a bucket
    cap = require_positive("bucket_mb", bucket_mb) * MIB
    first = cap if first_bucket_mb is None else require_positive("first_bucket_mb", first_bucket_mb) * MIB
    out: list[Bucket]
    out, names, shapes, size, limit = [], [], [], 0, first
    for name, shape in reversed(list(param_shapes)):
        names.append(name)
        shapes.append(tuple(int(x) for x in shape))
        size += numel(shape) * elem_bytes
        if size >= limit:
            out.append(Bucket(len(out), tuple(names), tuple(shapes), size // elem_bytes))
            names, shapes, size, limit = [], [], 0, cap
    if names:
        out.append(Bucket(len(out), tuple(names), tuple(shapes), size // elem_bytes))
    return tuple(out)


@dataclass(frozen=True)
class BucketTiming:
    index: int
    bytes: int
    ready_s: float
    start_s: float
    end_s: float


def bucket_ready_times(buckets, fwd_end_s: float, backward_s: float) -> list[float]:
    """When each bucket is ready: the backward walks the parameters in reverse, spending time in
    proportion to their elements (matmul FLOPs are 4 x elements x tokens); the embeddings (wte,
    wpe: gathers, not matmuls) are ready at the very end (Li et al. 2020, Fig. 2)."""

    def cost(name, shape):
        return 0 if name.startswith(("wte", "wpe")) else numel(shape)

    total = sum(cost(n, s) for b in buckets for n, s in zip(b.names, b.shapes, strict=True)) or 1
    done, out = 0, []
    for b in buckets:
        done += sum(cost(n, s) for n, s in zip(b.names, b.shapes, strict=True))
        end_of_bwd = any(n.startswith(("wte", "wpe")) for n in b.names)
        out.append(fwd_end_s + backward_s * (1.0 if end_of_bwd else done / total))
    return out


def bucket_schedule(
    buckets,
    ready_s,
    sizes,
    allreduce_time,
    *,
    n_gpus: int,
    overlap: bool,
    bwd_end_s: float,
    allreduce_time_1=None,
    token_bucket=None,
    tokens: float = 0.0,
):
    """The buckets' all-reduces back to back on one channel (DDP, Li et al. 2020 sec. 3.3): bucket i
    starts when it is ready (overlap) or after the backward (no overlap), and not before the one
    before it ends. `sizes[i]` are the bytes of the all-reduces bucket i costs (one, or three for
    PowerSGD); `allreduce_time(bytes, n_gpus)` prices one. With one GPU, `allreduce_time_1(bytes)`
    prices the call (default 0). `token_bucket` (gpukit.comm.TokenBucket): wire bytes covered by
    tokens cost no wire time (never below the all-reduce's latency nor the one-rank call's own
    work); tokens refill while the link idles. -> (end of the last send, [BucketTiming], seconds
    of all sends, tokens left)."""
    free, timings, comm_total, last = 0.0, [], 0.0, None
    bucket = token_bucket if n_gpus > 1 else None
    for b, r, sz in zip(buckets, ready_s, sizes, strict=True):
        start = max(r if overlap else bwd_end_s, free)
        if bucket is not None and last is not None:
            tokens = token_bucket_refill(tokens, start - last, bucket)
        t = 0.0
        for s in sz:
            local = allreduce_time_1(s) if allreduce_time_1 else 0.0  # the call's own work on one rank
            one = allreduce_time(s, n_gpus) if n_gpus > 1 else local
            if bucket is not None:
                saved, tokens = token_bucket_send(busbw_factor("all_reduce", n_gpus) * s, tokens, bucket)
                one = max(allreduce_time(0, n_gpus), local, one - saved)
            t += one
        comm_total += t
        free = last = start + t
        timings.append(BucketTiming(b.index, sum(sz), r, start, free))
    return free, timings, comm_total, tokens


# ---------------------------------------------------------------------------------------------------
# The DP group's all-reduce over the cluster network
# ---------------------------------------------------------------------------------------------------
def dp_group_layout(dp: int, gpus_per_node: int, ranks_per_node: int | None = None) -> tuple[int, int, int]:
    """(n_nodes, ranks of the group per full node r, ranks on the last node) for a DP group of `dp`
    ranks with at most `ranks_per_node` of them in a node (default gpus_per_node; fewer when tp/pp
    ranks take the rest of the node, Megatron's order: tp innermost, then dp)."""
    d = require_positive_int("dp", dp)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    r = min(
        d, k if ranks_per_node is None else min(k, require_positive_int("ranks_per_node", ranks_per_node))
    )
    nodes = -(-d // r)
    return nodes, r, d - (nodes - 1) * r


def dp_all_reduce(
    size_bytes: float,
    dp: int,
    net: ClusterNetwork,
    *,
    ranks_per_node: int | None = None,
    groups_per_node: int = 1,
) -> NetworkCost:
    """All-reduce of a per-rank buffer S over a DP group of `dp` ranks on `net`, r = ranks_per_node
    of them per node: one node -> the flat ring over the intra link; else reduce-scatter of S over
    the r ranks of a node, all-reduce of the shard across the nodes, all-gather of S (Thakur et al.
    2005). While it crosses, `groups_per_node` DP groups of a node (the tp/pp ranks' own groups,
    syncing at the same time) times r ranks share the node's ports. A partial last node (dp not a
    multiple of r) keeps `last` < r ranks: each holds a larger shard S/last and its ports (shared by
    last x groups_per_node GPUs) pace the inter-node phase; the full nodes' reduce-scatter and
    all-gather pace the intra-node phases. NCCL's base latency is paid once (one collective)."""
    size = require_positive("size_bytes", size_bytes, allow_zero=True)
    size = int(size) if float(size).is_integer() else size
    g = require_positive_int("groups_per_node", groups_per_node)
    nodes, r, last = dp_group_layout(dp, net.gpus_per_node, ranks_per_node)
    phases: tuple[tuple[str, CollectiveCost], ...]
    if dp == 1:
        phases = ()
    elif nodes == 1:
        phases = (("intra_all_reduce", collective_time("all_reduce", size, r, net.intra_link)),)
    else:
        shard = -(-size // last) if isinstance(size, int) else size / last
        phases = (
            ("intra_reduce_scatter", collective_time("reduce_scatter", size, r, net.intra_link)),
            (
                "inter_all_reduce",
                collective_time(
                    "all_reduce",
                    shard,
                    nodes,
                    net.inter_link(last * g),
                    base_latency_s=0.0 if r > 1 else None,
                ),
            ),
            ("intra_all_gather", collective_time("all_gather", size, r, net.intra_link, base_latency_s=0.0)),
        )
    return NetworkCost(
        op="all_reduce",
        size_bytes=size,
        n_gpus=int(dp),
        n_nodes=nodes,
        gpus_per_node=r,
        phases=phases,
        assumptions=net.assumptions(),
    )


@lru_cache(maxsize=8192)
def dp_all_reduce_s(
    size_bytes: float,
    dp: int,
    net: ClusterNetwork,
    ranks_per_node: int | None = None,
    groups_per_node: int = 1,
) -> float:
    """dp_all_reduce(...).time_s (cached: a layout search asks it thousands of times)."""
    return dp_all_reduce(
        size_bytes, dp, net, ranks_per_node=ranks_per_node, groups_per_node=groups_per_node
    ).time_s


# ---------------------------------------------------------------------------------------------------
# The sync of one optimizer step
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GradSync:
    """The gradient sync of one optimizer step on one rank of a DP group."""

    dp: int
    n_nodes: int
    ranks_per_node: int
    zero_stage: int
    size_bytes: float  # the per-rank buffer synced: gradients (ZeRO-0/1/2) or 16-bit parameters (ZeRO-3)
    n_collectives: int  # per optimizer step
    comm_s: float  # every sync collective of the step back to back
    exposed_s: float  # what the step waits for (after the backward, or not hidden by prefetch)
    bytes_sent_per_rank: float  # ring volume: 2 (d-1)/d x S per all-reduce
    n_elements: int = 0  # gradient elements in the buckets (what DDP copies into them and back)
    buckets: tuple[BucketTiming, ...] = ()
    assumptions: tuple[str, ...] = ()

    def to_json_dict(self) -> dict:
        return json_safe(asdict(self))


@lru_cache(maxsize=256)
def _uniform_buckets(
    n_params: float, n_layers: int, bucket_mb: float, first_bucket_mb: float | None
) -> tuple[Bucket, ...]:
    """ddp_buckets over uniform_param_shapes(n_params, n_layers), cached (a tuple: nothing can change it)."""
    return ddp_buckets(uniform_param_shapes(n_params, n_layers), bucket_mb, first_bucket_mb)


def ddp_bucket_copy_s(n_elements: float, grad_bytes_per_param: float, hbm_bytes_per_s: float) -> float:
    """Seconds of PyTorch DDP's copies of the gradients into its buckets and back, one rank, one optimizer
    step: with gradient_as_bucket_view=False (DDP's default) the reducer copies each gradient into its
    bucket as the backward produces it (copy_grad_to_bucket, the division by the world size fused into that
    copy) and the all-reduced bucket back into the gradient (copy_bucket_to_grad): each copy reads and writes
    every element once, 4 x grad_bytes_per_param bytes per element at the HBM rate (memory-bound kernels on the
    compute stream: not hidden). Li et al. 2020 sec. 3.2-3.3; torch/csrc/distributed/c10d/reducer.cpp. The
    memory model keeps the same bucket (gpukit.memory: + G for DDP without ZeRO)."""
    n = require_positive("n_elements", n_elements, allow_zero=True)
    gb = require_positive("grad_bytes_per_param", grad_bytes_per_param)
    # 2 copies x (read + write); a result beyond float range is the overflow error, never inf
    return finite_result(
        "bucket copy time", 4 * gb * n / require_positive("hbm_bytes_per_s", hbm_bytes_per_s)
    )


def dp_sync_halves(zero_stage: int, grad_accum: int) -> int:
    """Passes of the gradient buffer per optimizer step, in halves of an all-reduce (ring: (d-1)/d of the
    buffer each), for ZeRO 0-2: DDP and ZeRO-1 one all-reduce (reduce-scatter + all-gather) per step, 2;
    ZeRO-2 a reduce-scatter after every micro-batch's backward, as it keeps only its gradient partition
    (deepspeedai/DeepSpeed#2252), and one all-gather, grad_accum + 1."""
    if zero_stage not in (0, 1, 2) or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1 or 2 (ZeRO-3 gathers per micro-batch), got {zero_stage!r}")
    k = require_positive_int("grad_accum", grad_accum, at_most=MAX_COUNT)
    return 2 if zero_stage < 2 else k + 1


def grad_sync(
    n_params: float,
    dp: int,
    net: ClusterNetwork,
    *,
    grad_bytes_per_param: float = 2.0,
    zero_stage: int = 0,
    ranks_per_node: int | None = None,
    groups_per_node: int = 1,
    bucket_mb: float = 25.0,
    first_bucket_mb: float | None = None,
    param_shapes=None,
    n_layers: int = 32,
    backward_s: float = 0.0,
    overlap: bool = False,
    grad_accum: int = 1,
    micro_step_s: float = 0.0,
    param_bytes_per_param: float = 2.0,
) -> GradSync:
    """The DP gradient sync of one optimizer step (module docstring for the sources).

    ZeRO 0/1/2: the n_params gradients (grad_bytes_per_param each) in DDP buckets of `bucket_mb` MiB
    (DDP's default), assigned over `param_shapes` (default uniform_param_shapes(n_params,
    n_layers)), each all-reduced over the DP group (dp_all_reduce) once per optimizer step (gradient
    accumulation syncs the last micro-step only; ZeRO-2 also reduce-scatters after every other micro-step,
    deepspeedai/DeepSpeed#2252); with `overlap` a bucket starts as soon as the
    synced micro-step's backward (`backward_s`) has produced it, else after the backward; exposed =
    what ends after the backward. ZeRO-3: per micro-batch (grad_accum of them) two all-gathers of
    the 16-bit parameters and a reduce-scatter of the gradients, each half an all-reduce of the
    2-byte parameter buffer; with `overlap` prefetch hides each micro-batch's behind its compute
    (`micro_step_s`)."""
    n = require_positive("n_params", n_params)
    d = require_positive_int("dp", dp)
    k = require_positive_int("grad_accum", grad_accum)
    gb = require_positive("grad_bytes_per_param", grad_bytes_per_param)
    if zero_stage not in ZERO_STAGES or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    require_positive("backward_s", backward_s, allow_zero=True)
    require_positive("micro_step_s", micro_step_s, allow_zero=True)
    nodes, r, _ = dp_group_layout(d, net.gpus_per_node, ranks_per_node)
    words = (
        f"gradient sync over a DP group of {d} ({nodes} node(s), {r} rank(s) per node"
        + (f", {groups_per_node} DP groups sharing a node's ports" if groups_per_node > 1 else "")
        + ")"
    )

    def allreduce(size, n_ranks):
        return dp_all_reduce_s(float(size), n_ranks, net, r, groups_per_node)

    if zero_stage == 3:
        pb = require_positive("param_bytes_per_param", param_bytes_per_param)
        size = (
            n * pb
        )  # the parameters gathered (16-bit; fp32 when the model keeps fp32 parameters, PyTorch AMP)
        layers = require_positive_int("n_layers", n_layers, at_most=100_000)
        g_size = n * gb  # the gradients reduce-scattered, in the one gradient dtype (grad_bytes_per_param)
        # per layer (FSDP unit): an all-gather of its parameters and a reduce-scatter of its gradients, each
        # half an all-reduce of the buffer (ring: (d-1)/d S each, Rajbhandari et al. 2019 sec. 7)
        ag = allreduce(size / layers / 2, d) if d > 1 else 0.0
        rs = allreduce(g_size / layers / 2, d) if d > 1 else 0.0
        per_mb = layers * (2 * ag + rs)  # AG forward + AG backward + RS gradients, every layer
        if overlap and d > 1:
            # FSDP/DeepSpeed prefetch depth 1: layer l+1's gather runs while layer l computes, so per layer
            # only what the gather outlasts its layer's compute is exposed; the first gather of the forward
            # and the last reduce-scatter of the backward have no compute to hide behind (FSDP
            # forward_prefetch/backward_prefetch; Zhao et al. 2023, "PyTorch FSDP", sec. 3.3.2 and 4.2).
            bwd = backward_s if backward_s > 0 else micro_step_s * 2 / 3  # backward = 2x forward (Kaplan)
            fwd_l, bwd_l = max(0.0, micro_step_s - bwd) / layers, bwd / layers
            exposed_mb = (
                ag + (layers - 1) * max(0.0, ag - fwd_l) + (layers - 1) * max(0.0, ag + rs - bwd_l) + ag + rs
            )  # forward: head gather + (L-1) prefetched; backward: head gather, (L-1) prefetched, tail RS
            exposed_mb = min(per_mb, exposed_mb)
        else:
            exposed_mb = per_mb
        return GradSync(
            dp=d,
            n_nodes=nodes,
            ranks_per_node=r,
            zero_stage=3,
            size_bytes=size,
            n_collectives=3 * k * layers if d > 1 else 0,
            comm_s=k * per_mb,
            exposed_s=k * exposed_mb,
            bytes_sent_per_rank=k * (2 * size + g_size) * (d - 1) / d,
            assumptions=(
                words + f": ZeRO-3, per micro-batch and layer (FSDP unit, {layers}) an all-gather of the "
                f"parameters ({pb:g} B/param) in forward, another in backward and a reduce-scatter of the gradients "
                f"({gb:g} B/param) (Rajbhandari et al. 2019 sec. 7)"
                + (
                    "; prefetch depth 1 hides each layer's collectives behind the previous layer's compute "
                    "(FSDP forward/backward prefetch), the first gather and the last reduce-scatter exposed, "
                    "and a gather longer than its layer's compute exposed by the difference"
                    if overlap
                    else "; not overlapped"
                ),
            ),
        )
    if param_shapes is not None:
        buckets = ddp_buckets(param_shapes, bucket_mb, first_bucket_mb)
    else:  # the uniform layout's buckets depend on these numbers only: built once (a search asks thousands)
        buckets = _uniform_buckets(n, n_layers, bucket_mb, first_bucket_mb)
    sizes = [(b.numel * gb,) for b in buckets]
    ready = bucket_ready_times(buckets, 0.0, backward_s)
    free, timings, comm, _ = bucket_schedule(
        buckets, ready, sizes, allreduce, n_gpus=d, overlap=overlap, bwd_end_s=backward_s
    )
    exposed = max(0.0, free - backward_s) if d > 1 else 0.0
    # ZeRO-2 keeps only its partition of the gradients, so it reduce-scatters after EVERY micro-batch's
    # backward, not once per optimizer step (DeepSpeed engine: "ZeRO stage >= 2 communicates during non
    # gradient accumulation boundaries as well"; deepspeedai/DeepSpeed#2252): k - 1 more reduce-scatters of
    # the gradient buckets (ring: half an all-reduce's bytes each), each overlapped with its own backward
    extra_comm = extra_exposed = 0.0
    extra_n = 0
    if zero_stage == 2 and k > 1 and d > 1:
        rs_sizes = [(sz / 2,) for (sz,) in sizes]
        rs_free, _, rs_comm, _ = bucket_schedule(
            buckets, ready, rs_sizes, allreduce, n_gpus=d, overlap=overlap, bwd_end_s=backward_s
        )
        extra_comm = (k - 1) * rs_comm
        extra_exposed = (k - 1) * max(0.0, rs_free - backward_s)
        extra_n = (k - 1) * len(buckets)
    stage = (
        "DDP all-reduce"
        if zero_stage == 0
        else f"ZeRO-{zero_stage} reduce-scatter + all-gather (the bytes of an all-reduce)"
    )
    return GradSync(
        dp=d,
        n_nodes=nodes,
        ranks_per_node=r,
        zero_stage=zero_stage,
        size_bytes=sum(s for (s,) in sizes),
        n_collectives=len(buckets) + extra_n if d > 1 else 0,
        comm_s=comm + extra_comm if d > 1 else 0.0,
        exposed_s=exposed + extra_exposed,
        bytes_sent_per_rank=dp_sync_halves(zero_stage, k) * (d - 1) / d * sum(s for (s,) in sizes),
        n_elements=sum(b.numel for b in buckets),
        buckets=tuple(timings),
        assumptions=(
            f"{words}: {stage} in {len(buckets)} bucket(s) of "
            + f"{bucket_mb:g} MiB"
            + (", overlapped with the backward (DDP, Li et al. 2020)" if overlap else ", after the backward")
            + ", once per optimizer step"
            + (
                f"; ZeRO-2 also reduce-scatters after each of the other {k - 1} micro-batches' backward (it keeps "
                "only its gradient partition: deepspeedai/DeepSpeed#2252)"
                if extra_n
                else ""
            ),
        ),
    )
