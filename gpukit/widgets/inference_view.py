"""Notebook 07's view: model, GPU, precision, context, request rate -> GPUs, latency, cost.

`serving_choice(model, gpu, precision, context, rate, price)` is a pure function over
gpukit.inference: it finds the smallest tensor-parallel instance that fits (tp inside a node, then
pipeline stages), sizes replicas for the rate, and simulates the latency percentiles. `serving_view()`
wraps it in a View (a bad value, e.g. a context above the model's max_seq, shows one error line).
Used in: notebooks/07_inference.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit import inference as inf
from gpukit.catalog import get_gpu, get_model, gpus, models
from gpukit.errors import require_positive, require_positive_int
from gpukit.widgets.base import View, dropdown, number, slider

CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)


def model_options() -> list[str]:
    """Decoder models of gpukit/data/models.csv (what the dropdown lists)."""
    return [n for n, m in models().items() if m.arch == "decoder"]


def gpu_options() -> list[str]:
    return list(gpus())


@dataclass(frozen=True)
class ServingChoice:
    """The layout chosen for a model/GPU/context/rate and what it gives."""

    plan: inf.ServePlan
    tp: int
    pp: int

    @property
    def gpus(self) -> int:
        return self.plan.gpus

    def to_frame(self):
        import pandas as pd

        p = self.plan
        rows = [
            ("GPUs per replica (tp x pp)", f"{p.tp} x {p.pp}"),
            ("replicas", p.replicas),
            ("GPUs in all", p.gpus),
            ("memory per GPU (GiB)", round(p.memory.total_bytes / 2**30, 1)),
            ("max batch", p.max_batch),
            ("TTFT (ms)", round(p.ttft_s * 1e3, 1)),
            ("ITL (ms)", round(p.itl_s * 1e3, 2)),
            ("tokens/s per user", round(p.decode_tokens_per_s, 1)),
        ]
        if p.simulation is not None:
            rows += [
                ("p50 latency (s)", round(p.simulation.p50_latency_s, 2)),
                ("p99 latency (s)", round(p.simulation.p99_latency_s, 2)),
            ]
        if p.cost_per_million_tokens_usd is not None:
            rows.append(("USD per million output tokens", round(p.cost_per_million_tokens_usd, 3)))
        return pd.DataFrame(rows, columns=["quantity", "value"])


def serving_choice(
    model: str = "llama-3-8b",
    gpu: str = "h100-sxm",
    precision: str = "bf16",
    context: int = 4096,
    rate: float = 10.0,
    price: float = 3.0,
    output_tokens: int = 200,
    simulate_requests: int = 200,
) -> ServingChoice:
    """Smallest instance that fits (gpukit.inference.min_gpus_to_fit), then replicas for `rate` req/s
    with prompts of context - output_tokens tokens, simulated p50/p99, cost at `price` USD/GPU-hour."""
    m, g = get_model(model), get_gpu(gpu)
    context = require_positive_int("context", context)
    if context > m.max_seq:
        raise ValueError(f"context must be <= {model}'s max_seq {m.max_seq}, got {context}")
    rate = require_positive("rate", rate)
    output_tokens = require_positive_int("output_tokens", output_tokens)
    if output_tokens >= context:
        raise ValueError(f"context must be > output_tokens {output_tokens}, got {context}")
    tp, pp = inf.min_gpus_to_fit(m, g, precision, context=context, batch=4)
    plan = inf.serve(
        m,
        g,
        gpus=tp * pp,
        tp=tp,
        precision=precision,
        input_tokens=context - output_tokens,
        output_tokens=output_tokens,
        rate=rate,
        price_per_gpu_hour=price,
        simulate_requests=simulate_requests,
    )
    return ServingChoice(plan=plan, tp=tp, pp=pp)


def serving_view(**defaults) -> View:
    """The widget: model, GPU, precision, context, rate, price, output tokens -> GPUs, latency, cost (a table)."""
    d = dict(
        model="llama-3-8b",
        gpu="h100-sxm",
        precision="bf16",
        context=4096,
        rate=10.0,
        price=3.0,
        output_tokens=200,
    )
    d.update(defaults)
    controls = {
        "model": dropdown("model", model_options(), d["model"]),
        "gpu": dropdown("GPU", gpu_options(), d["gpu"]),
        "precision": dropdown("precision", inf.PRECISIONS, d["precision"]),
        "context": dropdown("context (tokens)", CONTEXTS, d["context"]),
        "rate": slider("rate (req/s)", 0.1, 1000, d["rate"], log=True),
        "price": number("USD per GPU-hour", d["price"]),
        "output_tokens": slider("output tokens", 16, 2048, d["output_tokens"], step=16, integer=True),
    }
    return View(serving_choice, controls, title="How many GPUs, what latency, what cost?")
