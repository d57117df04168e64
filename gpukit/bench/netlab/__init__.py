"""Emulated cluster network: Linux network namespaces joined by veth pairs behind a tbf rate limit.

`NetLab(nodes=2, rate="1gbit")` creates one network namespace per node (and, for 3+ nodes, a
"switch" namespace holding a bridge), gives node i the address 10.213.0.(i+1)/24 on interface
`lab0`, and shapes every link direction with `tc qdisc ... tbf rate R` so that "two nodes over
1 Gb Ethernet" can be measured on one machine: one torchrun per namespace, static rendezvous
(REFERENCE.md section 4: the c10d rendezvous times out in namespaces without name resolution).

Safety: every `ip`/`tc` call names a namespace this module created (`ip -n NS`, `tc -n NS`,
`ip netns exec NS`); nothing is created in, or changed on, the host's own namespace. Names are
`gk-<owner pid>-<4 hex>-<n0|n1|..|sw>`, unique per lab, so concurrent labs never collide (their
identical addresses live in separate namespaces). Cleanup runs on every exit path: `with` block
exit, exceptions, SIGINT/SIGTERM (handler cleans up, then re-raises), and `gpukit netlab down`
for what a SIGKILL left behind (`--stale`: labs whose owner process is gone).

Needs root and iproute2 (`ip`, `tc`); `check_available()` says in one line why not.
Delay (netem) is added only where the kernel has sch_netem; these kernels do not.
Used in: gpukit/commands/netlab.py (`gpukit netlab up|down|status|bench`), tests/test_netlab.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpukit.errors import require_positive, require_positive_int
from gpukit.units import GB

PREFIX = "gk-"
IFNAME = "lab0"  # the node's interface inside its namespace (same name in every node namespace)
SUBNET = "10.213.0"  # private /24, used only inside namespaces this module creates
MASTER_PORT = 29500  # each namespace has its own port space, so a fixed port cannot collide
MIN_NODES, MAX_NODES = 2, 8
MIN_RATE_BPS, MAX_RATE_BPS = 100_000, 10_000_000_000  # 100kbit .. 10gbit
# tc(8) rate units are decimal: kbit = 1000 bit/s (tc's "kbps"/"mbps" mean BYTES per second).
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}
_NS_RE = re.compile(r"^(gk-(\d+)-([0-9a-f]{4}))-(n\d+|sw|probe)$")
_CMD_TIMEOUT_S = 20  # one ip/tc call; these return in milliseconds unless the system is wedged

_probe_cache: dict[str, str | None] = {}


# ---------------------------------------------------------------- parsing and checks

def parse_rate(text) -> int:
    """Parse a tc-style rate ('1gbit', '200mbit', '500kbit') into bits/s (decimal units, tc(8))."""
    s = str(text).strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([a-z]*)", s)
    unit = m.group(2) if m else ""
    if m and unit in ("bps", "kbps", "mbps", "gbps", "tbps"):
        raise ValueError(f"rate {text!r}: tc's '{unit}' means bytes/s; write bits, e.g. '1gbit' or '200mbit'")
    if not m or unit not in _RATE_UNITS:
        raise ValueError(f"rate must be a number with unit bit|kbit|mbit|gbit (e.g. '1gbit', '200mbit'), got {text!r}")
    bps = int(round(float(m.group(1)) * _RATE_UNITS[unit]))
    if not MIN_RATE_BPS <= bps <= MAX_RATE_BPS:
        raise ValueError(f"rate must be between 100kbit and 10gbit, got {text!r}")
    return bps


def fmt_rate(bps: int) -> str:
    """bits/s as the shortest exact tc string: 1_000_000_000 -> '1gbit', 2.5e8 -> '250mbit'."""
    for unit in ("gbit", "mbit", "kbit"):
        if bps % _RATE_UNITS[unit] == 0:
            return f"{bps // _RATE_UNITS[unit]}{unit}"
    return f"{bps}bit"


def rate_gbps(bps: float) -> float:
    """Link rate in bits/s -> decimal GB/s (bytes), the unit busbw is reported in (nccl-tests)."""
    return bps / 8 / GB


def validate_nodes(nodes) -> int:
    n = require_positive_int("nodes", nodes)
    if not MIN_NODES <= n <= MAX_NODES:
        raise ValueError(f"nodes must be between {MIN_NODES} and {MAX_NODES}, got {n}")
    return n


def tbf_burst_bytes(rate_bps: int, hz: int = 250) -> int:
    """Token-bucket depth for tbf: one timer tick of traffic, at least 32 KiB.

    tc-tbf(8): "burst ... must be at least rate / HZ" or the bucket cannot refill fast enough to
    reach the rate (HZ = 250 on these kernels, CONFIG_HZ); 32 KiB keeps a few full-size frames
    in the bucket at low rates. A larger bucket lets each idle-then-busy op start with up to this
    many bytes at wire speed: 500 KB at 1gbit, under 1% of the 64 MiB the bench moves per op.
    """
    return max(rate_bps // 8 // hz, 32 * 1024)


def check_available(probe: bool = True) -> str | None:
    """None if netlab can run here, else one line saying why (root, ip, tc, namespaces)."""
    uid = os.geteuid()
    missing = [t for t in ("ip", "tc") if shutil.which(t) is None]
    if uid != 0 or missing:
        why = f"running as uid {uid}" + (f", missing {' and '.join(missing)}" if missing else "")
        return f"netlab needs root (uid 0) and iproute2's ip and tc; {why}"
    if probe:
        if "ns" not in _probe_cache:
            _probe_cache["ns"] = _probe_namespaces()
        return _probe_cache["ns"]
    return None


def require_available(probe: bool = True) -> None:
    """Raise ValueError with check_available()'s line when netlab cannot run."""
    why = check_available(probe)
    if why:
        raise ValueError(why)


def _probe_namespaces() -> str | None:
    # Root in an unprivileged container has uid 0 but cannot add namespaces: try one, then remove it.
    ns = f"{PREFIX}{os.getpid()}-{secrets.token_hex(2)}-probe"
    r = _sh(["ip", "netns", "add", ns], check=False)
    _sh(["ip", "netns", "del", ns], check=False)
    if r.returncode != 0:
        return f"netlab cannot create network namespaces here: {_first_line(r.stderr)}"
    return None


# ---------------------------------------------------------------- low-level helpers

def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


def _sh(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=_CMD_TIMEOUT_S)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed: {_first_line(r.stderr)}")
    return r


def list_namespaces() -> list[str]:
    """Names of all network namespaces known to `ip netns` (host-wide, read-only)."""
    r = _sh(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]


def _ns_pids(ns: str) -> list[int]:
    r = _sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in r.stdout.split() if x.isdigit() and int(x) != os.getpid()]


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_pids(pids: list[int], grace_s: float = 3.0) -> None:
    """SIGTERM, wait up to grace_s, then SIGKILL whatever is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + grace_s
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _pid_alive(p)]
            time.sleep(0.05)
        if not pids:
            return


def destroy_namespaces(names: list[str]) -> list[str]:
    """Kill every process inside each namespace, then delete it (veths and bridges go with it)."""
    pids = sorted({p for ns in names for p in _ns_pids(ns)})
    _kill_pids(pids)
    gone = []
    for ns in names:
        r = _sh(["ip", "netns", "del", ns], check=False)
        if r.returncode == 0 or "No such file" in r.stderr:
            gone.append(ns)
    return gone


# ---------------------------------------------------------------- the lab

@dataclass(frozen=True)
class LabStatus:
    """One lab found on this host: its name, owner process (0 = made by `netlab up`), namespaces.

    Stale = the owner pid is gone (kill(pid, 0)); a recycled pid makes a stale lab look alive.
    """

    name: str
    owner_pid: int
    owner_alive: bool
    namespaces: tuple[str, ...]

    @property
    def stale(self) -> bool:
        return self.owner_pid != 0 and not self.owner_alive


def list_labs() -> list[LabStatus]:
    """All gpukit labs on this host (grouped from `ip netns list` by name)."""
    groups: dict[str, list[str]] = {}
    for ns in list_namespaces():
        m = _NS_RE.match(ns)
        if m:
            groups.setdefault(m.group(1), []).append(ns)
    out = []
    for name, nss in sorted(groups.items()):
        pid = int(name.split("-")[1])
        out.append(LabStatus(name, pid, _pid_alive(pid), tuple(sorted(nss))))
    return out


def down_labs(name: str | None = None, stale_only: bool = False) -> list[str]:
    """Remove gpukit labs: all of them, the one called `name`, or only stale ones. Returns namespaces removed."""
    labs = list_labs()
    if name is not None:
        labs = [lab for lab in labs if lab.name == name]
    if stale_only:
        labs = [lab for lab in labs if lab.stale]
    return destroy_namespaces([ns for lab in labs for ns in lab.namespaces])


class NetLab:
    """N network namespaces on an emulated Ethernet of `rate` per link direction (context manager).

    nodes: 2..8. rate: tc string ('1gbit') or bits/s. delay_ms: one-way delay via netem, only if the
    kernel has it (else ValueError). persistent=True names the lab with owner 0 so that
    `netlab down --stale` leaves it alone (used by `gpukit netlab up`, which exits at once).
    Topology: 2 nodes -> one veth pair; 3+ -> a veth from each node into a bridge in a switch
    namespace; tbf on both ends of every veth, so each node's link is `rate` in each direction.
    """

    def __init__(self, nodes: int = 2, rate="1gbit", delay_ms: float = 0.0, persistent: bool = False,
                 handle_signals: bool = True):
        self.nodes = validate_nodes(nodes)
        self.rate_bps = rate if isinstance(rate, int) and not isinstance(rate, bool) else parse_rate(rate)
        if not MIN_RATE_BPS <= self.rate_bps <= MAX_RATE_BPS:
            raise ValueError(f"rate must be between 100kbit and 10gbit, got {self.rate_bps} bit/s")
        self.delay_ms = require_positive("delay_ms", delay_ms, allow_zero=True)
        self.name = f"{PREFIX}{0 if persistent else os.getpid()}-{secrets.token_hex(2)}"
        self.topology = "direct" if self.nodes == 2 else "switch"
        self.burst_bytes = tbf_burst_bytes(self.rate_bps)
        self.handle_signals = handle_signals
        self._procs: list[subprocess.Popen] = []
        self._prev_handlers: dict[int, object] = {}
        self.is_up = False

    # names and addresses
    def node_ns(self, i: int) -> str:
        return f"{self.name}-n{i}"

    @property
    def switch_ns(self) -> str:
        return f"{self.name}-sw"

    @property
    def namespaces(self) -> list[str]:
        extra = [self.switch_ns] if self.topology == "switch" else []
        return [self.node_ns(i) for i in range(self.nodes)] + extra

    def addr(self, i: int) -> str:
        return f"{SUBNET}.{i + 1}"

    @property
    def configured_rate_gbps(self) -> float:
        return rate_gbps(self.rate_bps)

    def exec_argv(self, i: int, argv: list[str]) -> list[str]:
        """argv run inside node i's namespace."""
        return ["ip", "netns", "exec", self.node_ns(i), *argv]

    def info(self) -> dict:
        return {
            "name": self.name, "nodes": self.nodes, "topology": self.topology,
            "rate": fmt_rate(self.rate_bps), "rate_bps": self.rate_bps,
            "configured_rate_gbps": self.configured_rate_gbps, "tbf_burst_bytes": self.burst_bytes,
            "delay_ms": self.delay_ms, "interface": IFNAME,
            "namespaces": self.namespaces, "addresses": [self.addr(i) for i in range(self.nodes)],
        }

    # lifecycle
    def __enter__(self) -> NetLab:
        self._install_signal_handlers()
        try:
            self.up()
        except BaseException:
            self._restore_signal_handlers()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.down()
        finally:
            self._restore_signal_handlers()

    def up(self) -> NetLab:
        """Create the namespaces, links, addresses and rate limits; on any failure remove them all."""
        require_available()
        existing = list_namespaces()
        while any(ns.startswith(self.name + "-") for ns in existing):  # token clash: cleanup is by name
            self.name = f"{self.name.rsplit('-', 1)[0]}-{secrets.token_hex(2)}"
        try:
            self._build()
        except BaseException:
            self.down()
            raise
        self.is_up = True
        return self

    def _build(self) -> None:
        for ns in self.namespaces:
            _sh(["ip", "netns", "add", ns])
            _sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        if self.topology == "direct":
            a, b = self.node_ns(0), self.node_ns(1)
            # Both ends are created inside our namespaces: the host namespace never sees them.
            _sh(["ip", "-n", a, "link", "add", IFNAME, "type", "veth", "peer", "name", IFNAME, "netns", b])
            shaped = [(a, IFNAME), (b, IFNAME)]
        else:
            sw = self.switch_ns
            _sh(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
            _sh(["ip", "-n", sw, "link", "set", "br0", "up"])
            shaped = []
            for i in range(self.nodes):
                ns, port = self.node_ns(i), f"p{i}"
                _sh(["ip", "-n", ns, "link", "add", IFNAME, "type", "veth", "peer", "name", port, "netns", sw])
                _sh(["ip", "-n", sw, "link", "set", port, "master", "br0"])
                _sh(["ip", "-n", sw, "link", "set", port, "up"])
                shaped += [(ns, IFNAME), (sw, port)]  # uplink and downlink of node i
        for i in range(self.nodes):
            ns = self.node_ns(i)
            _sh(["ip", "-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", IFNAME])
            _sh(["ip", "-n", ns, "link", "set", IFNAME, "up"])
        for ns, dev in shaped:
            self._shape(ns, dev)

    def _shape(self, ns: str, dev: str) -> None:
        # tc-tbf(8): rate, burst (bucket), latency (queue bound: limit = rate*latency + burst).
        _sh(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "tbf",
             "rate", f"{self.rate_bps}bit", "burst", str(self.burst_bytes), "latency", "50ms"])
        if self.delay_ms > 0:
            r = _sh(["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:",
                     "netem", "delay", f"{self.delay_ms}ms"], check=False)
            if r.returncode != 0:
                raise ValueError(f"delay_ms needs the kernel's netem qdisc, which this kernel lacks "
                                 f"({_first_line(r.stderr)}); use delay_ms=0")

    def down(self) -> list[str]:
        """Kill our processes and every process inside our namespaces, then delete the namespaces."""
        procs, self._procs = self._procs, []
        for p in procs:
            _killpg(p)
        mine = [ns for ns in list_namespaces() if ns.startswith(self.name + "-")]
        self.is_up = False
        return destroy_namespaces(mine)

    # signals: clean up, then behave as the previous handler would (KeyboardInterrupt, death by signal)
    def _install_signal_handlers(self) -> None:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._prev_handlers[sig] = signal.signal(sig, self._on_signal)

    def _restore_signal_handlers(self) -> None:
        for sig, prev in self._prev_handlers.items():
            if signal.getsignal(sig) == self._on_signal:
                signal.signal(sig, prev)
        self._prev_handlers = {}

    def _on_signal(self, signum, frame) -> None:
        prev = self._prev_handlers.get(signum, signal.SIG_DFL)
        self.down()
        self._restore_signal_handlers()
        if callable(prev):
            prev(signum, frame)  # e.g. signal.default_int_handler raises KeyboardInterrupt
        elif prev != signal.SIG_IGN:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    # running things
    def run(self, cmd_per_node: list[list[str]], timeout_s: float, env: dict | None = None) -> list[NodeResult]:
        """Run cmd_per_node[i] inside node i's namespace; see run_in_lab."""
        return run_in_lab(self, cmd_per_node, timeout_s, env)

    def torchrun_argv(self, i: int, module: str, args: list[str], nproc_per_node: int = 1) -> list[str]:
        """torchrun for node i with the static rendezvous at node 0 (c10d times out in namespaces)."""
        return [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(self.nodes),
                "--node-rank", str(i), "--nproc-per-node", str(nproc_per_node),
                "--master-addr", self.addr(0), "--master-port", str(MASTER_PORT),
                "-m", module, *args]

    def collectives(self, op: str, sizes: list[int], timeout_s: float, *, repeats: int = 5, warmup: int = 1,
                    iters: int | None = None, bare_check: bool = False, nproc_per_node: int = 1,
                    module: str = "gpukit.bench.collectives") -> dict:
        """Run the collectives worker (docs/CONTRACTS.md) with one torchrun per node; rank 0's JSON.

        iters=None lets the worker pick calls per repeat (~50 ms a repeat, so 1 call at the big
        sizes). bare_check=False skips the worker's bare-loop rerun: at ~0.5 s per call harness
        overhead is nil, and the rerun would double the wall time.
        """
        with tempfile.TemporaryDirectory(prefix="gk-netlab-") as tmp:
            out = Path(tmp) / "collectives.json"
            args = ["--op", op, "--sizes", ",".join(str(s) for s in sizes), "--repeats", str(repeats),
                    "--warmup", str(warmup), "--backend", "gloo", "--device", "cpu",
                    "--timeout", str(int(timeout_s)), "--out", str(out)]
            args += ["--iters", str(iters)] if iters else []
            args += [] if bare_check else ["--no-bare-check"]
            cmds = [self.torchrun_argv(i, module, args, nproc_per_node) for i in range(self.nodes)]
            results = self.run(cmds, timeout_s)
            bad = [r for r in results if r.returncode != 0]
            if bad or not out.exists():
                r = bad[0] if bad else results[0]
                what = "timed out" if r.timed_out else f"exit {r.returncode}"
                raise RuntimeError(f"collective sweep failed on node {r.node} ({what}): "
                                   f"{_last_error_line(r.stderr + r.stdout)}")
            return json.loads(out.read_text())


@dataclass(frozen=True)
class NodeResult:
    """What one node's command did: exit code (None if killed at the timeout) and its output."""

    node: int
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


def _last_error_line(text: str) -> str:
    """The most telling line of a failed rank's output: the worker's own 'error: ...' line, else
    the last exception line, skipping torchrun's summary boilerplate."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pick in (lambda ln: ln.startswith("error:"),
                 lambda ln: re.match(r"^[\w.]*(Error|Exception|Interrupt)\b", ln) is not None):
        hits = [ln for ln in lines if pick(ln)]
        if hits:
            return hits[-1][:300]
    return lines[-1][:300] if lines else "(no output)"


def _killpg(p: subprocess.Popen, grace_s: float = 3.0) -> None:
    if p.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            p.wait(timeout=grace_s)
            return
        except subprocess.TimeoutExpired:
            continue


def run_in_lab(lab: NetLab, cmd_per_node: list[list[str]], timeout_s: float, env: dict | None = None,
               fail_grace_s: float = 15.0) -> list[NodeResult]:
    """Run one command per node namespace, each in its own process group; wait for all of them.

    Gloo picks the node's lab interface (GLOO_SOCKET_IFNAME). Whatever is still running at
    `timeout_s`, or `fail_grace_s` after another node failed (its peers would wait for it until
    gloo's own timeout), is killed: the process group and anything left inside the namespace.
    """
    if len(cmd_per_node) != lab.nodes:
        raise ValueError(f"cmd_per_node must have one command per node ({lab.nodes}), got {len(cmd_per_node)}")
    require_positive("timeout_s", timeout_s)
    root = str(Path(__file__).resolve().parents[3])  # the folder that holds gpukit/
    base = dict(os.environ if env is None else env)
    base.update(GLOO_SOCKET_IFNAME=IFNAME, NCCL_SOCKET_IFNAME=IFNAME,
                PYTHONPATH=os.pathsep.join(filter(None, [root, base.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="gk-netlab-") as tmp:
        procs, files = [], []
        try:
            for i, cmd in enumerate(cmd_per_node):
                fo, fe = open(Path(tmp) / f"{i}.out", "w+"), open(Path(tmp) / f"{i}.err", "w+")
                files.append((fo, fe))
                p = subprocess.Popen(lab.exec_argv(i, cmd), stdout=fo, stderr=fe, env=base,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
                procs.append(p)
                lab._procs.append(p)
            deadline, failed_at, timed_out = time.monotonic() + timeout_s, None, set()
            while None in (codes := [p.poll() for p in procs]):
                now = time.monotonic()
                if failed_at is None and any(c not in (None, 0) for c in codes):
                    failed_at = now
                if now > deadline or (failed_at is not None and now > failed_at + fail_grace_s):
                    timed_out = {i for i, p in enumerate(procs) if p.poll() is None}
                    break
                time.sleep(0.05)
        finally:
            for p in procs:
                _killpg(p)
            if any(p.returncode != 0 for p in procs):
                # torchrun starts its workers in their own sessions: sweep the namespaces too.
                _kill_pids(sorted({q for ns in lab.namespaces for q in _ns_pids(ns)}))
            lab._procs = [p for p in lab._procs if p not in procs]
            outs = []
            for fo, fe in files:
                fo.seek(0)
                fe.seek(0)
                outs.append((fo.read(), fe.read()))
                fo.close()
                fe.close()
    return [NodeResult(i, None if i in timed_out else p.returncode, o, e, i in timed_out)
            for i, (p, (o, e)) in enumerate(zip(procs, outs, strict=True))]


# ---------------------------------------------------------------- the benchmark

def default_sizes(rate_bps: int, target_s: float = 0.5) -> list[int]:
    """Message sizes (bytes) for a sweep: 1 KiB, 64 KiB, 1 MiB, and a largest size whose transfer
    takes about target_s at the rate (power of two, 64 KiB..64 MiB), where bandwidth dominates
    latency (alpha-beta model, REFERENCE.md section 2: t = alpha + S/B)."""
    want = rate_bps / 8 * target_s
    largest = 2 ** round(max(16, min(26, math.log2(max(want, 1.0)))))
    return [s for s in (1024, 64 * 1024, 1024**2) if s < largest] + [largest]


def bench_timeout_s(nodes: int, rate_bps: int, sizes: list[int], repeats: int, warmup: int) -> float:
    """Generous wall-clock limit: start-up + 3x the ideal ring time 2(n-1)/n * S / B per call
    (REFERENCE.md section 2), counting warm-up, the worker's iteration probe and the repeats."""
    ideal = sum((repeats + warmup + 1) * 2 * (nodes - 1) / nodes * s / (rate_bps / 8) for s in sizes)
    return 90.0 + 3.0 * ideal


@dataclass(frozen=True)
class NetBenchResult:
    """A collective sweep over the emulated network: measured busbw at the largest size vs the rate.

    ratio = busbw_gbps / configured_rate_gbps; busbw follows nccl-tests doc/PERFORMANCE.md, so for
    ring algorithms it is comparable with the per-direction link rate. Expect a few % below 1:
    TCP/IP and Ethernet headers (a 1500-byte-MTU frame carries 1448 payload bytes of 1514).
    Measured on CPU with gloo over veth + tbf, not on a real NIC.
    """

    nodes: int
    rate: str
    configured_rate_gbps: float
    op: str
    size_bytes: int
    busbw_gbps: float
    algbw_gbps: float
    ratio: float
    rows: tuple = ()
    lab: dict = field(default_factory=dict)
    env: dict = field(default_factory=dict)

    def to_json_dict(self) -> dict:
        return {"nodes": self.nodes, "rate": self.rate, "configured_rate_gbps": self.configured_rate_gbps,
                "op": self.op, "size_bytes": self.size_bytes, "busbw_gbps": self.busbw_gbps,
                "algbw_gbps": self.algbw_gbps, "ratio": self.ratio, "rows": list(self.rows),
                "lab": self.lab, "env": self.env,
                "note": "CPU, gloo over veth + tbf in network namespaces"}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def to_text(self) -> str:
        lines = [f"{self.op}, {self.nodes} nodes over an emulated {self.rate} link "
                 f"(CPU, gloo over veth + tbf in network namespaces)",
                 f"{'size_bytes':>12} {'time_us':>12} {'algbw_gbps':>11} {'busbw_gbps':>11}"]
        for r in self.rows:
            lines.append(f"{r['size_bytes']:>12} {r['time_us']:>12.1f} {r['algbw_gbps']:>11.4f} {r['busbw_gbps']:>11.4f}")
        lines.append(f"configured {self.configured_rate_gbps:.4f} GB/s, measured busbw {self.busbw_gbps:.4f} GB/s "
                     f"at {self.size_bytes} B: {self.ratio:.1%} of the configured rate")
        return "\n".join(lines)


def bench(nodes: int = 2, rate="1gbit", op: str = "all_reduce", sizes: list[int] | None = None,
          repeats: int = 5, warmup: int = 1, timeout_s: float | None = None, delay_ms: float = 0.0) -> NetBenchResult:
    """Bring a lab up, run a collective sweep with one rank per namespace, bring it down.

    The largest size decides the verdict: busbw there vs configured_rate_gbps (rate/8, decimal GB/s).
    About 10-15 s at 1gbit or 200mbit with the default sizes (startup is most of it).
    """
    nodes = validate_nodes(nodes)
    rate_bps = parse_rate(rate) if not isinstance(rate, int) else rate
    repeats = require_positive_int("repeats", repeats)
    warmup = require_positive_int("warmup", warmup, allow_zero=True)
    from gpukit.bench.collectives import OPS  # no torch import at module level

    if op not in OPS:
        raise ValueError(f"op must be one of {', '.join(OPS)}; got {op!r}")
    sizes = list(sizes) if sizes else default_sizes(rate_bps)
    for s in sizes:
        require_positive_int("sizes", s)
    if timeout_s is not None:
        timeout_s = require_positive("timeout_s", timeout_s)
    timeout_s = timeout_s or bench_timeout_s(nodes, rate_bps, sizes, repeats, warmup)
    require_available()
    with NetLab(nodes, rate_bps, delay_ms=delay_ms) as lab:
        data = lab.collectives(op, sizes, timeout_s, repeats=repeats, warmup=warmup)
        info = lab.info()
    rows = tuple(r for r in data.get("rows", []) if r.get("op", op) == op)
    if not rows:
        raise RuntimeError(f"collective sweep returned no rows for op {op!r}")
    top = max(rows, key=lambda r: r["size_bytes"])
    conf = rate_gbps(rate_bps)
    return NetBenchResult(nodes=nodes, rate=fmt_rate(rate_bps), configured_rate_gbps=conf, op=op,
                          size_bytes=int(top["size_bytes"]), busbw_gbps=float(top["busbw_gbps"]),
                          algbw_gbps=float(top["algbw_gbps"]), ratio=float(top["busbw_gbps"]) / conf,
                          rows=rows, lab=info, env=data.get("env", {}))
