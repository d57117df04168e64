"""The articles' parallelism claims (gpukit.audits.parallel) through the claims registry."""

from __future__ import annotations

import pytest

from gpukit.audits.claims import VERDICTS, claim, claim_keys
from gpukit.audits.parallel import NOTEBOOK_06


def test_every_notebook_claim_is_registered():
    # every parallel audit, and the one TP-per-token audit that lives with serving (one audit per quote)
    assert set(NOTEBOOK_06) == set(claim_keys("parallel")) | {"tp_allreduce_each_token"}


@pytest.mark.parametrize("key", NOTEBOOK_06)
def test_audit_runs_and_states_its_check(key):
    c = claim(key)
    assert c.verdict in VERDICTS and c.check and c.quote and c.figures


def test_three_d_is_what_the_big_runs_use():
    c = claim("three_d_parallelism_megatron_deepspeed")
    assert c.computed >= 0.75 and c.verdict == "correct"


def test_seventy_b_tp4_pp4_fits_and_is_near_the_best():
    c = claim("seventy_b_16_a100_tp4_pp4")
    assert c.figure("TP4xPP4xDP1 tokens/s") > 0  # it fits in 16 x 80 GB
    assert 0.8 <= c.figure("TP4xPP4xDP1 / best") <= 1.0


def test_pipelining_sends_less_and_has_a_bubble():
    c = claim("pipelining_less_comm_bubbles")
    assert c.computed < 0.1 and c.figure("PP bubble, idle share") == pytest.approx(
        1 / 9
    )  # (p-1)/(m+p-1), m=8


def test_tp_decode_needs_two_all_reduces_per_layer():
    c = claim("tp_allreduce_each_token")
    assert c.computed == 160  # 2 x 80 layers (Shoeybi et al. 2019)
    assert claim("tp_allreduce_each_token", model="llama-2-7b", tp=2).computed == 64


def test_fsdp_7b_two_gpus_assumption_changes_the_answer():
    fp32 = claim("fsdp_7b_two_gpus")
    short = claim("fsdp_7b_two_gpus", seq_len=512)
    assert short.computed < fp32.computed
    with pytest.raises(ValueError):
        claim("fsdp_7b_two_gpus", gpu="h100-nope")


def test_articles_layout_is_near_the_best_on_a_shared_nic():
    """With one shared 100 GbE port per node, the best layouts keep DP and TP inside a node and send only
    pipeline activations across; TP4 x PP4 x DP1 (the article's) is within 10% of the best."""
    from gpukit import parallel as par

    c = claim("seventy_b_16_a100_tp4_pp4", inter_link="eth-100g", ports_per_node=1, global_batch=16)
    assert c.figure("TP4xPP4xDP1 / best") >= 0.9 and c.verdict in ("correct", "plausible")
    res = par.search(
        "llama-2-70b", "a100-80gb", 16, global_batch=16, seq_len=4096, inter_link="eth-100g", ports_per_node=1
    )
    best = res.best.estimate.config
    assert best.dp * best.tp <= 8 and best.pp > 1 and best.zero_stage < 3


def test_seventy_b_sensitivity_as_notebook_06_reads_it():
    """Notebook 06 sec. 7: with a port per GPU, TP4 x PP4 x DP1 trails the winner by about a tenth; on a
    shared NIC it ranks higher and comes within a few percent of the best, at every global batch."""
    from gpukit.audits.parallel import seventy_b_sensitivity

    df = seventy_b_sensitivity()
    ib, eth = df[df.inter_link == "ib-hdr"], df[df.inter_link == "eth-100g"]
    assert len(ib) == len(eth) > 0 and list(ib.global_batch) == list(eth.global_batch)
    assert ib["TP4xPP4xDP1 / best"].between(0.85, 0.95).all()
    assert (eth["TP4xPP4xDP1 / best"] >= 0.93).all()
    assert (eth["rank of TP4xPP4xDP1"].to_numpy() < ib["rank of TP4xPP4xDP1"].to_numpy()).all()
