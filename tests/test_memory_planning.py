"""The planning model (gpukit.memory, convention "pytorch") against measured training steps of both
reference layouts, the Llama reference model itself, and the CLI's three predictions.

The GPT grid is checked in tests/test_memory_validation.py (its measured grid is shared there); here:
the Llama grid, random shapes of both layouts that no grid names (hypothesis, slow), the pure
properties of the two conventions (fast), the Llama layout's parameter count, the SDPA kernel torch
picks on CPU, and the CLI (keys, bad input).
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpukit import memory as mem
from gpukit.bench.measure_validate import (
    LLAMA_GRID,
    TOLERANCE,
    compare,
    error_table,
    random_configs,
    validate_grid,
)
from gpukit.bench.models import build_llama_model, sdpa_kernel
from gpukit.catalog import get_model
from gpukit.cli import main
from gpukit.memory import EagerSetup, llama_spec, reference_spec

torch.set_num_threads(2)
GPT = get_model("gpt2-medium")
LLAMA7 = get_model("llama-2-7b")


# ---- pure properties of the two conventions (fast) ----


def test_default_convention_is_pytorch_and_megatron_is_named():
    assert mem.TrainSetup().convention == "pytorch"
    r = mem.estimate_memory(GPT, setup=mem.TrainSetup(seq_len=1024))
    assert r.convention == "pytorch" and r.peak_phase in dict(r.phase_peaks)
    assert r.total_bytes == sum(getattr(r, f"{c}_bytes") for c in r.COMPONENTS)
    assert abs(r.total_bytes - max(v for _, v in r.phase_peaks)) <= 8  # the largest phase (per-part ceil)
    p = mem.estimate_memory(GPT, setup=mem.TrainSetup(seq_len=1024, convention="megatron"))
    assert p.peak_phase == "sum" and p.phase_peaks == ()


def test_bad_convention_is_one_line():
    with pytest.raises(ValueError, match="^convention must be one of"):
        mem.TrainSetup(convention="paper")
    with pytest.raises(ValueError, match="^optimizer_impl must be one of"):
        mem.TrainSetup(optimizer_impl="apex")


def test_autocast_keeps_fp32_states_and_foreach_adds_sqrt_v():
    """torch.autocast: fp32 params, grads, AdamW m and v (4 + 4 + 8), at the optimizer step plus
    foreach's sqrt(v) (+4); fused: none; the papers' 2 + 2 + 12 sums to the same 16."""
    n = 10**9
    for impl, extra in (("foreach", 4), ("fused", 0)):
        r = mem.estimate_memory(n_params=n, setup=mem.TrainSetup(optimizer_impl=impl))
        assert (r.params_bytes, r.grads_bytes, r.optimizer_bytes) == (4 * n, 4 * n, (8 + extra) * n)
    p = mem.estimate_memory(n_params=n, setup=mem.TrainSetup(convention="megatron"))
    assert (p.params_bytes, p.grads_bytes, p.optimizer_bytes) == (2 * n, 2 * n, 12 * n)


def test_peak_never_exceeds_the_sum_of_parts_without_transients():
    """With fused AdamW and no DDP, the pytorch peak is at most params + grads + states + forward-end
    activations + the loss's three sbV buffers: phases never hold everything at once."""
    for model, s in ((GPT, 1024), (LLAMA7, 4096)):
        for rc in ("none", "full"):
            st_ = mem.TrainSetup(seq_len=s, recompute=rc, optimizer_impl="fused", dropout=False)
            r = mem.estimate_memory(model, setup=st_)
            w, g, o = mem.state_bytes_per_param(st_)
            upper = (
                (w + g + o) * model.n_params
                + mem.pytorch_forward_end_bytes(model, st_)
                + 12 * s * model.vocab
                + mem.pytorch_layer_activation_bytes(model, st_, "none") * 2
            )
            assert r.total_bytes <= upper


def test_zero3_has_no_autocast_weight_copies():
    """ZeRO-3/FSDP casts the gathered layer itself: no per-layer bf16 copies cached by autocast."""
    s = mem.TrainSetup(seq_len=2048, recompute="full", zero_stage=3, dp=8)
    assert mem.autocast_weight_copy_bytes(LLAMA7, s) == 0
    assert mem.autocast_weight_copy_bytes(LLAMA7, replace(s, zero_stage=0, dp=1)) > 0


@settings(max_examples=30, deadline=None)
@given(
    b=st.integers(1, 16),
    s=st.sampled_from([256, 512, 1024, 2048]),
    rc=st.sampled_from(["none", "full"]),
    att=st.sampled_from(["flash", "eager"]),
    prec=st.sampled_from(["fp32", "bf16-mixed", "bf16"]),
)
def test_pytorch_peak_is_monotone_in_batch_and_sequence(b, s, rc, att, prec):
    base = mem.TrainSetup(seq_len=s, micro_batch=b, recompute=rc, attention=att, precision=prec)
    r = mem.estimate_memory(LLAMA7, setup=base).total_bytes
    assert mem.estimate_memory(LLAMA7, setup=replace(base, micro_batch=b + 1)).total_bytes >= r
    assert mem.estimate_memory(LLAMA7, setup=replace(base, seq_len=2 * s)).total_bytes >= r


@settings(max_examples=40, deadline=None)
@given(
    z=st.integers(0, 3),
    dp=st.sampled_from([1, 2, 8, 64]),
    tp=st.sampled_from([1, 2, 4]),
    pp=st.sampled_from([1, 2, 4]),
    sp=st.booleans(),
    rc=st.sampled_from(["none", "selective", "full"]),
    opt=st.sampled_from(["adamw", "adamw-8bit", "sgd-momentum", "sgd"]),
    accum=st.integers(1, 8),
)
def test_pytorch_convention_parallel_layouts_are_consistent(z, dp, tp, pp, sp, rc, opt, accum):
    """Any layout: components sum to the total, the total is the largest phase, every phase is
    finite and positive, and more ZeRO sharding (larger dp, stage >= 1) never costs memory."""
    if z >= 2 and pp > 1:  # ZeRO-2/3 are not combined with pipeline stages (mem.check_zero_pp)
        with pytest.raises(ValueError, match="ZeRO-2/3 are not combined with pipeline stages"):
            mem.TrainSetup(zero_stage=z, dp=dp, pp=pp)
        return
    s = mem.TrainSetup(
        zero_stage=z, dp=dp, tp=tp, pp=pp, sp=sp, recompute=rc, optimizer=opt, grad_accum=accum, seq_len=2048
    )
    r = mem.estimate_memory(LLAMA7, setup=s)
    assert r.total_bytes == sum(getattr(r, f"{c}_bytes") for c in r.COMPONENTS)
    assert abs(r.total_bytes - max(v for _, v in r.phase_peaks)) <= 8 and r.total_bytes > 0  # per-part ceil
    if z >= 1:
        assert mem.estimate_memory(LLAMA7, setup=replace(s, dp=2 * dp)).total_bytes <= r.total_bytes


# ---- the Llama reference layout ----


def test_llama_layout_params_are_exact():
    spec = llama_spec(n_layers=3, hidden=96, n_heads=6, n_kv_heads=2, vocab=300, seq=64)
    model = build_llama_model(spec)
    assert sum(p.numel() for p in model.parameters()) == spec.n_params
    blk = model.blocks[0]
    assert tuple(blk.attn.k_proj.weight.shape) == (spec.kv_dim, spec.hidden)
    assert tuple(blk.mlp.gate.weight.shape) == (spec.ffn_hidden, spec.hidden)
    assert all(not n.endswith("bias") for n, _ in model.named_parameters())  # no biases, no LayerNorm
    assert not any(isinstance(m, torch.nn.Dropout) for m in model.modules())


def test_llama_layout_is_refused_for_a_gpt_spec():
    with pytest.raises(ValueError, match="^mlp must be swiglu for the reference Llama, got gelu"):
        build_llama_model(reference_spec())
    with pytest.raises(ValueError, match="^n_kv_heads must divide n_heads"):
        llama_spec(n_heads=4, n_kv_heads=3)


def test_sdpa_on_cpu_picks_the_flash_attention_cpu_kernel():
    """Which kernel SDPA runs on CPU (torch 2.13): the flash-attention CPU kernel, for fp32 and bf16,
    with and without grouped-query attention; so the planning model's 'flash' term applies."""
    for dtype in ("fp32", "bf16"):
        for gqa in (False, True):
            assert sdpa_kernel("cpu", dtype, gqa) == "ScaledDotProductFlashAttentionForCpuBackward0"


# ---- against measurement ----


@pytest.mark.slow
def test_llama_grid_planning_within_10pct():
    df = validate_grid(LLAMA_GRID)
    assert set(df["attention"]) == {"eager", "sdpa"} and set(df["arch"]) == {"llama"}
    err = df["planning_peak_err"].abs()
    assert (err <= TOLERANCE["peak"]).all(), df.loc[err > 0.10, ["config", "planning_peak_err"]]
    assert df["peak_err"].isna().all()  # the replay does not model this layout
    table = error_table(df)
    assert list(table["model"]) == ["replay (memory_eager)", "planning (pytorch)", "megatron convention"]


layouts = st.sampled_from(["gpt", "llama"])


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arch=layouts, seed=st.integers(0, 2**31 - 1))
def test_random_shapes_planning_within_10pct(arch, seed):
    """Shapes no grid or test names (random_configs draws them from the seed hypothesis picks)."""
    ((spec, setup, attention),) = random_configs(1, seed, arch)
    r = compare(spec, setup, attention=attention)
    assert abs(r["error"]["planning"]["peak"]) <= TOLERANCE["peak"], (
        spec,
        setup,
        attention,
        r["error"]["planning"],
    )


def test_one_llama_sdpa_step_three_models(capsys):
    rc = main(
        [
            "validate",
            "memory",
            "--arch",
            "llama",
            "--attention",
            "sdpa",
            "--layers",
            "1",
            "--hidden",
            "64",
            "--heads",
            "4",
            "--kv-heads",
            "2",
            "--vocab",
            "128",
            "--seq-len",
            "32",
            "--json",
        ]
    )
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert {"predicted", "planning", "megatron", "measured", "error"} <= set(d)
    assert d["predicted"] is None and d["error"]["predicted"] is None  # no replay of this layout
    assert set(d["error"]["planning"]) == {"params", "grads", "optimizer", "activations", "peak"}
    assert d["config"]["arch"] == "llama" and d["config"]["attention"] == "sdpa"
    assert d["config"]["sdpa_kernel"] == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert d["measured"]["params"] == d["planning"]["params"]  # fp32 parameters, exact
    assert abs(d["error"]["planning"]["peak"]) <= TOLERANCE["peak"]


def test_cli_text_has_three_models(capsys):
    assert (
        main(
            [
                "validate",
                "memory",
                "--layers",
                "1",
                "--hidden",
                "64",
                "--heads",
                "2",
                "--vocab",
                "128",
                "--seq-len",
                "32",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "replay" in out and "planning" in out and "megatron" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--arch", "mamba"], "arch must be one of"),
        (["--attention", "flash"], "attention must be one of"),
        (["--arch", "llama", "--heads", "4", "--kv-heads", "3"], "n_kv_heads must divide n_heads"),
        (["--kv-heads", "2"], "--kv-heads must equal --heads 4 for --arch gpt"),
        (["--random", "0"], "--random must be a positive count"),
        (["--grid", "--random", "2"], "--random must be a positive count and not combined with --grid"),
        # flags the grid or the random draw would have ignored (the whole grid ran at its own shapes)
        (["--grid", "--layers", "3"], "--layers sets the one configuration; --grid runs its own"),
        (
            ["--random", "2", "--precision", "bf16-mixed"],
            "--precision sets the one configuration; --random runs its own",
        ),
        (["--grid", "--seq-len", "64"], "--seq-len sets the one configuration"),
        (["--seed", "5"], "--seed seeds --random"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert main(["validate", "memory", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_random_configs_are_reproducible_and_bad_arch_refused():
    assert random_configs(3, 7, "llama") == random_configs(3, 7, "llama")
    assert random_configs(3, 7, "gpt") != random_configs(3, 8, "gpt")
    with pytest.raises(ValueError, match="^arch must be one of"):
        random_configs(1, 0, "rwkv")
    assert EagerSetup()  # the setups random_configs draws are valid EagerSetups
