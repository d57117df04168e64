"""What every rank launcher and rank body shares: the backend, the GPU count, a rank's set-up, its
environment stamp, the device sync and the means and maxima over ranks.

The launchers (gpukit.bench.launch: `spawn` for local ranks, `torchrun_rank` under torchrun) set a
rank up with `setup_rank`; the launchers' input checks (`pick_backend`, `check_gpu_count`,
`check_local_gpu_count`) run before any rank starts; the rank bodies (collectives_measure, article,
ddp_rank, fsdp) time with `sync` and agree with `rank_mean` / `rank_max`. torch is imported inside the
functions, so importing this module stays light. This module imports no other bench module but
envinfo (the one environment report).
Used in: gpukit.bench.launch, gpukit.bench.collectives, gpukit.bench.collectives_measure,
gpukit.bench.article, gpukit.bench.ddp, gpukit.bench.ddp_rank, gpukit.bench.ddp_sweep, gpukit.bench.fsdp.
"""

from __future__ import annotations

import os

BACKENDS = ("auto", "gloo", "nccl")


def pick_backend(backend: str, device: str) -> str:
    """The process-group backend: 'auto' is nccl on cuda and gloo on cpu; ValueError for another name or nccl off cuda."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if backend == "nccl" and device != "cuda":
        raise ValueError("backend nccl needs --device cuda (use gloo on cpu)")
    return ("nccl" if device == "cuda" else "gloo") if backend == "auto" else backend


def check_gpu_count(n_ranks: int, device: str, name: str = "n_ranks") -> None:
    """ValueError before any rank starts when CUDA has fewer GPUs than `n_ranks` (`name`: what the count is called)."""
    # a rank takes the GPU of its (local) rank number (setup_rank): without this check rank 1 of 2 on a
    # one-GPU machine dies with 'invalid device ordinal'
    if device == "cuda":
        import torch

        if n_ranks > torch.cuda.device_count():
            raise ValueError(
                f"{name} must be <= the {torch.cuda.device_count()} CUDA devices here, got {n_ranks}"
            )


def check_local_gpu_count(device: str) -> None:
    """Under torchrun: the ranks of this node (LOCAL_WORLD_SIZE, at least LOCAL_RANK + 1) each need a GPU."""
    local = max(int(os.environ.get("LOCAL_WORLD_SIZE", 0)), int(os.environ.get("LOCAL_RANK", 0)) + 1)
    check_gpu_count(local, device, "torchrun --nproc-per-node")


def setup_rank(cfg: dict, local_rank: int) -> None:
    """Set this rank's torch threads (cfg['threads'], if given) and, on CUDA, its GPU (number `local_rank`)."""
    import torch

    if cfg.get("threads"):
        torch.set_num_threads(int(cfg["threads"]))
    if cfg["device"] == "cuda":
        torch.cuda.set_device(local_rank)


def rank_env(cfg: dict) -> dict:
    """A collective rank's environment stamp (envinfo.env_stamp + world size, backend, op, launcher, MASTER_ADDR, GLOO_SOCKET_IFNAME)."""
    import torch.distributed as dist

    from gpukit.bench.envinfo import env_stamp

    return env_stamp(
        cfg["device"],
        threads=cfg.get("threads"),
        world_size=dist.get_world_size(),
        backend=cfg["backend"],
        op=cfg.get("op"),
        launcher=cfg.get("launcher"),
        master_addr=os.environ.get("MASTER_ADDR"),
        gloo_socket_ifname=os.environ.get("GLOO_SOCKET_IFNAME"),
    )


def sync(device: str) -> None:
    """Wait for the device's queued work (torch.cuda.synchronize on cuda; nothing on cpu)."""
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def rank_mean(values: list[float], device: str) -> list[float]:
    """Element-wise mean over ranks (nccl-tests' default -a 1 averages the time over ranks)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return (t / dist.get_world_size()).tolist()


def rank_max(value: float, device: str) -> float:
    """The largest `value` over ranks (every rank gets it: all ranks take the same decision)."""
    import torch
    import torch.distributed as dist

    t = torch.tensor([value], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t.item())
