"""Serving claims of the seed articles (gpukit.audits.inference): verdicts and their numbers."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpukit.audits import inference as ci
from gpukit.audits.claims import ARTICLES, VERDICTS, Claim, claim, claim_keys, claims, claims_frame


def test_every_claim_registered_in_notebook_order():
    assert claim_keys("inference") == ci.NOTEBOOK_07
    for c in claims("inference"):
        assert isinstance(c, Claim) and c.verdict in VERDICTS and c.quote and c.check and c.figures
    assert list(claims_frame("inference")["key"]) == list(ci.NOTEBOOK_07)


def test_quotes_are_verbatim():
    seeds = Path("/work/shared/seeds")
    if not seeds.exists():
        pytest.skip("seed articles not on this machine")
    for c in claims("inference"):
        text = (seeds / ARTICLES[c.article][1]).read_text(encoding="utf-8").replace("\n", " ")
        assert c.quote in text, c.key


def test_300_tokens_per_s_is_one_user_in_8_bit():
    c = claim("h100_llama3_8b_300_tps")
    assert 200 < c.computed < 400 and c.figure("per sequence, bf16") < 200
    assert c.figure("total at max batch, fp8") > 10 * c.claimed


def test_thousand_rps_is_far_above_one_gpu_for_a_chat_llm():
    c = claim("thousand_rps_one_gpu")
    assert c.verdict == "wrong" and c.computed < 100


def test_tp_all_reduces_per_token_and_their_cost():
    c = claim("tp_allreduce_each_token")
    assert c.computed == 160
    assert c.figure("on NVLink per token") < c.figure("ITL at tp")
    # TP inside a node lowers the time per token (1/tp of the weights each): no net "latency hit"
    assert c.figure("decode step at tp") < c.figure("decode step on 1 GPU") and c.verdict == "misleading"
    assert c.figure("on eth-100g per token") > c.figure("ITL at tp")


def test_200b_fits_an_h200_in_4_bit_not_an_h100():
    c = claim("two_hundred_b_no_fit")
    assert c.figure("4-bit weights") < c.figure("usable on h200") and c.figure("4-bit weights") > c.figure(
        "usable on h100-sxm"
    )
    assert claim("two_hundred_b_no_fit", gpu="h100-sxm").verdict == "correct"


def test_a100_70b_is_sub_100ms_per_token_only():
    c = claim("a100_70b_sub_100ms")
    assert c.computed < 100 and c.figure("TTFT") > 100 and c.verdict == "misleading"


def test_postgres_break_even_is_gpu_capacity_inverse():
    c = claim("postgres_state_store")
    assert c.computed == pytest.approx(1e3 / c.figure("GPU capacity, 8 GPUs"))
    more = claim("postgres_state_store", db_workers=4)
    assert more.figure("state-store cap") == pytest.approx(4 * c.figure("state-store cap"))


def test_bad_assumption_one_line():
    with pytest.raises(ValueError, match="db_s must be a finite number > 0"):
        claim("postgres_state_store", db_s=0)
