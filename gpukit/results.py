"""Ground floor for result objects: JSON-safe values and pandas tables, written once.

Every calculator's frozen result offers `.to_json_dict()` (inf/nan become null, via `json_safe`) and
`.to_frame()` (a pandas DataFrame, via `frame`; pandas is imported lazily so that importing a
calculator stays cheap). `format_table` is the one fixed-width text table (CLI text output, bench
results, the notebook runbook's summary). `dumps` is the one JSON encoder (CLI output, result files): numpy scalars,
objects with `to_json_dict()`/`to_dict()`, anything else as its string. No I/O here: writing files
belongs to gpukit.bench.results (`write_json`, atomic).
"""

from __future__ import annotations

import json
import math


def json_safe(v):
    """`v` with every non-finite float (inf, nan) replaced by None, through dicts, lists and tuples."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def frame(rows, columns=None):
    """A pandas DataFrame of `rows` (dicts or tuples) with `columns` in that order."""
    import pandas as pd

    rows = list(rows)
    if columns is None and rows and isinstance(rows[0], dict):
        columns = list(rows[0])
    return pd.DataFrame(rows, columns=None if columns is None else list(columns))


def json_default(o):
    """json.dumps' `default`: numpy scalars as Python numbers, results as their JSON dict, else str."""
    if hasattr(o, "item"):
        return o.item()
    if hasattr(o, "to_json_dict"):
        return o.to_json_dict()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    return str(o)


def dumps(payload, indent: int | None = 2) -> str:
    """JSON text of `payload` (json_default for what json cannot encode by itself)."""
    return json.dumps(payload, indent=indent, default=json_default)


def fmt_cell(v) -> str:
    """A table cell: floats with 4 significant digits (1 decimal from 1000 up), nan/None as n/a."""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):  # never "inf GB/s": no rate when nothing took time
            return "n/a"
        return f"{v:.1f}" if abs(v) >= 1000 else f"{v:.4g}"
    return "n/a" if v is None else str(v)


def format_table(rows, columns, headers=None, *, formats=None, align: str = "right") -> str:
    """Fixed-width columns, header first. `rows`: dicts (read by `columns`) or sequences (in column
    order); `headers`: display names (default the columns); `formats`: {column: format spec like
    "{:.1f}", or a function} (default fmt_cell); `align`: "right" (numbers, nccl-tests style) or
    "left" (trailing blanks stripped)."""
    columns = list(columns)
    headers = [str(h) for h in (headers or columns)]
    formats = formats or {}

    def cell(c, v):
        f = formats.get(c)
        return fmt_cell(v) if f is None else f(v) if callable(f) else f.format(v)

    cells = [
        [cell(c, r.get(c) if isinstance(r, dict) else r[i]) for i, c in enumerate(columns)] for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in cells)) for i, h in enumerate(headers)]
    pad = (lambda x, w: x.rjust(w)) if align == "right" else (lambda x, w: x.ljust(w))
    lines = [headers] + cells
    return "\n".join(
        "  ".join(pad(x, w) for x, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )
