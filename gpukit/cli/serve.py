"""`gpukit serve`: memory, TTFT, ITL, throughput, replicas for a rate and cost: a view over gpukit.inference."""

from __future__ import annotations

import contextlib
import signal

from gpukit.cli import add_json_flag
from gpukit.cli.argtypes import positive_float, positive_int, price, timeout
from gpukit.cli.model_args import add_model_args, model_from_args
from gpukit.inference import KV_DTYPES, PRECISIONS

DEFAULT_TIMEOUT_S = (
    600.0  # the largest simulation gpukit accepts (MAX_SIM_TOKENS at batch 1) takes about 2 min
)


class ServeTimeout(ValueError):
    """`gpukit serve` ran past --timeout: one line, exit 2 (the CLI's ValueError contract)."""


@contextlib.contextmanager
def wall_clock_limit(seconds: float | None):
    """Raise ServeTimeout in the main thread once `seconds` of wall clock have passed (SIGALRM through
    setitimer: the simulation is pure Python, so the signal lands between bytecodes). No limit where
    the platform has no SIGALRM (Windows) or when called off the main thread."""
    if not seconds or not hasattr(signal, "setitimer"):
        yield
        return

    def _expired(signum, frame):
        raise ServeTimeout(
            f"serve ran past --timeout {seconds:g} s (the --rate simulation is the slow part: "
            "lower --simulate-requests or raise --timeout)"
        )

    try:
        old = signal.signal(signal.SIGALRM, _expired)
    except ValueError:  # not the main thread: no signals
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _serve(args):
    # everything the run imports is imported before the alarm is armed: the signal then lands only in
    # the pure-Python simulation, never inside an import (issue 25; validate memory, which imports torch
    # inside its work, uses gpukit.bench.timing.run_with_watchdog instead)
    import simpy  # noqa: F401

    import gpukit.inference  # noqa: F401

    with wall_clock_limit(args.timeout):
        return _serve_plan(args)


def _serve_plan(args):
    from gpukit.catalog import get_gpu, get_interconnect
    from gpukit.errors import named_field
    from gpukit.inference import Assumptions, default_tp, serve

    # the shared model flags (cli/model_args.py); a custom shape's window covers the request
    asked = max(args.context or 0, (args.input_tokens or 0) + (args.output_tokens or 0))
    model, gpu = model_from_args(args, longest_seq=asked).model, get_gpu(args.gpu)
    # which of the two link flags holds a typo is named (named_field)
    link = named_field("--link", get_interconnect, args.link) if args.link is not None else None
    inter = (
        named_field("--inter-link", get_interconnect, args.inter_link)
        if args.inter_link is not None
        else None
    )
    # a flag that would change nothing is an error (docs/CONTRACTS.md): the layout is gpus = tp x pp
    gpus = args.gpus or args.tp or 1
    tp = args.tp if args.tp is not None else default_tp(model, gpus)  # the tp serve() will pick
    if link is not None and tp == 1:
        raise ValueError(
            "--link is the link of the tensor-parallel all-reduces: it needs tp 2 or more, and tp is 1 "
            "here (given, or the default: the largest that divides --gpus and the heads)"
        )
    if inter is not None and gpus <= tp:
        raise ValueError(
            "--inter-link is the link between pipeline stages: it needs --gpus above --tp (pp = gpus / tp)"
        )
    if args.simulate_requests is not None and args.rate is None:
        raise ValueError("--simulate-requests sizes the queueing simulation of --rate: give --rate")
    a = Assumptions(
        hbm_share=args.hbm_share,
        flops_share=args.flops_share,
        reserve_fraction=args.reserve,
        non_gpu_s=args.non_gpu_ms / 1e3 if args.non_gpu_ms else 0.0,
    )
    return serve(
        model,
        gpu,
        gpus=args.gpus,
        tp=args.tp,
        precision=args.precision,
        kv_dtype=args.kv_dtype,
        batch=args.batch,
        context=args.context,
        input_tokens=args.input_tokens,
        output_tokens=args.output_tokens,
        rate=args.rate,
        price_per_gpu_hour=args.price_per_gpu_hour,
        link=link,
        pp_link=inter,
        assumptions=a,
        simulate_requests=400 if args.simulate_requests is None else args.simulate_requests,
        max_batch=args.max_batch,
        ep=args.ep,
    )


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve a model: memory, TTFT, ITL, tokens/s, replicas for a rate, cost",
        description="Prefill and decode on the roofline with stated shares of peak, KV cache, "
        "tensor/pipeline parallelism, replicas and a continuous-batching simulation "
        "(gpukit.inference).",
    )
    add_model_args(p)
    p.add_argument("--gpu", required=True, help="a GPU from `gpukit gpus`")
    p.add_argument("--gpus", type=positive_int, help="GPUs per replica = tp x pp (default: tp)")
    p.add_argument("--tp", type=positive_int, help="tensor-parallel degree (default: min(gpus, 8))")
    p.add_argument(
        "--link",
        help="link of the tensor-parallel all-reduces (`gpukit links`; default: the GPU's "
        "NVLink, else its PCIe)",
    )
    p.add_argument(
        "--inter-link",
        help="link between pipeline stages (default: the node's NVLink/PCIe when the replica fits "
        "one node of 8, else one InfiniBand port per GPU of its era)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=None,
        help="weight precision (default bf16, fp16 on GPUs without bf16; mxfp4: the MLP/experts in MXFP4, "
        "the rest bf16, as gpt-oss ships)",
    )
    p.add_argument(
        "--kv-dtype",
        choices=KV_DTYPES,
        help="KV-cache dtype (default: fp8 beside fp8 weights on a GPU with fp8, else bf16; fp16 without bf16)",
    )
    p.add_argument("--batch", type=positive_int, default=1, help="sequences decoded together (default 1)")
    p.add_argument(
        "--max-batch",
        type=positive_int,
        help="the engine's batch cap, vLLM max_num_seqs (default: vLLM's for the GPU, 1024 on >= 70 GiB "
        "parts other than the A100, else 256)",
    )
    p.add_argument(
        "--ep",
        type=positive_int,
        default=1,
        help="expert parallelism of a mixture of experts: divides tp and the experts (default 1)",
    )
    p.add_argument("--context", type=positive_int, help="KV tokens per sequence (default input + output)")
    p.add_argument(
        "--input-tokens",
        type=positive_int,
        default=None,
        help="prompt tokens (default 1000, less when that and the output do not fit the model's context)",
    )
    p.add_argument(
        "--output-tokens",
        type=positive_int,
        default=None,
        help="generated tokens (default 200, less for a context under 1000 tokens)",
    )
    p.add_argument(
        "--rate", type=positive_float, help="requests per second to serve: replicas and p50/p99 latency"
    )
    p.add_argument(
        "--price-per-gpu-hour", type=price, help="USD per GPU-hour: cost per million output tokens"
    )
    p.add_argument(
        "--hbm-share",
        type=positive_float,
        default=0.65,
        help="assumed share of HBM bandwidth reached in decode, in (0, 1] (default 0.65)",
    )
    p.add_argument(
        "--flops-share",
        type=positive_float,
        default=0.5,
        help="assumed share of the dense peak reached in prefill, in (0, 1] (default 0.5)",
    )
    p.add_argument(
        "--reserve",
        type=positive_float,
        default=0.9,
        help="share of GPU memory the engine pre-allocates (vLLM gpu_memory_utilization, default 0.9)",
    )
    p.add_argument("--non-gpu-ms", type=positive_float, help="per-request time outside the GPUs, ms")
    p.add_argument(
        "--simulate-requests",
        type=positive_int,
        help="requests in the queueing simulation with --rate (default 400, at most 100,000)",
    )
    p.add_argument(
        "--timeout",
        type=timeout,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds before giving up with one line and exit 2 (default {DEFAULT_TIMEOUT_S:g})",
    )
    add_json_flag(p)
    p.set_defaults(func=_serve)
