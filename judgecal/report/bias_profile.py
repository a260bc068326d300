"""A judge's bias profile (``judges.<judge>.biases``, :mod:`judgecal.audit.profile`) as every surface shows it: one
row per probe in words, and one chart (inline SVG) for audit.html and the PDF: each tested bias's figure with its
interval, its null beside it, flagged ones marked, the others named with what would test them. Names (probe titles,
commands) come from the probes' declarations, a plugin's too: escaped where they are drawn."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from judgecal.audit.schema import BiasEntry, BiasFigure
from judgecal.catalogue import fmt_interval
from judgecal.report.plots import escape
from judgecal.report.table import Row

FLAGGED, TESTED, NULL = "#c33", "#357", "#999"
LEGEND = "each bias's figure with its 95% CI (red: flagged); grey diamond and band: its null"


def fig_words(f: BiasFigure | None) -> str:
    return "n/a" if f is None else fmt_interval(f.estimate, f.ci_low, f.ci_high)


def state_words(b: BiasEntry) -> str:
    """``flagged (caution)``, ``not flagged``, ``cannot tell (underpowered)``, ``not tested: <command>`` or
    ``applies to judges of pairs only``."""
    if b.status == "not applicable":
        return "applies to judges of pairs only"
    if b.status == "not tested":
        return f"not tested: {b.how_to_run}" if b.how_to_run else "not tested"
    if b.flagged:
        return f"flagged ({b.severity})" if b.severity else "flagged"
    return "cannot tell (underpowered)" if b.underpowered else "not flagged"


def profile_rows(biases: Sequence[BiasEntry]) -> list[Row]:
    """One row per probe: its title, the figure charted, its value and its null's, and its state in words."""
    return [{"bias": b.title, "figure": b.metric_title,
             "estimate (95% CI)": fig_words(b.figure) if b.status == "tested" else "",
             "null": fig_words(b.null) if b.status == "tested" and b.null else "",
             "state": state_words(b)} for b in biases]


def _domain(biases: Sequence[BiasEntry]) -> tuple[float, float]:
    """The x range: 0 to 1, widened to every value shown (an excess or a shift runs below 0)."""
    vals = [v for b in biases for f in (b.figure, b.null) if f is not None
            for v in (f.estimate, f.ci_low, f.ci_high) if v is not None]
    return min([0.0, *vals]), max([1.0, *vals])


def profile_svg(biases: Sequence[BiasEntry] | None, compact: bool = False) -> Markup | None:
    """Each tested bias's figure (dot) and interval (line), its null (grey diamond and band), a flagged one in
    red and marked; not-tested ones named in grey with the command that tests them. ``compact``: the PDF's, rows
    closer and narrower. ``None`` without a profile."""
    if not biases:
        return None
    width, row, top, label_w, right_w = (520, 13, 8, 140, 90) if compact else (640, 18, 14, 170, 96)
    height = top + row * len(biases) + (18 if compact else 30)
    lo, hi = _domain(biases)
    plot_w = width - label_w - right_w

    def x(v: float) -> float:
        return label_w + (v - lo) / ((hi - lo) or 1.0) * plot_w

    axis = height - (14 if compact else 26)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" class="plot bias-profile'
             f'{" compact" if compact else ""}" role="img">']
    for t in sorted({lo, 0.0, 0.5, 1.0, hi}):
        parts.append(f'<line x1="{x(t):.1f}" y1="{top - 6}" x2="{x(t):.1f}" y2="{axis}" stroke="#ddd"/>'
                     f'<text x="{x(t):.1f}" y="{height - (4 if compact else 14)}" font-size="9" '
                     f'text-anchor="middle">{t:.2g}</text>')
    for k, b in enumerate(biases):
        y = top + row * k + row / 2
        title = escape(b.title)
        parts.append(f'<text x="{label_w - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end" '
                     f'data-probe="{escape(b.probe)}">{title}</text>')
        if b.status != "tested" or b.figure is None or b.figure.estimate is None:
            words = state_words(b)  # cut before it is escaped, so no entity is cut in two
            shown = escape(words if len(words) <= 90 else words[:89] + "…")
            parts.append(f'<text x="{label_w}" y="{y + 4:.1f}" font-size="9" fill="{NULL}" font-style="italic">'
                         f"{shown}<title>{escape(words)}</title></text>")
            continue
        n = b.null
        if n is not None and n.estimate is not None:
            if n.ci_low is not None and n.ci_high is not None:
                parts.append(f'<rect x="{x(n.ci_low):.1f}" y="{y - 5:.1f}" width="{max(x(n.ci_high) - x(n.ci_low), 1):.1f}" '
                             f'height="10" fill="{NULL}" fill-opacity="0.25"/>')
            cx = x(n.estimate)
            parts.append(f'<path d="M{cx:.1f} {y - 5:.1f} l4 5 l-4 5 l-4 -5 z" fill="{NULL}">'
                         f"<title>{title}, null: {escape(fig_words(n))}</title></path>")
        f, colour = b.figure, FLAGGED if b.flagged else TESTED
        est = f.estimate if f.estimate is not None else 0.0
        if f.ci_low is not None and f.ci_high is not None:
            parts.append(f'<line x1="{x(f.ci_low):.1f}" y1="{y:.1f}" x2="{x(f.ci_high):.1f}" y2="{y:.1f}" '
                         f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(est):.1f}" cy="{y:.1f}" r="3.5" fill="{colour}">'
                     f"<title>{title}: {escape(b.metric_title)} {escape(fig_words(f))}</title></circle>")
        parts.append(f'<text x="{width - right_w + 6}" y="{y + 4:.1f}" font-size="9" fill="{colour}">'
                     f"{escape(state_words(b))}</text>")
    if not compact:  # the PDF says it in the line above the chart
        parts.append(f'<text x="{label_w + plot_w / 2:.0f}" y="{height - 2}" font-size="9" text-anchor="middle">'
                     f"{LEGEND}</text>")
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - numbers, and every name escaped by escape()
