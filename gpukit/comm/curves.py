"""Curves of a collective over a size sweep: time, algbw and busbw, with the link and bandwidth bound.

Holds `collective_curves` -> CollectiveCurves (rows size_bytes, time_s, algbw_gbps, busbw_gbps; the
chosen size; one GPU's network port `link_gbps` and the layout's bandwidth bound `bound_busbw_gbps`)
and the choices it offers (SWEEP_SIZES, NICS, CURVE_OPS). Moved from gpukit.widgets.comm_view: the
widget is a thin view over it. Sizes in bytes, times in s, bandwidth in decimal GB/s.

Model: gpukit.comm's alpha-beta times (Hockney 1994), the hierarchical all-reduce across nodes
(Thakur, Rabenseifner & Gropp 2005); busbw = algbw x busbw_factor(op, n) (nccl-tests
doc/PERFORMANCE.md).

Used in: notebook 04_communication (its plots and widget, via gpukit.widgets.comm_view);
tests/test_comm_curves.py, tests/test_widgets_compute_comm.py. gpukit.comm re-exports every public
name here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.comm.collectives import (
    ALGORITHMS,
    TREE_OPS,
    busbw_factor,
    collective_time,
    hierarchical_all_reduce,
    link_params,
)
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.results import frame, json_safe
from gpukit.units import GB

SWEEP_SIZES = tuple(2**k for k in range(10, 35))  # 1 KiB .. 16 GiB
NICS = ("per GPU", "per node")  # DGX/HGX nodes give each GPU its own NIC; a plain Ethernet node has one
CURVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")


@dataclass(frozen=True)
class CollectiveCurves:
    """Predicted `op` over a size sweep (rows: size_bytes, time_s, algbw_gbps, busbw_gbps), the chosen size,
    and two reference lines: one GPU's network port (`link_gbps`) and the bandwidth bound of this layout
    (`bound_busbw_gbps`: busbw as the size grows without limit, alpha = 0)."""

    op: str
    link: str
    intra: str
    n_ranks: int
    gpus_per_node: int
    nics: str
    algorithm: str
    layout: str  # flat | hierarchical (all-reduce across nodes with gpus_per_node > 1)
    size_bytes: float
    time_s: float
    algbw_gbps: float
    busbw_gbps: float
    link_gbps: float
    bound_busbw_gbps: float
    rows: tuple

    @property
    def n_nodes(self) -> int:
        return self.n_ranks // self.gpus_per_node

    def to_frame(self):
        return frame([dict(r) for r in self.rows], ["size_bytes", "time_s", "algbw_gbps", "busbw_gbps"])

    def to_json_dict(self) -> dict:
        d = {
            k: getattr(self, k)
            for k in (
                "op",
                "link",
                "intra",
                "n_ranks",
                "gpus_per_node",
                "nics",
                "algorithm",
                "layout",
                "size_bytes",
                "time_s",
                "algbw_gbps",
                "busbw_gbps",
                "link_gbps",
                "bound_busbw_gbps",
            )
        }
        d["rows"] = [dict(r) for r in self.rows]
        return json_safe(d)


def collective_curves(
    op: str = "all_reduce",
    link="ib-ndr",
    size_bytes: float = 256 * 2**20,
    n_ranks: int = 16,
    gpus_per_node: int = 8,
    intra="nvlink4",
    nics: str = "per GPU",
    algorithm: str = "ring",
    sizes=SWEEP_SIZES,
) -> CollectiveCurves:
    """`op` on n_ranks ranks over a size sweep. Layout: with gpus_per_node > 1 an all-reduce is hierarchical
    (`hierarchical_all_reduce`: ring inside the node over `intra`, `algorithm` across nodes over `link`;
    Thakur et al. 2005); the other collectives run as one flat ring over `link` (a ring through all GPUs
    crosses the network, its slowest hop; an upper bound on the time). nics='per node': the node's GPUs
    share one `link` port, so each gets bandwidth / gpus_per_node. busbw = algbw x busbw_factor(op, n)
    (nccl-tests doc/PERFORMANCE.md). `link`/`intra` are catalog names or Interconnect objects."""
    from gpukit.catalog import get_interconnect

    require_choice("op", op, CURVE_OPS)
    n_ranks = require_positive_int("n_ranks", n_ranks)
    if n_ranks < 2:
        raise ValueError(f"n_ranks must be >= 2 for a collective, got {n_ranks}")
    gpus_per_node = require_positive_int("gpus_per_node", gpus_per_node)
    if n_ranks % gpus_per_node:
        raise ValueError(f"n_ranks must be a multiple of gpus_per_node {gpus_per_node}, got {n_ranks}")
    require_choice("algorithm", algorithm, ALGORITHMS)
    if algorithm == "tree" and op not in TREE_OPS:
        raise ValueError(f"algorithm tree applies to {', '.join(TREE_OPS)}; {op} runs as a ring")
    require_choice("nics", nics, NICS)
    size = require_positive("size_bytes", size_bytes)
    inter = get_interconnect(link) if isinstance(link, str) else link
    intra_link = get_interconnect(intra) if isinstance(intra, str) else intra
    alpha_inter, bw_inter, link_name = link_params(inter)
    alpha_intra, bw_intra, intra_name = link_params(intra_link)
    if nics == "per node" and gpus_per_node > 1:
        bw_inter = bw_inter / gpus_per_node
    hier = op == "all_reduce" and gpus_per_node > 1

    def one(s, a_inter, a_intra, base=None):
        if hier:
            return hierarchical_all_reduce(
                s,
                n_ranks // gpus_per_node,
                gpus_per_node,
                (a_intra, bw_intra),
                (a_inter, bw_inter),
                algorithm,
                base,
            )
        return collective_time(op, s, n_ranks, (a_inter, bw_inter), algorithm, base)

    f = busbw_factor(op, n_ranks)
    rows = []
    for s in sizes:
        c = one(s, alpha_inter, alpha_intra)
        rows.append(
            {"size_bytes": s, "time_s": c.time_s, "algbw_gbps": c.algbw_gbps, "busbw_gbps": c.algbw_gbps * f}
        )
    c = one(size, alpha_inter, alpha_intra)
    big = 2.0**30
    bound = (
        f * big / one(big, 0.0, 0.0, 0.0).time_s / GB
    )  # no latency (alpha, NCCL base): the bandwidth limit
    return CollectiveCurves(
        op=op,
        link=link_name,
        intra=intra_name,
        n_ranks=n_ranks,
        gpus_per_node=gpus_per_node,
        nics=nics,
        algorithm=algorithm,
        layout="hierarchical" if hier else "flat",
        size_bytes=size,
        time_s=c.time_s,
        algbw_gbps=c.algbw_gbps,
        busbw_gbps=c.algbw_gbps * f,
        link_gbps=bw_inter,
        bound_busbw_gbps=bound,
        rows=tuple(rows),
    )
