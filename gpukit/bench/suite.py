"""`bench all`: the whole single-machine suite in one JSON file (the GPU check script runs this).

matmul per dtype (bf16, fp16, fp8 where supported, fp32, tf32 on CUDA), HBM/DRAM bandwidth and
host<->device copies, the matmul harness check, an all_reduce sweep (NCCL across the local GPUs
when there are >= 2, else 2-rank loopback gloo, labelled CPU), and the memory validation of
gpukit.bench.measure on CUDA, then KV-cache prefill/decode (gpukit.bench.decode) on CUDA (a device failure
in either is recorded, not fatal; a missing module is an error).
"""

from __future__ import annotations

import time

from gpukit.bench.results import write_json


class SuiteReport:
    """Sections of results (each a BenchResult or a dict), printable and JSON-serializable."""

    def __init__(self, sections: dict, env: dict, elapsed_s: float):
        self.sections, self.env, self.elapsed_s = sections, env, elapsed_s

    def to_json_dict(self) -> dict:
        out = {"kind": "suite", "env": self.env, "elapsed_s": self.elapsed_s, "sections": {}}
        for name, sec in self.sections.items():
            out["sections"][name] = sec.to_json_dict() if hasattr(sec, "to_json_dict") else sec
        return out

    def to_text(self) -> str:
        parts = []
        for name, sec in self.sections.items():
            body = sec.to_text() if hasattr(sec, "to_text") else "\n".join(
                f"{k}: {v}" for k, v in sec.items() if k not in ("env", "rows", "article_calls_us"))
            parts.append(f"== {name} ==\n{body}")
        parts.append(f"# total {self.elapsed_s:.1f} s")
        return "\n\n".join(parts)

    def write(self, path) -> None:
        write_json(self.to_json_dict(), path)


def _measure_validation(device: str):
    """gpukit.bench.measure.validate_grid on CUDA. A missing module is an error, as everywhere; a run
    that fails on the device (out of memory, a CUDA error) is recorded and the other results kept."""
    from gpukit.bench import measure

    if device != "cuda":
        return {"skipped": "memory validation is part of the CUDA suite; on CPU run `gpukit validate`"}
    try:
        grid = list(measure.VALIDATION_GRID) + list(measure.LLAMA_GRID)  # both layouts
        df = measure.validate_grid(grid, device=device)
    except (RuntimeError, ValueError) as e:  # torch.OutOfMemoryError is a RuntimeError
        return {"error": f"gpukit.bench.measure.validate_grid: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    worst = {k: float(df[f"{k}_err"].abs().max()) for k in measure.COMPARED}
    return {"configs": len(df), "configs_ok": int(df["ok"].sum()), "max_abs_error": worst,
            "models": measure.error_table(df).to_dict("records"), "rows": df.to_dict("records")}


def run_suite(device: str = "auto", *, quick: bool = False, timeout_s: float = 900,
              progress_bar: bool | None = None) -> SuiteReport:
    """Run every single-machine benchmark on `device`; each section has its own timeout."""
    from gpukit.bench.collectives import article_latency_snippet, run_collectives
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.matmul import harness_check, matmul_bench
    from gpukit.bench.membw import memory_bandwidth
    from gpukit.bench.timing import Deadline, resolve_device

    t0 = time.monotonic()
    device = resolve_device(device)
    deadline = Deadline(timeout_s, "bench all")
    sections: dict = {}
    if device == "cuda":
        import torch

        cc = torch.cuda.get_device_capability()
        dtypes = ["bf16", "fp16"] + (["fp8"] if cc >= (8, 9) else []) + ["fp32", "tf32"]
        sizes = (2048, 4096, 8192) if quick else (1024, 2048, 4096, 8192, 16384)
        size_mib, n_gpus = (256 if quick else 1024), torch.cuda.device_count()
    else:
        dtypes, sizes, size_mib, n_gpus = ["fp32", "bf16"], (256, 512, 1024), 64, 0
    sections["matmul"] = matmul_bench(device, dtypes, sizes, timeout_s=min(300, deadline.left()),
                                      progress_bar=progress_bar)
    deadline.check()
    sections["memory"] = memory_bandwidth(device, size_mib, timeout_s=min(120, deadline.left()),
                                          progress_bar=progress_bar)
    deadline.check()
    h_dtype, h_size = ("bf16", 8192) if device == "cuda" else ("fp32", 512)
    sections["harness_check"] = harness_check(device, h_dtype, h_size)
    deadline.check()
    if n_gpus >= 2:
        sections["all_reduce_nccl"] = run_collectives(
            "all_reduce", n_gpus, "1K,64K,1M,16M,64M,256M" if quick else "1K,64K,1M,16M,64M,256M,1G",
            device="cuda", backend="nccl", timeout_s=min(300, deadline.left()))
        sections["article_snippet_nccl"] = article_latency_snippet(n_gpus, device="cuda", timeout_s=120)
    else:
        sections["all_reduce_loopback_gloo_cpu"] = run_collectives(
            "all_reduce", 2, "1K,64K,1M,16M", device="cpu", backend="gloo", timeout_s=min(120, deadline.left()))
    deadline.check()
    sections["memory_validation"] = _measure_validation(device)
    if device == "cuda":  # issue 11: KV-cache prefill/decode against the roofline from the GPU's measured rates
        from gpukit.bench.decode import gpu_decode

        deadline.check()
        try:  # the largest allocations of the suite (a 1.6B model, its KV cache): a failure keeps the rest
            sections["decode"] = gpu_decode(quick=quick, timeout_s=max(10.0, min(180.0, deadline.left())))
        except (RuntimeError, ValueError) as e:  # torch.OutOfMemoryError is a RuntimeError
            sections["decode"] = {"error": f"gpukit.bench.decode.gpu_decode: {type(e).__name__}: "
                                           f"{str(e).splitlines()[0] if str(e) else ''}"}
    env = env_stamp(device, suite="bench all", quick=quick)
    return SuiteReport(sections, env, time.monotonic() - t0)
