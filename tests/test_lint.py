"""The code stays as ruff (pyproject.toml [tool.ruff]) wants it: unused imports, undefined names and
likely bugs fail the suite rather than waiting for a reviewer."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with requirements-dev.txt)")
    r = subprocess.run(
        [ruff, "check", "--no-cache", "gpukit", "tests", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]


def test_one_formatter():
    """ruff format is the one formatter (line length 110, pyproject.toml [tool.ruff]): the tree is as it
    leaves it (issue 22)."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (it comes with requirements-dev.txt)")
    r = subprocess.run(
        [ruff, "format", "--check", "--no-cache", "gpukit", "tests", "scripts"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
