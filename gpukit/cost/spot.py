"""Spot (preemptible) training: the checkpoint interval (Young 1974; Daly 2006), the expected wall
time of a run that is preempted, and its cost against on-demand. Pure calculator; gpukit.cost
re-exports every name here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from gpukit.errors import finite_result, require_positive, require_positive_int


def young_interval_s(checkpoint_s: float, mtbi_s: float) -> float:
    """Young (1974): optimal compute time between checkpoints sqrt(2 delta M)."""
    return math.sqrt(2 * require_positive("checkpoint_s", checkpoint_s) * require_positive("mtbi_s", mtbi_s))


def daly_interval_s(checkpoint_s: float, mtbi_s: float) -> float:
    """Daly (2006, FGCS 22, eq. 37): sqrt(2 delta M) [1 + 1/3 sqrt(delta/2M) + delta/(18 M)] - delta
    for delta < 2M, else M."""
    d, m = require_positive("checkpoint_s", checkpoint_s), require_positive("mtbi_s", mtbi_s)
    if d >= 2 * m:
        return m
    return math.sqrt(2 * d * m) * (1 + math.sqrt(d / (2 * m)) / 3 + d / (18 * m)) - d


def expected_wall_s(
    solve_s: float, interval_s: float, checkpoint_s: float, restart_s: float, mtbi_s: float
) -> float:
    """Daly (2006, eq. 13): expected wall time with exponential interruptions of mean M,
    T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau. A job whose expected time leaves float range
    never finishes in practice (it restarts before it can checkpoint): ValueError saying so, never inf."""
    m = require_positive("mtbi_s", mtbi_s)
    tau = require_positive("interval_s", interval_s)
    solve = require_positive("solve_s", solve_s)
    delta = require_positive("checkpoint_s", checkpoint_s, allow_zero=True)
    restart = require_positive("restart_s", restart_s, allow_zero=True)
    try:
        wall = m * math.exp(restart / m) * math.expm1((tau + delta) / m) * solve / tau
    except OverflowError:
        wall = math.inf
    if not math.isfinite(wall):
        raise ValueError(
            f"the job never finishes: interruptions every {m:.3g} s against a checkpoint cycle of "
            f"{tau + delta:.3g} s and a {restart:.3g} s restart (expected wall time beyond float range)"
        )
    return wall


@dataclass(frozen=True)
class SpotEstimate:
    """Spot vs on-demand for one job: checkpoint interval, expected hours and cost."""

    gpus: int
    work_hours: float  # on-demand wall hours without interruptions
    preemptions_per_day: float
    checkpoint_minutes: float
    restart_minutes: float
    young_interval_hours: float
    daly_interval_hours: float
    expected_hours: float | None  # None: the job never finishes in practice (expected_wall_s)
    on_demand_cost_usd: float
    spot_cost_usd: float | None
    savings: float | None  # 1 - spot / on-demand (negative: spot costs more)
    time_overhead: float | None  # expected_hours / work_hours - 1

    def to_json_dict(self) -> dict:
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(self).items()}


def spot_run(
    work_hours: float,
    gpus: int,
    on_demand_per_gpu_hour: float,
    spot_per_gpu_hour: float,
    *,
    preemptions_per_day: float,
    checkpoint_minutes: float,
    restart_minutes: float = 10.0,
) -> SpotEstimate:
    """A job of `work_hours` on spot instances interrupted `preemptions_per_day` times a day (the
    whole job: one node lost stops all), checkpointing every Daly-optimal interval: expected wall
    time (Daly 2006) and cost, against the same job on demand. Restart time includes re-queueing
    and reloading the checkpoint; work since the last checkpoint is lost (counted by the formula)."""
    w = require_positive("work_hours", work_hours)
    n = require_positive_int("gpus", gpus)
    od = require_positive("on_demand_per_gpu_hour", on_demand_per_gpu_hour)
    sp = require_positive("spot_per_gpu_hour", spot_per_gpu_hour)
    rate = require_positive("preemptions_per_day", preemptions_per_day)
    d = require_positive("checkpoint_minutes", checkpoint_minutes) * 60
    r = require_positive("restart_minutes", restart_minutes, allow_zero=True) * 60
    mtbi = 86400 / rate
    tau_y = young_interval_s(d, mtbi)
    tau = daly_interval_s(d, mtbi)
    try:
        wall: float | None = expected_wall_s(w * 3600, tau, d, r, mtbi) / 3600
    except ValueError:  # never finishes: no time, no spot cost (the CLI says "never finishes in practice")
        wall = None
    od_cost = finite_result("the on-demand cost (work_hours x gpus x price)", w * n * od)
    sp_cost = None if wall is None else wall * n * sp
    if sp_cost is not None and not math.isfinite(sp_cost):
        wall = sp_cost = None
    return SpotEstimate(
        gpus=n,
        work_hours=w,
        preemptions_per_day=rate,
        checkpoint_minutes=d / 60,
        restart_minutes=r / 60,
        young_interval_hours=tau_y / 3600,
        daly_interval_hours=tau / 3600,
        expected_hours=wall,
        on_demand_cost_usd=od_cost,
        spot_cost_usd=sp_cost,
        # a denormal on-demand price makes the ratio overflow: a one-line error, not -inf
        savings=None
        if sp_cost is None
        else finite_result("savings (1 - spot / on-demand cost)", 1 - sp_cost / od_cost),
        time_overhead=None if wall is None else wall / w - 1,
    )
