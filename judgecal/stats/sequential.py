"""An anytime-valid confidence sequence for a rate, and a drift rule that stays valid at every look and finds
a drift that starts late.

**The confidence sequence.** For 0/1 observations with a constant success rate ``p`` (a judge agreeing with the
truth on each item, the items exchangeable), the beta-binomial mixture martingale (Robbins, 1970; Howard,
Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist.
49(2), 2021, the beta-binomial boundary) after ``t`` observations with ``S`` successes is

``M_t(p) = B(a + S, b + t - S) / B(a, b) / (p^S (1 - p)^(t - S))``

a nonnegative martingale under ``p`` with ``M_0 = 1``; by Ville's inequality ``P(exists t: M_t(p) >= 1/alpha) <=
alpha``, so ``C_t = {p : M_t(p) < 1/alpha}`` holds ``p`` at *every* ``t`` at once with probability ``1 - alpha``:
it may be looked at after every period. ``a = b = 1/2`` (Jeffreys' prior). ``log M_t`` is convex in ``p`` with
its minimum (``<= 0``) at ``S/t``, so ``C_t`` is an interval; its ends are found by bisection to ``2^-50`` and
rounded outwards.

**The drift rule.** The baseline period's ``n0`` agreements give an exact Clopper-Pearson interval ``[L0, U0]``
at level ``1 - alpha/2`` (one fixed sample). A drift may start at any later period, and the agreements counted
from before it would hide it, so every period ``j = 0, 1, ...`` after the baseline starts a *window* (the
agreements from period ``j`` on) with its own sequence ``[L_jt, U_jt]`` at level ``1 - alpha_j``,
``alpha_j = (alpha/2) / ((j + 1)(j + 2))`` (these sum to ``alpha/2`` over all ``j``: no horizon is needed). By
the union bound, with probability ``1 - alpha`` every window's drop ``p0 - p_j`` lies in ``[L0 - U_jt, U0 -
L_jt]`` at every look at once. Drift is declared at the first look where some window's interval lies above 0
*and* reaches the effect of interest (as a bias flag needs significance and an effect that matters): a judge
whose agreement does not fall raises a false alarm with probability at most ``alpha``, however many periods are
looked at, and a drop that starts at period ``k`` is judged on the window from ``k``, not diluted by the
periods before it (the price: a window starting late is tested at a smaller level).

Edge cases: an empty window gives the whole ``[0, 1]``; an all-0 or all-1 series gets an interval that touches 0
or 1; the drop is clipped to ``[-1, 1]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import betaincinv, betaln, xlog1py, xlogy

from judgecal.errors import StatsError

FloatArray = NDArray[np.float64]
PRIOR = 0.5  # a = b: Jeffreys' prior of the mixture
STEPS = 50  # bisection steps: the ends are exact to 2^-50, rounded outwards


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be strictly between 0 and 1, got {alpha}")


def betabinomial_confseq(successes: ArrayLike, trials: ArrayLike, alpha: ArrayLike = 0.05,
                         prior: float = PRIOR) -> tuple[FloatArray, FloatArray]:
    """The beta-binomial mixture confidence sequence ``(lower, upper)`` at each look, given the successes
    and trials counted up to it (cumulative; looks in any order, each valid at once with all others);
    ``alpha`` is one level or one per look."""
    s = np.asarray(successes, dtype=np.float64).ravel()
    t = np.asarray(trials, dtype=np.float64).ravel()
    lv = np.broadcast_to(np.asarray(alpha, dtype=np.float64), s.shape)
    for a in np.unique(lv):
        _check_alpha(float(a))
    if s.shape != t.shape or np.any(s < 0) or np.any(s > t):
        raise StatsError("successes and trials must be counts with 0 <= successes <= trials")
    log_mix = betaln(prior + s, prior + t - s) - betaln(prior, prior)
    bound = np.log(1 / lv)

    def inside(p: FloatArray) -> NDArray[np.bool_]:
        return log_mix - xlogy(s, p) - xlog1py(t - s, -p) < bound

    mode: FloatArray = np.where(t > 0, s / np.maximum(t, 1), 0.5)
    out_lo: FloatArray = np.zeros_like(s)
    in_lo: FloatArray = mode.copy()  # lower end: out_lo outside (or 0), in_lo inside
    in_hi: FloatArray = mode.copy()
    out_hi: FloatArray = np.ones_like(s)
    for _ in range(STEPS):
        mid = (out_lo + in_lo) / 2
        ok = inside(mid)
        in_lo, out_lo = np.where(ok, mid, in_lo), np.where(ok, out_lo, mid)
        mid = (in_hi + out_hi) / 2
        ok = inside(mid)
        in_hi, out_hi = np.where(ok, mid, in_hi), np.where(ok, out_hi, mid)
    lower = np.where(s == 0, 0.0, out_lo)
    upper = np.where(s == t, 1.0, out_hi)
    return lower, upper


def clopper_pearson(successes: int, trials: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact two-sided interval for one fixed binomial sample (``trials = 0`` gives ``[0, 1]``): the
    ``alpha/2`` quantile of Beta(k, n - k + 1) and the ``1 - alpha/2`` one of Beta(k + 1, n - k) (Clopper &
    Pearson, 1934), as the inverse of the regularized incomplete beta function (what ``scipy.stats.beta.ppf``
    computes, without importing scipy.stats)."""
    _check_alpha(alpha)
    k, n = int(successes), int(trials)
    lo = float(betaincinv(k, n - k + 1, alpha / 2)) if k > 0 else 0.0
    hi = float(betaincinv(k + 1, n - k, 1 - alpha / 2)) if k < n else 1.0
    return lo, hi


def window_levels(starts: int, alpha: float) -> FloatArray:
    """The level of each start's window, ``alpha_j = (alpha/2) / ((j + 1)(j + 2))``: they sum to less than
    ``alpha/2`` over any number of starts."""
    j = np.arange(starts, dtype=np.float64)
    return (alpha / 2) / ((j + 1) * (j + 2))


def drift_sequence(baseline: ArrayLike, after: ArrayLike, looks: ArrayLike, *, alpha: float = 0.05,
                   effect: float = 0.10) -> dict[str, Any]:
    """The drop of agreement since the baseline at each look, its anytime-valid interval and the decision.

    ``baseline``: the baseline period's agreements (0/1); ``after``: those since the baseline, in the order
    they came; ``looks``: how many of ``after`` had come at each look (a period's end, non-decreasing); each
    look also starts a window (the agreements after the previous look). Returns arrays over the looks — ``n``
    (observations since the baseline), ``running`` (their mean), and for the window that gives the most
    evidence of a drop at that look (the highest lower end): ``start`` (the index of its first look),
    ``window_n``, ``mean``, ``lower``/``upper`` (its sequence), ``drop`` (baseline mean minus ``mean``),
    ``drop_lower``/``drop_upper`` — with ``drift`` (some window's interval above 0 and reaching ``effect``),
    ``baseline_mean``, ``baseline_lower``/``baseline_upper`` and ``first`` (the index of the first look that
    declares drift, ``None`` when none does)."""
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
    cum = np.concatenate(([0.0], np.cumsum(post)))
    m = at.size
    begin = np.concatenate(([0], at[:-1])) if m else at  # where each start's window begins
    j, t = np.triu_indices(m)  # every window: start j, look t >= j
    n_w = (at[t] - begin[j]).astype(np.float64)
    s_w = cum[at[t]] - cum[begin[j]]
    lower, upper = betabinomial_confseq(s_w, n_w, window_levels(m, alpha)[j])
    drop_lower = np.clip(b_low - upper, -1.0, 1.0)
    drop_upper = np.clip(b_up - lower, -1.0, 1.0)
    fires = (n_w > 0) & (drop_lower > 0) & (drop_upper >= effect)
    score = np.where(n_w > 0, drop_lower, -np.inf)
    pick = np.empty(m, dtype=np.int64)  # per look: the window with the highest lower end (the earliest on ties)
    fired = np.zeros(m, dtype=bool)
    for k in range(m):
        rows = np.flatnonzero(t == k)
        pick[k] = rows[int(np.argmax(score[rows]))]
        fired[k] = bool(fires[rows].any())
    drift = np.cumsum(fired) > 0  # once declared, a drift stays declared
    pn, ps = n_w[pick], s_w[pick]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(pn > 0, ps / np.maximum(pn, 1), np.nan)
        running = np.where(at > 0, cum[at] / np.maximum(at, 1), np.nan)
    hits = np.flatnonzero(drift)
    return {"n": at, "running": running, "start": j[pick], "window_n": pn.astype(np.int64), "mean": mean,
            "lower": lower[pick], "upper": upper[pick], "drop": p0 - mean, "drop_lower": drop_lower[pick],
            "drop_upper": drop_upper[pick], "drift": drift, "baseline_mean": p0, "baseline_lower": b_low,
            "baseline_upper": b_up, "first": int(hits[0]) if hits.size else None}
