"""Self-preference: does a judge favour responses from its own model (family) more than people do?

On items where exactly one candidate is the judge's own (``own`` marks it), with win = 1, tie =
1/2, loss = 0 for the own candidate:

- ``self_preference_excess`` = mean judge win rate (over judgments) minus the human consensus win
  rate on the same items, with an item-level bootstrap CI (Panickssery et al., 2024).
- ``self_pick_when_lost``: among items where the humans say the own candidate lost, the share of
  judgments that still picked it.
- Comparability: the own candidate's position balance and the opponents, so the two groups
  (judge vs people) are compared on the very same items and orders.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.stats import bootstrap as stats

WIN = {"A": 1.0, "B": 0.0, "tie": 0.5}


def self_preference(judgments: pd.DataFrame, truth: pd.Series, own_is_a: pd.Series, *, n_boot: int = 2000,
                    seed: int = 0) -> dict[str, Any]:
    """``own_is_a``: item_id -> True when candidate A is the judge's own, False when B is (other items absent)."""
    j = judgments[judgments["item_id"].isin(own_is_a.index) & judgments["item_id"].isin(truth.index)]
    j = j[j["verdict"].isin(["A", "B", "tie"])]
    if j.empty:
        return {}
    codes, items = stats.item_codes(j["item_id"])
    own_a = own_is_a.reindex(items).to_numpy(dtype=bool)
    judge_win_a = j["verdict"].map(WIN).to_numpy(dtype=float)
    judge_win = np.where(own_a[codes], judge_win_a, 1 - judge_win_a)
    human_a = truth.reindex(items).map(WIN).to_numpy(dtype=float)
    human_win = np.where(own_a, human_a, 1 - human_a)
    lost = human_win == 0.0
    per_item = np.column_stack([
        np.bincount(codes, weights=judge_win, minlength=len(items)), np.bincount(codes, minlength=len(items)),
        human_win, np.ones(len(items)),
        np.bincount(codes, weights=(judge_win == 1.0) * lost[codes], minlength=len(items)),
        np.bincount(codes, weights=lost[codes].astype(float), minlength=len(items)),
    ])
    boot = stats.bootstrap_sums(per_item, n_boot, seed)

    def excess(m: np.ndarray) -> np.ndarray:
        return stats.safe_ratio(m[:, 0], m[:, 1]) - stats.safe_ratio(m[:, 2], m[:, 3])

    def picked_when_lost(m: np.ndarray) -> np.ndarray:
        return stats.safe_ratio(m[:, 4], m[:, 5])

    out: dict[str, Any] = {}
    for name, fn, n in (("self_preference_excess", excess, len(items)),
                        ("self_pick_when_lost", picked_when_lost, int(lost.sum()))):
        est, lo, hi = stats.estimate_with_ci(fn, per_item, boot)
        out[name] = {"estimate": est, "ci_low": lo, "ci_high": hi, "n": n}
    out["judge_win_rate"] = float(judge_win.mean())
    out["human_win_rate"] = float(human_win.mean())
    out["own_shown_as_a"] = float(own_a.mean())
    return out
