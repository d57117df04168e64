"""Beyond DDP on this machine: FSDP2 (ZeRO-3), ZeroRedundancyOptimizer (ZeRO-1), tensor and pipeline
parallelism with torch's own APIs, on local ranks (gloo on CPU, NCCL on CUDA).

Each rank builds gpukit.bench.models' reference GPT (same seed: identical replicas) and, in turn:
1. DDP: step time (median over steps, after warm-up, barrier before each step) and, per rank, the
   MemTracker peak per category (Parameter, Gradient, Optstate, Activation, Temp);
2. FSDP2 (`torch.distributed.fsdp.fully_shard` on every block, then the root): the same figures;
   each rank holds 1/n of parameters, gradients and optimizer states plus the gathered layer(s);
3. ZeRO-1: `torch.distributed.optim.ZeroRedundancyOptimizer(AdamW)` under DDP: step time and each
   rank's optimizer-state bytes;
4. micro-benchmarks that price FSDP's traffic: the all-gather and reduce-scatter of the model's
   16-/32-bit parameter bytes, timed on the same group;
5. TP: `torch.distributed.tensor.parallel.parallelize_module` with ColwiseParallel/RowwiseParallel
   on the MLP (Megatron's split, Shoeybi et al. 2019) checked against the unsplit MLP; and PP:
   `torch.distributed.pipelining` (PipelineStage + Schedule1F1B) over the blocks split in two.
   A piece that torch refuses on this backend is reported with torch's own error line, not hidden.

The parent compares the FSDP memory per rank with gpukit.memory's ZeRO-3 prediction (fp32 Adam on
CPU: 4 + 4 + 8 bytes/param, / n ranks, plus one gathered layer) and the FSDP step time with a model:
DDP's no-sync compute time + 2 all-gathers + 1 reduce-scatter of the parameters, as measured on the
group (FSDP2 overlaps them with compute on GPUs; on 2 CPU cores they mostly serialize).
The rank body `fsdp_body` lives here (spawned functions must be importable) and is handed to
gpukit.bench.launch.spawn. Used in: notebooks/06_beyond_data_parallel,
tests/test_fsdp.py, `make bench`.
"""

from __future__ import annotations

import time

from gpukit.bench.ranks import sync
from gpukit.bench.results import BenchResult
from gpukit.bench.timing import percentile

CATS = ("Parameter", "Gradient", "Optstate", "Activation", "Temp")


def memtracker_peak(mt, device: str) -> dict:
    """MemTracker's peak bytes per category (and 'Total') on `device`: 'cpu', 'cuda:N', or 'cuda' when
    the rank holds one GPU. The snapshot is keyed by torch.device and on CUDA also holds the CPU (AdamW's
    step counters live there), so the key is chosen by the device the run used, never by dict order."""
    snap = mt.get_tracker_snapshot("peak")
    want = str(device)
    keys = [k for k in snap if str(k) == want]
    if not keys and ":" not in want:  # 'cuda': the rank's one GPU, whatever its index
        keys = [k for k in snap if getattr(k, "type", str(k).split(":")[0]) == want]
    if len(keys) != 1:
        found = ", ".join(sorted(str(k) for k in snap)) or "none"
        raise RuntimeError(
            f"MemTracker peak: expected one device {want}, found {len(keys)} (devices: {found})"
        )
    out = {str(getattr(k, "value", k)).split(".")[-1]: int(v) for k, v in snap[keys[0]].items()}
    return {c: out.get(c, 0) for c in (*CATS, "Total")}


def _timed(step, steps: int, warmup: int, device: str) -> list[float]:
    import torch.distributed as dist

    for _ in range(warmup):
        step()
    ts = []
    for _ in range(steps):
        dist.barrier()
        sync(device)
        t0 = time.perf_counter()
        step()
        sync(device)
        ts.append(time.perf_counter() - t0)
    return ts


def _train(model, opt, batch):
    loss = model(*batch)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss


def _mem_of(model, opt, batch, device: str) -> dict:
    """MemTracker peaks on `device` of one training step after a first step (optimizer states exist)."""
    from torch.distributed._tools.mem_tracker import MemTracker

    _train(model, opt, batch)
    mt = MemTracker()
    mt.track_external(model, opt)
    with mt:
        _train(model, opt, batch)
    return memtracker_peak(mt, device)


def _collective_s(op: str, numel: int, device: str, reps: int = 5) -> float:
    """Median time of one all_gather_into_tensor / reduce_scatter_tensor of `numel` fp32 elements total."""
    import torch
    import torch.distributed as dist

    n = dist.get_world_size()
    shard = -(-numel // n)
    full = torch.zeros(shard * n, device=device)
    part = torch.zeros(shard, device=device)
    ts = []
    for i in range(reps + 1):
        dist.barrier()
        sync(device)
        t0 = time.perf_counter()
        if op == "all_gather":
            dist.all_gather_into_tensor(full, part)
        else:
            dist.reduce_scatter_tensor(part, full)
        sync(device)
        if i:
            ts.append(time.perf_counter() - t0)
    return percentile(ts, 50)


def _try(name: str, fn, report: dict) -> None:
    """Run fn(); on failure record torch's one-line reason under report[name] (and keep going)."""
    try:
        report[name] = fn()
    except Exception as e:  # noqa: BLE001 - the reason is the result
        msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
        report[name] = {"ran": False, "error": f"{type(e).__name__}: {msg[:300]}"}


def _tp_check(cfg: dict) -> dict:
    """Megatron MLP split with torch's tensor-parallel API; output and gradients vs the unsplit MLP."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.debug import CommDebugMode
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    from gpukit.bench.models import MLP, reference_spec

    device, n = cfg["device"], dist.get_world_size()
    spec = reference_spec(
        n_layers=1, hidden=cfg["hidden"], n_heads=cfg["n_heads"], vocab=cfg["vocab"], seq=cfg["seq_len"]
    )
    torch.manual_seed(0)
    ref = MLP(spec, 0.0).to(device)
    torch.manual_seed(0)
    tp = MLP(spec, 0.0).to(device)
    fc1, fc2 = [name for name, m in tp.named_children() if isinstance(m, torch.nn.Linear)][:2]
    mesh = init_device_mesh(device, (n,))
    parallelize_module(tp, mesh, {fc1: ColwiseParallel(), fc2: RowwiseParallel()})
    x = torch.randn(cfg["micro_batch"], cfg["seq_len"], cfg["hidden"], device=device)
    dist.broadcast(x, 0)
    x_tp, x_ref = x.clone().requires_grad_(), x.clone().requires_grad_()
    comm = CommDebugMode()
    with comm:  # Megatron's f/g: one all-reduce in forward (after fc2), one in backward (before fc1)
        y = tp(x_tp)
        y.sum().backward()
    y_ref = ref(x_ref)
    y_ref.sum().backward()
    w = getattr(tp, fc1).weight
    g_local = w.grad.to_local() if hasattr(w.grad, "to_local") else w.grad
    g_ref = getattr(ref, fc1).weight.grad.chunk(n, 0)[dist.get_rank()]
    result = {
        "ran": True,
        "max_abs_diff_output": float((y - y_ref).detach().abs().max()),
        "max_abs_diff_grad": float((g_local - g_ref).abs().max()),
        "max_abs_diff_input_grad": float((x_tp.grad - x_ref.grad).abs().max()),
        "comm_counts": {str(k).split(".")[-1]: int(v) for k, v in comm.get_comm_counts().items()},
    }
    ts = _timed(lambda: tp(x_tp).sum().backward(), cfg["steps"], 1, device)
    result["step_ms"] = percentile(ts, 50) * 1e3
    return result


def _pp_check(cfg: dict) -> dict:
    """Two pipeline stages over the reference GPT's blocks with torch.distributed.pipelining."""
    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B

    from gpukit.bench.models import build_reference_model, reference_spec

    device, rank, n = cfg["device"], dist.get_rank(), dist.get_world_size()
    spec = reference_spec(
        n_layers=cfg["n_layers"],
        hidden=cfg["hidden"],
        n_heads=cfg["n_heads"],
        vocab=cfg["vocab"],
        seq=cfg["seq_len"],
    )
    full = build_reference_model(spec, device=device, seed=0)
    mask = full.causal_mask
    per = -(-spec.n_layers // n)
    blocks = list(full.blocks)[rank * per : (rank + 1) * per]

    class Part(torch.nn.Module):  # stage 0: embeddings + its blocks; last stage: its blocks + head
        def __init__(self):
            super().__init__()
            self.blocks = torch.nn.ModuleList(blocks)
            self.first, self.last = rank == 0, rank == n - 1
            if self.first:
                self.wte, self.wpe = full.wte, full.wpe
            if self.last:
                self.ln_f = full.ln_f
                self.head = torch.nn.Linear(spec.hidden, spec.vocab, bias=False)

        def forward(self, x):
            if self.first:
                x = self.wte(x) + self.wpe(torch.arange(x.shape[1], device=x.device))
            for b in self.blocks:
                x = b(x, mask)
            return self.head(self.ln_f(x)) if self.last else x

    part = Part().to(device)
    m = cfg["microbatches"]
    mb = cfg["micro_batch"]
    stage = PipelineStage(part, rank, n, torch.device(device))

    def loss_fn(logits, targets):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    sched = Schedule1F1B(stage, n_microbatches=m, loss_fn=loss_fn)
    g = torch.Generator().manual_seed(0)
    tok = torch.randint(0, spec.vocab, (m * mb, cfg["seq_len"] + 1), generator=g).to(device)
    idx, tgt = tok[:, :-1].contiguous(), tok[:, 1:].contiguous()

    def step():
        if rank == 0:
            sched.step(idx)
        elif rank == n - 1:
            sched.step(target=tgt, losses=[])
        else:
            sched.step()

    ts = _timed(step, cfg["steps"], 1, device)
    return {
        "ran": True,
        "stages": n,
        "microbatches": m,
        "step_ms": percentile(ts, 50) * 1e3,
        "schedule": "Schedule1F1B",
    }


def fsdp_body(cfg: dict) -> dict:
    """One rank's measurements inside an initialized process group; rank 0 returns every rank's figures."""
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP

    from gpukit.bench.envinfo import env_stamp
    from gpukit.bench.models import build_reference_model, make_batch, make_optimizer, reference_spec

    device, rank = cfg["device"], dist.get_rank()
    spec = reference_spec(
        n_layers=cfg["n_layers"],
        hidden=cfg["hidden"],
        n_heads=cfg["n_heads"],
        vocab=cfg["vocab"],
        seq=cfg["seq_len"],
    )
    batch = make_batch(spec, cfg["micro_batch"], cfg["seq_len"], device=device, seed=rank)
    out: dict = {"rank": rank}
    steps, warmup = cfg["steps"], cfg["warmup"]
    # the device MemTracker reads: this rank's GPU (launch.rank_main set it), not the CPU beside it
    mem_device = f"cuda:{torch.cuda.current_device()}" if device == "cuda" else device

    # 1-2. DDP and FSDP2 side by side: memory of each, then steps timed in interleaved rounds
    # (DDP step, DDP no_sync step, FSDP step, ...) so that load from other processes hits all alike
    live = {"model": build_reference_model(spec, device=device, seed=0)}  # cleared before teardown
    n_params = sum(p.numel() for p in live["model"].parameters())
    live["ddp"] = DDP(live["model"])
    live["opt"] = make_optimizer(live["ddp"], "adamw")
    out["ddp_mem"] = _mem_of(live["ddp"], live["opt"], batch, mem_device)
    live["fmodel"] = build_reference_model(spec, device=device, seed=0)
    for block in live["fmodel"].blocks:
        fully_shard(block)
    fully_shard(live["fmodel"])
    live["fopt"] = make_optimizer(live["fmodel"], "adamw")
    out["fsdp_mem"] = _mem_of(live["fmodel"], live["fopt"], batch, mem_device)
    out["fsdp_local_param_numel"] = sum(
        p.to_local().numel() if hasattr(p, "to_local") else p.numel() for p in live["fmodel"].parameters()
    )

    def local_step():
        with live["ddp"].no_sync():
            _train(live["ddp"], live["opt"], batch)

    def fsdp_no_step():  # forward + backward (gathers, reduce-scatter) without the optimizer step
        live["fmodel"](*batch).backward()
        live["fopt"].zero_grad(set_to_none=True)

    kinds = {
        "ddp_ms": lambda: _train(live["ddp"], live["opt"], batch),
        "compute_ms": local_step,
        "fsdp_ms": lambda: _train(live["fmodel"], live["fopt"], batch),
        "fsdp_no_step_ms": fsdp_no_step,
    }
    times = {k: [] for k in kinds}
    for fn in kinds.values():
        _timed(fn, 0, warmup, device)
    for _ in range(steps):
        for k, fn in kinds.items():
            times[k] += _timed(fn, 1, 0, device)
    for k, ts in times.items():
        out[k] = percentile(ts, 50) * 1e3
    dist.barrier()
    live.clear()  # drop DDP/FSDP modules before later phases and destroy_process_group

    # 3. ZeRO-1 with torch's ZeroRedundancyOptimizer
    def zero1():
        m1 = DDP(build_reference_model(spec, device=device, seed=0))
        z = ZeroRedundancyOptimizer(
            m1.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3, weight_decay=0.01
        )
        ms = percentile(_timed(lambda: _train(m1, z, batch), steps, warmup, device), 50) * 1e3
        local = sum(
            v.numel() * v.element_size()
            for s in z.optim.state.values()
            for v in s.values()
            if torch.is_tensor(v) and v.dim() > 0
        )
        dist.barrier()
        return {"ran": True, "step_ms": ms, "optimizer_state_bytes": int(local)}

    _try("zero1", zero1, out)

    # 4. the collectives FSDP issues, priced on this group (fp32 parameters on CPU)
    out["all_gather_ms"] = _collective_s("all_gather", n_params, device) * 1e3
    out["reduce_scatter_ms"] = _collective_s("reduce_scatter", n_params, device) * 1e3

    # 5. TP and PP with torch's APIs
    if cfg.get("tp_pp", True):
        _try("tp", lambda: _tp_check(cfg), out)
        dist.barrier()
        _try("pp", lambda: _pp_check(cfg), out)
        dist.barrier()
    per_rank = [None] * dist.get_world_size()
    dist.all_gather_object(per_rank, out)
    env = env_stamp(
        device,
        threads=torch.get_num_threads(),
        world_size=dist.get_world_size(),
        backend=dist.get_backend(),
        model=spec.name,
        n_params=n_params,
    )
    return {"env": env, "ranks": per_rank, "n_params": n_params}


def predict_zero3(
    n_layers: int, hidden: int, n_heads: int, vocab: int, seq_len: int, micro_batch: int, ranks: int
):
    """gpukit.memory's ZeRO-3 and DDP predictions for the reference GPT in fp32 AdamW (CPU convention).

    convention="megatron": the ZeRO paper's sum of parts, term by term (parameters, gradients, optimizer
    states), which is what MemTracker's Parameter / Gradient / Optstate categories report; the default
    "pytorch" step model folds the optimizer step's temporaries and DDP's bucket copies into those terms
    to predict a peak, so its terms are not the states a rank holds."""
    from gpukit import memory as mem
    from gpukit.memory import reference_spec

    spec = reference_spec(n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, seq=seq_len)
    base = dict(
        precision="fp32",
        dp=ranks,
        seq_len=seq_len,
        micro_batch=micro_batch,
        attention="eager",
        dropout=False,
        convention="megatron",
    )
    return (
        mem.estimate_memory(spec, setup=mem.TrainSetup(zero_stage=3, zero3_prefetch_layers=1, **base)),
        mem.estimate_memory(spec, setup=mem.TrainSetup(zero_stage=0, **base)),
    )


def run_fsdp(
    n_ranks: int = 2,
    *,
    steps: int = 5,
    warmup: int = 2,
    micro_batch: int = 2,
    seq_len: int = 64,
    n_layers: int = 4,
    hidden: int = 256,
    n_heads: int = 4,
    vocab: int = 1024,
    microbatches: int = 4,
    device: str = "cpu",
    backend: str = "auto",
    threads: int | None = 1,
    tp_pp: bool = True,
    timeout_s: float = 240,
) -> BenchResult:
    """Spawn `n_ranks` ranks: DDP vs FSDP2 (memory per rank, step time), ZeRO-1, TP and PP checks.

    Rows: one per (mode, rank) with measured MemTracker peaks and, for FSDP, the ZeRO-3 prediction.
    Summary: step times, the FSDP step-time model and its error, what ran and what could not (why)."""
    from gpukit.bench.ranks import check_gpu_count, pick_backend
    from gpukit.bench.timing import resolve_device
    from gpukit.errors import require_positive, require_positive_int
    from gpukit.memory import reference_spec

    n_ranks = require_positive_int("n_ranks", n_ranks)
    if n_ranks < 2:
        raise ValueError(f"n_ranks must be at least 2 (sharding needs peers), got {n_ranks}")
    for name, v in (
        ("steps", steps),
        ("micro_batch", micro_batch),
        ("seq_len", seq_len),
        ("microbatches", microbatches),
    ):
        require_positive_int(name, v)
    require_positive_int("warmup", warmup, allow_zero=True)
    require_positive("timeout_s", timeout_s)
    reference_spec(n_layers=n_layers, hidden=hidden, n_heads=n_heads, vocab=vocab, seq=seq_len)
    if hidden * 4 % n_ranks or n_heads % n_ranks:
        raise ValueError(
            f"n_ranks must divide n_heads {n_heads} and 4*hidden for the TP check, got {n_ranks}"
        )
    device = resolve_device(device)
    backend = pick_backend(backend, device)
    check_gpu_count(n_ranks, device)  # rank r takes GPU r (launch.rank_main): fail here, not in rank 1
    cfg = dict(
        steps=steps,
        warmup=warmup,
        micro_batch=micro_batch,
        seq_len=seq_len,
        n_layers=n_layers,
        hidden=hidden,
        n_heads=n_heads,
        vocab=vocab,
        microbatches=microbatches,
        device=device,
        backend=backend,
        threads=threads,
        timeout_s=timeout_s,
        tp_pp=tp_pp,
    )
    from gpukit.bench.launch import spawn

    payload = spawn(fsdp_body, cfg, n_ranks, timeout_s)
    z3, ddp_pred = predict_zero3(n_layers, hidden, n_heads, vocab, seq_len, micro_batch, n_ranks)
    rows = []
    for r in payload["ranks"]:
        for mode, pred in (("ddp", ddp_pred), ("fsdp", z3)):
            m = r[f"{mode}_mem"]
            rows.append(
                {
                    "mode": mode,
                    "rank": r["rank"],
                    "params_bytes": m["Parameter"],
                    "pred_params_bytes": pred.params_bytes,
                    "grads_bytes": m["Gradient"],
                    "pred_grads_bytes": pred.grads_bytes,
                    "optimizer_bytes": m["Optstate"],
                    "pred_optimizer_bytes": pred.optimizer_bytes,
                    "states_bytes": m["Parameter"] + m["Gradient"] + m["Optstate"],
                    "pred_states_bytes": pred.params_bytes + pred.grads_bytes + pred.optimizer_bytes,
                    "activations_bytes": m["Activation"],
                    "peak_bytes": m["Total"],
                    "pred_total_bytes": pred.total_bytes,
                    "step_ms": r[f"{mode}_ms"],
                }
            )
    for row in rows:
        row["states_error"] = row["states_bytes"] / row["pred_states_bytes"] - 1
        row["peak_error"] = row["peak_bytes"] / row["pred_total_bytes"] - 1
    r0 = payload["ranks"]
    ms = {
        k: percentile([r[k] for r in r0], 50)
        for k in ("ddp_ms", "fsdp_ms", "compute_ms", "all_gather_ms", "reduce_scatter_ms", "fsdp_no_step_ms")
    }
    model_ms = ms["compute_ms"] + 2 * ms["all_gather_ms"] + ms["reduce_scatter_ms"]
    summary = {
        "n_params": payload["n_params"],
        "ranks": n_ranks,
        "backend": backend,
        "ddp_step_ms": ms["ddp_ms"],
        "fsdp_step_ms": ms["fsdp_ms"],
        "compute_only_ms": ms["compute_ms"],
        "all_gather_ms": ms["all_gather_ms"],
        "reduce_scatter_ms": ms["reduce_scatter_ms"],
        "fsdp_model_ms": model_ms,
        "fsdp_model_error": ms["fsdp_ms"] / model_ms - 1,
        "fsdp_optimizer_step_ms": ms["fsdp_ms"] - ms["fsdp_no_step_ms"],  # AdamW over DTensor shards
        "fsdp_local_param_share": r0[0]["fsdp_local_param_numel"] / payload["n_params"],
        "fsdp_optimizer_bytes_rank0": r0[0]["fsdp_mem"]["Optstate"],
        "pred_zero3_optimizer_bytes": z3.optimizer_bytes,
    }
    for piece in ("zero1", "tp", "pp"):
        if piece in r0[0]:
            summary[piece] = r0[0][piece]
    return BenchResult(
        "fsdp",
        tuple(rows),
        payload["env"],
        summary,
        (
            "mode",
            "rank",
            "states_bytes",
            "pred_states_bytes",
            "states_error",
            "activations_bytes",
            "peak_bytes",
            "pred_total_bytes",
            "peak_error",
            "step_ms",
        ),
    )


def main(argv=None) -> int:
    import argparse
    import json

    p = argparse.ArgumentParser(
        allow_abbrev=False, prog="python -m gpukit.bench.fsdp", description=__doc__.splitlines()[0]
    )
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--timeout", type=float, default=240)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    r = run_fsdp(a.ranks, steps=a.steps, timeout_s=a.timeout)
    print(json.dumps(r.to_json_dict(), indent=2, default=str) if a.json else r.to_text())
    return 0


def summary_markdown(result: BenchResult) -> str:
    """The run's key figures as Markdown bullets (notebook 06 section 2); every number read from `result`."""
    s = result.summary
    fsdp = [r for r in result.rows if r["mode"] == "fsdp"]
    z1, tp, pp = s.get("zero1", {}), s.get("tp", {}), s.get("pp", {})

    def ran(d):
        return "ran" if d.get("ran") else f"could not run ({d.get('error', 'not attempted')})"

    errors = ", ".join(f"{r['peak_error']:+.1%}" for r in fsdp)
    return "\n".join(
        (
            f"- Each rank holds **{s['fsdp_local_param_share']:.0%}** of the parameters under FSDP; rank 0's optimizer "
            f"states are {s['fsdp_optimizer_bytes_rank0']:,} bytes against {s['pred_zero3_optimizer_bytes']:,} predicted.",
            f"- Peak per rank, FSDP vs the ZeRO-3 prediction: errors {errors}.",
            f"- Step time (CPU): DDP {s['ddp_step_ms']:.0f} ms, FSDP {s['fsdp_step_ms']:.0f} ms; model for FSDP = compute "
            f"({s['compute_only_ms']:.0f} ms, DDP without sync) + 2 all-gathers ({s['all_gather_ms']:.1f} ms each) + 1 "
            f"reduce-scatter ({s['reduce_scatter_ms']:.1f} ms) = {s['fsdp_model_ms']:.0f} ms: error "
            f"{s['fsdp_model_error']:+.0%}. Of the FSDP step, the optimizer step over the DTensor shards takes "
            f"{s['fsdp_optimizer_step_ms']:.0f} ms (the model's compute term holds DDP's plain AdamW over every element; the FSDP one updates half, through DTensor).",
            f"- ZeRO-1 (ZeroRedundancyOptimizer) on {s['backend']}: {ran(z1)}; each rank keeps "
            f"{z1.get('optimizer_state_bytes', 0):,} bytes of optimizer state.",
            f"- TP (parallelize_module) on {s['backend']}: {ran(tp)}; output matches the unsplit MLP to "
            f"{tp.get('max_abs_diff_output', float('nan')):.1e}, collectives per forward+backward: {tp.get('comm_counts')}.",
            f"- PP (torch.distributed.pipelining) on {s['backend']}: {ran(pp)} ({pp.get('schedule', '')}, "
            f"{pp.get('microbatches', '?')} micro-batches, {pp.get('step_ms', float('nan')):.0f} ms per step).",
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
