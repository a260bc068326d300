"""Win rates as AlpacaEval publishes them: the mean preference probability.

A judge that gives probabilities (AlpacaEval's weighted annotators read them from the logprobs of its
verdict token) does not only say which candidate won but how sure it was. AlpacaEval's ``win_rate`` of a
model is the mean over its comparisons of the probability that it won (``preference - 1``, a tie
counting one half; Dubois et al., 2024). Per judgment, the probability that candidate A won is

    q = (p_a + p_tie / 2) / (p_a + p_b + p_tie)

(renormalised over the three outcomes, as a judge's top logprobs need not sum to one), or, without
probabilities, 1, 1/2 or 0 for the verdict ``A``, ``tie``, ``B`` — then the weighted win rate is the
ordinary ``(wins + ties / 2) / n``. Per item, the mean of ``q`` over the orders the judge saw (the
first sample of each). Each model's weighted win rate is the mean of its ``q`` (``1 - q`` as candidate
B) over the items where it is a candidate, with an item-bootstrap percentile CI
(:func:`judgecal.stats.winrate.win_rates`' machinery, a probability in place of the outcome).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import bootstrap_sums
from judgecal.stats.winrate import as_objects, model_index, model_sums, outcome_scores, rates_finish

FloatArray = NDArray[np.float64]


def _floats(x: ArrayLike) -> FloatArray:
    """``x`` as floats, NaN for what is missing or not a number (a numeric column as it is)."""
    if isinstance(x, (pd.Series, np.ndarray)) and pd.api.types.is_numeric_dtype(x.dtype) and x.dtype != bool:
        return np.asarray(pd.Series(x).to_numpy(dtype=float, na_value=np.nan), dtype=float)
    return np.asarray(pd.to_numeric(pd.Series(as_objects(x)), errors="coerce"), dtype=float)


def preference_of_a(p_a: ArrayLike, p_b: ArrayLike, p_tie: ArrayLike, verdict: ArrayLike,
                    invalid_as: str = "tie") -> FloatArray:
    """Per judgment, the probability that candidate A won (see the module docstring); NaN for no
    comparison (an unparsable verdict under ``invalid_as="wrong"``, or anything else unknown)."""
    a, b, t = (_floats(x) for x in (p_a, p_b, p_tie))
    t = np.where(np.isnan(t), 0.0, t)
    has = np.isfinite(a) & np.isfinite(b) & ((a + b + t) > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        q = (a + t / 2) / (a + b + t)
    return np.where(has, q, _verdict_scores(verdict, invalid_as))


def _verdict_scores(verdict: ArrayLike, invalid_as: str) -> FloatArray:
    """:func:`outcome_scores` of the verdicts, an unparsable one a tie or NaN (``invalid_as``)."""
    if isinstance(verdict, pd.Series) and isinstance(verdict.dtype, pd.CategoricalDtype):
        # each category scored once, then looked up per row (code -1, a missing verdict, reads the NaN appended)
        per = _verdict_scores(verdict.cat.categories.to_numpy(dtype=object), invalid_as)
        return np.append(per, np.nan)[verdict.cat.codes.to_numpy()]
    v = as_objects(verdict).copy()
    v[v == "invalid"] = "tie" if invalid_as == "tie" else None
    return outcome_scores(v)


def weighted_win_rates(model_a: ArrayLike, model_b: ArrayLike, pref_a: ArrayLike, *, n_boot: int = 2000,
                       seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Each model's mean preference probability with an item-bootstrap percentile CI; ``pref_a`` per
    item: the probability that ``model_a`` won (NaN: no comparison). Frame indexed by model with
    ``estimate, ci_low, ci_high, n``."""
    s, finish = weighted_win_rates_deferred(model_a, model_b, pref_a, level=level)
    return finish(bootstrap_sums(s, n_boot, seed))


def weighted_win_rates_deferred(model_a: ArrayLike, model_b: ArrayLike, pref_a: ArrayLike, *, level: float = 0.95
                                ) -> tuple[FloatArray, Callable[[FloatArray], pd.DataFrame]]:
    """:func:`weighted_win_rates` in two steps (:func:`judgecal.stats.winrate.win_rates_deferred`)."""
    ia, ib, models = model_index(model_a, model_b)
    m = len(models)
    q = np.asarray(pref_a, dtype=float)
    if len(q) != len(ia):
        raise StatsError(f"pref_a has {len(q)} entries but model_a has {len(ia)}")
    s = model_sums(ia, ib, q, m)
    return s, rates_finish(s.sum(0), m, models, level)


def item_preferences(judgments: pd.DataFrame, invalid_as: str = "tie") -> pd.Series:
    """item_id -> the judge's probability that candidate A won: the mean over the orders it saw of the
    first sample's :func:`preference_of_a` (columns ``item_id, order, sample, verdict, p_a, p_b, p_tie``)."""
    if not len(judgments):
        return pd.Series(dtype=float)
    cols = {k: judgments[k] if k in judgments else np.full(len(judgments), np.nan) for k in ("p_a", "p_b", "p_tie")}
    q = preference_of_a(cols["p_a"], cols["p_b"], cols["p_tie"], judgments["verdict"], invalid_as)
    # by codes, not names: each (item, order)'s first row in sample order, then the mean of its orders' q
    # (NaN q left out, as a group mean does; NaN where an item has none)
    item, names = pd.factorize(judgments["item_id"])
    order = pd.factorize(judgments["order"])[0]
    by_sample = np.argsort(judgments["sample"].to_numpy(), kind="stable")
    by_sample = by_sample[item[by_sample] >= 0]
    key = item[by_sample].astype(np.int64) * (order.max() + 2) + order[by_sample] + 1
    first = by_sample[np.unique(key, return_index=True)[1]]
    counted = first[~np.isnan(q[first])]
    total = np.bincount(item[counted], weights=q[counted], minlength=len(names))
    n = np.bincount(item[counted], minlength=len(names))
    seen = np.bincount(item[first], minlength=len(names)) > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan)
    out = pd.Series(mean[seen], index=pd.Index([str(x) for x in np.asarray(names, dtype=object)[seen]], dtype=object,
                                               name="item_id"), name="q")
    return out.sort_index()
