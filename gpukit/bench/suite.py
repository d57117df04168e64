"""`bench all`: the whole single-machine suite in one JSON file (the GPU check script runs this).

matmul per dtype (bf16, fp16, fp8 where supported, fp32, tf32 on CUDA), HBM/DRAM bandwidth and
host<->device copies, the matmul harness check, an all_reduce sweep (NCCL across the local GPUs
when there are >= 2, else 2-rank loopback gloo, labelled CPU), and the memory validation of
gpukit.bench.measure on CUDA, then KV-cache prefill/decode (gpukit.bench.decode) on CUDA (a device failure
in either is recorded, not fatal; a missing module is an error).

A section that fails on the device (RuntimeError, ValueError: a rank died, out of memory) or times
out on its own limit is recorded as {"error": ...} and the next one runs. When the run-wide timeout
expires, run_suite raises SuiteTimedOut (a TimeoutError) carrying the report of the sections finished
so far, with a top-level "incomplete" entry: the section the time ran out in, the elapsed seconds and
the sections not run (the CLI writes it to --out, then exits 2). Ctrl-C, or SIGTERM (which the CLI
turns into one), raises SuiteInterrupted with the same report ("interrupted_in"; exit 130).
"""

from __future__ import annotations

import time

from gpukit.bench.results import write_json


class SuiteReport:
    """Sections of results (each a BenchResult or a dict), printable and JSON-serializable."""

    def __init__(self, sections: dict, env: dict, elapsed_s: float, incomplete: dict | None = None):
        self.sections, self.env, self.elapsed_s = sections, env, elapsed_s
        self.incomplete = incomplete  # None, or where the run-wide timeout stopped the suite

    def to_json_dict(self) -> dict:
        # the same keys finished or not (issue 25): incomplete is null for a run that finished
        out = {"kind": "suite", "env": self.env, "elapsed_s": self.elapsed_s, "sections": {}}
        for name, sec in self.sections.items():
            out["sections"][name] = sec.to_json_dict() if hasattr(sec, "to_json_dict") else sec
        out["incomplete"] = self.incomplete
        return out

    def to_text(self) -> str:
        parts = []
        for name, sec in self.sections.items():
            body = (
                sec.to_text()
                if hasattr(sec, "to_text")
                else "\n".join(
                    f"{k}: {v}" for k, v in sec.items() if k not in ("env", "rows", "article_calls_us")
                )
            )
            parts.append(f"== {name} ==\n{body}")
        parts.append(f"# total {self.elapsed_s:.1f} s")
        if self.incomplete is not None:
            inc = self.incomplete
            how = (
                f"interrupted in {inc['interrupted_in']}"
                if "interrupted_in" in inc
                else f"timed out in {inc['timed_out_in']}"
            )
            parts.append(
                f"# incomplete: {how} after {inc['elapsed_s']:.1f} s "
                f"(timeout {inc['timeout_s']:g} s); not run: {', '.join(inc['not_run']) or 'none'}"
            )
        return "\n\n".join(parts)

    def write(self, path) -> None:
        write_json(self.to_json_dict(), path)


class SuiteInterrupted(KeyboardInterrupt):
    """`bench all` was interrupted (Ctrl-C, or SIGTERM, which the CLI turns into one, e.g. an outer
    `timeout`): `.report` is the SuiteReport of the sections finished before it, its `incomplete` entry
    says in which section (`interrupted_in`)."""

    def __init__(self, message: str, report: SuiteReport):
        super().__init__(message)
        self.report = report


class SuiteTimedOut(TimeoutError):
    """`bench all`'s run-wide timeout expired: `.report` is the SuiteReport of the sections finished
    before it, its `incomplete` entry says in which section the time ran out."""

    def __init__(self, message: str, report: SuiteReport):
        super().__init__(message)
        self.report = report


def _error(what: str, e: BaseException) -> dict:
    """A failed section's record: {"error": "<what>: <Type>: <first line>"}."""
    return {"error": f"{what}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}


def _measure_validation(device: str):
    """gpukit.bench.measure_validate.validate_grid on CUDA. A missing module is an error, as everywhere; a run
    that fails on the device (out of memory, a CUDA error) is recorded and the other results kept."""
    from gpukit.bench import measure_validate

    if device != "cuda":
        return {"skipped": "memory validation is part of the CUDA suite; on CPU run `gpukit validate`"}
    try:
        grid = list(measure_validate.VALIDATION_GRID) + list(measure_validate.LLAMA_GRID)  # both layouts
        df = measure_validate.validate_grid(grid, device=device)
    except (RuntimeError, ValueError) as e:  # torch.OutOfMemoryError is a RuntimeError
        return _error("gpukit.bench.measure_validate.validate_grid", e)
    worst = {k: float(df[f"{k}_err"].abs().max()) for k in measure_validate.COMPARED}
    return {
        "configs": len(df),
        "configs_ok": int(df["ok"].sum()),
        "max_abs_error": worst,
        "models": measure_validate.error_table(df).to_dict("records"),
        "rows": df.to_dict("records"),
    }


def run_suite(
    device: str = "auto", *, quick: bool = False, timeout_s: float = 900, progress_bar: bool | None = None
) -> SuiteReport:
    """Run every single-machine benchmark on `device`; each section has its own timeout, none past the
    run's. A section that fails is recorded and the next one runs; when `timeout_s` expires, raises
    SuiteTimedOut with the sections finished so far (module docstring)."""
    from gpukit.bench.collectives import article_latency_snippet, run_collectives
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.matmul import harness_check, matmul_bench
    from gpukit.bench.membw import memory_bandwidth
    from gpukit.bench.timing import Deadline, progress_line, resolve_device, run_with_watchdog
    from gpukit.errors import require_timeout

    t0 = time.monotonic()
    timeout_s = require_timeout("timeout_s", timeout_s)
    device = resolve_device(device)
    deadline = Deadline(timeout_s, "bench all")
    if device == "cuda":
        import torch

        cc = torch.cuda.get_device_capability()
        dtypes = ["bf16", "fp16"] + (["fp8"] if cc >= (8, 9) else []) + ["fp32", "tf32"]
        sizes = (2048, 4096, 8192) if quick else (1024, 2048, 4096, 8192, 16384)
        size_mib, n_gpus = (256 if quick else 1024), torch.cuda.device_count()
    else:
        dtypes, sizes, size_mib, n_gpus = ["fp32", "bf16"], (256, 512, 1024), 64, 0
    h_dtype, h_size = ("bf16", 8192) if device == "cuda" else ("fp32", 512)

    def validation(left):  # in-process, no sweep loop to check a deadline: a watchdog bounds it
        return run_with_watchdog(
            lambda: _measure_validation(device), left, "memory validation (the rest of bench all's timeout)"
        )

    def decode(left):  # issue 11: KV-cache prefill/decode against the roofline from the GPU's measured rates
        from gpukit.bench.decode import gpu_decode

        # the largest allocations of the suite (a 1.6B model, its KV cache): a failure keeps the rest
        return gpu_decode(quick=quick, timeout_s=max(10.0, min(180.0, left)))

    # (name, where a failure is attributed, run(seconds left of the run-wide timeout))
    plan = [
        (
            "matmul",
            "gpukit.bench.matmul.matmul_bench",
            lambda left: matmul_bench(
                device, dtypes, sizes, timeout_s=min(300, left), progress_bar=progress_bar
            ),
        ),
        (
            "memory",
            "gpukit.bench.membw.memory_bandwidth",
            lambda left: memory_bandwidth(
                device, size_mib, timeout_s=min(120, left), progress_bar=progress_bar
            ),
        ),
        (
            "harness_check",
            "gpukit.bench.matmul.harness_check",
            lambda left: harness_check(device, h_dtype, h_size, timeout_s=min(120, left)),
        ),
    ]
    if n_gpus >= 2:
        sweep = "1K,64K,1M,16M,64M,256M" if quick else "1K,64K,1M,16M,64M,256M,1G"
        plan += [
            (
                "all_reduce_nccl",
                "gpukit.bench.collectives.run_collectives",
                lambda left: run_collectives(
                    "all_reduce", n_gpus, sweep, device="cuda", backend="nccl", timeout_s=min(300, left)
                ),
            ),
            (
                "article_snippet_nccl",
                "gpukit.bench.article.article_latency_snippet",
                lambda left: article_latency_snippet(n_gpus, device="cuda", timeout_s=min(120, left)),
            ),
        ]
    else:
        plan.append(
            (
                "all_reduce_loopback_gloo_cpu",
                "gpukit.bench.collectives.run_collectives",
                lambda left: run_collectives(
                    "all_reduce", 2, "1K,64K,1M,16M", device="cpu", backend="gloo", timeout_s=min(120, left)
                ),
            )
        )
    plan.append(("memory_validation", "gpukit.bench.measure_validate.validate_grid", validation))
    if device == "cuda":
        plan.append(("decode", "gpukit.bench.decode.gpu_decode", decode))

    sections: dict = {}
    incomplete = None
    for i, (name, what, run) in enumerate(plan):
        left = deadline.left()
        if left > 0:
            progress_line(
                f"bench all [{i + 1}/{len(plan)}] {name} ({left:.0f} s left)",
                disable=None if progress_bar is None else not progress_bar,
            )
        if left <= 0:  # the time ran out in the section before (it kept its rows so far)
            incomplete = {
                "timed_out_in": plan[i - 1][0] if i else name,
                "error": "the run-wide timeout expired during this section"
                if i
                else "the run-wide timeout expired before the first section",
            }
            not_run = [n for n, _, _ in plan[i:]]
            break
        try:
            sections[name] = run(left)
        except TimeoutError as e:
            if deadline.left() > 0:  # the section's own limit, not the run's: the others still run
                sections[name] = _error(what, e)
                continue
            incomplete = {"timed_out_in": name, **_error(what, e)}
            not_run = [n for n, _, _ in plan[i + 1 :]]
            break
        except (RuntimeError, ValueError) as e:  # on the device (a rank died, out of memory): keep the rest
            sections[name] = _error(what, e)
        except (
            KeyboardInterrupt
        ):  # Ctrl-C or SIGTERM: the section cleans up its ranks; what was measured stays
            incomplete = {"interrupted_in": name, "error": "interrupted (Ctrl-C or SIGTERM)"}
            not_run = [n for n, _, _ in plan[i + 1 :]]
            break
    env = env_stamp(device, suite="bench all", quick=quick)
    elapsed = time.monotonic() - t0
    if incomplete is None:
        return SuiteReport(sections, env, elapsed)
    incomplete.update(elapsed_s=round(elapsed, 3), timeout_s=timeout_s, not_run=not_run)
    report = SuiteReport(sections, env, elapsed, incomplete)
    if "interrupted_in" in incomplete:
        raise SuiteInterrupted(
            f"bench all interrupted in section {incomplete['interrupted_in']} after {elapsed:.1f} s "
            f"(kept {len(sections)} section{'' if len(sections) == 1 else 's'}, not run: "
            f"{', '.join(not_run) or 'none'})",
            report,
        )
    raise SuiteTimedOut(
        f"bench all timed out after {timeout_s:g} s in section {incomplete['timed_out_in']} "
        f"({elapsed:.1f} s elapsed; kept {len(sections)} section{'' if len(sections) == 1 else 's'}, not run: "
        f"{', '.join(not_run) or 'none'}; raise --timeout)",
        report,
    )
