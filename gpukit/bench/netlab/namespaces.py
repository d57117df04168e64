"""netlab's namespaces: names, rate parsing, availability, and finding/removing labs on this host.

Every `ip`/`tc` call names a namespace that netlab created (`ip -n NS`, `tc -n NS`, `ip netns exec
NS`); nothing is created in, or changed on, the host's own namespace. Names are
`gk-<owner pid>-<4 hex>-<n0|n1|..|sw>`, unique per lab; owner 0 marks a lab made by `netlab up`.
Stale = the owner pid is gone (kill(pid, 0)); a recycled pid makes a stale lab look alive.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass

from gpukit.bench.supervise import pid_alive, stop
from gpukit.errors import require_positive_int
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
        raise ValueError(
            f"rate must be a number with unit bit|kbit|mbit|gbit (e.g. '1gbit', '200mbit'), got {text!r}"
        )
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
    r = sh(["ip", "netns", "add", ns], check=False)
    sh(["ip", "netns", "del", ns], check=False)
    if r.returncode != 0:
        return f"netlab cannot create network namespaces here: {first_line(r.stderr)}"
    return None


# ---------------------------------------------------------------- low-level helpers


def first_line(text: str) -> str:
    """The first non-blank line of a command's output, stripped ('(no output)' when there is none)."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[0] if lines else "(no output)"


def sh(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    """Run an `ip`/`tc` command (output captured, bounded time); RuntimeError naming it and its first error line when `check`."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=_CMD_TIMEOUT_S)
    if check and r.returncode != 0:
        raise RuntimeError(f"`{' '.join(argv)}` failed: {first_line(r.stderr)}")
    return r


def list_namespaces() -> list[str]:
    """Names of all network namespaces known to `ip netns` (host-wide, read-only)."""
    r = sh(["ip", "netns", "list"], check=False)
    return [ln.split()[0] for ln in r.stdout.splitlines() if ln.strip()]


def ns_pids(ns: str) -> list[int]:
    """Processes inside namespace `ns` (this one excluded)."""
    r = sh(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in r.stdout.split() if x.isdigit() and int(x) != os.getpid()]


def destroy_namespaces(names: list[str]) -> list[str]:
    """Kill every process inside each namespace, then delete it (veths and bridges go with it)."""
    stop(sorted({p for ns in names for p in ns_pids(ns)}))
    gone = []
    for ns in names:
        r = sh(["ip", "netns", "del", ns], check=False)
        if r.returncode == 0 or "No such file" in r.stderr:
            gone.append(ns)
    return gone


# ---------------------------------------------------------------- labs on this host


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
        out.append(LabStatus(name, pid, pid_alive(pid), tuple(sorted(nss))))
    return out


def down_labs(name: str | None = None, stale_only: bool = False) -> list[str]:
    """Remove gpukit labs: all of them, the one called `name`, or only stale ones. Returns namespaces removed."""
    labs = list_labs()
    if name is not None:
        labs = [lab for lab in labs if lab.name == name]
    if stale_only:
        labs = [lab for lab in labs if lab.stale]
    return destroy_namespaces([ns for lab in labs for ns in lab.namespaces])


def remove_stale_labs(say=None) -> list[LabStatus]:
    """Find labs whose owner process is gone (a SIGKILLed `netlab bench` or NetLab user), name each
    one through `say` (default: one line on stderr) and remove it with whatever still runs inside.
    Called by NetLab.up, so the next `netlab up/bench` cleans up after a SIGKILL. Returns them."""
    stale = [lab for lab in list_labs() if lab.stale]
    for lab in stale:
        pids = sorted({p for ns in lab.namespaces for p in ns_pids(ns)})
        destroy_namespaces(list(lab.namespaces))
        line = (
            f"netlab: removed stale lab {lab.name} (owner pid {lab.owner_pid} is gone): "
            f"{len(lab.namespaces)} namespaces, {len(pids)} processes"
        )
        (say or (lambda m: print(m, file=sys.stderr, flush=True)))(line)
    return stale
