"""Ground floor for result objects: JSON-safe values and pandas tables, written once.

Every calculator's frozen result offers `.to_json_dict()` (inf/nan become null, via `json_safe`) and
`.to_frame()` (a pandas DataFrame, via `frame`; pandas is imported lazily so that importing a
calculator stays cheap). `dumps` is the one JSON encoder (CLI output, result files): numpy scalars,
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
