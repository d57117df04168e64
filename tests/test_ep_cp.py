"""Expert and context parallelism: the all-to-all over the network, the EP and CP traffic formulas, the
layout rules (ParallelConfig ep/cp), their terms in parallel.estimate, the search and the CLI."""

import json
import math
import subprocess
import sys

import pytest

from gpukit import parallel as par
from gpukit.catalog import get_model
from gpukit.comm import (
    cluster_network,
    collective_time,
    cp_exchange,
    cp_kv_block_bytes,
    ep_dispatch_bytes,
    ep_leaving_bytes,
    ep_traffic,
    network_all_to_all,
)
from gpukit.specs import ModelSpec

MIXTRAL = ModelSpec(
    "mixtral-8x7b",
    32,
    4096,
    32,
    8,
    14336,
    32000,
    32768,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
    n_experts=8,
    experts_per_token=2,
)


@pytest.fixture(scope="module")
def h100():
    return par.make_cluster("h100-sxm", 8)


# ------------------------------------------------------------------------------------ formulas
def test_ep_bytes_are_tokens_topk_hidden_dtype_and_the_leaving_share():
    # GShard: tokens x top_k x hidden x dtype per all-to-all; (ep-1)/ep leaves the GPU
    assert ep_dispatch_bytes(4096, 4096, 2, 2) == 4096 * 2 * 4096 * 2 == 64 * 2**20
    assert ep_leaving_bytes(64 * 2**20, 8) == 56 * 2**20
    assert ep_leaving_bytes(1000, 1) == 0  # ep 1: every expert is local
    with pytest.raises(ValueError, match="top_k"):
        ep_dispatch_bytes(10, 10, 0)
    with pytest.raises(ValueError, match="ep"):
        ep_leaving_bytes(10, 0)


def test_network_all_to_all_in_a_node_is_the_flat_pairwise_exchange(h100):
    net = h100.network
    a = network_all_to_all(8 * 2**20, 8, net)
    flat = collective_time("all_to_all", 8 * 2**20, 8, net.intra_link)
    assert a.time_s == flat.time_s and a.n_nodes == 1
    assert a.phases[0][1].bytes_sent_per_rank == 7 / 8 * 8 * 2**20


def test_network_all_to_all_across_nodes_sends_the_remote_share_over_the_ports(h100):
    net = h100.network
    S = 16 * 2**20
    a = network_all_to_all(S, 16, net)  # 2 nodes x 8
    ph = dict(a.phases)
    # bytes: S (n-k)/n to the other node, S (k-1)/n to the node's peers
    assert ph["inter_all_to_all"].bytes_sent_per_rank == pytest.approx(S * 8 / 16)
    assert ph["intra_all_to_all"].bytes_sent_per_rank == pytest.approx(S * 7 / 16)
    assert a.time_s > network_all_to_all(S, 8, net).time_s  # the NIC is slower than NVLink
    # a slower inter-node link (fewer ports) makes it slower
    shared = cluster_network("nvlink4", "ib-ndr", gpus_per_node=8, ports_per_node=1)
    assert network_all_to_all(S, 16, shared).time_s > 4 * a.time_s
    with pytest.raises(ValueError, match="ranks_per_node"):
        network_all_to_all(S, 16, net, ranks_per_node=3)


def test_ep_traffic_counts_four_all_to_alls_per_moe_layer(h100):
    t = ep_traffic(4096, 4096, 2, 8, h100.network, moe_layers=32)
    assert t.all_to_alls_per_layer == 4 and t.n_all_to_alls == 128
    assert t.bytes_per_microbatch == 128 * 56 * 2**20
    assert t.comm_s == pytest.approx(128 * t.all_to_all.time_s)
    assert t.exposed_s == t.comm_s  # no overlap by default
    hidden = ep_traffic(4096, 4096, 2, 8, h100.network, moe_layers=32, overlap=0.75)
    assert hidden.exposed_s == pytest.approx(0.25 * t.comm_s)
    full = ep_traffic(4096, 4096, 2, 8, h100.network, moe_layers=32, recompute="full")
    assert full.all_to_alls_per_layer == 6  # the replayed forward dispatches again
    with pytest.raises(ValueError, match="overlap"):
        ep_traffic(4096, 4096, 2, 8, h100.network, overlap=1.5)


def test_cp_ring_exchange_bytes_steps_and_overlap(h100):
    net = h100.network
    # Llama 3 70B at 131k with TP8 x CP16: each rank holds 8192 tokens and one KV head (8 / 8) of 128
    x = cp_exchange(131072 // 16, 128, 16, net, ranks_per_node=1)
    assert x.block_bytes == cp_kv_block_bytes(8192, 128, 2) == 2 * 8192 * 128 * 2 == 4 * 2**20
    assert x.forward_bytes == 15 * 4 * 2**20 and x.backward_bytes == 2 * x.forward_bytes
    assert x.exposed_s == x.comm_s  # nothing to hide behind without attention time
    hid = cp_exchange(131072 // 16, 128, 16, net, ranks_per_node=1, attention_forward_s=1.0)
    assert hid.exposed_s == 0 and hid.comm_s == x.comm_s  # attention long enough: fully overlapped
    # inside a node the ring runs on NVLink: faster
    assert cp_exchange(8192, 128, 8, net).comm_s < cp_exchange(8192, 128, 8, net, ranks_per_node=1).comm_s
    ag = cp_exchange(8192, 128, 16, net, ranks_per_node=1, algorithm="all_gather")
    assert ag.forward_bytes == pytest.approx(15 / 16 * 16 * x.block_bytes)
    assert ag.exposed_s == ag.comm_s  # Llama 3's all-gather is not overlapped
    assert cp_exchange(8192, 128, 1, net).bytes_per_layer == 0
    with pytest.raises(ValueError, match="algorithm"):
        cp_exchange(8192, 128, 2, net, algorithm="ulysses")


# ------------------------------------------------------------------------------------ layout rules
def test_world_size_counts_cp_not_ep():
    c = par.ParallelConfig(dp=8, tp=8, pp=16, cp=16, sp=True)
    assert c.world_size == 16384
    assert par.ParallelConfig(dp=8, ep=8).world_size == 8
    assert "CP16" in c.label() and "EP8" in par.ParallelConfig(dp=8, ep=8).label()


def test_llama3_405b_131k_layout_of_table4_is_accepted():
    # Llama 3 report (Dubey et al. 2024) Table 4: 16,384 H100, TP 8, CP 16, PP 16, DP 8, seq 131,072,
    # 16M tokens per batch (128 sequences)
    m = get_model("llama-3.1-405b")
    c = par.ParallelConfig(dp=8, tp=8, pp=16, cp=16, sp=True)
    c.validate(m, gpus=16384, global_batch=128, seq_len=131072)
    with pytest.raises(ValueError, match=r"dp\*tp\*pp\*cp"):
        c.validate(m, gpus=8192)


def test_ep_rules_name_the_field():
    llama = get_model("llama-2-7b")
    with pytest.raises(ValueError, match="^ep must be 1 for llama-2-7b"):
        par.ParallelConfig(dp=2, ep=2).validate(llama)
    with pytest.raises(ValueError, match="^ep must divide n_experts 8"):
        par.ParallelConfig(dp=6, ep=3).validate(MIXTRAL)
    with pytest.raises(ValueError, match=r"^ep must divide dp\*cp = 2"):
        par.ParallelConfig(dp=2, ep=4).validate(MIXTRAL)
    par.ParallelConfig(dp=2, cp=2, ep=4).validate(MIXTRAL)  # ep carved from dp x cp
    with pytest.raises(ValueError, match="^sp must be on"):
        par.ParallelConfig(dp=2, tp=2, ep=2).validate(MIXTRAL)
    with pytest.raises(ValueError, match="^ep must be"):
        par.ParallelConfig(ep=0)
    with pytest.raises(ValueError, match=r"^seq_len must be a multiple of 2\*cp = 8"):
        par.ParallelConfig(cp=4).validate(llama, seq_len=4100)


# ------------------------------------------------------------------------------------ estimate
def test_estimate_without_ep_cp_has_zero_ep_cp_terms(h100):
    e = par.estimate(
        "llama-2-7b", par.ParallelConfig(dp=8, micro_batch=1), h100, global_batch=64, seq_len=4096
    )
    b = dict(e.breakdown)
    assert b["ep_comm"] == 0 and b["cp_comm"] == 0
    assert dict(e.comm_bytes)["ep_all_to_all"] == 0 and dict(e.comm_bytes)["cp_kv_exchange"] == 0
    assert sum(b.values()) == pytest.approx(e.step_time_s)


def test_mixtral_ep8_on_8_h100_all_to_all_bytes_and_time(h100):
    e = par.estimate(
        MIXTRAL, par.ParallelConfig(dp=8, ep=8, zero_stage=1), h100, global_batch=256, seq_len=4096
    )
    m = 256 // 8
    # per micro-batch: 32 MoE layers x 4 all-to-alls x 4096 tokens x top-2 x 4096 x 2 bytes x 7/8
    per_mb = 32 * 4 * 4096 * 2 * 4096 * 2 * 7 / 8
    assert dict(e.comm_bytes)["ep_all_to_all"] == m * per_mb
    one = network_all_to_all(4096 * 2 * 4096 * 2, 8, h100.network).time_s
    assert dict(e.breakdown)["ep_comm"] == pytest.approx(m * 128 * one)
    hid = par.estimate(
        MIXTRAL,
        par.ParallelConfig(dp=8, ep=8, zero_stage=1),
        h100,
        global_batch=256,
        seq_len=4096,
        ep_overlap=1.0,
    )
    assert dict(hid.breakdown)["ep_comm"] == 0 and hid.step_time_s < e.step_time_s
    assert any("EP8" in n for n in e.notes)
    # experts sync their gradients over dp*cp/ep = 1 rank: only the dense part is reduced over 8
    dense = par.estimate(
        MIXTRAL, par.ParallelConfig(dp=8, zero_stage=1), h100, global_batch=256, seq_len=4096
    )
    assert dict(e.comm_bytes)["dp_grad_reduce"] < 0.1 * dict(dense.comm_bytes)["dp_grad_reduce"]


def test_cp_divides_the_compute_per_gpu_and_adds_the_kv_exchange(h100):
    m = get_model("llama-3.1-70b")
    kw = dict(global_batch=16, seq_len=131072)
    base = par.ParallelConfig(dp=1, tp=8, pp=4, sp=True, recompute="full")
    with_cp = par.ParallelConfig(dp=1, tp=8, pp=4, sp=True, recompute="full", cp=16)
    e1 = par.estimate(m, base, h100, **kw)
    e16 = par.estimate(m, with_cp, h100, **kw)
    # issue 23: b*s/cp tokens per rank quantize the GEMM tiles a little worse (layer_gemm_efficiency)
    c1, c16 = dict(e1.breakdown)["compute"], dict(e16.breakdown)["compute"]
    assert c1 / 16 <= c16 == pytest.approx(c1 / 16, rel=0.05)
    assert e16.gpus == 16 * e1.gpus
    layers = math.ceil(80 / 4)
    block = 2 * (131072 // 16) * 128 * 2  # K and V of one KV head (8 heads / tp 8) per rank
    per_layer = 15 * block * 3 + 15 * block  # forward + backward (2x) + the recomputed forward
    assert dict(e16.comm_bytes)["cp_kv_exchange"] == 16 * layers * per_layer
    with pytest.raises(ValueError, match="^attention must be flash"):
        par.estimate(m, with_cp, h100, attention="eager", **kw)


def test_search_tries_cp_for_long_sequences_and_ep_for_moe():
    assert par.cp_candidates(64, 4096) == [1]
    assert par.cp_candidates(64, 131072) == [1, 2, 4, 8, 16, 32, 64]
    assert par.cp_candidates(64, 131072, cp=4) == [4]
    assert par.ep_candidates(MIXTRAL, 16) == [1, 2, 4, 8]
    assert par.ep_candidates(get_model("llama-2-7b"), 16) == [1]
    layouts = par.enumerate_layouts(MIXTRAL, 16, 256, seq_len=4096)
    assert {c.ep for c in layouts} == {1, 2, 4, 8} and {c.cp for c in layouts} == {1}
    assert all(c.sp for c in layouts if c.ep > 1 and c.tp > 1)
    long = par.enumerate_layouts(get_model("llama-3.1-70b"), 64, 16, seq_len=131072)
    assert {c.cp for c in long} >= {1, 2, 16}
    assert all(c.world_size == 64 for c in long)
    r = par.search(get_model("llama-3.1-70b"), "h100-sxm", 64, global_batch=16, seq_len=131072, cp=2)
    assert r.ranked and all(x.estimate.config.cp == 2 for x in r.ranked)


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "gpukit", "parallel", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_ep_cp_flags():
    base = ["--gpu", "h100-sxm", "--gpus-per-node", "8", "--micro-batch", "1"]
    r = _cli(
        "estimate", "--model", "llama-3.1-70b", *base, "--dp", "1", "--tp", "8", "--pp", "4", "--cp", "16",
        "--sp", "--global-batch", "16", "--seq-len", "131072", "--recompute", "full", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["cp"] == 16 and d["gpus"] == 512 and d["comm_per_gpu_bytes"]["cp_kv_exchange"] > 0
    bad = _cli(
        "estimate", "--model", "llama-3.1-70b", *base, "--dp", "8", "--tp", "1", "--pp", "1", "--ep", "2",
        "--global-batch", "16",
    )  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: ep must be 1")
    assert "Traceback" not in bad.stderr


def test_comm_volume_ep_cp_bytes_are_estimates(h100):
    cases = (
        (MIXTRAL, par.ParallelConfig(dp=8, ep=8, zero_stage=1), dict(global_batch=256, seq_len=4096)),
        (
            get_model("llama-3.1-70b"),
            par.ParallelConfig(dp=1, tp=8, pp=4, cp=16, sp=True, recompute="full"),
            dict(global_batch=16, seq_len=131072),
        ),
    )
    for model, cfg, kw in cases:
        v = par.comm_volume(model, cfg, **kw)
        cb = dict(par.estimate(model, cfg, h100, **kw).comm_bytes)
        assert v["ep_bytes"] == cb["ep_all_to_all"] and v["cp_bytes"] == cb["cp_kv_exchange"]
        assert v["tp_bytes"] == cb["tp_activations"] and v["ep_bytes"] + v["cp_bytes"] > 0
    plain = par.comm_volume("llama-2-7b", par.ParallelConfig(dp=8), global_batch=64, seq_len=4096)
    assert plain["ep_bytes"] == plain["cp_bytes"] == 0


def test_all_to_all_rate_against_deepeps_published_h800_figures():
    """Out-of-sample check of the all-to-all rate (no factor set from it): DeepEP's README
    (github.com/deepseek-ai/DeepEP, "Normal kernels", accessed 2026-12-04) measures dispatch on H800
    (NVLink 400 GB/s bidirectional = 200 per direction, NVIDIA H800 datasheet; ~160 GB/s reachable per
    DeepEP) at 153 GB/s intranode with EP 8, and 43 GB/s per CX7 400 Gb/s NIC internode with EP 16
    (4096 tokens, hidden 7168, top-8, FP8 dispatch). The model: the stated LINK_EFFICIENCY (0.8) of
    each link's line rate, NCCL's base latency, per-hop alpha."""
    net = cluster_network((0.6e-6, 200.0), "ib-ndr", gpus_per_node=8)
    S = 4096 * 8 * 7168 * 1  # one rank's dispatch buffer, fp8
    intra = network_all_to_all(S, 8, net)
    rate = intra.phases[0][1].bytes_sent_per_rank / intra.time_s / 1e9
    assert rate == pytest.approx(153, rel=0.10)  # model 158.7 GB/s: +3.7%
    inter = network_all_to_all(S, 16, net)
    p = dict(inter.phases)["inter_all_to_all"]
    rate_ib = p.bytes_sent_per_rank / p.time_s / 1e9
    assert rate_ib == pytest.approx(43, rel=0.10)  # model 39.9 GB/s: -7.3%
