"""`gpukit validate memory`: train a reference model for real and set three predictions beside it.

    gpukit validate memory [--arch gpt|llama] [--attention eager|sdpa] [--layers L --hidden H --heads A
        --kv-heads K --vocab V] [--seq-len S] [--micro-batch B] [--recompute none|full]
        [--precision fp32|bf16-mixed] [--optimizer adamw|sgd-momentum|sgd] [--device cpu|cuda] [--tied]
        [--grid | --random N [--seed N]] [--timeout SECONDS] [--json]

Prints, per category (params, grads, optimizer, activations, peak), the measured bytes
(gpukit.bench.measure: MemTracker on CPU, torch.cuda.max_memory_allocated on a GPU) and three
predictions with their errors: the eager replay (gpukit.memory.eager; GPT layout with eager
attention only), the planning model (gpukit.memory.estimate_memory, convention "pytorch": what
users plan with) and the papers' Megatron convention (estimate_memory, convention "megatron").
--grid runs the validation grid of the layout (gpukit.bench.measure_validate.VALIDATION_GRID / LLAMA_GRID);
--random N draws N configurations that no grid names (gpukit.bench.measure_validate.random_configs).
The CUDA branch is not yet run on a GPU.
"""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import bounded_int, timeout
from gpukit.cli.report import Report
from gpukit.results import stable_keys
from gpukit.units import fmt_bytes

_NAMES = (("predicted", "replay"), ("planning", "planning"), ("megatron", "megatron"))


# The keys of `validate memory --json` (docs/schemas/validate-memory.json), one configuration and a
# --grid/--random run alike (issue 25): config ... reconcile are null for a grid, rows ... all_ok for one.
VALIDATE_KEYS = (
    "config",
    "predicted",
    "planning",
    "megatron",
    "measured",
    "error",
    "reconcile",
    "rows",
    "max_abs_error",
    "models",
    "all_ok",
    "env",
)


def validation_text(r: dict) -> str:
    """One configuration (the dict of gpukit.bench.measure_validate.compare) as a table."""
    from gpukit.bench.measure_validate import config_label

    c, m, e, env = r["config"], r["measured"], r["error"], r["env"]
    lines = [
        f"reference {config_label(c)} ({c['n_params']:,} params)",
        f"measured on {c['device'].upper()} with {m['method']}, torch {env['torch']}, "
        f"{env['threads']} threads"
        + (
            ""
            if c["device"] == "cpu"
            else " (the models' CUDA branches: not yet run on a GPU before this run)"
        ),
        f"{'category':<22}{'measured':>12}" + "".join(f"{n:>12}{'err':>9}" for _, n in _NAMES),
    ]
    for k in ("params", "grads", "optimizer", "activations", "peak"):
        name = f"peak ({m['peak_phase']})" if k == "peak" else k
        row = f"{name:<22}{fmt_bytes(m[k]):>12}"
        for key, _ in _NAMES:
            if r[key] is None:
                row += f"{'-':>12}{'-':>9}"
            else:
                row += f"{fmt_bytes(r[key][k]):>12}{100 * e[key][k]:>+8.2f}%"
        lines.append(row)
    if c.get("sdpa_kernel"):
        lines.append(f"SDPA kernel torch picked: {c['sdpa_kernel']} (its backward node)")
    if r["predicted"] is None:
        lines.append(
            "replay: not modelled for this layout/attention (gpukit.memory.eager replays the GPT "
            "layout with eager attention)"
        )
    lines.append(
        f"planning model peak phase: {r['planning']['peak_phase']}; megatron convention: a sum "
        f"of parts (Korthikanti et al. 2022 Table 2, ZeRO sec. 3.1)"
    )
    if c["precision"] == "bf16-mixed":
        lines.append(
            "megatron splits mixed precision 2 + 2 + 12 bytes/param (16-bit weights and gradients, "
            "fp32 master in the optimizer); torch.autocast keeps 4 + 4 + 8: compare the peaks"
        )
    if r["predicted"] is not None:
        p = r["predicted"]
        meg, lay = p["megatron_activations"], p["layer_activations"]
        lines.append(
            f"activations of the {c['n_layers']} layers: Megatron convention (16-bit, dropout masks "
            f"counted) {fmt_bytes(meg)}; eager PyTorch {fmt_bytes(lay)} ({lay / meg:.2f}x)"
        )
        for step, delta in r.get("reconcile", ()):
            lines.append(f"  {step:<78}{'+' if delta >= 0 else '-'}{fmt_bytes(abs(delta))} per layer")
    if c["device"] == "cuda":
        lines.append(f"CUDA baseline subtracted (context, cuBLAS workspace): {fmt_bytes(m['baseline'])}")
    return "\n".join(lines)


def _run(args):
    from gpukit.bench.timing import run_with_watchdog

    try:  # the limit is kept from outside the work (a watchdog), never raised into an import
        return run_with_watchdog(lambda: _measure(args), args.timeout, "validate memory")
    except TimeoutError as e:  # exit 2 with one line, as `gpukit bench`
        raise ValueError(str(e)) from None


# The one configuration's flags and their defaults; --grid and --random choose their own configurations.
SINGLE_DEFAULTS = {
    "attention": "eager",
    "layers": 2,
    "hidden": 128,
    "heads": 4,
    "kv_heads": None,
    "vocab": 512,
    "seq": 128,
    "micro_batch": 2,
    "recompute": "none",
    "precision": "fp32",
    "optimizer": "adamw",
    "tied": False,
    "steps": 2,
}


def _single_flag(dest: str) -> str:
    return {"seq": "--seq-len"}.get(dest, "--" + dest.replace("_", "-"))


def _measure(args):
    from gpukit.errors import require_choice
    from gpukit.memory import EagerSetup, llama_spec, reference_spec

    if (
        args.grid or args.random is not None
    ):  # the grid's or the draw's configurations: these would be ignored
        given = [_single_flag(k) for k in SINGLE_DEFAULTS if getattr(args, k) is not None]
        if given:
            raise ValueError(
                f"{given[0]} sets the one configuration; {'--grid' if args.grid else '--random'} runs "
                "its own configurations (give --arch, --device, --threads, --timeout with it)"
            )
    if args.seed is not None and args.random is None:
        raise ValueError("--seed seeds --random; give --random N with it")
    for k, v in SINGLE_DEFAULTS.items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.seed = 0 if args.seed is None else args.seed
    require_choice("device", args.device, ("cpu", "cuda"))
    require_choice("arch", args.arch, ("gpt", "llama"))
    require_choice("attention", args.attention, ("eager", "sdpa"))
    if args.random is not None and (args.random < 1 or args.grid):
        raise ValueError(f"--random must be a positive count and not combined with --grid, got {args.random}")
    if args.arch == "gpt" and args.kv_heads not in (None, args.heads):
        raise ValueError(
            f"--kv-heads must equal --heads {args.heads} for --arch gpt (grouped-query attention "
            f"is the llama layout), got {args.kv_heads}"
        )
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch.cuda.is_available() is False")
    if args.threads is not None:
        if args.threads < 1:  # torch.set_num_threads(0) raises a RuntimeError, not a one-line error
            raise ValueError(f"--threads must be a positive integer, got {args.threads}")
        torch.set_num_threads(args.threads)
    if args.grid or args.random:
        from gpukit.bench.envinfo import env_stamp
        from gpukit.bench.measure_validate import (
            COMPARED,
            LLAMA_GRID,
            VALIDATION_GRID,
            error_table,
            grid_report,
            random_configs,
        )

        if args.random:
            grid = random_configs(args.random, args.seed, args.arch)
        else:
            grid = VALIDATION_GRID if args.arch == "gpt" else LLAMA_GRID
        df = grid_report(grid, device=args.device, print_table=not args.json)
        if args.json:
            worst = {k: float(df[f"{k}_err"].abs().max()) for k in COMPARED}
            payload = {
                "rows": df.to_dict(orient="records"),
                "max_abs_error": worst,
                "models": error_table(df).to_dict(orient="records"),
                "all_ok": bool(df["ok"].all()),
                "env": env_stamp(args.device),
            }
            return stable_keys(payload, VALIDATE_KEYS)
        return None
    from gpukit.bench.measure_validate import compare

    setup = EagerSetup(
        seq_len=args.seq,
        micro_batch=args.micro_batch,
        recompute=args.recompute,
        precision=args.precision,
        optimizer=args.optimizer,
        device=args.device,
    )
    if args.arch == "gpt":
        spec = reference_spec(
            n_layers=args.layers,
            hidden=args.hidden,
            n_heads=args.heads,
            vocab=args.vocab,
            seq=args.seq,
            tied_embeddings=args.tied,
        )
    else:
        kv = args.kv_heads if args.kv_heads is not None else max(1, args.heads // 2)
        spec = llama_spec(
            n_layers=args.layers,
            hidden=args.hidden,
            n_heads=args.heads,
            n_kv_heads=kv,
            vocab=args.vocab,
            seq=args.seq,
            tied_embeddings=args.tied,
        )
    result = compare(spec, setup, steps=args.steps, attention=args.attention)
    config = result["config"] | {"sdpa_kernel": result["config"].get("sdpa_kernel")}  # null: not sdpa
    return Report(stable_keys(result | {"config": config}, VALIDATE_KEYS), lambda: validation_text(result))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "validate", help="run the reference model for real and compare with the memory prediction"
    )
    sub = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    m = sub.add_parser("memory", help="predicted vs measured memory of real training steps")
    m.add_argument(
        "--arch",
        default="gpt",
        help="gpt (GPT-2/Megatron layout, default) or llama (RMSNorm, "
        "SwiGLU, grouped-query attention, RoPE, no biases)",
    )
    m.add_argument(
        "--attention", help="eager (default) or sdpa (torch.nn.functional.scaled_dot_product_attention)"
    )
    m.add_argument("--layers", "--n-layers", dest="layers", type=int, help="n_layers (default 2)")
    m.add_argument("--hidden", type=int, help="hidden size (default 128)")
    m.add_argument("--heads", "--n-heads", dest="heads", type=int, help="n_heads (default 4)")
    m.add_argument("--kv-heads", dest="kv_heads", type=int, help="n_kv_heads (llama; default heads // 2)")
    m.add_argument("--vocab", type=int, help="vocabulary size (default 512)")
    m.add_argument("--seq-len", "--seq", dest="seq", type=int, help="seq_len (default 128)")
    m.add_argument("--micro-batch", type=int, help="micro_batch (default 2)")
    m.add_argument("--recompute", help="none or full (default none)")
    m.add_argument("--precision", help="fp32 or bf16-mixed (default fp32)")
    m.add_argument("--optimizer", help="adamw, sgd-momentum or sgd (default adamw)")
    m.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    m.add_argument("--tied", action="store_true", default=None, help="tie the LM head to the token embedding")
    m.add_argument("--steps", type=bounded_int, help="training steps measured (>= 2, default 2)")
    m.add_argument("--threads", type=bounded_int, help="torch threads (default: torch's)")
    m.add_argument(
        "--timeout",
        type=timeout,
        default=600,
        help="seconds before giving up (default 600; --grid/--random: the whole run)",
    )
    m.add_argument("--grid", action="store_true", help="run the layout's whole validation grid instead")
    m.add_argument(
        "--random", type=int, help="run N random configurations of the layout instead (shapes no grid names)"
    )
    m.add_argument("--seed", type=int, help="seed of --random (default 0)")
    add_json_flag(m)
    m.set_defaults(func=_run)
    p.set_defaults(func=lambda args: p.print_help())
