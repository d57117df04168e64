"""PEP 562 downward re-exports for the bench package: `import gpukit.bench` offers the entry points of
its heavy submodules (run_collectives, run_ddp, ...) without importing them, and so without torch;
each name is imported from its submodule on first use, and dir() lists them too (tab completion).

Only downward: a package names what its own submodules define; a module never re-exports a module
that imports it back (that is an import cycle hidden behind a string).
Usage, at the end of the package's __init__:
    __getattr__, __dir__ = reexports(__name__, globals(), {"gpukit.bench.matmul": ("matmul_bench", ...)})
Used in: gpukit.bench (its __init__).
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
