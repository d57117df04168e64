"""Memory, FLOPs and FP8 of mixtures of experts, expert and context parallelism (issue 24 sec. 2):
gpukit.memory (TrainSetup ep, cp, expert_tp, capacity_factor, precision fp8) and gpukit.compute's
active-parameter FLOPs, on Mixtral 8x7B and DeepSeek-V3 built from their config.json.

Shapes: Mixtral-8x7B-v0.1 config.json (huggingface.co/mistralai/Mixtral-8x7B-v0.1, accessed
2026-12-05): hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336, vocab 32000, 8 local
experts, top-2. DeepSeek-V3 config.json (huggingface.co/deepseek-ai/DeepSeek-V3, accessed 2026-12-05):
hidden 7168, 61 layers, 128 heads, intermediate 18432, moe_intermediate 2048, 256 routed + 1 shared
experts, top-8, first_k_dense_replace 3, kv_lora_rank 512, q_lora_rank 1536, qk_nope 128, qk_rope 64,
v_head 128, vocab 129280. Published: Mixtral 46.7B total / 12.9B active (arXiv:2401.04088 sec. 2);
DeepSeek-V3 671B / 37B (arXiv:2412.19437 sec. 1).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from gpukit import compute
from gpukit import memory as mem
from gpukit import parallel as par
from gpukit.specs import ModelSpec

MIXTRAL = ModelSpec(
    "mixtral-8x7b",
    n_layers=32,
    hidden=4096,
    n_heads=32,
    n_kv_heads=8,
    ffn_hidden=14336,
    vocab=32000,
    max_seq=32768,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
    dropout=False,
    n_experts=8,
    experts_per_token=2,
)
DSV3 = ModelSpec(
    "deepseek-v3",
    n_layers=61,
    hidden=7168,
    n_heads=128,
    head_dim=128,
    ffn_hidden=18432,
    moe_ffn_hidden=2048,
    vocab=129280,
    max_seq=4096,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
    dropout=False,
    n_experts=256,
    experts_per_token=8,
    n_shared_experts=1,
    first_dense_layers=3,
    kv_lora_rank=512,
    q_lora_rank=1536,
    qk_rope_head_dim=64,
    v_head_dim=128,
)
MEG = "megatron"


def _setup(**kw):
    base = dict(convention=MEG, seq_len=4096, zero_stage=1, recompute="full", sp=True)
    return mem.TrainSetup(**(base | kw))


@pytest.mark.parametrize("model,ep,dp", [(MIXTRAL, 8, 8), (MIXTRAL, 4, 8), (DSV3, 64, 64), (DSV3, 8, 16)])
def test_expert_weights_shard_exactly_n_experts_over_ep(model, ep, dp):
    b = mem.estimate_memory(model, setup=_setup(dp=dp, ep=ep, zero_stage=0))
    experts = model.n_moe_layers * model.n_experts * model.expert_params()
    assert b.term("experts_per_gpu") == model.n_experts / ep
    assert b.term("expert_params_per_gpu") == experts / ep
    assert b.term("dense_params_per_gpu") == model.n_params - experts
    # bf16 weights: 2 bytes per parameter the GPU holds, dense replicated and experts / ep
    assert b.params_bytes == pytest.approx(2 * (model.n_params - experts + experts / ep), abs=1)
    one = mem.estimate_memory(model, setup=_setup(dp=dp, ep=1, zero_stage=0))
    assert one.params_bytes - b.params_bytes == pytest.approx(2 * experts * (1 - 1 / ep), abs=2)


def test_expert_optimizer_states_shard_over_the_expert_data_parallel_group():
    # Megatron-Core: dense states over dp*cp, expert states over dp*cp/ep (expert_tp = tp)
    s = _setup(dp=8, cp=2, ep=4, zero_stage=2)
    assert s.expert_dp == 4 and s.dense_dp == 16
    b = mem.estimate_memory(MIXTRAL, setup=s)
    experts = MIXTRAL.n_moe_layers * MIXTRAL.n_experts * MIXTRAL.expert_params()
    dense = MIXTRAL.n_params - experts
    assert b.optimizer_bytes == pytest.approx(12 * (dense / 16 + experts / 4 / 4), abs=2)
    assert b.grads_bytes == pytest.approx(2 * (dense / 16 + experts / 4 / 4), abs=2)
    assert b.params_bytes == pytest.approx(2 * (dense + experts / 4), abs=2)  # ZeRO-2: weights whole
    # expert_tp splits each expert: experts / (ep * expert_tp), the expert-DP group shrinks alike
    e2 = _setup(dp=8, tp=2, ep=4, expert_tp=2, zero_stage=0)
    assert e2.expert_dp == 2
    b2 = mem.estimate_memory(MIXTRAL, setup=e2)
    assert b2.term("expert_params_per_gpu") == experts / 8


def test_deepseek_v3_fits_a_node_of_h200_only_with_ep_and_fp8_states_sharded():
    # DeepSeek-V3 trained with 64-way EP over 8 nodes (arXiv:2412.19437 sec. 3.1) and ZeRO-1 (sec. 3.1)
    s = _setup(dp=64, ep=64, pp=16, grad_accum=16, precision="fp8", seq_len=4096)
    b = mem.estimate_memory(DSV3, setup=s, gpu="h200")
    assert b.fits, b.to_text()
    assert not mem.estimate_memory(DSV3, setup=replace(s, ep=1), gpu="h200").fits


def test_capacity_factor_scales_the_routed_rows_only():
    s1, s2 = _setup(dp=8, ep=8, recompute="none"), _setup(dp=8, ep=8, recompute="none", capacity_factor=2.0)
    r1, t1 = mem.moe_mlp_activation_bytes(MIXTRAL, s1)
    r2, t2 = mem.moe_mlp_activation_bytes(MIXTRAL, s2)
    assert r1 == r2  # the router sees every token once
    # the capacity rows: cf x top_k x T tokens x (expert input h + 4 x moe_ffn wide intermediates), 2 bytes
    T = 4096 / 1  # sp with tp 1
    rows = 2 * T
    assert t2 - t1 == pytest.approx(rows * 2 * (MIXTRAL.hidden + 4 * MIXTRAL.moe_ffn_hidden))
    assert (
        mem.estimate_memory(MIXTRAL, setup=s2).activations_bytes
        > mem.estimate_memory(MIXTRAL, setup=s1).activations_bytes
    )


def test_context_parallelism_divides_the_activations_by_cp():
    a1 = mem.estimate_memory(MIXTRAL, setup=_setup(dp=8, seq_len=32768, recompute="none"))
    a4 = mem.estimate_memory(MIXTRAL, setup=_setup(dp=2, cp=4, seq_len=32768, recompute="none"))
    assert a4.activations_bytes == pytest.approx(a1.activations_bytes / 4, rel=1e-9)
    assert a4.logits_bytes == pytest.approx(a1.logits_bytes / 4, rel=1e-9)
    assert a4.optimizer_bytes == pytest.approx(a1.optimizer_bytes, abs=2)  # ZeRO over dp*cp = 8 both


# ---- FLOPs on active parameters -------------------------------------------------------------------
def test_active_flops_use_router_shared_and_top_k_experts():
    for m, published_active in ((MIXTRAL, 12.9e9), (DSV3, 37e9)):
        n = compute.active_matmul_params(m)
        # the matmul weights a token passes through: active params less embedding, norms (and MLA's
        # latent norms); the LM head is counted in the flops' own rows
        assert n == pytest.approx(m.active_params - m.embedding_params() - m.head_params(), rel=2e-3)
        assert m.active_params == pytest.approx(published_active, rel=0.03)
        f = compute.flops_per_token(m, seq_len=4096)
        assert f.get("dense_forward") == 2 * n and f.get("dense_backward") == 4 * n
        # MFU's 6 N_active per token, far below 6 N_total
        assert f.get("dense_forward") < 0.3 * 2 * m.n_params
    # Mixtral's routed experts: top-2 of 8 per layer, and the router h x 8
    mix = compute.active_matmul_params(MIXTRAL)
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024
    assert mix == 32 * (attn + 4096 * 8 + 2 * 3 * 4096 * 14336)


def test_mla_attention_flops_use_the_qk_and_v_widths():
    f = compute.flops_per_token(DSV3, seq_len=4096)
    # QK^T over 192 = 128 nope + 64 rope, AV over 128: 4 L H (192+128)/2 keys
    assert f.get("attention_forward") == pytest.approx(4 * 61 * 128 * 160 * 2048)
    assert compute.attention_width(MIXTRAL) == 32 * 128


def test_layout_estimate_reports_mfu_on_active_parameters():
    cl = par.make_cluster("h100-sxm", 8)
    e = par.estimate(MIXTRAL, par.ParallelConfig(dp=8, ep=8), cl, global_batch=8, seq_len=4096)
    fpt = compute.flops_per_token(MIXTRAL, seq_len=4096, include_embeddings=True)
    # MFU = 6 N_active (+ attention, LM head) x tokens / step / GPUs / peak, as the MoE reports count it
    assert e.mfu == pytest.approx(fpt.model_flops * 8 * 4096 / e.step_time_s / 8 / cl.peak_flops)
    assert e.tflops_per_gpu * 1e12 == pytest.approx(fpt.model_flops * 8 * 4096 / e.step_time_s / 8)


# ---- FP8 ------------------------------------------------------------------------------------------
def test_fp8_memory_recipe_against_bf16():
    bf = mem.estimate_memory(MIXTRAL, setup=_setup(dp=8, ep=8, recompute="none"))
    f8 = mem.estimate_memory(MIXTRAL, setup=_setup(dp=8, ep=8, recompute="none", precision="fp8"))
    assert f8.optimizer_bytes == bf.optimizer_bytes and f8.grads_bytes == bf.grads_bytes  # fp32 master + Adam
    extra = f8.term("fp8_extra_bytes")
    assert f8.params_bytes == pytest.approx(bf.params_bytes + extra, abs=2)
    # the weight cache: 2 bytes (fp8 weight + transpose) per GEMM weight the GPU holds, amax history small
    # (the embedding and LM head stay bf16: DeepSeek-V3 sec. 3.3.1)
    held = f8.term("dense_params_per_gpu") + f8.term("expert_params_per_gpu")
    gemm = held - MIXTRAL.embedding_params() - MIXTRAL.head_params()
    amax = 32 * (4 + 3 * 8 // 8) * 3 * (1024 + 2) * 4  # 3 fp8 tensors per GEMM, 1024-long history + scales
    assert extra == pytest.approx(2 * gemm + amax)
    assert f8.activations_bytes < bf.activations_bytes  # fp8 GEMM inputs saved
    assert mem.FP8_RECIPE in f8.to_text()


def test_fp8_time_factor_and_gemm_share():
    assert compute.fp8_matmul_time_factor("h100-sxm") == pytest.approx(989.4 / 1978.9)
    f = compute.flops_per_token(MIXTRAL, seq_len=4096, include_embeddings=True)
    share = compute.fp8_gemm_share(f, MIXTRAL)
    assert 0.8 < share < 1.0  # attention, LM head and router stay bf16
    scale = compute.matmul_time_scale(MIXTRAL, 4096, True, "none", "fp8", "h100-sxm")
    assert scale == pytest.approx(1 - share + share * 989.4 / 1978.9)
    assert compute.matmul_time_scale(MIXTRAL, 4096, True, "none", "bf16-mixed", "h100-sxm") == 1.0
    cl = par.make_cluster("h100-sxm", 8)
    cfg = par.ParallelConfig(dp=8, ep=8)
    bf = par.estimate(MIXTRAL, cfg, cl, global_batch=8, seq_len=4096)
    f8 = par.estimate(MIXTRAL, cfg, cl, global_batch=8, seq_len=4096, precision="fp8")
    c_bf, c_f8 = dict(bf.breakdown)["compute"], dict(f8.breakdown)["compute"]
    # the estimate times fp8 GEMMs at the cataloged achievable shares (efficiency.csv hopper bf16 vs fp8)
    ratio = (
        par.efficiency_row("h100-sxm", "matmul", "bf16").share
        / par.efficiency_row("h100-sxm", "matmul", "fp8").share
    )
    assert ratio > 1.0  # fp8 GEMMs reach a smaller share of their (twice higher) peak
    scaled = compute.matmul_time_scale(MIXTRAL, 4096, True, "none", "fp8", "h100-sxm", share_ratio=ratio)
    assert scale < scaled < 1.0
    # the fp8 GEMMs' time shrinks by the factor; the attention kernel and the bf16 GEMMs keep their time
    k = compute.fp8_matmul_time_factor("h100-sxm", ratio)
    gemm_rate = (
        cl.peak_flops * cl.matmul_efficiency * par.layer_gemm_efficiency(MIXTRAL, 4096, 1, cl.sm_count)
    )
    assert c_f8 == pytest.approx(c_bf - share * f.hardware_flops * 4096 * (1 - k) / gemm_rate)
    assert c_f8 > c_bf * scaled  # attention at its own (lower) rate is a larger share of the bf16 step
    assert f8.step_time_s < bf.step_time_s and f8.step_time_s > bf.step_time_s / 2  # well under 2x


@pytest.mark.parametrize("gpu", ["a100-80gb", "v100-32gb"])
def test_fp8_on_a_gpu_without_fp8_is_a_one_line_error(gpu):
    with pytest.raises(ValueError, match="fp8 tensor cores") as e:
        mem.estimate_memory(MIXTRAL, setup=_setup(dp=8, precision="fp8"), gpu=gpu)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="fp8 tensor cores"):
        compute.fp8_matmul_time_factor(gpu)


@pytest.mark.parametrize(
    "model,kw,fragment",
    [
        (MIXTRAL, dict(dp=6, ep=3), "ep must divide n_experts 8"),
        (DSV3.__class__("dense", 2, 64, 2), dict(dp=2, ep=2), "need a mixture of experts"),
        (MIXTRAL, dict(dp=2, ep=4), "ep*expert_tp must divide dp*cp*tp"),
        (MIXTRAL, dict(capacity_factor=0), "capacity_factor must be a finite number > 0"),
        (MIXTRAL, dict(capacity_factor=float("nan")), "capacity_factor must be a finite number > 0"),
        (MIXTRAL, dict(cp=2, attention="eager"), "attention must be flash with cp 2"),
        (MIXTRAL, dict(cp=3, seq_len=4096), "seq_len must be a multiple of cp 3"),
        (MIXTRAL, dict(ep=0), "ep must be a positive integer"),
        (MIXTRAL, dict(precision="fp8", finetune="lora"), "precision fp8 is the FP8 training recipe"),
    ],
)
def test_bad_inputs_are_one_line_errors(model, kw, fragment):
    with pytest.raises(ValueError, match=fragment.replace("*", r"\*")) as e:
        mem.estimate_memory(model, setup=_setup(**kw))
    assert "\n" not in str(e.value)


def test_mla_attention_activations_use_the_latent_and_head_widths():
    s = _setup(dp=8, ep=8, recompute="none", seq_len=4096, sp=False)
    got = mem.attention_activation_bytes(DSV3, s)
    T, h = 4096, 7168
    latent = 2 * (1536 + 512 + 64) + 2 * (1536 + 512)  # norm inputs + up-projection inputs, bf16
    heads = 2 * (2 * 128 * 192 + 128 * 128) + 2 * 128 * 128  # Q, K at 192, V at 128; output-projection input
    lse = 4 * 128  # fp32 logsumexp per head
    assert got == pytest.approx(T * (2 * h + latent + heads + lse))


def test_fp8_estimate_states_its_share_and_assumption():
    cl = par.make_cluster("h100-sxm", 8)
    e = par.estimate(
        MIXTRAL, par.ParallelConfig(dp=8, ep=8), cl, global_batch=8, seq_len=4096, precision="fp8"
    )
    note = next(n for n in e.notes if n.startswith("precision fp8"))
    f = compute.flops_per_token(MIXTRAL, seq_len=4096, include_embeddings=True)
    assert f"{compute.fp8_gemm_share(f, MIXTRAL):.0%} of the step's FLOPs are fp8 GEMMs" in note
    assert "achievable shares of the bf16 and fp8 peaks from the catalog" in note
    with pytest.raises(ValueError, match="fp8 tensor cores"):
        par.estimate(
            MIXTRAL,
            par.ParallelConfig(dp=8, ep=8),
            par.make_cluster("a100-80gb", 8),
            global_batch=8,
            seq_len=4096,
            precision="fp8",
        )


def test_a_pipeline_stage_holds_whole_moe_blocks():
    """DeepSeek-V3 on pp 16: the heaviest stage has 4 blocks, all MoE (ceil(58 x 4 / 61)); the mean block
    (3 dense layers averaged in) would leave its dense part negative once the experts are taken out."""
    from gpukit.catalog import get_model

    m = get_model("deepseek-v3")
    assert m.stage_moe_layers(4) == 4
    first_moe = m.first_dense_layers
    assert m.stage_blocks_params(4) == 4 * m.layer_params_at(first_moe) > 4 * m.layer_params()
    dense, expert = mem.stage_param_split(m, _setup(dp=128, pp=16, ep=64, zero_stage=1), "first")
    assert dense > 0 and expert == pytest.approx(4 * m.n_experts * m.expert_params() / 64)


def test_deepseek_v3_published_throughput_lies_between_the_overlap_bounds():
    """DeepSeek-V3 (arXiv 2412.19437): 14.8T tokens in 2.664M H800 GPU-hours (sec. 1, table 1) on 2048 H800 with
    PP16, EP64, ZeRO-1 DP, FP8 (sec. 3.1-3.3): 1,543 tokens/s per GPU. The estimate with the EP all-to-all
    exposed (Megatron-Core's default) must come out below it and with it fully hidden (DualPipe, sec. 3.2.1)
    above it: the published run is bracketed by the two stated overlap assumptions, no factor set on it."""
    from gpukit.catalog import get_model

    published = 14.8e12 / (2.664e6 * 3600)
    cfg = par.ParallelConfig(dp=128, pp=16, ep=64, zero_stage=1, recompute="full")
    cl = par.make_cluster("h800", 8)
    kw = dict(global_batch=15360, seq_len=4096, precision="fp8")
    exposed = par.estimate(get_model("deepseek-v3"), cfg, cl, **kw)
    hidden = par.estimate(get_model("deepseek-v3"), cfg, cl, ep_overlap=1.0, **kw)
    assert exposed.fits and hidden.fits
    assert exposed.tokens_per_s / 2048 < published < hidden.tokens_per_s / 2048


def test_qlora_quantizes_every_expert():
    """QLoRA of a mixture of experts (bitsandbytes replaces every Linear of the blocks, experts included):
    Mixtral 8x7B's frozen weights take about half a byte per parameter (NF4 + double-quantized constants),
    not the 16-bit experts of one dense MLP's accounting (77 GiB before), and it fits one 40 GB card at 2k."""
    from gpukit.catalog import get_model

    m = get_model("mixtral-8x7b")
    b = mem.estimate_memory(
        m, setup=mem.TrainSetup(finetune="qlora", seq_len=2048, recompute="full"), gpu="a100-40gb"
    )
    assert 0.5 * m.n_params < b.params_bytes < 0.55 * m.n_params
    assert b.fits


def test_parallel_cli_takes_the_training_precision(capsys):
    """`parallel estimate/search --precision fp8`: the FP8 recipe reaches the layout estimate (faster, more
    memory than bf16-mixed for Mixtral on 16 H100s); a GPU without fp8 units exits 2 with one line."""
    import json

    from gpukit.cli import main

    base = (
        "parallel estimate --model mixtral-8x7b --gpu h100-sxm --gpus-per-node 8 --dp 8 --tp 1 --pp 2 --ep 8"
    )
    base += " --micro-batch 1 --zero 1 --recompute full --global-batch 64 --seq-len 4096 --json --precision"
    out = {}
    for p in ("bf16-mixed", "fp8"):
        assert main([*base.split(), p]) == 0
        out[p] = json.loads(capsys.readouterr().out)
    assert out["fp8"]["tokens_per_s"] > 1.2 * out["bf16-mixed"]["tokens_per_s"]
    assert out["fp8"]["memory_per_gpu_bytes"] > out["bf16-mixed"]["memory_per_gpu_bytes"]
    bad = "parallel estimate --model llama-2-7b --gpu a100-80gb --gpus-per-node 8 --dp 8 --tp 1 --pp 1"
    assert main([*bad.split(), "--micro-batch", "1", "--global-batch", "8", "--precision", "fp8"]) == 2
    err = capsys.readouterr().err
    assert "fp8" in err and err.strip().count("\n") == 0
