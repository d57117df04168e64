"""Memory bandwidth, STREAM convention: copy counts 2 arrays (read + write), triad 3 (a = b + s*c).

Bytes counted as in McCalpin's STREAM (stream.c, "Copy: 2 arrays, Triad: 3 arrays"; write-allocate
traffic is not counted), in decimal GB/s. On CUDA also host<->device copies, pinned vs pageable
(pinned memory lets the DMA engine copy directly; pageable goes through a staging buffer).
"""

from __future__ import annotations

from gpukit.bench.results import BenchResult
from gpukit.bench.timing import (
    Deadline,
    is_out_of_memory,
    oom_line,
    resolve_device,
    synchronize,
    time_op,
    torch_threads,
)
from gpukit.timing_stats import spread_warning
from gpukit.units import GB, MiB

TRIAD_SCALAR = 3.0


def _gbps(n_bytes: float, seconds: float) -> float:
    return n_bytes / seconds / GB


def memory_bandwidth(
    device: str = "cpu",
    size_mib: float = 64,
    *,
    threads: int | None = None,
    gpu: str | None = None,
    transfers: bool = True,
    warmup: int = 2,
    repeats: int = 7,
    min_repeat_s: float = 0.05,
    timeout_s: float = 120,
    progress_bar: bool | None = None,
) -> BenchResult:
    """copy / triad bandwidth on `device` with fp32 arrays of `size_mib` MiB each (decimal GB/s).

    Arrays should be much larger than the last-level cache (STREAM's rule: 4x), else this measures
    cache bandwidth. On CUDA also h2d/d2h pinned and pageable; achieved/peak uses the catalog's HBM
    bandwidth (gpu key from the device name, or `gpu`). Arrays that do not fit: ValueError "out of
    memory at size ..."; pinned host buffers that do not fit: copy/triad rows kept, summary
    'out_of_memory' says so.
    """
    import torch

    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.timing import progress
    from gpukit.errors import require_positive, require_positive_int, require_timeout

    try:
        size_mib = require_positive("size_mib", size_mib)
    except ValueError:
        raise ValueError(f"size_mib must be > 0 and finite, got {size_mib!r}") from None
    repeats = require_positive_int("repeats", repeats)
    warmup = require_positive_int("warmup", warmup, allow_zero=True)
    timeout_s = require_timeout("timeout_s", timeout_s)
    min_repeat_s = require_positive("min_repeat_s", min_repeat_s)
    if size_mib * MiB >= 2**62:  # beyond what any allocator can be asked for (torch sizes are int64)
        raise ValueError(f"size_mib must be below {2**62 // MiB} MiB, got {size_mib!r}")
    device = resolve_device(device)
    n = max(1, int(size_mib * MiB) // 4)
    array_bytes = n * 4
    peak = _hbm_peak(device, gpu)
    deadline = Deadline(timeout_s, "memory benchmark")
    rows, summary = [], {}
    with torch_threads(threads) as n_threads:
        try:
            a = torch.zeros(n, device=device)
            b = torch.rand(n, device=device)
            c = torch.rand(n, device=device)
        except (RuntimeError, MemoryError) as e:
            if not is_out_of_memory(e):
                raise
            raise ValueError(oom_line(f"{size_mib:g} MiB per array (3 arrays on {device})", e)) from None
        tests = [
            ("copy", 2 * array_bytes, lambda: a.copy_(b)),
            ("triad", 3 * array_bytes, lambda: torch.add(b, c, alpha=TRIAD_SCALAR, out=a)),
        ]
        try:
            host_pinned = torch.empty(n, pin_memory=True) if device == "cuda" and transfers else None
            host_pageable = torch.empty(n) if host_pinned is not None else None
        except (RuntimeError, MemoryError) as e:
            if not is_out_of_memory(e):
                raise
            host_pinned = None
            summary["out_of_memory"] = oom_line(f"{size_mib:g} MiB (host buffers for h2d/d2h, skipped)", e)
        if host_pinned is not None:
            tests += [
                ("h2d_pinned", array_bytes, lambda: a.copy_(host_pinned, non_blocking=True)),
                ("h2d_pageable", array_bytes, lambda: a.copy_(host_pageable)),
                ("d2h_pinned", array_bytes, lambda: host_pinned.copy_(a, non_blocking=True)),
                ("d2h_pageable", array_bytes, lambda: host_pageable.copy_(a)),
            ]
        for name, n_bytes, fn in progress(
            tests, desc="memory", disable=None if progress_bar is None else not progress_bar
        ):
            if deadline.left() <= 0:
                summary["timed_out"] = f"stopped after {deadline.elapsed():.0f} s"
                break
            st = time_op(
                fn,
                device=device,
                warmup=warmup,
                repeats=repeats,
                min_repeat_s=min_repeat_s,
                budget_s=max(0.5, min(deadline.left(), timeout_s / len(tests))),
            )
            bw = _gbps(n_bytes, st.median_s)
            ref = peak if name in ("copy", "triad") else None
            rows.append(
                {
                    "test": name,
                    "array_bytes": array_bytes,
                    "bytes_counted": n_bytes,
                    "time_us": st.median_s * 1e6,
                    "p10_us": st.p10_s * 1e6,
                    "p90_us": st.p90_s * 1e6,
                    "gbps": bw,
                    "gbps_p10": _gbps(n_bytes, st.p90_s),
                    "gbps_p90": _gbps(n_bytes, st.p10_s),
                    "peak_gbps": ref,
                    "achieved_frac": bw / ref if ref else None,
                    "repeats": st.n_repeats,
                    "iters": st.iters,
                }
            )
            summary[f"{name}_gbps"] = bw
            if name == "triad":  # a fast wrong kernel would make the speed meaningless
                synchronize(device)
                if not torch.allclose(a[:4096], b[:4096] + TRIAD_SCALAR * c[:4096]):
                    raise RuntimeError("triad check failed: a != b + s*c")
        env = env_stamp(device, threads=n_threads, size_mib=size_mib)
    summary["peak_gbps"] = (
        peak
        if peak
        else "unknown (CPU DRAM bandwidth not in the catalog)"
        if device == "cpu"
        else "unknown GPU"
    )
    warn = spread_warning([(r["test"], r["p10_us"], r["p90_us"]) for r in rows])
    summary["spread_warning"] = warn or None  # always there (stable JSON keys): null when the repeats agree
    return BenchResult(
        "memory",
        tuple(rows),
        env,
        summary,
        ("test", "bytes_counted", "time_us", "p10_us", "p90_us", "gbps", "peak_gbps", "achieved_frac"),
    )


def _hbm_peak(device: str, gpu: str | None) -> float | None:
    """Catalog HBM bandwidth (decimal GB/s) for the GPU, None on CPU or an unknown GPU."""
    if device != "cuda" and gpu is None:
        return None
    from gpukit.bench.envinfo import device_name
    from gpukit.bench.matmul import gpu_key_for
    from gpukit.catalog import get_gpu

    key = gpu or gpu_key_for(device_name(device))
    return get_gpu(key).hbm_bandwidth_gbps if key else None
