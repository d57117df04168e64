"""Today's models view: a model (catalog name or a local config.json), a GPU, the training precision, the
sequence length and a GPU count -> memory per GPU of the fastest layout that fits (data x tensor x pipeline x
expert x context parallel, gpukit.parallel.search), its step time, tokens/s, the hours and cost of a token
budget, and what serving needs (gpukit.inference.min_gpus_to_fit).

A thin view over pure functions: `moe_compute(...)` returns a frozen `MoeAnswer`; `moe_view()` wires controls
to it and draws the layout's memory and step breakdown. Bad input (an unknown model, a config.json that does
not load, fp8 on a GPU without fp8, a GPU count that is not whole nodes) shows its one-line ValueError in place
of the plot.

Used in: notebooks/10_moe_and_long_context (section 7).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpukit import catalog
from gpukit import inference as inf
from gpukit import parallel as par
from gpukit.errors import require_positive, require_positive_int
from gpukit.prices import quote
from gpukit.specs import ModelSpec
from gpukit.units import GiB
from gpukit.widgets.base import View, dropdown, number

TRAIN_PRECISIONS = ("bf16-mixed", "fp8")
# serving precision beside a training precision (fp8 training -> fp8 serving weights)
SERVE_PRECISION = {"bf16-mixed": "bf16", "fp8": "fp8"}


@dataclass(frozen=True)
class MoeAnswer:
    """What the view shows: the model's counts, the fastest layout found (None when nothing fits), its
    hours and cost for `tokens`, and the smallest serving set (GPUs, tensor-parallel degree)."""

    model_name: str
    n_params: float
    active_params: float
    gpu: str
    gpus: int
    precision: str
    seq_len: int
    tokens: float
    search: par.SearchResult
    hours: float | None
    cost_usd: float | None
    usd_per_gpu_hour: float | None
    serve_gpus: int
    serve_tp: int
    serve_pp: int
    serve_precision: str

    @property
    def best(self) -> par.Estimate | None:
        return self.search.ranked[0].estimate if self.search.ranked else None

    def summary(self) -> str:
        head = (
            f"{self.model_name}: {self.n_params / 1e9:,.1f}B parameters, {self.active_params / 1e9:,.1f}B active "
            f"per token; {self.gpus} x {self.gpu}, {self.precision}, seq_len {self.seq_len:,}"
        )
        if self.best is None:
            train = f"training: no layout fits ({self.search.enumerated} tried)"
        else:
            e = self.best
            price = (
                f", ${self.cost_usd:,.0f} at ${self.usd_per_gpu_hour:.2f}/GPU-hour (median catalog price)"
                if self.cost_usd is not None
                else f" (no price for {self.gpu} in gpukit/data/prices.csv)"
            )
            train = (
                f"training: {e.config.label()}: {e.memory_per_gpu_bytes / GiB:,.1f} GiB/GPU, "
                f"{e.tokens_per_s:,.0f} tokens/s, MFU {e.mfu:.1%} (active-parameter FLOPs); "
                f"{self.tokens / 1e9:,.0f}B tokens in {self.hours:,.1f} h" + price
            )
        serve = (
            f"serving ({self.serve_precision} weights): {self.serve_gpus} x {self.gpu} (TP {self.serve_tp}"
            + (f" x PP {self.serve_pp}" if self.serve_pp > 1 else "")
            + ")"
            if self.serve_gpus
            else f"serving ({self.serve_precision} weights): does not fit within the search's GPU counts"
        )
        return "\n".join((head, train, serve))


def _model(model: str, hf_config: str) -> ModelSpec:
    if hf_config:
        from gpukit.hf_config import load_hf_config

        return load_hf_config(hf_config)
    return catalog.get_model(model)


def moe_compute(
    model: str = "mixtral-8x7b",
    gpu: str = "h100-sxm",
    precision: str = "bf16-mixed",
    seq_len: int = 4096,
    gpus: int = 16,
    tokens_b: float = 100.0,
    hf_config: str = "",
) -> MoeAnswer:
    """The fastest layout (gpukit.parallel.search, EP and CP included) of `model` (or the config.json at
    `hf_config`) on `gpus` x `gpu` at `precision`, priced for `tokens_b` billion tokens at the catalog's
    median price, and the smallest serving set at the matching weight precision."""
    if precision not in TRAIN_PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(TRAIN_PRECISIONS)}, got {precision!r}")
    spec = _model(model, hf_config)
    g = catalog.get_gpu(gpu)
    seq_len = require_positive_int("seq_len", seq_len)
    if seq_len > spec.max_seq:
        raise ValueError(f"seq_len must be <= max_seq {spec.max_seq} of {spec.name}, got {seq_len}")
    gpus = require_positive_int("gpus", gpus, at_most=par.MAX_SEARCH_GPUS)
    tokens = require_positive("tokens_b", tokens_b) * 1e9
    if precision == "fp8" and not g.has("fp8"):
        raise ValueError(
            f"precision fp8 needs a GPU with fp8 tensor cores: {g.name} has none; use bf16-mixed"
        )
    res = par.search(spec, g, gpus, seq_len=seq_len, top_k=5, precision=precision)
    try:
        usd: float | None = quote(g.name, policy="median").usd_per_gpu_hour
    except ValueError:  # a GPU without a price row: hours only
        usd = None
    hours = cost = None
    if res.ranked:
        hours = tokens / res.ranked[0].estimate.tokens_per_s / 3600.0
        cost = None if usd is None else hours * gpus * usd
    sp = SERVE_PRECISION[precision]
    try:
        tp_serve, pp_serve = inf.min_gpus_to_fit(spec, g, precision=sp, context=min(seq_len, spec.max_seq))
    except ValueError:  # nothing within the search's counts holds it
        tp_serve, pp_serve = 0, 0
    return MoeAnswer(
        model_name=spec.name,
        n_params=float(spec.n_params),
        active_params=float(spec.active_params),
        gpu=g.name,
        gpus=gpus,
        precision=precision,
        seq_len=seq_len,
        tokens=tokens,
        search=res,
        hours=hours,
        cost_usd=cost,
        usd_per_gpu_hour=usd,
        serve_gpus=tp_serve * pp_serve,
        serve_tp=tp_serve,
        serve_pp=pp_serve,
        serve_precision=sp,
    )


def render_moe(ans: MoeAnswer):
    """Two panels: the best layout's memory per GPU against the GPU, and its step time by term."""
    import matplotlib.pyplot as plt

    print(ans.summary())
    e = ans.best
    if e is None:
        return None
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 3.2))
    parts = [(k, v / GiB) for k, v in e.memory.items() if v > 0] if hasattr(e.memory, "items") else []
    left = 0.0
    for k, v in parts:
        a1.barh([0], [v], left=left, label=k)
        left += v
    a1.axvline(e.gpu_memory_bytes / GiB, color="black", ls="--", lw=1)
    a1.text(e.gpu_memory_bytes / GiB, 0.45, f" {ans.gpu}", fontsize=8)
    a1.set_yticks([])
    a1.set_xlabel("GiB per GPU")
    a1.set_title(f"memory: {e.config.label()}", fontsize=9)
    if parts:
        a1.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.3))
    terms = [(k, v * 1e3) for k, v in e.breakdown if v > 0]
    a2.barh([k for k, _ in terms], [v for _, v in terms], color="tab:blue")
    a2.invert_yaxis()
    a2.set_xlabel("ms per step (before overlap)")
    a2.set_title(f"step {e.step_time_s * 1e3:,.0f} ms, {e.tokens_per_s:,.0f} tokens/s", fontsize=9)
    fig.tight_layout()
    return fig


def moe_view(**defaults) -> View:
    d = dict(
        model="mixtral-8x7b", gpu="h100-sxm", precision="bf16-mixed", seq_len=4096, gpus=16, tokens_b=100.0
    )
    d |= defaults
    import ipywidgets as w

    return View(
        moe_compute,
        {
            "model": dropdown("model", sorted(catalog.models()), d["model"]),
            "gpu": dropdown("GPU", sorted(catalog.gpus()), d["gpu"]),
            "precision": dropdown("precision", list(TRAIN_PRECISIONS), d["precision"]),
            "seq_len": number("seq_len", d["seq_len"], integer=True),
            "gpus": number("GPUs", d["gpus"], integer=True),
            "tokens_b": number("tokens (B)", d["tokens_b"]),
            "hf_config": w.Text(value="", description="config.json", placeholder="path (replaces model)"),
        },
        render=render_moe,
        title="Today's models: layout, memory, time, cost",
    )
