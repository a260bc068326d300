"""PPI++ for means and win rates, against ppi-python, hand-computed values, simulation and PandaLM."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pandalm_raw import load
from scipy import special

from judgecal.stats import ppi

Z95 = float(special.ndtri(0.975))


def _data(seed: int, n: int = 80, big_n: int = 800, noise: float = 0.3) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    y_all = (rng.random(n + big_n) < 0.6).astype(float)
    flip = rng.random(n + big_n) < noise
    yhat_all = np.where(flip, 1 - y_all, y_all)
    return y_all[:n], yhat_all[:n], yhat_all[n:], y_all


def test_ppi_mean_hand_computed_with_lambda_one() -> None:
    y, yhat, yu = np.array([1.0, 0, 1, 1]), np.array([1.0, 0, 0, 1]), np.array([1.0, 1, 0, 0, 1])
    r = ppi.ppi_mean(y, yhat, yu, lam=1.0)
    # theta = mean(yu) + mean(y - yhat) = 0.6 + 0.25
    assert r.estimate == pytest.approx(0.85)
    # se^2 = var(yu)/5 + var(y - yhat)/4 with divisor n: 0.24/5 + 0.1875/4
    se = math.sqrt(0.24 / 5 + 0.1875 / 4)
    assert (r.ci_low, r.ci_high) == pytest.approx((0.85 - Z95 * se, 0.85 + Z95 * se))
    assert r.classical_estimate == 0.75
    assert r.width_ratio == pytest.approx(se / math.sqrt(0.1875 / 4))


def test_lambda_zero_is_the_classical_interval() -> None:
    y, yhat, yu, _ = _data(1)
    r = ppi.ppi_mean(y, yhat, yu, lam=0.0)
    assert (r.estimate, r.ci_low, r.ci_high) == pytest.approx((r.classical_estimate, r.classical_ci_low,
                                                               r.classical_ci_high))
    assert r.width_ratio == pytest.approx(1.0)


def test_matches_ppi_python() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    for seed in range(5):
        y, yhat, yu, _ = _data(seed, noise=0.1 + 0.1 * seed)
        r = ppi.ppi_mean(y, yhat, yu, level=0.9)
        lo, hi = ppi_py.ppi_mean_ci(y, yhat, yu, alpha=0.1)
        assert (r.ci_low, r.ci_high) == pytest.approx((float(np.ravel(lo)[0]), float(np.ravel(hi)[0])))
        assert r.estimate == pytest.approx(float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, yu))[0]))
        clo, chi = ppi_py.classical_mean_ci(y, alpha=0.1)
        assert (r.classical_ci_low, r.classical_ci_high) == pytest.approx((float(clo), float(chi)))


def test_coverage_over_seeds_is_nominal_and_intervals_are_narrower() -> None:
    hits, ratios = 0, []
    for seed in range(400):
        y, yhat, yu, _ = _data(seed, n=100, big_n=2000, noise=0.15)
        r = ppi.ppi_mean(y, yhat, yu)
        hits += r.ci_low <= 0.6 <= r.ci_high
        ratios.append(r.width_ratio)
    assert 0.92 <= hits / 400 <= 0.98
    # judge right 85% of the time on a 60/40 outcome: rho = 0.7, so the width ratio is about sqrt(1 - rho^2 N/(n+N))
    rho2 = 0.7**2
    assert np.median(ratios) == pytest.approx(math.sqrt(1 - rho2 * 2000 / 2100), abs=0.05)


def test_degenerate_inputs() -> None:
    r = ppi.ppi_mean([1.0], [1.0], [0.0, 1.0])
    assert math.isnan(r.estimate) and r.n_labelled == 1
    const = ppi.ppi_mean([1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0])
    assert const.lam == 0.0 and const.estimate == pytest.approx(2 / 3)
    no_unlabelled = ppi.ppi_mean([1.0, 0.0, 1.0], [1.0, 0.0, 0.0], [])
    assert no_unlabelled.lam == 0.0 and no_unlabelled.width_ratio == pytest.approx(1.0)
    empty = ppi.ppi_win_rates([], [], [], [])
    assert empty.empty and "width_ratio" in empty.columns
    with pytest.raises(ValueError, match="y has 2 entries but yhat has 1"):
        ppi.ppi_mean([1.0, 0.0], [1.0], [1.0])


def test_stratified_ppi_combines_the_strata() -> None:
    y, yhat, yu, _ = _data(7, n=120, big_n=600)
    one = ppi.ppi_mean_stratified(y, yhat, yu, ["s"] * len(y), ["s"] * len(yu))
    plain = ppi.ppi_mean(y, yhat, yu)
    assert (one.estimate, one.ci_low, one.ci_high) == pytest.approx((plain.estimate, plain.ci_low, plain.ci_high))
    sl = np.where(np.arange(len(y)) % 3 == 0, "a", "b")
    su = np.where(np.arange(len(yu)) % 2 == 0, "a", "b")
    two = ppi.ppi_mean_stratified(y, yhat, yu, sl, su)
    ra = ppi.ppi_mean(y[sl == "a"], yhat[sl == "a"], yu[su == "a"])
    rb = ppi.ppi_mean(y[sl == "b"], yhat[sl == "b"], yu[su == "b"])
    wa = ((sl == "a").sum() + (su == "a").sum()) / (len(y) + len(yu))
    assert two.estimate == pytest.approx(wa * ra.estimate + (1 - wa) * rb.estimate)
    se = math.sqrt((wa * (ra.ci_high - ra.estimate)) ** 2 + ((1 - wa) * (rb.ci_high - rb.estimate)) ** 2)
    assert two.ci_high - two.estimate == pytest.approx(se)


def test_planner_hand_computed() -> None:
    out = ppi.plan_labels(0.03, 0.25, 0.8)
    # (1.959964 * 0.5 / 0.03)^2 = 1067.07 -> 1068; times 1 - 0.64 = 384.15 -> 385
    assert out["n_human_only"] == 1068 and out["n_ppi"] == 385
    assert out["exceeds_ceiling"] and out["n_ppi_if_judge_not_better"] == 534
    assert "Dorner" in out["ceiling_note"] and "half" in out["ceiling_note"]
    weak = ppi.plan_labels(0.03, 0.25, 0.5)
    assert not weak["exceeds_ceiling"] and weak["n_ppi_if_judge_not_better"] == weak["n_ppi"]
    assert ppi.plan_labels(0.03, 0.25, -0.4)["n_ppi"] == 1068
    finite = ppi.plan_labels(0.03, 0.25, 0.8, n_unlabelled=2000)
    n = finite["n_ppi"]
    var = lambda k: 0.25 / k * (1 - 0.64 * 2000 / (k + 2000))  # noqa: E731
    assert Z95 * math.sqrt(var(n)) <= 0.03 < Z95 * math.sqrt(var(n - 1))
    with pytest.raises(ValueError, match="target_halfwidth must be positive"):
        ppi.plan_labels(0.0, 0.25, 0.5)
    for tiny in (1e-160, 1e-170):  # the count overflowed, and the variance squared to zero
        with pytest.raises(ValueError, match="too small to count"):
            ppi.plan_labels(tiny, 0.25, 0.5)


def test_planner_from_data_delivers_the_half_width() -> None:
    y, yhat, _, _ = _data(3, n=400, big_n=0, noise=0.15)
    plan = ppi.plan_from_data(y, yhat, 0.04)
    widths = []
    for seed in range(60):
        rng = np.random.default_rng(100 + seed)
        y_all = (rng.random(plan["n_ppi"] + 20000) < 0.6).astype(float)
        yhat_all = np.where(rng.random(len(y_all)) < 0.15, 1 - y_all, y_all)
        n = plan["n_ppi"]
        r = ppi.ppi_mean(y_all[:n], yhat_all[:n], yhat_all[n:])
        widths.append((r.ci_high - r.ci_low) / 2)
    assert np.mean(widths) == pytest.approx(0.04, abs=0.004)


def test_win_rates_with_a_perfect_judge_shrink_to_the_judges_answer() -> None:
    rng = np.random.default_rng(4)
    n = 600
    a = rng.choice(["m1", "m2", "m3"], n)
    b = np.where(a == "m1", "m2", np.where(a == "m2", "m3", "m1"))
    truth = rng.choice(["A", "B", "tie"], n, p=[0.5, 0.4, 0.1])
    human = np.where(np.arange(n) < 100, truth, None)
    out = ppi.ppi_win_rates(a, b, human, truth)
    from judgecal.stats.winrate import outcome_scores as wr_scores
    from judgecal.stats.winrate import win_rates

    full = win_rates(a, b, truth, n_boot=10)
    # lambda* = var(Y) / ((1 + n/N) var(Yhat pooled)), about N / (n + N): close to the all-items mean
    assert out["estimate"].to_numpy() == pytest.approx(full.loc[out.index, "estimate"].to_numpy(), abs=2e-3)
    for m in out.index:
        sel = (a == m) | (b == m)
        lab = sel & (np.arange(n) < 100)
        y = np.where(a == m, wr_scores(truth), 1 - wr_scores(truth))
        expect = np.var(y[lab]) / ((1 + lab.sum() / (sel & ~lab).sum()) * np.var(y[sel], ddof=1))
        assert out.loc[m, "lam"] == pytest.approx(expect)
    assert (out["width_ratio"] < 0.6).all()
    pair = ppi.ppi_pairwise_win_rates(a, b, human, truth)
    assert list(pair.index.names) == ["model_1", "model_2"] and len(pair) == 3


def test_pandalm_ppi_with_100_human_labels(mirror) -> None:  # type: ignore[no-untyped-def]
    d = load(mirror)
    rng = np.random.default_rng(0)
    labelled = np.zeros(len(d.humans), dtype=bool)
    labelled[rng.choice(len(d.humans), 100, replace=False)] = True
    human = np.where(labelled, d.humans, None)
    out = ppi.ppi_win_rates(d.model_a, d.model_b, human, d.gpt35)
    assert (out["n_labelled"] + out["n_unlabelled"]).sum() == 2 * len(d.humans)
    assert out["n_labelled"].sum() == 200
    # GPT-3.5 agrees with the humans on 71% of the items: every model's interval narrows
    assert (out["width_ratio"] < 1).all() and (out["lam"] > 0).all()
    strat = ppi.ppi_win_rates(d.model_a, d.model_b, human, d.gpt35, category=np.where(
        np.isin(d.category, ["Grammarly", "Gmail"]), "writing", "other"))
    assert strat["estimate"].notna().all()
    print("\nPandaLM, 100 human labels + GPT-3.5 on the rest:\n",
          out[["estimate", "ci_low", "ci_high", "classical_ci_low", "classical_ci_high", "lam", "n_labelled",
               "width_ratio"]].round(3), f"\nmean width ratio {out['width_ratio'].mean():.3f}")


def test_ppi_win_rate_intervals_cover_over_seeds() -> None:
    """A judge that replaces 25% of the human verdicts with a random label; 100 of 600 items labelled.
    The normal-approximation interval covers about 94% here (2,000 seeds: 0.941, the human-only Wald
    interval 0.945); 400 seeds put the share within 0.91-0.98 unless the interval is off."""
    hits = 0
    for seed in range(400):
        rng = np.random.default_rng(seed)
        lab = rng.choice(["A", "B", "tie"], 600, p=[0.55, 0.35, 0.1])
        judge = np.where(rng.random(600) < 0.25, rng.choice(["A", "B", "tie"], 600), lab)
        human = np.where(np.arange(600) < 100, lab, None)
        out = ppi.ppi_win_rates(["m1"] * 600, ["m2"] * 600, human, judge)
        hits += out.loc["m1", "ci_low"] <= 0.6 <= out.loc["m1", "ci_high"]
    assert 0.91 <= hits / 400 <= 0.98


def test_a_constant_judge_has_an_undefined_correlation_planned_as_zero():
    """A judge whose outcome never varies (every verdict a tie) was printed as "judge-human correlation
    0.000", a measured figure; the correlation is 0/0 and only planned as 0."""
    from judgecal.audit.plan import format_plan

    y = np.array([1.0, 0.0, 1.0, 0.5, 0.0, 1.0])
    flat = ppi.plan_from_data(y, np.full(6, 0.5), 0.03)
    assert flat["rho"] == 0.0 and flat["rho_defined"] is False
    assert flat["n_ppi"] == flat["n_human_only"]  # it buys nothing
    line = format_plan({"judges": {"j": {**flat, "n_unlabelled": None}}})[0]
    assert "judge-human correlation undefined (one side constant), planned as 0 on 6 items" in line
    real = ppi.plan_from_data(y, y[::-1], 0.03)
    assert real["rho_defined"] is True and f"correlation {real['rho']:.3f} on 6" in format_plan(
        {"judges": {"j": {**real, "n_unlabelled": None}}})[0]
