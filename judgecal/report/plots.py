"""Inline SVG plots for the report: a forest plot (estimates with CIs beside a reference line) and a
heatmap (model x model win rates). Every label is escaped, its control, bidirectional and invisible characters
shown (:func:`judgecal.inert.term`); the SVG scales to the page width."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape as _escape
from typing import TYPE_CHECKING, Any

from markupsafe import Markup

from judgecal.audit.schema import AuditReport, Figure, Judge, ReliabilityBin
from judgecal.catalogue import fmt_number
from judgecal.inert import term

if TYPE_CHECKING:
    from judgecal.report.labels import PrevalenceRow, RateRow


def escape(text: str) -> str:
    """``text`` for an SVG label: controls shown (a ``U+202E`` cannot reverse a name), then HTML-escaped."""
    return _escape(term(text))


def _short(text: str, n: int = 34) -> str:
    return text if len(text) <= n else "…" + text[-(n - 1):]


def forest_svg(rows: list[tuple[str, float | None, float | None, float | None]], lo: float = 0.0,
               hi: float = 1.0, ref: float | None = None, ref_label: str = "", width: int = 640,
               row_refs: list[tuple[float | None, float | None, float | None]] | None = None) -> Markup:
    """One point with its CI per row on a fixed axis ``[lo, hi]``; ``ref`` draws a dashed reference line.
    ``row_refs`` gives each row its own reference (estimate, CI), drawn as a dashed tick with a dashed
    interval beside the row's point: the humans measured as that judge is, on its items.
    Long labels keep their end (``…/gpt-3.5-turbo``); the full name is the row's hover title."""
    left, right, row_h = 230, 30, 22
    height = row_h * len(rows) + 34
    span = width - left - right

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * span

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="plot" role="img">']
    for t in (lo, (lo + hi) / 2, hi):
        parts.append(f'<line x1="{x(t):.1f}" y1="5" x2="{x(t):.1f}" y2="{height - 24}" stroke="#ddd"/>'
                     f'<text x="{x(t):.1f}" y="{height - 10}" font-size="11" text-anchor="middle">{t:g}</text>')
    if ref is not None:
        parts.append(f'<line x1="{x(ref):.1f}" y1="5" x2="{x(ref):.1f}" y2="{height - 24}" stroke="#c33" '
                     f'stroke-dasharray="4 3"><title>{escape(ref_label)} {fmt_number(ref)}</title></line>')
    for i, (label, est, a, b) in enumerate(rows):
        y = 15 + i * row_h
        parts.append(f'<g><title>{escape(label)}</title><text x="{left - 8}" y="{y + 4}" font-size="12" '
                     f'text-anchor="end">{escape(_short(label))}</text>')
        if est is not None:
            if a is not None and b is not None:
                parts.append(f'<line x1="{x(a):.1f}" y1="{y}" x2="{x(b):.1f}" y2="{y}" stroke="#357" '
                             'stroke-width="2"/>')
            parts.append(f'<circle cx="{x(est):.1f}" cy="{y}" r="4" fill="#357"/>')
        else:
            parts.append(f'<text x="{left + 4}" y="{y + 4}" font-size="11" fill="#777">not measured</text>')
        r = row_refs[i] if row_refs is not None and i < len(row_refs) else None
        if r is not None and r[0] is not None:
            tip = f"{escape(ref_label)} {fmt_number(r[0])}" + (
                f" ({fmt_number(r[1])}–{fmt_number(r[2])})" if r[1] is not None and r[2] is not None else "")
            if r[1] is not None and r[2] is not None:
                parts.append(f'<line x1="{x(r[1]):.1f}" y1="{y + 6}" x2="{x(r[2]):.1f}" y2="{y + 6}" stroke="#c33" '
                             'stroke-dasharray="3 2"/>')
            parts.append(f'<line class="row-ref" x1="{x(r[0]):.1f}" y1="{y - 8}" x2="{x(r[0]):.1f}" y2="{y + 8}" '
                         f'stroke="#c33" stroke-width="2" stroke-dasharray="3 2"><title>{tip}</title></line>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every piece of text above is escaped


def metric_forest(report: AuditReport, metric: str, lo: float = 0.0, ref: float | None = None,
                  ref_label: str = "", row_ref: Callable[[Judge], Figure | None] | None = None) -> Markup | None:
    """The forest of ``metric`` over the judges; ``row_ref(judge)`` gives each judge's own reference
    (a figure), drawn on its row."""
    rows: list[tuple[str, float | None, float | None, float | None]] = []
    refs: list[tuple[float | None, float | None, float | None]] = []
    for name, j in report.judges.items():
        m = j.figure(metric)
        if m is not None and m.estimate is not None:
            rows.append((str(name), m.estimate, m.ci_low, m.ci_high))
            r = row_ref(j) if row_ref is not None else None
            refs.append((r.estimate, r.ci_low, r.ci_high) if r is not None else (None, None, None))
    if not rows:
        return None
    return forest_svg(rows, lo=lo, ref=ref, ref_label=ref_label, row_refs=refs if row_ref is not None else None)


def heatmap_svg(models: list[str], estimate: list[list[float | None]], cell: int = 54) -> Markup:
    """Row model's win rate against the column model, 0 (red) to 1 (blue), the value in each cell."""
    left, top = 150, 110
    n = len(models)
    w, h = left + n * cell + 10, top + n * cell + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" class="plot heat" role="img">']
    for k, m in enumerate(models):
        cx = left + k * cell + cell / 2
        parts.append(f'<text x="{cx:.0f}" y="{top - 6}" font-size="11" transform="rotate(-40 {cx:.0f} {top - 6})">'
                     f'<title>{escape(m)}</title>{escape(_short(m, 18))}</text>')
        parts.append(f'<text x="{left - 6}" y="{top + k * cell + cell / 2 + 4:.0f}" font-size="11" '
                     f'text-anchor="end"><title>{escape(m)}</title>{escape(_short(m, 20))}</text>')
    for r, row in enumerate(estimate):
        for c, v in enumerate(row):
            x0, y0 = left + c * cell, top + r * cell
            if v is None:
                parts.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="#f4f4f4"/>')
                continue
            red, blue = int(255 * (1 - v)), int(255 * v)
            fill = f"rgb({200 + red // 5},{200 - abs(red - blue) // 4},{200 + blue // 5})"
            parts.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="{fill}" stroke="#fff">'
                         f'<title>{escape(models[r])} beats {escape(models[c])}: {fmt_number(v)}</title></rect>'
                         f'<text x="{x0 + cell / 2:.0f}" y="{y0 + cell / 2 + 4:.0f}" font-size="11" '
                         f'text-anchor="middle">{v:.2f}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every piece of text above is escaped


def reliability_svg(bins: Sequence[ReliabilityBin], size: int = 260) -> Markup | None:
    """Reliability diagram: per confidence bin, the judge's agreement with the humans (dot, area ∝ n)
    against its mean confidence; the diagonal is perfect calibration."""
    pts = [(b.confidence, b.accuracy, b.n or 0) for b in bins if b.confidence is not None and b.accuracy is not None]
    if not pts:
        return None
    pad, span = 34, size - 44
    total = max(sum(n for _, _, n in pts), 1)

    def x(v: float) -> float:
        return pad + v * span

    def y(v: float) -> float:
        return 10 + (1 - v) * span

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {size} {size}" class="plot small" role="img">',
             f'<text x="10" y="{10 + span / 2:.0f}" font-size="10" text-anchor="middle" '
             f'transform="rotate(-90 10 {10 + span / 2:.0f})">agreement with the humans</text>',
             f'<rect x="{pad}" y="10" width="{span}" height="{span}" fill="none" stroke="#ccc"/>',
             f'<line x1="{x(0)}" y1="{y(0)}" x2="{x(1)}" y2="{y(1)}" stroke="#c33" stroke-dasharray="4 3">'
             "<title>perfect calibration</title></line>"]
    for t in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{x(t):.0f}" y="{size - 18}" font-size="10" text-anchor="middle">{t:g}</text>'
                     f'<text x="{pad - 4}" y="{y(t) + 4:.0f}" font-size="10" text-anchor="end">{t:g}</text>')
    parts.append(f'<text x="{pad + span / 2:.0f}" y="{size - 4}" font-size="10" text-anchor="middle">'
                 "confidence</text>")
    for conf, acc, n in pts:
        r = 3 + 9 * (n / total) ** 0.5
        parts.append(f'<circle cx="{x(conf):.1f}" cy="{y(acc):.1f}" r="{r:.1f}" fill="#357" fill-opacity="0.7">'
                     f"<title>confidence {fmt_number(conf)}: agreement {fmt_number(acc)}, n = {n}</title></circle>")
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - numbers only, no text from the data


def label_rates_svg(rates: list[RateRow], width: int = 640) -> Markup | None:
    """A label judge's rates on a 0–1 axis: per rate the judge against the consensus (blue dot, CI), the
    judge with each annotator (teal ring, CI) beside the annotators with each other (red diamond, dashed
    CI), and the trivial rater always answering the commonest label (grey cross). Rows of
    :func:`judgecal.report.labels.label_view`'s ``rates``."""
    rows = [r for r in rates if any(_est(m) is not None for m in (r.judge, r.like_judge, r.humans))]
    if not rows:
        return None
    left, right, row_h = 230, 30, 26
    height = row_h * len(rows) + 34
    span = width - left - right

    def x(v: float) -> float:
        return left + min(max(v, 0.0), 1.0) * span

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="plot label-rates" '
             'role="img">']
    for t in (0.0, 0.5, 1.0):
        parts.append(f'<line x1="{x(t):.1f}" y1="5" x2="{x(t):.1f}" y2="{height - 24}" stroke="#ddd"/>'
                     f'<text x="{x(t):.1f}" y="{height - 10}" font-size="11" text-anchor="middle">{t:g}</text>')
    marks = (("judge", -6, "#357", "circle", "judge against the consensus"),
             ("like_judge", 0, "#2a7", "ring", "judge with each annotator"),
             ("humans", 6, "#c33", "diamond", "annotators with each other"))
    for i, r in enumerate(rows):
        y = 15 + i * row_h
        parts.append(f'<g><title>{escape(str(r.title))}</title><text x="{left - 8}" y="{y + 4}" font-size="12" '
                     f'text-anchor="end">{escape(_short(str(r.title)))}</text>')
        for key, dy, color, shape, words in marks:
            m = {"judge": r.judge, "like_judge": r.like_judge, "humans": r.humans}[key]
            est = _est(m)
            if est is None:
                continue
            lo, hi = (_est(m.ci_low), _est(m.ci_high)) if isinstance(m, Figure) else (None, None)
            tip = f"{words}: {fmt_number(est)}" + (f" ({fmt_number(lo)}–{fmt_number(hi)})" if lo is not None
                                                   and hi is not None else "")
            if lo is not None and hi is not None:
                dash = ' stroke-dasharray="3 2"' if key == "humans" else ""
                parts.append(f'<line x1="{x(lo):.1f}" y1="{y + dy}" x2="{x(hi):.1f}" y2="{y + dy}" stroke="{color}" '
                             f'stroke-width="2"{dash}/>')
            cx, cy = x(est), y + dy
            if shape == "diamond":
                parts.append(f'<path d="M{cx:.1f} {cy - 5} L{cx + 5:.1f} {cy} L{cx:.1f} {cy + 5} L{cx - 5:.1f} {cy} Z" '
                             f'fill="{color}"><title>{escape(tip)}</title></path>')
            elif shape == "ring":
                parts.append(f'<circle cx="{cx:.1f}" cy="{cy}" r="4" fill="#fff" stroke="{color}" stroke-width="2">'
                             f'<title>{escape(tip)}</title></circle>')
            else:
                parts.append(f'<circle cx="{cx:.1f}" cy="{cy}" r="4" fill="{color}"><title>{escape(tip)}</title>'
                             '</circle>')
        tv = _est(r.trivial)
        if tv is not None:
            parts.append(f'<path class="trivial" d="M{x(tv) - 5:.1f} {y - 5} L{x(tv) + 5:.1f} {y + 5} M{x(tv) - 5:.1f} '
                         f'{y + 5} L{x(tv) + 5:.1f} {y - 5}" stroke="#777" stroke-width="2"><title>trivial rater: '
                         f'{fmt_number(tv)}</title></path>')
        parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - every piece of text above is escaped


def prevalence_svg(rows: list[PrevalenceRow], width: int = 640) -> Markup | None:
    """The pass rate four ways (judge-reported, Rogan–Gladen, PPI++, human-only), each with its interval, on
    an axis from 0 to a little above the largest upper bound (rows of
    :func:`judgecal.report.labels.prevalence_rows`)."""
    shown = [(str(r.title), _est(r.estimate), _est(r.ci_low), _est(r.ci_high)) for r in rows]
    if not any(e is not None for _, e, _, _ in shown):
        return None
    top = max(v for row in shown for v in row[1:] if v is not None)
    hi = min(1.0, max(0.1, math.ceil((top + 0.05) * 10) / 10))
    return forest_svg(shown, lo=0.0, hi=hi, width=width)


def _est(v: Any) -> float | None:
    if isinstance(v, Figure):
        v = v.estimate
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None
