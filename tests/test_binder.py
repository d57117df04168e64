"""Binder without Docker: build binder/'s environment the way repo2docker does and run the course in it.

repo2docker installs binder/requirements.txt into a Python of binder/runtime.txt, runs
binder/postBuild from the repository root, and wraps every command in binder/start. This file does
the same in a virtual environment, build/binder-venv (reused while binder/ is unchanged; a clean
clone, as in CI, always builds it fresh), then runs every notebook with papermill under
`taskset -c CPU binder/start` (one CPU, QUICK mode from the start script), through the course's headless
runner (`python -m gpukit.course.runbook`, what `make run` calls), while sampling the memory of
papermill and its kernel. The runs go side by side, one per CPU of this machine (a pod per CPU, none
sharing one), so two cores take half the time of one. Each notebook must pass, stay under a
mybinder.org pod's 2 GB, and leave what a headless run must (`check_executed`: no error output,
every cell run, a figure, well-formed records). This is the suite's one headless papermill run of each notebook: the same pins as the
development venv (test_binder_pins_match_requirements), on the tighter machine; tests/test_browser.py
runs each one again in JupyterLab from the development venv.

The PyTorch CPU index that binder/requirements.txt names cannot be reached from these machines: the
build drops that index line and takes torch==<same version>+cpu from wherever pip finds it here
(a local wheel), and says so in its output (a UserWarning in the pytest summary).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import nbformat
import pytest
from browser_helpers import kill_tree, process_tree, rss_bytes
from helpers import side_by_side

from gpukit.course.nbtools import count_figures, read_records
from gpukit.course.runbook import error_outputs

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
VENV = ROOT / "build" / "binder-venv"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
POD_MEMORY_BYTES = 2 * 10**9  # mybinder.org: at most 2 GB per pod (decimal, the stricter reading)
CELL_TIMEOUT_S = 300
NOTEBOOK_TIMEOUT_S = 420
SAMPLE_S = 0.1
RECIPE = "v1"  # bump when the build steps below change, so a cached venv is rebuilt
CPU_INDEX = "download.pytorch.org"
REPORT = ROOT / "artifacts" / "binder_memory.json"


# ------------------------------------------------------------------ the files themselves


def _pins(path: Path) -> dict[str, str]:
    """name -> exact version of every `name==version` line (comments, options and -r lines skipped)."""
    pins = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*==\s*([^\s;]+)", line)
        if m:
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
        elif line and not line.startswith(("-", "--")):
            raise AssertionError(f"{path.name}: not an exact pin: {raw!r}")
    return pins


def test_binder_pins_match_requirements():
    """binder/requirements.txt pins exactly what requirements.txt pins; only torch adds the +cpu label."""
    root, binder = _pins(ROOT / "requirements.txt"), _pins(BINDER / "requirements.txt")
    assert sorted(binder) == sorted(root), (
        f"only in binder: {sorted(set(binder) - set(root))}, only in requirements.txt: "
        f"{sorted(set(root) - set(binder))}"
    )
    drift = {n: (root[n], binder[n]) for n in root if n != "torch" and root[n] != binder[n]}
    assert drift == {}, f"binder pins drifted from requirements.txt (requirements, binder): {drift}"
    assert binder["torch"] == root["torch"] + "+cpu", f"binder torch {binder['torch']} vs {root['torch']}"
    assert f"--extra-index-url https://{CPU_INDEX}/whl/cpu" in (BINDER / "requirements.txt").read_text()


def test_binder_files_are_what_repo2docker_expects():
    assert (BINDER / "runtime.txt").read_text().strip() == "python-3.11"
    for name in ("postBuild", "start"):
        path = BINDER / name
        assert os.access(path, os.X_OK), f"binder/{name} must be executable"
        assert path.read_text().startswith("#!/bin/bash\n"), f"binder/{name} needs a bash shebang"
    assert re.search(r"^set -e", (BINDER / "postBuild").read_text(), re.M), "postBuild needs set -e"
    last = [ln for ln in (BINDER / "start").read_text().splitlines() if ln.strip()][-1]
    assert last.strip() == 'exec "$@"', 'binder/start must end with exec "$@"'


def test_start_script_sets_quick_mode_and_passes_the_command_through():
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GPUKIT_QUICK", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
    }
    code = (
        "import os, sys; from gpukit.course import nbtools; "
        "print(nbtools.quick(), os.environ['OMP_NUM_THREADS'], sys.argv[1:]); sys.exit(3)"
    )
    out = subprocess.run(
        [str(BINDER / "start"), sys.executable, "-c", code, "a b", "c"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode == 3, out.stderr  # exec: the command's own exit status comes back
    assert out.stdout.strip() == "True 1 ['a b', 'c']"


# ------------------------------------------------------------------ the environment, built


def _build_key() -> str:
    h = hashlib.sha256(RECIPE.encode())
    for name in ("requirements.txt", "postBuild", "runtime.txt"):
        h.update((BINDER / name).read_bytes())
    return h.hexdigest()[:16]


def _runtime_python() -> str:
    """An interpreter of binder/runtime.txt's version (python-3.11 -> python3.11 or this one)."""
    version = (BINDER / "runtime.txt").read_text().strip().removeprefix("python-")
    if ".".join(map(str, sys.version_info[:2])) == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if not found:
        pytest.fail(f"binder/runtime.txt asks for Python {version}; no python{version} here", pytrace=False)
    return found


def _local_requirements(dest: Path) -> str:
    """binder/requirements.txt without the unreachable PyTorch CPU index line; returns a note."""
    kept, dropped = [], []
    for line in (BINDER / "requirements.txt").read_text().splitlines():
        (dropped if CPU_INDEX in line else kept).append(line)
    dest.write_text("\n".join(kept) + "\n")
    return (
        f"binder test: the PyTorch CPU index is unreachable from this machine; dropped "
        f"{dropped} and installed binder's torch pin from what pip finds here"
    )


def _run(cmd, **kw) -> None:
    out = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if out.returncode:
        pytest.fail(
            f"{' '.join(map(str, cmd))} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}",
            pytrace=False,
        )


def _venv_env(venv: Path) -> dict:
    """What the pod's processes see: the Binder env first on PATH, nothing from the test's own venv."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "VIRTUAL_ENV",
            "PYTHONPATH",
            "PYTHONHOME",
            "MPLBACKEND",
            "TQDM_DISABLE",
            "GPUKIT_QUICK",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "NUMEXPR_MAX_THREADS",
        )
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.fixture(scope="module")
def binder_venv() -> Path:
    """build/binder-venv built from binder/ (requirements, then postBuild from the repository root)."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    key, stamp = _build_key(), VENV / ".binder-build-key"
    with open(VENV.parent / "binder-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two pytest runs must not build it at the same time
        t0 = time.monotonic()
        note = _local_requirements(VENV.parent / "binder-requirements.local.txt")
        if stamp.exists() and stamp.read_text() == key:
            built = "reused (binder/ unchanged)"
        else:
            shutil.rmtree(VENV, ignore_errors=True)
            _run([_runtime_python(), "-m", "venv", str(VENV)], timeout=300)
            py = VENV / "bin" / "python"
            _run(
                [
                    str(py),
                    "-m",
                    "pip",
                    "install",
                    "-q",
                    "--disable-pip-version-check",
                    "-r",
                    str(VENV.parent / "binder-requirements.local.txt"),
                ],
                timeout=900,
            )
            _run(["bash", str(BINDER / "postBuild")], cwd=ROOT, env=_venv_env(VENV), timeout=600)
            stamp.write_text(key)
            built = f"built in {time.monotonic() - t0:.0f} s"
    torch_version = subprocess.run(
        [str(VENV / "bin" / "python"), "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
        env=_venv_env(VENV),
    ).stdout.strip()
    msg = f"{note} (torch {torch_version}); build/binder-venv {built}"
    print(f"\n{msg}")
    warnings.warn(msg, UserWarning, stacklevel=1)
    return VENV


@pytest.mark.slow
@pytest.mark.timeout(900)  # may build the environment
def test_binder_env_is_cpu_only_and_complete(binder_venv):
    """The pins resolved as written, torch is the CPU build (no CUDA wheels), the kernel is this env's."""
    py = binder_venv / "bin" / "python"
    code = (
        "import importlib.metadata as md, json, torch, gpukit\n"
        "from jupyter_client import KernelManager\n"
        "dists = {d.metadata['Name'].lower().replace('_', '-'): d.version for d in md.distributions()}\n"
        "print(json.dumps({'dists': dists, 'cuda': torch.version.cuda, 'gpukit': gpukit.__file__,\n"
        "  'kernel': KernelManager(kernel_name='python3').format_kernel_cmd()[0]}))"
    )
    out = subprocess.run(
        [str(py), "-c", code], capture_output=True, text=True, timeout=120, env=_venv_env(binder_venv)
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    pins = _pins(BINDER / "requirements.txt")
    wrong = {n: (v, info["dists"].get(n)) for n, v in pins.items() if info["dists"].get(n) != v}
    assert wrong == {}, f"installed versions differ from binder pins (pin, installed): {wrong}"
    assert info["cuda"] is None, f"torch in the Binder env is a CUDA build ({info['cuda']})"
    assert not [n for n in info["dists"] if n.startswith("nvidia-")], "CUDA wheels in the Binder env"
    assert Path(info["gpukit"]).resolve().is_relative_to(ROOT), "postBuild did not install this gpukit"
    assert Path(info["kernel"]).parent == (binder_venv / "bin"), f"kernel python3 runs {info['kernel']}"


# ------------------------------------------------------------------ every notebook, pod-sized


def _run_measured(cmd: list[str], *, env: dict, cwd: Path, timeout_s: float) -> dict:
    """Run cmd; sample summed RSS of its process tree every SAMPLE_S; also the rusage max RSS."""
    proc = subprocess.Popen(
        cmd,
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    peak = {"tree_bytes": 0, "largest_process_bytes": 0, "n_processes": 0}
    done = threading.Event()
    chunks: list[bytes] = []

    def sample():
        while not done.is_set():
            pids = process_tree(proc.pid)
            sizes = [rss_bytes(p) for p in pids]
            peak["tree_bytes"] = max(peak["tree_bytes"], sum(sizes))
            peak["largest_process_bytes"] = max(peak["largest_process_bytes"], max(sizes, default=0))
            peak["n_processes"] = max(peak["n_processes"], len(pids))
            done.wait(SAMPLE_S)

    def drain():
        for chunk in iter(lambda: proc.stdout.read(65536), b""):
            chunks.append(chunk)

    threads = [threading.Thread(target=sample, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    timed_out = threading.Event()
    killer = threading.Timer(timeout_s, lambda: (timed_out.set(), kill_tree(proc.pid)))
    killer.start()
    t0 = time.monotonic()
    try:
        # wait4, not wait(): its rusage holds the largest max RSS among the waited-for descendants
        # (papermill and the kernel it reaps), which catches peaks between two samples.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        killer.cancel()
        done.set()
        kill_tree(proc.pid)  # anything the kernel left behind
        for t in threads:
            t.join(timeout=10)
    return {
        **peak,
        "rusage_max_rss_bytes": usage.ru_maxrss * 1024,
        "seconds": time.monotonic() - t0,
        "returncode": proc.returncode,
        "timed_out": timed_out.is_set(),
        "output": b"".join(chunks).decode(errors="replace"),
    }


def _pod_cpus() -> list[str]:
    """The CPUs this process may use: each concurrent notebook run gets one of them to itself."""
    return [str(c) for c in sorted(os.sched_getaffinity(0))]


def _run_in_pod(nb: Path, venv: Path, out_dir: Path, cpus: queue.Queue) -> dict:
    """One notebook through `make run`'s runner (papermill, QUICK from binder/start's GPUKIT_QUICK,
    records, the inline backend) under `taskset -c CPU binder/start`, on a CPU no other run holds."""
    cpu = cpus.get()
    try:
        cmd = [
            "taskset",
            "-c",
            cpu,
            str(BINDER / "start"),
            str(venv / "bin" / "python"),
            "-m",
            "gpukit.course.runbook",
            "--only",
            nb.stem,
            "--notebooks",
            str(nb.parent),
            "--out",
            str(out_dir),
            "--timeout",
            str(CELL_TIMEOUT_S),
        ]
        res = _run_measured(cmd, env=_venv_env(venv), cwd=ROOT, timeout_s=NOTEBOOK_TIMEOUT_S)
        return {**res, "cpu": cpu, "out_dir": out_dir}
    finally:
        cpus.put(cpu)


@pytest.fixture(scope="module")
def pod_runs(request, binder_venv, tmp_path_factory):
    """Every selected notebook's pod run, started at once on a pool of one worker per CPU of this
    machine (each run pinned to its own CPU, as each Binder pod has one): notebook -> Future of
    _run_in_pod's result. The runs are independent processes on separate CPUs, so a 2-core CI machine
    runs two pods side by side instead of one after the other."""
    if not shutil.which("taskset"):
        pytest.fail("taskset (util-linux) is needed to run on one CPU", pytrace=False)
    cpus = _pod_cpus()
    free: queue.Queue = queue.Queue()
    for c in cpus:
        free.put(c)
    with side_by_side(
        request,
        test_notebook_runs_in_a_binder_pod,
        "nb",
        lambda nb: _run_in_pod(nb, binder_venv, tmp_path_factory.mktemp(nb.stem), free),
        workers=len(cpus),
    ) as runs:
        yield runs


@pytest.mark.slow
@pytest.mark.timeout(NOTEBOOK_TIMEOUT_S * len(NOTEBOOKS) + 900)  # waits for the runs queued before it
@pytest.mark.parametrize("nb", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_in_a_binder_pod(nb, pod_runs):
    res = pod_runs[nb].result()
    out_nb, records = res["out_dir"] / nb.name, res["out_dir"] / "records.json"
    peak = max(res["tree_bytes"], res["rusage_max_rss_bytes"])
    line = {
        "notebook": nb.stem,
        "seconds": round(res["seconds"], 1),
        "peak_tree_rss_mb": round(res["tree_bytes"] / 1e6),
        "largest_process_rss_mb": round(max(res["largest_process_bytes"], res["rusage_max_rss_bytes"]) / 1e6),
        "processes": res["n_processes"],
        "returncode": res["returncode"],
    }
    print(f"\nbinder pod run (CPU {res['cpu']} of {len(_pod_cpus())}, binder/start): {json.dumps(line)}")
    _append_report(line)
    assert not res["timed_out"], f"{nb.name} ran past {NOTEBOOK_TIMEOUT_S} s under one CPU"
    assert res["returncode"] == 0, f"{nb.name} failed in the Binder env:\n{res['output'][-4000:]}"
    assert peak < POD_MEMORY_BYTES, f"{nb.name} peaked at {peak / 1e9:.2f} GB, over the pod's 2 GB"
    text = out_nb.read_text()
    assert "QUICK=False" not in text, f"{nb.name} ran in full mode: binder/start should turn QUICK on"
    check_executed(out_nb, records)


def check_executed(out_nb: Path, records: Path) -> None:
    """What a headless run must leave: no error output, every code cell executed, at least one figure
    (image/png) outside the widgets, and well-formed records (notebook, name, value, unit)."""
    name = out_nb.name
    assert error_outputs(out_nb) == [], f"{name}: error outputs in the executed notebook"
    executed = nbformat.read(out_nb, as_version=4)
    assert all(
        c.execution_count is not None for c in executed.cells if c.cell_type == "code" and c.source.strip()
    )
    assert count_figures(executed) >= 1, f"{name}: the executed notebook holds no figure (image/png output)"
    for rec in read_records(records):
        assert rec["notebook"] == out_nb.stem and rec["name"] and rec["unit"], rec
        assert isinstance(rec["value"], (int, float)), rec


def _append_report(line: dict) -> None:
    """artifacts/binder_memory.json: one row per notebook run, the latest run of each kept."""
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    rows = json.loads(REPORT.read_text()) if REPORT.exists() else []
    rows = [r for r in rows if r.get("notebook") != line["notebook"]] + [line]
    REPORT.write_text(json.dumps(sorted(rows, key=lambda r: r["notebook"]), indent=1) + "\n")
