"""The seed article's all-reduce latency loop, run as written, next to the honest measurement.

shared/seeds/000_*.txt times `dist.all_reduce(torch.ones(1).cuda())` between two CUDA events, ten
times, no warm-up, no barrier, and prints the mean. `article_latency_snippet` runs exactly that
(the host clock on CPU, where there are no events) and, in the same ranks right after, our method:
warm-up, barrier, many calls between two timestamps, median over repeats: `article_body` is that rank
body, handed to the spawn launcher (gpukit.bench.launch).
Used in: notebooks/04_* ("What the article claims"), `gpukit bench article`, gpukit.bench.collectives
(re-exports article_latency_snippet), tests/test_collectives.py.
"""

from __future__ import annotations

import time

WHAT_IT_GETS_WRONG = (
    "no warm-up: the first call pays for connection/communicator set-up",
    "no barrier: a rank that arrives early measures its wait for the others (rank skew)",
    "one tiny op per timing: launch and timer overhead dominate the number",
    "mean of 10: one outlier moves the average; the median over many repeats does not",
)


def article_snippet(n_calls: int = 10, *, device: str = "cpu", skew_s: float = 0.0) -> list[float]:
    """The article's loop on this rank (inside an initialized group); per-call latencies in us.

    No warm-up, no barrier; each call timed alone: CUDA events around
    `all_reduce(torch.ones(1).cuda())` as printed in the article, the host clock on CPU. `skew_s`
    delays ranks > 0 first, like a slow data loader, to show that the number then measures skew.
    """
    import torch
    import torch.distributed as dist

    if skew_s and dist.get_rank() > 0:
        time.sleep(skew_s)
    lat_us = []
    for _ in range(n_calls):
        if device == "cuda":
            t = torch.cuda.Event(enable_timing=True)
            t.record()
            dist.all_reduce(torch.ones(1).cuda(), op=dist.ReduceOp.SUM)
            t2 = torch.cuda.Event(enable_timing=True)
            t2.record()
            t2.synchronize()
            lat_us.append(t.elapsed_time(t2) * 1e3)
        else:
            t0 = time.perf_counter()
            dist.all_reduce(torch.ones(1), op=dist.ReduceOp.SUM)
            lat_us.append((time.perf_counter() - t0) * 1e6)
    return lat_us


def article_body(cfg: dict) -> dict:
    """One rank inside an initialized group: the article's loop (cfg n_calls, skew_s), every rank's calls
    gathered, then our all_reduce measurement of 4 bytes (cfg warmup, repeats, iters); rank 0's payload."""
    import torch.distributed as dist

    from gpukit.bench.collectives_measure import measure
    from gpukit.bench.ranks import rank_env

    device = cfg["device"]
    env = rank_env(cfg)
    calls = article_snippet(cfg["n_calls"], device=device, skew_s=cfg.get("skew_s", 0.0))
    per_rank = [None] * dist.get_world_size()
    dist.all_gather_object(per_rank, calls)
    rows = measure(
        "all_reduce",
        [4],
        warmup=cfg.get("warmup", 20),
        repeats=cfg.get("repeats", 11),
        iters=cfg.get("iters"),
        device=device,
        backend=cfg["backend"],
        bare_check=False,
    )
    return {"env": env, "article_calls_us": per_rank, "rows": rows}


def article_latency_snippet(
    n_ranks: int = 2,
    *,
    n_calls: int = 10,
    device: str = "cpu",
    backend: str = "auto",
    skew_ms: float = 0.0,
    timeout_s: float = 60,
) -> dict:
    """The article's number and the honest one (us), from the same ranks in the same run.

    Article: `n_calls` single calls of a 1-element all_reduce, no warm-up, no barrier, mean (rank 0
    prints it). Ours: 20 warm-up calls, barrier, 11 repeats of many calls between two timestamps,
    median. `skew_ms` makes ranks > 0 arrive late. Also returns every rank's per-call list and the
    list of what the article's method gets wrong.
    """
    from gpukit.bench.launch import spawn
    from gpukit.bench.ranks import check_gpu_count, pick_backend
    from gpukit.bench.timing import resolve_device
    from gpukit.errors import require_positive, require_positive_int, require_timeout

    n_ranks = require_positive_int("n_ranks", n_ranks)
    n_calls = require_positive_int("n_calls", n_calls)
    skew_ms = require_positive("skew_ms", skew_ms, allow_zero=True)
    timeout_s = require_timeout("timeout_s", timeout_s)
    # A skew beyond the timeout is a legitimate fault to inject (the run then times out); one beyond a
    # week is a typo that overflowed time.sleep inside a rank (1e300 ms)
    from gpukit.errors import MAX_TIMEOUT_S

    if skew_ms / 1e3 > MAX_TIMEOUT_S:
        raise ValueError(f"skew_ms must be at most {MAX_TIMEOUT_S * 1e3:g} ms (one week), got {skew_ms:g}")
    device = resolve_device(device)
    backend = pick_backend(backend, device)
    check_gpu_count(n_ranks, device)
    cfg = {
        "n_calls": n_calls,
        "skew_s": float(skew_ms) / 1e3,
        "backend": backend,
        "device": device,
        "threads": 1,
        "timeout_s": timeout_s,
        "op": "all_reduce",
        "launcher": "spawn",
    }
    payload = spawn(article_body, cfg, n_ranks, timeout_s)
    calls = payload["article_calls_us"]
    row = payload["rows"][0]
    r0 = calls[0]
    mean = sum(r0) / len(r0)
    return {
        "article_mean_us": mean,  # what the article's print shows on rank 0
        "article_first_call_us": r0[0],
        "article_mean_without_first_us": sum(r0[1:]) / max(1, len(r0) - 1),
        "article_mean_us_per_rank": [sum(c) / len(c) for c in calls],
        "article_calls_us": calls,
        "median_us": row["time_us"],
        "p10_us": row["p10_us"],
        "p90_us": row["p90_us"],
        "overstatement": mean / row["time_us"],
        "n_ranks": n_ranks,
        "device": device,
        "backend": backend,
        "skew_ms": skew_ms,
        "what_it_gets_wrong": list(WHAT_IT_GETS_WRONG),
        "env": payload["env"],
    }
