"""Context-parallel attention measured on local ranks (gloo on CPU, labelled CPU): torch's own
context_parallel where it runs, else a hand-written ring KV exchange with send/recv, its bytes counted
from the tensors sent against gpukit.comm.cp_kv_block_bytes, its output checked against unsplit
causal attention, and its step time set beside gpukit.comm's send_recv prediction.

1. torch.distributed.tensor.experimental.context_parallel (torch 2.13) is tried first on a CPU
   DeviceMesh. It cannot run here: it shards F.scaled_dot_product_attention through DTensor, and on
   CPU that call dispatches to aten._scaled_dot_product_flash_attention_for_cpu, which has no DTensor
   sharding strategy registered (NotImplementedError); its ring implementations wrap the CUDA
   flash / efficient / cuDNN kernels only. The exact error line is reported (`torch_cp`).
2. The ring, by hand (Liu et al. 2023; Megatron-Core / Transformer Engine's P2P context parallelism):
   the sequence of s tokens is cut into 2 x cp chunks; rank r holds chunks r and 2cp-1-r (causal load
   balancing: equal work per rank). Per layer, cp-1 steps: each rank sends the K and V block in hand
   to rank r+1 and receives one from r-1 (dist.batch_isend_irecv), and attends its queries to the
   block it holds with the causal mask of the global positions, merging blocks with the online
   softmax (running max and sum, FlashAttention's rescaling). Bytes sent per rank per layer (forward):
   (cp-1) x 2 x (s / cp) x kv_heads x head_dim x dtype, exact.
Time: the loopback link is calibrated in the same run with an all_reduce sweep (the collectives
bench's op, fitted with gpukit.comm.fit_alpha_beta), interleaved with the timed ring steps; the
prediction of one step is gpukit.comm.collective_time("send_recv", block, 2, that fit). The backward
ring (K, V and dK, dV: 2x the bytes) is not run here: the formula's factor is Transformer Engine's.
Runs through gpukit.bench.launch.spawn (timeout, clean-up). Used in: tests/test_ep_measured.py;
`python -m gpukit.bench.cp_attention`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from gpukit.bench.timing import percentile

LINK_SIZES = "256K,1M,4M,16M"


def torch_cp_probe(q, k, v) -> str:
    """Try torch's context_parallel on a CPU mesh over the group; '' when it runs, else its error line."""
    import torch.nn.functional as F

    try:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor.experimental import context_parallel

        mesh = init_device_mesh("cpu", (dist.get_world_size(),))
        qq, kk, vv = q.clone(), k.clone(), v.clone()
        with context_parallel(mesh, buffers=[qq, kk, vv], buffer_seq_dims=[2, 2, 2]):
            F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
        return ""
    except Exception as e:  # what torch says, reported verbatim (first line)
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def chunk_positions(rank: int, cp: int, s: int):
    """Global token positions rank `rank` holds: chunks rank and 2cp-1-rank of s / (2cp) tokens."""
    import torch

    c = s // (2 * cp)
    return torch.cat(
        [torch.arange(rank * c, (rank + 1) * c), torch.arange((2 * cp - 1 - rank) * c, (2 * cp - rank) * c)]
    )


def block_attention(q, k, v, q_pos, k_pos, m, denom, acc):
    """Merge one K/V block into the running (max m, sum denom, output acc) of the online softmax."""
    import torch

    scale = q.shape[-1] ** -0.5
    scores = torch.einsum("hqd,hkd->hqk", q, k) * scale
    scores = scores.masked_fill(k_pos[None, None, :] > q_pos[None, :, None], float("-inf"))
    m_new = torch.maximum(m, scores.amax(-1))
    safe = torch.where(torch.isinf(m_new), torch.zeros_like(m_new), m_new)
    p = torch.exp(scores - safe[..., None])
    corr = torch.exp(torch.where(torch.isinf(m), torch.full_like(m, float("-inf")), m) - safe)
    denom = denom * corr + p.sum(-1)
    acc = acc * corr[..., None] + torch.einsum("hqk,hkd->hqd", p, v)
    return m_new, denom, acc


def cp_body(cfg: dict) -> dict:
    """One rank: probe torch's CP, run the ring attention, check it, count bytes, time the steps."""
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F

    from gpukit.bench.ranks import rank_env, rank_max

    rank, cp = dist.get_rank(), dist.get_world_size()
    s, nh, d = cfg["seq_len"], cfg["heads"], cfg["head_dim"]
    g = torch.Generator().manual_seed(7)  # the same full tensors on every rank: the reference is local
    q, k, v = (torch.randn(1, nh, s, d, generator=g) for _ in range(3))
    probe = torch_cp_probe(q, k, v) if cfg.get("probe_torch", True) else "skipped"
    pos = chunk_positions(rank, cp, s)
    q_loc = q[0][:, pos]
    kv = torch.stack([k[0][:, pos], v[0][:, pos]]).contiguous()  # [2, heads, s/cp, d]: what circulates
    elem = kv.element_size()
    nxt, prv = (rank + 1) % cp, (rank - 1) % cp

    spare = torch.empty_like(kv)  # the timed steps receive into one buffer (no allocation in the loop)

    def exchange(block, recv=None):
        recv = torch.empty_like(block) if recv is None else recv
        ops = [dist.P2POp(dist.isend, block, nxt), dist.P2POp(dist.irecv, recv, prv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        return recv

    sent_bytes, steps = 0, 0

    def ring_forward(count: bool):
        nonlocal sent_bytes, steps
        m = torch.full((nh, q_loc.shape[1]), float("-inf"))
        denom = torch.zeros(nh, q_loc.shape[1])
        acc = torch.zeros(nh, q_loc.shape[1], d)
        block, src = kv, rank
        for step in range(cp):
            m, denom, acc = block_attention(
                q_loc, block[0], block[1], pos, chunk_positions(src, cp, s), m, denom, acc
            )
            if step < cp - 1:
                if count:
                    sent_bytes += block.numel() * block.element_size()
                    steps += 1
                block, src = exchange(block), (src - 1) % cp
        return acc / denom[..., None]

    out = ring_forward(count=True)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)[0][:, pos]
    max_err = rank_max(float((out - ref).abs().max()), "cpu")
    # time, interleaved: one ring step's exchange, the whole ring forward, and the all_reduce link sweep
    ring_times = []
    for _ in range(3):  # the whole forward (attention + exchange; not asserted, reported)
        dist.barrier()
        t0 = time.perf_counter()
        ring_forward(False)
        ring_times.append(time.perf_counter() - t0)
    ops = [("step", lambda: exchange(kv, spare))]
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
    step_s, ring_s = med.pop("step"), rank_max(percentile(ring_times, 50), "cpu")
    return {
        "env": rank_env(cfg | {"op": "send_recv"}),
        "torch_cp": probe,
        "block_bytes": kv.numel() * elem,
        "sent_bytes_per_layer": sent_bytes,
        "steps": steps,
        "element_bytes": elem,
        "max_abs_error": max_err,
        "step_s": step_s,
        "ring_forward_s": ring_s,
        "link_rows": [{"size_bytes": size, "time_us": t * 1e6} for size, t in med.items()],
    }


def run_cp_attention(
    *,
    seq_len: int = 2048,
    heads: int = 4,
    head_dim: int = 64,
    n_ranks: int = 2,
    iters: int = 10,
    warmup: int = 2,
    repeats: int = 11,
    probe_torch: bool = True,
    timeout_s: float = 180,
) -> dict:
    """Spawn `n_ranks` gloo ranks (CPU = cp), run one layer's ring attention forward; return measured
    bytes and times beside gpukit.comm.cp_kv_block_bytes / cp_exchange and collective_time over the
    loopback link fitted in the same run, and torch's context_parallel outcome on CPU."""
    from gpukit.bench.launch import spawn
    from gpukit.comm import collective_time, cp_kv_block_bytes, fit_alpha_beta
    from gpukit.errors import require_positive_int, require_timeout
    from gpukit.units import parse_sizes

    for name, val in (("seq_len", seq_len), ("heads", heads), ("head_dim", head_dim)):
        require_positive_int(name, val)
    for name, val in (("iters", iters), ("repeats", repeats)):
        require_positive_int(name, val)
    require_positive_int("warmup", warmup, allow_zero=True)
    cp = require_positive_int("n_ranks", n_ranks)
    if cp < 2:
        raise ValueError(f"n_ranks must be >= 2 (cp over one rank exchanges nothing), got {cp}")
    if seq_len % (2 * cp):
        raise ValueError(
            f"seq_len must be a multiple of 2*n_ranks = {2 * cp} (two chunks per rank), got {seq_len}"
        )
    timeout_s = require_timeout("timeout_s", timeout_s)
    cfg = {
        "seq_len": seq_len,
        "heads": heads,
        "head_dim": head_dim,
        "iters": iters,
        "warmup": warmup,
        "repeats": repeats,
        "probe_torch": probe_torch,
        "link_sizes": parse_sizes(LINK_SIZES),
        "backend": "gloo",
        "device": "cpu",
        "threads": 1,
        "timeout_s": timeout_s,
        "launcher": "spawn",
    }
    p = spawn(cp_body, cfg, cp, timeout_s)
    block = cp_kv_block_bytes(seq_len // cp, heads * head_dim, p["element_bytes"])
    fit = fit_alpha_beta(
        [r["size_bytes"] for r in p["link_rows"]],
        [r["time_us"] / 1e6 for r in p["link_rows"]],
        "all_reduce",
        cp,
    )
    pred = collective_time("send_recv", block, 2, fit)
    return {
        "label": "CPU: gloo on loopback, 2 shared cores (not a GPU figure)",
        "config": {"seq_len": seq_len, "heads": heads, "head_dim": head_dim, "cp": cp},
        "torch_context_parallel": p["torch_cp"] or "ran",
        "measured": {
            "block_bytes": p["block_bytes"],
            "sent_bytes_per_layer": p["sent_bytes_per_layer"],
            "steps": p["steps"],
        },
        "formula": {"block_bytes": block, "sent_bytes_per_layer": (cp - 1) * block, "steps": cp - 1},
        "max_abs_error": p["max_abs_error"],
        "link": {
            "alpha_us": fit.alpha_us,
            "beta_gbps": fit.beta_gbps,
            "r2": fit.r2,
            "fitted_on": "all_reduce",
        },
        "step_measured_s": p["step_s"],
        "step_predicted_s": pred.time_s,
        "time_ratio": p["step_s"] / pred.time_s,
        "ring_forward_s": p["ring_forward_s"],
        "env": p["env"],
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m gpukit.bench.cp_attention", description=__doc__.splitlines()[0]
    )
    ap.add_argument("--seq-len", dest="seq_len", type=int, default=2048)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", dest="head_dim", type=int, default=64)
    ap.add_argument("--ranks", dest="n_ranks", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=180)
    a = ap.parse_args(argv)
    try:
        r = run_cp_attention(
            seq_len=a.seq_len, heads=a.heads, head_dim=a.head_dim, n_ranks=a.n_ranks, timeout_s=a.timeout
        )
    except (ValueError, TimeoutError) as e:
        print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    print(json.dumps(r, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
