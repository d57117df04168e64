"""`gpukit memory`: per-GPU memory of training or serving a model (gpukit.memory), and what fits.

Examples:
  gpukit memory --model llama-2-7b --gpu h100-sxm --recompute full
  gpukit memory --params 7B --zero 3 --dp 8 --json
  gpukit memory --layers 24 --hidden 2048 --heads 16 --seq 2048 --micro-batch 4 --gpu a100-80gb --max-micro-batch
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpukit import memory as mem
from gpukit.units import parse_count as parse_count_float

# TrainSetup / ModelSpec field -> the CLI flag that sets it, so errors name the flag.
FLAG_OF = {
    "precision": "--precision", "optimizer": "--optimizer", "zero_stage": "--zero", "dp": "--dp", "tp": "--tp",
    "pp": "--pp", "sp": "--sp", "seq_len": "--seq", "micro_batch": "--micro-batch", "grad_accum": "--grad-accum",
    "recompute": "--recompute", "attention": "--attention", "offload": "--offload", "finetune": "--finetune",
    "lora_rank": "--lora-rank", "lora_targets": "--lora-targets", "weights_dtype": "--weights-dtype",
    "batch": "--batch", "inference": "--inference", "n_params": "--params", "n_layers": "--layers",
    "hidden": "--hidden", "n_heads": "--heads", "n_kv_heads": "--kv-heads", "ffn_hidden": "--ffn-hidden",
    "vocab": "--vocab", "max_gpus": "--max-gpus", "max_seq_len": "--max-seq-len", "unknown model": "--model",
    "unknown gpu": "--gpu",
    "grad_dtype": "--grad-dtype", "grad_accum_buffer": "--grad-accum-buffer", "virtual_stages": "--virtual-stages",
    "pp*virtual_stages": "--virtual-stages", "zero3_prefetch_layers": "--zero3-prefetch-layers",
}
DIM_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "mlp")


def parse_count(text: str) -> int:
    """'7e9', '7B', '125M', '1.5T', '350k', '7_000' -> int (units.parse_count); ValueError otherwise."""
    n = parse_count_float(text, "--params")
    if n < 1:
        raise ValueError(f"--params must be at least 1, got {text!r}")
    return int(round(n))


def register(subparsers) -> None:
    from gpukit.cli import add_json_flag

    p = subparsers.add_parser("memory", help="per-GPU memory of training or inference; does it fit?",
                              description="Per-GPU memory (bytes, GiB) of training or serving a transformer: "
                                          "weights, gradients, optimizer, activations, logits, KV cache, overhead.")
    g = p.add_argument_group("model (one of: --model, --params, or --layers/--hidden/--heads)")
    g.add_argument("--model", help="catalog model name (gpukit catalogs models)")
    g.add_argument("--params", help="bare parameter count (7e9, 7B, 125M): model states only, no activations")
    g.add_argument("--layers", type=int, help="n_layers")
    g.add_argument("--hidden", type=int, help="hidden size")
    g.add_argument("--heads", type=int, help="n_heads")
    g.add_argument("--kv-heads", dest="kv_heads", type=int, help="n_kv_heads (grouped-query attention)")
    g.add_argument("--ffn-hidden", dest="ffn_hidden", type=int, help="MLP width (default 4*hidden, SwiGLU 8/3*hidden)")
    g.add_argument("--vocab", type=int, help="vocabulary size (default 50257)")
    g.add_argument("--mlp", choices=("gelu", "swiglu"), help="gelu: GPT layout; swiglu: Llama layout (RMSNorm, RoPE, no bias)")
    t = p.add_argument_group("training / inference setup (defaults: gpukit.memory.TrainSetup)")
    t.add_argument("--precision", choices=mem.PRECISIONS)
    t.add_argument("--optimizer", choices=mem.OPTIMIZERS)
    t.add_argument("--zero", dest="zero_stage", type=int, choices=(0, 1, 2, 3), help="ZeRO stage")
    t.add_argument("--dp", type=int, help="data-parallel size")
    t.add_argument("--tp", type=int, help="tensor-parallel size")
    t.add_argument("--pp", type=int, help="pipeline-parallel size")
    t.add_argument("--sp", action="store_true", default=None, help="Megatron sequence parallelism (with --tp > 1)")
    t.add_argument("--seq", dest="seq_len", type=int, help="tokens per sequence (default 2048, or the model's max_seq if shorter)")
    t.add_argument("--micro-batch", dest="micro_batch", type=int, help="sequences per GPU per micro-batch")
    t.add_argument("--grad-accum", dest="grad_accum", type=int, help="micro-batches per step (in flight with --pp)")
    t.add_argument("--recompute", choices=mem.RECOMPUTE)
    t.add_argument("--attention", choices=mem.ATTENTION, help="flash (default): no stored s^2 scores; eager: stores them")
    t.add_argument("--no-dropout", dest="dropout", action="store_false", default=None, help="no dropout masks (Llama-style)")
    t.add_argument("--offload", choices=mem.OFFLOAD, help="optimizer: ZeRO-Offload; all: ZeRO-Infinity")
    t.add_argument("--finetune", choices=mem.FINETUNE)
    t.add_argument("--lora-rank", dest="lora_rank", type=int)
    t.add_argument("--lora-targets", dest="lora_targets", choices=mem.LORA_TARGETS)
    t.add_argument("--weights-dtype", dest="weights_dtype", choices=mem.WEIGHT_DTYPES, help="inference / LoRA base")
    t.add_argument("--inference", action="store_true", default=None, help="serve: weights + KV cache, no training state")
    t.add_argument("--batch", type=int, help="inference: concurrent sequences in the KV cache")
    c = p.add_argument_group("conventions the papers use (issue 10; defaults: ZeRO paper, 16 bytes/param)")
    c.add_argument("--grad-dtype", dest="grad_dtype", choices=mem.GRAD_DTYPES,
                   help="fp32: Megatron's main-grad buffer (18 B/param; 6 + 12/dp with --zero 1)")
    c.add_argument("--grad-accum-buffer", dest="grad_accum_buffer", choices=mem.GRAD_ACCUM_BUFFERS,
                   help="fp32: separate fp32 accumulation buffer next to 16-bit grads (20 B/param)")
    c.add_argument("--virtual-stages", dest="virtual_stages", type=int,
                   help="interleaved pipeline: model chunks per stage (first stage x (1 + (p-1)/(p v)))")
    c.add_argument("--zero3-prefetch-layers", dest="zero3_prefetch_layers", type=int,
                   help="ZeRO-3/FSDP: layers gathered ahead of the working one (FSDP2 default behaviour: 1)")
    q = p.add_argument_group("questions (need --gpu)")
    q.add_argument("--gpu", help="catalog GPU name: adds overhead and a fits verdict")
    q.add_argument("--max-micro-batch", dest="ask_micro_batch", action="store_true", help="largest micro-batch (inference: batch) that fits")
    q.add_argument("--max-seq-len", dest="ask_seq_len", action="store_true", help="longest sequence that fits")
    q.add_argument("--min-gpus", dest="ask_min_gpus", action="store_true", help="fewest GPUs per ZeRO stage (inference: tp)")
    q.add_argument("--max-gpus", dest="max_gpus", type=int, default=1024, help="search limit for --min-gpus (default 1024)")
    add_json_flag(p)
    p.set_defaults(func=handle)


def _model_from_args(args):
    """(ModelSpec or None, n_params or None) from the model flags; ValueError naming the flags."""
    from gpukit.catalog import get_model
    from gpukit.specs import ModelSpec

    dims = [f for f in DIM_FLAGS if getattr(args, f) is not None]
    flag_list = ", ".join("--" + f.replace("_", "-") for f in dims)
    given = [x for x, on in (("--model", args.model is not None), ("--params", args.params is not None),
                             (flag_list, bool(dims))) if on]
    if len(given) > 1:
        raise ValueError(f"{' and '.join(given)} are mutually exclusive: give the model one way")
    if not given:
        raise ValueError("give the model: --model NAME, --params N, or --layers L --hidden H --heads A")
    if args.model is not None:
        return get_model(args.model), None
    if args.params is not None:
        return None, parse_count(args.params)
    missing = [f"--{f}" for f in ("layers", "hidden", "heads") if getattr(args, f) is None]
    if missing:
        raise ValueError(f"--layers, --hidden and --heads go together; missing {', '.join(missing)}")
    for flag, v in (("--layers", args.layers), ("--hidden", args.hidden), ("--heads", args.heads),
                    ("--kv-heads", args.kv_heads), ("--ffn-hidden", args.ffn_hidden), ("--vocab", args.vocab)):
        if v is not None and v < 1:
            raise ValueError(f"{flag} must be a positive integer, got {v}")
    if args.hidden % args.heads:
        raise ValueError(f"--heads {args.heads} must divide --hidden {args.hidden}")
    llama = args.mlp == "swiglu"
    kw = dict(name="custom", n_layers=args.layers, hidden=args.hidden, n_heads=args.heads,
              n_kv_heads=args.kv_heads, ffn_hidden=args.ffn_hidden, vocab=args.vocab or 50257,
              max_seq=max(2048, args.seq_len or 0), mlp=args.mlp or "gelu")
    if llama:
        kw.update(norm="rmsnorm", position="rope", bias=False)
    return ModelSpec(**kw), None


def _flagged(err: ValueError) -> ValueError:
    """Prefix an API error with the CLI flag it is about ("tp must ..." -> "--tp: tp must ...")."""
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    for key, flag in sorted(FLAG_OF.items(), key=lambda kv: -len(kv[0])):
        if re.match(rf"{re.escape(key)}\b", msg) and not msg.startswith("--"):
            return ValueError(f"{flag}: {msg}")
    return ValueError(msg)


@dataclass(frozen=True)
class MemoryReport:
    """The breakdown plus the answers to the question flags."""

    breakdown: mem.MemoryBreakdown
    answers: dict

    def to_json_dict(self) -> dict:
        d = self.breakdown.to_json_dict()
        for k, v in self.answers.items():
            d[k] = v.to_json_dict() if hasattr(v, "to_json_dict") else v
        return d

    def to_text(self) -> str:
        lines = [self.breakdown.to_text()]
        if "max_micro_batch" in self.answers:
            what = "batch" if self.breakdown.setup.inference else "micro-batch"
            lines.append(f"largest {what} that fits: {self.answers['max_micro_batch']}")
        if "max_seq_len" in self.answers:
            lines.append(f"longest sequence that fits: {self.answers['max_seq_len']} tokens")
        if "min_gpus" in self.answers:
            lines.append("fewest GPUs:\n" + self.answers["min_gpus"].to_text())
        return "\n".join(lines)


def handle(args):
    from gpukit.catalog import get_gpu

    try:
        model, n_params = _model_from_args(args)
        keys = ("precision", "optimizer", "zero_stage", "dp", "tp", "pp", "sp", "seq_len", "micro_batch", "grad_accum",
                "recompute", "attention", "dropout", "offload", "finetune", "lora_rank", "lora_targets",
                "weights_dtype", "inference", "batch", "grad_dtype", "grad_accum_buffer", "virtual_stages",
                "zero3_prefetch_layers")
        kw = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
        if "seq_len" not in kw and model is not None:  # TrainSetup's 2048, or the model's context if shorter
            kw["seq_len"] = min(model.max_seq, mem.TrainSetup().seq_len)
        setup = mem.TrainSetup(**kw)
        gpu = get_gpu(args.gpu) if args.gpu is not None else None
        asked = [f for f, on in (("--max-micro-batch", args.ask_micro_batch), ("--max-seq-len", args.ask_seq_len),
                                 ("--min-gpus", args.ask_min_gpus)) if on]
        if asked and gpu is None:
            raise ValueError(f"{asked[0]} needs --gpu NAME")
        result = mem.estimate_memory(model, n_params=n_params, setup=setup, gpu=gpu)
        answers = {}
        if args.ask_micro_batch:
            answers["max_micro_batch"] = mem.max_micro_batch(model, setup, gpu, n_params=n_params)
        if args.ask_seq_len:
            answers["max_seq_len"] = mem.max_seq_len(model, setup, gpu)
        if args.ask_min_gpus:
            answers["min_gpus"] = mem.min_gpus(model, setup, gpu, n_params=n_params, max_gpus=args.max_gpus)
    except ValueError as e:
        raise _flagged(e) from None
    return MemoryReport(result, answers) if answers else result
