"""The eager memory model (gpukit.memory.eager) against real training steps measured by MemTracker.

The grid test trains every configuration of gpukit.bench.measure.VALIDATION_GRID for real (about 20-40 s on
2 shared cores) and holds each to the issue's targets: params, grads and optimizer states within 2%,
peak within 10%. Random configurations (hypothesis) check that the model is not tuned to the grid.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpukit.bench.measure import measure_training_memory
from gpukit.bench.measure_validate import (
    COMPARED,
    TOLERANCE,
    VALIDATION_GRID,
    compare,
    relative_error,
    validate_grid,
)
from gpukit.bench.models import reference_spec
from gpukit.cli import main
from gpukit.memory import (
    EagerSetup,
    eager_activation_bytes,
    eager_layer_activation_bytes,
    megatron_activation_bytes,
    param_shapes,
    predict_training_memory,
    reconcile_megatron,
)
from gpukit.specs import ModelSpec

torch.set_num_threads(2)


@pytest.fixture(scope="module")
def grid():
    return validate_grid(VALIDATION_GRID)


# ---- the grid, measured for real ----


def test_grid_is_the_required_size_and_variety():
    setups = [s for _, s in VALIDATION_GRID]
    specs = [m for m, _ in VALIDATION_GRID]
    assert len(VALIDATION_GRID) >= 12
    assert {s.recompute for s in setups} == {"none", "full"}
    assert {s.precision for s in setups} == {"fp32", "bf16-mixed"}
    assert {s.optimizer for s in setups} == {"adamw", "sgd-momentum", "sgd"}
    assert min(s.micro_batch for s in setups) == 1 and max(s.micro_batch for s in setups) >= 8
    assert min(s.seq_len for s in setups) <= 64 and max(s.seq_len for s in setups) >= 512
    assert min(m.hidden for m in specs) <= 64 and max(m.hidden for m in specs) >= 256
    assert {m.n_layers for m in specs} >= {2, 3, 4}


def test_every_grid_config_meets_the_targets(grid):
    for _, row in grid.iterrows():
        for k, tol in TOLERANCE.items():
            assert abs(row[f"{k}_err"]) <= tol, (
                f"{row['config']}: {k} error {row[f'{k}_err']:+.3%} > {tol:.0%}"
            )


def test_grid_activations_and_peak_phase_match(grid):
    """Not required by the issue, but the op-level model should get these right too."""
    assert (grid["activations_err"].abs() <= 0.10).all(), grid[["config", "activations_err"]]
    assert (grid["peak_phase_pred"] == grid["peak_phase_meas"]).all()
    # the grid exercises all three phases as the peak
    assert set(grid["peak_phase_meas"]) == {"forward", "backward", "optimizer"}


def test_planning_model_within_10pct_on_the_grid(grid):
    """The planning model (gpukit.memory, pytorch convention) is what users plan with: its peak is
    within 10% of the measured one on every grid configuration; the megatron convention is not."""
    err = grid["planning_peak_err"].abs()
    assert (err <= 0.10).all(), grid.loc[err > 0.10, ["config", "planning_peak_err"]]
    assert grid["megatron_peak_err"].abs().max() > 0.10


def test_paper_formula_alone_would_miss(grid):
    """The Megatron convention (16-bit, dropout masks) is not a prediction of eager activations: it
    misses the measured forward-end activations by more than 10% in most configurations."""
    paper_err = (grid["megatron_act"] / grid["activations_meas"] - 1).abs()
    assert (paper_err > 0.10).mean() >= 0.75, paper_err
    assert (grid["activations_err"].abs() < 0.01).all()


def test_recompute_full_keeps_fewer_activations_measured_and_predicted(grid):
    by = {r["config"]: r for _, r in grid.iterrows()}
    for prec in ("fp32", "bf16-mixed"):
        none = by[f"gpt-eager L2 h128 a4 V512 s128 b2 none {prec} adamw"]
        full = by[f"gpt-eager L2 h128 a4 V512 s128 b2 full {prec} adamw"]
        assert full["activations_meas"] < none["activations_meas"]
        assert full["activations_pred"] < none["activations_pred"]
        assert full["peak_meas"] < none["peak_meas"]


# ---- random configurations: the model is not tuned to the grid ----

configs = st.tuples(
    st.integers(1, 3),  # layers
    st.sampled_from([(32, 2), (48, 3), (64, 4), (64, 1), (96, 2)]),  # hidden, heads
    st.integers(16, 300),  # vocab
    st.integers(4, 96),  # seq
    st.integers(1, 4),  # micro-batch
    st.sampled_from(["none", "full"]),
    st.sampled_from(["fp32", "bf16-mixed"]),
    st.sampled_from(["adamw", "sgd-momentum", "sgd"]),
    st.booleans(),  # tied
    st.integers(0, 16),  # max_seq - seq
    st.sampled_from([None, 100]),  # ffn_hidden
)


def _spec(L, ha, V, s, tied, extra, ffn):
    h, a = ha
    return ModelSpec(
        name="rand",
        n_layers=L,
        hidden=h,
        n_heads=a,
        vocab=V,
        max_seq=s + extra,
        tied_embeddings=tied,
        ffn_hidden=ffn,
    )


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs)
def test_random_configs_meet_the_targets(cfg):
    L, ha, V, s, b, rec, prec, opt, tied, extra, ffn = cfg
    spec = _spec(L, ha, V, s, tied, extra, ffn)
    r = compare(spec, EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt))
    for k, tol in TOLERANCE.items():
        assert abs(r["error"]["predicted"][k]) <= tol, (cfg, k, r["error"])
    assert abs(r["error"]["planning"]["peak"]) <= TOLERANCE["peak"], (cfg, r["error"]["planning"])


def test_step_one_peak_is_predicted_and_not_above_steady_state():
    spec = reference_spec(2, 64, 2, 256, 64)
    setup = EagerSetup(seq_len=64, micro_batch=2, optimizer="adamw")
    pred = predict_training_memory(spec, setup)
    meas = measure_training_memory(spec, setup, steps=2)
    assert abs(relative_error(pred.step1_peak_bytes, meas.step_peaks[0])) <= 0.10
    assert meas.step_peaks[0] <= meas.step_peaks[1]
    # MemTracker's categories equal the bytes counted directly from the model and optimizer
    assert dict(meas.counted) == {
        "params": meas.params_bytes,
        "grads": meas.grads_bytes,
        "optimizer": meas.optimizer_bytes,
    }
    assert pred.step1_peak_bytes <= pred.peak_bytes


# ---- the pure predictor ----


@settings(max_examples=40, deadline=None)
@given(configs, st.integers(1, 3), st.sampled_from(["cpu", "cuda"]))
def test_predictor_is_monotone_in_micro_batch_and_seq(cfg, more, device):
    L, ha, V, s, b, rec, prec, opt, tied, extra, ffn = cfg
    spec = _spec(L, ha, V, s + more, tied, extra, ffn)
    base = EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt, device=device)
    p0 = predict_training_memory(spec, base)
    for bigger in (
        dataclasses.replace(base, micro_batch=b + more),
        dataclasses.replace(base, seq_len=s + more),
    ):
        p1 = predict_training_memory(spec, bigger)
        if device == "cpu":
            assert p1.activations_bytes > p0.activations_bytes
        else:  # CUDA rounds every tensor up to 512 B: small growth can vanish in the rounding
            assert p1.activations_bytes >= p0.activations_bytes
        assert p1.peak_bytes >= p0.peak_bytes
        assert (p1.params_bytes, p1.grads_bytes, p1.optimizer_bytes) == (
            p0.params_bytes,
            p0.grads_bytes,
            p0.optimizer_bytes,
        )


@settings(max_examples=60, deadline=None)
@given(configs)
def test_closed_form_equals_the_replayed_step(cfg):
    """The per-layer formula of the docstring is the same model as the op-by-op replay (CPU)."""
    L, ha, V, s, b, rec, prec, opt, tied, extra, ffn = cfg
    spec = _spec(L, ha, V, s, tied, extra, ffn)
    setup = EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt)
    p = predict_training_memory(spec, setup)
    assert p.activations_bytes == eager_activation_bytes(spec, setup) == p.activation_formula_bytes
    steps = reconcile_megatron(spec, setup)
    assert sum(d for _, d in steps) == eager_layer_activation_bytes(spec, setup)
    if ffn is None:  # reference layout: the named differences explain the whole gap
        assert steps[-1][1] == 0
    assert steps[0][1] * spec.n_layers == megatron_activation_bytes(spec, s, b, rec)


def test_documented_closed_forms():
    """64sbh + 4as^2b + 16sb (fp32), 36sbh + 2as^2b + 16sb + 24h^2 (bf16, CPU), 4sbh (full recompute)."""
    s, b, h, a = 128, 2, 128, 4
    spec = reference_spec(2, h, a, 512, s)
    fp32 = eager_layer_activation_bytes(spec, EagerSetup(s, b))
    bf16 = eager_layer_activation_bytes(spec, EagerSetup(s, b, precision="bf16-mixed"))
    bf16_cuda = eager_layer_activation_bytes(spec, EagerSetup(s, b, precision="bf16-mixed", device="cuda"))
    full = eager_layer_activation_bytes(spec, EagerSetup(s, b, recompute="full"))
    assert fp32 == 64 * s * b * h + 4 * a * s * s * b + 16 * s * b
    assert bf16 == 36 * s * b * h + 2 * a * s * s * b + 16 * s * b + 24 * h * h
    assert bf16_cuda == bf16 + 4 * a * s * s * b
    assert full == 4 * s * b * h
    # Korthikanti et al. 2022 Table 2 (no parallelism): sbh(34 + 5as/h); full recompute 2sbh
    assert megatron_activation_bytes(spec, s, b) == 2 * (34 * s * b * h + 5 * a * s * s * b)
    assert megatron_activation_bytes(spec, s, b, "full") == 2 * 2 * s * b * h
    assert megatron_activation_bytes(spec, s, b, dropout=False) == 2 * (32 * s * b * h + 2 * a * s * s * b)


def test_categories_params_grads_optimizer():
    spec = reference_spec(2, 64, 2, 128, 32)
    P = spec.n_params
    n_tensors = len(param_shapes(spec))
    for opt, states in (("adamw", 8 * P + 4 * n_tensors), ("sgd-momentum", 4 * P), ("sgd", 0)):
        p = predict_training_memory(spec, EagerSetup(32, 2, optimizer=opt))
        assert (p.params_bytes, p.grads_bytes, p.optimizer_bytes) == (4 * P, 4 * P, states)
    assert p.buffers_bytes == 32 * 32 and p.inputs_bytes == 2 * 2 * 32 * 8


def test_cuda_prediction_rounds_to_512_and_uses_foreach_adamw():
    spec = reference_spec(2, 64, 2, 100, 48)
    cpu = predict_training_memory(spec, EagerSetup(48, 3))
    cuda = predict_training_memory(spec, EagerSetup(48, 3, device="cuda"))
    for v in (
        cuda.params_bytes,
        cuda.grads_bytes,
        cuda.optimizer_bytes,
        cuda.activations_bytes,
        cuda.peak_bytes,
    ):
        assert v % 512 == 0
    assert cuda.params_bytes >= cpu.params_bytes
    # step tensors live on the CPU for CUDA AdamW (not capturable): states are exactly 2 x params
    assert cuda.optimizer_bytes == 2 * cuda.params_bytes
    # foreach AdamW: sqrt(v) of every tensor at once on top of params + grads + states
    opt_peak = dict(cuda.phase_peaks)["optimizer"]
    assert opt_peak >= 5 * cuda.params_bytes


def test_prediction_frame_and_json():
    p = predict_training_memory(reference_spec(), EagerSetup())
    df = p.to_frame()
    assert list(df["category"]) == ["params", "grads", "optimizer", "activations", "peak"]
    d = json.loads(json.dumps(p.to_json_dict()))
    assert d["peak"] == p.peak_bytes == p.total_bytes and d["peak_phase"] in (
        "forward",
        "backward",
        "optimizer",
    )
    assert sum(d["peak_breakdown"].values()) == p.peak_bytes


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(seq_len=0), "seq_len"),
        (dict(micro_batch=-1), "micro_batch"),
        (dict(recompute="selective"), "recompute"),
        (dict(precision="fp16"), "precision"),
        (dict(optimizer="adam"), "optimizer"),
        (dict(device="tpu"), "device"),
    ],
)
def test_bad_setup_is_one_line_naming_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field) as e:
        EagerSetup(**kwargs)
    assert "\n" not in str(e.value)


def test_spec_outside_the_reference_layout_is_refused():
    with pytest.raises(ValueError, match="norm must be layernorm"):
        predict_training_memory(
            ModelSpec(name="x", n_layers=1, hidden=64, n_heads=2, vocab=64, max_seq=32, norm="rmsnorm"),
            EagerSetup(32, 1),
        )
    with pytest.raises(ValueError, match="seq_len must be <= max_seq 32"):
        predict_training_memory(reference_spec(1, 64, 2, 64, 32), EagerSetup(64, 1))
    with pytest.raises(ValueError, match="steps must be >= 2"):
        measure_training_memory(reference_spec(1, 64, 2, 64, 32), EagerSetup(32, 1), steps=1)


# ---- the CLI ----


def test_cli_validate_memory_json(capsys):
    rc = main(
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
            "--seq",
            "32",
            "--micro-batch",
            "2",
            "--precision",
            "bf16-mixed",
            "--optimizer",
            "sgd-momentum",
            "--json",
        ]
    )
    assert rc == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {"predicted", "planning", "megatron", "measured", "error", "config", "env"}
    assert set(d["error"]) == {"predicted", "planning", "megatron"}
    assert set(COMPARED) <= set(d["error"]["planning"]) and isinstance(d["measured"]["peak"], int)
    assert all(abs(d["error"]["predicted"][k]) <= tol for k, tol in TOLERANCE.items())
    assert abs(d["error"]["planning"]["peak"]) <= TOLERANCE["peak"]
    assert d["config"]["precision"] == "bf16-mixed" and d["env"]["device"] == "cpu"
    assert d["predicted"]["megatron_activations"] > 0


def test_cli_validate_memory_text(capsys):
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
                "--seq",
                "32",
                "--recompute",
                "full",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "Megatron convention" in out and "peak (" in out and "CPU" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cli_cuda_without_cuda_exits_2(capsys):
    assert main(["validate", "memory", "--device", "cuda"]) == 2
    assert "--device cuda requested but torch.cuda.is_available() is False" in capsys.readouterr().err


def test_cli_bad_flag_exits_2(capsys):
    assert main(["validate", "memory", "--optimizer", "lion"]) == 2
    assert "optimizer must be one of" in capsys.readouterr().err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="skipped: no CUDA device")
def test_cuda_measurement_meets_the_targets():
    rows = [(s, dataclasses.replace(u, device="cuda")) for s, u in VALIDATION_GRID[:6]]
    df = validate_grid(rows, device="cuda")
    for _, row in df.iterrows():
        for k, tol in TOLERANCE.items():
            assert abs(row[f"{k}_err"]) <= tol, (row["config"], k, row[f"{k}_err"])
