"""The calculators type-check (issue 25): mypy, configured in pyproject.toml [tool.mypy] (the ground floor
and the calculator families), reports no error; a type error put into a copy of the tree fails it."""

import ast
import dataclasses
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpukit.specs import ModelSpec

ROOT = Path(__file__).resolve().parent.parent
FAMILIES = ("compute", "comm", "memory", "scaling", "parallel", "inference", "cost", "plan")


def _mypy() -> str:
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed (it comes with requirements-dev.txt)")
    return mypy


def _run_mypy(cwd: Path, *files: str) -> subprocess.CompletedProcess:
    """mypy with the project's configuration, run in `cwd` (a tree with pyproject.toml and gpukit/) over
    [tool.mypy] files, or over `files` when given; no cache is read or written."""
    return subprocess.run(
        [_mypy(), "--config-file", str(cwd / "pyproject.toml"), f"--cache-dir={os.devnull}", *files],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _calculator_files(root: Path) -> list[Path]:
    ground = [p for p in (root / "gpukit").glob("*.py") if p.name != "__main__.py"]
    return ground + [p for fam in FAMILIES for p in (root / "gpukit" / fam).rglob("*.py")]


def test_mypy_covers_every_calculator_module():
    """[tool.mypy] files names every ground-floor module (a family folder brings all its parts):
    a new module cannot slip past the checker."""
    files = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    named = {Path(f) for f in files}
    for p in _calculator_files(ROOT):
        rel = p.relative_to(ROOT)
        assert rel in named or Path(*rel.parts[:2]) in named, f"{rel} is not in [tool.mypy] files"
    layers = {"cli", "course", "audits", "widgets", "bench"}  # torch, ipywidgets, matplotlib: not checked
    assert not [f for f in files if len(Path(f).parts) > 1 and Path(f).parts[1] in layers]


def test_calculators_type_check():
    r = _run_mypy(ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    checked = re.search(r"Success: no issues found in (\d+) source files", out)
    assert checked, out[-2000:]
    assert int(checked.group(1)) == len(_calculator_files(ROOT)), out[-2000:]


def test_type_error_fails_the_check(tmp_path):
    """A copy of the tree with two type errors of the kinds issue 25 found (an Optional used as a number;
    a str returned where an int is promised) fails, naming both. The project's options, over the changed
    module and what it imports (the whole run is test_calculators_type_check's)."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        ROOT / "gpukit", tmp_path / "gpukit", ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    units = tmp_path / "gpukit" / "units.py"
    units.write_text(
        units.read_text()
        + "\n\ndef _broken(n: int | None) -> int:\n"
        + "    return n * 2  # None has no *\n"
        + "\n\ndef _broken_too(n_bytes: float) -> int:\n"
        + "    return fmt_bytes(n_bytes)  # a str, not an int\n"
    )
    r = _run_mypy(tmp_path, "gpukit/units.py")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out[-4000:]
    assert "gpukit/units.py" in out and "[operator]" in out and "[return-value]" in out, out[-4000:]
    assert "Found 2 errors in 1 file" in out, out[-4000:]


def _typing_init(cls_name: str, path: Path) -> ast.FunctionDef:
    tree = ast.parse(path.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name)
    guard = next(n for n in cls.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return next(n for n in guard.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")


def test_modelspec_typing_init_mirrors_the_fields():
    """ModelSpec's fields n_kv_heads, ffn_hidden, head_dim and train_seq_len are int (__post_init__
    resolves None); the __init__ the type checker reads (under TYPE_CHECKING) takes None for them. It must
    list the dataclass's fields in order with the same defaults, or it would describe another class."""
    init = _typing_init("ModelSpec", ROOT / "gpukit" / "specs.py")
    args = init.args.args[1:]  # without self
    fields = dataclasses.fields(ModelSpec)
    assert [a.arg for a in args] == [f.name for f in fields]
    defaults = [None] * (len(args) - len(init.args.defaults)) + list(init.args.defaults)
    for a, d, f in zip(args, defaults, fields, strict=True):
        if f.default is dataclasses.MISSING:
            assert d is None, f"{a.arg} has a default in the typing __init__ but not as a field"
        else:
            assert d is not None and ast.literal_eval(d) == f.default, a.arg
    resolved = {"n_kv_heads", "ffn_hidden", "head_dim", "train_seq_len"}
    for a in args:
        if a.arg in resolved:
            assert ast.unparse(a.annotation) == "int | None", a.arg
    spec = ModelSpec("t", 2, 64, 4)
    assert all(isinstance(getattr(spec, name), int) for name in resolved)
