"""The search over 3D parallel layouts: every valid (dp, tp, pp, virtual stages, ZeRO stage,
micro-batch, recompute, sp) on a number of GPUs, those that fit, ranked by predicted tokens/s, and
what holds the best ones back (the largest non-compute part of the step, or memory).

Pure calculator (no torch, no I/O) over gpukit.parallel.estimate and gpukit.memory.estimate_memory:
memory in bytes (GiB in the text), times in seconds; the layout rules and the step-time model are
gpukit.parallel's (Narayanan et al. 2021 sec. 3.3 and 5.4; Rajbhandari et al. 2019), under its stated
ASSUMPTIONS. gpukit.parallel re-exports every name here lazily (this module imports it).

Used in: notebooks/06_beyond_data_parallel, gpukit.cli.parallel (parallel search), gpukit.widgets.parallel_view,
gpukit.plan.train, gpukit.audits.parallel, gpukit.cli.benchreport (make bench), tests/test_parallel.py,
tests/test_claims_parallel.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpukit import memory as mem
from gpukit.errors import require_positive_int
from gpukit.parallel.cluster import Cluster, make_cluster
from gpukit.parallel.layout import (
    ASSUMPTIONS,
    RECOMPUTE,
    ZERO_STAGES,
    Estimate,
    ParallelConfig,
    as_model_spec,
    checked_setup,
    estimate,
    layout_train_setup,
    micro_batch_times,
    pipeline_breakdown,
)
from gpukit.results import json_safe
from gpukit.units import GiB

# the largest cluster the search enumerates: 2^20 GPUs, about five times the largest built by 2025
# (xAI's Colossus, 200,000 GPUs). Every count up to it searches in seconds (at most ~23,000 layouts
# for the most composite counts, 720,720 GPUs); 10^12 GPUs used to run without end (a divisor loop
# over every integer up to gpus)
MAX_SEARCH_GPUS = 2**20


def check_search_gpus(gpus) -> int:
    """`gpus` for the layout search: a positive integer up to MAX_SEARCH_GPUS (one-line ValueError)."""
    n = require_positive_int("gpus", gpus)
    if n > MAX_SEARCH_GPUS:
        raise ValueError(f"gpus must be <= {MAX_SEARCH_GPUS:,} for the layout search (2^20), got {n:,}")
    return n


@dataclass(frozen=True)
class Ranked:
    estimate: Estimate
    binding: str
    reasons: tuple[str, ...]

    def to_json_dict(self) -> dict:
        e = self.estimate
        c = e.config
        return json_safe(
            {
                "dp": c.dp,
                "tp": c.tp,
                "pp": c.pp,
                "virtual_stages": c.virtual_stages,
                "zero_stage": c.zero_stage,
                "micro_batch": c.micro_batch,
                "recompute": c.recompute,
                "sp": c.sp,
                "ep": c.ep,
                "cp": c.cp,
                "memory_per_gpu_bytes": e.memory_per_gpu_bytes,
                "step_time_s": e.step_time_s,
                "tokens_per_s": e.tokens_per_s,
                "mfu": e.mfu,
                "binding": self.binding,
                "reasons": list(self.reasons),
                "breakdown_s": dict(e.breakdown),  # seconds per step (issue 25: unit in the name)
                "seq_len": e.seq_len,
                "global_batch": e.global_batch,
                "notes": list(e.notes),
            }
        )


@dataclass(frozen=True)
class SearchResult:
    model_name: str
    gpus: int
    cluster: str
    global_batch: int
    seq_len: int
    enumerated: int
    fitting: int
    ranked: tuple[Ranked, ...]  # best first, all fitting layouts
    top_k: int = 10
    notes: tuple[str, ...] = ()  # defaults the search picked (seq_len)

    @property
    def best(self) -> Ranked | None:
        return self.ranked[0] if self.ranked else None

    def to_json_dict(self) -> dict:
        return {
            "model": self.model_name,
            "gpus": self.gpus,
            "cluster": self.cluster,
            "global_batch": self.global_batch,
            "seq_len": self.seq_len,
            "enumerated": self.enumerated,
            "fitting": self.fitting,
            "layouts": [r.to_json_dict() for r in self.ranked[: self.top_k]],
            "notes": list(self.notes),
            "assumptions": list(self._assumptions()),
        }

    def _assumptions(self) -> tuple[str, ...]:
        """The efficiencies the layouts used (every layout shares the cluster); ASSUMPTIONS when none fit."""
        return (
            self.ranked[0].estimate.assumptions[1:]
            if self.ranked and self.ranked[0].estimate.assumptions
            else ASSUMPTIONS
        )

    def to_frame(self):
        import pandas as pd

        rows = []
        for r in self.ranked[: self.top_k]:
            d = r.to_json_dict()
            d.pop("breakdown_s")
            d.pop("reasons")
            d["memory_gib"] = d.pop("memory_per_gpu_bytes") / GiB
            rows.append(d)
        return pd.DataFrame(rows)

    def to_text(self) -> str:
        lines = [
            f"{self.model_name} on {self.gpus} x {self.cluster}; global batch {self.global_batch} x "
            f"{self.seq_len}: {self.enumerated} layouts enumerated, {self.fitting} fit"
        ]
        lines += [f"note: {n}" for n in self.notes]
        if not self.ranked:
            return "\n".join(lines + ["no layout fits in memory"])
        for i, r in enumerate(self.ranked[: self.top_k], 1):
            e = r.estimate
            lines.append(
                f"{i:>2}. {e.config.label()}: {e.tokens_per_s:,.0f} tok/s, MFU {e.mfu:.1%}, "
                f"{e.memory_per_gpu_bytes / GiB:.1f} GiB" + (f"; binding: {r.binding}" if r.binding else "")
            )
        return "\n".join(lines + [f"assumes: {a}" for a in self._assumptions()])


def _divisors(n: int) -> list[int]:
    """The divisors of n in increasing order, in O(sqrt(n)) steps."""
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


# ---- EP / CP in the search (helper G)
LONG_CONTEXT_SEQ_LEN = 32768  # from here the search also tries context parallelism (Llama 3: CP 16 at 131k)


def cp_candidates(n: int, seq_len: int | None, cp: int | None = None) -> list[int]:
    """Context-parallel sizes the search tries: `cp` when given; else 1, and for seq_len >=
    LONG_CONTEXT_SEQ_LEN the powers of two up to n that leave at least 1024 tokens per rank and split
    the sequence into 2 x cp chunks (causal load balancing)."""
    n = require_positive_int("n", n, at_most=MAX_SEARCH_GPUS)
    if cp is not None:
        return [require_positive_int("cp", cp, at_most=MAX_SEARCH_GPUS)]
    if seq_len is not None:
        seq_len = require_positive_int("seq_len", seq_len)
    if seq_len is None or seq_len < LONG_CONTEXT_SEQ_LEN:
        return [1]
    out, c = [1], 2
    while c <= n and seq_len % (2 * c) == 0 and seq_len // c >= 1024:
        out.append(c)
        c *= 2
    return out


def ep_candidates(model, dp_cp: int, ep: int | None = None) -> list[int]:
    """Expert-parallel sizes the search tries: `ep` when given; 1 for a dense model; else every divisor
    of dp x cp that divides n_experts (Megatron-Core: EP carved from the data- and context-parallel ranks)."""
    model = as_model_spec(model)
    dp_cp = require_positive_int("dp_cp", dp_cp, at_most=MAX_SEARCH_GPUS)
    if ep is not None:
        return [require_positive_int("ep", ep, at_most=MAX_SEARCH_GPUS)]
    if not model.is_moe:
        return [1]
    return [e for e in _divisors(dp_cp) if model.n_experts % e == 0]


# ---- end EP / CP in the search


def enumerate_layouts(
    model,
    gpus: int,
    global_batch: int,
    *,
    max_micro_batch: int = 16,
    max_virtual_stages: int = 8,
    seq_len: int | None = None,
    ep: int | None = None,
    cp: int | None = None,
):
    """Every ParallelConfig that can run (validate passes) on `gpus` GPUs, micro-batches powers of two.
    EP sizes for a mixture of experts and CP sizes for seq_len >= LONG_CONTEXT_SEQ_LEN (ep_candidates,
    cp_candidates; `ep` / `cp` fix them)."""
    model = as_model_spec(model)
    n = check_search_gpus(gpus)
    G = require_positive_int("global_batch", global_batch)
    out = []
    for tp in _divisors(n):
        if model.tp_note(tp) is not None:  # ModelSpec's rule: whole heads, KV heads split or replicated
            continue
        for pp, c_p in (
            (p, c) for p in _divisors(n // tp) for c in cp_candidates(n // (tp * p), seq_len, cp)
        ):
            if (
                pp > model.n_layers
            ):  # uneven stages allowed (validate notes them); interleaving needs even ones
                continue
            if (n // (tp * pp)) % c_p:  # cp splits what tp x pp leave (world = dp x tp x pp x cp)
                continue
            dp = n // (tp * pp * c_p)
            vs = [1] + [
                v
                for v in (2, 3, 4, 6, 8)
                if v <= max_virtual_stages and pp > 1 and model.n_layers % (pp * v) == 0
            ]
            zs = [
                z for z in ZERO_STAGES if (z == 0 or dp > 1) and not (z >= 2 and pp > 1)
            ]  # ParallelConfig.validate's rule
            b = 1
            while b <= max_micro_batch and G % (dp * b) == 0:
                m = G // (dp * b)
                for v in vs:
                    if v > 1 and m % pp:
                        continue
                    for z in zs:
                        for rc in RECOMPUTE:
                            for sp in (False, True) if tp > 1 else (False,):
                                for e in ep_candidates(model, dp * c_p, ep):
                                    if e > 1 and tp > 1 and not sp:  # Megatron-Core: EP with TP needs SP
                                        continue
                                    if (dp * c_p) % e or (e > 1 and model.n_experts % e):
                                        continue
                                    out.append(ParallelConfig(dp, tp, pp, v, z, b, rc, sp, ep=e, cp=c_p))
                b *= 2
    return out


def _binding(e: Estimate, fit_of) -> tuple[str, tuple[str, ...]]:
    """What holds this layout back: the largest non-compute part of its step, and memory when a
    cheaper recompute or a larger micro-batch would not fit (fit_of: the evaluator's memory check; only
    whether the neighbours fit and their memory matter here, not their step time)."""
    reasons = []
    c = e.config
    if c.recompute != "none":
        lighter = "selective" if c.recompute == "full" else "none"
        alt = fit_of(replace(c, recompute=lighter))
        if alt is not None and not alt.fits:
            reasons.append(
                f"memory: recompute {lighter} needs {alt.memory_per_gpu_bytes / GiB:.0f} GiB "
                f"> {e.gpu_memory_bytes / GiB:.0f} GiB"
            )
    bigger = fit_of(replace(c, micro_batch=c.micro_batch * 2))
    if bigger is not None and not bigger.fits:
        reasons.append(
            f"memory: micro_batch {2 * c.micro_batch} needs {bigger.memory_per_gpu_bytes / GiB:.0f} GiB"
        )
    parts = {k: v for k, v in e.breakdown if k not in ("compute", "elementwise")}
    worst = max(parts, key=parts.__getitem__)
    share = parts[worst] / e.step_time_s
    label = {
        "bubble": f"bubble: {c.pp} stages with {e.microbatches} micro-batches idle {share:.0%} of the step",
        "tp_comm": f"TP traffic {'across nodes' if any('spans nodes' in n for n in e.notes) else 'in the node'}: "
        f"{share:.0%} of the step",
        "dp_comm": f"DP traffic: gradient reduction {share:.0%} of the step",
        "zero3_comm": f"ZeRO-3 gathers not hidden: {share:.0%} of the step",
        "pp_comm": f"PP traffic: {share:.0%} of the step",
        "optimizer": f"optimizer step: {share:.0%} of the step",
        "ep_comm": f"EP all-to-all (dispatch and combine): {share:.0%} of the step",  # helper G
        "cp_comm": f"CP KV exchange beyond the attention it overlaps: {share:.0%} of the step",
    }.get(worst, f"{worst}: {share:.0%} of the step")
    if c.pp > 1 and e.microbatches < 4 * c.pp:
        reasons.append(f"global batch: only {e.microbatches} micro-batches for {c.pp} stages")
    if share >= 0.02:
        reasons.append(label)
    else:
        reasons.append(
            f"compute-bound: compute and elementwise kernels "
            f"{e.share('compute') + e.share('elementwise'):.0%} of the step"
        )
    return reasons[0], tuple(reasons)


@dataclass(frozen=True)
class _NoFit:
    """A layout that does not fit: its memory (a lower bound when what == 'states'), no step time."""

    memory_per_gpu_bytes: int
    what: str
    fits: bool = False


@dataclass(frozen=True)
class _Unpriced:
    """A layout that fits, its step time not computed: the search knew it could not be the fastest."""

    memory_per_gpu_bytes: int
    fits: bool = True


class _Evaluator:
    """est_of(config): the layout's Estimate, or a _NoFit with its memory only (the step model is
    skipped), or None when the layout is invalid; memoized. A lower bound of the model states prunes
    before the memory model runs. fit_of(config): whether it fits, the step model skipped where it can
    be (_Unpriced). memory_cache: a dict shared by the evaluators of one model, global batch, seq_len and
    conventions on several GPU types: what does not depend on the GPU (a layout's bytes, only whether
    they fit does; estimate's setup and checks of the layout; the ParallelConfigs team_layouts builds)."""

    def __init__(
        self, model, cl: Cluster, G: int, s: int, attention: str, conventions: dict, memory_cache=None
    ):
        conventions = dict(conventions)
        self.model, self.cl, self.G, self.s, self.attention = model, cl, G, s, attention
        self.memory_cache = memory_cache
        self.cache: dict[ParallelConfig, Estimate | _NoFit | None] = {}
        self.memory: dict[ParallelConfig, mem.MemoryBreakdown | _Unpriced | _NoFit | None] = {}
        self.shared: dict[ParallelConfig, mem.MemoryBreakdown] = {}  # from memory_cache (another GPU's)
        self.bounds: dict[ParallelConfig, float] = {}  # _speed_bound
        self.setups: dict = {}  # _setup_of without a memory_cache
        self.priced = False  # an estimate has run: estimate's checks of the inputs every layout shares pass
        self.cap = cl.gpu.memory_bytes
        # a lower bound of the model states under either convention (layout_convention picks one per layout)
        self.w, self.g, self.o = (
            min(t)
            for t in zip(
                *(
                    mem.state_bytes_per_param(
                        mem.TrainSetup(
                            convention=conv,
                            **{
                                k: v
                                for k, v in conventions.items()
                                if k in ("precision", "optimizer", "grad_dtype", "grad_accum_buffer")
                            },
                        )
                    )
                    for conv in ("megatron", "pytorch")
                ),
                strict=True,
            )
        )
        self.layer_elems = model.layer_params() * model.n_layers
        self.expert_elems = (
            model.n_moe_layers * model.n_experts * model.expert_params() if model.is_moe else 0
        )
        # the model row's recipe (gpukit/data/models.csv)
        self.dropout = conventions.pop("dropout", model.dropout)
        self.conventions = conventions
        # estimate's own arguments among the conventions (the rest are its TrainSetup's), for the step-time bound
        self.times_kw = {k: conventions[k] for k in ("mfu", "finetune", "ep_overlap") if k in conventions}

    def _memory_of(self, c: ParallelConfig):
        """The MemoryBreakdown of c (an _Unpriced when it comes from memory_cache and fits), or a _NoFit
        (states bound or total), or None if invalid; memoized."""
        if c in self.memory:
            return self.memory[c]
        model, cap, G, s = self.model, self.cap, self.G, self.s
        # lower bound of the model states alone (a stage holds at least n_layers/pp layers): cheap prune
        # (EP: the routed experts are split ep ways, helper G)
        n = (self.layer_elems - self.expert_elems * (1 - 1 / c.ep)) / (c.tp * c.pp)
        z, d = c.zero_stage, c.dp * c.cp  # ZeRO shards over the dp x cp ranks at most (a lower bound)
        w, g, o = self.w, self.g, self.o
        states = n * (w / (d if z >= 3 else 1) + g / (d if z >= 2 else 1) + o / (d if z >= 1 else 1))
        out: mem.MemoryBreakdown | _Unpriced | _NoFit | None
        if states > cap:
            out = _NoFit(int(states), "states")
        else:
            try:
                m = G // (c.dp * c.micro_batch)
                key = (c, G, s)
                cached = self.memory_cache.get(key) if self.memory_cache is not None else None
                if cached is not None:  # another GPU's breakdown: est_of puts this GPU in it where it fits
                    self.shared[c] = cached
                    fits = cached.total_bytes <= cap
                    out = _Unpriced(cached.total_bytes) if fits else _NoFit(cached.total_bytes, "total")
                else:
                    mb = mem.estimate_memory(
                        model,
                        setup=layout_train_setup(c, s, m, self.attention, self.dropout, **self.conventions),
                        gpu=self.cl.gpu,
                    )
                    if self.memory_cache is not None:
                        self.memory_cache[key] = mb
                    out = mb if mb.fits else _NoFit(mb.total_bytes, "total")
            except ValueError:
                out = None
        self.memory[c] = out
        return out

    def _layout_checks(self, c: ParallelConfig):
        """estimate's TrainSetup for c, after the ValueErrors estimate raises for this layout before its
        step model (its checks of the inputs every layout shares have passed once self.priced): the
        layout's rules, ring attention's kernel, the setup and that of its elementwise term (cp 1). Past
        them estimate raises only on counts beyond MAX_COUNT or a step that overflows a float."""
        # estimate's own setup: its finetune argument is not a memory convention there
        conventions = {k: v for k, v in self.conventions.items() if k != "finetune"}
        dropout = self.model.dropout if self.dropout is None else self.dropout  # as estimate reads it
        setup, _ = checked_setup(
            self.model,
            c,
            global_batch=self.G,
            seq_len=self.s,
            attention=self.attention,
            dropout=dropout,
            **conventions,
        )
        mem.layer_activation_bytes(self.model, setup if c.cp == 1 else replace(setup, cp=1), recompute="none")
        return setup

    def _setup_of(self, c: ParallelConfig):
        """estimate's TrainSetup for c, or None when _layout_checks fails; memoized in memory_cache (the
        checks read no GPU)."""
        key = ("layout setup", c, self.G, self.s)
        store: dict = self.memory_cache if self.memory_cache is not None else self.setups
        if key not in store:
            try:
                store[key] = self._layout_checks(c)
            except ValueError:
                store[key] = None
        return store[key]

    def _speed_bound(self, c: ParallelConfig) -> float:
        """The most tokens/s c can reach: G s over the leading terms of its step (pipeline_breakdown, a true
        lower bound of the step), inf where there is none (before any estimate ran, or an error); memoized."""
        setup = self._setup_of(c)
        if not self.priced or setup is None:
            return math.inf
        if c not in self.bounds:
            try:
                t = micro_batch_times(
                    self.model,
                    c,
                    self.cl,
                    seq_len=self.s,
                    attention=self.attention,
                    setup=setup,
                    **self.times_kw,
                )
                lower = sum(v for _, v in pipeline_breakdown(c, self.G, t))
                self.bounds[c] = self.G * self.s / lower if lower > 0 else math.inf
            except ValueError:  # estimate raises the same
                self.bounds[c] = math.inf
        return self.bounds[c]

    def speed_bound(self, configs) -> float:
        """The most tokens/s any of these layouts can reach (_speed_bound)."""
        return max((self._speed_bound(c) for c in configs), default=0.0)

    def est_of(self, c: ParallelConfig, beat: float | None = None):
        """Estimate, or a _NoFit with the memory only (the step model is skipped), or None if invalid.
        beat: a tokens/s the caller keeps a layout only to exceed; a layout that fits but cannot exceed it
        (_speed_bound <= beat) comes back _Unpriced (not memoized: a later call without beat prices it)."""
        if c in self.cache:
            return self.cache[c]
        mb = self._memory_of(c)
        if mb is None or not mb.fits or self._setup_of(c) is None:  # estimate would raise: None
            self.cache[c] = mb if mb is None or not mb.fits else None
            return self.cache[c]
        if beat is not None and self._speed_bound(c) <= beat:  # its tokens/s <= the bound: it cannot win
            return mb if isinstance(mb, _Unpriced) else _Unpriced(mb.total_bytes)
        try:
            if isinstance(mb, _Unpriced):  # another GPU's breakdown, on this one
                mb = replace(self.shared[c], gpu_memory_bytes=self.cap, gpu_name=self.cl.gpu.name, fits=True)
            e = estimate(
                self.model,
                c,
                self.cl,
                global_batch=self.G,
                seq_len=self.s,
                attention=self.attention,
                dropout=self.dropout,
                _memory=mb,
                **self.conventions,
            )
            self.priced = True
        except ValueError:
            e = None
        self.cache[c] = e
        return e

    def fit_of(self, c: ParallelConfig):
        """Whether c fits, without its step time where the memory decides: est_of's answer when known or
        when no estimate has run yet, else the memory check and the layout checks (_Unpriced when it fits)."""
        if c in self.cache or not self.priced:
            return self.est_of(c)
        mb = self._memory_of(c)
        if mb is None or not mb.fits or self._setup_of(c) is None:
            return self.est_of(c)  # _NoFit or None
        return mb if isinstance(mb, _Unpriced) else _Unpriced(mb.total_bytes)


def search(
    model,
    gpu,
    gpus: int,
    *,
    gpus_per_node: int = 8,
    global_batch: int | None = None,
    seq_len: int | None = None,
    link=None,
    inter_link=None,
    ports_per_node: int | None = None,
    top_k: int = 10,
    attention: str = "flash",
    max_micro_batch: int = 16,
    cluster: Cluster | None = None,
    ep: int | None = None,
    cp: int | None = None,
    **conventions,
) -> SearchResult:
    """Enumerate every valid layout, keep those that fit, rank by predicted tokens/s, explain the top.

    Speed: layouts sharing (tp, pp, v, zero, recompute, sp) are visited by increasing micro-batch and
    stop at the first that does not fit (memory grows with the micro-batch)."""
    model = as_model_spec(model)
    n = check_search_gpus(gpus)
    cl = cluster or make_cluster(gpu, gpus_per_node, link, inter_link, ports_per_node)
    if n % cl.gpus_per_node and n > cl.gpus_per_node:
        raise ValueError(
            f"gpus must be a multiple of gpus_per_node {cl.gpus_per_node} (whole nodes), got {n}"
        )
    s = require_positive_int("seq_len", seq_len if seq_len is not None else model.default_seq_len()[0])
    window = model.window_note(s, "seq_len")  # learned positions: a ValueError beyond max_seq
    G = require_positive_int("global_batch", global_batch if global_batch is not None else max(n, 512))
    top_k = require_positive_int("top_k", top_k)
    configs = enumerate_layouts(model, n, G, max_micro_batch=max_micro_batch, seq_len=s, ep=ep, cp=cp)
    ev = _Evaluator(model, cl, G, s, attention, conventions)
    est_of = ev.est_of
    too_big: set[tuple] = set()
    fitting = []
    for c in configs:  # enumerate_layouts yields micro-batches in increasing order per family
        fam = (c.tp, c.pp, c.virtual_stages, c.zero_stage, c.recompute, c.sp, c.ep, c.cp)
        if fam in too_big:
            continue
        e = est_of(c)
        if e is None:
            continue
        if not e.fits:  # a larger micro-batch of the same family cannot fit either
            too_big.add(fam)
            continue
        fitting.append(e)
    fitting.sort(key=lambda e: -e.tokens_per_s)
    ranked = []
    for i, e in enumerate(fitting):
        if i < 3:
            binding, reasons = _binding(e, ev.fit_of)
        else:
            binding, reasons = "", ()
        ranked.append(Ranked(e, binding, reasons))
    notes = ((model.default_seq_len()[1],) if seq_len is None else ()) + ((window,) if window else ())
    if global_batch is None:
        notes += (f"global_batch not given: max(gpus, 512) = {G} sequences ({G * s:,} tokens per step)",)
    return SearchResult(
        model.name, n, cl.describe(), G, s, len(configs), len(fitting), tuple(ranked), top_k, notes
    )


# ---- the planner's search: the layouts a team would try, at every GPU count (issue 23 sec. 2)
@dataclass(frozen=True)
class CountBest:
    """The fastest team layout found on `gpus` GPUs (None when none fits), with the reason when none
    does, the memory of the lightest layout tried (bytes; 0 when none was valid) and the layouts priced."""

    gpus: int
    best: Ranked | None
    reason: str
    lightest_bytes: int
    evaluated: int


def _team_families(model, n: int, G: int, s: int, gpus_per_node: int, tps=None, pps=None):
    """The layout families a team tries on n GPUs (Narayanan et al. 2021 sec. 3.3 takeaways: tensor
    parallelism inside a node, pipeline parallelism across nodes, data parallelism for the rest; sequence
    parallelism with every TP group, since it cuts activations at the same traffic (Korthikanti et al.
    2022 sec. 4.2.2)): (tp, pp, cp, dp, virtual stages, zero stage, ep). tps/pps restrict the degrees
    (the neighbourhood of the previous count's best)."""
    for tp in _divisors(n):
        if tp > gpus_per_node or (tps is not None and tp not in tps) or model.tp_note(tp) is not None:
            continue
        for pp in _divisors(n // tp):
            if pp > model.n_layers or (pps is not None and pp not in pps):
                continue
            for c_p in cp_candidates(n // (tp * pp), s):
                if (n // (tp * pp)) % c_p:
                    continue
                dp = n // (tp * pp * c_p)
                if G % dp:
                    continue
                # ZeRO: none on one replica; only the distributed optimizer (1) with a pipeline (Megatron;
                # DeepSpeed's pipeline engine refuses 2 and 3: memory.check_zero_pp); 1-3 without one
                zs = (0,) if dp * c_p == 1 else (1,) if pp > 1 else (1, 2, 3)
                vmax = max((v for v in (2, 4, 8) if pp > 1 and model.n_layers % (pp * v) == 0), default=1)
                eps = ep_candidates(model, dp * c_p)
                eps = sorted({eps[0], eps[-1]})  # no EP, or the widest the experts allow
                for v in sorted({1, vmax}):
                    for z in zs:
                        for e in eps:
                            yield tp, pp, c_p, dp, v, z, e


def team_layouts(
    model,
    gpu,
    counts,
    *,
    global_batch: int,
    seq_len: int | None = None,
    micro_batch: int | None = None,
    gpus_per_node: int = 8,
    link=None,
    inter_link=None,
    ports_per_node: int | None = None,
    profile=None,
    attention: str = "flash",
    max_micro_batch: int = 8,
    screen: int | None = 3,
    memory_cache: dict | None = None,
    matmul_efficiency: float | None = None,
    **conventions,
) -> tuple[CountBest, ...]:
    """The fastest layout of every count in `counts` on `gpu` at one global batch (sequences), for
    the planner: the layouts a team tries (_team_families), each with micro-batches 1, 2, 4, ... up to
    max_micro_batch (or the `micro_batch` given) and, per micro-batch, the lightest activation recompute
    that fits (a heavier one only repeats work). Speed (the planner's 2 s over the catalog): each
    (tp, pp, cp) split is first priced with its highest ZeRO stage and most interleaving, and the `screen`
    fastest splits are then searched in full (every ZeRO stage, interleaving, micro-batch); a split
    whose screening layout does not fit is searched in full too (a higher ZeRO stage may fit).
    screen=None searches every split in full (tests compare the two). The step model runs only for a
    layout that could still win: the memory decides what fits, and a layout whose step-time lower bound
    (gpukit.parallel.pipeline_breakdown: compute, elementwise, TP/PP/EP/CP traffic and the bubble)
    cannot beat the fastest so far is not priced; the answer is the same as pricing every layout.
    memory_cache: one dict passed to the calls for several GPU types of the same model, global batch,
    seq_len and conventions. matmul_efficiency: the share of the dense peak the matmuls sustain
    (default the cluster's stated one)."""
    model = as_model_spec(model)
    s = require_positive_int("seq_len", seq_len if seq_len is not None else model.default_seq_len()[0])
    G = require_positive_int("global_batch", global_batch)
    gpn = require_positive_int("gpus_per_node", gpus_per_node)
    if micro_batch is not None:
        micro_batch = require_positive_int("micro_batch", micro_batch)
    if screen is not None:
        screen = require_positive_int("screen", screen)
    eff = {} if matmul_efficiency is None else {"matmul_efficiency": matmul_efficiency}
    cl = make_cluster(gpu, gpn, link, inter_link, ports_per_node, profile=profile, **eff)
    ev = _Evaluator(model, cl, G, s, attention, conventions, memory_cache)
    made = {} if memory_cache is None else memory_cache.setdefault("parallel configs", {})  # built once
    bs_all = (
        (micro_batch,)
        if micro_batch is not None
        else tuple(2**k for k in range(max_micro_batch.bit_length()) if 2**k <= max_micro_batch)
    )
    out = []
    for n in sorted({check_search_gpus(c) for c in counts}):
        if n > gpn and n % gpn:
            out.append(CountBest(n, None, f"{n} GPUs is not whole nodes of {gpn}", 0, 0))
            continue
        seen = 0
        lightest = None

        def fitting(fams, bs):
            """The layouts to price, in the search's order: per family and micro-batch (1, 2, 4, ... until
            one fits in no recompute), the lightest activation recompute that fits (a heavier one only
            repeats work). Memory only (fit_of): the step model runs in fastest."""
            nonlocal seen, lightest
            out = []
            for tp, pp, c_p, dp, v, z, e in fams:
                for b in bs:
                    if G % (dp * b) or (v > 1 and (G // (dp * b)) % pp):
                        break
                    fitted = False
                    for rc in RECOMPUTE:
                        key = (dp, tp, pp, v, z, b, rc, e, c_p)
                        c = made.get(key)
                        if c is None:
                            c = made[key] = ParallelConfig(dp, tp, pp, v, z, b, rc, tp > 1, ep=e, cp=c_p)
                        r = ev.fit_of(c)
                        seen += 1
                        if r is None:
                            continue
                        if not r.fits:
                            if lightest is None or r.memory_per_gpu_bytes < lightest:
                                lightest = r.memory_per_gpu_bytes
                            continue
                        fitted = True
                        out.append(c)
                        break
                    if not fitted:  # a larger micro-batch needs more memory still
                        break
            return out

        def fastest(configs, floor=None):
            """The fastest of these layouts (the first of equals), or None: a layout whose step-time bound
            cannot beat the fastest so far, nor reach `floor`, is not priced (est_of's beat)."""
            best = None
            for c in configs:
                beats = [t for t in (floor, None if best is None else best.tokens_per_s) if t is not None]
                r = ev.est_of(c, max(beats, default=None))
                if isinstance(r, Estimate) and (best is None or r.tokens_per_s > best.tokens_per_s):
                    best = r
            return best

        fams = list(_team_families(model, n, G, s, gpn))
        splits: dict[tuple, list] = {}
        for f in fams:
            splits.setdefault(f[:4], []).append(f)
        # a split whose memory-lightest layout (its highest ZeRO stage, widest EP, no interleaving, the
        # smallest micro-batch, every recompute) does not fit has no layout that fits: dropped unsearched
        for k in list(splits):
            fs = splits[k]
            z_max, e_max = max(f[5] for f in fs), max(f[6] for f in fs)
            light = [f for f in fs if f[4] == 1 and f[5] == z_max and f[6] == e_max]
            if light and not fitting(light, bs_all[:1]):
                del splits[k]
        if screen is None or len(splits) <= screen:
            chosen = list(splits)
        else:
            # each split is scored by the fastest of its screening layouts (the lightest ZeRO stage, most
            # interleaving); those with none that fits are searched in full (a lower ZeRO stage or less
            # interleaving may fit), and the `screen` fastest of the others, a tie to the earlier split.
            # Speed: the splits are priced by decreasing step-time bound (est_of); once `screen` are priced,
            # a split whose bound is below the screen-th score cannot be among them and is not priced
            cands = {k: fitting(fs[-1:], bs_all) for k, fs in splits.items()}
            order = list(splits)
            bound = {k: ev.speed_bound(cands[k]) for k in order if cands[k]}
            scores: dict[tuple, float] = {}
            for k in sorted(bound, key=lambda k: -bound[k]):  # stable: equal bounds in split order
                top = sorted(scores.values(), reverse=True)[:screen]
                floor = top[-1] if len(top) == screen else None
                if floor is not None and bound[k] < floor:  # and so is every split after it
                    break
                # a layout that cannot reach the floor cannot change the top `screen`: not priced
                first = fastest(cands[k], None if floor is None else math.nextafter(floor, 0.0))
                if first is not None and (floor is None or first.tokens_per_s >= floor):
                    scores[k] = first.tokens_per_s  # exact: every layout left unpriced is slower
            ranked = sorted(scores, key=lambda k: (-scores[k], order.index(k)))
            chosen = [k for k in order if not cands[k]] + ranked[:screen]
        best = fastest(fitting([f for k in chosen for f in splits[k]], bs_all))
        if best is None:
            reason = (
                f"no layout fits in memory (lightest {lightest / GiB:.1f} GiB > {cl.gpu.memory_bytes / GiB:.1f} GiB)"
                if lightest is not None
                else f"no layout of {n} GPUs divides the global batch of {G} sequences"
                if not fams
                else "no valid layout"
            )
            out.append(CountBest(n, None, reason, int(lightest or 0), seen))
            continue
        binding, reasons = _binding(best, ev.fit_of)
        out.append(CountBest(n, Ranked(best, binding, reasons), "", 0, seen))
    return tuple(out)
