"""Active statistical inference (judgecal.stats.active): hand-computed cases, the classical mean at pi = 1,
unbiasedness and 95% coverage by simulation, and the planner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from judgecal.stats.active import (
    active_lambda,
    active_mean,
    active_pairwise_win_rates,
    active_pass_rate,
    draw,
    inclusion_probabilities,
    plan_active,
)


def test_inclusion_probabilities_by_hand() -> None:
    pi = inclusion_probabilities([1.0, 3.0], 1, tau=0.5)
    assert pi == pytest.approx([0.5 * 0.25 + 0.25, 0.5 * 0.75 + 0.25])
    assert inclusion_probabilities([0.0, 0.0, 0.0, 0.0], 2) == pytest.approx([0.5] * 4)
    assert inclusion_probabilities([10.0, 0.0], 2, tau=1.0) == pytest.approx([1.0, 0.0])  # capped at 1
    with pytest.raises(ValueError, match="non-negative"):
        inclusion_probabilities([-1.0, 1.0], 1)


def test_small_case_by_hand() -> None:
    y = [1.0, math.nan, 0.0, 1.0]
    f = [1.0, 0.0, 1.0, 0.0]
    pi = [0.5, 0.5, 1.0, 0.25]
    xi = [True, False, True, True]
    # w = (1 - pi) / pi = [1, 1, 0, 3]; sum f^2 w = 1; sum xi y f w / pi = 1 * 1 * 1 / 0.5 = 2 -> clipped to 1
    assert active_lambda(np.array(y), np.array(f), np.array(pi), np.array(xi)) == 1.0
    r = active_mean(y, f, pi, xi)  # lambda = 1 by default
    # terms: 1 + 0/0.5, 0, 1 + (0 - 1)/1, 0 + 1/0.25 -> 1, 0, 0, 4
    assert r.estimate == pytest.approx(5 / 4)
    # HT variance: resid^2 (1 - pi) / pi^2 -> 0, 0, 0, 1 * 0.75 / 0.0625 = 12; / N^2 = 16
    assert r.se == pytest.approx(math.sqrt(12 / 16))
    assert (r.n_items, r.n_labelled, r.expected_labels) == (4, 3, pytest.approx(2.25))
    r0 = active_mean(y, f, pi, xi, lam=0.0)  # Horvitz-Thompson of the human labels alone
    assert r0.estimate == pytest.approx((1 / 0.5 + 0 / 1 + 1 / 0.25) / 4)
    # cross-fitted tuning: the even items (0, 2) use the odd items' lambda and the odd ones the even items'.
    # odd: f = 0 on both -> lambda 0; even: as above, 2 clipped to 1. Terms: 0 + 1/0.5, 1 * 0, 0 + 0/1, 0 + 1/0.25
    rt = active_mean(y, f, pi, xi, lam=None)
    assert rt.estimate == pytest.approx((2 + 0 + 0 + 4) / 4) and rt.lam == pytest.approx(0.5)


def test_pi_one_is_the_classical_mean() -> None:
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 50).astype(float)
    f = rng.random(50)
    r = active_mean(y, f, np.ones(50), np.ones(50, dtype=bool))
    assert r.estimate == pytest.approx(y.mean())
    assert r.se == 0.0
    assert active_mean(y, f, np.ones(50), np.ones(50, dtype=bool), lam=None).estimate == pytest.approx(y.mean())
    rp = active_pass_rate(y, f, np.ones(50), target="population")
    assert rp.estimate == pytest.approx(y.mean())
    assert rp.se == pytest.approx(np.std(y, ddof=1) / math.sqrt(50))


def _world(seed: int, n: int = 2000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A judge with a calibrated pass probability p: Y ~ Bernoulli(p); its uncertainty sqrt(p (1 - p))."""
    rng = np.random.default_rng(seed)
    p = np.clip(rng.beta(0.6, 0.6, n), 0.01, 0.99)
    y = (rng.random(n) < p).astype(float)
    return p, y, np.sqrt(p * (1 - p))


def test_unbiased_and_covers_95_percent() -> None:
    p, y, u = _world(0)
    pi = inclusion_probabilities(u, 300)
    rng = np.random.default_rng(1)
    truth = y.mean()
    est, hits = [], 0
    for _ in range(1000):
        xi = draw(pi, rng)
        r = active_mean(np.where(xi, y, np.nan), p, pi, xi)
        est.append(r.estimate)
        hits += r.ci_low <= truth <= r.ci_high
    est_a = np.asarray(est)
    assert abs(est_a.mean() - truth) < 3 * est_a.std() / math.sqrt(len(est_a))  # unbiased within MC error
    assert hits / 1000 >= 0.94
    # the judge's probabilities as f make the active interval narrower than the labels alone (lam = 0)
    xi = draw(pi, 5)
    assert active_mean(y, p, pi, xi).se < active_mean(y, p, pi, xi, lam=0.0).se


def test_tuned_lambda_is_unbiased() -> None:
    p, y, u = _world(0)
    pi = inclusion_probabilities(u, 300)
    rng = np.random.default_rng(2)
    est = np.array([active_mean(np.where(xi, y, np.nan), p, pi, xi, lam=None).estimate
                    for xi in (draw(pi, rng) for _ in range(1000))])
    assert abs(est.mean() - y.mean()) < 3 * est.std() / math.sqrt(len(est))


def test_population_target_covers_the_population_mean() -> None:
    hits = 0
    for s in range(1000):
        p, y, u = _world(100 + s, n=1500)
        pi = inclusion_probabilities(u, 300)
        xi = draw(pi, s)
        r = active_mean(np.where(xi, y, np.nan), p, pi, xi, target="population")
        hits += r.ci_low <= 0.5 <= r.ci_high  # Beta(0.6, 0.6) is symmetric: E[Y] = 0.5
    assert hits / 1000 >= 0.94


def test_pairwise_win_rates_at_pi_one_and_missing_labels() -> None:
    a = ["m1", "m1", "m2", "m1"]
    b = ["m2", "m2", "m1", "m2"]
    human = ["A", "tie", "A", "B"]
    judge = ["A", "A", "B", "garbage"]
    out = active_pairwise_win_rates(a, b, human, judge, np.ones(4))
    # m1's scores: 1, 0.5, 0 (m2 won as A), 0 -> 1.5 / 4
    assert out.loc[("m1", "m2"), "estimate"] == pytest.approx(1.5 / 4)
    half = active_pairwise_win_rates(a, b, ["A", None, "A", None], judge, [1.0, 0.5, 1.0, 0.5])
    assert half.loc[("m1", "m2"), "n_labelled"] == 2
    with pytest.raises(ValueError, match="no human label"):
        active_mean([1.0, math.nan], [1.0, 1.0], [1.0, 1.0], [True, True])


def test_plan_active_saves_where_the_judge_is_sure_of_most_items() -> None:
    rng = np.random.default_rng(0)
    e = np.where(rng.random(5000) < 0.2, 0.25, 0.01)  # unsure on a fifth of the items
    plan = plan_active(e, 0.03)
    assert plan["expected_labels_active"] < plan["n_uniform"] <= 5000
    assert plan["saving"] > 0.2
    const = plan_active(np.full(5000, 0.1), 0.03)  # the same uncertainty everywhere: nothing to gain
    assert const["n_active"] == const["n_uniform"]
    # the uniform budget meets the variance: (1/N^2) sum e (N/n - 1) <= (h/z)^2, and one less does not
    n = const["n_uniform"]
    v = (0.03 / 1.959963984540054) ** 2
    assert 0.1 * (5000 / n - 1) / 5000 <= v < 0.1 * (5000 / (n - 1) - 1) / 5000
