"""Buy or rent: the owned cost of a GPU-hour (capital over the depreciation period, operations, energy
at a PUE) against a rent, with the break-even utilization and months. Split from gpukit.cost because
it changes with capex, power and energy assumptions, not with the training-time model.
Used in: gpukit.cost (re-exported there), notebooks/08_cluster_economics, gpukit.widgets.cost_view,
gpukit.audits.cost_buy_rent.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.catalog import get_gpu
from gpukit.errors import require_positive, require_positive_int
from gpukit.prices import given_or_quote, price_warning

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
# Default power per GPU including its share of the server: DGX H100 system max 10.2 kW for 8 x 700 W
# GPUs (NVIDIA DGX H100 datasheet) = 1.82 x the GPU TDP. An assumption, named in every output.
SERVER_POWER_FACTOR = 10.2 / (8 * 0.7)
DEFAULT_PUE = 1.56  # Uptime Institute Global Data Center Survey 2024: industry-average PUE
DEFAULT_USD_PER_KWH = 0.10  # stated assumption (US industrial electricity is roughly 0.08-0.12 USD/kWh)


# BuyVsRent attribute -> its JSON key: USD per GPU-hour says its currency (issue 25; docs/CONTRACTS.md).
RENAMED_JSON_KEYS = {
    "capital_per_gpu_hour": "capital_usd_per_gpu_hour",
    "energy_per_gpu_hour": "energy_usd_per_gpu_hour",
    "ops_per_gpu_hour": "ops_usd_per_gpu_hour",
    "owned_cost_per_gpu_hour": "owned_usd_per_gpu_hour",
    "rent_per_gpu_hour": "rent_usd_per_gpu_hour",
}


@dataclass(frozen=True)
class BuyVsRent:
    """Owned cost per GPU-hour used against a rental price; break-even utilization and months."""

    gpu: str
    gpus: int
    capex_usd: float
    years: float
    utilization: float
    power_kw_per_gpu: float
    pue: float
    usd_per_kwh: float
    ops_usd_per_year: float
    rent_per_gpu_hour: float
    capital_per_gpu_hour: float
    energy_per_gpu_hour: float
    ops_per_gpu_hour: float
    owned_cost_per_gpu_hour: float
    break_even_utilization: float  # inf: renting is always cheaper (rent below the energy cost)
    break_even_months: float  # inf: never, at this utilization
    assumptions: tuple[str, ...] = ()
    warnings: tuple[
        str, ...
    ] = ()  # a rent per GPU-hour that looks like a node's price (gpukit.prices.price_warning)

    def to_json_dict(self) -> dict:
        d = asdict(self)
        for old, new in RENAMED_JSON_KEYS.items():  # the unit in the name (issue 25)
            d[new] = d.pop(old)
        for k in ("break_even_utilization", "break_even_months"):
            d[k] = None if math.isinf(d[k]) else d[k]
        d["assumptions"] = list(self.assumptions)
        d["warnings"] = list(self.warnings)
        return d

    def to_frame(self):
        import pandas as pd

        return pd.DataFrame(
            [(k, v) for k, v in self.to_json_dict().items() if k not in ("assumptions", "warnings")],
            columns=["quantity", "value"],
        )

    def to_text(self) -> str:
        be_u = (
            "never (rent is below the energy cost)"
            if math.isinf(self.break_even_utilization)
            else f"{self.break_even_utilization:.0%}"
            + (" (above 100%: renting is cheaper at any use)" if self.break_even_utilization > 1 else "")
        )
        be_m = (
            "never at this utilization"
            if math.isinf(self.break_even_months)
            else f"{self.break_even_months:.1f} months"
        )
        return "\n".join(
            [
                f"{self.gpus} x {self.gpu}: capital ${self.capex_usd:,.0f} over {self.years:g} years at {self.utilization:.0%} use",
                f"owned per GPU-hour used: ${self.owned_cost_per_gpu_hour:.2f} (capital {self.capital_per_gpu_hour:.2f} + "
                f"energy {self.energy_per_gpu_hour:.2f} + operations {self.ops_per_gpu_hour:.2f}); rent ${self.rent_per_gpu_hour:.2f}",
                f"break-even utilization: {be_u}; break-even: {be_m}",
            ]
            + [f"WARNING: {w}" for w in self.warnings]
            + [f"assumes: {a}" for a in self.assumptions]
        )


def buy_vs_rent(
    gpu: str,
    gpus: int,
    purchase_usd: float,
    *,
    rent_per_gpu_hour: float | None = None,
    prices=None,
    power_kw: float | None = None,
    pue: float = DEFAULT_PUE,
    usd_per_kwh: float = DEFAULT_USD_PER_KWH,
    years: float = 3.0,
    utilization: float = 0.7,
    ops_usd_per_year: float = 0.0,
    network_usd: float = 0.0,
) -> BuyVsRent:
    """Cost per GPU-hour of owning `gpus` GPUs bought for `purchase_usd` (servers included) plus
    `network_usd`, straight-line depreciation over `years`, used `utilization` of the hours:

        owned = (capex / years + ops) / (8760 x utilization x gpus) + power_kw x PUE x USD/kWh

    (energy counted while in use; idle draw left out). Break-even utilization: owned = rent, i.e.
    u* = (capex / years + ops) / (8760 x gpus x (rent - energy)). Break-even months at `utilization`:
    capex / (730 x utilization x gpus x (rent - energy) - ops / 12). power_kw is per GPU including its
    share of the server (default TDP x SERVER_POWER_FACTOR, the DGX H100 ratio).
    """
    g = get_gpu(gpu)
    n = require_positive_int("gpus", gpus)
    capex = require_positive("purchase_usd", purchase_usd) + require_positive(
        "network_usd", network_usd, allow_zero=True
    )
    years = require_positive("years", years)
    u = require_positive("utilization", utilization)
    if u > 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    pue = require_positive("pue", pue)
    if pue < 1:
        raise ValueError(f"pue must be >= 1 (total facility power / IT power), got {pue}")
    kwh = require_positive("usd_per_kwh", usd_per_kwh, allow_zero=True)
    ops = require_positive("ops_usd_per_year", ops_usd_per_year, allow_zero=True)
    assumptions = [
        f"straight-line depreciation over {years:g} years, no resale value",
        f"PUE {pue:g}, electricity ${kwh:g}/kWh, energy counted only while in use",
    ]
    if power_kw is None:
        power_kw = g.tdp_w / 1000 * SERVER_POWER_FACTOR
        assumptions.append(
            f"power per GPU {power_kw:.2f} kW = TDP {g.tdp_w:g} W x {SERVER_POWER_FACTOR:.2f} "
            "(DGX H100: 10.2 kW for 8 x 700 W GPUs)"
        )
    power_kw = require_positive("power_kw", power_kw)
    warnings: tuple[str, ...] = ()
    if rent_per_gpu_hour is None:
        rent, src = given_or_quote(gpu, None, prices)
        assumptions.append(f"rent ${rent:.2f}/GPU-hour: {src}")
    else:
        rent = require_positive("rent_per_gpu_hour", rent_per_gpu_hour)
        w = price_warning(
            gpu,
            rent,
            prices,
            gpus_per_node=None,
            field="rent_per_gpu_hour (--rent-per-gpu-hour)",
            fix="divide it by the node's GPU count",
        )
        warnings = (w,) if w else ()
    fixed_per_year = capex / years + ops
    capital = capex / years / (HOURS_PER_YEAR * u * n)
    ops_h = ops / (HOURS_PER_YEAR * u * n)
    energy = power_kw * pue * kwh
    owned = capital + ops_h + energy
    margin = rent - energy
    be_u = fixed_per_year / (HOURS_PER_YEAR * n * margin) if margin > 0 else math.inf
    monthly = HOURS_PER_MONTH * u * n * margin - ops / 12
    be_m = capex / monthly if monthly > 0 else math.inf
    return BuyVsRent(
        gpu=gpu,
        gpus=n,
        capex_usd=capex,
        years=years,
        utilization=u,
        power_kw_per_gpu=power_kw,
        pue=pue,
        usd_per_kwh=kwh,
        ops_usd_per_year=ops,
        rent_per_gpu_hour=rent,
        capital_per_gpu_hour=capital,
        energy_per_gpu_hour=energy,
        ops_per_gpu_hour=ops_h,
        owned_cost_per_gpu_hour=owned,
        break_even_utilization=be_u,
        break_even_months=be_m,
        assumptions=tuple(assumptions),
        warnings=warnings,
    )
