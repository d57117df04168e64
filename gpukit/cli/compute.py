"""`gpukit train-time`, `gpukit flops`, `gpukit roofline`: thin views over gpukit.compute."""

from __future__ import annotations

import argparse

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import (
    count,
    fraction,
    parse_count,  # noqa: F401 (its old home: `from gpukit.cli.compute import parse_count`)
    positive_int,
)
from gpukit.cli.model_args import add_hf_config_arg, add_model_args, model_flag, model_from_args
from gpukit.cli.report import Report
from gpukit.compute import MODES, RECOMPUTE, flops_per_token, roofline_layer, roofline_matmul, time_to_train
from gpukit.results import format_table, stable_keys
from gpukit.units import BYTES_PER_DTYPE

# The keys of each subcommand's --json (docs/schemas/<subcommand>.json): the same whatever the options,
# null where one does not apply (issue 25).
TRAIN_TIME_KEYS = (
    "n_params",
    "tokens",
    "gpu",
    "n_gpus",
    "dtype",
    "recompute",
    "seq_len",
    "seq_len_source",
    "peak_tflops",
    "utilization",
    "utilization_source",
    "model_flops",
    "flops",
    "seconds",
    "days",
    "gpu_hours",
    "lm_head_params",
    "effective_tflops_per_gpu",
    "mfu",
    "hfu",
    "note",
    "bound",
)
FLOPS_KEYS = (
    "mode",
    "seq_len",
    "context",
    "causal",
    "recompute",
    "n_params",
    "lm_head_params",
    "breakdown",
    "model_flops",
    "hardware_flops",
    "note",
    "window_note",
)
# one matmul (--dims) and one layer of a model (--model) alike: the matmul's own fields are null for a
# layer (its matmuls are in `ops`), the layer's (mode ... ops) null for one matmul
ROOFLINE_KEYS = (
    "name",
    "m",
    "n",
    "k",
    "batch",
    "dtype",
    "mode",
    "seq_len",
    "micro_batch",
    "context",
    "flops",
    "bytes",
    "intensity_flop_per_byte",
    "ridge_flop_per_byte",
    "peak_tflops",
    "bandwidth_gbps",
    "attainable_tflops",
    "bound",
    "compute_time_s",
    "memory_time_s",
    "time_s",
    "memory_bound_time_share",
    "ops",
    "assumptions",
    "window_note",
)


def _dims(text):
    parts = str(text).split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected three dimensions M,N,K, got {text!r}")
    return tuple(positive_int(x.strip()) for x in parts)


def _model_or_params(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="a model from `gpukit models` (gpukit/data/models.csv)")
    add_hf_config_arg(g)
    g.add_argument("--params", type=count, help="n_params, e.g. 175B or 7e9 (no attention term)")


def _resolve_model(args):
    return model_flag(args)  # --model or --hf-config (cli/model_args.py), None for --params


def _train_time(args):
    from gpukit.catalog import get_gpu

    if args.efficiency is not None and args.profile is None:
        raise ValueError("--efficiency applies to --profile only (with --mfu, the mfu is the efficiency)")
    choice = model_from_args(
        args, longest_seq=args.seq_len or 0
    )  # the shared model flags (cli/model_args.py)
    model = choice.model
    profile = None
    if args.profile is not None:  # '' is an error (load_profile), not "no profile"
        from gpukit.profile import load_profile

        profile = load_profile(args.profile)
    gpu = get_gpu(args.gpu)
    r = time_to_train(
        model if model is not None else choice.n_params,
        args.tokens,
        gpu,
        args.gpus,
        mfu=args.mfu,
        profile=profile,
        efficiency=args.efficiency,
        recompute=args.recompute,
        dtype=args.dtype if args.dtype is not None else gpu.half_dtype,  # "" is an error, not the default
        seq_len=args.seq_len,
    )
    notes = (model.window_note(r.seq_len, "--seq-len"), model.sliding_window_note(r.seq_len)) if model else ()
    note = "; ".join(n for n in notes if n) or None  # the attention FLOPs count the sliding window
    return Report(
        stable_keys(r.to_json_dict() | {"note": note}, TRAIN_TIME_KEYS),
        r.to_text() + (f"\nnote: {note}" if note else ""),
    )


def _flops(args):
    model = _resolve_model(args)
    if model is not None and (args.n_layers is not None or args.hidden is not None):
        raise ValueError("--layers and --hidden go with --params (the attention term); --model has its own")
    if args.mode != "decode" and args.context is not None:
        raise ValueError(f"--context applies to --mode decode; --mode {args.mode} uses --seq-len")
    if args.mode == "decode" and args.no_causal:
        raise ValueError(
            "--no-causal applies to train and prefill: a decoded token attends to all --context keys"
        )
    window = model.window_note(args.seq_len, "--seq-len") if model is not None else None
    if model is not None and args.mode == "decode" and args.context is not None:
        # the KV length decides the attention term; a context beyond the window is the question to flag
        window = model.window_note(args.context, "--context") or window
    kw = (
        {}
        if model is not None
        else {"n_params": args.params, "n_layers": args.n_layers, "hidden": args.hidden}
    )
    f = flops_per_token(
        model,
        seq_len=args.seq_len,
        causal=False if args.no_causal else None,
        include_embeddings=args.include_embeddings,
        recompute=args.recompute,
        mode=args.mode,
        context=args.context,
        **kw,
    )
    d = f.to_json_dict()
    lines = [f"{k:<28} {v:.4g}" for k, v in f.breakdown]
    lines += [
        f"{'model_flops per token':<28} {f.model_flops:.4g}",
        f"{'hardware_flops per token':<28} {f.hardware_flops:.4g}",
    ]
    counted = f"N = {f.n_params:.4g} " + (
        "matmul weights of the layers (embeddings are lookups; the LM head "
        + (
            f"{f.lm_head_params:.4g} is counted)"
            if f.lm_head_params
            else "is not counted: --include-embeddings)"
        )
        if model is not None
        else "as given"
    )
    if any(k.startswith("attention") for k, _ in f.breakdown) and f.mode != "decode":
        capped = f.causal and model is not None and model.sliding_window_note(f.seq_len)
        counted += "; attention " + (
            f"causal, sliding window {model.sliding_window} (mean "
            f"{model.mean_attended_keys(f.seq_len):g} keys per token)"
            if capped
            else "causal (half of full)"
            if f.causal
            else f"full ({model.name} is an encoder: bidirectional)"
            if model is not None and model.arch == "encoder"
            else "full (--no-causal)"
        )
    lines.append(f"counts: {counted}")
    if f.note:
        lines.append(f"note: {f.note}")
    if window:
        lines.append(f"note: {window}")
    return Report(stable_keys(d | {"window_note": window}, FLOPS_KEYS), "\n".join(lines))


def _roofline(args):
    from gpukit.catalog import get_gpu

    gpu = get_gpu(args.gpu)
    layer_model = model_flag(args)  # --model or --hf-config (cli/model_args.py)
    if args.dtype is None:  # '' is an error (the dtype check), not the default
        args.dtype = gpu.half_dtype
    matrix = [
        f
        for f, v in (("--dims", args.dims), ("--m", args.m), ("--n", args.n), ("--k", args.k))
        if v is not None
    ]
    if layer_model is not None and matrix:  # one of them would be ignored without a word
        raise ValueError(
            f"--model and {matrix[0]} are two different questions (a layer, or one matmul): give one"
        )
    if layer_model is None:
        layer_only = [
            f for f, v in (("--seq-len", args.seq_len), ("--context", args.context)) if v is not None
        ]
        layer_only += [
            f
            for f, v, d in (("--micro-batch", args.micro_batch, 1), ("--mode", args.mode, "prefill"))
            if v != d
        ]
        if layer_only:
            raise ValueError(
                f"{layer_only[0]} applies to --model (a layer); a single matmul takes --dims M,N,K "
                "and --batch"
            )
    elif args.batch != 1:
        raise ValueError("--batch (identical matmuls) applies to --dims M,N,K; a layer takes --micro-batch")
    if layer_model is not None:
        if args.seq_len is None:
            raise ValueError("--seq-len is required with --model")
        if args.mode != "decode" and args.context is not None:
            raise ValueError(f"--context applies to --mode decode; --mode {args.mode} uses --seq-len")
        model = layer_model
        window = model.window_note(args.seq_len, "--seq-len")
        if args.mode == "decode" and args.context is not None:
            window = model.window_note(args.context, "--context") or window
        r = roofline_layer(
            model,
            args.seq_len,
            args.micro_batch,
            args.dtype,
            gpu,
            mode=args.mode,
            context=args.context,
        )
        lines = [
            format_table(
                [
                    (o.name, o.intensity_flop_per_byte, o.bound, o.attainable_tflops, o.time_s * 1e6)
                    for o in r.ops
                ],
                ("op", "FLOP/B", "bound", "TFLOP/s", "us"),
                formats={"FLOP/B": "{:.1f}", "TFLOP/s": "{:.1f}", "us": "{:.1f}"},
            )
        ]
        lines.append(
            f"layer: {r.attainable_tflops:.1f} TFLOP/s attainable, {r.memory_bound_time_share:.0%} of the "
            f"time memory-bound (ridge {r.ops[0].ridge_flop_per_byte:.0f} FLOP/B, {args.dtype} on {gpu.name})"
        )
        attention = (
            "attn_scores and attn_values are separate matmuls whose s x s scores cross HBM (eager "
            "attention); FlashAttention keeps them on chip, so its attention is more compute-bound"
        )
        assumptions = [attention] if args.mode == "prefill" else []  # decode: one query row, no s x s scores
        lines += [f"assumes: {a}" for a in assumptions]
        if window:
            lines.append(f"note: {window}")
        return Report(
            stable_keys(
                r.to_json_dict() | {"assumptions": assumptions, "window_note": window}, ROOFLINE_KEYS
            ),
            "\n".join(lines),
        )
    if args.dims is not None:
        if any(getattr(args, x) is not None for x in ("m", "n", "k")):
            raise ValueError("--dims and --m/--n/--k are two spellings of the same thing: give one")
        args.m, args.n, args.k = args.dims
    missing = [f"--{x}" for x in ("m", "n", "k") if getattr(args, x) is None]
    if missing:
        raise ValueError(f"give --dims M,N,K (or --m, --n and --k, or --model); missing {', '.join(missing)}")
    r = roofline_matmul(args.m, args.n, args.k, args.dtype, gpu, batch=args.batch)
    text = (
        f"({args.m} x {args.k}) @ ({args.k} x {args.n}) {args.dtype} on {gpu.name}: intensity "
        f"{r.intensity_flop_per_byte:.1f} FLOP/B vs ridge {r.ridge_flop_per_byte:.1f}: {r.bound}-bound, "
        f"attainable {r.attainable_tflops:.1f} of {r.peak_tflops:.1f} TFLOP/s, {r.time_s * 1e6:.1f} us"
    )
    return Report(stable_keys(r.to_json_dict() | {"assumptions": []}, ROOFLINE_KEYS), text)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train-time",
        help="time to train on T tokens: FLOPs, days, GPU-hours",
        description="seconds = FLOPs / (n_gpus x peak x utilization) (Narayanan et al. 2021 eq. 4)",
    )
    add_model_args(p, params=True)
    p.add_argument("--tokens", type=count, required=True, help="training tokens, e.g. 300B, 2T, 2e12")
    p.add_argument("--gpu", required=True, help="a GPU from `gpukit gpus`")
    p.add_argument("--gpus", type=positive_int, required=True, help="number of GPUs")
    u = p.add_mutually_exclusive_group()
    u.add_argument(
        "--mfu",
        type=fraction,
        help="share of peak sustained on the executed FLOPs, in (0, 1] (default 0.40, assumed); with --recompute this is the HFU (Narayanan et al. 2021's X / peak) and the MFU is lower",
    )
    u.add_argument(
        "--profile", help="calibration profile JSON from `gpukit calibrate` (measured matmul TFLOP/s)"
    )
    p.add_argument(
        "--efficiency", type=fraction, help="with --profile: share of the measured matmul rate (default 1)"
    )
    p.add_argument(
        "--recompute", choices=RECOMPUTE, default="none", help="activation recompute (default none)"
    )
    p.add_argument(
        "--dtype",
        choices=list(BYTES_PER_DTYPE),
        default=None,
        help="compute dtype (default bf16, fp16 on GPUs without bf16 units)",
    )
    p.add_argument(
        "--seq-len",
        "--seq",
        dest="seq_len",
        type=positive_int,
        help="sequence length (default: the model's pretraining train_seq_len, not its context window)",
    )
    add_json_flag(p)
    p.set_defaults(func=_train_time)

    p = subparsers.add_parser("flops", help="FLOPs per token (train, prefill, decode) with a breakdown")
    _model_or_params(p)
    p.add_argument(
        "--seq-len", "--seq", dest="seq_len", type=positive_int, required=True, help="tokens per sequence"
    )
    p.add_argument("--mode", choices=MODES, default="train", help="which passes to count (default train)")
    p.add_argument("--context", type=positive_int, help="decode: KV length attended (default seq-len)")
    p.add_argument(
        "--recompute", choices=RECOMPUTE, default="none", help="activation recompute (default none)"
    )
    p.add_argument("--no-causal", action="store_true", help="count full attention (PaLM convention)")
    p.add_argument(
        "--include-embeddings", action="store_true", help="count the LM-head matmul (needs --model)"
    )
    p.add_argument(
        "--layers",
        "--n-layers",
        dest="n_layers",
        type=positive_int,
        help="with --params: layers, for the attention term",
    )
    p.add_argument(
        "--hidden", type=positive_int, help="with --params: n_heads x head_dim, for the attention term"
    )
    add_json_flag(p)
    p.set_defaults(func=_flops)

    p = subparsers.add_parser("roofline", help="is a matmul (or a model's layer) compute- or memory-bound?")
    p.add_argument("--gpu", required=True, help="a GPU from `gpukit gpus`")
    p.add_argument(
        "--dtype",
        choices=list(BYTES_PER_DTYPE),
        default=None,
        help="compute dtype (default bf16, fp16 on GPUs without bf16 units)",
    )
    p.add_argument("--dims", type=_dims, help="matrix dimensions M,N,K of (M x K) @ (K x N) (or --m/--n/--k)")
    p.add_argument("--m", type=positive_int, help="rows of A and C (C = A @ B is m x n)")
    p.add_argument("--n", type=positive_int, help="columns of B and C")
    p.add_argument("--k", type=positive_int, help="inner dimension (columns of A, rows of B)")
    p.add_argument("--batch", type=positive_int, default=1, help="number of identical matmuls")
    p.add_argument("--model", help="instead of m/n/k: one layer of this model")
    add_hf_config_arg(p)
    p.add_argument(
        "--seq-len", "--seq", dest="seq_len", type=positive_int, help="with --model: tokens per sequence"
    )
    p.add_argument(
        "--micro-batch", type=positive_int, default=1, help="with --model: sequences per matmul (default 1)"
    )
    p.add_argument(
        "--mode",
        choices=("prefill", "decode"),
        default="prefill",
        help="with --model: prefill (default) or one decode token",
    )
    p.add_argument(
        "--context", type=positive_int, help="with --mode decode: KV length attended (default seq-len)"
    )
    add_json_flag(p)
    p.set_defaults(func=_roofline)
