"""gpukit.bench.netlab.course: notebook 04's GPU gating and lab orchestration, with fakes (no root needed)."""

from __future__ import annotations

import pytest

from gpukit.bench.netlab import course


@pytest.mark.parametrize(
    "n, cuda, ok, text",
    [
        (0, False, False, "needs a CUDA device (this machine: CPU only)"),
        (1, True, False, "needs 2 or more CUDA devices (this machine: 1)"),
        (2, True, True, ""),
        (8, True, True, ""),
    ],
)
def test_gpu_gate(n, cuda, ok, text):
    g = course.gpu_gate(n, cuda)
    assert g.ok is ok and g.message.endswith(text) and (g.n_gpus == n if cuda else g.n_gpus == 0)
    if not ok:
        assert g.message.startswith("skipped: the NCCL all-reduce sweep")
    with pytest.raises(ValueError, match="min_gpus"):
        course.gpu_gate(n, cuda, min_gpus=0)


def test_this_gpu_gate_matches_torch():
    torch = pytest.importorskip("torch")
    g = course.this_gpu_gate()
    assert g.ok == (torch.cuda.is_available() and torch.cuda.device_count() >= 2)


def test_parse_rates_and_plan():
    assert course.parse_rates("1gbit, 200mbit") == ["1gbit", "200mbit"]
    assert course.parse_rates("") == []
    with pytest.raises(ValueError):
        course.parse_rates("fast")
    q = course.lab_plan(["1gbit", "200mbit"], quick=True)
    assert q.rates == ("1gbit",) and q.sizes == course.QUICK_SIZES and q.repeats == 3
    f = course.lab_plan(["1gbit", "200mbit"], quick=False)
    assert f.rates == ("1gbit", "200mbit") and f.sizes is None and f.repeats == 5


def test_run_lab_skips_with_one_line_and_runs_each_planned_rate():
    calls = []

    def fake_bench(nodes, rate, sizes=None, repeats=5):
        calls.append((nodes, rate, sizes, repeats))
        return f"result {rate}"

    run = course.run_lab(["1gbit"], quick=False, check=lambda: "netlab needs root", bench=fake_bench)
    assert run.skipped == "skipped: netlab needs root" and run.results == () and calls == []
    assert course.run_lab([], quick=False, check=lambda: None, bench=fake_bench).skipped.endswith(
        "NETLAB_RATES is empty"
    )
    run = course.run_lab(["1gbit", "200mbit"], quick=True, check=lambda: None, bench=fake_bench)
    assert run.results == ("result 1gbit",) and calls == [(2, "1gbit", list(course.QUICK_SIZES), 3)]
    calls.clear()
    run = course.run_lab(["1gbit", "200mbit"], quick=False, check=lambda: None, bench=fake_bench)
    assert [c[1] for c in calls] == ["1gbit", "200mbit"] and calls[0][2] is None
