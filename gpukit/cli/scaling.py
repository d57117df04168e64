"""`gpukit scaling`: predicted data-parallel step, speedup and efficiency per GPU count, and the tokens per GPU
above which the gradient all-reduce hides behind the backward. The one step model answers (gpukit.cost.dp_scaling:
the step `cost train`, `plan` and `parallel estimate` price, so their answers agree); a comm hook, overlap off,
another bucket size or 16-bit gradients ask for the DDP bucket lesson model (gpukit.scaling.scaling), said in the
output."""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import int_list, positive_float, positive_int
from gpukit.cli.model_args import add_hf_config_arg, model_flag


def _scaling(args):
    from dataclasses import replace

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
    args.link_given = args.link is not None
    args.link, args.inter_link = default_links(gpu, args.gpus_per_node, args.link, args.inter_link)
    from gpukit.scaling import GRAD_DTYPE

    # the step model (`cost train`, `plan`, `parallel estimate`) answers unless a flag asks for what only the
    # DDP bucket lesson model (gpukit.scaling) has: a comm hook, overlap off, another bucket size, 16-bit
    # gradients under PyTorch AMP (whose gradients are fp32: the memory model's, gpukit.scaling.GRAD_DTYPE)
    lesson = [
        f
        for f, v in (
            (f"--hook {args.hook}", args.hook != "none"),
            ("--overlap off", args.overlap != "on"),
            (f"--bucket-mb {args.bucket_mb:g}", args.bucket_mb != 25.0),
            (f"--grad-dtype {args.grad_dtype}", args.grad_dtype not in (None, GRAD_DTYPE)),
            (
                f"--gpu {gpu.name} (no bf16 peak: the step model prices bf16 training)",
                gpu.half_dtype != "bf16",
            ),
        )
        if v
    ]
    if lesson and args.zero:
        raise ValueError(
            f"--zero {args.zero} is priced by the step model only; {lesson[0]} asks for the DDP bucket model "
            "(ZeRO-0): drop one of them"
        )
    if args.grad_dtype is None:  # '' is an error (scaling's dtype check), not the default
        args.grad_dtype = GRAD_DTYPE
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
    n_params = parse_count(args.params, "params") if args.params is not None else None
    tokens_per_gpu = (
        parse_count(args.tokens_per_gpu, "tokens-per-gpu") if args.tokens_per_gpu is not None else None
    )
    global_batch = (
        parse_count(args.global_batch_tokens, "global-batch-tokens")
        if args.global_batch_tokens is not None
        else None
    )
    if not lesson:
        from gpukit.cost import dp_scaling

        own_net = (
            args.link_given or args.efficiency is not None
        )  # else cost train's cluster, built the same way
        return dp_scaling(
            model if model is not None else n_params,
            gpu=args.gpu,
            gpus=counts,
            tokens_per_gpu=tokens_per_gpu,
            global_batch_tokens=global_batch,
            grad_accum=args.grad_accum,
            zero_stage=args.zero,
            mfu=args.mfu,
            profile=profile,
            gpus_per_node=args.gpus_per_node,
            inter_link=args.inter_link,
            ports_per_node=args.ports_per_node,
            network=net if own_net else None,
        )
    res = scaling(
        model,
        n_params=n_params,
        gpu=args.gpu,
        gpus=counts,
        network=net,
        tokens_per_gpu=tokens_per_gpu,
        global_batch_tokens=global_batch,
        grad_dtype=args.grad_dtype,
        hook=args.hook,
        powersgd_rank=1 if args.powersgd_rank is None else args.powersgd_rank,
        bucket_mb=args.bucket_mb,
        grad_accum=args.grad_accum,
        overlap=args.overlap == "on",
        mfu=args.mfu,
        profile=profile,
    )
    why = (
        f"{', '.join(lesson)}: the DDP bucket lesson model (gpukit.scaling: 6N at peak x MFU, no optimizer step), "
        "not the step model `cost train`, `plan` and `parallel estimate` price (drop the flag for that one)"
    )
    return replace(res, assumptions=(why, *res.assumptions))


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
    p.add_argument(
        "--grad-dtype",
        help="fp32, bf16, fp16 (default fp32: PyTorch AMP's gradients, the memory model's, gpukit.scaling.GRAD_DTYPE; "
        "16-bit ones are priced by the DDP bucket lesson model)",
    )
    p.add_argument(
        "--zero",
        type=int,
        choices=[0, 1, 2, 3],
        default=0,
        help="ZeRO stage of the data parallelism (default 0)",
    )
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
    p.add_argument(
        "--mfu",
        type=positive_float,
        help="share of the peak on the executed FLOPs (default: the step model's matmul efficiency and "
        "elementwise kernels, as `cost train`; 0.4 in the DDP bucket lesson model)",
    )
    p.add_argument("--profile", help="calibration profile (gpukit calibrate): measured compute and link")
    add_json_flag(p)
    p.set_defaults(func=_scaling)
