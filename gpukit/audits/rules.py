"""Audits of the articles' remaining quantitative rules (issue 23): size rules, serving latency with tensor
parallelism, the worked examples' arithmetic, and the sentences too vague to compute.

Registered under topic "plan" (the articles' decision rules; notebook 09's complete table shows them).
Each verdict is computed from gpukit's calculators under the assumptions it states; "not checkable" marks
a sentence that names no quantity one could compute.
Used in: gpukit.audits.claims (registry), gpukit/data/claims.csv, notebooks/09_decide.
"""

from __future__ import annotations

from gpukit import inference as inf
from gpukit.audits.claims import Claim, register
from gpukit.catalog import get_gpu, get_model, gpus
from gpukit.compute import time_to_train
from gpukit.memory import TrainSetup, estimate_memory
from gpukit.scaling import GRAD_DTYPE, scaling
from gpukit.units import GB, GiB

TOPIC = "plan"
CHINCHILLA = 20  # tokens per parameter, Hoffmann et al. 2022
H100 = "h100-sxm"


def _days(n_params: float, tokens: float, gpu: str = H100, mfu: float = 0.4) -> float:
    return time_to_train(n_params, tokens, get_gpu(gpu), 1, mfu=mfu).days


@register("small_under_1b_single_gpu", TOPIC)
def small_under_1b_single_gpu(n_params: float = 1e9, gpu: str = H100, week_days: float = 7.0) -> Claim:
    """A compute-optimal (20 tokens/param) pretraining run of a 1B model on one GPU, in days; its training
    state (16 B/param, Rajbhandari et al. 2019) against the GPU's memory."""
    days = _days(n_params, CHINCHILLA * n_params, gpu)
    state_gib = 16 * n_params / GiB  # bf16 weights + grads, fp32 Adam states and master copy
    cap = get_gpu(gpu).memory_gib
    ok = days <= week_days and state_gib < cap
    return Claim(
        key="small_under_1b_single_gpu",
        topic=TOPIC,
        article="000",
        text="Models under 1B parameters belong on a single GPU",
        quote="For small models (<1B params): single GPU is the smart choice.",
        claimed=1,
        claimed_unit="GPUs",
        computed=days,
        unit="days on one GPU",
        verdict="plausible" if ok else "doubtful",
        check=(
            f"A {n_params / 1e9:g}B model, {CHINCHILLA} tokens/param: {days:.1f} days on one {gpu} at 40% MFU; "
            f"training state {state_gib:.0f} GiB of {cap:g} GiB. "
            + (
                "It fits and finishes within a week: one GPU is enough; a node only buys time."
                if ok
                else "Over a week or over memory: one GPU is not always the smart choice."
            )
        ),
        assumptions=(
            f"{gpu}, 40% MFU, 6N FLOPs per token, compute-optimal token count",
            "pretraining from scratch",
        ),
        figures=(
            ("days on one GPU", days, "days"),
            ("training state", state_gib, "GiB"),
            ("GPU memory", cap, "GiB"),
        ),
    )


@register("large_over_10b_clusters_mandatory", TOPIC)
def large_over_10b_clusters_mandatory(n_params: float = 10e9, gpu: str = H100) -> Claim:
    """10B parameters: the 16 B/param training state against the largest catalog GPU, and the one-GPU days."""
    biggest = max(gpus().values(), key=lambda g: g.memory_gib)
    state_gib = 16 * n_params / GiB
    days = _days(n_params, CHINCHILLA * n_params, gpu)
    mandatory = state_gib > biggest.memory_gib or days > 30
    return Claim(
        key="large_over_10b_clusters_mandatory",
        topic=TOPIC,
        article="000",
        text="Models over 10B parameters need a cluster",
        quote="For large models (>10B params): clusters are mandatory, and networking becomes your biggest headache.",
        claimed=10e9,
        claimed_unit="parameters",
        computed=days,
        unit="days on one GPU",
        verdict="correct" if mandatory else "doubtful",
        check=(
            f"{n_params / 1e9:g}B: {state_gib:.0f} GiB of training state vs {biggest.memory_gib:g} GiB on the largest "
            f"catalog GPU ({biggest.name}), and {days:.0f} days of compute on one {gpu}: a cluster for pretraining. "
            "Fine-tuning with LoRA/QLoRA is the exception (notebook 02)."
        ),
        assumptions=("pretraining, 20 tokens/param, 40% MFU", "mixed-precision Adam, 16 B/param"),
        figures=(
            ("training state", state_gib, "GiB"),
            ("largest GPU", biggest.memory_gib, "GiB"),
            ("days", days, "days"),
        ),
    )


def _itl(model: str, gpu: str, tp: int, precision: str = "bf16") -> float:
    m, g = get_model(model), get_gpu(gpu)
    link = inf.default_link(g, tp) if tp > 1 else None
    return inf.decode_step(m, g, batch=1, tp=tp, link=link, precision=precision).time_s


@register("single_gpu_low_latency_inference", TOPIC)
def single_gpu_low_latency_inference(model: str = "llama-3-8b", gpu: str = H100, tp: int = 2) -> Claim:
    """Per-token latency of one GPU vs tp GPUs (NVLink) at batch 1 on the decode roofline."""
    one, split = _itl(model, gpu, 1), _itl(model, gpu, tp)
    return Claim(
        key="single_gpu_low_latency_inference",
        topic=TOPIC,
        article="000",
        text="For low-latency (<100 ms) serving a single GPU wins",
        quote="For inference, single GPU wins for low-latency (<100ms) serving.",
        claimed=100,
        claimed_unit="ms",
        computed=one * 1e3,
        unit="ms",
        verdict="misleading" if split < one else "correct",
        check=(
            f"{model} at batch 1: {one * 1e3:.1f} ms per token on one {gpu}, {split * 1e3:.1f} ms with TP {tp} over "
            "NVLink: both far under 100 ms, and the split is faster per token (each GPU reads half the weights). "
            "One GPU wins on cost per token and simplicity, not on latency."
            if split < one
            else f"{model}: one GPU {one * 1e3:.1f} ms per token, TP {tp} {split * 1e3:.1f} ms: one GPU is faster."
        ),
        assumptions=("decode roofline at gpukit.inference's stated shares, bf16 weights, batch 1",),
        figures=(("ITL on 1 GPU", one * 1e3, "ms"), (f"ITL at TP {tp}", split * 1e3, "ms")),
    )


@register("tp_higher_latency_higher_throughput", TOPIC)
def tp_higher_latency_higher_throughput(model: str = "llama-2-70b", gpu: str = H100, tp: int = 8) -> Claim:
    """A model served across tp GPUs (it does not fit one): per-token latency at tp vs tp/2, and throughput per GPU."""
    m, g = get_model(model), get_gpu(gpu)
    half = tp // 2
    fast, slow = _itl(model, gpu, tp), _itl(model, gpu, half)
    p_full = inf.serve(m, g, gpus=tp, tp=tp)
    p_half = inf.serve(m, g, gpus=half, tp=half)
    per_gpu_full = p_full.max_batch / p_full.itl_s / tp if p_full.max_batch else 0.0
    per_gpu_half = p_half.max_batch / p_half.itl_s / half if p_half.max_batch else 0.0
    return Claim(
        key="tp_higher_latency_higher_throughput",
        topic=TOPIC,
        article="002",
        text="With tensor parallelism: higher latency per request, higher throughput under load",
        quote="Yes, with tensor parallelism. Expect higher latency per request but higher throughput under load.",
        claimed=1,
        claimed_unit="x latency (above 1 claimed)",
        computed=fast / slow,
        unit="x latency (above 1 claimed)",
        verdict="misleading" if fast < slow else "plausible",
        check=(
            f"{model}: TP {tp} gives {fast * 1e3:.1f} ms per token, TP {half} {slow * 1e3:.1f} ms: more tensor "
            f"parallelism LOWERS per-token latency (each GPU reads 1/tp of the weights; the all-reduces stay on "
            f"NVLink). Throughput per GPU at the largest batch: {per_gpu_full:,.0f} tokens/s at TP {tp} vs "
            f"{per_gpu_half:,.0f} at TP {half}. The trade-off runs the other way: TP buys latency, replicas buy "
            "throughput per GPU."
        ),
        assumptions=(
            "decode roofline, bf16 weights, NVLink inside one node",
            "largest batch the memory allows",
        ),
        figures=(
            (f"ITL at TP {tp}", fast * 1e3, "ms"),
            (f"ITL at TP {half}", slow * 1e3, "ms"),
            (f"tokens/s per GPU at TP {tp}", per_gpu_full, "tokens/s"),
            (f"tokens/s per GPU at TP {half}", per_gpu_half, "tokens/s"),
        ),
    )


@register("tp_needed_400b", TOPIC)
def tp_needed_400b(n_params: float = 400e9) -> Claim:
    """400B weights at 16, 8 and 4 bits against the largest catalog GPU."""
    biggest = max(gpus().values(), key=lambda g: g.memory_gib)
    w = {bits: n_params * bits / 8 / GiB for bits in (16, 8, 4)}
    need16 = -(-w[16] // biggest.memory_gib)
    fits4 = w[4] <= biggest.memory_gib
    return Claim(
        key="tp_needed_400b",
        topic=TOPIC,
        article="002",
        text="A 400B model does not fit one GPU: it needs tensor parallelism across GPUs",
        quote="Or if one GPU can’t hold the model in VRAM (e.g., 400B parameters), you need tensor parallelism "
        "across multiple GPUs.",
        claimed=2,
        claimed_unit="GPUs (more than one)",
        computed=need16,
        unit="GPUs (more than one)",
        verdict="wrong" if w[16] <= biggest.memory_gib else "plausible" if fits4 else "correct",
        check=(
            f"400B weights: {w[16]:.0f} GiB in bf16, {w[8]:.0f} GiB in 8 bits, {w[4]:.0f} GiB in 4 bits, against "
            f"{biggest.memory_gib:g} GiB on the largest catalog GPU ({biggest.name}): at least {need16:.0f} GPUs in "
            "bf16. "
            + (
                f"At 4 bits the weights squeeze onto one {biggest.name} with "
                f"{biggest.memory_gib - w[4]:.0f} GiB left for the KV cache, too little to serve: the rule holds "
                "in practice, not strictly."
                if fits4
                else "Even at 4 bits they do not fit."
            )
            + " Tensor parallelism is the usual split; pipeline parallelism would also do."
        ),
        assumptions=("weights only; the KV cache needs more",),
        figures=tuple((f"weights at {b} bits", v, "GiB") for b, v in w.items())
        + (("largest GPU", biggest.memory_gib, "GiB"),),
    )


@register("dp_each_gpu_4_samples", TOPIC)
def dp_each_gpu_4_samples(batch: int = 8, n_gpus: int = 2) -> Claim:
    """Data parallelism splits the batch: samples per GPU = batch / GPUs."""
    per = batch / n_gpus
    return Claim(
        key="dp_each_gpu_4_samples",
        topic=TOPIC,
        article="002",
        text="Data parallelism on 2 GPUs with a batch of 8: each GPU processes 4 samples",
        quote="Each GPU processes 4 samples.",
        claimed=4,
        claimed_unit="samples per GPU",
        computed=per,
        unit="samples per GPU",
        verdict="correct" if per == 4 else "wrong",
        check=f"batch {batch} over {n_gpus} data-parallel GPUs: {per:g} per GPU (the article's batch of 8).",
        assumptions=("the article's example: batch 8, 2 GPUs",),
        figures=(("samples per GPU", per, "samples"),),
    )


@register("pp_layers_1_12_13_24", TOPIC)
def pp_layers_1_12_13_24(n_layers: int = 24, stages: int = 2, microbatches: int = 1) -> Claim:
    """An even pipeline split: layers per stage; with one micro-batch one stage idles (p-1)/(m+p-1) of the step."""
    from gpukit.parallel import bubble

    per = n_layers / stages
    idle = bubble(stages, microbatches, 1).bubble_fraction
    return Claim(
        key="pp_layers_1_12_13_24",
        topic=TOPIC,
        article="002",
        text="Pipelining 24 layers on 2 GPUs: 12 layers each",
        quote="GPU 1 handles layers 1–12, GPU 2 handles 13–24.",
        claimed=12,
        claimed_unit="layers per GPU",
        computed=per,
        unit="layers per GPU",
        verdict="correct" if per == 12 else "wrong",
        check=(
            f"{n_layers} layers over {stages} stages: {per:g} each. Not said: with the whole batch as one "
            f"micro-batch each GPU idles {idle:.0%} of the step (the bubble; notebook 06)."
        ),
        assumptions=("a 24-layer model, as the example implies", f"{microbatches} micro-batch"),
        figures=(("layers per GPU", per, "layers"), ("idle share, 1 micro-batch", idle, "")),
    )


@register("compute_0_5_seconds_30b", TOPIC)
def compute_0_5_seconds_30b(
    n_params: float = 30e9, compute_s: float = 0.5, gpu: str = H100, mfu: float = 0.4
) -> Claim:
    """Tokens per GPU that 0.5 s of compute implies for a 30B model: t x peak x MFU / 6N."""
    g = get_gpu(gpu)
    rate = g.peak_tflops("bf16") * 1e12 * mfu
    tokens = compute_s * rate / (6 * n_params)  # Kaplan et al. 2020: 6N FLOPs per token
    return Claim(
        key="compute_0_5_seconds_30b",
        topic=TOPIC,
        article="002",
        text="A 30B model's compute per step on 32 GPUs was 0.5 s",
        quote="Our compute was 0.5 seconds.",
        claimed=compute_s,
        claimed_unit="s",
        computed=tokens,
        unit="tokens per GPU per step",
        verdict="plausible" if 256 <= tokens <= 65536 else "doubtful",
        check=(
            f"0.5 s at {mfu:.0%} MFU on an {gpu} is {tokens:,.0f} tokens per GPU per step for {n_params / 1e9:g}B "
            "parameters (6N FLOPs per token): about one sequence per GPU, a normal micro-batch. The GPU was not "
            "named, so the number cannot be pinned further."
        ),
        assumptions=(f"{gpu} (the article names none), {mfu:.0%} MFU", "6N FLOPs per token"),
        figures=(("implied tokens per GPU per step", tokens, "tokens"),),
    )


@register("param_memory_bytes_rule", TOPIC)
def param_memory_bytes_rule(model: str = "llama-2-7b") -> Claim:
    """Weights = params x bytes per param; the training state is 8x the fp16 weights (16 B/param)."""
    m = get_model(model)
    weights = m.n_params * 2
    train = estimate_memory(m, setup=TrainSetup(seq_len=2048, micro_batch=1))  # gpukit.memory's defaults
    return Claim(
        key="param_memory_bytes_rule",
        topic=TOPIC,
        article="002",
        text="Parameter memory = params x bytes per param (2 for FP16, 4 for FP32)",
        quote="Compute total parameter memory: params * bytes_per_param (2 for FP16, 4 for FP32).",
        claimed=weights / GB,
        claimed_unit="GB",
        computed=weights / GB,
        unit="GB",
        verdict="correct",
        check=(
            f"{m.name}: {m.n_params / 1e9:.2f}B x 2 B = {weights / GB:.1f} GB of fp16 weights: right for the "
            f"weights. Training holds far more: {train.total_bytes / GiB:.0f} GiB with gradients, Adam states and "
            "activations (notebook 01)."
        ),
        assumptions=(
            "training: gpukit.memory's default setup (bf16-mixed, Adam, 2048 tokens, micro-batch 1)",
        ),
        figures=(("fp16 weights", weights / GB, "GB"), ("training total", train.total_bytes / GiB, "GiB")),
    )


@register("speedup_rarely_2x", TOPIC)
def speedup_rarely_2x(n_params: float = 7e9, tokens_per_gpu: float = 4096) -> Claim:
    """Two GPUs under DDP (NVLink, overlap): the predicted speedup, below 2 by the exposed communication."""
    r = scaling(n_params=n_params, gpus=[1, 2], tokens_per_gpu=tokens_per_gpu, grad_dtype=GRAD_DTYPE)
    s = r.rows[-1].speedup
    return Claim(
        key="speedup_rarely_2x",
        topic=TOPIC,
        article="002",
        text="Data parallelism on two GPUs rarely gives 2x",
        quote="But the speedup is rarely 2x.",
        claimed=2,
        claimed_unit="x (never quite reached)",
        computed=s,
        unit="x (never quite reached)",
        verdict="correct" if s < 2 else "wrong",
        check=(
            f"{n_params / 1e9:g}B, {tokens_per_gpu:g} tokens per GPU, 2 H100 over NVLink: {s:.2f}x predicted. "
            "Below 2 always (the last bucket's all-reduce and the copies are exposed), though close to it."
        ),
        assumptions=r.assumptions,
        figures=(("speedup at 2 GPUs", s, "x"),),
    )


@register("workloads_not_70b", TOPIC)
def workloads_not_70b() -> Claim:
    """A statement about the population of workloads: no calculation reaches it."""
    return Claim(
        key="workloads_not_70b",
        topic=TOPIC,
        article="000",
        text="Most deep learning workloads are not 70B models",
        quote="But here’s the contrarian take: most deep learning workloads aren’t 70B models.",
        claimed=70e9,
        claimed_unit="parameters",
        computed=0.0,
        unit="n/a",
        verdict="not checkable",
        check="too vague to compute: it names no population, no share and no source.",
        assumptions=("none: a survey would be needed",),
    )
