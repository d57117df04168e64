"""Expert-parallel all-to-all measured on local ranks (gloo on CPU, labelled CPU): a small MoE layer's
dispatch and combine with torch.distributed.all_to_all_single, its bytes counted from the tensors sent
and its time set beside gpukit.comm's prediction.

Each rank holds `tokens` tokens of width `hidden`, routes each to `top_k` of `n_experts` experts
(n_experts / ep on each rank; ep = the number of ranks), sorts the token copies by the rank that owns
their expert and exchanges them (dispatch), applies its experts (a per-expert scale: the traffic, not
the MLP, is measured here), and sends the results back (combine). Routing:
- "balanced": copy j of token t goes to expert (t x top_k + j) mod n_experts: every expert gets the
  same number of copies (the balance that aux-loss / bias balancing aims at, DeepSeek-V3 sec. 2.1.2);
- "topk": top_k of a random router's logits (softmax gate): real, uneven splits.
Bytes: the dispatch send buffer is tokens x top_k x hidden x dtype (gpukit.comm.ep_dispatch_bytes) on
every routing; the bytes leaving the rank are the copies routed to other ranks: (ep-1)/ep of it under
balanced routing (gpukit.comm.ep_leaving_bytes). The combine's result is checked against the
unsplit computation (each token's weighted sum over its experts).

Time: the loopback link is measured in the same run the way the collectives bench calibrates it (an
all_reduce sweep fitted with gpukit.comm.fit_alpha_beta, `gpukit calibrate`'s loopback-gloo link),
then gpukit.comm.collective_time("all_to_all", buffer, ep, that fit) predicts one all-to-all.
Everything runs through gpukit.bench.launch.spawn (timeout, clean-up). Used in:
tests/test_ep_measured.py; `python -m gpukit.bench.ep_alltoall`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gpukit.bench.timing import percentile

ROUTINGS = ("balanced", "topk")
LINK_SIZES = "256K,1M,4M,16M"  # the all_reduce sweep that calibrates the loopback link


def route(tokens: int, hidden: int, top_k: int, n_experts: int, routing: str, seed: int):
    """(x, expert ids [tokens, top_k], gate weights [tokens, top_k]) for one rank's tokens."""
    import torch

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, hidden, generator=g)
    if routing == "balanced":
        ids = (torch.arange(tokens).unsqueeze(1) * top_k + torch.arange(top_k)) % n_experts
        w = torch.full((tokens, top_k), 1.0 / top_k)
    else:
        logits = torch.randn(tokens, n_experts, generator=g)
        w, ids = torch.softmax(logits, dim=-1).topk(top_k, dim=-1)
    return x, ids, w


def ep_body(cfg: dict) -> dict:
    """One rank: route, dispatch, scale, combine; count bytes; time the all-to-alls; fit the link."""
    import torch
    import torch.distributed as dist

    from gpukit.bench.ranks import rank_env, rank_max

    rank, ep = dist.get_rank(), dist.get_world_size()
    T, H, k, E = cfg["tokens"], cfg["hidden"], cfg["top_k"], cfg["n_experts"]
    per_rank = E // ep
    x, ids, w = route(T, H, k, E, cfg["routing"], seed=1000 + rank)
    flat = ids.reshape(-1)  # copy c = t*k + j
    dest = flat // per_rank
    order = torch.argsort(dest, stable=True)
    send = x.repeat_interleave(k, dim=0)[order].contiguous()  # token copies, grouped by destination
    in_splits = torch.bincount(dest, minlength=ep)
    out_splits = torch.empty_like(in_splits)
    dist.all_to_all_single(out_splits, in_splits)  # the split sizes themselves (not timed, not counted)
    ins, outs = in_splits.tolist(), out_splits.tolist()
    sent_experts = flat[order].contiguous()
    recv_experts = torch.empty(sum(outs), dtype=sent_experts.dtype)
    dist.all_to_all_single(recv_experts, sent_experts, outs, ins)  # which expert each received copy wants
    scale = 1.0 + torch.arange(E, dtype=x.dtype) / E  # expert e multiplies by scale[e]

    recv = torch.empty(sum(outs), H, dtype=x.dtype)
    back = torch.empty_like(send)

    def step():
        dist.all_to_all_single(recv, send, outs, ins)  # dispatch
        y = recv * scale[recv_experts].unsqueeze(1)  # the experts
        dist.all_to_all_single(back, y, ins, outs)  # combine
        return y

    step()
    # the combine's result against the unsplit computation
    unsorted = torch.empty_like(back)
    unsorted[order] = back
    y_tok = (unsorted.view(T, k, H) * w.unsqueeze(-1)).sum(1)
    ref = (x.unsqueeze(1) * scale[ids].unsqueeze(-1) * w.unsqueeze(-1)).sum(1)
    max_err = float((y_tok - ref).abs().max())
    elem = x.element_size()
    buffer_bytes = send.numel() * elem  # what all_to_all_single was handed
    leaving_bytes = sum(n for r, n in enumerate(ins) if r != rank) * H * elem
    received_bytes = sum(n for r, n in enumerate(outs) if r != rank) * H * elem
    # time, interleaved (one repeat of every timed op, then the next repeat: a burst of load from other
    # processes costs each op one sample): the dispatch alone (one all-to-all) and the all_reduce sweep
    # that calibrates the loopback link (the collectives bench's op, `gpukit calibrate`'s loopback-gloo)
    ops = [("dispatch", lambda: dist.all_to_all_single(recv, send, outs, ins))]
    for size in cfg["link_sizes"]:
        buf = torch.zeros(max(1, size // elem))
        ops.append((size, lambda b=buf: dist.all_reduce(b)))
    samples: dict = {name: [] for name, _ in ops}
    for _, fn in ops:
        for _ in range(cfg["warmup"]):
            fn()
    for _ in range(cfg["repeats"]):
        for name, fn in ops:
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(cfg["iters"]):
                fn()
            samples[name].append((time.perf_counter() - t0) / cfg["iters"])
    med = {name: rank_max(percentile(v, 50), "cpu") for name, v in samples.items()}
    a2a_s = med.pop("dispatch")
    rows = [{"size_bytes": size, "time_us": t * 1e6} for size, t in med.items()]
    per_rank_leaving = [0.0] * ep
    per_rank_leaving[rank] = float(leaving_bytes)
    t = torch.tensor(per_rank_leaving, dtype=torch.float64)
    dist.all_reduce(t)
    return {
        "env": rank_env(cfg | {"op": "all_to_all"}),
        "rank0": {
            "in_splits": ins,
            "out_splits": outs,
            "buffer_bytes": buffer_bytes,
            "leaving_bytes": leaving_bytes,
            "received_bytes": received_bytes,
        },
        "leaving_bytes_per_rank": t.tolist(),
        "max_abs_error": rank_max(max_err, "cpu"),
        "all_to_all_s": a2a_s,
        "link_rows": rows,
        "element_bytes": elem,
    }


def run_ep_alltoall(
    *,
    tokens: int = 4096,
    hidden: int = 256,
    top_k: int = 2,
    n_experts: int = 8,
    n_ranks: int = 2,
    routing: str = "balanced",
    iters: int = 10,
    warmup: int = 3,
    repeats: int = 7,
    timeout_s: float = 120,
) -> dict:
    """Spawn `n_ranks` gloo ranks (CPU), run one MoE layer's dispatch/combine; return measured bytes and
    time beside the formulas (gpukit.comm.ep_dispatch_bytes / ep_leaving_bytes / collective_time over
    the loopback link fitted in the same run). ValueError for bad input, TimeoutError after timeout_s."""
    from gpukit.bench.launch import spawn
    from gpukit.comm import collective_time, ep_dispatch_bytes, ep_leaving_bytes, fit_alpha_beta
    from gpukit.errors import require_choice, require_positive_int, require_timeout

    for name, v in (("tokens", tokens), ("hidden", hidden), ("top_k", top_k), ("n_experts", n_experts)):
        require_positive_int(name, v)
    for name, v in (("iters", iters), ("repeats", repeats)):
        require_positive_int(name, v)
    require_positive_int("warmup", warmup, allow_zero=True)
    n_ranks = require_positive_int("n_ranks", n_ranks)
    if n_ranks < 2:
        raise ValueError(f"n_ranks must be >= 2 (an all-to-all over one rank moves nothing), got {n_ranks}")
    if n_experts % n_ranks:
        raise ValueError(f"n_experts must be a multiple of n_ranks (ep) {n_ranks}, got {n_experts}")
    if top_k > n_experts:
        raise ValueError(f"top_k must be at most n_experts {n_experts}, got {top_k}")
    require_choice("routing", routing, ROUTINGS)
    timeout_s = require_timeout("timeout_s", timeout_s)
    from gpukit.units import parse_sizes

    cfg = {
        "tokens": tokens,
        "hidden": hidden,
        "top_k": top_k,
        "n_experts": n_experts,
        "routing": routing,
        "iters": iters,
        "warmup": warmup,
        "repeats": repeats,
        "link_sizes": parse_sizes(LINK_SIZES),
        "backend": "gloo",
        "device": "cpu",
        "threads": 1,
        "timeout_s": timeout_s,
        "launcher": "spawn",
    }
    p = spawn(ep_body, cfg, n_ranks, timeout_s)
    elem = p["element_bytes"]
    buf = ep_dispatch_bytes(tokens, hidden, top_k, elem)
    fit = fit_alpha_beta(
        [r["size_bytes"] for r in p["link_rows"]],
        [r["time_us"] / 1e6 for r in p["link_rows"]],
        "all_reduce",
        n_ranks,
    )
    pred = collective_time("all_to_all", buf, n_ranks, fit)
    measured = p["all_to_all_s"]
    return {
        "label": "CPU: gloo on loopback, 2 shared cores (not a GPU figure)",
        "config": {k: cfg[k] for k in ("tokens", "hidden", "top_k", "n_experts", "routing")}
        | {"ep": n_ranks},
        "measured": p["rank0"] | {"leaving_bytes_per_rank": p["leaving_bytes_per_rank"]},
        "formula": {"buffer_bytes": buf, "leaving_bytes": ep_leaving_bytes(buf, n_ranks)},
        "combine_max_abs_error": p["max_abs_error"],
        "link": {
            "alpha_us": fit.alpha_us,
            "beta_gbps": fit.beta_gbps,
            "r2": fit.r2,
            "fitted_on": "all_reduce",
        },
        "all_to_all_measured_s": measured,
        "all_to_all_predicted_s": pred.time_s,
        "time_ratio": measured / pred.time_s,
        "env": p["env"],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m gpukit.bench.ep_alltoall", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--top-k", dest="top_k", type=int, default=2)
    ap.add_argument("--experts", dest="n_experts", type=int, default=8)
    ap.add_argument("--ranks", dest="n_ranks", type=int, default=2)
    ap.add_argument("--routing", choices=ROUTINGS, default="balanced")
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args(argv)
    try:
        r = run_ep_alltoall(
            tokens=a.tokens,
            hidden=a.hidden,
            top_k=a.top_k,
            n_experts=a.n_experts,
            n_ranks=a.n_ranks,
            routing=a.routing,
            timeout_s=a.timeout,
        )
    except (ValueError, TimeoutError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(r, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
