"""Judge confidence: reliability bins, ECE with a CI, cross-fitted isotonic and Platt recalibration."""

from __future__ import annotations

import numpy as np
import pytest

from judgecal.stats import calibration as cal


def test_confidence_from_token_probabilities() -> None:
    label, conf = cal.confidence_from_probs([0.6, 0.1, np.nan, 0.0], [0.2, 0.3, 0.5, 0.0], [0.0, 0.2, 0.5, 0.0])
    assert list(label) == ["A", "B", None, None]
    assert conf[:2] == pytest.approx([0.75, 0.5])  # 0.6 / 0.8 and 0.3 / 0.6
    assert np.isnan(conf[2:]).all()


def test_confidence_from_vote_share() -> None:
    votes = [["A", "A", "B", None], ["tie", "B", "B", "B"], [None, None, None, None], ["A", "B", None, None]]
    label, share = cal.confidence_from_votes(votes)
    assert list(label) == ["A", "B", None, "A"]
    assert share[[0, 1, 3]] == pytest.approx([2 / 3, 3 / 4, 1 / 2]) and np.isnan(share[2])


def test_reliability_and_ece_hand_computed() -> None:
    conf, correct = [0.9, 0.9, 0.6, 0.6, 1.0], [1, 0, 1, 1, 1]
    bins = cal.reliability_bins(conf, correct, n_bins=10)
    assert bins.loc[9, "n"] == 3 and bins.loc[9, "confidence"] == pytest.approx(2.8 / 3)
    assert bins.loc[9, "accuracy"] == pytest.approx(2 / 3) and bins.loc[6, "accuracy"] == 1.0
    assert bins["n"].sum() == 5 and np.isnan(bins.loc[0, "accuracy"])
    # |2 - 2.8| + |2 - 1.2| over 5 items
    e = cal.ece(conf, correct, n_bins=10, n_boot=300)
    assert e["estimate"] == pytest.approx(1.6 / 5) and e["n"] == 5
    assert e["ci_low"] <= e["estimate"] <= e["ci_high"]


def test_bins_match_sklearn_calibration_curve() -> None:
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(0)
    conf = rng.random(3000)
    correct = (rng.random(3000) < conf**2).astype(int)
    bins = cal.reliability_bins(conf, correct, n_bins=8)
    true, pred = calibration_curve(correct, conf, n_bins=8, strategy="uniform")
    nonempty = bins[bins["n"] > 0]
    assert nonempty["accuracy"].to_numpy() == pytest.approx(true)
    assert nonempty["confidence"].to_numpy() == pytest.approx(pred)
    loop = sum(abs(g["accuracy"] - g["confidence"]) * g["n"] for _, g in nonempty.iterrows()) / 3000
    assert cal.ece(conf, correct, n_bins=8, n_boot=10)["estimate"] == pytest.approx(loop)


def _planted(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """True agreement probability p; the judge reports sigmoid(2 logit p): overconfident."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.4, 0.97, n)
    conf = 1 / (1 + np.exp(-2 * np.log(p / (1 - p))))
    correct = (rng.random(n) < p).astype(float)
    return p, conf, correct


def test_planted_miscalibration_is_measured_and_removed() -> None:
    p, conf, correct = _planted(1, 4000)
    raw = cal.ece(conf, correct, n_boot=1000)
    planted = float(np.mean(np.abs(conf - p)))  # the gap at population level (bins only blur it)
    assert raw["ci_low"] > 0.05 and raw["estimate"] == pytest.approx(planted, abs=0.03)
    for method in ("isotonic", "platt"):
        fixed = cal.cross_fit_calibrate(conf, correct, method=method, n_folds=5, seed=0)
        after = cal.ece(fixed, correct, n_boot=1000)
        assert after["estimate"] < 0.03 and after["ci_high"] < raw["ci_low"], method
        assert np.mean(np.abs(fixed - p)) < planted / 3, method


def test_calibrator_is_out_of_fold_and_keeps_alignment() -> None:
    p, conf, correct = _planted(2, 600)
    conf = conf.copy()
    conf[5] = np.nan
    model = cal.ConfidenceCalibrator("platt", n_folds=4, seed=1).fit(conf, correct)
    assert model.oof_.shape == conf.shape and np.isnan(model.oof_[5]) and np.isfinite(np.delete(model.oof_, 5)).all()
    # Platt on logit(conf) recovers the planted temperature: slope about 1/2
    assert model.model_.coef_[0, 0] == pytest.approx(0.5, abs=0.15)
    # out-of-fold: differs from the in-sample fit
    assert not np.allclose(np.delete(model.oof_, 5), model.predict(np.delete(conf, 5)))
    with pytest.raises(ValueError, match="at least n_folds=5 items"):
        cal.ConfidenceCalibrator().fit([0.5, 0.6], [1, 0])
    with pytest.raises(ValueError, match="confidences must lie in"):
        cal.ece([1.2], [1])
    one_class = cal.cross_fit_calibrate(np.linspace(0.5, 1, 20), np.ones(20), method="platt")
    assert (one_class == 1.0).all()


@pytest.mark.parametrize("seed", range(6))
def test_isotonic_fit_predicts_as_scikit_learn(seed: int) -> None:
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    # few distinct confidences (vote shares) for some seeds, continuous ones for the others
    x = rng.choice([0.4, 0.6, 0.8, 1.0], n) if seed % 2 else rng.random(n)
    y = (rng.random(n) < 0.3 + 0.6 * x).astype(float)
    ref = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, y)
    xs, fitted = cal.isotonic_fit(x, y)
    assert (np.diff(xs) > 0).all() and (np.diff(fitted) >= -1e-15).all()
    new = np.concatenate([rng.random(50) * 1.4 - 0.2, x])  # beyond the range too: clipped
    assert np.interp(new, xs, fitted) == pytest.approx(ref.predict(new), abs=1e-12)


def test_isotonic_fit_by_hand() -> None:
    # the tied x = 4 averaged first: 0.5 with weight 2; 3, 2 violate -> 2.5 (weight 2); 0.5 < 2.5 -> pooled:
    # (3 + 2 + 0 + 1) / 4 = 1.5, above the first point's 1
    xs, fitted = cal.isotonic_fit([1, 2, 3, 4, 4], [1, 3, 2, 0, 1])
    assert xs.tolist() == [1, 2, 3, 4]
    assert fitted.tolist() == pytest.approx([1.0, 1.5, 1.5, 1.5])


def test_folds_are_balanced_stratified_and_reproducible() -> None:
    y = np.r_[np.ones(23), np.zeros(12)]
    f = cal.folds(y, 5, seed=3)
    assert np.bincount(f).tolist() == [7, 7, 7, 7, 7]
    for k in range(5):  # each fold holds its share of each outcome, within one
        assert abs((y[f == k] == 1).sum() - 23 / 5) < 1 and abs((y[f == k] == 0).sum() - 12 / 5) < 1
    assert (cal.folds(y, 5, seed=3) == f).all() and not (cal.folds(y, 5, seed=4) == f).all()
    few = cal.folds(np.r_[np.ones(30), np.zeros(2)], 5, seed=0)  # an outcome with fewer items than folds
    assert sorted(np.bincount(few).tolist()) == [6, 6, 6, 7, 7]
