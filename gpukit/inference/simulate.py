"""Continuous batching of one serving replica, simulated (simpy): latency percentiles against load.

Pure calculator: `simulate` takes the step times as functions (gpukit.inference supplies them from
the roofline) and returns a frozen SimResult. Iteration-level scheduling after Orca (Yu et al. 2022)
and vLLM's scheduler; the discrete-event engine is simpy (a well-kept library, not a hand-written
event loop). Used in: gpukit.inference.capacity (serve, load_sweep), gpukit.inference.published, notebook 07.
"""

from __future__ import annotations

import functools
import random
from dataclasses import asdict, dataclass

from gpukit.errors import require_positive, require_positive_int
from gpukit.results import json_safe as _json_safe
from gpukit.timing_stats import percentile

MAX_TOKENS_PER_STEP = 8192  # tokens one iteration may prefill: TensorRT-LLM's default max_num_tokens
# about 0.3 ms of simulation per request on one core here: 100,000 requests take about 30 s
MAX_REQUESTS = 100_000
# slowest open-loop arrival rate: one request in about 11.6 days. The clock is absolute seconds (a
# float), so 400 arrivals at 1e-300 req/s sit near t = 4e302, where adding a request's 1.4 s changes
# nothing: every latency came out 0 s. At 1e-6 req/s the clock still resolves microseconds.
MIN_RATE = 1e-6


def check_rate(name: str, rate) -> float:
    """An open-loop arrival rate for the simulation: finite, >= MIN_RATE req/s (ValueError naming `name`)."""
    rate = require_positive(name, rate)
    if rate < MIN_RATE:
        raise ValueError(
            f"{name} must be >= {MIN_RATE:g} req/s to simulate (one request in about 11.6 days; "
            f"slower arrivals leave the simulated clock no precision for a request's duration), "
            f"got {rate:g}"
        )
    return rate


def check_requests(name: str, n) -> int:
    """A request count for the simulation: a positive integer up to MAX_REQUESTS (ValueError naming `name`)."""
    n = require_positive_int(name, n)
    if n > MAX_REQUESTS:
        raise ValueError(f"{name} must be <= {MAX_REQUESTS:,} (about 30 s of simulation), got {n:,}")
    return n


@dataclass(frozen=True)
class SimResult:
    """Latency percentiles of a continuous-batching replica at one offered load."""

    rate: float
    completed: int
    p50_latency_s: float
    p99_latency_s: float
    p50_ttft_s: float
    p99_ttft_s: float
    mean_itl_s: float
    mean_batch: float
    throughput_req_per_s: float
    in_system_mid: int  # requests waiting or running when half of them had arrived
    in_system_end: int  # ... when the last one arrived
    saturated: (
        bool  # the number in the system keeps growing (end > 1.25 x mid + 2): the queue has no steady state
    )

    def to_json_dict(self) -> dict:
        return _json_safe(asdict(self))


def simulate(
    decode_time,
    prefill_time,
    *,
    rate: float,
    input_tokens: int,
    output_tokens: int,
    max_batch: int,
    n_requests: int = 400,
    seed: int = 0,
    non_gpu_s: float = 0.0,
    concurrency: int | None = None,
    max_tokens_per_step: int = MAX_TOKENS_PER_STEP,
) -> SimResult:
    """Discrete-event simulation (simpy) of one replica with iteration-level continuous batching (Orca,
    Yu et al. 2022; vLLM's scheduler): Poisson arrivals at `rate`; each iteration first admits waiting
    requests while fewer than `max_batch` run (the KV-cache limit) and their prompts fit the step's
    token budget `max_tokens_per_step` (TensorRT-LLM max_num_tokens / vLLM max_num_batched_tokens),
    and runs their prefill together
    (decode waits: prefill-priority scheduling, vLLM's default without chunked prefill), then one
    decode step for every running request. decode_time(batch, context) and prefill_time(n_prompts) give
    seconds. Latency = non_gpu_s + queueing + prefill + decode, per request. With `concurrency` N the
    load is closed-loop instead (N clients, each sends its next request when the last one ends: how
    benchmark tools such as NVIDIA's genai-perf/AIPerf drive a server); `rate` is then ignored.
    decode_time and prefill_time must be pure: each is called once per distinct argument (memoized;
    a closed loop revisits the same batch and mean context thousands of times)."""
    import simpy

    rate = check_rate("rate", rate) if concurrency is None else float(rate or 0.0)
    if concurrency is not None:
        concurrency = require_positive_int("concurrency", concurrency)
    max_batch = require_positive_int("max_batch", max_batch)
    max_tokens_per_step = require_positive_int("max_tokens_per_step", max_tokens_per_step)
    n_requests = check_requests("n_requests", n_requests)
    i, o = (
        require_positive_int("input_tokens", input_tokens),
        require_positive_int("output_tokens", output_tokens),
    )
    decode_time, prefill_time = functools.cache(decode_time), functools.cache(prefill_time)
    rng = random.Random(seed)
    env = simpy.Environment()
    waiting: list[dict] = []
    running: list[dict] = []
    done: list[dict] = []
    wake = {"ev": env.event()}
    batches = []
    census = {}

    def _finish(r, now):
        r["t1"] = now
        if "done" in r:
            r["done"].succeed()

    def arrivals():
        for k in range(n_requests):
            yield env.timeout(rng.expovariate(rate))
            waiting.append({"id": k, "t0": env.now, "left": o})
            if k in (n_requests // 2, n_requests - 1):
                census[k] = len(waiting) + len(running)
            if not wake["ev"].triggered:
                wake["ev"].succeed()

    def engine():
        while len(done) < n_requests:
            if not waiting and not running:
                wake["ev"] = env.event()
                yield wake["ev"]
                continue
            new: list[dict] = []
            # admit while the KV cache has room and the step's token budget holds the prompts (at
            # least one prompt per step, however long: no chunking)
            while (
                waiting
                and len(running) + len(new) < max_batch
                and (not new or (len(new) + 1) * i <= max_tokens_per_step)
            ):
                new.append(waiting.pop(0))
            if new:
                yield env.timeout(prefill_time(len(new)))
                for r in new:
                    r["first"] = env.now
                    r["left"] -= 1  # the prefill yields the first token
                running.extend(r for r in new if r["left"] > 0)
                done.extend(r for r in new if r["left"] <= 0)
                for r in new:
                    if r["left"] <= 0:
                        _finish(r, env.now)
            if running:
                ctx = i + o - sum(r["left"] for r in running) // len(running)
                batches.append(len(running))
                yield env.timeout(decode_time(len(running), max(1, ctx)))
                for r in running:
                    r["left"] -= 1
                    if r["left"] <= 0:
                        _finish(r, env.now)
                done.extend(r for r in running if r["left"] <= 0)
                running[:] = [r for r in running if r["left"] > 0]

    # clients start staggered over one unloaded request time (a benchmark's ramp-up): clients that all
    # start at once stay in lock-step, every prefill waiting for all the others
    one = prefill_time(1) + (o - 1) * decode_time(1, i + o // 2) if concurrency else 0.0

    def client(c):
        yield env.timeout(c * one / concurrency)
        k = c
        while k < n_requests:
            ev = env.event()
            waiting.append({"id": k, "t0": env.now, "left": o, "done": ev})
            if not wake["ev"].triggered:
                wake["ev"].succeed()
            yield ev
            k += concurrency

    if concurrency is None:
        env.process(arrivals())
    else:
        for c in range(concurrency):
            env.process(client(c))
    env.process(engine())
    env.run()
    # drop the first 10% (warm-up: the queue starts empty)
    kept = sorted(done, key=lambda r: r["id"])[n_requests // 10 :]
    lat = [r["t1"] - r["t0"] + non_gpu_s for r in kept]
    ttft = [r["first"] - r["t0"] + non_gpu_s for r in kept]
    itl = [(r["t1"] - r["first"]) / (o - 1) for r in kept] if o > 1 else [0.0]
    span = max(r["t1"] for r in kept) - min(r["t0"] for r in kept)
    mid, end = census.get(n_requests // 2, 0), census.get(n_requests - 1, 0)
    if concurrency is not None:
        rate = len(kept) / span
    return SimResult(
        rate=rate,
        completed=len(done),
        p50_latency_s=percentile(lat, 50),
        p99_latency_s=percentile(lat, 99),
        p50_ttft_s=percentile(ttft, 50),
        p99_ttft_s=percentile(ttft, 99),
        mean_itl_s=sum(itl) / len(itl),
        mean_batch=sum(batches) / max(1, len(batches)),
        throughput_req_per_s=len(kept) / span,
        in_system_mid=mid,
        in_system_end=end,
        saturated=bool(concurrency is None and end > 1.25 * mid + 2),
    )
