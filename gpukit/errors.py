"""Input validation helpers: one-line ValueErrors that name the field and what is allowed."""

from __future__ import annotations

import difflib
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


def require_positive(name: str, value, allow_zero: bool = False) -> float:
    """Return `value` as float, or raise ValueError: finite and > 0 (or >= 0)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    except OverflowError:  # an int beyond float range (10**400)
        what = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise ValueError(f"{name} must be {what}, got an integer beyond float range") from None
    if x != x or x in (float("inf"), float("-inf")) or x < 0 or (x == 0 and not allow_zero):
        what = "a finite number >= 0" if allow_zero else "a finite number > 0"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return x


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
