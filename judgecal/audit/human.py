"""The humans beside every judge: how well they agree with each other, and can a judge replace one?

For the annotators of the truth's source (the labels behind the chosen consensus):

- Fleiss' κ among them (from :func:`judgecal.audit.truth.resolve_truth`, item-bootstrap CI);
- an annotator's leave-one-out accuracy: on each item, whether the annotator's label equals the
  majority label of the *other* annotators (items where the others tie are left out), pooled over
  annotators, with an item-bootstrap CI (a description of the humans: a judge's accuracy against the
  consensus is another definition, so the verdict does not compare the two);
- per judge, κ and accuracy against the consensus beside the base rate (always the majority label) and
  a chance rater drawing from the labels' shares (κ 0, accuracy ``sum_k p_k^2``)
  (:func:`judgecal.stats.alt_test.kappa_with_baselines`), and ``like_for_like``: the judge and the
  annotators measured the same way on the same items, pairwise and leave-one-out
  (:func:`judgecal.stats.reference.like_for_like`), the figures the verdict reads;
- per judge, when the annotators' own labels are there: the Judge's Verdict κ z-score and the
  alternative annotator test (Calderon et al., ACL 2025) with its winning rate
  (:mod:`judgecal.stats.alt_test`).

A judge's label for an item is its item verdict (:func:`judgecal.audit.models.item_verdicts`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.sources import SourceError, select, split_name
from judgecal.data.store import Workspace
from judgecal.stats import alt_test, reference
from judgecal.stats.bootstrap import bootstrap_sums, percentile_ci, safe_ratio

EPSILON = 0.2  # the alternative annotator test's allowance for expert annotators (Calderon et al.)
ALT_Q = 0.05


def annotator_matrix(ws: Workspace, consensus: str, truth: pd.Series) -> pd.DataFrame:
    """Items (those with the truth) x annotators of the consensus's source; ``None`` where an annotator
    did not label the item (an annotator's latest label counts)."""
    ann = ws.annotations_repo.annotations_frame()
    _, selector = split_name(consensus)
    if selector is not None:
        try:
            ann = select(ann, selector)
        except SourceError:
            ann = ann.iloc[:0]
    ann = ann[ann["item_id"].isin(truth.index)]
    if ann.empty:
        return pd.DataFrame(index=pd.Index([], name="item_id"))
    wide = ann.drop_duplicates(["item_id", "annotator"], keep="last").pivot(
        index="item_id", columns="annotator", values="label")
    wide = wide.astype(object)
    return wide.where(wide.notna(), None)


def loo_accuracy(wide: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """Leave-one-out accuracy of the annotators: their label against the others' unique majority,
    pooled, with an item-bootstrap CI, and per annotator (``per_annotator``: estimate and n)."""
    nan = float("nan")
    h = wide.to_numpy(dtype=object)
    present = pd.notna(h)
    if h.size == 0:
        return {"estimate": nan, "ci_low": nan, "ci_high": nan, "n": 0, "per_annotator": {}}
    labels = sorted({str(v) for v in h[present]})
    counts = np.stack([(h == lab).sum(1) for lab in labels], axis=1)  # items x labels
    right = np.zeros(h.shape)
    scored = np.zeros(h.shape, dtype=bool)
    for k, lab in enumerate(labels):
        mine = h == lab
        others = counts - np.eye(len(labels), dtype=np.int64)[k]  # counts without this annotator's label
        top = others.max(1)
        unique = (others == top[:, None]).sum(1) == 1
        ok = mine & (unique & (top > 0))[:, None]
        scored |= ok
        right[ok & (others[:, k] == top)[:, None]] = 1.0
    sums = np.column_stack([(right * scored).sum(1), scored.sum(1)]).astype(np.float64)
    boot = bootstrap_sums(sums, n_boot, seed)
    lo, hi = percentile_ci(safe_ratio(boot[:, 0], boot[:, 1]), level) if boot.size else (nan, nan)
    per = {str(a): {"estimate": float(right[scored[:, j], j].mean()) if scored[:, j].any() else nan,
                    "n": int(scored[:, j].sum())} for j, a in enumerate(wide.columns)}
    total = sums.sum(0)
    return {"estimate": float(safe_ratio(total[0], total[1])), "ci_low": lo, "ci_high": hi, "n": int(total[1]),
            "per_annotator": per}


def humans_section(about: dict[str, Any], wide: pd.DataFrame, n_boot: int, seed: int, level: float) -> dict[str, Any]:
    """``audit.json``'s ``humans`` section: the truth's annotators, their Fleiss' κ and leave-one-out accuracy."""
    return {"source": about.get("source"), "n_annotators": int(wide.shape[1]), "n_items": int(wide.shape[0]),
            "fleiss_kappa": about.get("fleiss_kappa"),
            "loo_accuracy": loo_accuracy(wide, n_boot, seed, level)}


def judge_reference(verdict: pd.Series, truth: pd.Series, humans: dict[str, Any], wide: pd.DataFrame | None = None,
                    *, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """A judge's κ and accuracy on its item verdicts beside the base rate, a chance rater and the humans;
    with the annotators' own labels (``wide``), ``like_for_like``: the judge and the humans measured the
    same way on the same items, pairwise and leave-one-out (:func:`judgecal.stats.reference.like_for_like`).
    The consensus figures (``kappa``, ``accuracy``, ``human_kappa``: Fleiss' κ) are kept for reading, but
    they mix definitions; the verdict reads ``like_for_like``."""
    both = truth.index.intersection(verdict.index)
    base = alt_test.kappa_with_baselines(verdict.reindex(both).to_numpy(dtype=object),
                                         truth.reindex(both).to_numpy(dtype=object))
    fk, loo = humans.get("fleiss_kappa") or {}, humans.get("loo_accuracy") or {}
    out = {**base, "human_kappa": fk.get("estimate"), "human_kappa_ci": [fk.get("ci_low"), fk.get("ci_high")],
           "human_accuracy": loo.get("estimate"), "human_accuracy_ci": [loo.get("ci_low"), loo.get("ci_high")],
           "basis": "the judge's item verdict (swap-debiased when both orders were judged)",
           "consensus_note": "κ and accuracy here are against the consensus, Fleiss' κ among the annotators: "
                             "two definitions; like_for_like compares the same definition on both sides"}
    if wide is not None and wide.shape[1] >= 2:
        f = verdict.reindex(wide.index).to_numpy(dtype=object)
        out["like_for_like"] = reference.like_for_like(wide, f, n_boot=n_boot, seed=seed, level=level)
    return out


def replace_annotator(wide: pd.DataFrame, verdict: pd.Series, *, epsilon: float = EPSILON, q: float = ALT_Q,
                      min_items: int = 30) -> dict[str, Any] | None:
    """The alternative annotator test and the κ z-score of a judge against the annotators' own labels;
    ``None`` without at least two annotators."""
    if wide.shape[1] < 2:
        return None
    f = verdict.reindex(wide.index).to_numpy(dtype=object)
    res = alt_test.alt_test(wide, f, epsilon=epsilon, q=q, min_items=min_items)
    out = res.as_dict()
    out["min_items"] = min_items
    out["kappa_z"] = alt_test.kappa_z(wide, f)
    return out
