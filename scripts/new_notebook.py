"""Create a course notebook from the template, or strip notebooks for commit.

    python scripts/new_notebook.py new 05 cost_per_run "What does a run cost?"
    python scripts/new_notebook.py strip notebooks/*.ipynb          # clear outputs in place
    python scripts/new_notebook.py strip --check notebooks/*.ipynb  # exit 1 if any is not clean

`new` writes notebooks/NN_snake_name.ipynb following the notebook template in STYLE.md
(title, question, objectives, setup, `parameters` cell, sections, summary, exercises, next), with
the kernelspec papermill needs, cell ids and no outputs; tests/test_hygiene.py checks the same
rules. The helpers `markdown`, `code`, `build`, `write` and `strip` are importable for scripts
that generate a notebook's cells.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbformat import v4

ROOT = Path(__file__).resolve().parent.parent
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
LANGUAGE_INFO = {"name": "python"}
NAME_RE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")
# Metadata that executing a notebook adds and that must not be committed.
RUN_METADATA = ("widgets", "papermill")
CELL_RUN_METADATA = ("execution", "papermill", "collapsed", "scrolled")


def markdown(text: str):
    """A markdown cell (leading/trailing blank lines trimmed)."""
    return v4.new_markdown_cell(text.strip("\n"))


def code(text: str, tags: tuple[str, ...] = ()):
    """A code cell; `tags=("parameters",)` marks the papermill parameters cell."""
    cell = v4.new_code_cell(text.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def build(cells: list) -> nbformat.NotebookNode:
    """A v4 notebook with the kernelspec and language_info papermill needs."""
    nb = v4.new_notebook(cells=list(cells))
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = dict(LANGUAGE_INFO)
    return nb


def write(path: str | Path, nb: nbformat.NotebookNode) -> Path:
    """Validate and write `nb` (stripped) to `path`."""
    strip_nb(nb)
    nbformat.validate(nb)
    path = Path(path)
    nbformat.write(nb, str(path))
    return path


def strip_nb(nb: nbformat.NotebookNode) -> bool:
    """Clear outputs, execution counts and run metadata in place; True if anything changed."""
    for cell in nb.cells:  # papermill's injected cell means this is an output, not a source
        if "injected-parameters" in cell.metadata.get("tags", []):
            raise ValueError(
                "notebook contains papermill's injected-parameters cell: strip the source, not an output"
            )
    changed = False
    for key in RUN_METADATA:
        changed |= nb.metadata.pop(key, None) is not None
    for cell in nb.cells:
        for key in CELL_RUN_METADATA:
            changed |= cell.metadata.pop(key, None) is not None
        if cell.cell_type == "code":
            changed |= bool(cell.outputs) or cell.execution_count is not None
            cell.outputs, cell.execution_count = [], None
    return changed


def strip(path: str | Path, check: bool = False) -> bool:
    """Strip one notebook file in place (or with check=True only report); True if it was not clean."""
    nb = nbformat.read(str(path), as_version=4)
    dirty = strip_nb(nb)
    if dirty and not check:
        nbformat.validate(nb)
        nbformat.write(nb, str(path))
    return dirty


def skeleton(number: str, name: str, title: str) -> nbformat.NotebookNode:
    """A notebook that follows STYLE.md's template, with TODOs where the content goes."""
    prev = sorted((ROOT / "notebooks").glob(f"{int(number) - 1:02d}_*.ipynb")) if int(number) > 0 else []
    prereq = f"[{prev[0].stem}]({prev[0].name})" if prev else "none"
    return build(
        [
            markdown(f"# {number} · {title}\n\nTODO: one paragraph, the question this notebook answers."),
            markdown(f"## Learning objectives\n\n- TODO\n- TODO\n- TODO\n\n**Prerequisites:** {prereq}."),
            markdown("## Setup"),
            code("from gpukit.course import nbtools\n\nenv = nbtools.show_env()"),
            markdown("Parameters: papermill overrides this cell (`papermill -p QUICK True`)."),
            code("QUICK = False  # True: small sizes for CI and Binder", tags=("parameters",)),
            code(
                'nbtools.check_param("QUICK", QUICK, bool)\nQUICK = QUICK or nbtools.quick()  # GPUKIT_QUICK=1 also turns it on'
            ),
            markdown(
                "## 1 · TODO first section\n\nProse, a short gpukit call, a table or plot, one "
                "sentence of interpretation, the formula in LaTeX with its source."
            ),
            code("# TODO"),
            markdown("## Summary\n\n- TODO"),
            markdown("## Exercises\n\n1. TODO (each with a check a learner can run)."),
            markdown("**Next:** TODO link the next notebook."),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    new = sub.add_parser("new", help="write notebooks/NN_name.ipynb from the template")
    new.add_argument("number", help="two digits, e.g. 05")
    new.add_argument("name", help="snake_case name, e.g. cost_per_run")
    new.add_argument("title", help="title after '# NN · '")
    st = sub.add_parser("strip", help="clear outputs and run metadata")
    st.add_argument("--check", action="store_true", help="only report; exit 1 if a notebook is not clean")
    st.add_argument("paths", nargs="+")
    args = p.parse_args(argv)
    if args.cmd == "new":
        if not re.fullmatch(r"\d{2}", args.number) or not NAME_RE.match(args.name):
            print(
                "error: number must be two digits and name snake_case (e.g. 05 cost_per_run)", file=sys.stderr
            )
            return 2
        path = ROOT / "notebooks" / f"{args.number}_{args.name}.ipynb"
        if path.exists():
            print(f"error: {path} exists", file=sys.stderr)
            return 2
        write(path, skeleton(args.number, args.name, args.title))
        print(
            f"wrote {path.relative_to(ROOT)}; add it to gpukit/nbtools.py COURSE, README.md and notebook 00"
        )
        return 0
    try:
        dirty = [p for p in args.paths if strip(p, check=args.check)]
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for d in dirty:
        print(f"{'not clean' if args.check else 'stripped'}: {d}")
    return 1 if (args.check and dirty) else 0


if __name__ == "__main__":
    sys.exit(main())
