"""The model's own rules, written once on ModelSpec (issue 22 section 2): the tensor-parallel split of
the heads and the default sequence length; every calculator gives the same answer and the same line."""

from __future__ import annotations

import pytest

from gpukit.catalog import get_model
from gpukit.specs import ModelSpec

GQA = ModelSpec(name="gqa", n_layers=8, hidden=3072, n_heads=48, n_kv_heads=12)


@pytest.mark.parametrize(
    "tp, allowed",
    [
        (1, True),
        (2, True),
        (3, True),
        (4, True),
        (12, True),
        (24, True),
        (48, True),
        (5, False),
        (8, False),
        (16, False),
        (96, False),
    ],
)
def test_tp_note_is_the_megatron_rule(tp, allowed):
    """tp divides n_heads 48 and divides n_kv_heads 12 or is a multiple of it: 8 divides 48 but cuts 12."""
    assert (GQA.tp_note(tp) is None) == allowed
    if not allowed:
        note = GQA.tp_note(tp)
        assert f"got {tp}" in note and "n_heads 48" in note and "n_kv_heads 12" in note and "\n" not in note
        with pytest.raises(ValueError) as e:
            GQA.check_tp(tp)
        assert str(e.value) == note
    else:
        assert GQA.check_tp(tp) == tp


@pytest.mark.parametrize("tp", [5, 8])
def test_every_calculator_refuses_with_the_same_line(tp):
    from gpukit import inference, memory, parallel

    note = GQA.tp_note(tp)
    calls = [
        lambda: parallel.ParallelConfig(tp=tp).validate(GQA),
        lambda: memory.estimate_memory(GQA, setup=memory.TrainSetup(tp=tp, seq_len=512)),
        lambda: inference.serve(GQA, "h100-sxm", gpus=tp, tp=tp, input_tokens=64, output_tokens=16),
    ]
    for call in calls:
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value) == note
    assert inference.tp_splits_heads(GQA, tp) is False
    assert all(c.tp != tp for c in parallel.enumerate_layouts(GQA, 48, 48))


def test_default_seq_len_is_the_pretraining_length_capped_by_the_window():
    from gpukit.catalog import models

    llama31 = get_model("llama-3.1-8b") if "llama-3.1-8b" in models() else None
    m = get_model("llama-3-8b")
    n, note = m.default_seq_len()
    assert n == m.train_seq_len == 8192 and "8192" in note and "train_seq_len" in note
    assert m.default_seq_len("--seq-len")[1].startswith("--seq-len not given: 8192 tokens")
    if llama31 is not None:  # a window far beyond the pretraining length: the pretraining length wins
        assert llama31.default_seq_len()[0] == llama31.train_seq_len < llama31.max_seq
    custom = ModelSpec("custom", 2, 256, 4, max_seq=1024)  # no train_seq_len: the window
    assert custom.default_seq_len()[0] == 1024
    short = ModelSpec("short", 2, 256, 4, max_seq=1024, train_seq_len=512)
    assert short.default_seq_len()[0] == 512
