"""CPU peaks from what the CPU is, the ridge point, mixed-dtype matmul rooflines, and notebook 03's
small checks (MFU against a peak, the attention share of training FLOPs). Pure: no torch, no files.

CPU peak (fp32, FLOP/s) = cores x clock x FMA pipes x (pipe width / 32 bits) x 2 (a fused multiply-add
is two FLOPs). The pipes and their width are *what the core executes*, not what the ISA flags
announce: AVX-512 on AMD Zen 4 runs on two 256-bit pipes (a 512-bit instruction is issued twice), so
its peak equals AVX2's, half of what "avx512f x 2 FMA units" suggests. `cpu_fma_config` decides
from the vendor, the family/model numbers and the flags of /proc/cpuinfo
(gpukit.bench.envinfo.cpu_identity reads them), and every result names the assumption it used:

| CPU | how it is recognised | FP32 FMA | source |
| --- | --- | --- | --- |
| Intel server with AMX (Sapphire/Emerald/Granite Rapids) | flag amx_tile | 2 x 512-bit (+ AMX tiles for bf16/int8) | Intel Optimization Reference Manual (248966), ch. 2 (Golden Cove server) and ch. 20 (AMX: 1024 bf16 FLOPs per cycle per core) |
| Intel AVX-512 server (Skylake-SP, Cascade Lake, Ice Lake-SP) | family 6, avx512f, not a client model | 2 x 512-bit (Xeon Bronze/Silver, some Gold 5xxx: 1) | same manual, ch. 2 (Skylake server: FMA on ports 0 and 5) |
| Intel AVX-512 client (Ice Lake, Tiger Lake, Rocket Lake) | family 6, models 125/126/140/141/167 | 1 x 512-bit (ports 0+1 fused) = 2 x 256 | same manual, ch. 2 (Ice Lake client) |
| Intel AVX2 (Haswell to Alder Lake) | avx2 + fma | 2 x 256-bit | same manual, ch. 2 (Haswell) |
| AMD Zen 1 (family 23, model < 48) | family 23 | 2 x 128-bit | AMD Software Optimization Guide for family 17h (55723), sec. 2.11 |
| AMD Zen 2 / Zen 3 (family 23 model >= 48, family 25 without avx512f) | family | 2 x 256-bit | AMD guides for 17h model 30h (56305) and 19h (56665), FP unit |
| AMD Zen 4 (family 25 with avx512f) | family 25 + avx512f | 2 x 256-bit (AVX-512 double-pumped) | AMD Software Optimization Guide for family 19h model 10h+ (57647), sec. 2.11 |
| AMD Zen 5 (family 26) | family 26 | 2 x 512-bit (desktop/server; mobile parts: 256-bit) | AMD Software Optimization Guide for family 1Ah (58455) |
| anything else | flags only | avx512f 2 x 512, avx2+fma 2 x 256, avx 256-bit add + mul, sse2 128-bit add + mul | assumption, stated |

The ridge point of a roofline is peak / bandwidth in FLOP per byte (Williams, Waterman & Patterson
2009, "Roofline", CACM 52(4)).

Used in: notebooks/03_compute_and_time, gpukit.widgets.compute_view.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from gpukit.catalog import as_model
from gpukit.compute.flops import flops_per_token
from gpukit.errors import finite_result, require_choice, require_positive, require_positive_int
from gpukit.units import GB, dtype_bytes

# Intel family 6 client cores with AVX-512 and a single (fused) 512-bit FMA: Ice Lake (125, 126),
# Tiger Lake (140, 141), Rocket Lake (167). Intel SDM vol. 4 / Optimization Manual model tables.
INTEL_AVX512_CLIENT_MODELS = frozenset({125, 126, 140, 141, 167})


@dataclass(frozen=True)
class FmaConfig:
    """How many vector FMA pipes of what width one core has, and why we think so."""

    microarch: str
    isa: str  # the widest SIMD flag used: avx512f | avx2 | avx | sse2
    pipes: int  # FP32 FMA (or add+mul) pipes per core
    pipe_bits: int  # width each pipe executes per cycle
    fma: bool  # fused multiply-add (2 FLOPs per lane per instruction) or separate add and mul
    assumption: str  # one line: what was assumed and from what
    amx_bf16: bool = False
    avx512_bf16: bool = False

    @property
    def fp32_flops_per_cycle(self) -> int:
        lanes = self.pipe_bits // 32
        # with FMA: each pipe does lanes FMAs = 2 x lanes FLOPs; without: one add pipe + one mul pipe
        return self.pipes * lanes * 2 if self.fma else self.pipes * lanes

    @property
    def bf16_flops_per_cycle(self) -> int:
        """AMX-BF16: 1024 FLOPs/cycle/core (Intel Optimization Manual ch. 20: 512 bf16 multiply-adds per cycle);
        AVX512_BF16 (VDPBF16PS): twice the fp32 rate (pairs of bf16 products per fp32 lane); else the fp32 rate."""
        if self.amx_bf16:
            return 1024
        if self.avx512_bf16:
            return 2 * self.fp32_flops_per_cycle
        return self.fp32_flops_per_cycle


def _flags(flags: Iterable[str]) -> frozenset[str]:
    if isinstance(flags, str):
        return frozenset(flags.split())
    return frozenset(str(f) for f in flags)


def cpu_fma_config(
    vendor: str, family: int | None, model: int | None, flags, model_name: str = ""
) -> FmaConfig:
    """The FMA pipes of a core from /proc/cpuinfo's vendor_id, cpu family, model, flags and model name."""
    f = _flags(flags)
    vendor = (vendor or "").strip()
    bf = dict(amx_bf16="amx_bf16" in f, avx512_bf16="avx512_bf16" in f)
    name = model_name or ""
    if "avx512f" in f:
        isa = "avx512f"
    elif "avx2" in f:
        isa = "avx2"
    elif "avx" in f:
        isa = "avx"
    elif "sse2" in f:
        isa = "sse2"
    else:
        raise ValueError(
            "flags must include a SIMD extension (avx512f, avx2, avx or sse2) to estimate a peak"
        )
    fma = "fma" in f or isa == "avx512f"
    if vendor == "AuthenticAMD" and family is not None:
        if family == 23:
            if model is not None and model < 48:
                return FmaConfig(
                    "AMD Zen 1",
                    isa,
                    2,
                    128,
                    fma,
                    "AMD family 23 model < 48 (Zen 1/Zen+): two 128-bit FMA "
                    "pipes, a 256-bit AVX2 instruction is split in two",
                    **bf,
                )
            return FmaConfig(
                "AMD Zen 2",
                isa,
                2,
                256,
                fma,
                "AMD family 23 model >= 48 (Zen 2): two 256-bit FMA pipes",
                **bf,
            )
        if family == 25:
            if "avx512f" in f:
                return FmaConfig(
                    "AMD Zen 4",
                    isa,
                    2,
                    256,
                    True,
                    "AMD family 25 with AVX-512 (Zen 4): AVX-512 runs on two "
                    "256-bit FMA pipes (double-pumped), so the peak is AVX2's, not 2 x 512-bit",
                    **bf,
                )
            return FmaConfig(
                "AMD Zen 3",
                isa,
                2,
                256,
                fma,
                "AMD family 25 without AVX-512 (Zen 3): two 256-bit FMA pipes",
                **bf,
            )
        if family >= 26 and "avx512f" in f:
            return FmaConfig(
                "AMD Zen 5",
                isa,
                2,
                512,
                True,
                "AMD family 26 (Zen 5): two 512-bit FMA pipes on desktop and "
                "server parts (mobile Zen 5 has 256-bit pipes: half this peak)",
                **bf,
            )
    if vendor == "GenuineIntel" and family == 6:
        if "amx_tile" in f and "avx512f" in f:
            return FmaConfig(
                "Intel Xeon with AMX (Sapphire Rapids or later)",
                isa,
                2,
                512,
                True,
                "Intel with AMX: a Xeon server core (Sapphire Rapids or later) with two 512-bit FMA "
                "units (ports 0 and 5); AMX tiles add bf16/int8 matrix throughput, not fp32",
                **bf,
            )
        if "avx512f" in f and model in INTEL_AVX512_CLIENT_MODELS:
            return FmaConfig(
                "Intel AVX-512 client core",
                isa,
                1,
                512,
                True,
                f"Intel family 6 model {model} (Ice Lake/Tiger Lake/Rocket Lake client): one 512-bit FMA "
                "(ports 0+1 fused), the same peak as two 256-bit FMAs",
                **bf,
            )
        if "avx512f" in f:
            one = any(w in name for w in ("Bronze", "Silver"))
            return FmaConfig(
                "Intel AVX-512 server core",
                isa,
                1 if one else 2,
                512,
                True,
                (
                    "Intel Xeon Bronze/Silver: one 512-bit FMA unit per core (from the model name)"
                    if one
                    else "Intel AVX-512 server core (Skylake-SP/Cascade Lake/Ice Lake-SP): two 512-bit FMA units, "
                    "as on Xeon Gold 6xxx/Platinum; Bronze, Silver and some Gold 5xxx parts have one"
                ),
                **bf,
            )
        if isa == "avx2" and fma:
            return FmaConfig(
                "Intel AVX2 core",
                isa,
                2,
                256,
                True,
                "Intel AVX2+FMA (Haswell or later): two 256-bit FMA units (ports 0 and 1)",
                **bf,
            )
    # Unknown vendor/family: from the flags alone, and say so.
    if isa == "avx512f":
        return FmaConfig(
            "unknown AVX-512 core",
            isa,
            2,
            512,
            True,
            "unrecognised CPU: assumed two 512-bit FMA pipes "
            "from the avx512f flag (an upper bound: AMD Zen 4 and Intel client cores reach half)",
            **bf,
        )
    if isa == "avx2" and fma:
        return FmaConfig(
            "unknown AVX2 core",
            isa,
            2,
            256,
            True,
            "unrecognised CPU: assumed two 256-bit FMA pipes from the avx2 and fma flags",
            **bf,
        )
    bits = 256 if isa in ("avx", "avx2") else 128
    return FmaConfig(
        f"unknown {isa} core",
        isa,
        2,
        bits,
        False,
        f"unrecognised CPU without FMA: one {bits}-bit add and one {bits}-bit multiply pipe assumed ({isa})",
        **bf,
    )


@dataclass(frozen=True)
class CpuPeakEstimate:
    """Peak FP32 (and bf16) FLOP/s of `cores` cores at `ghz`: cores x GHz x FLOPs per cycle per core."""

    cores: int
    ghz: float
    config: FmaConfig
    model_name: str = ""
    ghz_source: str = "given"

    @property
    def peak_tflops(self) -> float:
        return self.cores * self.ghz * 1e9 * self.config.fp32_flops_per_cycle / 1e12

    @property
    def bf16_peak_tflops(self) -> float:
        return self.cores * self.ghz * 1e9 * self.config.bf16_flops_per_cycle / 1e12

    @property
    def assumptions(self) -> tuple[str, ...]:
        return (
            self.config.assumption,
            f"clock {self.ghz:.2f} GHz ({self.ghz_source}); wide-vector code may run below it, turbo above it",
            f"{self.cores} cores each with its own FMA pipes (a vCPU may be a hyperthread sharing them)",
        )

    def to_text(self) -> str:
        c = self.config
        return (
            f"CPU fp32 peak estimate ({c.microarch}): {self.cores} cores x {self.ghz:.2f} GHz x {c.pipes} pipes x "
            f"{c.pipe_bits // 32} lanes x {2 if c.fma else 1} (FMA) = {self.peak_tflops * 1e3:.0f} GFLOP/s"
        )

    def to_frame(self):
        import pandas as pd

        c = self.config
        rows = [
            ("microarchitecture", c.microarch),
            ("cores", self.cores),
            ("GHz", self.ghz),
            ("ISA", c.isa),
            ("FMA pipes per core", c.pipes),
            ("pipe width (bits)", c.pipe_bits),
            ("fp32 FLOPs per cycle per core", c.fp32_flops_per_cycle),
            ("fp32 peak (TFLOP/s)", self.peak_tflops),
            ("bf16 peak (TFLOP/s)", self.bf16_peak_tflops),
        ]
        return pd.DataFrame(rows, columns=["quantity", "value"])

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(
            peak_tflops=self.peak_tflops,
            bf16_peak_tflops=self.bf16_peak_tflops,
            fp32_flops_per_cycle=self.config.fp32_flops_per_cycle,
            assumptions=list(self.assumptions),
        )
        return d


def cpu_peak(
    cores: int,
    ghz: float,
    *,
    vendor: str = "",
    family: int | None = None,
    model: int | None = None,
    flags=(),
    model_name: str = "",
    ghz_source: str = "given",
) -> CpuPeakEstimate:
    """The peak of `cores` cores of this kind of CPU at `ghz` (`cpu_fma_config` decides the pipes)."""
    cores = require_positive_int("cores", cores)
    ghz = require_positive("ghz", ghz)
    cfg = cpu_fma_config(vendor, family, model, flags, model_name)
    return CpuPeakEstimate(cores=cores, ghz=ghz, config=cfg, model_name=model_name, ghz_source=ghz_source)


def cpu_peak_from_identity(identity: dict, cores: int) -> CpuPeakEstimate:
    """cpu_peak from gpukit.bench.envinfo.cpu_identity()'s dict (vendor, family, model, flags, model_name, mhz)."""
    missing = [k for k in ("flags", "mhz") if not identity.get(k)]
    if missing:
        raise ValueError(f"identity needs {', '.join(missing)} (from /proc/cpuinfo) to estimate a peak")
    return cpu_peak(
        cores,
        identity["mhz"] / 1e3,
        vendor=identity.get("vendor", ""),
        family=identity.get("family"),
        model=identity.get("model"),
        flags=identity["flags"],
        model_name=identity.get("model_name", ""),
        ghz_source="'cpu MHz' in /proc/cpuinfo",
    )


# ------------------------------------------------------------------------------ measured vs peak
@dataclass(frozen=True)
class PeakCheck:
    """A measured rate against a peak: the fraction, and what a fraction above 1 means."""

    measured_tflops: float
    peak_tflops: float
    peak_source: str  # "estimate" (a CPU from its identity) | "datasheet" | "measured"

    @property
    def fraction(self) -> float:
        return self.measured_tflops / self.peak_tflops

    @property
    def above_peak(self) -> bool:
        return self.measured_tflops > self.peak_tflops

    def to_text(self) -> str:
        kind = {"estimate": "estimated", "datasheet": "datasheet", "measured": "measured"}[self.peak_source]
        line = (
            f"measured {self.measured_tflops * 1e3:.1f} GFLOP/s = {self.fraction:.0%} of the {kind} "
            f"peak {self.peak_tflops * 1e3:.0f} GFLOP/s"
        )
        if self.above_peak:
            line += (
                "; above the peak: an assumption of the estimate failed (a clock above the nominal one, or more "
                "pipes than assumed), not the hardware"
            )
        return line


def peak_check(measured_tflops: float, peak_tflops: float, peak_source: str = "estimate") -> PeakCheck:
    """measured / peak (Chowdhery et al. 2022 sec. 4.1 define MFU the same way for a model's FLOPs)."""
    return PeakCheck(
        require_positive("measured_tflops", measured_tflops),
        require_positive("peak_tflops", peak_tflops),
        require_choice("peak_source", peak_source, ("estimate", "datasheet", "measured")),
    )


def ridge_point(peak_tflops: float, bandwidth_gbps: float) -> float:
    """Arithmetic intensity (FLOP/byte) where a roofline's slope meets its flat roof: peak / bandwidth
    (Williams, Waterman & Patterson 2009). Bandwidth in decimal GB/s."""
    return finite_result(
        "ridge_point",
        require_positive("peak_tflops", peak_tflops)
        * 1e12
        / (require_positive("bandwidth_gbps", bandwidth_gbps) * GB),
    )


def attention_share(model, seq_lens) -> list[float]:
    """Share of training FLOPs per token spent in the attention products (scores and values, forward and
    backward: 3x the forward term) at each sequence length (gpukit.compute.flops_per_token; PaLM appendix B)."""
    model = as_model(model, "model")  # a catalog name too
    out = []
    for s in seq_lens:
        f = flops_per_token(model, seq_len=s)
        out.append(3 * f.get("attention_forward") / f.model_flops)
    return out


# ------------------------------------------------------------------------------ mixed dtypes
@dataclass(frozen=True)
class MixedRoofline:
    """A weight matmul (tokens x k) @ (k x n) with weights stored in one dtype and activations in another."""

    tokens: int
    k: int
    n: int
    weight_dtype: str
    compute_dtype: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float
    peak_tflops: float
    bandwidth_gbps: float
    attainable_tflops: float
    bound: str
    model_weights_bytes: float | None = (
        None  # the whole model's weights in weight_dtype, if a model was given
    )
    gpu_memory_bytes: float | None = None
    fits: bool | None = None  # do the model's weights (alone) fit in the GPU's memory?

    def to_json_dict(self) -> dict:
        return asdict(self)


def matmul_roofline_mixed(
    tokens: int,
    k: int,
    n: int,
    *,
    weight_dtype: str = "bf16",
    compute_dtype: str = "bf16",
    peak_tflops: float,
    bandwidth_gbps: float,
    model_params: float | None = None,
    gpu_memory_bytes: float | None = None,
) -> MixedRoofline:
    """Bytes moved = tokens x k x a (input) + k x n x w (weights) + tokens x n x a (output), a and w the
    activation and weight element sizes: a 4-bit weight read from HBM and dequantized to bf16 in registers
    moves a quarter of a bf16 weight's bytes while the FLOPs (2 tokens k n) stay (Williams et al. 2009; the
    weight-only quantization argument of Frantar et al. 2023, GPTQ, sec. 6). The peak is the compute dtype's.
    With `model_params` and `gpu_memory_bytes`, `fits` says whether the weights alone fit."""
    tokens, k, n = (require_positive_int(x, v) for x, v in (("tokens", tokens), ("k", k), ("n", n)))
    a, w = dtype_bytes(compute_dtype), dtype_bytes(weight_dtype)
    flops = 2.0 * tokens * k * n
    moved = tokens * k * a + k * n * w + tokens * n * a
    ai = flops / moved
    ridge = ridge_point(peak_tflops, bandwidth_gbps)
    attainable = min(peak_tflops, ai * bandwidth_gbps * GB / 1e12)
    weights = fits = None
    if model_params is not None:
        weights = require_positive("model_params", model_params) * w
        if gpu_memory_bytes is not None:
            fits = weights <= require_positive("gpu_memory_bytes", gpu_memory_bytes)
    return MixedRoofline(
        tokens=tokens,
        k=k,
        n=n,
        weight_dtype=weight_dtype,
        compute_dtype=compute_dtype,
        flops=flops,
        bytes=moved,
        intensity_flop_per_byte=ai,
        ridge_flop_per_byte=ridge,
        peak_tflops=peak_tflops,
        bandwidth_gbps=bandwidth_gbps,
        attainable_tflops=attainable,
        bound="compute" if ai >= ridge else "memory",
        model_weights_bytes=weights,
        gpu_memory_bytes=gpu_memory_bytes,
        fits=fits,
    )
