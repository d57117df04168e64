"""Collective benchmarks in the nccl-tests shape: size, count, type, time, algbw, busbw.

Two ways to run the same worker (the spawn launcher is gpukit.bench.launch):
- torchrun (one or many nodes; reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT):
  `torchrun --nproc-per-node 2 -m gpukit.bench.collectives --op all_reduce --sizes 1K,1M --out r.json`
  (rank 0 prints the table and writes {"env": ..., "rows": [...]}; docs/CONTRACTS.md).
- From Python or a notebook: `run_collectives("all_reduce", n_ranks=2, sizes="1K,1M")` spawns the
  ranks (torch.multiprocessing, spawn) with a timeout; without torchrun's environment,
  `python -m gpukit.bench.collectives --ranks 2 ...` does the same.

Method (NVIDIA/nccl-tests src/common.cu): warm-up calls, barrier, then `iters` calls between two
host timestamps with the device synchronized, per-call time averaged over ranks, median over
`repeats`. algbw = S / t (decimal GB/s); busbw = algbw x factor(op, n) from gpukit.comm
(nccl-tests doc/PERFORMANCE.md). S is the size of the whole buffer (the all_gather output, the
reduce_scatter input); `count` is the element count passed to the call, as nccl-tests prints it
(per-rank chunk for all_gather, reduce_scatter and all_to_all). Sizes are timed round-robin (one
repeat of each size in turn) so that load from other processes spreads over all sizes. Each row
also carries bare_busbw_gbps (three plain loops of the same calls, spread over the run) and
harness_ratio = busbw / bare_busbw (goal >= 0.9: the harness costs nothing).
Used in: notebooks/04_* (collectives), `gpukit bench collectives`, `gpukit calibrate`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import timedelta

from gpukit.bench.article import (
    article_latency_snippet,  # noqa: F401 - re-exported: the notebooks' entry point
)
from gpukit.bench.results import BenchResult, write_json
from gpukit.bench.timing import is_out_of_memory, oom_line, percentile, resolve_device
from gpukit.errors import nonnegative_int_arg, positive_int_arg, timeout_arg
from gpukit.units import (  # noqa: F401 (parse_size: the worker's public API)
    parse_bytes,
    parse_size,
    parse_sizes,
)

OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv")
SPLIT_OPS = ("all_gather", "reduce_scatter", "all_to_all")  # buffer split in n chunks
DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
BACKENDS = ("auto", "gloo", "nccl")
COLUMNS = ("size_bytes", "count", "dtype", "time_us", "algbw_gbps", "busbw_gbps")
HEADERS = ("size(B)", "count(elements)", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)")


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


def _check(op: str, backend: str, device: str, dtype: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}; got {op!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    if backend == "nccl" and device != "cuda":
        raise ValueError("backend nccl needs --device cuda (use gloo on cpu)")


def _check_counts(iters, warmup, repeats, timeout_s, threads):
    """Validated (iters, warmup, repeats, timeout_s, threads): iters/threads None or >= 1, warmup >= 0,
    repeats >= 1, timeout_s finite > 0 (0 repeats or iters would divide by zero inside the ranks)."""
    from gpukit.errors import require_positive_int, require_timeout

    return (None if iters is None else require_positive_int("iters", iters),
            require_positive_int("warmup", warmup, allow_zero=True), require_positive_int("repeats", repeats),
            require_timeout("timeout_s", timeout_s),
            None if threads is None else require_positive_int("threads", threads))


def _pick_backend(backend: str, device: str) -> str:
    return ("nccl" if device == "cuda" else "gloo") if backend == "auto" else backend


# ---------------------------------------------------------------- the worker (runs in every rank)


class UnsupportedOp(RuntimeError):
    """The backend cannot run this collective (raised on every rank alike)."""


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


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
        return _first_supported(op, backend, [(tensor_fn, single.__name__), (list_fn, "all_gather(list)")],
                                used, count)
    if op == "reduce_scatter":
        inp, out = new(total), new(count)
        single = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
        ins = list(inp.chunk(n))
        return _first_supported(op, backend, [(lambda: single(out, inp), single.__name__),
                                              (lambda: dist.reduce_scatter(out, ins), "reduce_scatter(list)")],
                                used, count)
    if op == "all_to_all":
        inp, out = new(total), new(total)
        return _first_supported(op, backend, [(lambda: dist.all_to_all_single(out, inp), "all_to_all_single")],
                                used, count)
    if op == "send_recv":
        if n < 2:
            raise UnsupportedOp("send_recv needs at least 2 ranks")
        # nccl-tests sendrecv: every rank sends to rank+1 and receives from rank-1 at once
        send, recv = new(total), new(total)
        to, frm = (rank + 1) % n, (rank - 1) % n

        def sendrecv():
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, send, to), dist.P2POp(dist.irecv, recv, frm)])
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
    raise UnsupportedOp(f"{op} is not supported by backend {backend} in torch {torch.__version__} "
                        f"({'; '.join(errors)})")


def _rank_mean(values: list[float], device: str) -> list[float]:
    """Element-wise mean over ranks (nccl-tests' default -a 1 averages the time over ranks)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return (t / dist.get_world_size()).tolist()


def _rank_max(value: float, device: str) -> float:
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())


def _timed_loop(fn, iters: int, device: str) -> float:
    """Seconds per call: barrier, sync, `iters` calls between two timestamps, sync."""
    import torch.distributed as dist

    dist.barrier()
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / iters


def _bare_loop(fn, iters: int, device: str) -> float:
    """The loop a user writes: barrier, t0, `iters` calls, sync, t1 (own clock, no statistics)."""
    import torch.distributed as dist

    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    _sync(device)
    return (time.perf_counter() - t0) / iters


def bare_loop_busbw(op: str, size_bytes: int, iters: int, *, dtype: str = "fp32", device: str = "cpu",
                    backend: str = "gloo") -> float:
    """busbw (GB/s) from the plainest loop: barrier, t0, `iters` calls, sync, t1 (this rank's clock).

    The reference for the harness-overhead check (our median should be >= 90% of it); `measure`
    runs three such loops of `iters` calls, spread over its repeats, and compares with their median.
    Call inside an initialized process group, on every rank.
    """
    import torch.distributed as dist

    fn, used, _, _ = _make_op(op, size_bytes, dtype, device, backend)
    fn()
    _sync(device)
    per_call = _bare_loop(fn, iters, device)
    return busbw_gbps(op, used / per_call / 1e9, dist.get_world_size())


def _pick_iters(fn, device: str, target_s: float, max_iters: int) -> int:
    """Calls per repeat so one repeat lasts ~target_s: double until half-way, then scale (the
    slowest rank's time decides, so every rank gets the same answer)."""
    k = 1
    while True:
        loop_s = _rank_max(_timed_loop(fn, k, device), device) * k
        if loop_s >= target_s / 2 or k >= max_iters:
            return max(1, min(max_iters, round(k * target_s / max(loop_s, 1e-9))))
        k *= 2


INTERLEAVE_BYTES = 2**30  # sizes whose buffers fit together in this budget are timed round-robin


def fault_hook(name: str) -> str | None:
    """Test hook (tests/test_faults.py), inert unless the environment sets GPUKIT_FAULT (comma-separated):
    'rank1_exit' makes rank 1 exit with code 3 after its first timed repeat (a rank that dies);
    'oom_above=N' makes every size above N bytes fail its allocation with torch.OutOfMemoryError (a
    GPU too small for the sweep). Returns the value after '=' ('' for a bare flag), None if unset."""
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


def measure(op: str, sizes, *, iters: int | None = None, warmup: int = 3, repeats: int = 5,
            dtype: str = "fp32", device: str = "cpu", backend: str = "gloo", bare_check: bool = True,
            target_repeat_s: float = 0.05, max_iters: int = 200, deadline_s: float | None = None,
            notes: dict | None = None) -> list[dict]:
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
            if _rank_max(float(bool(failed)), device) > 0:  # all ranks stop here, none waits alone
                notes["out_of_memory"] = failed or f"out of memory at size {size} bytes (on another rank)"
                stop = True
                break
            fn, used, count, impl = _make_op(op, size, dtype, device, backend)
            for _ in range(warmup):
                fn()
            specs.append((size, fn, used, count, impl, iters or _pick_iters(fn, device, target_repeat_s, max_iters)))
        samples: list[list[float]] = [[] for _ in specs]
        bare: list[list[float]] = [[] for _ in specs]
        bare_rounds = {0, repeats // 2, repeats - 1} if bare_check else set()
        for rep in range(repeats if specs else 0):
            for i, (_, fn, *_rest, k) in enumerate(specs):
                samples[i].append(_timed_loop(fn, k, device))
            if rep == 0 and dist.get_rank() == 1 and fault_hook("rank1_exit") is not None:
                os._exit(3)  # test hook: a rank that dies mid-run
            if rep in bare_rounds:  # spread over the run like the repeats, so both see the same load
                for i, (_, fn, *_rest, k) in enumerate(specs):
                    bare[i].append(_bare_loop(fn, k, device))
            # every rank reads its own clock; agree on stopping so no rank waits alone in a collective
            more = rep < repeats - 1 or batch is not batches[-1]  # the same on every rank
            if more and _rank_max(float(deadline_s is not None and time.monotonic() - start > deadline_s),
                                  device) > 0:
                stop = True
                notes["timed_out"] = (f"stopped after {time.monotonic() - start:.1f} s (timeout {deadline_s:g} s): "
                                      f"{rep + 1} of {repeats} repeats, sizes up to {specs[-1][0]} of "
                                      f"{all_sizes[-1]} bytes")
                break
        for (_size, _fn, used, count, impl, k), own, own_bare in zip(specs, samples, bare, strict=True):
            per_call = _rank_mean(own, device)
            med = percentile(per_call, 50)
            algbw = used / med / 1e9
            row = {"op": op, "size_bytes": used, "count": count, "dtype": dtype, "time_us": med * 1e6,
                   "p10_us": percentile(per_call, 10) * 1e6, "p90_us": percentile(per_call, 90) * 1e6,
                   "algbw_gbps": algbw, "busbw_gbps": busbw_gbps(op, algbw, n), "world_size": n,
                   "iters": k, "repeats": len(per_call), "impl": impl}
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


def _worker_body(cfg: dict) -> dict:
    """Everything a rank does inside an initialized group; returns the payload rank 0 reports."""
    import torch.distributed as dist

    from gpukit.bench.envinfo import env_stamp

    device, backend = cfg["device"], cfg["backend"]
    if cfg.get("mode") == "ddp":
        from gpukit.bench.ddp import ddp_body

        return ddp_body(cfg)
    env = env_stamp(device, threads=cfg.get("threads"), world_size=dist.get_world_size(), backend=backend,
                    op=cfg.get("op"), launcher=cfg.get("launcher"), master_addr=os.environ.get("MASTER_ADDR"),
                    gloo_socket_ifname=os.environ.get("GLOO_SOCKET_IFNAME"))
    if cfg.get("mode") == "article":
        from gpukit.bench.article import article_snippet

        calls = article_snippet(cfg["n_calls"], device=device, skew_s=cfg.get("skew_s", 0.0))
        per_rank = [None] * dist.get_world_size()
        dist.all_gather_object(per_rank, calls)
        rows = measure("all_reduce", [4], warmup=cfg.get("warmup", 20), repeats=cfg.get("repeats", 11),
                       iters=cfg.get("iters"), device=device, backend=backend, bare_check=False)
        return {"env": env, "article_calls_us": per_rank, "rows": rows}
    notes: dict = {}
    rows = measure(cfg["op"], cfg["sizes"], iters=cfg.get("iters"), warmup=cfg["warmup"], repeats=cfg["repeats"],
                   dtype=cfg["dtype"], device=device, backend=backend, bare_check=cfg.get("bare_check", True),
                   deadline_s=cfg.get("timeout_s"), notes=notes)
    return {"env": env, "rows": rows, "notes": notes}


def _setup_rank(cfg: dict, local_rank: int) -> None:
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(int(cfg["threads"]))
    if cfg["device"] == "cuda":
        torch.cuda.set_device(local_rank)


def _spawn_entry(rank: int, n_ranks: int, port: int, cfg: dict, q) -> None:
    """Entry point of a spawned rank: join the launcher's store and group, run, report (launch.rank_main)."""
    from gpukit.bench.launch import rank_main

    rank_main(rank, n_ranks, port, cfg, q, _worker_body)


def spawn_ranks(cfg: dict, n_ranks: int, timeout_s: float, startup_s: float | None = None) -> dict:
    """Run this module's worker on `n_ranks` spawned local ranks; rank 0's payload (launch.spawn)."""
    from gpukit.bench.launch import spawn

    return spawn(_spawn_entry, cfg, n_ranks, timeout_s, startup_s)


def _result(payload: dict, op: str) -> BenchResult:
    rows = tuple(payload["rows"])
    summary = {"op": op}
    ratios = [r["harness_ratio"] for r in rows if r.get("harness_ratio")]
    if ratios:
        summary["harness_ratio_min"] = min(ratios)
        summary["harness_ratio_median"] = percentile(ratios, 50)
    if rows:
        summary["max_busbw_gbps"] = max(r["busbw_gbps"] for r in rows)
    summary.update(payload.get("notes") or {})  # timed_out / out_of_memory: the sweep stopped early
    return BenchResult("collectives", rows, payload["env"], summary, COLUMNS, HEADERS)


def run_collectives(op: str = "all_reduce", n_ranks: int = 2, sizes="1K,64K,1M,16M", *, iters: int | None = None,
                    warmup: int = 3, repeats: int = 5, dtype: str = "fp32", backend: str = "auto",
                    device: str = "cpu", threads: int | None = 1, timeout_s: float = 120, bare_check: bool = True,
                    out: str | None = None) -> BenchResult:
    """Spawn `n_ranks` local ranks, benchmark `op` over `sizes` (e.g. '1K,64K,1M'), return the table.

    gloo on CPU, NCCL on CUDA (backend='auto'); each rank uses `threads` CPU threads. Rows carry
    bare_busbw_gbps and harness_ratio (ours / a bare loop; goal >= 0.9) when `bare_check`.
    ValueError for bad input or an op the backend lacks; TimeoutError after `timeout_s`. A sweep that
    runs out of time or memory stops early: rows so far, summary 'timed_out' or 'out_of_memory'
    ("out of memory at size N bytes"); out of memory at the first size: ValueError with that line.
    """
    from gpukit.errors import require_positive_int

    n_ranks = require_positive_int("n_ranks", n_ranks)
    iters, warmup, repeats, timeout_s, threads = _check_counts(iters, warmup, repeats, timeout_s, threads)
    device = resolve_device(device)
    _check(op, backend, device, dtype)
    backend = _pick_backend(backend, device)
    if n_ranks < 2:  # one rank moves no data: bus bandwidth is 0 and the harness ratio 0/0
        raise ValueError(f"n_ranks must be >= 2 (a collective over one rank moves no data), got {n_ranks}")
    if device == "cuda":
        import torch

        if n_ranks > torch.cuda.device_count():
            raise ValueError(f"n_ranks must be <= the {torch.cuda.device_count()} CUDA devices here, got {n_ranks}")
    cfg = {"op": op, "sizes": parse_sizes(sizes), "iters": iters, "warmup": warmup, "repeats": repeats,
           "dtype": dtype, "backend": backend, "device": device, "threads": threads, "timeout_s": timeout_s,
           "bare_check": bare_check, "launcher": "spawn"}
    result = _result(spawn_ranks(cfg, n_ranks, timeout_s), op)
    if not result.rows and result.summary.get("out_of_memory"):
        raise ValueError(result.summary["out_of_memory"])
    if out:
        result.write(out)
    return result


def fit_and_holdout(rows, *, holdout: str = "alternate", op: str | None = None, n_ranks: int | None = None) -> dict:
    """Fit alpha/beta (gpukit.comm.fit_alpha_beta) on part of a sweep, predict the other part.

    holdout='alternate' predicts sizes 1, 3, 5, ... (never the largest) from a fit on the others
    (interpolation); 'largest' fits all but the two largest sizes and predicts those (extrapolation). Errors are (predicted - measured) /
    measured. Goal on loopback gloo: every |error| <= 25%.
    """
    from gpukit.comm import fit_alpha_beta

    rows = sorted((dict(r) for r in (rows.rows if hasattr(rows, "rows") else rows)), key=lambda r: r["size_bytes"])
    if len(rows) < 4:
        raise ValueError(f"rows must hold at least 4 sizes to fit and hold out, got {len(rows)}")
    op = op or rows[0]["op"]
    n_ranks = n_ranks or int(rows[0]["world_size"])
    if holdout == "alternate":  # interpolation: the smallest and the largest size stay in the fit
        test_idx = set(range(1, len(rows) - 1, 2))
        train = [r for i, r in enumerate(rows) if i not in test_idx]
        test = [r for i, r in enumerate(rows) if i in test_idx]
    elif holdout == "largest":
        train, test = rows[:-2], rows[-2:]
    else:
        raise ValueError(f"holdout must be one of alternate, largest; got {holdout!r}")
    fit = fit_alpha_beta([r["size_bytes"] for r in train], [r["time_us"] / 1e6 for r in train], op, n_ranks)
    errors = []
    for r in test:
        pred_us = fit.predict(r["size_bytes"]) * 1e6
        errors.append({"size_bytes": r["size_bytes"], "measured_us": r["time_us"], "predicted_us": pred_us,
                       "error": (pred_us - r["time_us"]) / r["time_us"]})
    worst = max(abs(e["error"]) for e in errors)
    return {"op": op, "n_ranks": n_ranks, "holdout": holdout, "alpha_us": fit.alpha_us, "beta_gbps": fit.beta_gbps,
            "fit_r2": fit.r2, "fit_note": fit.note, "fit_sizes_bytes": [r["size_bytes"] for r in train],
            "holdout_errors": errors, "holdout_error_max": worst,
            "holdout_error_median": percentile([abs(e["error"]) for e in errors], 50), "within_25pct": worst <= 0.25}


# ---------------------------------------------------------------- command line (torchrun or spawn)


def nccl_table(result: BenchResult) -> str:
    """The nccl-tests-style table text (header lines start with '#')."""
    e = result.env
    head = (f"# gpukit collectives: op {result.summary.get('op')}, {e.get('world_size')} ranks, backend "
            f"{e.get('backend')}, device {e.get('device')} ({e.get('label')}), torch {e.get('torch')}")
    return head + "\n" + result.to_text()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m gpukit.bench.collectives",
                                description="nccl-tests-style collective benchmark (torchrun or local spawn)")
    add_arguments(p)
    p.add_argument("--out", help="rank 0 writes the result here (.json, or .csv)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared with `gpukit bench collectives`."""
    p.add_argument("--op", default="all_reduce", help=f"one of {', '.join(OPS)}")
    p.add_argument("--sizes", default="1K,64K,1M,16M", help="bytes, K/M/G binary (nccl-tests), comma-separated")
    p.add_argument("--iters", type=positive_int_arg, default=None, help="calls per timed repeat (default: ~50 ms per repeat)")
    p.add_argument("--warmup", type=nonnegative_int_arg, default=3, help="untimed calls per size")
    p.add_argument("--repeats", type=positive_int_arg, default=5, help="timed repeats; the median is reported")
    p.add_argument("--dtype", default="fp32", help=f"one of {', '.join(DTYPES)}")
    p.add_argument("--backend", default="auto", help="auto (nccl on cuda, gloo on cpu), gloo, nccl")
    p.add_argument("--device", default="auto", help="cpu, cuda, auto")
    p.add_argument("--threads", type=positive_int_arg, default=None, help="torch threads per rank (torchrun sets 1)")
    p.add_argument("--timeout", type=timeout_arg, default=300, help="seconds before the run is abandoned")
    p.add_argument("--ranks", type=positive_int_arg, default=2, help="local ranks to spawn when not under torchrun")
    p.add_argument("--no-bare-check", dest="bare_check", action="store_false",
                   help="skip the bare-loop comparison (harness overhead check)")


def _torchrun_main(args) -> int:
    """One rank under torchrun: env:// rendezvous, measure, rank 0 prints and writes."""
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    _check_counts(args.iters, args.warmup, args.repeats, args.timeout, args.threads)
    device = resolve_device(args.device)
    _check(args.op, args.backend, device, args.dtype)
    backend = _pick_backend(args.backend, device)
    cfg = {"op": args.op, "sizes": parse_sizes(args.sizes), "iters": args.iters, "warmup": args.warmup,
           "repeats": args.repeats, "dtype": args.dtype, "backend": backend, "device": device,
           "threads": args.threads, "timeout_s": args.timeout, "bare_check": args.bare_check, "launcher": "torchrun"}
    from gpukit.bench.supervise import die_with_parent

    die_with_parent()  # a rank must not outlive its torchrun agent (netlab: even a SIGKILLed owner)
    _setup_rank(cfg, local_rank)
    try:
        dist.init_process_group(backend, init_method="env://", timeout=timedelta(seconds=args.timeout))
        payload = _worker_body(cfg)
        dist.barrier()
        if dist.get_rank() == 0:
            _report(_result(payload, args.op), args)
    except UnsupportedOp as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    return 0


def _report(result: BenchResult, args) -> None:
    if args.out:
        if str(args.out).endswith(".csv"):
            result.write(args.out)
        else:
            write_json(result.to_json_dict(), args.out)
    print(json.dumps(result.to_json_dict(), indent=2) if args.json else nccl_table(result), flush=True)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.out is not None:  # checked before the sweep, not after it
            from gpukit.bench.results import check_writable

            check_writable(args.out, "--out")
        if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
            if int(os.environ["WORLD_SIZE"]) < 2:  # before the rendezvous: one rank moves no data
                raise ValueError(f"WORLD_SIZE must be >= 2 (a collective over one rank moves no data), "
                                 f"got {os.environ['WORLD_SIZE']}")
            return _torchrun_main(args)
        result = run_collectives(args.op, args.ranks, args.sizes, iters=args.iters, warmup=args.warmup,
                                 repeats=args.repeats, dtype=args.dtype, backend=args.backend, device=args.device,
                                 threads=args.threads or 1, timeout_s=args.timeout, bare_check=args.bare_check)
        _report(result, args)
        return 0
    except (ValueError, TimeoutError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
