"""`make run`'s runner (gpukit.course.runbook): the kernel is this venv's, and the runner reports
figures, failures and its exit code on small notebooks written here.

The course's own notebooks run headless with papermill in QUICK mode once per suite, in
tests/test_binder.py (the Binder pod: the same pins, one CPU, 2 GB), which checks what an executed
notebook must hold (`check_executed`: no error output, every cell run, at least one image/png figure
outside the widgets, well-formed records), and again in JupyterLab in tests/test_browser.py.
Slow (kernels): `pytest -m "not slow"` skips this file. The runner gives the kernel matplotlib's
inline backend (whatever MPLBACKEND the suite uses).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from gpukit.course import runbook
from gpukit.course.nbtools import count_figures, read_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KERNEL_ENV = {"TQDM_DISABLE": "1"}


def test_kernel_python3_is_this_interpreter():
    """The 'python3' kernelspec must start this venv's Python, or notebooks miss gpukit and torch."""
    from jupyter_client import KernelManager

    cmd = KernelManager(kernel_name=runbook.KERNEL_NAME).format_kernel_cmd()
    assert cmd[0] == sys.executable, f"kernel python3 runs {cmd[0]}, tests run {sys.executable}"


def _tiny_notebook(path: Path, body: str) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from new_notebook import build, code, markdown, write
    finally:
        sys.path.pop(0)
    write(
        path,
        build(
            [markdown(f"# {path.name[:2]} · test"), code("QUICK = False", tags=("parameters",)), code(body)]
        ),
    )


def test_runbook_reports_figures_failures_and_exit_code(tmp_path, monkeypatch, capsys):
    for k, v in KERNEL_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("MPLBACKEND", "Agg")  # as `make test` sets it: the kernel must still draw inline
    monkeypatch.delenv("GPUKIT_QUICK", raising=False)
    books, out = tmp_path / "nbs", tmp_path / "out"
    books.mkdir()
    _tiny_notebook(
        books / "00_good.ipynb",
        "from gpukit.course import nbtools\n"
        "nbtools.record('answer_cpu', 42.0 if QUICK else 1.0, 'GFLOP/s', 'CPU, test')\n"
        "import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show()",
    )
    _tiny_notebook(books / "01_bad.ipynb", "raise ValueError('parameter X must be 1; got 2')")

    assert runbook.main(["--out", str(out), "--quick", "--notebooks", str(books)]) == 1
    text = capsys.readouterr().out
    assert "00_good" in text and "answer_cpu" in text and "42" in text and "GFLOP/s" in text
    assert "FAILED" in text and "ValueError: parameter X must be 1; got 2" in text
    assert "1 of 2 notebooks ran; 1 failed" in text
    summary = json.loads((out / "summary.json").read_text())
    assert [r["ok"] for r in summary["runs"]] == [True, False] and summary["quick"] is True
    assert summary["records"][0]["notebook"] == "00_good" and summary["records"][0]["value"] == 42.0
    assert (out / "00_good.ipynb").exists()
    assert count_figures(out / "00_good.ipynb") == 1  # drawn inline although MPLBACKEND=Agg here

    # --only: just the good one; a fresh records.json, exit 0; full mode passes no QUICK.
    assert runbook.main(["--out", str(out), "--only", "00", "--notebooks", str(books)]) == 0
    assert [r["value"] for r in read_records(out / "records.json")] == [1.0]
    assert runbook.main(["--out", str(out), "--only", "07", "--notebooks", str(books)]) == 2
    assert "matches no notebook" in capsys.readouterr().err
