"""Calibrate this machine: measured matmul TFLOPS, memory bandwidth and a fitted loopback link.

`calibrate()` runs the real benchmarks (gpukit.bench) and writes the hardware profile JSON that
gpukit.profile reads (contract in gpukit/profile.py):

    {"version": 1, "device": {...}, "matmul_tflops": {"fp32": x, "bf16": y},
     "memory_bandwidth_gbps": {"copy": a, "triad": b},
     "links": {"loopback-gloo": {"alpha_us": .., "beta_gbps": .., "holdout_error": ..}},
     "env": {...}, "created": iso}

matmul_tflops[dtype] is the best median over the shape sweep (what the hardware sustains on a
large GEMM); memory bandwidth is STREAM copy/triad (decimal GB/s); the link is a 2-rank gloo
all_reduce sweep over loopback fitted with gpukit.comm.fit_alpha_beta on all sizes, and
holdout_error is the worst relative error predicting every other size (never the smallest or the
largest) from a fit on the rest.
Default file: $GPUKIT_PROFILE, else $XDG_CACHE_HOME/gpukit/profile.json (~/.cache/gpukit/...):
per user and machine, independent of the working directory (notebooks run from notebooks/).
Used in: `gpukit calibrate`, notebooks that compare predictions with this machine.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

PROFILE_VERSION = 1
LOOPBACK_LINK = "loopback-gloo"
QUICK_LINK_SIZES = "1K,4K,16K,64K,256K,1M,4M,16M"
FULL_LINK_SIZES = "1K,4K,16K,64K,256K,1M,4M,16M,64M"


def default_profile_path() -> Path:
    """$GPUKIT_PROFILE, else $XDG_CACHE_HOME/gpukit/profile.json, else ~/.cache/gpukit/profile.json."""
    if os.environ.get("GPUKIT_PROFILE"):
        return Path(os.environ["GPUKIT_PROFILE"]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "gpukit" / "profile.json"


def _plan(device: str, quick: bool) -> dict:
    """Sizes per step: quick fits in ~1 minute on a 2-core laptop; full takes a few minutes."""
    if device == "cuda":
        import torch

        cc = torch.cuda.get_device_capability()
        dtypes = ["fp32", "tf32", "bf16", "fp16"] + (["fp8"] if cc >= (8, 9) else [])
        return {
            "dtypes": dtypes,
            "sizes": (2048, 4096, 8192) if quick else (2048, 4096, 8192, 16384),
            "size_mib": 256 if quick else 1024,
            "link_sizes": QUICK_LINK_SIZES if quick else FULL_LINK_SIZES,
        }
    # bf16 on CPUs with AMX reaches its best only at ~2048 (measured here: 1.4 TFLOPS at 1024, 2.7 at 2048)
    return {
        "dtypes": ["fp32", "bf16"],
        "sizes": (256, 512, 1024, 2048) if quick else (512, 1024, 2048, 4096),
        "size_mib": 64 if quick else 256,
        "link_sizes": QUICK_LINK_SIZES if quick else FULL_LINK_SIZES,
    }


def calibrate(
    *,
    quick: bool = False,
    device: str = "cpu",
    out: str | os.PathLike | None = None,
    threads: int | None = None,
    n_ranks: int = 2,
    timeout_s: float = 900,
    progress_bar: bool | None = None,
    write: bool = True,
) -> dict:
    """Measure, fit and write the profile; returns it with 'path' and 'elapsed_s' added. The output
    file's folder is checked before measuring; an existing profile there is kept as `<name>.bak`
    ('replaced' in the result says so).

    device: cpu | cuda | auto. On CUDA with >= 2 GPUs an NCCL all_reduce link ('local-nccl') is
    fitted as well; if that run fails (a rank died, an NCCL error), the profile keeps everything else
    and 'links_failed' gives the reason. ValueError for cuda without CUDA; TimeoutError past `timeout_s`.
    """
    from gpukit.bench.collectives import fit_and_holdout, run_collectives
    from gpukit.bench.envinfo import device_name, env_stamp, utc_now
    from gpukit.bench.matmul import gpu_key_for, matmul_bench
    from gpukit.bench.membw import memory_bandwidth
    from gpukit.bench.timing import Deadline, progress, resolve_device
    from gpukit.errors import require_positive_int, require_timeout

    t0 = time.monotonic()
    timeout_s = require_timeout("timeout_s", timeout_s)  # checked before minutes of measuring
    n_ranks = require_positive_int("n_ranks", n_ranks)
    if threads is not None:
        threads = require_positive_int("threads", threads)
    device = resolve_device(device)
    if write:  # checked before minutes of measuring, not after
        from gpukit.bench.results import check_writable

        check_writable(Path(out) if out else default_profile_path(), "--out")
    plan = _plan(device, quick)
    deadline = Deadline(timeout_s, "calibration")
    links_to_fit = [(LOOPBACK_LINK, "cpu", "gloo", n_ranks)]
    if device == "cuda":
        import torch

        if torch.cuda.device_count() >= 2:
            links_to_fit.append(("local-nccl", "cuda", "nccl", torch.cuda.device_count()))
    steps = [("matmul", d) for d in plan["dtypes"]] + [("memory", None)] + [("link", x) for x in links_to_fit]
    matmul, bandwidth, links, details, links_failed = {}, {}, {}, {}, {}
    bar = progress(
        steps, desc="calibrate", total=len(steps), disable=None if progress_bar is None else not progress_bar
    )
    for kind, arg in bar:
        deadline.check()
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(f"{kind} {arg[0] if isinstance(arg, tuple) else arg or ''}".strip())
        if kind == "matmul":
            res = matmul_bench(
                device,
                [arg],
                plan["sizes"],
                threads=threads,
                repeats=5,
                min_repeat_s=0.03 if quick else 0.1,
                timeout_s=min(120, deadline.left()),
                progress_bar=False,
            )
            matmul[arg] = res.summary[f"best_tflops_{arg}"]
            details[f"matmul_{arg}"] = [
                {k: r[k] for k in ("shape", "tflops", "achieved_frac")} for r in res.rows
            ]
        elif kind == "memory":
            res = memory_bandwidth(
                device,
                plan["size_mib"],
                threads=threads,
                repeats=5,
                timeout_s=min(120, deadline.left()),
                progress_bar=False,
            )
            bandwidth.update({r["test"]: r["gbps"] for r in res.rows})
        else:
            name, link_device, backend, n = arg
            try:
                res = run_collectives(
                    "all_reduce",
                    n,
                    plan["link_sizes"],
                    device=link_device,
                    backend=backend,
                    repeats=15 if quick else 21,
                    timeout_s=min(300, deadline.left()),
                    bare_check=True,
                )
            except (RuntimeError, ValueError) as e:  # NCCL across the GPUs failed: keep what was measured
                if link_device != "cuda":
                    raise
                links_failed[name] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                continue
            links[name] = link_entry(res, fit_and_holdout(res, holdout="alternate"))
    dev = {
        "kind": device,
        "name": device_name(device),
        "label": "GPU" if device == "cuda" else "CPU",
        "threads": threads or _threads(),
    }
    if device == "cuda":
        dev["gpu_key"] = gpu_key_for(dev["name"])
    profile = {
        "version": PROFILE_VERSION,
        "device": dev,
        "matmul_tflops": matmul,
        "memory_bandwidth_gbps": bandwidth,
        "links": links,
        "env": env_stamp(device, threads=dev["threads"], quick=quick, calibration_details=details),
        "created": utc_now(),
        "quick": quick,
    }
    if links_failed:  # {name: "<Type>: <first line>"}: a link that was tried and failed, not a fit
        profile["links_failed"] = links_failed
    profile["elapsed_s"] = round(time.monotonic() - t0, 2)
    if write:
        write_profile(profile, out)
    return profile


def write_profile(profile: dict, out: str | os.PathLike | None = None) -> dict:
    """Write `profile` to `out` (default: default_profile_path()) and set profile['path']. An existing
    file is never replaced without a word: it is kept as `<name>.bak` and profile['replaced'] names it;
    if the new write fails, the previous profile is put back."""
    from gpukit.bench.results import write_json

    path = Path(out) if out else default_profile_path()
    if path.is_file():
        backup = path.with_name(path.name + ".bak")
        os.replace(path, backup)
        profile["replaced"] = str(backup)
    try:
        write_json(profile, path)
    except BaseException:
        if profile.get("replaced"):  # the new one failed: put the previous one back
            os.replace(profile.pop("replaced"), path)
        raise
    profile["path"] = str(path)
    return profile


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def link_entry(res, holdout: dict) -> dict:
    """alpha/beta fitted on every size; the holdout error from the every-other-size fit."""
    from gpukit.bench.timing import percentile
    from gpukit.comm import fit_alpha_beta

    rows = sorted(res.rows, key=lambda r: r["size_bytes"])
    n = int(rows[0]["world_size"])
    fit = fit_alpha_beta([r["size_bytes"] for r in rows], [r["time_us"] / 1e6 for r in rows], "all_reduce", n)
    ratios = [r["harness_ratio"] for r in rows if r.get("harness_ratio")]
    return {
        "alpha_us": fit.alpha_us,
        "beta_gbps": fit.beta_gbps,
        "holdout_error": holdout["holdout_error_max"],
        "holdout_error_median": holdout["holdout_error_median"],
        "holdout": "every other size, interpolated",
        "fit_r2": fit.r2,
        "op": "all_reduce",
        "n_ranks": n,
        "backend": res.env.get("backend"),
        "sizes_bytes": [r["size_bytes"] for r in rows],
        "time_us": [r["time_us"] for r in rows],
        "busbw_gbps": [r["busbw_gbps"] for r in rows],
        "harness_ratio_median": percentile(ratios, 50) if ratios else None,
    }
