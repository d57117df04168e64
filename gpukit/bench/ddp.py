"""DDP step time of the reference GPT on local ranks (gloo on CPU, NCCL on CUDA), with comm hooks.

Each rank trains gpukit.bench.models' reference GPT under DistributedDataParallel: warm-up steps, then
per step a barrier, the step, a device sync; the median over steps (averaged over ranks) is the
step time. The same steps under `ddp.no_sync()` (no gradient all-reduce) give the compute-only
time, so comm_overhead = step - no_sync step. Hooks: 'fp16_compress' (torch
default_hooks.fp16_compress_hook; works on gloo), 'bf16_compress' (NCCL only, REFERENCE.md sec. 4).
Teardown order: barrier(); del model; destroy_process_group() (destroying the group while a DDP
model is alive can abort a rank). Used in: notebooks on scaling, `gpukit bench ddp`.
"""

from __future__ import annotations

import time

from gpukit.bench.results import BenchResult
from gpukit.bench.timing import percentile, resolve_device

HOOKS = ("none", "fp16_compress", "bf16_compress")


def ddp_body(cfg: dict) -> dict:
    """One rank's DDP measurement inside an initialized process group (called by the spawn worker)."""
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpukit.bench.collectives import _rank_mean, _sync
    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer, reference_spec

    device, rank = cfg["device"], dist.get_rank()
    spec = reference_spec(n_layers=cfg["n_layers"], hidden=cfg["hidden"], n_heads=cfg["n_heads"],
                          vocab=cfg["vocab"], seq=cfg["seq_len"])
    model = build_reference_model(spec, device=device, seed=0)  # same seed: identical replicas
    # held in a dict so teardown can drop every reference before destroy_process_group
    live = {"ddp": DDP(model, device_ids=[torch.cuda.current_device()] if device == "cuda" else None)}
    if cfg["hook"] == "fp16_compress":
        live["ddp"].register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif cfg["hook"] == "bf16_compress":
        live["ddp"].register_comm_hook(None, default_hooks.bf16_compress_hook)
    live["opt"] = make_optimizer(live["ddp"], "adamw")
    batch = make_batch(spec, cfg["micro_batch"], cfg["seq_len"], device=device, seed=rank)  # own data

    def step(sync_grads: bool) -> float:
        idx, targets = batch
        ddp, opt = live["ddp"], live["opt"]
        if sync_grads:
            loss = ddp(idx, targets)
            loss.backward()
        else:
            with ddp.no_sync():
                loss = ddp(idx, targets)
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return float(loss.detach())

    def timed(sync_grads: bool) -> tuple[list[float], float]:
        for _ in range(cfg["warmup"]):
            step(sync_grads)
        times, loss = [], float("nan")
        for _ in range(cfg["steps"]):
            dist.barrier()  # every step starts together: rank skew is not counted as communication
            _sync(device)
            t0 = time.perf_counter()
            loss = step(sync_grads)
            _sync(device)
            times.append(time.perf_counter() - t0)
        return _rank_mean(times, device), loss

    ddp_times, loss = timed(True)
    local_times, _ = timed(False)
    n_params = sum(p.numel() for p in model.parameters())
    rows = []
    for mode, ts in (("ddp", ddp_times), ("no_sync (compute only)", local_times)):
        rows.append({"mode": mode, "hook": cfg["hook"], "step_ms": percentile(ts, 50) * 1e3,
                     "p10_ms": percentile(ts, 10) * 1e3, "p90_ms": percentile(ts, 90) * 1e3, "steps": len(ts)})
    env = env_stamp(device, threads=torch.get_num_threads(), world_size=dist.get_world_size(),
                    backend=dist.get_backend(), model=spec.name, n_params=n_params)
    dist.barrier()
    live.clear()  # drop the DDP model and optimizer before destroy_process_group (REFERENCE.md sec. 4)
    del model
    return {"env": env, "rows": rows, "loss": loss, "n_params": n_params}


def run_ddp(n_ranks: int = 2, *, hook: str = "none", steps: int = 10, warmup: int = 3, micro_batch: int = 4,
            seq_len: int = 64, n_layers: int = 2, hidden: int = 128, n_heads: int = 4, vocab: int = 512,
            device: str = "cpu", backend: str = "auto", threads: int | None = 1,
            timeout_s: float = 300) -> BenchResult:
    """Spawn `n_ranks` ranks, train the reference GPT under DDP; step time with and without sync."""
    from gpukit.bench.collectives import _check, _pick_backend, spawn_ranks
    from gpukit.errors import require_choice, require_positive_int, require_timeout
    from gpukit.memory_eager import reference_spec

    n_ranks = require_positive_int("n_ranks", n_ranks)
    for name, v in (("steps", steps), ("micro_batch", micro_batch), ("seq_len", seq_len)):
        require_positive_int(name, v)
    require_positive_int("warmup", warmup, allow_zero=True)
    require_choice("hook", hook, HOOKS)
    require_timeout("timeout_s", timeout_s)
    if threads is not None:
        require_positive_int("threads", threads)
    # the shape is checked here (ModelSpec's one-line errors), not after the ranks have started
    reference_spec(n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, seq=seq_len)
    device = resolve_device(device)
    _check("all_reduce", backend, device, "fp32")
    backend = _pick_backend(backend, device)
    if hook == "bf16_compress" and backend != "nccl":
        raise ValueError("hook bf16_compress needs the nccl backend (--device cuda); on gloo use fp16_compress")
    cfg = {"mode": "ddp", "hook": hook, "steps": steps, "warmup": warmup, "micro_batch": micro_batch,
           "seq_len": seq_len, "n_layers": n_layers, "hidden": hidden, "n_heads": n_heads, "vocab": vocab,
           "device": device, "backend": backend, "threads": threads, "timeout_s": timeout_s, "op": "ddp",
           "launcher": "spawn"}
    payload = spawn_ranks(cfg, n_ranks, timeout_s)
    rows = payload["rows"]
    summary = {"hook": hook, "n_params": payload["n_params"], "final_loss": payload["loss"],
               "comm_overhead_ms": rows[0]["step_ms"] - rows[1]["step_ms"],
               "sync_fraction": 1 - rows[1]["step_ms"] / rows[0]["step_ms"]}
    return BenchResult("ddp", tuple(rows), payload["env"], summary, ("mode", "hook", "step_ms", "p10_ms", "p90_ms"))
