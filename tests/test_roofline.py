"""gpukit.compute.cpu_roofline: CPU peaks from what the CPU is (fake /proc/cpuinfo for four families), the ridge
point, mixed-dtype matmul rooflines and notebook 03's checks."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import catalog
from gpukit import compute as roofline
from gpukit.bench.envinfo import cpu_identity, parse_cpuinfo


def _cpuinfo(vendor, family, model, name, mhz, flags):
    block = (
        f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nstepping\t: 4\ncpu MHz\t\t: {mhz}\nflags\t\t: {flags}\n\n"
    )
    return block + block.replace("processor\t: 0", "processor\t: 1")


BASE = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma avx2"
SPR = _cpuinfo(
    "GenuineIntel",
    6,
    143,
    "Intel(R) Xeon(R) Platinum 8480+",
    "2000.000",
    BASE + " avx512f avx512bw avx512_bf16 amx_bf16 amx_tile amx_int8",
)
ZEN4 = _cpuinfo(
    "AuthenticAMD", 25, 17, "AMD EPYC 9654 96-Core Processor", "2400.000", BASE + " avx512f avx512_bf16"
)
ZEN3 = _cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC 7763 64-Core Processor", "2450.000", BASE)
SKX = _cpuinfo(
    "GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "2400.000", BASE + " avx512f"
)
SKX_SILVER = _cpuinfo(
    "GenuineIntel", 6, 85, "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz", "2200.000", BASE + " avx512f"
)
SKL_CLIENT = _cpuinfo("GenuineIntel", 6, 94, "Intel(R) Core(TM) i7-6700 CPU @ 3.40GHz", "3400.000", BASE)
ZEN1 = _cpuinfo("AuthenticAMD", 23, 1, "AMD EPYC 7601 32-Core Processor", "2200.000", BASE)


def _peak(text, cores=1):
    return roofline.cpu_peak_from_identity(parse_cpuinfo(text), cores)


@pytest.mark.parametrize(
    "text, microarch, flops_per_cycle",
    [
        # FP32 FLOPs per cycle per core, from the vendors' optimization guides (module docstring table):
        (SPR, "Sapphire Rapids", 64),  # 2 x 512-bit FMA: 2 x 16 lanes x 2
        (SKX, "AVX-512 server", 64),  # Xeon Gold 6148: 2 x 512-bit FMA (ports 0 and 5)
        (SKX_SILVER, "AVX-512 server", 32),  # Xeon Silver: one 512-bit FMA unit
        (ZEN4, "Zen 4", 32),  # AVX-512 on two 256-bit pipes: half of "2 x 512"
        (ZEN3, "Zen 3", 32),  # 2 x 256-bit FMA
        (SKL_CLIENT, "AVX2", 32),  # Skylake client: 2 x 256-bit FMA
        (ZEN1, "Zen 1", 16),  # 2 x 128-bit FMA
    ],
)
def test_fp32_flops_per_cycle_by_cpu(text, microarch, flops_per_cycle):
    p = _peak(text)
    assert microarch in p.config.microarch
    assert p.config.fp32_flops_per_cycle == flops_per_cycle
    assert p.peak_tflops == pytest.approx(p.ghz * flops_per_cycle / 1e3)
    assert p.assumptions[0] == p.config.assumption and "GHz" in p.assumptions[1]


def test_zen4_is_half_of_the_flag_only_guess():
    """The issue's case: avx512f x 2 FMA units overstates Zen 4 by 2x."""
    ident = parse_cpuinfo(ZEN4)
    zen4 = roofline.cpu_peak_from_identity(ident, 8)
    unknown = roofline.cpu_peak(8, ident["mhz"] / 1e3, vendor="", flags=ident["flags"])
    assert unknown.peak_tflops == pytest.approx(2 * zen4.peak_tflops)
    assert "double-pumped" in zen4.config.assumption and "upper bound" in unknown.config.assumption


def test_bf16_peaks():
    assert _peak(SPR).config.bf16_flops_per_cycle == 1024  # AMX-BF16 tiles
    assert _peak(ZEN4).config.bf16_flops_per_cycle == 64  # AVX512_BF16 dot products
    assert _peak(ZEN3).config.bf16_flops_per_cycle == 32  # no bf16 instructions: the fp32 rate


def test_parse_cpuinfo_first_processor_and_this_machine(tmp_path):
    ident = parse_cpuinfo(SPR)
    assert ident["vendor"] == "GenuineIntel" and ident["family"] == 6 and ident["model"] == 143
    assert ident["mhz"] == 2000.0 and "amx_tile" in ident["flags"]
    f = tmp_path / "cpuinfo"
    f.write_text(ZEN3)
    assert cpu_identity(str(f))["model_name"].startswith("AMD EPYC 7763")
    assert cpu_identity(str(tmp_path / "missing")) == {}
    with pytest.raises(ValueError, match="mhz"):
        roofline.cpu_peak_from_identity({"flags": frozenset({"avx2"})}, 2)


def test_bad_input():
    with pytest.raises(ValueError, match="flags must include"):
        roofline.cpu_peak(2, 2.0, flags={"fpu"})
    with pytest.raises(ValueError, match="cores"):
        roofline.cpu_peak(0, 2.0, flags={"avx2"})
    with pytest.raises(ValueError, match="ghz"):
        roofline.cpu_peak(2, -1, flags={"avx2"})
    with pytest.raises(ValueError, match="peak_source"):
        roofline.peak_check(1.0, 2.0, "guess")


def test_peak_check_and_ridge():
    c = roofline.peak_check(0.05, 0.1)
    assert c.fraction == 0.5 and not c.above_peak and "50% of the estimated peak" in c.to_text()
    assert "assumption of the estimate failed" in roofline.peak_check(0.2, 0.1).to_text()
    h100 = catalog.get_gpu("h100-sxm")
    ridge = roofline.ridge_point(h100.peak_tflops("bf16"), h100.hbm_bandwidth_gbps)
    assert 250 < ridge < 350  # 989 TFLOP/s over 3.35 TB/s (NVIDIA H100 datasheet): ~295 FLOP/byte


def test_attention_share_grows_with_seq_len():
    spec = catalog.get_model("llama-2-7b")
    shares = roofline.attention_share(spec, [512, 4096, 32768])
    assert shares == sorted(shares) and shares[0] < 0.05 and shares[-1] > 0.3


def test_mixed_roofline_weight_dtype_and_fits():
    h = catalog.get_gpu("rtx-4090")
    kw = dict(peak_tflops=h.peak_tflops("bf16"), bandwidth_gbps=h.hbm_bandwidth_gbps)
    bf = roofline.matmul_roofline_mixed(1, 8192, 8192, **kw)
    q4 = roofline.matmul_roofline_mixed(1, 8192, 8192, weight_dtype="int4", **kw)
    # decode: weights dominate the bytes, so 4-bit weights give about 4x the intensity
    assert 3.5 < q4.intensity_flop_per_byte / bf.intensity_flop_per_byte < 4.01
    assert bf.bound == q4.bound == "memory"
    m70 = catalog.get_model("llama-2-70b").n_params
    assert (
        roofline.matmul_roofline_mixed(
            1, 64, 64, model_params=m70, gpu_memory_bytes=h.memory_bytes, **kw
        ).fits
        is False
    )
    assert (
        roofline.matmul_roofline_mixed(
            1, 64, 64, weight_dtype="int4", model_params=7e9, gpu_memory_bytes=h.memory_bytes, **kw
        ).fits
        is True
    )


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 1 << 16), st.sampled_from(["fp32", "bf16", "fp8", "int4"]))
def test_mixed_roofline_never_above_either_roof(tokens, wdt):
    r = roofline.matmul_roofline_mixed(
        tokens, 4096, 4096, weight_dtype=wdt, peak_tflops=989, bandwidth_gbps=3350
    )
    assert r.attainable_tflops <= 989 + 1e-9
    assert r.attainable_tflops <= r.intensity_flop_per_byte * 3350 * 1e9 / 1e12 + 1e-9
    assert (r.bound == "compute") == (r.intensity_flop_per_byte >= r.ridge_flop_per_byte)
