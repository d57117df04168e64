"""gpukit.bench.decode: the KV-cache decoder computes the reference model's function; measured CPU
prefill/decode against the roofline made from this machine's rates measured in the same moment."""

from __future__ import annotations

import pytest

from gpukit.bench import decode
from gpukit.memory import reference_spec

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


def _measure_quick():
    spec = decode.decode_specs(quick=True)[0]
    r = decode.measure_decode(spec, batches=(1, 64), prompt=256, repeats=5, timeout_s=240)
    return {(x["mode"], x["batch"]): x for x in r["rows"]}


@pytest.mark.slow
def test_measured_cpu_decode_against_the_roofline():
    """The roofline with this machine's rates measured in the same moment (the triad and the achievable
    matmul rate on streamed weights of a transformer layer's shapes at another width) predicts every
    measured prefill/decode step within 25% (issue 11's goal), on a quiet enough machine; a run that
    misses is measured once more (a neighbour can slow the steps and not the probes) and the second
    must pass. The ideal roofline (in-core rate, perfect overlap) is a lower bound on time. Batching
    below the ridge must raise decode throughput almost linearly."""
    for _attempt in (1, 2):
        rows = _measure_quick()
        assert set(rows) == {("prefill", 1), ("decode", 1), ("decode", 64)}
        for x in rows.values():
            assert 0 < x["ideal_s"] <= x["no_overlap_s"]
            assert x["error_ideal"] < 0.10, (
                f"{x['mode']} batch {x['batch']}: faster than the ideal roofline allows ({x['error_ideal']:+.0%})"
            )
        assert (
            rows[("decode", 64)]["measured_tokens_per_s"] > 4 * rows[("decode", 1)]["measured_tokens_per_s"]
        ), "batching below the ridge should raise decode throughput almost linearly"
        busy = [x for x in rows.values() if x["spread"] > QUIET_SPREAD]
        if busy:
            pytest.skip(f"machine too busy for the 25% check: spread {max(x['spread'] for x in busy):.0%}")
        off = [f"{m} batch {b}: {x['error']:+.0%}" for (m, b), x in rows.items() if abs(x["error"]) > 0.25]
        if not off:
            return
    pytest.fail(f"prediction off by more than 25% in two runs: {'; '.join(off)}")
