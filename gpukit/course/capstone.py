"""Notebook 09's capstone: five realistic scenarios, each a planner call, and the answer a learner's
exercise is checked against (`expected(key)`), computed by the same call, never typed in.

Used in: notebooks/09_decide (nbtools.check_answer(answer, capstone.expected("qlora_mistral"))).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.catalog import get_model
from gpukit.plan import PlanResult, plan


@dataclass(frozen=True)
class Scenario:
    key: str
    story: str  # what the learner reads
    question: str  # what the exercise asks (a number)
    unit: str
    kwargs: dict
    answer_field: str  # the plan's field that answers the question

    def run(self) -> PlanResult:
        kw = dict(self.kwargs)
        return plan(kw.pop("workload"), get_model(kw.pop("model")), **kw)


SCENARIOS = (
    Scenario(
        "qlora_mistral",
        "A support team wants Mistral 7B to follow their tone: QLoRA on 50M tokens of tickets, "
        "done by tomorrow (24 h), for at most $100, on any priced GPU.",
        "How many GPUs does the planner recommend?",
        "GPUs",
        dict(workload="qlora", model="mistral-7b", tokens=50e6, deadline_hours=24, budget_usd=100),
        "gpus",
    ),
    Scenario(
        "pretrain_1b",
        "A research lab pretrains a 1.3B model compute-optimally (20 tokens per parameter, 26B "
        "tokens) on H100s and needs it within 48 hours.",
        "What does the recommended plan cost, in USD?",
        "USD",
        dict(workload="pretrain", model="opt-1.3b", tokens=26e9, deadline_hours=48, gpus=["h100-sxm"]),
        "cost_usd",
    ),
    Scenario(
        "serve_llama3",
        "A product serves Llama 3 8B to 20 requests per second (512 prompt tokens, 256 generated).",
        "What does the recommended plan cost per million generated tokens, in USD?",
        "USD",
        dict(workload="serve", model="llama-3-8b", rate=20, input_tokens=512, output_tokens=256),
        "usd_per_million_tokens",
    ),
    Scenario(
        "pretrain_70b",
        "A company pretrains a 70B model compute-optimally (1.4T tokens) on H100s with InfiniBand, in 45 days.",
        "How many H100s does the recommended plan use?",
        "GPUs",
        dict(
            workload="pretrain", model="llama-2-70b", tokens=1.4e12, deadline_hours=45 * 24, gpus=["h100-sxm"]
        ),
        "gpus",
    ),
    Scenario(
        "input_bound",
        "A startup trains a 1.3B model on 26B tokens on A100 80GB, but its data loader delivers "
        "only 41,600 tokens/s in total (article 000's '32 GPUs, 2x'); it needs the model within 200 hours.",
        "How many GPUs does the planner recommend?",
        "GPUs",
        dict(
            workload="pretrain",
            model="opt-1.3b",
            tokens=26e9,
            gpus={"a100-80gb": 1.89},
            counts=(1, 2, 4, 8, 16, 32),
            loader_tokens_per_s=41_600,
            deadline_hours=200,
        ),
        "gpus",
    ),
)
_BY_KEY = {s.key: s for s in SCENARIOS}


def scenario(key: str) -> Scenario:
    if key not in _BY_KEY:
        raise ValueError(f"scenario must be one of {', '.join(_BY_KEY)}; got {key!r}")
    return _BY_KEY[key]


def expected(key: str) -> float:
    """The planner's answer to scenario `key`'s question (its recommended plan's field)."""
    s = scenario(key)
    best = s.run().best
    if best is None:
        raise ValueError(f"scenario {key}: the planner found no feasible plan (prices or catalog changed?)")
    return float(getattr(best, s.answer_field))
