"""Pointwise judges against the people: a per-item label or score beside the human label of the same item.

A pointwise judge answers with a score (a Likert rating, a coverage level as 1 / 0.5 / 0) or a label of
its own. The humans' labels of the truth's source fix the scale (:func:`scale_of`):

- numbers (``"1"`` .. ``"5"`` from a Label Studio rating) or a known ordered vocabulary (coverage
  ``none < partial < full`` = 0, 0.5, 1, as Summary of a Haystack labels it) make an **ordinal** scale:
  the judge's score is read at the nearest level of the scale for agreement and κ, and as it is for ρ
  and the mean absolute error (on a whole-number scale, a whole-number score nobody used is a level of
  its own);
- any other labels make a **nominal** scale: the judge's own label (its ``verdict``) must be one of them.

Every judgment on an item with the truth counts once (samples and orders alike), and a judgment with no
usable answer is left out and counted in ``invalid_rate``. The bootstrap resamples clusters whole: the
items that rate one response to one prompt (``ws.items_repo.response_clusters``; the key facts of one Summary
of a Haystack summary share their summary, and its judge's reading of it), each item on its own otherwise. Under
``metrics``: ``accuracy`` (exact agreement), ``cohen_kappa`` (unweighted), and for ordinal scales
``weighted_kappa`` (quadratic), ``spearman_rho`` and ``mae`` (:mod:`judgecal.stats.ordinal`). The
``pointwise`` section names the scale, the κ the verdict reads (quadratic-weighted on an ordinal scale,
unweighted on a nominal one) and the humans' own agreement on the judge's items (every pair of
annotators who labelled the same item, both ways): the ceiling beside the judge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from judgecal.audit.labels import label_set_keys, label_set_of, labels_section
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.data.records import LabelSet
from judgecal.stats.bootstrap import bootstrap_sums, metric, percentile_ci, safe_ratio
from judgecal.stats.ordinal import NOMINAL, ORDINAL, pointwise_agreement, rater_agreement

# ordered vocabularies people label with, lowest first, and the score of each level
KNOWN_SCALES: tuple[dict[str, float], ...] = (
    {"none": 0.0, "partial": 0.5, "full": 1.0},
)
PAIRWISE_LABELS = frozenset({"A", "B", "tie"})


@dataclass(frozen=True)
class Scale:
    """The humans' levels in order, the value of each (ordinal scales), and whether it is ordinal."""

    levels: tuple[str, ...]
    values: tuple[float, ...]
    ordinal: bool
    from_labels: bool = False  # a declared label set: the judge answers a label (its verdict), not a score

    def codes(self, labels: pd.Series) -> np.ndarray:
        """Each human label's level code (-1: not on the scale)."""
        return np.asarray(pd.Index(self.levels).get_indexer(pd.Index(labels.astype(str))), dtype=np.int64)

    def judge_codes(self, judgments: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Each judgment's level code and value: its score at the nearest level (ordinal), or its label
        (nominal); -1 and NaN when it gave none."""
        ok = (judgments["status"].astype(str) == "ok").to_numpy()
        if self.ordinal and not self.from_labels:
            raw = judgments["score"] if "score" in judgments else pd.Series(np.nan, index=judgments.index)
            score = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64, copy=True)
            score[~ok] = np.nan
            vals = np.asarray(self.values)
            near = np.abs(score[:, None] - vals[None, :]).argmin(1) if len(score) else np.zeros(0, dtype=np.int64)
            return np.where(np.isfinite(score), near, -1).astype(np.int64), score
        found = pd.Index(self.levels).get_indexer(pd.Index(judgments["verdict"].astype(str)))
        code = np.where(ok, found, -1).astype(np.int64)
        return code, np.where(code >= 0, code, np.nan).astype(np.float64)

    def to_json(self) -> dict[str, Any]:
        return {"levels": list(self.levels), "values": list(self.values) if self.ordinal else None,
                "kind": "ordinal" if self.ordinal else "nominal", "declared": self.from_labels}

    @classmethod
    def of_labels(cls, ls: LabelSet) -> Scale:
        """The scale of a declared label set: its labels in order, valued 0, 1, ... when ordinal."""
        return cls(ls.labels, tuple(float(k) for k in range(len(ls.labels))), ls.ordinal, True)


def scale_of(labels: pd.Series, scores: ArrayLike | None = None) -> Scale | None:
    """The scale of the humans' labels (``None`` without labels, or for pairwise labels A / B / tie). On a
    scale of whole numbers the judge's whole-number ``scores`` are levels too: a 5 where the people used
    only 2-4 is a level of its own, never read as 4."""
    present = sorted({str(v) for v in labels.dropna()})
    if not present or set(present) <= PAIRWISE_LABELS:
        return None
    for known in KNOWN_SCALES:
        if set(present) <= set(known):
            return Scale(tuple(known), tuple(known.values()), True)
    nums = pd.to_numeric(pd.Series(present), errors="coerce")
    if nums.notna().all():
        value = dict(zip(present, nums.astype(float), strict=True))
        s = np.asarray([] if scores is None else scores, dtype=np.float64)
        if all(v.is_integer() for v in value.values()):
            seen = set(value.values())
            value.update({str(int(x)): float(x) for x in np.unique(s[np.isfinite(s)])
                          if float(x).is_integer() and float(x) not in seen})
        levels = sorted(value, key=lambda lab: value[lab])
        return Scale(tuple(levels), tuple(value[lab] for lab in levels), True)
    return Scale(tuple(present), tuple(range(len(present))), False)


def _cluster_of(item_ids: np.ndarray, clusters: pd.Series | None) -> np.ndarray:
    """Each item's cluster label (the item itself when ``clusters`` does not name it)."""
    if clusters is None or clusters.empty:
        return item_ids.astype(object)
    c = clusters.reindex(pd.Index(item_ids)).to_numpy(dtype=object)
    return np.where(pd.isna(c), np.char.add("item:", item_ids.astype(str)).astype(object), c)


def is_pointwise(inp: JudgeInput) -> bool:
    """A judge that gives no pairwise verdict (its answers are scores or labels of its own)."""
    return bool(len(inp.judgments)) and not inp.pairwise


def pointwise_alignment(inp: JudgeInput, wide: pd.DataFrame, cfg: AuditConfig,
                        clusters: pd.Series | None = None, label_sets: pd.Series | None = None,
                        scale: Scale | None = None) -> dict[str, Any] | None:
    """The judge's pointwise metrics and its ``pointwise`` section, or ``None`` when the truth has no scale
    for it. ``wide`` is the annotators' labels (items x annotators, :func:`judgecal.audit.human.annotator_matrix`);
    ``clusters`` (item_id -> cluster, ``ws.items_repo.response_clusters``) are resampled whole (default: items).
    Items with a declared label set (``label_sets``, item_id -> LabelSet) are read on that set
    (:mod:`judgecal.audit.labels`); a judge of several sets (criteria) gets each one's figures apart."""
    jf = inp.judgments
    truth = inp.truth
    if scale is None and label_sets is not None and len(label_sets):
        sets = label_set_of(pd.Index(jf["item_id"].astype(str).unique()), label_sets)
        if sets:
            return _label_alignment(inp, wide, cfg, clusters, label_sets, sets)
    mine = truth.reindex(pd.Index(jf["item_id"].astype(str).unique()).intersection(truth.index))
    theirs = wide.reindex(mine.index).to_numpy(dtype=object).ravel()
    scores = pd.to_numeric(jf["score"], errors="coerce").to_numpy(dtype=np.float64) if "score" in jf else None
    if scale is None:
        scale = scale_of(pd.Series([*mine.to_numpy(dtype=object), *theirs], dtype=object), scores)
    if scale is None or (scale.ordinal and not scale.from_labels and "score" not in jf):
        return None
    t_code = scale.codes(truth.reindex(jf["item_id"].astype(str).to_numpy()).fillna(""))
    p_code, p_value = scale.judge_codes(jf)
    on_truth = t_code >= 0
    values = np.asarray(scale.values, dtype=np.float64)
    k = len(scale.levels)
    group = _cluster_of(jf["item_id"].astype(str).to_numpy()[on_truth], clusters)
    figures = pointwise_agreement(t_code[on_truth], p_code[on_truth], k,
                                  truth_value=values[t_code[on_truth]], pred_value=p_value[on_truth],
                                  ordinal=scale.ordinal, groups=group,
                                  level_values=values, n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
    invalid = (p_code[on_truth] < 0).astype(np.float64)
    item = pd.factorize(group)[0]
    names = ORDINAL if scale.ordinal else NOMINAL
    metrics = {name: figures[name] for name in names}
    metrics["invalid_rate"] = _invalid_rate(invalid, item, cfg)
    section: dict[str, Any] = {
        "scale": scale.to_json(), "kappa": "weighted_kappa" if scale.ordinal else "cohen_kappa",
        "n_invalid": figures["n_invalid"]["estimate"], "n_clusters": int(item.max(initial=-1)) + 1,
        "basis": "every judgment on an item with a human label (samples and orders count once each); "
                 + ("its score read at the nearest level of the scale for accuracy and κ"
                    if scale.ordinal else "its label against the human label")
                 + "; the items that rate one response are resampled together",
    }
    humans = _ceiling(wide.reindex(mine.index), scale, cfg, _cluster_of(mine.index.to_numpy(dtype=str), clusters))
    if humans is not None:
        section["humans"] = humans
    out: dict[str, Any] = {"metrics": metrics, "section": section}
    if humans is not None:
        out["like_for_like"] = _like_for_like(jf, mine.index, wide.reindex(mine.index), scale, p_code, p_value,
                                              humans, cfg, clusters)
    return out


def _label_alignment(inp: JudgeInput, wide: pd.DataFrame, cfg: AuditConfig, clusters: pd.Series | None,
                     label_sets: pd.Series, sets: list[LabelSet]) -> dict[str, Any] | None:
    """A judge of declared label sets: the pointwise figures on each set's own scale plus its ``labels``
    figures; one set is the judge's figures, several (criteria) are kept apart under ``criteria``."""
    jf = inp.judgments
    ids = jf["item_id"].astype(str)
    keys = label_set_keys(ids, label_sets)
    groups = pd.Series(_cluster_of(label_sets.index.to_numpy(dtype=str), clusters), index=label_sets.index)
    parts: dict[str, dict[str, Any]] = {}
    for ls in sets:
        sub = replace(inp, judgments=jf[(keys == ls.key()).to_numpy()])
        got = pointwise_alignment(sub, wide, cfg, clusters, scale=Scale.of_labels(ls))
        if got is None:
            continue
        extra = labels_section(sub.judgments, inp.truth, wide, ls, groups, cfg)
        got["metrics"].update(extra["metrics"])
        got["labels"] = extra["section"]
        on_truth = sub.judgments["item_id"].astype(str)
        got["n_items_with_consensus"] = int(on_truth[on_truth.isin(inp.truth.index)].nunique())
        parts[ls.criterion or ls.task] = got
    if not parts:
        return None
    if len(parts) == 1:
        return next(iter(parts.values()))
    # the judge over every criterion at once, on the labels they share (the first set's): its overall figures
    base = replace(sets[0], criterion="")
    shared = [ls.key() for ls in sets if replace(ls, criterion="").key() == base.key()]
    pooled_in = replace(inp, judgments=jf[keys.isin(shared).to_numpy()])
    pooled = pointwise_alignment(pooled_in, wide, cfg, clusters, scale=Scale.of_labels(base)) or {}
    if pooled:
        extra = labels_section(pooled_in.judgments, inp.truth, wide, base, groups, cfg)
        pooled["metrics"].update(extra["metrics"])
        # a pass rate over several criteria is the pass rate of nothing: the pooled part has none
        section = {k: v for k, v in extra["section"].items() if k not in ("prevalence", "plan")}
        pooled["labels"] = {**section, "criterion": None, "pooled_criteria": [
            ls.criterion for ls in sets if ls.key() in shared and ls.criterion in parts]}
    return {**(pooled or next(iter(parts.values()))), "criteria": parts}


def _like_for_like(jf: pd.DataFrame, items: pd.Index, wide: pd.DataFrame, scale: Scale, p_code: np.ndarray,
                   p_value: np.ndarray, humans: dict[str, Any], cfg: AuditConfig,
                   clusters: pd.Series | None) -> dict[str, Any]:
    """The judge measured as the annotators are measured with each other (:func:`_ceiling`): every pair of
    (annotator, judgment) on an item with two or more annotators, pooled, beside every pair of annotators
    on the same items, pooled both ways; in the shape of :func:`judgecal.stats.reference.like_for_like`
    (``pairwise`` only). The difference's interval combines the two intervals' half-widths in quadrature
    (the two pools are resampled separately), chance is Cohen's ``p_e`` recovered from each pool's
    agreement and unweighted κ, and the trivial rater always gives the annotators' most frequent level."""
    codes = np.column_stack([scale.codes(wide[c].fillna("")) for c in wide.columns])
    basis = (codes >= 0).sum(1) >= 2
    row = items.get_indexer(pd.Index(jf["item_id"].astype(str).to_numpy()))
    keep = (row >= 0) & (p_code >= 0)
    keep[keep] = basis[row[keep]]
    a_parts, b_parts, v_parts, i_parts = [], [], [], []
    for c in range(codes.shape[1]):
        on = keep.copy()
        on[on] = codes[row[on], c] >= 0
        a_parts.append(codes[row[on], c])
        b_parts.append(p_code[on])
        v_parts.append(p_value[on])
        i_parts.append(row[on])
    a, b, pv, it = (np.concatenate(x) for x in (a_parts, b_parts, v_parts, i_parts))
    values = np.asarray(scale.values, dtype=np.float64)
    k = len(scale.levels)
    kname = "weighted_kappa" if scale.ordinal else "cohen_kappa"
    groups = _cluster_of(items.to_numpy(dtype=str)[it], clusters)
    figures = pointwise_agreement(a, b, k, truth_value=values[a], pred_value=pv, ordinal=scale.ordinal,
                                  groups=groups, level_values=values, n_boot=cfg.n_boot, seed=cfg.seed,
                                  level=cfg.level)

    def chance(f: dict[str, Any]) -> float | None:
        po, kap = (f.get("accuracy") or {}).get("estimate"), (f.get("cohen_kappa") or {}).get("estimate")
        return None if po is None or kap is None or kap == 1 else float((po - kap) / (1 - kap))

    def diff(x: dict[str, Any], y: dict[str, Any]) -> dict[str, object]:
        if x.get("estimate") is None or y.get("estimate") is None or None in (
                x.get("ci_low"), x.get("ci_high"), y.get("ci_low"), y.get("ci_high")):
            return metric(float("nan"), float("nan"), float("nan"), 0)
        d = float(x["estimate"]) - float(y["estimate"])
        half = float(np.hypot(x["ci_high"] - x["ci_low"], y["ci_high"] - y["ci_low"])) / 2
        return metric(d, d - half, d + half, int(basis.sum()))

    present = codes[basis][codes[basis] >= 0]
    mode = int(np.bincount(present, minlength=k).argmax()) if present.size else 0
    pooled = float((present == mode).mean()) if present.size else None  # over (annotator, item) pairs, as the judge's
    judge: dict[str, Any] = {"kappa": figures[kname], "accuracy": figures["accuracy"], "chance_accuracy": chance(figures)}
    hum: dict[str, Any] = {"kappa": humans[kname], "accuracy": humans["accuracy"], "chance_accuracy": chance(humans)}
    word = "weighted κ" if scale.ordinal else "κ"
    return {"n_items": int(basis.sum()), "n_annotators": int(codes.shape[1]), "labels": list(scale.levels),
            "kappa_word": word,
            "trivial": {"label": str(scale.levels[mode]), "accuracy": pooled,
                        "kappa": 0.0, "words": f"always answering {scale.levels[mode]!r}, the annotators' most "
                                                 "frequent level"},
            "pairwise": {"definition": f"the judge's {word} and agreement pooled over every (annotator, judgment) "
                                       f"pair on an item, beside the annotators' {word} and agreement pooled over "
                                       "every pair of them both ways, on the same items",
                         "judge": judge, "humans": hum,
                         "difference": {"kappa": diff(judge["kappa"], hum["kappa"]),
                                        "accuracy": diff(judge["accuracy"], hum["accuracy"])}},
            "leave_one_out": None}


def _invalid_rate(invalid: np.ndarray, item: np.ndarray, cfg: AuditConfig) -> dict[str, object]:

    n_items = int(item.max(initial=-1)) + 1
    sums = np.column_stack([np.bincount(item, weights=invalid, minlength=n_items),
                            np.bincount(item, minlength=n_items)]).astype(np.float64)
    boot = bootstrap_sums(sums, cfg.n_boot, cfg.seed)
    lo, hi = percentile_ci(safe_ratio(boot[:, 0], boot[:, 1]), cfg.level) if boot.size else (np.nan, np.nan)
    return metric(float(invalid.mean()) if invalid.size else float("nan"), lo, hi, int(invalid.size))


def _ceiling(wide: pd.DataFrame, scale: Scale, cfg: AuditConfig, groups: np.ndarray) -> dict[str, Any] | None:
    """The annotators' agreement with each other on these items (``groups``: each item's cluster); ``None``
    when no item has two of them."""
    if wide.shape[1] < 2:
        return None
    codes = np.column_stack([scale.codes(wide[c].fillna("")) for c in wide.columns]) if len(wide) else \
        np.zeros((0, wide.shape[1]), dtype=np.int64)
    if not ((codes >= 0).sum(1) >= 2).any():
        return None
    figures = rater_agreement(codes, len(scale.levels), scale.values if scale.ordinal else None,
                              ordinal=scale.ordinal, groups=groups, n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
    out: dict[str, Any] = {name: figures[name] for name in (ORDINAL if scale.ordinal else NOMINAL)}
    out["n_annotators"] = int(wide.shape[1])
    out["n_items"] = int(((codes >= 0).sum(1) >= 2).sum())
    out["basis"] = "every pair of annotators who labelled the same item, both ways"
    return out


def add_pointwise(report: dict[str, Any], inputs: list[JudgeInput], wide: pd.DataFrame, cfg: AuditConfig,
                  clusters: pd.Series | None = None, label_sets: pd.Series | None = None) -> None:
    """Pointwise metrics under each pointwise judge's ``metrics``, its ``pointwise`` section beside them
    (and its ``labels`` section, per criterion under ``criteria``, on declared label sets)."""
    for inp in inputs:
        if not is_pointwise(inp):
            continue
        got = pointwise_alignment(inp, wide, cfg, clusters, label_sets)
        if got is None:
            continue
        entry = report["judges"][inp.judge]
        for name, m in got["metrics"].items():
            entry["metrics"][name] = {**m, "p": None, "q": None, "mde": None}
        entry["pointwise"] = got["section"]
        if got.get("labels"):
            entry["labels"] = got["labels"]
        if got.get("criteria"):
            entry["criteria"] = {c: {"n_items_with_consensus": part["n_items_with_consensus"], "kind": "pointwise",
                                     "metrics": {k: {**m, "p": None, "q": None, "mde": None}
                                                 for k, m in part["metrics"].items()},
                                     "pointwise": part["section"], "labels": part["labels"],
                                     "reference": {"like_for_like": part["like_for_like"]}
                                     if part.get("like_for_like") else {}}
                                 for c, part in got["criteria"].items()}
        if got.get("like_for_like"):
            like = got["like_for_like"]
            entry["reference"] = {"like_for_like": like}
            for name, key in (("pairwise_kappa", "kappa"), ("pairwise_accuracy", "accuracy")):
                entry["metrics"][name] = {**like["pairwise"]["judge"][key], "null_value": None, "p": None,
                                          "q": None, "mde": None}


__all__ = ["KNOWN_SCALES", "Scale", "add_pointwise", "is_pointwise", "pointwise_alignment", "scale_of"]
