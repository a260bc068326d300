"""Calibration of a judge's confidence against the humans.

- Confidence of a verdict: the largest of the normalised token probabilities ``P(A), P(B), P(tie)``,
  or the share of repeated samples that gave the modal verdict (Wang et al., 2023, self-consistency).
- Reliability diagram: ``M`` equal-width confidence bins; per bin the mean confidence and the share
  of verdicts the humans agree with (Niculescu-Mizil & Caruana, 2005).
- Expected calibration error (Naeini et al., 2015; Guo et al., 2017):
  ``ECE = sum_b (n_b / n) |acc_b - conf_b| = (1/n) sum_b |sum_{i in b} (correct_i - conf_i)|``, so the
  item bootstrap needs only the per-bin sums of ``correct - conf`` (one matrix product for all replicates).
- Cross-fitted recalibration: K folds; isotonic regression (Zadrozny & Elkan, 2002) or Platt scaling
  (a logistic regression on ``logit(conf)``; Platt, 1999) fitted on K - 1 folds predicts the held-out
  fold, so every item gets a calibrated confidence from a model that never saw it. Folds: a random
  permutation dealt round-robin, within each outcome when both outcomes have at least K items.
- Isotonic regression by the pool-adjacent-violators algorithm (Ayer et al., 1955; Best & Chakravarti,
  1990) over the distinct confidences (tied confidences pooled first, weighted by their count), predicted
  by linear interpolation between them and clipped beyond them: scikit-learn's ``IsotonicRegression``
  (``out_of_bounds="clip"``), which an audit does not import (with scipy.stats, about 1 s and 80 MB).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_sums, percentile_ci

FloatArray = NDArray[np.float64]
VERDICTS = ("A", "B", "tie")
Method = Literal["isotonic", "platt"]


def confidence_from_probs(p_a: ArrayLike, p_b: ArrayLike, p_tie: ArrayLike | None = None
                          ) -> tuple[NDArray[np.object_], FloatArray]:
    """Verdict (argmax) and confidence (its normalised probability) from token probabilities; rows
    with a missing or all-zero probability get ``None`` and NaN."""
    cols = [np.asarray(p_a, dtype=np.float64), np.asarray(p_b, dtype=np.float64)]
    cols.append(np.zeros_like(cols[0]) if p_tie is None else np.asarray(p_tie, dtype=np.float64))
    p = np.column_stack(cols)
    tot = p.sum(1)
    ok = np.isfinite(p).all(1) & (tot > 0) & (p >= 0).all(1)
    norm = np.divide(p, tot[:, None], out=np.zeros_like(p), where=ok[:, None])
    k = norm.argmax(1)
    label = np.array(VERDICTS, dtype=object)[k]
    label[~ok] = None
    return label, np.where(ok, norm[np.arange(len(k)), k], np.nan)


def confidence_from_votes(votes: ArrayLike) -> tuple[NDArray[np.object_], FloatArray]:
    """Modal verdict and its vote share over repeated samples (``votes``: items x samples; ``None``/NaN
    for a missing sample, which does not count). Ties between verdicts go to the first of ``A, B, tie``."""
    v = pd.DataFrame(np.asarray(votes, dtype=object)).to_numpy(dtype=object)
    counts = np.stack([(v == lab).sum(1) for lab in VERDICTS], axis=1).astype(np.float64)
    tot = counts.sum(1)
    k = counts.argmax(1)
    label = np.array(VERDICTS, dtype=object)[k]
    label[tot == 0] = None
    share = np.divide(counts[np.arange(len(k)), k], tot, out=np.full(len(k), np.nan), where=tot > 0)
    return label, share


def _bins(conf: FloatArray, n_bins: int) -> NDArray[np.int64]:
    """Bin of each confidence in ``[0, 1]``: ``[0, 1/M), ..., [(M-1)/M, 1]``."""
    return np.clip(np.floor(conf * n_bins).astype(np.int64), 0, n_bins - 1)


def _clean(conf: ArrayLike, correct: ArrayLike) -> tuple[FloatArray, FloatArray]:
    c = np.asarray(conf, dtype=np.float64)
    y = np.asarray(correct, dtype=np.float64)
    if c.shape != y.shape:
        raise StatsError(f"conf has {c.size} entries but correct has {y.size}")
    ok = np.isfinite(c) & np.isfinite(y)
    c, y = c[ok], y[ok]
    if ((c < 0) | (c > 1)).any():
        raise StatsError("confidences must lie in [0, 1]")
    return c, y


def reliability_bins(conf: ArrayLike, correct: ArrayLike, n_bins: int = 10) -> pd.DataFrame:
    """Reliability diagram table: one row per bin with ``bin_low, bin_high, n, confidence, accuracy``
    (NaN for an empty bin); rows with a missing value are left out."""
    c, y = _clean(conf, correct)
    b = _bins(c, n_bins)
    n = np.bincount(b, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mc = np.bincount(b, weights=c, minlength=n_bins) / n
        acc = np.bincount(b, weights=y, minlength=n_bins) / n
    edges = np.linspace(0, 1, n_bins + 1)
    return pd.DataFrame({"bin_low": edges[:-1], "bin_high": edges[1:], "n": n.astype(np.int64),
                         "confidence": mc, "accuracy": acc})


def ece(conf: ArrayLike, correct: ArrayLike, *, n_bins: int = 10, n_boot: int = 2000, seed: int = 0,
        level: float = 0.95) -> dict[str, Any]:
    """Expected calibration error with an item-bootstrap percentile CI: ``{estimate, ci_low, ci_high, n}``."""
    c, y = _clean(conf, correct)
    n = len(c)
    if n == 0:
        return {"estimate": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "n": 0}
    s = np.zeros((n, n_bins))
    s[np.arange(n), _bins(c, n_bins)] = y - c
    est = float(np.abs(s.sum(0)).sum() / n)
    boot = bootstrap_sums(s, n_boot, seed)
    lo, hi = percentile_ci(np.abs(boot).sum(1) / n, level)
    return {"estimate": est, "ci_low": lo, "ci_high": hi, "n": n}


def _logit(c: FloatArray) -> FloatArray:
    c = np.clip(c, 1e-6, 1 - 1e-6)
    return np.log(c / (1 - c))


def isotonic_fit(x: ArrayLike, y: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """The increasing least-squares fit of ``y`` on ``x``: the distinct ``x`` (sorted) and the fitted
    value at each (pool adjacent violators, each distinct ``x`` weighted by its count)."""
    xs, inverse, counts = np.unique(np.asarray(x, dtype=np.float64), return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=np.asarray(y, dtype=np.float64), minlength=len(xs)) / counts
    # blocks of pooled points: their mean, weight and number of distinct x, merged while out of order
    value: list[float] = []
    weight: list[float] = []
    size: list[int] = []
    for m, w in zip(means.tolist(), counts.astype(np.float64).tolist(), strict=True):
        value.append(m)
        weight.append(w)
        size.append(1)
        while len(value) > 1 and value[-2] > value[-1]:
            w2 = weight[-2] + weight[-1]
            value[-2] = (value[-2] * weight[-2] + value[-1] * weight[-1]) / w2
            weight[-2] = w2
            size[-2] += size[-1]
            del value[-1], weight[-1], size[-1]
    return xs, np.repeat(np.asarray(value), size)


class _Isotonic:
    """An isotonic fit and its prediction (see :func:`isotonic_fit`)."""

    def __init__(self, x: FloatArray, y: FloatArray) -> None:
        self.x_, self.y_ = isotonic_fit(x, y)

    def predict(self, x: FloatArray) -> FloatArray:
        return np.interp(x, self.x_, self.y_)


def folds(y: ArrayLike, n_folds: int, seed: int) -> NDArray[np.int64]:
    """The fold ``0..n_folds-1`` of each item: a random permutation (``numpy`` generator ``seed``) dealt
    round-robin, after a stable sort by outcome when both outcomes have at least ``n_folds`` items (each
    fold then holds its share of each outcome, within one)."""
    y = np.asarray(y)
    perm = np.random.default_rng(seed).permutation(len(y))
    _, per_class = np.unique(y, return_counts=True)
    if len(per_class) == 2 and per_class.min() >= n_folds:
        perm = perm[np.argsort(y[perm], kind="stable")]
    out = np.empty(len(y), dtype=np.int64)
    out[perm] = np.arange(len(y)) % n_folds
    return out


class ConfidenceCalibrator:
    """Isotonic or Platt recalibration of confidence against human agreement (scikit-learn style).

    ``fit(conf, correct)`` learns ``oof_`` (cross-fitted calibrated confidence per item from a model
    fitted on the other ``n_folds - 1`` folds; NaN where a value is missing) and ``model_`` (fitted on
    all items, for new items via ``predict``). A training set with one outcome only predicts that
    outcome's rate.
    """

    def __init__(self, method: Method = "isotonic", n_folds: int = 5, seed: int = 0) -> None:
        self.method = method
        self.n_folds = n_folds
        self.seed = seed

    def _fit_one(self, c: FloatArray, y: FloatArray) -> Any:
        if len(np.unique(y)) < 2:
            return float(y.mean()) if len(y) else float("nan")
        if self.method == "isotonic":
            return _Isotonic(c, y)
        if self.method == "platt":
            from sklearn.linear_model import LogisticRegression

            return LogisticRegression(penalty=None).fit(_logit(c)[:, None], y.astype(int))
        raise StatsError(f"method must be 'isotonic' or 'platt', not {self.method!r}")

    def _apply(self, model: Any, c: FloatArray) -> FloatArray:
        if isinstance(model, float):
            return np.full(len(c), model)
        if self.method == "isotonic":
            return np.asarray(model.predict(c), dtype=np.float64)
        return np.asarray(model.predict_proba(_logit(c)[:, None])[:, 1], dtype=np.float64)

    def fit(self, conf: ArrayLike, correct: ArrayLike) -> ConfidenceCalibrator:
        c_all = np.asarray(conf, dtype=np.float64)
        keep = np.isfinite(c_all) & np.isfinite(np.asarray(correct, dtype=np.float64))
        c, y = _clean(conf, correct)
        if len(c) < self.n_folds:
            raise StatsError(f"cross-fitting needs at least n_folds={self.n_folds} items, got {len(c)}")
        fold = folds(y, self.n_folds, self.seed)
        oof = np.empty(len(c))
        for k in range(self.n_folds):
            test = fold == k
            oof[test] = self._apply(self._fit_one(c[~test], y[~test]), c[test])
        self.oof_ = np.full(len(c_all), np.nan)
        self.oof_[keep] = oof
        self.model_ = self._fit_one(c, y)
        return self

    def predict(self, conf: ArrayLike) -> FloatArray:
        return self._apply(self.model_, np.asarray(conf, dtype=np.float64))


def cross_fit_calibrate(conf: ArrayLike, correct: ArrayLike, *, method: Method = "isotonic", n_folds: int = 5,
                        seed: int = 0) -> FloatArray:
    """Out-of-fold calibrated confidences (see :class:`ConfidenceCalibrator`), aligned with the input;
    NaN where the confidence or the outcome is missing."""
    return ConfidenceCalibrator(method, n_folds, seed).fit(conf, correct).oof_


__all__ = ["ConfidenceCalibrator", "confidence_from_probs", "confidence_from_votes", "cross_fit_calibrate",
           "ece", "folds", "isotonic_fit", "reliability_bins"]
