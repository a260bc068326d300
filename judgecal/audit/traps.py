"""Trap sets: pairs built so that a biased judge picks the worse response, the better one known (EvalBiasBench).

A judgment scores 1 when it picks the known better response, 1/2 for a tie (an unreadable verdict too, when
the audit counts it as a tie; otherwise 0), 0 for the other response, so chance is 0.5 whatever a judge's tie
rate. Each trap's accuracy stands beside the same judge's accuracy, scored alike, on the *ordinary* pairs of the
workspace (every other pair whose truth is A or B), so a judge that is only weak is not called biased: the
figure of interest is a trap's gap, its accuracy minus the ordinary one. Intervals: item-clustered bootstrap,
one set of resamples for the traps and the ordinary pairs (paired gaps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.evalbiasbench import trap_slug
from judgecal.stats import bootstrap as stats

CHANCE = 0.5
TRAP_COLUMNS = ["trap", "answer"]


def trap_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """item_id -> ``trap``, ``answer`` (A or B) of the trap pairs among ``pairs`` (the two-candidate pairwise rows
    of :meth:`~judgecal.data.store.items.ItemsRepository.item_facts`, indexed by item_id)."""
    t = pairs[pairs["trap"].notna() & pairs["trap_answer"].isin(("A", "B"))]
    return pd.DataFrame({"trap": t["trap"].to_numpy(), "answer": t["trap_answer"].to_numpy()},
                        index=pd.Index(t.index.to_numpy(), dtype=object), columns=TRAP_COLUMNS)


def _scores(verdict: pd.Series, answer: pd.Series, invalid_as: str) -> np.ndarray:
    v = verdict.astype(str).to_numpy()
    tie = (v == "tie") | ((v == "invalid") & (invalid_as == "tie"))
    return np.where(v == answer.astype(str).to_numpy(), 1.0, np.where(tie, 0.5, 0.0))


def trap_accuracy(judgments: pd.DataFrame, traps: pd.DataFrame, truth: pd.Series, *, invalid_as: str = "tie",
                  n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Per trap (by its name): ``accuracy`` and ``gap`` (minus the ordinary pairs'); ``all`` traps pooled and
    their ``gap``; ``ordinary``; ``{}`` when the judge judged no trap pair."""
    j = judgments[judgments["verdict"].notna()]
    on_trap = j["item_id"].isin(traps.index)
    if not on_trap.any():
        return {}
    decisive = truth[truth.isin(("A", "B"))]
    ordinary = decisive[~decisive.index.isin(traps.index)]
    jt, jo = j[on_trap], j[j["item_id"].isin(ordinary.index)]
    names = sorted(traps["trap"].reindex(jt["item_id"].unique()).unique())
    rows = pd.concat([jt["item_id"], jo["item_id"]], ignore_index=True)
    codes, items = stats.item_codes(rows.astype(str))
    group = np.concatenate([pd.Index(names).get_indexer(traps["trap"].reindex(jt["item_id"])),
                            np.full(len(jo), len(names))])
    score = np.concatenate([_scores(jt["verdict"], traps["answer"].reindex(jt["item_id"]), invalid_as),
                            _scores(jo["verdict"], ordinary.reindex(jo["item_id"]), invalid_as)])
    sums = np.zeros((len(items), 2 * (len(names) + 1)))  # per group: score, judgments
    np.add.at(sums, (codes, 2 * group), score)
    np.add.at(sums, (codes, 2 * group + 1), 1.0)
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    k = len(names)

    def acc(g: int | None) -> Any:  # None: every trap pooled
        cols = list(range(k)) if g is None else [g]
        return lambda m: stats.safe_ratio(m[:, [2 * c for c in cols]].sum(1), m[:, [2 * c + 1 for c in cols]].sum(1))

    def fig(fn: Any, n: int) -> dict[str, Any]:
        est, lo, hi = stats.estimate_with_ci(fn, sums, boot, level)
        return {"estimate": est, "ci_low": lo, "ci_high": hi, "n": int(n)}

    n_items = np.bincount(group[np.unique(codes, return_index=True)[1]], minlength=k + 1)
    out: dict[str, Any] = {"all": fig(acc(None), int(n_items[:k].sum())), "traps": {}}
    if len(jo):
        out["ordinary"] = fig(acc(k), int(n_items[k]))
        out["gap"] = fig(lambda m: acc(None)(m) - acc(k)(m), int(n_items[:k].sum()))
    for g, name in enumerate(names):
        part: dict[str, Any] = {"slug": trap_slug(name), "accuracy": fig(acc(g), int(n_items[g]))}
        if len(jo):
            part["gap"] = fig(lambda m, g=g: acc(g)(m) - acc(k)(m), int(n_items[g]))
        out["traps"][name] = part
    return out
