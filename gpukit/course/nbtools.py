"""Tiny helpers the notebooks call: environment line, parameter checks, QUICK sizes, records.

Each helper keeps a notebook cell short and behaves the same in JupyterLab and under papermill:

- `show_env()` prints the one-line environment report (setup cell of every notebook).
- `check_param(name, value, allowed)` stops a run with one line naming a bad parameter.
- `quick()` is True when GPUKIT_QUICK=1 (Binder, `make run --quick`): `QUICK = QUICK or nbtools.quick()`.
- `pick(QUICK, quick=..., full=...)` chooses sizes for QUICK mode (CI, Binder) or the full run.
- `gpu_only(what)` says "skipped: ... needs a CUDA device" on CPU machines (STYLE principle 7).
- `record(name, value, unit, note)` keeps a key figure for `make run`'s summary (gpukit.course.runbook).
- `check_answer(answer, expected)` is the check behind an exercise.
- `COURSE` / `course_map()` is the course map that README.md and notebook 00 show.
- `count_figures(nb)` counts the pictures (image/png outputs) an executed notebook holds
  (tests/test_binder.py check_executed: every notebook must keep at least one outside its widgets).

Used in: notebooks/00_start_here and every later notebook.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from gpukit.bench.results import write_json

RECORD_ENV = "GPUKIT_RECORD"  # path of the JSON list that record() appends to (set by gpukit.course.runbook)
NOTEBOOK_ENV = "GPUKIT_NOTEBOOK"  # name of the notebook being run headless (set by gpukit.course.runbook)


@dataclass(frozen=True)
class CourseEntry:
    """One notebook of the course: file stem, the question it answers, where it runs."""

    notebook: str
    question: str
    runs_on_cpu: str
    needs_gpu: str


# The course map, in teaching order. README.md and notebook 00 show it (tests/test_hygiene.py
# checks that every notebook file is listed here, in the README and in notebook 00).
COURSE: tuple[CourseEntry, ...] = (
    CourseEntry(
        "00_start_here",
        "What is in this course, does it run here, how do widgets and headless runs work?",
        "yes",
        "no",
    ),
    CourseEntry(
        "01_what_fits_on_one_gpu",
        "Will this model fit on one GPU, and where does the "
        "memory go (weights, gradients, optimizer, activations, KV cache)?",
        "yes",
        "no (GPU cells run when one is present)",
    ),
    CourseEntry(
        "02_fitting_tricks",
        "Which tricks make it fit (mixed precision, recompute, ZeRO, "
        "offload, LoRA, quantization) and what does each cost?",
        "yes",
        "no (GPU cells run when one is present)",
    ),
    CourseEntry(
        "03_compute_and_time",
        "How long will it take: FLOPs, MFU, roofline, time to train?",
        "yes",
        "no (GPU cells run when one is present)",
    ),
    CourseEntry(
        "04_communication",
        "When does a cluster pay off: collective costs, bandwidth, how data parallelism scales?",
        "yes (gloo on loopback)",
        "no (NCCL cells run when GPUs are present)",
    ),
    CourseEntry(
        "05_data_parallel_scaling",
        "How much faster does training get with more GPUs (real DDP): "
        "overlap, compression, accumulation, input-bound jobs, slow networks?",
        "yes (gloo on loopback; netlab as root)",
        "no (NCCL when GPUs are present)",
    ),
    CourseEntry(
        "06_beyond_data_parallel",
        "How do I split a model that does not fit: ZeRO/FSDP, tensor "
        "and pipeline parallelism, which 3D layout is fastest and why?",
        "yes (gloo on loopback: FSDP, ZeRO-1, TP, PP on 2 ranks)",
        "no",
    ),
    CourseEntry(
        "07_inference",
        "One GPU or many for serving: memory, prefill and decode on the roofline, "
        "tensor parallel vs replicas, latency against load, cost per million tokens?",
        "yes",
        "no (the CUDA decode cell runs when a GPU is present)",
    ),
    CourseEntry(
        "08_cluster_economics",
        "What does a run cost: prices, cost vs time with scaling efficiency, buy vs rent, spot?",
        "yes",
        "no",
    ),
    CourseEntry(
        "09_decide",
        "One GPU, one node or a cluster? The planner, the articles' rules and every claim audited",
        "yes",
        "no",
    ),
    CourseEntry(
        "10_moe_and_long_context",
        "One GPU or a cluster for today's models: mixture of experts (total vs active parameters, expert parallelism), long context (context parallelism), FP8 training, any model from its config.json",
        "yes (gloo on loopback: the EP all-to-all and ring attention on 2 ranks)",
        "no",
    ),
)


def course_map(notebook_dir: str | Path | None = None):
    """The course map as a pandas DataFrame, with `available` = the notebook file exists."""
    import pandas as pd

    folder = Path(notebook_dir) if notebook_dir else Path(__file__).resolve().parents[2] / "notebooks"
    rows = [
        {
            "notebook": c.notebook,
            "question": c.question,
            "runs on CPU?": c.runs_on_cpu,
            "needs a GPU?": c.needs_gpu,
            "available": (folder / f"{c.notebook}.ipynb").exists(),
        }
        for c in COURSE
    ]
    return pd.DataFrame(rows)


def show_env(quick: bool | None = None) -> dict:
    """Print the one-line environment report and return `gpukit.bench.envinfo.environment()`."""
    from gpukit.bench.envinfo import describe_environment, environment

    # No QUICK/full here: the setup cell runs before papermill's parameters cell sets QUICK.
    env = environment(quick=quick)
    print(f"Environment: {describe_environment(env)} | Python {env['python']} | gpukit {env['gpukit']}")
    return env


def _is_type_spec(allowed) -> bool:
    if isinstance(allowed, type):
        return True
    return isinstance(allowed, tuple) and len(allowed) > 0 and all(isinstance(a, type) for a in allowed)


def _same(a, b) -> bool:
    # 1 == True in Python; a parameter list [True, False] must not accept 1.
    return a == b and (
        type(a) is type(b)
        or (
            isinstance(a, numbers.Real)
            and isinstance(b, numbers.Real)
            and not isinstance(a, bool)
            and not isinstance(b, bool)
        )
    )


def check_param(name: str, value, allowed):
    """Return `value` if it is allowed, else raise ValueError with one line naming the parameter.

    `allowed` is one of: a type or tuple of types (`bool`, `(int, float)`; a bool is not an int
    here), a `range` of integers, a collection of allowed values (`["fp32", "bf16"]`), or a
    predicate `f(value) -> bool` whose docstring's first line says what is allowed.

    >>> check_param("DTYPE", "bf16", ["fp32", "bf16"])
    'bf16'
    >>> check_param("QUICK", "yes", bool)
    Traceback (most recent call last):
    ...
    ValueError: parameter QUICK must be of type bool; got 'yes' (str)
    """
    if _is_type_spec(allowed):
        types = allowed if isinstance(allowed, tuple) else (allowed,)
        ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
        if not ok:
            names = " or ".join(t.__name__ for t in types)
            raise ValueError(
                f"parameter {name} must be of type {names}; got {value!r} ({type(value).__name__})"
            )
        return value
    if isinstance(allowed, range):
        if not (isinstance(value, int) and not isinstance(value, bool) and value in allowed):
            step = f" in steps of {allowed.step}" if allowed.step != 1 else ""
            raise ValueError(
                f"parameter {name} must be an integer from {allowed.start} to "
                f"{allowed.stop - 1}{step}; got {value!r}"
            )
        return value
    if isinstance(allowed, Collection) and not isinstance(allowed, (str, bytes)):
        if not any(_same(value, a) for a in allowed):
            choices = ", ".join(repr(a) for a in allowed)
            raise ValueError(f"parameter {name} must be one of {choices}; got {value!r}")
        return value
    if callable(allowed):
        if not allowed(value):
            doc = (allowed.__doc__ or "").strip().splitlines()
            what = doc[0].rstrip(".") if doc else f"satisfy {getattr(allowed, '__name__', 'the check')}"
            raise ValueError(f"parameter {name} must be {what}; got {value!r}")
        return value
    raise TypeError(f"check_param: allowed must be a type, range, collection or predicate, got {allowed!r}")


def number(lo: float | None = None, hi: float | None = None, *, lo_open: bool = False):
    """A predicate for `check_param`: a finite real number (not a bool) from `lo` to `hi` (either end
    may be None: unbounded; lo_open=True excludes `lo`). Its docstring is the error's wording.

    >>> check_param("MFU", 0.4, number(0, 1, lo_open=True))
    0.4
    >>> check_param("RATE", 0, number(0, lo_open=True))
    Traceback (most recent call last):
    ...
    ValueError: parameter RATE must be a number > 0; got 0
    """

    def ok(x) -> bool:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            return False
        if lo is not None and (x <= lo if lo_open else x < lo):
            return False
        return hi is None or x <= hi

    low = "" if lo is None else f"{'>' if lo_open else '>='} {lo:g}"
    high = "" if hi is None else f"<= {hi:g}"
    ok.__doc__ = "a number " + (" and ".join(x for x in (low, high) if x) or "(any finite value)")
    return ok


def quick() -> bool:
    """True when GPUKIT_QUICK=1 (Binder's start script, `make run RUN_ARGS=--quick`) asks for QUICK.

    Notebooks apply it after the parameters cell: `QUICK = QUICK or nbtools.quick()`.
    """
    from gpukit.bench.envinfo import quick_from_env

    return quick_from_env()


def pick(is_quick: bool, /, *, quick, full):
    """`quick` in QUICK mode (CI, Binder), else `full`: `n = pick(QUICK, quick=256, full=2048)`."""
    return quick if is_quick else full


def has_cuda() -> bool:
    """True when torch sees a CUDA (or ROCm) device."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def gpu_only(what: str) -> bool:
    """True when a CUDA device is present; otherwise print one 'skipped: ...' line and return False.

    Use as `if nbtools.gpu_only("the CUDA matmul"): ...` so a CPU run says what it skipped.
    """
    if has_cuda():
        return True
    print(f"skipped: {what} needs a CUDA device (this machine: CPU only)")
    return False


def _plain(value):
    # numpy / torch scalars -> Python numbers so the record file stays plain JSON.
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"record value must be a real number, got {value!r}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def record(name: str, value, unit: str, note: str = "") -> dict:
    """Keep a key figure of this run for `make run`'s summary; returns the record.

    Appends {notebook, name, value, unit, note, time} to the JSON list at $GPUKIT_RECORD (set by
    gpukit.course.runbook); without that variable (an interactive session) nothing is written. Label CPU
    figures as CPU in `name` or `note`.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"record name must be a non-empty string, got {name!r}")
    rec = {
        "notebook": os.environ.get(NOTEBOOK_ENV, ""),
        "name": name,
        "value": _plain(value),
        "unit": str(unit),
        "note": str(note),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    path = os.environ.get(RECORD_ENV)
    if path:
        records = read_records(path)
        records.append(rec)
        write_json(records, Path(path))
    return rec


def read_records(path: str | Path) -> list[dict]:
    """The records written by `record()` (an empty list if the file does not exist yet)."""
    p = Path(path)
    if not p.exists():
        return []
    data = json.loads(p.read_text(encoding="utf-8") or "[]")
    if not isinstance(data, list):
        raise ValueError(f"{p}: expected a JSON list of records, got {type(data).__name__}")
    return data


def check_answer(answer, expected: float, rel_tol: float = 0.02, name: str = "answer") -> bool | None:
    """The check behind an exercise: prints whether `answer` is within `rel_tol` of `expected`.

    Returns None (and says so) while the answer is still None, so a headless run never fails on
    an unanswered exercise; True when close enough; False otherwise.
    """
    if answer is None:
        print(f"{name}: not answered yet (replace None with your number and run this cell again)")
        return None
    try:
        x = float(answer)
    except (TypeError, ValueError):
        print(f"{name}: expected a number, got {answer!r}")
        return False
    if math.isclose(x, expected, rel_tol=rel_tol):
        print(f"{name}: correct ({x:.4g})")
        return True
    direction = "too high" if x > expected else "too low"
    print(f"{name}: not quite: {x:.4g} is {direction} by {abs(x - expected) / abs(expected):.0%}")
    return False


def count_figures(notebook, *, mime: str = "image/png") -> int:
    """Number of `mime` outputs (default image/png: matplotlib's inline figures) in an executed notebook.

    `notebook` is a path or an nbformat NotebookNode. Widget views draw into ipywidgets Output areas,
    which a headless run saves as widget state, not as cell outputs: only figures shown outside
    widgets (plt.show(), a figure returned at the end of a cell) are counted.
    """
    if isinstance(notebook, (str, Path)):
        import nbformat

        notebook = nbformat.read(str(notebook), as_version=4)
    n = 0
    for cell in notebook.cells:
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") in ("display_data", "execute_result") and mime in out.get("data", {}):
                n += 1
    return n
