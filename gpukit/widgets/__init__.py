"""ipywidgets views, one per notebook topic, each a thin view over a pure gpukit function.

Every view follows `gpukit.widgets.base.View` (read its docstring first): controls -> pure compute
function -> plot/table in an Output; a ValueError shows one line (class `gpukit-error`), never a
traceback. Topic modules (e.g. `gpukit.widgets.memory`) are imported by name, not from here, so
that importing the base stays light.
"""

from gpukit.widgets.base import ERROR_CLASS, VIEW_CLASS, View, dropdown, make_view, number, slider

__all__ = ["ERROR_CLASS", "VIEW_CLASS", "View", "dropdown", "make_view", "number", "slider"]
