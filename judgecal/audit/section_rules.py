"""The verdict rules of the agreement, spans and labels sections, over typed views of a judge's object.

Each rule is a :data:`~judgecal.audit.verdict.VerdictRule` (``VerdictInput -> list[Effect]``); the views below
read the sections once (:meth:`JudgeFacts.of`), so the rules read attributes, never nested dicts. They are
registered in :data:`SECTION_RULES` (read before the probes' rules) and :data:`LATE_RULES` (after the flags), which
:func:`judgecal.audit.decision.judge_verdict` reads.

- agreement, like with like (:mod:`judgecal.stats.reference`): the judge's κ with the annotators beside theirs
  with each other on the same items; the gap ``κ_humans − κ_judge`` counts against ``kappa_gap`` only when its
  paired interval excludes 0; a judge whose κ interval reaches 0 is never aligned; below ``kappa.not_aligned_below``
  the humans themselves make the task subjective. Agreement (raw) beside the annotators', chance and the trivial
  rater, against ``accuracy_gap`` or the business-loss bound ``Δε`` (:func:`judgecal.audit.thresholds.tolerated_gap`).
- without two annotators: κ with the consensus against ``kappa``, the humans' κ against ``kappa_gap``, the
  accuracy gap to an annotator against ``accuracy_gap``.
- span judges: the chance-corrected span score against ``span_score`` and never aligned unless clearly above the
  best trivial marker (:func:`judgecal.stats.spans.span_reference`); ``span_f1_ratio`` without the texts.
- labels: balanced accuracy and per-label recall against the trivial rater and the humans' own rates
  (``label_rate_gap``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from judgecal.audit.thresholds import REFERENCES, tolerated_gap
from judgecal.audit.verdict import Effect, Figure, Severity, VerdictInput, VerdictRule


def _map(d: Any) -> Mapping[str, Any]:
    """``d`` when it is a mapping, else an empty one (a section absent or ``null``)."""
    return d if isinstance(d, Mapping) else {}


@dataclass(frozen=True)
class Side:
    """One side (the judge, or the humans) of a like-for-like reference."""

    kappa: Figure = Figure()
    accuracy: Figure = Figure()
    chance_accuracy: float | None = None
    rates: Mapping[str, Figure] = field(default_factory=dict)  # tpr, tnr, recall_by_label.<label>

    @classmethod
    def of(cls, d: Any) -> Side:
        d = _map(d)
        rates = {k: Figure.of(d[k]) for k in ("tpr", "tnr") if k in d}
        rates.update({f"recall_by_label.{lab}": Figure.of(m) for lab, m in _map(d.get("recall_by_label")).items()})
        chance = d.get("chance_accuracy")
        return cls(Figure.of(d.get("kappa")), Figure.of(d.get("accuracy")),
                   None if chance is None else float(chance), rates)


@dataclass(frozen=True)
class Reference:
    """A like-for-like reference (``pairwise`` or ``leave_one_out``): the judge's and the humans' sides, their
    paired differences, the trivial rater, the items and annotators it counts."""

    name: str
    judge: Side
    humans: Side
    kappa_difference: Figure
    kappa_difference_raw: Mapping[str, Any]  # as the report gives it (the verdict's human_likeness repeats it)
    accuracy_difference: Figure
    trivial_label: Any = None
    trivial_accuracy: float | None = None
    n_items: Any = None
    kappa_word: str = "κ"


@dataclass(frozen=True)
class AltTest:
    """The alternative annotator test and the Judge's Verdict κ z-score (``replace_annotator``)."""

    z: Any = None
    z_pairs: int = 0
    z_pattern: Any = None
    n_annotators: int = 0
    winning_rate: Any = None
    passed: bool = False
    epsilon: Any = None

    @classmethod
    def of(cls, d: Any) -> AltTest:
        d = _map(d)
        kz = _map(d.get("kappa_z"))
        return cls(kz.get("z"), kz.get("n_pairs") or 0, kz.get("pattern"), d.get("n_annotators") or 0,
                   d.get("winning_rate"), bool(d.get("passed")), d.get("epsilon"))


@dataclass(frozen=True)
class SpanReference:
    """A span judge's like-for-like reference: its span F1 and the annotators', the best trivial marker's, the
    chance-corrected score and its margin over the marker."""

    judge: Figure
    humans: Figure
    best: Any
    best_f1: float | None
    normalised: Figure
    above_baseline: Figure

    @classmethod
    def of(cls, d: Mapping[str, Any]) -> SpanReference:
        best = d.get("best_baseline")
        return cls(Figure.of(d.get("judge")), Figure.of(d.get("humans")), best,
                   Figure.of(_map(d.get("baselines")).get(best) if isinstance(best, str) else None).estimate, Figure.of(d.get("normalised")),
                   Figure.of(d.get("above_baseline")))


@dataclass(frozen=True)
class Labels:
    """A binary or categorical judge's labels section: the task, its positive label, its labels, and the
    like-for-like rates of the judge and of the humans."""

    binary: bool
    positive: Any
    labels: tuple[Any, ...]
    judge: Side
    humans: Side


@dataclass(frozen=True)
class JudgeFacts:
    """What the sections' rules read of one judge's object."""

    n_items: int
    kappa_name: str
    span_reference: SpanReference | None
    span_ceiling: float | None
    references: Mapping[str, Reference]
    n_annotators: int
    alt: AltTest
    labels: Labels | None

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> JudgeFacts:
        spans = _map(entry.get("spans"))
        lfl = _map(_map(entry.get("reference")).get("like_for_like"))
        triv = _map(lfl.get("trivial"))
        refs = {}
        for name in REFERENCES:
            d = _map(lfl.get(name))
            if not d:
                continue
            diff = _map(d.get("difference"))
            acc = triv.get("accuracy")
            refs[name] = Reference(name, Side.of(d.get("judge")), Side.of(d.get("humans")),
                                   Figure.of(diff.get("kappa")), _map(diff.get("kappa")), Figure.of(diff.get("accuracy")),
                                   triv.get("label"), None if acc is None else float(acc), lfl.get("n_items"),
                                   lfl.get("kappa_word") or "κ")
        lab = _map(entry.get("labels"))
        like = _map(lab.get("like_for_like"))
        labels = Labels(lab.get("task") == "binary", lab.get("positive"), tuple(lab.get("labels") or ()),
                        Side.of(like.get("judge")), Side.of(like.get("humans"))) if lab else None
        span_like = spans.get("like_for_like")
        return cls(int(entry.get("n_items_with_consensus") or 0),
                   str(_map(entry.get("pointwise")).get("kappa", "cohen_kappa")),
                   SpanReference.of(span_like) if span_like else None,
                   Figure.of(spans.get("human_f1")).estimate, refs, int(lfl.get("n_annotators") or 0),
                   AltTest.of(entry.get("replace_annotator")), labels)


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _ci(m: Figure) -> str:
    return "" if m.ci_low is None or m.ci_high is None else f" ({_fmt(m.ci_low)} to {_fmt(m.ci_high)})"


def _r(severity: Severity, code: str, metric: str | None, text: str) -> Effect:
    return Effect(severity, code, metric, text)


def chosen_reference(facts: JudgeFacts, t: Mapping[str, Any]) -> Reference | None:
    """The like-for-like reference the verdict reads (``thresholds.reference``, else the other definition);
    ``None`` when neither has both κ values."""
    for name in (t.get("reference", "pairwise"), *REFERENCES):
        ref = facts.references.get(name)
        if ref is not None and ref.judge.kappa.estimate is not None and ref.humans.kappa.estimate is not None:
            return ref
    return None


def agreement_rule(v: VerdictInput) -> list[Effect]:
    """The agreement section's rule: a span judge against its like-for-like reference (else the span F1 ratio to
    the annotators'), else like with like (κ and agreement beside the annotators'), else κ with the consensus
    against ``kappa`` and the humans' κ against ``kappa_gap``; too few items is a caution; the accuracy gap to an
    annotator against ``accuracy_gap`` or the business-loss bound when no like-for-like reference exists."""
    facts, t, human_kappa, human_accuracy = JudgeFacts.of(v.sections), v.thresholds, v.human_kappa, v.human_accuracy
    reasons: list[Effect] = []
    n_items, kappa_name = facts.n_items, facts.kappa_name  # weighted κ on an ordinal scale
    kappa, acc = v.figure(kappa_name).estimate, v.figure("accuracy").estimate
    kappa_word = "weighted κ" if kappa_name == "weighted_kappa" else "κ"
    span_f1 = v.figure("span_f1").estimate
    if span_f1 is not None and facts.span_reference is not None:
        reasons += _span_reasons(facts.span_reference, t)
    elif span_f1 is not None:
        ceiling = facts.span_ceiling
        ref = f" against the annotators' {_fmt(ceiling)} with each other" if ceiling is not None else ""
        words = f"span F1 {_fmt(span_f1)}{ref}"
        ratio = span_f1 / ceiling if ceiling else None
        band = t["span_f1_ratio"]
        if ratio is None:
            reasons.append(_r(1, "span_no_ceiling", "span_f1",
                              f"{words}: no two annotators on its items, so no ceiling to read it against"))
        elif ratio < band["not_aligned_below"]:
            reasons.append(_r(2, "span_f1_ratio", "span_f1",
                              f"{words}: less than {band['not_aligned_below']:.0%} of the humans' agreement"))
        elif ratio < band["aligned_at_least"]:
            reasons.append(_r(1, "span_f1_ratio", "span_f1",
                              f"{words}: below {band['aligned_at_least']:.0%} of the humans' agreement"))
        else:
            reasons.append(_r(0, "span_f1_ratio", "span_f1", words))
    like = chosen_reference(facts, t)
    too_few = _r(1, "too_few_items", None, f"only {n_items} items with a human label (fewer than {t['min_items']})")
    if like is not None and n_items > 0 and span_f1 is None:
        reasons += _like_reasons(facts, like, t)[0]
        if n_items < t["min_items"]:
            reasons.append(too_few)
    elif n_items == 0 and span_f1 is None:
        reasons.append(_r(1, "no_human_labels", None, "no human labels on the items it judged: agreement not measured"))
    elif kappa is None and span_f1 is None:  # labelled items, but κ is 0/0
        reasons.append(_r(1, "kappa_undefined", kappa_name, f"{kappa_word} undefined on its {n_items} items with a "
                          "human label (the labels or its answers all on one level, or no answer readable): "
                          "agreement not measured"))
    elif kappa is not None and n_items > 0:
        ref = f" against the humans' {_fmt(human_kappa)} with each other" if human_kappa is not None else ""
        words = f"{kappa_word} {_fmt(kappa)}{ref} (0 = chance, 1 = perfect)"
        if kappa < t["kappa"]["not_aligned_below"]:  # κ <= 0: chance or below, never "better"
            reasons.append(_r(2, "kappa", kappa_name, f"{words}: {'no' if kappa <= 0 else 'barely'} better than chance"))
        elif kappa < t["kappa"]["aligned_at_least"]:
            reasons.append(_r(1, "kappa", kappa_name, f"{words}: moderate agreement"))
        else:
            reasons.append(_r(0, "kappa", kappa_name, f"{words}"))
        if human_kappa is not None:
            gap = human_kappa - kappa
            text = f"its {kappa_word} is {_fmt(gap)} below the humans' agreement with each other"
            if gap > t["kappa_gap"]["not_aligned_above"]:
                reasons.append(_r(2, "kappa_gap", kappa_name, text))
            elif gap > t["kappa_gap"]["caution_above"]:
                reasons.append(_r(1, "kappa_gap", kappa_name, text))
        if n_items < t["min_items"]:
            reasons.append(too_few)
    if like is None and acc is not None and human_accuracy is not None:
        gap = human_accuracy - acc
        limit = tolerated_gap(t.get("business_loss"))
        text = f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}"
        if limit is not None:
            if gap > limit:
                reasons.append(_r(2, "accuracy_gap", "accuracy", f"{text}, more than the {_fmt(limit)} the "
                                  "business-loss budget tolerates"))
        elif gap > t["accuracy_gap"]["not_aligned_above"]:
            reasons.append(_r(2, "accuracy_gap", "accuracy", text))
        elif gap > t["accuracy_gap"]["caution_above"]:
            reasons.append(_r(1, "accuracy_gap", "accuracy", text))
    return reasons


def human_likeness(v: VerdictInput) -> dict[str, Any] | None:
    """The class the like-for-like reading gives the judge (human-like, super-consistent, below the humans), with
    the κ z-score and the alternative annotator test beside it; ``None`` where the agreement rule reads none."""
    facts = JudgeFacts.of(v.sections)
    like = chosen_reference(facts, v.thresholds)
    if like is None or facts.n_items <= 0 or v.figure("span_f1").estimate is not None:
        return None
    return _like_reasons(facts, like, v.thresholds)[1]


def _like_reasons(facts: JudgeFacts, like: Reference, t: Mapping[str, Any]) -> tuple[list[Effect], dict[str, Any]]:
    """The agreement reasons read like with like (:mod:`judgecal.stats.reference`): the judge's κ and
    agreement beside the humans' on the same definition and items; the gap counts only when its paired
    interval excludes 0; a judge not clearly above chance (κ's interval reaching 0, as a rater that always
    gives one label) is never aligned; weak agreement among the humans themselves is stated as such."""
    out: list[Effect] = []
    j, h = like.judge, like.humans
    jk, hk = float(j.kappa.estimate or 0.0), float(h.kappa.estimate or 0.0)  # both given (chosen_reference)
    pairwise = like.name == "pairwise"
    kw = like.kappa_word
    if pairwise:
        base = (f"{kw} {_fmt(jk)} with each annotator beside the annotators' {_fmt(hk)} with each other "
                f"(pairwise, the same {like.n_items} items)")
    else:
        base = (f"{kw} {_fmt(jk)} against the majority of the other annotators beside an annotator's {_fmt(hk)} "
                f"against the same majority (leave-one-out, the same {like.n_items} items)")
    dk = like.kappa_difference
    gap = hk - jk
    trivial = jk <= 0 or (j.kappa.ci_low is not None and j.kappa.ci_low <= 0)
    below = gap > t["kappa_gap"]["caution_above"] and dk.ci_high is not None and dk.ci_high < 0
    subjective = hk < t["kappa"]["not_aligned_below"]
    if trivial and (h.kappa.ci_low is not None and h.kappa.ci_low > 0):
        cls = "below the humans"
        out.append(_r(2, "like_kappa_chance", "pairwise_kappa", f"{base}: not clearly above chance, which a rater "
                      "that always gives the same label reaches (κ 0), while the annotators are clearly above it"))
    elif trivial:
        cls = "like the humans, at chance"
        out.append(_r(1, "like_kappa_chance", "pairwise_kappa",
                      f"{base}: neither the judge nor the annotators are clearly above chance"))
    elif below:
        cls = "below the humans"
        sev: Severity = 2 if gap > t["kappa_gap"]["not_aligned_above"] else 1
        ci = "" if dk.ci_low is None or dk.ci_high is None else f" (difference {_fmt(dk.ci_low)} to {_fmt(dk.ci_high)})"
        out.append(_r(sev, "like_kappa_gap", "pairwise_kappa",
                      f"{base}: {_fmt(gap)} below the humans' agreement with each other{ci}"))
    elif dk.ci_low is not None and dk.ci_low > 0 and -gap > t["kappa_gap"]["caution_above"]:
        cls = "super-consistent"
        out.append(_r(0, "like_kappa_super", "pairwise_kappa",
                      f"{base}: agrees with people more than they agree with each other"))
    else:
        cls = "human-like"
        out.append(_r(0, "like_kappa_human", "pairwise_kappa",
                      f"{base}: agrees with people as well as they agree with each other"))
    if subjective:
        out.append(_r(1, "humans_subjective", "pairwise_kappa", f"the annotators themselves agree weakly ({kw} "
                      f"{_fmt(hk)} with each other): the task is subjective here, and no single rater, human or "
                      "model, is reliable on it"))
    elif hk < t["kappa"]["aligned_at_least"]:
        out.append(_r(0, "humans_moderate", "pairwise_kappa",
                      f"the annotators agree moderately with each other ({kw} {_fmt(hk)})"))
    ja, ha = j.accuracy.estimate, h.accuracy.estimate
    if ja is not None and ha is not None:
        words = (f"agreement {_fmt(ja)} with each annotator beside the annotators' {_fmt(ha)} with each other"
                 if pairwise else f"agreement {_fmt(ja)} with the others' majority beside an annotator's {_fmt(ha)}")
        words += f" (chance {_fmt(j.chance_accuracy or 0)} and {_fmt(h.chance_accuracy or 0)}"
        if like.trivial_accuracy is not None:
            words += f"; always {like.trivial_label!r}: {_fmt(like.trivial_accuracy)}"
        words += ")"
        agap, da = ha - ja, like.accuracy_difference
        significant = da.ci_high is not None and da.ci_high < 0
        limit = tolerated_gap(t.get("business_loss"))
        if limit is not None:
            if agap > limit:
                out.append(_r(2, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below, more than "
                              f"the {_fmt(limit)} the business-loss budget tolerates"))
        elif significant and agap > t["accuracy_gap"]["not_aligned_above"]:
            out.append(_r(2, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below"))
        elif significant and agap > t["accuracy_gap"]["caution_above"]:
            out.append(_r(1, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below"))
        if like.trivial_accuracy is not None and ja <= like.trivial_accuracy + 1e-9 < ha:
            out.append(_r(1, "like_accuracy_trivial", "pairwise_accuracy",
                          f"{words}: no better than always answering {like.trivial_label!r}"))
    alt = facts.alt
    likeness: dict[str, Any] = {"class": cls, "reference": like.name, "subjective": bool(subjective),
                                "judge_kappa": jk, "human_kappa": hk, "difference": like.kappa_difference_raw}
    if isinstance(alt.z, int | float) and math.isfinite(alt.z) and alt.z_pairs >= 2:
        likeness["kappa_z"] = {"z": alt.z, "class": alt.z_pattern}
        out.append(_r(0, "kappa_z", None, f"Judge's Verdict κ z-score {alt.z:.2f} over {alt.z_pairs} annotator "
                      f"pairs: {alt.z_pattern}"))
    if alt.n_annotators >= 2 and alt.winning_rate is not None and facts.n_annotators >= 3:
        likeness["alt_test"] = {"passed": alt.passed, "winning_rate": alt.winning_rate}
        out.append(_r(0, "alt_test", None, f"alternative annotator test (ε {alt.epsilon}): "
                      f"{'passes' if alt.passed else 'does not pass'}, winning rate "
                      f"{alt.winning_rate:.2f} over {alt.n_annotators} annotators"))
    return out, likeness


def labels_rule(v: VerdictInput) -> list[Effect]:
    """A binary or categorical judge's rates, each against the trivial rater and the humans' own:

    - its balanced accuracy (binary) or macro-F1's recall side must be clearly above what one constant label
      gets: a balanced-accuracy interval reaching 0.5, or a label it never recognises (recall 0), is not
      aligned — a judge that always says PASS on a 90%-pass set has TNR 0, however high its accuracy;
    - like with like (two or more annotators): its TPR and TNR (per-label recall on a categorical set), pooled
      over every (annotator, judgment) pair, beside the annotators' own over every pair of them; a gap above
      ``label_rate_gap`` is a caution or not aligned.
    """
    labels = JudgeFacts.of(v.sections).labels
    if labels is None:
        return []
    t = v.thresholds
    out: list[Effect] = []
    names = ({"tpr": f"TPR (recall of {labels.positive!r})", "tnr": "TNR"} if labels.binary else
             {f"recall_by_label.{lab}": f"recall of {lab!r}" for lab in labels.labels})
    never = [words for name, words in names.items() if v.figure(name).estimate == 0]
    if never:
        out.append(_r(2, "label_never", None, f"{', '.join(never)} 0: it never recognises that label, as a rater "
                      "always giving one label would"))
    bal = v.figure("balanced_accuracy")
    if labels.binary and bal.estimate is not None and not never:
        words = f"balanced accuracy {_fmt(bal.estimate)}{_ci(bal)} (0.5 = always one label)"
        if bal.ci_low is None or bal.ci_low <= 0.5:
            out.append(_r(2, "balanced_accuracy", "balanced_accuracy",
                          f"{words}: not clearly above a rater that always gives one label"))
        else:
            out.append(_r(0, "balanced_accuracy", "balanced_accuracy", words))
    for name, words in names.items():
        je, he = labels.judge.rates.get(name, Figure()).estimate, labels.humans.rates.get(name, Figure()).estimate
        if je is None or he is None or not (math.isfinite(je) and math.isfinite(he)):
            continue
        gap = he - je
        text = f"{words} {_fmt(je)} with each annotator beside the annotators' {_fmt(he)} with each other"
        if gap > t["label_rate_gap"]["not_aligned_above"]:
            out.append(_r(2, "label_rate_gap", name, f"{text}: {_fmt(gap)} below"))
        elif gap > t["label_rate_gap"]["caution_above"]:
            out.append(_r(1, "label_rate_gap", name, f"{text}: {_fmt(gap)} below"))
        else:
            out.append(_r(0, "label_rate_gap", name, text))
    return out


def _span_reasons(like: SpanReference, t: Mapping[str, Any]) -> list[Effect]:
    """A span judge read against its like-for-like reference and the best trivial marker
    (:func:`judgecal.stats.spans.span_reference`): never aligned unless clearly above that marker."""
    j, h = like.judge.estimate, like.humans.estimate
    if j is None:
        return [_r(1, "span_undefined", "span_score", "span F1 undefined on its items: agreement not measured")]
    words = f"span F1 {_fmt(j)} with each annotator"
    if h is None:
        return [_r(1, "span_no_reference", "span_score",
                   f"{words}: no two annotators on its items, so no reference to read it against")]
    words += f" beside the annotators' {_fmt(h)} with each other (pairwise)"
    if like.best_f1 is not None:
        words += f"; the best trivial marker ({str(like.best).replace('_', ' ')}) gets {_fmt(like.best_f1)}"
    n = like.normalised.estimate
    if like.above_baseline.ci_low is None or like.above_baseline.ci_low <= 0:
        return [_r(2, "span_trivial", "span_score", f"{words}: not clearly above the trivial marker")]
    if n is None:
        return [_r(1, "span_no_scale", "span_score", f"{words}: the annotators are no better than the trivial "
                   "marker, so no scale to read it on")]
    words += f"; chance-corrected span score {_fmt(n)}{_ci(like.normalised)} (0 = the trivial marker, 1 = the annotators)"
    if n < t["span_score"]["not_aligned_below"]:
        return [_r(2, "span_score", "span_score", words)]
    if n < t["span_score"]["aligned_at_least"]:
        return [_r(1, "span_score", "span_score", words)]
    return [_r(0, "span_score", "span_score", words)]


#: the sections' rules, read before the probes' (agreement) and after the flags (labels)
SECTION_RULES: tuple[VerdictRule, ...] = (agreement_rule,)
LATE_RULES: tuple[VerdictRule, ...] = (labels_rule,)
