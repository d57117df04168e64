"""Faults: a benchmark killed midway, a rank that dies, a timeout, two runs at once, out of memory,
broken user files. Each leaves no process and no listening port behind and says what happened in one
stderr line with a non-zero exit code (gpukit/cli/bench.py: 2 bad input or timeout, 1 a failed
run, 130 SIGINT, death by SIGTERM after one line).

The benchmark runs are real (`python -m gpukit bench ...`, 2 gloo ranks on CPU, tiny sizes); a dying
rank and a GPU that is too small come from the test hook GPUKIT_FAULT (gpukit.bench.collectives_measure.
fault_hook). netlab's namespaces under SIGINT/SIGTERM are covered by tests/test_netlab.py
(test_signal_midway_leaves_no_namespaces_or_processes), so they are not repeated here.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import as_foreground_job, live_children, tcp_listeners

from gpukit.cli import main

pytestmark = pytest.mark.slow  # every test here spawns ranks and kills them (make test-quick skips them)

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
ENV = {**os.environ, "TQDM_DISABLE": "1"}
ENV.pop("GPUKIT_FAULT", None)
# long enough to be killed midway, short per call so a signal is handled promptly
LONG_SWEEP = [
    "--device",
    "cpu",
    "--sizes",
    "1M",
    "--iters",
    "10",
    "--repeats",
    "100000",
    "--no-bare-check",
    "--timeout",
    "120",
]


# ---------------------------------------------------------------- /proc helpers (no psutil)
def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def _session(sid: int) -> list[int]:
    """Live (not zombie) processes of session `sid` (Popen(start_new_session=True): sid = its pid)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and (st := _stat(int(d.name))) and int(st[3]) == sid and st[0] != "Z":
            out.append(int(d.name))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _ranks(sid: int) -> list[int]:
    return [p for p in _session(sid) if "multiprocessing.spawn" in _cmdline(p)]


def _listening() -> dict[int, int]:
    """{socket inode: port} of every TCP socket in LISTEN state on this machine."""
    return {inode: port for _, port, inode in tcp_listeners()}


def _listening_of(pids) -> dict[int, int]:
    """{inode: port} of the listening sockets these processes hold."""
    mine = set()
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                link = os.readlink(fd)
            except OSError:
                continue
            if link.startswith("socket:["):
                mine.add(int(link[8:-1]))
    return {i: port for i, port in _listening().items() if i in mine}


def _wait_running(p: subprocess.Popen, timeout_s: float = 90) -> dict[int, int]:
    """Wait until both ranks are up and listening (the process group exists), then a moment more;
    return the listening sockets of the whole run (launcher store + ranks)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert p.poll() is None, f"the run ended before it could be interrupted: {p.communicate()}"
        ranks = _ranks(p.pid)
        if len(ranks) == 2 and all(_listening_of([r]) for r in ranks):
            time.sleep(1.0)
            return _listening_of(_session(p.pid))
        time.sleep(0.2)
    raise AssertionError("the ranks never started")


def _assert_nothing_left(sid: int, sockets: dict[int, int] | None = None) -> None:
    """No process of the run's session and none of its listening sockets remain (a few seconds'
    grace: multiprocessing's resource tracker leaves after its parent)."""
    deadline = time.monotonic() + 10
    while _session(sid) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = {p: _cmdline(p)[:100] for p in _session(sid)}
    assert not left, f"processes left behind: {left}"
    if sockets:
        still = {i: port for i, port in _listening().items() if i in sockets}
        assert not still, f"listening ports left behind: {sorted(still.values())}"


_my_children = live_children


def _start(*args, env=None) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-m", "gpukit", "bench", *args],
        cwd=ROOT,
        env=env or ENV,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=as_foreground_job,
    )


def _finish(p: subprocess.Popen, timeout_s: float = 90) -> tuple[str, str]:
    try:
        return p.communicate(timeout=timeout_s)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _one_line(err: str) -> str:
    assert err.endswith("\n") and err.count("\n") == 1 and "Traceback" not in err, err
    return err.strip()


# ---------------------------------------------------------------- killed midway
def test_ctrl_c_midway_stops_every_rank():
    """Ctrl-C in a terminal signals the whole process group: the launcher stops the ranks (they ignore
    SIGINT themselves), prints 'interrupted' and exits 130."""
    p = _start("collectives", *LONG_SWEEP)
    try:
        sockets = _wait_running(p)
        assert sockets, "no listening socket seen (store, gloo)"
        os.killpg(p.pid, signal.SIGINT)
        _, err = _finish(p)
    finally:
        _finish(p, 1)
    assert p.returncode == 130 and _one_line(err) == "interrupted", (p.returncode, err)
    _assert_nothing_left(p.pid, sockets)


def test_sigterm_midway_ddp_stops_every_rank():
    """`kill PID` (SIGTERM) on the launcher of a DDP run: ranks stopped, one line, then death by SIGTERM."""
    p = _start(
        "ddp",
        "--device",
        "cpu",
        "--steps",
        "100000",
        "--warmup",
        "0",
        "--n-layers",
        "1",
        "--hidden",
        "32",
        "--n-heads",
        "2",
        "--micro-batch",
        "1",
        "--seq-len",
        "8",
        "--timeout",
        "120",
    )
    try:
        sockets = _wait_running(p)
        p.send_signal(signal.SIGTERM)
        _, err = _finish(p)
    finally:
        _finish(p, 1)
    assert p.returncode == -signal.SIGTERM, (p.returncode, err)
    assert _one_line(err) == "error: SIGTERM received: benchmark ranks stopped"
    _assert_nothing_left(p.pid, sockets)


def test_sigkill_of_the_launcher_takes_the_ranks_along():
    """Nothing can clean up after SIGKILL; the ranks die with their launcher (PR_SET_PDEATHSIG)."""
    p = _start("collectives", *LONG_SWEEP)
    try:
        sockets = _wait_running(p)
        p.kill()
        _finish(p)
    finally:
        _finish(p, 1)
    assert p.returncode == -signal.SIGKILL
    _assert_nothing_left(p.pid, sockets)


# ---------------------------------------------------------------- a rank dies, a run times out
def test_a_rank_that_dies_is_named_and_the_other_stopped():
    p = _start(
        "collectives",
        "--device",
        "cpu",
        "--sizes",
        "4K,64K",
        "--repeats",
        "5",
        "--no-bare-check",
        "--timeout",
        "60",
        env={**ENV, "GPUKIT_FAULT": "rank1_exit"},
    )
    _, err = _finish(p)
    assert p.returncode == 1, (p.returncode, err)
    assert _one_line(err) == "error: benchmark worker failed: rank 1 died with exit code 3"
    _assert_nothing_left(p.pid)


def test_ranks_native_stderr_goes_to_their_logs(tmp_path):
    """A fresh clone failed test_timeout_is_one_line_and_exit_2 because gloo's C++ logger printed four
    "failed to connect" lines to stderr before the one-line error: each rank's file descriptor 2 now
    goes to its log (GPUKIT_RANK_LOGS keeps them; by default a temporary directory, removed)."""
    logs = tmp_path / "ranks"
    fault = {**ENV, "GPUKIT_FAULT": "native_stderr,rank1_exit", "GPUKIT_RANK_LOGS": str(logs)}
    p = _start(
        *("collectives", "--device", "cpu", "--sizes", "4K", "--repeats", "3"), "--timeout", "60", env=fault
    )
    _, err = _finish(p)
    assert p.returncode == 1, (p.returncode, err)
    assert _one_line(err) == "error: benchmark worker failed: rank 1 died with exit code 3"
    for r in (0, 1):
        assert "simulated native log line" in (logs / f"rank{r}.log").read_text()
    _assert_nothing_left(p.pid)


@pytest.mark.parametrize(
    "argv",
    [
        # rank 1 arrives 60 s late (a slow data loader): rank 0's collective gives up after --timeout 2
        ["article", "--device", "cpu", "--skew-ms", "60000", "--timeout", "2"],
        # a tiny --timeout: the ranks cannot even join the process group in time (c10d's log stays quiet)
        ["collectives", "--device", "cpu", "--sizes", "4K", "--timeout", "0.001"],
    ],
)
def test_timeout_is_one_line_and_exit_2(argv):
    t0 = time.monotonic()
    p = _start(*argv)
    _, err = _finish(p)
    assert p.returncode == 2, (p.returncode, err)
    assert _one_line(err).startswith("error: benchmark timed out") and "raise --timeout" in err
    assert time.monotonic() - t0 < 50  # the 60 s sleeper was not waited for
    _assert_nothing_left(p.pid)


def test_two_runs_at_once_do_not_collide():
    """Each launcher's store binds port 0 and keeps it, so two runs started together both work."""
    runs = [
        _start(
            "collectives",
            "--device",
            "cpu",
            "--op",
            op,
            "--sizes",
            "4K,64K",
            "--repeats",
            "3",
            "--no-bare-check",
            "--timeout",
            "60",
            "--json",
        )
        for op in ("all_reduce", "all_gather")
    ]
    outs = [_finish(p) for p in runs]
    for p, (out, err) in zip(runs, outs, strict=True):
        assert p.returncode == 0, err
        rows = json.loads(out)["rows"]
        assert [r["size_bytes"] for r in rows] == [4096, 65536] and all(r["time_us"] > 0 for r in rows)
        _assert_nothing_left(p.pid)


# ---------------------------------------------------------------- out of memory
def test_collectives_out_of_memory_keeps_the_sizes_that_fit(capsys, monkeypatch):
    """A GPU too small for 1M (simulated in every rank by GPUKIT_FAULT=oom_above=64K): the sweep stops
    there, keeps 4K and 64K, and says which size failed; not even the first size: exit 2."""
    monkeypatch.setenv("GPUKIT_FAULT", "oom_above=64K")
    argv = ["bench", "collectives", "--device", "cpu", "--repeats", "3", "--no-bare-check", "--timeout", "60"]
    assert main([*argv, "--sizes", "4K,64K,1M,16M", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [r["size_bytes"] for r in d["rows"]] == [4096, 65536]
    assert d["summary"]["out_of_memory"].startswith("out of memory at size 1048576 bytes")
    assert main([*argv, "--sizes", "1M"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("error: out of memory at size 1048576 bytes")
    assert _my_children() == []


def _oom_above(limit_elems: int, real):
    """A stand-in for an allocator: raise CUDA's OutOfMemoryError above `limit_elems` elements."""
    import torch

    def alloc(*shape, **kw):
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        if dims and all(isinstance(d, int) for d in dims) and int(torch.Size(dims).numel()) > limit_elems:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB (simulated)")
        return real(*shape, **kw)

    return alloc


def test_matmul_out_of_memory_stops_the_sweep_there(capsys, monkeypatch):
    import torch

    from gpukit.bench import matmul

    monkeypatch.setattr(torch, "randn", _oom_above(48 * 48, torch.randn))
    res = matmul.matmul_bench(
        "cpu", ["fp32"], (16, 32, 64, 128), llm_shapes=False, repeats=3, min_repeat_s=0.002
    )
    assert [r["shape"] for r in res.rows] == ["square-16", "square-32"]
    assert res.summary["out_of_memory"].startswith("out of memory at size square-64 (fp32, 64x64 @ 64x64)")
    argv = ["bench", "matmul", "--device", "cpu", "--square-only", "--repeats", "3"]
    assert main([*argv, "--sizes", "16,64"]) == 0  # the row that fit, and the flag
    assert "# out_of_memory: out of memory at size square-64" in capsys.readouterr().out
    assert main([*argv, "--sizes", "64"]) == 2  # nothing fit: nothing to show
    assert _one_line(capsys.readouterr().err).startswith("error: out of memory at size square-64")


@pytest.mark.skipif(
    Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1",
    reason="with vm.overcommit_memory=1 a 400 TB allocation is not refused up front",
)
def test_real_allocation_failures_on_cpu(capsys):
    """No simulation: 10^7 x 10^7 fp32 (400 TB) and 10^9 MiB arrays are refused by the CPU allocator."""
    assert (
        main(
            [
                "bench",
                "matmul",
                "--device",
                "cpu",
                "--square-only",
                "--repeats",
                "3",
                "--sizes",
                "16,10000000",
                "--json",
            ]
        )
        == 0
    )
    d = json.loads(capsys.readouterr().out)
    assert [r["shape"] for r in d["rows"]] == ["square-16"]
    assert d["summary"]["out_of_memory"].startswith("out of memory at size square-10000000")
    assert main(["bench", "memory", "--device", "cpu", "--size-mib", "1e9"]) == 2
    assert _one_line(capsys.readouterr().err).startswith("error: out of memory at size 1e+09 MiB per array")


def test_memory_bandwidth_out_of_memory(capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch, "rand", _oom_above(1000, torch.rand))
    assert main(["bench", "memory", "--device", "cpu", "--size-mib", "0.003"]) == 0  # 786 floats fit
    capsys.readouterr()
    assert main(["bench", "memory", "--device", "cpu", "--size-mib", "1"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert err.startswith(
        "error: out of memory at size 1 MiB per array (3 arrays on cpu): CUDA out of memory"
    )


# ---------------------------------------------------------------- broken user files
def _data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "data"
    shutil.copytree(ROOT / "gpukit" / "data", d)
    return d


def _edit_line(path: Path, lineno: int, edit) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[lineno - 1] = edit(lines[lineno - 1])
    path.write_bytes(b"\n".join(lines))


def _first_row(path: Path) -> int:
    """Line number of the first data row (after '#' comments and the header)."""
    seen_header = False
    for i, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip() and not line.startswith("#"):
            if seen_header:
                return i
            seen_header = True
    raise AssertionError("no data row")


@pytest.mark.parametrize(
    "fault, expect",
    [
        ("fields", "fields, header has"),
        ("number", "'memory_gib' must be a number, got 'lots'"),
        ("utf8", "not UTF-8 text"),
        ("provenance", "empty 'source_url'"),
        ("negative", "'tdp_w' must be a finite number >= 0"),
    ],
)
def test_broken_gpu_catalog_names_file_and_line(tmp_path, monkeypatch, capsys, fault, expect):
    d = _data_dir(tmp_path)
    gpus_csv = d / "gpus.csv"
    lines = [x for x in gpus_csv.read_text().splitlines() if x.strip() and not x.startswith("#")]
    header = [c.strip() for c in next(csv.reader(lines[:1]))]
    row = _first_row(gpus_csv)

    def set_col(name, value):
        def edit(line: bytes) -> bytes:
            cells = next(csv.reader([line.decode()]))
            cells[header.index(name)] = value
            buf = io.StringIO()
            csv.writer(buf, lineterminator="").writerow(cells)
            return buf.getvalue().encode()

        return edit

    edit = {
        "fields": lambda b: b + b",extra,cells",
        "number": set_col("memory_gib", "lots"),
        "utf8": lambda b: b.replace(b",", b",\xe9", 1),
        "provenance": set_col("source_url", ""),
        "negative": set_col("tdp_w", "-300"),
    }[fault]
    _edit_line(gpus_csv, row, edit)
    monkeypatch.setenv("GPUKIT_DATA", str(d))
    for argv in (["gpus"], ["memory", "--model", "gpt2", "--gpu", "h100-sxm"]):
        assert main(argv) == 2
        err = _one_line(capsys.readouterr().err)
        assert f"{gpus_csv}:{row}:" in err and expect in err, err


@pytest.mark.parametrize("fault", ["missing", "directory", "header"])
def test_missing_or_headerless_catalog_is_named(tmp_path, monkeypatch, capsys, fault):
    d = _data_dir(tmp_path)
    gpus_csv = d / "gpus.csv"
    gpus_csv.unlink()
    if fault == "directory":
        gpus_csv.mkdir()
    elif fault == "header":
        gpus_csv.write_text("name,vendor\nx,y\n")
    monkeypatch.setenv("GPUKIT_DATA", str(d))
    assert main(["gpus", "--json"]) == 2
    err = _one_line(capsys.readouterr().err)
    assert str(gpus_csv) in err
    assert {"missing": "not found", "directory": "cannot read", "header": f"{gpus_csv}:1: missing column(s)"}[
        fault
    ] in err


PROFILE = {
    "version": 1,
    "device": {"name": "test"},
    "matmul_tflops": {"bf16": 100.0},
    "memory_bandwidth_gbps": {"triad": 1000.0},
    "links": {"nvlink4": {"alpha_us": 3.0, "beta_gbps": 300.0}},
    "env": {},
}


@pytest.mark.parametrize(
    "fault, expect",
    [
        ("json", ":3:19: not valid JSON (Expecting value at line 3 column 19)"),
        ("missing_key", ": missing key 'links'"),
        ("bad_value", ": matmul_tflops['bf16'] must be a finite number > 0, got 'fast'"),
        ("link_key", ": links['nvlink4'] is missing key 'beta_gbps'"),
        ("utf8", ": not valid JSON (not UTF-8 text"),
        ("nonexistent", " not found"),
        ("directory", " is not a file"),
    ],
)
def test_broken_profile_names_file_and_place(tmp_path, capsys, fault, expect):
    path = tmp_path / "profile.json"
    data = json.loads(json.dumps(PROFILE))
    if fault == "json":
        path.write_text('{"version": 1,\n "device": {"name": "x"},\n "matmul_tflops": ,\n}')
    elif fault == "utf8":
        path.write_bytes(b'{"version": 1, "device": {"name": "caf\xe9"}}')
    elif fault == "directory":
        path.mkdir()
    elif fault != "nonexistent":
        if fault == "missing_key":
            del data["links"]
        elif fault == "bad_value":
            data["matmul_tflops"]["bf16"] = "fast"
        else:
            del data["links"]["nvlink4"]["beta_gbps"]
        path.write_text(json.dumps(data, indent=1))
    for argv in (
        ["train-time", "--params", "7B", "--tokens", "1T", "--gpu", "h100-sxm", "--gpus", "8"],
        ["comm", "--op", "all_reduce", "--bytes", "1GB", "--ranks", "8", "--link", "nvlink4"],
    ):
        assert main([*argv, "--profile", str(path)]) == 2
        err = _one_line(capsys.readouterr().err)
        assert str(path) in err and expect in err, err
