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
