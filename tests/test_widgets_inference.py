"""Notebook 07's widget: model, GPU, precision, context, rate, price -> GPUs, latency, cost."""

from __future__ import annotations

from gpukit.widgets import inference_view as iv


def test_view_defaults_and_changes():
    v = iv.serving_view()
    assert v.error is None and v.result.plan.fits and v.result.gpus >= 1
    first = v.result.gpus
    v.set(rate=300.0)
    assert v.error is None and v.result.gpus > first
    v.set(model="llama-3.1-405b", precision="fp8", rate=1.0)
    assert v.error is None and v.result.tp == 8
    frame = v.result.to_frame()
    assert "USD per million output tokens" in list(frame["quantity"])


def test_view_bad_input_shows_one_line():
    v = iv.serving_view()
    v.set(model="gpt2", context=32768)
    assert v.error == "context must be <= gpt2's max_seq 1024, got 32768"
    v.set(model="llama-3-8b", context=4096, price=-1.0)
    assert "price_per_gpu_hour" in v.error and "\n" not in v.error
