"""Prediction-powered inference for a mean (PPI++; Angelopoulos, Duchi & Zrnic, 2023, arXiv:2311.01453).

``n`` labelled items carry the human label ``Y`` and the judge's ``Yhat``; ``N`` more carry only the
judge's ``Yhat_u``. With power-tuning weight ``lambda``:

    theta = lambda mean(Yhat_u) + mean(Y - lambda Yhat)
    se^2  = lambda^2 var(Yhat_u) / N + var(Y - lambda Yhat) / n
    lambda* = cov(Y, Yhat) / ((1 + n / N) var(Yhat, Yhat_u)), clipped to [0, 1]

(``lambda = 0`` is the classical human-only mean, ``lambda = 1`` plain PPI.) The interval is
``theta +- z se``; the same formulas (variances with divisor n, pooled ``var(Yhat)`` with n - 1) as
ppi-python's ``ppi_mean_ci``. Beside it: the classical estimate on the same labelled items and the
ratio of interval widths (below 1: the judge's verdicts bought precision).

Stratified PPI++ estimates each stratum with its own ``lambda`` and combines them with the strata's
shares of all items, ``theta = sum_k w_k theta_k``, ``se^2 = sum_k w_k^2 se_k^2`` (Fisch et al., 2024).

Planner. A half-width ``h`` at level ``1 - alpha`` needs ``n = (z sigma / h)^2`` human labels alone;
with PPI++ at the optimal ``lambda`` the variance per label is ``sigma^2 (1 - rho^2 N / (n + N))``
(``rho`` the judge-human correlation), ``sigma^2 (1 - rho^2)`` as ``N -> infinity``. Dorner, Nastl &
Hardt (ICLR 2025, "Limits to scalable evaluation at the frontier: LLM as judge won't beat twice the
data"): when the judge is no more accurate than the model it evaluates, the saving is at most a
factor 2, so such a judge still needs at least half the human-only labels.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from judgecal.errors import StatsError
from judgecal.stats.winrate import as_objects, model_index, outcome_scores

FloatArray = NDArray[np.float64]
DORNER_CEILING = 2.0
CEILING_NOTE = ("Dorner, Nastl & Hardt (ICLR 2025): a judge no more accurate than the model it evaluates "
                "saves at most half the human labels (a sample-efficiency gain of at most 2x).")


@dataclass(frozen=True)
class PPIResult:
    """PPI++ estimate and interval beside the classical (human-only) ones on the same labelled items."""

    estimate: float
    ci_low: float
    ci_high: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    classical_estimate: float
    classical_ci_low: float
    classical_ci_high: float
    width_ratio: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _z(level: float) -> float:
    return float(special.ndtri(0.5 + level / 2))


def ppi_lambda(y: FloatArray, yhat: FloatArray, yhat_u: FloatArray) -> float:
    """Power-tuning ``lambda* = cov(Y, Yhat) / ((1 + n/N) var(Yhat pooled))`` clipped to [0, 1]; 0 when
    the judge's verdicts do not vary."""
    n, big_n = len(y), len(yhat_u)
    pooled = np.concatenate([yhat, yhat_u])
    var = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
    if var <= 0 or n == 0 or big_n == 0:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def _ppi_parts(y: FloatArray, yhat: FloatArray, yhat_u: FloatArray, lam: float | None
               ) -> tuple[float, float, float]:
    """Estimate, standard error and lambda."""
    lam = ppi_lambda(y, yhat, yhat_u) if lam is None else float(lam)
    n, big_n = len(y), len(yhat_u)
    imputed = lam * float(yhat_u.mean()) if big_n else 0.0
    est = imputed + float(np.mean(y - lam * yhat))
    var_u = lam**2 * float(np.var(yhat_u)) / big_n if big_n else 0.0
    se = math.sqrt(var_u + float(np.var(y - lam * yhat)) / n)
    return est, se, lam


def ppi_mean(y: ArrayLike, yhat: ArrayLike, yhat_unlabelled: ArrayLike, *, level: float = 0.95,
             lam: float | None = None) -> PPIResult:
    """PPI++ mean with its CI and the classical CI on the same labelled items.

    Fewer than 2 labelled items gives NaN throughout; no unlabelled items gives the classical answer
    (``lambda = 0``).
    """
    yy, yh, yu = (np.asarray(v, dtype=np.float64).ravel() for v in (y, yhat, yhat_unlabelled))
    if len(yy) != len(yh):
        raise StatsError(f"y has {len(yy)} entries but yhat has {len(yh)}")
    n, big_n = len(yy), len(yu)
    if n < 2:
        nan = float("nan")
        return PPIResult(nan, nan, nan, nan, n, big_n, nan, nan, nan, nan)
    z = _z(level)
    est, se, lam_used = _ppi_parts(yy, yh, yu, lam if big_n else 0.0)
    c_est, c_se = float(yy.mean()), float(np.std(yy)) / math.sqrt(n)
    ratio = se / c_se if c_se > 0 else float("nan")
    return PPIResult(est, est - z * se, est + z * se, lam_used, n, big_n, c_est, c_est - z * c_se,
                     c_est + z * c_se, ratio)


def ppi_mean_stratified(y: ArrayLike, yhat: ArrayLike, yhat_unlabelled: ArrayLike, strata: ArrayLike,
                        strata_unlabelled: ArrayLike, *, level: float = 0.95) -> PPIResult:
    """Stratified PPI++: one tuned ``lambda`` per stratum, weights ``w_k = (n_k + N_k) / (n + N)``.

    The classical side is the stratified human-only mean with the same weights. A stratum with fewer
    than 2 labelled items makes the result NaN (its mean cannot be estimated). ``lam`` in the result is
    the weighted mean of the strata's ``lambda``.
    """
    yy, yh, yu = (np.asarray(v, dtype=np.float64).ravel() for v in (y, yhat, yhat_unlabelled))
    sl = pd.Series(strata, dtype=object).to_numpy(dtype=object)
    su = pd.Series(strata_unlabelled, dtype=object).to_numpy(dtype=object)
    if not (len(yy) == len(yh) == len(sl)) or len(yu) != len(su):
        raise StatsError("y, yhat and strata (and yhat_unlabelled and strata_unlabelled) must have the same "
                         "length")
    total = len(yy) + len(yu)
    z = _z(level)
    est = var = c_est = c_var = lam_w = 0.0
    nan = float("nan")
    for k in pd.unique(np.concatenate([sl, su])):
        lk, uk = sl == k, su == k
        w = (lk.sum() + uk.sum()) / total
        if lk.sum() < 2:
            return PPIResult(nan, nan, nan, nan, len(yy), len(yu), nan, nan, nan, nan)
        e, se, lam = _ppi_parts(yy[lk], yh[lk], yu[uk], None if uk.any() else 0.0)
        est += w * e
        var += w**2 * se**2
        lam_w += w * lam
        c_est += w * float(yy[lk].mean())
        c_var += w**2 * float(np.var(yy[lk])) / int(lk.sum())
    se, c_se = math.sqrt(var), math.sqrt(c_var)
    return PPIResult(est, est - z * se, est + z * se, lam_w, len(yy), len(yu), c_est, c_est - z * c_se,
                     c_est + z * c_se, se / c_se if c_se > 0 else nan)


def _group_ppi(groups: dict[Any, NDArray[np.bool_]], y: FloatArray, yhat: FloatArray,
               labelled: NDArray[np.bool_], category: NDArray[np.object_] | None, level: float
               ) -> pd.DataFrame:
    rows = {}
    for key, g in groups.items():
        lab, unl = g & labelled & np.isfinite(yhat), g & ~labelled & np.isfinite(yhat)
        if category is None:
            r = ppi_mean(y[lab], yhat[lab], yhat[unl], level=level)
        else:
            r = ppi_mean_stratified(y[lab], yhat[lab], yhat[unl], category[lab], category[unl], level=level)
        rows[key] = r.as_dict()
    return pd.DataFrame.from_dict(rows, orient="index")


def _scores_for(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike,
                invalid_as: str | None
                ) -> tuple[NDArray[np.int64], NDArray[np.int64], list[str], FloatArray, FloatArray]:
    ia, ib, models = model_index(model_a, model_b)
    h, j = outcome_scores(human), outcome_scores(judge)
    if not (len(h) == len(j) == len(ia)):
        raise StatsError("model_a, model_b, human and judge must have the same length")
    if invalid_as == "tie":
        j = np.where(np.isfinite(j), j, 0.5)
    elif invalid_as is not None:
        raise StatsError(f"invalid_as must be 'tie' or None, not {invalid_as!r}")
    return ia, ib, models, h, j


def ppi_win_rates(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike, *,
                  category: ArrayLike | None = None, level: float = 0.95, invalid_as: str | None = "tie"
                  ) -> pd.DataFrame:
    """PPI++ win rate of each model: ``Y`` is the model's human score on the item (1, 0.5, 0), ``Yhat``
    the judge's; items without a human label (``None``) are the unlabelled set. A judge verdict that is
    not ``A``/``B``/``tie`` counts as a tie (``invalid_as="tie"``) or drops the item (``None``).
    ``category`` switches to stratified PPI++. One row per model with the :class:`PPIResult` fields."""
    ia, ib, models, h, j = _scores_for(model_a, model_b, human, judge, invalid_as)
    labelled = np.isfinite(h)
    cat = None if category is None else as_objects(category)
    frames = []
    for k, name in enumerate(models):
        ga, gb = ia == k, ib == k
        y = np.where(ga, h, 1 - h)
        yhat = np.where(ga, j, 1 - j)
        frames.append(_group_ppi({name: ga | gb}, y, yhat, labelled, cat, level))
    out = pd.concat(frames) if frames else pd.DataFrame(columns=list(PPIResult.__dataclass_fields__))
    out.index.name = "model"
    return out


def ppi_pairwise_win_rates(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike, *,
                           category: ArrayLike | None = None, level: float = 0.95,
                           invalid_as: str | None = "tie") -> pd.DataFrame:
    """PPI++ head-to-head win rate of ``model_1`` against ``model_2`` for every pair that met
    (``model_1`` sorts first); columns as :func:`ppi_win_rates`."""
    ia, ib, models, h, j = _scores_for(model_a, model_b, human, judge, invalid_as)
    labelled = np.isfinite(h)
    cat = None if category is None else as_objects(category)
    lo = np.minimum(ia, ib)
    y, yhat = np.where(ia == lo, h, 1 - h), np.where(ia == lo, j, 1 - j)
    pair = lo * len(models) + np.maximum(ia, ib)
    m = len(models)
    groups = {(models[int(p) // m], models[int(p) % m]): pair == p for p in np.unique(pair)}
    out = _group_ppi(groups, y, yhat, labelled, cat, level)
    out.index = pd.MultiIndex.from_tuples(list(out.index), names=["model_1", "model_2"])
    return out


def plan_labels(target_halfwidth: float, sigma2: float, rho: float, *, level: float = 0.95,
                n_unlabelled: int | None = None) -> dict[str, Any]:
    """Human labels needed for a CI half-width ``h``: human-only ``ceil((z sigma / h)^2)`` and PPI++ at the
    optimal ``lambda`` (solving ``h^2 / z^2 = sigma^2 / n (1 - rho^2 N / (n + N))`` for ``n``; ``N``
    unlabelled items, infinite when ``None``); a negative ``rho`` buys nothing (``lambda`` clips to 0).

    Also states the Dorner et al. (2025) ceiling: ``n_ppi_if_judge_not_better`` is at least half the
    human-only count, and ``exceeds_ceiling`` says whether the measured correlation promises more.
    """
    if not target_halfwidth > 0:
        raise StatsError(f"target_halfwidth must be positive, not {target_halfwidth}")
    z = _z(level)
    v = (target_halfwidth / z) ** 2
    if not (v > 0 and math.isfinite(sigma2 / v)):  # 1e-170 squares to 0; 1e-160 overflows the count
        raise StatsError(f"target_halfwidth {target_halfwidth:g} is too small to count the labels it needs")
    r2 = max(rho, 0.0) ** 2 if np.isfinite(rho) else 0.0
    n_h = max(1, math.ceil(sigma2 / v))
    if n_unlabelled is None:
        n_p_real = sigma2 * (1 - r2) / v
    else:
        big_n = float(n_unlabelled)
        b = v * big_n - sigma2
        n_p_real = (-b + math.sqrt(b * b + 4 * v * sigma2 * big_n * (1 - r2))) / (2 * v)
    n_p = max(1, math.ceil(n_p_real - 1e-9))
    gain = n_h / n_p
    return {"target_halfwidth": target_halfwidth, "level": level, "sigma2": sigma2, "rho": rho,
            "n_unlabelled": n_unlabelled, "n_human_only": n_h, "n_ppi": n_p, "gain": gain,
            "n_ppi_if_judge_not_better": max(n_p, math.ceil(n_h / DORNER_CEILING)),
            "exceeds_ceiling": gain > DORNER_CEILING, "ceiling": DORNER_CEILING, "ceiling_note": CEILING_NOTE}


def plan_from_data(y: ArrayLike, yhat: ArrayLike, target_halfwidth: float, *, level: float = 0.95,
                   n_unlabelled: int | None = None) -> dict[str, Any]:
    """:func:`plan_labels` with ``sigma^2 = var(Y)`` and ``rho = corr(Y, Yhat)`` measured on the labelled
    items. When either side is constant the correlation is 0/0: it is planned as 0 (the judge buys
    nothing) and ``rho_defined`` is false."""
    yy, yh = np.asarray(y, dtype=np.float64), np.asarray(yhat, dtype=np.float64)
    if len(yy) < 2:
        raise StatsError("planning needs at least 2 labelled items")
    rho = float(np.corrcoef(yy, yh)[0, 1]) if np.std(yy) > 0 and np.std(yh) > 0 else 0.0
    out = plan_labels(target_halfwidth, float(np.var(yy, ddof=1)), rho, level=level,
                      n_unlabelled=n_unlabelled)
    out["n_labelled_measured"] = int(len(yy))
    out["rho_defined"] = bool(np.std(yy) > 0 and np.std(yh) > 0)
    return out


__all__ = ["CEILING_NOTE", "PPIResult", "plan_from_data", "plan_labels", "ppi_lambda", "ppi_mean",
           "ppi_mean_stratified", "ppi_pairwise_win_rates", "ppi_win_rates"]
