"""Cluster economics: the cost of a training run with its scaling efficiency, cost vs time with the
Pareto set, buy vs rent, spot instances with the optimal checkpoint interval, serving cost per
million tokens, the articles' cost table and published training-run costs.

Conventions: prices are USD per GPU-hour (an instance price divided by its GPU count, gpukit.prices);
hours are wall-clock hours of the whole job; gpu_hours = hours x gpus. The single-GPU time comes from
gpukit.compute.time_to_train (6ND FLOPs at peak x MFU, Kaplan et al. 2020; Narayanan et al. 2021
eq. 4); n GPUs take t1 / (n x efficiency), so cost = t1 x price / efficiency: efficiency below 1 is
what makes more GPUs cost more (never assumed 1 unless the caller says so).
One price loop: training_run prices one layout (memory per GPU and fits, step, efficiency over
seq_len x micro_batch x grad_accum tokens per GPU per optimizer step, offload and input caps, hours,
cost, binding); training_cost (`gpukit cost train`) and the planner's candidates (gpukit.plan.train)
both call it, so for the same model, GPU, count and layout they give the same answer.
Split by reason to change (all reachable from here): the scaling efficiency in gpukit.cost.efficiency,
buy vs rent in gpukit.cost.buy, spot instances in gpukit.cost.spot, published runs in
gpukit.cost.published; prices (and a given price's checks) in gpukit.prices.
Used in: notebooks/08_cluster_economics, notebooks/09_decide, gpukit.plan (training_run in
gpukit.plan.train), gpukit.cli.cost, gpukit.widgets.cost_view, gpukit.audits.cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gpukit import inference, parallel
from gpukit.catalog import as_model, get_gpu, get_model
from gpukit.compute import TrainTime, time_to_train
from gpukit.cost.efficiency import rail_ports
from gpukit.cost.published import PUBLISHED_RUNS, PublishedCheck, PublishedRun, published_check  # noqa: F401
from gpukit.cost.spot import spot_run
from gpukit.errors import (
    MAX_COUNT,
    finite_result,
    require_choice,
    require_n_params,
    require_positive,
    require_positive_int,
)
from gpukit.memory import TrainSetup, estimate_memory, state_bytes_per_param, uses_dropout
from gpukit.parallel import ADAPTER_BACKWARD_SHARE, OFFLOAD_CPU_GBPS, offload_step_s  # noqa: F401
from gpukit.prices import given_or_quote, node_price_warning, price_warning
from gpukit.specs import ModelSpec
from gpukit.units import GiB

# ------------------------------------------------------------------------------- one training run
NETWORK_BOUND_BELOW = 0.5  # a run whose data-parallel efficiency is below this is called network-bound
PARAMS_ONLY_LAYERS = 32  # a bare n_params is priced as this many uniform layers (grad_sync's uniform shapes)


@dataclass(frozen=True)
class TrainingRun:
    """One training layout priced by the one step model (gpukit.parallel.estimate): memory per GPU and whether
    it fits, the step, the efficiency, wall hours and cost. efficiency is the share of a step that is useful
    compute (communication, bubble, optimizer, offload and input waits excluded); network_efficiency the same
    without the optimizer and offload terms. tokens_per_gpu: per optimizer step."""

    gpu: str
    gpus: int
    nodes: int
    setup: (
        TrainSetup  # the layout: zero_stage, recompute, offload, finetune, seq_len, micro_batch, grad_accum
    )
    memory_per_gpu_bytes: int
    gpu_memory_bytes: int
    fits: bool
    tokens_per_gpu: float
    compute_s: float  # per optimizer step: the useful compute (matmuls + elementwise) of one GPU
    step_s: float
    network_efficiency: float
    efficiency: float
    hours: float
    usd_per_gpu_hour: float
    input_bound: bool
    efficiency_model: str
    single_gpu: TrainTime = field(
        compare=False, repr=False
    )  # gpukit.compute.time_to_train: the FLOPs described
    offload_s: float = 0.0  # per optimizer step: ZeRO-Offload's PCIe transfer and CPU Adam
    utilization_source: str = ""
    estimate: Any = field(default=None, compare=False, repr=False)  # the gpukit.parallel.Estimate behind it

    @property
    def gpu_hours(self) -> float:
        return self.hours * self.gpus

    @property
    def cost_usd(self) -> float:
        return self.hours * self.gpus * self.usd_per_gpu_hour

    @property
    def binding(self) -> str:
        """What limits the run as laid out: does not fit, input-bound (the loader caps the step),
        offload-bound (the optimizer offload's PCIe transfers and CPU Adam take half the step or more),
        network-bound (data-parallel efficiency below NETWORK_BOUND_BELOW) or compute-bound."""
        if not self.fits:
            return "does not fit"
        if self.input_bound:
            return "input-bound"
        if self.offload_s >= 0.5 * self.step_s:
            return "offload-bound"
        return "network-bound" if self.network_efficiency < NETWORK_BOUND_BELOW else "compute-bound"

    def to_json_dict(self) -> dict:
        d = {k: v for k, v in asdict(self).items() if k not in ("setup", "single_gpu", "estimate")}
        d.update(
            setup=asdict(self.setup), gpu_hours=self.gpu_hours, cost_usd=self.cost_usd, binding=self.binding
        )
        return d


def data_parallel_setup(
    model,
    gpus: int,
    *,
    zero_stage: int = 0,
    recompute: str = "none",
    offload: str = "none",
    finetune: str = "full",
    seq_len: int | None = None,
    micro_batch: int = 1,
    grad_accum: int = 1,
) -> TrainSetup:
    """The TrainSetup of a data-parallel layout over `gpus` GPUs: bf16-mixed AdamW, convention "pytorch" (the
    peak of an eager step), dropout as the model row's recipe (none for a bare n_params), seq_len the model's
    pretraining length train_seq_len unless given (2048, TrainSetup's default, for a bare n_params)."""
    spec = model if isinstance(model, ModelSpec) else None
    if seq_len is None:
        seq_len = (
            spec.default_seq_len()[0] if spec is not None else TrainSetup().seq_len
        )  # ModelSpec's one default
    return TrainSetup(
        zero_stage=zero_stage,
        dp=gpus,
        recompute=recompute,
        offload=offload,
        finetune=finetune,
        seq_len=seq_len,
        micro_batch=micro_batch,
        grad_accum=grad_accum,
        dropout=spec is not None and spec.dropout,
    )


def offload_slowdown_s(n_params: float, setup: TrainSetup, gpu) -> float:
    """Extra seconds per optimizer step from optimizer offload on one GPU's share of n_params (sharded over dp
    with ZeRO >= 1): gpukit.parallel.offload_step_s (Ren et al. 2021, ZeRO-Offload sec. 4). Once per step,
    whatever its micro-batches: gradient accumulation amortises it (offload_grad_accum)."""
    if setup.offload == "none":
        return 0.0
    return offload_step_s(n_params / (setup.dp if setup.zero_stage >= 1 else 1), get_gpu(gpu))


def params_only_spec(n_params: float, seq_len: int, n_layers: int = PARAMS_ONLY_LAYERS) -> ModelSpec:
    """A bare parameter count as a shape the step model can price: `n_layers` (default PARAMS_ONLY_LAYERS)
    uniform GPT layers (12 h^2 each, Narayanan et al. 2021 sec. 3) with hidden h = sqrt(n_params / (12 x layers))
    rounded to a multiple of 64 (head_dim 64), tied embeddings of a 64-token vocabulary (negligible) and learned
    positions up to seq_len. Named in the output; its attention adds 12 L h s / 2 FLOPs per token (causal)."""
    n = require_n_params(n_params)
    layers = require_positive_int("n_layers", n_layers, at_most=100_000)
    seq_len = require_positive_int("seq_len", seq_len, at_most=MAX_COUNT)
    h = max(64, int(round(math.sqrt(n / (12 * layers)) / 64)) * 64)
    return ModelSpec(
        name=f"{n:.3g} params (as {layers} uniform layers of hidden {h})",
        n_layers=layers,
        hidden=h,
        n_heads=h // 64,
        vocab=64,
        max_seq=max(seq_len, 1),
        tied_embeddings=True,
        dropout=False,
    )


def _cluster(g, gpus_per_node: int, inter_link, ports_per_node, profile):
    return parallel.make_cluster(
        g, gpus_per_node, inter_link=inter_link, ports_per_node=ports_per_node, profile=profile
    )


def _config(setup: TrainSetup, n: int):
    return parallel.ParallelConfig(
        dp=n,
        zero_stage=setup.zero_stage,
        micro_batch=setup.micro_batch,
        recompute=setup.recompute,
    )


def _conventions(setup: TrainSetup) -> dict:
    """The memory convention of a run, for the step model too: the gradients it keeps (fp32 under PyTorch AMP,
    whose parameters are fp32; TrainSetup.grad_dtype when given) are the bytes the gradient sync moves and the
    parameters ZeRO-3 gathers are its parameters (one gradient dtype, named by the convention). So
    `parallel.estimate(..., convention="pytorch")` is the same run."""
    out: dict = {"convention": setup.convention}
    if setup.grad_dtype is not None:
        out["grad_dtype"] = setup.grad_dtype
    if setup.grad_accum_buffer != "none":
        out["grad_accum_buffer"] = setup.grad_accum_buffer
    return out


def training_run(
    model,
    tokens: float,
    gpu: str,
    setup: TrainSetup,
    *,
    usd_per_gpu_hour: float,
    mfu: float | None = None,
    profile=None,
    efficiency: float | None = None,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    ports_per_node: int | None = None,
    overlap: float = 0.0,
    loader_tokens_per_s: float | None = None,
    network=None,
) -> TrainingRun:
    """Price one training layout: `model` (ModelSpec or n_params) on `tokens` tokens over setup.dp GPUs of
    type `gpu` laid out as `setup` (data parallel with its ZeRO stage, recompute, offload, finetune,
    seq_len, micro_batch, grad_accum). The one price loop behind `gpukit cost train` and the planner, and
    its step is gpukit.parallel.estimate's (the one step model `gpukit parallel estimate` prints): for the
    same layout the three give the same step and hours by construction.

    memory: gpukit.memory.estimate_memory with the GPU (convention pytorch, CUDA context and allocator slack);
      n_params alone counts the model states only. step: gpukit.parallel.estimate of ParallelConfig(dp=gpus,
      zero_stage, micro_batch, recompute) at global batch gpus x micro_batch x grad_accum sequences of seq_len:
      compute (the cluster's matmul efficiency and elementwise kernels; or `mfu` of the peak on the executed
      FLOPs, or a calibrated `profile`), the gradient sync over the DP group (gpukit.comm.grad_sync; DDP
      buckets during the backward; ZeRO-3's gathers per micro-batch with prefetch), the optimizer, offload
      once per optimizer step, adapters' cheaper backward; the gradients on the wire in the memory model's
      gradient dtype (one setting, TrainSetup.grad_dtype / its convention). `efficiency` given replaces every
      term but the offload; `overlap` hides that share of the exposed gradient sync (dp_overlap); a loader
      slower than the GPUs caps the step (Amdahl). A bare n_params is priced as params_only_spec. `network`: a
      gpukit.comm.ClusterNetwork that replaces the cluster's (links, ports, link efficiency as the caller set them).
    hours = optimizer steps x step; efficiency = useful compute / step; cost = hours x gpus x usd_per_gpu_hour.
    """
    if not isinstance(setup, TrainSetup):
        raise ValueError(f"setup must be a gpukit.memory.TrainSetup, got {type(setup).__name__}")
    g = get_gpu(gpu)
    n, k = setup.dp, require_positive_int("gpus_per_node", gpus_per_node)
    usd = require_positive("usd_per_gpu_hour", usd_per_gpu_hour, allow_zero=True)
    tokens = require_positive("tokens", tokens)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    spec = model if isinstance(model, ModelSpec) else None
    n_params = spec.n_params if spec is not None else require_positive("n_params", model)
    if spec is not None:
        m = estimate_memory(spec, setup=setup, gpu=g)
    else:
        m = estimate_memory(n_params=int(round(n_params)), setup=setup, gpu=g)
    t1 = time_to_train(
        model,
        tokens,
        g,
        1,
        mfu=mfu,
        profile=profile,
        recompute=setup.recompute,
        seq_len=setup.seq_len if spec is not None else None,
        dtype=g.half_dtype,
    )
    step_model = spec if spec is not None else params_only_spec(n_params, setup.seq_len)
    cluster = _cluster(g, k, inter_link, ports_per_node, profile)
    if network is not None:
        cluster = replace(cluster, network=network)
    e = parallel.estimate(
        step_model,
        _config(setup, n),
        cluster,
        global_batch=n * setup.micro_batch * setup.grad_accum,
        seq_len=setup.seq_len,
        dropout=uses_dropout(step_model, setup),
        dp_overlap=overlap,
        mfu=mfu,
        offload=setup.offload,
        finetune=setup.finetune,
        _memory=m,
        **_conventions(setup),
    )
    parts = dict(e.breakdown)
    useful = parts["compute"] + parts["elementwise"]
    off_s = parts["offload"]
    tokens_per_gpu = float(setup.seq_len * setup.micro_batch * setup.grad_accum)
    sync = "; ".join(v for t, v in e.overlap if t in ("dp_comm", "zero3_comm", "offload"))
    if efficiency is not None:
        eff = require_positive("efficiency", efficiency)
        if eff > 1:
            raise ValueError(f"efficiency must be in (0, 1], got {eff}")
        eff_model = "given by the caller"
        step_s = useful / eff + off_s
    else:
        step_s = e.step_time_s
        net_s = step_s - off_s - parts["optimizer"]
        eff = useful / net_s
        eff_model = (
            f"{g.name}: gpukit.parallel.estimate (the one step model), DP {n} x TP 1 x PP 1, ZeRO-{setup.zero_stage}, "
            f"{setup.micro_batch} x {setup.seq_len} tokens x grad_accum {setup.grad_accum} per GPU per optimizer "
            f"step, gradients {state_bytes_per_param(setup)[1]:g} B/param on the wire (the memory model's "
            f"gradient dtype); {cluster.describe()}" + (f"; overlap: {sync}" if sync and n > 1 else "")
        )
        nodes, last = math.ceil(n / k), n - (math.ceil(n / k) - 1) * k
        if nodes > 1 and last < k:  # a partial node: its own ports carry its shards (gpukit.comm.grad_sync)
            eff_model += (
                f"; {n} GPUs = {nodes - 1} node(s) of {k} + one of {last}: the last node's ports carry the "
                "gradient across"
            )
        if n == 1:
            eff_model = f"{g.name}: 1 GPU: no communication; gpukit.parallel.estimate's step" + (
                f" (offload: {sync})" if off_s else ""
            )
    input_bound = False
    if loader_tokens_per_s is not None and n * tokens_per_gpu / step_s > require_positive(
        "loader_tokens_per_s", loader_tokens_per_s
    ):
        step_s = n * tokens_per_gpu / loader_tokens_per_s  # the input pipeline caps the job (Amdahl)
        input_bound = True
    steps = tokens / (n * tokens_per_gpu)
    if mfu is not None or profile is not None:
        util = t1.utilization_source + " (gpukit.parallel.estimate's compute at that share of the peak)"
    else:
        util = (
            f"gpukit.parallel.estimate's compute model: matmuls at {cluster.matmul_efficiency:.3g} of the dense "
            f"{cluster.dtype} peak, elementwise kernels at {cluster.hbm_efficiency:g} of HBM bandwidth"
        )
    # hours x GPUs x price must stay a number: a price near 1e308 is an overflow error, never an inf cost
    finite_result("cost (hours x GPUs x price per GPU-hour)", steps * step_s / 3600 * n * usd)
    return TrainingRun(
        gpu=g.name,
        gpus=n,
        nodes=math.ceil(n / k),
        setup=setup,
        memory_per_gpu_bytes=m.total_bytes,
        gpu_memory_bytes=g.memory_bytes,
        fits=bool(m.fits),
        tokens_per_gpu=tokens_per_gpu,
        compute_s=useful,
        step_s=step_s,
        network_efficiency=eff,
        efficiency=useful / step_s,
        hours=finite_result("hours", steps * step_s / 3600),
        usd_per_gpu_hour=usd,
        input_bound=input_bound,
        efficiency_model=eff_model,
        single_gpu=t1,
        offload_s=off_s,
        utilization_source=util,
        estimate=e,
    )


def offload_grad_accum(
    model,
    gpu: str,
    setup: TrainSetup,
    *,
    max_share: float = 0.1,
    max_tokens_per_gpu: float | None = None,
    **run_kw,
) -> int:
    """The gradient accumulation a real offload run would use: the smallest power of two that brings the
    offload's once-per-step cost (PCIe transfer and CPU Adam, offload_step_s) under `max_share` of the optimizer
    step, capped at the largest power of two that keeps one GPU's step within `max_tokens_per_gpu` tokens (the
    global batch / gpus).
    offload / (offload + grad_accum x micro-step) <= max_share  <=>  grad_accum >= offload (1 - max_share) /
    (max_share x micro-step), with the micro-step from gpukit.parallel.estimate (training_run at grad_accum 1).
    1 without offload."""
    if not 0 < require_positive("max_share", max_share) < 1:
        raise ValueError(f"max_share must be in (0, 1), got {max_share}")
    if setup.offload == "none":
        return 1
    one = training_run(model, 1e12, gpu, replace(setup, grad_accum=1), usd_per_gpu_hour=0.0, **run_kw)
    micro_s = one.step_s - one.offload_s
    need = max(1, math.ceil(one.offload_s * (1 - max_share) / (max_share * micro_s)))
    ga = 1 << (need - 1).bit_length()  # a power of two, as batch sizes are chosen
    if max_tokens_per_gpu is not None:
        cap = max(1, int(max_tokens_per_gpu // (setup.seq_len * setup.micro_batch)))
        ga = min(ga, 1 << (cap.bit_length() - 1))  # the largest power of two within the global batch
    return min(ga, MAX_COUNT)


# ------------------------------------------------------------------------------- training cost
@dataclass(frozen=True)
class CostRow:
    """One (GPU type, GPU count): wall hours, GPU-hours, cost, efficiency, the price used, and whether the
    priced layout's training state fits each GPU (memory_per_gpu_bytes needed, gpu_memory_bytes usable);
    binding and tokens_per_gpu (per optimizer step) as training_run gives them."""

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
    binding: str | None = None
    tokens_per_gpu: float | None = None

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
        return {
            "rows": [r.to_json_dict() for r in self.rows],
            "tokens": self.tokens,
            "n_params": self.n_params,
            "utilization_source": self.utilization_source,
            "efficiency_model": self.efficiency_model,
            "assumptions": list(self.assumptions),
            "warnings": list(self.warnings),
        }

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([{k: v for k, v in r.to_json_dict().items() if k != "spot"} for r in self.rows])

    def to_text(self) -> str:
        lines = [
            f"{'gpu':<12} {'gpus':>5} {'hours':>10} {'GPU-hours':>11} {'cost USD':>12} {'eff':>6} {'$/GPU-h':>8} "
            f"{'GiB/GPU':>8} {'fits':>4}  pareto"
        ]
        for r in self.rows:
            mem = (
                f"{r.memory_per_gpu_bytes / GiB:>8.1f}"
                if r.memory_per_gpu_bytes is not None
                else f"{'n/a':>8}"
            )
            fit = {True: "yes", False: "NO", None: "n/a"}[r.fits]
            lines.append(
                f"{r.gpu:<12} {r.gpus:>5} {r.hours:>10,.1f} {r.gpu_hours:>11,.0f} {r.cost_usd:>12,.0f} "
                f"{r.efficiency:>6.1%} {r.usd_per_gpu_hour:>8.2f} {mem} {fit:>4}  {'*' if r.pareto else ''}"
            )
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


_RECOMPUTE_WORDS = {"none": "no recompute", "selective": "selective recompute", "full": "full recompute"}


def _fit_advice(counts, zero_stage: int, recompute: str, offload: str, finetune: str) -> str:
    """What can make a layout that does not fit fit, for the counts that do not fit and the settings
    given: never the setting already given, never a ZeRO stage on one GPU alone (nothing to shard)."""
    many = any(n > 1 for n in counts)
    tips = []
    if many and zero_stage < 3:  # ZeRO shards the model states over the data-parallel GPUs (Rajbhandari 2020)
        tips.append("ZeRO-3 (--zero 3)")
    if recompute != "full":
        tips.append("full recompute (--recompute full)")
    if offload == "none":  # ZeRO-Offload partitions the optimizer: it needs a stage >= 1
        tips.append("optimizer offload (--offload optimizer" + (" --zero 1)" if zero_stage == 0 else ")"))
    elif offload == "optimizer":  # ZeRO-Infinity offloads partitioned parameters: stage 3
        tips.append("offload of everything (--offload all" + (" --zero 3)" if zero_stage < 3 else ")"))
    if finetune == "full":
        tips.append("LoRA/QLoRA adapters for fine-tuning (`gpukit plan --workload lora`)")
    tips.append("a GPU with more memory (--gpu)")
    # more GPUs help only where the states are sharded over them
    tips.append(
        "more GPUs" + (" (--gpus)" if zero_stage == 3 or many else " with ZeRO-3 (--gpus 8 --zero 3)")
    )
    return ", ".join(tips) + ", or `gpukit plan`, which searches the layouts that fit"


def training_cost(
    model,
    tokens: float,
    gpu: str | Sequence[str],
    gpus: int | Sequence[int],
    *,
    mfu: float | None = None,
    profile=None,
    price_per_gpu_hour: float | None = None,
    prices=None,
    efficiency=None,
    gpus_per_node: int = 8,
    inter_link: str | None = None,
    zero_stage: int = 0,
    overlap: float = 0.0,
    spot: dict | None = None,
    ports_per_node: int | None = None,
    recompute: str = "none",
    offload: str = "none",
    finetune: str = "full",
    seq_len: int | None = None,
    micro_batch: int = 1,
    grad_accum: int = 1,
    price_per_node_hour: float | None = None,
) -> CostTable:
    """Time and cost of training `model` (ModelSpec or n_params) on `tokens` over GPU types x counts.

    Every row is one training_run (the price loop the planner uses too) of the data-parallel layout
    data_parallel_setup(zero_stage, recompute, offload, finetune, seq_len, micro_batch, grad_accum): its memory per
    GPU and fits, its efficiency, hours and cost. Tokens per GPU per optimizer step = seq_len x micro_batch x
    grad_accum (seq_len: the model's train_seq_len unless given; 2048 for a bare n_params).
    efficiency: None = predicted (gpukit.parallel.estimate's step through training_run, with `ports_per_node`
    inter-node ports per node, default one per GPU; say so in the output), a number in (0, 1] for every
    count, or a dict {gpus: efficiency}. Price: a given USD per GPU-hour, a given USD per node-hour
    (whole nodes: n GPUs rent ceil(n / gpus_per_node) nodes, so a row's USD per GPU-hour is
    nodes x price_per_node_hour / n), or the median market row of `gpu` in `prices`
    (gpukit/data/prices.csv by default); a given price that looks like the other kind gets a warning
    (gpukit.prices.price_warning). spot: optional {"preemptions_per_day", "checkpoint_minutes",
    "restart_minutes", "spot_price_per_gpu_hour"} adds the expected spot time and cost per row (spot_run).

    A layout that does not fit is not an error (gpukit.plan lists such counts as "does not fit" too): its
    row keeps its price, fits is False and a warning says so. With n_params alone only the model states
    are counted (no activations): fits is then a lower bound on the need.
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
        model = as_model(model)
    n_params = model.n_params if isinstance(model, ModelSpec) else require_positive("n_params", model)
    if seq_len is not None and not isinstance(model, ModelSpec):
        raise ValueError(
            "seq_len needs a model (its attention FLOPs and activations); with n_params alone give none"
        )

    # one GPU has no data parallelism to shard over: ZeRO 0, unless offload needs a stage (ZeRO-Offload)
    def setup_of(n):
        return data_parallel_setup(
            model,
            n,
            zero_stage=zero_stage if n > 1 or offload != "none" else 0,
            recompute=recompute,
            offload=offload,
            finetune=finetune,
            seq_len=seq_len,
            micro_batch=micro_batch,
            grad_accum=grad_accum,
        )

    # checked before the setups are built: this limit says why (a TrainSetup's own bound, 1e9 GPUs, does not)
    tokens_per_gpu = float(setup_of(counts[0]).seq_len * micro_batch * grad_accum)
    too_many = [n for n in counts if n * tokens_per_gpu > tokens]
    if too_many:  # the efficiency is per optimizer step: a run shorter than one step has none
        raise ValueError(
            f"gpus must be at most tokens / tokens_per_gpu = {tokens / tokens_per_gpu:,.0f} (one optimizer "
            f"step of {tokens_per_gpu:,.0f} tokens per GPU: seq_len x micro_batch x grad_accum), got "
            f"{too_many[0]:,}"
        )
    setups = {n: setup_of(n) for n in counts}
    warnings: list[str] = []
    if price_per_node_hour is not None:
        node_usd = require_positive("price_per_node_hour", price_per_node_hour)
        price_per_gpu_hour = node_usd / k
    if (price_per_gpu_hour is not None or price_per_node_hour is not None) and len(gpu_names) > 1:
        warnings.append(
            f"the price given applies to every GPU type ({', '.join(gpu_names)}): they are compared at "
            "the same price per GPU-hour; give one type per run, or --prices, to price each its own"
        )
    rows, util_source, eff_models, flops_line, seq_line = [], "", [], "", ""
    for name in gpu_names:
        g = get_gpu(name)
        if price_per_node_hour is not None:
            assert price_per_gpu_hour is not None  # node_usd / k, set above
            usd, src = (
                price_per_gpu_hour,
                f"given per node-hour: ${price_per_node_hour:g} / {k} GPUs per node",
            )
            w = node_price_warning(
                name, price_per_node_hour, k, prices, field="price_per_node_hour (--price-per-node-hour)"
            )
        else:
            usd, src = given_or_quote(name, price_per_gpu_hour, prices)
            w = None
            if price_per_gpu_hour is not None:
                w = price_warning(
                    name,
                    usd,
                    prices,
                    gpus_per_node=k,
                    field="price_per_gpu_hour (--price-per-gpu-hour)",
                    fix="give it as price_per_node_hour (--price-per-node-hour), which divides by "
                    "gpus_per_node (--gpus-per-node)",
                )
        if w and w not in warnings:
            warnings.append(w)
        no_fit = []
        for n in counts:
            eff_given = None
            if efficiency is not None:
                eff_given = efficiency.get(n) if isinstance(efficiency, dict) else efficiency
                if eff_given is None:
                    raise ValueError(f"efficiency has no entry for {n} GPUs (keys: {sorted(efficiency)})")
            usd_n, src_n = usd, src
            if (
                price_per_node_hour is not None
            ):  # a node price buys whole nodes: 12 GPUs of 8-GPU nodes rent 2
                nodes_rented = math.ceil(n / k)
                usd_n = nodes_rented * node_usd / n
                src_n = (
                    f"given per node-hour: ${price_per_node_hour:g} x {nodes_rented} whole node(s) of {k} GPUs "
                    f"for {n} GPU(s)"
                )
            run = training_run(
                model,
                tokens,
                name,
                setups[n],
                usd_per_gpu_hour=usd_n,
                mfu=mfu,
                profile=profile,
                efficiency=eff_given,
                gpus_per_node=k,
                inter_link=inter_link,
                ports_per_node=ports,
                overlap=overlap,
            )
            if run.efficiency_model not in eff_models:
                eff_models.append(run.efficiency_model)
            spot_est = None
            if spot is not None:
                sp = dict(spot)
                sp_price = sp.pop("spot_price_per_gpu_hour", None)
                if sp_price is None:
                    sp_price, sp_src = given_or_quote(name, None, prices, spot=True)
                else:
                    sp_price, sp_src = require_positive("spot_price_per_gpu_hour", sp_price), "given"
                    w = price_warning(
                        name,
                        sp_price,
                        prices,
                        gpus_per_node=k,
                        field="spot_price_per_gpu_hour (--spot-price-per-gpu-hour)",
                        fix="divide it by gpus_per_node (--gpus-per-node)",
                    )
                    if w and w not in warnings:
                        warnings.append(w)
                spot_est = spot_run(run.hours, n, usd_n, sp_price, **sp).to_json_dict()
                spot_est.update(spot_usd_per_gpu_hour=sp_price, spot_price_source=sp_src)
            if not run.fits:
                no_fit.append((n, run.memory_per_gpu_bytes))
            rows.append(
                CostRow(
                    gpu=name,
                    gpus=n,
                    nodes=run.nodes,
                    hours=run.hours,
                    gpu_hours=run.gpu_hours,
                    cost_usd=run.cost_usd,
                    efficiency=run.efficiency,
                    usd_per_gpu_hour=usd_n,
                    price_source=src_n,
                    spot=spot_est,
                    fits=run.fits,
                    memory_per_gpu_bytes=run.memory_per_gpu_bytes,
                    gpu_memory_bytes=run.gpu_memory_bytes,
                    binding=run.binding,
                    tokens_per_gpu=run.tokens_per_gpu,
                )
            )
            t1 = run.single_gpu
            util_source = run.utilization_source
        # what the FLOPs are (gpukit.compute.time_to_train): 6N of the layers' matmul weights and the LM head
        # plus attention at seq_len for a model (causal; full for an encoder); 6N of the count given otherwise
        per_token = "8N (full recompute: a second forward)" if recompute == "full" else "6N"
        seq_source = (
            t1.seq_len_source if seq_len is not None or t1.seq_len is None else model.train_seq_len_source
        )
        flops_line = (
            f"{t1.flops / tokens:.3g} FLOPs per token: {per_token} with N = {t1.n_params / 1e9:.3g}B (layer "
            f"matmuls + LM head {t1.lm_head_params / 1e9:.3g}B; the embedding lookup costs none), plus "
            f"{'full (encoder)' if getattr(model, 'arch', '') == 'encoder' else 'causal'} attention at seq_len {t1.seq_len} ({seq_source})"
            if t1.seq_len is not None
            else f"{per_token} FLOPs per token with N = {t1.n_params / 1e9:.3g}B (n_params only: no attention term)"
        )
        seq_line = (
            f"micro_batch {micro_batch} x seq_len {t1.seq_len} (the FLOPs' seq_len) x grad_accum {grad_accum}: "
            f"{tokens_per_gpu:,.0f} tokens per GPU per optimizer step"
            if t1.seq_len is not None
            else "model states only (n_params given: activations are not counted, so the need is a lower bound; "
            f"give a model for them); {tokens_per_gpu:,.0f} tokens per GPU per optimizer step (seq_len "
            f"{setups[counts[0]].seq_len} x micro_batch {micro_batch} x grad_accum {grad_accum})"
        )
        if no_fit:
            need = (
                f"{no_fit[0][1] / GiB:,.1f} GiB per GPU"
                if len({b for _, b in no_fit}) == 1
                else "per GPU " + ", ".join(f"{b / GiB:,.1f} GiB at {n}" for n, b in no_fit)
            )
            stages = sorted({setups[n].zero_stage for n, _ in no_fit})
            warnings.append(
                f"{name} does NOT fit at {', '.join(str(n) for n, _ in no_fit)} GPU(s): the priced layout "
                f"(data parallel, {' / '.join(f'ZeRO-{z}' for z in stages)}, {_RECOMPUTE_WORDS[recompute]}) "
                f"needs {need}, and "
                f"{name} has {g.memory_bytes / GiB:,.1f} GiB: these rows cannot run as priced (fits false); "
                f"try {_fit_advice([n for n, _ in no_fit], zero_stage, recompute, offload, finetune)}"
            )
    # the Pareto set is over the rows that can run as priced (gpukit.plan's rule): a layout that does not fit
    # is neither faster nor cheaper than anything
    runnable = [i for i, r in enumerate(rows) if r.fits is not False]
    flags = dict(
        zip(runnable, pareto_front([(rows[i].hours, rows[i].cost_usd) for i in runnable]), strict=True)
    )
    rows = [CostRow(**{**asdict(r), "pareto": flags.get(i, False)}) for i, r in enumerate(rows)]
    drop_words = (
        "dropout masks counted (the model's recipe)"
        if isinstance(model, ModelSpec) and model.dropout
        else "no dropout"
    )
    off_words = {"none": "", "optimizer": ", optimizer offload", "all": ", offload all"}[offload]
    if finetune != "full":  # adapters: a frozen base, a cheaper backward, negligible gradient traffic
        off_words += (
            f", {finetune} adapters (rank {TrainSetup().lora_rank}) on a frozen base: the backward skips its "
            f"weight gradients, {ADAPTER_BACKWARD_SHARE:.3g} x the full step's time (Hu et al. 2021)"
        )
    assumptions = (
        f"{tokens:,.0f} tokens, {flops_line} (gpukit.compute)",
        f"{k} GPUs per node; between nodes {rail_ports(inter_link, ports, k)}",
        f"memory per GPU (gpukit.memory, convention pytorch: the peak of an eager step, as gpukit.plan "
        f"decides fit): data parallel, ZeRO-{zero_stage}"
        + (
            f" (ZeRO-{setups[1].zero_stage} on 1 GPU: nothing to shard)"
            if 1 in setups and setups[1].zero_stage != zero_stage
            else ""
        )
        + f", {_RECOMPUTE_WORDS[recompute]}{off_words}, "
        f"bf16-mixed AdamW, {seq_line}, {drop_words}, flash attention, plus a CUDA context and allocator "
        "slack, against the GPU's whole memory; the Pareto set is over the rows that fit",
    )
    return CostTable(
        rows=tuple(rows),
        tokens=tokens,
        n_params=float(n_params),
        utilization_source=util_source,
        efficiency_model="; ".join(eff_models),
        assumptions=assumptions,
        warnings=tuple(warnings),
    )


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


def serving_cost_per_million(
    total_tokens_per_s: float, gpus: int, usd_per_gpu_hour: float, source: str = "given throughput"
) -> ServingCost:
    """usd / 1M tokens = gpus x price per GPU-hour / (tokens/s x 3600) x 1e6 (busy the whole hour)."""
    tps = require_positive("total_tokens_per_s", total_tokens_per_s)
    n = require_positive_int("gpus", gpus, at_most=MAX_COUNT)
    p = require_positive("usd_per_gpu_hour", usd_per_gpu_hour)
    return ServingCost(
        gpus=n,
        total_tokens_per_s=tps,
        usd_per_gpu_hour=p,
        usd_per_hour=n * p,
        usd_per_million_tokens=n * p / (tps * 3600) * 1e6,
        source=source,
    )


def serving_cost(
    model: str,
    gpu: str,
    *,
    gpus: int = 1,
    batch: int = 32,
    context: int = 2048,
    precision: str = "bf16",
    usd_per_gpu_hour: float | None = None,
    prices=None,
) -> ServingCost:
    """Cost per million generated tokens of serving `model` on `gpus` x `gpu` (tensor parallel over all
    of them) at batch `batch`, half the context prompt and half generated, the batch run as one static
    batch: its `batch` prompts prefilled together (the first token each), then O - 1 decode steps, all
    from gpukit.inference's roofline with its stated efficiencies. Throughput = batch x O / (prefill +
    (O - 1) x ITL)."""
    m, g = get_model(model), get_gpu(gpu)
    n = require_positive_int("gpus", gpus)
    b = require_positive_int("batch", batch)
    c = require_positive_int("context", context)
    usd, _ = given_or_quote(gpu, usd_per_gpu_hour, prices)

    i, o = max(1, c // 2), max(1, c - c // 2)
    p = inference.serve(m, g, gpus=n, tp=n, precision=precision, batch=b, input_tokens=i, output_tokens=o)
    if not p.fits:
        raise ValueError(f"batch {b} x context {c} of {model} does not fit {n} x {gpu} in {precision}")
    prefill = inference.prefill_step(m, g, prompt_tokens=i, batch=b, **p.step_kwargs)
    tps = b * o / (prefill.time_s + (o - 1) * p.itl_s)
    return serving_cost_per_million(
        tps,
        n,
        usd,
        source=(
            f"gpukit.inference: batch {b}, {i} prompt + {o} generated tokens, {precision}, TP {n}: the batch's "
            "prefill then its decode steps, from the roofline with its stated efficiencies"
        ),
    )


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
