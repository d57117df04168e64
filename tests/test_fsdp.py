"""Two-rank runs on gloo (CPU): FSDP2 per-rank memory vs the ZeRO-3 prediction, DDP side by side,
ZeroRedundancyOptimizer, tensor parallelism and pipelining with torch's own APIs (gpukit.bench.fsdp)."""

from __future__ import annotations

import pytest

from gpukit.bench.fsdp import run_fsdp


@pytest.fixture(scope="module")
def result():
    return run_fsdp(2, steps=3, warmup=1, timeout_s=240)


@pytest.mark.slow
def test_fsdp_shards_half_and_matches_zero3(result):
    s = result.summary
    assert s["fsdp_local_param_share"] == pytest.approx(0.5, abs=0.01)  # each rank holds half the parameters
    # optimizer states (fp32 AdamW m, v: 8 B/param) sharded over 2 ranks: ZeRO sec. 5 / gpukit.memory
    assert s["fsdp_optimizer_bytes_rank0"] == pytest.approx(s["pred_zero3_optimizer_bytes"], rel=0.02)
    fsdp = [r for r in result.rows if r["mode"] == "fsdp"]
    ddp = [r for r in result.rows if r["mode"] == "ddp"]
    assert len(fsdp) == len(ddp) == 2
    for f, d in zip(fsdp, ddp, strict=True):
        assert abs(f["peak_error"]) <= 0.15, f  # the ZeRO-3 prediction of each rank's peak
        assert f["peak_bytes"] < d["peak_bytes"]  # sharding lowers the per-rank peak
        assert abs(d["states_error"]) <= 0.10
        # notebook 06 sec. 2: read at each mode's peak, the states do not simply halve (gathered layers)
        # (a fresh-clone run once read 49.2% of DDP's: what is gathered at the peak's instant varies by ~2%)
        assert 0.45 * d["states_bytes"] < f["states_bytes"] < d["states_bytes"]


@pytest.mark.slow
def test_zero1_tp_pp_run_on_gloo(result):
    s = result.summary
    assert s["zero1"]["ran"], s["zero1"]
    assert s["zero1"]["optimizer_state_bytes"] == pytest.approx(s["n_params"] * 8 / 2, rel=0.05)
    tp = s["tp"]
    assert tp["ran"], tp
    assert tp["max_abs_diff_output"] < 1e-4 and tp["max_abs_diff_grad"] < 1e-4
    assert tp["comm_counts"].get("all_reduce") == 2  # Megatron MLP: one in forward, one in backward
    assert s["pp"]["ran"], s["pp"]
    assert s["fsdp_step_ms"] > 0 and s["ddp_step_ms"] > 0


def test_bad_input_before_spawning():
    with pytest.raises(ValueError, match="n_ranks must be at least 2"):
        run_fsdp(1)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        run_fsdp(2, steps=0)
    with pytest.raises(ValueError, match="n_ranks must divide n_heads"):
        run_fsdp(3)


class _FakeTracker:
    """Stands in for MemTracker: get_tracker_snapshot('peak') -> {torch.device: {category: bytes}}."""

    def __init__(self, snap):
        self.snap = snap

    def get_tracker_snapshot(self, kind):
        assert kind == "peak"
        return self.snap


def _categories(scale):
    from torch.distributed._tools.mem_tracker import _MemRefType

    d = {t: scale * (i + 1) for i, t in enumerate(_MemRefType)}
    d["Total"] = sum(d.values())
    return d


def test_peak_reads_the_device_the_run_used():
    """On CUDA MemTracker's snapshot holds the CPU too (AdamW's step counters), listed first: the peak
    must be the GPU's, not the first key's. CPU-only runs read the CPU."""
    import torch

    from gpukit.bench.fsdp import memtracker_peak

    cpu_only = _FakeTracker({torch.device("cpu"): _categories(1)})
    assert memtracker_peak(cpu_only, "cpu") == {
        "Parameter": 1,
        "Gradient": 3,
        "Optstate": 6,
        "Activation": 4,
        "Temp": 5,
        "Total": 28,
    }
    both = _FakeTracker({torch.device("cpu"): _categories(1), torch.device("cuda", 0): _categories(1000)})
    for dev in ("cuda:0", "cuda"):
        p = memtracker_peak(both, dev)
        assert p["Parameter"] == 1000 and p["Optstate"] == 6000 and p["Total"] == 28000, (dev, p)
    assert memtracker_peak(both, "cpu")["Total"] == 28
    with pytest.raises(RuntimeError, match=r"expected one device cuda:1, found 0 \(devices: cpu, cuda:0\)"):
        memtracker_peak(both, "cuda:1")
    with pytest.raises(RuntimeError, match="expected one device cuda, found 0"):
        memtracker_peak(cpu_only, "cuda")
