"""Start local ranks with torch.multiprocessing (spawn), wait with a timeout, leave nothing behind.

The launcher holds a TCPStore server on a port the OS picks (port 0) for the whole run; ranks
connect to it as clients. Nothing can take the port between choosing and binding it, so two runs
at the same time never collide (the bind-0-then-release alternative, `free_port`, is racy and is
only the fallback, retried on EADDRINUSE). Ranks report ("ok" | "error", rank, payload) on a
queue; on error, death or timeout the others are terminated, then killed, and the store and queue
are closed. The rank entry point must live in an importable module (spawn pickles it by name:
functions defined in a notebook cannot be spawned).
"""

from __future__ import annotations

import queue as _queue
import socket
import time
from datetime import timedelta

# a rank's error line starting with one of these is bad input found inside the rank: ValueError
_INPUT_ERRORS = ("UnsupportedOp: ", "ValueError: ")


def free_port() -> int:
    """A port the OS calls free now (bind to port 0, read it, release). Racy: prefer `master_store`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def master_store(timeout_s: float):
    """A TCPStore server on 127.0.0.1 and an OS-chosen port (`.port`), held by the caller."""
    import torch.distributed as dist

    kw = dict(world_size=None, is_master=True, wait_for_workers=False, timeout=timedelta(seconds=timeout_s))
    try:
        return dist.TCPStore("127.0.0.1", 0, **kw)
    except (RuntimeError, ValueError):
        last = None
        for _ in range(5):
            try:
                return dist.TCPStore("127.0.0.1", free_port(), **kw)
            except RuntimeError as e:  # EADDRINUSE: taken between bind and listen; try another
                if "in use" not in str(e).lower() and "EADDRINUSE" not in str(e):
                    raise
                last = e
        raise RuntimeError(f"could not get a free port for the process-group store: {last}") from last


def spawn(entry, cfg: dict, n_ranks: int, timeout_s: float, startup_s: float | None = None):
    """Run entry(rank, n_ranks, port, cfg, queue) on `n_ranks` spawned processes; rank 0's payload.

    Waits at most `timeout_s` plus `startup_s` (default 30 s + 5 s per rank: python and torch are
    imported in every rank), then raises TimeoutError. A rank's ValueError/UnsupportedOp becomes a
    ValueError here, other failures a RuntimeError naming the rank. In every case the ranks are
    terminated (then killed) and joined, and the store and the queue are closed.
    """
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    store = master_store(timeout_s)
    q = ctx.Queue()
    procs = [ctx.Process(target=entry, args=(r, n_ranks, store.port, cfg, q), daemon=True) for r in range(n_ranks)]
    deadline = time.monotonic() + timeout_s + (30 + 5 * n_ranks if startup_s is None else startup_s)
    payload, errors, done = None, [], set()
    try:
        for p in procs:
            p.start()
        while len(done) < n_ranks and not errors:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"benchmark timed out after {timeout_s:g} s ({len(done)} of {n_ranks} "
                                   "ranks finished; raise --timeout)")
            try:
                status, rank, data = q.get(timeout=min(1.0, left))
            except _queue.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead:
                    errors.append(f"rank {procs.index(dead[0])} died with exit code {dead[0].exitcode} (from a "
                                  "script? call it under `if __name__ == '__main__':`, spawn re-imports it)")
                continue
            done.add(rank)
            if status == "error":
                errors.append(f"rank {rank}: {data}")
            elif rank == 0:
                payload = data
        if errors:
            for prefix in _INPUT_ERRORS:
                if prefix in errors[0]:
                    raise ValueError(errors[0].split(prefix, 1)[1])
            raise RuntimeError(f"benchmark worker failed: {errors[0]}")
        for p in procs:
            p.join(timeout=max(1.0, min(10.0, deadline - time.monotonic())))
        return payload
    finally:
        started = [p for p in procs if p.pid is not None]
        for p in started:
            if p.is_alive():
                p.terminate()
        for p in started:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        q.close()
        q.join_thread()
        del store
