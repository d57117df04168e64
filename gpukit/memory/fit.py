"""Questions asked of the memory estimate: does a setup fit a GPU, the largest micro-batch or
sequence that fits (binary search over a monotone estimate), the fewest GPUs (and which layout) that
hold a model. Pure calculator over gpukit.memory.estimate_memory; gpukit.memory re-exports these
names lazily (this module imports it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from gpukit.catalog import as_gpu, as_model
from gpukit.errors import require_positive_int
from gpukit.memory.analytic import estimate_memory
from gpukit.memory.train_setup import TrainSetup
from gpukit.specs import ModelSpec
from gpukit.units import GiB

MAX_GPUS = 1024  # default search limit of min_gpus (CLI: --max-gpus)


def fits(
    model: ModelSpec | None = None,
    setup: TrainSetup = TrainSetup(),
    gpu=None,
    *,
    n_params=None,
) -> bool:
    """Does `setup` fit on `gpu` (overhead included)?"""
    model = as_model(model, "model", optional=True)  # a catalog name too
    gpu = as_gpu(gpu, optional=True)
    if gpu is None:
        raise ValueError("fits needs a gpu (catalog.get_gpu(name))")
    return bool(estimate_memory(model, n_params=n_params, setup=setup, gpu=gpu).fits)


def _largest(ok, limit: int) -> int:
    """Largest n in [1, limit] with ok(n) for a monotone ok (True then False), or 0."""
    if not ok(1):
        return 0
    lo, hi = 1, 2
    while hi <= limit and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def max_micro_batch(
    model: ModelSpec | None, setup: TrainSetup, gpu, *, n_params=None, limit: int = 1 << 16
) -> int:
    """Largest micro_batch (inference: batch) that fits on `gpu`; 0 if even 1 does not (binary search).
    A result equal to `limit` means "at least limit" (the search stopped there). A bare n_params has
    no activations or KV cache, so every batch would "fit": that is a ValueError, not an answer."""
    model = as_model(model, "model", optional=True)  # a catalog name too
    gpu = as_gpu(gpu)
    limit = require_positive_int("limit", limit)
    if model is None:
        raise ValueError(
            "max_micro_batch needs the model's shape: with n_params only, activations and KV cache "
            "are not modelled and every batch size would fit (CLI: --model or --layers/--hidden/--heads)"
        )
    field = "batch" if setup.inference else "micro_batch"
    return _largest(lambda n: fits(model, replace(setup, **{field: n}), gpu, n_params=n_params), limit)


def max_seq_len(model: ModelSpec, setup: TrainSetup, gpu, *, limit: int | None = None) -> int:
    """Largest seq_len (tokens) that fits on `gpu`, at most `limit` (default: the model's context
    window max_seq, beyond which it has no positions or was never trained); 0 if even 1 does not."""
    if model is None:
        raise ValueError("max_seq_len needs the model's shape (activations depend on it), not only n_params")
    model, gpu = as_model(model), as_gpu(gpu)
    limit = model.max_seq if limit is None else require_positive_int("limit", limit)
    return _largest(lambda n: fits(model, replace(setup, seq_len=n), gpu), limit)


@dataclass(frozen=True)
class GpuOption:
    """One way to fit: ZeRO stage and parallel sizes, with its per-GPU total."""

    zero_stage: int
    dp: int
    tp: int
    pp: int
    world_size: int
    total_bytes: int


@dataclass(frozen=True)
class GpuPlan:
    """Smallest GPU count per ZeRO stage (training) or per tp (inference); `best` is the smallest."""

    gpu_name: str
    options: tuple[GpuOption, ...]
    why_none: str = ""  # when no option fits: what stopped the search (the GPU limit, or the layout)

    @property
    def best(self) -> GpuOption | None:
        return self.options[0] if self.options else None

    def to_json_dict(self) -> dict:
        d = {
            "gpu": self.gpu_name,
            "options": [o.__dict__.copy() for o in self.options],
            "best": None if self.best is None else self.best.__dict__.copy(),
        }
        return d | ({"why_none": self.why_none} if self.why_none else {})

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([{f.name: getattr(o, f.name) for f in fields(o)} for o in self.options])

    def to_text(self) -> str:
        if not self.options:
            why = self.why_none
            return f"no option fits on {self.gpu_name} " + (
                why if why.startswith("at pp") else "within the GPU limit" + (f"; {why}" if why else "")
            )
        lines = [f"{'zero':>4} {'dp':>5} {'tp':>3} {'pp':>3} {'GPUs':>6} {'GiB/GPU':>8}"]
        lines += [
            f"{o.zero_stage:>4} {o.dp:>5} {o.tp:>3} {o.pp:>3} {o.world_size:>6} {o.total_bytes / GiB:>8.2f}"
            for o in self.options
        ]
        assert self.best is not None  # options is not empty (returned above)
        return "\n".join(lines + [f"smallest: {self.best.world_size} x {self.gpu_name}"])


def min_gpus(
    model: ModelSpec | None, setup: TrainSetup, gpu, *, n_params=None, max_gpus: int = MAX_GPUS
) -> GpuPlan:
    """Fewest GPUs that fit: for training, the smallest dp per ZeRO stage (tp, pp kept from setup);
    for inference, the smallest power-of-two tp that the model's heads allow."""
    require_positive_int("max_gpus", max_gpus)
    model, gpu = as_model(model, optional=True), as_gpu(gpu)
    options = []

    def total(s):
        return estimate_memory(model, n_params=n_params, setup=s, gpu=gpu)

    if setup.inference:
        tp, refused = 1, []
        while tp * setup.pp <= max_gpus:
            s = replace(setup, tp=tp, dp=1)
            if (
                model is not None and model.tp_note(tp) is not None
            ):  # tp not allowed by the heads (ModelSpec's rule)
                r = None
                refused.append(tp)
            else:
                r = total(s)
            if r is not None and r.fits:
                options.append(GpuOption(0, 1, tp, s.pp, s.world_size, r.total_bytes))
                break
            tp *= 2
        why = ""
        if not options and refused and model is not None:  # e.g. falcon-7b's 71 heads allow no tp 2, 4, ...
            tried = [t for t in (2**i for i in range(tp.bit_length())) if t < tp and t not in refused]
            verb = "does" if len(tried) == 1 else "do"
            why = (
                f"at pp {setup.pp}: tp {', '.join(map(str, tried))} {verb} not fit, and {model.name}'s "
                f"{model.n_heads} heads ({model.n_kv_heads} kv) allow no power-of-two tp from {refused[0]} to "
                f"{refused[-1]} (tp must divide n_heads, and divide n_kv_heads or be a multiple of it); the GPU limit is not what stops it: try pp > 1"
            )
        return GpuPlan(gpu.name, tuple(options), why)
    mp = setup.tp * setup.pp
    if max_gpus < mp:
        raise ValueError(f"max_gpus must be at least tp*pp = {mp}, got {max_gpus}")
    for z in (0, 1, 2, 3):
        try:
            base = replace(setup, zero_stage=z, dp=1)
        except ValueError:  # e.g. offload needs a higher stage
            continue
        hi = 1 if z == 0 else max_gpus // mp  # without ZeRO more replicas do not shrink anything
        if not total(replace(base, dp=hi)).fits:
            continue
        lo = 0  # smallest dp that fits, by bisection: memory is non-increasing in dp
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if total(replace(base, dp=mid)).fits else (mid, hi)
        s = replace(base, dp=hi)
        options.append(GpuOption(z, hi, s.tp, s.pp, s.world_size, total(s).total_bytes))
    options.sort(key=lambda o: (o.world_size, o.zero_stage))
    why = ""
    if not options:  # what is left on each GPU when ZeRO-3 has split the states max_gpus ways
        r = total(replace(setup, zero_stage=3, dp=max_gpus // mp))
        rest = r.activations_bytes + r.logits_bytes
        if rest + r.cuda_context_bytes > gpu.memory_bytes:  # alone more than the GPU, for any dp
            why = (
                f"more GPUs would not help: at ZeRO-3 over dp {max_gpus // mp} each still holds "
                f"{r.total_bytes / GiB:.1f} GiB, {rest / GiB:.1f} GiB of it activations and logits, which dp "
                "does not split (recompute, tp, pp, a shorter seq_len or micro_batch do)"
            )
    return GpuPlan(gpu.name, tuple(options), why)
