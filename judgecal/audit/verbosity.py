"""Verbosity bias: does the judge reward length more than people do?

- ``prefer_longer_rate``: among decisive verdicts on items whose two responses differ in length,
  the share that picked the longer one; the same for the human consensus on the same items, and
  ``verbosity_excess`` = judge minus humans, with item-bootstrap CIs.
- ``lc_win_rate``: the length-controlled win rate of AlpacaEval 2 (Dubois et al., 2024): a logistic
  GLM ``logit P(A wins) = b0 + b1 tanh((len_A - len_B) / sd)`` (ties count half), predicted at zero
  length difference, ``sigma(b0)``; beside the raw win rate of A. ``length_coef`` is ``b1`` with its
  Wald p-value. Lengths are in words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from judgecal.audit.models import category_places, take
from judgecal.stats import bootstrap as stats
from judgecal.stats.inference import logistic_glm

WIN_A = {"A": 1.0, "B": 0.0, "tie": 0.5}


__all__ = ["lc_win_rate", "verbosity", "verbosity_deferred"]


def lc_win_rate(win_a: np.ndarray, diff: np.ndarray, trials: np.ndarray | None = None) -> dict[str, float]:
    """Raw and length-controlled win rate of A from outcomes in {0, .5, 1} and length differences.

    With ``trials``, ``win_a`` holds each row's summed outcomes over that many judgments of the same
    length difference (one row per item): the binomial likelihood, hence the fit, is the same.
    """
    n = np.ones(len(win_a)) if trials is None else np.asarray(trials, dtype=np.float64)
    total = float(n.sum())
    raw = float(win_a.sum() / total) if total else float("nan")
    undefined = {"raw_win_rate_a": raw, "lc_win_rate": float("nan"), "length_coef": float("nan"),
                 "length_coef_p": float("nan")}
    mean = float((n * diff).sum() / total) if total else 0.0
    sd = float(np.sqrt((n * (diff - mean) ** 2).sum() / total)) if total else 0.0
    if sd == 0 or total < 3 or raw in (0.0, 1.0):
        return undefined  # no length variation, or a constant outcome: the GLM is not identified
    x = np.column_stack([np.ones(len(diff)), np.tanh(diff / sd)])
    # a tie is half a win: each row once as a win and once as a loss, weighted by their counts
    y = np.concatenate([np.ones(len(win_a)), np.zeros(len(win_a))])
    w = np.concatenate([win_a, n - win_a])
    try:
        beta, cov = logistic_glm(np.vstack([x, x]), y, weights=w)
    except np.linalg.LinAlgError:
        return undefined
    se = float(np.sqrt(cov[1, 1]))
    z = beta[1] / se if se > 0 else float("nan")
    return {"raw_win_rate_a": raw, "lc_win_rate": float(1 / (1 + np.exp(-beta[0]))),
            "length_coef": float(beta[1]), "length_coef_p": float(2 * special.ndtr(-abs(z)))}


def verbosity(judgments: pd.DataFrame, truth: pd.Series, lens: pd.DataFrame, *, n_boot: int = 2000,
              seed: int = 0) -> dict[str, Any]:
    """Judge vs humans on length, on the items both judged (see the module docstring)."""
    got = verbosity_deferred(judgments, truth, lens)
    if got is None:
        return {}
    per_item, finish = got
    return finish(stats.bootstrap_sums(per_item, n_boot, seed))


def _items(truth: pd.Series, lens: pd.DataFrame, shared: dict[str, Any]) -> dict[str, Any]:
    """The items with a truth and both lengths, in the item bootstrap's order (their ids sorted as text), and
    what the lengths and the humans give each: found once for every judge of the same truth (``shared``)."""
    if "items" not in shared:
        ids = pd.Index(np.asarray(truth.index, dtype=object)).unique()
        ids = ids[ids.isin(pd.Index(np.asarray(lens.index, dtype=object)))]
        names = np.asarray(ids, dtype=object)
        names = names[np.argsort(names.astype(str), kind="stable")]
        items = pd.Index(names, dtype=object)
        ln = lens[~lens.index.duplicated()].reindex(items)
        diff = (ln["len_a"] - ln["len_b"]).to_numpy(dtype=float)
        h = truth[~truth.index.duplicated()].reindex(items).to_numpy(dtype=str)
        differs = diff != 0
        human_dec = np.isin(h, ("A", "B")) & differs
        shared.update(items=items, diff=diff, longer_a=diff > 0, differs=differs, human_dec=human_dec,
                      human_longer=human_dec & ((h == "A") == (diff > 0)),
                      human_win=np.array([WIN_A.get(x, 0.5) for x in h]))
    return shared


def _positions(col: pd.Series, items: pd.Index, shared: dict[str, Any]) -> np.ndarray:
    """Each row's item among ``items`` (-1: not there); a categorical column through its categories, found
    among the items once for every judge whose column has them."""
    if not isinstance(col.dtype, pd.CategoricalDtype):
        return items.get_indexer(pd.Index(np.asarray(col, dtype=object)))
    return take(category_places(col, items, shared), col.cat.codes.to_numpy())


def verbosity_deferred(judgments: pd.DataFrame, truth: pd.Series, lens: pd.DataFrame,
                       shared: dict[str, Any] | None = None
                       ) -> tuple[np.ndarray, Callable[[np.ndarray], dict[str, Any]]] | None:
    """:func:`verbosity` as its per-item sums (judge's longer picks and decisive verdicts, the humans' alike) and
    the step that finishes it from their replicates ``W @ sums``, so that many judges' are bootstrapped in one
    pass (:class:`judgecal.stats.bootstrap.Replicates`); ``None`` when no item counts. ``shared``: a dict kept
    between judges of the same truth and lengths (what the items give, found once)."""
    got = _items(truth, lens, {} if shared is None else shared)
    pos = _positions(judgments["item_id"], got["items"], got)
    keep = judgments["verdict"].isin(["A", "B", "tie"]).to_numpy() & (pos >= 0)
    if not keep.any():
        return None
    pos = pos[keep]
    present = np.zeros(len(got["items"]), dtype=bool)
    present[pos] = True
    used = np.flatnonzero(present)  # the judge's items, in the items' order
    number = np.full(len(present), -1, dtype=np.int64)
    number[used] = np.arange(len(used))
    codes = number[pos]
    n_items = len(used)
    diff, longer_a, differs = got["diff"][used], got["longer_a"][used], got["differs"][used]
    v = judgments["verdict"].to_numpy(dtype=object)[keep]
    judge_dec = np.isin(v, ("A", "B")) & differs[codes]
    judge_longer = judge_dec & ((v == "A") == longer_a[codes])
    human_dec = got["human_dec"][used]
    per_item = np.column_stack([
        np.bincount(codes, weights=judge_longer, minlength=n_items),
        np.bincount(codes, weights=judge_dec, minlength=n_items),
        got["human_longer"][used].astype(float), human_dec.astype(float),
    ])

    def judge_rate(m: np.ndarray) -> np.ndarray:
        return stats.safe_ratio(m[:, 0], m[:, 1])

    def human_rate(m: np.ndarray) -> np.ndarray:
        return stats.safe_ratio(m[:, 2], m[:, 3])

    def finish(boot: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, fn, n in (("prefer_longer_rate", judge_rate, int(judge_dec.sum())),
                            ("human_prefer_longer_rate", human_rate, int(human_dec.sum())),
                            ("verbosity_excess", lambda m: judge_rate(m) - human_rate(m), n_items)):
            est, lo, hi = stats.estimate_with_ci(fn, per_item, boot)
            out[name] = {"estimate": est, "ci_low": lo, "ci_high": hi, "n": n}
        valid = np.isin(v, ("A", "B", "tie"))
        win = np.where(v == "A", 1.0, np.where(v == "tie", 0.5, 0.0))
        out["judge_length_control"] = lc_win_rate(np.bincount(codes, weights=win, minlength=n_items), diff,
                                                  np.bincount(codes, weights=valid, minlength=n_items))
        out["human_length_control"] = lc_win_rate(got["human_win"][used], diff)
        return out

    return per_item, finish
