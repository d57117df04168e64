"""`gpukit gpus`, `gpukit models`, `gpukit links`: print the catalogs (data/*.csv) as tables or JSON.

gpus    GPU spec sheets: memory (GiB), HBM GB/s, dense peak TFLOPS per dtype, NVLink GB/s (one way)
models  model shapes with n_params computed by gpukit.specs.ModelSpec next to the published count
links   interconnects: unidirectional GB/s per GPU and one-way latency (us)
Optional NAMEs select rows (unknown name: exit 2 with a "did you mean"). --json prints a list of
dicts with every column, provenance included; --sources adds source and access date to the table.
"""

from __future__ import annotations

from gpukit import catalog
from gpukit.cli import add_json_flag
from gpukit.cli.model_args import add_hf_config_arg
from gpukit.cli.report import Report
from gpukit.units import fmt_count


def catalog_table(rows: list[dict], text_rows: list[dict], title: str = "", footer: str = "") -> Report:
    """Rows for --json (all fields) and the narrower rows printed as a table (drawn when asked for), and
    `footer` lines under the table."""

    def draw() -> str:
        import pandas as pd

        if not text_rows:
            return "(no rows)"
        df = pd.DataFrame(list(text_rows))
        for c in df.columns:  # a column that is None in every row shown is object-typed: na_rep misses it
            if df[c].dtype == object:
                df[c] = df[c].where(df[c].notna(), "-")
        table = df.to_string(index=False, na_rep="-") + (f"\n{footer}" if footer else "")
        return f"{title}\n{table}" if title else table

    return Report([dict(r) for r in rows], draw)


def _select(table: dict, names, lookup) -> list:
    return [lookup(n) for n in names] if names else list(table.values())


def _provenance(row: dict, d: dict, with_sources: bool) -> dict:
    if with_sources:
        d["source"] = row["source"]
        d["accessed"] = row["accessed"]
    return d


def gpu_rows(names=(), with_sources: bool = False) -> Report:
    """GPU rows: JSON rows carry every column (None where a dtype is unsupported)."""
    rows, text = [], []
    for g in _select(catalog.gpus(), names, catalog.get_gpu):
        peaks = dict(g.peaks_tflops)
        full = {
            "name": g.name,
            "vendor": g.vendor,
            "arch": g.arch,
            "form_factor": g.form_factor,
            "memory_gib": g.memory_gib,
            "memory_bytes": g.memory_bytes,
            "hbm_bandwidth_gbps": g.hbm_bandwidth_gbps,
            **{catalog.peak_column(d): peaks.get(d) for d in catalog.PEAK_DTYPES},
            "nvlink_gbps": g.nvlink_gbps,
            "nvlink_domain_gpus": g.nvlink_domain_gpus,
            "pcie_gen": g.pcie_gen,
            "tdp_w": g.tdp_w,
            "source": g.source,
            "source_url": g.source_url,
            "accessed": g.accessed,
            "notes": g.notes,
        }
        rows.append(full)
        short = {
            "name": g.name,
            "arch": g.arch,
            "mem_gib": g.memory_gib,
            "hbm_gbps": g.hbm_bandwidth_gbps,
            **{d: peaks.get(d) for d in catalog.PEAK_DTYPES},
            "nvlink_gbps": g.nvlink_gbps,
            "domain": g.nvlink_domain_gpus,
            "pcie": g.pcie_gen,
            "tdp_w": g.tdp_w,
        }
        text.append(_provenance(full, short, with_sources))
    return catalog_table(
        rows,
        text,
        "GPUs (gpukit/data/gpus.csv): memory GiB, HBM GB/s, dense peak TFLOPS "
        "(int8: TOPS, '-' = unsupported), NVLink GB/s one way, domain = GPUs one NVLink domain joins "
        "('-': not stated), TDP W",
    )


def _hf_row(path: str) -> tuple:
    """(spec, provenance, no published counts) of `gpukit models --hf-config PATH`: the spec a config.json
    gives, with the assumptions gpukit.hf_config made in notes and train_source."""
    from gpukit.hf_config import read_hf_config

    try:
        hf = read_hf_config(path)
    except ValueError as e:
        raise ValueError(f"--hf-config {e}") from None
    train = [n for n in hf.notes if n.startswith("train_seq_len")]
    prov = {
        "source": f"config.json at {hf.path} read as {hf.architecture} (gpukit.hf_config)",
        "source_url": "",
        "accessed": "",
        "notes": "; ".join(n for n in hf.notes if n not in train),
        "train_source": "; ".join(train),
    }
    return hf.spec, prov, None


def model_rows(names=(), with_sources: bool = False, hf_config: str | None = None) -> Report:
    """Model rows with n_params (computed), published_params and their difference in percent; with
    `hf_config`, the one row a local config.json gives (its assumptions in notes, nothing published)."""
    if hf_config is not None and names:
        raise ValueError("give catalog NAMEs or --hf-config PATH, not both")
    raw = {r["name"]: r for r in catalog.read_csv(catalog.data_dir() / "models.csv")}
    if hf_config is not None:
        entries = [_hf_row(hf_config)]
    else:
        entries = [
            (m, raw[m.name], catalog.published_counts(m.name))
            for m in _select(catalog.models(), names, catalog.get_model)
        ]
    rows, text = [], []
    for m, r, counts in entries:
        pub = m.published_params
        diff = 100.0 * (m.n_params - pub) / pub if pub else None
        act_diff = (
            None
            if counts is None or counts.active is None
            else counts.off_pct(counts.comparable_active(m), counts.active)
        )
        full = {
            **m.to_dict(),
            "params_diff_pct": diff,
            "active_params": m.active_params,
            "published_active_params": None if counts is None else counts.active,
            "active_excludes_embedding": counts is not None and counts.active_excludes_embedding,
            "active_diff_pct": act_diff,
            "published_tolerance_pct": None if counts is None else counts.tolerance_pct,
            "source": r["source"],
            "source_url": r["source_url"],
            "accessed": r["accessed"],
            "notes": r.get("notes", ""),
            "train_source": r.get("train_source", ""),
        }
        rows.append(full)
        short = {
            "name": m.name,
            "arch": m.arch,
            "layers": m.n_layers,
            "hidden": m.hidden,
            "heads": m.n_heads,
            "kv_heads": m.n_kv_heads,
            "ffn": m.ffn_hidden,
            "vocab": m.vocab,
            "max_seq": m.max_seq,
            "train_seq": m.train_seq_len,
            "window": str(m.sliding_window) if m.sliding_window else None,
            "dropout": m.dropout,
            "n_params": fmt_count(m.n_params),
            "published": fmt_count(pub) if pub else None,
            "diff_pct": None if diff is None else round(diff, 3),
            "experts": f"{m.experts_per_token}/{m.n_experts}" if m.is_moe else None,
            "active": fmt_count(m.active_params) if m.is_moe else None,
        }
        text.append(_provenance(full, short, with_sources))
    footer = ""
    if hf_config is not None:  # the assumptions the config could not settle, said under the table
        footer = "\n".join(f"note: {n}" for n in (entries[0][1]["train_source"], entries[0][1]["notes"]) if n)
    return catalog_table(
        rows,
        text,
        "Models (gpukit/data/models.csv): n_params from gpukit.specs.ModelSpec, "
        "published = the source's count, diff_pct = 100 x (n_params - published) / published, in percent; "
        "max_seq = context window, train_seq = pretraining sequence length, window = sliding-window "
        "attention span ('-': full attention), experts = top-k / routed experts, active = parameters per token "
        "(ModelSpec.active_params, embeddings included)",
        footer,
    )


def link_rows(names=(), with_sources: bool = False) -> Report:
    """Interconnect rows: unidirectional GB/s per GPU or port, one-way latency in us."""
    rows, text = [], []
    for link in _select(catalog.interconnects(), names, catalog.get_interconnect):
        full = {
            "name": link.name,
            "kind": link.kind,
            "scope": link.scope,
            "bandwidth_gbps": link.bandwidth_gbps,
            "latency_us": link.latency_us,
            "source": link.source,
            "source_url": link.source_url,
            "accessed": link.accessed,
            "notes": link.notes,
        }
        rows.append(full)
        short = {
            "name": link.name,
            "kind": link.kind,
            "scope": link.scope,
            "bandwidth_gbps": link.bandwidth_gbps,
            "latency_us": link.latency_us,
        }
        text.append(_provenance(full, short, with_sources))
    return catalog_table(
        rows,
        text,
        "Links (gpukit/data/interconnects.csv): bandwidth GB/s per GPU or port, "
        "one direction; latency_us one way, small message",
    )


def register(sub) -> None:
    specs = (
        ("gpus", gpu_rows, "GPU spec sheets (dense peaks, GiB, unidirectional NVLink)", ()),
        ("models", model_rows, "model shapes with computed and published parameter counts", ()),
        ("links", link_rows, "interconnects: unidirectional GB/s and one-way latency", ("interconnects",)),
    )
    for cmd, fn, help_text, aliases in specs:
        p = sub.add_parser(cmd, aliases=list(aliases), help=help_text, description=__doc__.split("\n\n")[0])
        p.add_argument("names", nargs="*", metavar="NAME", help="rows to show (default: all)")
        p.add_argument("--sources", action="store_true", help="add source and access date to the table")
        add_json_flag(p)
        if cmd == "models":
            add_hf_config_arg(p)
            p.set_defaults(func=lambda args: model_rows(tuple(args.names), args.sources, args.hf_config))
        else:
            p.set_defaults(func=lambda args, fn=fn: fn(tuple(args.names), args.sources))
