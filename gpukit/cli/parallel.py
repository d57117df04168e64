"""`gpukit parallel`: 3D layouts (gpukit.parallel): search every layout, estimate one, the pipeline bubble.

Examples:
  gpukit parallel search --model llama-2-70b --gpu a100-80gb --gpus 16 --gpus-per-node 8 --seq-len 4096 --global-batch 64
  gpukit parallel estimate --model gpt3-175b --gpu a100-80gb --gpus-per-node 8 --dp 16 --tp 8 --pp 8 \\
      --micro-batch 1 --global-batch 1536 --recompute full --json
  gpukit parallel bubble --pp 8 --microbatches 32 --virtual-stages 4 --json
"""

from __future__ import annotations

from gpukit import parallel as par
from gpukit.cli.model_args import add_model_args, model_from_args
from gpukit.cli.report import Report
from gpukit.errors import positive_int_arg


def _cluster_args(p, search: bool) -> None:
    c = p.add_argument_group("cluster")
    c.add_argument("--gpu", required=True, help="catalog GPU name")
    if search:
        c.add_argument("--gpus", type=int, required=True, help="GPUs in the cluster (dp*tp*pp)")
    c.add_argument("--gpus-per-node", dest="gpus_per_node", type=int, required=True, help="GPUs per node")
    c.add_argument("--link", help="intra-node link (default: the GPU's NVLink)")
    c.add_argument(
        "--inter-link",
        dest="inter_link",
        help="inter-node link per port (default: InfiniBand of the GPU's era)",
    )
    c.add_argument(
        "--ports-per-node",
        dest="ports_per_node",
        type=int,
        help="inter-node ports per node (default: one per GPU)",
    )
    c.add_argument(
        "--profile",
        help="calibrated profile JSON (gpukit calibrate): its bf16 matmul rate sets the efficiency",
    )
    c.add_argument(
        "--seq-len",
        "--seq",
        dest="seq_len",
        type=int,
        help="tokens per sequence (default: the model's pretraining length train_seq_len; the output says so)",
    )
    c.add_argument(
        "--global-batch",
        dest="global_batch",
        type=int,
        required=not search,
        help="sequences per optimizer step (search default: max(gpus, 512))",
    )
    c.add_argument(
        "--attention", choices=("flash", "eager"), default="flash", help="attention kernels (default flash)"
    )
    # ---- EP / CP (helper G)
    c.add_argument(
        "--ep",
        type=positive_int_arg,
        default=1 if not search else None,
        help="expert-parallel size (MoE; carved from dp*cp, divides n_experts)"
        + ("" if not search else "; default: the search tries every valid one"),
    )
    c.add_argument(
        "--precision",
        choices=("bf16-mixed", "fp8"),
        default="bf16-mixed",
        help="training precision (default bf16-mixed); fp8: Transformer Engine's recipe, FP8 GEMMs at the fp8 "
        "peak x the GPU generation's fp8 matmul share, bf16/fp32 master weights and optimizer (gpukit.memory "
        "FP8_RECIPE); GPUs without fp8 units are an error",
    )
    c.add_argument(
        "--cp",
        type=positive_int_arg,
        default=1 if not search else None,
        help="context-parallel size (ring attention; dp*tp*pp*cp = GPUs)"
        + ("" if not search else f"; default: tried from seq_len {par.LONG_CONTEXT_SEQ_LEN}"),
    )


def register(subparsers) -> None:
    from gpukit.cli import add_json_flag

    p = subparsers.add_parser(
        "parallel",
        help="3D parallel layouts: search, estimate one, pipeline bubble",
        description="Memory, communication, bubble and step time of data/tensor/pipeline "
        "parallel layouts (gpukit.parallel).",
    )
    sub = p.add_subparsers(dest="parallel_command", metavar="{search,estimate,bubble}")
    s = sub.add_parser(
        "search", help="rank every layout that fits by predicted tokens/s, explain the top three"
    )
    add_model_args(s)
    _cluster_args(s, search=True)
    s.add_argument("--top", type=int, default=10, help="how many layouts to print (default 10)")
    add_json_flag(s)
    s.set_defaults(func=handle_search)
    e = sub.add_parser("estimate", help="memory, step time, tokens/s, TFLOP/s per GPU, MFU of one layout")
    add_model_args(e)
    _cluster_args(e, search=False)
    for flag in ("--dp", "--tp", "--pp"):
        e.add_argument(flag, type=int, required=True, help=f"{flag[2:]} size (dp*tp*pp*cp = GPUs)")
    e.add_argument(
        "--virtual-stages",
        dest="virtual_stages",
        type=int,
        default=1,
        help="interleaved model chunks per stage",
    )
    e.add_argument("--zero", dest="zero_stage", type=int, default=0, help="ZeRO stage 0-3")
    e.add_argument(
        "--micro-batch", dest="micro_batch", type=int, required=True, help="sequences per micro-batch"
    )
    e.add_argument(
        "--recompute", choices=par.RECOMPUTE, default="none", help="activation recompute (default none)"
    )
    e.add_argument("--sp", action="store_true", help="Megatron sequence parallelism (tp > 1)")
    e.add_argument(
        "--grad-dtype",
        dest="grad_dtype",
        choices=("bf16", "fp32"),
        default=None,
        help="gradient dtype, for memory and for the gradient sync alike (default: the convention's: 16-bit "
        "in Megatron's; fp32: main grads)",
    )
    e.add_argument(
        "--convention",
        choices=("megatron", "pytorch"),
        default=None,
        help="memory convention, and with it the parameter and gradient bytes the sync moves (default: the "
        "layout's, gpukit.parallel.layout_convention: pytorch for data parallelism alone (an eager AMP step, "
        "fp32 parameters and gradients, as `cost train` prices it), megatron with --tp or --pp > 1 (the papers' "
        "sum of parts, 16-bit), as `plan` decides fit)",
    )
    add_json_flag(e)
    e.set_defaults(func=handle_estimate)
    b = sub.add_parser(
        "bubble", help="pipeline bubble: idle share of the step and Megatron's bubble over ideal"
    )
    b.add_argument("--pp", type=int, required=True, help="pipeline stages")
    b.add_argument("--microbatches", type=int, required=True, help="micro-batches per step")
    b.add_argument(
        "--virtual-stages", dest="virtual_stages", type=int, default=1, help="interleaved model chunks"
    )
    add_json_flag(b)
    b.set_defaults(func=handle_bubble)
    p.set_defaults(func=lambda args: p.print_help())


def as_model_spec(args):
    """The model of the shared model flags (gpukit.cli.model_args): the same block as memory and plan."""
    return model_from_args(args, longest_seq=args.seq_len or 0).model


def _cluster(args):
    from gpukit.profile import load_profile

    prof = load_profile(args.profile) if args.profile is not None else None
    return par.make_cluster(
        args.gpu, args.gpus_per_node, args.link, args.inter_link, args.ports_per_node, profile=prof
    )


def ranked_report(result) -> Report:
    """--json prints the ranked list, each row with the search's own notes (the defaults it picked, so
    --json says what the text says); text prints the search's table."""
    rows = [
        r.to_json_dict() | {"notes": [*result.notes, *r.estimate.notes]}
        for r in result.ranked[: result.top_k]
    ]
    return Report(rows, result.to_text)


def handle_search(args):
    model = as_model_spec(args)
    r = par.search(
        model,
        None,
        args.gpus,
        cluster=_cluster(args),
        global_batch=args.global_batch,
        seq_len=args.seq_len,
        top_k=args.top,
        attention=args.attention,
        ep=args.ep,
        cp=args.cp,
        **({"precision": args.precision} if args.precision != "bf16-mixed" else {}),
    )
    return ranked_report(r)


def handle_estimate(args):
    model = as_model_spec(args)
    cfg = par.ParallelConfig(
        dp=args.dp,
        tp=args.tp,
        pp=args.pp,
        virtual_stages=args.virtual_stages,
        zero_stage=args.zero_stage,
        micro_batch=args.micro_batch,
        recompute=args.recompute,
        sp=args.sp,
        ep=args.ep,
        cp=args.cp,
    )
    return par.estimate(
        model,
        cfg,
        _cluster(args),
        global_batch=args.global_batch,
        seq_len=args.seq_len,
        attention=args.attention,
        **({"grad_dtype": "fp32"} if args.grad_dtype == "fp32" else {}),
        **({"convention": args.convention} if args.convention else {}),
        **({"precision": args.precision} if args.precision != "bf16-mixed" else {}),
    )


def handle_bubble(args):
    return par.bubble(args.pp, args.microbatches, args.virtual_stages)
