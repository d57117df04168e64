"""3D parallel layouts: memory, communication, pipeline bubble and step time of (dp, tp, pp, v, ZeRO
stage, micro-batch, recompute, sequence parallelism) on a cluster, and a search over every layout.

Pure calculator (no torch, no I/O). Sources, formula by formula:

- Layout: world_size = dp * tp * pp; tp divides n_heads (and n_kv_heads, or is a multiple of it);
  Megatron's rank order puts tp innermost (a TP group is tp consecutive GPUs, inside a node when
  tp <= gpus_per_node), then dp, then pp (Narayanan et al. 2021, "Efficient Large-Scale Language Model
  Training on GPU Clusters Using Megatron-LM", sec. 3.3 and 5.4: TP inside the node, PP across).
- Micro-batches per step m = global_batch / (dp * micro_batch) (Narayanan sec. 2.2, B = b * m * d).
- Pipeline bubble (Narayanan sec. 2.2.1-2.2.2): 1F1B/GPipe idle time (p-1)(t_f + t_b) per step, ideal
  m (t_f + t_b). Two conventions, both returned and named: `bubble_over_ideal` = (p-1)/(v m) (the
  paper's "bubble time fraction", bubble / ideal) and `bubble_fraction` = (p-1)/(v m + p-1) (the idle
  share of the whole step, GPipe's (p-1)/(m+p-1) when v = 1). Interleaving with v model chunks per
  stage divides the bubble by v and multiplies the pipeline's point-to-point traffic by v.
- Communication volume per GPU per step (Rajbhandari et al. 2019, ZeRO, sec. 7): DP and ZeRO-1/2
  2 x the gradient bytes on the GPU (all-reduce = reduce-scatter + all-gather); ZeRO-3 3 x the
  parameter bytes per micro-batch (all-gather in forward, again in backward, reduce-scatter of the
  gradients: 1.5x DP). TP (Shoeybi et al. 2019, sec. 3): 2 all-reduces of b*s*h activations per layer
  in forward and 2 in backward (+2 when full recompute replays the forward); with sequence parallelism
  each becomes an all-gather + reduce-scatter of the same volume (Korthikanti et al. 2022, sec. 4.2.2),
  so the ring time is the same. PP: b*s*h activations forward and their gradients backward between
  neighbouring stages per micro-batch and model chunk (send/recv), split t-ways over the node's
  links by the scatter/gather optimization (Narayanan sec. 4.1); on the inter-node link as soon as
  the pipeline spans more than one node (the slowest boundary paces the steady state).
- Times: gpukit.comm's alpha-beta model with NCCL's base latency per collective, over the cluster's
  ClusterNetwork (its link efficiency, stated or calibrated, and its port sharing); TP on the
  intra-node link when tp <= gpus_per_node, hierarchical otherwise; DP and ZeRO: gpukit.comm.grad_sync,
  the one gradient-sync model (DDP buckets, hierarchical across nodes with the DP group's ranks per
  node, the other tp/pp groups of a node sharing its ports, a partial node paced by its own); PP on
  the inter-node link when tp*dp*pp > gpus_per_node.
- Compute per GPU: executed (hardware) FLOPs of its stage (gpukit.compute.flops_per_token: dense
  6N, attention, recompute, LM head) / (peak x matmul_efficiency), plus the memory-bound elementwise
  kernels (norms, softmax, dropout, GeLU, residuals): reading and writing the layer's activations
  (gpukit.memory.layer_activation_bytes) twice in forward, four times in backward, at HBM bandwidth x
  hbm_efficiency, plus the optimizer step reading and writing the model states once.
- Step time: (m + (p-1)/v) (t_f + t_b) (Narayanan eq. 1 with the bubble) + the exposed DP gradient
  reduction (not overlapped: Megatron 2021 reduces after the pipeline flush; `dp_overlap` hides a
  share) + ZeRO-3 gathers not hidden behind compute (prefetch overlaps them, FSDP) + optimizer step.
  TP communication is on the critical path (exposed).
- MFU = model FLOPs (no recompute) / (step time x world_size x peak) (PaLM sec. 4.1);
  `tflops_per_gpu` is model FLOPs per second per GPU; `hardware_tflops_per_gpu` counts recompute
  (Megatron's papers report that one: 96 B s l h^2 (1 + s/6h + V/16lh) per iteration, Narayanan eq. 3).

Split by reason to change: the cluster (GPUs, links, stated efficiencies) in gpukit.parallel.cluster,
the layout search in gpukit.parallel.layout_search, pipeline schedules in gpukit.parallel.pipeline_schedule, the
validation against published runs in gpukit.parallel.published (all reachable from here too).

Used in: notebooks/06_beyond_data_parallel, gpukit.cli.parallel, gpukit.audits.parallel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import lru_cache

from gpukit import memory as mem
from gpukit.catalog import as_model, get_gpu, get_model
from gpukit.comm import (
    CPExchange,
    EPTraffic,
    cluster_network,
    collective_time,
    cp_exchange,
    dp_group_layout,
    dp_sync_halves,
    ep_traffic,
    grad_sync,
    hierarchical_all_reduce,
)
from gpukit.compute import flops_per_token, fp8_time_note, matmul_time_scale
from gpukit.errors import MAX_COUNT, require_choice, require_positive, require_positive_int
from gpukit.parallel.cluster import (
    HBM_EFFICIENCY,
    LINK_EFFICIENCY,
    MATMUL_EFFICIENCY,
    Cluster,
    efficiency_row,
    layer_gemm_efficiency,
)
from gpukit.parallel.pipeline_schedule import (  # noqa: F401 (public here too)
    Bubble,
    Schedule,
    Task,
    bubble,
    schedule,
)
from gpukit.results import json_safe
from gpukit.specs import ModelSpec
from gpukit.units import GB, GiB

RECOMPUTE = mem.RECOMPUTE
ZERO_STAGES = (0, 1, 2, 3)
OFFLOAD_CPU_GBPS = 50.0  # assumed host memory bandwidth for the CPU Adam step with optimizer offload
PCIE_GBPS = {
    3: 16.0,
    4: 32.0,
    5: 64.0,
}  # x16 per direction, PCI-SIG (PCIe 3.0/4.0/5.0: 8/16/32 GT/s per lane)
ADAPTER_BACKWARD_SHARE = (
    4 / 6
)  # LoRA/QLoRA: no weight gradients of the frozen base (about 2N of 6N; Hu et al. 2021)
OFFLOADS = ("none", "optimizer", "all")
MAX_PARAMS = 1e15  # a bound on parameter counts for validation (far above any model)
FINETUNES = ("full", "lora", "qlora")


def offload_step_s(params_per_gpu: float, gpu) -> float:
    """Seconds per optimizer step of ZeRO-Offload on one GPU's share of the parameters (Ren et al. 2021,
    ZeRO-Offload sec. 4): 16-bit gradients down and 16-bit parameters up over PCIe (4 bytes/param at the
    GPU's PCIe generation, PCIE_GBPS) plus a CPU Adam pass reading and writing 16 bytes/param of fp32 master
    weights and moments (32 bytes/param) at OFFLOAD_CPU_GBPS (an assumption). Once per optimizer step,
    whatever its micro-batches: gradient accumulation amortises it."""
    gpu = get_gpu(gpu) if isinstance(gpu, str) else gpu
    if not hasattr(gpu, "pcie_gen"):
        raise ValueError(f"gpu must be a catalog GPU or its name, got {type(gpu).__name__}")
    n = require_positive("params_per_gpu", params_per_gpu, allow_zero=True)
    if n > MAX_PARAMS:
        raise ValueError(f"params_per_gpu must be at most {MAX_PARAMS:.0e}, got {n:g}")
    pcie = PCIE_GBPS.get(gpu.pcie_gen, 32.0) * 1e9
    return 4 * n / pcie + 32 * n / (OFFLOAD_CPU_GBPS * 1e9)


ASSUMPTIONS = (
    f"matmul efficiency {MATMUL_EFFICIENCY} of the dense bf16 peak (stated, not fitted per layout)",
    f"elementwise kernels at {HBM_EFFICIENCY} of HBM bandwidth",
    f"collectives at {LINK_EFFICIENCY} of each link's bandwidth",
    "overlap per term (Estimate.overlap): TP exposed; DP buckets during the last backward with pp 1 (DDP), "
    "after the pipeline flush with pp > 1; ZeRO-3 gathers prefetched one layer ahead, exposed where a "
    "gather outlasts its layer; offload once per optimizer step, not overlapped",
    "ZeRO-2/3 are not combined with pp > 1 (DeepSpeed's pipeline engine refuses them; Megatron's distributed "
    "optimizer is ZeRO-1)",
)


# ------------------------------------------------------------------------------------ config
@dataclass(frozen=True)
class ParallelConfig:
    """One layout. Validated the way the formula reads (see `validate`)."""

    dp: int = 1
    tp: int = 1
    pp: int = 1
    virtual_stages: int = 1
    zero_stage: int = 0
    micro_batch: int = 1
    recompute: str = "none"
    sp: bool = False
    # ---- EP / CP (issue 24; helper G): ep carved from dp x cp for the expert layers, cp splits the sequence
    ep: int = 1
    cp: int = 1

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "virtual_stages", "micro_batch", "ep", "cp"):
            object.__setattr__(self, name, require_positive_int(name, getattr(self, name)))
        if self.zero_stage not in ZERO_STAGES or isinstance(self.zero_stage, bool):
            raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {self.zero_stage!r}")
        require_choice("recompute", self.recompute, RECOMPUTE)
        if not isinstance(self.sp, bool):
            raise ValueError(f"sp must be True or False, got {self.sp!r}")
        if self.sp and self.tp == 1:
            raise ValueError(
                "sp (sequence parallelism) needs tp > 1: it splits the tp group's activations, got tp 1"
            )
        if self.virtual_stages > 1 and self.pp == 1:
            raise ValueError(f"virtual_stages {self.virtual_stages} needs pp > 1, got pp 1")
        mem.check_zero_pp(self.zero_stage, self.pp)  # the one rule (gpukit.memory.train_setup)

    @property
    def world_size(self) -> int:
        """dp x tp x pp x cp (Megatron-Core: world = tp x cp x pp x dp; ep is carved from dp x cp for the
        expert layers and adds no GPUs)."""
        return self.dp * self.tp * self.pp * self.cp

    def validate(
        self,
        model: ModelSpec,
        gpus: int | None = None,
        global_batch: int | None = None,
        *,
        seq_len: int | None = None,
    ) -> list[str]:
        """Raise ValueError when the layout cannot run; return notes (e.g. uneven stages)."""
        notes = []
        if gpus is not None and self.world_size != gpus:
            cp = f"*{self.cp}" if self.cp > 1 else ""
            raise ValueError(
                f"dp*tp*pp{'*cp' if cp else ''} must equal the {gpus} GPUs, got "
                f"{self.dp}*{self.tp}*{self.pp}{cp}={self.world_size}"
            )
        notes += self.validate_ep_cp(model, seq_len)
        model.check_tp(
            self.tp
        )  # the model's own rule (ModelSpec.tp_note): whole heads, KV heads split or replicated
        if self.zero_stage and self.dp == 1:  # it would change nothing without a word
            notes.append(
                f"ZeRO-{self.zero_stage} with dp 1 shards nothing: one GPU holds all the model states, as "
                "with ZeRO-0"
            )
        chunks = self.pp * self.virtual_stages
        mem.check_chunks(model, self.pp, self.virtual_stages)  # the one rule (gpukit.memory.analytic)
        if model.n_layers % chunks:
            if self.virtual_stages > 1:  # Megatron-Core places the embedding and the loss in the first and
                # last chunks (account_for_embedding/loss_in_pipeline_split; the Llama 3 paper sec. 3.3.2
                # takes one layer off the first and last stages): 126 layers + 2 on 64 chunks of 2
                notes.append(
                    f"uneven chunks: {model.n_layers} layers on pp*virtual_stages = {chunks} model chunks, the "
                    f"largest has {math.ceil(model.n_layers / chunks)} (the heaviest stage, "
                    f"{math.ceil(model.n_layers / self.pp)} layers, sets the pace)"
                )
                return notes + self._check_batch(global_batch)
            notes.append(
                f"uneven stages: {model.n_layers} layers on {self.pp} stages, the largest has "
                f"{math.ceil(model.n_layers / self.pp)} (it sets the pace)"
            )
        return notes + self._check_batch(global_batch)

    def _check_batch(self, global_batch: int | None) -> list[str]:
        """The global batch against dp x micro_batch, and m against pp for the interleaved schedule."""
        if global_batch is not None:
            if global_batch % (self.dp * self.micro_batch):
                raise ValueError(
                    f"global_batch must be a multiple of dp*micro_batch = {self.dp}*{self.micro_batch}="
                    f"{self.dp * self.micro_batch}, got {global_batch}"
                )
            m = global_batch // (self.dp * self.micro_batch)
            if self.virtual_stages > 1 and m % self.pp:
                raise ValueError(
                    f"micro-batches per step m = global_batch/(dp*micro_batch) = {m} must be a multiple "
                    f"of pp {self.pp} for the interleaved schedule (Narayanan et al. 2021 sec. 2.2.2)"
                )
        return []

    def validate_ep_cp(self, model: ModelSpec, seq_len: int | None = None) -> list[str]:
        """The EP and CP rules (Megatron-Core MoE docs, megatron/core/transformer/moe/README.md, and its
        context-parallel docs), each a one-line ValueError naming the field:
        - ep > 1 needs a mixture of experts, n_experts divisible by ep (NeMo/Megatron
          expert_model_parallel_size), and ep dividing dp x cp (the expert layers' EP group is carved
          from the data- and context-parallel ranks; the expert tensor-parallel size is tp);
        - ep > 1 with tp > 1 needs sp (Megatron-Core: sequence parallelism is required when MoE
          layers run with tensor parallelism);
        - cp > 1: seq_len divisible by 2 x cp (causal load balancing: two chunks of s / 2cp per rank)."""
        notes: list[str] = []
        if self.ep > 1:
            if not model.is_moe:
                raise ValueError(
                    f"ep must be 1 for {model.name}: expert parallelism needs a mixture of experts, got ep {self.ep}"
                )
            if model.n_experts % self.ep:
                raise ValueError(f"ep must divide n_experts {model.n_experts}, got {self.ep}")
            if (self.dp * self.cp) % self.ep:
                raise ValueError(
                    f"ep must divide dp*cp = {self.dp * self.cp} (EP is carved from the data- and "
                    f"context-parallel ranks, Megatron-Core), got {self.ep}"
                )
            if self.tp > 1 and not self.sp:
                raise ValueError(
                    f"sp must be on with ep {self.ep} and tp {self.tp}: Megatron-Core needs sequence "
                    "parallelism for MoE layers under tensor parallelism"
                )
        if self.cp > 1 and seq_len is not None and seq_len % (2 * self.cp):
            raise ValueError(
                f"seq_len must be a multiple of 2*cp = {2 * self.cp} (two chunks per rank for causal load "
                f"balancing), got {seq_len}"
            )
        return notes

    def label(self) -> str:
        v = f" v{self.virtual_stages}" if self.virtual_stages > 1 else ""
        sp = "+SP" if self.sp else ""
        cp = f" x CP{self.cp}" if self.cp > 1 else ""
        ep = f" (EP{self.ep})" if self.ep > 1 else ""
        return (
            f"DP{self.dp}{ep} x TP{self.tp}{sp} x PP{self.pp}{v}{cp}, ZeRO-{self.zero_stage}, "
            f"b={self.micro_batch}, recompute {self.recompute}"
        )


# ------------------------------------------------------------------------------------ estimate
@dataclass(frozen=True)
class Estimate:
    """Memory, communication and step time of one layout on one cluster."""

    config: ParallelConfig
    model_name: str
    gpus: int
    seq_len: int
    global_batch: int
    microbatches: int
    memory_per_gpu_bytes: int
    gpu_memory_bytes: int
    fits: bool
    step_time_s: float
    tokens_per_s: float
    tflops_per_gpu: float  # model FLOPs (no recompute) per second per GPU
    hardware_tflops_per_gpu: float  # executed FLOPs (recompute included), Megatron's reporting
    mfu: float
    bubble_fraction: float
    bubble_over_ideal: float
    breakdown: tuple[tuple[str, float], ...]  # seconds per step, in order; sums to step_time_s
    comm_bytes: tuple[tuple[str, float], ...]  # bytes sent per GPU per step by kind
    notes: tuple[str, ...] = ()
    memory: mem.MemoryBreakdown | None = field(default=None, repr=False, compare=False)
    # the cluster and the efficiencies this estimate used (cluster_assumptions); () -> ASSUMPTIONS
    assumptions: tuple[str, ...] = ()
    # per breakdown term: which compute it hides behind (or that it cannot), with the mechanism cited
    overlap: tuple[tuple[str, str], ...] = ()
    # per communication term: its seconds per step before overlap (breakdown holds what is exposed)
    comm_total_s: tuple[tuple[str, float], ...] = ()

    def share(self, name: str) -> float:
        return dict(self.breakdown).get(name, 0.0) / self.step_time_s

    def to_json_dict(self) -> dict:
        c = self.config
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
                "model": self.model_name,
                "gpus": self.gpus,
                "seq_len": self.seq_len,
                "global_batch": self.global_batch,
                "microbatches": self.microbatches,
                "memory_per_gpu_bytes": self.memory_per_gpu_bytes,
                "gpu_memory_bytes": self.gpu_memory_bytes,
                "fits": self.fits,
                "step_time_s": self.step_time_s,
                "tokens_per_s": self.tokens_per_s,
                "tflops_per_gpu": self.tflops_per_gpu,
                "hardware_tflops_per_gpu": self.hardware_tflops_per_gpu,
                "mfu": self.mfu,
                "bubble_fraction": self.bubble_fraction,
                "bubble_over_ideal": self.bubble_over_ideal,
                "breakdown_s": dict(self.breakdown),  # seconds per step (issue 25: unit in the name)
                "comm_per_gpu_bytes": dict(self.comm_bytes),  # was comm_bytes_per_gpu
                "memory_terms": (
                    {k: v for k, v in self.memory.to_json_dict().get("terms", {}).items()}
                    if self.memory is not None
                    else {}
                ),
                "notes": list(self.notes),
                "overlap": dict(self.overlap),
                "comm_total_s": dict(self.comm_total_s),
                "assumptions": list(self.assumptions or ASSUMPTIONS),
            }
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            [{"part": k, "seconds": v, "share": v / self.step_time_s} for k, v in self.breakdown]
        )

    def to_text(self) -> str:
        lines = [
            f"{self.model_name} on {self.gpus} GPUs: {self.config.label()}",
            f"global batch {self.global_batch} x {self.seq_len} tokens = {self.microbatches} micro-batches "
            f"per pipeline",
            f"memory per GPU {self.memory_per_gpu_bytes / GiB:.1f} GiB of {self.gpu_memory_bytes / GiB:.0f} -> "
            f"{'fits' if self.fits else 'does NOT fit'}",
            f"step {self.step_time_s:.3f} s, {self.tokens_per_s:,.0f} tokens/s, {self.tflops_per_gpu:.0f} "
            f"TFLOP/s per GPU (model), MFU {self.mfu:.1%}",
            f"bubble: idle share {self.bubble_fraction:.1%}, over ideal {self.bubble_over_ideal:.1%}",
        ]
        lines += [f"  {k:<22}{v:>10.4f} s {100 * v / self.step_time_s:>6.1f}%" for k, v in self.breakdown]
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  overlap: {k}: {v}" for k, v in self.overlap]
        lines += [f"  assumes: {a}" for a in self.assumptions or ASSUMPTIONS]
        return "\n".join(lines)


def cluster_assumptions(cluster) -> tuple[str, ...]:
    """ASSUMPTIONS with the values `cluster` really has (a calibration profile sets the matmul
    efficiency, its ClusterNetwork the link efficiency and says where it comes from), led by the
    links and ports it used."""
    net = cluster.network
    return (
        f"cluster: {cluster.describe()}",
        f"matmul efficiency {cluster.matmul_efficiency:.3g} of the dense {cluster.dtype} peak "
        f"({cluster.efficiency_source or 'stated'}; not fitted per layout), times the GEMM tile/wave "
        f"quantization of the layer shapes on {cluster.sm_count or 'unknown'} SMs (NVIDIA Matrix "
        "Multiplication Background guide)",
        (
            f"attention (FlashAttention scores and values) at {cluster.attention_efficiency:.3g} of the dense "
            f"{cluster.dtype} peak (efficiency.csv {cluster.gpu.arch},attention x the training share: "
            "FlashAttention-2's published share for the generation)"
            if cluster.attention_efficiency != cluster.matmul_efficiency
            else "attention at the matmul efficiency (no published attention-kernel share used for this GPU)"
        ),
        f"elementwise kernels at {cluster.hbm_efficiency:g} of HBM bandwidth",
        f"collectives at {net.efficiency:g} of the inter-node and {net.intra_efficiency:g} of the intra-node "
        f"link's bandwidth ({net.efficiency_source})",
        *net.assumptions()[4:],
        *ASSUMPTIONS[3:],
    )


def _fp8_share_ratio(gpu) -> float | None:
    """bf16 / fp8 achievable matmul share of `gpu`'s generation (gpukit/data/efficiency.csv, cited rows), or
    None where the catalog has no fp8 row for it (then compute.FP8_TIME_ASSUMPTION: equal shares)."""
    try:
        fp8 = efficiency_row(gpu, "matmul", "fp8")
    except ValueError:
        return None
    if fp8.dtype != "fp8":
        return None
    return efficiency_row(gpu, "matmul", "bf16").share / fp8.share


def as_model_spec(model) -> ModelSpec:
    return get_model(model) if isinstance(model, str) else model


def default_seq_len_note(model: ModelSpec) -> str:
    """What a layout question assumes when no seq_len is given (ModelSpec.default_seq_len's note)."""
    model = as_model(model, "model")  # a catalog name too
    return model.default_seq_len()[1]


@lru_cache(maxsize=4096)
def _tp_allreduce_s(size_bytes: float, tp: int, gpn: int, intra, inter) -> float:
    if tp == 1:
        return 0.0
    if gpn % tp == 0:  # the TP group sits inside one node
        return collective_time("all_reduce", size_bytes, tp, intra).time_s
    if tp % gpn == 0:  # whole nodes: reduce-scatter in the node, all-reduce across, all-gather
        return hierarchical_all_reduce(size_bytes, tp // gpn, gpn, intra, inter).time_s
    return collective_time(
        "all_reduce", size_bytes, tp, inter
    ).time_s  # straddles nodes: the ring runs at the NIC


@lru_cache(maxsize=4096)
def _send_recv_s(size_bytes: float, link: tuple) -> float:
    return collective_time("send_recv", size_bytes, 2, link).time_s


@lru_cache(maxsize=4096)
def _layer_activation_bytes_whole_sequence(model: ModelSpec, setup: mem.TrainSetup) -> float:
    """One layer's activation bytes of `setup` with cp 1 (the whole sequence; the caller divides by cp),
    no recompute: what the elementwise kernels read and write (cached: a layout search asks it for every
    GPU type)."""
    return mem.layer_activation_bytes(
        model, setup if setup.cp == 1 else replace(setup, cp=1), recompute="none"
    )


def dp_group_shape(config: ParallelConfig, gpus_per_node: int) -> tuple[int, int]:
    """(DP ranks per node, DP groups sharing a node's ports) in Megatron's rank order (tp innermost,
    then dp): a node of k GPUs holds k / tp ranks of a DP group when tp divides k, else one; while
    the groups sync at once, every GPU of a node (all its groups) sends through its ports."""
    k = gpus_per_node
    in_node = max(1, min(config.dp, k // config.tp)) if config.tp < k and k % config.tp == 0 else 1
    _, r, _ = dp_group_layout(config.dp, k, in_node)
    return r, max(1, min(k, config.world_size) // r)


# docs/VALIDATION.md: every published MoE run (NVIDIA Megatron-Bridge tables) runs slower than this step model says
MOE_TIME_CAVEAT = (
    "MoE time is a lower bound: against NVIDIA's published MoE training runs this step model over-predicts "
    "throughput (docs/VALIDATION.md): grouped expert GEMMs, token permutation and routing kernels are not charged"
)
ATTENTION_TERMS = ("attention_forward", "attention_backward", "recompute_attention_forward")


@lru_cache(maxsize=2048)
def _fpt(model: ModelSpec, seq_len: int, causal: bool, recompute: str):
    """(model FLOPs, hardware FLOPs, attention-kernel FLOPs) per token."""
    f = flops_per_token(model, seq_len=seq_len, causal=causal, include_embeddings=True, recompute=recompute)
    return f.model_flops, f.hardware_flops, sum(f.get(t) for t in ATTENTION_TERMS)


# ------------------------------------------------------------------------------------ EP / CP (helper G)
def _group_ranks_per_node(size: int, stride: int, gpus_per_node: int) -> int:
    """Ranks of a group of `size` ranks, `stride` apart in Megatron's rank order (tp innermost, then cp,
    then ep/dp), that share one node: gcd(size, gpus_per_node / stride) when stride divides the node,
    else 1 (every member on its own node)."""
    if stride >= gpus_per_node or gpus_per_node % stride:
        return 1
    return math.gcd(size, gpus_per_node // stride)


def _expert_stage_params(model: ModelSpec, config: ParallelConfig, layers: int) -> float:
    """Routed-expert parameters on the heaviest pipeline stage, per TP rank (all ep shards together):
    its MoE layers x n_experts x one expert's MLP / tp (expert tensor parallelism = tp, Megatron-Core's
    default). 0 for a dense model."""
    if not model.is_moe:
        return 0.0
    moe_layers = model.n_moe_layers if config.pp == 1 else model.stage_moe_layers(layers)
    return moe_layers * model.n_experts * model.expert_params() / config.tp


# cached: frozen results of hashable inputs, asked thousands of times by a layout search
_ep_traffic = lru_cache(maxsize=4096)(ep_traffic)
_cp_exchange = lru_cache(maxsize=4096)(cp_exchange)


def _ep_cp_traffic(
    model: ModelSpec,
    c: ParallelConfig,
    net,
    tokens_mb: int,
    seq_len: int,
    layers: int,
    rate: float,
    ep_overlap: float = 0.0,
):
    """(EPTraffic or None, CPExchange per layer or None) of one micro-batch on one GPU of the heaviest stage.

    EP (gpukit.comm.ep_traffic): the stage's MoE layers, each GPU dispatching its tokens (b s / (cp tp):
    sequence parallelism splits them over the tp ranks) to top_k experts; the ep group sits tp apart in
    the rank order (_group_ranks_per_node). CP (gpukit.comm.cp_exchange, ring): K and V of the rank's
    kv heads (n_kv_heads / tp, at least one: GQA heads are replicated beyond that), width the mean of
    the K and V head dims; overlapped with the rank's forward attention on its b s / cp queries against
    the causal half of s keys: 2 x (b s / cp) x s x (n_heads / tp) x (qk_head_dim + v_head_dim) / 2
    FLOPs (QK^T and PV, 2 FLOPs per multiply-add) at the matmul rate `rate`."""
    ep_t = cp_x = None
    k = net.gpus_per_node
    if model.is_moe and c.ep > 1:
        tokens_ep = tokens_mb // c.tp  # sp: each TP rank holds and dispatches its s/tp share
        moe_layers = (
            model.n_moe_layers if c.pp == 1 else math.ceil(model.n_moe_layers * layers / model.n_layers)
        )
        ep_t = _ep_traffic(
            tokens_ep,
            model.hidden,
            model.experts_per_token,
            c.ep,
            net,
            moe_layers=moe_layers,
            ranks_per_node=_group_ranks_per_node(c.ep, c.tp, k),
            recompute=c.recompute,
            overlap=ep_overlap,
        )
    if c.cp > 1:
        kv_heads = max(1, model.n_kv_heads // c.tp)
        kv_dim = kv_heads * (model.qk_head_dim + model.v_head_dim) // 2
        attn_flops = (
            2 * tokens_mb * seq_len * (model.n_heads / c.tp) * (model.qk_head_dim + model.v_head_dim) / 2
        )
        cp_x = _cp_exchange(
            tokens_mb,
            kv_dim,
            c.cp,
            net,
            attention_forward_s=attn_flops / rate,
            ranks_per_node=_group_ranks_per_node(c.cp, c.tp, k),
        )
    return ep_t, cp_x


def layout_convention(config: ParallelConfig) -> str:
    """The memory convention a layout is judged by when none is named: "pytorch" for data parallelism alone
    (tp = pp = 1: a PyTorch DDP/FSDP step in eager AMP, fp32 parameters and gradients, the convention gpukit.memory
    checks against MemTracker and `cost train` prices), "megatron" for tensor/pipeline layouts (Megatron-LM's
    sum of parts, Korthikanti et al. 2022). `parallel estimate`, the search, `cost train` and `plan` share it,
    so one layout gets one memory and one gradient-sync size everywhere (issue 23 sec. 5)."""
    return "pytorch" if config.tp == 1 and config.pp == 1 else "megatron"


def layout_train_setup(
    config: ParallelConfig, seq_len: int, m: int, attention: str, dropout: bool, **conventions
):
    conventions = dict(conventions)
    convention = conventions.pop("convention", None) or layout_convention(config)  # unless named
    # FSDP2's implicit prefetch keeps one more layer gathered: a term of the papers' sum of parts; the PyTorch
    # convention's ZeRO-3 step is the one cost train prices (checked against MemTracker, gpukit.bench.fsdp)
    z3 = 1 if config.zero_stage == 3 and convention == "megatron" else 0
    return mem.TrainSetup(
        convention=convention,
        dp=config.dp,
        tp=config.tp,
        pp=config.pp,
        sp=config.sp,
        zero_stage=config.zero_stage,
        seq_len=seq_len,
        micro_batch=config.micro_batch,
        grad_accum=m,
        recompute=config.recompute,
        attention=attention,
        dropout=dropout,
        virtual_stages=config.virtual_stages,
        zero3_prefetch_layers=z3,
        ep=config.ep,  # helper F's TrainSetup fields: the memory effect of EP and CP
        cp=config.cp,
        **conventions,
    )


@dataclass(frozen=True)
class MicroBatchTimes:
    """Seconds of one micro-batch on one GPU of the heaviest stage (all its chunks), by part: estimate's
    per-micro-batch terms, with the traffic they come from."""

    compute_s: float  # executed matmul and attention FLOPs at their rates
    elementwise_s: float  # memory-bound kernels at HBM bandwidth
    tp_s: float  # TP all-reduces (exposed)
    pp_s: float  # PP send/recv (exposed)
    ep_s: float  # EP all-to-alls (exposed)
    cp_s: float  # CP KV exchange beyond the attention it overlaps
    ep: EPTraffic | None
    cp: CPExchange | None
    activation_bytes: int  # b s / cp x hidden x 2: one TP all-reduce's buffer
    tp_all_reduces: int  # per layer
    p2p_bytes: float  # one PP send


def micro_batch_times(
    model: ModelSpec,
    config: ParallelConfig,
    cluster: Cluster,
    *,
    seq_len: int,
    attention: str,
    setup: mem.TrainSetup,
    mfu: float | None = None,
    finetune: str = "full",
    ep_overlap: float = 0.0,
) -> MicroBatchTimes:
    """One micro-batch's compute, elementwise and exposed TP/PP/EP/CP communication on one GPU of the
    heaviest stage (formulas in the module docstring), for estimate and the search's bound
    (pipeline_breakdown); inputs as estimate has checked them, `setup` estimate's TrainSetup."""
    c, s, model = config, seq_len, as_model_spec(model)
    causal = attention == "flash" and model.arch != "encoder"  # an encoder's attention is full either way
    _, hw_fpt, attn_fpt = _fpt(model, s, causal, c.recompute)
    # CP: each rank of the cp group holds b*s/cp tokens of the micro-batch (Megatron-Core CP)
    tokens_mb = c.micro_batch * s // c.cp
    layers = math.ceil(model.n_layers / c.pp)
    stage_share = layers / model.n_layers  # the LM head is spread over stages here (stated imbalance)
    rate = cluster.peak_flops * cluster.matmul_efficiency
    # GEMM tile/wave quantization of the rank's layer shapes (gpukit.parallel.cluster.layer_gemm_efficiency, issue 23)
    gemm_eff = layer_gemm_efficiency(model, tokens_mb, c.tp, cluster.sm_count)
    # the fused attention kernel (scores and values, forward, backward, recompute) runs at its own published
    # share of the peak (FlashAttention-2: 50-73% on A100, Dao 2023; 35% on H100, Shah et al. 2024), the
    # rest of the FLOPs are GEMMs at the matmul rate x the wave quantization (issue 23 sec. 3)
    rank_tokens = tokens_mb * stage_share / c.tp
    if attention != "flash":  # unfused (eager) attention: batched GEMMs, timed as the others
        attn_fpt = 0.0
    gemm_fpt = hw_fpt - attn_fpt
    if setup.precision == "fp8":  # FP8 recipe: its GEMMs at the fp8 peak x the cataloged fp8 share (issue 24)
        fp8_ratio = _fp8_share_ratio(cluster.gpu)
        # matmul_time_scale scales the step's FLOPs (only the fp8 GEMMs change; attention keeps its bf16 FLOPs)
        gemm_fpt = (
            hw_fpt * matmul_time_scale(model, s, causal, c.recompute, "fp8", cluster.gpu, fp8_ratio or 1.0)
            - attn_fpt
        )
    compute_all = gemm_fpt * rank_tokens / (rate * gemm_eff) + attn_fpt * rank_tokens / (
        cluster.peak_flops * cluster.attention_efficiency
    )
    # CP: the elementwise kernels touch the rank's b*s/cp tokens (the whole sequence's activations / cp)
    act = _layer_activation_bytes_whole_sequence(model, setup) * layers / c.cp
    hbm = cluster.gpu.hbm_bandwidth_gbps * GB * cluster.hbm_efficiency
    passes = 6 + (2 if c.recompute == "full" else 1 if c.recompute == "selective" else 0)
    elem_all = passes * act / hbm
    if (
        mfu is not None
    ):  # the caller's utilization of the executed FLOPs (time_to_train's): elementwise inside
        compute_all, elem_all = hw_fpt * tokens_mb * stage_share / c.tp / (cluster.peak_flops * mfu), 0.0
    if finetune != "full":  # the frozen base's weight gradients are skipped (Hu et al. 2021)
        compute_all, elem_all = compute_all * ADAPTER_BACKWARD_SHARE, elem_all * ADAPTER_BACKWARD_SHARE
    # TP: 2 all-reduces of b*s*h (16-bit) per layer forward, 2 backward, 2 more replayed with full recompute
    h_bytes = tokens_mb * model.hidden * 2
    n_ar = 4 + (2 if c.recompute == "full" else 0)
    net = cluster.network
    intra, inter = (
        tuple(net.intra_link),
        tuple(net.inter_link(net.gpus_per_node)),
    )  # every GPU of a node sends
    ar = _tp_allreduce_s(float(h_bytes), c.tp, net.gpus_per_node, intra, inter)
    tp_s = n_ar * layers * ar
    # PP: activations forward and gradients backward per micro-batch per chunk boundary
    # some stage boundary crosses nodes once the pipeline spans more than one node; it sets the pace
    pp_link = inter if c.tp * c.dp * c.pp > net.gpus_per_node else intra
    p2p_bytes = h_bytes / (c.tp if c.sp or c.tp > 1 else 1)  # scatter/gather optimization
    pp_s = 2 * c.virtual_stages * _send_recv_s(p2p_bytes, pp_link) if c.pp > 1 else 0.0
    # ---- EP / CP communication (helper G; gpukit.comm.ep_traffic / cp_exchange, formulas cited there)
    ep_t, cp_x = _ep_cp_traffic(model, c, net, tokens_mb, s, layers, rate, ep_overlap)
    ep_s = ep_t.exposed_s if ep_t is not None else 0.0  # on the critical path unless overlapped
    cp_s = layers * cp_x.exposed_s if cp_x is not None else 0.0  # beyond the attention it overlaps
    if cp_x is not None and c.recompute != "none":  # the recomputed attention replays the forward ring
        cp_s += layers * cp_x.forward_exposed_s
    # ---- end EP / CP communication
    return MicroBatchTimes(
        compute_all, elem_all, tp_s, pp_s, ep_s, cp_s, ep_t, cp_x, h_bytes, n_ar, p2p_bytes
    )


def pipeline_breakdown(config: ParallelConfig, global_batch: int, t: MicroBatchTimes) -> tuple:
    """The leading terms of estimate's breakdown (seconds per step): m micro-batches of compute,
    elementwise and exposed TP/PP/EP/CP traffic, and the bubble, (p-1)/v slots of all of it (Narayanan et
    al. 2021 eq. 1). Every term is non-negative and the step adds the rest after them, so their sum (the
    same float additions, rounding monotonically) is a lower bound of the step: the layout search's
    pruning bound."""
    c = config
    m = global_batch // (c.dp * c.micro_batch)
    t_mb = t.compute_s + t.elementwise_s + t.tp_s + t.pp_s + t.ep_s + t.cp_s
    slots = m + (c.pp - 1) / c.virtual_stages
    return (
        ("compute", m * t.compute_s),
        ("elementwise", m * t.elementwise_s),
        ("tp_comm", m * t.tp_s),
        ("pp_comm", m * t.pp_s),
        ("ep_comm", m * t.ep_s),  # EP all-to-alls (helper G)
        ("cp_comm", m * t.cp_s),  # CP KV exchange beyond the attention it overlaps (helper G)
        ("bubble", (slots - m) * t_mb),
    )


def checked_setup(
    model: ModelSpec,
    config: ParallelConfig,
    *,
    global_batch: int,
    seq_len: int,
    attention: str,
    dropout: bool,
    **conventions,
):
    """The layout's checks that estimate runs before its step model, and its TrainSetup: config.validate (its
    notes), ring attention's blockwise kernel with cp > 1, the setup of layout_train_setup at the layout's
    micro-batches per step. One place for estimate and the layout search's pruning (which must refuse what
    estimate refuses). -> (TrainSetup, notes)."""
    model = as_model_spec(model)
    if not isinstance(config, ParallelConfig):
        raise ValueError(f"config must be a ParallelConfig, got {type(config).__name__}")
    global_batch = require_positive_int("global_batch", global_batch, at_most=MAX_COUNT)
    seq_len = require_positive_int("seq_len", seq_len, at_most=MAX_COUNT)
    require_choice("attention", attention, mem.ATTENTION)
    notes = list(config.validate(model, global_batch=global_batch, seq_len=seq_len))
    if config.cp > 1 and attention != "flash":
        raise ValueError(
            f"attention must be flash with cp {config.cp}: ring attention is blockwise (flash-style) attention"
        )
    m = global_batch // (config.dp * config.micro_batch)
    return layout_train_setup(config, seq_len, m, attention, dropout, **conventions), notes


def estimate(
    model,
    config: ParallelConfig,
    cluster: Cluster,
    *,
    global_batch: int,
    seq_len: int | None = None,
    attention: str = "flash",
    dropout: bool | None = None,
    dp_overlap: float = 0.0,
    ep_overlap: float = 0.0,
    _memory=None,
    mfu: float | None = None,
    offload: str = "none",
    finetune: str = "full",
    grad_bytes_per_param: float | None = None,
    **conventions,
) -> Estimate:
    """Memory, communication and step time of `config` (formulas in the module docstring).

    attention: "flash" (fused, causal FLOPs halved) or "eager" (the 2021-22 Megatron kernels: full
    s x s scores stored and computed). dropout defaults to the model row's `dropout` (GPT-style True,
    Llama- and Falcon-style False). seq_len defaults to model.train_seq_len (the pretraining length,
    not the context window max_seq), said in `notes`. conventions: gpukit.memory.TrainSetup options
    (grad_dtype, grad_accum_buffer, precision, optimizer). ep_overlap (0..1): the share of the EP
    all-to-alls a schedule hides behind compute (0, none, by default; DeepSeek-V3's DualPipe hides
    most of it: gpukit.comm.EP_OVERLAP_SOURCE).

    The one step model every training price uses (gpukit.cost.training_run, the planner, `cost train`):
    mfu: the share of the dense peak sustained on the executed FLOPs (time_to_train's utilization), which
    replaces the matmul efficiency and the elementwise term when given. offload: "optimizer" (ZeRO-Offload:
    offload_step_s once per optimizer step) or "all" (ZeRO-Infinity: the 16-bit parameters also cross PCIe in
    forward and backward of every micro-batch, prefetched behind its compute). finetune: "lora"/"qlora" run
    ADAPTER_BACKWARD_SHARE of the step's compute and all-reduce only the adapters' gradients (negligible:
    not charged). grad_bytes_per_param: the gradient bytes on the wire (default the memory convention's,
    gpukit.memory.state_bytes_per_param: one dtype for memory and time; conventions may name
    convention="pytorch", whose AMP keeps fp32 parameters and gradients, or grad_dtype="fp32", Megatron's main
    grads); ZeRO-3 gathers the convention's parameter bytes.
    The overlap of every term is stated in Estimate.overlap.
    """
    model = as_model_spec(model)
    require_choice("offload", offload, OFFLOADS)
    require_choice("finetune", finetune, FINETUNES)
    if mfu is not None and not 0 < require_positive("mfu", mfu) <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu}")
    if grad_bytes_per_param is not None:
        require_positive("grad_bytes_per_param", grad_bytes_per_param)
    if not isinstance(config, ParallelConfig):
        raise ValueError(f"config must be a ParallelConfig, got {type(config).__name__}")
    G = require_positive_int("global_batch", global_batch)
    s = require_positive_int("seq_len", seq_len if seq_len is not None else model.default_seq_len()[0])
    window = model.window_note(s, "seq_len")  # learned positions: a ValueError beyond max_seq
    require_choice("attention", attention, mem.ATTENTION)
    if not 0 <= require_positive("dp_overlap", dp_overlap, allow_zero=True) <= 1:
        raise ValueError(f"dp_overlap must be in [0, 1], got {dp_overlap}")
    dropout = model.dropout if dropout is None else dropout  # the model row's recipe (gpukit/data/models.csv)
    if not 0 <= require_positive("ep_overlap", ep_overlap, allow_zero=True) <= 1:
        raise ValueError(f"ep_overlap must be in [0, 1], got {ep_overlap}")
    if (
        offload != "none"
    ):  # the memory and bytes of the offloaded run (DeepSpeed's engine: 16-bit model on the GPU)
        conventions = {**conventions, "offload": offload}
    setup, notes = checked_setup(
        model, config, global_batch=G, seq_len=s, attention=attention, dropout=dropout, **conventions
    )
    if seq_len is None:
        notes.append(default_seq_len_note(model))
    if window:
        notes.append(window)
    if config.tp > 1 and cluster.gpus_per_node % config.tp:
        notes.append(
            f"TP group of {config.tp} spans nodes of {cluster.gpus_per_node} GPUs: its all-reduces cross "
            "the network"
        )
    c = config
    m = G // (c.dp * c.micro_batch)
    mb = _memory if _memory is not None else mem.estimate_memory(model, setup=setup, gpu=cluster.gpu)

    causal = attention == "flash" and model.arch != "encoder"  # an encoder's attention is full either way
    model_fpt, hw_fpt, _ = _fpt(model, s, causal, c.recompute)
    layers = math.ceil(model.n_layers / c.pp)
    if setup.precision == "fp8":  # FP8 recipe: its GEMMs at the fp8 peak x the cataloged fp8 share (issue 24)
        notes.append(fp8_time_note(model, s, causal, c.recompute, cluster.gpu, _fp8_share_ratio(cluster.gpu)))
    t = micro_batch_times(
        model,
        c,
        cluster,
        seq_len=s,
        attention=attention,
        setup=setup,
        mfu=mfu,
        finetune=finetune,
        ep_overlap=ep_overlap,
    )
    compute_all, elem_all, ep_t, cp_x = t.compute_s, t.elementwise_s, t.ep, t.cp
    adapters = finetune != "full"
    net = cluster.network
    hbm = cluster.gpu.hbm_bandwidth_gbps * GB * cluster.hbm_efficiency
    if ep_t is not None:
        notes.append(
            f"EP{c.ep}: {ep_t.n_all_to_alls} all-to-alls per micro-batch of {ep_t.buffer_bytes / 2**20:.1f} MiB "
            f"per GPU ({(c.ep - 1)}/{c.ep} leaves it, balanced routing), overlap {ep_overlap:g} "
            "(none by default; DeepSeek-V3's DualPipe hides most of it)"
        )
    if model.is_moe:
        notes.append(MOE_TIME_CAVEAT)
    if cp_x is not None:
        notes.append(
            f"CP{c.cp}: ring attention, {c.cp - 1} KV steps of {cp_x.block_bytes / 2**20:.2f} MiB per layer "
            f"(backward 2x), overlapped with the attention; exposed {layers * cp_x.exposed_s * 1e3:.2f} ms per "
            "micro-batch; causal load balancing (two chunks per rank)"
        )
    # DP / ZeRO: gradients of the stage's parameters
    # one stage (pp 1) holds the whole model: its gradients are all n_params (the untied LM head and the final
    # norm were left out before issue 22); with pp > 1 the heaviest stage holds the embedding or the head
    stage_params = (
        model.n_params
        if c.pp == 1
        else model.stage_blocks_params(layers) + max(model.embedding_params(), model.head_params())
    ) / c.tp
    gbytes = (
        grad_bytes_per_param
        if grad_bytes_per_param is not None
        else mem.state_bytes_per_param(setup)[1] - (4.0 if setup.grad_accum_buffer == "fp32" else 0.0)
    )  # the memory convention's gradients are what is synced (one dtype: 16-bit, fp32 under PyTorch AMP)
    pbytes = mem.state_bytes_per_param(setup)[0]  # the parameters ZeRO-3 gathers, in the convention's dtype
    # the backward of one micro-batch: 4N of 6N FLOPs, 6N of 8N with full recompute (its forward replay)
    micro_s = compute_all + elem_all
    backward_s = micro_s * (6 / 8 if c.recompute == "full" else 4 / 6)
    bucket_overlap = (
        c.pp == 1
    )  # DDP buckets overlap the backward; with pp > 1 the reduction waits for the flush
    # ---- EP / CP in the gradient sync (helper G): the CP ranks hold the same weights, so gradients reduce
    # over dp x cp (Megatron-Core's data-parallel-with-CP group); routed experts are sharded by ep and
    # reduce over the expert-data-parallel group dp x cp / ep (Megatron-Core MoE README, parallel folding)
    expert_stage = _expert_stage_params(model, c, layers)  # the stage's routed experts / tp (all ep shards)
    dense_stage = stage_params - expert_stage if c.ep > 1 else stage_params
    dp_sync = c.dp * c.cp
    ranks, groups = dp_group_shape(
        c if c.cp == 1 else ParallelConfig(dp=dp_sync, tp=c.tp, pp=c.pp), net.gpus_per_node
    )
    # ---- end EP / CP in the gradient sync
    # the one gradient-sync model (gpukit.comm.grad_sync): DDP buckets over the DP group, once per step
    sync = grad_sync(
        dense_stage,
        dp_sync,
        net,
        grad_bytes_per_param=gbytes,
        zero_stage=c.zero_stage,
        ranks_per_node=ranks,
        groups_per_node=groups,
        n_layers=layers,
        grad_accum=m,
        overlap=c.zero_stage == 3 or bucket_overlap,
        backward_s=backward_s,
        micro_step_s=micro_s,
        param_bytes_per_param=pbytes,
    )
    if c.zero_stage == 3:
        zero3_exposed = sync.exposed_s  # prefetch hides each micro-batch's gathers behind its compute
        dp_s = 0.0
        comm_dp = ("zero3_gather_reduce", m * dense_stage * (2 * pbytes + gbytes) * (dp_sync - 1) / dp_sync)
    else:
        zero3_exposed = 0.0
        # pp 1: the buckets the backward has not hidden (DDP); pp > 1: after the pipeline flush (Megatron
        # 2021); dp_overlap hides a further share of what is left
        dp_s = (1 - dp_overlap) * (sync.exposed_s if bucket_overlap else sync.comm_s)
        halves = dp_sync_halves(c.zero_stage, m)  # ZeRO-2: a reduce-scatter per micro-batch (grad_sync)
        comm_dp = ("dp_grad_reduce", halves * dense_stage * gbytes * (dp_sync - 1) / dp_sync)
    if adapters and c.zero_stage < 3:  # only the adapters' gradients are all-reduced: negligible traffic
        dp_s, comm_dp = 0.0, (comm_dp[0], 0.0)
    dp_total_s = sync.comm_s
    # ---- EP: the experts' own gradient sync over dp x cp / ep ranks (helper G)
    if c.ep > 1 and expert_stage > 0:
        edp = dp_sync // c.ep
        e_ranks, e_groups = dp_group_shape(ParallelConfig(dp=edp, tp=c.tp * c.ep, pp=c.pp), net.gpus_per_node)
        e_sync = grad_sync(
            expert_stage / c.ep,
            edp,
            net,
            grad_bytes_per_param=gbytes,
            zero_stage=c.zero_stage,
            ranks_per_node=e_ranks,
            groups_per_node=e_groups,
            n_layers=layers,
            grad_accum=m,
            overlap=c.zero_stage == 3 or bucket_overlap,
            backward_s=backward_s,
            micro_step_s=micro_s,
            param_bytes_per_param=pbytes,
        )
        f = (edp - 1) / edp
        dp_total_s += e_sync.comm_s
        if c.zero_stage == 3:
            zero3_exposed += e_sync.exposed_s
            comm_dp = (comm_dp[0], comm_dp[1] + m * expert_stage / c.ep * (2 * pbytes + gbytes) * f)
        else:
            dp_s += (1 - dp_overlap) * (e_sync.exposed_s if bucket_overlap else e_sync.comm_s)
            comm_dp = (comm_dp[0], comm_dp[1] + halves * expert_stage / c.ep * gbytes * f)
    # ---- end EP gradient sync
    # the optimizer step reads and writes the states of the parameters it updates: weight + gradient + optimizer
    # bytes per parameter (16 in bf16-mixed AdamW under either memory convention: ZeRO sec. 3.1, PyTorch AMP),
    # with ZeRO >= 1 only this rank's 1/(dp cp) shard (Rajbhandari et al. 2019)
    w_b, g_b, o_b = mem.state_bytes_per_param(setup)
    opt_params = stage_params / dp_sync if c.zero_stage >= 1 else stage_params
    opt_s = 2 * (w_b + g_b + o_b) * opt_params / hbm
    if (
        adapters
    ):  # only the adapters are updated: their gradients and AdamW states (the memory terms hold them)
        opt_s = 2 * (mb.grads_bytes + mb.optimizer_bytes) / hbm
    # offload (ZeRO-Offload / ZeRO-Infinity, Ren et al. 2021 sec. 4): the CPU runs Adam, once per optimizer step
    off_s = 0.0
    if offload != "none":
        opt_s = 0.0  # the optimizer step runs on the CPU (inside off_s)
        shard = stage_params / dp_sync if c.zero_stage >= 1 else stage_params  # the GPU's share of the states
        off_s = offload_step_s(shard, cluster.gpu)
        if (
            offload == "all"
        ):  # 16-bit parameters streamed in over PCIe in forward and backward, per micro-batch
            pcie_mb = 4 * shard / (PCIE_GBPS.get(cluster.gpu.pcie_gen, 32.0) * 1e9)
            off_s += m * max(0.0, pcie_mb - micro_s)  # prefetched behind the micro-batch's compute
    # The step, split so that the parts add up: compute and elementwise over m micro-batches, the bubble
    # (p-1)/v slots of everything on the pipeline's critical path, exposed comm by kind.
    breakdown = pipeline_breakdown(c, G, t) + (
        ("dp_comm", dp_s),
        ("zero3_comm", zero3_exposed),
        ("optimizer", opt_s),
        ("offload", off_s),
    )
    step = sum(v for _, v in breakdown)
    if not math.isfinite(step) or step <= 0:
        raise ValueError("inputs too large: the step time overflows a float")
    if c.zero_stage == 0 and dp_sync > 1 and offload == "none" and opt_s > 0.05 * step:
        notes.append(
            f"plain DDP: every rank updates all its parameters, an optimizer step of {opt_s * 1e3:.1f} ms "
            f"({opt_s / step:.0%} of the step); ZeRO-1 updates a 1/{dp_sync} shard at DDP's bytes "
            "(Rajbhandari et al. 2019); ZeRO-3 shards it too, at 1.5x the bytes: all it can gain over DDP"
        )
    gpus = c.world_size
    tokens = G * s
    model_flops = model_fpt * tokens
    hw_flops = hw_fpt * tokens
    tp_bytes = t.tp_all_reduces * layers * m * 2 * (c.tp - 1) / c.tp * t.activation_bytes
    comm = (
        comm_dp,
        ("tp_activations", tp_bytes),
        ("pp_activations", 2 * c.virtual_stages * m * t.p2p_bytes if c.pp > 1 else 0.0),
        ("ep_all_to_all", m * ep_t.bytes_per_microbatch if ep_t is not None else 0.0),  # helper G
        (
            "cp_kv_exchange",
            m * layers * (cp_x.bytes_per_layer + (cp_x.forward_bytes if c.recompute != "none" else 0.0))
            if cp_x is not None
            else 0.0,
        ),
    )
    b = bubble(c.pp, m, c.virtual_stages) if not (c.virtual_stages > 1 and m % c.pp) else None
    assert b is not None  # config.validate above rejects m % pp with virtual stages
    overlap_words = _overlap_words(c, dp_overlap, offload, adapters, zero3_exposed, sync, m)
    return Estimate(
        config=c,
        model_name=model.name,
        gpus=gpus,
        seq_len=s,
        global_batch=G,
        microbatches=m,
        memory_per_gpu_bytes=mb.total_bytes,
        gpu_memory_bytes=cluster.gpu.memory_bytes,
        fits=bool(mb.fits),
        step_time_s=step,
        tokens_per_s=tokens / step,
        tflops_per_gpu=model_flops / step / gpus / 1e12,
        hardware_tflops_per_gpu=hw_flops / step / gpus / 1e12,
        mfu=model_flops / step / gpus / cluster.peak_flops,
        bubble_fraction=b.bubble_fraction,
        bubble_over_ideal=b.bubble_over_ideal,
        breakdown=breakdown,
        comm_bytes=comm,
        notes=tuple(notes),
        memory=mb,
        assumptions=cluster_assumptions(cluster),
        overlap=overlap_words,
        comm_total_s=(
            ("tp_comm", m * t.tp_s),
            ("pp_comm", m * t.pp_s),
            ("dp_comm", 0.0 if c.zero_stage == 3 or (adapters and c.zero_stage < 3) else dp_total_s),
            ("zero3_comm", dp_total_s if c.zero_stage == 3 else 0.0),
        ),
    )


def _overlap_words(c: ParallelConfig, dp_overlap, offload, adapters, zero3_exposed, sync, m) -> tuple:
    """(term, what it hides behind or why it cannot, the mechanism cited) for Estimate.overlap."""
    out = [
        (
            "tp_comm",
            "exposed: the TP all-reduces (all-gather/reduce-scatter with SP) sit between the layer's matmuls "
            "that need their result (Shoeybi et al. 2019); Megatron/Transformer Engine's --tp-comm-overlap "
            "can hide part of it, not assumed",
        ),
        (
            "pp_comm",
            "exposed: 1F1B send/recv between stages is on the critical path (Narayanan et al. 2021 sec. 2.2)",
        ),
    ]
    if c.zero_stage == 3:
        out.append(
            (
                "zero3_comm",
                f"FSDP/ZeRO-3 prefetch depth 1: per micro-batch ({m}) and layer, the next layer's parameter "
                "all-gather runs during this layer's forward, again during its backward with the reduce-scatter "
                "of its gradients (PyTorch FSDP forward/backward prefetch, Zhao et al. 2023 sec. 3.3.2; "
                "Megatron --overlap-param-gather is the ZeRO-1/2 analogue); the first gather and the last "
                f"reduce-scatter, and any gather longer than its layer's compute, are exposed: "
                f"{zero3_exposed:.4g} s of {sync.comm_s:.4g} s",
            )
        )
    elif adapters:
        out.append(("dp_comm", "none charged: only the adapters' gradients are all-reduced (negligible)"))
    elif c.pp == 1:
        out.append(
            (
                "dp_comm",
                "DDP gradient buckets all-reduced as the last micro-batch's backward produces them (Li et al. "
                "2020, PyTorch DDP, VLDB 13(12) sec. 3.2.3; Megatron --overlap-grad-reduce), once per optimizer "
                "step (no_sync on the others); the buckets that end after the backward are exposed"
                + (f", and dp_overlap {dp_overlap:g} hides that share of them" if dp_overlap else ""),
            )
        )
    else:
        out.append(
            (
                "dp_comm",
                "after the pipeline flush (Narayanan et al. 2021: Megatron reduces once the pipeline drains; "
                "--overlap-grad-reduce would start it in the last micro-batches' backward)"
                + (f"; dp_overlap {dp_overlap:g} hides that share" if dp_overlap else ": exposed"),
            )
        )
    if offload != "none":
        out.append(
            (
                "offload",
                "not overlapped: ZeRO-Offload's PCIe transfer and CPU Adam once per optimizer step (Ren et al. "
                "2021 sec. 4; its one-step delayed update, DPU, is not assumed); gradient accumulation "
                "amortises it"
                + (
                    "; ZeRO-Infinity's parameter fetch per micro-batch prefetched behind compute"
                    if offload == "all"
                    else ""
                ),
            )
        )
    return tuple(out)


def comm_volume(
    model, config: ParallelConfig, *, global_batch: int, seq_len: int | None = None, grad_bytes: float = 2.0
) -> dict:
    """Bytes each GPU sends per step by kind (ring collectives, volume = c_beta x buffer), for the
    traffic table of the notebook. DP/ZeRO-1: 2 (d-1)/d x grads; ZeRO-2: (m+1) (d-1)/d x grads (a
    reduce-scatter per micro-batch, one all-gather); ZeRO-3: 3 (d-1)/d x 16-bit params per
    micro-batch; TP: 2 (t-1)/t x b s h x 2 bytes per all-reduce; PP: b s h x 2 / t per send. seq_len
    defaults to model.train_seq_len, as in estimate. EP and CP (gpukit.comm.ep_traffic / cp_exchange,
    the same terms as estimate): ep_bytes the all-to-alls of the stage's MoE layers, cp_bytes the ring
    KV exchange; with cp the TP and PP messages carry the rank's b s / cp tokens and the gradients reduce
    over dp x cp (the routed experts over dp x cp / ep)."""
    model = as_model_spec(model)
    global_batch = require_positive_int("global_batch", global_batch, at_most=MAX_COUNT)
    seq_len = require_positive_int("seq_len", model.default_seq_len()[0] if seq_len is None else seq_len)
    model.window_note(seq_len, "seq_len")  # learned positions: a ValueError beyond max_seq
    grad_bytes = require_positive("grad_bytes", grad_bytes)
    config.validate(model, global_batch=global_batch, seq_len=seq_len)
    c = config
    m = global_batch // (c.dp * c.micro_batch)
    n = model.n_params / (c.tp * c.pp)
    # ---- EP / CP (helper G): gradients over dp x cp, routed experts over dp x cp / ep
    layers = math.ceil(model.n_layers / c.pp)
    experts = model.n_moe_layers * model.n_experts * model.expert_params() if model.is_moe else 0
    n_exp = experts / (c.tp * c.pp) if c.ep > 1 else 0.0  # the routed experts, all ep shards
    n_dense, D, E = n - n_exp, c.dp * c.cp, c.dp * c.cp // c.ep
    d, de = (D - 1) / D, (E - 1) / E
    h_bytes = c.micro_batch * seq_len // c.cp * model.hidden * 2
    n_ar = 4 + (2 if c.recompute == "full" else 0)
    out = {
        # DDP/ZeRO-1: one all-reduce per step; ZeRO-2 a reduce-scatter per micro-batch (gpukit.comm)
        "dp_bytes": dp_sync_halves(c.zero_stage, m) * (d * n_dense + de * n_exp / c.ep) * grad_bytes
        if c.zero_stage < 3
        else 0.0,
        "zero3_bytes": 3 * (d * n_dense + de * n_exp / c.ep) * 2 * m if c.zero_stage == 3 else 0.0,
        "tp_bytes": n_ar * layers * m * 2 * (c.tp - 1) / c.tp * h_bytes,
        "pp_bytes": 2 * c.virtual_stages * m * h_bytes / c.tp if c.pp > 1 else 0.0,
        "ep_bytes": 0.0,
        "cp_bytes": 0.0,
    }
    if c.ep > 1 or c.cp > 1:  # the bytes only: any network will do (the times are estimate's)
        ep_t, cp_x = _ep_cp_traffic(
            model, c, cluster_network("nvlink4"), c.micro_batch * seq_len // c.cp, seq_len, layers, 1.0
        )
        out["ep_bytes"] = m * ep_t.bytes_per_microbatch if ep_t is not None else 0.0
        if cp_x is not None:
            replay = cp_x.forward_bytes if c.recompute != "none" else 0.0
            out["cp_bytes"] = m * layers * (cp_x.bytes_per_layer + replay)
    out["total_bytes"] = sum(out.values())
    return out
