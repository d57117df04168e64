"""Start local ranks with torch.multiprocessing (spawn), wait with a timeout, leave nothing behind.

The launcher holds a TCPStore server on a port the OS picks (port 0) for the whole run; ranks
connect to it as clients. Nothing can take the port between choosing and binding it, so two runs
at the same time never collide (the bind-0-then-release alternative, `free_port`, is racy and is
only the fallback, retried on EADDRINUSE). Ranks report ("ok" | "error", rank, payload) on a
queue; on error, death or timeout the others are terminated, then killed, and the store and queue
are closed. The rank entry point must live in an importable module (spawn pickles it by name:
functions defined in a notebook cannot be spawned).

Signals (when called from the main thread): the ranks start with SIGINT ignored, so Ctrl-C reaches
only the launcher, which stops them and raises KeyboardInterrupt (the CLI: "interrupted", exit 130).
SIGTERM/SIGHUP stop the ranks the same way, print one line, then take their usual course (exit
status 128 + signal, as netlab does). Each rank also dies with the launcher (PR_SET_PDEATHSIG on
Linux), so even a SIGKILLed launcher leaves no rank behind.
"""

from __future__ import annotations

import gc
import os
import queue as _queue
import signal
import socket
import sys
import threading
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


class _Terminated(BaseException):
    """SIGTERM/SIGHUP arrived while ranks were running (raised by the handler, after cleanup re-sent)."""


def die_with_parent() -> None:
    """In a rank: ask Linux to SIGKILL this process when its launcher dies (prctl PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the launcher's cleanup is all there is
        pass


def _install_term_handlers() -> dict:
    """SIGTERM/SIGHUP -> _Terminated (once), main thread only; {} elsewhere. Returns the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    fired = []

    def on_signal(signum, frame):
        if not fired:  # a second signal during cleanup must not cut the cleanup short
            fired.append(signum)
            raise _Terminated(signum)
    old = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        prev = signal.getsignal(sig)
        if prev is not signal.SIG_IGN and prev is not None:  # nohup'ed: leave it ignored
            old[sig] = signal.signal(sig, on_signal)
    return old


def _start_ranks(procs) -> None:
    """Start the ranks with SIGINT ignored (inherited through exec): Ctrl-C in a terminal signals the
    whole process group, and the launcher, not each rank, decides how they stop. They also start with
    TORCH_CPP_LOG_LEVEL=FATAL unless set: a failing rank reports one line through the queue, and c10d's
    own error log (C++ stack frames) would bury it (set TORCH_CPP_LOG_LEVEL=INFO to see it)."""
    main = threading.current_thread() is threading.main_thread()
    prev = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    set_log = "TORCH_CPP_LOG_LEVEL" not in os.environ
    if set_log:  # spawn copies os.environ when a process starts
        os.environ["TORCH_CPP_LOG_LEVEL"] = "FATAL"
    try:
        for p in procs:
            p.start()
    finally:
        if set_log:
            os.environ.pop("TORCH_CPP_LOG_LEVEL", None)
        if main and prev is not None:  # None: a handler not set from Python, which cannot be restored
            signal.signal(signal.SIGINT, prev)


def _resend(signum: int, old: dict) -> None:
    """After cleanup: let the signal take the course it would have taken without us."""
    prev = old.get(signum, signal.SIG_DFL)
    print(f"error: {signal.Signals(signum).name} received: benchmark ranks stopped", file=sys.stderr, flush=True)
    if callable(prev):
        prev(signum, None)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(1)  # the default action ends the process; this is not reached


def spawn(entry, cfg: dict, n_ranks: int, timeout_s: float, startup_s: float | None = None):
    """Run entry(rank, n_ranks, port, cfg, queue) on `n_ranks` spawned processes; rank 0's payload.

    Waits at most `timeout_s` plus `startup_s` (default 30 s + 5 s per rank: python and torch are
    imported in every rank), then raises TimeoutError. A rank's ValueError/UnsupportedOp becomes a
    ValueError here, a rank's timeout (gloo "Timed out") a TimeoutError, other failures a
    RuntimeError naming the rank (a rank that died first). In every case the ranks are terminated
    (then killed) and joined, and the store and the queue are closed; signals: module docstring.
    """
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    # the server's own client connects to it at once; a tiny --timeout must not make that fail
    store = master_store(max(timeout_s, 30.0))
    q = ctx.Queue()
    procs = [ctx.Process(target=entry, args=(r, n_ranks, store.port, cfg, q), daemon=True) for r in range(n_ranks)]
    deadline = time.monotonic() + timeout_s + (30 + 5 * n_ranks if startup_s is None else startup_s)
    payload, errors, done = None, [], set()
    old_handlers, terminated = _install_term_handlers(), None
    try:
        _start_ranks(procs)
        while len(done) < n_ranks and not errors:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"benchmark timed out after {timeout_s:g} s ({len(done)} of {n_ranks} "
                                   "ranks finished; raise --timeout)")
            try:
                status, rank, data = q.get(timeout=min(1.0, left))
            except _queue.Empty:
                errors += _deaths(procs)
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
            time.sleep(0.2)  # a peer's death is what the others report as "connection closed": name it
            died = _deaths(procs)
            first = died[0] if died else errors[0]
            if "timed out" in first.lower() or "timeout" in first.lower():
                raise TimeoutError(f"benchmark timed out: {first} (raise --timeout)")
            raise RuntimeError(f"benchmark worker failed: {first}")
        for p in procs:
            p.join(timeout=max(1.0, min(10.0, deadline - time.monotonic())))
        return payload
    except _Terminated as e:
        terminated = e.args[0]
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
        for sig, prev in old_handlers.items():
            signal.signal(sig, prev)
    # reached only after _Terminated: the ranks are gone. Drop the queue now, or the resource tracker
    # warns about "leaked semaphores" once this process dies by the signal.
    procs = started = q = None
    gc.collect()
    _resend(terminated, old_handlers)


def _deaths(procs) -> list[str]:
    """'rank R died with exit code C' for each rank that exited non-zero without reporting."""
    out = []
    for r, p in enumerate(procs):
        if p.exitcode not in (None, 0):
            hint = (" (from a script? call it under `if __name__ == '__main__':`, spawn re-imports it)"
                    if p.exitcode == 1 else "")
            out.append(f"rank {r} died with exit code {p.exitcode}{hint}")
    return out
