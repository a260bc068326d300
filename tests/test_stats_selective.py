"""Trust or Escalate: fixed-sequence threshold choice with an exact binomial bound, and its guarantee."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from judgecal.stats import selective as sel


def _items(groups: list[tuple[float, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, items, disagreements) per group."""
    conf = np.concatenate([np.full(n, c) for c, n, _ in groups])
    agree = np.concatenate([np.r_[np.zeros(k), np.ones(n - k)] for _, n, k in groups])
    return conf, agree


def test_threshold_hand_computed() -> None:
    conf, agree = _items([(0.9, 20, 0), (0.7, 10, 2), (0.5, 10, 8)])
    r = sel.trust_or_escalate(conf, agree, target=0.8, delta=0.1)
    # 0.9: P(Bin(20, .2) <= 0) = 0.0115; 0.7: P(Bin(30, .2) <= 2) = 0.0442; 0.5: P(Bin(40, .2) <= 10) > 0.1
    assert sps.binom.cdf(0, 20, 0.2) <= 0.1 and sps.binom.cdf(2, 30, 0.2) <= 0.1 < sps.binom.cdf(10, 40, 0.2)
    assert r.threshold == 0.7 and r.n_kept == 30 and r.coverage == pytest.approx(0.75)
    assert r.agreement == pytest.approx(28 / 30) and r.feasible
    from statsmodels.stats.proportion import proportion_confint

    upper = proportion_confint(2, 30, alpha=0.2, method="beta")[1]
    assert r.agreement_lower_bound == pytest.approx(1 - upper)


def test_fixed_sequence_stops_at_the_first_failure() -> None:
    # 0.7 fails (P(Bin(30, .2) <= 4) = 0.255); 0.5 alone would pass, but testing has stopped
    conf, agree = _items([(0.9, 20, 0), (0.7, 10, 4), (0.5, 60, 0)])
    assert sps.binom.cdf(4, 90, 0.2) <= 0.1
    r = sel.trust_or_escalate(conf, agree, target=0.8, delta=0.1)
    assert r.threshold == 0.9 and r.agreement_lower_bound == pytest.approx(0.1 ** (1 / 20))


def test_infeasible_target_escalates_everything() -> None:
    conf, agree = _items([(0.9, 5, 0), (0.6, 5, 1)])
    r = sel.trust_or_escalate(conf, agree, target=0.9, delta=0.05)
    assert not r.feasible and r.threshold == float("inf") and r.coverage == 0.0
    assert sel.escalate(conf, r.threshold).all()


def test_escalate_and_evaluate() -> None:
    mask = sel.escalate([0.95, 0.5, np.nan, 0.8], 0.8)
    assert list(mask) == [False, True, True, False]
    out = sel.evaluate([0.95, 0.5, 0.9, 0.8], [1, 0, 0, 1], 0.8)
    assert out == {"n": 4, "n_kept": 3, "coverage": 0.75, "agreement": pytest.approx(2 / 3)}
    with pytest.raises(ValueError, match="target and delta must lie in"):
        sel.trust_or_escalate([0.5], [1], target=1.0)


def test_clopper_pearson_matches_statsmodels() -> None:
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((0, 10), (3, 10), (17, 200), (10, 10)):
        assert sel.clopper_pearson_upper(k, n, 0.05) == pytest.approx(
            proportion_confint(k, n, alpha=0.1, method="beta")[1])


def test_guarantee_holds_over_seeds() -> None:
    """An overconfident judge: P(agree | c) = c^1.5 with c ~ U(1/3, 1), so the true agreement on the
    items kept at threshold t is (1 - t^2.5) / (2.5 (1 - t)). Target 0.8 with delta 0.1."""
    target, delta, seeds = 0.8, 0.1, 200
    ok, coverage = 0, []
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        c = rng.uniform(1 / 3, 1, 300)
        agree = (rng.random(300) < c**1.5).astype(float)
        r = sel.trust_or_escalate(c, agree, target=target, delta=delta)
        t = r.threshold
        true = 1.0 if not np.isfinite(t) else (1 - t**2.5) / (2.5 * (1 - t)) if t < 1 else 1.0
        ok += true >= target
        coverage.append(r.coverage)
    assert ok / seeds >= 1 - delta
    assert np.mean(coverage) > 0.1  # not vacuous: it keeps a real share of items (0.42 at the true threshold)
