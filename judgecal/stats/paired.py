"""Paired comparison of two raters on the same items: the item bootstrap of a difference.

Both raters' per-item sums ``S_a`` (n x m_a) and ``S_b`` (n x m_b) over the same ``n`` items are
resampled with the same weights: replicate ``r`` is ``W_r @ [S_a | S_b]``, so a difference
``f_b(W_r S_b) - f_a(W_r S_a)`` keeps the pairing and the items' own difficulty cancels (Efron &
Tibshirani, 1993, ch. 6; the paired bootstrap of Koehn, 2004, for MT metrics).

"Worse by" turns a difference into a loss whatever the metric's good direction:

- ``higher`` (accuracy, κ): ``f_a - f_b``;
- ``lower`` (invalid rate): ``f_b - f_a``;
- ``null`` (a bias whose ideal is ``null``, e.g. a first-position rate of 0.5): ``|f_b - null| -
  |f_a - null|``, how much further from no bias the candidate lies.

The candidate is *significantly worse* when the one-sided lower bound of ``worse_by`` at level
``1 - alpha`` (the ``alpha`` quantile of its replicates) is above 0; several metrics are tested at
``alpha / m`` each (Bonferroni), so the chance that any of them fails a candidate that is no worse
stays at most ``alpha``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from judgecal.errors import StatsError
from judgecal.stats import bootstrap as stats

Stat = Callable[[NDArray[np.float64]], NDArray[np.float64]]
DIRECTIONS = ("higher", "lower", "null")


def paired_replicates(sums_a: NDArray[np.float64], sums_b: NDArray[np.float64], n_boot: int = 2000,
                      seed: int = 0) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Replicated sums of both raters from one set of item resamples (``n_boot x m_a``, ``n_boot x m_b``)."""
    a, b = np.asarray(sums_a, dtype=np.float64), np.asarray(sums_b, dtype=np.float64)
    if a.shape[0] != b.shape[0]:
        raise StatsError(f"paired sums need the same items: {a.shape[0]} rows against {b.shape[0]}")
    boot = stats.bootstrap_sums(np.hstack([a, b]), n_boot, seed)
    return boot[:, :a.shape[1]], boot[:, a.shape[1]:]


def worse_by(est_a: Any, est_b: Any, direction: str, null: float = 0.0) -> NDArray[np.float64]:
    """How much worse ``b`` is than ``a`` (positive: worse), elementwise (see the module docstring)."""
    a, b = np.asarray(est_a, dtype=np.float64), np.asarray(est_b, dtype=np.float64)
    if direction == "higher":
        return a - b
    if direction == "lower":
        return b - a
    if direction == "null":
        return np.abs(b - null) - np.abs(a - null)
    raise StatsError(f"direction must be one of {', '.join(DIRECTIONS)}, got {direction!r}")


def _num(v: float) -> float | None:
    return None if not np.isfinite(v) else round(float(v), 10)


def paired_difference(f_a: Stat, f_b: Stat, sums_a: NDArray[np.float64], sums_b: NDArray[np.float64],
                      boot_a: NDArray[np.float64], boot_b: NDArray[np.float64], *, direction: str,
                      null: float = 0.0, level: float = 0.95, alpha: float = 0.05) -> dict[str, Any]:
    """Both estimates, the difference ``b - a`` with its percentile interval, ``worse_by`` with its
    interval and its one-sided lower bound at ``1 - alpha`` (``worse_bound``), and ``p_not_worse``:
    the share of replicates in which ``b`` is no worse (a bootstrap p-value of "b is worse")."""
    est_a = float(f_a(np.asarray(sums_a).sum(0)[None, :])[0])
    est_b = float(f_b(np.asarray(sums_b).sum(0)[None, :])[0])
    rep_a, rep_b = f_a(boot_a), f_b(boot_b)
    diff = rep_b - rep_a
    worse = worse_by(rep_a, rep_b, direction, null)
    lo, hi = stats.percentile_ci(diff, level)
    wlo, whi = stats.percentile_ci(worse, level)
    ok = worse[np.isfinite(worse)]
    bound = float(np.quantile(ok, alpha)) if ok.size else float("nan")
    p = float((ok <= 0).mean()) if ok.size else float("nan")
    return {"baseline": _num(est_a), "candidate": _num(est_b), "difference": _num(est_b - est_a),
            "ci_low": _num(lo), "ci_high": _num(hi), "direction": direction,
            "null": null if direction == "null" else None,
            "worse_by": _num(float(worse_by(est_a, est_b, direction, null))), "worse_ci_low": _num(wlo),
            "worse_ci_high": _num(whi), "worse_bound": _num(bound), "p_not_worse": _num(p)}


__all__ = ["DIRECTIONS", "paired_difference", "paired_replicates", "worse_by"]
