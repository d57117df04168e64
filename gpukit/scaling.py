"""Scaling across GPUs: what data parallelism sends and what it costs a training step.

Seed of the scaling calculator (issue 7: moved here from gpukit.audits.claims and gpukit.comm):
- `ddp_allreduce_bytes`, `allreduce_traffic`: bytes a DDP step all-reduces, per rank and on all
  links, as the rank count grows (ring all-reduce, Patarasuk & Yuan 2009).
- `ddp_step_estimate` -> `DdpEstimate`: weak-scaling DDP step = compute (6N FLOPs per token, Kaplan
  et al. 2020) + gradient all-reduce (gpukit.comm alpha-beta model), with an overlap share.
Pure: catalog numbers and gpukit calculators only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from gpukit.catalog import get_interconnect
from gpukit.comm import coefficients, collective_time
from gpukit.compute import _rate_flops
from gpukit.errors import require_positive, require_positive_int
from gpukit.results import frame
from gpukit.units import dtype_bytes


# ---------------------------------------------------------------------------------------------------
# Data-parallel gradient traffic
# ---------------------------------------------------------------------------------------------------
def ddp_allreduce_bytes(n_params: float, grad_dtype: str = "fp32") -> float:
    """Bytes DDP all-reduces per step: one gradient per parameter (the per-rank buffer S)."""
    return require_positive("n_params", n_params) * dtype_bytes(grad_dtype)


@dataclass(frozen=True)
class AllReduceTraffic:
    """Bytes per rank and on all links together for an all-reduce of S, as the rank count grows."""

    size_bytes: float
    algorithm: str
    rows: tuple[dict, ...]

    def to_json_dict(self) -> dict:
        return {"size_bytes": self.size_bytes, "algorithm": self.algorithm, "rows": [dict(r) for r in self.rows]}

    def to_frame(self):
        return frame(self.rows)


def allreduce_traffic(size_bytes: float, ranks=(2, 4, 8, 16, 32, 64), algorithm: str = "ring") -> AllReduceTraffic:
    """What "16 GPUs means 16x the data transfer" gets wrong. In a ring all-reduce each rank sends
    2(n-1)/n x S bytes (Patarasuk & Yuan 2009): at most 2S, almost the same for 4 or 64 ranks, and all
    links carry their share at the same time, so the bandwidth term of the time does not grow with n.
    What grows is the sum over all links, 2(n-1)S, and the ring's latency term 2(n-1) alpha (a tree's
    grows as 2 log2 n alpha). Rows: n_ranks, per-rank bytes sent, per-rank / S, all-links bytes, the
    naive n x S claim."""
    size = require_positive("size_bytes", size_bytes)
    rows = []
    for n in ranks:
        _, cb = coefficients("all_reduce", n, algorithm)
        rows.append({"n_ranks": int(n), "bytes_sent_per_rank": cb * size, "per_rank_over_size": cb,
                     "bytes_all_links": cb * size * n, "naive_n_times_size_bytes": n * size})
    return AllReduceTraffic(size_bytes=size, algorithm=algorithm, rows=tuple(rows))


@dataclass(frozen=True)
class DdpEstimate:
    """Data-parallel step on n GPUs: compute, gradient all-reduce, speedup over one GPU (no overlap)."""

    n_gpus: int
    compute_s: float
    comm_s: float
    overlap: float
    link: str

    @property
    def step_s(self) -> float:
        return self.compute_s + (1 - self.overlap) * self.comm_s

    @property
    def speedup(self) -> float:
        return self.n_gpus * self.compute_s / self.step_s

    @property
    def efficiency(self) -> float:
        return self.speedup / self.n_gpus

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(step_s=self.step_s, speedup=self.speedup, efficiency=self.efficiency)
        return d


def ddp_step_estimate(n_gpus: int, *, n_params: float, tokens_per_gpu: float, link, gpu: str = "h100-sxm",
                      mfu: float = 0.4, grad_dtype: str = "bf16", overlap: float = 0.0) -> DdpEstimate:
    """Weak scaling of DDP: each GPU computes 6N x tokens_per_gpu FLOPs (Kaplan et al. 2020) at peak x
    MFU, then all-reduces N gradients (ring, gpukit.comm.collective_time); `overlap` is the share of
    the all-reduce hidden behind backward (PyTorch DDP buckets, Li et al. 2020, VLDB). speedup =
    n x t_compute / t_step."""
    n = require_positive_int("n_gpus", n_gpus)
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap must be in [0, 1], got {overlap}")
    compute_s = 6 * require_positive("n_params", n_params) * require_positive("tokens_per_gpu", tokens_per_gpu) / (
        _rate_flops(gpu, mfu))
    link_obj = get_interconnect(link) if isinstance(link, str) else link
    comm = collective_time("all_reduce", n_params * dtype_bytes(grad_dtype), n, link_obj)
    return DdpEstimate(n_gpus=n, compute_s=compute_s, comm_s=comm.time_s, overlap=float(overlap), link=comm.link)
