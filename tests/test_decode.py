"""gpukit.bench.decode: the KV-cache decoder computes the reference model's function; measured CPU
prefill/decode against the roofline made from this machine's rates measured in the same moment, as
bounds and orderings that hold under load (the accuracy figure is `make bench`'s)."""

from __future__ import annotations

import pytest

from gpukit.bench import decode
from gpukit.memory import reference_spec


def test_decoder_matches_the_reference_model():
    r = decode.check_decoder()
    assert r["loss_abs_diff"] < 1e-5
    assert r["step_vs_prefill_max_abs"] < 1e-5 and r["prefill_vs_all_logits_max_abs"] < 1e-5


def test_decoder_bad_input():
    spec = reference_spec(n_layers=1, hidden=32, n_heads=2, vocab=31, seq=16)
    dec = decode.build_decoder(spec, "fp32")
    import torch

    with pytest.raises(ValueError, match="max_seq"):
        dec.prefill(torch.zeros(1, 4, dtype=torch.long), max_len=99)
    dec.prefill(torch.zeros(1, 4, dtype=torch.long), max_len=5)
    dec.step(torch.zeros(1, dtype=torch.long))
    with pytest.raises(ValueError, match="the cache holds 5 tokens"):
        dec.step(torch.zeros(1, dtype=torch.long))
    with pytest.raises(ValueError, match="must be <= max_seq"):
        decode.measure_decode(spec, prompt=16, repeats=2)
    with pytest.raises(ValueError, match="batch must be a positive integer"):
        decode.measure_decode(spec, prompt=4, batches=(0,))


def test_gpu_line_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA present: the GPU path runs instead")
    assert decode.gpu_decode() == "not yet run on a GPU (no CUDA device here)"


def _measure_quick():
    spec = decode.decode_specs(quick=True)[0]
    r = decode.measure_decode(spec, batches=(1, 64), prompt=256, repeats=5, timeout_s=240)
    return {(x["mode"], x["batch"]): x for x in r["rows"]}


# the measured step may take at most this many times the predicted time: load on a shared machine
# slows the steps (-41% under load, -36% quiet in two fresh clones, issue 25); the accuracy itself
# (goal 25%) is a `make bench` figure (gpukit/cli/benchreport.py, section 7a), not a pass/fail test
SLOWDOWN_BOUND = 5.0


@pytest.mark.slow
def test_measured_cpu_decode_against_the_roofline():
    """What holds under load as well as on a quiet machine: the ideal roofline (in-core rate, perfect
    overlap) is a lower bound on every step's time, i.e. an upper bound on throughput (10% for the
    clock's noise); the roofline from this machine's rates measured in the same moment stays within a
    generous factor (SLOWDOWN_BOUND) of the measured step; and batching below the ridge raises
    decode throughput almost linearly (batch 64 over 4x batch 1). A neighbour can disturb one run, so
    a run that misses is measured once more and the second must hold."""
    misses = []
    for _attempt in (1, 2):
        rows = _measure_quick()
        assert set(rows) == {("prefill", 1), ("decode", 1), ("decode", 64)}
        misses = []
        for (m, b), x in rows.items():
            assert 0 < x["ideal_s"] <= x["no_overlap_s"]
            if x["error_ideal"] >= 0.10:
                misses.append(
                    f"{m} batch {b}: faster than the ideal roofline allows ({x['error_ideal']:+.0%})"
                )
            if x["measured_s"] > SLOWDOWN_BOUND * x["predicted_s"]:
                misses.append(
                    f"{m} batch {b}: {x['error']:+.0%}, slower than {SLOWDOWN_BOUND:g}x the prediction"
                )
        if rows[("decode", 64)]["measured_tokens_per_s"] <= 4 * rows[("decode", 1)]["measured_tokens_per_s"]:
            misses.append("batching below the ridge should raise decode throughput almost linearly")
        if not misses:
            return
    pytest.fail(f"in two runs: {'; '.join(misses)}")
