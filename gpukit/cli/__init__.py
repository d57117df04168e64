"""The `gpukit` command line (also `python -m gpukit`).

Each subcommand family lives in gpukit/cli/<name>.py and exposes `register(subparsers)`, which adds
its parser and sets `func=handler`; a handler takes the parsed args and returns a dict (printed as
JSON with --json) or a printable object with `to_text()`. Bad input: exit code 2 and one line that
names the flag and what is allowed, never a traceback (API calls raise ValueError with that line).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import textwrap

from gpukit.bench.timing import quiet
from gpukit.results import dumps, json_safe, whole_bytes

# Modules under gpukit.cli that add subcommands, in help order. A missing module is an error:
# a partial install must fail loudly, not lose a command.
COMMAND_MODULES = (
    "memory",
    "catalogs",
    "validate",
    "compute",
    "comm",
    "bench",
    "calibrate",
    "netlab",
    "scaling",
    "parallel",
    "serve",
    "cost",
    "plan",
)


# An optional dependency a command needs -> the pip extra that brings it (pyproject.toml
# [project.optional-dependencies]); the calculators and their commands need none of these.
EXTRA_OF = {
    "torch": "bench",
    "matplotlib": "course",
    "seaborn": "course",
    "ipywidgets": "course",
    "papermill": "course",
    "nbformat": "course",
    "nbclient": "course",
    "jupyter_client": "course",
}


def missing_extra_message(err: ModuleNotFoundError, command: str | None) -> str | None:
    """One line for a command that imports an optional dependency this install lacks, else None."""
    top = (err.name or "").split(".")[0]
    if top not in EXTRA_OF:
        return None
    what = f"gpukit {command}" if command else "gpukit"
    return f"{what} needs {top}, which is not installed: pip install 'gpukit[{EXTRA_OF[top]}]'"


class CliError(Exception):
    """Raised for bad command-line input; printed as one line, exit code 2."""


# --help and the text output at a terminal stay within this many columns (issue 25: lines up to 320 wide)
TEXT_WIDTH = 120


def text_width() -> int:
    """TEXT_WIDTH, or the terminal's width (COLUMNS) where that is narrower."""
    return min(TEXT_WIDTH, shutil.get_terminal_size((TEXT_WIDTH, 24)).columns)


def fit_width(text: str, width: int | None = None) -> str:
    """Each line longer than width wrapped at spaces, continued under its own indent + 2 spaces; shorter
    lines (tables) as they are. A word longer than the width (a path) stays whole."""
    width = width or text_width()
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        indent = " " * (len(line) - len(line.lstrip()) + 2)
        out += textwrap.wrap(
            line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
        ) or [line]
    return "\n".join(out)


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog, **kwargs):
        kwargs["width"] = text_width()
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        # no prefix matching: `--mode inference` must be an unknown flag, not `--model inference`
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message):  # argparse's default prints usage + exits 2; we want one line
        raise CliError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="gpukit", description="Will it fit on one GPU? When does a cluster pay off?")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"gpukit.cli.{name}").register(sub)
    return parser


def _version() -> str:
    from gpukit import __version__

    return f"gpukit {__version__}"


def add_json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def emit(result, as_json: bool) -> None:
    """Print a handler's result: JSON (dicts, or objects with to_json_dict) or text (at a terminal,
    wrapped to text_width(); piped, as it is). The JSON is the contract of
    docs/schemas/<subcommand>.json: byte counts are ints, inf/nan are null (issue 25)."""
    if as_json:
        payload = result.to_json_dict() if hasattr(result, "to_json_dict") else result
        print(dumps(whole_bytes(json_safe(payload))))
    elif hasattr(result, "to_text"):
        text = result.to_text()
        print(fit_width(text) if sys.stdout.isatty() else text)
    elif isinstance(result, dict):
        width = max((len(str(k)) for k in result), default=0)
        for k, v in result.items():
            print(f"{k:<{width}}  {v}")
    elif result is not None:
        print(result)


def main(argv: list[str] | None = None) -> int:
    if argv is not None:  # in-process (tests, notebooks): the caller's interpreter keeps running
        return _main(argv)
    rc = _main(sys.argv[1:])
    timing = sys.modules.get("gpukit.bench.timing")
    if timing is not None and timing.abandoned_work():  # a watchdog timed out: work still runs in a thread
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)  # no interpreter teardown under a torch kernel in flight (run_with_watchdog)
    return rc


def _main(argv: list[str]) -> int:
    args = None
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0 if not argv else 2
        with quiet(getattr(args, "json", False)):  # progress goes to stderr, never beside --json
            result = args.func(args)
        emit(result, getattr(args, "json", False))
        return 0
    except (CliError, ValueError) as e:
        msg = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"error: {msg}" if not msg.startswith("gpukit") else msg, file=sys.stderr)
        return 2
    except ModuleNotFoundError as e:  # a light install (no gpukit[bench]) running `gpukit bench`, say
        msg = missing_extra_message(e, getattr(args, "command", None))
        if msg is None:
            raise
        print(f"error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM: one line (what was kept, where a suite says so), 130
        print((str(e).splitlines() or ["interrupted"])[0], file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
