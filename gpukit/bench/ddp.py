"""Real DDP on the reference GPT: step time, compute, exposed communication, bytes, overlap timeline.

Each rank trains gpukit.bench.models' reference GPT under torch.nn.parallel.DistributedDataParallel
(gloo on CPU, NCCL on CUDA). Launchers: `run_ddp` spawns local ranks (notebooks, tests),
`python -m gpukit.bench.ddp ...` under torchrun (one node, many nodes, one node per netlab
namespace), `ddp_scaling` runs world sizes 1..N and puts gpukit.scaling's prediction beside each.

Per step (Li et al. 2020, "PyTorch Distributed", VLDB, sec. 3-4): a barrier (ranks start each
step together), K micro-steps (gradient accumulation: the first K-1 under `no_sync()`, the last
synced), the optimizer step, a device sync. The same steps with every micro-step under `no_sync()`
give the compute time (no gradient all-reduce); exposed communication = step - compute. Synced
and compute-only steps are interleaved (one of each in turn), so load from other processes hits
both alike; the medians over steps (mean over ranks) are reported with p10/p90.

Bytes: the comm hook DDP calls is a wrapper around the real one (torch's allreduce_hook,
fp16_compress_hook or powerSGD_hook); while a synced step runs, every tensor the real hook hands to
torch.distributed.all_reduce is counted (numel x element size), so fp32 gradients give 4 B per
parameter, fp16 compression 2, PowerSGD its rank-r factors P, Q plus the uncompressed tensors. The
wrapper also timestamps each bucket's hand-off and the completion of its future: the overlap
timeline (a Gantt chart of buckets against forward/backward). Buckets: `bucket_cap_mb`; DDP's
first bucket is capped at 1 MiB (torch.distributed._DEFAULT_FIRST_BUCKET_BYTES).

Input pipeline: with `loader_latency_ms` > 0 a torch DataLoader yields whole batches, each taking
that long (a sleep: storage or decoding latency, no CPU) in `loader_workers` worker processes
(0 = in the training loop). `loader_shared=True` makes all ranks' loaders take turns on one lock
(a shared file system or one storage server): the aggregate input rate is then fixed, the job
becomes input-bound as ranks are added (the articles' "32 GPUs, 2x speed-up").

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
import time
from contextlib import contextmanager

from gpukit.bench.results import BenchResult
from gpukit.bench.timing import percentile, resolve_device

HOOKS = ("none", "fp16", "powersgd", "bf16")
HOOK_ALIASES = {"fp16_compress": "fp16", "bf16_compress": "bf16", "allreduce": "none"}
SCALINGS = ("strong", "weak")
COLUMNS = ("ranks", "measured_step_s", "predicted_step_s", "compute_s", "exposed_comm_s", "comm_bytes_per_step",
           "tokens_per_s", "efficiency")
LINK_SIZES = (64 * 1024, 1024**2, 4 * 1024**2, 16 * 1024**2)  # the in-run alpha-beta calibration


class DdpScalingResult(BenchResult):
    """BenchResult whose text view leaves out the bulky summary entries (the timeline, parameter
    shapes, kernel calibration), which stay in the JSON (`--json`) for plots."""

    BULKY = ("timeline", "param_shapes", "kernel_s", "phases_s_ranks_1")

    def to_text(self) -> str:
        short = {k: v for k, v in self.summary.items() if k not in self.BULKY}
        return BenchResult(self.kind, self.rows, self.env, short, self.columns, self.headers).to_text()


def normalize_hook(hook: str) -> str:
    h = HOOK_ALIASES.get(hook, hook)
    if h not in HOOKS:
        raise ValueError(f"hook must be one of {', '.join(HOOKS)}; got {hook!r}")
    return h


# ---------------------------------------------------------------- inside a rank
def _median_time(fn, device: str, repeats: int = 7) -> float:
    from gpukit.bench.collectives import _sync

    fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        t = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t)
    return percentile(times, 50)


def calibrate_kernels(device: str, numel: int = 1 << 21, rank: int = 1) -> dict:
    """Seconds per element of the work DDP and the hooks do besides communication, timed on
    calibration buffers as large as the run's gradients (`numel`: per-element costs depend on whether
    the data fits in cache), never on the model's step: 'copy' = gradients into the bucket and back;
    'div' = allreduce_hook's division by the world size; 'fp16' = fp16_compress_hook's cast down,
    divide, cast back; 'psgd_compressed' = PowerSGD's error feedback, M Q, orthogonalization, M^T P,
    P Q^T and new error on a square matrix of `numel` elements, per element; 'psgd_uncompressed' =
    error feedback and copies per element of an uncompressed tensor."""
    import math

    import torch
    from torch.distributed.algorithms.ddp_comm_hooks.powerSGD_hook import _orthogonalize

    g, buf = torch.randn(numel, device=device), torch.empty(numel, device=device)

    def copies():
        buf.copy_(g)
        g.copy_(buf)

    def fp16():
        h = buf.to(torch.float16).div_(2)
        buf.copy_(h)
    side = max(64, math.isqrt(numel))
    m, e = torch.randn(1, side, side, device=device), torch.zeros(1, side, side, device=device)
    q = torch.randn(1, side, rank, device=device)

    def psgd():
        m.add_(e)
        c = m.clone()
        p = torch.bmm(m, q)
        _orthogonalize(p)
        torch.bmm(m.transpose(1, 2), p, out=q)
        torch.bmm(p, q.transpose(1, 2), out=m)
        e.copy_(c - m)
        m.copy_(c)

    def unc():
        buf.add_(g)
        c = buf.clone()
        buf.sub_(c)
    return {"copy": _median_time(copies, device) / numel, "div": _median_time(lambda: buf.div_(1.0), device) / numel,
            "fp16": _median_time(fp16, device) / numel, "psgd_compressed": _median_time(psgd, device) / side**2,
            "psgd_uncompressed": _median_time(unc, device) / numel}


def _profile_step(one_step, device: str, trace_path: str | None) -> dict:
    """One synced DDP step under torch.profiler (CPU activities; CUDA too on a GPU, where Nsight
    Systems' `nsys profile -t cuda,nvtx,osrt` shows the NCCL kernels on their own stream): the
    operators by total time, and a Chrome trace (chrome://tracing, Perfetto) if `trace_path`."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=acts, record_shapes=False) as prof:
        dt, info = one_step(True)
    if trace_path:
        prof.export_chrome_trace(trace_path)
    rows = [{"name": e.key, "count": e.count, "cpu_total_us": e.cpu_time_total, "self_cpu_us": e.self_cpu_time_total}
            for e in prof.key_averages()]
    rows.sort(key=lambda r: -r["cpu_total_us"])
    return {"step_s": dt, "top_ops": rows[:25], "events": info["events"], "trace_path": trace_path}


class _Batches:
    """A map-style dataset whose items are whole batches: item i sleeps `latency_s` (holding `lock`,
    or `lock_path` with flock across torchrun's processes, when given: one shared storage), then returns
    deterministic random tokens."""

    def __init__(self, vocab, micro_batch, seq_len, latency_s, seed, lock_path=None, lock=None):
        self.vocab, self.micro_batch, self.seq_len = vocab, micro_batch, seq_len
        self.latency_s, self.seed, self.lock_path, self.lock = latency_s, seed, lock_path, lock

    def __len__(self):
        return 1 << 30

    def __getitem__(self, i):
        import torch

        if self.lock is not None:
            with self.lock:
                time.sleep(self.latency_s)
        elif self.lock_path:
            import fcntl

            with open(self.lock_path, "a") as f:
                fcntl.flock(f, fcntl.LOCK_EX)
                try:
                    time.sleep(self.latency_s)
                finally:
                    fcntl.flock(f, fcntl.LOCK_UN)
        elif self.latency_s > 0:
            time.sleep(self.latency_s)
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + i)
        tok = torch.randint(0, self.vocab, (self.micro_batch, self.seq_len + 1), generator=g)
        return tok[:, :-1].clone(), tok[:, 1:].clone()


class _Prefetcher:
    """The input pipeline: `workers` threads keep `workers` batches in flight (a DataLoader with
    prefetch_factor 1; a rank spawned as a daemon process cannot start worker processes, and for a
    loader that waits on storage, threads and processes wait alike). workers=0: in the loop."""

    def __init__(self, dataset, workers: int):
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self.ds, self.workers, self.i = dataset, workers, 0
        self.pool = ThreadPoolExecutor(workers) if workers else None
        self.inflight = deque()
        for _ in range(workers):
            self._submit()

    def _submit(self):
        self.inflight.append(self.pool.submit(self.ds.__getitem__, self.i))
        self.i += 1

    def __next__(self):
        if not self.workers:
            self.i += 1
            return self.ds[self.i - 1]
        item = self.inflight.popleft().result()
        self._submit()
        return item

    def close(self):
        if self.pool is not None:
            for f in self.inflight:
                f.cancel()
            self.pool.shutdown(wait=True)


@contextmanager
def _counting_all_reduce(rec: dict):
    """While active, count the bytes of every tensor passed to torch.distributed.all_reduce (the real
    hooks call it through the module attribute, so the wrapper sees exactly what they send)."""
    import torch.distributed as dist

    orig = dist.all_reduce

    def counting(tensor, *args, **kwargs):
        if rec["active"]:
            rec["bytes"] += tensor.numel() * tensor.element_size()
            rec["calls"] += 1
        return orig(tensor, *args, **kwargs)
    dist.all_reduce = counting
    try:
        yield
    finally:
        dist.all_reduce = orig


def _make_hook(kind: str, cfg: dict, rec: dict):
    """The hook to register: a wrapper around the real one (with its state) that timestamps each bucket."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd

    if kind == "none":
        real, state = default_hooks.allreduce_hook, None
    elif kind == "fp16":
        real, state = default_hooks.fp16_compress_hook, None
    elif kind == "bf16":
        real, state = default_hooks.bf16_compress_hook, None
    else:
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=cfg["powersgd_rank"],
                                   start_powerSGD_iter=cfg["powersgd_start_iter"],
                                   use_error_feedback=cfg["powersgd_error_feedback"],
                                   warm_start=cfg["powersgd_error_feedback"], random_seed=0)
        real = psgd.powerSGD_hook

    def hook(_state, bucket):
        t = time.perf_counter()
        buf = bucket.buffer()
        ev = {"bucket": bucket.index(), "bytes": buf.numel() * buf.element_size(), "n_tensors":
              len(bucket.gradients()), "start_s": t - rec["t0"], "end_s": None}
        fut = real(state, bucket)

        def done(f):
            ev["end_s"] = time.perf_counter() - rec["t0"]
            return f.value()
        if rec["active"]:
            rec["events"].append(ev)
        return fut.then(done)
    return hook


def ddp_body(cfg: dict) -> dict:
    """One rank's DDP measurement inside an initialized process group (spawned or under torchrun)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpukit.bench.collectives import _rank_mean, _sync, measure
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer
    from gpukit.memory_eager import reference_spec

    device, rank, world = cfg["device"], dist.get_rank(), dist.get_world_size()
    spec = reference_spec(n_layers=cfg["n_layers"], hidden=cfg["hidden"], n_heads=cfg["n_heads"],
                          vocab=cfg["vocab"], seq=cfg["seq_len"])
    model = build_reference_model(spec, device=device, seed=0)  # same seed: identical replicas
    rec = {"active": False, "bytes": 0, "calls": 0, "events": [], "t0": 0.0}
    live = {"ddp": DDP(model, device_ids=[torch.cuda.current_device()] if device == "cuda" else None,
                       bucket_cap_mb=cfg["bucket_mb"])}
    hook = _make_hook(cfg["hook"], cfg, rec)
    live["ddp"].register_comm_hook(None, hook)
    live["opt"] = make_optimizer(live["ddp"], "adamw")
    mb, k_acc = cfg["micro_batch"], cfg["grad_accum"]
    fixed = make_batch(spec, mb, cfg["seq_len"], device=device, seed=rank)  # own data per rank
    if cfg["loader_latency_ms"] > 0 or cfg["loader_workers"] > 0:
        ds = _Batches(spec.vocab, mb, cfg["seq_len"], cfg["loader_latency_ms"] / 1e3, seed=rank,
                      lock_path=cfg.get("loader_lock"), lock=cfg.get("loader_lock_obj"))
        live["loader"] = _Prefetcher(ds, cfg["loader_workers"])
    marks: dict = {}

    def next_batch(sync: bool):
        # compute-only steps train on the batch in memory: their time is compute, not input
        if "loader" in live and sync:
            t = time.perf_counter()
            idx, tgt = next(live["loader"])
            marks["input_wait_s"] = marks.get("input_wait_s", 0.0) + time.perf_counter() - t
            return idx.to(device), tgt.to(device)
        return fixed

    def micro(sync: bool, step_synced: bool):
        ddp = live["ddp"]
        batch = next_batch(step_synced)
        marks["fwd_start"] = time.perf_counter() - rec["t0"]
        if sync:
            loss = ddp(*batch)
            marks["fwd_end"] = time.perf_counter() - rec["t0"]
            loss.backward()
        else:
            with ddp.no_sync():
                loss = ddp(*batch)
                marks["fwd_end"] = time.perf_counter() - rec["t0"]
                loss.backward()
        marks["bwd_end"] = time.perf_counter() - rec["t0"]
        return loss

    def one_step(sync: bool) -> tuple[float, dict]:
        dist.barrier()  # every step starts together: rank skew is not counted as communication
        _sync(device)
        rec["events"], rec["bytes"], rec["calls"] = [], 0, 0
        rec["t0"] = time.perf_counter()
        rec["active"] = sync
        marks["input_wait_s"] = 0.0
        for i in range(k_acc):
            micro(sync and i == k_acc - 1, sync)
        _sync(device)
        marks["bwd_done"] = time.perf_counter() - rec["t0"]
        live["opt"].step()
        live["opt"].zero_grad(set_to_none=True)
        _sync(device)
        dt = time.perf_counter() - rec["t0"]
        rec["active"] = False
        return dt, {"bytes": rec["bytes"], "calls": rec["calls"], "events": list(rec["events"]), "step_s": dt,
                    **marks}  # a copy: later steps must not change it

    n_elems = sum(p.numel() for p in model.parameters())
    kernel_s = calibrate_kernels(device, numel=min(max(n_elems, 1 << 20), 1 << 26), rank=cfg.get("powersgd_rank", 1))
    step_times, compute_times, byte_counts, timelines, phases, waits = [], [], [], [], [], []
    # with a loader, enough warm-up steps to drain what the workers fetched ahead: steady state
    warmup = max(cfg["warmup"], 2 * cfg["loader_workers"] + 2) if "loader" in live else cfg["warmup"]
    # Synced and compute-only steps alternate (load from other programs hits both alike). With a
    # loader, the compute-only steps come first and the synced ones back to back: the loader must
    # keep up with consecutive steps (steady state), not with every other one.
    loader_on = "loader" in live
    with _counting_all_reduce(rec):
        for _ in range(warmup if not loader_on else cfg["warmup"]):
            one_step(True)
            one_step(False)
        if loader_on:
            computed = [one_step(False) for _ in range(cfg["steps"])]
            for _ in range(warmup):
                one_step(True)
        for i in range(cfg["steps"]):
            dt, info = one_step(True)
            step_times.append(dt)
            waits.append(info.get("input_wait_s", 0.0))
            byte_counts.append(info["bytes"])
            dt_c, info_c = computed[i] if loader_on else one_step(False)
            compute_times.append(dt_c)
            info["compute"] = {k: info_c[k] for k in ("fwd_start", "fwd_end", "bwd_end", "bwd_done", "step_s")}
            timelines.append(info)
            # the last micro-step's forward and backward, and the optimizer, of the compute-only step
            phases.append([info_c["fwd_end"] - info_c["fwd_start"], info_c["bwd_end"] - info_c["fwd_end"],
                           dt_c - info_c["bwd_done"]])
    steps_mean = _rank_mean(step_times, device)
    waits_mean = _rank_mean(waits, device)
    compute_mean = _rank_mean(compute_times, device)
    phase_med = [percentile(_rank_mean([ph[i] for ph in phases], device), 50) for i in range(3)]
    link = link16 = None
    if cfg.get("calibrate_link", True):
        def sweep(dtype):
            rows = measure("all_reduce", list(LINK_SIZES), warmup=1, repeats=5, dtype=dtype, device=device,
                           backend=dist.get_backend(), bare_check=False, target_repeat_s=0.02, max_iters=20)
            return [{"size_bytes": r["size_bytes"], "time_s": r["time_us"] / 1e6} for r in rows]
        link = sweep("fp32")
        if cfg["hook"] == "fp16":
            link16 = sweep("fp16")
    prof_rows = None
    if cfg.get("profile"):
        prof_rows = _profile_step(one_step, device, cfg.get("trace_path") if rank == 0 else None)
    # the median step's timeline (rank 0's clock) for the Gantt chart
    mid = sorted(range(len(step_times)), key=lambda i: step_times[i])[len(step_times) // 2]
    n_params = sum(p.numel() for p in model.parameters())
    shapes = [[n, list(p.shape)] for n, p in model.named_parameters()]
    env = env_stamp(device, threads=torch.get_num_threads(), world_size=world, backend=dist.get_backend(),
                    model=spec.name, n_params=n_params, launcher=cfg.get("launcher"),
                    master_addr=os.environ.get("MASTER_ADDR"),
                    gloo_socket_ifname=os.environ.get("GLOO_SOCKET_IFNAME"))
    dist.barrier()
    if "loader" in live:  # the loader's workers end before the group does
        live["loader"].close()
    live.clear()  # drop loader, DDP model and optimizer before destroy_process_group (REFERENCE.md sec. 4)
    del model
    return {"env": env, "n_params": n_params, "param_shapes": shapes, "world_size": world,
            "step_s": steps_mean, "compute_s": compute_mean, "input_wait_s": waits_mean, "loader": loader_on, "bytes_per_step": byte_counts,
            "timeline": timelines[mid], "link_samples": link, "link_samples_fp16": link16,
            "phases_s": {"forward_s": phase_med[0], "backward_s": phase_med[1], "optimizer_s": phase_med[2]},
            "kernel_s": kernel_s, "profile": prof_rows}


# ---------------------------------------------------------------- launchers
def _validate(ranks, hook, steps, warmup, micro_batch, seq_len, n_layers, hidden, n_heads, vocab, bucket_mb,
              grad_accum, powersgd_rank, powersgd_start_iter, loader_latency_ms, loader_workers, timeout_s,
              backend="gloo"):
    from gpukit.errors import require_positive, require_positive_int
    from gpukit.memory_eager import reference_spec

    require_positive_int("ranks", ranks)
    for name, v in (("steps", steps), ("micro_batch", micro_batch), ("seq_len", seq_len),
                    ("grad_accum", grad_accum), ("powersgd_rank", powersgd_rank)):
        require_positive_int(name, v)
    require_positive_int("warmup", warmup, allow_zero=True)
    require_positive_int("loader_workers", loader_workers, allow_zero=True)
    require_positive("bucket_mb", bucket_mb)
    require_positive("loader_latency_ms", loader_latency_ms, allow_zero=True)
    require_positive("timeout_s", timeout_s)
    hook = normalize_hook(hook)
    if hook == "powersgd" and powersgd_start_iter < 2:
        raise ValueError(f"powersgd_start_iter must be >= 2 (torch needs it with error feedback), got "
                         f"{powersgd_start_iter}")
    if hook == "powersgd" and warmup < powersgd_start_iter:
        raise ValueError(f"warmup must be >= powersgd_start_iter ({powersgd_start_iter}) so that the timed steps "
                         f"compress, got {warmup}")
    spec = reference_spec(n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, seq=seq_len)
    if hook == "powersgd" and backend == "gloo":
        from gpukit.scaling import ddp_buckets, gpt_param_shapes

        nb = len(ddp_buckets(gpt_param_shapes(spec), bucket_mb))
        if nb > 1:
            need = spec.n_params * 4 / 2**20
            raise ValueError(f"bucket_mb must be >= {need:.3g} (one bucket) for powersgd on gloo, got {bucket_mb:g} "
                             f"({nb} buckets): torch's powerSGD_hook issues each bucket's Q all-reduce from a future "
                             "callback, and with several buckets the ranks' gloo collectives fall out of order "
                             "(hang or 'Received data size doesn't match')")
    return hook


def _cfg(**kw) -> dict:
    kw.setdefault("powersgd_error_feedback", True)
    return kw


def run_ddp(n_ranks: int = 2, *, hook: str = "none", steps: int = 10, warmup: int = 3, micro_batch: int = 4,
            seq_len: int = 64, n_layers: int = 2, hidden: int = 128, n_heads: int = 4, vocab: int = 512,
            bucket_mb: float = 25.0, grad_accum: int = 1, powersgd_rank: int = 1, powersgd_start_iter: int = 2,
            loader_latency_ms: float = 0.0, loader_workers: int = 0, loader_shared: bool = False,
            device: str = "cpu", backend: str = "auto", threads: int | None = 1, calibrate_link: bool = True,
            timeout_s: float = 300, startup_s: float | None = None, profile: bool = False,
            trace_path: str | None = None) -> dict:
    """Spawn `n_ranks` local ranks and measure DDP steps; rank 0's payload (step_s, compute_s lists
    per step, bytes_per_step, timeline of the median step, link_samples, param_shapes, env)."""
    from gpukit.bench.collectives import _check, _pick_backend, spawn_ranks

    if threads is not None:
        from gpukit.errors import require_positive_int

        require_positive_int("threads", threads)
    device = resolve_device(device)
    _check("all_reduce", backend, device, "fp32")
    backend = _pick_backend(backend, device)
    hook = _validate(n_ranks, hook, steps, warmup, micro_batch, seq_len, n_layers, hidden, n_heads, vocab,
                     bucket_mb, grad_accum, powersgd_rank, powersgd_start_iter, loader_latency_ms, loader_workers,
                     timeout_s, backend)
    if hook == "bf16" and backend != "nccl":
        raise ValueError("hook bf16 needs the nccl backend (--device cuda); on gloo use fp16")
    import torch.multiprocessing as mp

    # one shared storage = one lock for every rank's loader threads (a spawn-context lock travels to the
    # ranks with their arguments; no file, so nothing is left behind even when the run is killed)
    lock = mp.get_context("spawn").Lock() if loader_shared else None
    cfg = _cfg(mode="ddp", hook=hook, steps=steps, warmup=warmup, micro_batch=micro_batch, seq_len=seq_len,
               n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, bucket_mb=float(bucket_mb),
               grad_accum=grad_accum, powersgd_rank=powersgd_rank, powersgd_start_iter=powersgd_start_iter,
               loader_latency_ms=float(loader_latency_ms), loader_workers=loader_workers, loader_lock_obj=lock,
               device=device, backend=backend, threads=threads, timeout_s=timeout_s, op="ddp",
               launcher="spawn", calibrate_link=calibrate_link, profile=profile, trace_path=trace_path)
    return spawn_ranks(cfg, n_ranks, timeout_s, startup_s)


def profile_ddp_step(n_ranks: int = 2, *, trace_path: str | None = None, **kw) -> dict:
    """torch.profiler over one synced DDP step on `n_ranks` spawned ranks (after warm-up): rank 0's
    operator table (look for the all-reduce: gloo's `allreduce`, NCCL's `nccl:all_reduce`) and the
    bucket timeline of that step; `trace_path` writes a Chrome trace."""
    p = run_ddp(n_ranks, steps=1, warmup=2, calibrate_link=False, profile=True, trace_path=trace_path, **kw)
    return p["profile"]


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
    return {"ranks": payload["world_size"], "measured_step_s": step, "step_p10_s": percentile(st, 10),
            "step_p90_s": percentile(st, 90), "compute_s": comp, "compute_p10_s": percentile(ct, 10),
            "compute_p90_s": percentile(ct, 90), "exposed_comm_s": max(0.0, exposed),
            "input_wait_s": stat(wt),
            "comm_bytes_per_step": int(percentile(payload["bytes_per_step"], 50)),
            "tokens_per_s": tokens_per_step / step, "steps": len(st)}


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


def ddp_scaling(ranks: int = 2, *, scaling: str = "weak", netlab: str | None = None, predict: bool = True,
                timeout_s: float = 600, **kw) -> BenchResult:
    """World sizes 1..`ranks`: measured DDP step, compute, exposed comm, bytes, tokens/s, efficiency,
    and gpukit.scaling's predicted step for each (compute rate from the world-size-1 compute-only
    steps, the link from the in-run all-reduce calibration at the largest world size).

    scaling 'weak': every rank keeps `micro_batch`; 'strong': the global batch micro_batch x ranks is
    split over the ranks (micro_batch x ranks must divide by every world size). netlab='1gbit':
    world sizes >= 2 run one rank per network namespace over that emulated link (root, iproute2).
    """
    from gpukit.bench.collectives import _pick_backend
    from gpukit.errors import require_choice, require_positive_int

    ranks = require_positive_int("ranks", ranks)
    require_choice("scaling", scaling, SCALINGS)
    mb = kw.pop("micro_batch", 4)
    global_batch = mb * ranks
    if scaling == "strong":
        bad = [n for n in range(1, ranks + 1) if global_batch % n]
        if bad:
            raise ValueError(f"micro_batch x ranks ({global_batch}) must divide by every world size for strong "
                             f"scaling; it does not for {bad}")
    if netlab is not None:
        from gpukit.bench.netlab import parse_rate, require_available

        parse_rate(netlab)
        require_available()
        if ranks < 2:
            raise ValueError(f"ranks must be >= 2 with --netlab (one rank per namespace), got {ranks}")
    # input check before any rank starts
    _validate(ranks, kw.get("hook", "none"), kw.get("steps", 10), kw.get("warmup", 3), mb, kw.get("seq_len", 64),
              kw.get("n_layers", 2), kw.get("hidden", 128), kw.get("n_heads", 4), kw.get("vocab", 512),
              kw.get("bucket_mb", 25.0), kw.get("grad_accum", 1), kw.get("powersgd_rank", 1),
              kw.get("powersgd_start_iter", 2), kw.get("loader_latency_ms", 0.0), kw.get("loader_workers", 0),
              timeout_s, _pick_backend(kw.get("backend", "auto"), resolve_device(kw.get("device", "cpu"))))
    seq, k_acc = kw.get("seq_len", 64), kw.get("grad_accum", 1)
    payloads, rows = [], []
    # the largest world size first: a failing multi-rank run fails before the others are spent
    for n in range(ranks, 0, -1):
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
    link16 = next((link_fit(p["link_samples_fp16"]) for p in reversed(multi) if p.get("link_samples_fp16")), None)
    one = payloads[0]
    link_1 = link_fit(one.get("link_samples_fp16" if normalize_hook(kw.get("hook", "none")) == "fp16"
                               else "link_samples"), 1)
    ph = payloads[0]["phases_s"]
    summary = {"scaling": scaling, "hook": hook, "netlab": netlab, "n_params": payloads[0]["n_params"],
               "link_alpha_s": link[0] if link else None, "link_bandwidth_gbps": link[1] if link else None,
               "link_fp16": list(link16) if link16 else None, "phases_s_ranks_1": ph,
               "kernel_s": payloads[0]["kernel_s"], "timeline": payloads[-1]["timeline"],
               "param_shapes": payloads[0]["param_shapes"], "bucket_mb": kw.get("bucket_mb", 25.0),
               "grad_accum": k_acc}
    if predict:
        for r, p in zip(rows, payloads, strict=True):
            lk = link16 if hook == "fp16" else link
            if netlab is not None and r["ranks"] > 1:
                ov = True  # over a rate-limited link the all-reduce waits on the wire, not on the cores
            else:
                ov = cpu_overlap_possible(p["env"].get("device", "cpu"), r["ranks"], kw.get("threads", 1))
            # (a) compute measured in the same run (interleaved compute-only steps): the model adds
            #     communication, hooks and input; (b) compute carried over from world size 1 (a priori)
            pred = predict_row(p, r, r, lk, overlap=ov, link_1=link_1, **kw)
            pred1 = predict_row(p, rows[0], r, lk, overlap=ov, link_1=link_1, **kw)
            r["predicted_step_s"] = pred.step_s
            r["predicted_exposed_comm_s"] = pred.step_s - pred.compute_s
            r["predicted_bytes_per_step"] = pred.comm_bytes
            extra = pred.step_s - pred.compute_s  # what the model adds to the measured compute
            # paired error: each synced step predicted from its neighbouring compute-only step
            if p.get("loader"):
                r["error"] = (r["compute_s"] + extra - r["measured_step_s"]) / r["measured_step_s"]
            else:
                r["error"] = percentile([(c + extra - t) / t for t, c in zip(p["step_s"], p["compute_s"], strict=True)],
                                        50)
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
    return DdpScalingResult("ddp", tuple(rows), payloads[-1]["env"], summary, COLUMNS)


def cpu_overlap_possible(device: str, ranks_per_host: int, threads: int | None) -> bool:
    """On CPU, gloo's all-reduce runs on CPU cores (copies, sums, the TCP stack): it overlaps the
    backward only if cores are left over beside the ranks' compute threads (one per rank at least).
    With none left, every second of communication is taken from the compute: no overlap."""
    if device == "cuda":
        return True
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores - ranks_per_host * (threads or 1) >= ranks_per_host


def predict_row(payload: dict, base_row: dict, row: dict, link, *, overlap: bool = True, link_1=None, **kw):
    """gpukit.scaling's prediction of one measured world size from calibrations only: a compute-only
    step (`base_row`: time, batch and phase split), the memory-pass rate and the all-reduce link fit."""
    from gpukit.scaling import predict_measured_ddp

    return predict_measured_ddp(payload["param_shapes"], base_row["compute_s"], base_row["micro_batch"],
                                row["micro_batch"], row["ranks"], link, hook=normalize_hook(kw.get("hook", "none")),
                                bucket_mb=kw.get("bucket_mb", 25.0), grad_accum=kw.get("grad_accum", 1),
                                powersgd_rank=kw.get("powersgd_rank", 1), phases_s=base_row["_phases"],
                                kernel_s=payload["kernel_s"], overlap=overlap, link_1=link_1,
                                loader_latency_s=kw.get("loader_latency_ms", 0.0) / 1e3,
                                loader_workers=kw.get("loader_workers", 0),
                                loader_shared=kw.get("loader_shared", False))


# ---------------------------------------------------------------- netlab and torchrun
def run_ddp_netlab(n_ranks: int, rate: str, *, timeout_s: float = 600, **kw) -> dict:
    """One rank per network namespace over an emulated link of `rate` (gpukit.bench.netlab): one
    torchrun per namespace, static rendezvous, this module's torchrun entry point; rank 0's payload."""
    from gpukit.bench.netlab import NetLab

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
            raise RuntimeError(f"DDP over netlab failed on node {r.node} "
                               f"({'timed out' if r.timed_out else f'exit {r.returncode}'}): {tail[0][:300]}")
        with open(out) as f:
            payload = json.load(f)
    payload["netlab"] = info
    return payload


def _cli_args(**kw) -> list[str]:
    flags = {"hook": "--hook", "steps": "--steps", "warmup": "--warmup", "micro_batch": "--micro-batch",
             "seq_len": "--seq-len", "n_layers": "--layers", "hidden": "--hidden", "n_heads": "--heads",
             "vocab": "--vocab", "bucket_mb": "--bucket-mb", "grad_accum": "--grad-accum",
             "powersgd_rank": "--powersgd-rank", "powersgd_start_iter": "--powersgd-start-iter",
             "loader_latency_ms": "--loader-latency-ms", "loader_workers": "--loader-workers"}
    out = []
    for k, v in kw.items():
        if k in flags:
            out += [flags[k], str(v)]
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(allow_abbrev=False, prog="python -m gpukit.bench.ddp",
                                description="DDP step of the reference GPT (torchrun worker; rank 0 writes JSON)")
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
    """torchrun entry point: env:// rendezvous (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)."""
    from datetime import timedelta

    import torch.distributed as dist

    from gpukit.bench.collectives import _pick_backend, _setup_rank
    from gpukit.bench.results import write_json

    a = build_parser().parse_args(argv)
    if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
        print("error: run under torchrun (RANK/WORLD_SIZE unset); from Python use gpukit.bench.ddp.run_ddp",
              file=sys.stderr)
        return 2
    try:
        hook = _validate(int(os.environ["WORLD_SIZE"]), a.hook, a.steps, a.warmup, a.micro_batch, a.seq_len,
                         a.layers, a.hidden, a.heads, a.vocab, a.bucket_mb, a.grad_accum, a.powersgd_rank,
                         a.powersgd_start_iter, a.loader_latency_ms, a.loader_workers, a.timeout,
                         _pick_backend("auto", resolve_device(a.device)))
        device = resolve_device(a.device)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    backend = _pick_backend("auto", device)
    cfg = _cfg(mode="ddp", hook=hook, steps=a.steps, warmup=a.warmup, micro_batch=a.micro_batch, seq_len=a.seq_len,
               n_layers=a.layers, hidden=a.hidden, n_heads=a.heads, vocab=a.vocab, bucket_mb=a.bucket_mb,
               grad_accum=a.grad_accum, powersgd_rank=a.powersgd_rank, powersgd_start_iter=a.powersgd_start_iter,
               loader_latency_ms=a.loader_latency_ms, loader_workers=a.loader_workers, loader_lock=a.loader_lock,
               device=device, backend=backend, threads=a.threads, timeout_s=a.timeout, launcher="torchrun")
    _setup_rank(cfg, int(os.environ.get("LOCAL_RANK", 0)))
    try:
        dist.init_process_group(backend, init_method="env://", timeout=timedelta(seconds=a.timeout))
        payload = ddp_body(cfg)
        dist.barrier()
        if dist.get_rank() == 0:
            if a.out:
                write_json(payload, a.out)
            s = summarize(payload, a.micro_batch * payload["world_size"] * a.seq_len * a.grad_accum)
            print(json.dumps(s), flush=True)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    # done and reported: skip the interpreter's teardown of torch, where a C++ thread still joinable at
    # exit aborts the rank now and then ("terminate called without an active exception", SIGABRT, seen
    # with the fp16 hook on a loaded 2-core machine), turning a finished run into a failed one
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
