"""docs/API.md, the Python API page (issue 25): every name of each family's face `__all__` and of the
ground floor is documented, no name that is gone is, the page is what scripts/gen_api_doc.py writes,
and every example on it and every Python block of the README runs."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "API.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_api_doc", ROOT / "scripts" / "gen_api_doc.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()
TEXT = API.read_text()


def _sections(text: str) -> dict[str, list[str]]:
    """{'gpukit.memory': [documented names], ...} from the page's `## gpukit.x` / `### gpukit.x` headings."""
    out, current = {}, None
    for line in text.splitlines():
        m = re.match(r"#{2,3} (gpukit\.\w+)$", line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = re.match(r"- (?:class )?\*\*`(\w+)`\*\*", line)
        if m and current is not None:
            current.append(m.group(1))
    return out


SECTIONS = _sections(TEXT)


@pytest.mark.parametrize("family", GEN.FAMILIES)
def test_every_name_of_a_face_is_documented_and_no_other(family):
    face = importlib.import_module(f"gpukit.{family}")
    documented = SECTIONS.get(f"gpukit.{family}")
    assert documented is not None, f"docs/API.md has no section for gpukit.{family}"
    assert sorted(set(face.__all__) - set(documented)) == [], "in __all__ but not documented"
    assert sorted(set(documented) - set(face.__all__)) == [], "documented but gone from __all__"


@pytest.mark.parametrize("module", GEN.GROUND)
def test_every_public_ground_floor_name_is_documented(module):
    mod = importlib.import_module(f"gpukit.{module}")
    names = GEN.ground_names(mod)
    assert names, f"gpukit.{module}: no public names found"
    documented = SECTIONS.get(f"gpukit.{module}", [])
    assert sorted(set(names) ^ set(documented)) == []


def test_the_page_is_current():
    """docs/API.md is exactly what the generator writes: a renamed, added or removed name, signature
    or docstring makes it stale (run `python scripts/gen_api_doc.py`)."""
    assert GEN.render() == TEXT


def test_a_missing_name_would_be_caught():
    """The section check can fail: a page without one name reports it."""
    dropped = TEXT.replace("- **`estimate_memory`**", "- estimate_memory", 1)
    assert "estimate_memory" not in _sections(dropped)["gpukit.memory"]
    assert "estimate_memory" in SECTIONS["gpukit.memory"]


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def _run(code: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<example>", "exec"), {"__name__": "__example__"})
    return out.getvalue()


API_BLOCKS = _python_blocks(TEXT)


def test_every_family_has_an_example():
    assert len(API_BLOCKS) == len(GEN.FAMILIES) + 1  # one per family and one for the ground floor
    for family in GEN.FAMILIES:
        section = TEXT.split(f"## gpukit.{family}\n", 1)[1].split("\n## ", 1)[0]
        assert f"from gpukit.{family} import" in section


@pytest.mark.parametrize("i", range(len(API_BLOCKS)))
def test_api_example_runs(i):
    assert _run(API_BLOCKS[i]).strip()  # it prints its answer


README_BLOCKS = _python_blocks((ROOT / "README.md").read_text())


def test_readme_has_python_examples():
    assert README_BLOCKS and "from gpukit.memory import" in README_BLOCKS[0]


@pytest.mark.parametrize("i", range(len(README_BLOCKS)))
def test_readme_python_block_runs(i):
    assert _run(README_BLOCKS[i]).strip()
