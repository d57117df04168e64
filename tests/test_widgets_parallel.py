"""Parallelism widgets (gpukit.widgets.parallel_view): headless, values set as a learner would."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from gpukit.widgets.parallel_view import plot_schedule, plot_step, schedule_view, search_view  # noqa: E402


def test_schedule_view_draws_and_reports_bad_input():
    v = schedule_view()
    assert v.error is None and abs(v.result.bubble_fraction - 3 / 11) < 1e-9
    v.set(virtual_stages=2, microbatches=6)  # 6 is not a multiple of pp 4
    assert v.error and "multiple of pp 4" in v.error
    v.set(microbatches=8)
    assert v.error is None and v.result.virtual_stages == 2


def test_search_view_ranks_and_explains():
    v = search_view(gpus=8, model="llama-2-7b", global_batch=32)
    assert v.error is None and v.result.ranked and v.result.ranked[0].binding
    v.set(gpus=12)
    assert v.error and "multiple of gpus_per_node 8" in v.error
    v.set(gpus=8, seq_len=999_999)
    assert v.error and "seq_len must be <=" in v.error


def test_plots_from_the_model():
    import matplotlib.pyplot as plt

    from gpukit import parallel as par

    ax = plot_schedule(par.schedule(4, 8, 2))
    assert len(ax.collections) == 2 * 4 * 8 * 2  # one box per task
    est = par.estimate(
        "llama-2-7b", par.ParallelConfig(dp=8), par.make_cluster("h100-sxm", 8), global_batch=64, seq_len=2048
    )
    plot_step(est)
    plt.close("all")


def test_conventions_view_uses_the_issue_names():
    from gpukit.widgets.parallel_view import conventions_view

    v = conventions_view()
    base = v.result.grads_bytes
    v.set(grad_dtype="fp32")
    assert v.error is None and v.result.grads_bytes == 2 * base  # Megatron fp32 main grads
    # the widget trains bf16-mixed: fp16 gradients (which TrainSetup refuses there) are not offered
    assert tuple(v.controls["grad_dtype"].options) == ("bf16", "fp32")
    v.set(grad_accum_buffer="fp32")
    assert v.error and "counts the fp32 gradients twice" in v.error
    v.set(grad_accum_buffer="none", virtual_stages=2)
    assert v.error is None and v.result.term("interleave_factor") > 1
    import matplotlib.pyplot as plt

    plt.close("all")


def test_conventions_compute_dropout_follows_the_model_row():
    """falcon-7b: GeLU MLP, trained without dropout (gpukit/data/models.csv); masks were charged because the
    widget read dropout from `mlp == "gelu"`."""
    from gpukit import catalog
    from gpukit import memory as mem
    from gpukit.widgets.parallel_view import conventions_compute

    kw = dict(
        convention="megatron",
        grad_dtype="bf16",
        grad_accum_buffer="none",
        zero_stage=1,
        dp=8,
        tp=1,
        pp=4,
        sp=False,
        virtual_stages=1,
        grad_accum=16,
        seq_len=2048,
        recompute="selective",
    )
    got = conventions_compute(model="falcon-7b", gpu="h100-sxm", tp=1, seq_len=2048)  # 71 heads: tp 1
    spec, gpu = catalog.get_model("falcon-7b"), catalog.get_gpu("h100-sxm")
    off = mem.estimate_memory(spec, setup=mem.TrainSetup(dropout=False, **kw), gpu=gpu)
    on = mem.estimate_memory(spec, setup=mem.TrainSetup(dropout=True, **kw), gpu=gpu)
    assert got.total_bytes == off.total_bytes < on.total_bytes
