"""DDP over world sizes 1..N: the measured step beside gpukit.scaling's prediction, and the reporting.

`ddp_scaling` runs gpukit.bench.ddp's launchers (`run_ddp`, or `run_ddp_netlab` for one rank per
network namespace) at world sizes 1..N, weak or strong scaling, and returns a DdpScalingResult:
per world size the measured step, compute, exposed communication (s), bytes per step, tokens/s,
efficiency = tokens/s(n) / (n x tokens/s(1)), and the predicted step (gpukit.scaling's
predict_measured_ddp, from this machine's calibrations only). Each world size's payload is summarized
by gpukit.bench.ddp.summarize (medians and spreads); `link_fit` fits the in-run all-reduce samples
(alpha s, bandwidth GB/s, gpukit.comm.fit_alpha_beta), `cpu_overlap_possible` says whether gloo's
all-reduce can overlap the backward on this host's cores.
Used in: gpukit.cli.bench (`gpukit bench ddp`), gpukit.bench.ddp_validate (`make bench`),
notebooks/05_data_parallel_scaling, tests/test_scaling_bench.py, tests/test_collectives.py.
"""

from __future__ import annotations

import os

from gpukit.bench.ddp import netlab_device, normalize_hook, run_ddp, run_ddp_netlab, summarize, validate_ddp
from gpukit.bench.ranks import pick_backend
from gpukit.bench.results import BenchResult
from gpukit.bench.timing import percentile, progress, resolve_device
from gpukit.timing_stats import spread_warning

SCALINGS = ("strong", "weak")
COLUMNS = (
    "ranks",
    "measured_step_s",
    "predicted_step_s",
    "compute_s",
    "exposed_comm_s",
    "comm_bytes_per_step",
    "tokens_per_s",
    "efficiency",
)


class DdpScalingResult(BenchResult):
    """BenchResult whose text view leaves out the bulky summary entries (the timeline, parameter
    shapes, kernel calibration), which stay in the JSON (`--json`) for plots."""

    BULKY = ("timeline", "param_shapes", "kernel_s", "phases_s_ranks_1")

    def to_text(self) -> str:
        short = {k: v for k, v in self.summary.items() if k not in self.BULKY}
        return BenchResult(self.kind, self.rows, self.env, short, self.columns, self.headers).to_text()

    def netlab_row(self, ranks: int = 2) -> dict:
        """A run over netlab at world size `ranks` in one row (notebook 05, section 7): efficiency
        measured and predicted, the step error, how much slower each rank computed than alone, the
        bytes per step against tbf's burst, the exposed communication measured and predicted (ms)
        beside every byte charged at the rate, and the interface gloo used."""
        from gpukit.bench.netlab import parse_rate

        rate = self.summary.get("netlab")
        if rate is None:
            raise ValueError("netlab_row needs a run with netlab=RATE")
        one, row = self.rows[0], next(r for r in self.rows if r["ranks"] == ranks)
        sent, burst = row["comm_bytes_per_step"], self.summary["tbf_burst_bytes"]
        return {
            "rate": rate,
            "efficiency": row["efficiency"],
            "predicted_efficiency": row["predicted_efficiency"],
            "step error": row["error"],
            "compute n ranks / 1": row["compute_s"] / one["compute_s"],
            "bytes/step": sent,
            "tbf burst": burst,
            "fits in burst": sent <= burst,
            "exposed ms": 1e3 * row["exposed_comm_s"],
            "predicted exposed ms": 1e3 * row["predicted_exposed_comm_s"],
            "at the rate ms": 1e3 * sent / (parse_rate(rate) / 8),
            "GLOO_SOCKET_IFNAME": self.env.get("gloo_socket_ifname"),
            "MASTER_ADDR": self.env.get("master_addr"),
        }


def link_fit(samples, world_size: int = 2) -> tuple[float, float] | None:
    """(alpha_s, bandwidth GB/s) of the in-run all-reduce calibration (gpukit.comm.fit_alpha_beta);
    on one rank (no ring: c_alpha = 0) a plain least-squares line t = a + S / B: (a, B)."""
    if not samples:
        return None
    if world_size == 1:
        import numpy as np

        s = np.array([x["size_bytes"] for x in samples], float)
        t = np.array([x["time_s"] for x in samples], float)
        slope, a = np.polyfit(s, t, 1)
        return max(0.0, float(a)), (1 / float(slope) / 1e9 if slope > 0 else float("inf"))
    from gpukit.comm import fit_alpha_beta

    fit = fit_alpha_beta([s["size_bytes"] for s in samples], [s["time_s"] for s in samples], "all_reduce", 2)
    return fit.link


def ddp_scaling(
    ranks: int = 2,
    *,
    scaling: str = "weak",
    netlab: str | None = None,
    predict: bool = True,
    timeout_s: float = 600,
    **kw,
) -> BenchResult:
    """World sizes 1..`ranks`: measured DDP step, compute, exposed comm, bytes, tokens/s, efficiency,
    and gpukit.scaling's predicted step for each (compute rate from the world-size-1 compute-only
    steps, the link from the in-run all-reduce calibration at the largest world size).

    scaling 'weak': every rank keeps `micro_batch`; 'strong': the global batch micro_batch x ranks is
    split over the ranks (micro_batch x ranks must divide by every world size). netlab='1gbit':
    world sizes >= 2 run one rank per network namespace over that emulated link (root, iproute2).
    """
    from gpukit.errors import require_choice, require_positive_int

    ranks = require_positive_int("ranks", ranks)
    require_choice("scaling", scaling, SCALINGS)
    mb = kw.pop("micro_batch", 4)
    global_batch = mb * ranks
    if scaling == "strong":
        bad = [n for n in range(1, ranks + 1) if global_batch % n]
        if bad:
            raise ValueError(
                f"micro_batch x ranks ({global_batch}) must divide by every world size for strong "
                f"scaling; it does not for {bad}"
            )
    if netlab is not None:
        from gpukit.bench.netlab import parse_rate, require_available

        parse_rate(netlab)
        kw["device"] = netlab_device(kw.get("device", "cpu"))  # world size 1 too: every row on the CPU
        require_available()
        if ranks < 2:
            raise ValueError(f"ranks must be >= 2 with --netlab (one rank per namespace), got {ranks}")
    # input check before any rank starts
    validate_ddp(
        ranks,
        kw.get("hook", "none"),
        kw.get("steps", 10),
        kw.get("warmup", 3),
        mb,
        kw.get("seq_len", 64),
        kw.get("n_layers", 2),
        kw.get("hidden", 128),
        kw.get("n_heads", 4),
        kw.get("vocab", 512),
        kw.get("bucket_mb", 25.0),
        kw.get("grad_accum", 1),
        kw.get("powersgd_rank", 1),
        kw.get("powersgd_start_iter", 2),
        kw.get("loader_latency_ms", 0.0),
        kw.get("loader_workers", 0),
        timeout_s,
        pick_backend(kw.get("backend", "auto"), resolve_device(kw.get("device", "cpu"))),
    )
    seq, k_acc = kw.get("seq_len", 64), kw.get("grad_accum", 1)
    payloads, rows = [], []
    # the largest world size first: a failing multi-rank run fails before the others are spent
    for n in progress(range(ranks, 0, -1), desc="ddp world sizes", total=ranks):
        per_rank = global_batch // n if scaling == "strong" else mb
        if netlab is not None and n >= 2:
            p = run_ddp_netlab(n, netlab, micro_batch=per_rank, timeout_s=timeout_s, **kw)
        else:
            p = run_ddp(n, micro_batch=per_rank, timeout_s=timeout_s, **kw)
        payloads.append(p)
        row = summarize(p, per_rank * n * seq * k_acc)
        row["micro_batch"] = per_rank
        row["_phases"] = tuple(p["phases_s"][k] for k in ("forward_s", "backward_s", "optimizer_s"))
        rows.append(row)
    payloads.reverse()
    rows.reverse()
    base = rows[0]["tokens_per_s"]
    for r in rows:
        r["efficiency"] = r["tokens_per_s"] / (r["ranks"] * base)
    hook = normalize_hook(kw.get("hook", "none"))
    multi = [p for p in payloads if p["world_size"] > 1]
    link = next((link_fit(p["link_samples"]) for p in reversed(multi) if p.get("link_samples")), None)
    link16 = next(
        (link_fit(p["link_samples_fp16"]) for p in reversed(multi) if p.get("link_samples_fp16")), None
    )
    one = payloads[0]
    link_1 = link_fit(
        one.get("link_samples_fp16" if normalize_hook(kw.get("hook", "none")) == "fp16" else "link_samples"),
        1,
    )
    ph = payloads[0]["phases_s"]
    summary = {
        "scaling": scaling,
        "hook": hook,
        "netlab": netlab,
        "n_params": payloads[0]["n_params"],
        "link_alpha_s": link[0] if link else None,
        "link_bandwidth_gbps": link[1] if link else None,
        # the fp16-hook fit, one unit per key (issue 25: was link_fp16 = [alpha s, GB/s])
        "link_fp16_alpha_s": link16[0] if link16 else None,
        "link_fp16_bandwidth_gbps": link16[1] if link16 else None,
        "phases_s_ranks_1": ph,
        "kernel_s": payloads[0]["kernel_s"],
        "timeline": payloads[-1]["timeline"],
        "param_shapes": payloads[0]["param_shapes"],
        "bucket_mb": kw.get("bucket_mb", 25.0),
        "grad_accum": k_acc,
    }
    if predict:
        tbf = None
        if netlab is not None:  # the emulated link's token bucket, as NetLab configures it (tc-tbf(8))
            from gpukit.bench.netlab import parse_rate, tbf_burst_bytes
            from gpukit.comm import TokenBucket

            # bytes the tokens cover are taken as free (veth speed; the call's latency and one-rank work stay)
            bps = parse_rate(netlab)
            tbf = TokenBucket(tbf_burst_bytes(bps), bps / 8)
            summary["tbf_burst_bytes"] = tbf.burst_bytes
        for r, p in zip(rows, payloads, strict=True):
            lk = link16 if hook == "fp16" else link
            if netlab is not None and r["ranks"] > 1:
                ov = True  # over a rate-limited link the all-reduce waits on the wire, not on the cores
            else:
                ov = cpu_overlap_possible(p["env"].get("device", "cpu"), r["ranks"], kw.get("threads", 1))
            # (a) compute measured in the same run (interleaved compute-only steps): the model adds
            #     communication, hooks and input; (b) compute carried over from world size 1 (a priori)
            tb = tbf if netlab is not None and r["ranks"] > 1 else None
            pred = predict_row(p, r, r, lk, overlap=ov, link_1=link_1, token_bucket=tb, **kw)
            pred1 = predict_row(p, rows[0], r, lk, overlap=ov, link_1=link_1, token_bucket=tb, **kw)
            r["predicted_step_s"] = pred.step_s
            r["predicted_exposed_comm_s"] = pred.step_s - pred.compute_s
            r["predicted_bytes_per_step"] = pred.comm_bytes
            extra = pred.step_s - pred.compute_s  # what the model adds to the measured compute
            # paired error: each synced step predicted from its neighbouring compute-only step
            if p.get("loader"):
                r["error"] = (r["compute_s"] + extra - r["measured_step_s"]) / r["measured_step_s"]
            else:
                r["error"] = percentile(
                    [(c + extra - t) / t for t, c in zip(p["step_s"], p["compute_s"], strict=True)], 50
                )
            r["predicted_step_from_ranks_1_s"] = pred1.step_s
            r["error_from_ranks_1"] = (pred1.step_s - r["measured_step_s"]) / r["measured_step_s"]
            r["overlap_modelled"] = ov
        base_pred = rows[0]["micro_batch"] / rows[0]["predicted_step_from_ranks_1_s"]
        for r in rows:
            # efficiency = tokens/s(n) / (n x tokens/s(1)), on the a-priori predicted steps
            r["predicted_efficiency"] = (r["micro_batch"] / r["predicted_step_from_ranks_1_s"]) / base_pred
    else:
        for r in rows:
            r["predicted_step_s"] = None
    for r in rows:
        r.pop("_phases", None)
    warn = spread_warning(
        [(f"{r['ranks']} ranks", r["step_p10_s"], r["step_p90_s"]) for r in rows], what="world size"
    )
    summary["spread_warning"] = warn or None  # always there (stable JSON keys): null when the repeats agree
    return DdpScalingResult("ddp", tuple(rows), payloads[-1]["env"], summary, COLUMNS)


def cpu_overlap_possible(device: str, ranks_per_host: int, threads: int | None) -> bool:
    """On CPU, gloo's all-reduce runs on CPU cores (copies, sums, the TCP stack): it overlaps the
    backward only if cores are left over beside the ranks' compute threads (one per rank at least).
    With none left, every second of communication is taken from the compute: no overlap."""
    if device == "cuda":
        return True
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores - ranks_per_host * (threads or 1) >= ranks_per_host


def predict_row(
    payload: dict,
    base_row: dict,
    row: dict,
    link,
    *,
    overlap: bool = True,
    link_1=None,
    token_bucket=None,
    **kw,
):
    """gpukit.scaling's prediction of one measured world size from calibrations only: a compute-only
    step (`base_row`: time, batch and phase split), the memory-pass rate and the all-reduce link fit."""
    from gpukit.scaling import predict_measured_ddp

    return predict_measured_ddp(
        payload["param_shapes"],
        base_row["compute_s"],
        base_row["micro_batch"],
        row["micro_batch"],
        row["ranks"],
        link,
        hook=normalize_hook(kw.get("hook", "none")),
        bucket_mb=kw.get("bucket_mb", 25.0),
        grad_accum=kw.get("grad_accum", 1),
        powersgd_rank=kw.get("powersgd_rank", 1),
        phases_s=base_row["_phases"],
        kernel_s=payload["kernel_s"],
        overlap=overlap,
        link_1=link_1,
        loader_latency_s=kw.get("loader_latency_ms", 0.0) / 1e3,
        loader_workers=kw.get("loader_workers", 0),
        loader_shared=kw.get("loader_shared", False),
        token_bucket=token_bucket,
    )
