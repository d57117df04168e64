"""`gpukit scaling`: predicted DDP step, speedup and efficiency per GPU count (gpukit.scaling), and the
tokens per GPU above which the gradient all-reduce hides behind the backward."""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import int_list, positive_float, positive_int
from gpukit.cli.model_args import add_hf_config_arg, model_flag


def _scaling(args):
    from gpukit.comm import cluster_network
    from gpukit.scaling import scaling
    from gpukit.units import parse_count

    model = model_flag(args)  # --model or --hf-config (cli/model_args.py)
    if (model is None) == (args.params is None):
        raise ValueError("give exactly one of --model NAME, --hf-config PATH or --params N")
    if (args.tokens_per_gpu is None) == (args.global_batch_tokens is None):
        raise ValueError(
            "give exactly one of --tokens-per-gpu T (weak scaling) or --global-batch-tokens G (strong)"
        )
    if args.powersgd_rank is not None and args.hook != "powersgd":  # it would change nothing
        raise ValueError(f"--powersgd-rank applies to --hook powersgd only, got --hook {args.hook}")
    counts = int_list(args.gpus, "--gpus")
    given = [
        f
        for f, v in (
            ("--inter-link", args.inter_link),
            ("--ports-per-node", args.ports_per_node),
            ("--efficiency", args.efficiency),
        )
        if v is not None
    ]
    profile = None
    if args.profile is not None:  # '' is an error (load_profile), not "no profile"
        from gpukit.profile import load_profile

        profile = load_profile(args.profile)
    from gpukit.catalog import default_links, get_gpu

    gpu = get_gpu(args.gpu)
    args.link, args.inter_link = default_links(gpu, args.gpus_per_node, args.link, args.inter_link)
    if args.grad_dtype is None:  # '' is an error (scaling's dtype check), not the default
        args.grad_dtype = gpu.half_dtype
    inter = args.inter_link or args.link
    prof_net = profile if profile is not None and profile.has_link(inter) else None
    net = cluster_network(
        args.link,
        args.inter_link,
        gpus_per_node=args.gpus_per_node,
        ports_per_node=args.ports_per_node,
        efficiency=args.efficiency,
        profile=prof_net,
    )
    if given and max(counts) <= args.gpus_per_node:  # no count leaves the node: they would change nothing
        raise ValueError(
            f"{given[0]} sets the network between nodes, and every count in --gpus {args.gpus} fits "
            f"one node of --gpus-per-node {args.gpus_per_node}: give a count above it"
        )
    return scaling(
        model,
        n_params=parse_count(args.params, "params") if args.params is not None else None,
        gpu=args.gpu,
        gpus=counts,
        network=net,
        tokens_per_gpu=parse_count(args.tokens_per_gpu, "tokens-per-gpu")
        if args.tokens_per_gpu is not None
        else None,
        global_batch_tokens=(
            parse_count(args.global_batch_tokens, "global-batch-tokens")
            if args.global_batch_tokens is not None
            else None
        ),
        grad_dtype=args.grad_dtype,
        hook=args.hook,
        powersgd_rank=1 if args.powersgd_rank is None else args.powersgd_rank,
        bucket_mb=args.bucket_mb,
        grad_accum=args.grad_accum,
        overlap=args.overlap == "on",
        mfu=args.mfu,
        profile=profile,
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "scaling", help="DDP step, speedup and efficiency per GPU count; overlap threshold"
    )
    p.add_argument("--model", help="catalog model (gpukit models)")
    add_hf_config_arg(p)
    p.add_argument("--params", help="parameter count instead of a model, e.g. 7e9 or 7B")
    p.add_argument("--gpu", default="h100-sxm", help="catalog GPU (gpukit gpus)")
    p.add_argument("--gpus", default="1,2,4,8", help="GPU counts N[,N...] (<= gpus-per-node or whole nodes)")
    p.add_argument("--gpus-per-node", type=positive_int, default=8, help="GPUs per node (default 8)")
    p.add_argument(
        "--link",
        help="intra-node link (gpukit links; default: the GPU's NVLink when it joins "
        "--gpus-per-node peers, else its PCIe)",
    )
    p.add_argument(
        "--inter-link",
        help="inter-node link, one port per GPU (default: --link when it leaves the node, else the "
        "InfiniBand of the GPU's era, 100 Gb/s Ethernet for others)",
    )
    p.add_argument(
        "--ports-per-node", type=positive_int, help="inter-node ports per node (default: one per GPU, rail)"
    )
    p.add_argument(
        "--efficiency", type=positive_float, help="share of the inter-node line rate reached (assumption)"
    )
    p.add_argument("--tokens-per-gpu", help="tokens per GPU per micro-step (weak scaling)")
    p.add_argument(
        "--global-batch-tokens",
        help="tokens per optimizer step over all GPUs, split over --grad-accum micro-steps (strong scaling)",
    )
    p.add_argument("--grad-dtype", help="fp32, bf16, fp16 (default bf16, fp16 on GPUs without bf16 units)")
    p.add_argument("--hook", default="none", help="none, fp16, powersgd")
    p.add_argument(
        "--powersgd-rank",
        type=positive_int,
        help="with --hook powersgd: rank of the factors (default 1, PyTorch's PowerSGDState and gpukit bench ddp)",
    )
    p.add_argument(
        "--bucket-mb",
        type=positive_float,
        default=25.0,
        help="DDP bucket_cap_mb in MiB (default 25, PyTorch's)",
    )
    p.add_argument(
        "--grad-accum", type=positive_int, default=1, help="micro-steps per optimizer step (default 1)"
    )
    p.add_argument(
        "--overlap",
        default="on",
        choices=["on", "off"],
        help="overlap gradient sync with backward (default on)",
    )
    p.add_argument("--mfu", type=positive_float, help="model FLOPs utilization (default 0.4, an assumption)")
    p.add_argument("--profile", help="calibration profile (gpukit calibrate): measured compute and link")
    add_json_flag(p)
    p.set_defaults(func=_scaling)
