"""Audits of issue 12 (gpukit/audits/cost.py economics, gpukit/audits/plan.py frameworks): quotes verbatim,
numbers recomputed from the formulas, verdicts where they follow from the numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpukit.audits import claims
from gpukit.catalog import get_gpu

SEEDS = Path("/work/shared/seeds")
NEW_COST = (
    "h100_4_per_hour",
    "cost_64_gpus_4_5_hours",
    "decision_single_budget_1k",
    "decision_cluster_5_20_per_hr",
    "decision_big_50k",
    "infiniband_doubles_cost",
    "node_30_50_per_hr",
    "startup_80k_32gpu_1b_2x",
    "h100_30k_retail",
    "h100_50k_invoice",
    "cluster_1_2m",
    "networking_150k",
    "p4d_p5_prices",
    "hundred_hours_3277_9832",
    "rental_6_months_1_4m",
    "buy_at_90_utilization",
    "eight_weeks_vs_one_week",
    "spot_60_90",
    "inference_90pct_gpu_hours",
)
PLAN = claims.claim_keys("plan")


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def test_counts_and_registry():
    assert set(NEW_COST) <= set(claims.claim_keys("cost"))
    assert len(PLAN) >= 20
    for c in claims.claims("plan"):
        assert c.topic == "plan" and c.verdict in claims.VERDICTS and c.check


@pytest.mark.skipif(not SEEDS.exists(), reason="seed articles not on this machine")
@pytest.mark.parametrize("key", NEW_COST + PLAN)
def test_quotes_are_verbatim(key):
    c = claims.claim(key)
    text = _norm((SEEDS / claims.ARTICLES[c.article][1]).read_text(encoding="utf-8"))
    assert _norm(c.quote) in text


def test_arithmetic_claims():
    # $3,277 vs $9,832: 100 h x p4d / p5, and the same job on H100 is ~3.2x shorter (989.4 / 312 dense BF16)
    c = claims.claim("hundred_hours_3277_9832")
    assert c.figure("p4d, 100 h") == pytest.approx(3277, abs=1)
    speed = get_gpu("h100-sxm").peak_tflops("bf16") / get_gpu("a100-40gb").peak_tflops("bf16")
    assert c.computed == pytest.approx(100 / speed * 98.32) and c.verdict == "misleading"
    # the same GPU-hours: 8 weeks x 1 = 1 week x 8 = 1344
    c = claims.claim("eight_weeks_vs_one_week")
    assert c.figure("GPU-hours") == 1344 and c.figure("cluster USD/GPU-hour") < c.figure(
        "single GPU USD/GPU-hour"
    )
    # $150K of networking on $1.2M is 12.5%, not +100%
    assert claims.claim("infiniband_doubles_cost").computed == pytest.approx(0.125)
    # 2x on 32 GPUs: 1/16 of the money on one GPU
    assert claims.claim("startup_80k_32gpu_1b_2x").computed == pytest.approx(5000)
    # 4 p5 for 6 x 730 h
    assert claims.claim("rental_6_months_1_4m").computed == pytest.approx(4 * 98.32 * 730 * 6)


def test_model_based_claims():
    assert claims.claim("time_linear_in_size").computed == pytest.approx(
        100, rel=0.01
    )  # N^2 at 20 tokens/param
    assert claims.claim("seven_b_batch8_fits_h100").verdict == "wrong"  # 16 B/param alone is 104 GiB
    assert claims.claim("finetune_20b_single_gpu").verdict == "misleading"  # 70B QLoRA fits 80 GB
    assert claims.claim("negative_returns").computed < 1  # 8 GPUs over 1 GbE slower than one
    assert claims.claim("bert_hours_or_minutes").computed < 2  # hours
    assert claims.claim("concurrent_10000_users").computed > 10
    s = claims.claim("spot_60_90")
    assert s.computed < 0.6 < s.figure("net saving at 90%")  # the discount is not the saving


def test_not_checkable_claims_say_so():
    for key in ("ninety_pct_under_3b", "inference_90pct_gpu_hours", "networking_150k"):
        c = claims.claim(key)
        assert c.verdict == "not checkable" and c.check
