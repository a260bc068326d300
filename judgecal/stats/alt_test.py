"""Can a judge replace an annotator? The alternative annotator test and kappa against its references.

Alternative annotator test (Calderon, Reichart & Dror, ACL 2025, "The Alternative Annotator Test for
LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs"). Leave annotator
``j`` out; on each item ``i`` that ``j`` labelled, score the judge and ``j`` against the remaining
annotators' labels (accuracy: the share of them it matches; or ``-RMSE`` for numeric labels):
``W^f_ij = [S(judge) >= S(h_j)]``, ``W^h_ij = [S(h_j) >= S(judge)]``. Per annotator, a one-sided paired
t-test of ``H0: rho^h_j - rho^f_j >= epsilon`` against ``H1: < epsilon`` on ``d_i = W^h_ij - W^f_ij``
(``t = (mean(d) - epsilon) / (sd(d) / sqrt(n_j))``, ``n_j - 1`` degrees of freedom; ``epsilon`` is the
cost-benefit allowance: 0.2 for experts, 0.15 skilled, 0.1 crowd). The Benjamini–Yekutieli procedure at
level ``q`` controls the false discovery rate across annotators; the winning rate ``omega`` is the share
of annotators whose null is rejected, and the judge passes when ``omega >= 0.5``. The advantage
probability ``rho^f`` is the mean over annotators of ``mean(W^f)``. Items need at least two human
labels; annotators need ``min_items`` items (30 in the paper, for the t-test's normal approximation).
A constant ``d`` (zero variance) gives ``p = 0`` when ``mean(d) < epsilon`` and 1 otherwise.

Kappa in context:
- Judge's Verdict benchmark (Han et al., 2025): ``z = (kappa_judge - mean kappa_hh) / sd kappa_hh`` with
  ``kappa_judge`` the mean Cohen's kappa of the judge with each annotator and ``kappa_hh`` Cohen's kappa
  of each pair of annotators (sd with divisor ``m - 1``); ``|z| < 1`` human-like, ``z >= 1``
  super-consistent, ``z <= -1`` below the humans.
- Chance baselines: a rater that draws labels from the truth's marginal ``p`` scores ``kappa = 0`` and
  accuracy ``sum_k p_k^2``; always answering the majority class scores the base rate ``max_k p_k``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy import special

from judgecal.errors import StatsError
from judgecal.stats.bootstrap import cohen_kappa_from_confusion

FloatArray = NDArray[np.float64]
Scoring = Literal["accuracy", "neg_rmse"]


@dataclass(frozen=True)
class AltTestResult:
    """Outcome of the alternative annotator test; ``per_annotator`` has one row per annotator tested."""

    winning_rate: float
    passed: bool
    advantage_probability: float
    epsilon: float
    q: float
    n_annotators: int
    per_annotator: pd.DataFrame = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {"winning_rate": self.winning_rate, "passed": self.passed,
                "advantage_probability": self.advantage_probability, "epsilon": self.epsilon, "q": self.q,
                "n_annotators": self.n_annotators, "per_annotator": self.per_annotator.to_dict("records")}


def benjamini_yekutieli(p: ArrayLike, q: float = 0.05) -> NDArray[np.bool_]:
    """Hypotheses rejected by Benjamini & Yekutieli (2001) at FDR level ``q`` (any dependence):
    reject the ``k`` smallest p-values, ``k`` the largest with ``p_(k) <= k q / (m H_m)``."""
    from scipy.stats import false_discovery_control

    pv = np.asarray(p, dtype=np.float64)
    if pv.size == 0:
        return np.zeros(0, dtype=bool)
    return np.asarray(false_discovery_control(pv, method="by") <= q)


def _matrix(humans: ArrayLike) -> tuple[NDArray[np.object_], list[Any]]:
    frame = humans if isinstance(humans, pd.DataFrame) else pd.DataFrame(np.asarray(humans, dtype=object))
    arr = np.array(frame.to_numpy(dtype=object), dtype=object)
    arr[pd.isna(arr)] = None
    return arr, list(frame.columns)


def _scores(h: NDArray[np.object_], f: NDArray[np.object_], present: NDArray[np.bool_], scoring: Scoring
            ) -> tuple[FloatArray, FloatArray]:
    """``S(judge)`` and ``S(h_j)`` against the other annotators, for every (item, annotator) present."""
    n_i = present.sum(1, keepdims=True).astype(np.float64)
    n_rem = np.maximum(n_i - 1, 1)
    if scoring == "accuracy":
        match_f = present & (h == f[:, None])
        same = np.zeros(h.shape)
        for j in range(h.shape[1]):
            same[:, j] = (present & (h == h[:, [j]])).sum(1)
        s_f = (match_f.sum(1, keepdims=True) - match_f) / n_rem
        s_h = (same - 1) / n_rem
    elif scoring == "neg_rmse":
        x = np.where(present, h, 0.0).astype(np.float64)
        fv = f.astype(np.float64)[:, None]
        s1, s2 = x.sum(1, keepdims=True), (x * x).sum(1, keepdims=True)
        sq_f = n_i * fv * fv - 2 * fv * s1 + s2 - (fv - x) ** 2
        sq_h = n_i * x * x - 2 * x * s1 + s2
        s_f = -np.sqrt(np.maximum(sq_f, 0) / n_rem)
        s_h = -np.sqrt(np.maximum(sq_h, 0) / n_rem)
    else:
        raise StatsError(f"scoring must be 'accuracy' or 'neg_rmse', not {scoring!r}")
    return s_f, s_h


def one_sided_t_less(d: FloatArray, popmean: float) -> tuple[float, float]:
    """``t = (mean(d) - popmean) / (sd / sqrt(n))`` and ``P(T_{n-1} <= t)``; constant ``d`` gives
    ``(-inf, 0)`` below ``popmean`` and ``(inf, 1)`` otherwise."""
    n = len(d)
    m, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return (-np.inf, 0.0) if m < popmean else (np.inf, 1.0)
    t = (m - popmean) / (sd / np.sqrt(n))
    return float(t), float(special.stdtr(n - 1, t))


def alt_test(humans: ArrayLike, judge: ArrayLike, *, epsilon: float = 0.2, q: float = 0.05,
             scoring: Scoring = "accuracy", min_annotators: int = 2, min_items: int = 30) -> AltTestResult:
    """Alternative annotator test. ``humans``: items x annotators (a DataFrame's columns name the
    annotators; ``None``/NaN where an annotator did not label the item); ``judge``: the judge's label
    per item (``None`` leaves the item out). Annotators with fewer than ``min_items`` usable items are
    not tested (the paper skips them too); none left gives ``winning_rate`` NaN and ``passed`` False."""
    h, names = _matrix(humans)
    f = np.array(pd.Series(judge, dtype=object).to_numpy(dtype=object), dtype=object)
    if len(f) != h.shape[0]:
        raise StatsError(f"humans has {h.shape[0]} items but judge has {len(f)}")
    f[pd.isna(f)] = None
    present = h != None  # noqa: E711 (element-wise)
    usable = (present.sum(1) >= max(min_annotators, 2)) & (f != None)  # noqa: E711
    present &= usable[:, None]
    s_f, s_h = _scores(h, np.where(usable, f, 0), present, scoring)
    tol = 1e-12
    w_f = (s_f >= s_h - tol).astype(np.float64)
    w_h = (s_h >= s_f - tol).astype(np.float64)
    rows = []
    for j, name in enumerate(names):
        sel = present[:, j]
        n_j = int(sel.sum())
        if n_j < max(min_items, 2):
            continue
        d = w_h[sel, j] - w_f[sel, j]
        t, p = one_sided_t_less(d, epsilon)
        rows.append({"annotator": name, "n": n_j, "rho_judge": float(w_f[sel, j].mean()),
                     "rho_human": float(w_h[sel, j].mean()), "mean_diff": float(d.mean()), "t": t,
                     "p_value": p})
    cols = ["annotator", "n", "rho_judge", "rho_human", "mean_diff", "t", "p_value"]
    per = pd.DataFrame(rows, columns=cols)
    per["rejected"] = benjamini_yekutieli(per["p_value"].to_numpy(), q) if len(per) else np.zeros(0, bool)
    m = len(per)
    omega = float(per["rejected"].mean()) if m else float("nan")
    adv = float(per["rho_judge"].mean()) if m else float("nan")
    return AltTestResult(omega, bool(m and omega >= 0.5), adv, epsilon, q, m, per)


def cohen_kappa(x: ArrayLike, y: ArrayLike) -> float:
    """Cohen's kappa of two raters on the items both labelled (NaN when none, or when chance
    agreement is 1)."""
    a = np.array(pd.Series(x, dtype=object).to_numpy(dtype=object), dtype=object)
    b = np.array(pd.Series(y, dtype=object).to_numpy(dtype=object), dtype=object)
    ok = pd.notna(a) & pd.notna(b)
    if not ok.any():
        return float("nan")
    codes, uniq = pd.factorize(np.concatenate([a[ok], b[ok]]))
    k, n = len(uniq), int(ok.sum())
    conf = np.zeros((k, k))
    np.add.at(conf, (codes[:n], codes[n:]), 1.0)
    return float(cohen_kappa_from_confusion(conf))


def kappa_z(humans: ArrayLike, judge: ArrayLike) -> dict[str, Any]:
    """Judge's Verdict z-score of the judge's mean kappa with the annotators against the annotators'
    pairwise kappas: ``{kappa_judge, kappa_human_mean, kappa_human_sd, n_pairs, z, pattern}``."""
    h, _ = _matrix(humans)
    f = np.asarray(pd.Series(judge, dtype=object).to_numpy(dtype=object))
    kj = [cohen_kappa(f, h[:, j]) for j in range(h.shape[1])]
    kh = [cohen_kappa(h[:, a], h[:, b]) for a, b in combinations(range(h.shape[1]), 2)]
    kj_f, kh_f = np.array(kj, dtype=np.float64), np.array(kh, dtype=np.float64)
    kj_f, kh_f = kj_f[np.isfinite(kj_f)], kh_f[np.isfinite(kh_f)]
    k_judge = float(kj_f.mean()) if kj_f.size else float("nan")
    mean = float(kh_f.mean()) if kh_f.size else float("nan")
    sd = float(kh_f.std(ddof=1)) if kh_f.size > 1 else float("nan")
    z = (k_judge - mean) / sd if np.isfinite(sd) and sd > 0 else float("nan")
    pattern = ("not enough annotator pairs" if not np.isfinite(z) else "super-consistent" if z >= 1
               else "below the humans" if z <= -1 else "human-like")
    return {"kappa_judge": k_judge, "kappa_judge_per_annotator": kj, "kappa_human_mean": mean,
            "kappa_human_sd": sd, "n_pairs": int(kh_f.size), "z": z, "pattern": pattern}


def kappa_with_baselines(pred: ArrayLike, truth: ArrayLike) -> dict[str, Any]:
    """Kappa and accuracy beside the base rate and a chance rater that draws from the truth's marginal:
    ``{n, kappa, accuracy, base_rate, chance_accuracy, chance_kappa}``."""
    a = np.array(pd.Series(pred, dtype=object).to_numpy(dtype=object), dtype=object)
    b = np.array(pd.Series(truth, dtype=object).to_numpy(dtype=object), dtype=object)
    if len(a) != len(b):
        raise StatsError(f"pred has {len(a)} entries but truth has {len(b)}")
    ok = pd.notna(a) & pd.notna(b)
    n = int(ok.sum())
    if n == 0:
        nan = float("nan")
        return {"n": 0, "kappa": nan, "accuracy": nan, "base_rate": nan, "chance_accuracy": nan,
                "chance_kappa": 0.0}
    p = pd.Series(b[ok]).value_counts(normalize=True).to_numpy(dtype=np.float64)
    return {"n": n, "kappa": cohen_kappa(a[ok], b[ok]), "accuracy": float(np.mean(a[ok] == b[ok])),
            "base_rate": float(p.max()), "chance_accuracy": float((p**2).sum()), "chance_kappa": 0.0}


__all__ = ["AltTestResult", "alt_test", "benjamini_yekutieli", "cohen_kappa", "kappa_with_baselines",
           "kappa_z", "one_sided_t_less"]
