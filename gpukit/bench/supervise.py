"""One process supervisor and one "clean up, then re-raise the signal" routine.

Everything in gpukit that starts processes uses these two: gpukit.bench.launch (spawned local ranks)
and gpukit.bench.netlab (one command per network namespace).

- `stop(procs, grace_s)`: SIGTERM every live process (a `subprocess.Popen`, a
  `multiprocessing.Process` or a bare pid; with `group=True` its whole process group), wait up to
  `grace_s` for all of them together, then SIGKILL whatever is left, and reap it.
- `die_with_parent()`: in a child, ask Linux to SIGKILL it when its parent dies (PR_SET_PDEATHSIG),
  so even a SIGKILLed supervisor leaves no process behind.
- `signals_reraised(what)`: a context manager. Inside it SIGTERM and SIGHUP raise `Terminated`, so the
  block unwinds like a KeyboardInterrupt (every `finally`, `with` exit and temporary folder cleans
  up); on the way out it prints one line ("error: SIGTERM received: <what>"), restores the previous
  handlers and re-delivers the signal to the previous handler, so the process ends as the signal
  says (exit status 128 + signal). SIGINT needs nothing: Python already raises KeyboardInterrupt.
  A second signal during the cleanup is ignored rather than cutting it short. Main thread only
  (elsewhere it does nothing); a signal that was ignored (nohup) stays ignored.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from contextlib import contextmanager

TERM_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


# ---------------------------------------------------------------- processes


def pid_alive(pid: int) -> bool:
    """True if a process with this pid exists (kill(pid, 0)); a zombie counts as alive."""
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _running(p) -> bool:
    if isinstance(p, int):
        return pid_alive(p)
    if hasattr(p, "poll"):  # subprocess.Popen
        return p.poll() is None
    return p.pid is not None and p.is_alive()  # multiprocessing.Process (started)


def _send(p, sig: int, group: bool) -> None:
    pid = p if isinstance(p, int) else p.pid
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(p, timeout_s: float) -> None:
    if isinstance(p, int) or p.pid is None:  # a bare pid is not our child; a Process never started
        return
    if hasattr(p, "poll"):
        try:
            p.wait(timeout=max(timeout_s, 0.0))
        except Exception:  # noqa: BLE001 - TimeoutExpired: still running, decided by the caller
            pass
    else:
        p.join(timeout=max(timeout_s, 0.0))


def stop(procs, grace_s: float = 3.0, *, group: bool = False) -> None:
    """SIGTERM every live process of `procs` (its process group when `group`), wait up to `grace_s`
    for all of them, then SIGKILL what is left and reap it. Processes that already ended are reaped."""
    procs = list(procs)
    live = [p for p in procs if _running(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in live:
            _send(p, sig, group)
        deadline = time.monotonic() + grace_s
        while live and time.monotonic() < deadline:
            for p in live:
                _reap(p, min(0.05, deadline - time.monotonic()))
            live = [p for p in live if _running(p)]
            if live and all(isinstance(p, int) for p in live):
                time.sleep(0.05)
        if not live:
            break
    for p in procs:
        _reap(p, 1.0)


def die_with_parent() -> None:
    """In a child: ask Linux to SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG),
    and exit at once if the parent is already gone (this process was handed to init before it got
    here). Kept across exec (not for setuid programs); a no-op where prctl does not exist."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the supervisor's cleanup is all there is
        return
    if os.getppid() == 1:  # the parent died before the request: we were already handed to init
        os._exit(1)


# ---------------------------------------------------------------- signals


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived inside `signals_reraised` (`.signum`)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextmanager
def signals_reraised(what: str, signals=TERM_SIGNALS):
    """Inside the block a signal of `signals` raises Terminated; after the block has unwound (its
    cleanup ran), print "error: <SIG> received: <what>" and re-deliver the signal (module docstring)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def on_signal(signum, frame):
        if not fired:  # a second signal during cleanup must not cut the cleanup short
            fired.append(signum)
            raise Terminated(signum)

    old = {}
    for sig in signals:
        prev = signal.getsignal(sig)
        if prev is not signal.SIG_IGN:  # nohup'ed: leave it ignored
            old[sig] = signal.signal(sig, on_signal)
    try:
        yield
    except Terminated as e:
        _restore(old, on_signal)
        # the traceback holds the frames the signal interrupted (e.g. a multiprocessing queue's get):
        # release what they hold, or the resource tracker warns about leaked semaphores at exit
        traceback.clear_frames(e.__traceback__)
        _redeliver(e.signum, old.get(e.signum), what)
        raise  # only if the previous handler returned without raising
    finally:
        _restore(old, on_signal)


def _restore(old: dict, ours) -> None:
    for sig, prev in old.items():
        if signal.getsignal(sig) is ours:
            signal.signal(sig, prev if prev is not None else signal.SIG_DFL)


def _redeliver(signum: int, prev, what: str) -> None:
    """Let the signal take the course it would have taken without us."""
    if callable(prev) and prev not in (signal.SIG_DFL, signal.SIG_IGN):
        prev(signum, None)  # e.g. an outer signals_reraised: raises Terminated there
        return
    print(f"error: {signal.Signals(signum).name} received: {what}", file=sys.stderr, flush=True)
    import gc

    gc.collect()  # drop multiprocessing queues now, or the resource tracker warns about leaked semaphores
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    time.sleep(1)  # the default action ends the process; this is not reached
