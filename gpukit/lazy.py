"""PEP 562 re-exports for a module split by reason to change: the names that moved to a module that
imports this one back (so it cannot import them at the top) are resolved on first use, and dir()
lists them too (tab completion in a notebook offers `inference.serve` as before the split).

Usage, at the end of the split module:
    __getattr__, __dir__ = reexports(__name__, globals(), {"gpukit.inference.capacity": ("serve", ...)})
Used in: gpukit.comm, gpukit.compute, gpukit.inference, gpukit.memory, gpukit.parallel, gpukit.plan,
gpukit.audits.cost, gpukit.bench (and its ddp, measure).
"""

from __future__ import annotations

from importlib import import_module


def reexports(module: str, namespace: dict, parts: dict[str, tuple[str, ...]]):
    """(__getattr__, __dir__) for `module`: each name of parts[sub] is looked up in module `sub` (an
    absolute dotted name) when first asked for; dir() is the namespace plus every re-exported name."""
    where = {name: sub for sub, names in parts.items() for name in names}

    def __getattr__(name):
        if name in where:
            return getattr(import_module(where[name]), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    def __dir__():
        return sorted({*namespace, *where})

    return __getattr__, __dir__
