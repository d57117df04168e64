"""`gpukit netlab up|down|status|bench`: an emulated cluster network on this machine (root only).

up      create N namespaces joined by veth + tbf at --rate; they stay until `netlab down`
down    remove gpukit labs (all, --lab NAME, or --stale: whose owning process is gone)
status  can netlab run here, and which labs exist
bench   up, a collective sweep with one rank per namespace (gpukit.bench.collectives), down
See gpukit/bench/netlab/.
"""

from __future__ import annotations

import sys

from gpukit.bench import netlab
from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import bounded_int, nonnegative_float, nonnegative_int, timeout
from gpukit.units import parse_sizes


def register(sub) -> None:
    p = sub.add_parser(
        "netlab",
        help="emulated cluster network: namespaces + veth + tbf rate limit (root)",
        description=__doc__.split("\n\n")[0],
    )
    act = p.add_subparsers(dest="netlab_action", metavar="ACTION")
    p.set_defaults(func=_no_action)

    up = act.add_parser("up", help="create N namespaces on an emulated link (stay until `netlab down`)")
    up.add_argument("--nodes", type=int, default=2, help="2..8 (default 2)")
    up.add_argument("--rate", default="1gbit", help="per-direction link rate, tc style: 1gbit, 200mbit")
    up.add_argument(
        "--delay-ms", type=nonnegative_float, default=0.0, help="one-way delay (needs kernel netem)"
    )
    add_json_flag(up)
    up.set_defaults(func=_up)

    down = act.add_parser("down", help="remove the labs `gpukit netlab up` made (all, one, or stale ones)")
    down.add_argument("--lab", default=None, help="remove only this lab (name from `netlab status`)")
    down.add_argument("--stale", action="store_true", help="only labs whose creating process is gone")
    add_json_flag(down)
    down.set_defaults(func=_down)

    st = act.add_parser("status", help="can netlab run here; which labs exist")
    add_json_flag(st)
    st.set_defaults(func=_status)

    b = act.add_parser("bench", help="up, collective sweep with one rank per namespace, down")
    b.add_argument("--nodes", type=int, default=2, help="2..8 (default 2)")
    b.add_argument("--rate", default="1gbit", help="per-direction link rate, tc style: 1gbit, 200mbit")
    b.add_argument("--op", default="all_reduce", help="collective (default all_reduce)")
    b.add_argument(
        "--sizes",
        type=str,
        default=None,
        help="message sizes in bytes, e.g. 1K,1M,64M (bare K/M binary, 1MB = 10^6, 1MiB = 2^20; "
        "default: up to ~0.5 s per op at the rate)",
    )
    b.add_argument(
        "--repeats", type=bounded_int, default=5, help="timed repeats per size; the median is reported"
    )
    b.add_argument("--warmup", type=nonnegative_int, default=1, help="untimed calls per size")
    b.add_argument(
        "--delay-ms", type=nonnegative_float, default=0.0, help="one-way delay (needs kernel netem)"
    )
    b.add_argument("--timeout", type=timeout, default=None, help="seconds (default from sizes and rate)")
    add_json_flag(b)
    b.set_defaults(func=_bench)


def _no_action(args):
    raise ValueError("netlab needs an action: up, down, status or bench (gpukit netlab --help)")


def _up(args) -> dict:
    netlab.require_available()
    lab = netlab.NetLab(args.nodes, args.rate, delay_ms=args.delay_ms, persistent=True, handle_signals=False)
    try:
        lab.up()
    except RuntimeError as e:
        _fail(e)
    info = lab.info()
    info["run"] = f"ip netns exec {lab.node_ns(0)} COMMAND   (node 0 is {lab.addr(0)})"
    info["remove"] = f"gpukit netlab down --lab {lab.name}"
    return info


def _down(args) -> dict:
    netlab.require_available(probe=False)
    removed = netlab.down_labs(name=args.lab, stale_only=args.stale)
    return {"removed": removed, "left": [lab.name for lab in netlab.list_labs()]}


def _status(args) -> dict:
    why = netlab.check_available(probe=False)
    labs = [] if why else netlab.list_labs()
    return {
        "available": why is None,
        "reason": why or "",
        "labs": [
            {
                "name": lab.name,
                "owner_pid": lab.owner_pid,
                "stale": lab.stale,
                "namespaces": list(lab.namespaces),
            }
            for lab in labs
        ],
    }


def _bench(args):
    sizes = parse_sizes(args.sizes, "--sizes") if args.sizes is not None else None  # '' is an error
    try:
        return netlab.bench(
            nodes=args.nodes,
            rate=args.rate,
            op=args.op,
            sizes=sizes,
            repeats=args.repeats,
            warmup=args.warmup,
            timeout_s=args.timeout,
            delay_ms=args.delay_ms,
        )
    except RuntimeError as e:
        _fail(e)


def _fail(e: Exception):
    """A run that failed (not bad input): one line, exit 1; the lab is already down."""
    print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
    raise SystemExit(1) from None
