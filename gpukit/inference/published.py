"""gpukit.inference against published serving measurements (gpukit/data/serving_published.csv) and the
published ordering of tensor parallelism against replicas.

Each row is one published figure with its hardware, model, precision, lengths, concurrency and
source; its notes may name engine facts the prediction applies (fp8_kv_cache, gqa_kv_reuse=false).
Used in: notebook 07, gpukit.cli.benchreport (make bench), tests/test_inference.py.
"""

from __future__ import annotations

from dataclasses import replace

from gpukit.catalog import as_gpu, as_model, data_dir, get_gpu, get_model, read_csv
from gpukit.errors import require_choice
from gpukit.inference.capacity import (
    TRTLLM_MAX_BATCH_SIZE,
    TRTLLM_MAX_NUM_TOKENS,
    default_link,
    serve,
    tp_vs_replicas,
)
from gpukit.inference.serving import Assumptions, decode_step, prefill_step
from gpukit.inference.simulate import simulate
from gpukit.specs import ModelSpec

PUBLISHED_FILE = "serving_published.csv"
TP_ORDERING_SOURCE = (
    "NVIDIA NIM for LLMs, Optimization: 'latency variants use additional GPUs to decrease request "
    "latency at the cost of decreased total throughput per GPU relative to the throughput variant'",
    "https://docs.nvidia.com/nim/large-language-models/latest/optimization.html",
)


def published_serving() -> list[dict]:
    """Rows of gpukit/data/serving_published.csv (published serving measurements, each with its source)."""
    return read_csv(
        data_dir() / PUBLISHED_FILE,
        (
            "model",
            "gpu",
            "n_gpus",
            "tp",
            "precision",
            "input_tokens",
            "output_tokens",
            "concurrency",
            "metric",
            "value",
            "unit",
        ),
    )


def predict_published(
    row: dict,
    assumptions: Assumptions = Assumptions(),
    n_requests: int | None = None,
    engine_notes: bool = True,
    max_batch: int | None = None,
    kv_dtype: str | None = None,
) -> float:
    """gpukit's prediction of one published row, in the row's unit (ms or tokens/s). Concurrency 1:
    the analytic TTFT/ITL; more clients: the closed-loop simulation (`simulate(concurrency=...)`);
    throughput_static: a static batch of `concurrency` sequences (prefill, then O decode steps), per GPU.
    engine_notes: apply what the row's notes say of its engine version (gqa_kv_reuse=false); False
    predicts the row as a current engine would run it (`assumptions` as given).
    throughput_offline: an offline benchmark (every request queued at once: trtllm-bench throughput,
    vLLM benchmark_throughput): total output tokens/s of the replica at capacity (`serve`), under the
    engine's limits, TensorRT-LLM's max_batch_size 2048 and max_num_tokens 8192 (llm_args.py defaults)
    unless `max_batch` is given. kv_dtype: None, the row's notes or the engine default (fp8 beside fp8)."""
    m, g = get_model(row["model"]), get_gpu(row["gpu"])
    tp, n = int(row["tp"]), int(row["n_gpus"])
    i, o, c = int(row["input_tokens"]), int(row["output_tokens"]), int(row["concurrency"])
    metric = require_choice(
        "metric", row["metric"], ("ttft", "itl", "throughput", "throughput_static", "throughput_offline")
    )
    kv = "fp8" if "fp8_kv_cache" in row.get("notes", "") else kv_dtype
    if engine_notes and "gqa_kv_reuse=false" in row.get("notes", ""):  # predates GQA-aware decode kernels
        assumptions = replace(assumptions, gqa_kv_reuse=False)
    if metric == "throughput_static":  # c sequences prefilled together, then decoded together; per GPU
        kw = dict(
            precision=row["precision"], kv_dtype=kv, tp=tp, link=default_link(g, tp), assumptions=assumptions
        )
        t = (
            prefill_step(m, g, prompt_tokens=i, batch=c, **kw).time_s
            + o * decode_step(m, g, batch=c, context=i + (o + 1) // 2, **kw).time_s
        )  # linear in the context
        return c * o / t / n
    if metric == "throughput_offline":  # every request queued at once: the replica at capacity
        p = serve(
            m,
            g,
            gpus=n,
            tp=tp,
            precision=row["precision"],
            kv_dtype=kv,
            input_tokens=i,
            output_tokens=o,
            assumptions=assumptions,
            max_batch=TRTLLM_MAX_BATCH_SIZE if max_batch is None else max_batch,
            batched_tokens=TRTLLM_MAX_NUM_TOKENS,
        )
        return p.max_total_tokens_per_s
    p = serve(
        m,
        g,
        gpus=n,
        tp=tp,
        precision=row["precision"],
        kv_dtype=kv,
        input_tokens=i,
        output_tokens=o,
        assumptions=assumptions,
    )
    if c == 1 and metric != "throughput":
        return 1e3 * (p.ttft_s if metric == "ttft" else p.itl_s)
    kw = p.step_kwargs  # the layout and links serve priced
    s = simulate(
        lambda b, ctx: decode_step(m, g, batch=b, context=ctx, **kw).time_s,
        lambda b: prefill_step(m, g, prompt_tokens=i, batch=b, **kw).time_s,
        rate=0,
        input_tokens=i,
        output_tokens=o,
        max_batch=max(1, p.max_batch),
        n_requests=n_requests or max(40, 8 * c),
        concurrency=c,
    )
    if metric == "ttft":
        return 1e3 * s.p50_ttft_s
    if metric == "itl":
        return 1e3 * s.mean_itl_s
    return s.throughput_req_per_s * o


SHARE_OF_METRIC = {"ttft": "flops_share", "itl": "hbm_share"}  # the metrics one phase dominates


def implied_share(row: dict, assumptions: Assumptions = Assumptions(), lo: float = 0.01) -> float | None:
    """The achievable share (SHARE_OF_METRIC: flops_share for TTFT, the prefill's; hbm_share for
    the inter-token latency, the decode's; None for throughputs, which mix both phases) at which the prediction of `row` equals its published value, the other
    assumptions held: a diagnostic, not a fit (nothing uses it to predict). None when no share in
    [lo, 1] reproduces it: published faster than the model allows at the peak, or slower than it
    allows at `lo` (then the time goes to something the roofline leaves out). Bisection in log space;
    the prediction falls (times) or rises (throughputs) monotonically with the share."""
    field = SHARE_OF_METRIC.get(row["metric"])
    if field is None:
        return None
    pub = float(row["value"])

    def gap(share):  # > 0 while the prediction is slower than published
        return predict_published(row, replace(assumptions, **{field: share})) / pub - 1

    if gap(1.0) > 0 or gap(lo) < 0:
        return None
    a, b = lo, 1.0
    for _ in range(30):
        mid = (a * b) ** 0.5
        a, b = (mid, b) if gap(mid) > 0 else (a, mid)
        if b / a < 1.005:
            break
    return (a * b) ** 0.5


def validate_published(assumptions: Assumptions = Assumptions(), implied: bool = False):
    """Every published row against gpukit's prediction: a DataFrame with error = predicted/published - 1.
    implied: add `implied_share` (`implied_share`, the share that would reproduce the row) and
    `share_field` (which share it is)."""
    import pandas as pd

    rows = []
    for r in published_serving():
        pred = predict_published(r, assumptions)
        pub = float(r["value"])
        rows.append(
            {
                "name": r["name"],
                "model": r["model"],
                "gpu": r["gpu"],
                "tp": int(r["tp"]),
                "precision": r["precision"],
                "input_tokens": int(r["input_tokens"]),
                "output_tokens": int(r["output_tokens"]),
                "concurrency": int(r["concurrency"]),
                "metric": r["metric"],
                "unit": r["unit"],
                "published": pub,
                "predicted": pred,
                "error": pred / pub - 1.0,
                "source_url": r["source_url"],
            }
        )
        if implied:
            rows[-1].update(
                share_field=SHARE_OF_METRIC.get(r["metric"], ""), implied_share=implied_share(r, assumptions)
            )
    return pd.DataFrame(rows)


def tp_ordering(
    model: ModelSpec,
    gpu,
    gpus: int = 8,
    precision: str = "fp8",
    input_tokens: int = 1000,
    output_tokens: int = 200,
    assumptions: Assumptions = Assumptions(),
) -> dict:
    """The published ordering (TP_ORDERING_SOURCE): the throughput variant is the layout with the most
    tokens/s per GPU (for a model that barely fits one GPU that is not tp=1: a full GPU leaves no room
    for the KV cache); every layout with more TP than it has lower latency and lower tokens/s per GPU."""
    model = as_model(model, "model")  # a catalog name too
    gpu = as_gpu(gpu)
    rows = [
        r
        for r in tp_vs_replicas(
            model,
            gpu,
            gpus,
            precision=precision,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            assumptions=assumptions,
        )
        if r.fits
    ]
    if not rows:
        raise ValueError(f"{model.name} fits no layout of {gpus} x {gpu.name} in {precision}")
    best = max(range(len(rows)), key=lambda k: rows[k].tokens_per_s_per_gpu)
    rows = rows[best:]
    lat = [r.itl_s for r in rows]
    per_gpu = [r.tokens_per_s_per_gpu for r in rows]
    return {
        "layouts": [r.layout for r in rows],
        "itl_s": lat,
        "tokens_per_s_per_gpu": per_gpu,
        "latency_falls_with_tp": all(a > b for a, b in zip(lat, lat[1:], strict=False)),
        "per_gpu_throughput_falls_with_tp": all(a > b for a, b in zip(per_gpu, per_gpu[1:], strict=False)),
        "source": TP_ORDERING_SOURCE[0],
        "source_url": TP_ORDERING_SOURCE[1],
    }
