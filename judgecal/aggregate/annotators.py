"""The annotators' own agreement and quality, per source of labels: one group of people at a time, never a pool.

For each label source (:func:`judgecal.data.sources.sources`): Fleiss' κ and Krippendorff's α over the items
two or more of its annotators labelled, each pair's Cohen's κ (up to :data:`MAX_PAIRWISE` annotators; beyond,
the pairs are too many to read and the report says so), all with item-bootstrap intervals
(:mod:`judgecal.stats.agreement`), and per annotator their leave-one-out agreement with the others, gold
accuracy and flags (:func:`judgecal.aggregate.quality.annotator_report`). ``judgecal annotators`` writes it to
``annotators.json``; the audit keeps it as ``annotators`` and the explorer's Annotators page shows it.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgecal.aggregate.quality import annotator_report
from judgecal.data.sources import select, sources
from judgecal.stats.agreement import fleiss_kappa, krippendorff_alpha, pairwise_cohen

MAX_PAIRWISE = 20  # annotators of one source: 190 pairs
NONE = {"estimate": None, "ci_low": None, "ci_high": None, "n": 0}


def agreement(ann: pd.DataFrame, gold: dict[str, str] | None = None, n_boot: int = 1000) -> dict[str, Any]:
    """One source's annotators: their quality, their agreement (not computable without two on one item)."""
    shared = not ann.empty and int(ann.groupby("item_id")["annotator"].nunique().max()) >= 2
    n_people = int(ann["annotator"].nunique()) if not ann.empty else 0
    pairs = pairwise_cohen(ann, n_boot) if shared and n_people <= MAX_PAIRWISE else {}
    out: dict[str, Any] = {
        "annotators": annotator_report(ann, pd.Series(gold) if gold else None),
        "fleiss_kappa": fleiss_kappa(ann, n_boot) if shared else dict(NONE),
        "krippendorff_alpha": krippendorff_alpha(ann, n_boot) if shared else dict(NONE),
        "pairwise_cohen_kappa": pairs, "n_labels": int(len(ann)),
        "n_items": int(ann["item_id"].nunique()) if not ann.empty else 0, "n_annotators": n_people}
    if shared and n_people > MAX_PAIRWISE:
        out["pairwise_note"] = f"{n_people} annotators: each pair's κ is listed for up to {MAX_PAIRWISE}"
    return out


def annotators_report(ann: pd.DataFrame, gold: dict[str, str] | None = None, n_boot: int = 1000,
                      source: str | None = None) -> dict[str, Any]:
    """``{"source": s, ...agreement}`` for one source (``source``, or the only one), else ``{"by_source":
    {s: agreement}}``; every source also summarised under ``sources`` (labels, items, annotators)."""
    chosen: dict[str | None, pd.DataFrame] = ({source: select(ann, source)} if source
                                               else {s: ann[ann["source"] == s] for s in sources(ann)} or {None: ann})
    per = {src: agreement(a, gold, n_boot) for src, a in chosen.items()}
    rep: dict[str, Any] = ({"source": next(iter(per)), **next(iter(per.values()))} if len(per) == 1
                           else {"by_source": per})
    rep["sources"] = [{"source": s, "labels": p["n_labels"], "items": p["n_items"], "annotators": p["n_annotators"]}
                      for s, p in per.items()]
    return rep


def by_source(rep: dict[str, Any]) -> dict[str | None, dict[str, Any]]:
    """The report's sources, each with its agreement, whether it holds one source or several."""
    if "by_source" in rep:
        return dict(rep["by_source"])
    return {rep.get("source"): {k: v for k, v in rep.items() if k not in ("source", "sources")}}
