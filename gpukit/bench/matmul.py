"""Matmul benchmark: achieved TFLOPS = 2mnk / median time, against the catalog peak where known.

FLOP count of C = A @ B with A (m, k), B (k, n): 2mnk (one multiply and one add per term; the
convention of NVIDIA's cuBLAS/CUTLASS profilers and nanoGPT's estimate_mfu). fp8 uses
torch._scaled_mm (CUDA, compute capability >= 8.9: Ada/Hopper), unit scales, bf16 output.
"""

from __future__ import annotations

import math

from gpukit.bench.results import BenchResult
from gpukit.bench.timing import (
    Deadline,
    is_out_of_memory,
    oom_line,
    percentile,
    resolve_device,
    time_op,
    torch_threads,
)
from gpukit.timing_stats import spread_warning

DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
_TORCH_DTYPE = {"fp32": "float32", "tf32": "float32", "bf16": "bfloat16", "fp16": "float16"}

# CUDA device names (torch.cuda.get_device_name) -> catalog keys to try; the first rule that matches
# decides (its first key in the catalog, else no key: an H100 NVL is not an H100 SXM).
# Order matters: "gh200" before "h200", "h100 nvl"/"pcie" before the plain (SXM, HBM3) "h100".
# A100 PCIe falls back to the SXM row of its memory size (same tensor-core peaks).
_GPU_NAME_RULES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("gh200",), ("gh200",)),
    (("h200", "nvl"), ("h200-nvl",)),
    (("h200",), ("h200-sxm", "h200")),
    (("h100", "nvl"), ("h100-nvl",)),
    (("h100", "pcie"), ("h100-pcie",)),
    (("h100",), ("h100-sxm", "h100")),
    (("b200",), ("b200",)),
    (("a100", "pcie", "80gb"), ("a100-80gb-pcie", "a100-pcie-80gb", "a100-pcie", "a100-80gb")),
    (("a100", "pcie"), ("a100-40gb-pcie", "a100-pcie-40gb", "a100-pcie", "a100-40gb")),
    (("a100", "80gb"), ("a100-80gb-sxm", "a100-sxm-80gb", "a100-80gb", "a100-sxm")),
    (("a100",), ("a100-40gb-sxm", "a100-sxm-40gb", "a100-40gb", "a100-sxm", "a100")),
    (("l40s",), ("l40s",)),
    (("l40",), ("l40",)),
    (("l4",), ("l4",)),
    (("a10g",), ("a10g",)),
    (("a10",), ("a10",)),
    (("t4",), ("t4",)),
    (("v100",), ("v100-sxm", "v100-32gb", "v100")),
    (("4090",), ("rtx-4090", "rtx4090")),
    (("3090",), ("rtx-3090", "rtx3090")),
    (("mi300x",), ("mi300x",)),
    (("6000", "ada"), ("rtx-6000-ada",)),
    (("a6000",), ("rtx-a6000",)),
)


def gpu_key_for(device_name: str, known: set[str] | None = None) -> str | None:
    """Catalog key for a CUDA device name ('NVIDIA H100 80GB HBM3' -> 'h100-sxm'), None if unknown."""
    if known is None:
        try:
            from gpukit.catalog import gpus

            known = set(gpus())
        except (ValueError, OSError):
            return None
    name = device_name.lower().replace("-", " ")
    tokens = set(name.split())
    for needles, keys in _GPU_NAME_RULES:
        # short needles ("l4", "t4", "a10") must be whole tokens; longer ones may be substrings
        if all((n in tokens) if len(n) <= 3 else (n in name) for n in needles):
            return next((key for key in keys if key in known), None)
    return None


def peak_tflops_for(
    dtype: str, *, device: str, gpu: str | None = None, peak_tflops: float | None = None
) -> tuple[float | None, str]:
    """(dense peak TFLOPS or None, where it came from) for `dtype` on this device."""
    if peak_tflops is not None:
        return float(peak_tflops), "given"
    from gpukit.catalog import get_gpu

    if gpu is None and device == "cuda":
        from gpukit.bench.envinfo import device_name

        gpu = gpu_key_for(device_name("cuda"))
    if gpu is None:
        return (
            None,
            "unknown (CPU peak not in the catalog; pass peak_tflops)" if device == "cpu" else "unknown GPU",
        )
    try:
        return get_gpu(gpu).peak_tflops(dtype), f"catalog:{get_gpu(gpu).name}"
    except ValueError as e:
        if "has no peak" in str(e):
            return None, f"catalog:{gpu} has no {dtype} peak"
        raise


def check_dtype(dtype: str, device: str) -> None:
    """ValueError unless `dtype` can run on `device` (fp8/tf32 need CUDA; fp8 needs cc >= 8.9)."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
    if dtype in ("fp8", "tf32") and device != "cuda":
        raise ValueError(f"dtype {dtype} needs --device cuda (on cpu use fp32, bf16 or fp16)")
    if dtype == "fp8":
        import torch

        cc = torch.cuda.get_device_capability()
        if cc < (8, 9) or not hasattr(torch, "_scaled_mm"):
            raise ValueError(
                f"dtype fp8 needs a CUDA GPU with compute capability >= 8.9 (Ada/Hopper), got {cc[0]}.{cc[1]}"
            )


def matmul_shapes(sizes, llm_shapes: bool = True) -> list[tuple[str, int, int, int]]:
    """(label, m, n, k) for each square size, plus two LLM-like MLP shapes built from the largest.

    With b = max(sizes) // 2 (tokens x hidden): mlp-up (b, 4b, b) and mlp-down (b, b, 4b), each
    2*4b^3 = s^3 FLOPs, half the largest square's, so the sweep's cost is set by the squares.
    """
    sizes = sorted({int(s) for s in sizes})
    if not sizes or sizes[0] < 1:
        raise ValueError(f"sizes must be positive integers, got {sizes!r}")
    shapes = [(f"square-{s}", s, s, s) for s in sizes]
    b = max(16, (max(sizes) // 2) // 16 * 16)  # fp8 needs multiples of 16
    if llm_shapes:
        shapes += [(f"mlp-up-{b}", b, 4 * b, b), (f"mlp-down-{b}", b, b, 4 * b)]
    return shapes


def _operands(dtype: str, m: int, n: int, k: int, device: str):
    """A zero-arg callable computing one matmul of the shape, plus the tensors it keeps alive."""
    import torch

    g = torch.Generator(device=device).manual_seed(0)  # made on the device: no host copy of 16k^2

    def randn(rows, cols):
        return torch.randn(rows, cols, generator=g, device=device)

    if dtype == "fp8":
        m16, n16, k16 = (max(16, x // 16 * 16) for x in (m, n, k))
        a = randn(m16, k16).to(torch.float8_e4m3fn)
        b = randn(n16, k16).to(torch.float8_e4m3fn).t()  # _scaled_mm wants b column-major
        one = torch.tensor(1.0, device=device)
        return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), (
            m16,
            n16,
            k16,
        )
    dt = getattr(torch, _TORCH_DTYPE[dtype])
    a = randn(m, k).to(dt)
    b = randn(k, n).to(dt)
    out = torch.empty(m, n, device=device, dtype=dt)
    return (lambda: torch.mm(a, b, out=out)), (m, n, k)


def _precision(dtype: str):
    """Context: fp32 matmuls in TF32 for dtype tf32, full fp32 otherwise (torch's default)."""
    import contextlib

    import torch

    @contextlib.contextmanager
    def ctx():
        old = torch.get_float32_matmul_precision()
        torch.set_float32_matmul_precision("high" if dtype == "tf32" else "highest")
        try:
            yield
        finally:
            torch.set_float32_matmul_precision(old)

    return ctx()


def _old_name(name: str, value, default, old: str, old_value):
    """`value`, or `old_value` given under the parameter's old name (not both)."""
    if old_value is None:
        return value
    if value != default:
        raise ValueError(f"give {name} or its old name {old}, not both")
    return old_value


def matmul_bench(
    device: str = "cpu",
    dtypes=("fp32",),
    dims=(256, 512, 1024),
    *,
    llm_shapes: bool = True,
    gpu: str | None = None,
    peak_tflops: float | None = None,
    threads: int | None = None,
    warmup: int = 2,
    repeats: int = 7,
    min_repeat_s: float = 0.05,
    timeout_s: float = 300,
    progress_bar: bool | None = None,
    sizes=None,
) -> BenchResult:
    """Achieved TFLOPS per (dtype, shape): median over `repeats`, p10/p90, achieved/peak. `dims`:
    square matrix dimensions N (`sizes=` is the old name, kept: sizes mean bytes elsewhere).

    Stops early (rows so far, summary 'timed_out') once `timeout_s` has passed. Out of memory at a
    shape: the sweep stops there, keeps the rows so far and summary 'out_of_memory' says "out of memory
    at size LABEL"; out of memory at the first shape (nothing measured): ValueError with that line.
    """
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.timing import progress
    from gpukit.errors import require_positive, require_positive_int, require_timeout

    dims = _old_name("dims", dims, (256, 512, 1024), "sizes", sizes)
    if peak_tflops is not None:
        peak_tflops = require_positive("peak_tflops", peak_tflops)
    repeats = require_positive_int("repeats", repeats)
    warmup = require_positive_int("warmup", warmup, allow_zero=True)
    timeout_s = require_timeout("timeout_s", timeout_s)
    min_repeat_s = require_positive("min_repeat_s", min_repeat_s)
    device = resolve_device(device)
    dtypes = [dtypes] if isinstance(dtypes, str) else list(dtypes)
    for d in dtypes:
        check_dtype(d, device)
    shapes = matmul_shapes(dims, llm_shapes)
    deadline = Deadline(timeout_s, "matmul benchmark")
    rows, summary = [], {}
    jobs = [(d, s) for d in dtypes for s in shapes]
    with torch_threads(threads) as n_threads:
        for dtype, (label, m, n, k) in progress(
            jobs, desc="matmul", disable=None if progress_bar is None else not progress_bar
        ):
            if deadline.left() <= 0:
                summary["timed_out"] = (
                    f"stopped after {deadline.elapsed():.0f} s: {len(rows)} of {len(jobs)} shapes"
                )
                break
            peak, peak_src = peak_tflops_for(dtype, device=device, gpu=gpu, peak_tflops=peak_tflops)
            try:
                with _precision(dtype):
                    fn, (m, n, k) = _operands(dtype, m, n, k, device)
                    st = time_op(
                        fn,
                        device=device,
                        warmup=warmup,
                        repeats=repeats,
                        min_repeat_s=min_repeat_s,
                        budget_s=min(deadline.left(), max(1.0, timeout_s / max(1, len(jobs)))),
                    )
            except (RuntimeError, MemoryError) as e:  # larger shapes would fail too: stop, keep the rows
                if not is_out_of_memory(e):
                    raise
                summary["out_of_memory"] = oom_line(f"{label} ({dtype}, {m}x{k} @ {k}x{n})", e)
                if not rows:
                    raise ValueError(summary["out_of_memory"]) from None
                break
            flops = 2.0 * m * n * k
            tflops = flops / st.median_s / 1e12
            rows.append(
                {
                    "dtype": dtype,
                    "shape": label,
                    "m": m,
                    "n": n,
                    "k": k,
                    "time_us": st.median_s * 1e6,
                    "p10_us": st.p10_s * 1e6,
                    "p90_us": st.p90_s * 1e6,
                    "tflops": tflops,
                    "tflops_p10": flops / st.p90_s / 1e12,
                    "tflops_p90": flops / st.p10_s / 1e12,
                    "peak_tflops": peak,
                    "achieved_frac": tflops / peak if peak else None,
                    "repeats": st.n_repeats,
                    "iters": st.iters,
                }
            )
            summary[f"best_tflops_{dtype}"] = max(summary.get(f"best_tflops_{dtype}", 0.0), tflops)
            summary[f"peak_{dtype}"] = peak_src if peak is None else f"{peak:g} TFLOPS ({peak_src})"
        env = env_stamp(device, threads=n_threads, float32_matmul_precision="highest (tf32 rows: high)")
    if not rows and "timed_out" in summary:  # nothing measured is a failure, not an empty table
        raise TimeoutError(
            f"matmul benchmark timed out after {deadline.elapsed():.1f} s before the first shape "
            f"finished (timeout {timeout_s:g} s; raise --timeout)"
        )
    warn = spread_warning([(f"{r['dtype']} {r['shape']}", r["p10_us"], r["p90_us"]) for r in rows])
    summary["spread_warning"] = warn or None  # always there (stable JSON keys): null when the repeats agree
    return BenchResult(
        "matmul",
        tuple(rows),
        env,
        summary,
        ("dtype", "shape", "time_us", "p10_us", "p90_us", "tflops", "peak_tflops", "achieved_frac"),
    )


def harness_check(
    device: str = "cpu",
    dtype: str = "fp32",
    dims: int = 512,
    *,
    threads: int | None = None,
    min_run_time_s: float = 0.3,
    rounds: int = 3,
    timeout_s: float | None = None,
    size: int | None = None,
) -> dict:
    """Our matmul TFLOPS vs torch.utils.benchmark.Timer on the same shape and thread count.

    Timer defaults to num_threads=1, so the same count is passed explicitly. The two timers
    alternate for `rounds` rounds (shared machines drift) and pool their samples. `ratio` compares
    medians (goal: within 5% of 1); `ratio_min` compares the fastest samples, which load from
    other processes disturbs least. TimeoutError once `timeout_s` has passed (checked between
    the timed segments; None: no limit).
    """
    import torch
    from torch.utils.benchmark import Timer

    from gpukit.bench.envinfo import env_stamp
    from gpukit.errors import require_positive, require_positive_int, require_timeout

    size = require_positive_int("dims", _old_name("dims", dims, 512, "size", size))  # N of N x N @ N x N
    rounds = require_positive_int("rounds", rounds)
    min_run_time_s = require_positive("min_run_time_s", min_run_time_s)
    deadline = Deadline(
        None if timeout_s is None else require_timeout("timeout_s", timeout_s), "harness check"
    )
    device = resolve_device(device)
    check_dtype(dtype, device)
    if dtype == "fp8":
        raise ValueError("harness_check supports fp32, tf32, bf16, fp16 (Timer runs torch.mm)")
    with torch_threads(threads) as n_threads, _precision(dtype):
        dt = getattr(torch, _TORCH_DTYPE[dtype])
        try:
            a = torch.randn(size, size).to(device=device, dtype=dt)
            b = torch.randn(size, size).to(device=device, dtype=dt)
            out = torch.empty(size, size, device=device, dtype=dt)
        except (RuntimeError, MemoryError) as e:  # as matmul_bench: nothing measured is exit 2, one line
            if not is_out_of_memory(e):
                raise
            raise ValueError(
                oom_line(f"{size} ({dtype}, three {size}x{size} matrices on {device})", e)
            ) from None
        ours, theirs = [], []
        timer = Timer(
            stmt="torch.mm(a, b, out=out)",
            globals={"torch": torch, "a": a, "b": b, "out": out},
            num_threads=n_threads,
        )
        per_round = min_run_time_s / max(1, rounds)
        for _ in range(max(1, rounds)):
            st = time_op(
                lambda: torch.mm(a, b, out=out),
                device=device,
                warmup=1,
                repeats=5,
                min_repeat_s=per_round / 5,
            )
            ours += [st.median_s, st.min_s]
            deadline.check()
            m = timer.blocked_autorange(min_run_time=per_round)
            theirs += [m.median, min(m.times)]
            deadline.check()
        env = env_stamp(device, threads=n_threads)
    flops = 2.0 * size**3
    med = lambda xs: percentile(xs[0::2], 50)  # noqa: E731 - medians sit at even positions
    t_ours, t_theirs = med(ours), med(theirs)
    ratio = t_theirs / t_ours  # = our TFLOPS / Timer's TFLOPS
    ratio_min = min(theirs[1::2]) / min(ours[1::2])
    return {
        "device": device,
        "dtype": dtype,
        "size": size,
        "threads": n_threads,
        "ours_tflops": flops / t_ours / 1e12,
        "timer_tflops": flops / t_theirs / 1e12,
        "ratio": ratio,
        "ratio_min": ratio_min,
        "within_5pct": bool(abs(ratio - 1) <= 0.05) if math.isfinite(ratio) else False,
        "env": env,
    }
