"""What a binary or categorical ("label") judge's figures are read beside, from ``audit.json``.

A judge of items with a declared label set carries a ``labels`` section (:class:`~judgecal.audit.schema.LabelsSection`;
labelled on several criteria, one per criterion under ``criteria``, :class:`~judgecal.audit.schema.CriterionPart`).
This module turns one such part of the typed report into plain data that
every surface renders the same way (the explorer's Labels page, the HTML/PDF report, the terminal):

- the confusion matrix (rows: the human truth, columns: the judge) with each row's shares;
- accuracy and κ, then the rates — binary: TPR, TNR, precision, F1, balanced accuracy; categorical: recall
  and precision of each label — and macro F1, each beside the same figure of the judge with each annotator and of the annotators
  with each other on the same items (``like_for_like``, when two or more annotators labelled them) and
  beside a **trivial rater** that always answers the truth's most frequent label;
- binary: the pass rate as the judge reports it, corrected (Rogan–Gladen), PPI++ and from the human labels
  alone, and the plan (how many human labels a ±0.05 pass rate needs) in words.

The trivial rater's figures are the audit's (``labels.trivial`` against the consensus, from the confusion's
row totals; ``labels.like_for_like.trivial`` with each annotator, over the same (annotator, judgment) pairs as
the judge's figure; :func:`judgecal.stats.trivial.trivial_rater`). Nothing here is computed; nothing formats
HTML or markdown (each renderer escapes what it is given).

The label metrics' titles and definitions are the catalogue's (:func:`judgecal.catalogue.info`), worded
with the judge's own labels by :func:`metric_info`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from judgecal.audit.schema import CriterionPart, Figure, Judge, LabelSide, LabelsSection
from judgecal.catalogue import MetricInfo, fmt_metric, fmt_number, info
from judgecal.report.table import at

# the label metrics: their titles and definitions are the catalogue's, worded with a judge's labels
LABEL_METRICS = ("tpr", "tnr", "precision", "f1", "balanced_accuracy", "macro_f1", "recall_by_label",
                 "precision_by_label")
BINARY_RATES = ("tpr", "tnr", "precision", "f1", "balanced_accuracy", "macro_f1")
PREVALENCE = (
    ("judge_reported", "judge-reported", "the share of every item the judge labelled that it labels {positive}"),
    ("rogan_gladen", "corrected (Rogan–Gladen)", "the judge's rate corrected by its TPR and TNR measured on the "
     "human-labelled items: (rate + TNR − 1) / (TPR + TNR − 1)"),
    ("ppi", "PPI++", "the human labels, plus the judge on the items without one, its errors measured on the "
     "labelled items (prediction-powered inference)"),
    ("human_only", "human-only", "the share of the human-labelled items the humans labelled {positive}"),
)
#: the pointwise figures that read a score's order: they do not apply to a nominal label set
ORDINAL_ONLY = ("weighted_kappa", "spearman_rho", "mae")
TRIVIAL_WORDS = "always answering the truth's most frequent label"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _q(label: Any) -> str:
    return repr(str(label))


def is_label_judge(entry: Judge) -> bool:
    """A judge of items with a declared label set (binary or categorical)."""
    return entry.labels is not None and bool(entry.labels.labels)


def is_nominal(entry: Judge) -> bool:
    """A label judge whose labels have no order: weighted κ, Spearman's ρ and the mean error do not apply."""
    return is_label_judge(entry) and not (entry.labels and entry.labels.ordinal)


def criteria_of(entry: Judge) -> list[str]:
    """The criteria a judge was read on one by one (``[]`` for one label set)."""
    return [str(c) for c in (entry.criteria or {})]


def metric_info(name: str, labels: LabelsSection | None = None) -> MetricInfo:
    """The catalogue entry of ``name`` worded with the judge's ``labels`` section (its positive label, the
    label of a per-label figure)."""
    base = name.partition(".")[0]
    if base not in LABEL_METRICS or (base == "macro_f1" and labels is None):
        return info(name)
    names = [str(x) for x in labels.labels] if labels else []
    pos = labels.positive if labels else None
    neg = next((x for x in names if x != str(pos)), None) if pos is not None else None
    words = {k: v for k, v in (("positive", _q(pos) if pos is not None else None),
                               ("negative", _q(neg) if neg is not None else None)) if v is not None}
    return info(name, words)


def rate_names(labels: LabelsSection, kappa: str = "cohen_kappa") -> list[str]:
    """The figures a label part shows, in order: accuracy and κ (``kappa``: the κ the judge is read on,
    quadratic-weighted on an ordered set), then its rates."""
    if labels.task == "binary":
        return ["accuracy", kappa, *BINARY_RATES]
    names = [str(x) for x in labels.labels]
    return ["accuracy", kappa, *(f"recall_by_label.{x}" for x in names), *(f"precision_by_label.{x}" for x in names),
            "macro_f1"]


@dataclass(frozen=True)
class ConfusionView:
    """The confusion counts (rows: the human truth, columns: the judge) with their totals and each row's
    shares (``None`` for an empty row)."""

    labels: list[str]
    counts: list[list[int]]
    row_totals: list[int]
    col_totals: list[int]
    shares: list[list[float | None]]
    n: int
    majority: str | None
    rows: str
    columns: str


def confusion_view(labels: LabelsSection) -> ConfusionView:
    """The confusion of a label part, with the trivial rater's label (the audit's)."""
    conf = labels.confusion
    names = [str(x) for x in (conf.labels if conf else []) or labels.labels]
    counts = [[int(c) for c in row] for row in (conf.counts if conf else [])]
    totals = [sum(r) for r in counts]
    shares = [[(c / t if t else None) for c in r] for r, t in zip(counts, totals, strict=True)]
    return ConfusionView(labels=names, counts=counts, row_totals=totals,
                         col_totals=[sum(c) for c in zip(*counts, strict=True)] if counts else [], shares=shares,
                         n=sum(totals), majority=labels.trivial.label if labels.trivial else None,
                         rows=str((conf.rows if conf else None) or "human truth"),
                         columns=str((conf.columns if conf else None) or "judge"))


def _like(side: LabelSide | None, name: str) -> Figure | None:
    """A rate of one side of ``like_for_like`` (``recall_by_label`` is a mapping there)."""
    return side.rate(name) if side is not None else None


def _trivial_text(name: str, value: float | None, majority: str | None, positive: Any = None) -> str:
    if majority is None:
        return "not measured"
    if value is None:
        label = name.partition(".")[2] or ("" if positive is None else str(positive))
        return f"undefined (never answers {_q(label)})" if label else "undefined (never answers it)"
    return fmt_number(value)


def part_of(entry: Judge, criterion: str | None = None) -> Judge | CriterionPart | None:
    """The judge's figures on one criterion (``criteria[criterion]``), or its top-level ones."""
    if criterion is None:
        return entry
    return entry.criterion(criterion)


@dataclass(frozen=True)
class PrevalenceRow:
    """One of a binary part's four pass rates: its figure, as text, and how it was computed."""

    name: str
    title: str
    definition: str
    metric: Figure | None
    value: str
    n: int | float | None
    estimate: float | None
    ci_low: float | None
    ci_high: float | None


def prevalence_rows(labels: LabelsSection) -> list[PrevalenceRow]:
    """A binary part's pass rate, four ways, each with its interval (``[]`` when not computed)."""
    prev = labels.prevalence
    if prev is None or not prev.to_json():
        return []
    pos = _q(prev.positive if "positive" in prev.model_fields_set else labels.positive)
    rows = []
    for key, title, definition in PREVALENCE:
        m: Figure | None = getattr(prev, key)
        rows.append(PrevalenceRow(name=key, title=title, definition=definition.format(positive=pos), metric=m,
                                  value=fmt_metric(m) if m else "not computed", n=m.n if m else None,
                                  estimate=_num(m.estimate) if m else None, ci_low=_num(m.ci_low) if m else None,
                                  ci_high=_num(m.ci_high) if m else None))
    return rows


def pass_rate_line(labels: LabelsSection) -> str | None:
    """``pass rate ('1'): judge-reported X, corrected (Rogan–Gladen) Y, PPI++ Z, human-only W``."""
    rows = prevalence_rows(labels)
    prev = labels.prevalence
    if not rows or prev is None:
        return None
    pos = _q(prev.positive if "positive" in prev.model_fields_set else labels.positive)
    return f"pass rate ({pos}): " + ", ".join(f"{r.title} {r.value}" for r in rows)


def prevalence_words(labels: LabelsSection) -> str | None:
    """How the four pass rates were computed: the labelled and judged counts, the undefined corrections."""
    prev = labels.prevalence
    if prev is None or not prev.to_json():
        return None
    n_l, n_all = prev.n_labelled, prev.n_all
    out = (f"The judge labelled {n_all} items, {n_l} of them with a human label; the corrections read its TPR "
           "and TNR (Rogan–Gladen) or its errors (PPI++) on the labelled ones.")
    if n_l is not None and n_l == n_all:
        out += (" Every judged item carries a human label, so both corrections equal the human-only rate here: "
                "they matter where the judge labels items people did not.")
    rg = prev.rogan_gladen
    if rg is not None and rg.to_json() and rg.estimate is None:
        out += " Rogan–Gladen is undefined: TPR + TNR ≤ 1, the judge is no better than chance."
    elif rg is not None and rg.n_undefined:
        out += f" {rg.n_undefined} bootstrap replicates had no correction (TPR + TNR ≤ 1 there)."
    ratio = _num(prev.ppi.width_ratio) if prev.ppi else None
    if ratio is not None and n_l != n_all:
        out += f" PPI++'s interval is {fmt_number(ratio, 2)}× the width of the human-only one."
    return out


def plan_words(labels: LabelsSection) -> str | None:
    """The plan in words: how many human labels a pass rate within ± the half-width needs."""
    plan = labels.plan
    if plan is None or not plan.to_json():
        return None
    h, level = _num(plan.halfwidth), _num(plan.level)
    pct = f"{level:.0%}" if level is not None else "95%"
    words = (f"For a pass rate within ±{fmt_number(h, 2)} at {pct} confidence: {plan.n_human_only} human "
             f"labels on their own, or {plan.n_ppi} with PPI++ (the judge labelling the other items)")
    ppi = plan.ppi_plan
    gain = _num(ppi.gain) if ppi else None
    if gain is not None and gain > 1.005:
        words += f": {fmt_number(gain, 2)}× fewer"
    words += f". {plan.n_labelled} of the {plan.n_all} judged items carry a human label now"
    more_h, more_p = plan.more_human_only or 0, plan.more_ppi or 0
    words += (f": {more_h} more needed human-only, {more_p} with PPI++." if more_h or more_p else
              ": enough for both.")
    if plan.enough_items is False:
        words += " The judged items are too few for the PPI++ plan: judge more items."
    if plan.rho_defined is False:
        words += (" The judge's and the humans' labels do not vary together on the labelled items (one side is "
                  "constant): the judge buys nothing here.")
    if ppi is not None and ppi.exceeds_ceiling:
        words += " " + str(ppi.ceiling_note or "")
    if plan.pass_rate in (0, 0.0, 1, 1.0):
        words += " The labelled items all carry one label: read the plan as \"no variance seen\", not \"no labels needed\"."
    return words


@dataclass(frozen=True)
class PartStatus:
    """A part's verdict in words: its status (``no verdict`` where none) and its reasons."""

    status: str
    reasons: list[str]


@dataclass(frozen=True)
class RateRow:
    """One figure of a label part beside its references: the judge against the consensus and the trivial
    rater there; with each annotator, the annotators with each other and the trivial rater measured so."""

    name: str
    title: str
    definition: str
    judge: Figure | None
    judge_text: str
    trivial: float | None
    trivial_text: str
    like_judge: Figure | None
    like_judge_text: str
    humans: Figure | None
    humans_text: str
    trivial_like: float | None
    trivial_like_text: str


@dataclass(frozen=True)
class TitledValue:
    """A figure's title and its value as text."""

    title: str
    value: str


@dataclass(frozen=True)
class CriterionStatus:
    """One criterion of a judge and its verdict there."""

    criterion: str
    status: str


@dataclass(frozen=True)
class LabelView:
    """Everything a surface shows of one label part of a judge (see the module)."""

    criterion: str | None
    pooled: list[str]
    task: str
    labels: list[str]
    ordinal: bool
    positive: str | None
    n_judgments: int | None
    n_with_truth: int | None
    n_invalid: int | None
    verdict: PartStatus
    confusion: ConfusionView
    trivial_label: str | None
    trivial_like_label: str | None
    trivial_words: str
    has_like: bool
    rates: list[RateRow]
    like_definition: str
    humans_agreement: list[TitledValue]
    humans_basis: str
    prevalence: list[PrevalenceRow]
    pass_rate_line: str | None
    prevalence_words: str | None
    plan_words: str | None
    criteria: list[CriterionStatus]
    trusted_on: list[str]
    not_trusted_on: list[str]


def _status(part: Judge | CriterionPart) -> PartStatus:
    v = part.verdict
    if v is not None and v.status:
        return PartStatus(status=str(v.status), reasons=[str(r) for r in v.reasons])
    return PartStatus(status="no verdict", reasons=[])


def label_view(entry: Judge, criterion: str | None = None) -> LabelView | None:
    """Everything a surface shows of one label part of a judge (``criterion``: one of :func:`criteria_of`;
    ``None``: the top-level figures, pooled over its criteria when it has several). ``None`` when the
    judge has no such part."""
    part = part_of(entry, criterion)
    labels = part.labels if part is not None else None
    if part is None or labels is None or not labels.to_json():
        return None
    conf = confusion_view(labels)
    trivial = labels.trivial.figures if labels.trivial else {}
    like = labels.like_for_like
    has_like = like is not None and bool(like.to_json())
    like_trivial = like.trivial if like is not None and has_like else None
    like_major = like_trivial.label if like_trivial else None
    trivial_like = like_trivial.figures if like_trivial else {}
    rates = []
    kappa = str((part.pointwise.kappa if part.pointwise else None) or "cohen_kappa")
    for name in rate_names(labels, kappa):
        mi = metric_info(name, labels)
        judge = part.figure(name)
        lj, lh = (_like(like.judge, name), _like(like.humans, name)) if like else (None, None)
        t, tl = at(trivial, name), at(trivial_like, name)
        rates.append(RateRow(name=name, title=mi.title, definition=mi.definition,
                             judge=judge, judge_text=fmt_metric(judge),
                             trivial=t, trivial_text=_trivial_text(name, t, conf.majority, labels.positive),
                             like_judge=lj, like_judge_text=fmt_metric(lj) if lj else _no_like(has_like),
                             humans=lh, humans_text=fmt_metric(lh) if lh else _no_like(has_like),
                             trivial_like=tl if lj else None,
                             trivial_like_text=_trivial_text(name, tl, like_major, labels.positive) if lj
                             else _no_like(has_like)))
    crit = entry.criteria or {}
    v = entry.verdict
    said = (v.criteria if v else None) or {}
    humans = labels.humans if labels.humans is not None and labels.humans.to_json() else None
    alpha = humans.krippendorff_alpha if humans else None
    level = alpha.level_of_measurement if alpha and "level_of_measurement" in alpha.model_fields_set else "nominal"
    return LabelView(
        criterion=criterion, pooled=[str(c) for c in labels.pooled_criteria or []],
        task=str(labels.task or ""), labels=conf.labels, ordinal=bool(labels.ordinal),
        positive=None if labels.positive is None else str(labels.positive),
        n_judgments=labels.n_judgments, n_with_truth=labels.n_with_truth, n_invalid=labels.n_invalid,
        verdict=_status(part), confusion=conf, trivial_label=conf.majority, trivial_like_label=like_major,
        trivial_words=TRIVIAL_WORDS, has_like=has_like, rates=rates,
        like_definition=str((like.definition if like else None) or ""),
        humans_agreement=[TitledValue("Fleiss' κ", _on_items(humans.fleiss_kappa)),
                          TitledValue(f"Krippendorff's α ({level})", _on_items(alpha))] if humans else [],
        humans_basis=(f"{humans.n_annotators} annotators on {humans.n_items} items"
                      if humans else "one annotator per item: the annotators' own figures are not measured"),
        prevalence=prevalence_rows(labels), pass_rate_line=pass_rate_line(labels),
        prevalence_words=prevalence_words(labels), plan_words=plan_words(labels),
        criteria=[CriterionStatus(str(c), str(said[c] if c in said and said[c] else _status(p).status))
                  for c, p in crit.items()],
        trusted_on=[str(c) for c in (v.trusted_on if v else None) or []],
        not_trusted_on=[str(c) for c in (v.not_trusted_on if v else None) or []],
    )


def _on_items(m: Figure | None) -> str:
    """``0.148 (0.131–0.170) on 298 items``: the humans' agreement with the items it was measured on (Fleiss' κ
    reads only the items with the most common number of labels)."""
    return fmt_metric(m) + (f" on {m.n} items" if m and m.n is not None else "")


def _no_like(has_like: bool) -> str:
    if not has_like:
        return "not measured (needs two annotators)"
    return "not measured"  # like_for_like carries no per-label precision


def trusted_words(view: LabelView) -> str | None:
    """``trusted on: toxicity; not trusted on: jailbreaking`` for a judge of several criteria."""
    if not view.criteria:
        return None
    yes = ", ".join(view.trusted_on) or "none"
    no = ", ".join(view.not_trusted_on) or "none"
    return f"trusted on: {yes}; not trusted on: {no}"


def label_views(entry: Judge) -> list[LabelView]:
    """Each part a report shows: one per criterion (the pooled figures after them), or the one part."""
    crit = criteria_of(entry)
    parts = [label_view(entry, c) for c in crit] + [label_view(entry)]
    return [p for p in parts if p is not None]


__all__ = ["LABEL_METRICS", "ConfusionView", "LabelView", "PrevalenceRow", "RateRow", "ORDINAL_ONLY", "criteria_of", "is_label_judge", "is_nominal", "label_view",
           "label_views", "metric_info", "trusted_words"]
