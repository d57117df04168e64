"""Notebook 03/04 views driven headless, their plots, and gpukit.bench.compute_check.

Outside a kernel, observers fire synchronously on `control.value = x` (see test_widgets_base.py):
set control values, assert the result changed, and that a bad value sets `.error` without raising.
"""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as w  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpukit.bench import compute_check  # noqa: E402
from gpukit.bench.netlab import NetBenchResult  # noqa: E402
from gpukit.catalog import get_interconnect  # noqa: E402
from gpukit.comm import busbw_factor, collective_time  # noqa: E402
from gpukit.widgets import comm_view, compute_view  # noqa: E402
from gpukit.widgets.base import View  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def fast_render(monkeypatch):
    """Views built while this is active render a one-line text instead of a figure: the plots cost
    ~0.5 s each on a busy 2-core machine and are tested directly below; the wiring is what's tested here."""
    for mod, name in (
        (compute_view, "draw_train_time"),
        (compute_view, "draw_roofline"),
        (comm_view, "draw_allreduce"),
    ):
        monkeypatch.setattr(mod, name, lambda r: type(r).__name__)


def _first_control(view: View):
    return next(iter(view.controls.values()))


# ------------------------------------------------------------------------------ 03: time to train
def test_train_time_view_follows_its_controls(fast_render):
    view = compute_view.train_time_view()
    assert isinstance(_first_control(view), (w.Dropdown, w.FloatSlider, w.IntSlider, w.FloatLogSlider))
    base = view.result
    assert view.error is None and base.days > 0 and base.gpu_hours == pytest.approx(base.days * 24 * 64)
    view.set(mfu=0.2)
    assert view.result.days == pytest.approx(2 * base.days)  # time ~ 1/MFU
    view.set(mfu=0.4, n_gpus=128)
    assert view.result.days == pytest.approx(base.days / 2)
    assert view.result.gpu_hours == pytest.approx(base.gpu_hours)  # GPU-hours do not depend on n
    view.controls["model"].value = "llama-2-70b"  # the first control changes the output
    assert view.result.days > 5 * base.days / 2
    view.set(tokens_b=4000)
    assert view.result.train.tokens == 4e12


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"mfu": 0.0}, "mfu"),
        ({"tokens_b": -1.0}, "tokens_b"),
        ({"model": "gpt3-175b", "seq_len": 4096}, "max_seq"),
    ],
)
def test_train_time_view_bad_values_show_one_line(bad, match, fast_render):
    view = compute_view.train_time_view()
    view.set(**bad)
    assert view.result is None and match in view.error and "\n" not in view.error
    view.set(mfu=0.4, tokens_b=1000.0, model="llama-2-7b", seq_len=2048)
    assert view.error is None and view.result.days > 0


def test_train_time_by_gpu_contains_the_choice():
    r = compute_view.train_time("llama-2-7b", "a100-80gb", 8, 0.5, 100, 2048)
    assert dict(r.by_gpu)["a100-80gb"] == pytest.approx(r.days)
    assert set(dict(r.by_gpu)) == set(compute_view.gpu_options())
    assert "v100-32gb" not in dict(r.by_gpu)  # no bf16 peak
    assert list(r.to_frame().columns) == ["gpu", "days"]
    assert compute_view.draw_train_time(r) is not None
    view = compute_view.train_time_view(n_gpus=8)  # the real renderer, once
    assert view.error is None and view.exception is None and view.n_updates == 1


def test_roofline_view_decode_vs_prefill(fast_render):
    view = compute_view.roofline_view()
    assert isinstance(_first_control(view), w.FloatLogSlider)
    assert view.result.bound == "memory"  # 1 token: a matrix-vector product
    view.set(tokens=16384)
    assert view.result.bound == "compute" and view.result.attainable_tflops == pytest.approx(
        view.result.peak_tflops
    )
    view.set(tokens=3.7)  # a log slider sends floats
    assert view.result.m == 4
    view.set(gpu="a100-80gb", dtype="fp8")
    assert view.result is None and "fp8" in view.error


def test_draw_roofline():
    fig = compute_view.draw_roofline(compute_view.matmul_roofline(64))
    assert fig.axes[0].get_xscale() == "log" and len(fig.axes[0].lines) >= 2


def test_roofline_table_and_measured_plot():
    rows = [
        {"shape": "square-512", "m": 512, "n": 512, "k": 512, "tflops": 0.1},
        {"shape": "square-64", "m": 64, "n": 64, "k": 64, "tflops": 0.01},
    ]
    t = compute_view.roofline_table(rows, peak_tflops=0.3, bandwidth_gbps=10.0)
    assert list(t["bound"]) == ["compute", "memory"]
    assert t["predicted_tflops"].iloc[0] == pytest.approx(0.3)
    assert t["measured_over_predicted"].iloc[0] == pytest.approx(0.1 / 0.3)
    assert compute_view.draw_measured_roofline(t, 0.3, 10.0, label="cpu") is not None


# ------------------------------------------------------------------------------ 04: all-reduce
def test_allreduce_view_follows_its_controls(fast_render):
    view = comm_view.allreduce_view()
    assert isinstance(_first_control(view), w.Dropdown)
    ib = view.result
    view.controls["link"].value = "eth-100g"  # the first control changes the output
    assert view.result.time_s > ib.time_s
    view.set(size_mib=1024)
    assert view.result.time_s > 3 * ib.time_s
    view.set(link="eth-1g", nics="per GPU")
    per_gpu = view.result.time_s
    view.set(nics="per node")
    assert view.result.time_s > 4 * per_gpu  # 8 GPUs share one port
    assert view.result.link_gbps == pytest.approx(0.125 / 8)


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"n_ranks": 12}, "multiple of gpus_per_node 8"),
        ({"n_ranks": 1}, "n_ranks"),
        ({"gpus_per_node": 4, "n_ranks": 10}, "multiple of gpus_per_node 4"),
    ],
)
def test_allreduce_view_bad_values_show_one_line(bad, match, fast_render):
    view = comm_view.allreduce_view()
    view.set(**bad)
    assert view.result is None and match in view.error
    view.set(n_ranks=16, gpus_per_node=8)
    assert view.error is None
    with pytest.raises(ValueError, match="size_mib"):  # the slider cannot go there; the function says why
        comm_view.allreduce_curves(size_mib=0)


def test_flat_curves_equal_the_alpha_beta_model():
    r = comm_view.allreduce_curves(link="ib-hdr", size_mib=64, n_ranks=32, gpus_per_node=1)
    ib = get_interconnect("ib-hdr")
    for row in r.rows[::6]:
        c = collective_time("all_reduce", row["size_bytes"], 32, ib)
        assert row["time_s"] == pytest.approx(c.time_s)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * busbw_factor("all_reduce", 32))
    assert r.time_s == pytest.approx(collective_time("all_reduce", 64 * 2**20, 32, ib).time_s)
    assert r.to_frame().shape[0] == len(comm_view.SWEEP_SIZES) and r.to_json_dict()["n_ranks"] == 32


@settings(max_examples=25, deadline=None)
@given(
    nodes=st.integers(1, 16),
    gpn=st.sampled_from(comm_view.GPUS_PER_NODE),
    link=st.sampled_from(["eth-1g", "ib-ndr", "roce-100g"]),
    nics=st.sampled_from(comm_view.NICS),
)
def test_curves_time_grows_with_size_and_busbw_stays_below_links(nodes, gpn, link, nics):
    if nodes * gpn < 2:
        return
    r = comm_view.allreduce_curves(link=link, n_ranks=nodes * gpn, gpus_per_node=gpn, nics=nics)
    times = [row["time_s"] for row in r.rows]
    assert times == sorted(times)
    fastest = max(get_interconnect(link).bandwidth_gbps * gpn, get_interconnect("nvlink4").bandwidth_gbps)
    assert max(row["busbw_gbps"] for row in r.rows) <= fastest * (1 + 1e-9)


# ------------------------------------------------------------------------------ 04: plots
def _fake_rows(alpha_us=100.0, beta_gbps=1.0, n=2):
    sizes = [2**k for k in range(10, 24, 2)]
    return [
        {
            "op": "all_reduce",
            "size_bytes": s,
            "world_size": n,
            "time_us": (2 * (n - 1) * alpha_us * 1e-6 + 2 * (n - 1) / n * s / (beta_gbps * 1e9)) * 1e6,
        }
        for s in sizes
    ]


def test_plot_sweep_with_a_fit_and_holdout():
    from gpukit.bench.collectives import fit_and_holdout

    rows = _fake_rows()
    hold = fit_and_holdout(rows)
    assert hold["alpha_us"] == pytest.approx(100.0, rel=1e-6) and hold["holdout_error_max"] < 1e-6
    fig = comm_view.plot_sweep(rows, hold)
    assert len(fig.axes[0].lines) == 3


def test_plot_netlab_and_table():
    res = [
        NetBenchResult(
            nodes=2,
            rate=r,
            configured_rate_gbps=g,
            op="all_reduce",
            size_bytes=4 << 20,
            busbw_gbps=0.93 * g,
            algbw_gbps=0.93 * g,
            ratio=0.93,
            rows=(
                {"size_bytes": 1 << 20, "busbw_gbps": 0.9 * g},
                {"size_bytes": 4 << 20, "busbw_gbps": 0.93 * g},
            ),
        )
        for r, g in (("1gbit", 0.125), ("200mbit", 0.025))
    ]
    t = comm_view.netlab_table(res)
    assert list(t["rate"]) == ["1gbit", "200mbit"] and t["above_80%"].all()
    assert comm_view.plot_netlab(res) is not None


def test_other_plots_draw():
    assert comm_view.plot_interconnects() is not None
    fig = comm_view.plot_ddp_scaling(n_gpus=(1, 2, 16))
    labels = [ln.get_label() for ln in fig.axes[0].lines]
    assert "nvlink4" in labels and "eth-10g" in labels
    nv = fig.axes[0].lines[labels.index("nvlink4")]
    assert max(nv.get_xdata()) <= 8  # an intra-node link stops at one node
    assert comm_view.draw_allreduce(comm_view.allreduce_curves()) is not None


# ------------------------------------------------------------------------------ compute_check
def test_cpu_peak_from_flags():
    p = compute_check.cpu_peak_fp32(2, 2.6, {"avx512f", "avx2", "fma"})
    assert p.peak_tflops == pytest.approx(2 * 2.6e9 * 16 * 2 * 2 / 1e12)
    assert compute_check.cpu_peak_fp32(2, 2.6, {"avx2", "fma"}).peak_tflops == pytest.approx(
        p.peak_tflops / 2
    )
    assert compute_check.cpu_peak_fp32(2, 2.6, {"avx2"}).flops_per_lane == 1
    assert compute_check.cpu_peak_fp32(1, 1.0, {"sse2"}, fma_units=1).peak_tflops == pytest.approx(4e-3)
    with pytest.raises(ValueError, match="SIMD"):
        compute_check.cpu_peak_fp32(2, 2.6, {"fpu"})
    with pytest.raises(ValueError, match="cores"):
        compute_check.cpu_peak_fp32(0, 2.6, {"avx2"})
    assert "GFLOP/s" in p.to_text() and len(p.assumptions) == 3 and p.to_frame().shape == (6, 2)


def test_read_cpuinfo_and_missing_ok(tmp_path):
    f = tmp_path / "cpuinfo"
    f.write_text(
        "processor\t: 0\nmodel name\t: Test CPU\ncpu MHz\t\t: 3000.000\nflags\t\t: fpu avx2 fma\n\n"
        "processor\t: 1\nmodel name\t: Test CPU\ncpu MHz\t\t: 1200.000\nflags\t\t: fpu\n"
    )
    info = compute_check.read_cpuinfo(f)
    assert info["model"] == "Test CPU" and info["mhz"] == 3000.0 and "avx2" in info["flags"]
    p = compute_check.this_cpu_peak_fp32(4, path=f)
    assert p.ghz == 3.0 and p.isa == "avx2" and p.cores == 4
    assert compute_check.this_cpu_peak_fp32(4, path=tmp_path / "missing", missing_ok=True) is None
    with pytest.raises(ValueError, match="cannot read"):
        compute_check.read_cpuinfo(tmp_path / "missing")


def test_describe_vs_peak():
    p = compute_check.cpu_peak_fp32(1, 1.0, {"avx2", "fma"})  # 32 GFLOP/s
    assert "50% of the estimated 32" in compute_check.describe_vs_peak(0.016, p)
    assert "above the estimate" in compute_check.describe_vs_peak(0.040, p)
    assert "no peak estimate" in compute_check.describe_vs_peak(0.01, None)


def test_train_step_check_runs_a_real_step():
    from gpukit.bench.models import reference_spec
    from gpukit.compute import flops_per_token

    spec = reference_spec(n_layers=1, hidden=64, n_heads=2, vocab=128, seq=32)
    r = compute_check.train_step_check(spec, 2, 32, matmul_tflops=0.05, steps=2, warmup=1, threads=1)
    flops = flops_per_token(spec, seq_len=32, include_embeddings=True).model_flops * 2 * 32
    assert r.model_flops == pytest.approx(flops) and r.predicted_s == pytest.approx(flops / 0.05e12)
    assert r.measured_s > 0 and r.p10_s <= r.measured_s <= r.p90_s and r.threads == 1
    assert r.mfu_vs_matmul == pytest.approx(r.predicted_s / r.measured_s)
    assert "CPU training step" in r.to_text()
    with pytest.raises(ValueError, match="matmul_tflops"):
        compute_check.train_step_check(spec, 2, 32, matmul_tflops=0)


def test_mixed_roofline_view_weight_dtype_and_fits():
    view = compute_view.mixed_roofline_view(model="llama-2-70b", gpu="h100-sxm")
    assert view.error is None and view.result.fits is False and view.result.bound == "memory"
    bf16_ai = view.result.intensity_flop_per_byte
    view.set(weight_dtype="int4")
    assert view.result.fits is True and view.result.intensity_flop_per_byte > 3 * bf16_ai
    view.set(tokens=65536)
    assert view.result.bound == "compute"
    with pytest.raises(ValueError, match="tokens"):
        compute_view.mixed_roofline(0, "llama-2-7b", "h100-sxm")
    with pytest.raises(ValueError, match="dtype"):
        compute_view.mixed_roofline(1, "llama-2-7b", "h100-sxm", weight_dtype="int3")
    fig = compute_view.draw_mixed_roofline(compute_view.mixed_roofline(1, "llama-2-70b", "h100-sxm"))
    assert "fits?: NO" in fig.axes[0].get_title()
    import matplotlib.pyplot as plt

    plt.close(fig)
