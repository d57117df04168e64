"""The "Used in:" lines of module docstrings (STYLE.md: back-references, as d2l's helpers say where they
are taught) name only things that exist: every gpukit module or name, notebook and test they list is
on disk. A move or a rename that leaves a stale back-reference fails here (issue 22)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p for p in (ROOT / "gpukit").rglob("*.py"))


def _used_in(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    m = re.search(r"Used in:(.*?)(?:\n\s*\n|\Z)", doc, re.S)
    return m.group(1) if m else ""


def _exists(ref: str) -> bool:
    if ref.startswith("notebooks/"):
        stem = ref.removeprefix("notebooks/").removesuffix(".ipynb")
        return (ROOT / "notebooks" / f"{stem}.ipynb").exists()
    if ref.startswith(("tests/", "scripts/")):
        return (ROOT / ref).exists()
    parts = ref.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


REF = re.compile(r"(gpukit(?:\.[A-Za-z_]\w*)+|notebooks/\d\d_\w+|tests/[\w/]+\.py|scripts/[\w.]+)")


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_used_in_names_only_what_exists(path):
    stale = [ref for ref in REF.findall(_used_in(path)) if not _exists(ref.rstrip("."))]
    assert stale == [], f"{path.relative_to(ROOT)}: 'Used in:' names what does not exist: {stale}"


def test_the_check_can_fail():
    assert not _exists("gpukit.memory.no_such_part") and not _exists("notebooks/99_nothing")
    assert _exists("gpukit.memory.estimate_memory") and _exists("notebooks/01_what_fits_on_one_gpu")
