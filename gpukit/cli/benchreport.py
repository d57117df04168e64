"""`make bench`: the figures that back gpukit's claims, measured on this machine.

Prints (and writes to build/bench/report.json):
1. the memory model's predicted-vs-measured error table over the validation grid (gpukit.bench.measure);
2. matmul harness ratio: our TFLOPS / torch.utils.benchmark.Timer's on the same shape (goal within 5%);
3. collectives harness ratio: our busbw / a bare torch.distributed loop's (goal >= 90%), and the
   alpha-beta fit's error on sizes it was not fitted on (goal within 25% on loopback gloo);
4. the wall time of this report and of the last `make test` run (recorded by tests/conftest.py);
5. serving: KV-cache prefill/decode of the reference model measured on this machine against the roofline
   from its measured rates (gpukit.bench.decode, goal within 25%), and gpukit.inference against published
   serving figures (data/serving_published.csv, goal within 30%) with the TP-vs-replicas ordering.
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


def serving_section(device: str) -> dict:
    from gpukit.bench import decode
    from gpukit.catalog import get_gpu, get_model
    from gpukit.inference import tp_ordering, validate_published

    _section(f"5a. Serving: KV-cache prefill/decode measured vs roofline ({device.upper()}, 1 thread)")
    out: dict = {"measured": []}
    for spec in decode.decode_specs():
        r = decode.measure_decode(spec, device=device, timeout_s=300)
        for row in r["rows"]:
            print(f"  {spec.name:<30} {row['mode']:<7} batch {row['batch']:>4}: measured {row['measured_s'] * 1e3:8.2f} ms, "
                  f"roofline {row['predicted_s'] * 1e3:8.2f} ms ({row['bound']}, error {row['error']:+.0%}), no-overlap "
                  f"{row['no_overlap_s'] * 1e3:8.2f} ms (error {row['error_no_overlap']:+.0%}); spread {row['spread']:.0%}")
        out["measured"].append({"model": spec.name, "rows": r["rows"]})
    if device == "cpu":
        print(f"  CUDA: {decode.gpu_decode()}")
    _section("5b. Serving: gpukit.inference vs published figures (goal within 30%)")
    df = validate_published()
    for _, row in df.iterrows():
        print(f"  {row['name']:<34} {row['metric']:<10} published {row['published']:9.2f} {row['unit']:<8} "
              f"predicted {row['predicted']:9.2f}  error {row['error']:+.0%}")
    order = tp_ordering(get_model("llama-3.1-70b"), get_gpu("h100-sxm"), 8, precision="fp8")
    print(f"  TP vs replicas (llama-3.1-70b fp8, 8 x h100-sxm): {', '.join(order['layouts'])}: latency falls with tp "
          f"{order['latency_falls_with_tp']}, tokens/s per GPU falls with tp {order['per_gpu_throughput_falls_with_tp']} "
          f"(published ordering: {order['source_url']})")
    out["published"] = df.to_dict(orient="records")
    out["tp_ordering"] = order
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gpukit.cli.benchreport", description=__doc__.splitlines()[0])
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int, default=None, help="torch threads for the matmul check")
    p.add_argument("--sizes", default="4K,16K,64K,256K,1M,4M,16M", help="collective sweep sizes")
    p.add_argument("--skip", default="", help="comma list of sections to skip: memory,matmul,collectives,serving")
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
    if "serving" not in skip:
        report["serving"] = serving_section(args.device)
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
