"""Analytical GPU memory model: weights, gradients, optimizer states, activations, logits, KV cache
and overhead of one training or inference setup, per GPU.

Conventions (each one is a choice; tests/test_memory*.py pin them down):

- Units: every field is an integer number of bytes; text output shows GiB (2**30), the unit of
  torch.cuda and DeepSpeed. Papers quoting decimal GB are compared in decimal GB.
- "Per GPU" is the most loaded rank. ZeRO shards over dp (Rajbhandari et al. 2019, sec. 5: stage 1
  optimizer states / Nd, stage 2 also gradients, stage 3 also parameters, plus, given a model shape,
  one gathered layer of full weights as the working set); tensor parallelism divides
  every layer by tp (norms are replicated in Megatron; we divide them too, they are tiny); pipeline
  parallelism gives each stage ceil(n_layers / pp) layers. With pp > 1 the first stage also holds the
  embedding and p micro-batches of activations in flight (1F1B, Korthikanti et al. 2022 sec. 4.2.3),
  the last stage the final norm, the LM head (a second copy of the embedding if tied, as Megatron
  does) and the logits; both are computed and the larger total is reported (`stage`).
- Mixed precision (bf16-mixed / fp16-mixed): 16-bit weights and gradients, and an fp32 master copy
  that is counted in optimizer_bytes: Adam costs K = 12 (4 master + 4 m + 4 v), 2 + 2 + 12 = 16
  bytes/param (ZeRO sec. 3.1). Named alternatives (TrainSetup fields, see `GRADIENT CONVENTIONS`):
  grad_dtype="fp32" is Megatron's fp32 main-grad buffer, 2 + 4 + 12 = 18 bytes/param, and with
  zero_stage=1 Megatron's distributed optimizer, 6 + 12/dp (Megatron-LM docs, "Distributed
  optimizer"); grad_accum_buffer="fp32" adds an fp32 gradient-accumulation buffer next to 16-bit
  gradients, 2 + 2 + 4 + 12 = 20 bytes/param (Ultra-Scale Playbook, "Memory usage in Transformers").
  Pure "bf16" keeps everything in bf16, optimizer states included (PyTorch's AdamW allocates them
  like the parameters), 8 bytes/param with AdamW: accelerate's "Training using Adam" convention.
- Activations follow the Megatron convention of Korthikanti et al. 2022, Table 2: 16-bit activations,
  1-byte dropout masks (dropout=True), generalised to grouped-query attention and SwiGLU; see
  `layer_activation_bytes`. Gradient accumulation does not change them (with pp > 1 it sets how many
  micro-batches are in flight, min(pp, grad_accum), stated as the term `in_flight_micro_batches`).
  Interleaved 1F1B with virtual_stages v > 1 multiplies the first stage's in-flight activations by
  (1 + (p-1)/(p v)) (Korthikanti et al. 2022, sec. 4.2.3; term `interleave_factor`).
- Full recompute reports two named figures (terms): `stored_checkpoints_bytes`, the layer inputs
  kept for the backward pass (what the papers report, 2sbh per layer), and `recompute_layer_bytes`,
  the one layer being recomputed with all its activations (what the GPU must also hold at the peak);
  activations_bytes is their sum plus the non-layer terms.
- ZeRO-3/FSDP: besides the 1/dp shard, the GPU holds the gathered full weights of the layer being
  computed (`zero3_gathered_bytes`) and of `zero3_prefetch_layers` layers gathered ahead
  (`zero3_prefetch_bytes`; FSDP2's implicit prefetch keeps one: pass 1; the default 0 counts
  only the working layer). Both are included in params_bytes.
- attention defaults to "flash": fused kernels (FlashAttention, PyTorch SDPA) are what people train
  with, and they never store the s^2 score matrix (Dao et al. 2022, sec. 3.1), only a per-row fp32
  logsumexp. attention="eager" adds Table 2's 5as^2b term.
- Two conventions (TrainSetup.convention). "pytorch", the default for every "does it fit" answer
  (CLI `gpukit memory`, widgets, fits/max_micro_batch/min_gpus): what eager PyTorch really keeps at
  the peak of a steady-state step, the largest of the phases forward (with the loss), backward start,
  the top and the bottom layer's backward, and the optimizer step (`pytorch_step_parts`); components
  are those alive at that moment (they still sum to the total) and `peak_phase` names it. Checked
  against measured steps of a GPT and a Llama reference model on CPU (gpukit.bench.measure, `gpukit
  validate memory`; CUDA branches follow torch's source and are not yet run on a GPU). "megatron":
  the papers' sum of parts (ZeRO sec. 3.1 states + Korthikanti Table 2 activations + logits), in
  which their published figures are given (tests/test_memory_published.py) and the articles' claims
  audited (gpukit.audits.memory). Where they differ: torch.autocast keeps fp32 parameters (4 + 4 + 8
  bytes/param instead of 2 + 2 + 12: same sum; with ZeRO-1/2 those fp32 parameters stay whole on
  every rank, as torch's ZeroRedundancyOptimizer keeps them, where DeepSpeed splits its fp32 master:
  the text says so) plus bf16 weight copies during forward/backward;
  foreach AdamW's sqrt(v) adds 4 bytes/param at the step; eager activations are what each op saves;
  and params + grads + optimizer + activations never all exist at once. LoRA/QLoRA, offload (DeepSpeed's
  engine: 16-bit model on the GPU, fp32 master and states on the CPU, no autocast) and inference keep
  the megatron terms under "pytorch" too (the step model was measured for full training only).
- Mixtures of experts, expert and context parallelism (TrainSetup ep, cp, expert_tp, capacity_factor;
  gpukit.memory.parts): the routed experts are split over ep x expert_tp ranks, the dense parts (attention,
  router, shared experts, dense MLPs, embeddings) by tp as before; under ZeRO the dense states shard over
  dp x cp ranks and the experts' over the expert-data-parallel group dp x cp x tp / (ep x expert_tp)
  (Megatron-Core MoE docs, "parallel folding"; DeepSeek-V3 arXiv:2412.19437 sec. 3.1). An MoE layer's
  activations hold the router's fp32 softmax, the shared experts and capacity_factor x top_k x tokens
  routed rows (GShard, Lepikhin et al. 2020 sec. 2.2); CP leaves seq_len / cp tokens of every activation
  on a rank (Megatron-Core CP; Korthikanti et al. 2022's terms at s / cp). Both keep the megatron terms.
- precision "fp8" (train_setup.FP8_RECIPE, Transformer Engine / DeepSeek-V3 sec. 3.3): bf16 weights and
  gradients, fp32 master + AdamW (16 B/param), an fp8 weight cache (2 B per GEMM weight) and amax
  histories in params, GEMM inputs saved in fp8; a GPU without fp8 units is a ValueError.
- Overhead (CUDA context + allocator slack) is counted only when a `gpu` is given. Without one the
  result is the bytes of tensors, which is what the formulas predict.

The pieces live in their own modules and are reachable from here too: TrainSetup, its choices and
the bytes per parameter in gpukit.memory.train_setup; the sum of parts per pipeline stage (the "megatron"
components, layer_activation_bytes) in gpukit.memory.parts; the "pytorch" convention's step model
(pytorch_step_parts, ...) in gpukit.memory.pytorch; the questions asked of the estimate (fits,
max_micro_batch, max_seq_len, min_gpus) in gpukit.memory.fit.

Used in: notebooks on fitting a model on one GPU and on ZeRO / parallelism (memory).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from gpukit.catalog import as_gpu, as_model
from gpukit.errors import MAX_COUNT, require_positive_int
from gpukit.memory.parts import n_params_parts, stage_parts, stage_terms
from gpukit.memory.pytorch import (
    adam_state_bytes,
    optimizer_temp_bytes,
    pytorch_step_applies,
    pytorch_step_parts,
)
from gpukit.memory.train_setup import (
    FP8_RECIPE,
    TrainSetup,
)
from gpukit.quant import lora_layer_params
from gpukit.specs import ModelSpec
from gpukit.units import GiB, MiB

# CUDA context and kernel images created on the first CUDA call: 300 MiB to 2 GiB depending on GPU,
# driver and lazy module loading (https://vram.asmirnov.xyz notes the range). 512 MiB is a typical
# value with lazy loading; it was NOT measured on these machines (no GPU here).
CUDA_CONTEXT_BYTES = 512 * MiB
# Slack of the PyTorch caching allocator (block rounding, fragmentation), as a share of tensor bytes.
# ZeRO sec. 3.2 saw OOM with over 30% of memory free in extreme cases; 5% for a steady training loop
# is our assumption, not a measurement.
FRAGMENTATION_FRACTION = 0.05


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU (most loaded rank) of one setup, in order; total = sum of the GPU components."""

    params_bytes: int
    grads_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    logits_bytes: int
    kv_cache_bytes: int
    cuda_context_bytes: int
    fragmentation_bytes: int
    overhead_bytes: int
    total_bytes: int
    cpu_bytes: int
    n_params: int
    trainable_params: int
    gpu_memory_bytes: int | None
    fits: bool | None
    stage: str
    model_name: str
    gpu_name: str | None
    setup: TrainSetup
    convention: str = "megatron"
    peak_phase: str = "sum"  # "pytorch": the phase of the step at the peak; "megatron": a sum of parts
    phase_peaks: tuple = ()  # ((phase, bytes of tensors), ...) in the "pytorch" convention
    terms: tuple[tuple[str, float], ...] = ()  # named terms inside the components (issue 10 conventions)

    COMPONENTS = ("params", "grads", "optimizer", "activations", "logits", "kv_cache", "overhead")

    @property
    def total_gib(self) -> float:
        return self.total_bytes / GiB

    def term(self, name: str) -> float:
        """A named term (e.g. 'stored_checkpoints_bytes'); ValueError listing the terms present."""
        d = dict(self.terms)
        if name not in d:
            raise ValueError(f"term must be one of {', '.join(d) or '(none for this setup)'}; got {name!r}")
        return d[name]

    def items(self) -> list[tuple[str, int]]:
        """Ordered (component, bytes) on the GPU; overhead split into its two line items."""
        rows = [(c, getattr(self, f"{c}_bytes")) for c in self.COMPONENTS[:-1]]
        return rows + [("cuda_context", self.cuda_context_bytes), ("fragmentation", self.fragmentation_bytes)]

    def to_json_dict(self) -> dict:
        d = {f"{c}_bytes": getattr(self, f"{c}_bytes") for c in self.COMPONENTS}
        d.update(
            total_bytes=self.total_bytes,
            n_params=self.n_params,
            trainable_params=self.trainable_params,
            cpu_bytes=self.cpu_bytes,
        )
        if self.gpu_memory_bytes is not None:
            d.update(gpu_memory_bytes=self.gpu_memory_bytes, fits=self.fits)
        if self.terms:
            d["terms"] = {k: (int(math.ceil(v)) if k.endswith("_bytes") else v) for k, v in self.terms}
        # what the text's header says: which model, convention, phase and stage, and the setup computed
        d.update(
            model=self.model_name,
            convention=self.convention,
            peak_phase=self.peak_phase,
            stage=self.stage,
            train_setup=dataclasses.asdict(self.setup),
        )
        if self.phase_peaks:
            d["phase_peaks"] = {f"{k}_bytes": v for k, v in self.phase_peaks}  # tensors only, no overhead
        if self.gpu_name is not None:
            d["gpu"] = self.gpu_name
        return d

    def to_frame(self):
        import pandas as pd

        rows = self.items() + [("total", self.total_bytes)]
        tot = self.total_bytes or 1
        return pd.DataFrame(
            [
                {"component": c, "bytes": v, "gib": v / GiB, "share": v / tot if c != "total" else 1.0}
                for c, v in rows
            ]
        )

    def to_text(self) -> str:
        s = self.setup
        what = (
            f"inference {s.base_dtype}, batch {s.batch} x {s.seq_len} tokens"
            if s.inference
            else f"{s.precision} {s.optimizer} ZeRO-{s.zero_stage} {s.finetune}, seq {s.seq_len} x micro-batch "
            f"{s.micro_batch}, recompute {s.recompute}, attention {s.attention}"
        )
        how = (
            "convention pytorch: the parts alive at the peak of a step, phase " + self.peak_phase
            if self.convention == "pytorch" and self.peak_phase != "sum"
            else f"convention {self.convention}: a sum of parts"
            + (
                " (the megatron terms: the pytorch step model is measured for dense full training only, not "
                "for LoRA/QLoRA, offload (DeepSpeed's 16-bit model, fp32 master on the CPU), inference, "
                "fp8, ep/cp or a mixture of experts)"
                if self.convention == "pytorch"
                else ""
            )
        )
        lines = [
            f"{self.model_name}: {what}",
            f"dp {s.dp} x tp {s.tp} x pp {s.pp}{f' x cp {s.cp}' if s.cp > 1 else ''}{f' (ep {s.ep})' if s.ep > 1 else ''}; per GPU (stage: {self.stage}); {self.n_params:,} params, "
            f"{self.trainable_params:,} trainable",
            *([_pipeline_line(s)] if s.pp > 1 and not s.inference else []),
            *([_ep_cp_line(s)] if s.ep > 1 or s.cp > 1 else []),
            *([FP8_RECIPE] if s.precision == "fp8" else []),
            how,
            *([zero] if (zero := _pytorch_zero_line(s, self.peak_phase)) else []),
            f"{'component':<14}{'GiB':>10}{'share':>8}",
        ]
        tot = self.total_bytes or 1
        v: float  # bytes (int) below, then the terms (float)
        for c, v in self.items():
            lines.append(f"{c:<14}{v / GiB:>10.2f}{100 * v / tot:>7.1f}%")
        lines.append(f"{'total':<14}{self.total_bytes / GiB:>10.2f}")
        if self.cpu_bytes:
            lines.append(f"{'offloaded/CPU':<14}{self.cpu_bytes / GiB:>10.2f}")
        for k, v in self.terms:  # named terms inside the components above
            shown = f"{v / GiB:.2f} GiB" if k.endswith("_bytes") else f"{v:g}"
            lines.append(f"  of which {k}: {shown}")
        if self.gpu_memory_bytes is not None:
            verdict = "fits" if self.fits else "does NOT fit"
            lines.append(
                f"{self.gpu_name}: {self.gpu_memory_bytes / GiB:.1f} GiB -> {verdict} "
                f"({100 * self.total_bytes / self.gpu_memory_bytes:.0f}% used)"
            )
        else:
            lines.append("no GPU given: tensor bytes only (no CUDA context or allocator slack)")
        return "\n".join(lines)


def _ep_cp_line(s: TrainSetup) -> str:
    """What EP and CP do to the memory, said in the output."""
    parts = []
    if s.ep > 1:
        parts.append(
            f"ep {s.ep} x expert_tp {s.expert_tensor_parallel}: routed experts split over {s.ep * s.expert_tensor_parallel} "
            f"ranks, their grads/optimizer sharded over the expert-data-parallel group of {s.expert_dp} "
            f"(Megatron-Core MoE); tokens per expert = capacity_factor {s.capacity_factor:g} x tokens x top_k / n_experts"
        )
    if s.cp > 1:
        parts.append(f"cp {s.cp}: each rank holds seq_len/cp = {s.seq_len // s.cp} tokens of the activations")
    return "; ".join(parts)


def _pipeline_line(s: TrainSetup) -> str:
    """What the first pipeline stage holds, said in the output (1F1B: min(pp, grad_accum) micro-batches in
    flight, Korthikanti et al. 2022 sec. 4.2.3; bubble (p-1)/(m+p-1), Narayanan et al. 2021 sec. 2.2)."""
    line = f"pipeline: the first stage holds min(pp, grad_accum) = {min(s.pp, s.grad_accum)} micro-batches in flight"
    if s.grad_accum < s.pp:
        line += (
            f" (grad_accum {s.grad_accum} < pp {s.pp}: the pipeline bubble is "
            f"{(s.pp - 1) / (s.grad_accum + s.pp - 1):.0%} of a step)"
        )
    return line


def require_fp8(gpu) -> None:
    """ValueError (one line) when `gpu` has no fp8 tensor cores (A100, V100: no fp8 peak in the catalog)."""
    gpu = as_gpu(gpu)
    if not gpu.has("fp8"):
        raise ValueError(
            f"precision fp8 needs a GPU with fp8 tensor cores (Hopper, Ada, Blackwell, MI300): {gpu.name} has "
            "none; use bf16-mixed"
        )


def check_layout(model: ModelSpec, setup: TrainSetup) -> None:
    """ValueError when the parallel layout does not fit the model's shape."""
    model = as_model(model)
    model.check_tp(setup.tp)  # ModelSpec's rule: whole heads, KV heads split or replicated
    if setup.pp > model.n_layers:
        raise ValueError(f"pp must be at most n_layers {model.n_layers}, got {setup.pp}")
    if setup.ep > 1 or setup.expert_tp not in (None, setup.tp):
        if not model.is_moe:
            raise ValueError(
                f"ep and expert_tp need a mixture of experts: {model.name} is dense (n_experts 0), got ep "
                f"{setup.ep}, expert_tp {setup.expert_tp}"
            )
        if model.n_experts % setup.ep:
            raise ValueError(
                f"ep must divide n_experts {model.n_experts} (whole experts per rank), got {setup.ep}"
            )
        etp = setup.expert_tensor_parallel
        if model.moe_ffn_hidden % etp:
            raise ValueError(f"expert_tp must divide moe_ffn_hidden {model.moe_ffn_hidden}, got {etp}")
    check_chunks(model, setup.pp, setup.virtual_stages)


def check_chunks(model: ModelSpec, pp: int, virtual_stages: int) -> None:
    """ValueError when pp*virtual_stages model chunks cannot each hold a layer. With virtual stages the
    embedding and the loss may take a chunk each, the layer they replace taken off the first and last
    stages (Megatron-Core's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split;
    the Llama 3 paper, Dubey et al. 2024 sec. 3.3.2: 126 layers on 16 stages x 8 chunks)."""
    model = as_model(model)
    pp = require_positive_int("pp", pp, at_most=MAX_COUNT)
    virtual_stages = require_positive_int("virtual_stages", virtual_stages, at_most=MAX_COUNT)
    extra = 2 if virtual_stages > 1 else 0
    if pp * virtual_stages > model.n_layers + extra:
        raise ValueError(
            f"pp*virtual_stages must be at most n_layers {model.n_layers}"
            f"{' + 2 (the embedding and the loss chunks)' if extra else ' (one layer per model chunk at least)'}"
            f", got {pp}*{virtual_stages}={pp * virtual_stages}"
        )


_GPU_PARTS = ("params", "grads", "optimizer", "activations", "logits", "kv_cache")


def _pytorch_zero_line(s: TrainSetup, peak_phase: str) -> str:
    """What ZeRO-1/2 shard in the pytorch convention's step model, beside DeepSpeed's engine (empty
    where it does not apply): torch.autocast keeps the fp32 parameters that every rank updates whole,
    as torch's ZeroRedundancyOptimizer does; DeepSpeed's bf16/fp16 engine holds a 16-bit model and
    splits the fp32 master copy with the states, 2 + 2 + 12/dp bytes/param for ZeRO-1 (Rajbhandari
    et al. 2019 sec. 5.1), which convention megatron counts."""
    if peak_phase == "sum" or s.zero_stage not in (1, 2) or s.precision not in ("bf16-mixed", "fp16-mixed"):
        return ""
    split = "AdamW's states" if s.zero_stage == 1 else "the gradients and AdamW's states"
    whole = "fp32 parameters and gradients" if s.zero_stage == 1 else "fp32 parameters"
    like = " (as torch's ZeroRedundancyOptimizer)" if s.zero_stage == 1 else ""
    return (
        f"ZeRO-{s.zero_stage} here: autocast's {whole} whole on every rank, {split} split over dp{like}; "
        "DeepSpeed's engine keeps a 16-bit model and splits the fp32 master too, "
        f"{'2 + 2 + 12/dp' if s.zero_stage == 1 else '2 + (2 + 12)/dp'} bytes/param: convention megatron"
    )


def estimate_memory(
    model: ModelSpec | None = None, *, n_params: int | None = None, setup: TrainSetup = TrainSetup(), gpu=None
) -> MemoryBreakdown:
    """Per-GPU memory of training (or serving, setup.inference) `model` with `setup`, in bytes.

    Give a ModelSpec (all terms) or a bare n_params (model states only: activations, logits and KV
    cache are 0). With `gpu` (catalog.GPU) overhead is added and `fits` is decided.
    """
    if not isinstance(setup, TrainSetup):
        raise ValueError(f"setup must be a TrainSetup, got {type(setup).__name__}")
    model, gpu = as_model(model, optional=True), as_gpu(gpu, optional=True)  # catalog names accepted
    if (model is None) == (n_params is None):
        raise ValueError("pass either model or n_params (exactly one)")
    if setup.precision == "fp8" and gpu is not None:
        require_fp8(gpu)
    try:  # sizes beyond float range (e.g. micro_batch 1e400) overflow: a ValueError, not OverflowError
        if model is not None:
            check_layout(model, setup)
            stages = ("only",) if setup.pp == 1 else ("first", "last")
            parts = [(st, stage_parts(model, setup, st)) for st in stages]
            if pytorch_step_applies(setup) and not model.is_moe:
                parts = [(st, pytorch_step_parts(model, setup, st, p)) for st, p in parts]
            stage, p = max(parts, key=lambda sp: sum(v for k, v in sp[1].items() if k in _GPU_PARTS))
            terms = stage_terms(model, setup, stage)
            total_params, name = model.n_params, model.name
            trainable = (
                0
                if setup.inference
                else (
                    total_params
                    if setup.finetune == "full"
                    else model.n_layers * lora_layer_params(model, setup.lora_rank, setup.lora_targets)
                )
            )
        else:
            total_params = require_positive_int("n_params", n_params)
            stage, p, name = "only", n_params_parts(total_params, setup), f"{total_params:,} params"
            terms = ()
            trainable = 0 if setup.inference else total_params
            if pytorch_step_applies(setup):  # peak at the optimizer step
                p["optimizer"] += optimizer_temp_bytes(
                    None, setup, p["optimizer"] / adam_state_bytes(setup), adam_state_bytes(setup)
                )
                if setup.dp > 1 and setup.zero_stage == 0:  # DDP gradient buckets
                    p["grads"] *= 2
                p["phase"] = "optimizer"
        phase = p.pop("phase", "sum")
        phase_peaks = p.pop("phase_peaks", ())
        if not all(math.isfinite(v) for v in p.values()) or not math.isfinite(
            math.fsum(p.values())
        ):  # inf, nan
            raise OverflowError
        b = {k: int(math.ceil(v)) for k, v in p.items()}
    except OverflowError:
        raise ValueError(
            "inputs too large: the byte count overflows a float (over 1e308 bytes); "
            "check seq_len, micro_batch, batch and the model size"
        ) from None
    tensors = sum(b[k] for k in ("params", "grads", "optimizer", "activations", "logits", "kv_cache"))
    ctx = CUDA_CONTEXT_BYTES if gpu is not None else 0
    frag = int(math.ceil(FRAGMENTATION_FRACTION * tensors)) if gpu is not None else 0
    total = tensors + ctx + frag
    cap = gpu.memory_bytes if gpu is not None else None
    return MemoryBreakdown(
        params_bytes=b["params"],
        grads_bytes=b["grads"],
        optimizer_bytes=b["optimizer"],
        activations_bytes=b["activations"],
        logits_bytes=b["logits"],
        kv_cache_bytes=b["kv_cache"],
        cuda_context_bytes=ctx,
        fragmentation_bytes=frag,
        overhead_bytes=ctx + frag,
        total_bytes=total,
        cpu_bytes=b["cpu"],
        n_params=total_params,
        trainable_params=trainable,
        gpu_memory_bytes=cap,
        fits=None if cap is None else total <= cap,
        stage=stage,
        model_name=name,
        gpu_name=getattr(gpu, "name", None),
        setup=setup,
        convention=setup.convention,
        peak_phase=phase,
        phase_peaks=phase_peaks,
        terms=terms,
    )
