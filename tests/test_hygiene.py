"""Clean, template-shaped notebooks (STYLE.md) and catalogs with provenance columns; no kernel needed.

Fix a failure with `python scripts/new_notebook.py strip notebooks/*.ipynb` (outputs, counts, run
metadata) or by editing the notebook (structure).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import nbformat
import pytest

from gpukit.course.nbtools import COURSE

ROOT = Path(__file__).resolve().parent.parent
NB_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
NAME_RE = re.compile(r"^(\d{2})_[a-z0-9]+(?:_[a-z0-9]+)*\.ipynb$")
MAX_CODE_LINES = 15
PROVENANCE = ("source", "source_url", "accessed")
CATALOGS = sorted(
    (ROOT / "gpukit" / "data").glob("*.csv")
)  # the packaged catalogs; measured results stay in data/measured/


def _read(path: Path):
    return nbformat.read(str(path), as_version=4)


def _ids(paths):
    return [p.name for p in paths]


def test_there_is_a_course():
    assert (NB_DIR / "00_start_here.ipynb").exists()


def test_names_and_contiguous_numbering():
    bad = [p.name for p in NOTEBOOKS if not NAME_RE.match(p.name)]
    assert not bad, f"notebook names must be NN_snake_name.ipynb: {bad}"
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(NOTEBOOKS))), (
        f"numbering must run 00, 01, ... without gaps or repeats: {numbers}"
    )


def test_every_notebook_is_on_the_course_map():
    """COURSE (gpukit.course.nbtools), the README and notebook 00 list every notebook that exists."""
    listed = [c.notebook for c in COURSE]
    assert listed == sorted(listed) and len(set(listed)) == len(listed)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = "\n".join(
        c.source for c in _read(NB_DIR / "00_start_here.ipynb").cells if c.cell_type == "markdown"
    )
    for p in NOTEBOOKS:
        assert p.stem in listed, f"{p.stem} missing from gpukit.course.nbtools.COURSE"
        assert p.stem in readme, f"{p.stem} missing from the README course map"
        assert p.stem in start, f"{p.stem} missing from the course map in 00_start_here"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_clean_and_runnable_by_papermill(path):
    nb = _read(path)
    nbformat.validate(nb)  # includes cell ids (nbformat 4.5)
    ks = nb.metadata.get("kernelspec", {})
    assert ks.get("name") == "python3" and ks.get("language") == "python", f"kernelspec: {ks}"
    assert nb.metadata.get("language_info", {}).get("name") == "python"
    for key in ("widgets", "papermill"):
        assert key not in nb.metadata, f"saved run metadata {key!r}: strip the notebook"
    for i, cell in enumerate(nb.cells):
        assert cell.get("id"), f"cell {i} has no id"
        assert "injected-parameters" not in cell.metadata.get("tags", []), "papermill output committed"
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {i} has outputs: strip the notebook"
            assert cell.execution_count is None, f"cell {i} has an execution count: strip the notebook"
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(params) == 1, f"exactly one cell tagged 'parameters', found {len(params)}"
    assert params[0].cell_type == "code"
    assert re.search(r"^QUICK\s*=\s*False\b", params[0].source, re.M), (
        "parameters cell must set QUICK = False"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_template_shape(path):
    nb = _read(path)
    cells = nb.cells
    number = path.name[:2]
    assert cells and cells[0].cell_type == "markdown" and cells[0].source.startswith(f"# {number} · "), (
        f"first cell must be the title '# {number} · Title'"
    )
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    for heading in ("Learning objectives", "Summary", "Exercises"):
        assert re.search(rf"^#+ .*{heading}", text, re.M), f"missing heading {heading!r}"
    code = [c for c in cells if c.cell_type == "code"]
    markdown = [c for c in cells if c.cell_type == "markdown"]
    assert len(markdown) >= len(code), f"{len(markdown)} markdown cells < {len(code)} code cells"
    for c in code:
        n = sum(1 for line in c.source.splitlines() if line.strip())
        assert n <= MAX_CODE_LINES, (
            f"code cell of {n} lines (max {MAX_CODE_LINES}): move logic into gpukit\n{c.source}"
        )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=_ids(NOTEBOOKS))
def test_notebook_links_point_at_the_course(path):
    known = {f"{c.notebook}.ipynb" for c in COURSE} | {p.name for p in NOTEBOOKS}
    text = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    for target in re.findall(r"\]\(([^)#\s]+\.ipynb)", text):
        assert Path(target).name in known, f"link to unknown notebook {target}"


@pytest.mark.parametrize("path", CATALOGS, ids=_ids(CATALOGS))
def test_catalog_has_provenance_columns(path):
    with path.open(newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    missing = [c for c in PROVENANCE if c not in [h.strip() for h in header]]
    assert not missing, f"{path.name} lacks provenance columns {missing} (every catalog row cites its source)"
