"""`gpukit plan`: one GPU, one node or many nodes for a workload, a deadline and a budget (gpukit.plan)."""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import bounded_int, count, count_list, fraction, positive_float, positive_int
from gpukit.cli.model_args import add_model_args, model_from_args
from gpukit.plan import PLAN_PRECISIONS, SERVE_INPUT_TOKENS, SERVE_OUTPUT_TOKENS, WORKLOADS


def _gpu_list(text: str):
    """'h100-sxm,a100-80gb:1.6' -> (names, {name: price} for the priced ones)."""
    names, priced = [], {}
    for part in text.split(","):
        name, _, price = part.partition(":")
        name = name.strip()
        if not name:
            raise ValueError(f"--gpu: expected NAME[:PRICE][,...], got {text!r}")
        names.append(name)
        if price:
            try:
                priced[name] = float(price)
            except ValueError:
                raise ValueError(
                    f"--gpu: price of {name} must be a number (USD per GPU-hour), got {price!r}"
                ) from None
    return names, priced


def as_model_spec(args):
    """The model of the shared model flags (gpukit.cli.model_args): the same block as memory and parallel
    (a custom shape is the GPT block unless --mlp swiglu). A custom shape has no context window of its
    own: it is made long enough for what is asked (the training length, or a served request's prompt
    and output)."""
    asked = (
        (args.input_tokens or SERVE_INPUT_TOKENS) + (args.output_tokens or SERVE_OUTPUT_TOKENS)
        if args.workload == "serve"
        else 0
    )
    return model_from_args(args, longest_seq=max(args.seq_len or 0, asked)).model


def _plan(args):
    from gpukit.plan import plan

    model = as_model_spec(args)
    if args.inter_link is not None:  # named here: the planner's own check says inter_link
        from gpukit.catalog import get_interconnect
        from gpukit.errors import named_field

        named_field("--inter-link", get_interconnect, args.inter_link)
    gpus = None
    if args.gpu is not None:  # '' is an error (_gpu_list), not "every GPU"
        names, priced = _gpu_list(args.gpu)
        if priced and len(priced) == len(names):
            gpus = priced
        elif priced:
            from gpukit.prices import load_prices, quote

            table = load_prices(args.prices) if args.prices is not None else load_prices()
            gpus = {n: priced.get(n) or quote(n, table, policy="median").usd_per_gpu_hour for n in names}
        else:
            gpus = names
    prices = None
    if args.prices is not None:  # '' is an error (load_prices), not the shipped table
        from gpukit.prices import load_prices

        prices = load_prices(args.prices)
    profile = None
    if args.profile is not None:  # '' is an error (load_profile), not "no profile"
        from gpukit.profile import load_profile

        profile = load_profile(args.profile)
    # a flag the workload does not use is an error, never ignored (docs/CONTRACTS.md)
    if args.workload == "serve":
        unused = [
            f
            for f, v in (
                ("--tokens", args.tokens),
                ("--deadline-hours", args.deadline_hours),
                ("--seq-len", args.seq_len),
                ("--micro-batch", args.micro_batch),
                ("--global-batch", args.global_batch),
                ("--mfu", args.mfu),
                ("--profile", args.profile),
                ("--loader-tokens-per-s", args.loader_tokens_per_s),
                ("--ports-per-node", args.ports_per_node),
                ("--precision", args.precision),
            )
            if v is not None
        ]
        if unused:
            raise ValueError(
                f"{', '.join(unused)} {'apply' if len(unused) > 1 else 'applies'} to training workloads; serve takes --rate, --input-tokens, "
                "--output-tokens and --budget-usd (USD per hour)"
            )
    else:
        unused = [
            f
            for f, v in (
                ("--rate", args.rate),
                ("--input-tokens", args.input_tokens),
                ("--output-tokens", args.output_tokens),
            )
            if v is not None
        ]
        if unused:
            raise ValueError(
                f"{', '.join(unused)} {'apply' if len(unused) > 1 else 'applies'} to --workload serve, "
                f"not {args.workload}"
            )
    serve_kw = {
        k: v
        for k, v in (("input_tokens", args.input_tokens), ("output_tokens", args.output_tokens))
        if v is not None
    }
    return plan(
        args.workload,
        model,
        tokens=args.tokens,
        rate=args.rate,
        **serve_kw,
        deadline_hours=args.deadline_hours,
        budget_usd=args.budget_usd,
        gpus=gpus,
        counts=args.gpus,
        prices=prices,
        mfu=args.mfu,
        profile=profile,
        seq_len=args.seq_len,
        micro_batch=args.micro_batch,
        global_batch=args.global_batch,
        gpus_per_node=args.gpus_per_node,
        inter_link=args.inter_link,
        loader_tokens_per_s=args.loader_tokens_per_s,
        ports_per_node=args.ports_per_node,
        precision=args.precision or "bf16-mixed",
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "plan",
        help="one GPU, one node or many nodes? plans ranked, with the reason",
        description="Feasible plans for a workload with a deadline and a budget (gpukit.plan)",
    )
    p.add_argument("--workload", choices=WORKLOADS, required=True, help="what to plan for")
    add_model_args(p)
    p.add_argument(
        "--seq-len",
        type=positive_int,
        help="training sequence length (default: the model's pretraining length train_seq_len, as "
        "train-time, cost and parallel use; the output says so)",
    )
    p.add_argument(
        "--micro-batch",
        type=positive_int,
        help="training sequences per GPU per micro-step (default: the layout search picks 1-8 for full "
        "training; 1 for LoRA/QLoRA and one-GPU offload)",
    )
    p.add_argument(
        "--global-batch",
        type=positive_int,
        help="training sequences (of --seq-len tokens) per optimizer step, every plan (default: the "
        "critical batch, the model's published batch or the DeepSeek LLM fit; the output says which)",
    )
    p.add_argument(
        "--precision",
        choices=PLAN_PRECISIONS,
        help="full training's precision (default bf16-mixed; fp8: the FP8 recipe on the allowed GPUs with fp8 "
        "tensor cores, pretrain and finetune only)",
    )
    p.add_argument("--tokens", type=count, help="training tokens (pretrain, finetune, lora, qlora)")
    p.add_argument("--rate", type=positive_float, help="serve: requests per second")
    p.add_argument("--input-tokens", type=positive_int, help="serve: prompt tokens per request (default 512)")
    p.add_argument(
        "--output-tokens", type=positive_int, help="serve: generated tokens per request (default 256)"
    )
    p.add_argument("--deadline-hours", type=positive_float, help="wall-clock hours the run may take")
    p.add_argument("--budget-usd", type=count, help="USD for the run (serve: USD per hour)")
    p.add_argument(
        "--gpu", help="allowed GPU types NAME[:USD_PER_GPU_HOUR][,...] (default: every priced GPU)"
    )
    p.add_argument(
        "--gpus",
        type=count_list,
        help="GPU counts to consider N[,N...] (default: powers of two up to what the global batch allows; "
        "serve: any number of replicas)",
    )
    p.add_argument("--gpus-per-node", type=bounded_int, default=8, help="GPUs per node (default 8)")
    p.add_argument(
        "--inter-link",
        help="link between nodes (`gpukit links`; default: one InfiniBand port per GPU "
        "of its era, 100 Gb/s Ethernet for others)",
    )
    p.add_argument(
        "--ports-per-node",
        type=bounded_int,
        help="training: inter-node network ports per node, shared by its GPUs (default: one per GPU, "
        "rail-optimized; e.g. 1 for one 100 GbE NIC per node)",
    )
    p.add_argument("--prices", help="price CSV (gpukit/data/prices.csv format or a SkyPilot catalog vms.csv)")
    p.add_argument(
        "--loader-tokens-per-s",
        type=positive_float,
        help="tokens/s the input pipeline delivers in total (caps training: input-bound plans)",
    )
    u = p.add_mutually_exclusive_group()
    u.add_argument("--mfu", type=fraction, help="share of peak sustained (default 0.40, assumed)")
    u.add_argument("--profile", help="calibration profile JSON (`gpukit calibrate`)")
    add_json_flag(p)
    p.set_defaults(func=_plan)
