"""Real DDP on the reference GPT: step time, compute, exposed communication, bytes, overlap timeline.

Each rank trains gpukit.bench.models' reference GPT under torch.nn.parallel.DistributedDataParallel
(gloo on CPU, NCCL on CUDA). Launchers, each handing the rank body gpukit.bench.ddp_rank.ddp_body to
gpukit.bench.launch: `run_ddp` spawns local ranks (notebooks, tests), `python -m gpukit.bench.ddp ...`
runs under torchrun (one node, many nodes, one node per netlab namespace: `run_ddp_netlab`).

What one rank measures and how (steps, bytes, the overlap timeline, the input pipeline):
gpukit.bench.ddp_rank (ddp_body, calibrate_kernels and LINK_SIZES are re-exported here). World sizes
1..N beside gpukit.scaling's prediction: gpukit.bench.ddp_sweep (ddp_scaling, link_fit), which imports
this module. This module holds the launchers, their input check (`validate_ddp`, before any rank
starts) and `summarize` (one payload's medians and spreads, printed by the torchrun entry).

Hygiene: a timeout on the process group, barrier -> drop DDP model and optimizer ->
destroy_process_group (destroying the group while a DDP model is alive can abort a rank,
REFERENCE.md sec. 4); the loader's workers are shut down before that; spawn binds its store to
127.0.0.1 on an OS-chosen port; temp folders are removed on every exit path.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from gpukit.bench.ddp_rank import LINK_SIZES, calibrate_kernels, ddp_body  # noqa: F401 (public here too)
from gpukit.bench.timing import percentile, resolve_device

HOOKS = ("none", "fp16", "powersgd", "bf16")
HOOK_ALIASES = {"fp16_compress": "fp16", "bf16_compress": "bf16", "allreduce": "none"}


def normalize_hook(hook: str) -> str:
    h = HOOK_ALIASES.get(hook, hook)
    if h not in HOOKS:
        raise ValueError(f"hook must be one of {', '.join(HOOKS)}; got {hook!r}")
    return h


# ---------------------------------------------------------------- launchers
def validate_ddp(
    ranks,
    hook,
    steps,
    warmup,
    micro_batch,
    seq_len,
    n_layers,
    hidden,
    n_heads,
    vocab,
    bucket_mb,
    grad_accum,
    powersgd_rank,
    powersgd_start_iter,
    loader_latency_ms,
    loader_workers,
    timeout_s,
    backend="gloo",
):
    """The launchers' input check, before any rank starts: one-line ValueError naming the field; the hook's name."""
    from gpukit.errors import require_positive, require_positive_int
    from gpukit.memory import reference_spec

    require_positive_int("ranks", ranks)
    for name, v in (
        ("steps", steps),
        ("micro_batch", micro_batch),
        ("seq_len", seq_len),
        ("grad_accum", grad_accum),
        ("powersgd_rank", powersgd_rank),
    ):
        require_positive_int(name, v)
    require_positive_int("warmup", warmup, allow_zero=True)
    require_positive_int("loader_workers", loader_workers, allow_zero=True)
    require_positive("bucket_mb", bucket_mb)
    require_positive("loader_latency_ms", loader_latency_ms, allow_zero=True)
    require_positive("timeout_s", timeout_s)
    hook = normalize_hook(hook)
    if hook == "powersgd" and powersgd_start_iter < 2:
        raise ValueError(
            f"powersgd_start_iter must be >= 2 (torch needs it with error feedback), got "
            f"{powersgd_start_iter}"
        )
    if hook == "powersgd" and warmup < powersgd_start_iter:
        raise ValueError(
            f"warmup must be >= powersgd_start_iter ({powersgd_start_iter}) so that the timed steps "
            f"compress, got {warmup}"
        )
    spec = reference_spec(n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, seq=seq_len)
    if hook == "powersgd" and backend == "gloo":
        from gpukit.scaling import ddp_buckets, gpt_param_shapes

        nb = len(ddp_buckets(gpt_param_shapes(spec), bucket_mb))
        if nb > 1:
            need = spec.n_params * 4 / 2**20
            raise ValueError(
                f"bucket_mb must be >= {need:.3g} (one bucket) for powersgd on gloo, got {bucket_mb:g} "
                f"({nb} buckets): torch's powerSGD_hook issues each bucket's Q all-reduce from a future "
                "callback, and with several buckets the ranks' gloo collectives fall out of order "
                "(hang or 'Received data size doesn't match')"
            )
    return hook


def _cfg(**kw) -> dict:
    kw.setdefault("powersgd_error_feedback", True)
    return kw


def run_ddp(
    n_ranks: int = 2,
    *,
    hook: str = "none",
    steps: int = 10,
    warmup: int = 3,
    micro_batch: int = 4,
    seq_len: int = 64,
    n_layers: int = 2,
    hidden: int = 128,
    n_heads: int = 4,
    vocab: int = 512,
    bucket_mb: float = 25.0,
    grad_accum: int = 1,
    powersgd_rank: int = 1,
    powersgd_start_iter: int = 2,
    loader_latency_ms: float = 0.0,
    loader_workers: int = 0,
    loader_shared: bool = False,
    device: str = "cpu",
    backend: str = "auto",
    threads: int | None = 1,
    calibrate_link: bool = True,
    timeout_s: float = 300,
    startup_s: float | None = None,
    profile: bool = False,
    trace_path: str | None = None,
) -> dict:
    """Spawn `n_ranks` local ranks and measure DDP steps; rank 0's payload (step_s, compute_s lists
    per step, bytes_per_step, timeline of the median step, link_samples, param_shapes, env)."""
    from gpukit.bench.ranks import check_gpu_count, pick_backend

    if threads is not None:
        from gpukit.errors import require_positive_int

        require_positive_int("threads", threads)
    device = resolve_device(device)
    backend = pick_backend(backend, device)
    hook = validate_ddp(
        n_ranks,
        hook,
        steps,
        warmup,
        micro_batch,
        seq_len,
        n_layers,
        hidden,
        n_heads,
        vocab,
        bucket_mb,
        grad_accum,
        powersgd_rank,
        powersgd_start_iter,
        loader_latency_ms,
        loader_workers,
        timeout_s,
        backend,
    )
    check_gpu_count(n_ranks, device)
    if hook == "bf16" and backend != "nccl":
        raise ValueError("hook bf16 needs the nccl backend (--device cuda); on gloo use fp16")
    import torch.multiprocessing as mp

    # one shared storage = one lock for every rank's loader threads (a spawn-context lock travels to the
    # ranks with their arguments; no file, so nothing is left behind even when the run is killed)
    lock = mp.get_context("spawn").Lock() if loader_shared else None
    cfg = _cfg(
        hook=hook,
        steps=steps,
        warmup=warmup,
        micro_batch=micro_batch,
        seq_len=seq_len,
        n_layers=n_layers,
        hidden=hidden,
        n_heads=n_heads,
        vocab=vocab,
        bucket_mb=float(bucket_mb),
        grad_accum=grad_accum,
        powersgd_rank=powersgd_rank,
        powersgd_start_iter=powersgd_start_iter,
        loader_latency_ms=float(loader_latency_ms),
        loader_workers=loader_workers,
        loader_lock_obj=lock,
        device=device,
        backend=backend,
        threads=threads,
        timeout_s=timeout_s,
        launcher="spawn",
        calibrate_link=calibrate_link,
        profile=profile,
        trace_path=trace_path,
    )
    from gpukit.bench.launch import spawn

    return spawn(ddp_body, cfg, n_ranks, timeout_s, startup_s)


def summarize(payload: dict, tokens_per_step: int) -> dict:
    """Medians and spreads of one world size's payload."""
    st, ct = payload["step_s"], payload["compute_s"]
    # medians resist other programs' bursts; with a loader the steps alternate between waiting for a
    # batch and not (W batches arrive together), and only the mean gives the throughput
    stat = (lambda x: sum(x) / len(x)) if payload.get("loader") else (lambda x: percentile(x, 50))
    step, comp = stat(st), stat(ct)
    # paired: each synced step against the compute-only step that ran right after it (same load)
    wt = payload.get("input_wait_s") or [0.0] * len(st)
    exposed = stat([a - b - w for a, b, w in zip(st, ct, wt, strict=True)])
    return {
        "ranks": payload["world_size"],
        "measured_step_s": step,
        "step_p10_s": percentile(st, 10),
        "step_p90_s": percentile(st, 90),
        "compute_s": comp,
        "compute_p10_s": percentile(ct, 10),
        "compute_p90_s": percentile(ct, 90),
        "exposed_comm_s": max(0.0, exposed),
        "input_wait_s": stat(wt),
        "comm_bytes_per_step": int(percentile(payload["bytes_per_step"], 50)),
        "tokens_per_s": tokens_per_step / step,
        "steps": len(st),
    }


def profile_ddp_step(n_ranks: int = 2, *, trace_path: str | None = None, **kw) -> dict:
    """torch.profiler over one synced DDP step on `n_ranks` spawned ranks (after warm-up): rank 0's
    operator table (look for the all-reduce: gloo's `allreduce`, NCCL's `nccl:all_reduce`) and the
    bucket timeline of that step; `trace_path` writes a Chrome trace."""
    p = run_ddp(n_ranks, steps=1, warmup=2, calibrate_link=False, profile=True, trace_path=trace_path, **kw)
    return p["profile"]


# ---------------------------------------------------------------- netlab and torchrun
def run_ddp_netlab(n_ranks: int, rate: str, *, timeout_s: float = 600, **kw) -> dict:
    """One rank per network namespace over an emulated link of `rate` (gpukit.bench.netlab): one
    torchrun per namespace, static rendezvous, this module's torchrun entry point; rank 0's payload.
    CPU and gloo only (device cpu or auto), as the lab's collectives."""
    from gpukit.bench.netlab import NetLab

    kw["device"] = netlab_device(kw.get("device", "cpu"))
    args = _cli_args(**kw)
    with tempfile.TemporaryDirectory(prefix="gk-ddp-") as tmp:
        out = os.path.join(tmp, "ddp.json")
        args += ["--out", out, "--timeout", str(int(timeout_s))]
        if kw.get("loader_shared"):
            args += ["--loader-lock", os.path.join(tmp, "storage.lock")]
        with NetLab(n_ranks, rate) as lab:
            cmds = [lab.torchrun_argv(i, "gpukit.bench.ddp", args) for i in range(n_ranks)]
            results = lab.run(cmds, timeout_s + 60)
            info = lab.info()
        bad = [r for r in results if r.returncode != 0]
        if bad or not os.path.exists(out):
            r = bad[0] if bad else results[0]
            tail = (r.stderr + r.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise RuntimeError(
                f"DDP over netlab failed on node {r.node} "
                f"({'timed out' if r.timed_out else f'exit {r.returncode}'}): {tail[0][:300]}"
            )
        with open(out) as f:
            payload = json.load(f)
    payload["netlab"] = info
    return payload


def netlab_device(device: str | None) -> str:
    """The device of ranks over netlab: cpu ('auto' too). Each namespace runs one rank with LOCAL_RANK 0,
    so on CUDA every rank would take GPU 0, and NCCL between processes of one host does not go through
    the emulated link (shared memory, P2P): ValueError for cuda."""
    if str(device).lower() in ("auto", "cpu"):
        return "cpu"
    resolve_device(device)  # its own error for anything but cpu/cuda/auto
    raise ValueError(
        f"device must be cpu with netlab (gloo over the emulated link, one rank per namespace), "
        f"got {device!r}"
    )


def _cli_args(**kw) -> list[str]:
    flags = {
        "device": "--device",
        "hook": "--hook",
        "steps": "--steps",
        "warmup": "--warmup",
        "micro_batch": "--micro-batch",
        "seq_len": "--seq-len",
        "n_layers": "--layers",
        "hidden": "--hidden",
        "n_heads": "--heads",
        "vocab": "--vocab",
        "bucket_mb": "--bucket-mb",
        "grad_accum": "--grad-accum",
        "powersgd_rank": "--powersgd-rank",
        "powersgd_start_iter": "--powersgd-start-iter",
        "loader_latency_ms": "--loader-latency-ms",
        "loader_workers": "--loader-workers",
    }
    out = []
    for k, v in kw.items():
        if k in flags:
            out += [flags[k], str(v)]
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        allow_abbrev=False,
        prog="python -m gpukit.bench.ddp",
        description="DDP step of the reference GPT (torchrun worker; rank 0 writes JSON)",
    )
    p.add_argument("--hook", default="none")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--micro-batch", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--bucket-mb", type=float, default=25.0)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--powersgd-rank", type=int, default=1)
    p.add_argument("--powersgd-start-iter", type=int, default=2)
    p.add_argument("--loader-latency-ms", type=float, default=0.0)
    p.add_argument("--loader-workers", type=int, default=0)
    p.add_argument("--loader-lock", default=None, help="flock file shared by all ranks (one storage)")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", help="rank 0 writes its payload (JSON) here")
    return p


def main(argv: list[str] | None = None) -> int:
    """torchrun entry point (launch.torchrun_rank): env:// rendezvous (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""
    from gpukit.bench.launch import torchrun_rank
    from gpukit.bench.ranks import pick_backend
    from gpukit.bench.results import write_json

    a = build_parser().parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        print(
            "error: run under torchrun (RANK/WORLD_SIZE unset); from Python use gpukit.bench.ddp.run_ddp",
            file=sys.stderr,
        )
        return 2
    try:
        device = resolve_device(a.device)
        backend = pick_backend("auto", device)
        hook = validate_ddp(
            int(os.environ["WORLD_SIZE"]),
            a.hook,
            a.steps,
            a.warmup,
            a.micro_batch,
            a.seq_len,
            a.layers,
            a.hidden,
            a.heads,
            a.vocab,
            a.bucket_mb,
            a.grad_accum,
            a.powersgd_rank,
            a.powersgd_start_iter,
            a.loader_latency_ms,
            a.loader_workers,
            a.timeout,
            backend,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cfg = _cfg(
        hook=hook,
        steps=a.steps,
        warmup=a.warmup,
        micro_batch=a.micro_batch,
        seq_len=a.seq_len,
        n_layers=a.layers,
        hidden=a.hidden,
        n_heads=a.heads,
        vocab=a.vocab,
        bucket_mb=a.bucket_mb,
        grad_accum=a.grad_accum,
        powersgd_rank=a.powersgd_rank,
        powersgd_start_iter=a.powersgd_start_iter,
        loader_latency_ms=a.loader_latency_ms,
        loader_workers=a.loader_workers,
        loader_lock=a.loader_lock,
        device=device,
        backend=backend,
        threads=a.threads,
        timeout_s=a.timeout,
        launcher="torchrun",
    )

    def report(payload: dict) -> None:
        if a.out:
            write_json(payload, a.out)
        s = summarize(payload, a.micro_batch * payload["world_size"] * a.seq_len * a.grad_accum)
        print(json.dumps(s), flush=True)

    try:
        torchrun_rank(cfg, ddp_body, report)
    except ValueError as e:  # this node's GPUs, checked before the rendezvous
        print(f"error: {e}", file=sys.stderr)
        return 2
    # done and reported: skip the interpreter's teardown of torch, where a C++ thread still joinable at
    # exit aborts the rank now and then ("terminate called without an active exception", SIGABRT, seen
    # with the fp16 hook on a loaded 2-core machine), turning a finished run into a failed one
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
