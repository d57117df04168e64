"""NetLab: N network namespaces on an emulated Ethernet link (veth pairs behind a tbf rate limit)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from gpukit.bench.netlab.namespaces import (
    IFNAME,
    MASTER_PORT,
    MAX_RATE_BPS,
    MIN_RATE_BPS,
    PREFIX,
    SUBNET,
    destroy_namespaces,
    first_line,
    fmt_rate,
    list_namespaces,
    parse_rate,
    rate_gbps,
    remove_stale_labs,
    require_available,
    sh,
    tbf_burst_bytes,
    validate_nodes,
)
from gpukit.bench.netlab.runs import NodeResult, last_error_line, run_in_lab
from gpukit.bench.supervise import signals_reraised, stop
from gpukit.errors import require_positive


class NetLab:
    """N network namespaces on an emulated Ethernet of `rate` per link direction (context manager).

    nodes: 2..8. rate: tc string ('1gbit') or bits/s. delay_ms: one-way delay via netem, only if the
    kernel has it (else ValueError). persistent=True names the lab with owner 0 so that
    `netlab down --stale` leaves it alone (used by `gpukit netlab up`, which exits at once).
    Topology: 2 nodes -> one veth pair; 3+ -> a veth from each node into a bridge in a switch
    namespace; tbf on both ends of every veth, so each node's link is `rate` in each direction.
    """

    def __init__(
        self,
        nodes: int = 2,
        rate="1gbit",
        delay_ms: float = 0.0,
        persistent: bool = False,
        handle_signals: bool = True,
    ):
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
        self._signals = ExitStack()
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
            "name": self.name,
            "nodes": self.nodes,
            "topology": self.topology,
            "rate": fmt_rate(self.rate_bps),
            "rate_bits_per_s": self.rate_bps,  # bits per second say so (docs/CONTRACTS.md; was rate_bps)
            "configured_rate_gbps": self.configured_rate_gbps,
            "tbf_burst_bytes": self.burst_bytes,
            "delay_ms": self.delay_ms,
            "interface": IFNAME,
            "namespaces": self.namespaces,
            "addresses": [self.addr(i) for i in range(self.nodes)],
        }

    # lifecycle: SIGTERM/SIGHUP inside the `with` block unwind it (temporary folders, processes and
    # namespaces cleaned up), print one line, then end the process as the signal says (supervise)
    def __enter__(self) -> NetLab:
        self._signals = ExitStack()
        if self.handle_signals:
            self._signals.enter_context(signals_reraised(f"netlab {self.name} removed"))
        try:
            self.up()
        except BaseException:
            self._signals.close()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.down()
        except BaseException:
            self._signals.close()
            raise
        return self._signals.__exit__(*exc)

    def up(self) -> NetLab:
        """Create the namespaces, links, addresses and rate limits; on any failure remove them all."""
        require_available()
        remove_stale_labs()  # what a SIGKILLed run left behind: named on stderr, then removed
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
            sh(["ip", "netns", "add", ns])
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        if self.topology == "direct":
            a, b = self.node_ns(0), self.node_ns(1)
            # Both ends are created inside our namespaces: the host namespace never sees them.
            sh(["ip", "-n", a, "link", "add", IFNAME, "type", "veth", "peer", "name", IFNAME, "netns", b])
            shaped = [(a, IFNAME), (b, IFNAME)]
        else:
            sw = self.switch_ns
            sh(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
            sh(["ip", "-n", sw, "link", "set", "br0", "up"])
            shaped = []
            for i in range(self.nodes):
                ns, port = self.node_ns(i), f"p{i}"
                sh(["ip", "-n", ns, "link", "add", IFNAME, "type", "veth", "peer", "name", port, "netns", sw])
                sh(["ip", "-n", sw, "link", "set", port, "master", "br0"])
                sh(["ip", "-n", sw, "link", "set", port, "up"])
                shaped += [(ns, IFNAME), (sw, port)]  # uplink and downlink of node i
        for i in range(self.nodes):
            ns = self.node_ns(i)
            sh(["ip", "-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", IFNAME])
            sh(["ip", "-n", ns, "link", "set", IFNAME, "up"])
        for ns, dev in shaped:
            self._shape(ns, dev)

    def _shape(self, ns: str, dev: str) -> None:
        # tc-tbf(8): rate, burst (bucket), latency (queue bound: limit = rate*latency + burst).
        sh(
            [
                "tc",
                "-n",
                ns,
                "qdisc",
                "add",
                "dev",
                dev,
                "root",
                "handle",
                "1:",
                "tbf",
                "rate",
                f"{self.rate_bps}bit",
                "burst",
                str(self.burst_bytes),
                "latency",
                "50ms",
            ]
        )
        if self.delay_ms > 0:
            r = sh(
                [
                    "tc",
                    "-n",
                    ns,
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "parent",
                    "1:1",
                    "handle",
                    "10:",
                    "netem",
                    "delay",
                    f"{self.delay_ms}ms",
                ],
                check=False,
            )
            if r.returncode != 0:
                raise ValueError(
                    f"delay_ms needs the kernel's netem qdisc, which this kernel lacks "
                    f"({first_line(r.stderr)}); use delay_ms=0"
                )

    def down(self) -> list[str]:
        """Kill our processes and every process inside our namespaces, then delete the namespaces."""
        procs, self._procs = self._procs, []
        stop(procs, group=True)
        mine = [ns for ns in list_namespaces() if ns.startswith(self.name + "-")]
        self.is_up = False
        return destroy_namespaces(mine)

    # running things
    def run(
        self, cmd_per_node: list[list[str]], timeout_s: float, env: dict | None = None
    ) -> list[NodeResult]:
        """Run cmd_per_node[i] inside node i's namespace; see run_in_lab."""
        return run_in_lab(self, cmd_per_node, timeout_s, env)

    def torchrun_argv(self, i: int, module: str, args: list[str], nproc_per_node: int = 1) -> list[str]:
        """torchrun for node i with the static rendezvous at node 0 (c10d times out in namespaces)."""
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes",
            str(self.nodes),
            "--node-rank",
            str(i),
            "--nproc-per-node",
            str(nproc_per_node),
            "--master-addr",
            self.addr(0),
            "--master-port",
            str(MASTER_PORT),
            "-m",
            module,
            *args,
        ]

    def collectives(
        self,
        op: str,
        sizes: list[int],
        timeout_s: float,
        *,
        repeats: int = 5,
        warmup: int = 1,
        iters: int | None = None,
        bare_check: bool = False,
        nproc_per_node: int = 1,
        module: str = "gpukit.bench.collectives",
    ) -> dict:
        """Run the collectives worker (docs/CONTRACTS.md) with one torchrun per node; rank 0's JSON.

        iters=None lets the worker pick calls per repeat (~50 ms a repeat, so 1 call at the big
        sizes). bare_check=False skips the worker's bare-loop rerun: at ~0.5 s per call harness
        overhead is nil, and the rerun would double the wall time.
        """
        with tempfile.TemporaryDirectory(prefix="gk-netlab-") as tmp:
            out = Path(tmp) / "collectives.json"
            args = [
                "--op",
                op,
                "--sizes",
                ",".join(str(s) for s in sizes),
                "--repeats",
                str(repeats),
                "--warmup",
                str(warmup),
                "--backend",
                "gloo",
                "--device",
                "cpu",
                "--timeout",
                str(int(timeout_s)),
                "--out",
                str(out),
            ]
            args += ["--iters", str(iters)] if iters else []
            args += [] if bare_check else ["--no-bare-check"]
            cmds = [self.torchrun_argv(i, module, args, nproc_per_node) for i in range(self.nodes)]
            results = self.run(cmds, timeout_s)
            bad = [r for r in results if r.returncode != 0]
            if bad or not out.exists():
                r = bad[0] if bad else results[0]
                what = "timed out" if r.timed_out else f"exit {r.returncode}"
                raise RuntimeError(
                    f"collective sweep failed on node {r.node} ({what}): "
                    f"{last_error_line(r.stderr + r.stdout)}"
                )
            return json.loads(out.read_text())
