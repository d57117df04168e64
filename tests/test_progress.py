"""Long work shows progress on stderr, never under --json, CI, TQDM_DISABLE or without a terminal; a
measurement whose repeats spread too far says so (issue 25: gpukit.timing_stats.spread_warning)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpukit.bench.timing import progress, progress_enabled, progress_line, quiet, summarize
from gpukit.cli import main
from gpukit.timing_stats import SPREAD_LIMIT, spread_warning


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _terminal(monkeypatch) -> _Terminal:
    """stderr as a user's terminal, with neither CI nor TQDM_DISABLE set. Called in the test body:
    pytest's capture puts its own sys.stderr back between a fixture's set-up and the test call."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    return err


# ---- the spread rule


def test_spread_warning_fires_on_a_wide_spread_and_not_on_a_tight_one():
    wide = spread_warning([("fp32 square-4096", 1.0, 17.0), ("fp32 square-64", 5.0, 5.3)])
    assert wide is not None and "fp32 square-4096 17.0x" in wide and "1 of 2 rows" in wide
    assert "square-64" not in wide and f"{SPREAD_LIMIT:g}x" in wide
    assert spread_warning([("a", 5.0, 5.3), ("b", 10.0, 19.9)]) is None  # 1.99x: inside the limit
    assert spread_warning([("a", 10.0, 20.1)]) is not None  # just past it
    assert spread_warning([("rate", 30.0, 3.0)], what="size") is not None  # rates: p10 > p90 in time
    assert spread_warning([]) is None
    with pytest.raises(ValueError, match="limit"):
        spread_warning([("a", 1.0, 2.0)], limit=1.0)


def _fake_time_op(samples):
    def time_op(fn, **kw):  # runs the operation once (membw checks the triad), times are fabricated
        fn()
        return summarize(samples)

    return time_op


def test_matmul_rows_carry_the_warning(monkeypatch):
    pytest.importorskip("torch")
    from gpukit.bench import matmul

    monkeypatch.setattr(matmul, "time_op", _fake_time_op([1e-3, 1.2e-3, 17e-3, 17e-3, 17e-3]))
    res = matmul.matmul_bench("cpu", ["fp32"], [64], llm_shapes=False, repeats=5)
    assert "fp32 square-64" in res.summary["spread_warning"]
    assert "spread_warning" in res.to_text()
    monkeypatch.setattr(matmul, "time_op", _fake_time_op([1e-3, 1.01e-3, 1.02e-3, 1.05e-3, 1.1e-3]))
    tight = matmul.matmul_bench("cpu", ["fp32"], [64], llm_shapes=False)
    assert tight.summary["spread_warning"] is None  # always present (stable JSON keys), null when tight
    assert "spread_warning" not in tight.to_text()


def test_membw_rows_carry_the_warning(monkeypatch):
    pytest.importorskip("torch")
    from gpukit.bench import membw

    monkeypatch.setattr(membw, "time_op", _fake_time_op([1e-3, 1e-3, 9e-3, 9e-3, 9e-3]))
    assert "spread_warning" in membw.memory_bandwidth("cpu", 1).summary


def test_collectives_rows_carry_the_warning(monkeypatch):
    pytest.importorskip("torch")
    from gpukit.bench import collectives, launch

    row = {"size_bytes": 1024, "busbw_gbps": 1.0, "p10_us": 10.0, "p90_us": 60.0}
    monkeypatch.setattr(launch, "spawn", lambda body, cfg, n, timeout_s: {"rows": [row], "env": {}})
    warn = collectives.run_collectives("all_reduce", 2, "1K", bare_check=False).summary["spread_warning"]
    assert "1024 B 6.0x" in warn and "1 of 1 sizes" in warn
    monkeypatch.setattr(
        launch, "spawn", lambda body, cfg, n, timeout_s: {"rows": [dict(row, p90_us=11.0)], "env": {}}
    )
    tight = collectives.run_collectives("all_reduce", 2, "1K", bare_check=False)
    assert tight.summary["spread_warning"] is None  # always present (stable JSON keys), null when tight


def _ddp_payload(n, step_s):
    return {
        "world_size": n,
        "step_s": step_s,
        "compute_s": [0.5 * t for t in step_s],
        "bytes_per_step": [1000],
        "phases_s": {"forward_s": 0.1, "backward_s": 0.2, "optimizer_s": 0.05},
        "n_params": 10,
        "kernel_s": {},
        "timeline": [],
        "param_shapes": [],
        "env": {},
    }


def test_ddp_rows_carry_the_warning(monkeypatch):
    pytest.importorskip("torch")
    from gpukit.bench import ddp_sweep

    steps = {1: [0.1, 0.1, 0.1, 0.1, 0.1], 2: [0.1, 0.1, 0.9, 0.9, 0.9]}
    monkeypatch.setattr(ddp_sweep, "run_ddp", lambda n, **kw: _ddp_payload(n, steps[n]))
    res = ddp_sweep.ddp_scaling(2, predict=False)
    assert "2 ranks" in res.summary["spread_warning"] and "1 ranks" not in res.summary["spread_warning"]
    steps[2] = steps[1]
    assert ddp_sweep.ddp_scaling(2, predict=False).summary["spread_warning"] is None


# ---- when progress shows


def test_progress_shows_on_a_terminal_only(monkeypatch):
    terminal = _terminal(monkeypatch)
    assert progress_enabled()
    progress_line("step 1 ...")
    assert terminal.getvalue() == "step 1 ...\n"
    with quiet():
        assert not progress_enabled() and not progress_enabled(disable=False)
    monkeypatch.setenv("CI", "true")
    assert not progress_enabled()
    monkeypatch.delenv("CI")
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert not progress_enabled()
    monkeypatch.delenv("TQDM_DISABLE")
    monkeypatch.setattr("sys.stderr", io.StringIO())  # a pipe or a log file
    assert not progress_enabled() and progress_enabled(disable=False)


def test_a_bar_draws_on_the_terminal(monkeypatch):
    terminal = _terminal(monkeypatch)
    assert list(progress(range(3), desc="steps")) == [0, 1, 2]
    assert "steps" in terminal.getvalue()


def test_bench_progress_is_silent_under_json(monkeypatch, capsys):
    terminal = _terminal(monkeypatch)
    pytest.importorskip("torch")
    argv = ["bench", "matmul", "--device", "cpu", "--sizes", "64", "--square-only", "--repeats", "2"]
    assert main(argv) == 0
    assert "matmul" in terminal.getvalue()  # the bar was there
    capsys.readouterr()
    terminal.seek(0)
    terminal.truncate()
    assert main([*argv, "--json"]) == 0
    assert terminal.getvalue() == ""
    assert capsys.readouterr().out.lstrip().startswith("{")


def test_make_run_says_which_notebook_starts(monkeypatch, tmp_path):
    terminal = _terminal(monkeypatch)
    from gpukit.course import runbook

    seen = []

    def fake_run(nb, out_dir, **kw):
        seen.append(kw["progress_bar"])
        return runbook.NotebookRun(notebook=Path(nb).name, ok=True, seconds=0.0, output="")

    monkeypatch.setattr(runbook, "run_notebook", fake_run)
    books = [tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb"]
    runbook.run_all(books, tmp_path / "out")
    assert "[1/2] 01_a.ipynb" in terminal.getvalue() and "[2/2] 02_b.ipynb" in terminal.getvalue()
    assert seen == [True, True]  # papermill's bar over the cells
    monkeypatch.setenv("TQDM_DISABLE", "1")
    terminal.seek(0)
    terminal.truncate()
    seen.clear()
    runbook.run_all(books, tmp_path / "out")
    assert "01_a" not in terminal.getvalue() and seen == [False, False]


def test_an_imported_ipykernel_is_not_a_running_kernel(monkeypatch):
    """Progress on a pipe stays off in a process that merely imported ipykernel (the full suite's
    widget and notebook tests do): only a running kernel's shell turns it on."""
    import ipykernel  # noqa: F401

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress_enabled()
