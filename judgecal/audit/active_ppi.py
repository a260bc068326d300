"""The corrected win rates when the human labels came from an active push (``annotate push --strategy active``).

The truth's source ``label-studio:<project>`` names the project; its recorded draw (``ls_active``) gives each
item's inclusion probability ``pi_i``. Over the items of the draw that the judge judged, the drawn ones with
a human verdict are the labelled set and each label weighs ``1 / pi_i`` (:mod:`judgecal.stats.active`); the
human-only figure beside it is the same estimator with ``lambda = 0`` (Horvitz–Thompson). A drawn item still
waiting for its label is counted (``n_drawn_without_label``): until it is labelled the estimate is not final.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.store import Workspace
from judgecal.stats import active, winrate

LS_PREFIX = "label-studio:"


def draws_for_source(ws: Workspace, source: str | None) -> pd.DataFrame | None:
    """The active draw behind the truth's ``source`` (item_id -> ``pi``, ``drawn``), None when it has none."""
    if not source or not source.startswith(LS_PREFIX):
        return None
    frame = ws.labelstudio_repo.ls_active_frame(source[len(LS_PREFIX):])
    if frame.empty:
        return None
    return frame.set_index(frame["item_id"].astype(str))[["pi", "drawn"]].astype({"drawn": bool})


def _records(frame: pd.DataFrame, frame0: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Rows in the shape of the PPI++ records (``CorrectedWinRate``)."""
    out = {}
    for key, r in frame.iterrows():
        c = frame0.loc[[key]].iloc[0]
        name = " vs ".join(key) if isinstance(key, tuple) else str(key)
        out[name] = {"estimate": float(r["estimate"]), "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"]),
                     "lam": float(r["lam"]), "n_labelled": int(r["n_labelled"]),
                     "n_unlabelled": int(r["n_items"] - r["n_labelled"]),
                     "classical_estimate": float(c["estimate"]), "classical_ci_low": float(c["ci_low"]),
                     "classical_ci_high": float(c["ci_high"]),
                     "width_ratio": float(r["se"] / c["se"]) if c["se"] > 0 else float("nan")}
    return out


def active_corrected(items: pd.DataFrame, truth: pd.Series, verdict: pd.Series, draws: pd.DataFrame,
                     level: float) -> dict[str, Any]:
    """``models.ppi[judge]`` for an active draw: per-model and head-to-head win rates, ``estimator: active``."""
    on = items.index.intersection(draws.index).intersection(verdict.index[verdict.isin(winrate.LABELS)])
    d = draws.loc[on]
    h = truth.reindex(on).where(lambda s: s.isin(winrate.LABELS), None).to_numpy(dtype=object)
    h[~d["drawn"].to_numpy()] = None  # a label outside the draw (gold, another source) has no known pi
    j = verdict.reindex(on).to_numpy(dtype=object)
    pi = d["pi"].to_numpy(dtype=np.float64)
    n_lab = int(pd.notna(h).sum())
    out: dict[str, Any] = {"estimator": "active", "n_labelled": n_lab, "n_unlabelled": int(len(h) - n_lab),
                           "n_drawn_without_label": int(d["drawn"].sum()) - n_lab}
    if n_lab < 2:
        return out
    a, b = items.loc[on, "model_a"].to_numpy(), items.loc[on, "model_b"].to_numpy()
    out["win_rate"] = _records(active.active_win_rates(a, b, h, j, pi, level=level),
                               active.active_win_rates(a, b, h, j, pi, level=level, lam=0.0))
    pw = active.active_pairwise_win_rates(a, b, h, j, pi, level=level)
    p0 = active.active_pairwise_win_rates(a, b, h, j, pi, level=level, lam=0.0)
    out["pairwise"] = [{"model_1": k[0], "model_2": k[1], **v}
                       for k, v in zip(pw.index, _records(pw, p0).values(), strict=True)]
    return out
