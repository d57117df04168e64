"""Notebook 04's orchestration, out of its cells: which GPU cells may run, and the emulated-network lab.

- `gpu_gate(n_devices, has_cuda, min_gpus, what)` (pure): run a multi-GPU cell or say in one line why
  not ("needs a CUDA device" / "needs 2 or more CUDA devices (this machine: 1)"). `this_gpu_gate()`
  asks torch for the count.
- `parse_rates(text)`: "1gbit,200mbit" -> canonical rate strings (ValueError naming the bad one).
- `lab_plan(rates, quick)` (pure): which rates, message sizes and repeats the lab runs; QUICK keeps
  the first rate with three small messages (about 10 s).
- `run_lab(rates, quick)`: check that the lab can run here (root, `ip netns`, `tc`), then
  `gpukit.bench.netlab.bench` per rate; returns a LabRun with the results or the one-line reason it
  was skipped. Every bench brings its namespaces down on success, failure and Ctrl-C (netlab.bench).

Used in: notebooks/04_communication (sections 4 and 6), tests/test_netlab_course.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field

QUICK_SIZES = (64 * 1024, 2**20, 4 * 2**20)  # bytes: small enough for ~10 s over 1 Gb/s


@dataclass(frozen=True)
class GpuGate:
    """Whether a GPU cell runs (`ok`), on how many devices, and the line to print when it does not."""

    ok: bool
    n_gpus: int
    message: str = ""


def gpu_gate(
    n_devices: int, has_cuda: bool, min_gpus: int = 2, what: str = "the NCCL all-reduce sweep"
) -> GpuGate:
    """Pure: `what` runs when CUDA is present with at least `min_gpus` devices; otherwise one 'skipped' line."""
    if min_gpus < 1:
        raise ValueError(f"min_gpus must be a positive integer, got {min_gpus!r}")
    if not has_cuda:
        return GpuGate(False, 0, f"skipped: {what} needs a CUDA device (this machine: CPU only)")
    if n_devices < min_gpus:
        return GpuGate(
            False,
            n_devices,
            f"skipped: {what} needs {min_gpus} or more CUDA devices (this machine: {n_devices})",
        )
    return GpuGate(True, n_devices, "")


def this_gpu_gate(min_gpus: int = 2, what: str = "the NCCL all-reduce sweep") -> GpuGate:
    """gpu_gate for this machine (torch.cuda)."""
    import torch

    cuda = bool(torch.cuda.is_available())
    return gpu_gate(torch.cuda.device_count() if cuda else 0, cuda, min_gpus, what)


def parse_rates(text: str) -> list[str]:
    """'1gbit,200mbit' -> ['1gbit', '200mbit'] (canonical; ValueError on a bad rate, '' -> [])."""
    from gpukit.bench.netlab import fmt_rate, parse_rate

    if not isinstance(text, str):
        raise ValueError(f"rates must be a comma-separated string like '1gbit,200mbit', got {text!r}")
    return [fmt_rate(parse_rate(r)) for r in text.split(",") if r.strip()]


@dataclass(frozen=True)
class LabPlan:
    rates: tuple[str, ...]
    sizes: tuple[int, ...] | None  # None: netlab.default_sizes per rate
    repeats: int


def lab_plan(rates, quick: bool) -> LabPlan:
    """QUICK: the first rate only, three small messages, 3 repeats; full: every rate, default sizes, 5 repeats."""
    rates = tuple(rates)
    if quick:
        return LabPlan(rates[:1], QUICK_SIZES, 3)
    return LabPlan(rates, None, 5)


@dataclass(frozen=True)
class LabRun:
    plan: LabPlan
    results: tuple = ()
    skipped: str = ""  # why nothing ran (one line), empty when it ran
    notes: tuple[str, ...] = field(default_factory=tuple)


def run_lab(rates, quick: bool, *, nodes: int = 2, check=None, bench=None) -> LabRun:
    """Run the emulated two-node lab for each planned rate, or say why not (`check` and `bench` default to
    gpukit.bench.netlab.check_available / bench; tests pass fakes)."""
    from gpukit.bench import netlab

    check = check or netlab.check_available
    bench = bench or netlab.bench
    plan = lab_plan(rates, quick)
    if not plan.rates:
        return LabRun(plan, skipped="skipped: NETLAB_RATES is empty")
    why = check()
    if why:
        return LabRun(plan, skipped=f"skipped: {why}")
    results = tuple(
        bench(nodes, r, sizes=list(plan.sizes) if plan.sizes else None, repeats=plan.repeats)
        for r in plan.rates
    )
    return LabRun(plan, results=results)
