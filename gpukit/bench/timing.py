"""Honest timers: warm-up, synchronize, N iterations between two timestamps, median and p10/p90.

The method follows NVIDIA/nccl-tests (src/common.cu: warm-up iterations, then `iters` calls
between two host timestamps with the stream synchronized before and after) and
torch.utils.benchmark (median over blocked repeats). On CUDA, `synchronize` waits for the device
so the host clock measures kernel time; on CPU it is a no-op.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass

NO_CUDA_MESSAGE = "--device cuda requested but no CUDA device is available"
DEVICES = ("cpu", "cuda")


def resolve_device(device: str | None = "cpu") -> str:
    """'cpu' | 'cuda' | 'auto' -> 'cpu' or 'cuda'; ValueError if cuda is asked for but absent."""
    device = "cpu" if device is None else str(device).lower()
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in DEVICES:
        raise ValueError(f"device must be one of cpu, cuda, auto; got {device!r}")
    if device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError(NO_CUDA_MESSAGE)
    return device


def synchronize(device: str) -> None:
    """Wait for queued device work (CUDA); nothing to wait for on CPU (ops are synchronous)."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (q in [0, 100]) with linear interpolation (numpy's default): the one
    percentile and median of gpukit (the median of an even sample is the mean of the middle two)."""
    import numpy as np

    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError("percentile of an empty sample")
    return float(np.percentile(xs, q))


@dataclass(frozen=True)
class TimingStats:
    """Per-call time statistics in seconds over `n_repeats` repeats of `iters` calls each."""

    median_s: float
    p10_s: float
    p90_s: float
    mean_s: float
    min_s: float
    max_s: float
    n_repeats: int
    iters: int

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: relative spread; above ~0.1 the machine was noisy."""
        return (self.p90_s - self.p10_s) / self.median_s if self.median_s > 0 else float("nan")

    def to_json_dict(self) -> dict:
        return asdict(self)


def summarize(per_call_s: Sequence[float], iters: int = 1) -> TimingStats:
    """TimingStats from per-call times (one value per repeat)."""
    xs = [float(x) for x in per_call_s]
    if not xs:
        raise ValueError("no timing samples (the time budget ran out before the first repeat)")
    return TimingStats(
        median_s=percentile(xs, 50),
        p10_s=percentile(xs, 10),
        p90_s=percentile(xs, 90),
        mean_s=sum(xs) / len(xs),
        min_s=min(xs),
        max_s=max(xs),
        n_repeats=len(xs),
        iters=iters,
    )


def time_op(
    fn: Callable[[], object],
    *,
    device: str = "cpu",
    warmup: int = 3,
    repeats: int = 10,
    iters: int | None = None,
    min_repeat_s: float = 0.02,
    budget_s: float | None = None,
    min_repeats: int = 3,
) -> TimingStats:
    """Time `fn()`: `warmup` calls, then `repeats` x (`iters` calls between two timestamps).

    iters=None picks enough calls for one repeat to last about `min_repeat_s` (timer resolution and
    Python overhead stay small), found by doubling the call count as timeit.autorange does. `budget_s` stops adding repeats once exceeded (after `min_repeats`).
    """
    for _ in range(max(0, warmup)):
        fn()
    synchronize(device)
    if iters is None:  # double until a loop takes half the target, then scale (one stall can't decide)
        k = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            synchronize(device)
            loop_s = max(time.perf_counter() - t0, 1e-9)
            if loop_s >= min_repeat_s / 2 or k >= 10_000:
                break
            k *= 2
        iters = max(1, min(10_000, math.ceil(k * min_repeat_s / loop_s)))
    start = time.perf_counter()
    samples = []
    for _ in range(max(1, repeats)):
        synchronize(device)
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        synchronize(device)
        samples.append((time.perf_counter() - t0) / iters)
        if budget_s is not None and len(samples) >= min_repeats and time.perf_counter() - start > budget_s:
            break
    return summarize(samples, iters)


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a device out-of-memory (torch.OutOfMemoryError, CUDA's included) or a host allocation
    that failed (torch's CPU allocator raises a plain RuntimeError "can't allocate memory")."""
    if type(exc).__name__ == "OutOfMemoryError" or isinstance(exc, MemoryError):
        return True
    msg = str(exc)
    return isinstance(exc, RuntimeError) and any(
        s in msg for s in ("can't allocate memory", "out of memory", "Storage size calculation overflowed")
    )


def oom_line(what: str, exc: BaseException) -> str:
    """The one-line report of an allocation failure: 'out of memory at size WHAT: <first line>'."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"out of memory at size {what}: {first[:200]}"


class Deadline:
    """A wall-clock budget for a sweep: `check()` raises TimeoutError once `timeout_s` has passed."""

    def __init__(self, timeout_s: float | None, what: str = "benchmark"):
        self.timeout_s, self.what, self.start = timeout_s, what, time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self) -> float:
        return float("inf") if self.timeout_s is None else self.timeout_s - self.elapsed()

    def check(self) -> None:
        if self.left() <= 0:
            raise TimeoutError(f"{self.what} timed out after {self.timeout_s:g} s (raise --timeout)")


@contextmanager
def torch_threads(n: int | None):
    """Run the block with torch.set_num_threads(n) (None: leave as is), restoring it afterwards."""
    import torch

    old = torch.get_num_threads()
    if n is not None:
        if int(n) < 1:
            raise ValueError(f"threads must be a positive integer, got {n!r}")
        torch.set_num_threads(int(n))
    try:
        yield torch.get_num_threads()
    finally:
        torch.set_num_threads(old)


# Progress of long work (issue 25): on stderr, and silent under --json (quiet()), when CI or
# TQDM_DISABLE is set, or when stderr is neither a terminal nor a notebook's.
_QUIET: ContextVar[bool] = ContextVar("gpukit_quiet", default=False)


@contextmanager
def quiet(on: bool = True):
    """No progress bars or lines inside the block (the CLI wraps a --json command in it)."""
    token = _QUIET.set(bool(on))
    try:
        yield
    finally:
        _QUIET.reset(token)


def progress_enabled(disable: bool | None = None) -> bool:
    """Whether progress is shown: never inside quiet(); disable=True/False decides when given; else
    off when CI or TQDM_DISABLE is set (non-empty, not "0") or stderr is not a terminal, on in a
    Jupyter kernel (its stderr is no terminal but shows the bar)."""
    if _QUIET.get():
        return False
    if disable is not None:
        return not disable
    if any(os.environ.get(v, "") not in ("", "0") for v in ("CI", "TQDM_DISABLE")):
        return False
    err = sys.stderr
    return bool(getattr(err, "isatty", lambda: False)()) or _in_jupyter_kernel()


def _in_jupyter_kernel() -> bool:
    """True inside a running Jupyter kernel (its shell is IPython's ZMQInteractiveShell), not merely
    when ipykernel was imported (a test process that imported it has a plain stderr)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def progress(iterable, *, desc: str, total: int | None = None, disable: bool | None = None):
    """A tqdm.auto progress bar on stderr, shown where progress_enabled(disable) says so."""
    from tqdm.auto import tqdm

    return tqdm(
        iterable, desc=desc, total=total, leave=False, file=sys.stderr, disable=not progress_enabled(disable)
    )


def progress_line(message: str, *, disable: bool | None = None) -> None:
    """One line of progress on stderr (a step that starts), where progress_enabled(disable) says so."""
    if progress_enabled(disable):
        print(message, file=sys.stderr, flush=True)


# Work that a watchdog gave up on and that is still running in its thread (run_with_watchdog): the
# command line exits without waiting for it, and without tearing down the interpreter under it
# (gpukit.cli.main), so that a torch kernel in flight cannot abort the process at exit.
_ABANDONED: list = []


def abandoned_work() -> bool:
    """True when a run_with_watchdog worker timed out and is still running."""
    return any(t.is_alive() for t in _ABANDONED)


def run_with_watchdog(fn: Callable[[], object], timeout_s: float | None, what: str = "run"):
    """fn() with a wall-clock limit kept from outside the work: fn runs in a daemon thread and this
    (the caller's) thread waits for it; after `timeout_s` seconds TimeoutError("<what> timed out after
    N s (raise --timeout)") is raised here, and nothing is ever raised into fn. (An alarm signal that
    raises in the main thread can land inside `import torch`, numpy or a pybind11 callback: a traceback
    or a C++ abort instead of the timeout, issue 25.) fn's own exception is re-raised here as it is.
    timeout_s None: fn() runs in the caller's thread, without a limit."""
    import threading

    if timeout_s is None:
        return fn()
    box: dict = {}

    def work():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the waiting thread, as fn raised it
            box["error"] = e

    t = threading.Thread(target=work, name=f"gpukit {what}", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        _ABANDONED.append(t)
        raise TimeoutError(f"{what} timed out after {timeout_s:g} s (raise --timeout)")
    if "error" in box:
        raise box["error"]
    return box.get("value")
