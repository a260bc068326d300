"""Active statistical inference for a mean (Zrnic & Candès, "Active Statistical Inference", ICML 2024).

Every one of ``N`` items carries the judge's score ``f_i``; item ``i`` is sent to people by an independent
(Poisson) draw ``xi_i ~ Bernoulli(pi_i)`` with a known inclusion probability ``pi_i > 0``. Where the judge is
unsure, ``pi_i`` is larger:

    pi_i = min(1, budget (tau u_i / sum(u) + (1 - tau) / N))

(``u_i`` the judge's uncertainty, ``tau`` in [0, 1]; the uniform floor ``(1 - tau) budget / N`` keeps the
weights ``1 / pi_i`` bounded). The estimate of the mean of ``Y`` over the items, with power-tuning ``lambda``,

    theta = (1/N) sum_i [ lambda f_i + (Y_i - lambda f_i) xi_i / pi_i ]

is unbiased for any fixed ``lambda`` (``E[xi_i / pi_i] = 1``); ``Y_i`` is needed only where ``xi_i = 1``. Its
variance over the draw is ``(1/N^2) sum_i (Y_i - lambda f_i)^2 (1 - pi_i) / pi_i``, estimated without bias by
Horvitz–Thompson, ``(1/N^2) sum_i xi_i (Y_i - lambda f_i)^2 (1 - pi_i) / pi_i^2``, and minimised by

    lambda* = sum_i Y_i f_i w_i / sum_i f_i^2 w_i,   w_i = (1 - pi_i) / pi_i

(the numerator estimated over the labelled items with weights ``1 / pi_i``), clipped to [0, 1]; tuned on the
same labels it biases the estimate and narrows the interval too much, so it is cross-fitted (each half of the
items uses the other half's ``lambda``). Tuned or not, the interval ignores the ``lambda``'s own noise: on
PandaLM, DICES-990 and Summary of a Haystack (benchmarks/bench_active.py) the tuned intervals covered 93-95% at
95%, those with ``lambda = 1`` 94-95%; so ``lambda = 1`` is the default and tuning is asked for. ``lambda = 0``
is the Horvitz–Thompson mean of the human labels alone; ``pi_i = 1`` for all gives the classical mean with no
sampling error. The interval is ``theta +- z se``.

``target="items"`` (default) estimates the mean over these ``N`` items (the pass rate of the judged set),
the randomness being the draw only. ``target="population"`` treats the items as a sample from a larger
population, as the paper does: ``se^2 = var(z) / N`` with ``z_i`` the bracketed terms above.

Planner. With ``e_i`` a proxy of ``E[(Y_i - f_i)^2]`` (the judge's own uncertainty), the half-width needs
``(1/N^2) sum_i e_i (1 - pi_i) / pi_i <= (h / z)^2``; :func:`plan_active` finds the smallest budget for the
uniform ``pi_i = n / N`` and for the active ``pi_i`` above. The variance is smallest for ``pi_i`` proportional
to ``sqrt(e_i)`` (the paper's optimal rule), so ``u_i = sqrt(e_i)``.
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
from judgecal.stats.winrate import model_index, outcome_scores

FloatArray = NDArray[np.float64]
DEFAULT_TAU = 0.5
TARGETS = ("items", "population")


@dataclass(frozen=True)
class ActiveResult:
    """Active inference estimate and interval; ``n_labelled`` the items drawn, ``expected_labels`` sum(pi)."""

    estimate: float
    ci_low: float
    ci_high: float
    se: float
    lam: float
    n_items: int
    n_labelled: int
    expected_labels: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _z(level: float) -> float:
    return float(special.ndtri(0.5 + level / 2))


def inclusion_probabilities(uncertainty: ArrayLike, budget: float, *, tau: float = DEFAULT_TAU) -> FloatArray:
    """``pi_i = min(1, budget (tau u_i / sum(u) + (1 - tau) / N))``; all-zero uncertainty gives the uniform
    ``budget / N``. ``u`` must be finite and non-negative, ``budget`` positive, ``tau`` in [0, 1]."""
    u = np.asarray(uncertainty, dtype=np.float64).ravel()
    if not 0.0 <= tau <= 1.0:
        raise StatsError(f"tau must be in [0, 1], not {tau}")
    if not budget > 0:
        raise StatsError(f"budget must be positive, not {budget}")
    if len(u) == 0:
        return u
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise StatsError("uncertainty must be finite and non-negative")
    total = float(u.sum())
    share = u / total if total > 0 else np.full(len(u), 1.0 / len(u))
    return np.minimum(1.0, budget * (tau * share + (1 - tau) / len(u)))


def draw(pi: ArrayLike, seed: int | np.random.Generator = 0) -> NDArray[np.bool_]:
    """Independent (Poisson) draws ``xi_i ~ Bernoulli(pi_i)``, seeded."""
    p = np.asarray(pi, dtype=np.float64).ravel()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return rng.random(len(p)) < p


def active_lambda(y: FloatArray, f: FloatArray, pi: FloatArray, xi: NDArray[np.bool_]) -> float:
    """``lambda* = sum Y f w / sum f^2 w`` with ``w = (1 - pi) / pi``, the numerator over the labelled items
    weighted by ``1 / pi``; clipped to [0, 1]; 0 when no item has ``pi < 1`` or the judge scores are all 0."""
    w = (1 - pi) / pi
    den = float(np.sum(f * f * w))
    if den <= 0:
        return 0.0
    num = float(np.sum(np.where(xi, np.nan_to_num(y) * f * w / pi, 0.0)))
    return float(np.clip(num / den, 0.0, 1.0))


def active_mean(y: ArrayLike, f: ArrayLike, pi: ArrayLike, labelled: ArrayLike, *, level: float = 0.95,
                lam: float | None = 1.0, target: str = "items") -> ActiveResult:
    """Active-inference mean of ``Y`` over all items (see the module docstring).

    ``y`` is read only where ``labelled`` (elsewhere it may be NaN); ``f`` the judge's score on every item;
    ``pi`` the inclusion probability each item was drawn with (in (0, 1]); ``lam`` fixed (default 1, plain
    active inference), or None: power-tuned and cross-fitted (each half of the items, by position, uses the
    ``lambda`` tuned on the other half's labels, which keeps the estimate unbiased). No items gives NaN.
    """
    yy, ff, pp = (np.asarray(v, dtype=np.float64).ravel() for v in (y, f, pi))
    xi = np.asarray(labelled, dtype=bool).ravel()
    n = len(ff)
    if not (len(yy) == len(pp) == len(xi) == n):
        raise StatsError(f"y, f, pi and labelled must have the same length ({len(yy)}, {n}, {len(pp)}, {len(xi)})")
    if target not in TARGETS:
        raise StatsError(f"target must be one of {', '.join(TARGETS)}, not {target!r}")
    if n == 0:
        nan = float("nan")
        return ActiveResult(nan, nan, nan, nan, nan, 0, 0, 0.0)
    if np.any(~(pp > 0) | (pp > 1)):
        raise StatsError("every inclusion probability must be in (0, 1]")
    if not np.all(np.isfinite(ff)):
        raise StatsError("the judge's score f must be finite on every item")
    if not np.all(np.isfinite(yy[xi])):
        raise StatsError("a labelled item has no human label")
    if lam is None:  # cross-fitted: each half of the items uses the lambda tuned on the other half's labels
        odd = np.arange(n) % 2 == 1
        pair = [active_lambda(yy[h], ff[h], pp[h], xi[h]) for h in (odd, ~odd)]
        lam_i = np.where(odd, pair[1], pair[0])
        lam_used = float(np.mean(pair))
    else:
        lam_i = np.full(n, float(lam))
        lam_used = float(lam)
    resid = np.where(xi, np.nan_to_num(yy) - lam_i * ff, 0.0)
    terms = lam_i * ff + resid / pp
    est = float(terms.mean())
    if target == "items":
        var = float(np.sum(resid**2 * (1 - pp) / pp**2)) / n**2
    else:
        var = float(np.var(terms, ddof=1)) / n if n > 1 else float("nan")
    se = math.sqrt(var)
    z = _z(level)
    return ActiveResult(est, est - z * se, est + z * se, se, lam_used, n, int(xi.sum()), float(pp.sum()))


def active_pass_rate(human: ArrayLike, judge: ArrayLike, pi: ArrayLike, *, level: float = 0.95,
                     target: str = "items") -> ActiveResult:
    """Pass rate (share of 1s): ``human`` 1/0 where labelled, NaN (or None) where not; ``judge`` the judge's
    verdict 1/0 or its probability of a pass on every item."""
    h = pd.to_numeric(pd.Series(human, dtype=object), errors="coerce").to_numpy(dtype=np.float64)
    return active_mean(h, judge, pi, np.isfinite(h), level=level, target=target)


def _outcomes(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike,
              pi: ArrayLike) -> tuple[Any, Any, Any, FloatArray, FloatArray, FloatArray]:
    """The models' indices and names, the human and judge outcome scores (a judge's unreadable verdict a tie,
    0.5) and the inclusion probabilities, checked to be of one length."""
    ia, ib, models = model_index(model_a, model_b)
    h, j = outcome_scores(human), outcome_scores(judge)
    p = np.asarray(pi, dtype=np.float64).ravel()
    if not (len(h) == len(j) == len(ia) == len(p)):
        raise StatsError("model_a, model_b, human, judge and pi must have the same length")
    return ia, ib, models, h, np.where(np.isfinite(j), j, 0.5), p


def active_pairwise_win_rates(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike,
                              pi: ArrayLike, *, level: float = 0.95, target: str = "items",
                              lam: float | None = 1.0) -> pd.DataFrame:
    """Head-to-head win rate of ``model_1`` against ``model_2`` (``model_1`` sorts first) for every pair that
    met: ``human`` ``A``/``B``/``tie`` where labelled, ``None`` where not; ``judge`` the judge's verdict on
    every item (anything else counts as a tie); ``pi`` each item's inclusion probability; ``lam`` as for
    :func:`active_mean` (0: the human labels alone). One row per pair with the :class:`ActiveResult` fields."""
    ia, ib, models, h, j, p = _outcomes(model_a, model_b, human, judge, pi)
    lo = np.minimum(ia, ib)
    y, f = np.where(ia == lo, h, 1 - h), np.where(ia == lo, j, 1 - j)
    m = len(models)
    pair = lo * m + np.maximum(ia, ib)
    rows = {}
    for key in np.unique(pair):
        g = pair == key
        r = active_mean(y[g], f[g], p[g], np.isfinite(y[g]), level=level, target=target, lam=lam)
        rows[(models[int(key) // m], models[int(key) % m])] = r.as_dict()
    out = pd.DataFrame.from_dict(rows, orient="index")
    if rows:
        out.index = pd.MultiIndex.from_tuples(list(out.index), names=["model_1", "model_2"])
    return out


def active_win_rates(model_a: ArrayLike, model_b: ArrayLike, human: ArrayLike, judge: ArrayLike, pi: ArrayLike,
                     *, level: float = 0.95, target: str = "items",
                     lam: float | None = 1.0) -> pd.DataFrame:
    """Each model's win rate over the items it played (scores 1, 0.5, 0 in its orientation), arguments as
    :func:`active_pairwise_win_rates`; one row per model."""
    ia, ib, models, h, j, p = _outcomes(model_a, model_b, human, judge, pi)
    rows = {}
    for k, name in enumerate(models):
        g = (ia == k) | (ib == k)
        y, f = np.where(ia[g] == k, h[g], 1 - h[g]), np.where(ia[g] == k, j[g], 1 - j[g])
        rows[name] = active_mean(y, f, p[g], np.isfinite(y), level=level, target=target, lam=lam).as_dict()
    out = pd.DataFrame.from_dict(rows, orient="index")
    out.index.name = "model"
    return out


def active_variance(err2: ArrayLike, pi: ArrayLike) -> float:
    """Design variance of the estimate (``lambda = 1``) with ``e_i`` a proxy of ``E[(Y_i - f_i)^2]``:
    ``(1/N^2) sum e_i (1 - pi_i) / pi_i`` (an item never drawn, ``pi = 0``, makes it infinite unless ``e = 0``)."""
    e, p = np.asarray(err2, dtype=np.float64).ravel(), np.asarray(pi, dtype=np.float64).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):  # never drawn: infinite unless it has no error
        each = np.where(p > 0, e * (1 - p) / p, np.where(e > 0, np.inf, 0.0))
    return float(np.sum(each)) / len(e) ** 2 if len(e) else float("nan")


def _smallest_budget(err2: FloatArray, v: float, tau: float, pis: Any) -> int | None:
    """Smallest integer budget whose ``pis(budget)`` reaches variance ``v`` (bisection: the variance falls as
    the budget grows). The budget may exceed ``N``, the ``pi`` capped at 1 summing to less; it is at most
    ``N / (1 - tau)``, where every ``pi`` is 1. None when no budget reaches ``v`` (``tau = 1`` and items the
    judge is sure of are never drawn)."""
    n = len(err2)
    hi = math.ceil(n / (1 - tau)) if tau < 1 else n * 10**6
    if active_variance(err2, pis(hi)) > v:
        return None
    lo = 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if active_variance(err2, pis(mid)) <= v:
            hi = mid
        else:
            lo = mid
    return hi


def plan_active(err2: ArrayLike, target_halfwidth: float, *, level: float = 0.95, tau: float = DEFAULT_TAU
                ) -> dict[str, Any]:
    """Expected human labels for a half-width ``h`` on the mean over these items, uniform vs active.

    ``err2`` is the judge's own proxy of ``E[(Y_i - f_i)^2]`` per item; the active draw uses
    ``u_i = sqrt(err2_i)``. Returns the budget each way (``n_uniform`` at most ``N``; ``n_active`` the
    ``--budget`` to push, which may exceed ``N`` as ``pi`` caps at 1, None when unreachable), the expected
    labels of the active draw (``sum(pi)``) and the saving ``1 - active / uniform``.
    """
    e = np.asarray(err2, dtype=np.float64).ravel()
    if not target_halfwidth > 0:
        raise StatsError(f"target_halfwidth must be positive, not {target_halfwidth}")
    if len(e) == 0:
        raise StatsError("planning needs at least one item")
    if not np.all(np.isfinite(e)) or np.any(e < 0):
        raise StatsError("err2 must be finite and non-negative")
    v = (target_halfwidth / _z(level)) ** 2
    u = np.sqrt(e)
    n_uni = _smallest_budget(e, v, 0.0, lambda b: inclusion_probabilities(np.zeros(len(e)), b, tau=0.0))
    n_act = _smallest_budget(e, v, tau, lambda b: inclusion_probabilities(u, b, tau=tau))
    exp_act = float(inclusion_probabilities(u, n_act, tau=tau).sum()) if n_act else float("nan")
    return {"target_halfwidth": target_halfwidth, "level": level, "tau": tau, "n_items": int(len(e)),
            "mean_err2": float(e.mean()), "n_uniform": n_uni, "n_active": n_act,
            "expected_labels_active": exp_act,
            "saving": 1 - exp_act / n_uni if n_uni and n_act else float("nan")}


__all__ = ["DEFAULT_TAU", "ActiveResult", "active_lambda", "active_mean", "active_pairwise_win_rates",
           "active_pass_rate", "active_variance", "active_win_rates", "draw", "inclusion_probabilities", "plan_active"]
