"""Real micro-benchmarks (torch imported lazily): matmul TFLOPS, memory bandwidth, collectives, DDP.

Every benchmark warms up, synchronizes (CUDA) or barriers (distributed) before timing, reports the
median with p10/p90 over repeats, compares with the peak where one is known, and stamps the
environment (device, torch, threads, world size, backend, benchmark version, host, date) into its
result (gpukit.bench.results.BenchResult). CPU and CUDA run the same code.

Modules: timing (timers, the one percentile), envinfo (the one environment report), results (result
files, atomic JSON), models (the reference GPT and its one training step), measure (the one memory
measurement harness), measure_validate (predicted vs measured memory, the grids), measure_tricks
(the fitting tricks measured and timed), compute_check, matmul, membw, decode (prefill and decode with
a KV cache against the roofline), ranks (what every rank and launcher shares: backend, GPU count,
set-up, sync, means over ranks), launch (runs a rank body: spawned local ranks, or one rank under
torchrun), collectives (launchers and command line, also a torchrun worker:
`python -m gpukit.bench.collectives`) with collectives_measure (what every rank times), supervise
(the one process supervisor and signal routine), article (the seed article's latency loop), ddp
(launchers, also a torchrun worker) with ddp_rank (what one rank measures), ddp_sweep (world sizes
1..N beside the prediction) and ddp_validate, fsdp (FSDP, ZeRO-1, TP and PP on gloo ranks), planner
(the planner's speed, published costs), calibrate, suite (`bench all`), netlab/ (emulated cluster
network), lazy (this face's PEP 562 map). No module of bench imports one that imports it back.
The main entry points are importable from here: `from gpukit.bench import run_collectives`.
Used in: notebooks/03_* (single-GPU speed), notebooks/04_* (collectives), `gpukit bench`, `gpukit calibrate`.
"""

from gpukit.bench.envinfo import BENCH_VERSION
from gpukit.bench.lazy import reexports

# PEP 562: the entry points import their submodule on first use, so `import gpukit.bench` stays light
_LAZY = {
    "gpukit.bench.matmul": ("matmul_bench", "harness_check"),
    "gpukit.bench.membw": ("memory_bandwidth",),
    "gpukit.bench.collectives": ("run_collectives", "fit_and_holdout", "bare_loop_busbw"),
    "gpukit.bench.article": ("article_latency_snippet",),
    "gpukit.bench.ddp": ("run_ddp",),
    "gpukit.bench.suite": ("run_suite",),
    "gpukit.bench.results": ("BenchResult",),
}

__all__ = ["BENCH_VERSION", *(name for names in _LAZY.values() for name in names)]
__getattr__, __dir__ = reexports(__name__, globals(), _LAZY)
