"""The environment stamp written into every benchmark result (STYLE.md principle 6).

A number without its machine is not a result: device and its name, torch and CUDA versions, thread
count, world size, backend, benchmark version, hostname and UTC date travel with every row set.
Machine facts come from gpukit.envinfo.environment() (the notebooks' setup cell uses the same).
"""

from __future__ import annotations

import datetime as _dt

# Bump when the measuring method changes (warm-up, repeats, byte counting), so old files are not
# compared with new ones as if they were the same experiment.
BENCH_VERSION = "1"


def device_name(device: str) -> str:
    """'NVIDIA H100 80GB HBM3' for cuda (current device), the CPU model for cpu."""
    if device == "cuda":
        import torch

        return torch.cuda.get_device_name(torch.cuda.current_device())
    from ..envinfo import environment

    return environment()["cpu_model"]


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def env_stamp(device: str = "cpu", *, threads: int | None = None, world_size: int = 1,
              backend: str | None = None, **extra) -> dict:
    """A flat JSON-safe dict describing where and how a benchmark ran; `extra` keys are added as given."""
    import torch

    from ..envinfo import environment

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
    stamp.update(extra)
    return stamp
