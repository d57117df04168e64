"""Prefill and KV-cache decode of the reference GPT, measured, against the roofline of this machine.

The reference model (gpukit.bench.models.ReferenceGPT) computes a training loss; serving needs a KV
cache. `KVDecoder` runs the same weights (read from the model's modules, the model code untouched)
as an inference engine does: prefill writes every layer's keys and values into a preallocated cache
(batch, heads, max_len, head_dim) and returns the last position's logits; each decode step embeds
one token per sequence, appends its K/V and attends over the cache with
torch.nn.functional.scaled_dot_product_attention. `check_decoder` proves it computes what the model
computes (same loss on a sequence; decode logits = prefill logits of the longer sequence).

Prediction (gpukit.inference.decode_step / prefill_step with shares 1.0): the roofline with this
machine's MEASURED rates instead of a spec sheet, probed right before each timed step (the machine is
shared: rates and step see the same neighbours; `_Probes`):
- memory bandwidth: a STREAM triad (the convention of gpukit.bench.membw) over a working set the size
  of the model's weights (so caches do not flatter it);
- achievable matmul rate: F.linear at the step's row count (decode: the batch; prefill: batch x
  prompt) over synthetic weights with a transformer layer's four shapes at width 2048, as many as the
  model's weight bytes, so they stream from where the model's weights stream from. This is the
  issue's "achievable share of peak, calibrated": at small row counts it is the matrix-vector
  kernel's real streaming rate (on this CPU ~10 GB/s of bf16 weights, below the 15 GB/s triad,
  because the core's bf16 GEMV cannot keep up even from cache); decode attention's products are
  matrix-vector products per sequence, so they get the one-row rate;
- a measured framework dispatch time per op (a tiny torch op) x the ops of a step: on a CPU there is
  no CUDA graph to hide it.
Beside it each row has two bounds from the in-core rate (the same product on one cache-resident
weight: what the core computes when memory is not in the way):
- ideal_s, the roofline max(memory, in-core compute): perfect overlap, the GPU picture, a lower bound.
  Its `bound` column says which side of the ridge a step is on: decode turns from bandwidth- to
  compute-bound where batch x 2 FLOP/weight / rate = bytes/weight / bw;
- no_overlap_s, memory time + in-core compute time: the Execution-Cache-Memory model's assumption for
  Intel cores, whose data transfers do not overlap with in-core execution (Hager, Treibig, Habich &
  Wellein 2013, "Exploring performance and power properties of modern multicore chips via simple
  machine models"; Stengel et al. 2015).
What none of them counts: the element-wise ops (layer norms, GELU, residual adds), which on this CPU
are about a tenth of a step at batch 256 (torch.profiler); the prediction is expected somewhat below the measurement.

CPU figures are CPU figures. On CUDA the same code runs on the GPU (bf16) when one is present.
Used in: notebooks/07_inference, tests/test_decode.py, gpukit.cli.benchreport (make bench).
"""

from __future__ import annotations

import time

import torch
import torch.nn.functional as F

from gpukit.bench.timing import resolve_device, synchronize, torch_threads
from gpukit.errors import require_positive_int
from gpukit.memory import reference_spec
from gpukit.specs import ModelSpec

CALIBRATION_K = (
    2048  # the (k x n) bf16 weight of the matmul-rate calibration: 8 MiB, beyond the per-core L2, so
)
# it is fed like a real layer; the rate at m rows is the compute roof for m-row products (independent of the model)
LAYER_SHAPES = tuple(
    (o * CALIBRATION_K, i * CALIBRATION_K) for o, i in ((3, 1), (1, 1), (4, 1), (1, 4))
)  # (out, in)
OPS_PER_LAYER = 15  # torch calls per layer in KVDecoder._layer (counted in the code below)
OPS_PER_STEP = 6  # embedding lookups, add, final norm, LM head, slicing


def decode_specs(quick: bool = False) -> tuple[ModelSpec, ...]:
    """The reference shapes measured here: wide enough that weights, not Python, set the decode time
    (hidden 2048: ~100 MB of bf16 weights per layer), small vocabulary (the LM head stays small)."""
    if quick:
        return (reference_spec(n_layers=2, hidden=1536, n_heads=12, vocab=2048, seq=512),)
    return (
        reference_spec(n_layers=2, hidden=2048, n_heads=16, vocab=2048, seq=1024),
        reference_spec(n_layers=4, hidden=1536, n_heads=12, vocab=4096, seq=1024),
    )


def _torch_dtype(dtype: str):
    return {"bf16": torch.bfloat16, "fp32": torch.float32, "fp16": torch.float16}[dtype]


class KVDecoder:
    """KV-cache inference over a ReferenceGPT's weights (module docstring)."""

    def __init__(self, model, dtype: str = "bf16"):
        spec = model.spec
        for field_, want in (("mlp", "gelu"), ("norm", "layernorm"), ("position", "learned")):
            if getattr(spec, field_) != want:
                raise ValueError(f"{field_} must be {want} for KVDecoder, got {getattr(spec, field_)}")
        self.spec, self.dtype = spec, _torch_dtype(dtype)
        self.model = model.to(self.dtype).eval()
        self.layers = []
        for blk in model.blocks:
            try:
                self.layers.append((blk.ln1, blk.attn.qkv, blk.attn.proj, blk.ln2, blk.mlp.fc1, blk.mlp.fc2))
            except AttributeError as e:
                raise ValueError(f"the reference model's layout changed ({e}); update KVDecoder") from None
        self.k = self.v = None
        self.pos = 0

    def _alloc(self, batch: int, max_len: int, device) -> None:
        s = self.spec
        shape = (s.n_layers, batch, s.n_heads, max_len, s.head_dim)
        self.k = torch.zeros(shape, dtype=self.dtype, device=device)
        self.v = torch.zeros(shape, dtype=self.dtype, device=device)

    def _layer(self, i: int, x: torch.Tensor, start: int, causal: bool) -> torch.Tensor:
        ln1, qkv, proj, ln2, fc1, fc2 = self.layers[i]
        b, t, _ = x.shape
        a, d = self.spec.n_heads, self.spec.head_dim
        q, k, v = qkv(ln1(x)).view(b, t, 3, a, d).permute(2, 0, 3, 1, 4).unbind(0)  # 4 ops
        self.k[i, :, :, start : start + t] = k  # 2 ops: write this step's keys and values
        self.v[i, :, :, start : start + t] = v
        kk, vv = self.k[i, :, :, : start + t], self.v[i, :, :, : start + t]
        y = F.scaled_dot_product_attention(q, kk, vv, is_causal=causal and t > 1)
        x = x + proj(y.transpose(1, 2).reshape(b, t, a * d))  # 4 ops
        return x + fc2(F.gelu(fc1(ln2(x))))  # 5 ops

    def _forward(self, idx: torch.Tensor, start: int) -> torch.Tensor:
        m = self.model
        pos = torch.arange(start, start + idx.shape[1], device=idx.device)
        x = m.wte(idx) + m.wpe(pos)
        for i in range(self.spec.n_layers):
            x = self._layer(i, x, start, causal=True)
        return x

    @torch.inference_mode()
    def prefill(self, idx: torch.Tensor, max_len: int) -> torch.Tensor:
        """Fill the cache with the prompts idx (batch, s); logits of the last position (batch, vocab)."""
        b, s = idx.shape
        if max_len > self.spec.max_seq or s > max_len:
            raise ValueError(f"prompt + output must be <= max_seq {self.spec.max_seq}, got {max_len}")
        self._alloc(b, max_len, idx.device)
        x = self._forward(idx, 0)
        self.pos = s
        return self.model.lm_head(self.model.ln_f(x[:, -1]))

    @torch.inference_mode()
    def step(self, tok: torch.Tensor) -> torch.Tensor:
        """One decode step: tok (batch,) -> logits (batch, vocab); the cache grows by one."""
        if self.pos >= self.k.shape[3]:
            raise ValueError(
                f"the cache holds {self.k.shape[3]} tokens; allocate more with prefill(max_len=...)"
            )
        x = self._forward(tok[:, None], self.pos)
        self.pos += 1
        return self.model.lm_head(self.model.ln_f(x[:, -1]))

    @torch.inference_mode()
    def all_logits(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits at every position (for the check against the model's loss)."""
        self._alloc(idx.shape[0], idx.shape[1], idx.device)
        return self.model.lm_head(self.model.ln_f(self._forward(idx, 0)))


def build_decoder(spec: ModelSpec, dtype: str = "bf16", device: str = "cpu", seed: int = 0) -> KVDecoder:
    from gpukit.bench.models import build_reference_model

    return KVDecoder(build_reference_model(spec, device=device, seed=seed), dtype)


def check_decoder(spec: ModelSpec | None = None, seq: int = 16, batch: int = 2, dtype: str = "fp32") -> dict:
    """The decoder computes the reference model's function: loss from all_logits == model(idx, targets),
    and prefill(s) + one decode step == prefill(s+1)'s last logits. Returns the max differences."""
    from gpukit.bench.models import make_batch

    spec = spec or reference_spec(n_layers=2, hidden=64, n_heads=4, vocab=97, seq=64)
    dec = build_decoder(spec, dtype)
    idx, targets = make_batch(spec, batch, seq)
    with torch.inference_mode():
        ref_loss = float(dec.model(idx, targets))
        logits = dec.all_logits(idx)
        loss = float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), targets.reshape(-1)))
        a = dec.prefill(idx[:, :-1], max_len=seq)
        stepped = dec.step(idx[:, -1])
        full = dec.prefill(idx, max_len=seq)
    return {
        "loss_abs_diff": abs(loss - ref_loss),
        "step_vs_prefill_max_abs": float((stepped - full).abs().max()),
        "prefill_vs_all_logits_max_abs": float((a - logits[:, -2]).abs().max()),
    }


# ------------------------------------------------------------------------------------ measuring
class _Probes:
    """This machine's rates, measured in the same moment as each step (interleaved):
    - a STREAM triad (a = b + s*c, 3 arrays counted, the convention of gpukit.bench.membw) over a
      working set the size of the weights: the memory roof;
    - the achievable matmul rate at m rows: F.linear of an (m x k) input by a set of distinct weights
      with the four shapes of a transformer layer at width K = CALIBRATION_K (qkv 3K x K, proj K x K,
      fc1 4K x K, fc2 K x 4K: the rate of a matrix-vector product depends on its shape, the down
      projection's long rows run ~25% slower here), repeated until the set is at least the model's
      weight bytes, one pass over the set, so every weight comes from where the model's weights come
      from. This is the calibrated rate the roofline prediction uses: the kernel's own mix of
      streaming and arithmetic, measured at a width that is not the model's;
    - the in-core matmul rate at m rows on one cache-resident K x K weight (repeated, so it stays in
      cache): what the core computes when memory is not in the way (the ideal roofline and the
      no-overlap bound use it);
    - the dispatch time of one tiny op."""

    def __init__(self, device: str, weights_bytes: float, dtype=torch.bfloat16):
        self.device, self.dtype = device, dtype
        n = max(1 << 20, int(weights_bytes / 3 / 4))  # fp32 elements per array
        g = torch.Generator(device=device).manual_seed(0)
        self.a = torch.zeros(n, device=device)
        self.b = torch.rand(n, generator=g, device=device)
        self.c = torch.rand(n, generator=g, device=device)
        k = CALIBRATION_K
        per_layer = 12 * k * k * torch.empty((), dtype=dtype).element_size()
        self.streamed = [
            torch.randn(o, i, generator=g, device=device).to(dtype)
            for _ in range(max(1, -(-int(weights_bytes) // per_layer)))
            for o, i in LAYER_SHAPES
        ]
        self.streamed_params = sum(w.numel() for w in self.streamed)
        self.w = torch.randn(k, k, generator=g, device=device).to(dtype)
        self.x = {}
        self.tiny = torch.ones(4, device=device)
        self.working_set_bytes = 3 * n * 4

    def _time(self, fn) -> float:
        fn()
        synchronize(self.device)
        t0 = time.perf_counter()
        fn()
        synchronize(self.device)
        return time.perf_counter() - t0

    def triad_gbps(self) -> float:
        t = self._time(lambda: torch.add(self.b, self.c, alpha=3.0, out=self.a))
        return self.working_set_bytes / t / 1e9

    def _input(self, m: int):
        m = max(1, min(int(m), 4096))
        if (m, CALIBRATION_K) not in self.x:
            self.x[m, CALIBRATION_K] = torch.randn(m, CALIBRATION_K, device=self.device).to(self.dtype)
        return self.x[m, CALIBRATION_K]

    def matmul_tflops(self, m: int) -> float:
        """In-core rate: the cache-resident weight, best of 2 (the layout nn.Linear uses)."""
        x = self._input(m)
        t = min(self._time(lambda: F.linear(x, self.w)) for _ in range(2))
        return 2.0 * x.shape[0] * CALIBRATION_K * CALIBRATION_K / t / 1e12

    def streamed_tflops(self, m: int) -> float:
        """Achievable rate: one pass of F.linear over the streamed weight set."""
        m = max(1, min(int(m), 4096))
        for k in {i for _, i in LAYER_SHAPES}:
            if (m, k) not in self.x:
                self.x[m, k] = torch.randn(m, k, device=self.device).to(self.dtype)
        t = self._time(lambda: [F.linear(self.x[m, w.shape[1]], w) for w in self.streamed])
        return 2.0 * m * self.streamed_params / t / 1e12

    def dispatch_s(self) -> float:
        n = 200
        return (
            min(self._time(lambda: [torch.add(self.tiny, self.tiny) for _ in range(n)]) for _ in range(3)) / n
        )

    def rates(self, rows: int, attn_rows: int = 1) -> dict:
        """The rates of a step multiplying `rows` rows; `attn_rows`: the query rows per KV head of
        decode attention (its matrix-vector products)."""
        r = {
            "triad_gbps": self.triad_gbps(),
            "streamed_tflops": self.streamed_tflops(rows),
            "matmul_tflops": self.matmul_tflops(rows),
            "dispatch_s_per_op": self.dispatch_s(),
        }
        same = attn_rows == rows
        r["streamed_row_tflops"] = r["streamed_tflops"] if same else self.streamed_tflops(attn_rows)
        r["matmul_row_tflops"] = r["matmul_tflops"] if same else self.matmul_tflops(attn_rows)
        return r


def predict(spec: ModelSpec, rates: dict, *, mode: str, batch: int, tokens: int) -> dict:
    """One step from measured rates, three ways (gpukit.inference with shares 1.0):
    - predicted_s: the roofline with the achievable matmul rate (streamed weights) and the triad;
    - ideal_s: the roofline with the in-core (cache-resident) rate: perfect overlap of memory traffic
      and compute, the GPU picture, a lower bound;
    - no_overlap_s: memory time + in-core compute time + overhead (the ECM assumption for Intel cores)."""
    from gpukit.inference import Assumptions, decode_step, prefill_step

    ops = spec.n_layers * OPS_PER_LAYER + OPS_PER_STEP
    a = Assumptions(hbm_share=1.0, flops_share=1.0, step_overhead_s=ops * rates["dispatch_s_per_op"])

    def step(tflops, attn_tflops):
        kw = dict(
            peak_tflops=tflops,
            bandwidth_gbps=rates["triad_gbps"],
            assumptions=a,
            kv_dtype="bf16",
            precision="bf16",
        )
        return (
            decode_step(spec, None, batch=batch, context=tokens, attn_tflops=attn_tflops, **kw)
            if mode == "decode"
            else prefill_step(spec, None, prompt_tokens=tokens, batch=batch, **kw)
        )

    st = step(rates["streamed_tflops"], rates["streamed_row_tflops"])
    ideal = step(rates["matmul_tflops"], rates["matmul_row_tflops"])
    bw, fl = rates["triad_gbps"] * 1e9, rates["matmul_tflops"] * 1e12
    serial = (
        (ideal.dense_bytes + ideal.attn_bytes) / bw
        + (ideal.dense_flops + ideal.attn_flops) / fl
        + ideal.overhead_s
    )
    return {
        "predicted_s": st.time_s,
        "ideal_s": ideal.time_s,
        "no_overlap_s": serial,
        "ideal_bound": ideal.bound,
    }


def measure_decode(
    spec: ModelSpec | None = None,
    *,
    device: str = "cpu",
    batches=(1, 4, 16, 64, 256),
    prompt: int = 256,
    decode_prompt: int = 32,
    new_tokens: int = 4,
    prefill_batch: int = 1,
    repeats: int = 5,
    threads: int | None = 1,
    timeout_s: float = 300,
) -> dict:
    """Measured prefill and decode (tokens/s) of the reference model at each batch, beside the
    roofline prediction from this machine's rates measured in the same moment (_Probes). One thread by
    default: on a shared machine a preempted OpenMP thread stalls every op at its barrier.

    Per repeat: probe the rates, time the step, predict from those rates; a row reports the median
    over repeats of measured and predicted times and of their ratio (error = predicted/measured - 1),
    and the two in-core bounds (ideal_s, the perfect-overlap roofline; no_overlap_s, memory + compute)
    with their errors.
    Decode starts from a short prompt (`decode_prompt`) so the weights, not the KV cache, dominate:
    this CPU's attention kernel is not what is being checked."""
    from gpukit.bench.envinfo import env_stamp
    from gpukit.inference import weight_bytes_read_per_step

    device = resolve_device(device)
    spec = spec or decode_specs()[0]
    prompt = require_positive_int("prompt", prompt)
    new_tokens = require_positive_int("new_tokens", new_tokens)
    repeats = require_positive_int("repeats", repeats)
    batches = [require_positive_int("batch", b) for b in batches]
    decode_prompt = require_positive_int("decode_prompt", decode_prompt)
    max_len = max(prompt, decode_prompt) + new_tokens * (repeats + 1)
    if max_len > spec.max_seq:
        raise ValueError(
            f"prompt + new_tokens x (repeats + 1) must be <= max_seq {spec.max_seq}, got {max_len}"
        )
    t_end = time.monotonic() + timeout_s
    rows = []
    with torch_threads(threads) as n_threads:
        dec = build_decoder(spec, "bf16", device)
        w_bytes = weight_bytes_read_per_step(spec, "bf16")
        probes = _Probes(device, w_bytes)
        g = torch.Generator().manual_seed(0)
        jobs = [("prefill", prefill_batch)] + [("decode", b) for b in batches]
        for mode, b in jobs:
            if time.monotonic() > t_end:
                break
            idx = torch.randint(
                0, spec.vocab, (b, prompt if mode == "prefill" else decode_prompt), generator=g
            ).to(device)
            samples = []
            if mode == "decode":
                dec.prefill(idx, max_len=max_len)
                tok = idx[:, -1]
            for _ in range(repeats + 1):
                r = probes.rates(b if mode == "decode" else b * prompt, spec.n_heads // spec.n_kv_heads)
                if mode == "prefill":
                    t = probes._time(lambda idx=idx: dec.prefill(idx, max_len=prompt + 1))
                    pr = predict(spec, r, mode="prefill", batch=b, tokens=prompt)
                else:
                    ctx = dec.pos
                    t0 = time.perf_counter()
                    for _ in range(new_tokens):
                        dec.step(tok)
                    synchronize(device)
                    t = (time.perf_counter() - t0) / new_tokens
                    pr = predict(spec, r, mode="decode", batch=b, tokens=ctx + new_tokens // 2)
                samples.append((t, pr, r))
            samples = samples[1:]  # the first round warms caches and allocators
            rows.append(
                _row(
                    mode,
                    b,
                    prompt if mode == "prefill" else ctx,
                    samples,
                    b * prompt if mode == "prefill" else b,
                )
            )
        env = env_stamp(device, threads=n_threads)
    return {
        "model": spec.name,
        "n_params": spec.n_params,
        "weight_bytes": w_bytes,
        "device": device,
        "label": "GPU" if device == "cuda" else "CPU",
        "rows": rows,
        "env": env,
        "repeats": repeats,
    }


def _med(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def _row(mode, batch, tokens, samples, tokens_per_step) -> dict:
    meas = _med([t for t, _, _ in samples])
    pred = _med([p["predicted_s"] for _, p, _ in samples])
    serial = _med([p["no_overlap_s"] for _, p, _ in samples])
    err = _med([p["predicted_s"] / t - 1.0 for t, p, _ in samples])
    ideal = _med([p["ideal_s"] for _, p, _ in samples])
    err_ideal = _med([p["ideal_s"] / t - 1.0 for t, p, _ in samples])
    err_serial = _med([p["no_overlap_s"] / t - 1.0 for t, p, _ in samples])
    ts = sorted(t for t, _, _ in samples)
    inner = ts[1:-1] if len(ts) >= 5 else ts  # one preempted repeat should not mark the whole row busy
    spread = (inner[-1] - inner[0]) / meas
    return {
        "mode": mode,
        "batch": batch,
        "tokens": tokens,
        "measured_s": meas,
        "predicted_s": pred,
        "ideal_s": ideal,
        "no_overlap_s": serial,
        "error": err,
        "error_ideal": err_ideal,
        "error_no_overlap": err_serial,
        "spread": spread,
        "measured_tokens_per_s": tokens_per_step / meas,
        "predicted_tokens_per_s": tokens_per_step / pred,
        "bound": samples[-1][1]["ideal_bound"],
        "triad_gbps": _med([r["triad_gbps"] for _, _, r in samples]),
        "streamed_tflops": _med([r["streamed_tflops"] for _, _, r in samples]),
        "matmul_tflops": _med([r["matmul_tflops"] for _, _, r in samples]),
    }


def frame(result: dict):
    import pandas as pd

    return pd.DataFrame(result["rows"])


def gpu_decode(quick: bool = True, timeout_s: float = 300) -> dict | str:
    """The same measurement on CUDA when a GPU is present (a 1.6B-parameter reference shape, bf16),
    else the line saying it has not run. scripts/gpu_check.sh runs it (gpukit.bench.suite)."""
    if not torch.cuda.is_available():
        return "not yet run on a GPU (no CUDA device here)"
    spec = reference_spec(n_layers=8, hidden=4096, n_heads=32, vocab=32000, seq=2048)
    return measure_decode(
        spec,
        device="cuda",
        batches=(1, 8, 32, 128, 512) if not quick else (1, 16, 256),
        prompt=512,
        new_tokens=16,
        timeout_s=timeout_s,
    )
