"""`gpukit memory`: per-GPU memory of training or serving a model (gpukit.memory), and what fits.

Examples:
  gpukit memory --model llama-2-7b --gpu h100-sxm --recompute full
  gpukit memory --params 7B --zero 3 --dp 8 --json
  gpukit memory --layers 24 --hidden 2048 --heads 16 --seq-len 2048 --micro-batch 4 --gpu a100-80gb --max-micro-batch

Flags follow docs/CONTRACTS.md's vocabulary; old spellings stay as aliases (--seq, --n-layers, --n-heads).
The model flags are the shared group of gpukit.cli.model_args; the defaults and notes (seq_len, dropout,
grad_accum with pp, fp16 without bf16 units) are gpukit.memory.resolve_setup's, which the widget uses too.
"""

from __future__ import annotations

import re

from gpukit import memory as mem
from gpukit.cli.argtypes import (
    parse_param_count as parse_count,  # noqa: F401 (its old home, tests import it here)
)
from gpukit.cli.argtypes import positive_float
from gpukit.cli.model_args import add_model_args, model_from_args
from gpukit.cli.report import Report
from gpukit.quant import LORA_TARGETS
from gpukit.results import stable_keys

# TrainSetup / ModelSpec field -> the CLI flag that sets it, so errors name the flag.
FLAG_OF = {
    "precision": "--precision",
    "optimizer": "--optimizer",
    "zero_stage": "--zero",
    "dp": "--dp",
    "tp": "--tp",
    "pp": "--pp",
    "sp": "--sp",
    "seq_len": "--seq-len",
    "micro_batch": "--micro-batch",
    "grad_accum": "--grad-accum",
    "recompute": "--recompute",
    "attention": "--attention",
    "offload": "--offload",
    "finetune": "--finetune",
    "lora_rank": "--lora-rank",
    "lora_targets": "--lora-targets",
    "weights_dtype": "--weights-dtype",
    "batch": "--batch",
    "inference": "--inference",
    "n_params": "--params",
    "n_layers": "--layers",
    "hidden": "--hidden",
    "n_heads": "--heads",
    "n_kv_heads": "--kv-heads",
    "ffn_hidden": "--ffn-hidden",
    "vocab": "--vocab",
    "max_gpus": "--max-gpus",
    "max_seq_len": "--max-seq-len",
    "unknown model": "--model",
    "unknown gpu": "--gpu",
    "grad_dtype": "--grad-dtype",
    "grad_accum_buffer": "--grad-accum-buffer",
    "virtual_stages": "--virtual-stages",
    "pp*virtual_stages": "--virtual-stages",
    "zero3_prefetch_layers": "--zero3-prefetch-layers",
    "sliding_window": "--sliding-window",
    "dropout": "--dropout/--no-dropout",
    "convention": "--convention",
    "optimizer_impl": "--optimizer-impl",
    "ep": "--ep",
    "cp": "--cp",
    "expert_tp": "--expert-tp",
    "capacity_factor": "--capacity-factor",
    "ep*expert_tp": "--ep",
}


def register(subparsers) -> None:
    from gpukit.cli import add_json_flag

    p = subparsers.add_parser(
        "memory",
        help="per-GPU memory of training or inference; does it fit?",
        description="Per-GPU memory (bytes, GiB) of training or serving a transformer: "
        "weights, gradients, optimizer, activations, logits, KV cache, overhead.",
    )
    add_model_args(p, params=True)
    t = p.add_argument_group("training / inference setup (defaults: gpukit.memory.TrainSetup)")
    t.add_argument("--precision", choices=mem.PRECISIONS, help="training precision (default bf16-mixed)")
    t.add_argument(
        "--optimizer", choices=mem.OPTIMIZERS, help="optimizer whose states are counted (default adamw)"
    )
    t.add_argument("--zero", dest="zero_stage", type=int, choices=(0, 1, 2, 3), help="ZeRO stage")
    t.add_argument("--dp", type=int, help="data-parallel size")
    t.add_argument("--tp", type=int, help="tensor-parallel size")
    t.add_argument("--pp", type=int, help="pipeline-parallel size")
    t.add_argument(
        "--sp", action="store_true", default=None, help="Megatron sequence parallelism (with --tp > 1)"
    )
    t.add_argument(
        "--seq-len",
        "--seq",
        dest="seq_len",
        type=int,
        help="tokens per sequence (default: the model's pretraining length train_seq_len, capped by its "
        "context window, as train-time, cost, plan and parallel use; a custom shape: 2048; the "
        "output says so)",
    )
    t.add_argument("--micro-batch", dest="micro_batch", type=int, help="sequences per GPU per micro-batch")
    t.add_argument(
        "--grad-accum",
        dest="grad_accum",
        type=int,
        help="micro-batches per step; with --pp, min(pp, grad_accum) are in flight on the first stage "
        "(default with --pp > 1: pp, stated in the output)",
    )
    t.add_argument(
        "--ep",
        type=int,
        help="expert-parallel size (mixtures of experts): routed experts split over ep ranks carved from dp*cp "
        "(Megatron-Core); their gradients and optimizer states shard over dp*cp/ep ranks under ZeRO",
    )
    t.add_argument(
        "--cp", type=int, help="context-parallel size: each rank holds seq_len/cp tokens of the activations"
    )
    t.add_argument(
        "--expert-tp",
        dest="expert_tp",
        type=int,
        help="tensor parallelism inside each expert (default: tp, Megatron-Core's default)",
    )
    t.add_argument(
        "--capacity-factor",
        dest="capacity_factor",
        type=positive_float,
        help="tokens per expert = capacity_factor x tokens x top_k / n_experts (default 1.0, balanced routing)",
    )
    t.add_argument("--recompute", choices=mem.RECOMPUTE, help="activation recompute (default none)")
    t.add_argument(
        "--attention", choices=mem.ATTENTION, help="flash (default): no stored s^2 scores; eager: stores them"
    )
    t.add_argument(
        "--dropout",
        dest="dropout",
        action="store_const",
        const=True,
        default=None,
        help="count dropout masks (default: the model row's `dropout`; custom shapes: the layout's, "
        "gelu yes, swiglu no)",
    )
    t.add_argument(
        "--no-dropout",
        dest="dropout",
        action="store_const",
        const=False,
        help="no dropout masks (Llama-style)",
    )
    t.add_argument("--offload", choices=mem.OFFLOAD, help="optimizer: ZeRO-Offload; all: ZeRO-Infinity")
    t.add_argument("--finetune", choices=mem.FINETUNE, help="full (default), lora or qlora finetuning")
    t.add_argument("--lora-rank", dest="lora_rank", type=int, help="LoRA rank r (default 8, PEFT's)")
    t.add_argument(
        "--lora-targets",
        dest="lora_targets",
        choices=LORA_TARGETS,
        help="layers with LoRA adapters (default all linear layers)",
    )
    t.add_argument(
        "--weights-dtype", dest="weights_dtype", choices=mem.WEIGHT_DTYPES, help="inference / LoRA base"
    )
    t.add_argument(
        "--inference", action="store_true", default=None, help="serve: weights + KV cache, no training state"
    )
    t.add_argument("--batch", type=int, help="inference: concurrent sequences in the KV cache")
    t.add_argument(
        "--convention",
        choices=mem.CONVENTIONS,
        help="pytorch (default): the peak of a step as eager PyTorch keeps it; megatron: the papers' sum of parts",
    )
    t.add_argument(
        "--optimizer-impl",
        dest="optimizer_impl",
        choices=mem.OPTIMIZER_IMPLS,
        help="torch.optim implementation (default: torch's for CUDA, foreach); pytorch convention only",
    )
    c = p.add_argument_group("conventions the papers use (issue 10; defaults: ZeRO paper, 16 bytes/param)")
    c.add_argument(
        "--grad-dtype",
        dest="grad_dtype",
        choices=mem.GRAD_DTYPES,
        help="fp32: Megatron's main-grad buffer (18 B/param; 6 + 12/dp with --zero 1)",
    )
    c.add_argument(
        "--grad-accum-buffer",
        dest="grad_accum_buffer",
        choices=mem.GRAD_ACCUM_BUFFERS,
        help="fp32: separate fp32 accumulation buffer next to 16-bit grads (20 B/param)",
    )
    c.add_argument(
        "--virtual-stages",
        dest="virtual_stages",
        type=int,
        help="interleaved pipeline: model chunks per stage (first stage x (1 + (p-1)/(p v)))",
    )
    c.add_argument(
        "--zero3-prefetch-layers",
        dest="zero3_prefetch_layers",
        type=int,
        help="ZeRO-3/FSDP: layers gathered ahead of the working one (FSDP2 default behaviour: 1)",
    )
    q = p.add_argument_group("questions (need --gpu)")
    q.add_argument("--gpu", help="catalog GPU name: adds overhead and a fits verdict")
    q.add_argument(
        "--max-micro-batch",
        dest="ask_micro_batch",
        action="store_true",
        help="largest micro-batch (inference: batch) that fits",
    )
    q.add_argument(
        "--max-seq-len", dest="ask_seq_len", action="store_true", help="longest sequence that fits"
    )
    q.add_argument(
        "--min-gpus",
        dest="ask_min_gpus",
        action="store_true",
        help="fewest GPUs per ZeRO stage (inference: tp)",
    )
    q.add_argument(
        "--max-gpus", dest="max_gpus", type=int, help=f"search limit for --min-gpus (default {mem.MAX_GPUS})"
    )
    add_json_flag(p)
    p.set_defaults(func=handle)


def _flagged(err: ValueError) -> ValueError:
    """Prefix an API error with the CLI flag it is about ("tp must ..." -> "--tp: tp must ...")."""
    msg = str(err).splitlines()[0] if str(err) else type(err).__name__
    for key, flag in sorted(FLAG_OF.items(), key=lambda kv: -len(kv[0])):
        if re.match(rf"{re.escape(key)}\b", msg) and not msg.startswith("--"):
            return ValueError(f"{flag}: {msg}")
    return ValueError(msg)


# The keys of `memory --json` (docs/schemas/memory.json), the same whatever the options (issue 25): null
# where one does not apply (gpu_memory_bytes, fits and gpu without --gpu; phase_peaks under the megatron
# convention; terms when the formula named none; the answers without their question flag).
MEMORY_KEYS = (
    *(f"{c}_bytes" for c in mem.MemoryBreakdown.COMPONENTS),
    "total_bytes",
    "cpu_bytes",
    "n_params",
    "trainable_params",
    "gpu",
    "gpu_memory_bytes",
    "fits",
    "model",
    "convention",
    "peak_phase",
    "stage",
    "phase_peaks",
    "terms",
    "train_setup",
    "max_micro_batch",
    "max_micro_batch_capped",
    "max_seq_len",
    "max_seq_len_capped",
    "min_gpus",
    "notes",
)

MICRO_BATCH_LIMIT = 1 << 16  # search limit of --max-micro-batch
SEQ_LEN_LIMIT = 1 << 22  # search limit of --max-seq-len for a custom shape (no context window)


def memory_report(breakdown: mem.MemoryBreakdown, answers: dict, notes=(), answer_lines=()) -> Report:
    """The breakdown, the answers to the question flags (--min-gpus: its table in the text) and the
    assumptions made for the user."""
    d = breakdown.to_json_dict()
    for k, v in answers.items():
        d[k] = v.to_json_dict() if hasattr(v, "to_json_dict") else v
    d = stable_keys(d | {"notes": list(notes)}, MEMORY_KEYS)
    lines = [breakdown.to_text(), *answer_lines, *(f"note: {n}" for n in notes)]
    if "min_gpus" in answers:
        lines += ["fewest GPUs:", answers["min_gpus"].to_text()]
    return Report(d, "\n".join(lines))


def handle(args):
    from gpukit.catalog import get_gpu

    notes, answer_lines = [], []
    try:
        choice = model_from_args(args, longest_seq=args.seq_len or 0)
        model, n_params, custom = choice.model, choice.n_params, choice.custom
        if args.max_gpus is not None and not args.ask_min_gpus:
            raise ValueError("--max-gpus is the search limit of --min-gpus; give --min-gpus with it")
        keys = (
            "precision",
            "optimizer",
            "zero_stage",
            "dp",
            "tp",
            "pp",
            "sp",
            "seq_len",
            "micro_batch",
            "grad_accum",
            "recompute",
            "attention",
            "dropout",
            "offload",
            "finetune",
            "lora_rank",
            "lora_targets",
            "weights_dtype",
            "inference",
            "batch",
            "convention",
            "optimizer_impl",
            "grad_dtype",
            "grad_accum_buffer",
            "virtual_stages",
            "zero3_prefetch_layers",
            "ep",
            "cp",
            "expert_tp",
            "capacity_factor",
        )
        given = {k: getattr(args, k) for k in keys}
        if custom:  # a custom shape has no row in gpukit/data/models.csv: every default picked for it is said
            picked = [
                words
                for f, words in choice.defaults
                if not (f == "dropout" and (args.dropout is not None or args.inference))
            ]
            if picked:
                notes.append("custom shape, defaults: " + ", ".join(picked))
        gpu = get_gpu(args.gpu) if args.gpu is not None else None
        resolved = mem.resolve_setup(model, gpu=gpu, n_params=n_params, custom=custom, names=FLAG_OF, **given)
        setup = resolved.setup
        notes += resolved.notes
        asked = [
            f
            for f, on in (
                ("--max-micro-batch", args.ask_micro_batch),
                ("--max-seq-len", args.ask_seq_len),
                ("--min-gpus", args.ask_min_gpus),
            )
            if on
        ]
        if asked and gpu is None:
            raise ValueError(f"{asked[0]} needs --gpu NAME")
        if args.ask_micro_batch and model is None:
            raise ValueError(
                "--max-micro-batch needs the model's shape (--model or --layers/--hidden/--heads): "
                "with --params, activations are not modelled and every micro-batch would fit"
            )
        if args.ask_seq_len and model is None:
            raise ValueError(
                "--max-seq-len needs the model's shape (--model or --layers/--hidden/--heads), not --params"
            )
        result = mem.estimate_memory(model, n_params=n_params, setup=setup, gpu=gpu)
        answers = {}
        if args.ask_micro_batch:
            what = "batch" if setup.inference else "micro-batch"
            n = mem.max_micro_batch(model, setup, gpu, limit=MICRO_BATCH_LIMIT)
            answers["max_micro_batch"] = n
            answers["max_micro_batch_capped"] = n == MICRO_BATCH_LIMIT
            answer_lines.append(
                f"largest {what} that fits: "
                + (
                    f"at least {n} (the search limit)"
                    if n == MICRO_BATCH_LIMIT
                    else f"{n}"
                    if n
                    else "none (even 1 does not fit)"
                )
            )
        if args.ask_seq_len:
            limit = SEQ_LEN_LIMIT if custom else model.max_seq
            n = mem.max_seq_len(model, setup, gpu, limit=limit)
            answers["max_seq_len"] = n
            answers["max_seq_len_capped"] = n == limit
            why = (
                "the search limit; a custom shape has no context window"
                if custom
                else f"{model.name}'s context window max_seq; memory is not what limits it"
            )
            answer_lines.append(
                "longest sequence that fits: "
                + (
                    f"{n} tokens ({why})"
                    if n == limit
                    else f"{n} tokens"
                    if n
                    else "none (even 1 token does not fit)"
                )
            )
        if args.ask_min_gpus:
            answers["min_gpus"] = mem.min_gpus(
                model,
                setup,
                gpu,
                n_params=n_params,
                max_gpus=mem.MAX_GPUS if args.max_gpus is None else args.max_gpus,
            )
    except ValueError as e:
        raise _flagged(e) from None
    return memory_report(result, answers, tuple(notes), tuple(answer_lines))
