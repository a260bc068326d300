"""The group-sequential rule: hand-computed intervals, the spending function, and its error rates by simulation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from judgecal.errors import StatsError
from judgecal.stats.group_sequential import (
    batch_looks,
    decide,
    look_levels,
    repeated_intervals,
    sequential_decision,
    spending,
)


def test_the_spending_function_spends_alpha_once():
    assert spending(0.0, 0.05) == 0 and spending(1.0, 0.05) == pytest.approx(0.05)
    a = look_levels([10, 20, 50, 100], 100, 0.05)
    assert a.sum() == pytest.approx(0.05) and np.all(a > 0)
    assert a[0] == pytest.approx(0.5 * 0.05 * np.log(1 + (np.e - 1) * 0.1))  # half spent along the way ...
    assert a[-1] == pytest.approx(0.5 * 0.05 * (1 - np.log(1 + (np.e - 1) * 0.5)) + 0.025)  # ... half kept to the end
    assert look_levels([30], 100, 0.05)[0] == pytest.approx(0.025 * np.log(1 + (np.e - 1) * 0.3))  # budget unspent
    assert look_levels([100], 100, 0.05, final=0.0)[0] == pytest.approx(0.05)


def test_one_look_is_a_plain_normal_interval_with_the_pseudo_unit():
    mean, lo, hi = repeated_intervals([1, 1, 0, 0], [4], 4, 0.05)
    half = norm.isf(0.025) * np.sqrt((1.0 + 1.0) / 4) / 2  # sum of squares 1, plus v0 = 1, over n = 4
    assert mean[0] == 0.5 and lo[0] == pytest.approx(0.5 - half) and hi[0] == pytest.approx(0.5 + half)
    # two looks: each at its own share of alpha, the later one the narrower here
    mean, lo, hi = repeated_intervals([1, 0] * 50, [50, 100], 100, 0.05)
    z1 = norm.isf(spending(0.5, 0.05) / 4)  # half of alpha spent along the way
    assert hi[0] - mean[0] == pytest.approx(z1 * np.sqrt((50 * 0.25 + 1) / 50) / np.sqrt(50))
    assert hi[1] - lo[1] < hi[0] - lo[0]


def test_decisions_and_stopping_hand_checked():
    assert decide(0.01, 0.2, 0.05) == "flag" and decide(-0.01, 0.04, 0.05) == "clear"
    assert decide(-0.1, 0.2, 0.05) == "open" and decide(0.01, 0.04, 0.05) == "clear"  # negligible, settled
    assert batch_looks(45, 20).tolist() == [20, 40, 45] and batch_looks(0, 5).size == 0
    # a judge that never moves: all zeros; the half-width is z_k / n_k; clear at the first look where it is < e
    r = sequential_decision(np.zeros(1000), batch=20, n_max=1000, effect=0.05)
    looks = batch_looks(1000, 20)
    z = norm.isf(look_levels(looks, 1000, 0.05) / 2)
    first = int(looks[np.argmax(z / looks < 0.05)])
    assert r["decision"] == "clear" and r["n"] == first and r["ci_high"] == pytest.approx(z[r["looks"] - 1] / first)
    # a judge that always moves toward the perturbed side: flagged at the first look
    r = sequential_decision(np.ones(1000), batch=20, n_max=1000, effect=0.05)
    assert r["decision"] == "flag" and r["n"] == 20 and r["looks"] == 1
    assert sequential_decision([], batch=5)["decision"] == "open"


def _sample(rng: np.random.Generator, mu: float, n: int) -> np.ndarray:
    """Values in {-1, 0, 1} with mean ``mu`` (a paired shift's difference): 1 w.p. 0.15 + mu/2, -1 w.p. 0.15 - mu/2."""
    u = rng.random(n)
    return np.where(u < 0.15 + mu / 2, 1.0, np.where(u < 0.30, -1.0, 0.0))


def test_error_rates_are_held_by_simulation():
    rng = np.random.default_rng(0)
    reps, n, e = 1500, 600, 0.05
    null = [sequential_decision(_sample(rng, 0.0, n), batch=30, n_max=n, effect=e) for _ in range(reps)]
    at_e = [sequential_decision(_sample(rng, e, n), batch=30, n_max=n, effect=e) for _ in range(reps)]
    false_flag = np.mean([r["decision"] == "flag" for r in null])
    false_clear = np.mean([r["decision"] == "clear" for r in at_e])
    assert false_flag <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / reps)  # alpha / 2, with simulation error
    assert false_clear <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / reps)
    # with a budget that lets it settle, a null judge is cleared well before the budget is spent
    long = [sequential_decision(_sample(rng, 0.0, 2000), batch=50, n_max=2000, effect=e) for _ in range(300)]
    assert np.mean([r["decision"] == "clear" for r in long]) > 0.8 and np.mean([r["n"] for r in long]) < 0.75 * 2000
    # every look's interval holds the true mean at once in >= 1 - alpha of runs
    looks = batch_looks(n, 30)
    held = []
    for _ in range(reps):
        _, lo, hi = repeated_intervals(_sample(rng, 0.1, n), looks, n, 0.05)
        held.append(bool(np.all((lo <= 0.1) & (hi >= 0.1))))
    assert np.mean(held) >= 0.95 - 3 * np.sqrt(0.05 * 0.95 / reps)


def test_bad_arguments_are_refused():
    with pytest.raises(StatsError, match="alpha"):
        look_levels([1], 2, 1.5)
    with pytest.raises(StatsError, match="increasing"):
        look_levels([5, 5], 10, 0.05)
    with pytest.raises(StatsError, match="only 3 values"):
        repeated_intervals([0, 1, 0], [4], 4)
    with pytest.raises(StatsError, match="effect of interest"):
        sequential_decision([0, 1], batch=1, effect=0.0)
    with pytest.raises(StatsError, match="batch"):
        batch_looks(10, 0)
