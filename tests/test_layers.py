"""The layout's import contracts (pyproject.toml [tool.importlinter], issues 7 and 22): the top level is
the ground floor, each calculator family is a folder with a public face (`__all__`), every other folder
is a layer, one layers contract holds the order, audits are imported by no calculator, bench or widget.

The contracts are run with import-linter; the tests also check that the contracts cover every
module on disk (a new top-level module must be listed as a calculator) and that a broken contract
is caught (the check can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from gpukit.specs import ModelSpec

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
LAYERS = ("cli", "course", "audits", "widgets", "bench")
FAMILIES = ("plan", "cost", "parallel", "scaling", "inference", "memory", "compute", "comm")


def _config() -> dict:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]


def _contract(cid: str) -> dict:
    return next(c for c in _config()["contracts"] if c["id"] == cid)


def _lint(root: Path) -> subprocess.CompletedProcess:
    """import-linter on the gpukit/ under `root`, in a fresh interpreter (grimp finds the package by
    import, so this process's own gpukit must not stand in for the one under test)."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))"
    )
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


def test_contracts_are_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "4 kept, 0 broken" in r.stdout


def test_the_top_level_is_the_ground_floor_and_every_folder_a_family_or_a_layer():
    gpukit = ROOT / "gpukit"
    on_disk = {f"gpukit.{p.stem}" for p in gpukit.glob("*.py") if p.stem not in ("__init__", "__main__")}
    listed = set(_contract("ground")["source_modules"])
    assert on_disk - listed == set(), (
        "new top-level modules: the top level is the ground floor (GROUND in pyproject.toml)"
    )
    assert listed - on_disk == set(), "listed ground modules that no longer exist"
    folders = {p.name for p in gpukit.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS) | set(FAMILIES), "every folder of gpukit/ is a family or a layer"
    declared = {name.strip() for layer in _contract("layers")["layers"] for name in layer.split("|")}
    assert declared == set(LAYERS) | set(FAMILIES)
    calculators = set(_contract("calculators")["source_modules"])
    assert calculators == listed | {f"gpukit.{f}" for f in FAMILIES}
    assert set(_contract("calculators")["forbidden_modules"]) >= {
        "torch",
        "ipywidgets",
        "matplotlib",
        "subprocess",
    }


@pytest.mark.parametrize(
    "offender, line",
    [
        ("gpukit/units.py", "import torch"),  # a calculator importing torch
        ("gpukit/compute/flops.py", "from gpukit.bench import timing"),  # a calculator importing a layer
        ("gpukit/widgets/base.py", "from gpukit.audits import claims"),  # a widget importing an audit
        ("gpukit/bench/timing.py", "import gpukit.cli"),  # a lower layer importing a higher one
        (
            "gpukit/memory/parts.py",
            "from gpukit.parallel import layout",
        ),  # a family importing a higher family
        ("gpukit/comm/network.py", "from gpukit.compute import flops"),  # siblings on one floor
        ("gpukit/specs.py", "from gpukit.memory import analytic"),  # the ground floor importing a family
    ],
)
def test_a_broken_contract_is_caught(tmp_path, offender, line):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "gpukit", copy / "gpukit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PYPROJECT, copy / "pyproject.toml")
    target = copy / offender
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    r = _lint(copy)
    assert r.returncode == 1 and "BROKEN" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]


def test_linear_shapes_belong_to_the_model():
    """ModelSpec.linear_shapes (moved from quant.py): the block's matmul weights are the attention
    and MLP parameters without biases (Megatron layer, Narayanan et al. 2021 sec. 3)."""
    for spec in (
        ModelSpec("gpt", 2, 64, 4),
        ModelSpec("llama", 2, 64, 8, n_kv_heads=2, mlp="swiglu", norm="rmsnorm", position="rope", bias=False),
    ):
        weights, rows = spec.linear_weights
        biases = (spec.q_dim + 2 * spec.kv_dim + spec.hidden) + (
            spec.ffn_hidden + spec.hidden if spec.mlp == "gelu" else 2 * spec.ffn_hidden + spec.hidden
        )
        assert weights == spec.attention_params() + spec.mlp_params() - (biases if spec.bias else 0)
        assert rows == sum(o for _, _, o in spec.linear_shapes)
        assert [n for n, _, _ in spec.linear_shapes][:4] == ["q", "k", "v", "o"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 10**400, True, "x", None])
def test_one_finite_check_behind_every_number(bad):
    """errors.require_finite is the one finite-number check: require_positive, the unit converters
    and the profile loader all refuse the same values with a one-line ValueError naming the field."""
    from gpukit import errors, units
    from gpukit.profile import profile_number

    for check in (
        lambda: errors.require_finite("x", bad),
        lambda: errors.require_positive("x", bad),
        lambda: units.bytes_to_gib(bad),
        lambda: profile_number("p.json", "x", bad),
    ):
        with pytest.raises(ValueError) as e:
            check()
        assert "\n" not in str(e.value) and ("x" in str(e.value) or "n_bytes" in str(e.value))
    assert errors.require_finite("x", 2) == 2.0 and errors.require_positive("x", 0, allow_zero=True) == 0.0
    with pytest.raises(ValueError, match="inputs too large: the sum overflows"):
        errors.check_finite("the sum", 1e308, 1e308)


def test_a_missing_command_module_is_an_error(monkeypatch):
    """No tolerance for a missing piece: the CLI imports every module of COMMAND_MODULES (as the claims
    registry imports every TOPIC_MODULES entry, tests/test_claims.py)."""
    import gpukit.cli as cli

    monkeypatch.setattr(cli, "COMMAND_MODULES", cli.COMMAND_MODULES + ("no_such_command",))
    with pytest.raises(ModuleNotFoundError, match="no_such_command"):
        cli.build_parser()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_face_names_what_it_offers(family):
    """Each family's __init__ is its face: an explicit __all__ whose every name resolves, no lazy
    re-export (no module __getattr__), and every public name defined in one of its parts is offered
    by the face, as the same object."""
    import importlib
    import inspect
    import pkgutil

    face = importlib.import_module(f"gpukit.{family}")
    assert isinstance(face.__all__, list) and len(face.__all__) == len(set(face.__all__))
    for name in face.__all__:
        assert getattr(face, name) is not None
    assert "__getattr__" not in vars(face)
    for info in pkgutil.iter_modules(face.__path__):
        part = importlib.import_module(f"gpukit.{family}.{info.name}")
        assert "__getattr__" not in vars(part), f"gpukit.{family}.{info.name} has a lazy re-export"
        for name, obj in vars(part).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == part.__name__:
                assert name in face.__all__, f"gpukit.{family}.{info.name}.{name} is not in the face"
                assert getattr(face, name) is obj


def test_no_private_name_crosses_a_module_line():
    """What another module needs is public (in its family's face) or it moves: no `from gpukit.x import
    _name` anywhere in gpukit/, tests, scripts or notebooks, and no lazy re-export among the calculators."""
    import ast
    import json

    found = []
    sources = [(p, p.read_text()) for d in ("gpukit", "tests", "scripts") for p in (ROOT / d).rglob("*.py")]
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(nb.read_text())["cells"]
        sources.append((nb, "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")))
    for path, src in sources:
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpukit"):
                found += [
                    f"{path.relative_to(ROOT)}: {node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert found == []
    assert not (ROOT / "gpukit" / "lazy.py").exists() or all(
        "lazy" not in (ROOT / "gpukit" / f).read_text() for f in FAMILIES for f in [f"{f}/__init__.py"]
    )
