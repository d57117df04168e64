"""Tests for gpukit.bench.netlab: rate parsing, the not-root path, and (as root) real namespaces on an
emulated link: up/down, concurrent labs, cleanup on failure/timeout/signals, and measured busbw
within 15% of the configured rate at 1gbit and 200mbit."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from helpers import as_foreground_job
from hypothesis import given
from hypothesis import strategies as st

from gpukit.bench import netlab
from gpukit.cli import main

REASON = netlab.check_available()


def needs_root(test):
    """Marked `netlab`; skipped with check_available()'s one line where netlab cannot run."""
    return pytest.mark.netlab(pytest.mark.skipif(REASON is not None, reason=REASON or "")(test))


PY = sys.executable


def _host_state() -> dict:
    """The host namespace's interfaces, addresses, routes and qdiscs (counters excluded)."""
    out = {}
    for key, argv in {
        "link": ["ip", "-o", "link", "show"],
        "addr": ["ip", "-o", "addr", "show"],
        "route": ["ip", "route", "show", "table", "all"],
        "qdisc": ["tc", "qdisc", "show"],
    }.items():
        out[key] = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    return out


def _my_namespaces(pid: int | None = None) -> list[str]:
    pid = os.getpid() if pid is None else pid
    return [ns for ns in netlab.list_namespaces() if ns.startswith(f"gk-{pid}-")]


@pytest.fixture
def host_untouched():
    """Every root test: host interfaces identical before/after, and none of our namespaces left."""
    before = _host_state()
    yield
    assert _my_namespaces() == []
    assert _host_state() == before


# ---------------------------------------------------------------- pure parts (no root needed)


@pytest.mark.parametrize(
    "text,bps",
    [
        ("1gbit", 10**9),
        ("200mbit", 2 * 10**8),
        ("500kbit", 5 * 10**5),
        ("2.5gbit", 25 * 10**8),
        (" 10GBIT ", 10**10),
        ("100000bit", 10**5),
    ],
)
def test_parse_rate(text, bps):
    assert netlab.parse_rate(text) == bps


@pytest.mark.parametrize(
    "text,match",
    [
        ("5mbps", "bytes/s"),
        ("fast", "unit"),
        ("1 gig", "unit"),
        ("50kbit", "between"),
        ("20gbit", "between"),
        ("", "unit"),
    ],
)
def test_parse_rate_errors_are_one_line(text, match):
    with pytest.raises(ValueError, match=match) as e:
        netlab.parse_rate(text)
    assert "\n" not in str(e.value)


@given(st.integers(min_value=100, max_value=10**7))
def test_fmt_rate_round_trips(kbit):
    bps = kbit * 1000
    assert netlab.parse_rate(netlab.fmt_rate(bps)) == bps


def test_rate_gbps_is_decimal_bytes():
    assert netlab.rate_gbps(10**9) == pytest.approx(0.125)
    assert netlab.rate_gbps(2 * 10**8) == pytest.approx(0.025)


@given(st.integers(min_value=netlab.MIN_RATE_BPS, max_value=netlab.MAX_RATE_BPS))
def test_burst_covers_one_tick(bps):
    b = netlab.tbf_burst_bytes(bps)
    assert b >= bps / 8 / 250 - 1 and b >= 32 * 1024


@given(st.integers(min_value=netlab.MIN_RATE_BPS, max_value=netlab.MAX_RATE_BPS))
def test_default_sizes_end_near_half_a_second(bps):
    sizes = netlab.default_sizes(bps)
    assert sizes == sorted(set(sizes))
    top = sizes[-1]
    assert top & (top - 1) == 0 and 2**16 <= top <= 2**26
    t = top / (bps / 8)
    assert 0.25 <= t <= 1.0 or top in (2**16, 2**26)


@pytest.mark.parametrize("nodes", [0, 1, 9, 2.5, "two"])
def test_nodes_validated(nodes):
    with pytest.raises(ValueError, match="nodes"):
        netlab.NetLab(nodes, "1gbit")


def test_not_root_says_so_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    why = netlab.check_available()
    assert why == "netlab needs root (uid 0) and iproute2's ip and tc; running as uid 1000"
    with pytest.raises(ValueError, match="needs root"):
        netlab.NetLab(2, "1gbit").up()
    for argv in (["netlab", "up"], ["netlab", "down"], ["netlab", "bench", "--rate", "200mbit"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "uid 1000" in err
    assert main(["netlab", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["available"] is False


def test_missing_tc_is_named(monkeypatch):
    real = netlab.namespaces.shutil.which
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        netlab.namespaces.shutil, "which", lambda t: None if t == "tc" else real(t) or "/x/ip"
    )
    assert netlab.check_available(probe=False).endswith("missing tc")


def test_cli_bad_input_exit_2(capsys):
    assert main(["netlab", "bench", "--rate", "1gig"]) == 2
    assert main(["netlab", "bench", "--nodes", "1"]) == 2
    assert main(["netlab", "bench", "--sizes", "1K,lots"]) == 2
    assert main(["netlab"]) == 2
    assert main(["netlab", "bench", "--op", "all_reduse"]) == 2
    errs = capsys.readouterr().err.strip().splitlines()
    assert len(errs) == 5 and all(e.startswith("error:") for e in errs)


def test_cli_sizes_parse(monkeypatch):
    from gpukit.units import parse_size, parse_sizes

    assert [parse_size(t) for t in "1K,64KiB,1M,16M,1024".split(",")] == [1024, 65536, 2**20, 2**24, 1024]
    # the one size parser: 1MB is 10^6 bytes in netlab too, as in every other command
    seen = {}
    monkeypatch.setattr(netlab, "bench", lambda **kw: seen.update(kw) or {"ok": True})
    assert main(["netlab", "bench", "--sizes", "1MB,1MiB,64K"]) == 0
    assert seen["sizes"] == [65536, 10**6, 2**20] == parse_sizes("1MB,1MiB,64K")


# ---------------------------------------------------------------- real namespaces (root)


@needs_root
def test_up_down_leaves_nothing(host_untouched):
    with netlab.NetLab(2, "1gbit") as lab:
        names = netlab.list_namespaces()
        assert set(lab.namespaces) <= set(names) and len(lab.namespaces) == 2
        qd = subprocess.run(
            ["tc", "-n", lab.node_ns(0), "qdisc", "show", "dev", "lab0"], capture_output=True, text=True
        ).stdout
        assert "tbf" in qd and "rate 1Gbit" in qd
        # Only the lab's own /24 is routable from a node: no path to the host's networks.
        routes = subprocess.run(["ip", "-n", lab.node_ns(1), "route"], capture_output=True, text=True).stdout
        lines = routes.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("10.213.0.0/24 dev lab0"), routes
    assert not set(lab.namespaces) & set(netlab.list_namespaces())


_TCP = (
    "import socket,sys,time\n"
    "if sys.argv[1]=='serve':\n"
    "  s=socket.socket(); s.bind(('0.0.0.0',5555)); s.listen(); c,_=s.accept(); n=0\n"
    "  while (b:=c.recv(65536)): n+=len(b)\n"
    "  print(n)\n"
    "else:\n"
    "  for _ in range(100):\n"
    "    try: c=socket.create_connection((sys.argv[2],5555),timeout=2); break\n"
    "    except OSError: time.sleep(0.05)\n"
    "  c.sendall(b'x'*int(sys.argv[3])); c.close(); print('sent')\n"
)


@needs_root
def test_switch_topology_carries_traffic(host_untouched):
    with netlab.NetLab(3, "100mbit") as lab:
        assert lab.topology == "switch" and len(lab.namespaces) == 4
        cmds = [
            [PY, "-c", _TCP, "send", lab.addr(2), "1000000"],
            [PY, "-c", "pass"],
            [PY, "-c", _TCP, "serve"],
        ]
        res = lab.run(cmds, timeout_s=60)
        assert [r.returncode for r in res] == [0, 0, 0], [r.stderr for r in res]
        assert res[2].stdout.strip() == "1000000"


@needs_root
def test_two_concurrent_labs_do_not_collide(host_untouched):
    with netlab.NetLab(2, "1gbit") as a, netlab.NetLab(2, "200mbit") as b:
        assert a.name != b.name and not set(a.namespaces) & set(b.namespaces)
        a.down()
        assert set(b.namespaces) <= set(netlab.list_namespaces())
        res = b.run([[PY, "-c", _TCP, "send", b.addr(1), "100000"], [PY, "-c", _TCP, "serve"]], timeout_s=60)
        assert res[1].stdout.strip() == "100000"


@needs_root
def test_name_clash_picks_a_new_name(host_untouched, monkeypatch):
    tokens = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(netlab.lab.secrets, "token_hex", lambda n: next(tokens))
    with netlab.NetLab(2, "1gbit") as a, netlab.NetLab(2, "1gbit") as b:
        assert a.name.endswith("-aaaa") and b.name.endswith("-bbbb")
        assert set(a.namespaces) <= set(netlab.list_namespaces())


@needs_root
def test_exception_inside_lab_cleans_up(host_untouched):
    with pytest.raises(ZeroDivisionError):
        with netlab.NetLab(2, "1gbit") as lab:
            1 / 0  # noqa: B018
    assert not set(lab.namespaces) & set(netlab.list_namespaces())


@needs_root
def test_delay_without_netem_fails_cleanly(host_untouched):
    try:
        with netlab.NetLab(2, "1gbit", delay_ms=2) as lab:
            qd = subprocess.run(["tc", "-n", lab.node_ns(0), "qdisc"], capture_output=True, text=True).stdout
            assert "netem" in qd  # this kernel has netem after all
    except ValueError as e:
        assert "netem" in str(e)


@needs_root
def test_timeout_and_failure_kill_every_node(host_untouched):
    with netlab.NetLab(2, "1gbit") as lab:
        t0 = time.monotonic()
        res = lab.run([["sleep", "30"], ["sleep", "30"]], timeout_s=1)
        assert all(r.timed_out and r.returncode is None for r in res)
        res = netlab.run_in_lab(
            lab, [["sleep", "30"], ["sh", "-c", "exit 3"]], timeout_s=60, fail_grace_s=0.5
        )
        assert res[1].returncode == 3 and res[0].timed_out
        assert time.monotonic() - t0 < 20
        assert all(netlab.ns_pids(ns) == [] for ns in lab.namespaces)


@needs_root
@pytest.mark.slow
def test_failed_worker_reports_its_error_line_and_cleans_up(host_untouched):
    with netlab.NetLab(2, "1gbit") as lab:
        with pytest.raises(RuntimeError, match="failed on node .*error: op must be one of"):
            lab.collectives("bogus", [1024], timeout_s=90)
        assert all(netlab.ns_pids(ns) == [] for ns in lab.namespaces)


@needs_root
def test_stale_lab_from_killed_process_is_removed(host_untouched):
    code = "from gpukit.bench import netlab; import time; netlab.NetLab(2,'1gbit').up(); print('up',flush=True); time.sleep(60)"
    p = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        p.kill()  # SIGKILL: no handler runs, the namespaces stay behind
        p.wait(10)
        stale = [lab for lab in netlab.list_labs() if lab.owner_pid == p.pid]
        assert len(stale) == 1 and stale[0].stale
        assert main(["netlab", "down", "--stale"]) == 0
        assert _my_namespaces(p.pid) == []
    finally:
        p.kill()
        netlab.down_labs(stale_only=True)


@needs_root
def test_persistent_lab_up_then_down_by_name(host_untouched, capsys):
    assert main(["netlab", "up", "--nodes", "2", "--rate", "200mbit", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    try:
        assert info["name"].startswith("gk-0-") and set(info["namespaces"]) <= set(netlab.list_namespaces())
        assert main(["netlab", "down", "--stale"]) == 0  # persistent labs are not stale
        assert set(info["namespaces"]) <= set(netlab.list_namespaces())
    finally:
        assert main(["netlab", "down", "--lab", info["name"], "--json"]) == 0
    assert not set(info["namespaces"]) & set(netlab.list_namespaces())


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_midway_leaves_no_namespaces_or_processes(host_untouched, sig):
    p = subprocess.Popen(
        [
            PY,
            "-m",
            "gpukit",
            "netlab",
            "bench",
            "--rate",
            "200mbit",
            "--sizes",
            "16M",
            "--repeats",
            "100",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_foreground_job,
    )
    try:
        deadline, pids = time.monotonic() + 60, []
        while time.monotonic() < deadline and len(pids) < 4:  # 2 torchruns + 2 workers in the lab
            time.sleep(0.3)
            pids = [q for ns in _my_namespaces(p.pid) for q in netlab.ns_pids(ns)]
        assert len(pids) >= 4, "bench never started its ranks"
        time.sleep(1.0)
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
        assert p.returncode == (-signal.SIGTERM if sig == signal.SIGTERM else 130), err
        assert _my_namespaces(p.pid) == []
        assert not [q for q in pids if netlab.pid_alive(q) and _is_not_zombie(q)]
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        netlab.down_labs(stale_only=True)


def _bench_process(tmp_path, *extra) -> subprocess.Popen:
    """`gpukit netlab bench` in a child whose system temp folder is tmp_path/tmp (empty at the start)."""
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    return subprocess.Popen(
        [PY, "-m", "gpukit", "netlab", "bench", "--rate", "200mbit", *extra, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )


def _wait_for_ranks(p: subprocess.Popen, n: int = 4, within_s: float = 90) -> list[int]:
    deadline, pids = time.monotonic() + within_s, []
    while time.monotonic() < deadline and len(pids) < n and p.poll() is None:  # 2 torchruns + 2 workers
        time.sleep(0.3)
        pids = [q for ns in _my_namespaces(p.pid) for q in netlab.ns_pids(ns)]
    assert len(pids) >= n, "bench never started its ranks"
    return pids


@needs_root
@pytest.mark.slow
def test_bench_leaves_nothing_in_the_temp_folder(host_untouched, tmp_path):
    # torchrun makes a torchelastic_* folder per agent in the system temp folder: the nodes get the
    # run's own temporary folder as TMPDIR, removed with it
    p = _bench_process(tmp_path, "--sizes", "1K", "--repeats", "1", "--warmup", "0")
    out, err = p.communicate(timeout=240)
    assert p.returncode == 0, err
    assert json.loads(out)["rows"]
    assert list((tmp_path / "tmp").iterdir()) == []


@contextlib.contextmanager
def _bench_running(tmp_path):
    """A long `netlab bench` with its ranks started: (process, pids in its lab); killed and its stale
    lab removed whatever happens."""
    p = _bench_process(tmp_path, "--sizes", "16M", "--repeats", "100")
    try:
        yield p, _wait_for_ranks(p)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        netlab.down_labs(stale_only=True)


def _alive(pids: list[int]) -> list[int]:
    return [q for q in pids if netlab.pid_alive(q) and _is_not_zombie(q)]


@needs_root
@pytest.mark.slow
def test_sigterm_says_so_and_leaves_no_temp_folders(host_untouched, tmp_path):
    with _bench_running(tmp_path) as (p, pids):
        time.sleep(1.0)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == -signal.SIGTERM, err
        assert err.strip().splitlines()[-1].startswith("error: SIGTERM received: netlab gk-"), err
        assert list((tmp_path / "tmp").iterdir()) == []
        assert _my_namespaces(p.pid) == [] and not _alive(pids)


@needs_root
@pytest.mark.slow
def test_after_sigkill_the_ranks_die_and_the_next_lab_names_and_removes_the_stale_one(
    host_untouched, tmp_path, capsys
):
    with _bench_running(tmp_path) as (p, pids):
        p.kill()  # SIGKILL: no handler runs
        p.wait(10)
        deadline = time.monotonic() + 30  # the node commands die with their owner (PR_SET_PDEATHSIG)
        while time.monotonic() < deadline and _alive(pids):
            time.sleep(0.2)
        assert not _alive(pids), [_describe(q) for q in _alive(pids)]
        stale = [lab for lab in netlab.list_labs() if lab.owner_pid == p.pid]
        assert len(stale) == 1 and stale[0].stale  # the namespaces stay until the next lab ...
        with netlab.NetLab(2, "1gbit"):
            pass
        err = capsys.readouterr().err
        assert f"removed stale lab {stale[0].name} (owner pid {p.pid} is gone)" in err  # ... which names it
        assert _my_namespaces(p.pid) == []


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f, open(f"/proc/{pid}/stat") as g:
            return f"{pid} [{g.read().rsplit(')', 1)[1].split()[:2]}] {f.read().replace(chr(0), ' ')[:100]}"
    except OSError:
        return f"{pid} gone"


def _is_not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@needs_root
@pytest.mark.slow
def test_bench_1gbit_within_15_percent(host_untouched):
    r = netlab.bench(nodes=2, rate="1gbit", op="all_reduce")
    print(r.to_text())
    assert r.configured_rate_gbps == pytest.approx(0.125)
    assert r.size_bytes == max(row["size_bytes"] for row in r.rows) >= 2**25
    assert 0.85 <= r.ratio <= 1.15, r.to_text()


@needs_root
@pytest.mark.slow
def test_bench_200mbit_cli_json_within_15_percent(host_untouched):
    p = subprocess.run(
        [
            PY,
            "-m",
            "gpukit",
            "netlab",
            "bench",
            "--nodes",
            "2",
            "--rate",
            "200mbit",
            "--op",
            "all_reduce",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    print(d["ratio"], d["busbw_gbps"])
    assert d["configured_rate_gbps"] == pytest.approx(0.025)
    assert d["busbw_gbps"] == pytest.approx(d["ratio"] * d["configured_rate_gbps"])
    assert 0.85 <= d["ratio"] <= 1.15, d["rows"]
    assert d["rows"] and d["env"] and d["lab"]["topology"] == "direct"
