"""`gpukit comm`: predicted time, algbw and busbw of one collective (thin view over gpukit.comm)."""

from __future__ import annotations

import math

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import arg_type, positive_int
from gpukit.cli.report import Report
from gpukit.comm import ALGORITHMS, OPS, collective_time, hierarchical_all_reduce
from gpukit.results import stable_keys
from gpukit.units import fmt_bytes, fmt_seconds
from gpukit.units import parse_bytes as units_parse_bytes


def parse_bytes(text: str) -> int:
    """'1e9', '1GB' (10^9), '256MiB' (2^28), '4096', '1.5 GiB' -> bytes (units.parse_bytes; a bare K/M/G
    is refused: it is ambiguous)."""
    return units_parse_bytes(text, "size")


_bytes = arg_type(parse_bytes)
_ranks = positive_int


def resolve_link(name: str, profile=None, flag: str = "--link"):
    """A link by name: the profile's measured fit if it has one, else the catalog row (an unknown name:
    ValueError naming `flag`, so that a typo in --inter-link is not blamed on --link)."""
    if profile is not None and profile.has_link(name):
        fit = profile.link(name)
        return fit.alpha_s, fit.beta_gbps
    from gpukit.catalog import get_interconnect
    from gpukit.errors import named_field

    return named_field(flag, get_interconnect, name)


def link_source(name: str, profile=None) -> str:
    """Where a link's alpha and beta come from, said in the output (a profile without the link falls
    back to the catalog; that is not silent)."""
    if profile is None:
        return f"{name}: catalog"
    if profile.has_link(name):
        return f"{name}: measured, profile {profile.source}"
    return f"{name}: catalog (profile {profile.source} has no link {name!r})"


# The keys of `comm --json` (docs/schemas/comm.json), one flat collective and a hierarchical all-reduce
# alike: n_nodes, ranks_per_node, breakdown and phases are null for one flat collective; link, alpha_s,
# bandwidth_gbps, base_latency_s and sent_per_rank_bytes are per phase (in `phases`) for the hierarchical one.
COMM_KEYS = (
    "op",
    "algorithm",
    "size_bytes",
    "n_ranks",
    "n_nodes",
    "ranks_per_node",
    "link",
    "alpha_s",
    "bandwidth_gbps",
    "base_latency_s",
    "sent_per_rank_bytes",
    "time_s",
    "latency_s",
    "bandwidth_s",
    "algbw_gbps",
    "busbw_gbps",
    "breakdown",
    "phases",
    "link_sources",
    "assumptions",
)


def comm_report(
    cost, describe: str, sources: tuple[str, ...] = (), assumptions: tuple[str, ...] = ()
) -> Report:
    """A collective's cost with the links' sources and the assumptions, as JSON and as text."""
    payload = stable_keys(
        cost.to_json_dict() | {"link_sources": list(sources), "assumptions": list(assumptions)}, COMM_KEYS
    )
    head = (
        f"{describe}: {fmt_seconds(cost.time_s)} (latency {fmt_seconds(cost.latency_s)}, bandwidth "
        f"{fmt_seconds(cost.bandwidth_s)})"
    )
    if not math.isfinite(cost.algbw_gbps):  # nothing moves (one GPU): a rate has no meaning; JSON says null
        text = f"{head}; algbw and busbw n/a (no data moves between {cost.n_ranks} GPU)"
    else:
        text = f"{head}; algbw {cost.algbw_gbps:.2f} GB/s, busbw {cost.busbw_gbps:.2f} GB/s"
    text += (f"\nlinks: {'; '.join(sources)}" if sources else "") + "".join(
        f"\nassumes: {a}" for a in assumptions
    )
    return Report(payload, text)


NODE_GPUS = 8  # GPUs one HGX/DGX node joins over NVLink or one PCIe tree


def _flat_assumptions(link_name: str, gpus: int) -> tuple[str, ...]:
    """Without --gpus-per-node every GPU sits on the one link at its full per-GPU bandwidth. For an
    intra-node link (NVLink, PCIe) past one node of 8 that is a fabric few clusters have (an NVLink
    Switch system, GB200 NVL72): said, since 16 GPUs 'over nvlink4' once printed a node's busbw."""
    from gpukit.catalog import get_interconnect

    try:
        scope = get_interconnect(link_name).scope
    except ValueError:  # a link only the profile has: its scope is unknown
        return ()
    if scope != "intra-node" or gpus <= NODE_GPUS:
        return ()
    return (
        f"all {gpus} GPUs on one {link_name} fabric at its full per-GPU bandwidth, though one node holds "
        f"{NODE_GPUS} (only an NVLink Switch system such as GB200 NVL72 spans more): for nodes give "
        f"--gpus-per-node and --inter-link",
    )


def _comm(args):
    profile = None
    if args.profile is not None:  # '' is an error (load_profile), not "no profile"
        from gpukit.profile import load_profile

        profile = load_profile(args.profile)
    link = resolve_link(args.link, profile)
    size = f"{fmt_bytes(args.bytes, binary=False)}"
    if args.gpus_per_node is None and args.inter_link is None:
        cost = collective_time(args.op, args.bytes, args.gpus, link, args.algorithm)
        if args.op in ("all_gather", "reduce_scatter"):  # nccl-tests: S is the total size
            size += f" in total ({fmt_bytes(args.bytes / args.gpus, binary=False)} per GPU, nccl-tests' convention)"
        elif args.op == "all_to_all":  # nccl-tests alltoall.cu: each rank sends S, S/n to every rank
            size += (
                f" per GPU ({fmt_bytes(args.bytes / args.gpus, binary=False)} to each of the {args.gpus} GPUs, "
                "nccl-tests' convention)"
            )
        return comm_report(
            cost,
            f"{args.op} of {size} on {args.gpus} GPUs over {args.link} ({args.algorithm})",
            (link_source(args.link, profile),) if profile is not None else (),
            _flat_assumptions(args.link, args.gpus),
        )
    if args.gpus_per_node is None or args.inter_link is None:
        raise ValueError("--gpus-per-node and --inter-link go together (intra-node link = --link)")
    if args.op != "all_reduce":
        raise ValueError(
            f"--op must be all_reduce for the hierarchical model (--gpus-per-node), got {args.op}"
        )
    if args.gpus % args.gpus_per_node:
        raise ValueError(f"--gpus {args.gpus} must be a multiple of --gpus-per-node {args.gpus_per_node}")
    nodes = args.gpus // args.gpus_per_node
    cost = hierarchical_all_reduce(
        args.bytes,
        nodes,
        args.gpus_per_node,
        link,
        resolve_link(args.inter_link, profile, "--inter-link"),
        args.algorithm,
    )
    return comm_report(
        cost,
        f"all_reduce of {size} on {nodes} nodes x {args.gpus_per_node} GPUs "
        f"({args.link} inside, ring; {args.inter_link} across, {args.algorithm})",
        (link_source(args.link, profile), link_source(args.inter_link, profile))
        if profile is not None
        else (),
        (
            f"one {args.inter_link} port per GPU (rail-optimized): the {args.gpus_per_node} shards cross "
            f"the network in parallel; a node with fewer ports is slower (gpukit scaling --ports-per-node)",
        )
        if nodes > 1
        else (
            f"one node: the all-reduce never leaves it, so --inter-link {args.inter_link} "
            f"and --algorithm (the inter-node step's) change nothing",
        ),
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "comm",
        help="alpha-beta time, algbw and busbw of a collective",
        description="t = c_alpha*alpha + c_beta*S/B (Thakur et al. 2005); S follows "
        "nccl-tests: per-rank buffer for all_reduce/broadcast/reduce/send_recv, "
        "total size for all_gather/reduce_scatter, each rank's send buffer "
        "(S/n to every rank) for all_to_all",
    )
    p.add_argument(
        "--op",
        choices=OPS,
        required=True,
        type=lambda s: s.strip().lower().replace("-", "_"),
        help=f"{', '.join(OPS)} (nccl-tests names; all-reduce spelling accepted)",
    )
    p.add_argument("--bytes", type=_bytes, required=True, help="message size S in bytes: 1e9, 1GB, 256MiB")
    p.add_argument(
        "--gpus",
        "--ranks",
        dest="gpus",
        type=_ranks,
        required=True,
        help="number of GPUs taking part (old spelling --ranks)",
    )
    p.add_argument(
        "--link", required=True, help="a link from `gpukit links` (intra-node with --gpus-per-node)"
    )
    p.add_argument(
        "--gpus-per-node",
        "--ranks-per-node",
        dest="gpus_per_node",
        type=_ranks,
        help="hierarchical all_reduce: GPUs per node (old spelling --ranks-per-node)",
    )
    p.add_argument("--inter-link", help="hierarchical all_reduce: the link between nodes")
    p.add_argument(
        "--algorithm", choices=ALGORITHMS, default="ring", help="all-reduce algorithm (default ring)"
    )
    p.add_argument("--profile", help="calibration profile JSON: use its measured alpha/beta for links it has")
    add_json_flag(p)
    p.set_defaults(func=_comm)
