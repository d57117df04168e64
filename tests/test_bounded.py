"""Bounded work (issue 25): the serving simulation's memory and size, `serve --timeout`, and the
parallel search's enumeration. Each test asserts a bound or an exact refusal, never a timing against
a model: they hold on a busy machine and a quiet one."""

from __future__ import annotations

import importlib
import signal
import time
import tracemalloc

import pytest

from gpukit import inference as inf
from tests.helpers import run_cli

# the module (the face's `simulate` is the function of the same name)
simulate_module = importlib.import_module("gpukit.inference.simulate")


def _peak_bytes(output_tokens: int) -> int:
    """Peak Python allocation of one simulation: 4 requests, batch of at most 2, `output_tokens` each
    (about 2 x output_tokens iterations)."""
    tracemalloc.start()
    try:
        inf.simulate(
            lambda n, c: 1e-3 * n,
            lambda n: 1e-3,
            rate=100.0,
            input_tokens=10,
            output_tokens=output_tokens,
            max_batch=2,
            n_requests=4,
        )
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_simulation_memory_does_not_grow_with_the_iterations(monkeypatch):
    """An API run of `serve --rate` was killed at 23 GB: every decode iteration was stored (a list of
    batch sizes) and every (batch, context) step time memoized. Ten times the iterations now take
    about the same peak memory (running sums; a bounded LRU memo, shrunk here to 256 entries so the
    memo's own bound shows within the test)."""
    monkeypatch.setattr(simulate_module, "MEMO_ENTRIES", 256)
    short, long = _peak_bytes(3_000), _peak_bytes(30_000)
    # the old engine held 8 bytes per iteration in its list alone (about +430 KB here) and a memo
    # entry per context (+27,000 entries, several MB)
    assert long < 1.5 * short + 100_000, (short, long)


def test_simulation_size_is_refused_before_the_work():
    """`--output-tokens 100000` with the allowed 100,000 requests ran for hours: n_requests x
    output_tokens above MAX_SIM_TOKENS is one ValueError naming both fields and the limit, at once."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"output_tokens must be <= 50,000,000 decoded tokens") as e:
        inf.simulate(
            lambda n, c: 0.01,
            lambda n: 0.02,
            rate=1.0,
            input_tokens=10,
            output_tokens=100_000,
            max_batch=4,
            n_requests=100_000,
        )
    assert "\n" not in str(e.value) and "n_requests" in str(e.value)
    assert time.perf_counter() - t0 < 5
    inf.check_work(500, 100_000)  # exactly at the limit: accepted
    with pytest.raises(ValueError, match="n_requests"):
        inf.check_work(500, 100_001)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="no SIGALRM on this platform")
def test_serve_timeout_is_one_line_and_exit_2(capsys):
    """400 requests of 100,000 tokens each (allowed: 4 x 10^7 tokens) take minutes of roofline step
    times; --timeout 1 stops it after about a second with one line and exit 2, and disarms the timer."""
    before = signal.getsignal(signal.SIGALRM)
    t0 = time.perf_counter()
    rc, out, err = run_cli(
        capsys,
        *("serve", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--rate", "0.5"),
        *("--output-tokens", "100000", "--simulate-requests", "400", "--timeout", "1"),
    )
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--timeout 1 s" in err, err
    assert time.perf_counter() - t0 < 60  # generous: a loaded 2-core machine
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_serve_timeout_flag_is_validated(capsys):
    rc, out, err = run_cli(capsys, "serve", "--model", "gpt2", "--gpu", "h100-sxm", "--timeout", "0")
    assert rc == 2 and err.count("\n") == 1 and "timeout" in err
