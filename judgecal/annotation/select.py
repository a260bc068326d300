"""Choose what people should look at, within a budget.

- ``random``: a uniform sample.
- ``disagreement``: items where the judges disagree most (entropy of their item-level verdicts).
- ``order_disagreement``: items whose two presentation orders disagree for some judge, first.
- ``uncertainty``: items where the judges are least sure: ``1 - max(P(A), P(B), P(tie))`` averaged
  over judgments with token probabilities, else the verdict entropy.
- ``escalate``: only the items one judge escalates under the Trust-or-Escalate threshold of the last
  audit (:mod:`judgecal.audit.confidence`), least confident first.
Ties in a score are broken by a seeded random order, so selections are reproducible.

For label review (``kind="labels"``) the items are the binary and categorical ones (those with a label
set), drawn at random; a multi-criterion record is drawn whole: the budget counts records, and the ids
returned are all of a record's criterion items (one task each record, see :func:`kinds.label_units`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgecal.annotation.kinds import record_of
from judgecal.data.store import Workspace
from judgecal.errors import InputError

STRATEGIES = ("random", "disagreement", "order_disagreement", "uncertainty", "escalate")


def _entropy(counts: pd.DataFrame) -> pd.Series:
    p = counts.div(counts.sum(axis=1), axis=0).to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(np.where(p > 0, p * np.log(p), 0.0)).sum(axis=1)
    return pd.Series(h, index=counts.index)


def scores(ws: Workspace, strategy: str, item_ids: list[str]) -> pd.Series:
    """A score per item (higher = show first) for ``strategy``."""
    if strategy not in STRATEGIES:
        raise InputError(f"unknown strategy {strategy!r}; choose from {', '.join(STRATEGIES)}",
                         name="strategy")
    base = pd.Series(0.0, index=item_ids)
    if strategy == "random":
        return base
    j = ws.judgments_repo.judgments_frame(columns=("item_id", "judge", "order", "verdict", "p_a", "p_b", "p_tie"))
    j = j[j["item_id"].isin(item_ids) & j["verdict"].isin(["A", "B", "tie"])]
    if j.empty:
        return base
    if strategy == "disagreement":
        counts = pd.crosstab(j["item_id"], j["verdict"])
        return base.add(_entropy(counts), fill_value=0.0)
    if strategy == "order_disagreement":
        wide = j.pivot_table(index=["item_id", "judge"], columns="order", values="verdict", aggfunc="first")
        if not {"AB", "BA"} <= set(wide.columns):
            return base
        flips = (wide["AB"] != wide["BA"]) & wide["AB"].notna() & wide["BA"].notna()
        return base.add(flips.groupby(level="item_id").mean(), fill_value=0.0)
    probs = j.dropna(subset=["p_a", "p_b", "p_tie"])
    if not probs.empty:
        unsure = 1 - probs[["p_a", "p_b", "p_tie"]].max(axis=1)
        return base.add(unsure.groupby(probs["item_id"]).mean(), fill_value=0.0)
    return base.add(_entropy(pd.crosstab(j["item_id"], j["verdict"])), fill_value=0.0)


def select(ws: Workspace, strategy: str, budget: int, *, source: str | None = None, seed: int = 0,
           exclude: set[str] | None = None, judge: str | None = None, kind: str = "pairwise") -> list[str]:
    """Up to ``budget`` item ids, best first for ``strategy`` (``escalate`` needs ``judge``): pairwise items
    for ``kind`` ``pairwise``, single-response items for ``spans`` and ``likert`` (drawn at random only),
    items with a label set for ``labels`` (at random; ``budget`` records, each with all its criteria)."""
    if kind != "pairwise" and strategy != "random":
        raise InputError(f"{kind} review draws its items at random: the {strategy} strategy ranks pairwise verdicts",
                         name="strategy")
    if kind == "labels":
        return _label_units(ws, budget, source, seed, exclude or set())
    need = 2 if kind == "pairwise" else 1
    ids = [it.item_id for it in ws.items_repo.items(source=source)
           if (it.task == "pairwise") == (kind == "pairwise") and len(it.candidates) == need]
    ids = [i for i in ids if not exclude or i not in exclude]
    if strategy == "escalate":
        from judgecal.audit.confidence import escalated_scores

        if not judge:
            raise InputError("the escalate strategy needs a judge: whose escalated items to send", name="judge")
        sc = escalated_scores(ws, judge, ids)
        ids = [i for i in ids if sc[i] > 0]
    else:
        sc = scores(ws, strategy, ids)
    rng = np.random.default_rng(seed)
    tiebreak = pd.Series(rng.random(len(ids)), index=ids)
    order = pd.DataFrame({"s": sc.reindex(ids).fillna(0.0), "t": tiebreak}).sort_values(["s", "t"], ascending=False)
    return order.index[:budget].tolist()


def _label_units(ws: Workspace, budget: int, source: str | None, seed: int, exclude: set[str]) -> list[str]:
    """``budget`` tasks of label review at random: items with a label set, a record with all its criteria."""
    units: dict[tuple[str, str], list[str]] = {}  # (record, id) or (item, id): the two never collide
    for it in ws.items_repo.items(source=source):
        if it.label_set and len(it.candidates) == 1:
            rec = record_of(it)
            units.setdefault(("record", rec) if rec else ("item", it.item_id), []).append(it.item_id)
    names = [u for u, ids in units.items() if not exclude.intersection(ids)]
    rng = np.random.default_rng(seed)
    picked = [names[k] for k in rng.permutation(len(names))[:budget]]
    return [i for u in picked for i in units[u]]
