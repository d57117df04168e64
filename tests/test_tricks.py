"""gpukit.memory.tricks: each fitting trick measured on a tiny reference GPT (CPU, MemTracker), and the
modelled trick stack (pure)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import catalog
from gpukit import memory as mem
from gpukit import memory as tricks
from gpukit.bench import measure_tricks
from gpukit.bench.models import build_reference_model, make_batch, reference_spec

SPEC = reference_spec(n_layers=2, hidden=32, n_heads=2, vocab=64, seq=32)
KW = dict(micro_batch=2, seq_len=32, steps=2, warmup=0, threads=1, lora_rank=2)


@pytest.fixture(scope="module")
def measured():
    return {name: measure_tricks.measure_trick(name, SPEC, **KW) for name in tricks.TRICKS}


def _n_tensors(model, trainable_only=True):
    return sum(1 for p in model.parameters() if p.requires_grad or not trainable_only)


def test_recompute_full_lowers_activations_and_peak(measured):
    r = measured["recompute"]
    base, full = r.baseline, r.trick
    assert full.activations_bytes < 0.5 * base.activations_bytes
    assert full.peak_bytes < base.peak_bytes
    assert 0 < r.activations_saved_fraction() < 1 and r.peak_saved_fraction() > 0
    # full recompute keeps the fp32 layer input per layer: 4 s b h bytes (gpukit.memory.eager)
    layer_inputs = SPEC.n_layers * 4 * KW["micro_batch"] * KW["seq_len"] * SPEC.hidden
    assert full.activations_bytes >= layer_inputs
    assert base.params_bytes == full.params_bytes == 4 * SPEC.n_params


def test_bf16_autocast_changes_activations_not_states(measured):
    r = measured["mixed_precision"]
    fp32, bf16 = r.variants
    assert (fp32.config.precision, bf16.config.precision) == ("fp32", "bf16-mixed")
    assert bf16.activations_bytes != fp32.activations_bytes
    # autocast keeps fp32 parameters, gradients and AdamW states
    assert (bf16.params_bytes, bf16.grads_bytes, bf16.optimizer_bytes) == (
        fp32.params_bytes,
        fp32.grads_bytes,
        fp32.optimizer_bytes,
    )


def test_grad_accumulation_lowers_peak_at_equal_tokens(measured):
    r = measured["grad_accum"]
    big, acc = r.variants
    assert big.tokens_per_step == acc.tokens_per_step == 4 * KW["micro_batch"] * KW["seq_len"]
    assert (big.config.micro_batch, big.config.grad_accum) == (4 * KW["micro_batch"], 1)
    assert (acc.config.micro_batch, acc.config.grad_accum) == (KW["micro_batch"], 4)
    assert acc.peak_bytes < big.peak_bytes
    assert acc.activations_bytes < big.activations_bytes
    assert acc.grads_bytes == big.grads_bytes


def test_optimizer_state_bytes_are_measured_per_optimizer(measured):
    adamw, mom, sgd = measured["optimizer"].variants
    n, tensors = SPEC.n_params, len(list(build_reference_model(SPEC).parameters()))
    assert (
        adamw.optimizer_bytes == 2 * 4 * n + 4 * tensors
    )  # exp_avg, exp_avg_sq fp32 + a CPU step scalar each
    assert mom.optimizer_bytes == 4 * n  # momentum buffer
    assert sgd.optimizer_bytes == 0
    assert adamw.peak_bytes > mom.peak_bytes > sgd.peak_bytes


def test_lora_trains_a_sliver_and_its_states_follow(measured):
    full, lora = measured["lora"].variants
    rank = lora.config.lora_rank
    assert lora.trainable_params == tricks.lora_trainable_params(SPEC, rank)
    assert lora.trainable_params < 0.25 * full.trainable_params and full.trainable_params == SPEC.n_params
    adapters = 2 * len(tricks.LORA_TARGET_MODULES) * SPEC.n_layers  # A and B per wrapped Linear
    assert lora.grads_bytes == 4 * lora.trainable_params
    assert lora.optimizer_bytes == 2 * 4 * lora.trainable_params + 4 * adapters
    assert lora.total_params == full.total_params + lora.trainable_params
    assert lora.peak_bytes < full.peak_bytes


def test_timing_fields_and_tables(measured):
    for r in measured.values():
        for v in r.variants:
            assert len(v.step_times_s) == KW["steps"] and all(t > 0 for t in v.step_times_s)
            assert v.step_q1_s <= v.step_median_s <= v.step_q3_s and v.threads == 1
            assert v.device == "cpu" and v.method == "MemTracker (CPU)"
        df = r.to_frame()
        assert len(df) == len(r.variants) and df["peak_vs_base"].iloc[0] == 1.0
        assert "CPU, 1 threads" in r.to_text()
        assert r.to_json_dict()["variants"][0]["peak_bytes"] == r.baseline.peak_bytes
    df = measure_tricks.results_frame(measured.values())
    assert len(df) == 6 and set(df["trick"]) == set(tricks.TRICKS)
    assert (df["time_ratio_lo"] <= df["time_ratio_paired"]).all() and (
        df["time_ratio_paired"] <= df["time_ratio_hi"]
    ).all()
    assert set(df["time_verdict"]) <= {"slower", "faster", "no measurable difference at this size"}


def test_plot_of_all_tricks(measured):
    import matplotlib

    matplotlib.use("Agg")
    from gpukit.widgets.memory_view import plot_trick_results

    fig = plot_trick_results(measured.values())
    ax = fig.axes[0]
    assert len(ax.patches) == sum(len(r.variants) for r in measured.values()) == 11
    assert max(p.get_height() for p in ax.patches) == pytest.approx(
        max(v.peak_bytes for r in measured.values() for v in r.variants) / 2**20
    )
    assert "CPU" in ax.get_title()
    matplotlib.pyplot.close(fig)
    from gpukit.widgets.memory_view import plot_time_ratios

    fig = plot_time_ratios(measured.values())
    assert len(fig.axes[0].get_yticklabels()) == 6 and "no measurable difference" in fig.axes[0].get_title()
    matplotlib.pyplot.close(fig)


def test_lora_starts_as_the_base_model():
    model = build_reference_model(SPEC)
    batch = make_batch(SPEC, 2, 16)
    with torch.no_grad():
        before = model(*batch).item()
        trainable = measure_tricks.apply_lora(model, 4)
        after = model(*batch).item()
    assert after == pytest.approx(before, abs=1e-6)  # B = 0: the update starts at zero
    assert trainable == sum(p.numel() for n, p in model.named_parameters() if "lora_" in n)
    assert all(not p.requires_grad for n, p in model.named_parameters() if "lora_" not in n)


def test_bad_inputs_are_one_line_value_errors():
    with pytest.raises(ValueError, match="trick must be one of"):
        measure_tricks.trick_configs("zero")
    with pytest.raises(ValueError, match="grad_accum must be at least 2"):
        measure_tricks.trick_configs("grad_accum", grad_accum=1)
    with pytest.raises(ValueError, match="micro_batch must be a positive integer, got 0"):
        measure_tricks.RunConfig("x", micro_batch=0)
    with pytest.raises(ValueError, match="seq_len must be <= max_seq 32, got 64"):
        measure_tricks.run_config(SPEC, measure_tricks.RunConfig("x", seq_len=64))
    with pytest.raises(ValueError, match="lora_rank must be a positive integer"):
        measure_tricks.apply_lora(build_reference_model(SPEC), 0)


# ---- modelled (pure) ----------------------------------------------------------------------------


def test_trick_stack_adds_tricks_in_order():
    model, gpu = catalog.get_model("llama-2-13b"), catalog.get_gpu("h100-sxm")
    stack = tricks.trick_stack(
        model, gpu, precision="bf16-mixed", recompute="full", optimizer="adamw-8bit", offload="optimizer"
    )
    labels = [label for label, _ in stack.rows]
    assert labels == [
        "baseline: fp32 AdamW, full",
        "+ bf16-mixed",
        "+ recompute full",
        "+ adamw-8bit",
        "+ ZeRO-Offload (optimizer, grads -> CPU)",
    ]
    totals = [bd.total_bytes for _, bd in stack.rows]
    assert totals == sorted(totals, reverse=True)
    assert stack.baseline.fits is False and stack.final.fits is True
    assert stack.final.optimizer_bytes == 0 and stack.final.cpu_bytes > 0
    assert stack.final.setup.zero_stage == 1
    df = stack.to_frame()
    assert list(df["setup"]) == labels and df["fits"].iloc[-1]
    assert len(stack.to_json_dict()["rows"]) == 5


def test_trick_stack_rejects_unknown_offload_and_offloads_all_at_stage_3():
    with pytest.raises(ValueError, match="offload must be one of none, optimizer, all"):
        tricks.trick_stack(catalog.get_model("gpt2"), offload="nvme")
    stack = tricks.trick_stack(catalog.get_model("gpt2"), offload="all")
    assert stack.rows[-1][0].startswith("+ ZeRO-Infinity") and stack.final.setup.zero_stage == 3
    assert stack.final.cpu_bytes > 0
    with pytest.raises(ValueError, match="zero_stage"):
        tricks.trick_stack(catalog.get_model("gpt2"), zero_stage=4)


@settings(max_examples=20, deadline=None)
@given(rank=st.integers(1, 128), finetune=st.sampled_from(["lora", "qlora"]))
def test_adapters_train_far_fewer_parameters(rank, finetune):
    model = catalog.get_model("llama-2-7b")
    stack = tricks.trick_stack(model, finetune=finetune, lora_rank=rank)
    final = stack.final
    assert final.trainable_params < 0.05 * model.n_params
    assert final.total_bytes < stack.baseline.total_bytes
    assert final.setup == mem.TrainSetup(
        precision="bf16-mixed", finetune=finetune, lora_rank=rank, seq_len=1024
    )


def test_recompute_compute_ratio_is_one_extra_forward():
    assert tricks.RECOMPUTE_COMPUTE_RATIO == pytest.approx(4 / 3)


@pytest.mark.parametrize(
    "size,micro_batch",
    [
        (dict(n_layers=2, hidden=128, n_heads=4, vocab=512, seq=128), 4),  # notebook 02, QUICK
        (dict(n_layers=4, hidden=256, n_heads=4, vocab=1024, seq=256), 8),  # notebook 02, full
    ],
)
def test_recompute_saves_far_more_than_the_articles_60pct_at_the_notebooks_sizes(size, micro_batch):
    """Notebook 02 section 4 says the measured activation saving of full recompute is far above the
    article's ~60%, and that what stays is each block's fp32 input (4sbh) plus the LM head's tensors.
    The closed form equals MemTracker's figure on CPU (tests/test_memory_validation.py)."""
    from dataclasses import replace

    from gpukit import memory as me

    spec = me.reference_spec(**size)
    base = me.EagerSetup(seq_len=spec.max_seq, micro_batch=micro_batch)
    full = replace(base, recompute="full")
    kept = me.eager_activation_bytes(spec, full) / me.eager_activation_bytes(spec, base)
    assert kept < 0.25  # saved > 75%, against the article's 60%
    assert me.eager_layer_activation_bytes(spec, full) == 4 * spec.max_seq * micro_batch * spec.hidden


def test_stack_precision_and_recompute_move_the_total_only_where_activations_set_the_peak():
    """Notebook 02 section 8: with the notebook's defaults (llama-2-7b, rtx-4090, micro-batch 1 x 1024)
    the full-training rows peak in the optimizer step, so bf16 and recompute leave the total as it is;
    at a longer sequence and larger micro-batch the activations set the peak and both lower it. LoRA
    and QLoRA rows are a sum of parts (peak_phase 'sum')."""
    model, gpu = catalog.get_model("llama-2-7b"), catalog.get_gpu("rtx-4090")
    kw = dict(recompute="full", optimizer="adamw-8bit", finetune="qlora", lora_rank=16)
    rows = tricks.trick_stack(model, gpu, **kw).rows
    assert [bd.peak_phase for _, bd in rows[:3]] == ["optimizer"] * 3
    assert rows[0][1].total_bytes == rows[1][1].total_bytes == rows[2][1].total_bytes
    assert rows[-1][1].peak_phase == "sum"
    long = tricks.trick_stack(model, gpu, micro_batch=8, seq_len=4096, **kw).rows
    assert long[0][1].peak_phase != "optimizer"
    assert long[0][1].total_bytes > long[1][1].total_bytes > long[2][1].total_bytes
