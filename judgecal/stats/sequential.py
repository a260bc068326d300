"""An anytime-valid confidence sequence for a rate, and a drift rule that stays valid at every look.

**The confidence sequence.** For 0/1 observations with a constant success rate ``p`` (a judge agreeing with the
truth on each item, the items exchangeable), the beta-binomial mixture martingale (Robbins, 1970; Howard,
Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist.
49(2), 2021, the beta-binomial boundary) after ``t`` observations with ``S`` successes is

``M_t(p) = B(a + S, b + t - S) / B(a, b) / (p^S (1 - p)^(t - S))``

a nonnegative martingale under ``p`` with ``M_0 = 1``; by Ville's inequality ``P(exists t: M_t(p) >= 1/alpha) <=
alpha``, so ``C_t = {p : M_t(p) < 1/alpha}`` holds ``p`` at *every* ``t`` at once with probability ``1 - alpha``:
it may be looked at after every period. ``a = b = 1/2`` (Jeffreys' prior); ``C_t`` is found on a grid of
``GRID`` rates, each end rounded outwards.

**The drift rule.** The baseline period's ``n0`` agreements give an exact Clopper-Pearson interval ``[L0, U0]``
at level ``1 - alpha/2`` (one fixed sample); the agreements since the baseline give the sequence
``[L1_t, U1_t]`` at level ``1 - alpha/2``. By the union bound, with probability ``1 - alpha`` the drop
``p0 - p1`` lies in ``[L0 - U1_t, U0 - L1_t]`` at every look at once. Drift is declared at the first look where
that interval lies above 0 *and* reaches the effect of interest (as a bias flag needs significance and an
effect that matters): a judge whose agreement does not fall raises a false alarm with probability at most
``alpha``, however many periods are looked at.

Edge cases: no observation since the baseline gives the whole ``[0, 1]``; an all-0 or all-1 series gets an
interval that touches 0 or 1; the drop is clipped to ``[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaln
from scipy.stats import beta

from judgecal.errors import StatsError

FloatArray = NDArray[np.float64]
GRID = 20_001  # rates 0, 1/20000, ..., 1: the sequence's ends are exact to 5e-5 (rounded outwards)
PRIOR = 0.5  # a = b: Jeffreys' prior of the mixture


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be strictly between 0 and 1, got {alpha}")


def betabinomial_confseq(successes: ArrayLike, trials: ArrayLike, alpha: float = 0.05,
                         prior: float = PRIOR) -> tuple[FloatArray, FloatArray]:
    """The beta-binomial mixture confidence sequence ``(lower, upper)`` at each look, given the successes
    and trials counted up to it (cumulative; looks in any order, each valid at once with all others)."""
    _check_alpha(alpha)
    s = np.asarray(successes, dtype=np.float64).ravel()
    t = np.asarray(trials, dtype=np.float64).ravel()
    if s.shape != t.shape or np.any(s < 0) or np.any(s > t):
        raise StatsError("successes and trials must be counts with 0 <= successes <= trials")
    p = np.linspace(0.0, 1.0, GRID)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p, log_q = np.log(p), np.log1p(-p)
        ll = s[:, None] * log_p + (t - s)[:, None] * log_q  # log likelihood, -inf where impossible
        ll = np.where((s[:, None] == 0) & (p == 0), 0.0, ll)
        ll = np.where(((t - s)[:, None] == 0) & (p == 1), 0.0, ll)
        log_m = betaln(prior + s, prior + t - s)[:, None] - betaln(prior, prior) - ll
    inside = log_m < np.log(1 / alpha)
    any_in = inside.any(axis=1)
    first = np.argmax(inside, axis=1)
    last = GRID - 1 - np.argmax(inside[:, ::-1], axis=1)
    lower = np.where(any_in, p[np.maximum(first - 1, 0)], 0.0)
    upper = np.where(any_in, p[np.minimum(last + 1, GRID - 1)], 1.0)
    return lower, upper


def clopper_pearson(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact two-sided interval for one fixed binomial sample (``trials = 0`` gives ``[0, 1]``)."""
    _check_alpha(alpha)
    k, n = int(successes), int(trials)
    lo = float(beta.ppf(alpha / 2, k, n - k + 1)) if k > 0 else 0.0
    hi = float(beta.ppf(1 - alpha / 2, k + 1, n - k)) if k < n else 1.0
    return lo, hi


def drift_sequence(baseline: ArrayLike, after: ArrayLike, looks: ArrayLike, *, alpha: float = 0.05,
                   effect: float = 0.10) -> dict[str, Any]:
    """The drop of agreement since the baseline at each look, its anytime-valid interval and the decision.

    ``baseline``: the baseline period's agreements (0/1); ``after``: those since the baseline, in the order
    they came; ``looks``: how many of ``after`` had come at each look (a period's end, non-decreasing).
    Returns arrays over the looks — ``n`` (observations since the baseline), ``mean`` (their running mean),
    ``lower``/``upper`` (its sequence), ``drop`` (baseline mean minus ``mean``), ``drop_lower``/``drop_upper``
    and ``drift`` (the interval above 0 and reaching ``effect``) — with ``baseline_mean``,
    ``baseline_lower``/``baseline_upper`` and ``first`` (the index of the first look that declares drift,
    ``None`` when none does)."""
    _check_alpha(alpha)
    if not 0 <= effect <= 1:
        raise StatsError(f"the effect of interest must lie in [0, 1], got {effect}")
    base = np.asarray(baseline, dtype=np.float64).ravel()
    post = np.asarray(after, dtype=np.float64).ravel()
    if base.size == 0:
        raise StatsError("the baseline has no observation")
    if not (np.isin(base, (0.0, 1.0)).all() and np.isin(post, (0.0, 1.0)).all()):
        raise StatsError("agreements are 0 or 1")
    at = np.asarray(looks, dtype=np.int64).ravel()
    if at.size and (at.min() < 0 or at.max() > post.size or np.any(np.diff(at) < 0)):
        raise StatsError("looks must be non-decreasing counts of the observations after the baseline")
    b_low, b_up = clopper_pearson(int(base.sum()), base.size, alpha / 2)
    p0 = float(base.mean())
    hits_so_far = np.concatenate(([0.0], np.cumsum(post)))[at]
    lower, upper = betabinomial_confseq(hits_so_far, at, alpha / 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(at > 0, hits_so_far / np.maximum(at, 1), np.nan)
    drop_lower = np.clip(b_low - upper, -1.0, 1.0)
    drop_upper = np.clip(b_up - lower, -1.0, 1.0)
    drift = (at > 0) & (drop_lower > 0) & (drop_upper >= effect)
    hits = np.flatnonzero(drift)
    return {"n": at, "mean": mean, "lower": lower, "upper": upper, "drop": p0 - mean, "drop_lower": drop_lower,
            "drop_upper": drop_upper, "drift": drift, "baseline_mean": p0, "baseline_lower": b_low,
            "baseline_upper": b_up, "first": int(hits[0]) if hits.size else None}
