"""audit.html sections for the decision: a verdict per judge, the humans' reference, model-level results.

Every name and reason is escaped (judge and model names are data); numbers go through one formatter.
"""

from __future__ import annotations

from html import escape
from typing import Any

_COLOURS = {"aligned": "#2a7d2a", "caution": "#b07700", "not aligned": "#b22222"}


def _f(v: Any, fmt: str = ".3f") -> str:
    return "–" if v is None else format(v, fmt) if isinstance(v, (int, float)) else escape(str(v))


def _ci(d: dict[str, Any] | None, key: str = "estimate") -> str:
    if not d or d.get(key) is None:
        return "–"
    return f"{_f(d[key])} <small>[{_f(d.get('ci_low'))}, {_f(d.get('ci_high'))}]</small>"


def verdicts_html(report: dict[str, Any]) -> str:
    """One block per judge: status, reasons, probes not tested."""
    parts = []
    for name, j in report.get("judges", {}).items():
        v = j.get("verdict")
        if not v:
            continue
        colour = _COLOURS.get(v["status"], "#333")
        reasons = "".join(f"<li>{escape(r)}</li>" for r in v["reasons"]) or "<li>no rule broken</li>"
        nt = "".join(f"<li>{escape(s)}</li>" for s in v.get("not_tested", []))
        parts.append(f"<div class='verdict'><h3><span class='name'>{escape(name)}</span>: "
                     f"<span style='color:{colour}'>{escape(v['status'])}</span></h3><ul>{reasons}</ul>"
                     + (f"<p>Not tested (never read as “no bias”):</p><ul>{nt}</ul>" if nt else "") + "</div>")
    if not parts:
        return ""
    return ("<h2 id='verdicts'>Verdict per judge</h2><p>From the thresholds in the workspace's thresholds.yaml "
            "(judgecal's defaults where it has none). A bias counts only when it is significant after "
            "Benjamini–Hochberg and at least the effect of interest.</p>" + "".join(parts))


def humans_html(report: dict[str, Any]) -> str:
    """The humans' agreement with each other beside every judge's κ, accuracy, chance and base rate."""
    h = report.get("humans")
    if not h:
        return ""
    rows = []
    for name, j in report.get("judges", {}).items():
        r, alt = j.get("reference"), j.get("replace_annotator") or {}
        if not r:
            continue
        kz = alt.get("kappa_z") or {}
        rows.append(f"<tr><td class='name'>{escape(name)}</td><td>{_f(r.get('kappa'))}</td>"
                    f"<td>{_f(r.get('accuracy'))}</td><td>{_f(r.get('base_rate'))}</td>"
                    f"<td>{_f(r.get('chance_accuracy'))}</td><td>{_f(kz.get('z'), '.1f')}</td>"
                    f"<td>{_f(alt.get('winning_rate'), '.2f')}</td>"
                    f"<td>{_replace_word(alt)}</td></tr>")
    return (f"<h2 id='humans'>The humans' reference</h2><p>{h['n_annotators']} annotators of source "
            f"{escape(str(h.get('source')))} on {h['n_items']} items: Fleiss' κ {_ci(h.get('fleiss_kappa'))}; "
            f"an annotator's leave-one-out accuracy against the others' majority {_ci(h.get('loo_accuracy'))}. "
            "Chance accuracy is that of a rater drawing labels from the consensus's shares (its κ is 0); the base "
            "rate is always answering the commonest label. The κ z-score compares the judge's mean κ with each "
            "annotator to the annotators' κ with each other (|z| &lt; 1 human-like); the alternative annotator "
            "test (Calderon et al., 2025) passes when the judge can replace at least half the annotators.</p>"
            "<table id='reference'><tr><th>judge</th><th>κ (item verdict)</th><th>accuracy (item verdict)</th><th>base rate</th>"
            "<th>chance accuracy</th><th>κ z-score</th><th>winning rate</th><th>can replace an annotator</th></tr>"
            + "".join(rows) + "</table>")


def _replace_word(alt: dict[str, Any]) -> str:
    if not alt:
        return "not tested (no per-annotator labels)"
    if not alt.get("n_annotators"):
        return f"not tested (no annotator with {alt.get('min_items', 30)} items)"
    return "yes" if alt.get("passed") else "no"


def heatmap_svg(matrix: dict[str, Any], cell: int = 46) -> str:
    """The model x model win-rate matrix as coloured cells (row model's win rate against the column's)."""
    models, est = matrix["models"], matrix["estimate"]
    left, top = 170, 20
    n = len(models)
    w, hgt = left + cell * n + 10, top + cell * n + 10
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{hgt + 120}" role="img">']
    for r, row in enumerate(est):
        y = top + r * cell
        parts.append(f'<text x="{left - 6}" y="{y + cell / 2 + 4}" font-size="11" text-anchor="end">'
                     f'{escape(str(models[r]))}</text>')
        for c, v in enumerate(row):
            x = left + c * cell
            if v is None:
                fill, label = "#eee", ""
            else:
                fill = f"rgb({int(240 - 140 * v)},{int(200 - 60 * abs(v - 0.5))},{int(100 + 140 * v)})"
                label = f"{v:.2f}"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell - 2}" height="{cell - 2}" fill="{fill}"/>'
                         f'<text x="{x + cell / 2}" y="{y + cell / 2 + 4}" font-size="11" '
                         f'text-anchor="middle">{label}</text>')
    for c, m in enumerate(models):
        xc = left + c * cell + cell / 2
        parts.append(f'<text x="{xc}" y="{hgt}" font-size="11" transform="rotate(45 {xc} {hgt})">'
                     f'{escape(str(m))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def models_html(report: dict[str, Any]) -> str:
    """Win rates by rater, the humans' win-rate matrix, Bradley–Terry rankings, system-level alignment, PPI."""
    m = report.get("models")
    if not m or not m.get("win_rate"):
        return ""
    raters = list(m["win_rate"])
    head = "".join(f"<th class='name'>{escape(r)}</th>" for r in raters)
    rows = "".join(f"<tr><td class='name'>{escape(model)}</td>"
                   + "".join(f"<td>{_ci(m['win_rate'][r].get(model))}</td>" for r in raters) + "</tr>"
                   for model in m["models"])
    out = ["<h2 id='models'>Models</h2><p>Win rate = (wins + ties/2) / comparisons over the items where the "
           "model is a candidate, item-bootstrap 95% CIs; a judge that judged both orders is read by its "
           "swap-debiased verdict.</p>", f"<table id='win-rates'><tr><th>model</th>{head}</tr>{rows}</table>"]
    rank_rows = "".join(f"<tr><td class='name'>{escape(r)}</td><td class='name'>"
                        f"{escape(' > '.join(m['ranking'][r]))}</td></tr>" for r in m.get("ranking", {}))
    out.append("<h3>Bradley–Terry ranking</h3><table id='ranking'><tr><th>rater</th><th>best first</th></tr>"
               f"{rank_rows}</table>")
    if "humans" in m.get("matrix", {}):
        out.append("<h3>Head-to-head win rates (humans; row against column)</h3>" + heatmap_svg(m["matrix"]["humans"]))
    sa = m.get("system_alignment", {})
    if sa:
        srows = "".join(f"<tr><td class='name'>{escape(j)}</td><td>{_ci(a.get('spearman'))}</td>"
                        f"<td>{_ci(a.get('kendall'))}</td><td>{a.get('n_reversed')} of {a.get('n_pairs')}</td>"
                        f"<td>{a.get('n_reversed_significant')}</td></tr>" for j, a in sa.items())
        out.append("<h3>System-level alignment with the humans</h3><table id='system-alignment'><tr><th>judge</th>"
                   "<th>Spearman</th><th>Kendall</th><th>model pairs ordered differently</th>"
                   f"<th>of which the humans' order is significant</th></tr>{srows}</table>")
    ppi_rows = []
    for judge, p in m.get("ppi", {}).items():
        for model, r in p.get("win_rate", {}).items():
            ppi_rows.append(f"<tr><td class='name'>{escape(judge)}</td><td class='name'>{escape(model)}</td>"
                            f"<td>{_ci(r)}</td><td>{_f(r.get('classical_estimate'))} <small>"
                            f"[{_f(r.get('classical_ci_low'))}, {_f(r.get('classical_ci_high'))}]</small></td>"
                            f"<td>{_f(r.get('width_ratio'), '.2f')}</td><td>{r.get('n_labelled')} + "
                            f"{r.get('n_unlabelled')}</td></tr>")
    if ppi_rows:
        out.append("<h3>Win rates corrected with the humans (PPI++)</h3><p>Human-labelled items plus the judge's "
                   "verdicts on the others; beside it the human-only estimate on the same labelled items and the "
                   "ratio of CI widths (below 1: the judge bought precision).</p><table id='ppi'><tr><th>judge</th>"
                   "<th>model</th><th>PPI++</th><th>human only</th><th>width ratio</th><th>labelled + unlabelled"
                   f"</th></tr>{''.join(ppi_rows)}</table>")
    plans = m.get("plan", {})
    if plans:
        prow = "".join(f"<tr><td class='name'>{escape(j)}</td><td>{_f(p['rho'])}</td><td>{p['n_human_only']}</td>"
                       f"<td>{p['n_ppi']}</td><td>{p['n_ppi_if_judge_not_better']}</td></tr>" for j, p in plans.items())
        note = escape(next(iter(plans.values()))["ceiling_note"])
        out.append(f"<h3>Human labels for a ±{_f(m.get('plan_target_halfwidth'), 'g')} interval</h3><p>{note}</p>"
                   "<table id='plan'><tr><th>judge</th><th>judge–human correlation</th><th>human only</th>"
                   f"<th>PPI++</th><th>if the judge is no better than the models</th></tr>{prow}</table>")
    return "".join(out)


def confidence_html(report: dict[str, Any]) -> str:
    """Calibration (ECE before and after recalibration) and selective evaluation per judge."""
    rows = []
    for name, j in report.get("judges", {}).items():
        c, s = j.get("calibration"), j.get("selective")
        if not c:
            continue
        rec = (c.get("recalibrated") or {}).get("ece")
        held = (s or {}).get("held_out") or {}
        rows.append(f"<tr><td class='name'>{escape(name)}</td><td>{escape(c['confidence'])}</td><td>{c['n']}</td>"
                    f"<td>{_ci(c.get('ece'))}</td><td>{_ci(rec)}</td><td>{_f((s or {}).get('threshold'))}</td>"
                    f"<td>{_f((s or {}).get('coverage'), '.2f')}</td><td>{_f(held.get('agreement'), '.3f')}</td>"
                    f"<td>{(s or {}).get('n_escalated', '–')}</td></tr>")
    if not rows:
        return ""
    st = report["settings"].get("selective", {})
    return ("<h2 id='confidence'>Judge confidence</h2><p>ECE: expected calibration error, the gap between "
            "confidence and agreement with the humans over 10 bins (0 = calibrated). Selective evaluation keeps a "
            f"verdict when its confidence reaches the threshold, chosen so that agreement is at least "
            f"{_f(st.get('target'), 'g')} with probability {_f(1 - st.get('delta', 0.1), 'g')}; the rest is "
            "escalated to people (`judgecal annotate push --strategy escalate`).</p><table id='calibration'><tr>"
            "<th>judge</th><th>confidence</th><th>n</th><th>ECE</th><th>ECE recalibrated</th><th>threshold</th>"
            "<th>coverage</th><th>held-out agreement</th><th>escalated</th></tr>" + "".join(rows) + "</table>")
