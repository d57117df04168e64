"""gpukit.bench.supervise: the one process supervisor (stop) and the one "clean up, then re-raise the
signal" routine (signals_reraised), used by bench.launch and bench.netlab."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from gpukit.bench import supervise

PY = sys.executable
STUBBORN = "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"


def _stubborn(**kw) -> subprocess.Popen:
    p = subprocess.Popen([PY, "-c", STUBBORN], stdout=subprocess.PIPE, text=True, **kw)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_stop_escalates_to_sigkill_and_reaps():
    p, q = _stubborn(), _stubborn(start_new_session=True)
    t0 = time.monotonic()
    supervise.stop([p], grace_s=0.3)
    supervise.stop([q], grace_s=0.3, group=True)
    assert p.returncode == q.returncode == -signal.SIGKILL
    assert time.monotonic() - t0 < 10


def test_stop_takes_bare_pids_and_finished_or_unstarted_processes():
    import multiprocessing

    p = _stubborn()
    supervise.stop([p.pid], grace_s=0.3)  # a bare pid: signalled, not reaped (not necessarily our child)
    p.wait(5)
    assert p.returncode == -signal.SIGKILL and not supervise.pid_alive(-1)
    done = subprocess.Popen([PY, "-c", "pass"])
    done.wait(10)
    supervise.stop(
        [done, multiprocessing.get_context("spawn").Process(target=print)]
    )  # nothing to do, no error
    assert done.returncode == 0


_CHILD = """
import os, signal, sys
from gpukit.bench.supervise import signals_reraised
marker = sys.argv[1]
with signals_reraised("outer stopped"):
    with signals_reraised("inner stopped"):
        try:
            os.kill(os.getpid(), signal.{sig})
            import time; time.sleep(5)
        finally:
            open(marker, "a").write("cleaned ")
print("not reached", flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_signal_cleans_up_then_ends_the_process_by_the_signal(tmp_path, sig):
    marker = tmp_path / "marker"
    r = subprocess.run(
        [PY, "-c", _CHILD.format(sig=sig), str(marker)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == -getattr(signal, sig)
    assert marker.read_text() == "cleaned "  # the block's cleanup ran once, before the process ended
    assert r.stderr.strip().splitlines() == [f"error: {sig} received: outer stopped"]  # one line
    assert "not reached" not in r.stdout


def test_handlers_restored_and_ignored_signals_stay_ignored():
    before = signal.getsignal(signal.SIGTERM)
    with supervise.signals_reraised("x"):
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with supervise.signals_reraised("x"):
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, old)
