"""Collective benchmarks in the nccl-tests shape: size, count, type, time, algbw, busbw.

Two ways to run the same rank body, `collective_body` (both through gpukit.bench.launch):
- torchrun (one or many nodes; reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT):
  `torchrun --nproc-per-node 2 -m gpukit.bench.collectives --op all_reduce --sizes 1K,1M --out r.json`
  (rank 0 prints the table and writes {"env": ..., "rows": [...]}; docs/CONTRACTS.md).
- From Python or a notebook: `run_collectives("all_reduce", n_ranks=2, sizes="1K,1M")` spawns the
  ranks (torch.multiprocessing, spawn) with a timeout; without torchrun's environment,
  `python -m gpukit.bench.collectives --ranks 2 ...` does the same.

What every rank measures (method, algbw/busbw, count, harness_ratio) is gpukit.bench.collectives_measure
(re-exported here: OPS, size_and_count, busbw_gbps, measure, bare_loop_busbw, fault_hook, ...). This
module validates the arguments, hands `collective_body` to the launcher (launch.spawn, or
launch.torchrun_rank under torchrun), builds the result and its nccl-tests table, fits alpha/beta to a
sweep (`fit_and_holdout`) and is the command line. The seed article's loop (gpukit.bench.article) is
re-exported here. Bandwidths in decimal GB/s, times in us.
Used in: notebooks/04_* (collectives), `gpukit bench collectives`, `gpukit calibrate`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from gpukit.bench.article import (
    article_latency_snippet,  # noqa: F401 - re-exported: the notebooks' entry point
)
from gpukit.bench.collectives_measure import (  # noqa: F401 - re-exported: the rank side's public API
    DTYPES,
    INTERLEAVE_BYTES,
    OPS,
    SPLIT_OPS,
    UnsupportedOp,
    bare_loop_busbw,
    busbw_gbps,
    fault_hook,
    measure,
    size_and_count,
)
from gpukit.bench.ranks import check_gpu_count, pick_backend, rank_env
from gpukit.bench.results import BenchResult, write_json
from gpukit.bench.timing import percentile, progress_line, resolve_device
from gpukit.errors import nonnegative_int_arg, positive_int_arg, timeout_arg
from gpukit.timing_stats import spread_warning
from gpukit.units import (  # noqa: F401 (parse_size: the worker's public API)
    parse_bytes,
    parse_size,
    parse_sizes,
)

COLUMNS = ("size_bytes", "count", "dtype", "time_us", "algbw_gbps", "busbw_gbps")
HEADERS = ("size(B)", "count(elements)", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)")


# ---------------------------------------------------------------- argument checks


def _check_op(op: str, dtype: str) -> None:
    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}; got {op!r}")
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")


def _check_counts(iters, warmup, repeats, timeout_s, threads):
    """Validated (iters, warmup, repeats, timeout_s, threads): iters/threads None or >= 1, warmup >= 0,
    repeats >= 1, timeout_s finite > 0 (0 repeats or iters would divide by zero inside the ranks)."""
    from gpukit.errors import require_positive_int, require_timeout

    return (
        None if iters is None else require_positive_int("iters", iters),
        require_positive_int("warmup", warmup, allow_zero=True),
        require_positive_int("repeats", repeats),
        require_timeout("timeout_s", timeout_s),
        None if threads is None else require_positive_int("threads", threads),
    )


# ---------------------------------------------------------------- the rank body and the launchers


def collective_body(cfg: dict) -> dict:
    """One rank's sweep inside an initialized group (cfg: op, sizes, iters, warmup, repeats, dtype,
    device, backend, bare_check, timeout_s, launcher); returns the payload rank 0 reports."""
    env, notes = rank_env(cfg), {}
    rows = measure(
        cfg["op"],
        cfg["sizes"],
        iters=cfg.get("iters"),
        warmup=cfg["warmup"],
        repeats=cfg["repeats"],
        dtype=cfg["dtype"],
        device=cfg["device"],
        backend=cfg["backend"],
        bare_check=cfg.get("bare_check", True),
        deadline_s=cfg.get("timeout_s"),
        notes=notes,
    )
    return {"env": env, "rows": rows, "notes": notes}


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
    warn = spread_warning([(f"{r['size_bytes']} B", r["p10_us"], r["p90_us"]) for r in rows], what="size")
    summary["spread_warning"] = warn or None  # always there (stable JSON keys): null when the repeats agree
    return BenchResult("collectives", rows, payload["env"], summary, COLUMNS, HEADERS)


def run_collectives(
    op: str = "all_reduce",
    n_ranks: int = 2,
    sizes="1K,64K,1M,16M",
    *,
    iters: int | None = None,
    warmup: int = 3,
    repeats: int = 5,
    dtype: str = "fp32",
    backend: str = "auto",
    device: str = "cpu",
    threads: int | None = 1,
    timeout_s: float = 120,
    bare_check: bool = True,
    out: str | None = None,
) -> BenchResult:
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
    _check_op(op, dtype)
    backend = pick_backend(backend, device)
    if n_ranks < 2:  # one rank moves no data: bus bandwidth is 0 and the harness ratio 0/0
        raise ValueError(f"n_ranks must be >= 2 (a collective over one rank moves no data), got {n_ranks}")
    check_gpu_count(n_ranks, device)
    cfg = {
        "op": op,
        "sizes": parse_sizes(sizes),
        "iters": iters,
        "warmup": warmup,
        "repeats": repeats,
        "dtype": dtype,
        "backend": backend,
        "device": device,
        "threads": threads,
        "timeout_s": timeout_s,
        "bare_check": bare_check,
        "launcher": "spawn",
    }
    from gpukit.bench.launch import spawn

    progress_line(
        f"bench collectives: {op} over {len(cfg['sizes'])} sizes on {n_ranks} {backend} ranks "
        f"(up to {timeout_s:g} s) ..."
    )
    result = _result(spawn(collective_body, cfg, n_ranks, timeout_s), op)
    if not result.rows and result.summary.get("out_of_memory"):
        raise ValueError(result.summary["out_of_memory"])
    if out:
        result.write(out)
    return result


def fit_and_holdout(
    rows, *, holdout: str = "alternate", op: str | None = None, n_ranks: int | None = None
) -> dict:
    """Fit alpha/beta (gpukit.comm.fit_alpha_beta) on part of a sweep, predict the other part.

    holdout='alternate' predicts sizes 1, 3, 5, ... (never the largest) from a fit on the others
    (interpolation); 'largest' fits all but the two largest sizes and predicts those (extrapolation). Errors are (predicted - measured) /
    measured. Goal on loopback gloo: every |error| <= 25%.
    """
    from gpukit.comm import fit_alpha_beta

    rows = sorted(
        (dict(r) for r in (rows.rows if hasattr(rows, "rows") else rows)), key=lambda r: r["size_bytes"]
    )
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
        errors.append(
            {
                "size_bytes": r["size_bytes"],
                "measured_us": r["time_us"],
                "predicted_us": pred_us,
                "error": (pred_us - r["time_us"]) / r["time_us"],
            }
        )
    worst = max(abs(e["error"]) for e in errors)
    return {
        "op": op,
        "n_ranks": n_ranks,
        "holdout": holdout,
        "alpha_us": fit.alpha_us,
        "beta_gbps": fit.beta_gbps,
        "fit_r2": fit.r2,
        "fit_note": fit.note,
        "fit_sizes_bytes": [r["size_bytes"] for r in train],
        "holdout_errors": errors,
        "holdout_error_max": worst,
        "holdout_error_median": percentile([abs(e["error"]) for e in errors], 50),
        "within_25pct": worst <= 0.25,
    }


# ---------------------------------------------------------------- command line (torchrun or spawn)


def nccl_table(result: BenchResult) -> str:
    """The nccl-tests-style table text (header lines start with '#')."""
    e = result.env
    head = (
        f"# gpukit collectives: op {result.summary.get('op')}, {e.get('world_size')} ranks, backend "
        f"{e.get('backend')}, device {e.get('device')} ({e.get('label')}), torch {e.get('torch')}"
    )
    return head + "\n" + result.to_text()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m gpukit.bench.collectives",
        description="nccl-tests-style collective benchmark (torchrun or local spawn)",
    )
    add_arguments(p)
    p.add_argument("--out", help="rank 0 writes the result here (.json, or .csv)")
    p.add_argument("--json", action="store_true", help="print JSON instead of the table")
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared with `gpukit bench collectives`."""
    p.add_argument("--op", default="all_reduce", help=f"one of {', '.join(OPS)}")
    p.add_argument(
        "--sizes", default="1K,64K,1M,16M", help="bytes, K/M/G binary (nccl-tests), comma-separated"
    )
    p.add_argument(
        "--iters",
        type=positive_int_arg,
        default=None,
        help="calls per timed repeat (default: ~50 ms per repeat)",
    )
    p.add_argument("--warmup", type=nonnegative_int_arg, default=3, help="untimed calls per size")
    p.add_argument(
        "--repeats", type=positive_int_arg, default=5, help="timed repeats; the median is reported"
    )
    p.add_argument("--dtype", default="fp32", help=f"one of {', '.join(DTYPES)}")
    p.add_argument("--backend", default="auto", help="auto (nccl on cuda, gloo on cpu), gloo, nccl")
    p.add_argument("--device", default="auto", help="cpu, cuda, auto")
    p.add_argument(
        "--threads", type=positive_int_arg, default=None, help="torch threads per rank (torchrun sets 1)"
    )
    p.add_argument("--timeout", type=timeout_arg, default=300, help="seconds before the run is abandoned")
    p.add_argument(
        "--ranks", type=positive_int_arg, default=2, help="local ranks to spawn when not under torchrun"
    )
    p.add_argument(
        "--no-bare-check",
        dest="bare_check",
        action="store_false",
        help="skip the bare-loop comparison (harness overhead check)",
    )


def _torchrun_main(args) -> int:
    """One rank under torchrun (launch.torchrun_rank): env:// rendezvous, measure, rank 0 prints and writes."""
    from gpukit.bench.launch import torchrun_rank

    _check_counts(args.iters, args.warmup, args.repeats, args.timeout, args.threads)
    device = resolve_device(args.device)
    _check_op(args.op, args.dtype)
    backend = pick_backend(args.backend, device)
    cfg = {
        "op": args.op,
        "sizes": parse_sizes(args.sizes),
        "iters": args.iters,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "dtype": args.dtype,
        "backend": backend,
        "device": device,
        "threads": args.threads,
        "timeout_s": args.timeout,
        "bare_check": args.bare_check,
        "launcher": "torchrun",
    }
    try:
        torchrun_rank(cfg, collective_body, lambda payload: _report(_result(payload, args.op), args))
    except UnsupportedOp as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
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
                raise ValueError(
                    f"WORLD_SIZE must be >= 2 (a collective over one rank moves no data), "
                    f"got {os.environ['WORLD_SIZE']}"
                )
            return _torchrun_main(args)
        result = run_collectives(
            args.op,
            args.ranks,
            args.sizes,
            iters=args.iters,
            warmup=args.warmup,
            repeats=args.repeats,
            dtype=args.dtype,
            backend=args.backend,
            device=args.device,
            threads=args.threads or 1,
            timeout_s=args.timeout,
            bare_check=args.bare_check,
        )
        _report(result, args)
        return 0
    except (ValueError, TimeoutError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
