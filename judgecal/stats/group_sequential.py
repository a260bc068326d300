"""A group-sequential rule for a mean effect: look after each batch, stop once the decision is settled.

**The intervals.** Per-unit values ``x_1, x_2, ...`` (independent, mean ``mu``, e.g. a perturbed run's shift minus
the unperturbed run's on one item) are looked at after ``n_1 < n_2 < ... <= N`` units (``N``: the most the budget
allows). At look ``k`` the *repeated confidence interval* (Jennison & Turnbull, "Repeated confidence intervals for
group sequential clinical trials", Controlled Clinical Trials 5, 1984; *Group Sequential Methods*, 2000, ch. 9) is

``mean_k +- z(1 - a_k / 2) * sqrt(v_k / n_k)``,  ``v_k = (sum (x_i - mean_k)^2 + v0) / n_k``

with ``a_k = (1 - f) (alpha(t_k) - alpha(t_{k-1}))`` the increment of the Lan-DeMets Pocock-type spending function
``alpha(t) = alpha * log(1 + (e - 1) t)`` at the information fraction ``t_k = n_k / N`` (Lan & DeMets,
"Discrete sequential boundaries for clinical trials", Biometrika 70, 1983), and the look at ``N`` given ``f alpha``
more (``f = 1/2``: the budget's last look, where a fixed-N test decides, is not starved by the union bound over
many early looks). The shares sum to ``alpha``, so by
the union bound every look's interval holds ``mu`` at once with probability at least ``1 - alpha`` (to the normal
approximation): looking after every batch costs no error. The union bound is conservative (an exact boundary
from the recursive integration would be narrower); ``v0`` (one pseudo-unit of variance) keeps a first batch with
no spread from giving an interval of zero width.

**The decision.** Given the effect of interest ``e`` (a size that matters, above 0): *flag* when the interval lies
above 0 and reaches ``e`` (significance and an effect of that size, the flag rule of the fixed-N audit); *clear*
when the interval lies below ``e`` (an effect of interest is excluded). The rule stops at the first look where
either holds. With probability at least ``1 - alpha/2`` a true ``mu <= 0`` is never flagged and a true ``mu >= e``
is never cleared, whenever it stops. At the last look (the budget spent) without either, the decision is *open*
(not flagged, the interval still holding both 0 and ``e``).

Edge cases: an empty series decides nothing (``open`` at 0 units); looks past the series' end are cut to it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import norm

from judgecal.errors import StatsError

FloatArray = NDArray[np.float64]
V0 = 1.0  # the pseudo-unit's variance
FINAL = 0.5  # the share of alpha kept for the last look


def spending(t: ArrayLike, alpha: float) -> FloatArray:
    """The Pocock-type spending function ``alpha log(1 + (e - 1) t)`` (0 at ``t = 0``, ``alpha`` at ``t = 1``)."""
    return alpha * np.log1p((np.e - 1) * np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0))


def look_levels(looks: ArrayLike, n_max: int, alpha: float, final: float = FINAL) -> FloatArray:
    """Each look's share of ``alpha``: ``1 - final`` of it spent by the spending function's increments since the
    previous look, and ``final`` of it kept for the look at ``n_max`` (the budget spent)."""
    if not 0 < alpha < 1:
        raise StatsError(f"alpha must be strictly between 0 and 1, got {alpha}")
    n = np.asarray(looks, dtype=np.float64).ravel()
    if n_max <= 0 or np.any(np.diff(n) <= 0) or (n.size and (n[0] <= 0 or n[-1] > n_max)):
        raise StatsError("looks must be increasing counts of units between 1 and the maximum")
    spent = (1 - final) * spending(n / n_max, alpha)
    out = np.diff(np.concatenate(([0.0], spent)))
    if n.size and n[-1] == n_max:
        out[-1] += final * alpha  # the reserve: the look that spends the budget
    return out


def repeated_intervals(values: ArrayLike, looks: ArrayLike, n_max: int, alpha: float = 0.05,
                       v0: float = V0) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(mean, lower, upper)`` at each look (``looks``: how many of ``values`` had come), valid at all looks at
    once with probability ``1 - alpha``."""
    x = np.asarray(values, dtype=np.float64).ravel()
    n = np.asarray(looks, dtype=np.int64).ravel()
    if n.size and n[-1] > x.size:
        raise StatsError(f"a look at {int(n[-1])} units, but only {x.size} values")
    a = look_levels(n, n_max, alpha)
    s1 = np.concatenate(([0.0], np.cumsum(x)))[n]
    s2 = np.concatenate(([0.0], np.cumsum(x * x)))[n]
    mean = s1 / n
    ss = np.maximum(s2 - n * mean * mean, 0.0)
    half = norm.isf(a / 2) * np.sqrt((ss + v0) / n) / np.sqrt(n)
    return mean, mean - half, mean + half


def batch_looks(n: int, batch: int) -> NDArray[np.int64]:
    """Looks after every ``batch`` units and at the last one: ``batch, 2 batch, ..., n``."""
    if batch < 1:
        raise StatsError(f"a batch holds at least one unit, got {batch}")
    return np.unique(np.append(np.arange(batch, n + 1, batch), n)).astype(np.int64) if n else np.zeros(0, np.int64)


def decide(lower: float, upper: float, effect: float) -> str:
    """``flag`` (above 0, reaching ``effect``), ``clear`` (below ``effect``) or ``open``."""
    if lower > 0 and upper >= effect:
        return "flag"
    return "clear" if upper < effect else "open"


def sequential_decision(values: ArrayLike, *, batch: int = 1, looks: ArrayLike | None = None,
                        n_max: int | None = None, effect: float = 0.05, alpha: float = 0.05,
                        v0: float = V0) -> dict[str, Any]:
    """Run the rule over ``values`` in their order, looking after every ``batch`` units (or at the unit counts
    ``looks``, the ones made so far) up to ``n_max`` (default: all of them; the spending's maximum). Returns ``decision`` (flag / clear / open), ``n`` (units used), ``looks`` (how many looks were
    made), ``estimate``, ``ci_low``, ``ci_high`` (the interval at the stop)."""
    if effect <= 0:
        raise StatsError(f"the effect of interest must be above 0, got {effect}")
    x = np.asarray(values, dtype=np.float64).ravel()
    cap = x.size if n_max is None else min(int(n_max), x.size)
    if cap == 0:
        return {"decision": "open", "n": 0, "looks": 0, "estimate": None, "ci_low": None, "ci_high": None}
    at = batch_looks(cap, batch) if looks is None else np.asarray(looks, dtype=np.int64).ravel()
    at = at[(at > 0) & (at <= cap)]
    if at.size == 0:
        return {"decision": "open", "n": 0, "looks": 0, "estimate": None, "ci_low": None, "ci_high": None}
    mean, lo, hi = repeated_intervals(x, at, cap if n_max is None else int(n_max), alpha, v0)
    verdicts = [decide(float(a), float(b), effect) for a, b in zip(lo, hi, strict=True)]
    k = next((i for i, v in enumerate(verdicts) if v != "open"), len(at) - 1)
    return {"decision": verdicts[k], "n": int(at[k]), "looks": k + 1, "estimate": float(mean[k]),
            "ci_low": float(lo[k]), "ci_high": float(hi[k])}
