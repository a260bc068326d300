"""Write ``audit.json`` and a self-contained ``audit.html`` (inline SVG plots, all text escaped)."""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path
from typing import Any

from judgecal.report import decision_html

_POSITION = ("position_consistency", "first_position_rate", "flip_rate", "accuracy_AB", "accuracy_BA", "accuracy_both")
METRIC_ORDER = ("accuracy", "macro_f1", "cohen_kappa", "position_consistency", "first_position_rate",
                "flip_rate", "invalid_rate", "accuracy_AB", "accuracy_BA", "accuracy_both")


def json_safe(obj: Any) -> Any:
    """NaN and infinities (undefined statistics) become ``null``; numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def write_report(report: dict[str, Any], out_dir: str | Path) -> tuple[Path, Path]:
    report = json_safe(report)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    js, html_path = out / "audit.json", out / "audit.html"
    tmp = js.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False), "utf-8")
    tmp.replace(js)
    html_path.write_text(render_html(report), "utf-8")
    return js, html_path


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.1e}" if 0 < abs(v) < 0.001 else f"{v:.3f}"
    return escape(str(v))


def forest_svg(rows: list[tuple[str, float | None, float | None, float | None]], lo: float = 0.0,
               hi: float = 1.0, ref: float | None = None, width: int = 640) -> str:
    """A forest plot: one point with its CI per row, on a fixed axis."""
    left, right, row_h = 230, 30, 22
    height = row_h * len(rows) + 30
    span = width - left - right

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * span

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    for t in (lo, (lo + hi) / 2, hi):
        parts.append(f'<line x1="{x(t):.1f}" y1="5" x2="{x(t):.1f}" y2="{height - 20}" stroke="#ddd"/>'
                     f'<text x="{x(t):.1f}" y="{height - 5}" font-size="11" text-anchor="middle">{t:g}</text>')
    if ref is not None:
        parts.append(f'<line x1="{x(ref):.1f}" y1="5" x2="{x(ref):.1f}" y2="{height - 20}" stroke="#c33" '
                     'stroke-dasharray="4 3"/>')
    for i, (label, est, a, b) in enumerate(rows):
        y = 15 + i * row_h
        parts.append(f'<text x="{left - 8}" y="{y + 4}" font-size="12" text-anchor="end">{escape(label)}</text>')
        if est is None:
            continue
        if a is not None and b is not None:
            parts.append(f'<line x1="{x(a):.1f}" y1="{y}" x2="{x(b):.1f}" y2="{y}" stroke="#357" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(est):.1f}" cy="{y}" r="4" fill="#357"/>')
    parts.append("</svg>")
    return "".join(parts)


def _plot(report: dict[str, Any], metric: str, title: str, ref: float | None = None) -> str:
    rows = []
    for name, j in report["judges"].items():
        m = j.get("metrics", {}).get(metric)
        if m:
            rows.append((name, m["estimate"], m["ci_low"], m["ci_high"]))
    if not rows:
        return ""
    lo = -0.2 if metric == "cohen_kappa" else 0.0
    return f"<h3>{escape(title)}</h3>" + forest_svg(rows, lo=lo, hi=1.0, ref=ref)


def _truth(report: dict[str, Any]) -> str:
    """The consensus the audit measured against: method, label source, annotators, their agreement."""
    c, s = report["consensus"], report["settings"]
    text = f"consensus <b>{escape(str(s['consensus']))}</b> over {c['n_items']} items"
    if c.get("source") is not None:
        text += f", labels of source {escape(str(c['source']))}"
        if c.get("sources") and c["sources"] != [c["source"]]:
            text += f" ({escape(', '.join(map(str, c['sources'])))})"
    if c.get("n_annotators") is not None:
        text += f" by {c['n_annotators']} annotators ({c.get('n_labels', 0)} labels)"
    fk = c.get("fleiss_kappa")
    if fk and fk.get("estimate") is not None:
        text += (f"; their Fleiss' κ {_fmt(fk['estimate'])} [{_fmt(fk.get('ci_low'))}, {_fmt(fk.get('ci_high'))}]"
                 f" over {fk.get('n')} items")
    return text


def render_html(report: dict[str, Any]) -> str:
    s = report["settings"]
    head = ["judge", "n"] + [m for m in METRIC_ORDER] + ["flags"]
    rows = []
    for name, j in report["judges"].items():
        cells = [f"<td class='name'>{escape(name)}</td>", f"<td>{j['n_judgments']}</td>"]
        for m in METRIC_ORDER:
            v = j.get("metrics", {}).get(m)
            cells.append("<td>not tested</td>" if not v and m in _POSITION else "<td>–</td>" if not v or v["estimate"] is None else
                         f"<td title='95% CI {_fmt(v['ci_low'])}–{_fmt(v['ci_high'])}, n={v['n']}'>"
                         f"{_fmt(v['estimate'])}<br><small>[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}]</small></td>")
        cells.append(f"<td class='name'>{escape(', '.join(j.get('flags', [])) or '–')}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    usage_rows = []
    for name, j in report["judges"].items():
        u = j["usage"]
        usage_rows.append("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in (
            name, u["judgments"], u["prompt_tokens_per_1k"], u["completion_tokens_per_1k"], u["cost_usd_per_1k"],
            u["latency_s_mean"], u["latency_s_p95"])) + "</tr>")
    cards = []
    for name, j in report["judges"].items():
        lines = [
            f"<tr><td class='name'>{escape(metric)}</td><td>{_fmt(m.get('estimate'))}</td>"
            f"<td>[{_fmt(m.get('ci_low'))}, {_fmt(m.get('ci_high'))}]</td><td>{_fmt(m.get('n'))}</td>"
            f"<td>{_fmt(m.get('p'))}</td><td>{_fmt(m.get('q'))}</td><td>{_fmt(m.get('mde'))}</td>"
            f"<td>{_fmt(m.get('null_value'))}</td></tr>"
            for metric, m in j.get("metrics", {}).items()]
        cards.append(f"<h3>{escape(name)}</h3><p>flags: {escape(', '.join(j.get('flags', [])) or 'none')}</p>"
                     "<table class='card'><tr><th>metric</th><th>estimate</th><th>95% CI</th><th>n</th><th>p</th>"
                     f"<th>q (BH)</th><th>MDE</th><th>null</th></tr>{''.join(lines)}</table>")
    plots = (_plot(report, "accuracy", "Accuracy against the human consensus")
             + _plot(report, "cohen_kappa", "Cohen's κ against the human consensus")
             + _plot(report, "first_position_rate", "First-position pick rate (0.5 = unbiased)", ref=0.5)
             + _plot(report, "position_consistency", "Position consistency across the two orders")
             + _plot(report, "pad_pick_rate", "Padded copy picked over the original (0.5 = unbiased)", ref=0.5)
             + _plot(report, "instability_rate", "Run-to-run instability (two repeats differ)", ref=0.0)
             + _plot(report, "prompt_flip_rate", "Verdict flips under the worst prompt mutation", ref=0.0))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>judgecal audit</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 4px 8px; text-align: right; }}
td.name {{ text-align: left; font-family: monospace; }}
small {{ color: #666; }}
</style></head><body>
<h1>judgecal audit</h1>
<p>Schema {escape(report['schema'])}, judgecal {escape(report['judgecal_version'])}, generated {escape(report['generated_at'])}.
Truth: {_truth(report)}; unparsable verdicts counted as
{escape(s['invalid_as'])}; {s['n_boot']} bootstrap replicates ({escape(s['bootstrap'])}), {int(s['ci_level'] * 100)}% intervals.</p>
{decision_html.verdicts_html(report)}
<h2>Alignment with the humans</h2>
<table id="alignment"><tr>{''.join(f'<th>{escape(h)}</th>' for h in head)}</tr>{''.join(rows)}</table>
{decision_html.humans_html(report)}
{decision_html.models_html(report)}
{decision_html.confidence_html(report)}
<h2>Report card</h2>
<p>Every metric with its estimate, CI and n; tested metrics add p (a test of the estimate against its null
value, last column), the Benjamini–Hochberg q across the whole report, and the minimum detectable effect at
this sample size (a null result with an MDE above the effect of
interest is flagged underpowered).</p>
{''.join(cards)}
<h2>Plots</h2>{plots}
<h2>Usage per 1,000 judgments</h2>
<table id="usage"><tr><th>judge</th><th>judgments</th><th>prompt tokens</th><th>completion tokens</th><th>cost (USD)</th>
<th>latency mean (s)</th><th>latency p95 (s)</th></tr>{''.join(usage_rows)}</table>
</body></html>
"""
