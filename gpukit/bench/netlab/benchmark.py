"""netlab's benchmark: a collective sweep with one rank per namespace, measured busbw vs the rate."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from gpukit.bench.netlab.lab import NetLab
from gpukit.bench.netlab.namespaces import fmt_rate, parse_rate, rate_gbps, require_available, validate_nodes
from gpukit.errors import require_positive, require_positive_int
from gpukit.results import format_table


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
        return {
            "nodes": self.nodes,
            "rate": self.rate,
            "configured_rate_gbps": self.configured_rate_gbps,
            "op": self.op,
            "size_bytes": self.size_bytes,
            "busbw_gbps": self.busbw_gbps,
            "algbw_gbps": self.algbw_gbps,
            "ratio": self.ratio,
            "rows": list(self.rows),
            "lab": self.lab,
            "env": self.env,
            "note": "CPU, gloo over veth + tbf in network namespaces",
        }

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(list(self.rows))

    def to_text(self) -> str:
        lines = [
            f"{self.op}, {self.nodes} nodes over an emulated {self.rate} link "
            f"(CPU, gloo over veth + tbf in network namespaces)",
            format_table(
                self.rows,
                ("size_bytes", "time_us", "algbw_gbps", "busbw_gbps"),
                formats={"time_us": "{:.1f}", "algbw_gbps": "{:.4f}", "busbw_gbps": "{:.4f}"},
            ),
        ]
        lines.append(
            f"configured {self.configured_rate_gbps:.4f} GB/s, measured busbw {self.busbw_gbps:.4f} GB/s "
            f"at {self.size_bytes} B: {self.ratio:.1%} of the configured rate"
        )
        return "\n".join(lines)


def bench(
    nodes: int = 2,
    rate="1gbit",
    op: str = "all_reduce",
    sizes: list[int] | None = None,
    repeats: int = 5,
    warmup: int = 1,
    timeout_s: float | None = None,
    delay_ms: float = 0.0,
) -> NetBenchResult:
    """Bring a lab up, run a collective sweep with one rank per namespace, bring it down.

    The largest size decides the verdict: busbw there vs configured_rate_gbps (rate/8, decimal GB/s).
    About 10-15 s at 1gbit or 200mbit with the default sizes (startup is most of it).
    """
    nodes = validate_nodes(nodes)
    rate_bps = parse_rate(rate) if not isinstance(rate, int) else rate
    repeats = require_positive_int("repeats", repeats)
    warmup = require_positive_int("warmup", warmup, allow_zero=True)
    from gpukit.bench.collectives_measure import OPS  # no torch import at module level

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
    return NetBenchResult(
        nodes=nodes,
        rate=fmt_rate(rate_bps),
        configured_rate_gbps=conf,
        op=op,
        size_bytes=int(top["size_bytes"]),
        busbw_gbps=float(top["busbw_gbps"]),
        algbw_gbps=float(top["algbw_gbps"]),
        ratio=float(top["busbw_gbps"]) / conf,
        rows=rows,
        lab=info,
        env=data.get("env", {}),
    )
