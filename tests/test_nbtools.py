"""gpukit.bench.envinfo, gpukit.course.nbtools and the kernel-free parts of gpukit.course.runbook / scripts/new_notebook."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpukit.bench import envinfo
from gpukit.course import nbtools, runbook
from gpukit.course.runbook import NotebookRun

ROOT = Path(__file__).resolve().parent.parent


# -- envinfo -----------------------------------------------------------------------------------


def test_environment_reports_this_machine():
    import torch

    env = envinfo.environment(quick=True)
    assert env["torch"] == torch.__version__ and env["torch_threads"] == torch.get_num_threads()
    assert env["cuda_available"] == torch.cuda.is_available()
    assert env["device_count"] == len(env["devices"])
    assert env["cpu_count"] >= 1 and env["quick"] is True and env["python"].count(".") == 2
    json.dumps(env)  # JSON-safe: result files embed it


def test_describe_cpu_and_gpu_machines():
    cpu = {"torch": "2.13.0+cpu", "torch_threads": 2, "devices": []}
    assert envinfo.describe_environment(cpu) == "CPU only, 2 threads, torch 2.13.0+cpu"
    assert envinfo.describe_environment({**cpu, "torch_threads": 1}) == "CPU only, 1 thread, torch 2.13.0+cpu"
    h100 = {"name": "NVIDIA H100 80GB HBM3", "memory_gib": 79.1}
    gpu = {"torch": "2.13.0+cu128", "devices": [h100]}
    assert envinfo.describe_environment(gpu) == "1x NVIDIA H100 80GB HBM3, torch 2.13.0+cu128"
    assert envinfo.describe_environment({**gpu, "devices": [h100] * 8}).startswith("8x NVIDIA H100")
    assert "torch not installed" in envinfo.describe_environment({"torch": None, "cpu_count": 4})
    assert envinfo.describe_environment().startswith(("CPU only", "1x", "2x", "4x", "8x"))


@pytest.mark.parametrize(
    "value,expected", [("1", True), ("true", True), ("YES", True), ("0", False), ("", False), ("no", False)]
)
def test_quick_from_env(value, expected, monkeypatch):
    monkeypatch.setenv("GPUKIT_QUICK", value)
    assert envinfo.quick_from_env() is expected and nbtools.quick() is expected
    assert envinfo.environment()["quick"] is expected


def test_show_env_prints_one_line(capsys):
    env = nbtools.show_env()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("Environment: ") and env["gpukit"] in out


# -- check_param --------------------------------------------------------------------------------


def test_check_param_accepts_and_returns():
    assert nbtools.check_param("QUICK", True, bool) is True
    assert nbtools.check_param("N", 3, range(1, 10)) == 3
    assert nbtools.check_param("DTYPE", "bf16", ["fp32", "bf16"]) == "bf16"
    assert nbtools.check_param("LR", 1e-3, (int, float)) == 1e-3
    assert nbtools.check_param("DP", 4, [1, 2, 4, 8]) == 4


@pytest.mark.parametrize(
    "name,value,allowed,message",
    [
        ("QUICK", "yes", bool, "parameter QUICK must be of type bool; got 'yes' (str)"),
        ("N", True, int, "parameter N must be of type int; got True (bool)"),
        ("N", 0, range(1, 10), "parameter N must be an integer from 1 to 9; got 0"),
        ("N", 4, range(0, 10, 3), "parameter N must be an integer from 0 to 9 in steps of 3; got 4"),
        ("N", 2.0, range(1, 10), "parameter N must be an integer from 1 to 9; got 2.0"),
        ("DTYPE", "fp64", ["fp32", "bf16"], "parameter DTYPE must be one of 'fp32', 'bf16'; got 'fp64'"),
        ("QUICK", 1, [True, False], "parameter QUICK must be one of True, False; got 1"),
    ],
)
def test_check_param_names_the_parameter(name, value, allowed, message):
    with pytest.raises(ValueError) as e:
        nbtools.check_param(name, value, allowed)
    assert str(e.value) == message and "\n" not in str(e.value)


def test_check_param_predicate_and_misuse():
    def even(x):
        """an even number."""
        return x % 2 == 0

    assert nbtools.check_param("DP", 4, even) == 4
    with pytest.raises(ValueError, match="parameter DP must be an even number; got 3"):
        nbtools.check_param("DP", 3, even)
    with pytest.raises(TypeError):
        nbtools.check_param("X", 1, 5)


@given(st.integers(-50, 50), st.integers(-20, 20), st.integers(1, 40))
def test_check_param_range_agrees_with_membership(value, start, length):
    allowed = range(start, start + length)
    try:
        nbtools.check_param("N", value, allowed)
        accepted = True
    except ValueError as e:
        accepted = False
        assert str(e).startswith("parameter N must be")
    assert accepted == (value in allowed)


# -- pick, gpu_only, check_answer ----------------------------------------------------------------


def test_pick_and_gpu_only(capsys, monkeypatch):
    assert nbtools.pick(True, quick=256, full=2048) == 256
    assert nbtools.pick(False, quick=256, full=2048) == 2048
    monkeypatch.setattr(nbtools, "has_cuda", lambda: False)
    assert nbtools.gpu_only("the CUDA matmul") is False
    assert (
        capsys.readouterr().out == "skipped: the CUDA matmul needs a CUDA device (this machine: CPU only)\n"
    )
    monkeypatch.setattr(nbtools, "has_cuda", lambda: True)
    assert nbtools.gpu_only("the CUDA matmul") is True and capsys.readouterr().out == ""


def test_check_answer(capsys):
    assert nbtools.check_answer(None, 24.2) is None
    assert nbtools.check_answer(24.21, 24.2144) is True
    assert nbtools.check_answer(26.0, 24.2144) is False
    assert nbtools.check_answer("many", 24.2) is False
    out = capsys.readouterr().out
    assert "not answered yet" in out and "correct" in out and "too high by 7%" in out


# -- record ---------------------------------------------------------------------------------------


def test_record_without_env_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("GPUKIT_RECORD", raising=False)
    monkeypatch.chdir(tmp_path)
    rec = nbtools.record("x", 1.5, "s")
    assert rec["value"] == 1.5 and list(tmp_path.iterdir()) == []


def test_record_appends_plain_json(tmp_path, monkeypatch):
    import numpy as np

    path = tmp_path / "sub" / "records.json"
    monkeypatch.setenv("GPUKIT_RECORD", str(path))
    monkeypatch.setenv("GPUKIT_NOTEBOOK", "00_start_here")
    nbtools.record("matmul_cpu_gflops", np.float32(12.5), "GFLOP/s", "CPU, 2 threads")
    nbtools.record("n_params", np.int64(7), "count")
    recs = nbtools.read_records(path)
    assert [(r["notebook"], r["name"], r["value"], r["unit"]) for r in recs] == [
        ("00_start_here", "matmul_cpu_gflops", 12.5, "GFLOP/s"),
        ("00_start_here", "n_params", 7, "count"),
    ]
    assert isinstance(recs[1]["value"], int)
    for bad in ("fast", True, None):
        with pytest.raises(ValueError, match="record value must be a real number"):
            nbtools.record("x", bad, "s")
    with pytest.raises(ValueError, match="record name"):
        nbtools.record("", 1, "s")
    assert len(nbtools.read_records(path)) == 2
    assert nbtools.read_records(tmp_path / "missing.json") == []


def test_course_map_matches_files():
    df = nbtools.course_map()
    assert list(df["notebook"]) == [c.notebook for c in nbtools.COURSE]
    for name, available in zip(df["notebook"], df["available"], strict=True):
        assert available == (ROOT / "notebooks" / f"{name}.ipynb").exists()


# -- runbook (no kernel) ---------------------------------------------------------------------------


def test_discover_and_only(tmp_path):
    for name in ("00_start_here", "01_what_fits", "02_tricks", "notes"):
        (tmp_path / f"{name}.ipynb").write_text("{}")
    assert [p.stem for p in runbook.discover(tmp_path)] == ["00_start_here", "01_what_fits", "02_tricks"]
    assert [p.stem for p in runbook.discover(tmp_path, ["01"])] == ["01_what_fits"]
    assert [p.stem for p in runbook.discover(tmp_path, ["00,02"])] == ["00_start_here", "02_tricks"]
    with pytest.raises(
        ValueError, match="--only 9 matches no notebook .*; known: 00_start_here, 01_what_fits"
    ):
        runbook.discover(tmp_path, ["9"])


def test_summary_lists_status_time_errors_and_figures():
    runs = [
        NotebookRun("00_start_here", True, 12.34, "out/00.ipynb"),
        NotebookRun("01_what_fits", False, 3.0, "out/01.ipynb", "cell 7: ValueError: tp must divide n_heads"),
    ]
    recs = [
        {
            "notebook": "00_start_here",
            "name": "matmul_cpu_gflops",
            "value": 123.456789,
            "unit": "GFLOP/s",
            "note": "CPU, 2 threads",
        }
    ]
    text = runbook.summarize(runs, recs, header="gpukit run")
    lines = text.splitlines()
    assert lines[0] == "gpukit run"
    assert any("00_start_here" in ln and "ok" in ln and "12.3 s" in ln for ln in lines)
    assert any("FAILED" in ln and "cell 7: ValueError: tp must divide n_heads" in ln for ln in lines)
    assert any(
        "matmul_cpu_gflops" in ln and "123.5" in ln and "GFLOP/s" in ln and "CPU" in ln for ln in lines
    )
    assert "1 of 2 notebooks ran; 1 failed" in text
    assert "none" in runbook.summarize(runs[:1], [])
    assert len(lines) < 40  # one screen


def test_runbook_bad_arguments_exit_2(tmp_path, capsys):
    assert runbook.main(["--notebooks", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert runbook.main(["--timeout", "0", "--out", str(tmp_path / "o")]) == 2
    assert "error:" in capsys.readouterr().err


def test_error_outputs_and_strip(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import new_notebook as nn
    finally:
        sys.path.pop(0)
    from nbformat import v4

    nb = nn.build([nn.markdown("# 00 · x"), nn.code("1/0"), nn.code("QUICK = False", tags=("parameters",))])
    nb.cells[1].outputs = [v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero")]
    nb.cells[1].execution_count = 1
    nb.metadata["widgets"] = {"state": {}}
    path = tmp_path / "00_x.ipynb"
    import nbformat

    nbformat.write(nb, str(path))
    assert runbook.error_outputs(path) == ["cell 1: ZeroDivisionError: division by zero"]
    assert nn.strip(path, check=True) is True and runbook.error_outputs(path)  # check leaves it alone
    assert nn.strip(path) is True and nn.strip(path) is False
    clean = nbformat.read(str(path), as_version=4)
    assert clean.cells[1].outputs == [] and "widgets" not in clean.metadata
    assert clean.cells[2].metadata["tags"] == ["parameters"]
    sk = nn.skeleton("05", "cost", "What does it cost?")
    assert (
        sk.cells[0].source.startswith("# 05 · What does it cost?")
        and sk.metadata["kernelspec"]["name"] == "python3"
    )


def test_count_figures_counts_png_outputs_outside_widgets(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    png = {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"}
    nb = new_notebook(
        cells=[
            new_markdown_cell("![a picture in markdown is not a figure output](x.png)"),
            new_code_cell("plt.show()", outputs=[new_output("display_data", data=png)]),
            new_code_cell("fig", outputs=[new_output("execute_result", data=png, execution_count=2)]),
            new_code_cell(
                "view",
                outputs=[
                    new_output(
                        "display_data",
                        data={
                            "application/vnd.jupyter.widget-view+json": {"model_id": "m"},
                            "text/plain": "VBox()",
                        },
                    )
                ],
            ),
            new_code_cell("print(1)", outputs=[new_output("stream", name="stdout", text="1\n")]),
        ]
    )
    assert nbtools.count_figures(nb) == 2
    assert nbtools.count_figures(nb, mime="image/svg+xml") == 0
    path = tmp_path / "n.ipynb"
    nbformat.write(nb, str(path))
    assert nbtools.count_figures(path) == 2
    assert nbtools.count_figures(new_notebook(cells=[new_code_cell("1")])) == 0


def test_number_predicate_bounds_and_wording():
    """nbtools.number: the shared numeric check of the notebooks' parameter cells."""
    frac = nbtools.number(0, 1, lo_open=True)
    assert nbtools.check_param("MFU", 0.4, frac) == 0.4 and nbtools.check_param("MFU", 1, frac) == 1
    for bad in (0, 1.5, True, float("nan"), "0.4"):
        with pytest.raises(ValueError, match=r"parameter MFU must be a number > 0 and <= 1; got"):
            nbtools.check_param("MFU", bad, frac)
    with pytest.raises(ValueError, match=r"must be a number >= 0; got -1"):
        nbtools.check_param("BUDGET_USD", -1, nbtools.number(0))
    assert nbtools.check_param("X", -3.5, nbtools.number()) == -3.5
    with pytest.raises(ValueError, match=r"a number \(any finite value\)"):
        nbtools.check_param("X", float("inf"), nbtools.number())
