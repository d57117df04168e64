"""Collective measurement on every rank, nccl-tests style: build the op, time it, rows of algbw/busbw.

What each rank runs inside an initialized process group (gpukit.bench.collectives validates, launches
the ranks and reports): the ops (OPS; `_make_op`), bytes and element counts (`size_and_count`), busbw
(`busbw_gbps`), the timing loops, `measure` (the rows), `bare_loop_busbw` (the harness-overhead
reference) and the test hook `fault_hook` (GPUKIT_FAULT). torch is imported inside the functions.

Method (NVIDIA/nccl-tests src/common.cu): warm-up calls, barrier, then `iters` calls between two
host timestamps with the device synchronized, per-call time averaged over ranks, median over
`repeats`. algbw = S / t (decimal GB/s); busbw = algbw x factor(op, n) from gpukit.comm
(nccl-tests doc/PERFORMANCE.md). S is the size of the whole buffer (the all_gather output, the
reduce_scatter input); `count` is the element count passed to the call, as nccl-tests prints it
(per-rank chunk for all_gather, reduce_scatter and all_to_all). Sizes are timed round-robin (one
repeat of each size in turn) so that load from other processes spreads over all sizes. Each row
also carries bare_busbw_gbps (three plain loops of the same calls, spread over the run) and
harness_ratio = busbw / bare_busbw (goal >= 0.9: the harness costs nothing). Times in s (rows: us).
The device sync and the means over ranks are gpukit.bench.ranks'.
Used in: gpukit.bench.collectives (every rank's body), gpukit.bench.article, gpukit.bench.ddp_rank
(measure), gpukit.bench.netlab.benchmark (OPS); notebooks/04_* through run_collectives;
tests/test_collectives.py, tests/test_faults.py (GPUKIT_FAULT).
"""

from __future__ import annotations

import os
import time

from gpukit.bench.ranks import rank_max, rank_mean, sync
from gpukit.bench.timing import is_out_of_memory, oom_line, percentile
from gpukit.units import parse_size, parse_sizes

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
SPLIT_OPS = ("all_gather", "reduce_scatter", "all_to_all")  # buffer split in n chunks
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


# ---------------------------------------------------------------- sizes and factors


def size_and_count(op: str, size_bytes: int, n_ranks: int, elem_bytes: int) -> tuple[int, int]:
    """(bytes actually moved, count passed to the call): S rounded down to whole elements per rank."""
    unit = elem_bytes * (n_ranks if op in SPLIT_OPS else 1)
    used = max(unit, size_bytes // unit * unit)
    return used, used // unit


def busbw_gbps(op: str, algbw: float, n_ranks: int) -> float:
    """busbw = algbw x factor (gpukit.comm.busbw_factor; nccl-tests doc/PERFORMANCE.md)."""
    from gpukit.comm import busbw_factor

    return algbw * busbw_factor(op, n_ranks)


# ---------------------------------------------------------------- the worker (runs in every rank)


class UnsupportedOp(RuntimeError):
    """The backend cannot run this collective (raised on every rank alike)."""


def _make_op(op: str, size_bytes: int, dtype: str, device: str, backend: str):
    """(callable running one collective, bytes, count, implementation label) on this rank."""
    import torch
    import torch.distributed as dist

    n, rank = dist.get_world_size(), dist.get_rank()
    dt = getattr(torch, DTYPES[dtype])
    used, count = size_and_count(op, size_bytes, n, torch.finfo(dt).bits // 8)
    total = used // (torch.finfo(dt).bits // 8)
    new = lambda k: torch.ones(k, dtype=dt, device=device)  # noqa: E731
    if op == "all_reduce":
        t = new(total)
        return (lambda: dist.all_reduce(t)), used, count, "all_reduce"
    if op == "broadcast":
        t = new(total)
        return (lambda: dist.broadcast(t, src=0)), used, count, "broadcast(src=0)"
    if op == "reduce":
        t = new(total)
        return (lambda: dist.reduce(t, dst=0)), used, count, "reduce(dst=0)"
    if op == "all_gather":
        inp, out = new(count), new(total)
        single = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
        outs = list(out.chunk(n))

        def tensor_fn():
            single(out, inp)

        def list_fn():
            dist.all_gather(outs, inp)

        return _first_supported(
            op, backend, [(tensor_fn, single.__name__), (list_fn, "all_gather(list)")], used, count
        )
    if op == "reduce_scatter":
        inp, out = new(total), new(count)
        single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        ins = list(inp.chunk(n))
        return _first_supported(
            op,
            backend,
            [
                (lambda: single(out, inp), single.__name__),
                (lambda: dist.reduce_scatter(out, ins), "reduce_scatter(list)"),
            ],
            used,
            count,
        )
    if op == "all_to_all":
        inp, out = new(total), new(total)
        return _first_supported(
            op, backend, [(lambda: dist.all_to_all_single(out, inp), "all_to_all_single")], used, count
        )
    if op == "send_recv":
        if n < 2:
            raise UnsupportedOp("send_recv needs at least 2 ranks")
        # nccl-tests sendrecv: every rank sends to rank+1 and receives from rank-1 at once
        send, recv = new(total), new(total)
        to, frm = (rank + 1) % n, (rank - 1) % n

        def sendrecv():
            reqs = dist.batch_isend_irecv(
                [dist.P2POp(dist.isend, send, to), dist.P2POp(dist.irecv, recv, frm)]
            )
            for r in reqs:
                r.wait()

        return sendrecv, used, count, "isend(rank+1)/irecv(rank-1)"
    raise ValueError(f"op must be one of {', '.join(OPS)}; got {op!r}")  # pragma: no cover


def _first_supported(op, backend, candidates, used, count):
    """The first implementation the backend runs (tried once, on every rank alike)."""
    import torch

    errors = []
    for fn, label in candidates:
        try:
            fn()
            return fn, used, count, label
        except (RuntimeError, NotImplementedError, AttributeError, ValueError) as e:
            errors.append(f"{label}: {str(e).splitlines()[0][:120]}")
    raise UnsupportedOp(
        f"{op} is not supported by backend {backend} in torch {torch.__version__} ({'; '.join(errors)})"
    )


def _timed_loop(fn, iters: int, device: str) -> float:
    """Seconds per call: barrier, sync, `iters` calls between two timestamps, sync."""
    import torch.distributed as dist

    dist.barrier()
    sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    return (time.perf_counter() - t0) / iters


def _bare_loop(fn, iters: int, device: str) -> float:
    """The loop a user writes: barrier, t0, `iters` calls, sync, t1 (own clock, no statistics)."""
    import torch.distributed as dist

    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    return (time.perf_counter() - t0) / iters


def bare_loop_busbw(
    op: str, size_bytes: int, iters: int, *, dtype: str = "fp32", device: str = "cpu", backend: str = "gloo"
) -> float:
    """busbw (GB/s) from the plainest loop: barrier, t0, `iters` calls, sync, t1 (this rank's clock).

    The reference for the harness-overhead check (our median should be >= 90% of it); `measure`
    runs three such loops of `iters` calls, spread over its repeats, and compares with their median.
    Call inside an initialized process group, on every rank.
    """
    import torch.distributed as dist

    fn, used, _, _ = _make_op(op, size_bytes, dtype, device, backend)
    fn()
    sync(device)
    per_call = _bare_loop(fn, iters, device)
    return busbw_gbps(op, used / per_call / 1e9, dist.get_world_size())


def _pick_iters(fn, device: str, target_s: float, max_iters: int) -> int:
    """Calls per repeat so one repeat lasts ~target_s: double until half-way, then scale (the
    slowest rank's time decides, so every rank gets the same answer)."""
    k = 1
    while True:
        loop_s = rank_max(_timed_loop(fn, k, device), device) * k
        if loop_s >= target_s / 2 or k >= max_iters:
            return max(1, min(max_iters, round(k * target_s / max(loop_s, 1e-9))))
        k *= 2


INTERLEAVE_BYTES = 2**30  # sizes whose buffers fit together in this budget are timed round-robin


def fault_hook(name: str) -> str | None:
    """Test hook (tests/test_faults.py), inert unless the environment sets GPUKIT_FAULT (comma-separated):
    'rank1_exit' makes rank 1 exit with code 3 after its first timed repeat (a rank that dies);
    'oom_above=N' makes every size above N bytes fail its allocation with torch.OutOfMemoryError (a
    GPU too small for the sweep); 'native_stderr' makes every rank write a line straight to file
    descriptor 2, as gloo's C++ logger does ("failed to connect"). Returns the value after '=' ('' for a bare flag), None if unset."""
    for item in os.environ.get("GPUKIT_FAULT", "").split(","):
        key, _, value = item.strip().partition("=")
        if key == name:
            return value
    return None


def _probe_alloc(op: str, size_bytes: int, dtype: str, device: str, n_ranks: int) -> str:
    """Allocate (then free) the two whole buffers `_make_op` will need: '' if they fit, else the
    'out of memory at size ...' line. Runs before any collective of this size, so a rank that cannot
    allocate never leaves the others waiting in a collective (measure() agrees on it first)."""
    import torch

    try:
        limit = fault_hook("oom_above")
        if limit is not None and size_bytes > parse_size(limit):
            raise torch.OutOfMemoryError(f"out of memory (simulated: GPUKIT_FAULT=oom_above={limit})")
        dt = getattr(torch, DTYPES[dtype])
        elem = torch.finfo(dt).bits // 8
        used, _ = size_and_count(op, size_bytes, n_ranks, elem)
        bufs = [torch.empty(used // elem, dtype=dt, device=device) for _ in range(2)]
        del bufs
        return ""
    except (RuntimeError, MemoryError) as e:
        if not is_out_of_memory(e):
            raise
        return oom_line(f"{size_bytes} bytes ({op}, {dtype}, {device})", e)


def measure(
    op: str,
    sizes,
    *,
    iters: int | None = None,
    warmup: int = 3,
    repeats: int = 5,
    dtype: str = "fp32",
    device: str = "cpu",
    backend: str = "gloo",
    bare_check: bool = True,
    target_repeat_s: float = 0.05,
    max_iters: int = 200,
    deadline_s: float | None = None,
    notes: dict | None = None,
) -> list[dict]:
    """Rows for each size (call on every rank of an initialized group; every rank gets the rows).

    Stops early, keeping the rows so far, when `deadline_s` passes or a size does not fit in memory
    (every rank agrees first); `notes` (a dict, if given) then gets 'timed_out' or 'out_of_memory'
    ("out of memory at size N bytes: ...").

    iters=None: after warm-up, iters is chosen so a repeat lasts about `target_repeat_s` (between 1
    and `max_iters`), the same on every rank. Sizes whose buffers fit together in INTERLEAVE_BYTES
    are timed round-robin (repeat 1 of every size, then repeat 2, ...): a burst of load from
    other processes then costs every size one sample instead of spoiling one size's median.
    """
    import torch.distributed as dist

    n = dist.get_world_size()
    notes = {} if notes is None else notes
    start = time.monotonic()
    rows: list[dict] = []
    batches, batch, held = [], [], 0
    all_sizes = parse_sizes(sizes)
    for size in all_sizes:
        if batch and held + 2 * size > INTERLEAVE_BYTES:
            batches.append(batch)
            batch, held = [], 0
        batch.append(size)
        held += 2 * size
    batches.append(batch)
    stop = False
    for batch in batches:
        specs = []
        for size in batch:
            failed = _probe_alloc(op, size, dtype, device, n)
            if rank_max(float(bool(failed)), device) > 0:  # all ranks stop here, none waits alone
                notes["out_of_memory"] = failed or f"out of memory at size {size} bytes (on another rank)"
                stop = True
                break
            fn, used, count, impl = _make_op(op, size, dtype, device, backend)
            for _ in range(warmup):
                fn()
            specs.append(
                (size, fn, used, count, impl, iters or _pick_iters(fn, device, target_repeat_s, max_iters))
            )
        samples: list[list[float]] = [[] for _ in specs]
        bare: list[list[float]] = [[] for _ in specs]
        bare_rounds = {0, repeats // 2, repeats - 1} if bare_check else set()
        for rep in range(repeats if specs else 0):
            for i, (_, fn, *_rest, k) in enumerate(specs):
                samples[i].append(_timed_loop(fn, k, device))
            if rep == 0 and fault_hook("native_stderr") is not None:  # test hook: a C++ logger's lines
                os.write(2, b"[E socket.cpp] [c10d] simulated native log line (GPUKIT_FAULT=native_stderr)\n")
            if rep == 0 and dist.get_rank() == 1 and fault_hook("rank1_exit") is not None:
                os._exit(3)  # test hook: a rank that dies mid-run
            if rep in bare_rounds:  # spread over the run like the repeats, so both see the same load
                for i, (_, fn, *_rest, k) in enumerate(specs):
                    bare[i].append(_bare_loop(fn, k, device))
            # every rank reads its own clock; agree on stopping so no rank waits alone in a collective
            more = rep < repeats - 1 or batch is not batches[-1]  # the same on every rank
            if (
                more
                and rank_max(float(deadline_s is not None and time.monotonic() - start > deadline_s), device)
                > 0
            ):
                stop = True
                notes["timed_out"] = (
                    f"stopped after {time.monotonic() - start:.1f} s (timeout {deadline_s:g} s): "
                    f"{rep + 1} of {repeats} repeats, sizes up to {specs[-1][0]} of "
                    f"{all_sizes[-1]} bytes"
                )
                break
        for (_size, _fn, used, count, impl, k), own, own_bare in zip(specs, samples, bare, strict=True):
            per_call = rank_mean(own, device)
            med = percentile(per_call, 50)
            algbw = used / med / 1e9
            row = {
                "op": op,
                "size_bytes": used,
                "count": count,
                "dtype": dtype,
                "time_us": med * 1e6,
                "p10_us": percentile(per_call, 10) * 1e6,
                "p90_us": percentile(per_call, 90) * 1e6,
                "algbw_gbps": algbw,
                "busbw_gbps": busbw_gbps(op, algbw, n),
                "world_size": n,
                "iters": k,
                "repeats": len(per_call),
                "impl": impl,
            }
            if own_bare:
                # this rank's own clock (rank 0's row is reported), median of the plain loops
                bare_bw = busbw_gbps(op, used / percentile(own_bare, 50) / 1e9, n)
                row["bare_busbw_gbps"] = bare_bw
                row["harness_ratio"] = row["busbw_gbps"] / bare_bw if bare_bw > 0 else None  # one rank: 0/0
            rows.append(row)
        del specs
        if stop:
            break
    return rows
