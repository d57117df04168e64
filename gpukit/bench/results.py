"""BenchResult: the rows a benchmark measured, its environment stamp, a summary; JSON/CSV/text/pandas."""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpukit.results import dumps, fmt_cell, format_table, json_default


@dataclass(frozen=True)
class BenchResult:
    """Rows (one dict per measured configuration), the env stamp and summary figures of one run.

    `columns` orders the text table; `.to_json_dict()` gives {"kind", "env", "summary", "rows"}
    (the collectives worker's file contract: {"env": ..., "rows": [...]}).
    """

    kind: str
    rows: tuple[dict, ...]
    env: dict
    summary: dict = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    headers: tuple[str, ...] = ()  # display names for `columns` in to_text (default: the keys)

    def to_json_dict(self) -> dict:
        return {
            "kind": self.kind,
            "env": dict(self.env),
            "summary": dict(self.summary),
            "rows": [dict(r) for r in self.rows],
        }

    def to_frame(self):
        """The rows as a pandas DataFrame (pandas imported lazily)."""
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def to_text(self) -> str:
        """A fixed-width table of `columns`, then the summary and a one-line environment."""
        cols = list(self.columns) or (list(self.rows[0]) if self.rows else [])
        lines = [format_table(self.rows, cols, self.headers or None)] if self.rows else ["(no rows)"]
        for k, v in self.summary.items():
            if k == "spread_warning" and v is None:  # JSON keeps the key (null); the text says nothing
                continue
            lines.append(f"# {k}: {fmt_cell(v)}")
        e = self.env
        lines.append(
            f"# {e.get('label', '?')} {e.get('device_name', '?')} | torch {e.get('torch')} | "
            f"threads {e.get('threads')} | world_size {e.get('world_size')} | backend "
            f"{e.get('backend')} | bench v{e.get('benchmark_version')} | {e.get('hostname')} "
            f"{e.get('date')}"
        )
        return "\n".join(lines)

    def write(self, path: str | os.PathLike) -> Path:
        """Write to `path`: .csv (env and summary as '# ' JSON comment lines) or JSON otherwise."""
        path = Path(path)
        if path.suffix.lower() == ".csv":
            buf = io.StringIO()
            buf.write("# env: " + json.dumps(self.env, default=json_default) + "\n")
            buf.write("# summary: " + json.dumps(self.summary, default=json_default) + "\n")
            cols = list(dict.fromkeys(k for r in self.rows for k in r))
            w = csv.DictWriter(buf, fieldnames=cols)
            w.writeheader()
            w.writerows(self.rows)
            return write_text_atomic(path, buf.getvalue())
        return write_json(self.to_json_dict(), path)


def check_writable(path: str | os.PathLike, name: str = "--out") -> Path:
    """ValueError naming `name` unless a file can be written at `path`: called BEFORE a long run, so
    that minutes of measurement are not lost to a typo in the folder or a read-only location."""
    raw = str(path)
    if not raw.strip():
        raise ValueError(f"{name} is empty: give a file name")
    path = Path(path).expanduser()
    if path.is_dir():
        raise ValueError(f"{name} {raw}: is a folder, not a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{name} {raw}: the file is not writable")
    folder = path.parent
    while not folder.exists():  # write_text_atomic creates missing folders: the first existing one decides
        folder = folder.parent
    if not folder.is_dir():
        raise ValueError(f"{name} {raw}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"{name} {raw}: cannot write in {folder} (permission denied)")
    try:  # os.access says yes to root everywhere: try for real (a read-only mount, /proc)
        import tempfile

        with tempfile.NamedTemporaryFile(dir=folder, prefix=".gpukit-probe-"):
            pass
    except OSError as e:
        raise ValueError(
            f"{name} {raw}: cannot write in {folder} ({e.strerror or type(e).__name__})"
        ) from None
    return path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write via a temporary file and rename, so a reader never sees half a file; the temporary file
    is removed when the write fails (disk full, permission), so no `.tmp` is left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(payload: dict, path: str | os.PathLike) -> Path:
    """`payload` as JSON (gpukit.results.dumps), written atomically (write_text_atomic)."""
    return write_text_atomic(path, dumps(payload) + "\n")


def read_result(path: str | os.PathLike) -> dict:
    """Load a result file written by `BenchResult.write` (JSON, or CSV with '# ' header lines)."""
    path = Path(path)
    text = path.read_text()
    if path.suffix.lower() != ".csv":
        return json.loads(text)
    meta, body = {}, []
    for line in text.splitlines():
        if line.startswith("# ") and ":" in line:
            k, v = line[2:].split(":", 1)
            meta[k.strip()] = json.loads(v)
        else:
            body.append(line)
    rows = list(csv.DictReader(body))
    return {"env": meta.get("env", {}), "summary": meta.get("summary", {}), "rows": rows}
