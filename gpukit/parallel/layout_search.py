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
    estimate,
    layout_train_setup,
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


def _binding(e: Estimate, est_of) -> tuple[str, tuple[str, ...]]:
    """What holds this layout back: the largest non-compute part of its step, and memory when a
    cheaper recompute or a larger micro-batch would not fit."""
    reasons = []
    c = e.config
    if c.recompute != "none":
        lighter = "selective" if c.recompute == "full" else "none"
        alt = est_of(replace(c, recompute=lighter))
        if alt is not None and not alt.fits:
            reasons.append(
                f"memory: recompute {lighter} needs {alt.memory_per_gpu_bytes / GiB:.0f} GiB "
                f"> {e.gpu_memory_bytes / GiB:.0f} GiB"
            )
    bigger = est_of(replace(c, micro_batch=c.micro_batch * 2))
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


def _evaluator(model, cl: Cluster, G: int, s: int, attention: str, conventions: dict, memory_cache=None):
    """est_of(config): the layout's Estimate, or a _NoFit with its memory only (the step model is
    skipped), or None when the layout is invalid; memoized. A lower bound of the model states prunes
    before the memory model runs. memory_cache: a dict shared by the evaluators of one model, global
    batch and seq_len on several GPU types (the bytes of a layout do not depend on the GPU, only
    whether they fit)."""
    conventions = dict(conventions)
    cache: dict[ParallelConfig, Estimate | _NoFit | None] = {}
    cap = cl.gpu.memory_bytes
    # a lower bound of the model states under either convention (layout_convention picks one per layout)
    w, g, o = (
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
    layer_elems = model.layer_params() * model.n_layers
    expert_elems = model.n_moe_layers * model.n_experts * model.expert_params() if model.is_moe else 0
    dropout = conventions.pop("dropout", model.dropout)  # the model row's recipe (gpukit/data/models.csv)

    def est_of(c: ParallelConfig):
        """Estimate, or a _NoFit with the memory only (the step model is skipped), or None if invalid."""
        if c not in cache:
            # lower bound of the model states alone (a stage holds at least n_layers/pp layers): cheap prune
            # (EP: the routed experts are split ep ways, helper G)
            n = (layer_elems - expert_elems * (1 - 1 / c.ep)) / (c.tp * c.pp)
            z, d = c.zero_stage, c.dp * c.cp  # ZeRO shards over the dp x cp ranks at most (a lower bound)
            states = n * (w / (d if z >= 3 else 1) + g / (d if z >= 2 else 1) + o / (d if z >= 1 else 1))
            if states > cap:
                cache[c] = _NoFit(int(states), "states")
                return cache[c]
            try:
                m = G // (c.dp * c.micro_batch)
                key = (c, G, s)
                if memory_cache is not None and key in memory_cache:
                    mb = replace(
                        memory_cache[key],
                        gpu_memory_bytes=cap,
                        gpu_name=cl.gpu.name,
                        fits=memory_cache[key].total_bytes <= cap,
                    )
                else:
                    mb = mem.estimate_memory(
                        model,
                        setup=layout_train_setup(c, s, m, attention, dropout, **conventions),
                        gpu=cl.gpu,
                    )
                    if memory_cache is not None:
                        memory_cache[key] = mb
                if not mb.fits:
                    cache[c] = _NoFit(mb.total_bytes, "total")
                else:
                    cache[c] = estimate(
                        model,
                        c,
                        cl,
                        global_batch=G,
                        seq_len=s,
                        attention=attention,
                        dropout=dropout,
                        _memory=mb,
                        **conventions,
                    )
            except ValueError:
                cache[c] = None
        return cache[c]

    return est_of


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
    est_of = _evaluator(model, cl, G, s, attention, conventions)
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
            binding, reasons = _binding(e, est_of)
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
    screen=None searches every split in full (tests compare the two). memory_cache: one dict passed
    to the calls for several GPU types of the same model, global batch, seq_len and conventions.
    matmul_efficiency: the share of the dense peak the matmuls sustain (default the cluster's stated one)."""
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
    est_of = _evaluator(model, cl, G, s, attention, conventions, memory_cache)
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

        def fastest(fams, bs):
            """The fastest fitting layout of these families and micro-batches (lightest recompute per b)."""
            nonlocal seen, lightest
            best = None
            for tp, pp, c_p, dp, v, z, e in fams:
                for b in bs:
                    if G % (dp * b) or (v > 1 and (G // (dp * b)) % pp):
                        break
                    fitted = False
                    for rc in RECOMPUTE:
                        r = est_of(ParallelConfig(dp, tp, pp, v, z, b, rc, tp > 1, ep=e, cp=c_p))
                        seen += 1
                        if r is None:
                            continue
                        if not r.fits:
                            if lightest is None or r.memory_per_gpu_bytes < lightest:
                                lightest = r.memory_per_gpu_bytes
                            continue
                        fitted = True
                        if best is None or r.tokens_per_s > best.tokens_per_s:
                            best = r
                        break
                    if not fitted:  # a larger micro-batch needs more memory still
                        break
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
            if light and fastest(light, bs_all[:1]) is None:
                del splits[k]
        if screen is None or len(splits) <= screen:
            chosen = list(splits)
        else:
            scored = []
            for k, fs in splits.items():
                first = fastest(fs[-1:], bs_all)  # the lightest ZeRO stage, most interleaving
                scored.append((first.tokens_per_s if first is not None else float("inf"), k))
            scored.sort(key=lambda t: -t[0])
            chosen = [k for t, k in scored if t == float("inf")] + [
                k for t, k in scored if t != float("inf")
            ][:screen]
        best = fastest([f for k in chosen for f in splits[k]], bs_all)
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
        binding, reasons = _binding(best, est_of)
        out.append(CountBest(n, Ranked(best, binding, reasons), "", 0, seen))
    return tuple(out)
