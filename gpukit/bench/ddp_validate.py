"""DDP predicted vs measured on this machine (`make bench`, section 5): the validation grid, the
orderings, the efficiency drop over netlab and the input-bound job (gpukit.bench.ddp runs them,
gpukit.scaling predicts them). Benchmarks, not tests: they print figures and never fail.
Used in: gpukit/cli/benchreport.py.
"""

from __future__ import annotations

from gpukit.bench.ddp_sweep import ddp_scaling
from gpukit.bench.timing import percentile

GRID_MODELS = {
    "S": dict(n_layers=2, hidden=256, n_heads=4),
    "M": dict(n_layers=4, hidden=384, n_heads=6),
    "L": dict(n_layers=4, hidden=512, n_heads=8),
}
GRID_BUCKETS_MB = (1.0, 25.0)
GRID_BUCKETS_MB_POWERSGD = (64.0, 256.0)  # one bucket each: powersgd on gloo cannot run several (_validate)
GRID_HOOKS = ("none", "fp16", "powersgd")


def validation_grid(
    models=tuple(GRID_MODELS),
    buckets_mb=GRID_BUCKETS_MB,
    hooks=GRID_HOOKS,
    *,
    steps: int = 15,
    micro_batch: int = 4,
    seq_len: int = 64,
    timeout_s: float = 600,
    progress=None,
) -> list[dict]:
    """World sizes 1 and 2 on this machine for every model x bucket size x hook: measured vs predicted
    step (the prediction adds gpukit.scaling's communication, hook and overlap model to the compute
    measured in the same run; `error_from_ranks_1` carries the compute over from world size 1)."""
    out = []
    for m in models:
        for hook in hooks:
            for bmb in GRID_BUCKETS_MB_POWERSGD if hook == "powersgd" else buckets_mb:
                res = ddp_scaling(
                    2,
                    hook=hook,
                    bucket_mb=bmb,
                    steps=steps,
                    warmup=3,
                    micro_batch=micro_batch,
                    seq_len=seq_len,
                    timeout_s=timeout_s,
                    **GRID_MODELS[m],
                )
                for r in res.rows:
                    row = {
                        "model": m,
                        "n_params": res.summary["n_params"],
                        "bucket_mb": bmb,
                        "hook": hook,
                        **{
                            k: r[k]
                            for k in (
                                "ranks",
                                "measured_step_s",
                                "predicted_step_s",
                                "error",
                                "predicted_step_from_ranks_1_s",
                                "error_from_ranks_1",
                                "compute_s",
                                "exposed_comm_s",
                                "predicted_exposed_comm_s",
                                "comm_bytes_per_step",
                                "predicted_bytes_per_step",
                                "step_p10_s",
                                "step_p90_s",
                            )
                        },
                    }
                    out.append(row)
                    if progress:
                        progress(row)
    return out


def ddp_report(netlab_rates=("1gbit", "200mbit"), *, steps: int = 15, out=print, **grid_kw) -> dict:
    """make bench's DDP section: the validation grid (step time within 15%?), bytes exact, the orderings
    measured vs predicted (fastest bucket size per model and hook, fastest hook per model), and the
    efficiency drop over netlab (root only) at each rate vs the prediction."""
    rows = validation_grid(steps=steps, **grid_kw)
    out(
        f"  {'model':<5} {'params':>9} {'bucket':>6} {'hook':<8} {'ranks':>5} {'measured':>9} {'predicted':>9} "
        f"{'error':>7} {'bytes ok':>8}"
    )
    for r in rows:
        out(
            f"  {r['model']:<5} {r['n_params']:>9,} {r['bucket_mb']:>6g} {r['hook']:<8} {r['ranks']:>5} "
            f"{r['measured_step_s'] * 1e3:>7.1f}ms {r['predicted_step_s'] * 1e3:>7.1f}ms {r['error']:>+7.1%} "
            f"{'yes' if r['comm_bytes_per_step'] == r['predicted_bytes_per_step'] else 'NO':>8}"
        )
    errs = [abs(r["error"]) for r in rows]
    within = sum(e <= 0.15 for e in errs)
    out(
        f"  step time within 15%: {within} of {len(rows)} (median |error| {percentile(errs, 50):.1%}, max "
        f"{max(errs):.1%}); bytes exact: {sum(r['comm_bytes_per_step'] == r['predicted_bytes_per_step'] for r in rows)}"
        f" of {len(rows)}"
    )
    orderings = _orderings(rows, "step") + _orderings(rows, "overhead")
    for basis in ("step", "overhead"):
        agree = [o["agree"] for o in orderings if f" by {basis}," in o["what"]]
        out(f"  orderings by {basis}: {sum(agree)} of {len(agree)} agree")
    for o in orderings:
        out(
            f"  ordering {o['what']}: measured {o['measured']}, predicted {o['predicted']} "
            f"({'agree' if o['agree'] else 'DISAGREE'})"
        )
    report = {
        "rows": rows,
        "within_15pct": within,
        "configs": len(rows),
        "median_abs_error": percentile(errs, 50),
        "orderings": orderings,
    }
    net = []
    from gpukit.bench.netlab import check_available

    why = check_available()
    for rate in netlab_rates:
        if why:
            out(f"  netlab {rate}: skipped ({why})")
            continue
        res = ddp_scaling(
            2, netlab=rate, hook="none", bucket_mb=25.0, steps=8, warmup=2, timeout_s=900, **GRID_MODELS["S"]
        )
        two = res.rows[1]
        drop_m, drop_p = 1 - two["efficiency"], 1 - two["predicted_efficiency"]
        e = {
            "rate": rate,
            "measured_efficiency": two["efficiency"],
            "predicted_efficiency": two["predicted_efficiency"],
            "measured_drop": drop_m,
            "predicted_drop": drop_p,
            "drop_error": (drop_p - drop_m) / drop_m if drop_m else None,
            "step_error": two["error"],
            "link_gbps": res.summary["link_bandwidth_gbps"],
        }
        net.append(e)
        out(
            f"  netlab {rate}: efficiency at 2 ranks measured {two['efficiency']:.1%}, predicted "
            f"{two['predicted_efficiency']:.1%}; drop {drop_m:.1%} vs {drop_p:.1%} predicted (error "
            f"{e['drop_error'] if e['drop_error'] is not None else float('nan'):+.1%}); link fit "
            f"{res.summary['link_bandwidth_gbps']:.4f} GB/s"
        )
    report["netlab"] = net
    # the input-bound job: one shared storage, 80 ms per batch, 2 workers per rank
    inp = ddp_scaling(
        2,
        bucket_mb=25.0,
        loader_latency_ms=80.0,
        loader_workers=2,
        loader_shared=True,
        steps=10,
        warmup=2,
        **GRID_MODELS["S"],
    )
    report["input_bound"] = [
        {
            k: r[k]
            for k in (
                "ranks",
                "measured_step_s",
                "predicted_step_s",
                "error",
                "efficiency",
                "predicted_efficiency",
            )
        }
        for r in inp.rows
    ]
    for r in inp.rows:
        out(
            f"  input-bound (shared storage, 80 ms/batch, 2 workers): {r['ranks']} ranks, step "
            f"{r['measured_step_s'] * 1e3:.1f} ms measured, {r['predicted_step_s'] * 1e3:.1f} ms predicted "
            f"({r['error']:+.1%}); efficiency {r['efficiency']:.1%} vs {r['predicted_efficiency']:.1%}"
        )
    return report


def _orderings(rows: list[dict], basis: str = "overhead") -> list[dict]:
    """Which bucket size is cheapest (per model and hook) and which hook (per model), at 2 ranks.
    basis 'step': the whole step (measured vs predicted; both carry the run's measured compute, which
    differs between runs with the load of other programs); 'overhead': only what sync adds
    (measured step - compute, paired, vs the model's exposed communication + hook work)."""
    two = [r for r in rows if r["ranks"] == 2]
    mkey, pkey = (
        ("measured_step_s", "predicted_step_s")
        if basis == "step"
        else ("exposed_comm_s", "predicted_exposed_comm_s")
    )
    out = []
    groups: dict = {}
    for r in two:
        groups.setdefault((r["model"], r["hook"]), []).append(r)
    for (m, h), rs in sorted(groups.items()):
        if len(rs) < 2:
            continue
        meas = min(rs, key=lambda r: r[mkey])["bucket_mb"]
        pred = min(rs, key=lambda r: r[pkey])["bucket_mb"]
        out.append(
            {
                "what": f"cheapest bucket_mb by {basis}, {m} {h}",
                "measured": meas,
                "predicted": pred,
                "agree": meas == pred,
            }
        )
    for m in sorted({r["model"] for r in two}):
        best: dict = {}
        for r in (x for x in two if x["model"] == m):
            for key in (mkey, pkey):
                cur = best.get((key, r["hook"]))
                best[(key, r["hook"])] = r[key] if cur is None else min(cur, r[key])
        hooks = sorted({h for _, h in best})
        meas = min(hooks, key=lambda h: best[(mkey, h)])
        pred = min(hooks, key=lambda h: best[(pkey, h)])
        out.append(
            {
                "what": f"cheapest hook by {basis}, {m}",
                "measured": meas,
                "predicted": pred,
                "agree": meas == pred,
            }
        )
    return out
