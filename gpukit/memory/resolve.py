"""The memory policy: from what a user gave to the TrainSetup that is estimated, with every default said.

`resolve_setup(model, gpu=..., **inputs)` is what `gpukit memory` and notebook 01's widget call
before gpukit.memory.estimate_memory, so a notebook gets the same defaults and the same notes:

- seq_len not given: the model's own default (ModelSpec.default_seq_len: the pretraining length
  train_seq_len, capped by the context window max_seq), as train-time, cost, plan and parallel use;
- pp > 1 without grad_accum: pp micro-batches per step, so 1F1B keeps pp in flight on the first
  stage (Korthikanti et al. 2022 sec. 4.2.3; grad_accum 1 would keep one, pp times fewer activations);
- a GPU without bf16 units (V100, T4) and no precision: fp16-mixed, the same bytes;
- inputs of the other mode (micro_batch with inference, batch without) are errors, never ignored;
- notes for inputs that change nothing (ZeRO with dp 1, sp with tp 1, selective recompute with flash
  attention) and for what the numbers leave out (a bare parameter count: model states only).

Pure: no I/O. Inputs are TrainSetup fields; `names` says how the caller spells them (the CLI passes
its flags, "--seq-len"), so the notes and errors name what the user typed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from gpukit.catalog import as_gpu, as_model
from gpukit.memory.train_setup import TrainSetup
from gpukit.specs import ModelSpec

SETUP_FIELDS = tuple(f.name for f in fields(TrainSetup))
TRAINING_ONLY = (
    "micro_batch",
    "grad_accum",
    "optimizer",
    "recompute",
    "dropout",
    "lora_rank",
    "lora_targets",
    "sp",
    "optimizer_impl",
    "dp",
)


@dataclass(frozen=True)
class ResolvedSetup:
    """The TrainSetup to estimate and the notes on every default picked or input that changes nothing."""

    setup: TrainSetup
    notes: tuple[str, ...] = ()

    def to_json_dict(self) -> dict:
        from dataclasses import asdict

        return {"setup": asdict(self.setup), "notes": list(self.notes)}


def resolve_setup(
    model: ModelSpec | str | None,
    *,
    gpu=None,
    n_params: int | None = None,
    custom: bool = False,
    names: Mapping[str, str] | None = None,
    **inputs,
) -> ResolvedSetup:
    """The memory policy (module docstring) applied to `inputs` (TrainSetup fields the user gave;
    None means not given). `model` None with `n_params`: a bare count. `custom`: a shape with no
    catalog row (its dropout recipe is its layout's; no pretraining length to name). ValueError,
    one line naming the input, for a combination that would be ignored."""
    model = as_model(model, optional=True)
    gpu = as_gpu(gpu, optional=True)
    unknown = sorted(set(inputs) - set(SETUP_FIELDS))
    if unknown:
        raise ValueError(f"{unknown[0]} is not a TrainSetup field; fields: {', '.join(SETUP_FIELDS)}")
    names = dict(names or {})

    def say(field: str) -> str:
        return names.get(field, field)

    kw = {k: v for k, v in inputs.items() if v is not None}
    notes: list[str] = []
    inference = bool(kw.get("inference"))
    if inference:
        wrong = [k for k in TRAINING_ONLY if k in kw]
        if wrong:
            raise ValueError(
                f"{say(wrong[0])} applies to training, not {say('inference')} (serving uses "
                f"{say('batch')} sequences of {say('seq_len')} tokens)"
            )
    elif "batch" in kw:
        raise ValueError(
            f"{say('batch')} applies to {say('inference')} (sequences in the KV cache); training uses "
            f"{say('micro_batch')}"
        )
    elif kw.get("finetune", "full") == "full" and (
        lora := [k for k in ("lora_rank", "lora_targets") if k in kw]
    ):
        raise ValueError(
            f"{say(lora[0])} applies to {say('finetune')} lora or qlora (the adapters); full "
            "finetuning has none"
        )
    if "seq_len" not in kw and model is not None:
        kw["seq_len"], seq_note = model.default_seq_len(say("seq_len"))
        if not custom:  # a custom shape has no pretraining length: its window is made to fit what is asked
            notes.append(f"{seq_note}, the default of train-time, cost, plan and parallel too")
    if model is not None and "dropout" not in kw and not inference:
        if custom:  # its layout's recipe (the caller's builder says which)
            kw["dropout"] = model.dropout
        else:
            notes.append(
                f"dropout masks {'counted' if model.dropout else 'not counted'}: {model.name} trains "
                f"{'with' if model.dropout else 'without'} dropout (gpukit/data/models.csv; {say('dropout')})"
            )
    pp = kw.get("pp", 1)
    if pp > 1 and "grad_accum" not in kw and not inference:
        # 1F1B keeps min(pp, grad_accum) micro-batches on the first stage (Korthikanti et al. 2022 sec. 4.2.3)
        kw["grad_accum"] = pp
        notes.append(
            f"{say('grad_accum')} not given with {say('pp')} {pp}: assumed {pp} micro-batches per step, "
            f"so the first stage holds {pp} in flight (1F1B); give {say('grad_accum')} to change it"
        )
    if gpu is not None and not gpu.has("bf16"):  # V100, T4
        if "precision" not in kw:  # serving too: its activations and KV cache follow the precision
            kw["precision"] = "fp16-mixed"
            what = (
                "fp16 compute"
                if not inference
                else "fp16 activations and KV cache"
                if "weights_dtype" in kw
                else "fp16 weights, activations and KV cache"
            )
            notes.append(
                f"{say('precision')} not given: fp16-mixed ({what}), as {gpu.name} has no bf16 units (the "
                "default bf16-mixed needs them; the memory is the same)"
            )
        elif str(kw.get("precision", "")).startswith("bf16") or kw.get("weights_dtype") == "bf16":
            notes.append(
                f"{gpu.name} has no bf16 units: bf16 runs emulated or not at all; fp16 takes the same memory"
            )
    setup = TrainSetup(**kw)
    if (
        "optimizer_impl" in kw
        and not setup.inference
        and (setup.convention != "pytorch" or setup.finetune != "full")
    ):
        raise ValueError(
            f"{say('optimizer_impl')} picks torch's kernels in the pytorch convention's step model (full "
            "training); with "
            + (
                f"{say('convention')} megatron"
                if setup.convention != "pytorch"
                else f"{say('finetune')} {setup.finetune}"
            )
            + " it changes nothing"
        )
    if setup.zero_stage and setup.dp == 1 and setup.offload == "none":
        notes.append(
            f"{say('zero_stage')} {setup.zero_stage} with {say('dp')} 1: nothing is partitioned (ZeRO "
            f"splits the states over the data-parallel ranks); give {say('dp')}"
        )
    if setup.recompute == "selective" and setup.attention == "flash" and model is not None:
        notes.append(
            f"{say('recompute')} selective with {say('attention')} flash saves next to nothing: selective "
            "recompute drops the s^2 attention scores (Korthikanti et al. 2022 sec. 5), which FlashAttention "
            f"never stores (Dao et al. 2022); {say('recompute')} full or {say('attention')} eager make the "
            "difference"
        )
    if setup.sp and setup.tp == 1:
        notes.append(
            f"{say('sp')} with {say('tp')} 1: sequence parallelism splits along the tensor-parallel group; "
            "no effect"
        )
    if (
        model is not None and setup.inference
    ):  # gpukit.memory.parts: the prefill working set, not a measured peak
        notes.append(
            f"activations: one layer's prefill working set for all {setup.batch} x {setup.seq_len} tokens "
            "at once (an upper bound: servers that chunk the prefill, as vLLM does, need less)"
        )
    if model is None:  # a bare count: the total is a lower bound, and the seq/batch inputs change nothing
        notes.append(
            f"{say('n_params')} counts model states only: activations, logits and the KV cache are not "
            "modelled (0 here)"
            + (", nor ZeRO-3's gathered layer" if setup.zero_stage == 3 else "")
            + ", so the total is a lower bound; give a model's shape for them"
        )
    if model is not None and not custom and (note := model.window_note(setup.seq_len, say("seq_len"))):
        notes.append(note)
    if model is not None and setup.inference and (note := model.sliding_window_note(setup.seq_len)):
        notes.append(note)
    return ResolvedSetup(setup, tuple(notes))
