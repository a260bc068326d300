"""What the HTML and PDF reports show, read from ``audit.json``: one summary row per judge, its details,
and the sections other analyses add (each named with the command that produces it when absent).

Everything here is plain data; the template (``templates/audit.html.j2``) renders it with autoescaping,
so names and model text from the workspace are always shown as text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from markupsafe import Markup

from judgecal.audit.schema import AuditReport, Figure, Judge, JudgeStability, LikeDefinition, read_report
from judgecal.catalogue import (
    FLAGS,
    METRICS,
    SEVERITIES,
    SPAN_SUMMARY_METRICS,
    FlagInfo,
    MetricInfo,
    flag_info,
    fmt_interval,
    fmt_metric,
    fmt_number,
    info,
    summary_metrics,
)
from judgecal.report.bias_profile import LEGEND, profile_rows, profile_svg
from judgecal.report.labels import (
    ORDINAL_ONLY,
    LabelView,
    is_label_judge,
    is_nominal,
    label_views,
    metric_info,
    trusted_words,
)
from judgecal.report.over_time import decision_words, over_time_rows, over_time_svg
from judgecal.report.stability import stability_tables
from judgecal.report.table import Json, Row, at

# a judge entry's sections that the detail shows with their own layout (the rest are shown generically)
OWN_LAYOUT = {"kind", "n_judgments", "n_items", "n_items_with_consensus", "orders", "metrics", "usage", "flags",
              "verdict", "reference", "stability", "labels", "criteria", "over_time", "biases"}
LIKE_WITH_LIKE = ("A judge's agreement with people is read beside the people's agreement with each "
                  "other measured the same way on the same items — pairwise, the judge's mean Cohen's κ with each "
                  "annotator beside the annotators' mean κ with each other (leave-one-out in audit.json: each side "
                  "against the majority of the other annotators). A consensus of several people is less noisy than "
                  "one person, so the judge's κ against the consensus is not compared with the humans' Fleiss' κ.")
# optional sections: where they live and the command that produces them
SECTIONS = {
    "verdict": "judgecal audit (a judgecal with verdicts per judge; thresholds in <workspace>/thresholds.yaml)",
    "models": "judgecal audit on items whose two candidates name their models",
    "humans": "judgecal audit over human labels from at least two annotators",
    "stability": "judgecal stability run --judge JUDGE --axes seed,temperature,mutation (then judgecal audit)",
    "calibration": "judgecal judge with a backend that returns token probabilities, or --samples 5",
    "spans": "judgecal judge --rubric spans-hallucination on items with human spans",
}
SECTION_TITLES = {
    "position": "Position bias: the two presentation orders (McNemar test)",
    "verbosity": "Verbosity: preference for the longer response, beside the humans'",
    "self_preference": "Self-preference: its own model family, beside the humans'",
    "instability": "Run-to-run instability (repeated samples)",
    "sensitivity": "Prompt sensitivity (reworded prompts)",
    "padding": "Padding probe", "injection": "Verdict injection probe",
    "traps": "Trap sets: accuracy per trap, beside chance and its accuracy on ordinary pairs",
    "transitivity": "Transitivity: intransitive triads, beside the annotators' rate and a random rater's",
    "replace_annotator": "Can it replace an annotator? (alternative annotator test, κ z-score)",
    "calibration": "Confidence calibration (reliability, ECE)",
    "selective": "Selective evaluation (Trust or Escalate): items it may decide alone",
    "spans": "Spans against the human span consensus",
    "pointwise": "Pointwise: agreement on the humans' scale, beside the annotators' own on the same items",
    "labels": "Labels: what it says beside the humans",
}


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _estimate(m: Figure | None) -> float | None:
    return _num(m.estimate) if m is not None else None


def human_reference(report: AuditReport) -> HumanReference:
    """The humans' own agreement: Fleiss' κ among the annotators and an annotator's leave-one-out accuracy."""
    humans, cons = report.humans, report.consensus
    fk = (humans.fleiss_kappa if humans else None) or cons.fleiss_kappa
    loo = humans.loo_accuracy if humans else None
    return HumanReference(kappa=fmt_metric(fk) if _estimate(fk) is not None else None,
                          accuracy=fmt_metric(loo) if _estimate(loo) is not None else None,
                          chance_accuracy=cons.chance_accuracy,
                          n_annotators=humans.n_annotators if humans and "n_annotators" in humans.model_fields_set
                          else cons.n_annotators)


def stability_line(stab: JudgeStability | None) -> str | None:
    """``stable within ±x points at 95% confidence``: x = 1.96 σ (the audit's ``halfwidth_pp``), σ the spread
    (pp) of the headline figure across the variants of the judge's latest stability run (the figure with the
    lowest Stability Score)."""
    if not stab or not stab.score or not stab.runs:
        return None
    figure = stab.score.figure
    run = stab.runs[-1]
    fig = at(run.figures, figure)
    sigma = _num(fig.sigma_pp) if fig else None
    half = _num(fig.halfwidth_pp) if fig else None
    if fig is None or sigma is None or half is None:
        return None
    n_var = fig.n_variants or len(run.variants)
    return (f"stable within ±{half:.1f} points at 95% confidence ({info(figure).title.lower()}: "
            f"σ = {sigma:.2f} points across {n_var} variants, Stability Score {fmt_number(_num(fig.score), 1)})")


AGGREGATORS = {
    "ds": "Dawid–Skene: each item's label estimated with every annotator weighted by their estimated "
          "confusion matrix (Dawid & Skene, 1979)",
    "mv": "majority vote of the annotators, ties broken at random with a fixed seed",
    "onecoin": "one-coin Dawid–Skene: one accuracy per annotator",
    "glad": "GLAD: annotator expertise and item difficulty estimated jointly (Whitehill et al., 2009)",
    "gold": "known answers (gold labels)",
}


def consensus_words(name: str) -> str:
    """What a consensus name such as ``ds:experts`` means, in words."""
    method, _, source = name.partition(":")
    base = method.split("+")[0]
    words = AGGREGATORS.get(base, f"the stored consensus {method}")
    if "+judges" in method:
        words += ", with the judges counted as extra annotators"
    return words + (f"; labels of source {source}" if source else "")


@dataclass(frozen=True)
class VerdictView:
    """A judge's verdict in words: its status, its reasons (``others``: those after the first, merged), the
    probes not tested, and the figures its reasons read."""

    status: str
    reasons: list[str]
    others: list[str]
    not_tested: list[str]
    reason_metrics: list[str]


@dataclass(frozen=True)
class FlagRow:
    """A flag as the catalogue words it, with the title of the figure it is read from."""

    code: str
    title: str
    words: str
    severity: str
    metric: str


@dataclass(frozen=True)
class MetricRow:
    """One figure of a judge with the catalogue's words and its test."""

    name: str
    title: str
    definition: str
    reference: str
    good: str
    value: str
    n: int | float | None
    tested: bool
    p: float | None
    q: float | None
    mde: float | None


@dataclass(frozen=True)
class FigureCell:
    """A figure as a cell: its value as text (or why it is absent), whether it was measured and whether it
    applies to the judge's kind."""

    name: str
    title: str
    definition: str
    value: str
    present: bool
    applies: bool = True


@dataclass(frozen=True)
class HumanReference:
    """The humans' own agreement: Fleiss' κ among the annotators and an annotator's leave-one-out accuracy
    (as text), the consensus' chance accuracy and the annotators counted."""

    kappa: str | None
    accuracy: str | None
    chance_accuracy: float | None
    n_annotators: int | None


@dataclass(frozen=True)
class LikeReference:
    """A judge's like-for-like reference as text: the humans' κ and agreement measured as the judge's on the
    same items, chance on both sides and the trivial rater."""

    definition: str
    words: str
    definition_text: str
    n_items: int | None
    n_annotators: int | None
    kappa: str
    accuracy: str
    kappa_estimate: float | None
    accuracy_estimate: float | None
    judge_kappa: str
    judge_accuracy: str
    chance_humans: float | None
    chance_judge: float | None
    difference_kappa: str
    trivial: str


@dataclass(frozen=True)
class AgreementRow:
    """A figure the verdict reads, with what it is read against."""

    name: str
    value: str
    ref: str
    definition: str


@dataclass(frozen=True)
class OverTimeView:
    """A judge's figures over time: the decision in words, a row per period, the chart."""

    words: str
    rows: list[Row]
    svg: Markup | None
    drift: bool


@dataclass(frozen=True)
class BiasesView:
    """A judge's bias profile: the chart (audit.html's and the PDF's), a row per probe, the counts."""

    svg: Markup | None
    rows: list[Row]
    print_svg: Markup | None
    n_tested: int
    n: int
    legend: str


@dataclass(frozen=True)
class JudgeView:
    """A judge's summary row and detail, as every surface shows them."""

    name: str
    kind: str
    n_judgments: int
    n_items: int
    n_labelled: int
    orders: str
    verdict: VerdictView
    flags: list[FlagRow]
    kappa: FigureCell
    accuracy: FigureCell
    kappa_ref: str | None
    accuracy_ref: str | None
    chance_accuracy: float | None
    references: dict[str, str]
    agreement: list[AgreementRow]
    like: LikeReference | None
    human_likeness: dict[str, Json] | None
    summary: list[FigureCell]
    span_only: bool
    n_span_items: int | float | None
    span_summary: list[FigureCell]
    metrics: list[MetricRow]
    labels: list[LabelView]
    labels_trusted: str | None
    usage: dict[str, Json]
    stability: dict[str, Json] | None
    stability_line: str | None
    stability_tables: dict[str, list[Row]]
    over_time: OverTimeView | None
    biases: BiasesView | None
    extra: dict[str, Json]
    new_flags: list[FlagRow] = field(default_factory=list)


def _verdict(name: str, entry: Judge) -> VerdictView:
    v = entry.verdict
    if v is not None:
        return VerdictView(status=v.status, reasons=list(v.reasons), others=merged_reasons(list(v.reasons))[1:],
                           not_tested=list(v.not_tested),
                           reason_metrics=sorted({d.metric for d in v.details if d.metric}))
    return VerdictView(status="no verdict", reasons=[f"not computed; produced by {SECTIONS['verdict']}"],
                       others=[], not_tested=[], reason_metrics=[])


def merged_reasons(reasons: list[str]) -> list[str]:
    """The reasons with those that open with the same figure folded into one (``agreement 0.47 … (…): 0.40
    below; no better than always answering 'A'``): the figure is said once."""
    out: list[str] = []
    heads: dict[str, int] = {}
    for r in reasons:
        head, sep, tail = r.rpartition("): ")
        key = head + sep
        if sep and key in heads:
            out[heads[key]] += f"; {tail}"
            continue
        if sep:
            heads[key] = len(out)
        out.append(r)
    return out


def new_flags(j: JudgeView) -> list[FlagRow]:
    """A judge's flags that no reason already states (a reason names the same figure or says the same words)."""
    said = " ".join(j.verdict.reasons).lower()
    metrics = set(j.verdict.reason_metrics)
    return [f for f in j.flags if f.words.lower() not in said and f.title.lower() not in said
            and flag_info(f.code).metric not in metrics]


def _flags(entry: Judge) -> list[FlagRow]:
    out = []
    for code in entry.flags:
        f = flag_info(str(code))
        out.append(FlagRow(code=f.code, title=f.title, words=f.words, severity=f.severity, metric=info(f.metric).title))
    order = list(SEVERITIES)
    return sorted(out, key=lambda f: order.index(f.severity) if f.severity in order else 9)


def _metric_rows(entry: Judge) -> list[MetricRow]:
    rows = []
    labels = entry.labels if is_label_judge(entry) else None
    for name, m in entry.metrics.items():
        mi = metric_info(name, labels) if labels else info(name)
        rows.append(MetricRow(name=name, title=mi.title, definition=mi.definition, reference=mi.reference,
                              good=mi.good, value=fmt_metric(m), n=m.n, tested=m.p is not None,
                              p=m.p, q=m.q, mde=_num(m.mde)))
    return rows


def _figure(entry: Judge, name: str) -> FigureCell:
    m = entry.figure(name)
    mi = info(name)
    value = fmt_metric(m)
    if m is None and mi.group in ("alignment", "pointwise") and not entry.n_items_with_consensus:
        value = "not measured"  # no human label: agreement is not a probe, nothing to run, no truth to read
    elif m is None and name in ("pairwise_kappa", "pairwise_accuracy"):
        value = "not measured (needs two annotators)"
    return FigureCell(name=name, title=mi.title, definition=mi.definition, value=value,
                      present=m is not None and m.estimate is not None)


def _summary_figure(entry: Judge, name: str) -> FigureCell:
    """A summary cell: the figure, or ``n/a`` where the metric does not apply to the judge's kind."""
    f = _figure(entry, name)
    kind = entry.kind
    if not (f.present or name in summary_metrics({kind})):
        return replace(f, applies=False, value=f"n/a ({kind})")
    if name in ORDINAL_ONLY and is_nominal(entry) and not f.present:
        # a label set without an order: no weighted κ, rank correlation or distance between its labels
        return replace(f, applies=False, value="n/a (nominal labels)")
    return f


def like_definition(entry: Judge, definition: str = "pairwise") -> LikeDefinition | None:
    """A judge's like-for-like comparison under ``definition`` (``pairwise`` or ``leave_one_out``), when both
    sides were measured."""
    lfl = entry.reference.like_for_like if entry.reference else None
    d = None if lfl is None else lfl.pairwise if definition == "pairwise" else lfl.leave_one_out
    return d if d is not None and d.judge is not None and d.humans is not None else None


def like_reference(entry: Judge, definition: str = "pairwise") -> LikeReference | None:
    """A judge's like-for-like reference (``reference.like_for_like``, :mod:`judgecal.stats.reference`): the
    humans' κ and agreement measured as the judge's on the same items, with chance and a trivial rater
    on the same basis, as text; ``None`` without two annotators."""
    d = like_definition(entry, definition)
    if d is None or d.humans is None or d.judge is None or entry.reference is None:
        return None
    lfl = entry.reference.like_for_like
    triv = lfl.trivial if lfl else None
    h, j = d.humans, d.judge
    words = "pairwise" if definition == "pairwise" else "leave-one-out"
    return LikeReference(
        definition=definition, words=words, definition_text=d.definition or "",
        n_items=lfl.n_items if lfl else None, n_annotators=lfl.n_annotators if lfl else None,
        kappa=fmt_metric(h.kappa), accuracy=fmt_metric(h.accuracy),
        kappa_estimate=_estimate(h.kappa), accuracy_estimate=_estimate(h.accuracy),
        judge_kappa=fmt_metric(j.kappa), judge_accuracy=fmt_metric(j.accuracy),
        chance_humans=_num(h.chance_accuracy), chance_judge=_num(j.chance_accuracy),
        difference_kappa=fmt_metric(at(d.difference, "kappa")),
        trivial=(f"always {triv.label!r}: {fmt_number(_num(triv.accuracy))}"
                 if triv is not None and triv.accuracy is not None else ""))


def _span_reference(entry: Judge) -> dict[str, str]:
    """A span judge's like-for-like reference in words: the annotators with each other and the best trivial
    marker, as mean pairwise character F1 on the same items."""
    like = entry.spans.like_for_like if entry.spans else None
    if like is None or like.judge is None:
        return {}
    best = like.best_baseline
    base = at(like.baselines, best)
    markers = "; ".join(f"{k.replace('_', ' ')}: {fmt_metric(v)}" for k, v in like.baselines.items())
    return {"span_f1_pairwise": f"annotators with each other: {fmt_metric(like.humans)} (pairwise, the same "
                                f"{like.n_items} items); trivial markers: {markers or 'n/a'}",
            "span_score": f"0 = the best trivial marker ({(best or 'n/a').replace('_', ' ')}: {fmt_metric(base)}); "
                          f"1 = the annotators with each other"}


def span_only(entry: Judge) -> bool:
    """A judge that marks spans and has no agreement figure on human labels: its span figures are its summary."""
    if not any(_figure(entry, m).present for m in SPAN_SUMMARY_METRICS):
        return False
    own = summary_metrics({entry.kind})
    return not any(_figure(entry, m).present for m in own if m != "invalid_rate")


def _span_consensus_reference(entry: Judge) -> dict[str, str]:
    """What the figures against the span consensus are read beside: the annotators' pairwise F1, a
    different definition (the like-for-like one is span F1 with each annotator)."""
    humans = entry.spans.human_f1 if entry.spans else None
    if humans is None:
        return {}
    ref = f"against the span consensus; annotators' pairwise F1 (another definition): {fmt_metric(humans)}"
    return {"span_iou": ref, "span_f1": ref}


def _pointwise_humans(entry: Judge) -> dict[str, Figure]:
    """A pointwise judge's annotators with each other on its items, by metric name (``{}`` for another)."""
    return entry.pointwise.humans.figures() if entry.pointwise and entry.pointwise.humans else {}


def _references(entry: Judge, kappa_ref: str | None, accuracy_ref: str | None,
                chance: float | None) -> dict[str, str]:
    """What each summary figure of a judge is read against: the humans with each other measured the same
    way on the same items (like with like), chance on the same basis; the consensus figures say that
    their human reference is of another definition."""
    refs = {"cohen_kappa": f"against the consensus; humans' Fleiss' κ (another definition): {kappa_ref or 'not measured'}",
            "accuracy": "against the consensus; " + (f"an annotator's leave-one-out accuracy: {accuracy_ref}; " if accuracy_ref else "")
            + (f"chance: {chance:.3f}" if chance is not None else "")}
    like = like_reference(entry)
    if like:
        n = f"pairwise, the same {like.n_items} items"
        refs["pairwise_kappa"] = f"annotators with each other: {like.kappa} ({n}); chance: 0"
        refs["pairwise_accuracy"] = (f"annotators with each other: {like.accuracy} ({n}); chance: "
                                     f"{fmt_number(like.chance_judge)} (judge), {fmt_number(like.chance_humans)} "
                                     f"(annotators); {like.trivial}")
    elif entry.kind == "pairwise":
        refs["pairwise_kappa"] = refs["pairwise_accuracy"] = "not measured: needs two annotators on its items"
    refs.update(_span_reference(entry))
    refs.update(_span_consensus_reference(entry))
    for k, m in _pointwise_humans(entry).items():  # a pointwise judge: the annotators' own agreement on the same items
        if _estimate(m) is not None:
            refs[k] = f"against the consensus; annotators with each other: {fmt_metric(m)}" + (
                f"; chance: {chance:.3f}" if k == "accuracy" and chance is not None else "")
    return refs


def _agreement(entry: Judge, kappa_ref: str | None, accuracy_ref: str | None,
               chance: float | None) -> list[AgreementRow]:
    """The figures a judge's verdict reads, each with what it is read against. A pointwise judge's κ is its
    own (weighted on an ordinal scale) beside the annotators' agreement on the same items, not the
    consensus' Fleiss' κ."""
    humans = _pointwise_humans(entry)
    kappa = entry.pointwise.kappa if entry.pointwise else "cohen_kappa"
    out = []
    like = like_reference(entry)
    if like:  # the figures the verdict reads first, each beside the humans measured the same way
        refs = _references(entry, kappa_ref, accuracy_ref, chance)
        for name in ("pairwise_kappa", "pairwise_accuracy"):
            out.append(AgreementRow(name=name, value=_figure(entry, name).value, ref=refs[name],
                                    definition=like.definition_text))
    span_refs = _span_reference(entry)
    for name, ref in span_refs.items():
        out.append(AgreementRow(name=name, value=_figure(entry, name).value, ref=ref,
                                definition=info(name).definition))
    if span_refs:
        return out
    for name in (kappa, "accuracy"):
        h = at(humans, name)
        if _estimate(h) is not None:
            against = f"annotators with each other: {fmt_metric(h)}"
        elif name == "accuracy":
            against = f"an annotator: {accuracy_ref}" if accuracy_ref else ""
        else:
            against = f"humans with each other: {kappa_ref or 'not measured'}"
        c = fmt_number(chance) if name == "accuracy" else "0"
        if like and not humans:
            against = f"against the consensus (another definition); {against}"
        out.append(AgreementRow(name=name, value=_figure(entry, name).value,
                                ref="; ".join(x for x in (against, f"chance: {c}") if x),
                                definition=info(name).definition))
    return out


def judge_view(name: str, entry: Judge, ref: HumanReference,
               columns: tuple[str, ...] | None = None) -> JudgeView:
    """A judge's summary row (``columns``: the summary's metrics; by default its own kind's) and detail."""
    jr = entry.reference
    kappa_ref = ref.kappa
    if kappa_ref is None and jr is not None and _num(jr.human_kappa) is not None:
        ci = jr.human_kappa_ci or [None, None]
        kappa_ref = fmt_interval(_num(jr.human_kappa), _num(ci[0]), _num(ci[1]))
    chance = _num(jr.chance_accuracy) if jr else None
    chance = chance if chance is not None else ref.chance_accuracy
    stab = entry.stability
    raw = entry.to_json()
    extra = {k: v for k, v in raw.items() if k not in OWN_LAYOUT and v not in (None, {}, [])}
    parts = label_views(entry) if is_label_judge(entry) else []
    likeness = entry.verdict.human_likeness if entry.verdict else None
    span_iou = entry.spans.span_iou if entry.spans else None
    ot, biases = entry.over_time, entry.biases
    view = JudgeView(
        name=name, kind=entry.kind, n_judgments=entry.n_judgments,
        n_items=entry.n_items, n_labelled=entry.n_items_with_consensus,
        orders=", ".join(entry.orders) or "n/a",
        verdict=_verdict(name, entry), flags=_flags(entry),
        kappa=_figure(entry, "cohen_kappa"), accuracy=_figure(entry, "accuracy"),
        kappa_ref=kappa_ref, accuracy_ref=ref.accuracy, chance_accuracy=chance,
        references=_references(entry, kappa_ref, ref.accuracy, chance),
        agreement=_agreement(entry, kappa_ref, ref.accuracy, chance),
        like=like_reference(entry), human_likeness=likeness.to_json() if likeness else None,
        summary=[_summary_figure(entry, m) for m in (columns or summary_metrics({entry.kind}))],
        span_only=span_only(entry), n_span_items=span_iou.n if span_iou else None,
        span_summary=[replace(_figure(entry, m), applies=True) for m in SPAN_SUMMARY_METRICS] if span_iou else [],
        metrics=_metric_rows(entry),
        labels=parts, labels_trusted=trusted_words(parts[0]) if parts else None,
        usage=entry.usage.to_json(),
        stability=stab.to_json() if stab else None, stability_line=stability_line(stab),
        stability_tables=stability_tables(stab),
        over_time=None if ot is None else OverTimeView(
            words=decision_words(ot), rows=over_time_rows(ot), svg=over_time_svg(ot), drift=ot.first_drift is not None),
        biases=None if not biases else BiasesView(
            svg=profile_svg(biases), rows=profile_rows(biases),
            # the PDF: the tested ones charted, the others named in a line (a page per judge is too long)
            print_svg=profile_svg([b for b in biases if b.status == "tested"], compact=True),
            n_tested=sum(b.status == "tested" for b in biases), n=len(biases), legend=LEGEND),
        extra=extra,
    )
    return replace(view, new_flags=new_flags(view))


@dataclass(frozen=True)
class ReportView:
    """Everything the HTML/PDF template and the terminal show: the judges' views, the humans' reference, the
    catalogue's legend and glossary; ``report``, ``settings``, ``consensus``, ``models``, ``humans`` and
    ``provenance`` as ``audit.json`` holds them (the template renders their sections generically)."""

    report: dict[str, Json]
    settings: dict[str, Json]
    consensus: dict[str, Json]
    judges: list[JudgeView]
    ref: HumanReference
    legend: list[FlagInfo]
    severities: dict[str, str]
    glossary: list[MetricInfo]
    glossary_short: list[MetricInfo]
    known_flags: dict[str, FlagInfo]
    models: dict[str, Json] | None
    humans: dict[str, Json] | None
    provenance: dict[str, Json]
    sections: dict[str, str]
    section_titles: dict[str, str]
    consensus_words: str
    any_stability: bool
    summary_metrics: tuple[str, ...]
    like_with_like: str

    def template_args(self) -> dict[str, object]:
        """The view as the template's variables (one per field)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def report_view(report: AuditReport | dict[str, Json]) -> ReportView:
    """Everything the template shows, from the typed report (or ``audit.json``'s object, read as one: an
    earlier schema's upgraded, :func:`judgecal.audit.schema.read_report`)."""
    report = read_report(report)
    data: dict[str, Json] = {**report.to_json(), "schema": report.schema_read}  # an earlier schema's names its own
    ref = human_reference(report)
    entries = report.judges
    columns = summary_metrics({e.kind for e in entries.values()})
    if entries and all(is_nominal(e) for e in entries.values()):  # no judge's labels have an order
        columns = tuple(m for m in columns if m not in ORDINAL_ONLY)
    judges = [judge_view(n, e, ref, columns) for n, e in entries.items()]
    present = {f.code for j in judges for f in j.flags}
    legend = [flag_info(c) for c in sorted(present)]
    used = {m.name for j in judges for m in j.metrics} | set(columns)
    glossary = [info(m) for m in METRICS if m in used]
    shown = set(columns) | {m for j in judges for m in j.verdict.reason_metrics}
    glossary_short = [m for m in glossary if m.name in shown]  # the PDF's: the figures it shows
    return ReportView(
        report=data, settings=report.settings.to_json(), consensus=report.consensus.to_json(),
        judges=judges, ref=ref, legend=legend, severities=SEVERITIES, glossary=glossary,
        glossary_short=glossary_short, known_flags=FLAGS, models=report.models.to_json() if report.models else None,
        humans=report.humans.to_json() if report.humans else None, provenance=report.provenance.to_json() if report.provenance else {},
        sections=SECTIONS, section_titles=SECTION_TITLES, consensus_words=consensus_words(report.settings.consensus),
        any_stability=any(j.stability for j in judges), summary_metrics=columns, like_with_like=LIKE_WITH_LIKE,
    )
