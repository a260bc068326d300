"""The over-time part of a report: each judge's ``over_time`` (:class:`judgecal.audit.schema.OverTime`, the
monitor's series) as the page-one line, the rows of its table and a small chart (inline SVG) for audit.html and the
PDF. Figures are the audit's; names (judges, periods) are data, escaped where they are drawn."""

from __future__ import annotations

from markupsafe import Markup

from judgecal.audit.schema import AuditReport, OverTime
from judgecal.catalogue import fmt_interval, fmt_number
from judgecal.report.plots import escape
from judgecal.report.table import Row

BY_WORDS = {"period": "period", "day": "day", "week": "ISO week", "month": "month"}


def judge_words(judge: str, ot: OverTime) -> str:
    """``<judge> drifted from <period>``, ``<judge>: no drift over N periods`` or why it was not monitored."""
    if ot.error:
        return f"{judge}: not monitored ({ot.error})"
    if ot.first_drift is not None:
        return f"{judge} drifted from {ot.first_drift}"
    return f"{judge}: no drift over {len(ot.periods)} periods"


def over_time_line(report: AuditReport) -> str | None:
    """Page one's line (``None`` when no judge was followed over time)."""
    parts = [judge_words(name, j.over_time) for name, j in report.judges.items() if j.over_time is not None]
    return "over time: " + "; ".join(parts) if parts else None


def decision_words(ot: OverTime) -> str:
    """The decision and its rule in one sentence."""
    if ot.error:
        return f"Not monitored: {ot.error}."
    b = ot.baseline_agreement
    base = f"baseline {ot.baseline}: {fmt_interval(b.estimate, b.low, b.high)}, {b.n} items" if b else ""
    head = (f"Drift declared at {ot.first_drift}" if ot.first_drift is not None
            else f"No drift over {len(ot.periods)} periods")
    level = round(100 * (1 - (ot.alpha or 0.05)))
    return (f"{head} ({base}; by {BY_WORDS.get(ot.by, ot.by)}, truth {ot.consensus}). Rule: {ot.method}; "
            f"effect of interest {fmt_number(ot.effect_of_interest, 2)}, error {fmt_number(ot.alpha, 2)} "
            f"({level}% confidence, valid over every look).")


def over_time_rows(ot: OverTime) -> list[Row]:
    """One row per period (the table of audit.html and the PDF)."""
    out: list[Row] = []
    for r in ot.periods:
        after = r.role == "after"
        out.append({
            "period": r.period, "n": r.n,
            "agreement (95% CI)": fmt_interval(r.agreement, r.agreement_low, r.agreement_high),
            "κ": fmt_number(r.kappa), "annotators": fmt_number(r.humans.estimate) if r.humans else "n/a",
            "invalid rate": fmt_number(r.invalid_rate),
            "window from": (r.window_from or "") if after else "",
            "agreement in the window (anytime-valid CI)": fmt_interval(r.window_agreement, r.window_low, r.window_high)
            if after else "",
            "decision": ("DRIFT" if r.drift else "no drift") if after else r.role})
    return out


def over_time_svg(ot: OverTime, width: int = 640, height: int = 200) -> Markup | None:
    """Each period's agreement and interval (dots), the agreement of the window that gives the most evidence
    of a drop with its anytime-valid interval (line and band), the baseline band, the boundary (its lower edge, dashed) and the
    period where drift was declared (a red rule)."""
    periods, b = ot.periods, ot.baseline_agreement
    if not periods or b is None:
        return None
    left, top, span_y = 40, 10, height - 46
    step = (width - left - 10) / len(periods)

    def x(k: int) -> float:
        return left + step * (k + 0.5)

    def y(v: float) -> float:
        return top + (1 - v) * span_y

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="plot over-time" '
             'role="img">',
             f'<rect x="{left}" y="{y(b.high):.1f}" width="{width - left - 10}" height="{y(b.low) - y(b.high):.1f}" '
             'fill="#4c78a8" fill-opacity="0.15"><title>baseline band</title></rect>',
             f'<line x1="{left}" y1="{y(b.low):.1f}" x2="{width - 10}" y2="{y(b.low):.1f}" stroke="#b33" '
             'stroke-dasharray="4 3"><title>drift boundary: the baseline\'s lower bound</title></line>']
    for t in (0.0, 0.5, 1.0):
        parts.append(f'<text x="{left - 4}" y="{y(t) + 4:.0f}" font-size="10" text-anchor="end">{t:g}</text>')
    after = [(k, r) for k, r in enumerate(periods) if r.role == "after" and r.window_agreement is not None]
    if after:
        hi = " ".join(f"{x(k):.1f},{y(r.window_high or 0):.1f}" for k, r in after)
        lo = " ".join(f"{x(k):.1f},{y(r.window_low or 0):.1f}" for k, r in reversed(after))
        parts.append(f'<polygon points="{hi} {lo}" fill="#f58518" fill-opacity="0.2"/>')
        line = " ".join(f"{x(k):.1f},{y(r.window_agreement or 0):.1f}" for k, r in after)
        parts.append(f'<polyline points="{line}" fill="none" stroke="#f58518" stroke-width="2"/>')
    for k, r in enumerate(periods):
        name = escape(r.period)
        parts.append(f'<line x1="{x(k):.1f}" y1="{y(r.agreement_low):.1f}" x2="{x(k):.1f}" '
                     f'y2="{y(r.agreement_high):.1f}" stroke="#357"/>'
                     f'<circle cx="{x(k):.1f}" cy="{y(r.agreement):.1f}" r="3.5" fill="#357"><title>{name}: '
                     f"{fmt_interval(r.agreement, r.agreement_low, r.agreement_high)}, n = {r.n}</title></circle>"
                     f'<text x="{x(k):.1f}" y="{height - 22}" font-size="10" text-anchor="middle">'
                     f"{escape(r.period if len(r.period) <= 14 else r.period[:13] + '…')}</text>")
        if r.period == ot.first_drift:
            parts.append(f'<line x1="{x(k):.1f}" y1="{top}" x2="{x(k):.1f}" y2="{y(0):.1f}" stroke="#b33" '
                         f'stroke-width="1.5"><title>drift declared: {name}</title></line>')
    parts.append(f'<text x="{left + (width - left) / 2:.0f}" y="{height - 6}" font-size="10" text-anchor="middle">'
                 "agreement with the truth by period; band: baseline; dashed: drift boundary; line: since the "
                 "baseline</text></svg>")
    return Markup("".join(parts))  # noqa: S704 - numbers, and period names escaped by escape()
