"""Page one of the trust report: one row per judge, read from ``audit.json``.

Each row holds the judge's verdict, the reason that matters most (the first of the verdict's reasons,
which :func:`judgecal.audit.decision.judge_verdict` orders most serious first), its agreement with people
beside the humans' like-for-like reference (the judge with each annotator beside the annotators with each
other, on the same items), chance and a trivial rater on the same basis, and the probes that were not run.

One producer, many renderers: page one of ``audit.html`` and of the PDF and the explorer's Overview all
show these rows, in this order and with these words; nothing here formats HTML or markdown (each renderer
escapes the text it is given).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from judgecal.audit.profile import profile_counts
from judgecal.audit.schema import AuditReport, Judge, Verdict, read_report
from judgecal.catalogue import flag_info, fmt_metric, fmt_number, info
from judgecal.report.table import Json, at
from judgecal.report.view import SECTIONS, like_definition, stability_line

#: the columns of a row's figures, beside the figure's title; each row names them in its ``headers``
COLUMNS = ("judge", "humans", "chance", "trivial")
PAIRWISE = {"judge": "the judge with each annotator", "humans": "the annotators with each other",
            "chance": "chance", "trivial": "a trivial rater"}
LEAVE_ONE_OUT = {"judge": "the judge against the others' majority",
                 "humans": "each annotator against the others' majority", "chance": "chance", "trivial": "a trivial rater"}
CONSENSUS = {"judge": "the judge against the consensus", "humans": "the humans, same way", "chance": "chance",
             "trivial": "a trivial rater"}
LEGEND = {"aligned": "close to the humans, no serious bias",
          "caution": "usable with care, reasons listed",
          "not aligned": "do not use it in place of people"}
NOTE = ("Like with like: each judge beside the annotators measured the same way on the same items (never beside a "
        "consensus, which is less noisy than one person and would flatter the judge); chance: a rater answering at "
        "random with the same label shares; trivial: always the annotators' most frequent label. \"Not tested\" is "
        "never \"no bias\".")
NO_REASON = "no reason recorded"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _figure(title: str, judge: str, humans: str, chance: str, trivial: str) -> dict[str, str]:
    return dict(zip(("title", *COLUMNS), (title, judge, humans, chance, trivial), strict=True))


Figures = tuple[str, dict[str, str], list[dict[str, str]], float | None]  # basis, headers, figures, gap


def _est(f: Any) -> float | None:
    return _num(getattr(f, "estimate", None)) if f is not None else None


def _gap(judge: float | None, humans: float | None) -> float | None:
    return judge - humans if judge is not None and humans is not None else None


def _like_figures(entry: Judge, definition: str) -> Figures | None:
    """The judge and the annotators measured the same way (``reference.like_for_like``)."""
    d = like_definition(entry, definition)
    lfl = entry.reference.like_for_like if entry.reference else None
    if d is None or d.judge is None or d.humans is None or lfl is None:
        return None
    j, h, triv = d.judge, d.humans, lfl.trivial
    kword = lfl.kappa_word or "κ"
    label = f"always {str(triv.label)!r}" if triv is not None and triv.label is not None else "always one label"
    trivial_acc = _num(triv.accuracy) if triv else None
    words = "pairwise" if definition == "pairwise" else "leave-one-out"
    side = "with each annotator" if definition == "pairwise" else "against the others' majority"  # one name each
    agrees = "Agrees with annotators" if definition == "pairwise" else "Agrees with the others' majority"
    basis = f"like with like: {words}, the same {lfl.n_items} items, {lfl.n_annotators} annotators"
    paired = _est(at(d.difference, "kappa"))  # the paired difference, when the audit measured it
    gap = paired if paired is not None else _gap(_est(j.kappa), _est(h.kappa))
    return basis, PAIRWISE if definition == "pairwise" else LEAVE_ONE_OUT, [
        _figure(f"{kword} {side}", fmt_metric(j.kappa), fmt_metric(h.kappa), "0.000",
                f"{fmt_number((_num(triv.kappa) if triv else None) or 0.0)} ({label})"),  # a constant rater's κ is 0
        _figure(agrees, fmt_metric(j.accuracy), fmt_metric(h.accuracy), fmt_number(_num(j.chance_accuracy)),
                f"{fmt_number(trivial_acc)} ({label})" if trivial_acc is not None else "not measured"),
    ], gap


def _span_figures(entry: Judge) -> Figures | None:
    """A span judge: mean pairwise character F1 beside the annotators' and the best trivial marker's."""
    like = entry.spans.like_for_like if entry.spans else None
    if like is None or like.judge is None or not like.n_items:  # no item with two annotators' spans
        return None
    best = like.best_baseline
    trivial = f"{fmt_metric(at(like.baselines, best))} ({best.replace('_', ' ')})" if best else "not measured"
    basis = f"like with like: mean pairwise character F1, the same {like.n_items} items"
    return basis, {**PAIRWISE, "trivial": "the best trivial marker"}, [
        _figure(info("span_f1_pairwise").title, fmt_metric(like.judge), fmt_metric(like.humans), "n/a", trivial)], \
        _gap(_est(like.judge), _est(like.humans))


def _consensus_figures(entry: Judge) -> Figures:
    """Without two annotators on its items: the judge against the consensus, no human reference to read."""
    if not entry.n_items_with_consensus:
        return "not measured: no human label on its items", CONSENSUS, [], None
    ref = entry.reference
    kname = entry.pointwise.kappa if entry.pointwise else "cohen_kappa"
    missing = "not measured (needs two annotators)"
    base = _num(ref.base_rate) if ref else None
    return "against the consensus: no items with two annotators, so no like-for-like reference", CONSENSUS, [
        _figure(info(kname).title, fmt_metric(entry.figure(kname)), missing,
                "0.000", "0.000 (always one label)"),
        _figure(info("accuracy").title, fmt_metric(entry.figure("accuracy")), missing,
                fmt_number(_num(ref.chance_accuracy) if ref else None),
                f"{fmt_number(base)} (always the most frequent label)" if base is not None else "not measured"),
    ], None


@dataclass(frozen=True)
class Headline:
    """A row's headline figure: its title, the judge's value and the annotators' (with the words naming them)."""

    title: str
    judge: str
    humans: str
    humans_words: str


@dataclass(frozen=True)
class SummaryRow:
    """One judge of page one (see the module): its verdict, the reason that matters most, the rule behind it,
    its gap to the humans, its figures beside the references (``figures``: one per figure, by the column names of
    ``headers``), what was not tested, its bias profile counted and its stability; ``index``: its place in
    audit.json, from 1."""

    judge: str
    status: str
    reason: str
    decisive: str
    gap: float | None
    headline: Headline | None
    more_reasons: int
    n_labelled: int
    basis: str
    headers: dict[str, str]
    figures: list[dict[str, str]]
    not_tested: str
    not_tested_probes: list[str]
    biases: str | None
    stability: str | None
    index: int = 0


@dataclass(frozen=True)
class PageOne:
    """Page one: the rows ranked by their gap to the humans, the best judge and the sentence naming it."""

    rows: list[SummaryRow]
    best: SummaryRow | None
    best_words: str


def summary_row(name: str, entry: Judge) -> SummaryRow:
    """One judge's row of page one (see the module's docstring)."""
    v = entry.verdict
    status = v.status if v else "no verdict"
    reasons = list(v.reasons) if v else [f"not computed; produced by {SECTIONS['verdict']}"]
    definition = (v.human_likeness.reference if v and v.human_likeness else None) or "pairwise"
    got = (_span_figures(entry) or _like_figures(entry, definition)
           or _like_figures(entry, "leave_one_out" if definition == "pairwise" else "pairwise")
           or _consensus_figures(entry))
    if v and "not_tested_probes" in v.model_fields_set:  # the structured list (earlier audits: sentences only)
        probes = list(v.not_tested_probes)
        not_tested = ", ".join(probes) if probes else "nothing: every probe ran"
    else:
        probes = []
        not_tested = "; ".join(v.not_tested if v else []) or "nothing: every probe ran"
    head = got[2][0] if got[2] else None
    return SummaryRow(judge=name, status=status, reason=reasons[0] if reasons else NO_REASON,
                      decisive=decisive_words(v), gap=got[3],
                      headline=Headline(title=head["title"], judge=head["judge"], humans=head["humans"],
                                        humans_words=got[1]["humans"]) if head else None,
                      more_reasons=max(len(reasons) - 1, 0), n_labelled=entry.n_items_with_consensus or 0,
                      basis=got[0], headers=got[1], figures=got[2], not_tested=not_tested,
                      not_tested_probes=probes, biases=biases_words(entry), stability=stability_line(entry.stability))


def biases_words(entry: Judge) -> str | None:
    """``biases: 9 tested, 1 flagged (authority)`` from the judge's bias profile; ``None`` for an audit
    written before profiles."""
    if entry.biases is None:
        return None
    tested, flagged = profile_counts([b.to_json() for b in entry.biases])
    return f"biases: {tested} tested, " + (f"{len(flagged)} flagged ({', '.join(flagged)})" if flagged else
                                          "none flagged")


def summary_rows(report: AuditReport | dict[str, Json]) -> list[SummaryRow]:
    """Page one's rows, one per judge in audit.json's order (``audit.json``'s object is read as the typed
    report, :func:`judgecal.audit.schema.read_report`); ``index`` is that order, from 1."""
    return [replace(summary_row(name, entry), index=k)
            for k, (name, entry) in enumerate(read_report(report).judges.items(), 1)]


RANK = {"aligned": 0, "caution": 1, "not aligned": 2}


def decisive_words(v: Verdict | None) -> str:
    """The rule behind a verdict's first reason in words (a figure's title or a flag's), not its code."""
    first = v.details[0] if v and v.details else None
    if first is None:
        return "no verdict" if v is None else "none"
    if first.metric:
        return info(first.metric).title
    if first.code.startswith("flag:"):
        return flag_info(first.code.split(":", 1)[1]).title
    return first.code.replace("_", " ")


def ranked(rows: list[SummaryRow]) -> list[SummaryRow]:
    """Rows sorted by their gap to the humans, the closest (or above them) first; a judge without a gap
    (no human reference on its items) after those with one, in audit.json's order."""
    return sorted(rows, key=lambda r: (r.gap is None, -(r.gap or 0.0), r.index))


def best_judge(rows: list[SummaryRow]) -> SummaryRow | None:
    """The best available judge: among those of the best verdict present, the one closest to the humans."""
    if not rows:
        return None
    top = min(RANK.get(r.status, 3) for r in rows)
    return ranked([r for r in rows if RANK.get(r.status, 3) == top])[0]


def best_words(rows: list[SummaryRow]) -> str:
    """One sentence: the best available judge and whether it may replace people (only when aligned)."""
    best = best_judge(rows)
    if best is None:
        return "no judge audited yet"
    gap = f", {fmt_gap(best.gap)} to the humans" if best.gap is not None else ""
    if best.status == "aligned":
        return f"best available judge: {best.judge} ({best.status}{gap}): it may replace people"
    return (f"best available judge: {best.judge} ({best.status}{gap}): it may not replace people "
            f"({'no judge is aligned' if len(rows) > 1 else 'only an aligned judge may'})")


def fmt_gap(gap: float | None) -> str:
    """The gap to the humans as a signed number (below them: negative), ``n/a`` without a reference."""
    return "n/a" if gap is None else f"{gap:+.3f}"


def page_one(report: AuditReport | dict[str, Json]) -> PageOne:
    """Page one as every surface shows it: the rows ranked by their gap to the humans and the best judge."""
    rows = summary_rows(report)
    return PageOne(rows=ranked(rows), best=best_judge(rows), best_words=best_words(rows))


def more_words(row: SummaryRow) -> str:
    """`` (+2 more reasons)`` after the reason that matters most, or nothing."""
    n = row.more_reasons
    return f" (+{n} more reason{'' if n == 1 else 's'})" if n else ""
