"""Notebook 01/02 memory views driven headless: set values -> the result changes; bad value -> .error."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpukit import catalog  # noqa: E402
from gpukit import memory as mem  # noqa: E402
from gpukit.units import GiB  # noqa: E402
from gpukit.widgets import memory_view as mv  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_memory_compute_is_estimate_memory():
    bd = mv.memory_compute("llama-2-7b", "h100-sxm", micro_batch=2, seq_len=2048, recompute="full")
    ref = mem.estimate_memory(
        catalog.get_model("llama-2-7b"),
        gpu=catalog.get_gpu("h100-sxm"),
        setup=mem.TrainSetup(micro_batch=2, seq_len=2048, recompute="full"),
    )
    assert bd == ref and bd.convention == "pytorch"
    # 7B full training, mixed AdamW: 16 bytes/param (ZeRO K=12) alone exceed 80 GiB (papers' convention)
    paper = mv.memory_compute(
        "llama-2-7b", "h100-sxm", micro_batch=2, seq_len=2048, recompute="full", convention="megatron"
    )
    assert paper.params_bytes + paper.grads_bytes + paper.optimizer_bytes == 16 * bd.n_params
    # PyTorch keeps fp32 params + grads + AdamW states and the foreach update's sqrt(v): 20 bytes/param
    assert bd.peak_phase == "optimizer" and bd.total_bytes > paper.total_bytes
    assert bd.fits is False and paper.fits is False
    assert mv.verdict_text(bd).startswith("does NOT fit")


def test_memory_view_changes_with_every_control():
    view = mv.memory_view()
    first = view.result.total_bytes
    assert view.error is None and view.result.model_name == "llama-2-7b"
    assert list(view.controls)[0] == "model"  # first control: a dropdown whose change changes the plot
    view.controls["model"].value = "gpt2"
    gpt2 = view.result.total_bytes
    assert gpt2 < first and view.result.fits is True
    view.controls["micro_batch"].value = 8  # the first slider
    assert view.result.peak_phase == "backward-start"  # activations at the peak, not the optimizer step
    a1, a2 = (mv.memory_compute("gpt2", micro_batch=b).activations_bytes for b in (1, 2))
    # linear in the micro-batch, beside autocast's bf16 weight copies (which do not grow with it)
    assert view.result.activations_bytes - a1 == pytest.approx(7 * (a2 - a1), abs=8)
    before = view.result.total_bytes
    view.set(recompute="full")
    assert view.result.total_bytes < before
    view.set(precision="fp32", optimizer="sgd")
    assert view.result.optimizer_bytes == 0
    view.set(gpu="t4")
    assert view.result.gpu_memory_bytes == catalog.get_gpu("t4").memory_bytes


@pytest.mark.parametrize(
    "values, message",
    [
        (dict(micro_batch=0), "micro_batch must be a positive integer, got 0"),
        # the rule's one line (ModelSpec.tp_note) now names n_kv_heads too, the same line in every calculator
        (
            dict(tp=5),
            "tp must divide n_heads 32, got 5 (whole heads per GPU; and divide n_kv_heads 32 or be a multiple "
            "of it)",
        ),
        (dict(model="gpt2", seq_len=2048), "seq_len must be <= max_seq 1024 of gpt2, got 2048"),
    ],
)
def test_bad_combinations_show_one_line(values, message):
    view = mv.memory_view()
    view.set(**values)  # must not raise
    assert view.error == message and view.result is None
    assert view.output.layout.display == "none"
    view.set(micro_batch=1, tp=1, model="llama-2-7b", seq_len=1024)
    assert view.error is None and view.result is not None


def test_plot_breakdown_draws_every_nonzero_part_and_capacity():
    bd = mv.memory_compute("gpt2", "t4", micro_batch=4)
    fig = mv.plot_breakdown(bd)
    ax = fig.axes[0]
    parts = {k for k, v in mv.parts_gib(bd).items() if v > 0}
    assert set(ax.get_legend_handles_labels()[1]) == parts | {"GPU memory"}
    widths = sum(p.get_width() for p in ax.patches)
    assert widths == pytest.approx(bd.total_bytes / GiB, rel=1e-9)
    assert ax.get_title().startswith("fits")


def test_tricks_view_each_trick_lowers_memory_and_errors_in_place():
    view = mv.tricks_view(finetune="full", recompute="none", gpu="h100-sxm")
    stack = view.result
    labels = [label for label, _ in stack.rows]
    assert labels == ["baseline: fp32 AdamW, full", "+ bf16-mixed"]
    totals = [bd.total_bytes for _, bd in stack.rows]
    # mixed precision keeps fp32 states in PyTorch: it lowers the activations, not the optimizer step
    assert totals[1] <= totals[0]
    view.set(recompute="full", optimizer="adamw-8bit", finetune="lora", offload="optimizer")
    totals = [bd.total_bytes for _, bd in view.result.rows]
    assert len(totals) == 6 and all(b <= a for a, b in zip(totals, totals[1:], strict=False))
    view.set(precision="fp32", finetune="qlora", offload="none")  # QLoRA needs a 16-bit compute dtype
    assert view.error.startswith("finetune='qlora' needs a 16-bit precision")
    view.set(precision="bf16-mixed")
    assert view.error is None and view.result.final.setup.finetune == "qlora"


def test_default_tricks_view_is_the_articles_qlora_case():
    stack = mv.tricks_compute()  # llama-2-7b on an RTX 4090, bf16-mixed, QLoRA r=16 (defaults of the view)
    assert stack.final.fits is True and stack.baseline.fits is False
    assert stack.final.setup.finetune == "qlora" and stack.final.setup.base_dtype == "nf4"
    view = mv.tricks_view()
    assert view.result == stack
    assert "fits" in mv.verdict_text(view.result.final)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 64), s=st.integers(1, 32).map(lambda k: 128 * k))
def test_memory_grows_with_micro_batch_and_seq(b, s):
    small = mv.memory_compute("gpt2-medium", "a100-80gb", micro_batch=b, seq_len=min(s, 1024))
    big = mv.memory_compute("gpt2-medium", "a100-80gb", micro_batch=b + 1, seq_len=min(s, 1024))
    assert big.total_bytes >= small.total_bytes  # the peak may stay at the optimizer step
    paper = [
        mv.memory_compute(
            "gpt2-medium", "a100-80gb", micro_batch=x, seq_len=min(s, 1024), convention="megatron"
        )
        for x in (b, b + 1)
    ]
    assert paper[1].activations_bytes > paper[0].activations_bytes
    assert big.params_bytes == small.params_bytes
    assert (small.total_bytes <= small.gpu_memory_bytes) == small.fits


def test_compare_frame_and_plot():
    meas = {"params": 100, "grads": 100, "optimizer": 200, "activations": 330, "peak": 690}
    pred = {"params": 100, "grads": 100, "optimizer": 200, "activations": 300, "peak": 700}
    plan = {"params": 100, "grads": 100, "optimizer": 200, "activations": 330, "peak": 759}
    err = {
        k: {c: (d[c] - meas[c]) / meas[c] for c in meas}
        for k, d in (("predicted", pred), ("planning", plan), ("megatron", plan))
    }
    result = {"predicted": pred, "planning": plan, "megatron": plan, "measured": meas, "error": err}
    df = mv.compare_frame(result)
    assert list(df["category"]) == list(mv.CATEGORIES)
    assert df.loc[df.category == "activations", "replay_err_pct"].item() == pytest.approx(-9.0909, rel=1e-4)
    assert df.loc[df.category == "peak", "planning_err_pct"].item() == pytest.approx(10.0)
    fig = mv.plot_predicted_vs_measured(df, title="t")
    assert len(fig.axes[0].patches) == 4 * len(df)
    no_replay = mv.compare_frame({**result, "predicted": None, "error": {**err, "predicted": None}})
    assert no_replay["replay_err_pct"].isna().all() and no_replay["planning_err_pct"].notna().all()
    with pytest.raises(ValueError, match="missing planning, megatron, measured, error"):
        mv.compare_frame({"predicted": {}})


def test_activation_frame_is_korthikanti_table2_for_the_gpt_layout():
    df = mv.activation_frame("gpt2", 1024, 2)
    m = catalog.get_model("gpt2")
    row = df[(df.attention == "eager") & (df.recompute == "none")].iloc[0]
    assert row.per_layer_over_sbh == pytest.approx(34 + 5 * m.n_heads * 1024 / m.hidden)
    assert (df[df.recompute == "full"].per_layer_over_sbh == 2).all()
    assert row.all_layers_gib == pytest.approx(m.n_layers * row.per_layer_gib)


def test_phase_frame():
    r = {
        "predicted": {"phase_peaks": {"forward": 90, "backward": 110, "optimizer": 50}},
        "measured": {"phase_peaks": {"forward": 100, "backward": 110, "optimizer": 0}},
    }
    df = mv.phase_frame(r)
    assert list(df.phase) == ["forward", "backward", "optimizer"]
    assert list(df.error_pct) == pytest.approx([-10.0, 0.0, 0.0])


def test_memory_view_issue8_controls():
    view = mv.memory_view(model="llama-2-7b", seq_len=4096)
    for name in ("attention", "zero_stage", "dp", "pp", "sp", "inference", "batch", "params_b", "convention"):
        assert name in view.controls, name
    base = view.result.total_bytes
    view.set(attention="eager")
    assert view.result.total_bytes > base  # the s^2 scores are stored
    view.set(attention="flash", zero_stage=3, dp=8)
    assert view.result.total_bytes < base and view.result.setup.zero_stage == 3
    view.set(zero_stage=0, dp=1, pp=4)
    assert view.result.setup.pp == 4 and view.result.setup.grad_accum == 4
    view.set(pp=1, inference=True, batch=16)
    assert view.result.kv_cache_bytes > 0 and view.result.grads_bytes == 0
    view.set(inference=False, model=mv.CUSTOM, params_b=13)
    assert view.result.n_params == 13 * 10**9 and view.result.activations_bytes == 0
    view.set(params_b=-1)
    assert view.error == "params_b must be a positive number of billions, got -1.0"


def test_step_timeline_plot_lines_up_phases():
    trace = [("forward", 2**20), ("forward", 3 * 2**20), ("backward", 4 * 2**20), ("optimizer", 2 * 2**20)]
    xs, ys = mv.stretch_trace(trace)
    assert xs == [0.0, 0.5, 1.0, 2.0] and ys == [1.0, 3.0, 4.0, 2.0]
    fig = mv.plot_step_timeline(trace, trace[:2], {"forward": 3 * 2**20, "optimizer": 2 * 2**20}, title="t")
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "measured (MemTracker, op by op)",
        "replay (memory_eager)",
        "planning model, phase peaks",
    ]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(mv.STEP_PHASES)


def test_tricks_view_accumulation_zero_offload_all_and_time():
    view = mv.tricks_view(model="llama-2-13b", gpu="h100-sxm", finetune="full", recompute="full")
    view.set(grad_accum=8, zero_stage=3, dp=8, offload="all")
    assert view.error is None
    stack = view.result
    labels = [label for label, _ in stack.rows]
    assert (
        "+ grad accumulation x8" in labels
        and "+ ZeRO-3, dp=8" in labels
        and labels[-1].startswith("+ ZeRO-Infinity")
    )
    assert stack.final.setup.offload == "all" and stack.final.cpu_bytes > 0
    # ZeRO-3 over 8 GPUs holds less per GPU than without; offloading everything less again
    by = dict(stack.rows)
    assert by["+ ZeRO-3, dp=8"].total_bytes < by["+ grad accumulation x8"].total_bytes
    assert stack.final.total_bytes < by["+ ZeRO-3, dp=8"].total_bytes
    times = mv.stack_time(stack)
    # accumulation multiplies the tokens (and the time) of an optimizer step by 8
    i = labels.index("+ grad accumulation x8")
    assert times[i].seconds == pytest.approx(8 * times[i - 1].seconds)
    assert times[i].tokens_per_gpu == 8 * times[i - 1].tokens_per_gpu
    fig = mv.plot_stack(stack)
    ax = fig.axes[0]
    assert "host RAM (offload)" in ax.get_legend_handles_labels()[1]
    assert len(fig.axes) == 2 and "MFU" in fig.axes[1].get_xlabel()
    import matplotlib.pyplot as plt

    plt.close(fig)
    view.set(dp=0)
    assert view.error.startswith("dp must be")


def test_step_time_estimate_formula():
    from gpukit import catalog, compute
    from gpukit import memory as mem
    from gpukit.memory import step_time_estimate

    spec, gpu = catalog.get_model("llama-2-7b"), catalog.get_gpu("h100-sxm")
    setup = mem.TrainSetup(seq_len=2048, micro_batch=2, grad_accum=4)
    t = step_time_estimate(spec, gpu, setup, mfu=0.5)
    fpt = compute.flops_per_token(spec, seq_len=2048)
    assert t.seconds == pytest.approx(
        2 * 4 * 2048 * fpt.hardware_flops / (gpu.peak_tflops("bf16") * 1e12 * 0.5)
    )
    full = step_time_estimate(
        spec, gpu, mem.TrainSetup(seq_len=2048, micro_batch=2, grad_accum=4, recompute="full"), mfu=0.5
    )
    assert 1.3 < full.seconds / t.seconds < 1.4  # 8N / 6N plus the attention replay
    with pytest.raises(ValueError, match="mfu"):
        step_time_estimate(spec, gpu, setup, mfu=0)
