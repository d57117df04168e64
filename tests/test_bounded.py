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


def test_parallel_search_refuses_a_huge_cluster_at_once(capsys):
    """`parallel search --gpus 10^12` ran without end (a divisor loop over every integer up to gpus):
    above MAX_SEARCH_GPUS it is one line naming the limit, exit 2, at once."""
    from gpukit.catalog import get_gpu, get_model
    from gpukit.parallel import MAX_SEARCH_GPUS, enumerate_layouts, search

    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"gpus must be <= 1,048,576"):
        search(get_model("gpt2"), get_gpu("h100-sxm"), 10**12)
    with pytest.raises(ValueError, match=r"gpus must be <= 1,048,576"):
        enumerate_layouts(get_model("gpt2"), MAX_SEARCH_GPUS + 8, 512)
    rc, out, err = run_cli(
        capsys,
        *("parallel", "search", "--model", "llama-3-70b", "--gpu", "h100-sxm"),
        *("--gpus", str(10**12), "--gpus-per-node", "8"),
    )
    assert rc == 2 and out == "" and err.count("\n") == 1 and "1,048,576" in err
    assert time.perf_counter() - t0 < 10


def test_parallel_search_at_the_limit_is_bounded():
    """The limit itself enumerates a bounded set (the divisors come in O(sqrt(gpus)); tp is capped by
    the heads, pp by the layers): 6,618 layouts for llama-3-70b on 2^20 GPUs, 23,163 for megatron-1t
    on the most composite count below the limit (720,720), all whole layouts."""
    from gpukit.catalog import get_model
    from gpukit.parallel import MAX_SEARCH_GPUS, enumerate_layouts

    m = get_model("llama-3-70b")
    big = enumerate_layouts(m, MAX_SEARCH_GPUS, MAX_SEARCH_GPUS)
    assert 0 < len(big) < 50_000
    assert 0 < len(enumerate_layouts(get_model("megatron-1t"), 720_720, 720_720)) < 50_000
    assert all(c.dp * c.tp * c.pp == MAX_SEARCH_GPUS for c in big)
