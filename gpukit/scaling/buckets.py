"""DDP's gradient buckets and what each comm hook sends: parameter shapes, buckets, bytes, kernels.

Holds what each comm hook does to DDP's buckets: the bytes and all-reduces each hook costs per bucket (`hook_bytes`, `hook_collectives`,
`powersgd_split`) and the training thread's own work for it (`hook_compute_s`, `gpu_kernel_s`).
Sizes in bytes (MiB = 2**20 for bucket caps), times in s. The parameter shapes and DDP's bucket
assignment (gpt_param_shapes, uniform_param_shapes, Bucket, ddp_buckets) belong to the one
gradient-sync model, gpukit.comm.grad_sync; gpukit.scaling's face still offers them (imported here).

Sources: PyTorch DDP (Li et al. 2020, "PyTorch Distributed: Experiences on Accelerating Data Parallel
Training", VLDB 13(12), sec. 3.2-3.3; torch reducer `compute_bucket_assignment_by_size`,
torch.nn.parallel.distributed BucketCapacityConfig); the comm hooks (torch fp16_compress_hook,
powerSGD_hook: PowerSGD, Vogels et al. 2019).

Used in: gpukit.scaling.step (the step, bucket by bucket), gpukit.scaling, gpukit.bench.ddp, notebook
05_data_parallel_scaling; tests/test_scaling.py, tests/test_scaling_bench.py. gpukit.scaling
re-exports every public name here.
"""

from __future__ import annotations

from gpukit.comm import (  # the bucket assignment is the one gradient-sync model's (gpukit.comm.grad_sync)
    Bucket,
    ddp_bucket_copy_s,
    numel,
)
from gpukit.errors import require_choice, require_positive_int

HOOKS = ("none", "fp16", "bf16", "powersgd")
PSGD_MIN_COMPRESSION_RATE = 2  # torch powerSGD_hook default (PowerSGDState min_compression_rate)


# ---------------------------------------------------------------------------------------------------
# Parameters, buckets, bytes per hook
# ---------------------------------------------------------------------------------------------------
def powersgd_split(shapes, rank: int = 1, min_compression_rate: float = PSGD_MIN_COMPRESSION_RATE):
    """(uncompressed elements, P elements, Q elements, compressed matrices' elements) for one bucket,
    torch's powerSGD_hook rule: each gradient is viewed as (shape[0], -1) = n x m, r' = min(n, m, r),
    compressed when (n + m) r' x min_compression_rate < n m (1-D tensors never are)."""
    r = require_positive_int("powersgd_rank", rank)
    unc = p = q = comp = 0
    for shape in shapes:
        n = int(shape[0]) if shape else 1
        m = numel(shape) // n if n else 0
        rr = min(n, m, r)
        if len(shape) > 1 and (n + m) * rr * min_compression_rate < n * m:
            p, q, comp = p + n * rr, q + m * rr, comp + n * m
        else:
            unc += numel(shape)
    return unc, p, q, comp


def hook_bytes(bucket: Bucket, hook: str = "none", powersgd_rank: int = 1, grad_bytes: int = 4) -> int:
    """Bytes the hook hands to all-reduce for one bucket (per rank, the all-reduce buffer S)."""
    grad_bytes = require_positive_int("grad_bytes", grad_bytes, at_most=64)  # bytes per element
    require_choice("hook", hook, HOOKS)
    if hook == "none":
        return bucket.numel * grad_bytes
    if hook in ("fp16", "bf16"):
        return bucket.numel * 2
    unc, p, q, _ = powersgd_split(bucket.shapes, powersgd_rank)
    return (unc + p + q) * grad_bytes


def hook_collectives(
    bucket: Bucket, hook: str, powersgd_rank: int = 1, grad_bytes: int = 4
) -> tuple[int, ...]:
    """Sizes (bytes) of the all-reduces one bucket costs, in order: one for none/fp16/bf16; three for
    PowerSGD (uncompressed tensors, then P, then Q; torch powerSGD_hook)."""
    grad_bytes = require_positive_int("grad_bytes", grad_bytes, at_most=64)  # bytes per element
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
    return {
        "copy": ddp_bucket_copy_s(
            1, 4, bw
        ),  # the step model's DDP copies (gpukit.comm): 16 B per fp32 element
        "div": 8 / bw,
        "fp16": 16 / bw,
        "psgd_compressed": 56 / bw,
        "psgd_uncompressed": 40 / bw,
    }
