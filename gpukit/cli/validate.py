"""`gpukit validate memory`: train the reference GPT for real and set the prediction beside it.

    gpukit validate memory [--layers L --hidden H --heads A --vocab V] [--seq-len S] [--micro-batch B]
        [--recompute none|full] [--precision fp32|bf16-mixed] [--optimizer adamw|sgd-momentum|sgd]
        [--device cpu|cuda] [--tied] [--grid] [--timeout SECONDS] [--json]

Prints predicted (gpukit.memory_eager), measured (gpukit.bench.measure: MemTracker on CPU, plus the CUDA
allocator on a GPU) and the relative error per category, and the Megatron-convention activation
figure (Korthikanti et al. 2022 Table 2) so that the gap to the paper's formula is visible.
--grid runs gpukit.bench.measure.VALIDATION_GRID instead (about a minute on 2 cores).
"""

from __future__ import annotations

from gpukit.cli import add_json_flag
from gpukit.errors import positive_int_arg, timeout_arg
from gpukit.results import format_table
from gpukit.units import fmt_bytes


class ValidationResult:
    """One configuration: the dict of gpukit.bench.measure.compare, printable as a table."""

    def __init__(self, result: dict):
        self.result = result

    def to_json_dict(self) -> dict:
        return self.result

    def to_text(self) -> str:
        r = self.result
        c, p, m, e, env = r["config"], r["predicted"], r["measured"], r["error"], r["env"]
        lines = [f"reference GPT L{c['n_layers']} h{c['hidden']} a{c['n_heads']} V{c['vocab']} "
                 f"({c['n_params']:,} params), seq {c['seq_len']}, micro-batch {c['micro_batch']}, "
                 f"recompute {c['recompute']}, {c['precision']}, {c['optimizer']}",
                 f"measured on {c['device'].upper()} with {m['method']}, torch {env['torch']}, "
                 f"{env['threads']} threads",
                 format_table([[f"peak ({m['peak_phase']})" if k == "peak" else k, fmt_bytes(p[k]), fmt_bytes(m[k]),
                               f"{100 * e[k]:+.2f}%"] for k in ("params", "grads", "optimizer", "activations", "peak")],
                              ("category", "predicted", "measured", "error"))]
        meg, lay = p["megatron_activations"], p["layer_activations"]
        lines.append(f"activations of the {c['n_layers']} layers: Megatron convention (Korthikanti et al. 2022 "
                     f"Table 2, 16-bit, dropout masks counted) {fmt_bytes(meg)}; eager PyTorch {fmt_bytes(lay)} "
                     f"({lay / meg:.2f}x); the LM head and loss keep {fmt_bytes(p['activations'] - lay)} more")
        for step, delta in r.get("reconcile", ()):
            lines.append(f"  {step:<78}{'+' if delta >= 0 else '-'}{fmt_bytes(abs(delta))} per layer")
        if c["device"] == "cuda":
            lines.append(f"CUDA baseline subtracted (context, cuBLAS workspace): {fmt_bytes(m['baseline'])}")
        return "\n".join(lines)


def _run(args):
    from gpukit.bench.timing import wall_clock_limit

    try:
        with wall_clock_limit(args.timeout, "validate memory"):
            return _measure(args)
    except TimeoutError as e:  # exit 2 with one line, as `gpukit bench`
        raise ValueError(str(e)) from None


def _measure(args):
    from gpukit.memory_eager import EagerSetup, reference_spec

    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device must be one of cpu, cuda; got {args.device!r}")
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch.cuda.is_available() is False")
    if args.threads is not None:
        if args.threads < 1:  # torch.set_num_threads(0) raises a RuntimeError, not a one-line error
            raise ValueError(f"--threads must be a positive integer, got {args.threads}")
        torch.set_num_threads(args.threads)
    if args.grid:
        from gpukit.bench.envinfo import env_stamp
        from gpukit.bench.measure import COMPARED, grid_report

        df = grid_report(device=args.device, print_table=not args.json)
        worst = {k: float(df[f"{k}_err"].abs().max()) for k in COMPARED}
        if args.json:
            return {"rows": df.to_dict(orient="records"), "max_abs_error": worst,
                    "all_ok": bool(df["ok"].all()), "env": env_stamp(args.device)}
        return None
    from gpukit.bench.measure import compare

    setup = EagerSetup(seq_len=args.seq, micro_batch=args.micro_batch, recompute=args.recompute,
                       precision=args.precision, optimizer=args.optimizer, device=args.device)
    spec = reference_spec(n_layers=args.layers, hidden=args.hidden, n_heads=args.heads, vocab=args.vocab,
                          seq=args.seq, tied_embeddings=args.tied)
    return ValidationResult(compare(spec, setup, steps=args.steps))


def register(subparsers) -> None:
    p = subparsers.add_parser("validate", help="run the reference model for real and compare with the "
                                               "memory prediction")
    sub = p.add_subparsers(dest="what", metavar="WHAT", parser_class=type(p))
    m = sub.add_parser("memory", help="predicted vs measured memory of real training steps")
    m.add_argument("--layers", "--n-layers", dest="layers", type=int, default=2, help="n_layers (default 2)")
    m.add_argument("--hidden", type=int, default=128, help="hidden size (default 128)")
    m.add_argument("--heads", "--n-heads", dest="heads", type=int, default=4, help="n_heads (default 4)")
    m.add_argument("--vocab", type=int, default=512, help="vocabulary size (default 512)")
    m.add_argument("--seq-len", "--seq", dest="seq", type=int, default=128, help="seq_len (default 128)")
    m.add_argument("--micro-batch", type=int, default=2, help="micro_batch (default 2)")
    m.add_argument("--recompute", default="none", help="none or full (default none)")
    m.add_argument("--precision", default="fp32", help="fp32 or bf16-mixed (default fp32)")
    m.add_argument("--optimizer", default="adamw", help="adamw, sgd-momentum or sgd (default adamw)")
    m.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    m.add_argument("--tied", action="store_true", help="tie the LM head to the token embedding")
    m.add_argument("--steps", type=positive_int_arg, default=2, help="training steps measured (>= 2, default 2)")
    m.add_argument("--threads", type=positive_int_arg, help="torch threads (default: torch's)")
    m.add_argument("--timeout", type=timeout_arg, default=600,
                   help="seconds before giving up (default 600; --grid: the whole grid)")
    m.add_argument("--grid", action="store_true", help="run the whole validation grid instead")
    add_json_flag(m)
    m.set_defaults(func=_run)
    p.set_defaults(func=lambda args: p.print_help())
