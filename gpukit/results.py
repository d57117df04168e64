"""Ground floor for result objects: JSON-safe values and pandas tables, written once.

Every calculator's frozen result offers `.to_json_dict()` (inf/nan become null, via `json_safe`) and
`.to_frame()` (a pandas DataFrame, via `frame`; pandas is imported lazily so that importing a
calculator stays cheap). `format_table` is the one fixed-width text table (CLI text output, bench
results, the notebook runbook's summary). `dumps` is the one JSON encoder (CLI output, result files): numpy scalars,
objects with `to_json_dict()`/`to_dict()`, anything else as its string. The CLI's JSON contract (issue
25, docs/schemas/): `stable_keys` fixes a payload's keys (null where one does not apply) and `whole_bytes`
makes every byte count an int. No I/O here: writing files
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


def is_bytes_key(key) -> bool:
    """Whether a JSON key names a byte count: `bytes` or a name ending in `_bytes`."""
    return isinstance(key, str) and (key == "bytes" or key.endswith("_bytes"))


def whole_bytes(v, key=None):
    """`v` with every byte count an int (bytes are whole: round to the nearest, issue 25): the value of
    a key that `is_bytes_key` (a number, or each number of a map under that key, such as
    `comm_per_gpu_bytes: {"tp_activations": ...}`), through dicts, lists and tuples. Non-finite
    floats become None (as in `json_safe`); booleans and other values are left alone."""
    if isinstance(v, dict):
        inside = is_bytes_key(key)
        return {
            k: whole_bytes(x, k if not inside or isinstance(x, (dict, list)) else key) for k, x in v.items()
        }
    if isinstance(v, (list, tuple)):
        return [whole_bytes(x, key if is_bytes_key(key) else None) for x in v]
    if is_bytes_key(key) and isinstance(v, float):
        return int(round(v)) if math.isfinite(v) else None
    return v


def stable_keys(payload: dict, keys) -> dict:
    """`payload` with exactly `keys`, in that order: a key the options left out is present as None (the
    contract of issue 25: the same keys whatever options are given). A key of `payload` not in `keys`
    is a ValueError: a new key must join the list (and its subcommand's JSON schema, docs/schemas/)."""
    extra = [k for k in payload if k not in keys]
    if extra:
        raise ValueError(f"JSON keys {extra} are not in the subcommand's key list; add them there")
    return {k: payload.get(k) for k in keys}


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
