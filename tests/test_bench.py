"""gpukit.bench timing, matmul, memory bandwidth, results and the `gpukit bench` CLI (tiny CPU sizes)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpukit.bench import matmul, membw, results, timing
from gpukit.bench.envinfo import BENCH_VERSION, env_stamp
from gpukit.cli import main

ENV_KEYS = (
    "benchmark_version",
    "torch",
    "device",
    "device_name",
    "threads",
    "world_size",
    "backend",
    "hostname",
    "date",
    "label",
)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


# ---------------------------------------------------------------- timing


@given(
    st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=50),
    st.floats(min_value=0, max_value=100),
)
def test_percentile_matches_numpy(xs, q):
    import numpy as np

    assert timing.percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)), rel=1e-9, abs=1e-12)


def test_one_median_everywhere_is_the_true_median():
    """The median of an even sample is the mean of the middle two (not the upper one, as two
    hand-made medians in calibrate and benchreport returned)."""
    from types import SimpleNamespace

    from gpukit.bench.calibrate import link_entry

    assert timing.percentile([1.0, 2.0, 3.0, 10.0], 50) == 2.5
    assert timing.percentile([3.0, 1.0, 2.0], 50) == 2.0
    rows = [
        {"size_bytes": s, "time_us": 10 + s / 1e3, "world_size": 2, "busbw_gbps": 1.0, "harness_ratio": h}
        for s, h in ((1e3, 0.8), (1e4, 1.1), (1e5, 0.9), (1e6, 1.0))
    ]
    entry = link_entry(
        SimpleNamespace(rows=rows, env={"backend": "gloo"}),
        {"holdout_error_max": 0.0, "holdout_error_median": 0.0},
    )
    assert entry["harness_ratio_median"] == pytest.approx(0.95)
    with pytest.raises(ValueError, match="empty"):
        timing.percentile([], 50)


@given(st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=30))
def test_summary_is_ordered(xs):
    s = timing.summarize(xs)
    assert s.min_s <= s.p10_s <= s.median_s <= s.p90_s <= s.max_s
    assert s.n_repeats == len(xs)


def test_time_op_counts_calls_and_is_positive():
    calls = []
    s = timing.time_op(lambda: calls.append(1), warmup=2, repeats=4, iters=5)
    assert len(calls) == 2 + 4 * 5
    assert s.median_s > 0 and s.iters == 5 and s.n_repeats == 4
    auto = timing.time_op(lambda: sum(range(100)), warmup=1, repeats=3, min_repeat_s=0.002)
    assert auto.iters >= 1 and auto.median_s > 0


def test_deadline_raises_once_spent():
    d = timing.Deadline(0.0, "thing")
    with pytest.raises(TimeoutError, match="thing timed out"):
        d.check()
    timing.Deadline(None).check()


@pytest.mark.skipif(_cuda(), reason="a CUDA device is present")
def test_cuda_without_cuda_is_a_value_error():
    with pytest.raises(ValueError, match="^--device cuda requested but no CUDA device is available$"):
        timing.resolve_device("cuda")
    with pytest.raises(ValueError, match="--device cuda requested"):
        matmul.matmul_bench("cuda", sizes=(32,))
    with pytest.raises(ValueError, match="--device cuda requested"):
        membw.memory_bandwidth("cuda", 1)
    assert timing.resolve_device("auto") == "cpu"


def test_bad_device_names_the_choices():
    with pytest.raises(ValueError, match="device must be one of cpu, cuda, auto"):
        timing.resolve_device("tpu")


def test_env_stamp_has_the_environment():
    env = env_stamp("cpu", threads=1, world_size=2, backend="gloo", note="x")
    for k in ENV_KEYS:
        assert k in env
    assert env["benchmark_version"] == BENCH_VERSION and env["label"] == "CPU"
    assert env["world_size"] == 2 and env["backend"] == "gloo" and env["threads"] == 1 and env["note"] == "x"
    json.dumps(env)


@pytest.mark.parametrize("smi, driver", [("570.124.06\n570.124.06\n", "570.124.06"), (None, None)])
def test_cuda_env_stamp_names_gpu_cuda_torch_and_driver(monkeypatch, smi, driver):
    """The GPU check's JSON says what ran it: GPU name, capability, CUDA and torch versions and the
    NVIDIA driver (nvidia-smi; None without it). CPU: the CUDA queries and nvidia-smi are faked."""
    import shutil
    import subprocess
    from types import SimpleNamespace

    import torch

    from gpukit.bench import envinfo

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=None: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda i=None: (9, 0))
    monkeypatch.setattr(shutil, "which", lambda name: None if smi is None else f"/usr/bin/{name}")
    calls = []

    def run(argv, **kw):
        calls.append(argv)
        return SimpleNamespace(returncode=0, stdout=smi, stderr="")

    monkeypatch.setattr(subprocess, "run", run)
    envinfo.nvidia_driver_version.cache_clear()
    try:
        env = env_stamp("cuda")
        env_stamp("cuda")
    finally:
        envinfo.nvidia_driver_version.cache_clear()
    assert env["device_name"] == "NVIDIA H200" and env["gpu_capability"] == "9.0" and env["label"] == "GPU"
    assert env["torch"] == torch.__version__ and "cuda" in env and env["driver"] == driver
    assert len(calls) == (0 if smi is None else 1)  # asked once per process


# ---------------------------------------------------------------- matmul


def test_matmul_cpu_tiny_sweep_is_sane():
    res = matmul.matmul_bench(
        "cpu", ["fp32", "bf16"], (32, 64), threads=1, repeats=3, min_repeat_s=0.005, progress_bar=False
    )
    assert {r["dtype"] for r in res.rows} == {"fp32", "bf16"}
    assert len(res.rows) == 2 * 4  # two squares + mlp-up + mlp-down per dtype
    for r in res.rows:
        assert r["tflops"] > 0 and r["time_us"] > 0
        assert r["p10_us"] <= r["time_us"] <= r["p90_us"]
        assert r["tflops"] == pytest.approx(2 * r["m"] * r["n"] * r["k"] / (r["time_us"] * 1e-6) / 1e12)
        assert r["peak_tflops"] is None and r["achieved_frac"] is None  # a CPU peak is not in the catalog
    assert res.summary["best_tflops_fp32"] == max(r["tflops"] for r in res.rows if r["dtype"] == "fp32")
    assert res.env["label"] == "CPU" and res.env["threads"] == 1
    assert "tflops" in res.to_text() and len(res.to_frame()) == 8


def test_matmul_achieved_fraction_uses_the_given_peak():
    res = matmul.matmul_bench(
        "cpu",
        "fp32",
        (32,),
        llm_shapes=False,
        peak_tflops=2.0,
        repeats=3,
        min_repeat_s=0.002,
        progress_bar=False,
    )
    (row,) = res.rows
    assert row["peak_tflops"] == 2.0 and row["achieved_frac"] == pytest.approx(row["tflops"] / 2.0)


def test_matmul_rejects_gpu_only_dtypes_on_cpu():
    with pytest.raises(ValueError, match="fp8 needs --device cuda"):
        matmul.matmul_bench("cpu", ["fp8"], (32,))
    with pytest.raises(ValueError, match="dtype must be one of"):
        matmul.matmul_bench("cpu", ["int3"], (32,))


def test_matmul_shapes():
    shapes = matmul.matmul_shapes([512, 256], llm_shapes=True)
    assert [s[0] for s in shapes] == ["square-256", "square-512", "mlp-up-256", "mlp-down-256"]
    assert shapes[2][1:] == (256, 1024, 256) and shapes[3][1:] == (256, 256, 1024)
    with pytest.raises(ValueError, match="sizes must be positive"):
        matmul.matmul_shapes([0])


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA GH200 480GB", "gh200"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb-sxm"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb-sxm"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA L40S", "l40s"),
        ("Tesla T4", "t4"),
        ("NVIDIA A10G", "a10g"),
        ("Some Future GPU", None),
    ],
)
def test_gpu_key_for_device_names(name, key):
    known = {
        "h100-sxm",
        "h100-pcie",
        "h100-nvl",
        "h200",
        "gh200",
        "a100-80gb-sxm",
        "a100-40gb-sxm",
        "l4",
        "l40s",
        "t4",
        "a10g",
    }
    assert matmul.gpu_key_for(name, known) == key


@pytest.mark.parametrize(
    "name, key",
    [
        ("NVIDIA H200", "h200"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA A100 80GB PCIe", "a100-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA B200", "b200"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GH200 480GB", "gh200"),
    ],
)
def test_gpu_key_for_the_shipped_catalog(name, key):
    """torch.cuda.get_device_name -> a gpukit/data/gpus.csv row, against the real catalog. A variant the
    catalog lacks (H200 NVL: 835 dense bf16 TFLOPS, not the SXM's 989) is unknown, not compared with the
    SXM row its name also matches; H100 NVL and GH200 have their own rows (issue 24)."""
    assert matmul.gpu_key_for(name) == key


def test_gpu_key_only_returns_catalog_names():
    assert matmul.gpu_key_for("NVIDIA H100 80GB HBM3", known=set()) is None


def test_harness_check_against_torch_timer():
    h = matmul.harness_check("cpu", "fp32", 128, threads=1, min_run_time_s=0.15, rounds=3)
    assert h["threads"] == 1 and h["ours_tflops"] > 0 and h["timer_tflops"] > 0
    assert h["ratio"] == pytest.approx(h["ours_tflops"] / h["timer_tflops"])
    # same op, same threads: far apart only if one timer is broken (5% is the goal on a quiet
    # machine; the fastest samples are compared because other processes share these 2 cores)
    assert 0.5 < h["ratio_min"] < 2.0


# ---------------------------------------------------------------- memory bandwidth


def test_memory_bandwidth_cpu_counts_stream_bytes():
    res = membw.memory_bandwidth("cpu", 2, threads=1, repeats=3, min_repeat_s=0.005, progress_bar=False)
    rows = {r["test"]: r for r in res.rows}
    assert set(rows) == {"copy", "triad"}  # no h2d/d2h on CPU
    arr = 2 * 2**20
    assert rows["copy"]["bytes_counted"] == 2 * arr and rows["triad"]["bytes_counted"] == 3 * arr
    for r in rows.values():
        assert r["gbps"] > 0
        assert r["gbps"] == pytest.approx(r["bytes_counted"] / (r["time_us"] * 1e-6) / 1e9)
    assert res.env["size_mib"] == 2 and res.summary["copy_gbps"] == rows["copy"]["gbps"]


def test_memory_bandwidth_rejects_bad_size():
    with pytest.raises(ValueError, match="size_mib must be > 0"):
        membw.memory_bandwidth("cpu", 0)


# ---------------------------------------------------------------- results files


def _result():
    return results.BenchResult(
        "demo",
        ({"a": 1, "b": 2.5}, {"a": 2, "b": 1e-3}),
        {"device": "cpu", "label": "CPU"},
        {"best": 2.5},
        ("a", "b"),
        ("a(x)", "b(y)"),
    )


@pytest.mark.parametrize("suffix", [".json", ".csv"])
def test_result_round_trip(tmp_path, suffix):
    path = _result().write(tmp_path / f"sub/r{suffix}")
    back = results.read_result(path)
    assert back["env"]["device"] == "cpu" and back["summary"]["best"] == 2.5
    assert [float(r["b"]) for r in back["rows"]] == [2.5, 1e-3]


def test_result_text_uses_headers():
    text = _result().to_text()
    assert text.splitlines()[0].split() == ["a(x)", "b(y)"] and "# best: 2.5" in text


# ---------------------------------------------------------------- CLI


@pytest.mark.skipif(_cuda(), reason="a CUDA device is present")
@pytest.mark.parametrize(
    "argv",
    [
        ["bench", "matmul", "--device", "cuda"],
        ["bench", "memory", "--device", "cuda"],
        ["bench", "all", "--device", "cuda"],
        ["calibrate", "--device", "cuda"],
    ],
)
def test_cli_cuda_without_cuda_exits_2(argv, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == "error: --device cuda requested but no CUDA device is available"


def test_bench_all_on_cuda_keeps_the_other_sections_when_decode_fails(monkeypatch, tmp_path):
    """`bench all --device cuda` (the GPU check's one try): a failure in the decode section (a CUDA
    out of memory in the 1.6B model's KV cache) is recorded in that section; the sections measured
    before it are kept and written. CPU: the CUDA queries and the sections before decode are faked."""
    import torch

    from gpukit.bench import collectives, decode, envinfo, suite

    done = results.BenchResult("fake", ({"x": 1.0},), {"device": "cuda"}, {})
    monkeypatch.setattr(timing, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(matmul, "matmul_bench", lambda *a, **k: done)
    monkeypatch.setattr(matmul, "harness_check", lambda *a, **k: {"ratio": 1.0})
    monkeypatch.setattr(membw, "memory_bandwidth", lambda *a, **k: done)
    monkeypatch.setattr(collectives, "run_collectives", lambda *a, **k: done)
    monkeypatch.setattr(suite, "_measure_validation", lambda device: {"configs": 0})
    monkeypatch.setattr(envinfo, "env_stamp", lambda *a, **k: {"device": "cuda"})

    def oom(**kw):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB\nmore lines")

    monkeypatch.setattr(decode, "gpu_decode", oom)
    rep = suite.run_suite("cuda", quick=True, timeout_s=60)
    assert list(rep.sections) == [
        "matmul",
        "memory",
        "harness_check",
        "all_reduce_loopback_gloo_cpu",
        "memory_validation",
        "decode",
    ]
    assert rep.sections["decode"] == {
        "error": "gpukit.bench.decode.gpu_decode: OutOfMemoryError: "
        "CUDA out of memory. Tried to allocate 20.00 GiB"
    }
    rep.write(tmp_path / "suite.json")
    saved = json.loads((tmp_path / "suite.json").read_text())
    assert saved["sections"]["matmul"]["rows"] == [{"x": 1.0}] and "error" in saved["sections"]["decode"]


def _fake_cpu_suite(monkeypatch, **sections):
    """`bench all --device cpu` with every section faked (a BenchResult each, or the given callables)."""
    from gpukit.bench import collectives, envinfo, suite

    done = results.BenchResult("fake", ({"x": 1.0},), {"device": "cpu"}, {})
    fakes = {
        "matmul": lambda *a, **k: done,
        "memory": lambda *a, **k: done,
        "harness_check": lambda *a, **k: {"ratio": 1.0},
        "collectives": lambda *a, **k: done,
        "memory_validation": lambda device: {"skipped": "cpu"},
        **sections,
    }
    monkeypatch.setattr(matmul, "matmul_bench", fakes["matmul"])
    monkeypatch.setattr(membw, "memory_bandwidth", fakes["memory"])
    monkeypatch.setattr(matmul, "harness_check", fakes["harness_check"])
    monkeypatch.setattr(collectives, "run_collectives", fakes["collectives"])
    monkeypatch.setattr(suite, "_measure_validation", fakes["memory_validation"])
    monkeypatch.setattr(envinfo, "env_stamp", lambda *a, **k: {"device": "cpu"})
    return suite


def _slow(result=None, s=0.4):
    """A section that runs past a 0.2 s run-wide timeout, then returns `result` (or times out)."""
    import time

    def run(*a, timeout_s, **k):
        assert 0 < timeout_s <= 0.2  # given no more than the run's time left
        time.sleep(s)
        if result is None:
            raise TimeoutError("memory benchmark timed out (raise --timeout)")
        return result

    return run


def test_bench_all_timeout_keeps_the_sections_finished_before_it(monkeypatch):
    """The run-wide timeout expires inside the memory section: SuiteTimedOut carries matmul's results
    and says where the time ran out, how long the run took and what did not run."""
    suite = _fake_cpu_suite(monkeypatch, memory=_slow())
    with pytest.raises(TimeoutError, match=r"^bench all timed out after 0.2 s in section memory \(") as ex:
        suite.run_suite("cpu", timeout_s=0.2)
    d = ex.value.report.to_json_dict()
    assert list(d["sections"]) == ["matmul"] and d["sections"]["matmul"]["rows"] == [{"x": 1.0}]
    inc = d["incomplete"]
    assert inc["timed_out_in"] == "memory" and inc["timeout_s"] == 0.2 and inc["elapsed_s"] >= 0.4
    assert (
        inc["error"]
        == "gpukit.bench.membw.memory_bandwidth: TimeoutError: memory benchmark timed out (raise --timeout)"
    )
    assert inc["not_run"] == ["harness_check", "all_reduce_loopback_gloo_cpu", "memory_validation"]
    assert "# incomplete: timed out in memory" in ex.value.report.to_text()


def test_bench_all_timeout_after_a_section_that_stopped_early_keeps_its_rows(monkeypatch):
    """A sweep that stops at the deadline returns its rows: they are kept, the next section does not run."""
    partial = results.BenchResult("membw", ({"test": "copy"},), {"device": "cpu"}, {"timed_out": "stopped"})
    suite = _fake_cpu_suite(monkeypatch, memory=_slow(partial))
    with pytest.raises(TimeoutError) as ex:
        suite.run_suite("cpu", timeout_s=0.2)
    d = ex.value.report.to_json_dict()
    assert list(d["sections"]) == ["matmul", "memory"] and d["sections"]["memory"]["rows"] == [
        {"test": "copy"}
    ]
    assert d["incomplete"]["timed_out_in"] == "memory" and d["incomplete"]["not_run"][0] == "harness_check"


def test_bench_all_keeps_going_after_a_section_fails(monkeypatch):
    """A failed section (a rank died; its own limit hit while the run has time left) is recorded and the
    sections after it still run: no exception, nothing lost."""

    def died(*a, **k):
        raise RuntimeError("benchmark worker failed: rank 1 died with exit code -9\nmore")

    def own_limit(*a, timeout_s, **k):
        raise TimeoutError("harness check timed out after 120 s (raise --timeout)")

    suite = _fake_cpu_suite(monkeypatch, collectives=died, harness_check=own_limit)
    rep = suite.run_suite("cpu", timeout_s=60)
    # issue 25: stable keys; a finished run says incomplete: null instead of leaving the key out
    assert rep.incomplete is None and rep.to_json_dict()["incomplete"] is None
    assert list(rep.sections) == [
        "matmul",
        "memory",
        "harness_check",
        "all_reduce_loopback_gloo_cpu",
        "memory_validation",
    ]
    assert rep.sections["all_reduce_loopback_gloo_cpu"] == {
        "error": "gpukit.bench.collectives.run_collectives: RuntimeError: benchmark worker failed: rank 1 died "
        "with exit code -9"
    }
    assert rep.sections["harness_check"]["error"].startswith(
        "gpukit.bench.matmul.harness_check: TimeoutError"
    )
    assert rep.sections["memory_validation"] == {"skipped": "cpu"}


@pytest.mark.parametrize("as_json", [False, True])
def test_cli_bench_all_timeout_writes_the_partial_json_and_exits_2(monkeypatch, tmp_path, capsys, as_json):
    _fake_cpu_suite(monkeypatch, memory=_slow())
    out = tmp_path / "suite.json"
    argv = ["bench", "all", "--device", "cpu", "--timeout", "0.2", "--out", str(out)] + (
        ["--json"] if as_json else []
    )
    assert main(argv) == 2
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: bench all timed out after 0.2 s in section memory")
    assert err[0].endswith(f"partial results in {out}") and "Traceback" not in cap.err
    saved = json.loads(out.read_text())
    assert list(saved["sections"]) == ["matmul"] and saved["incomplete"]["timed_out_in"] == "memory"
    if as_json:
        assert json.loads(cap.out)["incomplete"]["not_run"] == saved["incomplete"]["not_run"]
    else:
        assert "== matmul ==" in cap.out and "# incomplete: timed out in memory" in cap.out


def test_cli_matmul_json_and_out(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "mm.json"
    assert (
        main(
            [
                "bench",
                "matmul",
                "--device",
                "cpu",
                "--sizes",
                "32",
                "--square-only",
                "--repeats",
                "3",
                "--threads",
                "1",
                "--json",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads(out.read_text())
    assert printed["rows"][0]["tflops"] > 0 and saved["env"]["threads"] == 1 and saved["kind"] == "matmul"


def test_cli_bad_sizes_exit_2(capsys):
    assert main(["bench", "matmul", "--device", "cpu", "--sizes", "a,b"]) == 2
    assert "--sizes must be" in capsys.readouterr().err


def test_cli_memory_text(capsys, monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert main(["bench", "memory", "--device", "cpu", "--size-mib", "1"]) == 0
    out = capsys.readouterr().out
    assert "copy" in out and "triad" in out and "# CPU" in out
    assert math.isfinite(float(out.splitlines()[1].split()[5]))


def test_bench_all_interrupted_keeps_the_sections_finished_before_it(monkeypatch):
    """Ctrl-C inside the memory section: SuiteInterrupted (a KeyboardInterrupt) carries matmul's results."""

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    suite = _fake_cpu_suite(monkeypatch, memory=interrupted)
    with pytest.raises(KeyboardInterrupt, match=r"^bench all interrupted in section memory after") as ex:
        suite.run_suite("cpu", timeout_s=60)
    d = ex.value.report.to_json_dict()
    assert list(d["sections"]) == ["matmul"] and d["incomplete"]["interrupted_in"] == "memory"
    assert d["incomplete"]["not_run"][0] == "harness_check"
    assert "# incomplete: interrupted in memory" in ex.value.report.to_text()


def test_cli_bench_all_sigterm_writes_the_partial_json_and_exits_130(monkeypatch, tmp_path, capsys):
    """An outer `timeout` (scripts/gpu_check.sh) sends SIGTERM: the measured sections are written, not lost."""
    import os
    import signal

    def terminated(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the section")

    before = signal.getsignal(signal.SIGTERM)
    _fake_cpu_suite(monkeypatch, memory=terminated)
    out = tmp_path / "suite.json"
    assert main(["bench", "all", "--device", "cpu", "--timeout", "60", "--out", str(out), "--json"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bench all interrupted in section memory")
    assert err[0].endswith(f"partial results in {out}")
    saved = json.loads(out.read_text())
    assert list(saved["sections"]) == ["matmul"] and saved["incomplete"]["interrupted_in"] == "memory"
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back


# ---------------------------------------------------------------- the bench layer's own house (issue 22)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a self-import): import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan 1972
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1 or v in edges.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"a"}}) == [["a"]] and _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_bench_modules():
    """Every import counts, at the top of a module or inside a function (grimp, as import-linter reads
    them): no bench module imports one that imports it back. The launchers hand their rank body to
    gpukit.bench.launch instead of a mode string dispatched inside collectives, and the shared rank
    helpers live in gpukit.bench.ranks, which imports no launcher."""
    import grimp

    graph = grimp.build_graph("gpukit", cache_dir=None)
    bench = {m for m in graph.modules if m.startswith("gpukit.bench.") or m == "gpukit.bench"}
    edges = {m: {d for d in graph.find_modules_directly_imported_by(m) if d in bench} for m in bench}
    assert _cycles(edges) == []
    assert "gpukit.bench.launch" in edges["gpukit.bench.collectives"] | edges["gpukit.bench.ddp"]
    assert not edges["gpukit.bench.ranks"] - {"gpukit.bench.envinfo"}  # the ranks' helpers import no launcher
