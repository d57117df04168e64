"""Compute predictions against this machine: a CPU peak estimate and a timed training step.

- `cpu_peak_fp32(cores, ghz, flags)` (pure): the textbook peak of a CPU, cores x clock x FP32 FLOPs
  per cycle, where FLOPs per cycle = SIMD lanes x 2 (a fused multiply-add is 2 FLOPs) x FMA units
  per core (Intel 64 and IA-32 Architectures Optimization Reference Manual: Skylake-SP and later
  server cores issue two 512-bit FMAs per cycle on parts with two FMA units; Haswell+ two 256-bit).
  It is an upper bound built on assumptions (nominal clock, 2 FMA units, every core busy, no SMT
  sharing) that `assumptions` spells out; a GPU's peak comes from its datasheet instead.
- `read_cpuinfo()` reads the model, the clock and the ISA flags from /proc/cpuinfo (Linux).
- `train_step_check(...)` times real training steps of gpukit.bench.models' reference GPT and sets them
  beside the prediction "model FLOPs / measured matmul rate" (gpukit.compute.flops_per_token with
  the LM head counted): the ratio is the MFU *relative to this machine's own matmul speed*.

Used in: notebooks/03_compute_and_time (sections 3 and 5).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from gpukit.errors import require_positive, require_positive_int

# (flag, fp32 lanes, has FMA): the widest vector unit the flags announce, widest first.
_ISAS = (("avx512f", 16, True), ("avx2", 8, None), ("avx", 8, False), ("sse2", 4, False))


@dataclass(frozen=True)
class CpuPeak:
    """FP32 peak estimate: cores x GHz x lanes x FLOPs per lane per instruction x FMA units."""

    cores: int
    ghz: float
    isa: str
    lanes_fp32: int
    flops_per_lane: int  # 2 with FMA, 1 without
    fma_units: int  # vector FMA (or FP) pipes per core, an assumption
    model: str = ""
    ghz_source: str = "given"

    @property
    def flops_per_cycle_per_core(self) -> int:
        return self.lanes_fp32 * self.flops_per_lane * self.fma_units

    @property
    def peak_tflops(self) -> float:
        return self.cores * self.ghz * 1e9 * self.flops_per_cycle_per_core / 1e12

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (
            ("cores", self.cores),
            ("GHz", self.ghz),
            (f"{self.isa} fp32 lanes", self.lanes_fp32),
            ("FLOPs per lane per instruction", self.flops_per_lane),
            ("FMA units per core", self.fma_units),
            ("peak TFLOP/s", self.peak_tflops),
        )

    @property
    def assumptions(self) -> tuple[str, ...]:
        return (
            f"clock {self.ghz:.2f} GHz ({self.ghz_source}); AVX-512 code often runs below the nominal clock, "
            "turbo above it",
            f"{self.fma_units} vector FMA units per core (Xeon Gold/Platinum: 2; some "
            "Silver/Bronze parts: 1)",
            f"{self.cores} cores each with its own FMA units (a vCPU may be a hyperthread sharing them)",
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.breakdown), columns=["quantity", "value"])

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(
            peak_tflops=self.peak_tflops,
            flops_per_cycle_per_core=self.flops_per_cycle_per_core,
            assumptions=list(self.assumptions),
        )
        return d

    def to_text(self) -> str:
        return (
            f"CPU fp32 peak estimate: {self.cores} cores x {self.ghz:.2f} GHz x {self.lanes_fp32} lanes ({self.isa}) x "
            f"{self.flops_per_lane} (FMA) x {self.fma_units} units = {self.peak_tflops * 1e3:.0f} GFLOP/s"
        )


def cpu_peak_fp32(
    cores: int, ghz: float, flags, *, fma_units: int = 2, model: str = "", ghz_source: str = "given"
) -> CpuPeak:
    """FP32 peak of `cores` cores at `ghz` with the widest SIMD unit in `flags` (a set of cpuinfo flags)."""
    cores = require_positive_int("cores", cores)
    ghz = require_positive("ghz", ghz)
    fma_units = require_positive_int("fma_units", fma_units)
    flags = set(flags)
    for flag, lanes, fma in _ISAS:
        if flag in flags:
            has_fma = ("fma" in flags) if fma is None else fma
            return CpuPeak(
                cores=cores,
                ghz=ghz,
                isa=flag,
                lanes_fp32=lanes,
                flops_per_lane=2 if has_fma else 1,
                fma_units=fma_units,
                model=model,
                ghz_source=ghz_source,
            )
    raise ValueError("flags must include a SIMD extension (avx512f, avx2, avx or sse2) to estimate a peak")


def read_cpuinfo(path: str | Path = "/proc/cpuinfo") -> dict:
    """{'model', 'mhz', 'flags'} of the first processor in /proc/cpuinfo; ValueError if unreadable."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        raise ValueError(f"cannot read {p}: the CPU peak estimate needs Linux /proc/cpuinfo") from None
    info: dict = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and "model" not in info:
            info["model"] = value.strip()
        elif key == "cpu MHz" and "mhz" not in info:
            info["mhz"] = float(value)
        elif key == "flags" and "flags" not in info:
            info["flags"] = frozenset(value.split())
    if "flags" not in info or "mhz" not in info:
        raise ValueError(f"{p} has no 'flags' or 'cpu MHz' line: cannot estimate a CPU peak")
    return info


def this_cpu_peak_fp32(
    cores: int, *, fma_units: int = 2, path: str | Path = "/proc/cpuinfo", missing_ok: bool = False
) -> CpuPeak | None:
    """cpu_peak_fp32 for this machine's CPU ('cpu MHz' of /proc/cpuinfo as the clock); None instead of
    a ValueError when `missing_ok` and /proc/cpuinfo cannot tell (not Linux, no SIMD flags)."""
    try:
        info = read_cpuinfo(path)
        cpu_peak_fp32(1, info["mhz"] / 1e3, info["flags"])
    except ValueError:
        if missing_ok:
            return None
        raise
    return cpu_peak_fp32(
        cores,
        info["mhz"] / 1e3,
        info["flags"],
        fma_units=fma_units,
        model=info.get("model", ""),
        ghz_source="'cpu MHz' in /proc/cpuinfo",
    )


def describe_vs_peak(measured_tflops: float, peak: CpuPeak | None) -> str:
    """One line: measured CPU GFLOP/s and its share of the estimate (or why there is no estimate)."""
    measured = require_positive("measured_tflops", measured_tflops)
    if peak is None:
        return (
            f"measured {measured * 1e3:.1f} GFLOP/s (CPU figure); no peak estimate: /proc/cpuinfo does not "
            "name the clock and SIMD flags here"
        )
    line = (
        f"measured {measured * 1e3:.1f} GFLOP/s = {measured / peak.peak_tflops:.0%} of the estimated "
        f"{peak.peak_tflops * 1e3:.0f} GFLOP/s (CPU figures)"
    )
    if measured > peak.peak_tflops:  # the estimate's assumptions failed, not the measurement
        line += (
            f"; above the estimate: the cores ran faster than the nominal {peak.ghz:.2f} GHz (turbo), "
            "so the clock assumption is too low"
        )
    return line


# ------------------------------------------------------------------------------ training step
@dataclass(frozen=True)
class TrainStepCheck:
    """Predicted (model FLOPs / measured matmul rate) vs measured seconds of one training step."""

    model: str
    device: str
    precision: str
    micro_batch: int
    seq_len: int
    n_params: int
    model_flops: float  # per step, LM head included, no recompute
    matmul_tflops: float  # the rate the prediction assumes (measured on this machine)
    predicted_s: float
    measured_s: float
    p10_s: float
    p90_s: float
    threads: int

    @property
    def achieved_tflops(self) -> float:
        return self.model_flops / self.measured_s / 1e12

    @property
    def mfu_vs_matmul(self) -> float:
        """Achieved / matmul rate: the share of the machine's matmul speed the whole step sustains."""
        return self.predicted_s / self.measured_s

    @property
    def error(self) -> float:
        """(predicted - measured) / measured."""
        return (self.predicted_s - self.measured_s) / self.measured_s

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(achieved_tflops=self.achieved_tflops, mfu_vs_matmul=self.mfu_vs_matmul, error=self.error)
        return d

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([self.to_json_dict()])

    def to_text(self) -> str:
        label = "CPU" if self.device == "cpu" else "GPU"
        return (
            f"{label} training step of {self.model} ({self.micro_batch} x {self.seq_len} tokens, {self.precision}, "
            f"{self.threads} threads): predicted {self.predicted_s * 1e3:.1f} ms at {self.matmul_tflops:.3g} "
            f"TFLOP/s, measured {self.measured_s * 1e3:.1f} ms (p10-p90 {self.p10_s * 1e3:.1f}-"
            f"{self.p90_s * 1e3:.1f}); error {self.error:+.0%}, MFU vs matmul {self.mfu_vs_matmul:.0%}"
        )


def train_step_check(
    spec,
    micro_batch: int,
    seq_len: int,
    matmul_tflops: float,
    *,
    device: str = "cpu",
    precision: str = "fp32",
    steps: int = 5,
    warmup: int = 2,
    threads: int | None = None,
    optimizer: str = "adamw",
) -> TrainStepCheck:
    """Time `steps` real training steps (forward, backward, AdamW step) of the reference GPT for
    `spec` and compare with model FLOPs / `matmul_tflops` (the rate this machine's matmul reached)."""
    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer, train_step
    from gpukit.bench.timing import resolve_device, time_op, torch_threads
    from gpukit.compute import flops_per_token

    micro_batch = require_positive_int("micro_batch", micro_batch)
    seq_len = require_positive_int("seq_len", seq_len)
    rate = require_positive("matmul_tflops", matmul_tflops)
    device = resolve_device(device)
    fpt = flops_per_token(spec, seq_len=seq_len, include_embeddings=True)
    flops = fpt.model_flops * micro_batch * seq_len
    with torch_threads(threads) as n_threads:
        model = build_reference_model(spec, device=device)
        opt = make_optimizer(model, optimizer)
        batch = make_batch(spec, micro_batch, seq_len, device=device)
        st = time_op(
            lambda: train_step(model, opt, batch, precision),
            device=device,
            warmup=warmup,
            repeats=require_positive_int("steps", steps),
            iters=1,
        )
        n_params = sum(p.numel() for p in model.parameters())
    return TrainStepCheck(
        model=spec.name,
        device=device,
        precision=precision,
        micro_batch=micro_batch,
        seq_len=seq_len,
        n_params=n_params,
        model_flops=flops,
        matmul_tflops=rate,
        predicted_s=flops / (rate * 1e12),
        measured_s=st.median_s,
        p10_s=st.p10_s,
        p90_s=st.p90_s,
        threads=n_threads,
    )
