"""Matmuls and one transformer layer on the roofline: compute- or memory-bound, attainable TFLOP/s.

Holds Roofline and roofline_matmul (one (m x k) @ (k x n) matmul, or `batch` identical ones) and
LayerRoofline and roofline_layer (the forward matmuls of one layer, prefill or decode). Intensity is
FLOP per byte of HBM traffic, each operand crossing HBM once (ideal tiling); attainable = min(peak,
intensity x bandwidth); the ridge point is peak / bandwidth (Williams, Waterman & Patterson 2009,
"Roofline", CACM 52(4)). Units: peak in TFLOP/s, bandwidth in GB/s (decimal), bytes, seconds. Peaks
and bandwidth come from a catalog GPU or are passed in (measured values from a profile). Pure: no
torch, no I/O. gpukit.compute re-exports every name here. CPU peaks and mixed-dtype matmuls are in
gpukit.compute.cpu_roofline.

Used in: notebooks/03_compute_and_time (compute.roofline_layer), gpukit.cli.compute (`gpukit roofline`),
gpukit.widgets.compute_view (matmul_roofline), tests/test_compute.py, tests/test_fuzz.py,
tests/test_silent_answers.py.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.catalog import as_gpu, as_model
from gpukit.errors import check_finite, overflow_error, require_choice, require_positive, require_positive_int
from gpukit.results import frame, json_safe
from gpukit.specs import ModelSpec
from gpukit.units import GB, dtype_bytes


# ---------------------------------------------------------------------------------------------------
# Roofline (Williams, Waterman & Patterson 2009)
# ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Roofline:
    """One matmul (or `batch` identical ones) on the roofline: compute- or memory-bound."""

    name: str
    m: int
    n: int
    k: int
    batch: int
    dtype: str
    flops: float
    bytes: float
    intensity_flop_per_byte: float
    ridge_flop_per_byte: float
    peak_tflops: float
    bandwidth_gbps: float
    attainable_tflops: float
    bound: str  # compute | memory
    compute_time_s: float
    memory_time_s: float

    @property
    def time_s(self) -> float:
        return max(self.compute_time_s, self.memory_time_s)

    @property
    def breakdown(self) -> tuple[tuple[str, float], ...]:
        return (("compute_time_s", self.compute_time_s), ("memory_time_s", self.memory_time_s))

    def to_frame(self):
        return frame([self.to_json_dict()], list(self.to_json_dict()))

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d["time_s"] = self.time_s
        return json_safe(d)


def _peak_and_bw(dtype, gpu, peak_tflops, bandwidth_gbps):
    if peak_tflops is None or bandwidth_gbps is None:
        if gpu is None:
            raise ValueError("give gpu, or both peak_tflops and bandwidth_gbps")
        gpu = as_gpu(gpu)
    peak = require_positive("peak_tflops", gpu.peak_tflops(dtype) if peak_tflops is None else peak_tflops)
    bw = require_positive(
        "bandwidth_gbps", gpu.hbm_bandwidth_gbps if bandwidth_gbps is None else bandwidth_gbps
    )
    return peak, bw


def roofline_matmul(
    m: int,
    n: int,
    k: int,
    dtype: str = "bf16",
    gpu=None,
    *,
    batch: int = 1,
    name: str = "matmul",
    peak_tflops: float | None = None,
    bandwidth_gbps: float | None = None,
) -> Roofline:
    """(m x k) @ (k x n): intensity = 2mnk / ((mk + kn + mn) * bytes per element); attainable
    = min(peak, intensity * bandwidth); ridge = peak / bandwidth (Williams et al. 2009). Each operand
    is assumed to cross HBM once (ideal tiling). `gpu` is a catalog GPU (peak for `dtype`, HBM GB/s);
    peak_tflops / bandwidth_gbps override it (e.g. measured values from a profile)."""
    gpu = as_gpu(gpu, optional=True)  # a catalog name too
    m, n, k = (require_positive_int(x, v) for x, v in (("m", m), ("n", n), ("k", k)))
    batch = require_positive_int("batch", batch)
    size = dtype_bytes(dtype)
    peak, bw = _peak_and_bw(dtype, gpu, peak_tflops, bandwidth_gbps)
    try:
        flops = 2.0 * m * n * k * batch
        moved = (m * k + k * n + m * n) * size * batch
    except OverflowError:
        raise overflow_error("the matmul's FLOPs or bytes (m x n x k)") from None
    check_finite("the matmul's FLOPs or bytes (m x n x k)", flops, moved)
    ai = flops / moved
    ridge = peak * 1e12 / (bw * GB)
    attainable = min(peak, ai * bw * GB / 1e12)
    return Roofline(
        name=name,
        m=m,
        n=n,
        k=k,
        batch=batch,
        dtype=dtype,
        flops=flops,
        bytes=moved,
        intensity_flop_per_byte=ai,
        ridge_flop_per_byte=ridge,
        peak_tflops=peak,
        bandwidth_gbps=bw,
        attainable_tflops=attainable,
        bound="compute" if ai >= ridge else "memory",
        compute_time_s=flops / (peak * 1e12),
        memory_time_s=moved / (bw * GB),
    )


@dataclass(frozen=True)
class LayerRoofline:
    """The main matmuls of one transformer layer (forward) on the roofline, and their sum."""

    mode: str
    seq_len: int
    micro_batch: int
    context: int | None
    ops: tuple[Roofline, ...]

    @property
    def flops(self) -> float:
        return sum(o.flops for o in self.ops)

    @property
    def bytes(self) -> float:
        return sum(o.bytes for o in self.ops)

    @property
    def time_s(self) -> float:
        """Each op at its own roof, one after another (no overlap between ops)."""
        return sum(o.time_s for o in self.ops)

    @property
    def intensity_flop_per_byte(self) -> float:
        return self.flops / self.bytes

    @property
    def memory_bound_time_share(self) -> float:
        return sum(o.time_s for o in self.ops if o.bound == "memory") / self.time_s

    @property
    def attainable_tflops(self) -> float:
        return self.flops / self.time_s / 1e12

    def to_frame(self):
        rows = [o.to_json_dict() for o in self.ops]
        return frame(rows, list(rows[0]))

    def to_json_dict(self) -> dict:
        return json_safe(
            {
                "mode": self.mode,
                "seq_len": self.seq_len,
                "micro_batch": self.micro_batch,
                "context": self.context,
                "flops": self.flops,
                "bytes": self.bytes,
                "time_s": self.time_s,
                "intensity_flop_per_byte": self.intensity_flop_per_byte,
                "attainable_tflops": self.attainable_tflops,
                "memory_bound_time_share": self.memory_bound_time_share,
                "ops": [o.to_json_dict() for o in self.ops],
            }
        )


def roofline_layer(
    model: ModelSpec,
    seq_len: int,
    micro_batch: int,
    dtype: str = "bf16",
    gpu=None,
    *,
    mode: str = "prefill",
    context: int | None = None,
    peak_tflops: float | None = None,
    bandwidth_gbps: float | None = None,
) -> LayerRoofline:
    """Roofline of one layer's forward matmuls: QKV, scores QK^T, attention x V, output projection,
    MLP up (gate+up for swiglu) and down. mode='prefill' (also a training forward): micro_batch*seq_len
    tokens at once (the full s x s scores, as the module counts them; a sliding window is a mask there).
    mode='decode': one new token per sequence against `context` cached keys (default seq_len; at most
    the sliding window, ModelSpec.kv_tokens); weight matmuls then have m = micro_batch, so their intensity is ~ micro_batch FLOP/byte
    in 16-bit: decode is memory-bound until the batch reaches the ridge point."""
    gpu = as_gpu(gpu, optional=True)  # a catalog name too
    require_choice("mode", mode, ("prefill", "decode"))
    model = as_model(model)
    if mode == "decode" and model.arch == "encoder":
        raise ValueError(
            f"mode decode needs a decoder: {model.name} is an encoder (no generated tokens, no KV "
            "cache); use prefill (one forward pass)"
        )
    seq_len = require_positive_int("seq_len", seq_len)
    b = require_positive_int("micro_batch", micro_batch)
    kw = dict(dtype=dtype, gpu=gpu, peak_tflops=peak_tflops, bandwidth_gbps=bandwidth_gbps)
    h, d, f = model.hidden, model.head_dim, model.ffn_hidden
    up = f * (2 if model.mlp == "swiglu" else 1)
    if mode == "prefill":
        tokens, context = b * seq_len, None
        # scores: per (sequence, head) (s x d) @ (d x s); values: (s x s) @ (s x d)
        scores = roofline_matmul(seq_len, seq_len, d, batch=b * model.n_heads, name="attn_scores", **kw)
        values = roofline_matmul(seq_len, d, seq_len, batch=b * model.n_heads, name="attn_values", **kw)
    else:
        tokens = b
        context = require_positive_int("context", seq_len if context is None else context)
        g = model.n_heads // model.n_kv_heads  # query heads sharing one cached K/V head
        # the cache holds min(context, sliding_window) on windowed layers (Jiang et al. 2023 sec. 2), the whole
        # context on full-attention layers: their mean (ModelSpec.mean_kv_tokens)
        keys = max(1, round(model.mean_kv_tokens(context)))
        scores = roofline_matmul(g, keys, d, batch=b * model.n_kv_heads, name="attn_scores", **kw)
        values = roofline_matmul(g, d, keys, batch=b * model.n_kv_heads, name="attn_values", **kw)
    ops = (
        roofline_matmul(tokens, model.q_dim + 2 * model.kv_dim, h, name="qkv", **kw),
        scores,
        values,
        roofline_matmul(tokens, h, model.q_dim, name="attn_out", **kw),
        roofline_matmul(tokens, up, h, name="mlp_up", **kw),
        roofline_matmul(tokens, h, f, name="mlp_down", **kw),
    )
    check_finite(
        "the layer's FLOPs, bytes or time",
        math.fsum(o.flops for o in ops),
        math.fsum(o.bytes for o in ops),
        math.fsum(o.time_s for o in ops),
    )
    return LayerRoofline(mode=mode, seq_len=seq_len, micro_batch=b, context=context, ops=ops)
