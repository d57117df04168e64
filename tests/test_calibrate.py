"""gpukit.bench.calibrate: the profile path and a real `gpukit calibrate --quick` run (slow, ~15-90 s)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from gpukit.bench import calibrate as cal
from gpukit.cli import main
from gpukit.profile import load_profile


def test_default_profile_path_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("GPUKIT_PROFILE", str(tmp_path / "p.json"))
    assert cal.default_profile_path() == tmp_path / "p.json"
    monkeypatch.delenv("GPUKIT_PROFILE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert cal.default_profile_path() == tmp_path / "cache" / "gpukit" / "profile.json"


def test_quick_plan_is_small_on_cpu():
    plan = cal._plan("cpu", quick=True)
    assert plan["dtypes"] == ["fp32", "bf16"] and max(plan["sizes"]) <= 2048 and plan["size_mib"] <= 64
    assert len(plan["link_sizes"].split(",")) >= 6  # enough sizes to fit on half and hold out half


@pytest.mark.slow
def test_calibrate_quick_writes_a_valid_profile(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "profile.json"
    t0 = time.monotonic()
    assert main(["calibrate", "--quick", "--out", str(out)]) == 0
    elapsed = time.monotonic() - t0
    text = capsys.readouterr().out
    assert f"wrote {out}" in text and "loopback-gloo" in text

    prof = load_profile(out)  # the reader's contract (gpukit/profile.py) accepts it
    assert prof.matmul_tflops("fp32") > 0 and prof.matmul_tflops("bf16") > 0
    assert prof.memory_bandwidth_gbps("copy") > 0 and prof.memory_bandwidth_gbps("triad") > 0
    link = prof.link("loopback-gloo")
    assert link.beta_gbps > 0 and link.alpha_us >= 0

    data = json.loads(Path(out).read_text())
    assert data["version"] == 1 and data["device"]["kind"] == "cpu" and data["device"]["label"] == "CPU"
    entry = data["links"]["loopback-gloo"]
    assert math.isfinite(entry["holdout_error"]) and entry["holdout_error"] >= 0 and entry["n_ranks"] == 2
    assert entry["sizes_bytes"] == sorted(entry["sizes_bytes"]) and len(entry["sizes_bytes"]) == 8
    for k in ("torch", "threads", "hostname", "date", "benchmark_version"):
        assert k in data["env"]
    assert data["created"] and data["quick"] is True
    assert elapsed < 120, f"calibrate --quick took {elapsed:.0f} s (budget 120 s on 2 cores)"


def test_a_failed_nccl_link_keeps_the_rest_of_the_gpu_profile(tmp_path, monkeypatch, capsys):
    """On a multi-GPU machine the NCCL link is fitted last: when it fails (a rank died, an NCCL error)
    the matmul, memory and loopback figures measured before it are written, and the profile says
    which link failed and why (the run used to end with exit 1 and no profile). CPU: CUDA faked."""
    import torch

    from gpukit.bench import collectives, envinfo, matmul, membw, results, timing

    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setattr(timing, "resolve_device", lambda device: "cuda")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(envinfo, "device_name", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(envinfo, "env_stamp", lambda *a, **k: {"device": "cuda"})

    def mm(device, dtypes, sizes, **k):
        return results.BenchResult(
            "matmul",
            ({"shape": "1024", "tflops": 400.0, "achieved_frac": 0.4},),
            {},
            {f"best_tflops_{dtypes[0]}": 400.0},
        )

    monkeypatch.setattr(matmul, "matmul_bench", mm)
    monkeypatch.setattr(
        membw,
        "memory_bandwidth",
        lambda *a, **k: results.BenchResult(
            "membw", ({"test": "copy", "gbps": 3000.0}, {"test": "triad", "gbps": 3100.0}), {}, {}
        ),
    )

    def links(op, n, sizes, *, device, backend, **k):
        if backend == "nccl":
            raise RuntimeError("benchmark worker failed: rank 1: DistBackendError: NCCL error\nstack")
        return "gloo rows"

    monkeypatch.setattr(collectives, "run_collectives", links)
    monkeypatch.setattr(collectives, "fit_and_holdout", lambda res, holdout: {})
    monkeypatch.setattr(
        cal, "link_entry", lambda res, h: {"alpha_us": 50.0, "beta_gbps": 1.0, "holdout_error": 0.1}
    )
    out = tmp_path / "profile.json"
    assert main(["calibrate", "--quick", "--device", "cuda", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert (
        "link local-nccl   failed, not in the profile: RuntimeError: benchmark worker failed: rank 1: "
        "DistBackendError: NCCL error"
    ) in text and f"wrote {out}" in text
    data = json.loads(out.read_text())
    assert list(data["links"]) == ["loopback-gloo"] and "local-nccl" in data["links_failed"]
    prof = load_profile(out)
    assert prof.matmul_tflops("bf16") == 400.0 and prof.memory_bandwidth_gbps("triad") == 3100.0
