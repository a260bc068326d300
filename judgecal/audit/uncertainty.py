"""How unsure a judge is of each pairwise item, from what the workspace stores (for active labelling).

Each judgment is a distribution over the item-oriented outcome score ``s`` (``A`` 1, ``tie`` 0.5, ``B`` 0): its
token probabilities ``p_a, p_b, p_tie`` (normalised) where recorded, else all mass on its verdict. Over an
item's judgments by the judge (its samples, seeds, mutations and both presentation orders, already in item
orientation), the judge's score is the mixture's mean ``f = mean_j E_j[s]`` and its uncertainty the mixture's
variance ``err2 = mean_j E_j[(s - f)^2]``: the spread of the label probabilities plus the disagreement of the
votes over samples and between the orders. For a calibrated judge ``err2`` is ``E[(Y - f)^2]``, the quantity
that sets the variance of the active estimate (:mod:`judgecal.stats.active`). An item the judge never gave a
valid verdict has ``f = 0.5`` and ``err2 = 0.25``, the most unsure.

:func:`calibrated_err2` shifts ``err2`` by a constant so that its mean on the human-labelled items equals the
squared error seen there: a judge whose single verdicts look certain (``err2 = 0``) but are often wrong is not
planned as needing no labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgecal.data.store import Workspace
from judgecal.stats.winrate import outcome_scores

COLUMNS = ("item_id", "judge", "verdict", "p_a", "p_b", "p_tie")
SCORES = np.array([1.0, 0.0, 0.5])  # A, B, tie


def judge_uncertainty(judgments: pd.DataFrame) -> pd.DataFrame:
    """item_id -> ``f`` (the judge's mean score), ``err2`` (the mixture variance) and ``n`` (judgments used)
    from judgments with ``item_id, verdict, p_a, p_b, p_tie`` (one judge, or several pooled)."""
    ok = judgments[judgments["verdict"].isin(["A", "B", "tie"])]
    if ok.empty:
        return pd.DataFrame({"f": [], "err2": [], "n": []}, index=pd.Index([], name="item_id"))
    hard = np.stack([(ok["verdict"] == v).to_numpy(dtype=np.float64) for v in ("A", "B", "tie")], axis=1)
    probs = ok[["p_a", "p_b", "p_tie"]].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=np.float64)
    total = probs.sum(axis=1, keepdims=True)
    usable = np.all(np.isfinite(probs), axis=1, keepdims=True) & (total > 0)
    dist = np.where(usable, probs / np.where(usable, total, 1.0), hard)
    mean_s = dist @ SCORES
    second = dist @ SCORES**2
    frame = pd.DataFrame({"item_id": ok["item_id"].astype(str).to_numpy(), "m": mean_s, "s2": second})
    g = frame.groupby("item_id", sort=False)
    f = g["m"].mean()
    err2 = (g["s2"].mean() - f**2).clip(lower=0.0)
    return pd.DataFrame({"f": f, "err2": err2, "n": g.size()})


def workspace_uncertainty(ws: Workspace, item_ids: list[str], judge: str | None = None) -> pd.DataFrame:
    """:func:`judge_uncertainty` of ``judge`` (all judges pooled when None) on ``item_ids``, in that order;
    items without a valid verdict get ``f = 0.5, err2 = 0.25, n = 0``."""
    j = ws.judgments_repo.judgments_frame(judge=judge, columns=COLUMNS)
    j = j[j["item_id"].astype(str).isin(set(item_ids))]
    out = judge_uncertainty(j).reindex(pd.Index(item_ids, name="item_id"))
    return out.fillna({"f": 0.5, "err2": 0.25, "n": 0}).astype({"n": int})


def spread_around(unc_judge: pd.DataFrame, unc_all: pd.DataFrame) -> pd.DataFrame:
    """The judge's ``f`` with ``err2`` measured over every judge's judgments around it: the pooled
    variance plus ``(pooled mean - f)^2`` (other judges that disagree with it make it less sure)."""
    out = unc_judge.copy()
    out["err2"] = unc_all["err2"] + (unc_all["f"] - unc_judge["f"]) ** 2
    return out


def calibrated_err2(unc: pd.DataFrame, truth: pd.Series) -> tuple[np.ndarray, int, float]:
    """``err2`` shifted so its mean over the items with a human verdict in ``truth`` (``A``/``B``/``tie``)
    equals the mean ``(Y - f)^2`` there (never below 0); the items used and the shift. No labelled item:
    ``err2`` unchanged."""
    on = unc.index.intersection(truth.index)
    y = outcome_scores(truth.reindex(on).to_numpy(dtype=object))
    ok = np.isfinite(y)
    e = unc["err2"].to_numpy(dtype=np.float64)
    if not ok.any():
        return e, 0, 0.0
    f = unc.loc[on, "f"].to_numpy(dtype=np.float64)[ok]
    shift = float(np.mean((y[ok] - f) ** 2) - unc.loc[on, "err2"].to_numpy(dtype=np.float64)[ok].mean())
    return np.clip(e + shift, 0.0, None), int(ok.sum()), shift
