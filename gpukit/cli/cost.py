"""`gpukit cost train|buy-vs-rent|published`: thin views over gpukit.cost (prices from gpukit.prices)."""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import (
    bounded_int,
    count,
    count_list,
    fraction,
    nonnegative_float,
    positive_float,
    positive_int,
)
from gpukit.cli.model_args import add_model_args, model_from_args
from gpukit.cli.report import Report


def _prices(args):
    if getattr(args, "prices", None) is not None:  # '' is an error (load_prices), not the shipped table
        from gpukit.prices import load_prices

        return load_prices(args.prices)
    return None


def _train(args):
    from gpukit.cost import training_cost

    profile = None
    if args.profile is not None:  # '' is an error (load_profile), not "no profile"
        from gpukit.profile import load_profile

        profile = load_profile(args.profile)
    spot = None
    if args.spot:
        missing = [
            f
            for f, v in (
                ("--preemptions-per-day", args.preemptions_per_day),
                ("--checkpoint-minutes", args.checkpoint_minutes),
            )
            if v is None
        ]
        if missing:
            raise ValueError(f"--spot needs {' and '.join(missing)}")
        spot = {
            "preemptions_per_day": args.preemptions_per_day,
            "checkpoint_minutes": args.checkpoint_minutes,
            "restart_minutes": 10.0 if args.restart_minutes is None else args.restart_minutes,
            "spot_price_per_gpu_hour": args.spot_price_per_gpu_hour,
        }
    else:
        unused = [
            f
            for f, v in (
                ("--preemptions-per-day", args.preemptions_per_day),
                ("--checkpoint-minutes", args.checkpoint_minutes),
                ("--restart-minutes", args.restart_minutes),
                ("--spot-price-per-gpu-hour", args.spot_price_per_gpu_hour),
            )
            if v is not None
        ]
        if unused:
            raise ValueError(f"{', '.join(unused)} {'apply' if len(unused) > 1 else 'applies'} with --spot")
    given = [
        f
        for f, v in (("--inter-link", args.inter_link), ("--ports-per-node", args.ports_per_node))
        if v is not None
    ]
    if given and max(args.gpus) <= args.gpus_per_node:  # no count leaves the node: they would change nothing
        raise ValueError(
            f"{given[0]} sets the network between nodes, and every count in --gpus fits one node of "
            f"--gpus-per-node {args.gpus_per_node}: give a count above it"
        )
    choice = model_from_args(args)  # the shared model flags (cli/model_args.py)
    model = choice.model if choice.model is not None else choice.n_params
    t = training_cost(
        model,
        args.tokens,
        args.gpu.split(","),
        args.gpus,
        mfu=args.mfu,
        profile=profile,
        price_per_gpu_hour=args.price_per_gpu_hour,
        price_per_node_hour=args.price_per_node_hour,
        prices=_prices(args),
        gpus_per_node=args.gpus_per_node,
        ports_per_node=args.ports_per_node,
        inter_link=args.inter_link,
        zero_stage=args.zero,
        recompute=args.recompute,
        offload=args.offload,
        spot=spot,
        seq_len=args.seq_len,
        micro_batch=args.micro_batch,
        grad_accum=args.grad_accum,
    )
    text = t.to_text()
    if spot:
        restart = (
            "10 min (default, assumed)" if args.restart_minutes is None else f"{args.restart_minutes:g} min"
        )
        text += f"\nspot (Daly-optimal checkpoints; restart {restart}):" + "".join(
            f"\n  {_spot_line(r)}" for r in t.rows
        )
    return Report(t.to_json_dict(), text)


SPOT_NEVER = 100  # expected spot time over on-demand time beyond which the text says "never finishes"


def _spot_line(r) -> str:
    """One row's spot estimate in words; a job that restarts before it can checkpoint is said to never
    finish instead of printing Daly's 1e24 hours (1000 interruptions a day, 60-minute checkpoints)."""
    s = r.spot
    hours, work = s["expected_hours"], s["work_hours"]
    if hours is None or hours > SPOT_NEVER * work:
        return (
            f"{r.gpu} x{r.gpus}: never finishes in practice: {s['preemptions_per_day']:g} interruptions a day "
            f"(one every {1440 / s['preemptions_per_day']:.3g} min) against {s['checkpoint_minutes']:g}-min "
            f"checkpoints (expected time over {SPOT_NEVER}x the on-demand {work:,.1f} h); run on demand"
        )
    return (
        f"{r.gpu} x{r.gpus}: checkpoint every {s['daly_interval_hours']:.2f} h, expected {hours:,.1f} h, "
        f"${s['spot_cost_usd']:,.0f} vs ${s['on_demand_cost_usd']:,.0f} on demand ({s['savings']:.0%} saved); "
        f"spot ${s['spot_usd_per_gpu_hour']:.2f}/GPU-h ({s['spot_price_source']})"
    )


def _buy(args):
    from gpukit.cost import buy_vs_rent

    r = buy_vs_rent(
        args.gpu,
        args.gpus,
        args.purchase_usd,
        rent_per_gpu_hour=args.rent_per_gpu_hour,
        prices=_prices(args),
        power_kw=args.power_kw,
        pue=args.pue,
        usd_per_kwh=args.usd_per_kwh,
        years=args.years,
        utilization=args.utilization,
        ops_usd_per_year=args.ops_usd_per_year,
        network_usd=args.network_usd,
    )
    return r


def _published(args):
    from gpukit.cost import PUBLISHED_RUNS, published_check

    rows = [published_check(r.key, mfu=args.mfu).to_json_dict() for r in PUBLISHED_RUNS]
    lines = [
        f"{'run':<16} {'GPU-hours':>12} {'$/GPU-h':>8} {'cost USD':>14} {'implied MFU':>12} {'pred. GPU-h err':>16}"
    ]
    lines += [
        f"{r['key']:<16} {r['gpu_hours']:>12,.0f} {r['usd_per_gpu_hour']:>8.2f} {r['cost_usd']:>14,.0f} "
        f"{r['implied_mfu']:>12.1%} {r['gpu_hours_error']:>+16.1%}"
        for r in rows
    ]
    lines.append(
        f"predicted GPU-hours: 6ND at {args.mfu:.0%} MFU; price: the disclosed one, else $2/GPU-hour"
    )
    return Report({"rows": rows}, "\n".join(lines))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cost",
        help="cost of a training run, buy vs rent, published runs",
        description="Cluster economics (gpukit.cost); prices from gpukit/data/prices.csv or --prices",
    )
    sub = p.add_subparsers(dest="cost_command", metavar="WHAT", parser_class=type(p))

    t = sub.add_parser(
        "train",
        help="time and cost over GPU types and counts, with scaling efficiency",
        description="Time and cost of a training run over GPU types and counts (gpukit.cost."
        "training_cost). Every row says whether the priced layout (data parallel, --zero, "
        "--recompute, micro-batch 1) fits each GPU: GiB/GPU needed (gpukit.memory, as "
        "`gpukit plan` decides fit) and fits yes/NO; a layout that does not fit is priced "
        "anyway with a WARNING line (JSON: rows[].fits, memory_per_gpu_bytes, "
        "gpu_memory_bytes, warnings), as `plan` lists it rather than failing. A price per "
        "GPU-hour above every catalog row that looks like a node's price gets a WARNING too.",
    )
    add_model_args(t, params=True)
    t.add_argument("--tokens", type=count, required=True, help="training tokens, e.g. 2T")
    t.add_argument("--gpu", required=True, help="a GPU from `gpukit gpus` (or several, comma-separated)")
    t.add_argument("--gpus", type=count_list, required=True, help="GPU counts N[,N...]")
    t.add_argument("--gpus-per-node", type=bounded_int, default=8, help="GPUs per node (default 8)")
    t.add_argument(
        "--ports-per-node",
        type=bounded_int,
        help="inter-node network ports per node, shared by its GPUs (default: one per GPU, rail-optimized; "
        "e.g. 1 for one 100 GbE NIC per node)",
    )
    t.add_argument(
        "--zero",
        type=int,
        choices=(0, 1, 2, 3),
        default=0,
        help="ZeRO stage of the priced data-parallel layout (default 0: plain DDP); sets memory and traffic",
    )
    t.add_argument(
        "--seq-len",
        type=positive_int,
        help="tokens per sequence (default: the model's pretraining "
        "length train_seq_len, capped by its context window; 2048 for --params)",
    )
    t.add_argument(
        "--micro-batch", type=positive_int, default=1, help="sequences per GPU per micro-step (default 1)"
    )
    t.add_argument(
        "--grad-accum",
        type=positive_int,
        default=1,
        help="micro-steps per optimizer step (default 1): the step is seq_len x micro_batch x grad_accum "
        "tokens per GPU, synced once",
    )
    t.add_argument(
        "--recompute",
        choices=("none", "selective", "full"),
        default="none",
        help="activation recompute of the priced layout (default none; full adds a forward: 8N FLOPs)",
    )
    t.add_argument(
        "--offload",
        choices=("none", "optimizer", "all"),
        default="none",
        help="ZeRO-Offload of the optimizer (or ZeRO-Infinity: all) to CPU memory; its PCIe transfer and CPU Adam "
        "are charged once per optimizer step, so --grad-accum amortises them (default none)",
    )
    t.add_argument(
        "--inter-link",
        help="link between nodes (`gpukit links`; default: one InfiniBand port per GPU "
        "of its era, 100 Gb/s Ethernet for others)",
    )
    u = t.add_mutually_exclusive_group()
    u.add_argument("--mfu", type=fraction, help="share of peak sustained (default 0.40, assumed)")
    u.add_argument("--profile", help="calibration profile JSON (`gpukit calibrate`)")
    pr = t.add_mutually_exclusive_group()
    pr.add_argument(
        "--price-per-gpu-hour",
        type=positive_float,
        metavar="USD",
        help="USD per GPU-hour (default: median row of the price file)",
    )
    pr.add_argument(
        "--price-per-node-hour",
        type=positive_float,
        metavar="USD",
        help="USD per node-hour (an instance's price), divided by --gpus-per-node",
    )
    pr.add_argument(
        "--prices",
        metavar="CSV",
        help="a price CSV: gpukit/data/prices.csv format or a SkyPilot catalog vms.csv",
    )
    t.add_argument("--spot", action="store_true", help="add the expected spot time and cost")
    t.add_argument(
        "--preemptions-per-day", type=positive_float, help="with --spot: interruptions of the job per day"
    )
    t.add_argument(
        "--checkpoint-minutes", type=positive_float, help="with --spot: time to write one checkpoint"
    )
    t.add_argument("--restart-minutes", type=positive_float, help="with --spot: time to resume (default 10)")
    t.add_argument(
        "--spot-price-per-gpu-hour",
        type=positive_float,
        help="with --spot (default: the price file's SpotPrice)",
    )
    add_json_flag(t)
    t.set_defaults(func=_train)

    b = sub.add_parser("buy-vs-rent", help="owned cost per GPU-hour, break-even utilization and months")
    b.add_argument("--gpu", required=True, help="a GPU from `gpukit gpus`")
    b.add_argument("--gpus", type=int, required=True, help="number of GPUs bought")
    b.add_argument("--purchase-usd", type=count, required=True, help="capital: GPUs and servers, USD")
    b.add_argument("--network-usd", type=count, default=0.0, help="networking capital, USD (default 0)")
    pr = b.add_mutually_exclusive_group()
    pr.add_argument("--rent-per-gpu-hour", type=positive_float, help="rental price, USD per GPU-hour")
    pr.add_argument("--prices", help="price CSV to take the rental price from (median row)")
    b.add_argument(
        "--power-kw", type=positive_float, help="kW per GPU incl. its server share (default TDP x 1.82)"
    )
    b.add_argument(
        "--pue", type=positive_float, default=1.56, help="power usage effectiveness (default 1.56)"
    )
    b.add_argument(
        "--usd-per-kwh",
        type=nonnegative_float,
        default=0.10,
        help="electricity price, USD per kWh (default 0.10)",
    )
    b.add_argument("--years", type=positive_float, default=3.0, help="depreciation period (default 3)")
    b.add_argument("--utilization", type=fraction, default=0.7, help="share of hours in use (default 0.7)")
    b.add_argument(
        "--ops-usd-per-year", type=nonnegative_float, default=0.0, help="staff, rack space, support per year"
    )
    add_json_flag(b)
    b.set_defaults(func=_buy)

    pb = sub.add_parser("published", help="published training runs: cost, implied MFU, predicted GPU-hours")
    pb.add_argument(
        "--mfu", type=fraction, default=0.4, help="share of peak sustained (default 0.40, assumed)"
    )
    add_json_flag(pb)
    pb.set_defaults(func=_published)

    p.set_defaults(
        func=lambda a: (_ for _ in ()).throw(
            ValueError("gpukit cost: choose train, buy-vs-rent or published")
        )
    )
