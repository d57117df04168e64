"""Continuous batching of one serving replica, simulated (simpy): latency percentiles against load.

Pure calculator: `simulate` takes the step times as functions (gpukit.inference supplies them from
the roofline) and returns a frozen SimResult. Iteration-level scheduling after Orca (Yu et al. 2022)
and vLLM's scheduler; the discrete-event engine is simpy (a well-kept library, not a hand-written
event loop). Used in: gpukit.inference.capacity (serve, load_sweep), gpukit.inference.published, notebook 07.
"""

from __future__ import annotations

import functools
import heapq
import random
from array import array
from collections import deque
from dataclasses import asdict, dataclass

from gpukit.errors import require_positive, require_positive_int
from gpukit.results import json_safe
from gpukit.timing_stats import percentile

MAX_TOKENS_PER_STEP = 8192  # tokens one iteration may prefill: TensorRT-LLM's default max_num_tokens
# 100,000 requests of 200 output tokens: about 6 s of simulation on one busy core (16 s before the
# iteration bookkeeping became O(finishing requests), issue 25)
MAX_REQUESTS = 100_000
# slowest open-loop arrival rate: one request in about 11.6 days. The clock is absolute seconds (a
# float), so 400 arrivals at 1e-300 req/s sit near t = 4e302, where adding a request's 1.4 s changes
# nothing: every latency came out 0 s. At 1e-6 req/s the clock still resolves microseconds.
MIN_RATE = 1e-6
# decoded tokens one simulation may owe (n_requests x output_tokens): with O(1) work per iteration plus
# O(log batch) per finishing request: 4 x 10^7 tokens (400 requests x 100,000) take under a second at
# batch 100, 5 x 10^7 at batch 1 (5 x 10^7 iterations, about 2.6 us each) about 2 minutes on one busy core
MAX_SIM_TOKENS = 5 * 10**7
MEMO_ENTRIES = 1 << 16  # step-time memo entries kept (an LRU cache: bounded memory, however long the output)


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


def check_work(n_requests: int, output_tokens: int) -> None:
    """The simulation's size: at most MAX_SIM_TOKENS decoded tokens (n_requests x output_tokens),
    checked before any work (ValueError naming both fields and the limit)."""
    if n_requests * output_tokens > MAX_SIM_TOKENS:
        raise ValueError(
            f"n_requests (serve: simulate_requests) x output_tokens must be <= {MAX_SIM_TOKENS:,} decoded "
            f"tokens to simulate, got {n_requests:,} x {output_tokens:,} = {n_requests * output_tokens:,} "
            "(simulate fewer requests)"
        )


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
        return json_safe(asdict(self))


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
    check_work(n_requests, o)
    # bounded memos: a long output visits up to max_batch x (input + output) (batch, context) pairs
    decode_time = functools.lru_cache(maxsize=MEMO_ENTRIES)(decode_time)
    prefill_time = functools.lru_cache(maxsize=MEMO_ENTRIES)(prefill_time)
    rng = random.Random(seed)
    env = simpy.Environment()
    # per request: arrival, first token and last token times (three floats, at most MAX_REQUESTS of
    # each: memory bounded by the request count, not by the number of iterations)
    t0, first, t1 = (
        array("d", bytes(8 * n_requests)),
        array("d", bytes(8 * n_requests)),
        array("d", bytes(8 * n_requests)),
    )
    waiting: deque = deque()  # (id, completion event or None)
    # running requests as a heap of (step at which the last token is decoded, id, event): an
    # iteration costs O(finishing requests), not O(batch), and `left` = finish - step for each
    running: list = []
    state = {"step": 0, "finish_sum": 0, "done": 0, "batch_sum": 0, "iterations": 0, "admitted": 0}
    wake = {"ev": env.event()}
    census = {}

    def _finish(k, ev, now):
        t1[k] = now
        state["done"] += 1
        if ev is not None:
            ev.succeed()

    def arrivals():
        for k in range(n_requests):
            yield env.timeout(rng.expovariate(rate))
            t0[k] = env.now
            waiting.append((k, None))
            if k in (n_requests // 2, n_requests - 1):
                census[k] = len(waiting) + len(running)
            if not wake["ev"].triggered:
                wake["ev"].succeed()

    def engine():
        while state["done"] < n_requests:
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
                new.append(waiting.popleft())
            if new:
                yield env.timeout(prefill_time(len(new)))
                for k, ev in new:
                    first[k] = env.now
                    if o > 1:  # the prefill yields the first token; o - 1 decode steps remain
                        fin = state["step"] + o - 1
                        state["admitted"] += 1  # ties leave in admission order
                        heapq.heappush(running, (fin, state["admitted"], k, ev))
                        state["finish_sum"] += fin
                    else:
                        _finish(k, ev, env.now)
            if running:
                n, step = len(running), state["step"]
                left_sum = state["finish_sum"] - n * step  # the tokens the running requests still owe
                ctx = i + o - left_sum // n
                state["batch_sum"] += n
                state["iterations"] += 1
                yield env.timeout(decode_time(n, max(1, ctx)))
                state["step"] = step = step + 1
                while running and running[0][0] <= step:
                    fin, _, k, ev = heapq.heappop(running)
                    state["finish_sum"] -= fin
                    _finish(k, ev, env.now)

    # clients start staggered over one unloaded request time (a benchmark's ramp-up): clients that all
    # start at once stay in lock-step, every prefill waiting for all the others
    one = prefill_time(1) + (o - 1) * decode_time(1, i + o // 2) if concurrency else 0.0

    def client(c):
        yield env.timeout(c * one / concurrency)
        k = c
        while k < n_requests:
            ev = env.event()
            t0[k] = env.now
            waiting.append((k, ev))
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
    kept = range(n_requests // 10, n_requests)
    lat = [t1[k] - t0[k] + non_gpu_s for k in kept]
    ttft = [first[k] - t0[k] + non_gpu_s for k in kept]
    itl = [(t1[k] - first[k]) / (o - 1) for k in kept] if o > 1 else [0.0]
    span = max(t1[k] for k in kept) - min(t0[k] for k in kept)
    mid, end = census.get(n_requests // 2, 0), census.get(n_requests - 1, 0)
    if concurrency is not None:
        rate = len(kept) / span
    return SimResult(
        rate=rate,
        completed=state["done"],
        p50_latency_s=percentile(lat, 50),
        p99_latency_s=percentile(lat, 99),
        p50_ttft_s=percentile(ttft, 50),
        p99_ttft_s=percentile(ttft, 99),
        mean_itl_s=sum(itl) / len(itl),
        mean_batch=state["batch_sum"] / max(1, state["iterations"]),
        throughput_req_per_s=len(kept) / span,
        in_system_mid=mid,
        in_system_end=end,
        saturated=bool(concurrency is None and end > 1.25 * mid + 2),
    )
