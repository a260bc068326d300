"""Validation of the model-level and decision statistics on simulations with known answers.

- **Win rates and PPI++.** Four models with Bradley–Terry strengths ``s = (0, 0.4, 0.8, 1.2)``; each item
  pits a uniformly drawn pair; the humans prefer model ``i`` over ``j`` with probability
  ``0.9 sigma(s_i - s_j)`` and call a tie with probability 0.1, so model ``m``'s true win rate is the mean over
  its three opponents of ``0.9 sigma(s_m - s_j) + 0.05``. A random 300 of 2,000 items carry the human label;
  the judge copies it with probability 0.7, else answers A, B or tie at random. The item-bootstrap CI of
  the human-only win rate (:func:`judgecal.stats.winrate.win_rates`) and the PPI++ CI
  (:func:`judgecal.stats.ppi.ppi_win_rates`) must each cover the truth 93-97% of the time over 200 seeds
  (slow mode); fast mode runs 40 seeds and asks for at least 88%.
- **Trust or Escalate.** Confidence ``c ~ U(0.5, 1)`` and the judge agrees with the humans with probability
  ``c``, so agreement above a threshold ``l`` is exactly ``(1 + l) / 2``. On 500 calibration items per seed
  with target 0.9 and delta 0.1, the chosen threshold must give true agreement >= 0.9 (or escalate
  everything) in at least ``1 - delta`` of 200 seeds.
- **Alternative annotator test, by hand.** Six items, three annotators and a judge (``ALT_EXAMPLE``). The
  differences ``d = W_h - W_f`` per annotator are (0, 1, 0, -1, 0, 0), (0, 1, 0, 0, 0, 0), (0, 1, -1, 0, -1, 0);
  with ``epsilon = 0.5``: ``t_1 = -0.5 sqrt(15) = -1.9365``, ``t_2 = (1/6 - 1/2) / (1/6) = -2``,
  ``t_3 = -(2/3) sqrt(180/17) = -2.1693``, p from Student's t with 5 degrees of freedom (0.0553, 0.0510,
  0.0412). Benjamini–Yekutieli at q = 0.2 (``c(3) = 11/6``, thresholds ``0.2 k / 5.5``: 0.036, 0.073,
  0.109) rejects all three although the smallest p misses its own threshold: winning rate 1, passed;
  the judge's advantage probability is 5/6 for every annotator.
- **Calibration.** ``c ~ U(0.5, 1)`` with agreement probability ``c^2`` (overconfident): the ECE is
  ``E[c - c^2] = 1/6`` and its CI must cover it; after cross-fitted isotonic recalibration the ECE must fall
  below 0.05 and the calibrated confidences lie within 0.05 of ``c^2`` on average.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats as sps

from judgecal.stats import alt_test, calibration, ppi, selective, winrate

STRENGTHS = np.array([0.0, 0.4, 0.8, 1.2])
MODELS = [f"model-{k}" for k in range(len(STRENGTHS))]
ALT_EXAMPLE = {  # item -> (annotator 1, 2, 3, judge)
    "i1": ("A", "A", "A", "A"), "i2": ("A", "A", "A", "B"), "i3": ("B", "B", "A", "B"),
    "i4": ("A", "B", "B", "B"), "i5": ("A", "A", "B", "A"), "i6": ("B", "B", "B", "B"),
}


def true_win_rates() -> np.ndarray:
    d = STRENGTHS[:, None] - STRENGTHS[None, :]
    p = 0.9 / (1 + np.exp(-d)) + 0.05
    np.fill_diagonal(p, np.nan)
    return np.nanmean(p, axis=1)


def simulate_models(seed: int, n_items: int = 2000, n_labelled: int = 300, judge_accuracy: float = 0.7
                    ) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    m = len(STRENGTHS)
    a = rng.integers(0, m, n_items)
    b = (a + rng.integers(1, m, n_items)) % m
    p_a = 1 / (1 + np.exp(-(STRENGTHS[a] - STRENGTHS[b])))
    u = rng.random(n_items)
    human = np.where(u < 0.1, "tie", np.where(rng.random(n_items) < p_a, "A", "B")).astype(object)
    judge = np.where(rng.random(n_items) < judge_accuracy, human,
                     np.array(["A", "B", "tie"], dtype=object)[rng.integers(0, 3, n_items)]).astype(object)
    labelled = np.zeros(n_items, dtype=bool)
    labelled[rng.choice(n_items, n_labelled, replace=False)] = True
    names = np.array(MODELS, dtype=object)
    return {"a": names[a], "b": names[b], "human": human, "judge": judge, "labelled": labelled}


def model_coverage(seeds: int, n_boot: int) -> dict[str, Any]:
    """Coverage of the human-only win-rate CI and the PPI++ CI over ``seeds`` simulations."""
    truth = dict(zip(MODELS, true_win_rates(), strict=True))
    hits: dict[str, list[bool]] = {"win_rate": [], "ppi_win_rate": []}
    ratios = []
    for s in range(seeds):
        sim = simulate_models(10_000 + s)
        lab = sim["labelled"]
        wr = winrate.win_rates(sim["a"][lab], sim["b"][lab], sim["human"][lab], n_boot=n_boot, seed=s)
        masked = sim["human"].copy()
        masked[~lab] = None
        pp = ppi.ppi_win_rates(sim["a"], sim["b"], masked, sim["judge"])
        for model, t in truth.items():
            hits["win_rate"].append(bool(wr.loc[model, "ci_low"] <= t <= wr.loc[model, "ci_high"]))
            hits["ppi_win_rate"].append(bool(pp.loc[model, "ci_low"] <= t <= pp.loc[model, "ci_high"]))
        ratios.append(float(pp["width_ratio"].mean()))
    return {k: float(np.mean(v)) for k, v in hits.items()} | {"mean_width_ratio": float(np.mean(ratios)),
                                                               "n_intervals": len(hits["win_rate"])}


def selective_guarantee(seeds: int = 200, n: int = 500, target: float = 0.9, delta: float = 0.1) -> dict[str, Any]:
    """Share of seeds whose chosen threshold keeps true agreement >= target (escalating all counts)."""
    held, cover = [], []
    for s in range(seeds):
        rng = np.random.default_rng(20_000 + s)
        c = rng.uniform(0.5, 1.0, n)
        agree = (rng.random(n) < c).astype(float)
        res = selective.trust_or_escalate(c, agree, target=target, delta=delta)
        held.append(not res.feasible or (1 + res.threshold) / 2 >= target)
        cover.append(res.coverage)
    return {"share_guaranteed": float(np.mean(held)), "mean_coverage": float(np.mean(cover)), "seeds": seeds,
            "ok": bool(np.mean(held) >= 1 - delta)}


def alt_test_example() -> dict[str, Any]:
    """The hand-worked alternative annotator test of the module docstring, against ``alt_test``."""
    rows = list(ALT_EXAMPLE.values())
    humans = np.array([r[:3] for r in rows], dtype=object)
    judge = [r[3] for r in rows]
    res = alt_test.alt_test(humans, judge, epsilon=0.5, q=0.2, min_items=2)
    t_hand = np.array([-0.5 * np.sqrt(15), -2.0, -(2 / 3) * np.sqrt(180 / 17)])
    p_hand = sps.t.cdf(t_hand, df=5)
    per = res.per_annotator
    ok = (np.allclose(per["t"], t_hand) and np.allclose(per["p_value"], p_hand) and bool(per["rejected"].all())
          and res.winning_rate == 1.0 and res.passed and np.isclose(res.advantage_probability, 5 / 6)
          and p_hand.min() > 0.2 / 5.5)  # the smallest p misses its own BY threshold: step-up rejects it
    return {"t": per["t"].tolist(), "p": per["p_value"].tolist(), "winning_rate": res.winning_rate,
            "passed": res.passed, "ok": bool(ok)}


def calibration_recovery(seed: int = 0, n: int = 4000, n_boot: int = 1000) -> dict[str, Any]:
    rng = np.random.default_rng(30_000 + seed)
    c = rng.uniform(0.5, 1.0, n)
    y = (rng.random(n) < c**2).astype(float)
    before = calibration.ece(c, y, n_boot=n_boot, seed=seed)
    cal = calibration.cross_fit_calibrate(c, y, method="isotonic", seed=seed)
    after = calibration.ece(cal, y, n_boot=n_boot, seed=seed)
    gap = float(np.mean(np.abs(cal - c**2)))
    ok = before["ci_low"] <= 1 / 6 <= before["ci_high"] and after["estimate"] < 0.05 and gap < 0.05
    return {"ece": before, "ece_recalibrated": after, "mean_abs_gap_to_truth": gap, "ok": bool(ok)}


def check_all(slow: bool, seeds: int = 200, n_boot: int = 1000) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``validate``'s checks and coverage entries for these statistics (slow: ``seeds`` seeds, 93-97%)."""
    checks: list[dict[str, Any]] = []

    def check(scenario: str, metric: str, what: str, ok: bool, est: float | None) -> None:
        checks.append({"scenario": scenario, "metric": metric, "check": what, "ok": bool(ok), "estimate": est,
                       "ci": [None, None], "p": None, "q": None})

    cov = model_coverage(seeds if slow else 40, n_boot if slow else 300)
    coverage = {}
    for key in ("win_rate", "ppi_win_rate"):
        if slow:
            coverage[key] = {"coverage": cov[key], "by_scenario": {"models": cov[key]},
                             "ok": bool(0.93 <= cov[key] <= 0.97)}
        else:
            check("models", key, f"{key} CIs cover the true win rates in >= 88% of 40 seeds", cov[key] >= 0.88,
                  cov[key])
    check("models", "ppi_width_ratio", "PPI++ with an informative judge narrows the human-only CI",
          cov["mean_width_ratio"] < 1.0, cov["mean_width_ratio"])
    sel = selective_guarantee(max(seeds, 200))  # cheap: always 200 seeds or more
    check("selective", "agreement", f"Trust or Escalate keeps agreement >= 0.9 in >= 90% of {sel['seeds']} seeds",
          sel["ok"], sel["share_guaranteed"])
    alt = alt_test_example()
    check("alt_test", "winning_rate", "alternative annotator test matches the hand-worked example", alt["ok"],
          alt["winning_rate"])
    cal = calibration_recovery(n_boot=n_boot)
    check("calibration", "ece", "planted miscalibration (ECE 1/6) recovered and removed by recalibration",
          cal["ok"], cal["ece"]["estimate"])
    return checks, coverage
