"""Cluster economics: the cost of a training run with its scaling efficiency, cost vs time with the
Pareto set, buy vs rent, spot instances with the optimal checkpoint interval, serving cost per
million tokens, the articles' cost table and published training-run costs.

Conventions: prices are USD per GPU-hour (an instance price divided by its GPU count, gpukit.prices);
hours are wall-clock hours of the whole job; gpu_hours = hours x gpus. The single-GPU time comes from
gpukit.compute.time_to_train (6ND FLOPs at peak x MFU, Kaplan et al. 2020; Narayanan et al. 2021
eq. 4); n GPUs take t1 / (n x efficiency), so cost = t1 x price / efficiency: efficiency below 1 is
what makes more GPUs cost more (never assumed 1 unless the caller says so).
Used in: notebooks/08_cluster_economics, notebooks/09_decide, gpukit.plan, gpukit.audits.cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace

from gpukit.catalog import get_gpu, get_interconnect, inter_node_link, intra_node_link
from gpukit.comm import collective_time, hierarchical_all_reduce
from gpukit.compute import time_to_train
from gpukit.cost_published import PUBLISHED_RUNS, PublishedCheck, PublishedRun, published_check  # noqa: F401
from gpukit.cost_spot import (  # noqa: F401
    SpotEstimate,
    daly_interval_s,
    expected_wall_s,
    spot_run,
    young_interval_s,
)
from gpukit.errors import require_choice, require_positive, require_positive_int
from gpukit.specs import ModelSpec
from gpukit.units import GiB, dtype_bytes

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
# Default power per GPU including its share of the server: DGX H100 system max 10.2 kW for 8 x 700 W
# GPUs (NVIDIA DGX H100 datasheet) = 1.82 x the GPU TDP. An assumption, named in every output.
SERVER_POWER_FACTOR = 10.2 / (8 * 0.7)
DEFAULT_PUE = 1.56  # Uptime Institute Global Data Center Survey 2024: industry-average PUE
DEFAULT_USD_PER_KWH = 0.10  # stated assumption (US industrial electricity is roughly 0.08-0.12 USD/kWh)
DEFAULT_TOKENS_PER_GPU = 8192  # tokens per GPU per optimizer step for the efficiency estimate (4 x 2048)


# ------------------------------------------------------------------------------- efficiency
@dataclass(frozen=True)
class Efficiency:
    """Predicted data-parallel scaling efficiency of one GPU count (weak scaling per step)."""

    gpus: int
    nodes: int
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    efficiency: float
    model: str  # which model produced it, in words

    def to_json_dict(self) -> dict:
        return asdict(self)


def predicted_efficiency(n_params: float, gpu: str, gpus: int, *, gpus_per_node: int = 8,
                         inter_link: str | None = None, intra_link: str | None = None,
                         tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU, mfu: float = 0.4,
                         grad_dtype: str = "bf16", zero_stage: int = 0, overlap: float = 0.0,
                         use_scaling: bool = True, ports_per_node: int | None = None) -> Efficiency:
    """Efficiency = t_compute / (t_compute + exposed communication) for one optimizer step.

    Compute: 6 N T / (peak x MFU) (Kaplan et al. 2020). Communication: the gradient all-reduce of N
    values in grad_dtype, ring inside a node (gpukit.comm.collective_time) or hierarchical across
    nodes (reduce-scatter in the node, all-reduce across on S/k, all-gather; Thakur et al. 2005,
    gpukit.comm.hierarchical_all_reduce), `ports_per_node` ports of `inter_link` per node (default one
    per GPU, rail-optimized; default link catalog.inter_node_link: the InfiniBand of the GPU's era); the
    r GPUs of a node that send at once share its ports, min(1, ports / r) of a port each (REFERENCE
    sec. 6: per-port rate x ports used; gpukit.comm_network.ClusterNetwork.inter_link). ZeRO-3
    moves 1.5x the bytes of an all-reduce (Rajbhandari et al. 2019, sec. 7). `overlap` is the share
    hidden behind backward (0 = none, a lower bound on efficiency; PyTorch DDP buckets hide part of it).

    When gpukit.scaling (the DDP bucket model, issue 9) is installed and the layout is plain data
    parallel or ZeRO-1/2, its prediction is used instead (buckets overlapped with the backward when
    overlap > 0); `model` says which one produced the figure.
    """
    n = require_positive_int("gpus", gpus)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    g = get_gpu(gpu)
    inter_link = inter_link or inter_node_link(g).name
    if use_scaling and zero_stage < 3 and n > 1:
        est = _from_scaling(n_params, gpu, n, k, intra_link or intra_node_link(g, min(n, k)).name, inter_link, tokens_per_gpu, mfu,
                            grad_dtype, overlap, ports)
        if est is not None:
            return est
    compute_s = 6 * require_positive("n_params", n_params) * require_positive("tokens_per_gpu", tokens_per_gpu) / (
        g.peak_tflops(g.half_dtype) * 1e12 * require_positive("mfu", mfu))
    size = n_params * dtype_bytes(grad_dtype) * (1.5 if zero_stage == 3 else 1.0)
    intra = get_interconnect(intra_link) if intra_link else intra_node_link(g, min(n, k))
    nodes = math.ceil(n / k)
    last = n - (nodes - 1) * k  # GPUs (and ports) of the last node: fewer than k when n does not fill whole nodes
    if n == 1:
        comm_s = 0.0
    elif nodes == 1:
        comm_s = collective_time("all_reduce", size, n, intra).time_s
    elif last == k:
        comm_s = hierarchical_all_reduce(size, nodes, min(k, n), intra, _shared(inter_link, ports, k)).time_s
    else:
        # a partial node: after its reduce-scatter its `last` GPUs hold shards of S/last, so each of its ports
        # carries k/last times a full node's bytes across and paces the inter-node all-reduce (the node still
        # sends all of S); the full nodes' reduce-scatter and all-gather over k GPUs pace the intra-node phases
        rs, _, ag = hierarchical_all_reduce(size, nodes, k, intra, _shared(inter_link, ports, k)).phases
        _, across, _ = hierarchical_all_reduce(size, nodes, last, intra, _shared(inter_link, ports, last)).phases
        comm_s = rs.time_s + across.time_s + ag.time_s
    exposed = (1 - overlap) * comm_s
    model = (f"data-parallel step: 6N x {tokens_per_gpu:,.0f} tokens/GPU at {mfu:.0%} MFU, {grad_dtype} gradient "
             f"all-reduce over {intra.name} in a node and {inter_link} between nodes{_ports_words(ports, k)}, "
             f"{overlap:.0%} overlap (gpukit.comm alpha-beta)")
    if nodes > 1 and last < k:
        model += (f"; {n} GPUs = {nodes - 1} node(s) of {k} + one of {last}: the last node's "
                  f"{min(last, ports)} port(s) carry the gradient across, and DDP's bucket copies are left out")
    return Efficiency(gpus=n, nodes=nodes, compute_s=compute_s, comm_s=comm_s, exposed_comm_s=exposed,
                      efficiency=compute_s / (compute_s + exposed), model=model)


def _shared(inter_link: str, ports: int, ranks_sending: int):
    """`inter_link` as each of `ranks_sending` GPUs of a node sees it while they share its `ports` ports:
    line rate x min(1, ports / ranks) per GPU (REFERENCE sec. 6; as ClusterNetwork.inter_link)."""
    link = get_interconnect(inter_link)
    share = min(1.0, ports / ranks_sending)
    return link if share == 1.0 else replace(link, bandwidth_gbps=link.bandwidth_gbps * share)


def _ports_words(ports: int, k: int) -> str:
    """How the GPUs of a node share its inter-node ports, in words ('' for one port per GPU)."""
    if ports == k:
        return ""
    if ports > k:
        return f" ({ports} ports per node for {k} GPUs: one per GPU is used)"
    return f" ({ports} port(s) per node shared by its {k} GPUs: {ports / k:.3g} of a port each)"


_SCALING_CACHE: dict = {}


def _from_scaling(n_params, gpu, n, k, intra, inter, tokens_per_gpu, mfu, grad_dtype, overlap, ports=None):
    """gpukit.scaling.scaling(...) efficiency at n GPUs (cached), or None for a layout it does not take."""
    from gpukit.scaling import scaling

    ports = k if ports is None else ports
    key = (round(n_params), gpu, n, k, intra, inter, round(tokens_per_gpu), round(mfu, 6), grad_dtype, overlap > 0,
           ports)
    if key not in _SCALING_CACHE:
        try:
            r = scaling(n_params=n_params, gpu=gpu, gpus=(1, n), gpus_per_node=k, link=intra,
                        inter_link=inter if n > k else None, tokens_per_gpu=tokens_per_gpu, mfu=mfu,
                        grad_dtype=grad_dtype, overlap=overlap > 0, ports_per_node=ports)
        except ValueError:  # a layout that model does not take (e.g. a partial node): the alpha-beta step
            return None
        row = r.rows[-1]
        model = (f"gpukit.scaling DDP bucket model: 6N x {tokens_per_gpu:,.0f} tokens/GPU at {mfu:.0%} MFU, "
                 f"{grad_dtype} gradients over {intra} in a node and {inter} between nodes"
                 f"{_ports_words(ports, k) if n > k else ''}, "
                 f"{'overlapped with the backward' if overlap > 0 else 'no overlap'}")
        _SCALING_CACHE[key] = Efficiency(gpus=n, nodes=math.ceil(n / k), compute_s=row.compute_s, comm_s=row.comm_s,
                                         exposed_comm_s=row.exposed_comm_s, efficiency=row.efficiency, model=model)
    return _SCALING_CACHE[key]


def rail_ports(inter_link: str | None, ports_per_node: int | None = None, gpus_per_node: int = 8) -> str:
    """The inter-node assumption in words, as the efficiency models it: `ports_per_node` ports (default
    one per GPU, rail-optimized) shared by the GPUs of a node. Commodity Ethernet nodes often share one
    or two ports between all GPUs, and a collective between nodes gets per-port rate x ports used
    (REFERENCE sec. 6)."""
    k = require_positive_int("gpus_per_node", gpus_per_node)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    era = " of the link of its era (catalog.inter_node_link: InfiniBand; 100 Gb/s Ethernet for GPUs without one)"
    if ports >= k:
        extra = f"; {ports} ports per node, one per GPU used" if ports > k else ""
        link = f"one {inter_link} port per GPU" if inter_link else f"one port per GPU{era}"
        return f"{link} (rail-optimized{extra}): a node with fewer ports is slower (--ports-per-node models it)"
    link = f"{ports} {inter_link} port(s) per node" if inter_link else f"{ports} port(s) per node{era}"
    return (f"{link} shared by its {k} GPUs, {ports / k:.3g} of a port per GPU while all send "
            f"(--ports-per-node {ports}; default: one per GPU)")


# ------------------------------------------------------------------------------- training cost
@dataclass(frozen=True)
class CostRow:
    """One (GPU type, GPU count): wall hours, GPU-hours, cost, efficiency, the price used, and whether the
    priced layout's training state fits each GPU (memory_per_gpu_bytes needed, gpu_memory_bytes usable)."""

    gpu: str
    gpus: int
    nodes: int
    hours: float
    gpu_hours: float
    cost_usd: float
    efficiency: float
    usd_per_gpu_hour: float
    price_source: str
    pareto: bool = False
    spot: dict | None = None  # SpotEstimate.to_json_dict() when spot was asked for
    fits: bool | None = None  # None: not checked
    memory_per_gpu_bytes: int | None = None
    gpu_memory_bytes: int | None = None

    def to_json_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CostTable:
    """Rows of a cost calculation, the assumptions it rests on, the Pareto set, and warnings (a layout
    that does not fit, a price that looks like a node's)."""

    rows: tuple[CostRow, ...]
    tokens: float
    n_params: float
    utilization_source: str
    efficiency_model: str
    assumptions: tuple[str, ...] = field(default=())
    warnings: tuple[str, ...] = field(default=())

    @property
    def pareto_rows(self) -> tuple[CostRow, ...]:
        return tuple(r for r in self.rows if r.pareto)

    def to_json_dict(self) -> dict:
        return {"rows": [r.to_json_dict() for r in self.rows], "tokens": self.tokens, "n_params": self.n_params,
                "utilization_source": self.utilization_source, "efficiency_model": self.efficiency_model,
                "assumptions": list(self.assumptions), "warnings": list(self.warnings)}

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in r.to_json_dict().items() if k != "spot"} for r in self.rows])

    def to_text(self) -> str:
        lines = [f"{'gpu':<12} {'gpus':>5} {'hours':>10} {'GPU-hours':>11} {'cost USD':>12} {'eff':>6} {'$/GPU-h':>8} "
                 f"{'GiB/GPU':>8} {'fits':>4}  pareto"]
        for r in self.rows:
            mem = f"{r.memory_per_gpu_bytes / GiB:>8.1f}" if r.memory_per_gpu_bytes is not None else f"{'n/a':>8}"
            fit = {True: "yes", False: "NO", None: "n/a"}[r.fits]
            lines.append(f"{r.gpu:<12} {r.gpus:>5} {r.hours:>10,.1f} {r.gpu_hours:>11,.0f} {r.cost_usd:>12,.0f} "
                         f"{r.efficiency:>6.1%} {r.usd_per_gpu_hour:>8.2f} {mem} {fit:>4}  {'*' if r.pareto else ''}")
        lines += [f"WARNING: {w}" for w in self.warnings]
        lines += [f"utilization: {self.utilization_source}", f"efficiency: {self.efficiency_model}"]
        lines += [f"assumes: {a}" for a in self.assumptions]
        return "\n".join(lines)


def pareto_front(points: Sequence[tuple[float, float]]) -> tuple[bool, ...]:
    """Which points are non-dominated when both coordinates are minimized (no other point is <= in
    both and < in one). Ties: equal points are all kept."""
    out = []
    for i, (a, b) in enumerate(points):
        dominated = any((c <= a and d <= b and (c < a or d < b)) for j, (c, d) in enumerate(points) if j != i)
        out.append(not dominated)
    return tuple(out)


def _price(gpu: str, price, prices, spot: bool = False):
    """(usd_per_gpu_hour, source): a number is 'given'; None looks the GPU up in the price table."""
    if price is not None:
        return require_positive("price_per_gpu_hour", price), "given"
    from gpukit.prices import quote

    q = quote(gpu, prices, policy="median", spot=spot)
    return q.usd_per_gpu_hour, q.source


_RECOMPUTE_WORDS = {"none": "no recompute", "selective": "selective recompute", "full": "full recompute"}


def _fit(model, n_params: float, gpu, n: int, zero_stage: int, recompute: str, seq_len: int | None):
    """gpukit.memory's per-GPU estimate of the layout training_cost prices: plain data parallel over n
    GPUs (ZeRO `zero_stage`), bf16-mixed AdamW, micro_batch 1 of seq_len tokens, dropout as the model row's recipe, convention
    "pytorch" (the peak of an eager step, as gpukit.plan decides fit), CUDA context and allocator slack
    included (gpukit.memory.estimate_memory with the GPU)."""
    from gpukit.memory import TrainSetup, estimate_memory

    setup = TrainSetup(zero_stage=zero_stage if n > 1 else 0, dp=n, recompute=recompute, seq_len=seq_len or 2048,
                       micro_batch=1, dropout=isinstance(model, ModelSpec) and model.dropout)  # the model's recipe
    if isinstance(model, ModelSpec):
        return estimate_memory(model, setup=setup, gpu=gpu)
    return estimate_memory(n_params=int(round(n_params)), setup=setup, gpu=gpu)


def training_cost(model, tokens: float, gpu: str | Sequence[str], gpus: int | Sequence[int], *,
                  mfu: float | None = None, profile=None, price_per_gpu_hour: float | None = None, prices=None,
                  efficiency=None, gpus_per_node: int = 8, inter_link: str | None = None,
                  tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU, zero_stage: int = 0, overlap: float = 0.0,
                  spot: dict | None = None, ports_per_node: int | None = None, recompute: str = "none",
                  price_per_node_hour: float | None = None) -> CostTable:
    """Time and cost of training `model` (ModelSpec or n_params) on `tokens` over GPU types x counts.

    efficiency: None = predicted (predicted_efficiency, data-parallel model with `ports_per_node`
    inter-node ports per node, default one per GPU; say so in the output), a number in (0, 1] for every
    count, or a dict {gpus: efficiency}. Price: a given USD per GPU-hour, a given USD per node-hour
    (price_per_node_hour / gpus_per_node), or the median market row of `gpu` in `prices`
    (data/prices.csv by default); a given price that looks like the other kind gets a warning
    (gpukit.prices.price_warning). spot: optional {"preemptions_per_day", "checkpoint_minutes",
    "restart_minutes", "spot_price_per_gpu_hour"} adds the expected spot time and cost per row (spot_run).

    Memory: every row says whether the priced layout (data parallel, ZeRO `zero_stage`, `recompute`,
    micro_batch 1 at the FLOPs' seq_len; see _fit) fits each GPU, by gpukit.memory as gpukit.plan
    decides it. A layout that does not fit is not an error (gpukit.plan lists such counts as "does not
    fit" too): its row keeps its price, fits is False and a warning says so. With n_params alone only
    the model states are counted (no activations): fits is then a lower bound on the need.
    """
    gpu_names = [gpu] if isinstance(gpu, str) else list(gpu)
    counts = [gpus] if isinstance(gpus, int) else list(gpus)
    if not gpu_names or not counts:
        raise ValueError("gpu and gpus must name at least one GPU type and one count")
    counts = [require_positive_int("gpus", c) for c in counts]
    tokens = require_positive("tokens", tokens)
    k = require_positive_int("gpus_per_node", gpus_per_node)
    ports = k if ports_per_node is None else require_positive_int("ports_per_node", ports_per_node)
    if isinstance(zero_stage, bool) or zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    require_choice("recompute", recompute, ("none", "selective", "full"))
    if price_per_gpu_hour is not None and price_per_node_hour is not None:
        raise ValueError("give price_per_gpu_hour or price_per_node_hour, not both")
    if isinstance(model, str):  # a catalog name
        from gpukit.catalog import as_model

        model = as_model(model)
    n_params = model.n_params if isinstance(model, ModelSpec) else require_positive("n_params", model)
    tokens_per_gpu = require_positive("tokens_per_gpu", tokens_per_gpu)
    too_many = [n for n in counts if n * tokens_per_gpu > tokens]
    if too_many:  # the efficiency is per optimizer step: a run shorter than one step has none
        raise ValueError(f"gpus must be at most tokens / tokens_per_gpu = {tokens / tokens_per_gpu:,.0f} (one optimizer "
                         f"step of {tokens_per_gpu:,.0f} tokens per GPU), got {too_many[0]:,}")
    warnings: list[str] = []
    if price_per_node_hour is not None:
        node_usd = require_positive("price_per_node_hour", price_per_node_hour)
        price_per_gpu_hour = node_usd / k
    if (price_per_gpu_hour is not None or price_per_node_hour is not None) and len(gpu_names) > 1:
        warnings.append(f"the price given applies to every GPU type ({', '.join(gpu_names)}): they are compared at "
                        "the same price per GPU-hour; give one type per run, or --prices, to price each its own")
    rows, util_source, eff_models, flops_line, seq_line = [], "", [], "", ""
    for name in gpu_names:
        g = get_gpu(name)
        t1 = time_to_train(model, tokens, g, 1, mfu=mfu, profile=profile, dtype=g.half_dtype, recompute=recompute)
        util_source = t1.utilization_source
        # what the FLOPs are (gpukit.compute.time_to_train): 6N of the layers' matmul weights and the LM head
        # plus attention at seq_len for a model (causal; full for an encoder); 6N of the count given otherwise
        per_token = "8N (full recompute: a second forward)" if recompute == "full" else "6N"
        flops_line = (f"{t1.flops / tokens:.3g} FLOPs per token: {per_token} with N = {t1.n_params / 1e9:.3g}B (layer "
                      f"matmuls + LM head {t1.lm_head_params / 1e9:.3g}B; the embedding lookup costs none), plus "
                      f"{'full (encoder)' if getattr(model, 'arch', '') == 'encoder' else 'causal'} attention at seq_len {t1.seq_len} ({t1.seq_len_source})"
                      if t1.seq_len is not None else
                      f"{per_token} FLOPs per token with N = {t1.n_params / 1e9:.3g}B (n_params only: no attention term)")
        seq_line = (f"micro_batch 1 x seq_len {t1.seq_len} (the FLOPs' seq_len)" if t1.seq_len is not None else
                    "model states only (n_params given: activations are not counted, so the need is a lower bound; "
                    "give a model for them)")
        if price_per_node_hour is not None:
            usd, src = price_per_gpu_hour, f"given per node-hour: ${price_per_node_hour:g} / {k} GPUs per node"
            from gpukit.prices import node_price_warning

            w = node_price_warning(name, price_per_node_hour, k, prices,
                                   field="price_per_node_hour (--price-per-node-hour)")
        else:
            usd, src = _price(name, price_per_gpu_hour, prices)
            w = None
            if price_per_gpu_hour is not None:
                from gpukit.prices import price_warning

                w = price_warning(name, usd, prices, gpus_per_node=k, field="price_per_gpu_hour (--price-per-gpu-hour)",
                                  fix="give it as price_per_node_hour (--price-per-node-hour), which divides by "
                                      "gpus_per_node (--gpus-per-node)")
        if w and w not in warnings:
            warnings.append(w)
        no_fit = []
        for n in counts:
            if efficiency is None:
                est = predicted_efficiency(n_params, name, n, gpus_per_node=k, inter_link=inter_link,
                                           tokens_per_gpu=tokens_per_gpu, mfu=t1.utilization, zero_stage=zero_stage,
                                           overlap=overlap, ports_per_node=ports)
                eff, eff_model = est.efficiency, f"{name}: {est.model}"
            else:
                eff = efficiency.get(n) if isinstance(efficiency, dict) else efficiency
                if eff is None:
                    raise ValueError(f"efficiency has no entry for {n} GPUs (keys: {sorted(efficiency)})")
                eff = require_positive("efficiency", eff)
                if eff > 1:
                    raise ValueError(f"efficiency must be in (0, 1], got {eff}")
                eff_model = "given by the caller"
            if n == 1 and efficiency is None:  # one GPU has no communication: say so once, not as a second model
                eff_model = f"{name}: 1 GPU: efficiency 1 (no communication)"
            if eff_model not in eff_models:
                eff_models.append(eff_model)
            hours = t1.seconds / 3600 / (n * eff)
            spot_est = None
            if spot is not None:
                sp = dict(spot)
                sp_price = sp.pop("spot_price_per_gpu_hour", None)
                if sp_price is None:
                    sp_price, sp_src = _price(name, None, prices, spot=True)
                else:
                    sp_price, sp_src = require_positive("spot_price_per_gpu_hour", sp_price), "given"
                    from gpukit.prices import price_warning

                    w = price_warning(name, sp_price, prices, gpus_per_node=k,
                                      field="spot_price_per_gpu_hour (--spot-price-per-gpu-hour)",
                                      fix="divide it by gpus_per_node (--gpus-per-node)")
                    if w and w not in warnings:
                        warnings.append(w)
                spot_est = spot_run(hours, n, usd, sp_price, **sp).to_json_dict()
                spot_est.update(spot_usd_per_gpu_hour=sp_price, spot_price_source=sp_src)
            m = _fit(model, n_params, g, n, zero_stage, recompute, t1.seq_len)
            if not m.fits:
                no_fit.append((n, m.total_bytes))
            rows.append(CostRow(gpu=name, gpus=n, nodes=math.ceil(n / k), hours=hours,
                                gpu_hours=hours * n, cost_usd=hours * n * usd, efficiency=eff, usd_per_gpu_hour=usd,
                                price_source=src, spot=spot_est, fits=m.fits, memory_per_gpu_bytes=m.total_bytes,
                                gpu_memory_bytes=m.gpu_memory_bytes))
        if no_fit:
            need = (f"{no_fit[0][1] / GiB:,.1f} GiB per GPU" if len({b for _, b in no_fit}) == 1 else
                    "per GPU " + ", ".join(f"{b / GiB:,.1f} GiB at {n}" for n, b in no_fit))
            warnings.append(f"{name} does NOT fit at {', '.join(str(n) for n, _ in no_fit)} GPU(s): the priced layout "
                            f"(data parallel, ZeRO-{zero_stage}, {_RECOMPUTE_WORDS[recompute]}) needs {need}, and "
                            f"{name} has {g.memory_bytes / GiB:,.1f} GiB: these rows cannot run as priced (fits false); "
                            "try ZeRO-3 (--zero 3), full recompute (--recompute full), more GPUs, or `gpukit plan`, "
                            "which searches the layouts that fit")
    # the Pareto set is over the rows that can run as priced (gpukit.plan's rule): a layout that does not fit
    # is neither faster nor cheaper than anything
    runnable = [i for i, r in enumerate(rows) if r.fits is not False]
    flags = dict(zip(runnable, pareto_front([(rows[i].hours, rows[i].cost_usd) for i in runnable]), strict=True))
    rows = [CostRow(**{**asdict(r), "pareto": flags.get(i, False)}) for i, r in enumerate(rows)]
    drop_words = ("dropout masks counted (the model's recipe)" if isinstance(model, ModelSpec) and model.dropout
                  else "no dropout")
    assumptions = (f"{tokens:,.0f} tokens, {flops_line} (gpukit.compute)",
                   f"{k} GPUs per node; between nodes {rail_ports(inter_link, ports, k)}",
                   f"memory per GPU (gpukit.memory, convention pytorch: the peak of an eager step, as gpukit.plan "
                   f"decides fit): data parallel, ZeRO-{zero_stage}, {_RECOMPUTE_WORDS[recompute]}, bf16-mixed AdamW, "
                   f"{seq_line}, {drop_words}, flash attention, plus a CUDA context and allocator slack, against the "
                   "GPU's whole memory; the Pareto set is over the rows that fit")
    return CostTable(rows=tuple(rows), tokens=tokens, n_params=float(n_params), utilization_source=util_source,
                     efficiency_model="; ".join(eff_models), assumptions=assumptions, warnings=tuple(warnings))


# ------------------------------------------------------------------------------- buy vs rent
@dataclass(frozen=True)
class BuyVsRent:
    """Owned cost per GPU-hour used against a rental price; break-even utilization and months."""

    gpu: str
    gpus: int
    capex_usd: float
    years: float
    utilization: float
    power_kw_per_gpu: float
    pue: float
    usd_per_kwh: float
    ops_usd_per_year: float
    rent_per_gpu_hour: float
    capital_per_gpu_hour: float
    energy_per_gpu_hour: float
    ops_per_gpu_hour: float
    owned_cost_per_gpu_hour: float
    break_even_utilization: float  # inf: renting is always cheaper (rent below the energy cost)
    break_even_months: float  # inf: never, at this utilization
    assumptions: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # a rent per GPU-hour that looks like a node's price (gpukit.prices.price_warning)

    def to_json_dict(self) -> dict:
        d = asdict(self)
        for k in ("break_even_utilization", "break_even_months"):
            d[k] = None if math.isinf(d[k]) else d[k]
        d["assumptions"] = list(self.assumptions)
        d["warnings"] = list(self.warnings)
        return d

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([(k, v) for k, v in self.to_json_dict().items() if k not in ("assumptions", "warnings")],
                            columns=["quantity", "value"])

    def to_text(self) -> str:
        be_u = "never (rent is below the energy cost)" if math.isinf(self.break_even_utilization) else \
            f"{self.break_even_utilization:.0%}" + (" (above 100%: renting is cheaper at any use)"
                                                     if self.break_even_utilization > 1 else "")
        be_m = "never at this utilization" if math.isinf(self.break_even_months) else f"{self.break_even_months:.1f} months"
        return "\n".join([
            f"{self.gpus} x {self.gpu}: capital ${self.capex_usd:,.0f} over {self.years:g} years at {self.utilization:.0%} use",
            f"owned per GPU-hour used: ${self.owned_cost_per_gpu_hour:.2f} (capital {self.capital_per_gpu_hour:.2f} + "
            f"energy {self.energy_per_gpu_hour:.2f} + operations {self.ops_per_gpu_hour:.2f}); rent ${self.rent_per_gpu_hour:.2f}",
            f"break-even utilization: {be_u}; break-even: {be_m}"] + [f"WARNING: {w}" for w in self.warnings]
            + [f"assumes: {a}" for a in self.assumptions])


def buy_vs_rent(gpu: str, gpus: int, purchase_usd: float, *, rent_per_gpu_hour: float | None = None, prices=None,
                power_kw: float | None = None, pue: float = DEFAULT_PUE, usd_per_kwh: float = DEFAULT_USD_PER_KWH,
                years: float = 3.0, utilization: float = 0.7, ops_usd_per_year: float = 0.0,
                network_usd: float = 0.0) -> BuyVsRent:
    """Cost per GPU-hour of owning `gpus` GPUs bought for `purchase_usd` (servers included) plus
    `network_usd`, straight-line depreciation over `years`, used `utilization` of the hours:

        owned = (capex / years + ops) / (8760 x utilization x gpus) + power_kw x PUE x USD/kWh

    (energy counted while in use; idle draw left out). Break-even utilization: owned = rent, i.e.
    u* = (capex / years + ops) / (8760 x gpus x (rent - energy)). Break-even months at `utilization`:
    capex / (730 x utilization x gpus x (rent - energy) - ops / 12). power_kw is per GPU including its
    share of the server (default TDP x SERVER_POWER_FACTOR, the DGX H100 ratio).
    """
    g = get_gpu(gpu)
    n = require_positive_int("gpus", gpus)
    capex = require_positive("purchase_usd", purchase_usd) + require_positive("network_usd", network_usd, allow_zero=True)
    years = require_positive("years", years)
    u = require_positive("utilization", utilization)
    if u > 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    pue = require_positive("pue", pue)
    if pue < 1:
        raise ValueError(f"pue must be >= 1 (total facility power / IT power), got {pue}")
    kwh = require_positive("usd_per_kwh", usd_per_kwh, allow_zero=True)
    ops = require_positive("ops_usd_per_year", ops_usd_per_year, allow_zero=True)
    assumptions = [f"straight-line depreciation over {years:g} years, no resale value",
                   f"PUE {pue:g}, electricity ${kwh:g}/kWh, energy counted only while in use"]
    if power_kw is None:
        power_kw = g.tdp_w / 1000 * SERVER_POWER_FACTOR
        assumptions.append(f"power per GPU {power_kw:.2f} kW = TDP {g.tdp_w:g} W x {SERVER_POWER_FACTOR:.2f} "
                           "(DGX H100: 10.2 kW for 8 x 700 W GPUs)")
    power_kw = require_positive("power_kw", power_kw)
    warnings: tuple[str, ...] = ()
    if rent_per_gpu_hour is None:
        rent, src = _price(gpu, None, prices)
        assumptions.append(f"rent ${rent:.2f}/GPU-hour: {src}")
    else:
        rent = require_positive("rent_per_gpu_hour", rent_per_gpu_hour)
        from gpukit.prices import price_warning

        w = price_warning(gpu, rent, prices, gpus_per_node=None, field="rent_per_gpu_hour (--rent-per-gpu-hour)",
                          fix="divide it by the node's GPU count")
        warnings = (w,) if w else ()
    fixed_per_year = capex / years + ops
    capital = capex / years / (HOURS_PER_YEAR * u * n)
    ops_h = ops / (HOURS_PER_YEAR * u * n)
    energy = power_kw * pue * kwh
    owned = capital + ops_h + energy
    margin = rent - energy
    be_u = fixed_per_year / (HOURS_PER_YEAR * n * margin) if margin > 0 else math.inf
    monthly = HOURS_PER_MONTH * u * n * margin - ops / 12
    be_m = capex / monthly if monthly > 0 else math.inf
    return BuyVsRent(gpu=gpu, gpus=n, capex_usd=capex, years=years, utilization=u, power_kw_per_gpu=power_kw, pue=pue,
                     usd_per_kwh=kwh, ops_usd_per_year=ops, rent_per_gpu_hour=rent, capital_per_gpu_hour=capital,
                     energy_per_gpu_hour=energy, ops_per_gpu_hour=ops_h, owned_cost_per_gpu_hour=owned,
                     break_even_utilization=be_u, break_even_months=be_m, assumptions=tuple(assumptions),
                     warnings=warnings)


# ------------------------------------------------------------------------------- serving
@dataclass(frozen=True)
class ServingCost:
    """USD per million generated tokens at a sustained total throughput."""

    gpus: int
    total_tokens_per_s: float
    usd_per_gpu_hour: float
    usd_per_hour: float
    usd_per_million_tokens: float
    source: str

    def to_json_dict(self) -> dict:
        return asdict(self)


def serving_cost_per_million(total_tokens_per_s: float, gpus: int, usd_per_gpu_hour: float,
                             source: str = "given throughput") -> ServingCost:
    """usd / 1M tokens = gpus x price per GPU-hour / (tokens/s x 3600) x 1e6 (busy the whole hour)."""
    tps = require_positive("total_tokens_per_s", total_tokens_per_s)
    n = require_positive_int("gpus", gpus)
    p = require_positive("usd_per_gpu_hour", usd_per_gpu_hour)
    return ServingCost(gpus=n, total_tokens_per_s=tps, usd_per_gpu_hour=p, usd_per_hour=n * p,
                       usd_per_million_tokens=n * p / (tps * 3600) * 1e6, source=source)


def serving_cost(model: str, gpu: str, *, gpus: int = 1, batch: int = 32, context: int = 2048,
                 precision: str = "bf16", usd_per_gpu_hour: float | None = None, prices=None) -> ServingCost:
    """Cost per million generated tokens of serving `model` on `gpus` x `gpu` (tensor parallel over all
    of them) at batch `batch`, half the context prompt and half generated, the batch run as one static
    batch: its `batch` prompts prefilled together (the first token each), then O - 1 decode steps, all
    from gpukit.inference's roofline with its stated efficiencies. Throughput = batch x O / (prefill +
    (O - 1) x ITL)."""
    from gpukit.catalog import get_model

    m, g = get_model(model), get_gpu(gpu)
    n = require_positive_int("gpus", gpus)
    b = require_positive_int("batch", batch)
    c = require_positive_int("context", context)
    usd, _ = _price(gpu, usd_per_gpu_hour, prices)
    from gpukit import inference

    i, o = max(1, c // 2), max(1, c - c // 2)
    p = inference.serve(m, g, gpus=n, tp=n, precision=precision, batch=b, input_tokens=i, output_tokens=o)
    if not p.fits:
        raise ValueError(f"batch {b} x context {c} of {model} does not fit {n} x {gpu} in {precision}")
    prefill = inference.prefill_step(m, g, prompt_tokens=i, batch=b, **p.step_kwargs)
    tps = b * o / (prefill.time_s + (o - 1) * p.itl_s)
    return serving_cost_per_million(tps, n, usd, source=(
        f"gpukit.inference: batch {b}, {i} prompt + {o} generated tokens, {precision}, TP {n}: the batch's "
        "prefill then its decode steps, from the roofline with its stated efficiencies"))


# ------------------------------------------------------------------------------- the articles' table
ARTICLE_TABLE = ((1, 200.0, 800.0), (4, 50.0, 800.0), (16, 12.5, 800.0), (64, 3.1, 794.0))  # gpus, hours, USD


@dataclass(frozen=True)
class ArticleTableRow:
    gpus: int
    claimed_hours: float
    claimed_cost_usd: float
    efficiency: float
    hours: float
    cost_usd: float

    def to_json_dict(self) -> dict:
        return asdict(self)


def article_table(*, n_params: float = 10e9, usd_per_gpu_hour: float = 4.0, hours_one_gpu: float = 200.0,
                  efficiency=None, inter_link: str = "ib-ndr", tokens_per_gpu: float = DEFAULT_TOKENS_PER_GPU,
                  overlap: float = 0.0) -> tuple[ArticleTableRow, ...]:
    """Article 000's table (1/4/16/64 H100, 200 GPU-hours at $4, "identical total cost") with a
    scaling efficiency applied: predicted (data-parallel ZeRO-3 model for a 10B model, which does not
    fit one GPU without sharding) or given (number or {gpus: e})."""
    out = []
    for n, h, c in ARTICLE_TABLE:
        if efficiency is None:
            eff = predicted_efficiency(n_params, "h100-sxm", n, inter_link=inter_link, tokens_per_gpu=tokens_per_gpu,
                                       zero_stage=3, overlap=overlap).efficiency
        else:
            eff = efficiency.get(n, 1.0) if isinstance(efficiency, dict) else float(efficiency)
        hours = hours_one_gpu / (n * eff)
        out.append(ArticleTableRow(n, h, c, eff, hours, hours * n * usd_per_gpu_hour))
    return tuple(out)
