"""Calibration profiles: what `gpukit calibrate` measured on a machine, read back for the calculators.

The file contract (JSON, written by `gpukit calibrate`, read here and nowhere else):

    {"version": 1,
     "device": {...},                                   # free-form: name, kind (cpu/cuda), ...
     "matmul_tflops": {"fp32": x, "bf16": y, ...},      # measured dense matmul TFLOP/s per dtype
     "memory_bandwidth_gbps": {"copy": a, "triad": b},  # measured, decimal GB/s
     "links": {"<name>": {"alpha_us": .., "beta_gbps": ..}},  # fitted alpha-beta per link
     "env": {...}}                                      # environment stamp of the run

A profile replaces spec-sheet peaks with measured ones: gpukit.compute.time_to_train uses
`matmul_tflops`, gpukit.cli.comm uses `links` (alpha in microseconds, bandwidth in decimal GB/s,
the Hockney model of gpukit.comm). Errors name the file and the key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gpukit.errors import require_positive

PROFILE_VERSION = 1


@dataclass(frozen=True)
class LinkFit:
    """A fitted link: per-message latency alpha (us) and bandwidth (decimal GB/s)."""

    alpha_us: float
    beta_gbps: float

    @property
    def alpha_s(self) -> float:
        return self.alpha_us * 1e-6


@dataclass(frozen=True)
class Profile:
    """A calibration profile (see the module docstring for the JSON it comes from)."""

    version: int
    device: dict
    matmul: tuple[tuple[str, float], ...]  # (dtype, measured TFLOP/s)
    memory_bandwidth: tuple[tuple[str, float], ...]  # (kernel, GB/s)
    links: tuple[tuple[str, LinkFit], ...]
    env: dict
    source: str = "<dict>"

    @property
    def device_name(self) -> str:
        d = self.device
        return str(d.get("name") or d.get("device_name") or d.get("kind") or "unknown device")

    def matmul_tflops(self, dtype: str) -> float:
        """Measured matmul TFLOP/s for `dtype`; ValueError listing the dtypes the profile has."""
        table = dict(self.matmul)
        if dtype not in table:
            raise ValueError(
                f"profile {self.source} has no matmul_tflops for dtype {dtype!r}; "
                f"it has: {', '.join(table) or 'none'}"
            )
        return table[dtype]

    def memory_bandwidth_gbps(self, kernel: str = "triad") -> float:
        table = dict(self.memory_bandwidth)
        if kernel not in table:
            raise ValueError(
                f"profile {self.source} has no memory_bandwidth_gbps[{kernel!r}]; "
                f"it has: {', '.join(table) or 'none'}"
            )
        return table[kernel]

    def link(self, name: str) -> LinkFit:
        table = dict(self.links)
        if name not in table:
            raise ValueError(
                f"profile {self.source} has no link {name!r}; it has: {', '.join(table) or 'none'}"
            )
        return table[name]

    def has_link(self, name: str) -> bool:
        return name in dict(self.links)

    def to_json_dict(self) -> dict:
        return {
            "version": self.version,
            "device": dict(self.device),
            "matmul_tflops": dict(self.matmul),
            "memory_bandwidth_gbps": dict(self.memory_bandwidth),
            "links": {k: {"alpha_us": v.alpha_us, "beta_gbps": v.beta_gbps} for k, v in self.links},
            "env": dict(self.env),
        }


# Sane ranges of measured values: (lowest, highest). A value outside is a broken or hand-edited file
# (beta 1e-300 GB/s would make every predicted time astronomically long without a word). Generous:
# from a slow CPU (1 MFLOP/s, 1 kB/s) to 100x today's fastest GPU or link.
SANE = {
    "matmul_tflops": (1e-6, 1e5),
    "memory_bandwidth_gbps": (1e-6, 1e5),
    "beta_gbps": (1e-6, 1e5),
    "alpha_us": (0.0, 1e7),
}


def profile_number(src: str, key: str, value, kind: str | None = None) -> float:
    try:  # one finite check (errors.require_positive): JSON numbers only, "1.5" in quotes is refused
        if isinstance(value, str):
            raise ValueError(value)
        value = require_positive(key, value)
    except ValueError:
        raise ValueError(f"{src}: {key} must be a finite number > 0, got {value!r}") from None
    if kind is not None:
        lo, hi = SANE[kind]
        if not lo <= value <= hi:
            raise ValueError(
                f"{src}: {key} must be in [{lo:g}, {hi:g}] (a sane measured value), got {value!r}"
            )
    return float(value)


def _mapping(src: str, data: dict, key: str) -> dict:
    if key not in data:
        raise ValueError(
            f"{src}: missing key {key!r} (profile version {PROFILE_VERSION} needs version, device, "
            "matmul_tflops, memory_bandwidth_gbps, links, env)"
        )
    value = data[key]
    if not isinstance(value, dict):
        raise ValueError(f"{src}: {key} must be an object, got {type(value).__name__}")
    return value


def profile_from_dict(data: dict, source: str = "<dict>") -> Profile:
    """Validate a decoded profile; ValueError naming `source` and the missing or bad key."""
    if not isinstance(data, dict):
        raise ValueError(f"{source}: a profile must be a JSON object, got {type(data).__name__}")
    if "version" not in data:
        raise ValueError(f"{source}: missing key 'version'")
    if data["version"] != PROFILE_VERSION:
        raise ValueError(f"{source}: version must be {PROFILE_VERSION}, got {data['version']!r}")
    device = _mapping(source, data, "device")
    env = _mapping(source, data, "env")
    mm = _mapping(source, data, "matmul_tflops")
    if not mm:
        raise ValueError(f"{source}: matmul_tflops is empty (needs at least one dtype, e.g. fp32)")
    matmul = tuple(
        (str(k), profile_number(source, f"matmul_tflops[{k!r}]", v, "matmul_tflops")) for k, v in mm.items()
    )
    bw = _mapping(source, data, "memory_bandwidth_gbps")
    bandwidth = tuple(
        (str(k), profile_number(source, f"memory_bandwidth_gbps[{k!r}]", v, "memory_bandwidth_gbps"))
        for k, v in bw.items()
    )
    links = []
    for name, fit in _mapping(source, data, "links").items():
        if not isinstance(fit, dict):
            raise ValueError(f"{source}: links[{name!r}] must be an object with alpha_us and beta_gbps")
        for k in ("alpha_us", "beta_gbps"):
            if k not in fit:
                raise ValueError(f"{source}: links[{name!r}] is missing key {k!r}")
        alpha = fit["alpha_us"]
        if (
            isinstance(alpha, bool)
            or not isinstance(alpha, (int, float))
            or not math.isfinite(alpha)
            or alpha < 0
        ):
            raise ValueError(
                f"{source}: links[{name!r}].alpha_us must be a finite number >= 0, got {alpha!r}"
            )
        if alpha > SANE["alpha_us"][1]:
            raise ValueError(
                f"{source}: links[{name!r}].alpha_us must be at most {SANE['alpha_us'][1]:g} "
                f"(a sane measured value), got {alpha!r}"
            )
        links.append(
            (
                str(name),
                LinkFit(
                    float(alpha),
                    profile_number(source, f"links[{name!r}].beta_gbps", fit["beta_gbps"], "beta_gbps"),
                ),
            )
        )
    return Profile(
        version=PROFILE_VERSION,
        device=dict(device),
        matmul=matmul,
        memory_bandwidth=bandwidth,
        links=tuple(links),
        env=dict(env),
        source=source,
    )


def load_profile(path) -> Profile:
    """Read and validate the calibration profile at `path` (JSON, contract in the module docstring)."""
    if path is None or not str(path).strip():  # '' would be the current folder, or silently "no profile"
        raise ValueError(
            "profile path is empty: give a profile file (gpukit calibrate writes one), or no --profile"
        )
    p = Path(path)
    if not p.exists():
        raise ValueError(f"profile file {p} not found")
    if not p.is_file():
        raise ValueError(f"profile file {p} is not a file")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{p}:{e.lineno}:{e.colno}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno})"
        ) from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not valid JSON (not UTF-8 text: {e.reason} at byte {e.start})") from None
    except RecursionError:
        raise ValueError(f"{p}: not valid JSON for a profile (nested too deeply)") from None
    except OSError as e:
        raise ValueError(f"profile file {p}: cannot read ({e.strerror or type(e).__name__})") from None
    return profile_from_dict(data, source=str(p))
