"""Traffic of expert parallelism (EP all-to-all dispatch and combine) and context parallelism (the ring
KV exchange of ring attention, and its all-gather alternative), timed over the one ClusterNetwork.

Pure calculator (no torch, no I/O): bytes per GPU, seconds. Sources, formula by formula:

- EP (GShard, Lepikhin et al. 2020, sec. 2.2 and 3.2: AllToAll dispatch before the experts and
  AllToAll combine after them; DeepSpeed-MoE, Rajbhandari et al. 2022, sec. 5; Megatron-Core MoE
  docs, the alltoall token dispatcher): every token goes to its top_k experts, so each MoE layer's
  dispatch sends a buffer of tokens x top_k x hidden x dtype bytes per GPU and the combine returns
  the same amount; with ep ranks holding n_experts / ep experts each, the (ep-1)/ep share of the
  buffer leaves the GPU under balanced routing (the aux-loss / bias balancing the reports train with,
  DeepSeek-V3 sec. 2.1.2). Every one of the top_k copies is counted, as Megatron-Core's alltoall
  dispatcher sends them (permute, then all-to-all); DeepEP and node-limited routing send a token once
  per destination rank or node, so for them this is an upper bound. Backward runs the two all-to-alls again on the gradients (the transpose of
  an all-to-all is an all-to-all): 4 per MoE layer per micro-batch, 6 with full recompute (the
  forward is replayed). Overlap: none by default (Megatron-Core runs them on the critical path unless
  --overlap-moe-expert-parallel-comm); DeepSeek-V3's DualPipe (sec. 3.2.1) overlaps forward and
  backward chunks so the all-to-all hides behind compute: an `overlap` share (0..1) states it.
- CP, ring attention (Liu, Zaharia & Abbeel 2023, "Ring Attention with Blockwise Transformers";
  Megatron-Core context parallelism, Transformer Engine's P2P implementation): the sequence is split
  over cp ranks; per layer the K and V blocks circulate in cp-1 send/recv steps of
  2 x (b s / cp) x kv_dim x dtype bytes, each overlapped with the attention of the block in hand
  (exposed only beyond it). Causal load balancing: each rank holds two chunks of s / (2 cp) (chunks
  i and 2cp-1-i), so every ring step does the same attention work (Megatron-Core CP docs). Backward
  circulates K, V and their gradients dK, dV: twice the forward bytes. The all-gather alternative
  (Llama 3 report sec. 3.3.2: all-gather K and V, then attend with the local queries; GQA keeps K/V
  small) sends (cp-1)/cp of the layer's whole K and V per rank in one collective, not overlapped.

Used in: gpukit.parallel.estimate (ep_comm, cp_comm), gpukit.bench.ep_alltoall and
gpukit.bench.cp_attention (measured bytes against these formulas), tests/test_ep_cp.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit.comm.collectives import collective_time
from gpukit.comm.network import ClusterNetwork, NetworkCost, network_all_to_all
from gpukit.errors import MAX_COUNT, finite_result, require_positive, require_positive_int
from gpukit.results import json_safe

EP_ALL_TO_ALLS_FORWARD = 2  # dispatch + combine per MoE layer (GShard sec. 2.2)
EP_OVERLAP_SOURCE = (
    "EP all-to-all exposed by default (Megatron-Core alltoall dispatcher on the critical path); an overlap "
    "share states a schedule that hides it, e.g. DeepSeek-V3's DualPipe (arXiv 2412.19437 sec. 3.2.1)"
)
CP_ALGORITHMS = ("ring", "all_gather")
FLASH_BACKWARD_FACTOR = 2.5  # FlashAttention-2 backward: 5 matmuls vs 2 in forward (Dao 2023, sec. 3.1)


def _fraction(name: str, value) -> float:
    v = require_positive(name, value, allow_zero=True)
    if v > 1:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return v


# ------------------------------------------------------------------------------------ expert parallelism
def ep_dispatch_bytes(tokens: int, hidden: int, top_k: int, dtype_bytes: float = 2.0) -> float:
    """One all-to-all's send buffer per GPU: tokens x top_k x hidden x dtype bytes (GShard sec. 2.2:
    every token is sent to each of its top_k experts; the combine returns the same amount)."""
    return finite_result(
        "ep_dispatch_bytes",
        float(require_positive_int("tokens", tokens, allow_zero=True, at_most=MAX_COUNT))
        * require_positive_int("top_k", top_k, at_most=MAX_COUNT)
        * require_positive_int("hidden", hidden, at_most=MAX_COUNT)
        * require_positive("dtype_bytes", dtype_bytes),
    )


def ep_leaving_bytes(buffer_bytes: float, ep: int) -> float:
    """The share of an all-to-all buffer that leaves the GPU under balanced routing: (ep-1)/ep (the
    1/ep routed to the GPU's own experts stays; nccl-tests alltoall convention, gpukit.comm.collectives)."""
    ep = require_positive_int("ep", ep, at_most=MAX_COUNT)
    return require_positive("buffer_bytes", buffer_bytes, allow_zero=True) * (ep - 1) / ep


@dataclass(frozen=True)
class EPTraffic:
    """EP all-to-all traffic and time of the MoE layers one GPU runs, per micro-batch."""

    tokens: int  # tokens one GPU dispatches per MoE layer (its micro-batch share)
    hidden: int
    top_k: int
    ep: int
    dtype_bytes: float
    moe_layers: int
    all_to_alls_per_layer: int  # 4 (dispatch, combine, their gradients), 6 with full recompute
    buffer_bytes: float  # one all-to-all's send buffer per GPU
    leaving_bytes: float  # (ep-1)/ep of it
    all_to_all: NetworkCost  # one all-to-all over the network
    overlap: float  # share hidden behind compute (0: none)

    @property
    def n_all_to_alls(self) -> int:
        return self.moe_layers * self.all_to_alls_per_layer

    @property
    def bytes_per_microbatch(self) -> float:
        """Bytes leaving one GPU per micro-batch, all MoE layers, forward and backward."""
        return self.n_all_to_alls * self.leaving_bytes

    @property
    def comm_s(self) -> float:
        return self.n_all_to_alls * self.all_to_all.time_s

    @property
    def exposed_s(self) -> float:
        return (1.0 - self.overlap) * self.comm_s

    def to_json_dict(self) -> dict:
        return json_safe(
            {
                "tokens": self.tokens,
                "hidden": self.hidden,
                "top_k": self.top_k,
                "ep": self.ep,
                "dtype_bytes": self.dtype_bytes,
                "moe_layers": self.moe_layers,
                "all_to_alls_per_layer": self.all_to_alls_per_layer,
                "buffer_bytes": self.buffer_bytes,
                "leaving_bytes": self.leaving_bytes,
                "bytes_per_microbatch": self.bytes_per_microbatch,
                "all_to_all_s": self.all_to_all.time_s,
                "comm_s": self.comm_s,
                "overlap": self.overlap,
                "exposed_s": self.exposed_s,
                "assumptions": [
                    "balanced routing: (ep-1)/ep of each buffer leaves the GPU",
                    EP_OVERLAP_SOURCE,
                    *self.all_to_all.assumptions,
                ],
            }
        )


def ep_traffic(
    tokens: int,
    hidden: int,
    top_k: int,
    ep: int,
    net: ClusterNetwork,
    *,
    moe_layers: int = 1,
    dtype_bytes: float = 2.0,
    ranks_per_node: int | None = None,
    recompute: str = "none",
    overlap: float = 0.0,
) -> EPTraffic:
    """EP all-to-alls of `moe_layers` MoE layers for one micro-batch of `tokens` per GPU over `net`:
    4 per layer (dispatch and combine, forward and backward; 6 with full recompute), each of
    tokens x top_k x hidden x dtype bytes, timed by network_all_to_all over the ep group
    (`ranks_per_node` of it per node; default: as many as fit in one node). `overlap` (0..1) is the
    share a schedule hides behind compute (EP_OVERLAP_SOURCE)."""
    ep = require_positive_int("ep", ep, at_most=MAX_COUNT)
    moe_layers = require_positive_int("moe_layers", moe_layers, allow_zero=True, at_most=MAX_COUNT)
    overlap = _fraction("overlap", overlap)
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute must be one of none, selective, full; got {recompute!r}")
    buf = ep_dispatch_bytes(tokens, hidden, top_k, dtype_bytes)
    per_layer = 2 * EP_ALL_TO_ALLS_FORWARD + (EP_ALL_TO_ALLS_FORWARD if recompute == "full" else 0)
    a2a = network_all_to_all(buf, ep, net, ranks_per_node=ranks_per_node)
    return EPTraffic(
        tokens=int(tokens),
        hidden=int(hidden),
        top_k=int(top_k),
        ep=ep,
        dtype_bytes=float(dtype_bytes),
        moe_layers=moe_layers,
        all_to_alls_per_layer=per_layer,
        buffer_bytes=buf,
        leaving_bytes=ep_leaving_bytes(buf, ep),
        all_to_all=a2a,
        overlap=overlap,
    )


# ------------------------------------------------------------------------------------ context parallelism
def cp_kv_block_bytes(tokens: int, kv_dim: int, dtype_bytes: float = 2.0) -> float:
    """One ring step's message: K and V of the rank's tokens, 2 x tokens x kv_dim x dtype bytes
    (tokens = b s / cp; Liu et al. 2023 sec. 3; Megatron-Core CP)."""
    return finite_result(
        "cp_kv_block_bytes",
        2.0
        * require_positive_int("tokens", tokens, allow_zero=True, at_most=MAX_COUNT)
        * require_positive_int("kv_dim", kv_dim, at_most=MAX_COUNT)
        * require_positive("dtype_bytes", dtype_bytes),
    )


@dataclass(frozen=True)
class CPExchange:
    """Context-parallel KV traffic of one layer for one micro-batch, forward and backward, and the part
    of its time not hidden behind the attention compute it overlaps with."""

    algorithm: str  # "ring" (P2P, overlapped) or "all_gather" (Llama 3's, not overlapped)
    cp: int
    tokens_per_rank: int
    kv_dim: int
    dtype_bytes: float
    block_bytes: float  # one ring step's K+V message (ring); the rank's K+V share (all_gather)
    forward_bytes: float  # bytes one rank sends per layer in forward
    backward_bytes: float  # and in backward (K, V and dK, dV: 2x forward)
    forward_comm_s: float
    backward_comm_s: float
    forward_exposed_s: float
    backward_exposed_s: float

    @property
    def bytes_per_layer(self) -> float:
        return self.forward_bytes + self.backward_bytes

    @property
    def comm_s(self) -> float:
        return self.forward_comm_s + self.backward_comm_s

    @property
    def exposed_s(self) -> float:
        return self.forward_exposed_s + self.backward_exposed_s

    def to_json_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(bytes_per_layer=self.bytes_per_layer, comm_s=self.comm_s, exposed_s=self.exposed_s)
        return json_safe(d)


def cp_exchange(
    tokens_per_rank: int,
    kv_dim: int,
    cp: int,
    net: ClusterNetwork,
    *,
    dtype_bytes: float = 2.0,
    attention_forward_s: float = 0.0,
    ranks_per_node: int | None = None,
    algorithm: str = "ring",
) -> CPExchange:
    """KV exchange of one layer for one micro-batch on a cp group over `net`.

    ring: cp-1 send/recv steps of 2 x tokens_per_rank x kv_dim x dtype bytes in forward, each
    overlapped with 1/cp of the rank's attention (`attention_forward_s`, the layer's forward attention
    time on the rank; equal per step with causal load balancing): exposed per step
    max(0, t_send - t_attn / cp). Backward sends K, V and dK, dV (2x the bytes) against
    FLASH_BACKWARD_FACTOR x the attention. The ring runs on the intra-node link while the cp group
    sits in a node (`ranks_per_node` >= cp; default: the group fits when cp <= gpus_per_node), else
    on the inter-node link: a node's boundary ranks of every group send at once (gpus_per_node /
    ranks_per_node of them share its ports).
    all_gather: one all-gather of the layer's K and V (total 2 x cp x tokens_per_rank x kv_dim x
    dtype) in forward, a reduce-scatter of dK, dV in backward, not overlapped (Llama 3 sec. 3.3.2)."""
    cp = require_positive_int("cp", cp, at_most=MAX_COUNT)
    kv_dim = require_positive_int("kv_dim", kv_dim, at_most=MAX_COUNT)
    if algorithm not in CP_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(CP_ALGORITHMS)}; got {algorithm!r}")
    t_attn = require_positive("attention_forward_s", attention_forward_s, allow_zero=True)
    block = cp_kv_block_bytes(tokens_per_rank, kv_dim, dtype_bytes)
    k = net.gpus_per_node
    rpn = min(cp, k) if ranks_per_node is None else require_positive_int("ranks_per_node", ranks_per_node)
    if cp == 1:  # nothing circulates
        return CPExchange(algorithm, 1, int(tokens_per_rank), kv_dim, float(dtype_bytes), block, *[0.0] * 6)
    if algorithm == "all_gather":
        total = block * cp  # the layer's whole K and V (nccl-tests all_gather size: the output)
        link = net.intra_link if rpn >= cp else net.inter_link(max(1, k // rpn))
        fwd_s = collective_time("all_gather", total, cp, link).time_s
        bwd_s = collective_time("reduce_scatter", total, cp, link).time_s
        sent = total * (cp - 1) / cp
        return CPExchange(
            algorithm, cp, int(tokens_per_rank), kv_dim, float(dtype_bytes), block, sent, sent,
            fwd_s, bwd_s, fwd_s, bwd_s,
        )  # fmt: skip
    link = net.intra_link if rpn >= cp else net.inter_link(max(1, k // rpn))
    step_f = collective_time("send_recv", block, 2, link).time_s
    step_b = collective_time("send_recv", 2 * block, 2, link).time_s
    attn_step_f = t_attn / cp
    attn_step_b = FLASH_BACKWARD_FACTOR * t_attn / cp
    n = cp - 1
    return CPExchange(
        algorithm=algorithm,
        cp=cp,
        tokens_per_rank=int(tokens_per_rank),
        kv_dim=kv_dim,
        dtype_bytes=float(dtype_bytes),
        block_bytes=block,
        forward_bytes=n * block,
        backward_bytes=n * 2 * block,
        forward_comm_s=n * step_f,
        backward_comm_s=n * step_b,
        forward_exposed_s=n * max(0.0, step_f - attn_step_f),
        backward_exposed_s=n * max(0.0, step_b - attn_step_b),
    )
