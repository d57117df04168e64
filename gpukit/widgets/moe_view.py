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


def model_options() -> list[str]:
    """The widget's models: the catalog's mixtures of experts first, then its other decoders (an encoder's
    512-token window has no place in a long-context view), each group by name."""
    ms = catalog.models()
    moe = sorted(n for n, m in ms.items() if m.is_moe)
    return moe + sorted(n for n, m in ms.items() if not m.is_moe and m.arch != "encoder")


def moe_view(**defaults) -> View:
    d = dict(
        model="mixtral-8x7b", gpu="h100-sxm", precision="bf16-mixed", seq_len=4096, gpus=16, tokens_b=100.0
    )
    d |= defaults
    import ipywidgets as w

    return View(
        moe_compute,
        {
            "model": dropdown("model", model_options(), d["model"]),
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


# ---------------------------------------------------------------------------- notebook 10's tables and plots
# Each is a thin call of the calculators it names (no formula here); notebooks/10 shows them.


def moe_table():
    """The catalog's mixtures of experts: computed total and active parameters beside the published figures
    (gpukit.catalog.published_counts: the active figure in its own embedding convention)."""
    import pandas as pd

    rows = []
    for name, m in catalog.models().items():
        if not m.is_moe:
            continue
        pub = catalog.published_counts(name)
        shared = f" + {m.n_shared_experts} shared" if m.n_shared_experts else ""
        rows.append(
            {
                "model": name,
                "experts (top-k / routed)": f"{m.experts_per_token}/{m.n_experts}{shared}",
                "total (B)": m.n_params / 1e9,
                "published total (B)": pub.total / 1e9,
                "active (B)": pub.comparable_active(m) / 1e9,
                "published active (B)": (pub.active or float("nan")) / 1e9,
                "active share": m.active_params / m.n_params,
            }
        )
    return pd.DataFrame(rows).sort_values("total (B)").reset_index(drop=True)


def draw_total_active(table, ax=None):
    """Horizontal bars: total parameters (grey) and active ones (blue), log scale."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.6))
    y = range(len(table))
    ax.barh(y, table["total (B)"], color="lightgray", label="total (in memory)")
    ax.barh(y, table["active (B)"], color="tab:blue", label="active (per token)")
    ax.set_yticks(list(y), table["model"])
    ax.set_xscale("log")
    ax.set_xlabel("parameters (billions, log scale)")
    ax.legend()
    ax.set_title("Mixture of experts: what memory holds vs what a token computes")
    return ax


def serving_fit_table(cases, context: int = 4096):
    """gpukit.inference.serving_memory for (model, gpu, precision, tp) cases: weights and usable memory per
    GPU, KV bytes per token, fits, and the largest batch at `context`."""
    import pandas as pd

    rows = []
    for name, gpu, prec, tp in cases:
        sm = inf.serving_memory(catalog.get_model(name), gpu, precision=prec, tp=tp, context=context)
        rows.append(
            {
                "model": name,
                "GPUs": f"{tp} x {gpu}",
                "weights": prec,
                "weights GiB/GPU": sm.weights_bytes / GiB,
                "usable GiB/GPU": sm.usable_bytes / GiB,
                "KV KiB/token": sm.kv_bytes_per_token / 1024,
                "fits": "yes" if sm.fits else "NO",
                f"max batch at {context}": sm.max_batch,
            }
        )
    return pd.DataFrame(rows)


def draw_serving_fit(table, ax=None):
    """Weights per GPU (green: fits, red: does not) against the memory an engine may use (black tick)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(9, 3.4))
    n = len(table)
    colors = ["tab:green" if f == "yes" else "tab:red" for f in table["fits"]]
    ax.barh(range(n), table["weights GiB/GPU"], color=colors)
    ax.scatter(
        table["usable GiB/GPU"], range(n), marker="|", s=400, color="black", label="usable memory per GPU"
    )
    labels = [f"{r.model}\n{r.GPUs} {r.weights}" for r in table.itertuples()]
    ax.set_yticks(range(n), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GiB per GPU (weights)")
    ax.legend(fontsize=8)
    ax.set_title("Serving: weights per GPU against what the engine can use")
    return ax


def training_memory_table(model, setups: dict, gpus):
    """gpukit.memory.estimate_memory of `model` for each named TrainSetup (`setups`: label -> TrainSetup) on
    each GPU: GiB per GPU, its main parts and whether it fits."""
    import pandas as pd

    from gpukit.memory import estimate_memory

    rows = []
    for label, setup in setups.items():
        for gpu in gpus:
            b = estimate_memory(
                catalog.get_model(model) if isinstance(model, str) else model, setup=setup, gpu=gpu
            )
            rows.append(
                {
                    "setup": label,
                    "GPU": gpu,
                    "GiB/GPU": b.total_bytes / GiB,
                    "params GiB": b.params_bytes / GiB,
                    "grads GiB": b.grads_bytes / GiB,
                    "optimizer GiB": b.optimizer_bytes / GiB,
                    "activations GiB": b.activations_bytes / GiB,
                    "fits": b.fits,
                }
            )
    return pd.DataFrame(rows)


def draw_memory_lines(table, x: str, series: str, title: str, ax=None):
    """GiB per GPU against `x` (a column of the setups' labels), one line per `series` value, each GPU's
    memory dotted."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.2))
    for key, grp in table.groupby(series):
        (line,) = ax.plot(grp[x], grp["GiB/GPU"], marker="o", label=f"{series} {key}")
        if series == "GPU":
            ax.axhline(catalog.get_gpu(key).memory_bytes / GiB, ls=":", lw=0.8, color=line.get_color())
    ax.set_xscale("log", base=2)
    ax.set_xlabel(x)
    ax.set_ylabel("GiB per GPU")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax


def ep_time_table(model, gpu: str = "h100-sxm", eps=(2, 4, 8, 16, 32), seq_len: int = 4096):
    """gpukit.parallel.estimate of `model` with dp = max(ep, 8) data-parallel ranks and expert parallelism ep
    (ZeRO-1, full recompute, 4 sequences per rank): compute and EP all-to-all per micro-batch, tokens/s."""
    import pandas as pd

    spec = catalog.get_model(model) if isinstance(model, str) else model
    cl = par.make_cluster(gpu, 8)
    rows = []
    for ep in eps:
        dp = max(ep, 8)
        cfg = par.ParallelConfig(dp=dp, ep=ep, zero_stage=1, recompute="full")
        e = par.estimate(spec, cfg, cl, global_batch=dp * 4, seq_len=seq_len)
        d = dict(e.breakdown)
        rows.append(
            {
                "ep": ep,
                "GPUs": dp,
                "across nodes": ep > cl.gpus_per_node,
                "compute ms": d["compute"] * 1e3,
                "EP all-to-all ms": d["ep_comm"] * 1e3,
                "tokens/s per GPU": e.tokens_per_s / dp,
            }
        )
    return pd.DataFrame(rows)


def draw_ep(mem_table, time_table, gpu: str = "h100-sxm"):
    """Left: memory per GPU against ep; right: the all-to-all and compute per micro-batch against ep."""
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.2))
    a1.bar(mem_table["ep"].astype(str), mem_table["GiB/GPU"], color="tab:blue")
    a1.axhline(catalog.get_gpu(gpu).memory_bytes / GiB, ls="--", color="black", lw=1)
    a1.set_xlabel(f"ep (dashed: {gpu} memory)")
    a1.set_ylabel("GiB per GPU")
    a1.set_title("memory falls with ep")
    x = time_table["ep"].astype(str)
    a2.bar(x, time_table["EP all-to-all ms"], color="tab:orange", label="all-to-all")
    a2.bar(
        x,
        time_table["compute ms"],
        bottom=time_table["EP all-to-all ms"],
        color="tab:blue",
        alpha=0.4,
        label="compute",
    )
    a2.set_xlabel("ep (beyond one node it crosses the network)")
    a2.set_ylabel("ms per micro-batch")
    a2.set_title("...and the all-to-all grows across nodes")
    a2.legend(fontsize=8)
    fig.tight_layout()
    return fig


def precision_table(model, config: par.ParallelConfig, gpu: str, *, global_batch: int, seq_len: int):
    """gpukit.parallel.estimate of one layout in bf16-mixed and fp8: step, tokens/s, MFU (bf16 peak), memory."""
    import pandas as pd

    spec = catalog.get_model(model) if isinstance(model, str) else model
    cl = par.make_cluster(gpu, 8)
    rows, notes = [], []
    for prec in TRAIN_PRECISIONS:
        e = par.estimate(spec, config, cl, global_batch=global_batch, seq_len=seq_len, precision=prec)
        notes += [n for n in e.notes if n.startswith("precision fp8")]
        rows.append(
            {
                "precision": prec,
                "step s": e.step_time_s,
                "tokens/s": e.tokens_per_s,
                "MFU (bf16 peak)": e.mfu,
                "GiB/GPU": e.memory_per_gpu_bytes / GiB,
                "fits": e.fits,
            }
        )
    return pd.DataFrame(rows).set_index("precision"), notes


# DeepSeek-V3 (arXiv 2412.19437): 14.8T tokens (sec. 1), 2.664M H800 GPU-hours of pre-training (table 1),
# 2048 H800 with PP 16, EP 64 over 8 nodes, ZeRO-1 data parallelism, FP8 (sec. 3.1-3.3), batch 15,360
# sequences of 4,096 tokens at the end of its schedule (sec. 4.2)
DEEPSEEK_V3_RUN = dict(tokens=14.8e12, gpu_hours=2.664e6, gpus=2048, gpu="h800", dp=128, pp=16, ep=64)


def deepseek_v3_check():
    """The published DeepSeek-V3 rate (tokens/s per GPU) beside gpukit.parallel.estimate of its layout with the
    EP all-to-all exposed (Megatron-Core's default) and fully hidden (DualPipe, sec. 3.2.1); no factor set."""
    import pandas as pd

    r = DEEPSEEK_V3_RUN
    published = r["tokens"] / (r["gpu_hours"] * 3600)
    cfg = par.ParallelConfig(dp=r["dp"], pp=r["pp"], ep=r["ep"], zero_stage=1, recompute="full")
    cl = par.make_cluster(r["gpu"], 8)
    kw = dict(global_batch=15360, seq_len=4096, precision="fp8")
    spec = catalog.get_model("deepseek-v3")
    rows = [{"case": "published (report)", "tokens/s per GPU": published}]
    for label, overlap in (
        ("gpukit, all-to-all exposed", 0.0),
        ("gpukit, all-to-all hidden (DualPipe)", 1.0),
    ):
        e = par.estimate(spec, cfg, cl, ep_overlap=overlap, **kw)
        rows.append({"case": label, "tokens/s per GPU": e.tokens_per_s / r["gpus"]})
    df = pd.DataFrame(rows)
    df["vs published"] = df["tokens/s per GPU"] / published - 1
    return df
