"""Input validation helpers: one-line ValueErrors that name the field and what is allowed."""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Iterable

# The largest count of things a machine or a run has (GPUs, sequences per micro-batch, micro-steps): a
# larger one is a typo (1e20 sequences), and it would carry astronomically large numbers into every result.
MAX_COUNT = 10**9
# The largest parameter count a calculator takes: 10^15, about 500x the largest published models (a larger one
# is a typo, and its byte counts would leave float range).
MAX_N_PARAMS = 10**15


def require_positive_int(name: str, value, allow_zero: bool = False, at_most: int | None = None) -> int:
    """Return `value` as int, or raise ValueError naming `name` (positive integer expected; with
    `at_most`, no larger than it)."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        value, ok = int(value), True
    lo = 0 if allow_zero else 1
    if not ok or value < lo:
        what = "a non-negative integer" if allow_zero else "a positive integer"
        raise ValueError(f"{name} must be {what}, got {value!r}")
    if at_most is not None and value > at_most:
        raise ValueError(f"{name} must be at most {at_most:,}, got {value:,}")
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


def finite_result(what: str, value: float) -> float:
    """`value` when finite, else the overflow ValueError (check_finite): a quotient of valid inputs that
    leaves float range (1 / 1e-320) is an error, never an inf or nan in a result."""
    check_finite(what, value)
    return value


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


def named_field(name: str, fn, *args, **kwargs):
    """fn(*args, **kwargs), its ValueError prefixed with `name` ("--inter-link: unknown link 'ibndr'; ..."):
    which of two flags or fields that take the same kind of value (--link, --inter-link) holds the typo."""
    try:
        return fn(*args, **kwargs)
    except ValueError as e:
        msg = str(e).splitlines()[0] if str(e) else "invalid value"
        raise ValueError(msg if msg.startswith(f"{name}:") else f"{name}: {msg}") from None


def did_you_mean(kind: str, name: str, known: Iterable[str]) -> ValueError:
    """A ValueError for an unknown catalog name, with the closest known names."""
    known = sorted(known)
    hint = difflib.get_close_matches(name.lower(), known, n=3, cutoff=0.5)
    if hint:
        return ValueError(
            f"unknown {kind} {name!r}; did you mean {', '.join(hint)}? (`gpukit {kind}s` lists all)"
        )
    return ValueError(f"unknown {kind} {name!r}; known: {', '.join(known)}")


# The longest wall-clock limit a run accepts: one week. Beyond it, timedelta overflows (1e300 s) or
# the C++ side of torch.distributed wraps its millisecond count and reports a false timeout (1e10 s).
MAX_TIMEOUT_S = 7 * 24 * 3600.0


def require_timeout(name: str, value) -> float:
    """A timeout in seconds: finite, > 0 and at most MAX_TIMEOUT_S (one week); ValueError naming `name`."""
    x = require_positive(name, value)
    if x > MAX_TIMEOUT_S:
        raise ValueError(f"{name} must be at most {MAX_TIMEOUT_S:g} s (one week), got {value!r}")
    return x


def _arg_type(check):
    """An argparse type from a checker that raises ValueError (the message becomes argparse's)."""

    def convert(text):
        try:
            return check(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = check.__name__
    return convert


def _timeout(text):
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"expected seconds (a number), got {text!r}") from None
    return require_timeout("seconds", v)


def _count(text, lo: int):
    try:
        v = int(text)
    except ValueError:
        raise ValueError(f"expected an integer >= {lo}, got {text!r}") from None
    if v < lo:
        raise ValueError(f"expected an integer >= {lo}, got {text!r}")
    if v > 10**9:  # a count this large is a typo; it would run for years or exhaust memory
        raise ValueError(f"expected an integer at most 1e9, got {text!r}")
    return v


def _finite(text):
    return require_positive("value", text, allow_zero=True)


# argparse types shared by the subcommands: seconds (finite, > 0, at most a week), counts >= 1 or
# >= 0, a finite number >= 0. A bad value exits 2 with argparse's one line naming the flag.
timeout_arg = _arg_type(_timeout)
positive_int_arg = _arg_type(lambda t: _count(t, 1))
nonnegative_int_arg = _arg_type(lambda t: _count(t, 0))
nonnegative_float_arg = _arg_type(_finite)
positive_float_arg = _arg_type(lambda t: require_positive("value", t))


def require_n_params(value, name: str = "n_params") -> float:
    """A parameter count: finite, > 0 and at most MAX_N_PARAMS (one line naming the field otherwise)."""
    x = require_positive(name, value)
    if x > MAX_N_PARAMS:
        raise ValueError(f"{name} must be at most {MAX_N_PARAMS:.0e} (10^15 parameters), got {value!r}")
    return x
