"""Compute claims of the seed articles (training time, tokens a time budget buys, speedups), audited
with gpukit.compute and gpukit.scaling. Registered under topic "compute" in gpukit.audits.claims
(see there for Claim and the registry). Used in: notebooks/03_compute_and_time, tests/test_claims.py.
"""

from __future__ import annotations

from gpukit.audits.claims import Claim, register, verdict_from_ratio
from gpukit.catalog import get_gpu
from gpukit.compute import time_to_train, tokens_for_time
from gpukit.units import fmt_count, fmt_seconds

DAY_S, HOUR_S = 86400.0, 3600.0
CHINCHILLA_TOKENS_PER_PARAM = 20  # Hoffmann et al. 2022 (Chinchilla), compute-optimal D ~ 20 N


@register("pretrain_70b_200_days", "compute")
def pretrain_70b_200_days(
    n_params: float = 70e9,
    tokens: float = 2e12,
    mfu: float = 0.8,
    gpu: str = "h100-sxm",
    claimed_days: float = 200.0,
) -> Claim:
    """Days for one GPU: 6ND / (peak x MFU) (Kaplan et al. 2020 C = 6ND; Narayanan et al. 2021 eq. 4)."""
    g = get_gpu(gpu)
    tt = time_to_train(n_params, tokens, g, 1, mfu=mfu)
    implied = tokens_for_time(claimed_days * DAY_S, n_params, gpu, mfu)
    chin = time_to_train(n_params, CHINCHILLA_TOKENS_PER_PARAM * n_params, g, 1, mfu=mfu)
    at40 = time_to_train(n_params, tokens, g, 1, mfu=0.4)
    return Claim(
        key="pretrain_70b_200_days",
        topic="compute",
        article="000",
        text="A 70B model at 80% utilization on one H100 takes ~200 days to pretrain",
        quote="A 70B model at 80% utilization on H100 would take ~200 days for a standard pretraining run.",
        claimed=claimed_days,
        claimed_unit="days",
        computed=tt.days,
        unit="days",
        verdict=verdict_from_ratio(tt.days / claimed_days),
        check=(
            f"6 x {fmt_count(n_params)} x {fmt_count(tokens)} tokens = {tt.flops:.2e} FLOPs; / ({g.peak_tflops('bf16'):g}"
            f" TFLOP/s x {mfu:.0%}) = {fmt_seconds(tt.seconds)} ({tt.days / 365.25:.0f} years). 200 days buys "
            f"only {fmt_count(implied)} tokens ({implied / n_params:.2f} per parameter)."
        ),
        assumptions=(
            f"'standard pretraining run' = {fmt_count(tokens)} tokens (Llama 2 70B: 2T; Touvron et al. 2023)",
            f"{g.name} dense bf16 peak from gpukit/data/gpus.csv",
            "6N FLOPs per token, attention left out",
        ),
        figures=(
            ("training FLOPs (6ND)", tt.flops, "FLOP"),
            ("days on one GPU", tt.days, "days"),
            ("years on one GPU", tt.days / 365.25, "years"),
            ("tokens 200 days buy", implied, "tokens"),
            ("tokens per parameter in 200 days", implied / n_params, "tokens/param"),
            ("days for 20 tokens/param (Chinchilla)", chin.days, "days"),
            ("days at 40% MFU", at40.days, "days"),
            ("GPUs for 200 days at perfect scaling", tt.days / claimed_days, "GPUs"),
        ),
    )


@register("seven_b_three_weeks", "compute")
def seven_b_three_weeks(
    n_params: float = 7e9,
    claimed_days: float = 21.0,
    mfu: float = 0.4,
    gpu: str = "a100-80gb",
    pretrain_tokens: float = 2e12,
) -> Claim:
    """Tokens that three weeks on one A100 buy: t x peak x MFU / 6N (8N with full recompute)."""
    tokens = tokens_for_time(claimed_days * DAY_S, n_params, gpu, mfu)
    tokens_recompute = tokens_for_time(claimed_days * DAY_S, n_params, gpu, mfu, flops_per_param=8.0)
    pretrain = time_to_train(n_params, pretrain_tokens, get_gpu(gpu), 1, mfu=mfu)
    fine_tune_scale = tokens < 0.1 * CHINCHILLA_TOKENS_PER_PARAM * n_params
    return Claim(
        key="seven_b_three_weeks",
        topic="compute",
        article="000",
        text="Training a 7B model on one A100 took three weeks",
        quote="Then the training took three weeks.",
        claimed=claimed_days,
        claimed_unit="days",
        computed=tokens,
        unit="tokens",
        verdict="plausible" if fine_tune_scale else "doubtful",
        check=(
            f"{claimed_days:g} days x {get_gpu(gpu).peak_tflops('bf16'):g} TFLOP/s x {mfu:.0%} / (6 x {fmt_count(n_params)}) = "
            f"{fmt_count(tokens)} tokens ({fmt_count(tokens_recompute)} with gradient checkpointing, 8N): a "
            f"fine-tuning volume; pretraining on {fmt_count(pretrain_tokens)} tokens would take "
            f"{pretrain.days / 365.25:.0f} years."
        ),
        assumptions=(
            f"{mfu:.0%} MFU (Llama 3: 38-43%); ZeRO-3 offload and 4-bit weights would run slower, so "
            "fewer tokens",
            "the article gives no token count: the verdict is about what 3 weeks can buy",
        ),
        figures=(
            ("tokens in 21 days (6N)", tokens, "tokens"),
            ("tokens in 21 days (8N, recompute)", tokens_recompute, "tokens"),
            ("years to pretrain on 2T tokens", pretrain.days / 365.25, "years"),
        ),
    )


@register("ten_b_200_hours", "compute")
def ten_b_200_hours(
    n_params: float = 10e9, claimed_hours: float = 200.0, mfu: float = 0.4, gpu: str = "h100-sxm"
) -> Claim:
    """Tokens that the cost table's 200 hours on one H100 buy, vs a compute-optimal run (Chinchilla)."""
    tokens = tokens_for_time(claimed_hours * HOUR_S, n_params, gpu, mfu)
    tokens80 = tokens_for_time(claimed_hours * HOUR_S, n_params, gpu, 0.8)
    optimal = CHINCHILLA_TOKENS_PER_PARAM * n_params
    optimal_h = time_to_train(n_params, optimal, get_gpu(gpu), 1, mfu=mfu).seconds / HOUR_S
    share = tokens / optimal
    return Claim(
        key="ten_b_200_hours",
        topic="compute",
        article="000",
        text="Training a 10B model takes 200 hours on one H100 (cost table)",
        quote="| 1x H100 | $4 | 200 hrs | $800 |",
        claimed=claimed_hours,
        claimed_unit="hours",
        computed=tokens,
        unit="tokens",
        verdict="plausible" if share >= 0.5 else "doubtful",
        check=(
            f"{claimed_hours:g} h x {get_gpu(gpu).peak_tflops('bf16'):g} TFLOP/s x {mfu:.0%} / (6 x {fmt_count(n_params)}) = {fmt_count(tokens)} "
            f"tokens ({fmt_count(tokens80)} at 80% MFU): {share:.1%} of a compute-optimal "
            f"{fmt_count(optimal)}-token run, which would take {optimal_h:,.0f} h."
        ),
        assumptions=(
            "the table does not say how many tokens",
            "compute-optimal = 20 tokens/param (Hoffmann et al. 2022)",
            "the 10B model's training state (16 B/param = 160 GB) does not fit one 80 GB H100 "
            "without offload, which would slow it further",
        ),
        figures=(
            ("tokens in 200 h at 40% MFU", tokens, "tokens"),
            ("tokens in 200 h at 80% MFU", tokens80, "tokens"),
            ("share of a 20 tokens/param run", share, "fraction"),
            ("hours for 20 tokens/param at this MFU", optimal_h, "hours"),
        ),
    )


@register("seventy_b_4_vs_32_gpus", "compute")
def seventy_b_4_vs_32_gpus(
    days_small: float = 45.0, gpus_small: int = 4, days_large: float = 5.0, gpus_large: int = 32
) -> Claim:
    """At equal per-GPU throughput, time scales as 1/n: days_large = days_small x gpus_small / gpus_large."""
    linear_days = days_small * gpus_small / gpus_large
    rel = (days_small * gpus_small) / (days_large * gpus_large)
    return Claim(
        key="seventy_b_4_vs_32_gpus",
        topic="compute",
        article="000",
        text="A 70B run that took 45 days on 4 GPUs would take 5 days on 32",
        quote="Training took 45 days. A 32-GPU cluster would have finished in 5 days.",
        claimed=days_large,
        claimed_unit="days",
        computed=linear_days,
        unit="days",
        verdict=verdict_from_ratio(linear_days / days_large, correct=1.05, plausible=1.5),
        check=(
            f"8x the GPUs at the same per-GPU speed: 45 x 4 / 32 = {linear_days:.3g} days; 5 days needs "
            f"{rel:.3f}x the per-GPU throughput of the 4-GPU run (superlinear), possible only because that run was "
            "slowed by ZeRO-3 CPU offloading."
        ),
        assumptions=("same tokens and GPU type in both runs",),
        figures=(
            ("GPU-days on 4 GPUs", days_small * gpus_small, "GPU-days"),
            ("GPU-days on 32 GPUs", days_large * gpus_large, "GPU-days"),
            ("per-GPU throughput ratio needed", rel, "x"),
        ),
    )
