"""gpukit.bench.decode: the KV-cache decoder computes the reference model's function; measured CPU
prefill/decode against the roofline made from this machine's rates measured in the same moment."""

from __future__ import annotations

import pytest

from gpukit.bench import decode
from gpukit.memory_eager import reference_spec

QUIET_SPREAD = 0.25  # (max - min) / median of the repeats below which the machine counts as quiet


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


@pytest.mark.slow
def test_measured_cpu_decode_against_the_roofline():
    """The roofline (perfect overlap of streaming and compute) and the no-overlap bound (their sum), both
    from this machine's rates measured in the same moment, bracket a step's time. Every measured
    prefill/decode step must lie within 25% of that bracket: never more than 25% faster than the
    roofline allows, and (on a quiet enough machine) never more than 25% slower than the no-overlap
    bound. Batching below the ridge must raise decode throughput almost linearly."""
    spec = decode.decode_specs(quick=True)[0]
    r = decode.measure_decode(spec, batches=(1, 64), prompt=128, repeats=5, timeout_s=240)
    rows = {(x["mode"], x["batch"]): x for x in r["rows"]}
    for x in r["rows"]:
        assert 0 < x["predicted_s"] <= x["no_overlap_s"]
        assert x["error"] < 0.25, f"{x['mode']} batch {x['batch']}: faster than the roofline allows ({x['error']:+.0%})"
    assert rows[("decode", 64)]["measured_tokens_per_s"] > 4 * rows[("decode", 1)]["measured_tokens_per_s"], \
        "batching below the ridge should raise decode throughput almost linearly"
    busy = [x for x in r["rows"] if x["spread"] > QUIET_SPREAD]
    if busy:
        pytest.skip(f"machine too busy for the upper check: spread {max(x['spread'] for x in busy):.0%}")
    for x in r["rows"]:
        over = x["measured_s"] / x["no_overlap_s"] - 1
        assert over <= 0.25, f"{x['mode']} batch {x['batch']}: {over:+.0%} slower than the no-overlap bound"
