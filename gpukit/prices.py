"""GPU prices: read gpukit/data/prices.csv (or a downloaded SkyPilot catalog) and quote a price per GPU-hour.

The shipped file follows the column names of SkyPilot's public catalog
(skypilot-org/skypilot-catalog, catalogs/v7/<cloud>/vms.csv: InstanceType, AcceleratorName,
AcceleratorCount, Price, SpotPrice, Region), so a user can pass a downloaded catalog instead
(`--prices FILE`). Columns are found by header name (their order differs between clouds); a missing
required column is a ValueError naming the file and the column. Prices are USD per instance-hour;
per GPU-hour = Price / AcceleratorCount. The shipped file adds gpukit columns (cloud, gpu, as_of,
PurchasePrice) and row provenance (source, source_url, accessed). Prices move: gpukit/data/README.md says
how to refresh them. Used in: gpukit.cost, gpukit.plan, notebooks/08_cluster_economics.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import cast

from gpukit.catalog import data_dir, gpus
from gpukit.errors import require_choice, require_positive

SKYPILOT_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
SHIPPED_REQUIRED = (
    *SKYPILOT_REQUIRED,
    "SpotPrice",
    "PurchasePrice",
    "cloud",
    "gpu",
    "as_of",
    "source",
    "source_url",
    "accessed",
)
POLICIES = ("lowest", "median", "highest")
ARTICLE_CLOUDS = ("article-000", "article-002")

# SkyPilot's AcceleratorName -> gpukit/data/gpus.csv name (H100 is SXM unless the instance type says PCIe).
ACCELERATOR_NAMES = {
    "H100": "h100-sxm",
    "H100-80GB": "h100-sxm",
    "H100-MEGA": "h100-sxm",
    "H100-SXM": "h100-sxm",
    "H200": "h200",
    "B200": "b200",
    "A100": "a100-40gb",
    "A100-80GB": "a100-80gb",
    "A100-80GB-SXM": "a100-80gb",
    "L4": "l4",
    "L40S": "l40s",
    "A10G": "a10g",
    "T4": "t4",
    "V100-32GB": "v100-32gb",
    "A6000": "rtx-a6000",
    "RTXA6000": "rtx-a6000",
    "RTX6000-Ada": "rtx-6000-ada",
    "RTX4090": "rtx-4090",
    "RTX3090": "rtx-3090",
    "MI300X": "mi300x",
}


@dataclass(frozen=True)
class PriceRow:
    """One instance type in one region: on-demand and spot USD per instance-hour, purchase USD."""

    instance_type: str
    accelerator: str
    count: int
    price_usd_per_h: float | None
    spot_usd_per_h: float | None
    purchase_usd: float | None
    region: str
    cloud: str
    gpu: str  # gpukit/data/gpus.csv name, "" when the catalog has no matching GPU
    as_of: str = ""
    source: str = ""
    source_url: str = ""
    accessed: str = ""
    notes: str = ""

    @property
    def usd_per_gpu_hour(self) -> float | None:
        return None if self.price_usd_per_h is None else self.price_usd_per_h / self.count

    @property
    def spot_usd_per_gpu_hour(self) -> float | None:
        return None if self.spot_usd_per_h is None else self.spot_usd_per_h / self.count

    @property
    def is_article(self) -> bool:
        return self.cloud in ARTICLE_CLOUDS

    def label(self) -> str:
        where = f" {self.region}" if self.region else ""
        return f"{self.cloud} {self.instance_type}{where}" + (f" (as of {self.as_of})" if self.as_of else "")

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(usd_per_gpu_hour=self.usd_per_gpu_hour, spot_usd_per_gpu_hour=self.spot_usd_per_gpu_hour)
        return d


@dataclass(frozen=True)
class PriceTable:
    """The rows of one price file."""

    path: str
    rows: tuple[PriceRow, ...]

    def for_gpu(self, gpu: str, *, spot: bool = False, articles: bool = False) -> tuple[PriceRow, ...]:
        """Rows of `gpu` with an on-demand (or spot) price; the articles' own rows only if asked."""
        out = []
        for r in self.rows:
            if r.gpu != gpu or (r.is_article and not articles):
                continue
            if (r.spot_usd_per_h if spot else r.price_usd_per_h) is not None:
                out.append(r)
        return tuple(out)

    def gpus_priced(self, spot: bool = False) -> tuple[str, ...]:
        """Catalog GPUs with at least one market (non-article) on-demand (or spot) price."""
        return tuple(
            sorted(
                {
                    r.gpu
                    for r in self.rows
                    if r.gpu and not r.is_article and (r.spot_usd_per_h if spot else r.price_usd_per_h)
                }
            )
        )

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame([r.to_json_dict() for r in self.rows])


@dataclass(frozen=True)
class PriceQuote:
    """A price per GPU-hour and where it comes from."""

    usd_per_gpu_hour: float
    source: str  # the row's label, or "given"
    spot: bool = False

    def to_json_dict(self) -> dict:
        return asdict(self)


def _float(path, line, row, col, optional=True):
    raw = (row.get(col) or "").strip()
    if not raw:
        if optional:
            return None
        raise ValueError(f"{path}:{line}: empty {col!r}")
    try:
        x = float(raw)
    except ValueError:
        raise ValueError(f"{path}:{line}: {col!r} must be a number, got {raw!r}") from None
    if not math.isfinite(x) or x < 0:
        raise ValueError(f"{path}:{line}: {col!r} must be a finite number >= 0, got {raw!r}")
    return x


def _map_gpu(accelerator: str, instance_type: str) -> str:
    name = ACCELERATOR_NAMES.get(accelerator, "")
    if name == "h100-sxm" and "pcie" in instance_type.lower():
        return "h100-pcie"
    return name


def read_prices(path) -> PriceTable:
    """Parse a price CSV by header name: the shipped file (provenance required) or a SkyPilot
    catalog (vms.csv; cloud taken from the folder name, rows without a GPU or price skipped, and rows
    with a fraction of a GPU, whose price is not per whole GPU)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"price file {path} not found")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"price file {path}: cannot read ({type(e).__name__})") from None
    lines = [
        (i, ln) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip() and not ln.startswith("#")
    ]
    if not lines:
        raise ValueError(f"price file {path}: empty (no header line)")
    try:
        records = list(csv.reader([ln for _, ln in lines]))
    except csv.Error as e:
        raise ValueError(f"price file {path}: {e}") from None
    header = [c.strip() for c in records[0]]
    shipped = "source" in header or "gpu" in header
    for col in SHIPPED_REQUIRED if shipped else SKYPILOT_REQUIRED:
        if col not in header:
            raise ValueError(f"price file {path}: missing column {col!r} (header has {', '.join(header)})")
    cloud_default = path.parent.name if path.name == "vms.csv" else "user"
    rows = []
    for (lineno, _), rec in zip(lines[1:], records[1:], strict=True):
        if len(rec) != len(header):
            raise ValueError(f"{path}:{lineno}: {len(rec)} fields, header has {len(header)}")
        row = {k: v.strip() for k, v in zip(header, rec, strict=True)}
        acc = row["AcceleratorName"]
        price = _float(path, lineno, row, "Price")
        spot = _float(path, lineno, row, "SpotPrice") if "SpotPrice" in row else None
        purchase = _float(path, lineno, row, "PurchasePrice") if "PurchasePrice" in row else None
        count_raw = _float(path, lineno, row, "AcceleratorCount")
        if not shipped and (not acc or not count_raw or (price is None and spot is None)):
            continue  # CPU instances, or no price in this region
        if not shipped and not float(count_raw).is_integer():
            continue  # a share of one GPU (Azure's fractional A10 sizes): not a price per whole GPU-hour
        if not count_raw or not float(count_raw).is_integer():
            raise ValueError(
                f"{path}:{lineno}: 'AcceleratorCount' must be a positive whole number, got "
                f"{row['AcceleratorCount']!r}"
            )
        if shipped:
            for c in ("source", "source_url", "accessed"):
                if not row[c]:
                    raise ValueError(f"{path}:{lineno}: empty {c!r} (every row needs its provenance)")
            gpu = row["gpu"]
            if gpu and gpu not in gpus():
                raise ValueError(f"{path}:{lineno}: gpu {gpu!r} is not in gpukit/data/gpus.csv")
            if price is None and spot is None and purchase is None:
                raise ValueError(f"{path}:{lineno}: a row needs Price, SpotPrice or PurchasePrice")
        else:
            gpu = _map_gpu(acc, row["InstanceType"])
        rows.append(
            PriceRow(
                instance_type=row["InstanceType"],
                accelerator=acc,
                count=int(count_raw),
                price_usd_per_h=price,
                spot_usd_per_h=spot,
                purchase_usd=purchase,
                region=row["Region"],
                cloud=row.get("cloud") or cloud_default,
                gpu=gpu,
                as_of=row.get("as_of", ""),
                source=row.get("source") or f"price file {path.name}",
                source_url=row.get("source_url", ""),
                accessed=row.get("accessed", ""),
                notes=row.get("notes", ""),
            )
        )
    return PriceTable(str(path), tuple(rows))


_CACHE: dict[tuple[str, int, int], PriceTable] = {}


def load_prices(path=None) -> PriceTable:
    """gpukit/data/prices.csv (default) or `path`, cached by file stamp."""
    if path is not None and not str(path).strip():  # '' would be the current folder, or the shipped table
        raise ValueError("price file path is empty: give a price CSV, or no --prices")
    p = Path(path) if path is not None else data_dir() / "prices.csv"
    try:
        st = p.stat()
        key = (str(p), st.st_mtime_ns, st.st_size)
    except OSError:
        raise ValueError(f"price file {p} not found") from None
    if key not in _CACHE:
        _CACHE[key] = read_prices(p)
    return _CACHE[key]


def quote(
    gpu: str,
    prices: PriceTable | None = None,
    *,
    policy: str = "lowest",
    spot: bool = False,
    articles: bool = False,
) -> PriceQuote:
    """Price per GPU-hour of `gpu` from a price table: the lowest, median or highest market row
    (the median of an even count is the lower middle row, so that the figure is always a real row)."""
    require_choice("policy", policy, POLICIES)
    table = prices if prices is not None else load_prices()
    rows = table.for_gpu(gpu, spot=spot, articles=articles)
    if not rows:
        kind = "spot" if spot else "on-demand"
        have = ", ".join(table.gpus_priced(spot=spot)) or "none"
        raise ValueError(
            f"gpu {gpu!r} has no {kind} price in {table.path} ({kind} prices for: {have}); give a "
            f"{kind} price per GPU-hour"
        )
    key = (lambda r: r.spot_usd_per_gpu_hour) if spot else (lambda r: r.usd_per_gpu_hour)
    ordered = sorted(rows, key=key)
    row = {"lowest": ordered[0], "highest": ordered[-1], "median": ordered[(len(ordered) - 1) // 2]}[policy]
    return PriceQuote(usd_per_gpu_hour=key(row), source=row.label(), spot=spot)


def _priced(r: PriceRow) -> float:
    """r.usd_per_gpu_hour of a row known to have one (for_gpu's rows, the market rows kept for a price)."""
    return cast(float, r.usd_per_gpu_hour)


PRICE_FAR_ABOVE = 2.0  # a per-GPU-hour price this many times the table's highest row (any GPU) is called out


def price_warning(
    gpu: str,
    usd_per_gpu_hour: float,
    table: PriceTable | None = None,
    *,
    gpus_per_node: int | None = 8,
    field: str = "price_per_gpu_hour",
    fix: str = "divide it by the node's GPU count",
) -> str | None:
    """One line when a price given per GPU-hour looks like a node's (instance's) price, else None.

    A warning, not an error: prices move and a seller may charge more than any row. It fires when the
    price is above the highest market on-demand row of `gpu` (per GPU-hour) and, divided by the node's
    GPU count, falls within the rows' range (a node price typed as a GPU price: Lambda's 8 x H100 at
    $23.92/h is $2.99/GPU-h); or when it is over PRICE_FAR_ABOVE x the highest row of any GPU in the
    table. gpus_per_node None: the GPU counts of the table's multi-GPU rows of `gpu` (8 if none)."""
    table = table if table is not None else load_prices()
    usd = float(usd_per_gpu_hour)
    rows = table.for_gpu(gpu)
    market = tuple(r for r in table.rows if not r.is_article and r.usd_per_gpu_hour)
    if not market:
        return None
    top_any = max(market, key=_priced)
    node = []
    if rows:
        lo, hi = min(_priced(r) for r in rows), max(_priced(r) for r in rows)
        sizes = (
            {gpus_per_node} if gpus_per_node is not None else ({r.count for r in rows if r.count > 1} or {8})
        )
        if usd > hi:
            node = sorted(k for k in sizes if k > 1 and k * lo * 0.99 <= usd <= k * hi * 1.01)
    if node:
        k = node[0]
        top = max(rows, key=_priced)
        return (
            f"{field} ${usd:g} is above the highest {gpu} price per GPU-hour in {Path(table.path).name} "
            f"(${hi:.2f}, {top.label()}) and within {k} x its range (${k * lo:.2f}-${k * hi:.2f}): is it the "
            f"price of a node of {k} GPUs (${usd / k:.2f} per GPU-hour)? If so, {fix}"
        )
    if usd > PRICE_FAR_ABOVE * _priced(top_any):
        k = gpus_per_node or 8
        return (
            f"{field} ${usd:g} is over {PRICE_FAR_ABOVE:g}x the highest price per GPU-hour of any GPU in "
            f"{Path(table.path).name} (${top_any.usd_per_gpu_hour:.2f}, {top_any.label()}): is it the price of "
            f"a node (${usd / k:.2f} per GPU-hour over {k} GPUs)? If so, {fix}"
        )
    return None


def node_price_warning(
    gpu: str,
    usd_per_node_hour: float,
    gpus_per_node: int,
    table: PriceTable | None = None,
    *,
    field: str = "price_per_node_hour",
) -> str | None:
    """One line when a price given per node-hour looks like a GPU's: per GPU-hour it falls below the
    lowest market row of `gpu` while the price itself lies within the rows' per-GPU-hour range. None
    otherwise, or when the table has no row of `gpu`, or for one-GPU nodes."""
    table = table if table is not None else load_prices()
    rows = table.for_gpu(gpu)
    if not rows or gpus_per_node <= 1:
        return None
    lo = min(_priced(r) for r in rows)
    hi = max(_priced(r) for r in rows)
    usd = float(usd_per_node_hour)
    if usd / gpus_per_node >= lo or not lo * 0.99 <= usd <= hi * 1.01:
        return None
    return (
        f"{field} ${usd:g} is ${usd / gpus_per_node:.2f} per GPU-hour over {gpus_per_node} GPUs, below the lowest "
        f"{gpu} row in {Path(table.path).name} (${lo:.2f}/GPU-h) and within its per-GPU range: if it is a price "
        f"per GPU-hour, give it as such"
    )


def given_or_quote(
    gpu: str, price: float | None, table: PriceTable | None = None, *, spot: bool = False
) -> tuple[float, str]:
    """(usd_per_gpu_hour, source): a price given is checked and labelled 'given'; None takes the median
    row of `gpu` in `table` (gpukit/data/prices.csv by default; its spot column with spot=True)."""
    if price is not None:
        return require_positive("price_per_gpu_hour", price), "given"
    q = quote(gpu, table, policy="median", spot=spot)
    return q.usd_per_gpu_hour, q.source


def market_range(gpu: str, prices: PriceTable | None = None) -> tuple[float, float, float]:
    """(lowest, median, highest) market on-demand USD per GPU-hour of `gpu` in the price table
    (gpukit/data/prices.csv by default): the range the articles' price claims are audited against."""
    return cast(
        tuple[float, float, float],
        tuple(quote(gpu, prices, policy=p).usd_per_gpu_hour for p in ("lowest", "median", "highest")),
    )
