"""A small mixture-of-experts block measured on this machine's CPU: the activations its forward keeps
for backward (torch's MemTracker) and its weights, beside gpukit.memory's prediction.

The block (fp32, CPU) is a Megatron/GShard-style MoE MLP without attention or norms: a router
(hidden x n_experts, fp32 softmax, top_k, probabilities renormalised as Mixtral does), a GShard
dispatch buffer padded to capacity (n_experts x capacity rows, capacity = ceil(capacity_factor x
tokens x top_k / n_experts); Lepikhin et al. 2020 sec. 2.2: tokens beyond an expert's capacity are
dropped), SwiGLU experts applied to it with batched matmuls, the expert outputs gathered back to the
tokens' top_k copies and combined with the gate probabilities, plus `n_shared` always-active shared
experts (DeepSeek-V3 arXiv:2412.19437 sec. 2.1.2). The experts built are this rank's n_experts / ep
(expert parallelism: their count and bytes are what the prediction shards).

Measured: MemTracker's bytes alive after the forward (inside the tracker) minus before it: the tensors
autograd saved plus the block's output. Predicted: gpukit.memory.moe_mlp_activation_bytes (router,
shared experts, routed capacity rows) for a TrainSetup(precision="fp32", seq_len, micro_batch,
capacity_factor) plus the block input (the MLP input that layer_activation_bytes counts with the
layer, saved by the router and the shared experts' linears) and the output, hidden wide each. What
the prediction leaves out: the int64 routing indices (top_k per token, a few copies: under 1 % here).
Weights: the block's parameter bytes against ModelSpec.router_params / expert_params x n_experts / ep.

Long sequence with context parallelism (`measure_cp_attention_block`): an attention block (QKV linear,
causal torch SDPA, output projection; fp32 on CPU, where SDPA runs its flash kernel and keeps a
logsumexp per row instead of the s x s scores) run on the s / cp tokens one CP rank holds, its
activations measured the same way against gpukit.memory.attention_activation_bytes of a TrainSetup
(seq_len = s, cp) plus the block input and output. What this single process cannot run: the ring's
K/V exchange between ranks (gpukit.bench.cp_attention times it on 2 gloo ranks); in Megatron-Core /
Transformer Engine the remote K/V blocks are consumed per ring step and not kept for backward, so
they are not in the prediction either, and the rank's queries attend only to its own keys here.

Used in: tests/test_moe_memory.py; `python -m gpukit.bench.moe_memory --json`.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class MoEMemoryResult:
    """Measured vs predicted bytes of one MoE block on CPU (fp32)."""

    tokens: int
    hidden: int
    n_experts: int
    experts_per_token: int
    n_shared: int
    moe_ffn_hidden: int
    capacity_factor: float
    ep: int
    measured_activation_bytes: int
    predicted_activation_bytes: float
    measured_param_bytes: int
    predicted_param_bytes: int
    dropped_token_copies: int
    device: str = "cpu"

    @property
    def activation_ratio(self) -> float:
        return self.measured_activation_bytes / self.predicted_activation_bytes

    def to_json_dict(self) -> dict:
        return asdict(self) | {"activation_ratio": self.activation_ratio}


def moe_spec(hidden: int, n_experts: int, experts_per_token: int, n_shared: int, moe_ffn_hidden: int):
    """A one-layer MoE ModelSpec of the block's shape (SwiGLU, no biases)."""
    from gpukit.specs import ModelSpec

    return ModelSpec(
        "moe-block",
        n_layers=1,
        hidden=hidden,
        n_heads=max(1, hidden // 64),
        vocab=8,
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        bias=False,
        dropout=False,
        ffn_hidden=moe_ffn_hidden,
        moe_ffn_hidden=moe_ffn_hidden,
        n_experts=n_experts,
        experts_per_token=experts_per_token,
        n_shared_experts=n_shared,
    )


def _block(hidden, n_local, n_shared, f, n_experts, seed=0):
    import torch

    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.nn.Parameter(torch.randn(*shape, generator=g) / math.sqrt(shape[-2]))

    p = torch.nn.ParameterDict(
        {
            "router": w(hidden, n_experts),
            "wg": w(n_local, hidden, f),
            "wu": w(n_local, hidden, f),
            "wd": w(n_local, f, hidden),
        }
    )
    if n_shared:
        p["sg"], p["su"], p["sd"] = w(hidden, n_shared * f), w(hidden, n_shared * f), w(n_shared * f, hidden)
    return p


def _forward(p, x, n_experts, top_k, capacity):
    """The block's forward on one rank holding all its experts locally (the run uses ep's local experts
    = n_experts / ep, and routes only to them: the tokens that rank would receive, balanced)."""
    import torch
    import torch.nn.functional as F

    n_local = p["wg"].shape[0]
    T, h = x.shape
    probs = torch.softmax(x @ p["router"], dim=-1)  # fp32 softmax over all experts (saved: T x E)
    top_p, top_i = torch.topk(probs[:, :n_local], top_k, dim=-1)  # this rank's experts
    top_p = top_p / top_p.sum(-1, keepdim=True)
    flat_e = top_i.reshape(-1)  # expert of each token copy
    # position of each copy in its expert's capacity buffer (order of arrival); beyond capacity: dropped
    onehot = F.one_hot(flat_e, n_local)
    pos = ((onehot.cumsum(0) - 1) * onehot).sum(-1)
    keep = pos < capacity
    slot = torch.where(keep, flat_e * capacity + pos, torch.full_like(pos, n_local * capacity))
    src = torch.arange(T).repeat_interleave(top_k)
    buf = x.new_zeros(n_local * capacity + 1, h).index_copy(0, slot, x.index_select(0, src))
    xe = buf[:-1].view(n_local, capacity, h)
    a = F.silu(torch.bmm(xe, p["wg"])) * torch.bmm(xe, p["wu"])
    ye = torch.bmm(a, p["wd"]).reshape(n_local * capacity, h)
    ye = torch.cat([ye, ye.new_zeros(1, h)])  # the dropped copies read the zero row
    out = (ye.index_select(0, slot) * top_p.reshape(-1, 1)).view(T, top_k, h).sum(1)
    if "sg" in p:
        out = out + (F.silu(x @ p["sg"]) * (x @ p["su"])) @ p["sd"]
    return out, int((~keep).sum())


def measure_moe_block(
    tokens: int = 2048,
    hidden: int = 256,
    n_experts: int = 8,
    experts_per_token: int = 2,
    n_shared: int = 1,
    moe_ffn_hidden: int = 512,
    capacity_factor: float = 1.0,
    ep: int = 1,
    seed: int = 0,
) -> MoEMemoryResult:
    """Run the block once (forward under MemTracker) and set its bytes beside the prediction. The rank
    routes each token to top_k of its n_experts / ep local experts (the copies a balanced EP rank
    receives), so the capacity is that of its experts: capacity_factor x tokens x top_k / (n_experts / ep)."""
    import torch
    from torch.distributed._tools.mem_tracker import MemTracker

    from gpukit.memory import TrainSetup, moe_mlp_activation_bytes

    if n_experts % ep:
        raise ValueError(f"ep must divide n_experts {n_experts}, got {ep}")
    n_local = n_experts // ep
    if experts_per_token > n_local:
        raise ValueError(
            f"experts_per_token must be at most n_experts/ep = {n_local}, got {experts_per_token}"
        )
    torch.manual_seed(seed)
    p = _block(hidden, n_local, n_shared, moe_ffn_hidden, n_experts, seed)
    capacity = math.ceil(capacity_factor * tokens * experts_per_token / n_local)
    inp = torch.randn(tokens, hidden)
    mt = MemTracker()
    mt.track_external(p)

    def total(mt) -> int:
        snap = mt.get_tracker_snapshot("current")
        return sum(
            int(v)
            for d, cats in snap.items()
            if str(d) == "cpu"
            for k, v in cats.items()
            if str(k) == "Total"
        )

    with mt:
        before = total(mt)
        x = inp * 1.0  # the block input as the previous layer's output: an activation
        out, dropped = _forward(p, x, n_experts, experts_per_token, capacity)
        after = total(mt)
        out.sum().backward()
    del x, out
    model = moe_spec(hidden, n_local, experts_per_token, n_shared, moe_ffn_hidden)
    setup = TrainSetup(
        precision="fp32",
        convention="megatron",
        seq_len=tokens,
        micro_batch=1,
        capacity_factor=capacity_factor,
    )
    router_b, split_b = moe_mlp_activation_bytes(model, setup)
    # the router here spans all n_experts (this rank's softmax over the global router), as Megatron's
    router_b *= n_experts / n_local
    io_b = 2 * 4.0 * tokens * hidden  # the block input (saved) and its output (alive), fp32
    full = moe_spec(hidden, n_experts, experts_per_token, n_shared, moe_ffn_hidden)
    pred_params = 4 * (
        full.router_params()
        + n_experts // ep * full.expert_params()
        + n_shared * full.expert_params(full.shared_ffn_hidden)
    )
    return MoEMemoryResult(
        tokens=tokens,
        hidden=hidden,
        n_experts=n_experts,
        experts_per_token=experts_per_token,
        n_shared=n_shared,
        moe_ffn_hidden=moe_ffn_hidden,
        capacity_factor=capacity_factor,
        ep=ep,
        measured_activation_bytes=after - before,
        predicted_activation_bytes=router_b + split_b + io_b,
        measured_param_bytes=sum(t.numel() * t.element_size() for t in p.values()),
        predicted_param_bytes=pred_params,
        dropped_token_copies=dropped,
    )


@dataclass(frozen=True)
class CPAttentionResult:
    """Measured vs predicted activation bytes of one CP rank's attention block (fp32, CPU)."""

    seq_len: int
    cp: int
    hidden: int
    n_heads: int
    measured_activation_bytes: int
    predicted_activation_bytes: float
    device: str = "cpu"

    @property
    def activation_ratio(self) -> float:
        return self.measured_activation_bytes / self.predicted_activation_bytes

    def to_json_dict(self) -> dict:
        return asdict(self) | {"activation_ratio": self.activation_ratio}


def measure_cp_attention_block(
    seq_len: int = 8192, cp: int = 2, hidden: int = 128, n_heads: int = 2, seed: int = 0
) -> CPAttentionResult:
    """One CP rank's share (seq_len / cp tokens) of a causal attention block, forward under MemTracker."""
    import torch
    import torch.nn.functional as F
    from torch.distributed._tools.mem_tracker import MemTracker

    from gpukit.memory import TrainSetup, attention_activation_bytes
    from gpukit.specs import ModelSpec

    if seq_len % cp:
        raise ValueError(f"seq_len must be a multiple of cp {cp}, got {seq_len}")
    g = torch.Generator().manual_seed(seed)
    wqkv = torch.nn.Parameter(torch.randn(hidden, 3 * hidden, generator=g) / math.sqrt(hidden))
    wo = torch.nn.Parameter(torch.randn(hidden, hidden, generator=g) / math.sqrt(hidden))
    s_local, d = seq_len // cp, hidden // n_heads
    inp = torch.randn(1, s_local, hidden, generator=g)
    mt = MemTracker()
    mt.track_external(wqkv, wo)

    def total() -> int:
        snap = mt.get_tracker_snapshot("current")
        return sum(
            int(v)
            for dv, cats in snap.items()
            if str(dv) == "cpu"
            for k, v in cats.items()
            if str(k) == "Total"
        )

    with mt:
        before = total()
        x = inp * 1.0
        q, k, v = (x @ wqkv).view(1, s_local, 3, n_heads, d).permute(2, 0, 3, 1, 4).unbind(0)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = o.transpose(1, 2).reshape(1, s_local, hidden) @ wo
        after = total()
        out.sum().backward()
    model = ModelSpec(
        "attention-block",
        n_layers=1,
        hidden=hidden,
        n_heads=n_heads,
        vocab=8,
        max_seq=seq_len,
        mlp="swiglu",
        norm="rmsnorm",
        position="rope",
        bias=False,
        dropout=False,
    )
    setup = TrainSetup(precision="fp32", convention="megatron", seq_len=seq_len, cp=cp)
    io_b = 4.0 * s_local * hidden  # the block output, alive (the input is the QKV input, predicted)
    return CPAttentionResult(
        seq_len=seq_len,
        cp=cp,
        hidden=hidden,
        n_heads=n_heads,
        measured_activation_bytes=after - before,
        predicted_activation_bytes=attention_activation_bytes(model, setup) + io_b,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, default=2048)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--n-experts", type=int, default=8)
    ap.add_argument("--top-k", type=int, default=2)
    ap.add_argument("--shared", type=int, default=1)
    ap.add_argument("--moe-ffn-hidden", type=int, default=512)
    ap.add_argument("--capacity-factor", type=float, default=1.0)
    ap.add_argument("--ep", type=int, default=1)
    ap.add_argument("--cp", type=int, default=0, help="instead: one CP rank's attention block (seq-len, cp)")
    ap.add_argument("--seq-len", type=int, default=8192)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if a.cp:
        c = measure_cp_attention_block(a.seq_len, a.cp)
        print(
            json.dumps(c.to_json_dict(), indent=2)
            if a.json
            else f"CP rank attention (seq_len {c.seq_len}, cp {c.cp}): measured "
            f"{c.measured_activation_bytes / 2**20:.2f} MiB, predicted {c.predicted_activation_bytes / 2**20:.2f} MiB"
        )
        return 0
    r = measure_moe_block(
        a.tokens, a.hidden, a.n_experts, a.top_k, a.shared, a.moe_ffn_hidden, a.capacity_factor, a.ep
    )
    if a.json:
        print(json.dumps(r.to_json_dict(), indent=2))
    else:
        print(
            f"MoE block on CPU: activations measured {r.measured_activation_bytes / 2**20:.2f} MiB, predicted "
            f"{r.predicted_activation_bytes / 2**20:.2f} MiB (ratio {r.activation_ratio:.3f}); weights "
            f"{r.measured_param_bytes} B vs {r.predicted_param_bytes} B; dropped copies {r.dropped_token_copies}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
