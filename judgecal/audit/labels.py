"""Binary and categorical judges against the people: the label a judge picks beside the humans' label.

A judge of items that carry a :class:`~judgecal.data.records.LabelSet` answers one of the declared labels
(its ``verdict``; ``invalid`` when none could be read). Its scale is the declared one
(:func:`label_scale`: the labels in order; ordinal when declared so), never one inferred from the labels
people happened to use. Beside the pointwise figures (accuracy, κ — quadratic-weighted on an ordinal
set — and the like-for-like reference), over every judgment on an item with the truth, each resampled by
the item's response cluster (:func:`judgecal.stats.classification.label_agreement`):

- ``macro_f1``, ``recall_by_label.<label>``, ``precision_by_label.<label>`` and the confusion matrix (rows:
  the human truth, columns: the judge);
- binary: ``tpr`` (recall of the positive label), ``tnr``, ``precision``, ``f1`` (of the positive label),
  ``balanced_accuracy``; the judge's and the humans' positive rates and the evaluated system's **corrected
  pass rate**: Rogan & Gladen (1978) from the judge's rate on every item it labelled and its TPR/TNR on the
  labelled ones, and PPI++ (Angelopoulos, Duchi & Zrnic, 2023) from the labelled subset plus the judge on
  the rest, beside the human-only mean; and how many human labels a ±0.05 pass rate needs;
- like with like: the judge's TPR/TNR (or per-label recall) pooled over every (annotator, judgment) pair
  beside the annotators' own pooled over every pair of them both ways, on the same items (what the
  verdict reads, so a judge always answering the majority label — TNR 0 — is never aligned);
- the humans' Fleiss κ and Krippendorff α (nominal, or ordinal on an ordinal set) on the judge's items;
- beside every figure, the **trivial rater** that always answers the truth's commonest label
  (:func:`judgecal.stats.trivial.trivial_rater`), on the basis of the figure it stands beside: ``trivial``
  from the confusion's row totals, ``like_for_like.trivial`` from the annotators' labels over the judge's
  (annotator, judgment) pairs.

Items labelled on several criteria (one item per criterion) get every figure per criterion under
``labels.criteria``; the judge's top-level figures are those of its first criterion only when it has one.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.probe import AuditConfig
from judgecal.data.records import LabelSet
from judgecal.stats.agreement import fleiss_kappa, krippendorff_alpha
from judgecal.stats.classification import corrected_pass_rate, label_agreement, pass_rate_plan
from judgecal.stats.ordinal import rater_pairs
from judgecal.stats.trivial import trivial_rater

PLAN_HALFWIDTH = 0.05
BINARY = ("tpr", "tnr", "precision", "f1", "balanced_accuracy")


def label_set_of(items: pd.Index, label_sets: pd.Series) -> list[LabelSet]:
    """The distinct label sets of ``items`` (in first-seen order)."""
    found = label_sets.reindex(items).dropna()
    out: dict[tuple[Any, ...], LabelSet] = {}
    for ls in found:
        out.setdefault(ls.key(), ls)
    return list(out.values())


def label_set_keys(item_ids: pd.Series, label_sets: pd.Series) -> pd.Series:
    """Each id's :meth:`LabelSet.key` (``None`` for an item without a label set), one lookup per distinct id."""
    keys = {i: ls.key() for i, ls in label_sets.reindex(pd.Index(item_ids.unique())).dropna().items()}
    return item_ids.map(keys)


def _fig(m: dict[str, Any]) -> dict[str, Any]:
    return {**m, "p": None, "q": None, "mde": None}


def label_figures(t_code: np.ndarray, p_code: np.ndarray, ls: LabelSet, groups: np.ndarray,
                  cfg: AuditConfig) -> dict[str, Any]:
    """The classification figures of one judge on one label set (``t_code``/``p_code``: per judgment, the
    truth's and the judge's label codes, -1 for none)."""
    k = len(ls.labels)
    pos = ls.labels.index(ls.positive) if ls.task == "binary" and ls.positive is not None else None
    return label_agreement(t_code, p_code, k, groups=groups, positive=pos, ordinal=ls.ordinal,
                           n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)


def metrics_of(fig: dict[str, Any], ls: LabelSet) -> dict[str, dict[str, Any]]:
    """The audit metrics of :func:`label_figures`, flat: ``recall_by_label.<label>`` and the binary ones."""
    out = {"macro_f1": _fig(fig["macro_f1"])}
    for name in ("recall_by_label", "precision_by_label"):
        for lab, m in zip(ls.labels, fig[name], strict=True):
            out[f"{name}.{lab}"] = _fig(m)
    if ls.task == "binary":
        out.update({name: _fig(fig[name]) for name in BINARY})
    return out


def _codes(labels: pd.Series, ls: LabelSet) -> np.ndarray:
    return np.asarray(pd.Index(ls.labels).get_indexer(pd.Index(labels.astype(str))), dtype=np.int64)


def humans_like(wide: pd.DataFrame, ls: LabelSet, groups: np.ndarray, cfg: AuditConfig) -> dict[str, Any] | None:
    """The annotators' figures with each other (every ordered pair on an item, one as the truth), and
    their Fleiss κ / Krippendorff α; ``None`` without two annotators on an item."""
    if wide.shape[1] < 2 or wide.empty:
        return None
    codes = np.column_stack([_codes(wide[c].fillna(""), ls) for c in wide.columns])
    if not ((codes >= 0).sum(1) >= 2).any():
        return None
    a, b, item = rater_pairs(codes)
    fig = label_figures(b, a, ls, np.asarray(groups, dtype=object)[item], cfg)
    row, col = np.nonzero(codes >= 0)
    long = pd.DataFrame({"item_id": row, "annotator": col, "label": codes[row, col]})  # codes sort in order
    alpha = krippendorff_alpha(long, cfg.n_boot, cfg.seed, ordinal=ls.ordinal)
    return {"pairs": fig, "fleiss_kappa": fleiss_kappa(long, cfg.n_boot, cfg.seed),
            "krippendorff_alpha": {**alpha, "level_of_measurement": "ordinal" if ls.ordinal else "nominal"},
            "n_items": int(((codes >= 0).sum(1) >= 2).sum()), "n_annotators": int(wide.shape[1])}


def judge_like(jf: pd.DataFrame, p_code: np.ndarray, wide: pd.DataFrame, ls: LabelSet, groups: pd.Series,
               cfg: AuditConfig) -> dict[str, Any] | None:
    """The judge measured as :func:`humans_like` measures the annotators: each of its judgments against
    each annotator's label of an item that has two or more annotators."""
    codes = np.column_stack([_codes(wide[c].fillna(""), ls) for c in wide.columns]) if len(wide.columns) else \
        np.zeros((len(wide), 0), dtype=np.int64)
    basis = (codes >= 0).sum(1) >= 2
    row = wide.index.get_indexer(pd.Index(jf["item_id"].astype(str).to_numpy()))
    keep = (row >= 0)
    keep[keep] = basis[row[keep]]
    t_parts, p_parts, g_parts = [], [], []
    for c in range(codes.shape[1]):
        on = keep.copy()
        on[on] = codes[row[on], c] >= 0
        t_parts.append(codes[row[on], c])
        p_parts.append(p_code[on])
        g_parts.append(groups.reindex(wide.index[row[on]]).to_numpy(dtype=object))
    if not t_parts or not sum(len(x) for x in t_parts):
        return None
    return label_figures(np.concatenate(t_parts), np.concatenate(p_parts), ls, np.concatenate(g_parts), cfg)


def _side(fig: dict[str, Any], ls: LabelSet) -> dict[str, Any]:
    out = {"accuracy": fig["accuracy"], "kappa": fig["cohen_kappa"], "macro_f1": fig["macro_f1"],
           "recall_by_label": dict(zip(ls.labels, fig["recall_by_label"], strict=True))}
    if ls.task == "binary":
        out.update({name: fig[name] for name in BINARY})
    return out


def labels_section(jf: pd.DataFrame, truth: pd.Series, wide: pd.DataFrame, ls: LabelSet, groups: pd.Series,
                   cfg: AuditConfig) -> dict[str, Any]:
    """Everything the audit says about one judge on one label set: ``metrics`` (flat, for the judge's
    entry) and ``section`` (the ``labels`` object of audit.json)."""
    ok = (jf["status"].astype(str) == "ok").to_numpy()
    p_all = np.where(ok, _codes(jf["verdict"].fillna(""), ls), -1)
    item_ids = jf["item_id"].astype(str).to_numpy()
    t_code = _codes(truth.reindex(item_ids).fillna(""), ls)
    on = t_code >= 0
    g = groups.reindex(item_ids).to_numpy(dtype=object)
    fig = label_figures(t_code[on], p_all[on], ls, g[on], cfg)
    section: dict[str, Any] = {
        "task": ls.task, "labels": list(ls.labels), "positive": ls.positive, "ordinal": ls.ordinal,
        "criterion": ls.criterion, "confusion": {"rows": "human truth", "columns": "judge", "labels": list(ls.labels),
                                                 "counts": fig["confusion"]},
        "n_invalid": int(fig["n_invalid"]["estimate"]), "n_judgments": int(len(jf)), "n_with_truth": int(on.sum()),
    }
    # beside every figure, the rater that always answers the truth's commonest label, on the same basis
    trivial = trivial_rater(ls.labels, [int(sum(row)) for row in fig["confusion"]], ls.task, ls.positive)
    mine = wide.reindex(pd.Index(pd.unique(item_ids[on])))
    humans = humans_like(mine, ls, groups.reindex(mine.index).to_numpy(dtype=object), cfg)
    judge = judge_like(jf[on], p_all[on], mine, ls, groups, cfg) if humans is not None else None
    if humans is not None:
        section["humans"] = {"fleiss_kappa": humans["fleiss_kappa"], "krippendorff_alpha": humans["krippendorff_alpha"],
                             "n_items": humans["n_items"], "n_annotators": humans["n_annotators"]}
    if humans is not None and judge is not None:
        section["like_for_like"] = {
            "definition": "the judge's figures pooled over every (annotator, judgment) pair on an item with two or "
                          "more annotators, the annotator as the truth, beside the annotators' own pooled over every "
                          "ordered pair of them on the same items",
            "judge": _side(judge, ls), "humans": _side(humans["pairs"], ls)}
        # there, the trivial rater answers the annotators' labels over the judge's (annotator, judgment) pairs:
        # each label's recall is over the pairs whose annotator gave it
        like_totals = [int(_n_of(f)) for f in judge["recall_by_label"]]
        section["like_for_like"]["trivial"] = trivial_rater(ls.labels, like_totals, ls.task, ls.positive)
    if ls.task == "binary":
        pos = ls.labels.index(str(ls.positive))
        valid = p_all >= 0
        labelled = on & valid
        all_items = _first_per_item(item_ids, valid)
        section["prevalence"] = corrected_pass_rate(
            (t_code[labelled] == pos).astype(np.float64), (p_all[labelled] == pos).astype(np.float64),
            (p_all[all_items] == pos).astype(np.float64), groups_labelled=g[labelled], groups_all=g[all_items],
            n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
        section["prevalence"]["positive"] = ls.positive
        if labelled.sum() >= 2:  # a plan reads the spread of at least two labelled items
            section["plan"] = pass_rate_plan((t_code[labelled] == pos).astype(np.float64),
                                             (p_all[labelled] == pos).astype(np.float64),
                                             int(all_items.sum()), PLAN_HALFWIDTH, level=cfg.level)
    section["trivial"] = trivial
    return {"metrics": metrics_of(fig, ls), "section": section}


def _n_of(figure: Any) -> int | float:
    """A figure's ``n`` (0 where it has none)."""
    n = figure.get("n") if isinstance(figure, dict) else None
    return n if isinstance(n, int | float) and not isinstance(n, bool) and math.isfinite(n) else 0


def _first_per_item(item_ids: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """A mask of each item's first valid judgment (one label per item for the judge's rate)."""
    out = np.zeros(len(item_ids), dtype=bool)
    idx = np.flatnonzero(valid)
    if idx.size:
        _, first = np.unique(item_ids[idx], return_index=True)
        out[idx[first]] = True
    return out


__all__ = ["label_set_keys", "label_set_of", "labels_section", "metrics_of"]
