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
exit, exceptions, SIGINT/SIGTERM (the block unwinds, then the signal is re-raised: one line on stderr,
gpukit.bench.supervise), and after a SIGKILL: the node commands die with their owner
(PR_SET_PDEATHSIG) and the next `netlab up/bench` names and removes the stale lab (as does
`gpukit netlab down --stale`).

Needs root and iproute2 (`ip`, `tc`); `check_available()` says in one line why not.
Delay (netem) is added only where the kernel has sch_netem; these kernels do not.
Modules: `namespaces` (names, rates, availability, finding and removing labs), `runs` (one
supervised command per node namespace), `lab` (NetLab), `benchmark` (the collective sweep, `bench`). The public
names are re-exported here: `from gpukit.bench import netlab; netlab.NetLab(...)`.
Used in: gpukit/cli/netlab.py (`gpukit netlab up|down|status|bench`), tests/test_netlab.py.
"""

from __future__ import annotations

from gpukit.bench.netlab.benchmark import NetBenchResult, bench, bench_timeout_s, default_sizes
from gpukit.bench.netlab.lab import NetLab
from gpukit.bench.netlab.namespaces import (
    IFNAME,
    MASTER_PORT,
    MAX_NODES,
    MAX_RATE_BPS,
    MIN_NODES,
    MIN_RATE_BPS,
    PREFIX,
    SUBNET,
    LabStatus,
    check_available,
    destroy_namespaces,
    down_labs,
    fmt_rate,
    list_labs,
    list_namespaces,
    ns_pids,
    parse_rate,
    rate_gbps,
    remove_stale_labs,
    require_available,
    tbf_burst_bytes,
    validate_nodes,
)
from gpukit.bench.netlab.runs import NodeResult, run_in_lab
from gpukit.bench.supervise import pid_alive

__all__ = [
    "IFNAME",
    "MASTER_PORT",
    "MAX_NODES",
    "MAX_RATE_BPS",
    "MIN_NODES",
    "MIN_RATE_BPS",
    "PREFIX",
    "SUBNET",
    "LabStatus",
    "NetBenchResult",
    "NetLab",
    "NodeResult",
    "bench",
    "bench_timeout_s",
    "check_available",
    "default_sizes",
    "destroy_namespaces",
    "down_labs",
    "fmt_rate",
    "list_labs",
    "list_namespaces",
    "ns_pids",
    "parse_rate",
    "pid_alive",
    "rate_gbps",
    "remove_stale_labs",
    "require_available",
    "run_in_lab",
    "tbf_burst_bytes",
    "validate_nodes",
]
