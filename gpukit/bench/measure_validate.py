"""Predicted vs measured memory of real training steps: the three memory models against the harness.

`compare(spec, setup)` measures one configuration (gpukit.bench.measure.measure_training_memory) and
predicts it with three models: 'predicted' (the eager replay, gpukit.memory.eager; the GPT layout
with eager attention only), 'planning' (gpukit.memory, pytorch convention) and 'megatron'
(gpukit.memory, the papers' convention); error = (model - measured) / measured per category
(params, grads, optimizer, activations, peak; bytes). `validate_grid()` runs VALIDATION_GRID (or
LLAMA_GRID, or `random_configs`) and returns one row per configuration; `error_table` and
`grid_report` summarise it (errors in %). Targets (TOLERANCE): replay params/grads/optimizer within
2%, peaks within 10%.
Used in: gpukit.cli.validate, gpukit.cli.benchreport, gpukit.bench.suite, tests/test_memory_validation.py,
tests/test_memory_planning.py, notebooks/01_what_fits_on_one_gpu.
"""

from __future__ import annotations

from dataclasses import asdict

from gpukit.bench.measure import is_gpt_layout, measure_training_memory, train_setup
from gpukit.bench.timing import progress
from gpukit.errors import require_choice
from gpukit.memory import EagerSetup, llama_spec, predict_training_memory, reconcile_megatron, reference_spec
from gpukit.specs import ModelSpec

COMPARED = ("params", "grads", "optimizer", "activations", "peak")
TOLERANCE = {"params": 0.02, "grads": 0.02, "optimizer": 0.02, "peak": 0.10}  # the targets


def _fixed_bytes(spec: ModelSpec, setup: EagerSetup) -> int:
    """Bytes the harness holds besides the model's own tensors: input ids and targets (int64), the
    causal-mask buffer, and the rotary cos/sin tables (fp32, max_seq x head_dim each) of the Llama layout."""
    n = 2 * 8 * setup.seq_len * setup.micro_batch + spec.max_seq**2
    if spec.position == "rope":
        n += 2 * 4 * spec.max_seq * spec.head_dim
    return n


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured; 0 when both are 0 (e.g. plain SGD has no states)."""
    if measured == 0:
        return 0.0 if predicted == 0 else float("inf")
    return (predicted - measured) / measured


MODELS = ("predicted", "planning", "megatron")  # the replay, the planning model, the paper convention


def planning_categories(
    spec: ModelSpec, setup: EagerSetup, attention: str = "eager", convention: str = "pytorch"
) -> dict:
    """The planning model (gpukit.memory.estimate_memory) for one measured step, in the measured
    categories: params, grads, optimizer (model states as the convention sizes them), activations
    (pytorch: alive at the end of the forward; megatron: activations + logits, its sum's terms) and
    peak (its total plus the harness's own tensors, `_fixed_bytes`), with the phase of the peak."""
    from gpukit import memory as mem

    ts = train_setup(setup, attention, convention)
    bd = mem.estimate_memory(spec, setup=ts)
    w, g, o = mem.state_bytes_per_param(ts)
    n = spec.n_params
    acts = (
        mem.pytorch_forward_end_bytes(spec, ts)
        if convention == "pytorch"
        else bd.activations_bytes + bd.logits_bytes
    )
    return {
        "params": int(w * n),
        "grads": int(g * n),
        "optimizer": int(o * n),
        "activations": int(acts),
        "peak": bd.total_bytes + _fixed_bytes(spec, setup),
        "peak_phase": bd.peak_phase,
        "phase_peaks": dict(bd.phase_peaks),
        "convention": convention,
    }


def compare(
    spec: ModelSpec, setup: EagerSetup, steps: int = 2, seed: int = 0, attention: str = "eager"
) -> dict:
    """Predict and measure one configuration with three models: 'predicted' (the eager replay,
    gpukit.memory.eager; None where it does not apply: the Llama layout or SDPA attention),
    'planning' (gpukit.memory, pytorch convention) and 'megatron' (gpukit.memory, the papers'
    convention). error[model][category] = (model - measured) / measured."""
    meas = measure_training_memory(spec, setup, steps=steps, seed=seed, attention=attention)
    m = dict(meas.breakdown())
    replay = is_gpt_layout(spec) and attention == "eager"
    out = {"predicted": None}
    if replay:
        pred = predict_training_memory(spec, setup)
        out["predicted"] = {
            **dict(pred.breakdown()),
            "peak_phase": pred.peak_phase,
            "phase_peaks": dict(pred.phase_peaks),
            "peak_breakdown": dict(pred.peak_breakdown),
            "megatron_activations": pred.megatron_activation_bytes,
            "layer_activations": pred.layer_activation_bytes,
            "activation_formula": pred.activation_formula_bytes,
        }
    out["planning"] = planning_categories(spec, setup, attention, "pytorch")
    out["megatron"] = planning_categories(spec, setup, attention, "megatron")
    err = {
        k: (None if out[k] is None else {c: relative_error(out[k][c], m[c]) for c in COMPARED})
        for k in MODELS
    }
    config = {
        "arch": "gpt" if is_gpt_layout(spec) else "llama",
        "attention": attention,
        "n_layers": spec.n_layers,
        "hidden": spec.hidden,
        "n_heads": spec.n_heads,
        "n_kv_heads": spec.n_kv_heads,
        "ffn_hidden": spec.ffn_hidden,
        "vocab": spec.vocab,
        "n_params": spec.n_params,
        "tied": spec.tied_embeddings,
        **asdict(setup),
    }
    if attention == "sdpa":  # which fused kernel torch picked (CPU, torch 2.13: flash attention for CPU)
        from gpukit.bench.models import sdpa_kernel

        config["sdpa_kernel"] = sdpa_kernel(
            setup.device,
            "bf16" if setup.precision == "bf16-mixed" else "fp32",
            spec.n_kv_heads != spec.n_heads,
        )
    measured = {
        **m,
        "peak_phase": meas.peak_phase,
        "phase_peaks": dict(meas.phase_peaks),
        "peak_breakdown": dict(meas.peak_breakdown),
        "method": meas.method,
        "baseline": meas.baseline_bytes,
        "wall_s": round(meas.wall_s, 3),
    }
    return {
        "config": config,
        **out,
        "measured": measured,
        "error": err,
        "env": dict(meas.env),
        "reconcile": [list(x) for x in reconcile_megatron(spec, setup)] if replay else [],
    }


def config_label(c: dict) -> str:
    """One line naming a configuration of compare()'s 'config'."""
    kv = f"/kv{c['n_kv_heads']}" if c.get("n_kv_heads", c["n_heads"]) != c["n_heads"] else ""
    return (
        f"{c.get('arch', 'gpt')}-{c.get('attention', 'eager')} L{c['n_layers']} h{c['hidden']} "
        f"a{c['n_heads']}{kv} V{c['vocab']} s{c['seq_len']} b{c['micro_batch']} {c['recompute']} "
        f"{c['precision']} {c['optimizer']}" + (" tied" if c.get("tied") else "")
    )


def _grid_entry(L, h, a, V, s, b, rec, prec, opt, tied=False):
    return (
        reference_spec(n_layers=L, hidden=h, n_heads=a, vocab=V, seq=s, tied_embeddings=tied),
        EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt),
    )


# (layers, hidden, heads, vocab, seq, micro_batch, recompute, precision, optimizer[, tied]):
# dims 64-256, layers 2-4, heads 1-8, micro-batch 1-8, seq 64-512, recompute none/full, fp32/bf16
# autocast, AdamW / SGD momentum / SGD; sized to measure in well under a minute on 2 cores.
VALIDATION_GRID = tuple(
    _grid_entry(*row)
    for row in (
        (2, 128, 4, 512, 128, 2, "none", "fp32", "adamw"),
        (2, 128, 4, 512, 128, 2, "full", "fp32", "adamw"),
        (2, 128, 4, 512, 128, 2, "none", "bf16-mixed", "adamw"),
        (2, 128, 4, 512, 128, 2, "full", "bf16-mixed", "adamw"),
        (3, 64, 2, 256, 256, 4, "none", "fp32", "sgd-momentum"),
        (2, 256, 8, 1024, 64, 8, "none", "fp32", "sgd"),
        (4, 96, 3, 384, 192, 1, "none", "bf16-mixed", "sgd-momentum"),
        (2, 64, 4, 512, 512, 1, "none", "fp32", "adamw"),
        (2, 64, 4, 512, 512, 1, "full", "fp32", "sgd"),
        (3, 192, 6, 512, 128, 4, "full", "bf16-mixed", "sgd-momentum"),
        (2, 128, 2, 2048, 64, 4, "none", "bf16-mixed", "sgd"),
        (4, 128, 8, 512, 256, 2, "none", "fp32", "adamw"),
        (2, 128, 4, 512, 128, 2, "none", "fp32", "adamw", True),
        (3, 256, 4, 768, 96, 2, "full", "fp32", "sgd-momentum"),
        (2, 256, 4, 2048, 32, 1, "full", "fp32", "adamw"),  # small activations: the optimizer step peaks
        (2, 64, 1, 512, 128, 1, "full", "bf16-mixed", "adamw"),  # cached bf16 weight casts: forward peaks
    )
)


def _llama_entry(L, h, a, kv, V, s, b, rec, prec, opt, attention):
    return (
        llama_spec(n_layers=L, hidden=h, n_heads=a, n_kv_heads=kv, vocab=V, seq=s),
        EagerSetup(seq_len=s, micro_batch=b, recompute=rec, precision=prec, optimizer=opt),
        attention,
    )


# The Llama layout (RMSNorm, SwiGLU, GQA, RoPE, no biases): (layers, hidden, heads, kv heads, vocab, seq,
# micro_batch, recompute, precision, optimizer, attention eager|sdpa). No replay: planning + megatron.
LLAMA_GRID = tuple(
    _llama_entry(*row)
    for row in (
        (2, 128, 4, 2, 512, 128, 2, "none", "fp32", "adamw", "eager"),
        (2, 128, 4, 2, 512, 128, 2, "none", "fp32", "adamw", "sdpa"),
        (2, 128, 4, 2, 512, 128, 2, "full", "bf16-mixed", "adamw", "sdpa"),
        (2, 128, 4, 4, 512, 128, 2, "none", "bf16-mixed", "adamw", "eager"),
        (3, 96, 6, 2, 384, 256, 1, "none", "bf16-mixed", "sgd-momentum", "sdpa"),
        (2, 64, 4, 1, 512, 512, 1, "none", "fp32", "adamw", "eager"),
        (2, 256, 8, 2, 1024, 64, 4, "full", "fp32", "sgd", "sdpa"),
        (4, 128, 8, 8, 512, 192, 2, "full", "bf16-mixed", "sgd-momentum", "eager"),
    )
)


def random_configs(n: int, seed: int, arch: str = "gpt"):
    """n configurations drawn at random (shapes, batch, precision, recompute, optimizer and, for the
    Llama layout, kv heads and attention): the check on shapes that no grid or test names. The
    sizes are bounded so that one step measures in a few seconds on 2 CPU cores."""
    import random

    require_choice("arch", arch, ("gpt", "llama"))
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = rng.choice((1, 2, 3, 4, 6, 8))
        d = rng.choice((8, 16, 24, 32))
        L, V = rng.randint(1, 4), rng.choice((128, 320, 512, 1000, 2048))
        s, b = rng.choice((16, 48, 64, 100, 128, 200, 256)), rng.randint(1, 4)
        st = EagerSetup(
            seq_len=s,
            micro_batch=b,
            recompute=rng.choice(("none", "full")),
            precision=rng.choice(("fp32", "bf16-mixed")),
            optimizer=rng.choice(("adamw", "sgd-momentum", "sgd")),
        )
        if arch == "gpt":
            out.append(
                (
                    reference_spec(
                        n_layers=L,
                        hidden=a * d,
                        n_heads=a,
                        vocab=V,
                        seq=s,
                        tied_embeddings=rng.random() < 0.2,
                    ),
                    st,
                    rng.choice(("eager", "sdpa")),
                )
            )
        else:
            kv = rng.choice([k for k in (1, 2, 4, 8) if a % k == 0])
            out.append(
                (
                    llama_spec(n_layers=L, hidden=a * d, n_heads=a, n_kv_heads=kv, vocab=V, seq=s),
                    st,
                    rng.choice(("eager", "sdpa")),
                )
            )
    return tuple(out)


def _entry(e):
    return (*e, "eager") if len(e) == 2 else tuple(e)


def validate_grid(grid=VALIDATION_GRID, device: str = "cpu", steps: int = 2):
    """Predict and measure every (spec, setup[, attention]) in `grid`; one DataFrame row per
    configuration with each model's bytes and relative errors per category (replay columns
    `{k}_pred`/`{k}_err`, NaN where the replay does not apply; `planning_{k}`/`planning_{k}_err`;
    `megatron_{k}`/`megatron_{k}_err`), and whether the targets are met."""
    import dataclasses

    import pandas as pd

    rows = []
    entries = [_entry(e) for e in grid]
    for spec, setup, attention in progress(entries, desc="validate memory", total=len(entries)):
        if setup.device != device:
            setup = dataclasses.replace(setup, device=device)
        r = compare(spec, setup, steps=steps, attention=attention)
        row = {"config": config_label(r["config"]), "arch": r["config"]["arch"], "attention": attention}
        nan = float("nan")
        for k in COMPARED:
            row[f"{k}_meas"] = r["measured"][k]
            row[f"{k}_pred"] = r["predicted"][k] if r["predicted"] else nan
            row[f"{k}_err"] = r["error"]["predicted"][k] if r["predicted"] else nan
            for mdl in ("planning", "megatron"):
                row[f"{mdl}_{k}"] = r[mdl][k]
                row[f"{mdl}_{k}_err"] = r["error"][mdl][k]
        row["peak_phase_pred"] = r["predicted"]["peak_phase"] if r["predicted"] else ""
        row["peak_phase_planning"] = r["planning"]["peak_phase"]
        row["peak_phase_meas"] = r["measured"]["peak_phase"]
        row["megatron_act"] = r["predicted"]["megatron_activations"] if r["predicted"] else nan
        replay_ok = (not r["predicted"]) or all(abs(row[f"{k}_err"]) <= tol for k, tol in TOLERANCE.items())
        row["ok"] = bool(replay_ok and abs(row["planning_peak_err"]) <= TOLERANCE["peak"])
        row["wall_s"] = r["measured"]["wall_s"]
        rows.append(row)
    return pd.DataFrame(rows)


def error_table(df) -> "object":
    """Worst and median |error| of the peak per model (replay, planning, megatron) over a
    validate_grid frame, in %, one row per model: the table `make bench` and notebook 01 show."""
    import pandas as pd

    rows = []
    for name, col in (
        ("replay (memory_eager)", "peak_err"),
        ("planning (pytorch)", "planning_peak_err"),
        ("megatron convention", "megatron_peak_err"),
    ):
        e = df[col].dropna().abs() * 100
        rows.append(
            {
                "model": name,
                "configs": int(e.size),
                "median_abs_err_pct": e.median() if e.size else float("nan"),
                "max_abs_err_pct": e.max() if e.size else float("nan"),
                "worst": df.loc[e.idxmax(), "config"] if e.size else "",
                "within_10pct": int((e <= 10).sum()),
            }
        )
    return pd.DataFrame(rows)


def grid_report(grid=VALIDATION_GRID, device: str = "cpu", print_table: bool = True):
    """Run the validation grid, print a compact table (errors in %) and the max |error| per
    category, and return the full DataFrame (for `make bench`)."""
    df = validate_grid(grid, device=device)
    if print_table:
        cols = (
            ["config"]
            + [f"{k}_err" for k in COMPARED]
            + ["planning_peak_err", "megatron_peak_err", "peak_phase_meas", "ok"]
        )
        view = df[cols].copy()
        for k in [f"{k}_err" for k in COMPARED] + ["planning_peak_err", "megatron_peak_err"]:
            view[k] = (100 * view[k]).map(lambda x: "-" if x != x else f"{x:+.2f}%")
        view = view.rename(columns={"peak_err": "replay_peak_err"})
        print(view.to_string(index=False))
        rep = df.dropna(subset=["peak_err"])
        if len(rep):
            worst = {
                k: f"{100 * rep[f'{k}_err'].abs().max():.2f}% "
                f"({int((rep[f'{k}_pred'] - rep[f'{k}_meas']).abs().max())} B)"
                for k in COMPARED
            }
            print("replay max |error|:", ", ".join(f"{k} {v}" for k, v in worst.items()))
        print(error_table(df).to_string(index=False, float_format=lambda x: f"{x:.2f}"))
        print(
            f"targets: replay params/grads/optimizer 2%, peaks 10% | {df['ok'].sum()}/{len(df)} configs OK"
            f" | {df['wall_s'].sum():.1f} s ({device.upper()} measurement)"
        )
    return df
