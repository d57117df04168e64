"""What this machine is, and the stamp written into every benchmark result (STYLE.md principle 6).

`environment()` returns a plain dict (JSON-safe); `describe_environment()` says it in one line,
e.g. "CPU only, 2 threads, torch 2.13.0+cpu" or "1x NVIDIA H100 80GB HBM3, torch 2.13.0+cu128".
A number without its machine is not a result: `env_stamp()` adds device, versions, threads, world
size, backend, benchmark version and UTC date to every result file. torch is imported inside the
functions so that importing this module stays cheap.

Used in: every notebook's setup cell (`gpukit.course.nbtools.show_env`), every benchmark result.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import socket
import sys
from collections import Counter

QUICK_ENV = "GPUKIT_QUICK"  # "1"/"true"/"yes": notebooks and benchmarks pick small sizes


def quick_from_env(environ: dict | None = None) -> bool:
    """True when the GPUKIT_QUICK environment variable asks for QUICK mode (1, true, yes, on)."""
    value = (os.environ if environ is None else environ).get(QUICK_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def _cpu_model() -> str:
    # platform.processor() is empty on most Linux builds; /proc/cpuinfo names the part.
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_cpuinfo(text: str) -> dict:
    """What the CPU is, from /proc/cpuinfo text (the first processor): vendor, family, model,
    model_name, mhz, flags (a frozenset). Missing lines are left out of the dict."""
    info: dict = {}
    keys = {
        "vendor_id": ("vendor", str),
        "cpu family": ("family", int),
        "model": ("model", int),
        "model name": ("model_name", str),
        "cpu MHz": ("mhz", float),
        "flags": ("flags", None),
    }
    for line in text.splitlines():
        if not line.strip() and info:
            break  # the end of the first processor's block
        key, sep, value = line.partition(":")
        key = key.strip()
        if not sep or key not in keys:
            continue
        name, kind = keys[key]
        if name in info:
            continue
        try:
            info[name] = frozenset(value.split()) if kind is None else kind(value.strip())
        except ValueError:
            continue
    return info


def cpu_identity(path: str = "/proc/cpuinfo") -> dict:
    """parse_cpuinfo of this machine's /proc/cpuinfo ({} where it cannot be read: not Linux).
    gpukit.compute.cpu_roofline.cpu_peak_from_identity turns it into a peak estimate."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return {}


def _usable_cpus() -> int:
    # Containers often pin fewer cores than os.cpu_count() reports; affinity is what we can use.
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def environment(quick: bool | None = None) -> dict:
    """The environment as a JSON-safe dict.

    Keys: python, os, hostname, cpu_model, cpu_count (logical CPUs usable by this process),
    torch, torch_threads, cuda_available, cuda_version, device_count, devices (list of
    {name, memory_gib}), gpukit, quick (argument, else GPUKIT_QUICK). torch missing -> torch None.
    """
    from gpukit import __version__

    env: dict = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "os": f"{platform.system()} {platform.release()}",
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_count": _usable_cpus(),
        "torch": None,
        "torch_threads": None,
        "cuda_available": False,
        "cuda_version": None,
        "device_count": 0,
        "devices": [],
        "gpukit": __version__,
        "quick": quick_from_env() if quick is None else bool(quick),
    }
    try:
        import torch
    except ImportError:  # the calculators work without torch; say so instead of failing
        return env
    env["torch"] = torch.__version__
    env["torch_threads"] = torch.get_num_threads()
    env["cuda_version"] = torch.version.cuda or getattr(torch.version, "hip", None)
    if torch.cuda.is_available():
        env["cuda_available"] = True
        env["device_count"] = torch.cuda.device_count()
        for i in range(env["device_count"]):
            props = torch.cuda.get_device_properties(i)
            env["devices"].append({"name": props.name, "memory_gib": round(props.total_memory / 2**30, 1)})
    return env


def describe_environment(env: dict | None = None) -> str:
    """One line: "CPU only, 2 threads, torch 2.13.0+cpu" or "1x NVIDIA H100 80GB HBM3, torch ...".

    Pass a dict from `environment()` to describe another machine (e.g. a result file's stamp).
    """
    env = environment() if env is None else env
    torch_part = f"torch {env['torch']}" if env.get("torch") else "torch not installed"
    devices = env.get("devices") or []
    if devices:
        counts = Counter(d["name"] for d in devices)
        gpus = ", ".join(f"{n}x {name}" for name, n in counts.items())
        return f"{gpus}, {torch_part}"
    threads = env.get("torch_threads") or env.get("cpu_count")
    unit = "thread" if threads == 1 else "threads"
    return f"CPU only, {threads} {unit}, {torch_part}"


# Bump when the measuring method changes (warm-up, repeats, byte counting), so old files are not
# compared with new ones as if they were the same experiment.
BENCH_VERSION = "1"


def device_name(device: str) -> str:
    """'NVIDIA H100 80GB HBM3' for cuda (current device), the CPU model for cpu."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(torch.cuda.current_device())
    return environment()["cpu_model"]


@functools.lru_cache(maxsize=1)
def nvidia_driver_version() -> str | None:
    """The NVIDIA driver version ('570.124.06', nvidia-smi's driver_version), None where nvidia-smi
    is absent or fails (torch reports the CUDA runtime it was built with, not the driver)."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    return lines[0].strip() if out.returncode == 0 and lines else None


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def env_stamp(
    device: str = "cpu",
    *,
    threads: int | None = None,
    world_size: int = 1,
    backend: str | None = None,
    **extra,
) -> dict:
    """A flat JSON-safe dict describing where and how a benchmark ran; `extra` keys are added as given."""
    import torch

    machine = environment()
    stamp = {
        "benchmark_version": BENCH_VERSION,
        "gpukit_version": machine["gpukit"],
        "date": utc_now(),
        "hostname": machine["hostname"],
        "os": machine["os"],
        "python": machine["python"],
        "torch": machine["torch"],
        "cuda": machine["cuda_version"],
        "device": device,
        "device_name": device_name(device),
        "label": "GPU" if device == "cuda" else "CPU",
        "cpu_model": machine["cpu_model"],
        "cpu_count": machine["cpu_count"],
        "threads": int(threads) if threads is not None else torch.get_num_threads(),
        "world_size": int(world_size),
        "backend": backend,
    }
    if device == "cuda":
        major, minor = torch.cuda.get_device_capability()
        stamp["gpu_capability"] = f"{major}.{minor}"
        stamp["gpu_count"] = machine["device_count"]
        stamp["driver"] = nvidia_driver_version()
    stamp.update(extra)
    return stamp
