"""gpukit.parallel against published training runs: Megatron-LM (Narayanan et al. 2021 table 1,
Korthikanti et al. 2022 tables), BLOOM, OPT, Llama 3 405B, MosaicML's MPT throughput tables (the same
harness on A100 80GB and H100 80GB, bf16), NVIDIA's Megatron-Bridge and DGX Cloud Benchmarking tables and
torchtitan's H200 benchmark, each with its stated layout, measured throughput, source, what we assume where
the source is silent, and its role: `fit` rows (A100) set the one training share of the matmul efficiency
(gpukit.parallel.cluster.TRAINING_MATMUL_SHARE), `held-out` rows (H100, H200, B200, GB200) check it.

Pure calculator. gpukit.parallel re-exports these names lazily (this module imports it).
Used in: notebook 06, gpukit.cli.benchreport (make bench), gpukit.audits.parallel, tests/test_parallel.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.catalog import get_gpu, get_model
from gpukit.parallel.cluster import make_cluster
from gpukit.parallel.layout import Estimate, ParallelConfig, estimate
from gpukit.specs import ModelSpec


@dataclass(frozen=True)
class PublishedRun:
    """A published training run: its stated layout and measured throughput (TFLOP/s per GPU in the
    paper's own convention: `hardware` = executed FLOPs incl. recompute (Megatron eq. 3), `model` = MFU's)."""

    name: str
    model: ModelSpec
    gpu: str
    gpus: int
    config: ParallelConfig
    global_batch: int
    seq_len: int
    published_tflops: float  # or the iteration time (s) for "step_s", tokens/s per GPU for "tokens_s"
    convention: str  # "hardware", "model" (TFLOP/s per GPU), "step_s" (iteration time), "tokens_s"
    attention: str  # kernels of the time: "eager" before FlashAttention
    source: str
    assumed: str = ""  # what the source does not state and we assume
    role: str = "fit"  # "fit": sets the efficiency (A100 rows); "held-out": only checks it
    precision: str = "bf16-mixed"  # the run's training precision ("fp8": the FP8 recipe, issue 24)

    def to_json_dict(self) -> dict:
        return {
            "name": self.name,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "layout": self.config.label(),
            "global_batch": self.global_batch,
            "seq_len": self.seq_len,
            "published_tflops": self.published_tflops,
            "convention": self.convention,
            "source": self.source,
            "assumed": self.assumed,
            "role": self.role,
            "precision": self.precision,
        }


# Llama 3 sec. 3.3.2: an interleaved schedule with V chunks per pipeline rank, one layer taken off the first
# and the last stages, "the first model chunk on the first stage has only the embedding, and the last model
# chunk on the last stage has only output projection and loss": so a chunk holds one layer, and 126 + 2 = 128
# chunks on 16 stages is V = 8 (derived from the paper's statements, not fitted)
_LLAMA3_ASSUMED = (
    "micro_batch 1, no recompute; virtual stages 8, derived from sec. 3.3.2 (interleaved, the first chunk only "
    "the embedding, the last only the loss: one layer a chunk, 126 + 2 chunks on 16 stages); the paper's own "
    "flexible-N schedule modelled as Megatron's interleaved 1F1B"
)


def _gpt(name, layers, hidden, heads, vocab=51200, seq=2048):
    return ModelSpec(
        name=name,
        n_layers=layers,
        hidden=hidden,
        n_heads=heads,
        vocab=vocab,
        max_seq=seq,
        tied_embeddings=True,
    )


_N21 = (
    "Narayanan et al. 2021, Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM "
    "(arXiv 2104.04473), Table 1 (A100 80GB, Selene: 8 GPUs per node, 8 x HDR IB; seq 2048, vocab 51200, "
    "full recompute; TFLOP/s include recompute)"
)
_N21_ASSUMED = "micro_batch 1 (the table does not list it), non-interleaved 1F1B, eager attention kernels"
_K22 = (
    "Korthikanti et al. 2022, Reducing Activation Recomputation in Large Transformer Models (arXiv 2205.05198), "
    "Table 3 (model, TP, PP, GPUs, global batch, micro-batch) and Table 5 (iteration time; full recompute vs "
    "selective recompute + sequence parallelism), A100 80GB, seq 2048"
)
_K22_ASSUMED = (
    "dp 1 (GPU count = tp x pp); interleaved schedule with 3 virtual stages for 175B and 530B, none for "
    "22B and 1T, as in Calculon's validation configurations of the same runs (Isaev et al. SC23, "
    "github.com/calculon-ai/calculon validation/*.json): the paper does not state it"
)


def _n21(name, params_b, heads, hidden, layers, tp, pp, gpus, batch, tflops):
    dp = gpus // (tp * pp)
    b = 1
    return PublishedRun(
        name,
        _gpt(f"gpt-{params_b}b", layers, hidden, heads),
        "a100-80gb",
        gpus,
        ParallelConfig(dp=dp, tp=tp, pp=pp, micro_batch=b, recompute="full", zero_stage=0),
        batch,
        2048,
        tflops,
        "hardware",
        "eager",
        _N21,
        _N21_ASSUMED,
    )


_MPT = {  # n_layers, hidden, n_heads (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml; expansion 4, no bias)
    "760m": (24, 1536, 12),
    "1b": (24, 2048, 16),
    "3b": (32, 2560, 20),
    "7b": (32, 4096, 32),
    "13b": (40, 5120, 40),
    "30b": (48, 7168, 56),
}
_MB = (
    "NVIDIA Megatron-Bridge, docs/performance-summary.md and performance-summary-archive.md (pre-training "
    "performance tables per NeMo container: #GPUs, precision, GBS, MBS, sequence length, FSDP, TP, PP, CP, VP, "
    "EP, tokens/sec/GPU), https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/docs/performance-summary.md, "
    "accessed 2026-12-05;"
)
_MB_ASSUMED = (
    "DDP rows (FSDP 0) with Megatron's distributed optimizer as ZeRO-1, FSDP rows as ZeRO-3; sequence parallel "
    "wherever TP > 1; no activation recompute unless stated; Transformer Engine's fused attention timed by the "
    "FlashAttention-2 catalog row (TE's cuDNN kernels are faster on H100: an under-prediction is expected there); "
    "CUDA graphs and communication overlap options of the recipe not modelled; MoE rows: the table's forced "
    "balanced, dropless routing (gpukit's assumption too)"
)


def _mb(name, model, gpu, gpus, config, gbs, seq, tok_s, precision, version, extra="", role="held-out"):
    return PublishedRun(
        f"{name} ({gpu.split('-')[0].upper()}, Megatron-Bridge {version})",
        get_model(model),
        gpu,
        gpus,
        config,
        gbs,
        seq,
        tok_s,
        "tokens_s",
        "flash",
        f"{_MB} {version} container, DGX-{gpu.split('-')[0].upper()} table, {precision}",
        _MB_ASSUMED + (f"; {extra}" if extra else ""),
        role,
        "fp8" if precision.startswith("FP8") else "bf16-mixed",
    )


# One row per distinct configuration (the latest container that lists it). Left out, with the reason: the
# GB200 70B FP8 row (activation offloading of 40 layers is not modelled), Qwen3-235B (EP 32 over TP 2 x DP 16:
# expert parallelism across the TP group is not modelled), DeepSeek-V3 (MTP layers and 61 layers with the
# recipe's custom first/last-stage split).
_MEGATRON_BRIDGE = (
    _mb(
        "Llama3.1 405B FP8 GBS 512",
        "llama-3.1-405b",
        "h100-sxm",
        1024,
        ParallelConfig(dp=8, tp=8, pp=8, cp=2, virtual_stages=8, sp=True, zero_stage=1),
        512,
        8192,
        292,
        "FP8-CS",
        "25.11",
        "126 layers on pp 8 x vp 8 = 64 chunks (Megatron-Core puts the embedding and the loss "
        "in the first and last chunks)",
    ),
    _mb(
        "Llama3.1 405B FP8 GBS 1536",
        "llama-3.1-405b",
        "h100-sxm",
        1024,
        ParallelConfig(dp=8, tp=8, pp=8, cp=2, virtual_stages=8, sp=True, zero_stage=1),
        1536,
        8192,
        311,
        "FP8",
        "26.02",
        "126 layers on pp 8 x vp 8 = 64 chunks",
    ),
    _mb(
        "Llama3.1 405B FP8",
        "llama-3.1-405b",
        "b200",
        128,
        ParallelConfig(dp=2, tp=4, pp=8, cp=2, virtual_stages=8, sp=True, zero_stage=1),
        64,
        8192,
        661,
        "FP8-CS",
        "25.11",
        "126 layers on pp 8 x vp 8 = 64 chunks",
    ),
    _mb(
        "Llama3.1 405B FP8",
        "llama-3.1-405b",
        "gb200",
        256,
        ParallelConfig(dp=4, tp=4, pp=16, virtual_stages=4, sp=True, zero_stage=1),
        1536,
        8192,
        813,
        "FP8-CS",
        "25.11",
        "126 layers on pp 16 x vp 4 = 64 chunks",
    ),
    _mb(
        "Llama3 8B FP8",
        "llama-3-8b",
        "h100-sxm",
        8,
        ParallelConfig(dp=8, zero_stage=3),
        128,
        8192,
        14451,
        "FP8-CS",
        "25.11",
        "the recipe recomputes 5 of 32 layers (recompute_num_layers=5): modelled as none",
    ),
    _mb(
        "Llama3 70B FP8 GBS 128",
        "llama-3-70b",
        "h100-sxm",
        64,
        ParallelConfig(dp=2, tp=4, pp=8, virtual_stages=5, sp=True, zero_stage=1),
        128,
        8192,
        1602,
        "FP8-CS",
        "25.11",
    ),
    _mb(
        "Llama3 70B FP8 GBS 256",
        "llama-3-70b",
        "h100-sxm",
        64,
        ParallelConfig(dp=2, tp=4, pp=8, virtual_stages=5, sp=True, zero_stage=1),
        256,
        8192,
        1621,
        "FP8",
        "26.02",
    ),
    _mb(
        "Llama3 8B FP8",
        "llama-3-8b",
        "b200",
        8,
        ParallelConfig(dp=8, micro_batch=2, zero_stage=1),
        128,
        8192,
        30624,
        "FP8-CS",
        "25.11",
    ),
    _mb(
        "Llama3 8B FP8",
        "llama-3-8b",
        "gb200",
        8,
        ParallelConfig(dp=8, micro_batch=2, zero_stage=1),
        128,
        8192,
        31508,
        "FP8-CS",
        "25.11",
    ),
    _mb(
        "GPT-OSS 120B BF16",
        "gpt-oss-120b",
        "h100-sxm",
        64,
        ParallelConfig(dp=16, pp=4, ep=8, micro_batch=4, zero_stage=1),
        512,
        4096,
        5630,
        "BF16",
        "25.11",
    ),
    _mb(
        "Qwen3 30B-A3B FP8",
        "qwen3-30b-a3b",
        "h100-sxm",
        16,
        ParallelConfig(dp=8, pp=2, virtual_stages=24, ep=8, micro_batch=2, zero_stage=1),
        512,
        4096,
        5275,
        "FP8-CS",
        "25.11",
    ),
    _mb(
        "GPT-OSS 120B BF16",
        "gpt-oss-120b",
        "b200",
        64,
        ParallelConfig(dp=64, ep=8, micro_batch=4, zero_stage=1),
        512,
        4096,
        8213,
        "BF16",
        "25.11",
    ),
    _mb(
        "Qwen3 30B-A3B FP8 MBS 1",
        "qwen3-30b-a3b",
        "b200",
        8,
        ParallelConfig(dp=8, ep=8, zero_stage=1),
        512,
        4096,
        9299,
        "FP8-MX",
        "25.11",
    ),
    _mb(
        "Qwen3 30B-A3B FP8 MBS 4",
        "qwen3-30b-a3b",
        "gb200",
        8,
        ParallelConfig(dp=8, ep=8, micro_batch=4, zero_stage=1),
        512,
        4096,
        23766,
        "FP8-MX",
        "25.11",
    ),
)

_DGXC = (
    "NVIDIA DGX Cloud Benchmarking, Llama 3.1 pre-training recipe v25.04.02 (NeMo 25.02.01 container, H100 80GB, "
    "synthetic data), llama3.1/README.md: layout table (GPUs, SeqLen, TP, PP, CP, DP, VP, MBS, GBS, GA) and "
    "'Training step time (seconds per step)' per precision and GPU count, "
    "https://github.com/NVIDIA/dgxc-benchmarking/blob/v25.04.02/llama3.1/README.md, accessed 2026-12-05"
)
_DGXC_ASSUMED = (
    "Megatron's distributed optimizer as ZeRO-1 (NeMo 2.0 recipe default); sequence parallel wherever TP > 1 "
    "(the recipe sets it so); no activation recompute (none stated); FP8 = NeMo's bf16_with_fp8_mixed "
    "(Transformer Engine, delayed scaling); Transformer Engine's fused attention timed by the FlashAttention-2 "
    "catalog row; the recipe's TP communication overlap (userbuffers) and CUDA-graph options not modelled; the "
    "step time is the last training step's, as the README reads it"
)


def _dgxc(name, model, gpus, config, gbs, step_s, precision, extra=""):
    return PublishedRun(
        f"{name} (H100, DGXC 25.04.02)",
        get_model(model),
        "h100-sxm",
        gpus,
        config,
        gbs,
        8192,
        step_s,
        "step_s",
        "flash",
        f"{_DGXC}; {precision} table",
        _DGXC_ASSUMED + (f"; {extra}" if extra else ""),
        "held-out",
        "fp8" if precision == "FP8" else "bf16-mixed",
    )


# The smallest GPU count of each full-model table (the larger counts are the same layout weak-scaled; the 405B
# rows under 512 GPUs are 8-, 30- and 62-layer proxies of the model and are left out).
_DGXC_H100 = (
    _dgxc(
        "Llama3.1 8B BF16", "llama-3.1-8b", 8, ParallelConfig(dp=4, cp=2, zero_stage=1), 128, 12.27, "BF16"
    ),
    _dgxc("Llama3.1 8B FP8", "llama-3.1-8b", 8, ParallelConfig(dp=4, cp=2, zero_stage=1), 128, 9.33, "FP8"),
    _dgxc(
        "Llama3.1 70B BF16",
        "llama-3.1-70b",
        64,
        ParallelConfig(dp=2, tp=4, pp=4, cp=2, virtual_stages=5, sp=True, zero_stage=1),
        128,
        14.66,
        "BF16",
    ),
    _dgxc(
        "Llama3.1 70B FP8",
        "llama-3.1-70b",
        64,
        ParallelConfig(dp=2, tp=4, pp=8, virtual_stages=5, sp=True, zero_stage=1),
        128,
        9.86,
        "FP8",
    ),
    _dgxc(
        "Llama3.1 405B BF16",
        "llama-3.1-405b",
        512,
        ParallelConfig(dp=4, tp=8, pp=8, cp=2, virtual_stages=8, sp=True, zero_stage=1),
        256,
        19.78,
        "BF16",
        "126 layers on pp 8 x vp 8 = 64 chunks",
    ),
    _dgxc(
        "Llama3.1 405B FP8",
        "llama-3.1-405b",
        512,
        ParallelConfig(dp=4, tp=8, pp=8, cp=2, virtual_stages=8, sp=True, zero_stage=1),
        256,
        12.37,
        "FP8",
        "126 layers on pp 8 x vp 8 = 64 chunks",
    ),
)

_TT_H200 = (
    "PyTorch torchtitan, benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md (Trainy on WhiteFiber, June 2025; "
    "hosts of 8 H200 on NVLink, 400 Gb/s CX-7 per GPU between hosts; torchtitan e7c0cae, torch 2.8.0a0, torchao "
    "0afa4c1; the command line and TPS/GPU at the 100th iteration for 4 and 8 nodes), "
    "https://github.com/pytorch/torchtitan/blob/main/benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md, "
    "accessed 2026-12-05; the rest of the layout from torchtitan/models/llama3/train_configs/llama3_8b.toml at "
    "e7c0cae (seq_len 8192, data_parallel_shard_degree -1, TP/PP/CP 1, activation_checkpoint selective 'op')"
)
_TT_H200_ASSUMED = (
    "FSDP over all GPUs as ZeRO-3; global batch = local batch 2 x the GPUs (global_batch_size left at -1: no "
    "accumulation); the float8 converter (torchao tensorwise dynamic scaling of every Linear but the output "
    "layer, FP8 all-gather) as the fp8 recipe; torchtitan's per-op selective checkpointing (it recomputes every "
    "second matmul of the forward and the elementwise ops) as Megatron's selective recompute, which charges less "
    "(an over-prediction is expected there); torch.compile fusions not modelled; SDPA flash attention timed by "
    "the FlashAttention-2 catalog row"
)
_TORCHTITAN_H200 = tuple(
    PublishedRun(
        f"Llama3.1 8B FP8 {gpus} GPUs (H200, torchtitan)",
        get_model("llama-3.1-8b"),
        "h200",
        gpus,
        ParallelConfig(dp=gpus, micro_batch=2, zero_stage=3, recompute="selective"),
        2 * gpus,
        8192,
        tok_s,
        "tokens_s",
        "flash",
        _TT_H200,
        _TT_H200_ASSUMED,
        "held-out",
        "fp8",
    )
    for gpus, tok_s in ((32, 10938), (64, 10753))
)

_MPT_SRC = (
    "MosaicML llm-foundry, scripts/train/benchmarking/README.md (MPT training benchmarks, FSDP FULL_SHARD, "
    "amp_bf16, 8 GPUs; Throughput (T/s/GPU), MicroBatchSize, GradAccum, Activation Checkpointing as listed), "
    "https://github.com/mosaicml/llm-foundry/blob/main/scripts/train/benchmarking/README.md, accessed 2026-12-05;"
)
_MPT_ASSUMED = (
    "FSDP FULL_SHARD as ZeRO-3 over the 8 GPUs of one node; activation checkpointing as full recompute; "
    "FlashAttention kernels; GELU MLP of 4 x hidden, tied embeddings, vocab 50368 (the MPT yamls); ALiBi "
    "modelled as learned positions (parameters only)"
)
# (gpu, size, seq, micro_batch, grad_accum, activation checkpointing, tokens/s per GPU): every 8-GPU row of
# the two tables at seq 2048 and 4096 for 760m..30b that both tables list (the A100 rows are the fit rows)
_MPT_ROWS = (
    ("h100-sxm", "30b", 4096, 1, 21, True, 1802),
    ("h100-sxm", "30b", 2048, 3, 21, True, 2002),
    ("h100-sxm", "13b", 4096, 10, 3, True, 4717),
    ("h100-sxm", "13b", 2048, 2, 1, False, 4792),
    ("h100-sxm", "7b", 4096, 16, 2, True, 8611),
    ("h100-sxm", "7b", 2048, 6, 1, False, 10643),
    ("h100-sxm", "3b", 4096, 5, 6, False, 20964),
    ("h100-sxm", "1b", 4096, 7, 4, False, 38535),
    ("h100-sxm", "1b", 2048, 14, 1, False, 45455),
    ("h100-sxm", "760m", 4096, 12, 2, False, 55459),
    ("h100-sxm", "760m", 2048, 24, 2, False, 63147),
    ("a100-80gb", "30b", 4096, 1, 21, True, 814),
    ("a100-80gb", "30b", 2048, 3, 21, True, 916),
    ("a100-80gb", "13b", 4096, 10, 3, True, 2060),
    ("a100-80gb", "13b", 2048, 2, 3, False, 2262),
    ("a100-80gb", "7b", 4096, 16, 2, True, 3684),
    ("a100-80gb", "7b", 2048, 6, 2, False, 4641),
    ("a100-80gb", "3b", 4096, 5, 6, False, 9457),
    ("a100-80gb", "1b", 4096, 7, 4, False, 17807),
    ("a100-80gb", "1b", 2048, 14, 4, False, 20513),
    ("a100-80gb", "760m", 4096, 12, 2, False, 27351),
    ("a100-80gb", "760m", 2048, 24, 2, False, 32434),
)

PUBLISHED_RUNS: tuple[PublishedRun, ...] = (
    _n21("Megatron 1.7B", 1.7, 24, 2304, 24, 1, 1, 32, 512, 137),
    _n21("Megatron 3.6B", 3.6, 32, 3072, 30, 2, 1, 64, 512, 138),
    _n21("Megatron 7.5B", 7.5, 32, 4096, 36, 4, 1, 128, 512, 142),
    _n21("Megatron 18.4B", 18.4, 48, 6144, 40, 8, 1, 256, 1024, 135),
    _n21("Megatron 39.1B", 39.1, 64, 8192, 48, 8, 2, 512, 1536, 138),
    _n21("Megatron 76.1B", 76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140),
    _n21("Megatron 145.6B", 145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148),
    _n21("Megatron 310.1B", 310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155),
    _n21("Megatron 529.6B", 529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163),
    _n21("Megatron 1008B", 1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163),
    *(
        PublishedRun(
            f"Korthikanti {name} {label}",
            _gpt(f"gpt-{name}", layers, hidden, heads),
            "a100-80gb",
            gpus,
            ParallelConfig(dp=1, tp=8, pp=pp, virtual_stages=v, micro_batch=b, recompute=rc, sp=sp),
            batch,
            2048,
            t,
            "step_s",
            "eager",
            _K22,
            _K22_ASSUMED,
        )
        for name, heads, hidden, layers, pp, v, gpus, batch, b, times in (
            ("22b", 64, 6144, 48, 1, 1, 8, 4, 4, (1.42, 1.10)),
            ("175b", 96, 12288, 96, 8, 3, 64, 64, 1, (18.13, 13.75)),
            ("530b", 128, 20480, 105, 35, 3, 280, 280, 1, (49.05, 37.83)),
            ("1t", 160, 25600, 128, 64, 1, 512, 512, 1, (94.42, 71.49)),
        )
        for (label, rc, sp), t in zip(
            (("full recompute", "full", False), ("selective+SP", "selective", True)), times, strict=True
        )
    ),
    PublishedRun(
        "BLOOM-176B",
        ModelSpec(
            name="bloom-176b",
            n_layers=70,
            hidden=14336,
            n_heads=112,
            vocab=250880,
            max_seq=2048,
            tied_embeddings=True,
        ),
        "a100-80gb",
        384,
        ParallelConfig(dp=8, tp=4, pp=12, micro_batch=2, zero_stage=1, recompute="full"),
        2048,
        2048,
        156,
        "hardware",
        "eager",
        "BigScience 2022, BLOOM (arXiv 2211.05100), sec. 3.4: 48 nodes x 8 A100 80GB, TP 4, PP 12, DP 8, "
        "ZeRO-1, micro-batch 2, global batch 2048, 'we achieved 156 TFLOPs in our fastest configuration'",
        "full recompute; 4 x 100 Gb/s Omni-Path per node is modelled as 8 HDR ports (optimistic)",
    ),
    PublishedRun(
        "OPT-175B",
        get_model("opt-175b"),
        "a100-80gb",
        992,
        ParallelConfig(dp=124, tp=8, pp=1, micro_batch=8, zero_stage=3, recompute="full"),
        992,
        2048,
        147,
        "hardware",
        "eager",
        "Zhang et al. 2022, OPT (arXiv 2205.01068), sec. 2.4: 992 A100 80GB, FSDP with Megatron TP 8, "
        "2M-token batches, 'up to 147 TFLOP/s per GPU'",
        "micro_batch 8 (no accumulation: FSDP gathers per micro-batch), full recompute, TFLOP/s counted with recompute; 2M tokens as 992 sequences (a multiple of dp)",
    ),
    PublishedRun(
        "Llama 3 405B (8192 GPUs)",
        get_model("llama-3.1-405b"),
        "h100-sxm",
        8192,
        ParallelConfig(dp=64, tp=8, pp=16, virtual_stages=8, micro_batch=1, zero_stage=1, recompute="none"),
        2048,
        8192,
        430,
        "model",
        "flash",
        "Dubey et al. 2024, The Llama 3 Herd of Models (arXiv 2407.21783), Table 4: TP 8, CP 1, PP 16, DP 64, "
        "batch 2048 x 8192 tokens, 430 TFLOPs/GPU, 43% BF16 MFU",
        _LLAMA3_ASSUMED,
        "held-out",
    ),
    PublishedRun(
        "Llama 3 405B (16384 GPUs)",
        get_model("llama-3.1-405b"),
        "h100-sxm",
        16384,
        ParallelConfig(dp=128, tp=8, pp=16, virtual_stages=8, micro_batch=1, zero_stage=1, recompute="none"),
        2048,
        8192,
        400,
        "model",
        "flash",
        "Dubey et al. 2024, The Llama 3 Herd of Models (arXiv 2407.21783), Table 4: TP 8, CP 1, PP 16, DP 128, "
        "batch 2048 x 8192 tokens (16M), 400 TFLOPs/GPU, 41% BF16 MFU",
        _LLAMA3_ASSUMED,
        "held-out",
    ),
    *_MEGATRON_BRIDGE,
    *_DGXC_H100,
    *_TORCHTITAN_H200,
    *(
        PublishedRun(
            f"MPT-{size} seq {seq} ({gpu[:4].upper()})",
            ModelSpec(
                name=f"mpt-{size}",
                n_layers=_MPT[size][0],
                hidden=_MPT[size][1],
                n_heads=_MPT[size][2],
                vocab=50368,
                max_seq=seq,
                tied_embeddings=True,
            ),
            gpu,
            8,
            ParallelConfig(dp=8, micro_batch=mb, zero_stage=3, recompute="full" if ckpt else "none"),
            8 * mb * ga,
            seq,
            tok_s,
            "tokens_s",
            "flash",
            _MPT_SRC + (" H100 80GB BF16 table" if gpu == "h100-sxm" else " A100 80GB table"),
            _MPT_ASSUMED,
            "held-out" if gpu == "h100-sxm" else "fit",
        )
        for gpu, size, seq, mb, ga, ckpt, tok_s in _MPT_ROWS
    ),
)


@dataclass(frozen=True)
class ValidationRow:
    run: PublishedRun
    predicted_tflops: float
    predicted_step_s: float
    error: float  # predicted / published throughput - 1 (for step_s rows: published / predicted time - 1)
    estimate: Estimate

    def to_json_dict(self) -> dict:
        d = self.run.to_json_dict()
        d.update(
            predicted_tflops=self.predicted_tflops, predicted_step_s=self.predicted_step_s, error=self.error
        )
        return d


def validate_published(runs=PUBLISHED_RUNS, **cluster_kw) -> tuple[ValidationRow, ...]:
    """Predict each published run with its stated layout and the stated assumptions (one set for all)."""
    rows = []
    for r in runs:
        cl = make_cluster(r.gpu, 8, **cluster_kw)
        e = estimate(
            r.model,
            r.config,
            cl,
            global_batch=r.global_batch,
            seq_len=r.seq_len,
            attention=r.attention,
            precision=r.precision,
        )
        if r.convention == "step_s":  # published iteration time: compare throughput = 1 / time
            pred, err = e.step_time_s, r.published_tflops / e.step_time_s - 1
        elif r.convention == "tokens_s":  # published tokens/s per GPU
            pred = e.tokens_per_s / r.gpus
            err = pred / r.published_tflops - 1
        else:
            pred = e.hardware_tflops_per_gpu if r.convention == "hardware" else e.tflops_per_gpu
            err = pred / r.published_tflops - 1
        rows.append(ValidationRow(r, pred, e.step_time_s, err, e))
    return tuple(rows)


VALIDATION_GROUPS = (
    "fit (A100)",
    "held-out dense, Hopper (H100, H200)",
    "held-out dense, Blackwell (B200, GB200)",
    "held-out MoE (issue 24; any GPU)",
)


def validation_group(row: ValidationRow) -> str:
    """The summary group of a validation row: the fit rows; the held-out dense rows by GPU generation (issue
    23's goal is the Hopper group); the MoE rows apart (issue 24)."""
    if not isinstance(row, ValidationRow):
        raise ValueError(f"row must be a ValidationRow (from validate_published), got {type(row).__name__}")
    if row.run.role == "fit":
        return VALIDATION_GROUPS[0]
    if row.run.model.is_moe:
        return VALIDATION_GROUPS[3]
    return VALIDATION_GROUPS[1] if get_gpu(row.run.gpu).arch == "hopper" else VALIDATION_GROUPS[2]


def validation_summary(rows=None) -> dict[str, tuple[float, int]]:
    """{group: (median |error|, rows)} over VALIDATION_GROUPS (nan where a group has no row)."""
    import statistics

    rows = validate_published() if rows is None else rows
    out = {}
    for g in VALIDATION_GROUPS:
        errs = [abs(v.error) for v in rows if validation_group(v) == g]
        out[g] = (statistics.median(errs) if errs else float("nan"), len(errs))
    return out


def validation_frame(rows=None):
    import pandas as pd

    rows = validate_published() if rows is None else rows
    return pd.DataFrame(
        [
            {
                "run": v.run.name,
                "gpus": v.run.gpus,
                "layout": v.run.config.label(),
                "published_tflops": v.run.published_tflops,
                "predicted_tflops": v.predicted_tflops,
                "error": v.error,
                "fits": v.estimate.fits,
                "convention": v.run.convention,
                "role": v.run.role,
            }
            for v in rows
        ]
    )
