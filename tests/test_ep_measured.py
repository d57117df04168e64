"""EP all-to-all and CP ring attention measured on 2 gloo ranks (CPU): bytes exact against gpukit.comm's
formulas, results checked against the unsplit computation, time against the alpha-beta prediction over
the loopback link calibrated in the same run.

Time band: measured / predicted within [0.4, 2.5]. Why that wide: the loopback link is fitted on an
all_reduce sweep (the collectives bench's op) and transferred to another op (all_to_all, send/recv)
on 2 CPU cores shared with other processes; the collectives bench's own goal for a fit is 25% on
sizes of the same op. A model that miscounted the bytes by the ep or cp factor, or charged the whole
buffer instead of the (n-1)/n share, would leave the band only at larger group sizes, so the bytes are
checked exactly and separately. Measured here (2026-12-04, load average 5-6 from other jobs): the
all-to-all at 0.84-1.70 x its prediction, the ring step at 1.27-1.90 x (gloo's send/recv runs slower
than the all_reduce-calibrated rate); one earlier run, which allocated a receive buffer per timed step,
reached 3.09.
"""

import pytest

torch = pytest.importorskip("torch")

from gpukit.bench.cp_attention import chunk_positions, run_cp_attention  # noqa: E402
from gpukit.bench.ep_alltoall import route, run_ep_alltoall  # noqa: E402

BAND = (0.4, 2.5)


def test_balanced_routing_gives_every_expert_the_same_copies():
    _, ids, w = route(64, 8, 2, 8, "balanced", seed=0)
    assert torch.bincount(ids.reshape(-1), minlength=8).tolist() == [16] * 8
    assert torch.allclose(w.sum(1), torch.ones(64))
    _, ids, _ = route(64, 8, 2, 8, "topk", seed=0)
    assert all(len(set(r)) == 2 for r in ids.tolist())  # two distinct experts per token


def test_causal_load_balancing_chunks_cover_the_sequence_once():
    s, cp = 32, 4
    pos = torch.cat([chunk_positions(r, cp, s) for r in range(cp)])
    assert sorted(pos.tolist()) == list(range(s))
    assert chunk_positions(0, cp, s).tolist() == [0, 1, 2, 3, 28, 29, 30, 31]  # chunks 0 and 7


def test_bad_input_is_one_line_before_any_rank_starts():
    with pytest.raises(ValueError, match="^n_experts must be a multiple of n_ranks"):
        run_ep_alltoall(n_experts=3)
    with pytest.raises(ValueError, match="^n_ranks must be >= 2"):
        run_ep_alltoall(n_ranks=1)
    with pytest.raises(ValueError, match="^routing"):
        run_ep_alltoall(routing="random")
    with pytest.raises(ValueError, match=r"^seq_len must be a multiple of 2\*n_ranks = 4"):
        run_cp_attention(seq_len=1022)


@pytest.mark.slow
def test_ep_all_to_all_bytes_exact_and_time_in_band():
    r = run_ep_alltoall(tokens=4096, hidden=256, top_k=2, n_experts=8, n_ranks=2, routing="balanced")
    meas, form = r["measured"], r["formula"]
    assert meas["buffer_bytes"] == form["buffer_bytes"] == 4096 * 2 * 256 * 4  # fp32 on CPU
    assert meas["leaving_bytes"] == form["leaving_bytes"] == form["buffer_bytes"] / 2
    assert meas["leaving_bytes_per_rank"] == [form["leaving_bytes"]] * 2
    assert r["combine_max_abs_error"] < 1e-5  # dispatch -> experts -> combine == the unsplit layer
    assert BAND[0] <= r["time_ratio"] <= BAND[1], r
    assert r["label"].startswith("CPU")


@pytest.mark.slow
def test_ep_all_to_all_uneven_routing_sends_the_buffer_and_counts_what_leaves():
    r = run_ep_alltoall(tokens=1024, hidden=64, top_k=2, n_experts=8, routing="topk", repeats=3)
    meas = r["measured"]
    assert meas["buffer_bytes"] == r["formula"]["buffer_bytes"]  # every copy goes somewhere
    assert sum(meas["in_splits"]) == 1024 * 2
    assert meas["leaving_bytes"] == meas["in_splits"][1] * 64 * 4  # rank 0's copies for rank 1's experts
    assert r["combine_max_abs_error"] < 1e-5


@pytest.mark.slow
def test_cp_ring_attention_bytes_exact_output_exact_and_time_in_band():
    r = run_cp_attention(seq_len=2048, heads=4, head_dim=64, n_ranks=2)
    assert r["measured"] == {
        "block_bytes": r["formula"]["block_bytes"],
        "sent_bytes_per_layer": r["formula"]["sent_bytes_per_layer"],
        "steps": 1,
    }
    assert r["measured"]["block_bytes"] == 2 * 1024 * 4 * 64 * 4  # K and V, s/cp tokens, 4 heads x 64, fp32
    assert r["max_abs_error"] < 1e-4  # ring attention == causal attention over the whole sequence
    assert BAND[0] <= r["time_ratio"] <= BAND[1], r
    # torch's own context_parallel: runs, or says exactly why not (CPU SDPA has no DTensor strategy)
    assert r["torch_context_parallel"] == "ran" or "NotImplementedError" in r["torch_context_parallel"]
