"""`gpukit memory`: per-GPU memory of training or serving a model (gpukit.memory), and what fits.

Examples:
  gpukit memory --model llama-2-7b --gpu h100-sxm --recompute full
  gpukit memory --params 7B --zero 3 --dp 8 --json
  gpukit memory --layers 24 --hidden 2048 --heads 16 --seq-len 2048 --micro-batch 4 --gpu a100-80gb --max-micro-batch

Flags follow docs/CONTRACTS.md's vocabulary; old spellings stay as aliases (--seq, --n-layers, --n-heads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpukit import memory as mem
from gpukit import memory as mem_fit
from gpukit.quant import LORA_TARGETS
from gpukit.units import parse_count as parse_count_float

# TrainSetup / ModelSpec field -> the CLI flag that sets it, so errors name the flag.
FLAG_OF = {
    "precision": "--precision", "optimizer": "--optimizer", "zero_stage": "--zero", "dp": "--dp", "tp": "--tp",
    "pp": "--pp", "sp": "--sp", "seq_len": "--seq-len", "micro_batch": "--micro-batch", "grad_accum": "--grad-accum",
    "recompute": "--recompute", "attention": "--attention", "offload": "--offload", "finetune": "--finetune",
    "lora_rank": "--lora-rank", "lora_targets": "--lora-targets", "weights_dtype": "--weights-dtype",
    "batch": "--batch", "inference": "--inference", "n_params": "--params", "n_layers": "--layers",
    "hidden": "--hidden", "n_heads": "--heads", "n_kv_heads": "--kv-heads", "ffn_hidden": "--ffn-hidden",
    "vocab": "--vocab", "max_gpus": "--max-gpus", "max_seq_len": "--max-seq-len", "unknown model": "--model",
    "unknown gpu": "--gpu",
    "grad_dtype": "--grad-dtype", "grad_accum_buffer": "--grad-accum-buffer", "virtual_stages": "--virtual-stages",
    "pp*virtual_stages": "--virtual-stages", "zero3_prefetch_layers": "--zero3-prefetch-layers",
    "sliding_window": "--sliding-window",
}
DIM_FLAGS = ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "mlp", "sliding_window")


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
    g.add_argument("--layers", "--n-layers", dest="layers", type=int, help="n_layers")
    g.add_argument("--hidden", type=int, help="hidden size")
    g.add_argument("--heads", "--n-heads", dest="heads", type=int, help="n_heads")
    g.add_argument("--kv-heads", dest="kv_heads", type=int, help="n_kv_heads (grouped-query attention)")
    g.add_argument("--ffn-hidden", dest="ffn_hidden", type=int, help="MLP width (default 4*hidden, SwiGLU 8/3*hidden)")
    g.add_argument("--vocab", type=int, help="vocabulary size (default 50257)")
    g.add_argument("--mlp", choices=("gelu", "swiglu"), help="gelu: GPT layout; swiglu: Llama layout (RMSNorm, RoPE, no bias)")
    add_sliding_window_flag(g)
    t = p.add_argument_group("training / inference setup (defaults: gpukit.memory.TrainSetup)")
    t.add_argument("--precision", choices=mem.PRECISIONS)
    t.add_argument("--optimizer", choices=mem.OPTIMIZERS)
    t.add_argument("--zero", dest="zero_stage", type=int, choices=(0, 1, 2, 3), help="ZeRO stage")
    t.add_argument("--dp", type=int, help="data-parallel size")
    t.add_argument("--tp", type=int, help="tensor-parallel size")
    t.add_argument("--pp", type=int, help="pipeline-parallel size")
    t.add_argument("--sp", action="store_true", default=None, help="Megatron sequence parallelism (with --tp > 1)")
    t.add_argument("--seq-len", "--seq", dest="seq_len", type=int,
                   help="tokens per sequence (default 2048, or the model's max_seq if shorter; the output says so)")
    t.add_argument("--micro-batch", dest="micro_batch", type=int, help="sequences per GPU per micro-batch")
    t.add_argument("--grad-accum", dest="grad_accum", type=int,
                   help="micro-batches per step; with --pp, min(pp, grad_accum) are in flight on the first stage "
                        "(default with --pp > 1: pp, stated in the output)")
    t.add_argument("--recompute", choices=mem.RECOMPUTE)
    t.add_argument("--attention", choices=mem.ATTENTION, help="flash (default): no stored s^2 scores; eager: stores them")
    t.add_argument("--dropout", dest="dropout", action="store_const", const=True, default=None,
                   help="count dropout masks (default: the model row's `dropout`; custom shapes: the layout's, "
                        "gelu yes, swiglu no)")
    t.add_argument("--no-dropout", dest="dropout", action="store_const", const=False,
                   help="no dropout masks (Llama-style)")
    t.add_argument("--offload", choices=mem.OFFLOAD, help="optimizer: ZeRO-Offload; all: ZeRO-Infinity")
    t.add_argument("--finetune", choices=mem.FINETUNE)
    t.add_argument("--lora-rank", dest="lora_rank", type=int)
    t.add_argument("--lora-targets", dest="lora_targets", choices=LORA_TARGETS)
    t.add_argument("--weights-dtype", dest="weights_dtype", choices=mem.WEIGHT_DTYPES, help="inference / LoRA base")
    t.add_argument("--inference", action="store_true", default=None, help="serve: weights + KV cache, no training state")
    t.add_argument("--batch", type=int, help="inference: concurrent sequences in the KV cache")
    t.add_argument("--convention", choices=mem.CONVENTIONS,
                   help="pytorch (default): the peak of a step as eager PyTorch keeps it; megatron: the papers' sum of parts")
    t.add_argument("--optimizer-impl", dest="optimizer_impl", choices=mem.OPTIMIZER_IMPLS,
                   help="torch.optim implementation (default: torch's for CUDA, foreach); pytorch convention only")
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
    q.add_argument("--max-gpus", dest="max_gpus", type=int, help=f"search limit for --min-gpus (default {mem_fit.MAX_GPUS})")
    add_json_flag(p)
    p.set_defaults(func=handle)


def add_sliding_window_flag(group) -> None:
    """--sliding-window W for a custom shape (ModelSpec.sliding_window; catalog models carry their own)."""
    group.add_argument("--sliding-window", dest="sliding_window", type=int,
                       help="attention window in tokens (Mistral 7B v0.1: 4096): the KV cache holds at most W "
                            "tokens per sequence (default: full attention)")


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
                    ("--kv-heads", args.kv_heads), ("--ffn-hidden", args.ffn_hidden), ("--vocab", args.vocab),
                    ("--sliding-window", args.sliding_window)):
        if v is not None and v < 1:
            raise ValueError(f"{flag} must be a positive integer, got {v}")
    if args.hidden % args.heads:
        raise ValueError(f"--heads {args.heads} must divide --hidden {args.hidden}")
    llama = args.mlp == "swiglu"
    kw = dict(name="custom", n_layers=args.layers, hidden=args.hidden, n_heads=args.heads,
              n_kv_heads=args.kv_heads, ffn_hidden=args.ffn_hidden, vocab=args.vocab or 50257,
              max_seq=max(2048, args.seq_len or 0), mlp=args.mlp or "gelu", sliding_window=args.sliding_window)
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


MICRO_BATCH_LIMIT = 1 << 16  # search limit of --max-micro-batch
SEQ_LEN_LIMIT = 1 << 22  # search limit of --max-seq-len for a custom shape (no context window)


@dataclass(frozen=True)
class MemoryReport:
    """The breakdown, the answers to the question flags, and the assumptions made for the user."""

    breakdown: mem.MemoryBreakdown
    answers: dict
    notes: tuple[str, ...] = ()
    answer_lines: tuple[str, ...] = ()

    def to_json_dict(self) -> dict:
        d = self.breakdown.to_json_dict()
        for k, v in self.answers.items():
            d[k] = v.to_json_dict() if hasattr(v, "to_json_dict") else v
        if self.notes:
            d["notes"] = list(self.notes)
        return d

    def to_text(self) -> str:
        lines = [self.breakdown.to_text(), *self.answer_lines]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


def handle(args):
    from gpukit.catalog import get_gpu

    notes, answer_lines = [], []
    try:
        model, n_params = _model_from_args(args)
        custom = model is not None and args.model is None
        keys = ("precision", "optimizer", "zero_stage", "dp", "tp", "pp", "sp", "seq_len", "micro_batch", "grad_accum",
                "recompute", "attention", "dropout", "offload", "finetune", "lora_rank", "lora_targets",
                "weights_dtype", "inference", "batch", "convention", "optimizer_impl", "grad_dtype",
                "grad_accum_buffer", "virtual_stages", "zero3_prefetch_layers")
        kw = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
        # A flag of the other mode would be ignored without a word (--micro-batch 64 --inference served batch 1)
        if kw.get("inference"):
            wrong = [f for f, k in (("--micro-batch", "micro_batch"), ("--grad-accum", "grad_accum"),
                                    ("--optimizer", "optimizer"), ("--recompute", "recompute"),
                                    ("--dropout/--no-dropout", "dropout"), ("--lora-rank", "lora_rank"),
                                    ("--lora-targets", "lora_targets"), ("--sp", "sp"),
                                    ("--optimizer-impl", "optimizer_impl"), ("--dp", "dp")) if k in kw]
            if wrong:
                raise ValueError(f"{wrong[0]} applies to training, not --inference (serving uses --batch sequences "
                                 "of --seq-len tokens)")
        elif "batch" in kw:
            raise ValueError("--batch applies to --inference (sequences in the KV cache); training uses --micro-batch")
        elif kw.get("finetune", "full") == "full" and (lora := [f for f, k in (("--lora-rank", "lora_rank"),
                                                                                ("--lora-targets", "lora_targets"))
                                                                 if k in kw]):
            raise ValueError(f"{lora[0]} applies to --finetune lora or qlora (the adapters); full finetuning has none")
        if args.max_gpus is not None and not args.ask_min_gpus:
            raise ValueError("--max-gpus is the search limit of --min-gpus; give --min-gpus with it")
        if "seq_len" not in kw and model is not None:  # TrainSetup's 2048, or the model's context if shorter
            kw["seq_len"] = min(model.max_seq, mem.TrainSetup().seq_len)
            if not custom:
                notes.append(f"--seq-len not given: {kw['seq_len']} tokens (default 2048, capped at the context "
                             f"window {model.max_seq}); {model.name} was pretrained at {model.train_seq_len}")
        if custom:  # a custom shape has no row in gpukit/data/models.csv: every default picked for it is said
            picked = []
            if "dropout" not in kw and not kw.get("inference"):
                # Its layout's recipe: GPT/Megatron (GeLU) trains with dropout 0.1, masks counted as in Korthikanti
                # et al. 2022 Table 2; the Llama layout (--mlp swiglu) trains without (Touvron et al. 2023), as
                # gpukit.parallel.layout_search assumes.
                kw["dropout"] = model.mlp == "gelu"
                picked.append(f"dropout masks {'counted (GPT' if kw['dropout'] else 'not counted (Llama'} layout; "
                              "--dropout/--no-dropout)")
            if args.vocab is None:
                picked.append(f"vocab {model.vocab} (GPT-2's; --vocab)")
            if args.ffn_hidden is None:
                picked.append(f"ffn_hidden {model.ffn_hidden} ({'4 x hidden' if model.mlp == 'gelu' else '8/3 x hidden rounded up to 256, as Llama'}; --ffn-hidden)")
            if picked:
                notes.append("custom shape, defaults: " + ", ".join(picked))
        if model is not None and "dropout" not in kw and not kw.get("inference"):
            notes.append(f"dropout masks {'counted' if model.dropout else 'not counted'}: {model.name} trains "
                         f"{'with' if model.dropout else 'without'} dropout (gpukit/data/models.csv; --dropout/--no-dropout)")
        pp = kw.get("pp", 1)
        if pp > 1 and "grad_accum" not in kw and not kw.get("inference"):
            # 1F1B keeps min(pp, grad_accum) micro-batches on the first stage (Korthikanti et al. 2022 sec. 4.2.3);
            # grad_accum 1 with pp > 1 would keep one, activations pp times smaller than a real pipeline's.
            kw["grad_accum"] = pp
            notes.append(f"--grad-accum not given with --pp {pp}: assumed {pp} micro-batches per step, so the first "
                         f"stage holds {pp} in flight (1F1B); give --grad-accum to change it")
        gpu = get_gpu(args.gpu) if args.gpu is not None else None
        if gpu is not None and not gpu.has("bf16"):  # V100, T4
            if "precision" not in kw:  # serving too: its activations and KV cache follow the precision
                kw["precision"] = "fp16-mixed"
                what = ("fp16 compute" if not kw.get("inference") else "fp16 activations and KV cache"
                        if "weights_dtype" in kw else "fp16 weights, activations and KV cache")
                notes.append(f"--precision not given: fp16-mixed ({what}), as {gpu.name} has no bf16 units (the "
                             "default bf16-mixed needs them; the memory is the same)")
            elif str(kw.get("precision", "")).startswith("bf16") or kw.get("weights_dtype") == "bf16":
                notes.append(f"{gpu.name} has no bf16 units: bf16 runs emulated or not at all; fp16 takes the "
                             "same memory")
        setup = mem.TrainSetup(**kw)
        if "optimizer_impl" in kw and not setup.inference and (setup.convention != "pytorch" or setup.finetune != "full"):
            raise ValueError("--optimizer-impl picks torch's kernels in the pytorch convention's step model (full "
                             "training); with " + ("--convention megatron" if setup.convention != "pytorch" else
                                                   f"--finetune {setup.finetune}") + " it changes nothing")
        if setup.zero_stage and setup.dp == 1 and setup.offload == "none":
            notes.append(f"--zero {setup.zero_stage} with --dp 1: nothing is partitioned (ZeRO splits the states "
                         "over the data-parallel ranks); give --dp")
        if setup.recompute == "selective" and setup.attention == "flash" and model is not None:
            notes.append("--recompute selective with --attention flash saves next to nothing: selective recompute "
                         "drops the s^2 attention scores (Korthikanti et al. 2022 sec. 5), which FlashAttention never "
                         "stores (Dao et al. 2022); --recompute full or --attention eager make the difference")
        if setup.sp and setup.tp == 1:
            notes.append("--sp with --tp 1: sequence parallelism splits along the tensor-parallel group; no effect")
        if model is not None and setup.inference:  # gpukit.memory.parts: the prefill working set, not a measured peak
            notes.append(f"activations: one layer's prefill working set for all {setup.batch} x {setup.seq_len} tokens "
                         "at once (an upper bound: servers that chunk the prefill, as vLLM does, need less)")
        if model is None:  # a bare count: the total is a lower bound, and the seq/batch flags change nothing
            notes.append("--params counts model states only: activations, logits and the KV cache are not "
                         "modelled (0 here)" + (", nor ZeRO-3's gathered layer" if setup.zero_stage == 3 else "")
                         + ", so the total is a lower bound; give --model or --layers/--hidden/--heads for them")
        if model is not None and not custom and (note := model.window_note(setup.seq_len, "--seq-len")):
            notes.append(note)
        if model is not None and setup.inference and (note := model.sliding_window_note(setup.seq_len)):
            notes.append(note)
        asked = [f for f, on in (("--max-micro-batch", args.ask_micro_batch), ("--max-seq-len", args.ask_seq_len),
                                 ("--min-gpus", args.ask_min_gpus)) if on]
        if asked and gpu is None:
            raise ValueError(f"{asked[0]} needs --gpu NAME")
        if args.ask_micro_batch and model is None:
            raise ValueError("--max-micro-batch needs the model's shape (--model or --layers/--hidden/--heads): "
                             "with --params, activations are not modelled and every micro-batch would fit")
        if args.ask_seq_len and model is None:
            raise ValueError("--max-seq-len needs the model's shape (--model or --layers/--hidden/--heads), not --params")
        result = mem.estimate_memory(model, n_params=n_params, setup=setup, gpu=gpu)
        answers = {}
        if args.ask_micro_batch:
            what = "batch" if setup.inference else "micro-batch"
            n = mem.max_micro_batch(model, setup, gpu, limit=MICRO_BATCH_LIMIT)
            answers["max_micro_batch"] = n
            answers["max_micro_batch_capped"] = n == MICRO_BATCH_LIMIT
            answer_lines.append(f"largest {what} that fits: " + (
                f"at least {n} (the search limit)" if n == MICRO_BATCH_LIMIT else
                f"{n}" if n else "none (even 1 does not fit)"))
        if args.ask_seq_len:
            limit = SEQ_LEN_LIMIT if custom else model.max_seq
            n = mem.max_seq_len(model, setup, gpu, limit=limit)
            answers["max_seq_len"] = n
            answers["max_seq_len_capped"] = n == limit
            why = ("the search limit; a custom shape has no context window" if custom else
                   f"{model.name}'s context window max_seq; memory is not what limits it")
            answer_lines.append("longest sequence that fits: " + (
                f"{n} tokens ({why})" if n == limit else f"{n} tokens" if n else "none (even 1 token does not fit)"))
        if args.ask_min_gpus:
            answers["min_gpus"] = mem.min_gpus(model, setup, gpu, n_params=n_params,
                                               max_gpus=mem_fit.MAX_GPUS if args.max_gpus is None else args.max_gpus)
    except ValueError as e:
        raise _flagged(e) from None
    report = MemoryReport(result, answers, tuple(notes), tuple(answer_lines))
    if "min_gpus" in answers:
        return _WithPlan(report)
    return report


class _WithPlan:
    """MemoryReport plus the --min-gpus table in text output."""

    def __init__(self, report: MemoryReport):
        self.report = report

    def to_json_dict(self) -> dict:
        return self.report.to_json_dict()

    def to_text(self) -> str:
        return self.report.to_text() + "\nfewest GPUs:\n" + self.report.answers["min_gpus"].to_text()
