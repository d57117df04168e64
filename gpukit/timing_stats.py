"""How sure is a measured time ratio? Quartiles, a bootstrap interval, and a verdict that may say
"no measurable difference at this size" (pure: no torch, no numpy).

A step-time ratio from a few repeats on a shared CPU can move by tens of percent from one run to
the next. `ratio_estimate(base_s, other_s)` therefore reports, besides the median ratio:

- the interquartile range of the per-repeat ratios (the spread of the middle half), and
- a percentile-bootstrap confidence interval of the median ratio (Efron & Tibshirani 1993,
  *An Introduction to the Bootstrap*, ch. 13: resample the repeats with replacement, take the
  statistic of each resample, read the interval off its percentiles). With interleaved repeats
  (round i times the baseline and the variant one after the other, as gpukit.bench.measure_tricks.run_configs
  does) the ratios are *paired*: repeat i of the variant over repeat i of the baseline, so load that
  hits both alike cancels.

The verdict is "slower" or "faster" only when the interval excludes 1 and the spread is smaller
than the value itself: a ratio whose interval straddles 1, or whose repeats disagree by more than
their median (the IQR of a time larger than its median, or the IQR of the ratios larger than the
median ratio), says "no measurable difference at this size" instead. The resampling uses a fixed
seed, so the same samples always give the same interval.

`spread_warning(items)` is the one rule for a measurement whose repeats disagree too much for its median
(p90/p10 above SPREAD_LIMIT = 2x).

Used in: gpukit.bench.measure_tricks (TrickResult.time_ratio_estimate), notebooks/02_fitting_tricks;
spread_warning in gpukit.bench matmul, membw, collectives and ddp_sweep.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

NO_DIFFERENCE = "no measurable difference at this size"


def _clean(name: str, samples: Sequence[float], minimum: int = 1) -> list[float]:
    try:
        xs = [float(x) for x in samples]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a sequence of numbers, got {samples!r}") from None
    if len(xs) < minimum:
        raise ValueError(f"{name} needs at least {minimum} sample(s), got {len(xs)}")
    if any(not (x > 0 and x < float("inf")) for x in xs):
        raise ValueError(f"{name} must hold positive finite times, got {xs}")
    return xs


def quartiles(samples: Sequence[float]) -> tuple[float, float, float]:
    """(q1, median, q3) with linear interpolation between order statistics (numpy's default method)."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("quartiles of an empty sample")
    if len(xs) == 1:
        return xs[0], xs[0], xs[0]
    q1, med, q3 = statistics.quantiles(xs, n=4, method="inclusive")
    return q1, med, q3


def iqr(samples: Sequence[float]) -> float:
    """Interquartile range q3 - q1 of `samples`."""
    q1, _, q3 = quartiles(samples)
    return q3 - q1


def bootstrap_interval(
    samples: Sequence[float],
    stat: Callable[[list[float]], float] = statistics.median,
    *,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of `stat(samples)` (Efron & Tibshirani 1993, ch. 13), fixed seed."""
    xs = [float(x) for x in samples]
    if not xs:
        raise ValueError("bootstrap of an empty sample")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
    if int(n_boot) < 10:
        raise ValueError(f"n_boot must be at least 10 resamples, got {n_boot!r}")
    rng = random.Random(seed)
    n = len(xs)
    stats = sorted(stat([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(int(n_boot)))
    tail = (1 - confidence) / 2
    return _percentile_sorted(stats, 100 * tail), _percentile_sorted(stats, 100 * (1 - tail))


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (q in [0, 100]) with linear interpolation (numpy's default), without numpy."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("percentile of an empty sample")
    return _percentile_sorted(xs, q)


def _percentile_sorted(xs: list[float], q: float) -> float:
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class RatioEstimate:
    """A time ratio other/base (>1: `other` is slower) with its spread and a bootstrap interval."""

    median: float  # median of the per-repeat ratios (paired) or ratio of the medians (unpaired)
    lo: float  # bootstrap interval of `median`
    hi: float
    q1: float  # interquartile range of the per-repeat ratios (paired) or of the resampled ratio
    q3: float
    n: int  # repeats (pairs when paired)
    paired: bool
    confidence: float
    base_median_s: float
    base_iqr_s: float
    other_median_s: float
    other_iqr_s: float

    @property
    def straddles_one(self) -> bool:
        """True when the interval contains 1: the data allow 'no difference'."""
        return self.lo <= 1.0 <= self.hi

    @property
    def too_noisy(self) -> bool:
        """True when the repeats disagree by more than their median (time IQR > median, or ratio IQR > ratio)."""
        return (
            self.base_iqr_s > self.base_median_s
            or self.other_iqr_s > self.other_median_s
            or (self.q3 - self.q1) > self.median
        )

    @property
    def measurable(self) -> bool:
        return not (self.straddles_one or self.too_noisy)

    @property
    def verdict(self) -> str:
        """'slower' | 'faster' | NO_DIFFERENCE."""
        if not self.measurable:
            return NO_DIFFERENCE
        return "slower" if self.median > 1 else "faster"

    def to_text(self) -> str:
        """'x1.31 (95% interval x1.22-x1.40, 9 paired repeats): slower'."""
        kind = "paired repeats" if self.paired else "repeats each"
        why = ""
        if self.too_noisy:
            why = "; the repeats disagree by more than their median"
        elif self.straddles_one:
            why = "; the interval contains x1.00"
        return (
            f"x{self.median:.2f} ({self.confidence:.0%} interval x{self.lo:.2f}-x{self.hi:.2f}, "
            f"{self.n} {kind}): {self.verdict}{why}"
        )

    def to_json_dict(self) -> dict:
        d = asdict(self)
        d.update(verdict=self.verdict, measurable=self.measurable)
        return d


def ratio_estimate(
    base_s: Sequence[float],
    other_s: Sequence[float],
    *,
    paired: bool = True,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> RatioEstimate:
    """How much slower (>1) or faster (<1) `other_s` is than `base_s`, with its uncertainty.

    paired=True (interleaved repeats, equal counts): the statistic is the median of the per-repeat
    ratios other[i]/base[i], bootstrapped over the pairs. paired=False: the ratio of the medians,
    each sample resampled on its own.
    """
    base = _clean("base_s", base_s)
    other = _clean("other_s", other_s)
    bq1, bmed, bq3 = quartiles(base)
    oq1, omed, oq3 = quartiles(other)
    if paired:
        if len(base) != len(other):
            raise ValueError(
                f"paired ratios need as many base_s as other_s samples, got {len(base)} and {len(other)}"
            )
        ratios = [o / b for o, b in zip(other, base, strict=True)]
        q1, med, q3 = quartiles(ratios)
        lo, hi = bootstrap_interval(ratios, confidence=confidence, n_boot=n_boot, seed=seed)
        n = len(ratios)
    else:
        if not 0 < confidence < 1:
            raise ValueError(f"confidence must be between 0 and 1 (exclusive), got {confidence!r}")
        med = omed / bmed
        rng = random.Random(seed)
        boots = sorted(
            statistics.median(rng.choices(other, k=len(other)))
            / statistics.median(rng.choices(base, k=len(base)))
            for _ in range(int(n_boot))
        )
        tail = (1 - confidence) / 2
        lo, hi = _percentile_sorted(boots, 100 * tail), _percentile_sorted(boots, 100 * (1 - tail))
        q1, q3 = _percentile_sorted(boots, 25), _percentile_sorted(boots, 75)
        n = min(len(base), len(other))
    return RatioEstimate(
        median=med,
        lo=min(lo, med),
        hi=max(hi, med),
        q1=q1,
        q3=q3,
        n=n,
        paired=paired,
        confidence=confidence,
        base_median_s=bmed,
        base_iqr_s=bq3 - bq1,
        other_median_s=omed,
        other_iqr_s=oq3 - oq1,
    )


# A median over repeats whose p90 is more than this many times their p10 says more about the machine
# (other programs, frequency changes, a first-touch page fault) than about the operation: the stated
# threshold of issue 25 (a matmul row with a 17x spread went unflagged). Hoefler & Belli 2015,
# "Scientific Benchmarking of Parallel Computing Systems" (SC15): nondeterministic measurements are
# reported with their spread, not as one number. The 2x itself is a stated choice, not a fitted one.
SPREAD_LIMIT = 2.0


def spread_warning(
    items: Sequence[tuple[str, float, float]], *, what: str = "row", limit: float = SPREAD_LIMIT
) -> str | None:
    """One warning line naming the items (label, p10, p90) whose p90/p10 exceeds `limit`, else None.

    The rule every benchmark uses (gpukit.bench matmul, membw, collectives, ddp): times or rates
    alike, the ratio is taken as larger over smaller, so a rate's p10/p90 works as well as a time's."""
    if not limit > 1:
        raise ValueError(f"limit must be a ratio above 1, got {limit!r}")
    wide = []
    for label, p10, p90 in items:
        lo, hi = sorted((float(p10), float(p90)))
        if lo > 0 and hi / lo > limit:
            wide.append((label, hi / lo))
    if not wide:
        return None
    shown = ", ".join(f"{label} {r:.1f}x" for label, r in wide[:4]) + (", ..." if len(wide) > 4 else "")
    return (
        f"p90/p10 of the repeats above {limit:g}x in {len(wide)} of {len(items)} {what}s ({shown}): "
        "their medians are untrustworthy; rerun on an idle machine or with more repeats"
    )
