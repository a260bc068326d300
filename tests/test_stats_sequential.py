"""The anytime-valid drift statistics (judgecal.stats.sequential): hand-computed values, and a simulation
over 200 seeds — a judge that does not drift raises an alarm at most alpha of the time over 52 looks, and a
drop of the effect of interest, early or late, is found within two periods."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import betaln
from scipy.stats import binomtest

from judgecal.stats.sequential import betabinomial_confseq, clopper_pearson, drift_sequence, window_levels

STEP = 1e-12  # the bisection's ends are exact to 2^-50


def test_betabinomial_sequence_matches_hand_computed_mixtures():
    # t = 1, S = 1: M(p) = B(3/2, 1/2) / B(1/2, 1/2) / p = (pi/2) / pi / p = 1 / (2p) < 1/alpha  <=>  p > alpha/2
    # t = 1, S = 0: symmetric, p < 1 - alpha/2
    # t = 2, S = 1: B(3/2, 3/2) / B(1/2, 1/2) = (pi/8) / pi = 1/8, M(p) = 1 / (8 p (1 - p)) < 20
    #              <=>  p (1 - p) > 1/160  <=>  |p - 1/2| < sqrt(1 - 4/160) / 2
    lo, hi = betabinomial_confseq([1, 0, 1], [1, 1, 2], alpha=0.05)
    half = math.sqrt(1 - 4 / 160) / 2
    want_lo, want_hi = [0.025, 0.0, 0.5 - half], [1.0, 0.975, 0.5 + half]
    for got, want in ((lo, want_lo), (hi, want_hi)):
        assert np.all(np.abs(got - want) <= 2 * STEP), (got, want)
    assert np.all(lo <= want_lo) and np.all(hi >= want_hi)  # rounded outwards, never inwards
    assert betabinomial_confseq([0], [0])[0][0] == 0.0 and betabinomial_confseq([0], [0])[1][0] == 1.0


def test_clopper_pearson_is_the_exact_binomial_interval():
    assert clopper_pearson(10, 10, 0.05) == pytest.approx((0.025 ** (1 / 10), 1.0))  # (alpha/2)^(1/n)
    assert clopper_pearson(0, 10, 0.05) == pytest.approx((0.0, 1 - 0.025 ** (1 / 10)))
    ci = binomtest(13, 40).proportion_ci(0.9, method="exact")
    assert clopper_pearson(13, 40, 0.1) == pytest.approx((ci.low, ci.high))


def test_drift_sequence_reads_its_parts_and_refuses_bad_input():
    base = np.r_[np.ones(18), np.zeros(2)]
    after = np.r_[np.ones(5), np.zeros(15)]
    d = drift_sequence(base, after, [0, 5, 20], alpha=0.1, effect=0.05)
    low0, up0 = clopper_pearson(18, 20, 0.05)
    assert window_levels(3, 0.1) == pytest.approx([0.05 / 2, 0.05 / 6, 0.05 / 12])
    assert d["baseline_mean"] == 0.9 and (d["baseline_lower"], d["baseline_upper"]) == pytest.approx((low0, up0))
    assert np.isnan(d["running"][0]) and d["running"][1:] == pytest.approx([1.0, 0.25])
    # look 1: the windows from look 0 and look 1 both hold the 5 ones (the earlier wins the tie); look 2: the
    # window from look 2 holds the 15 zeros, the most evidence of a drop
    assert d["start"][1:].tolist() == [0, 2] and d["window_n"][1:].tolist() == [5, 15]
    assert d["mean"][1:] == pytest.approx([1.0, 0.0])
    # S = 0, t = 15: M(p) = B(1/2, 31/2) / B(1/2, 1/2) / (1 - p)^15 < 12/0.05  <=>  p < 1 - (a B / pi)^(1/15)
    hi = 1 - (0.05 / 12 * math.exp(betaln(0.5, 15.5)) / math.pi) ** (1 / 15)
    assert d["upper"][2] == pytest.approx(hi, abs=1e-9) and d["upper"][2] >= hi
    assert d["drop_lower"][2] == pytest.approx(low0 - hi, abs=1e-9) and d["drop_upper"][2] == pytest.approx(up0)
    assert d["drift"].tolist() == [False, False, True] and d["first"] == 2  # 0.9 -> 0: found at the 20th
    for bad in (dict(baseline=[], after=[1], looks=[1]), dict(baseline=[1], after=[0.5], looks=[1]),
                dict(baseline=[1], after=[1], looks=[2]), dict(baseline=[1], after=[1, 1], looks=[2, 1])):
        with pytest.raises(ValueError):
            drift_sequence(**bad)  # type: ignore[arg-type]


def _stream(rng: np.random.Generator, rates: list[float], per_look: int) -> np.ndarray:
    return np.concatenate([rng.random(per_look) < p for p in rates]).astype(float)


def test_no_drift_keeps_its_false_alarms_at_alpha_over_52_looks():
    alpha, seeds, looks = 0.05, 200, 52
    alarms = {0.0: 0, 0.05: 0}
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        rate = rng.uniform(0.55, 0.95)  # any agreement, held over every period
        base = (rng.random(60) < rate).astype(float)
        after = _stream(rng, [rate] * looks, 25)
        for effect in alarms:
            alarms[effect] += drift_sequence(base, after, np.arange(1, looks + 1) * 25, alpha=alpha,
                                             effect=effect)["first"] is not None
    assert alarms[0.05] <= alarms[0.0] <= alpha * seeds, alarms


@pytest.mark.parametrize("start", [4, 26])
def test_a_drop_of_the_effect_of_interest_is_found_within_two_periods(start):
    """A judge at 0.85 that drops by the effect of interest (0.10) from period ``start`` of 52 is declared
    drifted at that period or the next in >= 80% of 200 seeds (600 labels a period, a 2,000-item baseline:
    benchmarks/bench_monitor.py measures other budgets), and seldom (<= 5%) before it."""
    seeds, found, early = 200, 0, 0
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        base = (rng.random(2000) < 0.85).astype(float)
        after = _stream(rng, [0.85] * start + [0.75] * (52 - start), 600)
        first = drift_sequence(base, after, np.arange(1, 53) * 600, effect=0.10)["first"]
        found += first is not None and start <= first <= start + 1
        early += first is not None and first < start  # an alarm before the drop would be a false one
    assert found >= 0.8 * seeds and early <= 0.05 * seeds, (found, early)
