"""Ground floor for result objects: JSON-safe values and pandas tables, written once.

Every calculator's frozen result offers `.to_json_dict()` (inf/nan become null, via `json_safe`) and
`.to_frame()` (a pandas DataFrame, via `frame`; pandas is imported lazily so that importing a
calculator stays cheap). No I/O here: writing files belongs to gpukit.bench.results.
"""

from __future__ import annotations

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
