"""Memory claims of the seed articles (gpukit.audits.memory): the computed numbers and verdicts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import catalog
from gpukit.audits import memory as cm
from gpukit.audits.claims import VERDICTS, Claim, claim, claim_keys, claims_frame
from gpukit.units import GB, GiB


def test_registered_under_memory_in_notebook_order():
    assert claim_keys("memory") == cm.NOTEBOOK_01 + cm.NOTEBOOK_02
    for c in cm.memory_claims():
        assert isinstance(c, Claim) and c.topic == "memory" and c.verdict in VERDICTS
        assert c.article in ("000", "002") and c.quote and c.check and c.figures
    df = claims_frame("memory")
    assert list(df["key"]) == list(cm.NOTEBOOK_01 + cm.NOTEBOOK_02)
    table = cm.claims_table(cm.NOTEBOOK_01)
    assert list(table.columns) == ["key", "claim", "claimed", "computed", "verdict"] and len(table) == 5


def test_quotes_are_verbatim_from_the_articles(seeds):
    from gpukit.audits.claims import ARTICLES

    for c in cm.memory_claims():
        text = (seeds / ARTICLES[c.article][1]).read_text(encoding="utf-8")
        for part in c.quote.replace("Q: ", "").split(" ... "):
            assert part in text.replace("\n", " "), f"{c.key}: not in article {c.article}: {part[:60]}"


def test_70b_fp16_weights():
    c = claim("weights_70b_fp16")
    assert c.computed == pytest.approx(140.0) and c.verdict == "correct"
    assert c.figure("weights") == pytest.approx(70e9 * 2 / GiB)  # 130.4 GiB
    assert c.figure("weights") == pytest.approx(130.385, abs=1e-3)
    assert c.figure("training states, 16 B/param") == pytest.approx(1.12)
    assert c.figure("serving per GPU, tp=2") < catalog.get_gpu("h100-sxm").memory_gib
    assert c.figure("H100s to train (ZeRO-3)") > 2


def test_7b_13b_on_h100_only_for_inference():
    c = claim("seven_13b_on_h100")
    assert c.verdict == "misleading"
    n7 = catalog.get_model("llama-2-7b").n_params
    assert c.figure("train llama-2-7b: states 16 B/param") == pytest.approx(16 * n7 / GiB)
    assert 16 * n7 / GB == pytest.approx(107.8, abs=0.1)  # the 16 * 6.74e9 = 108 GB
    assert c.computed > 80 and c.figure("serve llama-2-7b") < 80 and c.figure("serve llama-2-13b") < 80


def test_activation_rule_misses_layers_and_constant():
    c = claim("activations_rule_bsh8")
    s, h, a, L = 4096, 4096, 32, 32
    assert c.claimed == pytest.approx(s * h * 8 / GB)
    assert c.computed == pytest.approx(L * s * h * (34 + 5 * a * s / h) / GB)
    assert c.figure("Table 2 / rule") == pytest.approx(L * (34 + 5 * a * s / h) / 8)  # 776x
    assert c.figure("constant per layer / 8") == pytest.approx(194 / 8)
    assert c.verdict == "wrong"
    small = claim("activations_rule_bsh8", seq_len=128)
    assert small.figure("Table 2 / rule") < c.figure("Table 2 / rule")  # the s^2 term shrinks


def test_100b_needs_far_more_than_4_h100_to_train():
    c = claim("hundred_b_four_h100")
    assert c.figure("weights") == pytest.approx(200e9 / GiB)
    assert c.figure("H100s to hold the weights") == 3
    assert c.figure("H100s to serve (tp)") == 4
    gpus = c.figure("H100s to train (ZeRO-3, states only)")
    assert gpus == c.computed and gpus * 80 * GiB >= 16 * 100e9
    # a true lower bound (3 H100s hold the weights) whose implication (4 train it) is off by 5x
    assert c.verdict == "misleading" and gpus >= 5 * 4


def test_70b_quantized_on_one_a100():
    c = claim("seventy_b_one_a100_quantized")
    assert c.figure("bf16") > 80 > c.figure("8-bit") > c.figure("4-bit")
    assert c.verdict == "correct"
    assert claim("seventy_b_one_a100_quantized", gpu="a100-40gb").verdict == "wrong"


def test_checkpointing_saving_and_time():
    c = claim("checkpointing_60_30")
    assert c.figure("activations saved, Table 2") == pytest.approx(1 - 2 / 194)
    assert c.figure("extra compute (8N / 6N - 1)") == pytest.approx(1 / 3)
    assert 0.9 < c.computed < 1 and c.verdict == "plausible"
    assert 0.5 < c.figure("activations saved, selective (eager)") < 0.7


def test_offload_13b_and_qlora_7b_fit():
    c = claim("zero_offload_13b_h100")
    assert c.verdict == "correct" and c.computed < 80 < c.figure("GPU, no offload")
    n13 = catalog.get_model("llama-2-13b").n_params
    assert c.figure("host RAM needed") > 12 * n13 / GiB  # master + m + v on the CPU
    q = claim("qlora_7b_24gb")
    assert q.verdict == "correct" and q.computed < 24
    assert 3.5 < q.figure("NF4 base") < 4.5  # 7.24B x (0.5 + 0.127/8) bytes + 16-bit embeddings
    assert q.figure("full training total") > 100
    assert claim("qlora_7b_24gb", seq_len=32768, micro_batch=4).verdict == "wrong"


def test_qlora_speed_bound():
    c = claim("qlora_5_tokens_per_s")
    n = catalog.get_model("mistral-7b").n_params
    assert c.computed == pytest.approx(165.2e12 * 0.4 / c.figure("FLOPs per token"))
    assert 6 * n < c.figure("FLOPs per token") < 6.5 * n
    assert c.computed > 1000 and c.verdict == "doubtful"
    assert claim("qlora_5_tokens_per_s", claimed_tokens_per_s=1000).verdict == "plausible"


def test_zero3_175b_and_a100_oom():
    c = claim("zero3_175b_single_gpu")
    assert c.verdict == "plausible" and c.computed < 80
    assert c.figure("host RAM or NVMe") > 2000  # GiB: beyond one server's RAM
    o = claim("a100_7b_oom")
    assert o.verdict == "plausible"
    assert o.figure("ZeRO-3, dp=1") >= o.figure("full training, recompute") > 80 > o.figure("QLoRA r=16")


def test_bad_assumptions_are_one_line_errors():
    with pytest.raises(ValueError, match="unknown gpu"):
        claim("qlora_7b_24gb", gpu="rtx-9090")
    with pytest.raises(ValueError, match="n_params must be a finite number > 0"):
        claim("hundred_b_four_h100", n_params=0)


@settings(max_examples=30, deadline=None)
@given(
    seq=st.integers(1, 4096),
    b=st.integers(1, 64),
    model=st.sampled_from(["llama-2-7b", "gpt2", "llama-2-70b"]),
)
def test_rule_ratio_is_layers_times_table2_constant_over_8(seq, b, model):
    m = catalog.get_model(model)
    c = claim("activations_rule_bsh8", model=model, seq_len=seq, micro_batch=b)
    assert c.figure("Table 2 / rule") == pytest.approx(m.n_layers * (34 + 5 * m.n_heads * seq / m.hidden) / 8)
    assert c.figure("Table 2 / rule") > m.n_layers * 34 / 8  # the rule always underestimates


def test_accum_checkpoint_activations_decrease_not_increase():
    """Seed 000: "[accumulation and checkpointing] increase memory usage of activations": both shrink them."""
    from gpukit.audits.claims import claim

    c = claim("accum_checkpoint_activations")
    assert c.verdict == "wrong" and c.computed < 1
    assert c.figure("activations, accumulation / one big micro-batch") == pytest.approx(1 / 8, rel=0.05)
    assert c.figure("activations, full recompute / none") < 0.2
    assert c.figure("all-reduces per micro-batch with accumulation") == pytest.approx(1 / 8)
    m = claim(
        "accum_checkpoint_activations",
        measured_accum_ratio=0.3,
        measured_recompute_ratio=0.1,
        measured_on="CPU, test",
    )
    assert m.computed == 0.3 and "Measured CPU, test" in m.check and m.verdict == "wrong"
    assert claim("accum_checkpoint_activations", measured_accum_ratio=1.2).verdict == "plausible"
    with pytest.raises(ValueError, match="grad_accum"):
        claim("accum_checkpoint_activations", grad_accum=3)
