"""Selective evaluation with a guaranteed human-agreement level ("Trust or Escalate"; Jung, Brahman &
Choi, ICLR 2025, "Trust or Escalate: LLM Judges with Provable Guarantees for Human Agreement").

The judge keeps an item when its confidence is at least ``lambda`` and escalates it to a human
otherwise. On a calibration split with human labels, candidate thresholds are tested from the
strictest down (fixed-sequence testing; Bauer, 1991; Angelopoulos et al., 2021, "Learn then Test"):
for threshold ``lambda`` with ``n`` kept items of which ``k`` disagree with the humans, the null
``H0: P(disagree | conf >= lambda) > alpha`` (``alpha = 1 - target``) has the exact binomial p-value
``p = P(Bin(n, alpha) <= k)``. Testing stops at the first ``p > delta``; the chosen threshold is the
last one rejected, so that, over calibration sets,

    P( P(agree | conf >= lambda_hat) >= target ) >= 1 - delta.

Thresholds that keep fewer than ``n_min = ceil(log delta / log(1 - alpha))`` items cannot be rejected
even without a disagreement; they are skipped (the number kept depends on the confidences alone, so the
sequence stays fixed given them). ``p <= delta`` is the same as the one-sided Clopper–Pearson upper
bound of the disagreement rate,
``Beta^{-1}(1 - delta; k + 1, n - k)``, being at most ``alpha``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy import special

from judgecal.errors import StatsError


@dataclass(frozen=True)
class SelectiveResult:
    """Chosen threshold and what it keeps on the calibration split (``threshold`` is ``inf`` when no
    threshold passes: every item escalates)."""

    threshold: float
    target: float
    delta: float
    n_calibration: int
    n_kept: int
    coverage: float
    agreement: float
    agreement_lower_bound: float
    feasible: bool

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def clopper_pearson_upper(k: ArrayLike, n: ArrayLike, delta: float) -> NDArray[np.float64]:
    """One-sided ``1 - delta`` Clopper–Pearson upper bound of a rate with ``k`` events in ``n`` trials
    (1 when ``k == n``, NaN when ``n == 0``)."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ub = np.where(k >= n, 1.0, special.betaincinv(k + 1, np.maximum(n - k, 1e-300), 1 - delta))
    return np.where(n > 0, ub, np.nan)


def trust_or_escalate(conf: ArrayLike, agree: ArrayLike, *, target: float = 0.9, delta: float = 0.1,
                      thresholds: ArrayLike | None = None, n_grid: int = 50) -> SelectiveResult:
    """Choose the confidence threshold on a calibration split (``conf``: judge confidence, ``agree``:
    1 when the judge's verdict matches the humans'). Candidates default to the distinct confidences, or
    ``n_grid`` quantiles of them when there are more (a fine grid stops early on noise). Items with a
    missing value are left out."""
    if not 0 < target < 1 or not 0 < delta < 1:
        raise StatsError(f"target and delta must lie in (0, 1), got {target} and {delta}")
    c, a = np.asarray(conf, dtype=np.float64), np.asarray(agree, dtype=np.float64)
    if c.shape != a.shape:
        raise StatsError(f"conf has {c.size} entries but agree has {a.size}")
    ok = np.isfinite(c) & np.isfinite(a)
    c, a = c[ok], a[ok]
    n_cal = len(c)
    if thresholds is None:
        distinct = np.unique(c)
        cand = distinct if len(distinct) <= n_grid else np.unique(np.quantile(c, np.linspace(0, 1, n_grid)))
    else:
        cand = np.unique(np.asarray(thresholds, dtype=np.float64))
    cand = cand[::-1]
    order = np.argsort(-c, kind="stable")
    cs, wrong = c[order], np.cumsum(1 - a[order])
    kept = np.searchsorted(-cs, -cand, side="right")  # items with conf >= threshold
    alpha = 1 - target
    # thresholds that keep fewer than n_min items cannot pass even with no disagreement,
    # ((1 - alpha)^n > delta); they depend on the confidences only, so skipping them keeps the sequence fixed
    n_min = int(np.ceil(np.log(delta) / np.log1p(-alpha)))
    cand, kept = cand[kept >= n_min], kept[kept >= n_min]
    k = np.where(kept > 0, wrong[np.maximum(kept - 1, 0)], 0.0)
    p = np.where(kept > 0, special.bdtr(np.floor(k), kept, alpha), 1.0)
    fail = np.flatnonzero(p > delta)
    last = (fail[0] if fail.size else len(cand)) - 1
    if last < 0:
        return SelectiveResult(float("inf"), target, delta, n_cal, 0, 0.0, float("nan"), float("nan"), False)
    nk, kk = int(kept[last]), float(k[last])
    return SelectiveResult(float(cand[last]), target, delta, n_cal, nk, nk / n_cal, 1 - kk / nk,
                           float(1 - clopper_pearson_upper(kk, nk, delta)), True)


def escalate(conf: ArrayLike, threshold: float) -> NDArray[np.bool_]:
    """Items to send to a human: confidence below the threshold, or missing."""
    c = np.asarray(conf, dtype=np.float64)
    return ~(np.isfinite(c) & (c >= threshold))


def evaluate(conf: ArrayLike, agree: ArrayLike, threshold: float) -> dict[str, Any]:
    """Coverage and agreement of a threshold on held-out items: ``{n, n_kept, coverage, agreement}``."""
    c, a = np.asarray(conf, dtype=np.float64), np.asarray(agree, dtype=np.float64)
    keep = ~escalate(c, threshold) & np.isfinite(a)
    n = int(np.isfinite(a).sum())
    nk = int(keep.sum())
    return {"n": n, "n_kept": nk, "coverage": nk / n if n else float("nan"),
            "agreement": float(a[keep].mean()) if nk else float("nan")}


__all__ = ["SelectiveResult", "clopper_pearson_upper", "escalate", "evaluate", "trust_or_escalate"]
