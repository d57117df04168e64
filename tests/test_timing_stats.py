"""gpukit.timing_stats: quartiles, the bootstrap interval and the ratio verdicts (notebook 02)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukit import timing_stats as ts


def test_quartiles_match_numpy_linear():
    np = pytest.importorskip("numpy")
    xs = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6, 5.3]
    assert ts.quartiles(xs) == pytest.approx(tuple(np.percentile(xs, [25, 50, 75])))
    assert ts.iqr(xs) == pytest.approx(np.percentile(xs, 75) - np.percentile(xs, 25))
    assert ts.quartiles([2.0]) == (2.0, 2.0, 2.0)


def test_clear_slowdown_is_a_verdict():
    base = [1.00, 1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.00, 1.01]
    other = [1.33 * b for b in base]
    r = ts.ratio_estimate(base, other)
    assert r.median == pytest.approx(1.33) and r.lo == pytest.approx(1.33) and r.hi == pytest.approx(1.33)
    assert r.verdict == "slower" and r.measurable and "x1.33" in r.to_text()
    assert ts.ratio_estimate(other, base).verdict == "faster"


def test_shared_load_cancels_when_paired():
    # A neighbour doubles both times in some rounds: paired ratios stay at 1.2, unpaired ones do not.
    load = [1, 2, 1, 2.4, 1, 1.8, 1, 2, 1.1, 2.2]
    base = [1.0 * x for x in load]
    other = [1.2 * x for x in load]
    paired = ts.ratio_estimate(base, other)
    assert paired.median == pytest.approx(1.2) and paired.verdict == "slower"
    unpaired = ts.ratio_estimate(base, other, paired=False)
    assert unpaired.hi - unpaired.lo > paired.hi - paired.lo


def test_noise_larger_than_the_effect_says_no_difference():
    # The notebook-02 situation: the same step measured 1.0-2.4 s; ratios x0.79 and x1.50 among the repeats.
    base = [1.0, 2.4, 1.1, 1.9, 1.3, 2.2]
    other = [1.5, 1.9, 1.2, 2.4, 1.0, 2.0]
    r = ts.ratio_estimate(base, other)
    assert r.straddles_one and r.verdict == ts.NO_DIFFERENCE
    assert "interval contains x1.00" in r.to_text()


def test_spread_above_the_median_is_too_noisy_even_if_the_interval_misses_one():
    base = [0.1, 0.1, 5.0, 5.0, 0.1, 5.0]
    other = [2 * b for b in base]
    r = ts.ratio_estimate(base, other)
    assert not r.straddles_one and r.too_noisy and r.verdict == ts.NO_DIFFERENCE
    assert "disagree by more than their median" in r.to_text()


def test_same_samples_same_interval():
    a, b = [1, 1.1, 0.9, 1.05, 1.2], [1.2, 1.3, 1.0, 1.4, 1.25]
    assert ts.ratio_estimate(a, b) == ts.ratio_estimate(a, b)
    assert ts.ratio_estimate(a, b, seed=1).median == ts.ratio_estimate(a, b).median


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(base_s=[], other_s=[1.0]), "base_s"),
        (dict(base_s=[1.0], other_s=[0.0]), "other_s"),
        (dict(base_s=[1.0, 2.0], other_s=[1.0]), "paired"),
        (dict(base_s=[1.0], other_s=[1.0], confidence=1.5), "confidence"),
        (dict(base_s=[1.0], other_s=[1.0], paired=False, confidence=0), "confidence"),
        (dict(base_s=["a"], other_s=[1.0]), "base_s"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ts.ratio_estimate(**kwargs)


def test_bootstrap_bad_input():
    with pytest.raises(ValueError, match="n_boot"):
        ts.bootstrap_interval([1.0, 2.0], n_boot=3)
    with pytest.raises(ValueError, match="empty"):
        ts.bootstrap_interval([])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 10), min_size=2, max_size=15), st.floats(0.2, 5))
def test_interval_brackets_the_median_and_scales(base, factor):
    other = [factor * b for b in base]
    r = ts.ratio_estimate(base, other, n_boot=200)
    assert r.lo <= r.median <= r.hi
    assert r.median == pytest.approx(factor)
    lo, hi = ts.bootstrap_interval(base, n_boot=200)
    assert min(base) <= lo <= hi <= max(base)


def test_percentile_matches_numpy():
    """timing_stats.percentile (the calculators' percentile, no numpy) interpolates as numpy does."""
    import numpy as np

    from gpukit.timing_stats import percentile

    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 100):
        xs = list(rng.random(n))
        for q in (0, 10, 50, 99, 100):
            assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    with pytest.raises(ValueError, match="empty"):
        percentile([], 50)
