"""What this machine is: Python, torch, CPU threads, GPUs, QUICK mode. The report notebooks print.

`environment()` returns a plain dict (JSON-safe); `describe_environment()` says it in one line,
e.g. "CPU only, 2 threads, torch 2.13.0+cpu" or "1x NVIDIA H100 80GB HBM3, torch 2.13.0+cu128".
torch is imported inside the functions so that `import gpukit.envinfo` stays cheap.

Used in: notebooks/00_start_here (setup cell of every notebook via `gpukit.nbtools.show_env`).
"""

from __future__ import annotations

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
    from . import __version__

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
