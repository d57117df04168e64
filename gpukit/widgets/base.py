"""The pattern every gpukit widget follows: a pure compute function + controls + an Output area.

A *view* wires ipywidgets controls to a pure function (the same one the notebook, the CLI and the
tests call) and shows the result as a plot or table. Bad input never raises out of a view: a
ValueError from the compute function shows its one-line message (an HTML widget with CSS class
`gpukit-error`) *instead of* the plot, and `.error` holds the message.

Example (a GiB calculator; `compute` takes the controls' values as keyword arguments)::

    import ipywidgets as w
    from gpukit.units import GiB, dtype_bytes
    from gpukit.widgets import View, dropdown, slider

    def weights_gib(n_params_b, dtype):
        if n_params_b <= 0:
            raise ValueError(f"n_params_b must be > 0, got {n_params_b}")
        return n_params_b * 1e9 * dtype_bytes(dtype) / GiB

    view = View(weights_gib,
                {"n_params_b": slider("params (B)", 0.1, 70, 7.0),
                 "dtype": dropdown("dtype", ["fp32", "bf16", "int8"], "bf16")},
                render=lambda gib: f"{gib:.2f} GiB")
    view                          # displays view.widget in a notebook
    view.set(n_params_b=13)       # what a user does with the slider; view.result -> 24.21
    view.set(n_params_b=-1)       # view.error -> "n_params_b must be > 0, got -1"

`render(result)` may draw with matplotlib/seaborn (new figures are shown under the controls and
then closed, so nothing leaks), return a Figure/Axes, a DataFrame, a string, or anything
IPython can display; without `render`, a result with `.to_frame()` is shown as that table.

Headless: outside a kernel (plain pytest) observers fire synchronously on `control.value = x`,
so tests set values and assert on `.result` / `.error`; under papermill a view's Output holds its
plot in widget state, not in the cell outputs (assert on values, not on text).

Used in: notebooks/00_start_here (section 3) and every widget in gpukit/widgets/.
"""

from __future__ import annotations

import html
import io
import sys
import traceback
from collections.abc import Callable, Mapping

import ipywidgets as widgets

ERROR_CLASS = "gpukit-error"  # CSS class of the error line (browser tests look for it)
VIEW_CLASS = "gpukit-view"  # CSS class of the whole view


class View:
    """Controls -> pure `compute(**values)` -> `render(result)` in an Output; errors as one line.

    Attributes: `controls` (dict name -> widget), `result` (last good result or None), `error`
    (last ValueError message or None), `widget` (the VBox to display), `output` (the Output
    area), `error_widget` (the HTML line with class `gpukit-error`), `exception` (last
    non-ValueError exception, a bug: it is also shown in the Output and re-raised).
    """

    def __init__(
        self,
        compute: Callable,
        controls: Mapping[str, widgets.Widget],
        render: Callable | None = None,
        *,
        title: str | None = None,
        auto_update: bool = True,
    ):
        if not callable(compute):
            raise TypeError(f"compute must be callable, got {compute!r}")
        for name, control in controls.items():
            if not name.isidentifier() or not hasattr(control, "value"):
                raise TypeError(f"control {name!r} must be an identifier mapped to a widget with .value")
        self.compute = compute
        self.render = render
        self.controls: dict[str, widgets.Widget] = dict(controls)
        self.result = None
        self.error: str | None = None
        self.exception: BaseException | None = None
        self.n_updates = 0  # how many times compute ran (tests and debouncing checks use it)
        self._hold = False

        self.error_widget = widgets.HTML(value="", layout=widgets.Layout(display="none"))
        self.error_widget.add_class(ERROR_CLASS)
        self.output = widgets.Output()
        box = widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        children = [box, self.error_widget, self.output]
        if title:
            children.insert(0, widgets.HTML(value=f"<b>{html.escape(title)}</b>"))
        self.widget = widgets.VBox(children)
        self.widget.add_class(VIEW_CLASS)

        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        if auto_update:
            self.update()

    # -- public -------------------------------------------------------------------------------

    @property
    def values(self) -> dict:
        """The controls' current values, as passed to `compute`."""
        return {name: c.value for name, c in self.controls.items()}

    def set(self, **values) -> View:
        """Set several controls at once and recompute once (unknown names raise ValueError)."""
        unknown = [n for n in values if n not in self.controls]
        if unknown:
            raise ValueError(f"unknown control {unknown[0]!r}; controls are {', '.join(self.controls)}")
        self._hold = True
        try:
            for name, value in values.items():
                self.controls[name].value = value
        finally:
            self._hold = False
        self.update()
        return self

    def update(self):
        """Recompute from the controls and redraw; returns the result (None on a ValueError)."""
        self.n_updates += 1
        try:
            result = self.compute(**self.values)
        except ValueError as e:
            self._show_error(e)
            return None
        except Exception as e:  # a bug, not bad input: show it where the user looks, then raise
            self._show_bug(e)
            raise
        self.result, self.error, self.exception = result, None, None
        self.error_widget.value = ""
        self.error_widget.layout.display = "none"
        self.output.layout.display = None
        bug = None
        with self.output:
            self.output.clear_output(wait=True)
            try:
                _show(result, self.render)
            except Exception as e:  # caught here: inside a kernel, Output would swallow it
                bug = e
        if isinstance(bug, ValueError):  # a renderer may validate too (e.g. nothing to plot)
            self._show_error(bug)
            return None
        if bug is not None:
            self._show_bug(bug)
            raise bug
        return result

    # -- display protocol: `view` as the last expression of a cell shows the widget -------------

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def __repr__(self) -> str:
        state = f"error={self.error!r}" if self.error else f"result={self.result!r}"
        return f"View({getattr(self.compute, '__name__', 'compute')}, {self.values}, {state})"

    # -- internals ----------------------------------------------------------------------------

    def _on_change(self, change) -> None:
        if not self._hold:
            self.update()

    def _show_error(self, e: ValueError) -> None:
        msg = (str(e).strip().splitlines() or [type(e).__name__])[0]
        self.result, self.error, self.exception = None, msg, None
        self.output.clear_output()
        self.output.layout.display = "none"
        self.error_widget.value = f'<span style="color:#b00020">&#9888; {html.escape(msg)}</span>'
        self.error_widget.layout.display = None

    def _show_bug(self, e: BaseException) -> None:
        self.result, self.error, self.exception = None, None, e
        self.output.clear_output()
        self.output.layout.display = None
        self.output.append_stderr("".join(traceback.format_exception(type(e), e, e.__traceback__)))


def make_view(
    compute: Callable, controls: Mapping[str, widgets.Widget], render: Callable | None = None, **kwargs
) -> View:
    """Function form of `View(compute, controls, render, **kwargs)`."""
    return View(compute, controls, render, **kwargs)


# -- showing a result -------------------------------------------------------------------------


def _pyplot():
    # Only if the caller already imported pyplot: a table-only view never loads matplotlib.
    return sys.modules.get("matplotlib.pyplot")


def _open_figures() -> set:
    plt = _pyplot()
    return set(plt.get_fignums()) if plt else set()


def _show(result, render: Callable | None) -> None:
    from IPython.display import display

    before = _open_figures()
    try:
        shown = render(result) if render else _default_view(result)
        plt = _pyplot()
        if plt is not None and shown is not None:
            from matplotlib.axes import Axes
            from matplotlib.figure import Figure

            if isinstance(shown, Axes):
                shown = shown.figure
            if isinstance(shown, Figure):
                before.discard(shown.number)  # a returned figure is shown even if it existed before
                shown = None
        if shown is not None:
            display(shown)
        plt = _pyplot()
        if plt is not None:
            for num in sorted(set(plt.get_fignums()) - before):
                _display_figure(plt.figure(num))
    finally:
        _close_new_figures(before)


def _default_view(result):
    if hasattr(result, "to_frame"):
        return result.to_frame()
    return result


def _display_figure(fig) -> None:
    """Show a figure in the current Output: inline backend as usual, else as a PNG image."""
    import matplotlib
    from IPython.display import Image, display

    if "inline" in matplotlib.get_backend():
        display(fig)
        return
    # MPLBACKEND=Agg (tests, papermill runs) has no display hook for figures: send the PNG.
    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    display(Image(data=buf.getvalue(), format="png"))


def _close_new_figures(before: set) -> None:
    plt = _pyplot()
    if plt is None:
        return
    for num in set(plt.get_fignums()) - before:
        plt.close(num)


# -- controls with the house defaults ------------------------------------------------------------

_STYLE = {"description_width": "initial"}


def slider(
    description: str,
    min: float,
    max: float,
    value: float,
    step: float | None = None,
    *,
    integer: bool = False,
    log: bool = False,
) -> widgets.Widget:
    """A slider that recomputes on release (continuous_update=False), long labels not cut.

    `integer=True` -> IntSlider; `log=True` -> FloatLogSlider over [min, max] (values, not exponents).
    """
    common = dict(description=description, continuous_update=False, style=_STYLE)
    if log:
        import math

        lo, hi = math.log10(min), math.log10(max)
        return widgets.FloatLogSlider(
            value=value, base=10, min=lo, max=hi, step=step or (hi - lo) / 100, **common
        )
    if integer:
        return widgets.IntSlider(value=int(value), min=int(min), max=int(max), step=int(step or 1), **common)
    return widgets.FloatSlider(
        value=value, min=min, max=max, step=step or (max - min) / 100, readout_format=".3g", **common
    )


def dropdown(description: str, options, value=None) -> widgets.Dropdown:
    """A dropdown; `value` defaults to the first option."""
    options = list(options)
    return widgets.Dropdown(
        description=description, options=options, value=options[0] if value is None else value, style=_STYLE
    )


def number(description: str, value: float, *, integer: bool = False) -> widgets.Widget:
    """A free-typed number box (FloatText/IntText): what lets a learner type a bad value."""
    cls = widgets.IntText if integer else widgets.FloatText
    return cls(description=description, value=value, continuous_update=False, style=_STYLE)
