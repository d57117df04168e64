"""argparse types of every subcommand, in one place: each converts a flag's text or raises argparse's
error with one line (then `gpukit`'s "error: ...: argument --x: <line>", exit 2).

Built on the ground floor's parsers: counts on gpukit.units.parse_count (the one count parser: 7B,
2e12, 1.5T, 350k), integers on gpukit.errors.positive_int_arg (>= 1, at most 1e9: a larger count is a
typo) or any size for a calculator's own count. A parser that raises ValueError becomes a type with `arg_type`.
"""

from __future__ import annotations

import argparse

from gpukit.errors import nonnegative_float_arg, nonnegative_int_arg, positive_int_arg, timeout_arg
from gpukit.units import parse_count as units_parse_count

__all__ = [
    "arg_type",
    "bounded_int",
    "count",
    "count_list",
    "fraction",
    "int_list",
    "nonnegative_float",
    "nonnegative_int",
    "param_count",
    "parse_count",
    "parse_param_count",
    "positive_float",
    "positive_int",
    "price",
    "timeout",
]


def arg_type(parse, what: str | None = None):
    """An argparse `type` from a parser that raises ValueError: its one line becomes argparse's error
    (or "`what`, got 'text'" when `what` is given)."""

    def convert(text):
        try:
            return parse(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e) if what is None else f"{what}, got {text!r}") from None

    convert.__name__ = getattr(parse, "__name__", "value")  # argparse names the type in its message
    return convert


def _int_at_least_1(text) -> int:
    v = int(text)
    if v < 1:
        raise ValueError(text)
    return v


# Two integer types, for two different questions: a calculator's count (tokens per GPU, batch, GPUs:
# any size, the API says where its own limit is and why) and a count of things a run does or a
# machine has (repeats, threads, ranks, ports: above 1e9 a typo that would run for years).
positive_int = arg_type(_int_at_least_1, "must be an integer >= 1")
bounded_int = positive_int_arg  # an integer in [1, 1e9]
nonnegative_int = nonnegative_int_arg  # an integer >= 0 (at most 1e9)
nonnegative_float = nonnegative_float_arg  # a finite number >= 0
timeout = timeout_arg  # seconds, finite, > 0, at most a week


def _positive_float(text) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"expected a number > 0, got {text!r}") from None
    if not v > 0 or v == float("inf"):
        raise ValueError(f"expected a finite number > 0, got {text!r}")
    return v


def _fraction(text) -> float:
    v = _positive_float(text)
    if v > 1:
        raise ValueError(f"must be in (0, 1], got {text!r}")
    return v


def _price(text) -> float:
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"expected a price in USD >= 0, got {text!r}") from None
    if not (v >= 0 and v != float("inf")):
        raise ValueError(f"expected a finite price in USD >= 0, got {text!r}")
    return v


positive_float = arg_type(_positive_float)  # a finite number > 0
fraction = arg_type(_fraction)  # a share in (0, 1]
price = arg_type(_price)  # USD >= 0, finite


def parse_count(text) -> float:
    """'2e12', '2T', '300B', '1.5M', '10K', '2_000' -> a positive float (gpukit.units.parse_count)."""
    return units_parse_count(text, "count")


def parse_param_count(text, flag: str = "--params") -> int:
    """'7e9', '7B', '125M', '1.5T', '350k', '7_000' -> a whole parameter count >= 1 (units.parse_count)."""
    n = units_parse_count(text, flag)
    if n < 1:
        raise ValueError(f"{flag} must be at least 1, got {text!r}")
    return int(round(n))


def int_list(text, flag: str, example: str = "1,2,4,8") -> list[int]:
    """'N[,N...]' -> positive integers; ValueError naming `flag` for anything else (an empty item
    such as '1,,2', a zero, a sign, a decimal)."""
    parts = str(text).split(",")
    try:
        out = [int(x) for x in parts]
    except ValueError:
        out = []
    if not out or min(out) < 1:
        raise ValueError(f"{flag} must be comma-separated integers >= 1 like {example}; got {text!r}")
    return out


count = arg_type(parse_count)  # tokens, USD, any positive count with a suffix
param_count = arg_type(parse_param_count)  # --params
count_list = arg_type(lambda text: int_list(text, "GPU counts", "8,16,32"))  # --gpus N[,N...]
