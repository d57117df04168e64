"""`make run`: execute every notebook headless with papermill, then summarize what was measured.

    python -m gpukit.course.runbook --out build/notebooks [--quick] [--only 01[,02]] [--timeout 600]
        [--notebook-timeout 3600]

Each notebook runs in a fresh `python3` kernel (this interpreter's), with its folder as working
directory, into OUT/<name>.ipynb. A notebook keeps key figures with
`gpukit.course.nbtools.record(name, value, unit, note)`; this runner points GPUKIT_RECORD at
OUT/records.json (emptied at the start of a run) and GPUKIT_NOTEBOOK at the notebook's name. The
summary lists every notebook (ok/FAILED, run time, the failing cell) and every recorded figure;
OUT/summary.json holds the same. Exit code 0 if all notebooks ran, 1 if any failed, 2 on bad
arguments. `--quick` (or GPUKIT_QUICK=1) passes `QUICK=True` and sets GPUKIT_QUICK=1.

Bounded: every cell has a timeout (--timeout, papermill's execution_timeout) and every notebook a
wall-clock limit (--notebook-timeout, gpukit.course.polling.notebook_deadline); the kernel client
polls in slices (gpukit.course.polling: why a headless widget cell could otherwise wait for ever).

Used in: Makefile (`make run`), tests/test_notebooks.py.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from gpukit.bench.envinfo import QUICK_ENV, describe_environment, environment, quick_from_env
from gpukit.bench.results import write_json
from gpukit.bench.timing import progress_enabled
from gpukit.course.nbtools import NOTEBOOK_ENV, RECORD_ENV, read_records
from gpukit.course.polling import SlicedPollKernelManager, notebook_deadline
from gpukit.results import format_table

KERNEL_NAME = "python3"  # resolved by jupyter_client to this interpreter (argv[0] "python" -> sys.executable)
DEFAULT_TIMEOUT_S = 600  # per cell (papermill's execution_timeout, nbclient's timeout)
# per notebook, wall clock (gpukit.course.polling.notebook_deadline): generous for a full (not QUICK)
# run with its benchmarks on a small machine; a hang becomes a failure after at most this
DEFAULT_NOTEBOOK_TIMEOUT_S = 3600
# The kernel draws with the inline backend whatever the caller's MPLBACKEND says (the test suite and
# `make test` set Agg for themselves): with Agg an executed notebook would hold no picture at all.
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


@dataclass(frozen=True)
class NotebookRun:
    """How one notebook ran: ok, wall time in seconds, output path, the failing cell in one line."""

    notebook: str
    ok: bool
    seconds: float
    output: str
    error: str = ""  # "cell 7: ValueError: parameter QUICK must be ..." (one line)
    detail: str = ""  # the full traceback text, for tests and logs


def notebook_dir() -> Path:
    """The course's notebooks/ folder (next to the gpukit package in a source checkout)."""
    return Path(__file__).resolve().parents[2] / "notebooks"


def discover(folder: str | Path, only: list[str] | None = None) -> list[Path]:
    """notebooks/NN_*.ipynb in order; `only` keeps those whose name starts with one of the tokens."""
    folder = Path(folder)
    books = sorted(p for p in folder.glob("*.ipynb") if p.name[:2].isdigit())
    if only:
        tokens = [t.strip() for item in only for t in item.split(",") if t.strip()]
        chosen = [p for p in books if any(p.stem.startswith(t) for t in tokens)]
        if not chosen:
            known = ", ".join(p.stem for p in books) or "none"
            raise ValueError(f"--only {','.join(tokens)} matches no notebook in {folder}; known: {known}")
        return chosen
    return books


@contextlib.contextmanager
def _environ(**values):
    # The kernel inherits os.environ at launch; restore ours afterwards.
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_notebook(
    nb: str | Path,
    out_dir: str | Path,
    *,
    quick: bool = False,
    parameters: dict | None = None,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    record_path: str | Path | None = None,
    env: dict | None = None,
    progress_bar: bool = False,
    notebook_timeout_s: float | None = DEFAULT_NOTEBOOK_TIMEOUT_S,
) -> NotebookRun:
    """Execute one notebook with papermill into `out_dir`; never raises for a failing notebook.

    `timeout_s` is per cell (papermill's execution_timeout), `notebook_timeout_s` the whole notebook's
    wall clock (None: no limit; past it the kernel is shut down and the run fails). `env` adds variables for the kernel
    (e.g. TQDM_DISABLE=1 in tests). The kernel's MPLBACKEND is the inline backend (INLINE_BACKEND)
    unless `env` names another, so figures land in the executed notebook as image/png outputs.
    `progress_bar`: papermill's bar over the notebook's cells (on stderr).
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    nb, out_dir = Path(nb).resolve(), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / nb.name
    params = dict(parameters or {})
    if quick:
        params.setdefault("QUICK", True)
    kernel_env = {
        NOTEBOOK_ENV: nb.stem,
        QUICK_ENV: "1" if quick else None,
        "MPLBACKEND": INLINE_BACKEND,
        **(env or {}),
    }
    if record_path is not None:
        kernel_env[RECORD_ENV] = str(Path(record_path).resolve())
    t0 = time.perf_counter()
    error = detail = ""
    with _environ(**kernel_env), notebook_deadline(notebook_timeout_s):
        try:
            papermill.execute_notebook(
                str(nb),
                str(out),
                parameters=params,
                kernel_name=KERNEL_NAME,
                language="python",
                cwd=str(nb.parent),
                execution_timeout=timeout_s,
                progress_bar=progress_bar,
                kernel_manager_class=SlicedPollKernelManager,
            )  # widget cells' missed replies: gpukit.course.polling
        except PapermillExecutionError as e:
            evalue = (str(e.evalue).strip().splitlines() or [""])[0]
            error = f"cell {e.exec_count}: {e.ename}: {evalue}"
            detail = str(e)
        except Exception as e:  # kernel died, cell timeout, bad notebook JSON: still a failed notebook
            msg = (str(e).strip().splitlines() or [""])[0]
            error, detail = f"{type(e).__name__}: {msg}", repr(e)
    if not error and out.exists():
        errors = error_outputs(out)
        if errors:
            error, detail = errors[0], "\n".join(errors)
    return NotebookRun(nb.stem, not error, round(time.perf_counter() - t0, 2), str(out), error, detail)


def error_outputs(nb_path: str | Path) -> list[str]:
    """Error outputs saved in an executed notebook, one line each ("cell 3: NameError: ...")."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                found.append(f"cell {cell.get('execution_count')}: {out.get('ename')}: {out.get('evalue')}")
    return found


def summarize(runs: list[NotebookRun], records: list[dict], header: str = "") -> str:
    """The one-screen summary: notebooks (status, time, failing cell), then the recorded figures."""
    lines = [header] if header else []
    lines += format_table(
        [[r.notebook, "ok" if r.ok else "FAILED", f"{r.seconds:.1f} s", r.error[:70]] for r in runs],
        ["notebook", "status", "time", "error"],
        align="left",
    ).splitlines()
    lines.append("")
    if records:
        lines.append("Recorded figures (CPU figures are labelled CPU):")
        lines += format_table(
            [
                [
                    r.get("notebook", ""),
                    r.get("name", ""),
                    r.get("value"),
                    r.get("unit", ""),
                    str(r.get("note", ""))[:48],
                ]
                for r in records
            ],
            ["notebook", "figure", "value", "unit", "note"],
            formats={"value": lambda v: f"{v:.4g}" if isinstance(v, float) else str(v)},
            align="left",
        ).splitlines()
    else:
        lines.append("Recorded figures: none (notebooks call gpukit.course.nbtools.record to add some)")
    failed = sum(not r.ok for r in runs)
    lines += [
        "",
        f"{len(runs) - failed} of {len(runs)} notebooks ran; {failed} failed"
        + (" (full tracebacks in the executed notebooks and summary.json)" if failed else ""),
    ]
    return "\n".join(lines)


def run_all(
    notebooks: list[Path],
    out_dir: str | Path,
    *,
    quick: bool = False,
    timeout_s: int = DEFAULT_TIMEOUT_S,
    progress: bool = True,
    notebook_timeout_s: float | None = DEFAULT_NOTEBOOK_TIMEOUT_S,
) -> tuple[list[NotebookRun], list[dict]]:
    """Run `notebooks` in order into `out_dir` with a fresh records.json; returns (runs, records).
    With `progress` and a terminal (gpukit.bench.timing.progress_enabled: not under CI or
    TQDM_DISABLE): a line on stderr as each notebook starts, a bar over the notebooks and papermill's
    bar over the cells."""
    from tqdm.auto import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    record_path = out_dir / "records.json"
    record_path.unlink(missing_ok=True)
    runs = []
    shown = progress and progress_enabled()
    bar = tqdm(notebooks, desc="notebooks", unit="nb", disable=not shown, file=sys.stderr)
    for i, nb in enumerate(bar, 1):
        bar.set_postfix_str(nb.stem)
        if shown:
            tqdm.write(f"[{i}/{len(notebooks)}] {nb.name} ...", file=sys.stderr)
        run = run_notebook(
            nb,
            out_dir,
            quick=quick,
            timeout_s=timeout_s,
            record_path=record_path,
            progress_bar=shown,
            notebook_timeout_s=notebook_timeout_s,
        )
        tqdm.write(f"{'ok    ' if run.ok else 'FAILED'} {run.notebook} ({run.seconds:.1f} s) {run.error}")
        runs.append(run)
    return runs, read_records(record_path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m gpukit.course.runbook", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--out", default="build/notebooks", help="folder for executed notebooks and records")
    parser.add_argument("--quick", action="store_true", help="QUICK=True: small sizes (also GPUKIT_QUICK=1)")
    parser.add_argument(
        "--only", action="append", metavar="NN", help="run notebooks whose name starts with NN"
    )
    parser.add_argument("--notebooks", default=None, help="folder of notebooks (default: the course's)")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="seconds per cell")
    parser.add_argument(
        "--notebook-timeout",
        type=int,
        default=DEFAULT_NOTEBOOK_TIMEOUT_S,
        help=f"wall-clock seconds per notebook (default {DEFAULT_NOTEBOOK_TIMEOUT_S})",
    )
    args = parser.parse_args(argv)
    quick = args.quick or quick_from_env()
    try:
        if args.timeout <= 0:
            raise ValueError(f"--timeout must be a positive number of seconds, got {args.timeout}")
        if args.notebook_timeout <= 0:
            raise ValueError(
                f"--notebook-timeout must be a positive number of seconds, got {args.notebook_timeout}"
            )
        books = discover(args.notebooks or notebook_dir(), args.only)
        if not books:
            raise ValueError(f"no NN_*.ipynb notebooks in {args.notebooks or notebook_dir()}")
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    env = environment(quick=quick)
    header = (
        f"gpukit run: {len(books)} notebook(s), {'QUICK' if quick else 'full'} mode, "
        f"{describe_environment(env)} -> {args.out}"
    )
    print(header, flush=True)
    t0 = time.perf_counter()
    runs, records = run_all(
        books, args.out, quick=quick, timeout_s=args.timeout, notebook_timeout_s=args.notebook_timeout
    )
    summary = {
        "env": env,
        "quick": quick,
        "seconds": round(time.perf_counter() - t0, 2),
        "runs": [asdict(r) for r in runs],
        "records": records,
    }
    write_json(summary, Path(args.out, "summary.json"))
    print()
    print(summarize(runs, records))
    return 0 if all(r.ok for r in runs) else 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
