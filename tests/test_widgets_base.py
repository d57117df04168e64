"""gpukit.widgets.base.View driven headless: observers fire synchronously on `.value = ...`."""

from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import ipywidgets as w  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gpukit.units import GiB, dtype_bytes  # noqa: E402
from gpukit.widgets import ERROR_CLASS, VIEW_CLASS, View, dropdown, make_view, number, slider  # noqa: E402


def weights_gib(n_params_b, dtype):
    """The docstring example's compute function: weights of n_params_b billion params, GiB."""
    if n_params_b <= 0:
        raise ValueError(f"n_params_b must be > 0, got {n_params_b}\nsecond line never shown")
    return n_params_b * 1e9 * dtype_bytes(dtype) / GiB


def toy_view(render=None, **kw):
    controls = {
        "n_params_b": number("params (B)", 7.0),
        "dtype": dropdown("dtype", ["fp32", "bf16", "int8"], "bf16"),
    }
    return View(weights_gib, controls, render, **kw)


def test_initial_result_and_value_change():
    view = toy_view()
    assert view.result == pytest.approx(7e9 * 2 / GiB)
    assert view.error is None and view.n_updates == 1
    view.controls["n_params_b"].value = 13.0  # what a user typing does
    assert view.result == pytest.approx(24.2144, rel=1e-4)  # 13e9 * 2 B / 2**30
    view.controls["dtype"].value = "fp32"
    assert view.result == pytest.approx(13e9 * 4 / GiB)
    assert view.n_updates == 3


def test_bad_value_shows_one_line_error_instead_of_output():
    view = toy_view()
    view.controls["n_params_b"].value = -1.0  # must not raise
    assert view.error == "n_params_b must be > 0, got -1.0"
    assert view.result is None
    assert ERROR_CLASS in view.error_widget._dom_classes
    assert "n_params_b must be &gt; 0, got -1.0" in view.error_widget.value  # HTML-escaped
    assert "second line" not in view.error_widget.value
    assert view.error_widget.layout.display is None and view.output.layout.display == "none"
    view.controls["n_params_b"].value = 1.0  # recovers
    assert view.error is None and view.result == pytest.approx(2e9 / GiB)
    assert view.error_widget.layout.display == "none" and view.error_widget.value == ""
    assert view.output.layout.display is None


def test_widget_structure_and_display_protocol():
    view = toy_view(title="Weights")
    assert isinstance(view.widget, w.VBox) and VIEW_CLASS in view.widget._dom_classes
    assert view.output in view.widget.children and view.error_widget in view.widget.children
    assert set(view.controls) == {"n_params_b", "dtype"}
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "weights_gib" in repr(view)


def test_set_updates_once_and_rejects_unknown_names():
    view = toy_view()
    view.set(n_params_b=70.0, dtype="fp32")
    assert view.n_updates == 2
    assert view.result == pytest.approx(70e9 * 4 / GiB)
    with pytest.raises(ValueError, match="unknown control 'hidden'; controls are n_params_b, dtype"):
        view.set(hidden=4096)


def test_matplotlib_render_closes_its_figures():
    plt.close("all")
    keep = plt.figure()  # a figure the learner made elsewhere must survive
    drawn = []

    def render(gib):
        fig, ax = plt.subplots()
        ax.bar(["weights"], [gib])
        drawn.append(fig.number)

    view = toy_view(render)
    for n in (1.0, 2.0, -3.0, 4.0):
        view.controls["n_params_b"].value = n
    assert len(drawn) == 4  # the bad value drew nothing
    assert plt.get_fignums() == [keep.number]
    plt.close("all")


def test_render_may_return_figure_axes_or_table():
    plt.close("all")

    def as_axes(gib):
        return plt.subplots()[1]

    View(weights_gib, {"n_params_b": number("n", 1.0), "dtype": dropdown("d", ["bf16"])}, as_axes)
    assert plt.get_fignums() == []

    class Breakdown:
        def to_frame(self):
            import pandas as pd

            return pd.DataFrame({"bytes": [1]})

    view = make_view(lambda x: Breakdown(), {"x": number("x", 1)})
    assert isinstance(view.result, Breakdown) and view.error is None


def test_render_value_error_is_shown_like_compute_error():
    def render(gib):
        raise ValueError("nothing to plot for int8")

    view = toy_view(render)
    assert view.error == "nothing to plot for int8" and view.result is None


def test_bug_in_compute_raises_and_is_shown():
    def broken(x):
        return {}["missing"]

    with pytest.raises(KeyError):
        View(broken, {"x": number("x", 1)})
    view = View(lambda x: 1 / x, {"x": number("x", 1)})
    with pytest.raises(ZeroDivisionError):
        view.controls["x"].value = 0
    assert isinstance(view.exception, ZeroDivisionError) and view.error is None
    assert any("ZeroDivisionError" in o.get("text", "") for o in view.output.outputs)


def test_constructor_validates():
    with pytest.raises(TypeError):
        View(42, {})
    with pytest.raises(TypeError):
        View(weights_gib, {"not an identifier": number("x", 1)})
    view = View(
        weights_gib, {"n_params_b": number("n", 1.0), "dtype": dropdown("d", ["bf16"])}, auto_update=False
    )
    assert view.result is None and view.n_updates == 0


def test_control_helpers():
    s = slider("params (B)", 0.1, 100, 7.0, log=True)
    assert isinstance(s, w.FloatLogSlider) and s.value == pytest.approx(7.0) and not s.continuous_update
    assert s.min == pytest.approx(-1) and s.max == pytest.approx(2)
    i = slider("layers", 1, 96, 32, integer=True)
    assert isinstance(i, w.IntSlider) and i.value == 32
    f = slider("x", 0.0, 1.0, 0.5)
    assert isinstance(f, w.FloatSlider) and f.step == pytest.approx(0.01)
    d = dropdown("dtype", ["fp32", "bf16"])
    assert d.value == "fp32"
    assert isinstance(number("n", 3, integer=True), w.IntText)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-5, 100, allow_nan=False), st.sampled_from(["fp32", "bf16", "int8"])),
        min_size=1,
        max_size=6,
    )
)
def test_state_is_consistent_after_any_sequence(moves):
    """After any sequence of inputs: exactly one of result/error, and it matches the last input."""
    view = toy_view()
    for n, dtype in moves:
        view.set(n_params_b=n, dtype=dtype)
    n, dtype = moves[-1]
    if n <= 0:
        assert view.result is None and view.error.startswith("n_params_b must be > 0")
        assert view.output.layout.display == "none"
    else:
        assert view.error is None and view.result == pytest.approx(n * 1e9 * dtype_bytes(dtype) / GiB)
        assert view.error_widget.layout.display == "none"
