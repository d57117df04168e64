"""`gpukit bench matmul|memory|collectives|harness|article|ddp|all`: real benchmarks (gpukit.bench).

Every subcommand takes --device (cpu, cuda, auto; cuda without CUDA: exit 2), --json and --out FILE
(.json, or .csv for table results). Exit codes, each failure one line on stderr:
  2    bad input, or a run that exceeds --timeout
  1    a run that failed (a rank died, a backend error): the ranks are stopped first
  130  Ctrl-C (SIGINT); SIGTERM: "SIGTERM received" and death by that signal (status 143)
Out of memory: a sweep stops at the size that failed and keeps the rows so far; summary
'out_of_memory' reads "out of memory at size N ..." (exit 0). If not even the first size fits,
nothing was measured: exit 2 with that line.
`bench all` past its --timeout: the sections finished so far are printed and written to --out, with
an "incomplete" entry (the section the time ran out in, elapsed seconds, sections not run); exit 2.
Interrupted (Ctrl-C, or SIGTERM from an outer `timeout` or a scheduler): the same, with
"interrupted_in"; exit 130.
"""

from __future__ import annotations

import functools
import sys

from gpukit.cli import add_json_flag, emit
from gpukit.cli.argtypes import bounded_int, int_list, nonnegative_float, nonnegative_int, positive_float
from gpukit.cli.argtypes import timeout as timeout_arg
from gpukit.cli.report import Report


def _common(p, timeout: float) -> None:
    p.add_argument("--device", default="auto", help="cpu, cuda or auto (cuda if available)")
    p.add_argument("--out", help="also write the result to FILE (.json or .csv)")
    p.add_argument(
        "--timeout", type=timeout_arg, default=timeout, help=f"seconds before giving up (default {timeout:g})"
    )
    add_json_flag(p)


def _write_out(result, path: str) -> None:
    try:
        if hasattr(result, "write"):
            result.write(path)
        else:
            from gpukit.bench.results import write_json

            write_json(result.to_json_dict() if hasattr(result, "to_json_dict") else result, path)
    except OSError as e:
        raise ValueError(f"--out {path}: cannot write ({e.strerror or type(e).__name__})") from None


def _keep_partial(report, args) -> str:
    """Print and write (--out) the results a stopped run measured; the words that say where they are."""
    emit(report, getattr(args, "json", False))
    if getattr(args, "out", None):
        _write_out(report, args.out)
        return f"; partial results in {args.out}"
    return ""


def _guarded(handler):
    """Timeouts become one-line errors (exit 2), results are written to --out when asked. A timeout
    that carries the results measured before it (`.report`, as `bench all`'s) prints and writes them
    first."""

    @functools.wraps(handler)
    def run(args):
        if getattr(args, "out", None) is not None:  # before the run: results are not lost to a bad path
            from gpukit.bench.results import check_writable

            check_writable(args.out, "--out")
        try:
            result = handler(args)
            rows = getattr(result, "rows", None)
            if rows is not None and not rows and "timed_out" in getattr(result, "summary", {}):
                raise TimeoutError(
                    f"timed out before anything was measured: {result.summary['timed_out']} (raise --timeout)"
                )
        except TimeoutError as e:
            if getattr(e, "report", None) is None:
                raise ValueError(str(e)) from None
            raise ValueError(f"{e}{_keep_partial(e.report, args)}") from None
        except (
            KeyboardInterrupt
        ) as e:  # Ctrl-C / SIGTERM: a suite keeps what it measured (`.report`), exit 130
            if getattr(e, "report", None) is None:
                raise
            raise KeyboardInterrupt(
                f"{e}{_keep_partial(e.report, args)}"
            ) from None  # gpukit.cli.main prints it
        except RuntimeError as e:  # the run failed (not bad input): one line, exit 1, as netlab
            print(
                f"error: {str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}",
                file=sys.stderr,
            )
            raise SystemExit(1) from None
        if getattr(args, "out", None):
            _write_out(result, args.out)
        return result

    return run


@_guarded
def _matmul(args):
    from gpukit.bench.matmul import harness_check, matmul_bench

    sizes = int_list(args.sizes, "--sizes", "256,512,1024")
    res = matmul_bench(
        args.device,
        args.dtype,
        sizes,
        llm_shapes=not args.square_only,
        gpu=args.gpu,
        peak_tflops=args.peak_tflops,
        threads=args.threads,
        repeats=args.repeats,
        timeout_s=args.timeout,
    )
    if args.harness_check:
        h = harness_check(
            res.env["device"],
            args.dtype[0] if args.dtype[0] != "fp8" else "bf16",
            max(sizes),
            threads=args.threads,
            timeout_s=args.timeout,
        )
        res.summary["harness_ratio_vs_torch_timer"] = h["ratio"]
    return res


@_guarded
def _memory(args):
    from gpukit.bench.membw import memory_bandwidth

    return memory_bandwidth(
        args.device, args.size_mib, threads=args.threads, gpu=args.gpu, timeout_s=args.timeout
    )


@_guarded
def _collectives(args):
    from gpukit.bench.collectives import fit_and_holdout, run_collectives

    res = run_collectives(
        args.op,
        args.ranks,
        args.sizes,
        iters=args.iters,
        warmup=args.warmup,
        repeats=args.repeats,
        dtype=args.dtype,
        backend=args.backend,
        device=args.device,
        threads=args.threads or 1,
        timeout_s=args.timeout,
        bare_check=args.bare_check,
    )
    if args.fit:
        f = fit_and_holdout(res)
        res.summary.update(
            {
                "fit_alpha_us": f["alpha_us"],
                "fit_beta_gbps": f["beta_gbps"],
                "holdout_error_max": f["holdout_error_max"],
            }
        )
    return res


@_guarded
def _harness(args):
    from gpukit.bench.matmul import harness_check

    h = harness_check(args.device, args.dtype, args.size, threads=args.threads, timeout_s=args.timeout)
    e = h["env"]
    return Report(
        h,
        f"matmul {h['dtype']} {h['size']}^3 on {e['label']} {e['device_name']}, {h['threads']} threads\n"
        f"ours (gpukit.bench.timing)      {h['ours_tflops']:.4f} TFLOPS\n"
        f"torch.utils.benchmark.Timer     {h['timer_tflops']:.4f} TFLOPS\n"
        f"ratio of medians {h['ratio']:.3f} (goal: within 5%: {'yes' if h['within_5pct'] else 'no'}), "
        f"ratio of fastest samples {h['ratio_min']:.3f}",
    )


@_guarded
def _article(args):
    from gpukit.bench.collectives import article_latency_snippet

    a = article_latency_snippet(
        args.ranks, n_calls=args.calls, device=args.device, skew_ms=args.skew_ms, timeout_s=args.timeout
    )
    lines = [
        f"all_reduce of 1 element, {a['n_ranks']} ranks, {a['backend']} on {a['env']['label']}"
        + (f", ranks > 0 arrive {a['skew_ms']:g} ms late" if a["skew_ms"] else ""),
        f"the article's loop ({len(a['article_calls_us'][0])} single calls, no warm-up, no barrier, mean): "
        f"{a['article_mean_us']:.1f} us (first call {a['article_first_call_us']:.1f} us)",
        f"warm-up, barrier, many calls per timing, median:  {a['median_us']:.1f} us "
        f"(p10 {a['p10_us']:.1f}, p90 {a['p90_us']:.1f})",
        f"the article's number is {a['overstatement']:.2f}x the honest one; what it gets wrong:",
    ]
    lines += [f"  - {w}" for w in a["what_it_gets_wrong"]]
    return Report(a, "\n".join(lines))


@_guarded
def _ddp(args):
    from gpukit.bench.ddp_sweep import ddp_scaling

    return ddp_scaling(
        args.ranks,
        scaling=args.scaling,
        netlab=args.netlab,
        timeout_s=args.timeout,
        hook=args.hook,
        steps=args.steps,
        warmup=args.warmup,
        micro_batch=args.micro_batch,
        seq_len=args.seq_len,
        n_layers=args.n_layers,
        hidden=args.hidden,
        n_heads=args.n_heads,
        bucket_mb=args.bucket_mb,
        grad_accum=args.grad_accum,
        powersgd_rank=args.powersgd_rank,
        powersgd_start_iter=args.powersgd_start_iter,
        loader_latency_ms=args.loader_latency_ms,
        loader_workers=args.loader_workers,
        loader_shared=args.loader_shared,
        device=args.device,
    )


@_guarded
def _all(args):
    import signal

    from gpukit.bench.suite import run_suite

    def on_term(
        signum, frame
    ):  # an outer `timeout` or a scheduler's kill: write what was measured, as Ctrl-C
        raise KeyboardInterrupt("interrupted (SIGTERM)")

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        return run_suite(args.device, quick=args.quick, timeout_s=args.timeout)
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(subparsers) -> None:
    from gpukit.bench.collectives import add_arguments

    bench = subparsers.add_parser("bench", help="measure matmul TFLOPS, memory bandwidth, collectives")
    sub = bench.add_subparsers(dest="bench_command", metavar="BENCH")

    p = sub.add_parser("matmul", help="achieved TFLOPS (2mnk / median time) vs the catalog peak")
    _common(p, 300)
    p.add_argument("--dtype", nargs="+", default=["fp32"], help="fp32 tf32 bf16 fp16 fp8 (tf32/fp8: cuda)")
    p.add_argument(
        "--dims",
        "--sizes",
        dest="sizes",
        default="256,512,1024",
        help="square matrix dimensions N (N x N @ N x N); two LLM-like shapes are added (old spelling "
        "--sizes: sizes are bytes elsewhere)",
    )
    p.add_argument("--square-only", action="store_true", help="skip the LLM-like rectangular shapes")
    p.add_argument("--gpu", help="catalog GPU for the peak (default: from the CUDA device name)")
    p.add_argument("--peak-tflops", type=positive_float, help="peak to compare with (e.g. a CPU's)")
    p.add_argument("--threads", type=bounded_int, help="torch threads (default: torch's)")
    p.add_argument(
        "--repeats",
        type=bounded_int,
        default=7,
        help="timed repeats per row; the median is reported (default 7)",
    )
    p.add_argument(
        "--harness-check", action="store_true", help="also compare with torch.utils.benchmark.Timer"
    )
    p.set_defaults(func=_matmul)

    p = sub.add_parser("memory", help="STREAM copy/triad bandwidth (decimal GB/s); h2d/d2h on cuda")
    _common(p, 120)
    p.add_argument("--size-mib", type=positive_float, default=64, help="MiB per array (>> last-level cache)")
    p.add_argument("--threads", type=bounded_int, help="torch threads (default: torch's)")
    p.add_argument("--gpu", help="catalog GPU for the HBM peak")
    p.set_defaults(func=_memory)

    p = sub.add_parser("collectives", help="nccl-tests-style table: size, count, type, time, algbw, busbw")
    add_arguments(p)
    p.add_argument("--out", help="also write the result to FILE (.json or .csv)")
    p.add_argument("--fit", action="store_true", help="fit alpha/beta and report the holdout error")
    add_json_flag(p)
    p.set_defaults(func=_collectives)

    p = sub.add_parser("harness", help="our matmul timer vs torch.utils.benchmark.Timer (goal: within 5%%)")
    _common(p, 120)
    p.add_argument("--dtype", default="fp32", help="matrix dtype (default fp32)")
    p.add_argument(
        "--dims", "--size", dest="size", type=bounded_int, default=512, help="square matrix dimension N"
    )
    p.add_argument("--threads", type=bounded_int, help="torch threads (default: torch's)")
    p.set_defaults(func=_harness)

    p = sub.add_parser("article", help="the seed article's all-reduce latency loop vs the honest method")
    _common(p, 60)
    p.add_argument("--ranks", type=bounded_int, default=2, help="world size (default 2)")
    p.add_argument("--calls", type=bounded_int, default=10, help="all-reduce calls timed (default 10)")
    p.add_argument(
        "--skew-ms", type=nonnegative_float, default=0.0, help="delay ranks > 0 (a slow data loader)"
    )
    p.set_defaults(func=_article)

    p = sub.add_parser(
        "ddp", help="real DDP at world sizes 1..N: step, compute, exposed comm, bytes, prediction"
    )
    _common(p, 600)
    p.add_argument("--ranks", type=bounded_int, default=2, help="largest world size; rows for 1..N")
    p.add_argument("--hook", default="none", help="none, fp16, powersgd, bf16 (nccl)")
    p.add_argument(
        "--powersgd-rank",
        type=bounded_int,
        default=1,
        help="with --hook powersgd: rank of the factors (default 1)",
    )
    p.add_argument(
        "--powersgd-start-iter",
        type=nonnegative_int,
        default=2,
        help="with --hook powersgd: plain all-reduce before this step (default 2)",
    )
    p.add_argument("--bucket-mb", type=positive_float, default=25.0, help="DDP bucket_cap_mb (MiB)")
    p.add_argument(
        "--grad-accum", type=bounded_int, default=1, help="micro-steps per optimizer step (no_sync)"
    )
    p.add_argument("--loader-latency-ms", type=nonnegative_float, default=0.0, help="per-batch input latency")
    p.add_argument(
        "--loader-workers",
        type=nonnegative_int,
        default=0,
        help="input-pipeline worker threads (0: load in the training loop)",
    )
    p.add_argument(
        "--loader-shared", action="store_true", help="all ranks read one storage (one batch at a time)"
    )
    p.add_argument(
        "--scaling", default="weak", help="weak (per-rank batch fixed) or strong (global batch fixed)"
    )
    p.add_argument("--netlab", help="RATE: one rank per network namespace over an emulated link (root)")
    p.add_argument(
        "--steps", type=bounded_int, default=10, help="timed optimizer steps per world size (default 10)"
    )
    p.add_argument("--warmup", type=nonnegative_int, default=3, help="untimed steps first (default 3)")
    p.add_argument(
        "--micro-batch", type=bounded_int, default=4, help="sequences per rank per micro-step (default 4)"
    )
    p.add_argument(
        "--seq-len",
        "--seq",
        dest="seq_len",
        type=bounded_int,
        default=64,
        help="tokens per sequence (default 64)",
    )
    p.add_argument(
        "--layers",
        "--n-layers",
        dest="n_layers",
        type=bounded_int,
        default=2,
        help="layers of the toy transformer (default 2)",
    )
    p.add_argument(
        "--hidden", type=bounded_int, default=128, help="hidden size of the toy transformer (default 128)"
    )
    p.add_argument(
        "--heads",
        "--n-heads",
        dest="n_heads",
        type=bounded_int,
        default=4,
        help="attention heads of the toy transformer (default 4)",
    )
    p.set_defaults(func=_ddp)

    p = sub.add_parser("all", help="everything on one device, one JSON file (GPU check script)")
    _common(p, 900)
    p.add_argument("--quick", action="store_true", help="fewer sizes and a smaller sweep (minutes, not tens)")
    p.set_defaults(func=_all)

    bench.set_defaults(func=lambda args: bench.print_help())
