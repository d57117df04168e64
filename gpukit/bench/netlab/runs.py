"""netlab's supervised runs: one command per node namespace, with a timeout, and nothing left behind.

The processes are supervised by gpukit.bench.supervise (the one supervisor: SIGTERM, grace, SIGKILL).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gpukit.bench.netlab.namespaces import IFNAME, ns_pids
from gpukit.bench.supervise import die_with_parent, stop
from gpukit.errors import require_positive


@dataclass(frozen=True)
class NodeResult:
    """What one node's command did: exit code (None if killed at the timeout) and its output."""

    node: int
    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False


def last_error_line(text: str) -> str:
    """The most telling line of a failed rank's output: the worker's own 'error: ...' line, else
    the last exception line, skipping torchrun's summary boilerplate."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for pick in (
        lambda ln: ln.startswith("error:"),
        lambda ln: re.match(r"^[\w.]*(Error|Exception|Interrupt)\b", ln) is not None,
    ):
        hits = [ln for ln in lines if pick(ln)]
        if hits:
            return hits[-1][:300]
    return lines[-1][:300] if lines else "(no output)"


def run_in_lab(
    lab, cmd_per_node: list[list[str]], timeout_s: float, env: dict | None = None, fail_grace_s: float = 15.0
) -> list[NodeResult]:
    """Run one command per node namespace, each in its own process group; wait for all of them.

    Gloo picks the node's lab interface (GLOO_SOCKET_IFNAME). Whatever is still running at
    `timeout_s`, or `fail_grace_s` after another node failed (its peers would wait for it until
    gloo's own timeout), is killed: the process group and anything left inside the namespace.
    Each command dies with this process (PR_SET_PDEATHSIG), and its temporary files (TMPDIR: torchrun's
    torchelastic_* folders) go into this run's temporary folder, removed on every exit path.
    """
    if len(cmd_per_node) != lab.nodes:
        raise ValueError(
            f"cmd_per_node must have one command per node ({lab.nodes}), got {len(cmd_per_node)}"
        )
    require_positive("timeout_s", timeout_s)
    root = str(Path(__file__).resolve().parents[3])  # the folder that holds gpukit/
    base = dict(os.environ if env is None else env)
    base.update(
        GLOO_SOCKET_IFNAME=IFNAME,
        NCCL_SOCKET_IFNAME=IFNAME,
        PYTHONPATH=os.pathsep.join(filter(None, [root, base.get("PYTHONPATH")])),
    )
    with tempfile.TemporaryDirectory(prefix="gk-netlab-") as tmp:
        procs, files = [], []
        node_tmp = Path(tmp) / "tmp"
        node_tmp.mkdir()
        base["TMPDIR"] = str(node_tmp)
        try:
            for i, cmd in enumerate(cmd_per_node):
                fo, fe = open(Path(tmp) / f"{i}.out", "w+"), open(Path(tmp) / f"{i}.err", "w+")
                files.append((fo, fe))
                p = subprocess.Popen(
                    lab.exec_argv(i, cmd),
                    stdout=fo,
                    stderr=fe,
                    env=base,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    preexec_fn=die_with_parent,
                )
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
            stop(procs, group=True)
            if any(p.returncode != 0 for p in procs):
                # torchrun starts its workers in their own sessions: sweep the namespaces too.
                stop(sorted({q for ns in lab.namespaces for q in ns_pids(ns)}))
            lab._procs = [p for p in lab._procs if p not in procs]
            outs = []
            for fo, fe in files:
                fo.seek(0)
                fe.seek(0)
                outs.append((fo.read(), fe.read()))
                fo.close()
                fe.close()
    return [
        NodeResult(i, None if i in timed_out else p.returncode, o, e, i in timed_out)
        for i, (p, (o, e)) in enumerate(zip(procs, outs, strict=True))
    ]
