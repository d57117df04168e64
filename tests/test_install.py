"""gpukit installed as a user installs it: a wheel (no -e) in a fresh virtual environment, run from
another folder (issue 25, section 4).

The slow test builds the wheel and the sdist from a copy of the package's files (pyproject.toml,
README.md, LICENSE, gpukit/), checks both carry the catalogs (gpukit/data/*.csv), installs the wheel
with its core dependencies from the package registry into a new venv (no system site-packages), and
runs the README's CLI examples from tmp_path with PYTHONPATH and GPUKIT_DATA unset: gpukit must come
from the wheel, find its data inside itself, and run without torch, matplotlib or ipywidgets.
When the registry cannot be reached, the dependencies are borrowed from the running interpreter's
site-packages through a .pth file (never gpukit itself: that still comes from the wheel), and the
"no torch in a light install" check is skipped with the reason.

Also here: every `gpukit` line of the README's command-line section runs from the checkout and exits 0
(slow); the README's papermill parameters pass the notebook's own check; the CLI of this checkout, with
torch and the course packages made unimportable, runs the light commands and names the extra a heavy
one needs in one line (exit 2); the package metadata (core vs extras, version, license, CITATION.cff)
agree.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CATALOG_FILES = (
    "gpus.csv",
    "models.csv",
    "interconnects.csv",
    "prices.csv",
    "serving_published.csv",
    "claims.csv",
    "README.md",
)
LIGHT_BLOCKED = (
    "torch",
    "matplotlib",
    "seaborn",
    "ipywidgets",
    "IPython",
    "papermill",
    "nbformat",
    "nbclient",
    "jupyter_client",
)
PIP_TIMEOUT_S = 300
CLI_TIMEOUT_S = 120


def _env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: nothing pointing at this checkout or at another catalog."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "GPUKIT_DATA", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    }
    env.update(TQDM_DISABLE="1", PYTHONNOUSERSITE="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def _run(cmd: list[str], cwd: Path, timeout: float = CLI_TIMEOUT_S, env: dict | None = None):
    return subprocess.run(cmd, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv python, venv gpukit, deps from the registry?, a folder outside the checkout)."""
    top = tmp_path_factory.mktemp("install")
    src, dist, venv, elsewhere = top / "src", top / "dist", top / "venv", top / "elsewhere"
    src.mkdir()
    elsewhere.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(
        ROOT / "gpukit", src / "gpukit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    )
    # Build with this interpreter's setuptools (no build isolation: nothing to download).
    r = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=top,
        timeout=PIP_TIMEOUT_S,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = _run(
        [
            sys.executable,
            "-c",
            f"from setuptools import build_meta as b; print(b.build_sdist({str(dist)!r}))",
        ],
        cwd=src,
        timeout=PIP_TIMEOUT_S,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (wheel,) = dist.glob("gpukit-*.whl")
    (sdist,) = dist.glob("gpukit-*.tar.gz")

    r = _run([sys.executable, "-m", "venv", str(venv)], cwd=top, timeout=PIP_TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-2000:]
    py, gk = venv / "bin" / "python", venv / "bin" / "gpukit"
    r = _run([str(py), "-m", "pip", "install", "-q", str(wheel)], cwd=top, timeout=PIP_TIMEOUT_S)
    from_registry = r.returncode == 0
    if not from_registry:  # offline: the wheel alone, its dependencies borrowed from this interpreter
        r = _run(
            [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
            cwd=top,
            timeout=PIP_TIMEOUT_S,
        )
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        purelib = _run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=top
        ).stdout.strip()
        # Plain path lines only: the borrowed folder's own .pth files (an editable gpukit) are not run.
        Path(purelib, "zz_borrowed_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return {
        "py": py,
        "gpukit": gk,
        "from_registry": from_registry,
        "cwd": elsewhere,
        "wheel": wheel,
        "sdist": sdist,
        "venv": venv,
    }


@pytest.mark.slow
def test_wheel_and_sdist_carry_the_catalogs(installed):
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    missing = [f for f in CATALOG_FILES if f"gpukit/data/{f}" not in names]
    assert not missing, f"the wheel lacks gpukit/data/{missing}"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the wheel carries no LICENSE"
    assert not [n for n in names if n.startswith(("tests/", "notebooks/", "data/"))], (
        "the wheel ships non-package files"
    )
    with tarfile.open(installed["sdist"]) as tar:
        snames = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert not [f for f in CATALOG_FILES if f"gpukit/data/{f}" not in snames], "the sdist lacks the catalogs"
    assert {"pyproject.toml", "README.md", "LICENSE"} <= snames


@pytest.mark.slow
def test_gpukit_comes_from_the_wheel_and_finds_its_data_inside_it(installed):
    r = _run(
        [
            str(installed["py"]),
            "-c",
            "import gpukit, gpukit.catalog as c; print(gpukit.__file__); print(c.data_dir())",
        ],
        cwd=installed["cwd"],
    )
    assert r.returncode == 0, r.stderr[-2000:]
    pkg_file, data = (Path(x) for x in r.stdout.split())
    assert installed["venv"] in pkg_file.parents, (
        f"gpukit imported from {pkg_file}, not from the installed wheel"
    )
    assert ROOT not in pkg_file.parents
    assert data == pkg_file.parent / "data" and (data / "models.csv").is_file()
    # GPUKIT_DATA still points elsewhere: an empty folder is named in the one-line error.
    empty = installed["cwd"] / "empty"
    empty.mkdir(exist_ok=True)
    r = _run([str(installed["gpukit"]), "gpus"], cwd=installed["cwd"], env=_env(GPUKIT_DATA=str(empty)))
    assert r.returncode == 2 and str(empty) in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]


@pytest.mark.slow
def test_the_light_install_has_no_torch(installed):
    if not installed["from_registry"]:
        pytest.skip(
            "the package registry was unreachable: dependencies were borrowed from the test's "
            "interpreter (which has torch), so a light install cannot be checked here"
        )
    for mod in ("torch", "matplotlib", "ipywidgets"):
        r = _run([str(installed["py"]), "-c", f"import {mod}"], cwd=installed["cwd"])
        assert r.returncode != 0, f"a plain `pip install gpukit` pulled {mod}"
    r = _run([str(installed["gpukit"]), "bench", "matmul"], cwd=installed["cwd"])
    assert r.returncode == 2 and "gpukit[bench]" in r.stderr and len(r.stderr.strip().splitlines()) == 1, (
        r.stderr
    )


@pytest.mark.slow
def test_the_readme_examples_run_from_the_installed_wheel(installed):
    """The README's command-line examples, as a user types them, from a folder outside the checkout."""
    gk, cwd = str(installed["gpukit"]), installed["cwd"]

    def ok(*args: str) -> str:
        r = _run([gk, *args], cwd=cwd)
        assert r.returncode == 0, f"gpukit {' '.join(args)} -> {r.returncode}: {r.stderr[-2000:]}"
        assert "Traceback" not in r.stderr
        return r.stdout

    assert "memory" in ok("--help") and ok("--version").strip().startswith("gpukit ")
    text = ok(
        "memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--micro-batch", "1", "--seq-len", "4096"
    )
    assert "h100-sxm" in text and "fit" in text
    mem = json.loads(
        ok(
            "memory",
            "--model",
            "llama-2-70b",
            "--zero",
            "3",
            "--dp",
            "16",
            "--recompute",
            "full",
            "--gpu",
            "a100-80gb",
            "--json",
        )
    )
    assert mem and isinstance(mem, dict)
    serve = json.loads(
        ok(
            "serve",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "2",
            "--precision",
            "fp8",
            "--rate",
            "5",
            "--price-per-gpu-hour",
            "3",
            "--json",
        )
    )
    assert serve and isinstance(serve, dict)
    assert "h100-sxm" in ok("gpus") and "ib-ndr" in ok("links")
    models = json.loads(ok("models", "--json"))
    names = {m["name"] for m in (models if isinstance(models, list) else models["rows"])}
    assert {"gpt2", "llama-2-7b", "llama-2-70b"} <= names
    cost = json.loads(
        ok(
            "cost",
            "train",
            "--model",
            "llama-2-7b",
            "--tokens",
            "100B",
            "--gpu",
            "h100-sxm",
            "--gpus",
            "8,64",
            "--zero",
            "3",
            "--json",
        )
    )
    assert cost and isinstance(cost, dict)
    assert "h100-sxm" in ok(
        "cost",
        "buy-vs-rent",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "32",
        "--purchase-usd",
        "1.35M",
        "--rent-per-gpu-hour",
        "12.29",
        "--utilization",
        "0.9",
    )
    plan = json.loads(
        ok(
            "plan",
            "--workload",
            "qlora",
            "--model",
            "llama-2-70b",
            "--tokens",
            "100M",
            "--deadline-hours",
            "24",
            "--budget-usd",
            "500",
            "--json",
        )
    )
    assert plan and isinstance(plan, dict)
    assert "TFLOP/s" in ok(
        "train-time",
        "--model",
        "llama-3-8b",
        "--tokens",
        "15T",
        "--gpu",
        "h100-sxm",
        "--gpus",
        "1024",
        "--mfu",
        "0.4",
    )
    assert "busbw" in ok(
        "comm",
        "--op",
        "all_reduce",
        "--bytes",
        "1GB",
        "--gpus",
        "64",
        "--gpus-per-node",
        "8",
        "--link",
        "nvlink4",
        "--inter-link",
        "ib-ndr",
    )
    # The generated claims file inside the wheel is in step with the installed audits.
    r = _run([str(installed["py"]), "-m", "gpukit.audits.export", "--check"], cwd=cwd)
    assert r.returncode == 0, r.stderr[-2000:]


# A sitecustomize-free blocker: the named top-level packages raise ModuleNotFoundError on import.
_BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    BLOCK = set(sys.argv[1].split(","))
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCK:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    sys.meta_path.insert(0, Block())
    from gpukit.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize(
    "args, rc, needle",
    [
        (["--help"], 0, "memory"),
        (["memory", "--model", "gpt2", "--gpu", "t4", "--micro-batch", "1", "--seq-len", "1024"], 0, "t4"),
        (["serve", "--model", "llama-2-7b", "--gpu", "l4", "--rate", "1", "--json"], 0, "{"),
        (["bench", "matmul"], 2, "pip install 'gpukit[bench]'"),
        (
            ["validate", "memory", "--layers", "2", "--hidden", "64", "--heads", "2", "--seq-len", "32"],
            2,
            "pip install 'gpukit[bench]'",
        ),
    ],
)
def test_light_commands_need_no_torch_and_heavy_ones_name_the_extra(tmp_path, args, rc, needle):
    env = _env(PYTHONPATH=str(ROOT))
    r = _run([sys.executable, "-c", _BLOCKER, ",".join(LIGHT_BLOCKED), *args], cwd=tmp_path, env=env)
    assert r.returncode == rc, r.stdout[-1500:] + r.stderr[-1500:]
    assert needle in (r.stdout if rc == 0 else r.stderr)
    if rc == 2:
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr


# ------------------------------------------------------------------ the README's own examples


def _readme_block(heading: str) -> list[str]:
    """The lines of the first ```bash block after `heading` in the README."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text[text.index(heading) :]
    block = after[after.index("```bash") + len("```bash") :]
    return block[: block.index("```")].strip().splitlines()


def _papermill_value(text: str):
    """papermill's reading of `-p NAME VALUE` (papermill.cli._resolve_type): bool, None, int, float, else str."""
    if text in ("True", "False"):
        return text == "True"
    if text == "None":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def test_readme_papermill_examples_pass_the_notebooks_own_parameter_check():
    """Each `papermill notebooks/X.ipynb ... -p NAME VALUE` line of the README, with the notebook's
    `parameters` cell, its overrides, then the validation cell after it (what stops a bad run)."""
    import nbformat

    from gpukit import catalog
    from gpukit.course import nbtools

    runs = [(line, shlex.split(line, comments=True)) for line in _readme_block("## Running headless")]
    runs = [(line, words) for line, words in runs if words and words[0].endswith("papermill")]
    assert runs, "the README's headless section lost its papermill example"
    for line, words in runs:
        nb_path = next(w for w in words if w.startswith("notebooks/") and w.endswith(".ipynb"))
        overrides = {words[i + 1]: _papermill_value(words[i + 2]) for i, w in enumerate(words) if w == "-p"}
        cells = nbformat.read(str(ROOT / nb_path), as_version=4).cells
        (i,) = [k for k, c in enumerate(cells) if "parameters" in c.metadata.get("tags", [])]
        ns = {"catalog": catalog, "nbtools": nbtools}
        exec(cells[i].source, ns)  # noqa: S102 - the notebook's own parameters cell
        unknown = set(overrides) - set(ns)
        assert not unknown, f"README: {line!r} sets parameters {nb_path} does not have: {sorted(unknown)}"
        ns.update(overrides)
        try:
            exec(cells[i + 1].source, ns)  # noqa: S102 - its validation cell
        except ValueError as e:
            pytest.fail(f"README: {line!r} stops in the notebook's parameter check: {e}")


_CLI_EXAMPLES = [x for x in _readme_block("## The command line") if x.startswith("gpukit ")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "line", _CLI_EXAMPLES, ids=[f"{i:02d}-" + "-".join(x.split()[1:3]) for i, x in enumerate(_CLI_EXAMPLES)]
)
def test_readme_command_line_examples_exit_0(tmp_path, line):
    """Every `gpukit ...` line of the README's command-line section, as written, from the checkout."""
    words = shlex.split(line, comments=True)
    env = _env(PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    r = _run([sys.executable, "-m", "gpukit", *words[1:]], cwd=tmp_path, env=env, timeout=300)
    assert r.returncode == 0, f"README: {line!r} -> exit {r.returncode}: {r.stderr[-1500:]}"


# ------------------------------------------------------------------ the package's metadata


def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def test_core_dependencies_are_light_and_extras_bring_the_rest():
    """A plain install gets what the calculators and the CLI import (simpy for `serve --rate`); torch,
    plotting and Jupyter come only with an extra; no exact pins (requirements.txt holds those)."""
    project = _pyproject()["project"]
    core, extras = project["dependencies"], project["optional-dependencies"]
    assert _names(core) >= {"numpy", "pandas", "simpy", "tqdm"}
    heavy = {
        "torch",
        "matplotlib",
        "seaborn",
        "ipywidgets",
        "jupyterlab",
        "papermill",
        "nbformat",
        "nbclient",
    }
    assert not _names(core) & heavy, f"core pulls {sorted(_names(core) & heavy)}"
    assert "torch" in _names(extras["bench"])
    assert _names(extras["course"]) >= {
        "jupyterlab",
        "ipywidgets",
        "matplotlib",
        "seaborn",
        "papermill",
        "nbformat",
        "nbclient",
    }
    assert not [r for r in core + sum(extras.values(), []) if "==" in r], (
        "exact pins belong in requirements.txt"
    )


def test_version_license_and_citation_agree():
    import yaml

    import gpukit

    project = _pyproject()["project"]
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert project["version"] == gpukit.__version__ == str(cff["version"])
    assert cff["cff-version"] == "1.2.0" and cff["title"] and cff["authors"] and cff["message"]
    assert project["license"] == cff["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert f"## [{gpukit.__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
