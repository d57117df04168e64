"""One DDP rank's measurement (gloo on CPU, NCCL on CUDA): step time, compute, bytes, overlap timeline.

`ddp_body` runs inside an initialized process group, handed by either launcher of gpukit.bench.ddp to
gpukit.bench.launch (`run_ddp` spawns local ranks; `python -m gpukit.bench.ddp` runs under torchrun). It trains gpukit.bench.models' reference GPT under
torch.nn.parallel.DistributedDataParallel and returns the payload rank 0 reports (times in seconds,
bytes per step, the median step's timeline, the in-run all-reduce samples, kernel calibration).

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

Input pipeline: with `loader_latency_ms` > 0 a prefetcher (`_Prefetcher`, DataLoader-like) yields
whole batches, each taking that long (a sleep: storage or decoding latency, no CPU) in
`loader_workers` worker threads (a spawned daemon rank cannot start worker processes; 0 = in the
training loop). `loader_shared=True` makes all ranks' loaders take turns on one lock
(a shared file system or one storage server): the aggregate input rate is then fixed, the job
becomes input-bound as ranks are added (the articles' "32 GPUs, 2x speed-up").

Hygiene: barrier -> the loader's workers shut down -> drop DDP model and optimizer, before the
launcher's destroy_process_group (destroying the group while a DDP model is alive can abort a
rank, REFERENCE.md sec. 4). gpukit.bench.ddp re-exports `ddp_body`, `calibrate_kernels` and
`LINK_SIZES`.
Used in: gpukit.bench.ddp (run_ddp and the torchrun main hand it to gpukit.bench.launch),
gpukit.widgets.scaling_view (plot_overlap draws the timeline), tests/test_scaling_bench.py.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

from gpukit.bench.ranks import rank_mean
from gpukit.bench.ranks import sync as device_sync  # `sync` names a synced step below
from gpukit.bench.timing import percentile

LINK_SIZES = (64 * 1024, 1024**2, 4 * 1024**2, 16 * 1024**2)  # the in-run alpha-beta calibration


def _median_time(fn, device: str, repeats: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeats):
        device_sync(device)
        t = time.perf_counter()
        fn()
        device_sync(device)
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

    return {
        "copy": _median_time(copies, device) / numel,
        "div": _median_time(lambda: buf.div_(1.0), device) / numel,
        "fp16": _median_time(fp16, device) / numel,
        "psgd_compressed": _median_time(psgd, device) / side**2,
        "psgd_uncompressed": _median_time(unc, device) / numel,
    }


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
    rows = [
        {
            "name": e.key,
            "count": e.count,
            "cpu_total_us": e.cpu_time_total,
            "self_cpu_us": e.self_cpu_time_total,
        }
        for e in prof.key_averages()
    ]
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
        state = psgd.PowerSGDState(
            process_group=None,
            matrix_approximation_rank=cfg["powersgd_rank"],
            start_powerSGD_iter=cfg["powersgd_start_iter"],
            use_error_feedback=cfg["powersgd_error_feedback"],
            warm_start=cfg["powersgd_error_feedback"],
            random_seed=0,
        )
        real = psgd.powerSGD_hook

    def hook(_state, bucket):
        t = time.perf_counter()
        buf = bucket.buffer()
        ev = {
            "bucket": bucket.index(),
            "bytes": buf.numel() * buf.element_size(),
            "n_tensors": len(bucket.gradients()),
            "start_s": t - rec["t0"],
            "end_s": None,
        }
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

    from gpukit.bench.collectives_measure import measure
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer
    from gpukit.memory import reference_spec

    device, rank, world = cfg["device"], dist.get_rank(), dist.get_world_size()
    spec = reference_spec(
        n_layers=cfg["n_layers"],
        hidden=cfg["hidden"],
        n_heads=cfg["n_heads"],
        vocab=cfg["vocab"],
        seq=cfg["seq_len"],
    )
    model = build_reference_model(spec, device=device, seed=0)  # same seed: identical replicas
    rec = {"active": False, "bytes": 0, "calls": 0, "events": [], "t0": 0.0}
    live = {
        "ddp": DDP(
            model,
            device_ids=[torch.cuda.current_device()] if device == "cuda" else None,
            bucket_cap_mb=cfg["bucket_mb"],
        )
    }
    hook = _make_hook(cfg["hook"], cfg, rec)
    live["ddp"].register_comm_hook(None, hook)
    live["opt"] = make_optimizer(live["ddp"], "adamw")
    mb, k_acc = cfg["micro_batch"], cfg["grad_accum"]
    fixed = make_batch(spec, mb, cfg["seq_len"], device=device, seed=rank)  # own data per rank
    if cfg["loader_latency_ms"] > 0 or cfg["loader_workers"] > 0:
        ds = _Batches(
            spec.vocab,
            mb,
            cfg["seq_len"],
            cfg["loader_latency_ms"] / 1e3,
            seed=rank,
            lock_path=cfg.get("loader_lock"),
            lock=cfg.get("loader_lock_obj"),
        )
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
        device_sync(device)
        rec["events"], rec["bytes"], rec["calls"] = [], 0, 0
        rec["t0"] = time.perf_counter()
        rec["active"] = sync
        marks["input_wait_s"] = 0.0
        for i in range(k_acc):
            micro(sync and i == k_acc - 1, sync)
        device_sync(device)
        marks["bwd_done"] = time.perf_counter() - rec["t0"]
        live["opt"].step()
        live["opt"].zero_grad(set_to_none=True)
        device_sync(device)
        dt = time.perf_counter() - rec["t0"]
        rec["active"] = False
        return dt, {
            "bytes": rec["bytes"],
            "calls": rec["calls"],
            "events": list(rec["events"]),
            "step_s": dt,
            **marks,
        }  # a copy: later steps must not change it

    n_elems = sum(p.numel() for p in model.parameters())
    kernel_s = calibrate_kernels(
        device, numel=min(max(n_elems, 1 << 20), 1 << 26), rank=cfg.get("powersgd_rank", 1)
    )
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
            info["compute"] = {
                k: info_c[k] for k in ("fwd_start", "fwd_end", "bwd_end", "bwd_done", "step_s")
            }
            timelines.append(info)
            # the last micro-step's forward and backward, and the optimizer, of the compute-only step
            phases.append(
                [
                    info_c["fwd_end"] - info_c["fwd_start"],
                    info_c["bwd_end"] - info_c["fwd_end"],
                    dt_c - info_c["bwd_done"],
                ]
            )
    steps_mean = rank_mean(step_times, device)
    waits_mean = rank_mean(waits, device)
    compute_mean = rank_mean(compute_times, device)
    phase_med = [percentile(rank_mean([ph[i] for ph in phases], device), 50) for i in range(3)]
    link = link16 = None
    if cfg.get("calibrate_link", True):

        def sweep(dtype):
            rows = measure(
                "all_reduce",
                list(LINK_SIZES),
                warmup=1,
                repeats=5,
                dtype=dtype,
                device=device,
                backend=dist.get_backend(),
                bare_check=False,
                target_repeat_s=0.02,
                max_iters=20,
            )
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
    env = env_stamp(
        device,
        threads=torch.get_num_threads(),
        world_size=world,
        backend=dist.get_backend(),
        model=spec.name,
        n_params=n_params,
        launcher=cfg.get("launcher"),
        master_addr=os.environ.get("MASTER_ADDR"),
        gloo_socket_ifname=os.environ.get("GLOO_SOCKET_IFNAME"),
    )
    dist.barrier()
    if "loader" in live:  # the loader's workers end before the group does
        live["loader"].close()
    live.clear()  # drop loader, DDP model and optimizer before destroy_process_group (REFERENCE.md sec. 4)
    del model
    return {
        "env": env,
        "n_params": n_params,
        "param_shapes": shapes,
        "world_size": world,
        "step_s": steps_mean,
        "compute_s": compute_mean,
        "input_wait_s": waits_mean,
        "loader": loader_on,
        "bytes_per_step": byte_counts,
        "timeline": timelines[mid],
        "link_samples": link,
        "link_samples_fp16": link16,
        "phases_s": {"forward_s": phase_med[0], "backward_s": phase_med[1], "optimizer_s": phase_med[2]},
        "kernel_s": kernel_s,
        "profile": prof_rows,
    }
