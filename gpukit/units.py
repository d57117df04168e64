"""Units, written down once: bytes per dtype, GB (1e9) vs GiB (2**30), formatting.

Convention (see gpukit/data/README.md): memory is reported in bytes and GiB (2**30), as DeepSpeed and
torch.cuda do; bandwidth is decimal GB/s (1e9 bytes/s), as nccl-tests and spec sheets do.
"""

from __future__ import annotations

import math

from gpukit.errors import require_finite

GB = 10**9  # decimal gigabyte (bandwidth, spec-sheet capacities)
GiB = 2**30  # binary gibibyte (memory actually allocatable)
MB = 10**6
MiB = 2**20

# Bytes per element. nf4/int4 are 0.5 byte; quantization constants are counted separately.
BYTES_PER_DTYPE: dict[str, float] = {
    "fp64": 8,
    "fp32": 4,
    "tf32": 4,
    "fp16": 2,
    "bf16": 2,
    "fp8": 1,
    "int8": 1,
    "int4": 0.5,
    "nf4": 0.5,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype` (fp32, bf16, fp16, fp8, int8, int4, nf4, ...)."""
    try:
        return BYTES_PER_DTYPE[dtype]
    except KeyError:
        raise ValueError(f"dtype must be one of {', '.join(BYTES_PER_DTYPE)}, got {dtype!r}") from None


def bytes_to_gib(n_bytes: float) -> float:
    return require_finite("n_bytes", n_bytes) / GiB


def bytes_to_gb(n_bytes: float) -> float:
    return require_finite("n_bytes", n_bytes) / GB


def gib_to_bytes(gib: float) -> int:
    return int(round(require_finite("gib", require_finite("gib", gib) * GiB)))


def gb_to_bytes(gb: float) -> int:
    return int(round(require_finite("gb", require_finite("gb", gb) * GB)))


def _shown(x) -> float | None:
    """float(x) for display, None when it has no finite value (the fmt_* functions print 'n/a')."""
    try:
        v = float(x)
    except (OverflowError, TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def fmt_bytes(n_bytes: float, binary: bool = True) -> str:
    """Human-readable size: '1.50 GiB' (binary, default) or '1.61 GB' (decimal)."""
    base, names = (
        (1024.0, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
        if binary
        else (1000.0, ["B", "kB", "MB", "GB", "TB", "PB"])
    )
    x = _shown(n_bytes)
    if x is None:
        return "n/a"
    for name in names:
        if abs(x) < base or name == names[-1]:
            return f"{x:.0f} {name}" if name == "B" else f"{x:.2f} {name}"
        x /= base
    return f"{x:.2f} {names[-1]}"  # pragma: no cover


def fmt_count(n: float) -> str:
    """1.23B / 456.7M / 12.3K style parameter counts."""
    v = _shown(n)
    if v is None:
        return "n/a"
    for div, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= div:
            return f"{v / div:.2f}{suffix}"
    return f"{v:.0f}"


def fmt_number(x: float) -> str:
    """A number in a table for reading: thousands separated from 100 up (19,694), 3 significant digits
    below (18.6, 0.308); 'n/a' without a finite value."""
    v = _shown(x)
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def fmt_seconds(s: float) -> str:
    """Seconds as us / ms / s / min / h / days."""
    v = _shown(s)
    if v is None:
        return "n/a"
    if v < 1e-3:
        return f"{v * 1e6:.1f} us"
    if v < 1:
        return f"{v * 1e3:.2f} ms"
    if v < 120:
        return f"{v:.2f} s"
    if v < 7200:
        return f"{v / 60:.1f} min"
    if v < 3 * 86400:
        return f"{v / 3600:.1f} h"
    return f"{v / 86400:.1f} days"


# ---- parsing sizes and counts typed by people (CLI flags, notebook parameters) ----
_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
_COUNT_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
_BYTE_UNITS = {
    "": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_BARE_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _no_comma(text, name: str) -> None:
    """A comma in one number is an error: '1,5B' is 1.5B in much of Europe and 15B to a parser that drops
    it, '1,500' is either. Say so rather than guess (a list of values is split before this is called)."""
    if "," in str(text):
        raise ValueError(f"{name} must use a decimal point and no commas (1.5B, 1_500_000), got {text!r}")


def parse_count(text, name: str = "count") -> float:
    """'2e12', '2T', '300B', '1.5M', '10k', '2_000' -> a finite float > 0 (K=1e3, M=1e6, B=G=1e9, T=1e12).
    A comma is an error (decimal comma or thousands separator: ambiguous)."""
    import re

    _no_comma(text, name)
    s = str(text).strip().replace("_", "")
    m = re.fullmatch(_NUMBER + r"\s*([kKmMbBgGtT]?)", s)
    if not m:
        raise ValueError(f"{name} must be a count like 2e12, 2T, 300B, 1.5M or 10K, got {text!r}")
    value = float(m.group(1)) * _COUNT_SUFFIX[m.group(2).upper()]
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite count > 0, got {text!r}")
    return value


def parse_bytes(text, name: str = "size", *, bare_binary: bool = False) -> int:
    """'1e9', '4096', '1GB' (10^9), '256MiB' (2^28), '64kB' -> whole bytes (units as above: kB/MB/GB/TB
    decimal, KiB/MiB/GiB/TiB binary). A bare K/M/G/T is refused as ambiguous, unless `bare_binary`
    (nccl-tests' -b/-e convention: 64K = 65536)."""
    import re

    _no_comma(text, name)
    s = str(text).strip().replace("_", "")
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-z]*)", s)
    unit = m.group(2).upper() if m else None
    units = {**_BYTE_UNITS, **_BARE_BINARY} if bare_binary else _BYTE_UNITS
    if not m or unit not in units:
        hint = "64K (binary), 1MB, 256MiB" if bare_binary else "1e9, 4096, 1GB (10^9) or 256MiB (2^28)"
        raise ValueError(f"{name} must be a size like {hint}, got {text!r}")
    value = float(m.group(1)) * units[unit]
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite size, got {text!r}")
    if not value.is_integer():  # 1.5 bytes: a typo, not a message size
        raise ValueError(f"{name} must be a whole number of bytes, got {text!r} = {value:g} bytes")
    return int(value)


def parse_size(text, name: str = "sizes") -> int:
    """'1K' -> 1024, '64K', '16M', '1G', '4096' -> bytes.

    Bare K/M/G are binary, as nccl-tests' -b/-e flags; KiB/MiB/GiB binary; kB/KB/MB/GB decimal
    (as parse_bytes).
    """
    err = f"{name} must be positive byte counts like 1K, 64K, 1M, 16M (binary, as nccl-tests); got {text!r}"
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if not (math.isfinite(text) and text >= 1 and int(text) == text):
            raise ValueError(err)
        return int(text)
    try:
        value = parse_bytes(text, name, bare_binary=True)
    except ValueError:
        raise ValueError(err) from None
    if value < 1:
        raise ValueError(err)
    return value


def parse_sizes(sizes, name: str = "sizes") -> list[int]:
    """'1K,64K,1M' or an iterable of sizes -> sorted unique byte counts (parse_size each): the
    message sizes of every command that moves data (collectives, netlab bench)."""
    items = sizes.split(",") if isinstance(sizes, str) else list(sizes)
    out = sorted({parse_size(s, name) for s in items if str(s).strip()})
    if not out:
        raise ValueError(f"{name} must list at least one size, e.g. 1K,64K,1M")
    return out
