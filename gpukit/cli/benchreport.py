"""`make bench`: the figures that back gpukit's claims, measured on this machine.

Prints (and writes to build/bench/report.json):
1. the memory model's predicted-vs-measured error table over the validation grid (gpukit.bench.measure);
2. matmul harness ratio: our TFLOPS / torch.utils.benchmark.Timer's on the same shape (goal within 5%);
3. collectives harness ratio: our busbw / a bare torch.distributed loop's (goal >= 90%), and the
   alpha-beta fit's error on sizes it was not fitted on (goal within 25% on loopback gloo);
4. the wall time of this report and of the last `make test` run (recorded by tests/conftest.py).
These are benchmarks, not tests: they print figures and never fail on a slow machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

LAST_TEST_RUN = Path("build") / "last_test_run.json"


def _section(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 76 - len(title)))


def memory_section(device: str) -> dict:
    from gpukit.bench.measure import grid_report

    _section(f"1. Memory model vs measurement ({device.upper()}, validation grid)")
    df = grid_report(device=device)
    cats = [c[:-4] for c in df.columns if c.endswith("_err")]
    return {"configs": len(df), "ok": int(df["ok"].sum()),
            "max_abs_error": {c: float(df[f"{c}_err"].abs().max()) for c in cats}}


def matmul_section(device: str, threads: int | None) -> dict:
    from gpukit.bench.matmul import harness_check

    _section(f"2. Matmul harness vs torch.utils.benchmark.Timer ({device.upper()})")
    out = {}
    for size in (512, 1024):
        r = harness_check(device=device, dtype="fp32", size=size, threads=threads)
        out[size] = r
        print(f"  {size}x{size}x{size} fp32: ours {r.get('ours_tflops', float('nan')):.3f} TFLOPS, "
              f"Timer {r.get('timer_tflops', float('nan')):.3f} TFLOPS, ratio {r.get('ratio', float('nan')):.3f} "
              f"(goal 0.95-1.05)")
    return out


def collectives_section(sizes: str) -> dict:
    from gpukit.bench.collectives import fit_and_holdout, run_collectives

    _section("3. Collectives: 2-rank gloo all_reduce on loopback (CPU)")
    res = run_collectives("all_reduce", 2, sizes, repeats=15, bare_check=True, timeout_s=300)
    print(res.to_text())
    rows = res.rows
    ratios = [r["harness_ratio"] for r in rows if r.get("harness_ratio")]
    fit = fit_and_holdout(rows)
    ratios_sorted = sorted(ratios)
    median = ratios_sorted[len(ratios_sorted) // 2] if ratios_sorted else float("nan")
    print(f"  harness ratio busbw/bare-loop busbw: median {median:.3f}, min {min(ratios, default=float('nan')):.3f}"
          f" (goal >= 0.90)")
    print(f"  alpha-beta fit: alpha {fit['alpha_us']:.1f} us, beta {fit['beta_gbps']:.3f} GB/s; held-out sizes "
          f"max |error| {100 * fit['holdout_error_max']:.1f}%, median {100 * fit['holdout_error_median']:.1f}% "
          f"(goal within 25%)")
    return {"harness_ratio_median": median, "harness_ratio_min": min(ratios, default=None),
            "alpha_us": fit["alpha_us"], "beta_gbps": fit["beta_gbps"],
            "holdout_error_max": fit["holdout_error_max"], "busbw_gbps_largest": rows[-1]["busbw_gbps"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpukit.cli.benchreport", description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads for the matmul check")
    p.add_argument("--sizes", default="4K,16K,64K,256K,1M,4M,16M", help="collective sweep sizes")
    p.add_argument("--skip", default="", help="comma list of sections to skip: memory,matmul,collectives,economics")
    p.add_argument("--out", default="build/bench/report.json")
    args = p.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            print("error: --device cuda requested but no CUDA device is available", file=sys.stderr)
            return 2
    from gpukit.bench.envinfo import describe_environment, environment

    t0 = time.perf_counter()
    print(f"gpukit bench on {describe_environment()}")
    report: dict = {"env": environment()}
    if "memory" not in skip:
        report["memory"] = memory_section(args.device)
    if "matmul" not in skip:
        report["matmul"] = matmul_section(args.device, args.threads)
    if "collectives" not in skip:
        report["collectives"] = collectives_section(args.sizes)
    if "economics" not in skip:  # issue 12: planner speed over the catalog, published costs reproduced
        from gpukit.bench.planner import economics_section

        _section("Planner speed and published training-run costs")
        report["economics"] = economics_section()
    report["bench_wall_s"] = time.perf_counter() - t0
    _section("4. Wall times")
    print(f"  this report: {report['bench_wall_s']:.1f} s")
    if LAST_TEST_RUN.exists():
        last = json.loads(LAST_TEST_RUN.read_text())
        report["last_test_run"] = last
        print(f"  last `make test`: {last['wall_s']:.0f} s, {last['passed']} passed, {last['failed']} failed, "
              f"{last['skipped']} skipped ({last['finished']})")
    else:
        print("  last `make test`: not recorded yet (run make test)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str))
    print(f"  written: {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
