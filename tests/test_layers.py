"""The layout's import contracts (pyproject.toml [tool.importlinter], issue 7): folders are layers, a
top-level module is a pure calculator, audits are imported by no calculator, bench or widget.

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


def _config() -> dict:
    return tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]


def _contract(cid: str) -> dict:
    return next(c for c in _config()["contracts"] if c["id"] == cid)


def _lint(root: Path) -> subprocess.CompletedProcess:
    """import-linter on the gpukit/ under `root`, in a fresh interpreter (grimp finds the package by
    import, so this process's own gpukit must not stand in for the one under test)."""
    code = ("import sys; from importlinter.cli import lint_imports; "
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))")
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def test_contracts_are_kept():
    r = _lint(ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "3 kept, 0 broken" in r.stdout


def test_every_top_level_module_is_a_listed_calculator_and_every_folder_a_layer():
    gpukit = ROOT / "gpukit"
    on_disk = {f"gpukit.{p.stem}" for p in gpukit.glob("*.py") if p.stem not in ("__init__", "__main__")}
    listed = set(_contract("calculators")["source_modules"])
    assert on_disk - listed == set(), "new top-level modules: add them to CALCULATORS in pyproject.toml"
    assert listed - on_disk == set(), "listed calculators that no longer exist"
    folders = {p.name for p in gpukit.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders == set(LAYERS), "every folder of gpukit/ is a layer named in the layers contract"
    declared = {name.strip() for layer in _contract("layers")["layers"] for name in layer.split("|")}
    assert declared == set(LAYERS)
    assert set(_contract("calculators")["forbidden_modules"]) >= {"torch", "ipywidgets", "matplotlib", "subprocess"}


@pytest.mark.parametrize("offender, line", [
    ("gpukit/units.py", "import torch"),  # a calculator importing torch
    ("gpukit/compute.py", "from gpukit.bench import timing"),  # a calculator importing a layer
    ("gpukit/widgets/base.py", "from gpukit.audits import claims"),  # a widget importing an audit
    ("gpukit/bench/timing.py", "import gpukit.cli"),  # a lower layer importing a higher one
])
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
    for spec in (ModelSpec("gpt", 2, 64, 4), ModelSpec("llama", 2, 64, 8, n_kv_heads=2, mlp="swiglu",
                                                       norm="rmsnorm", position="rope", bias=False)):
        weights, rows = spec.linear_weights
        biases = (spec.q_dim + 2 * spec.kv_dim + spec.hidden) + (
            spec.ffn_hidden + spec.hidden if spec.mlp == "gelu" else 2 * spec.ffn_hidden + spec.hidden)
        assert weights == spec.attention_params() + spec.mlp_params() - (biases if spec.bias else 0)
        assert rows == sum(o for _, _, o in spec.linear_shapes)
        assert [n for n, _, _ in spec.linear_shapes][:4] == ["q", "k", "v", "o"]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), 10**400, True, "x", None])
def test_one_finite_check_behind_every_number(bad):
    """errors.require_finite is the one finite-number check: require_positive, the unit converters
    and the profile loader all refuse the same values with a one-line ValueError naming the field."""
    from gpukit import errors, units
    from gpukit.profile import _positive

    for check in (lambda: errors.require_finite("x", bad), lambda: errors.require_positive("x", bad),
                  lambda: units.bytes_to_gib(bad), lambda: _positive("p.json", "x", bad)):
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


@pytest.mark.parametrize("module, moved", [
    ("gpukit.inference", "serve"), ("gpukit.inference", "validate_published"), ("gpukit.comm", "cluster_network"),
    ("gpukit.memory", "fits"), ("gpukit.parallel", "search"), ("gpukit.bench", "run_collectives"),
    ("gpukit.bench.ddp", "ddp_scaling"), ("gpukit.bench.measure", "compare"), ("gpukit.compute", "time_to_train"),
    ("gpukit.plan", "frameworks_grid"), ("gpukit.audits.cost", "spot_60_90"),
])
def test_a_split_module_still_offers_what_moved(module, moved):
    """After a split by reason to change (gpukit.lazy.reexports) the old module still gives every moved
    name, the same object as its new home's, and lists it in dir() (tab completion); an unknown name is
    still an AttributeError."""
    import importlib

    mod = importlib.import_module(module)
    assert moved in dir(mod)
    home = importlib.import_module(getattr(mod, moved).__module__)
    assert getattr(mod, moved) is getattr(home, moved)
    with pytest.raises(AttributeError, match="no attribute 'no_such_name'"):
        mod.no_such_name  # noqa: B018
