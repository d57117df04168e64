"""Input validation helpers: one-line ValueErrors that name the field and what is allowed."""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable


def require_positive_int(name: str, value, allow_zero: bool = False) -> int:
    """Return `value` as int, or raise ValueError naming `name` (positive integer expected)."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    lo = 0 if allow_zero else 1
    if not ok or value < lo:
        what = "a non-negative integer" if allow_zero else "a positive integer"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return value


def require_finite(name: str, value) -> float:
    """Return `value` as a finite float, or raise ValueError naming `name`: the one finite-number
    check of gpukit (bools, strings, nan, inf and ints beyond float range are refused)."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float range (10**400)
        raise ValueError(f"{name} must be a finite number, got an integer beyond float range") from None
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return x


def require_positive(name: str, value, allow_zero: bool = False) -> float:
    """Return `value` as float, or raise ValueError: finite and > 0 (or >= 0)."""
    what = "a finite number >= 0" if allow_zero else "a finite number > 0"
    try:
        x = require_finite(name, value)
    except ValueError as e:
        raise ValueError(str(e).replace("a finite number", what, 1)) from None
    if x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return x


def check_finite(what: str, *values: float) -> None:
    """Results that left float range (inputs near 1e308): ValueError "inputs too large: <what>
    overflows a float", instead of an inf or nan in the output."""
    try:
        total = math.fsum(values)  # raises OverflowError when finite parts overflow together
    except OverflowError:
        total = math.inf
    if not all(math.isfinite(v) for v in values) or not math.isfinite(total):
        raise overflow_error(what)


def overflow_error(what: str) -> ValueError:
    """Inputs so large that a FLOP, byte or second count leaves float range (~1.8e308)."""
    return ValueError(f"inputs too large: {what} overflows a float (over 1e308); use smaller sizes")


def require_choice(name: str, value, allowed: Iterable[str]) -> str:
    """Return `value` if it is one of `allowed`, else ValueError listing them (with a suggestion)."""
    allowed = list(allowed)
    if value in allowed:
        return value
    hint = difflib.get_close_matches(str(value), allowed, n=1)
    dym = f" (did you mean {hint[0]!r}?)" if hint else ""
    raise ValueError(f"{name} must be one of {', '.join(map(str, allowed))}; got {value!r}{dym}")


def did_you_mean(kind: str, name: str, known: Iterable[str]) -> ValueError:
    """A ValueError for an unknown catalog name, with the closest known names."""
    known = sorted(known)
    hint = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
    if hint:
        return ValueError(f"unknown {kind} {name!r}; did you mean {', '.join(hint)}? (`gpukit {kind}s` lists all)")
    return ValueError(f"unknown {kind} {name!r}; known: {', '.join(known)}")
