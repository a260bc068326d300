"""The Biases page: each judge's bias profile as one chart, then each probe in plain words (what was tested, its null,
its figure and whether it matters, read from the audit's own flags and tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    chart_plain,
    fmt_m,
    fmt_number,
    fmt_p,
    md_plain,
    plain_text,
    table,
    titled_report,
)
from judgecal.apps.page_judges import verdict_of
from judgecal.apps.page_overview import flag_text

import judgecal.audit.probes  # noqa: F401  (the registered probes describe themselves in the catalogue)
from judgecal.audit.profile import profile_counts
from judgecal.audit.schema import AuditReport, BiasEntry, BiasFigure, Figure, Judge
from judgecal.catalogue import METRICS, ProbeInfo, flag_info, info, probe_groups
from judgecal.report.bias_profile import profile_rows, state_words
from judgecal.report.table import Row

if TYPE_CHECKING:
    import plotly.graph_objects as go


def group_words(probes: list[ProbeInfo]) -> tuple[str, str, str, str]:
    """A catalogue group's question, what was tested, its null and how to run it, from its probes' own words."""
    return (probes[0].question, " ".join(p.tested for p in probes), "; ".join(p.null for p in probes),
            "; ".join(p.how_to_run for p in probes))


def matters(name: str, m: Figure, judge: Judge, eoi: float, alpha: float = 0.05) -> str:
    """Whether a probe's figure shows a bias that matters, in words, from the audit's own decisions: the flags
    it raised on this figure (each flag declares the figure it is read from, :func:`judgecal.catalogue.flag_info`)
    and the probe's ``underpowered`` decision in the judge's bias profile; then the figure's test as stored
    (its BH q against the report's α, its interval against the effect of interest)."""
    declared = [flag_info(f) for f in judge.flags if flag_info(f).metric == name]
    profile = next((b for b in judge.biases or [] if b.metric == name), None)
    if any(f.severity == "underpowered" for f in declared) or (profile is not None and profile.underpowered):
        return f"cannot tell: the interval still holds an effect of {eoi:.0%}"
    if m.ci_low is not None and m.ci_low == m.ci_high == m.null_value:
        return "no sign of bias (identical in both orders, or no variation at all)"
    q = m.q if "q" in m.model_fields_set else m.p
    if q is None:
        return "descriptive (no test)"
    if declared:
        return "yes: significant, and the interval reaches the effect of interest"
    return "no: not significant" if q >= alpha else f"no: significant but smaller than {eoi:.0%}"


def biases() -> None:
    rep = titled_report("Biases: each probe in plain words")
    if rep is None:
        return
    from judgecal.audit.decision import flag_words

    words = flag_words()
    s = rep.settings
    eoi = s.effect_of_interest if s.effect_of_interest is not None else 0.05
    alpha = s.alpha if s.alpha is not None else 0.05  # the level the report's flags were raised at
    st.caption(f"A bias is flagged only when it is significant after Benjamini–Hochberg (q < {alpha:g}) *and* at least "
               f"the effect of interest ({eoi:.0%}) away from its null. A probe that was not run says “not tested”.")
    profiles(rep)
    legend = []
    for name, j in rep.judges.items():
        details = verdict_of(j)[2]
        for f in j.flags:
            severe = f.startswith("position_bias") and any(
                d.code == "position_severe" and d.severity == "not aligned" for d in details)
            legend.append({"judge": name, "flag": flag_text(f, words), "severity": "not aligned" if severe else "caution"})
    st.subheader("Flags")
    if legend:
        table(pd.DataFrame(legend), "biases-flags",
              help={"severity": "caution: reported in the verdict; not aligned: severe enough to fail the judge."})
    else:
        plain_text("No judge carries a flag.")
    probes = probe_groups()  # every registered probe, grouped as the catalogue groups its metrics
    groups: dict[str, list[str]] = {}
    for metric in METRICS.values():
        if metric.group in probes:
            groups.setdefault(metric.group, []).append(metric.name)
    for group, names in groups.items():
        question, how, null, run_it = group_words(probes[group])
        pairwise_group = all(p.applies_to == ("pairwise",) for p in probes[group])
        st.header(md_plain(question))
        plain_text(f"What was tested: {how}\nNull (no bias): {null}\nEffect of interest: {eoi:.0%}")
        rows: list[Row] = []
        plot: list[tuple[str, str, Figure]] = []
        for name in names:
            mi = info(name)
            for judge, j in rep.judges.items():
                m = j.figure(name)
                if not m and j.kind == "pointwise" and pairwise_group:
                    rows.append({"judge": judge, "metric": mi.title, "estimate (95% CI)": "n/a (pointwise)",
                                 "n": None, "p": "n/a", "q (BH)": "n/a", "MDE": "n/a", "null": mi.reference,
                                 "matters?": "applies to judges of pairs only (one response per item)"})
                    continue
                if not m:
                    rows.append({"judge": judge, "metric": mi.title, "estimate (95% CI)": "not tested", "n": None,
                                 "p": "not tested", "q (BH)": "not tested", "MDE": "n/a", "null": mi.reference,
                                 "matters?": f"not tested ({run_it})"})
                    continue
                rows.append({"judge": judge, "metric": mi.title, "estimate (95% CI)": fmt_m(m), "n": m.n,
                             "p": fmt_p(m.p), "q (BH)": fmt_p(m.q), "MDE": fmt_number(m.mde),
                             "null": mi.reference, "matters?": matters(name, m, j, eoi, alpha)})
                if m.estimate is not None and m.ci_low is not None:
                    plot.append((judge, name, m))
        table(pd.DataFrame(rows), f"biases-{group}",
              help={"MDE": "Minimum detectable effect: the smallest effect this many items would detect with 80% "
                           "power. A null result whose MDE exceeds the effect of interest is 'cannot tell'.",
                    "q (BH)": "p adjusted for testing many metrics at once (Benjamini–Hochberg)."})
        fig = bias_plot(plot, eoi)
        if fig is not None:
            st.plotly_chart(fig, key=f"plot-{group}")


def profiles(rep: AuditReport) -> None:
    """Each judge's bias profile as the audit built it (``judges.<judge>.biases``): one chart, then its rows."""
    shown = [(name, j.biases) for name, j in rep.judges.items() if j.biases]
    if not shown:
        return
    st.header("Each judge's bias profile")
    for k, (name, biases) in enumerate(shown, 1):
        tested, flagged = profile_counts([b.to_json() for b in biases])
        st.subheader(md_plain(name), anchor=False)
        plain_text(f"{tested} of {len(biases)} biases tested, {len(flagged)} flagged"
                   + (f": {', '.join(flagged)}" if flagged else ""))
        with st.container(key=f"profile-{k}"):
            st.plotly_chart(profile_plot(biases), key=f"profile-plot-{k}")
        table(pd.DataFrame(profile_rows(biases)), f"profile-{k}")


def profile_plot(biases: list[BiasEntry]) -> go.Figure:
    """Each tested bias's figure with its interval (red and marked when flagged), its null beside it (grey
    diamond with its interval), and the biases not tested named where their point would be."""
    import plotly.graph_objects as go

    y = {b.probe: chart_plain(b.title) for b in biases}
    tested = [b for b in biases if b.status == "tested" and b.figure and b.figure.estimate is not None]
    lo = min([0.0, *(v for b in tested for f in (b.figure, b.null) if f for v in (f.estimate, f.ci_low) if v is not None)])

    def bars(figs: list[BiasFigure]) -> dict[str, object]:
        return {"type": "data", "array": [(f.ci_high if f.ci_high is not None else f.estimate or 0.0) - (f.estimate or 0.0) for f in figs],
                "arrayminus": [(f.estimate or 0.0) - (f.ci_low if f.ci_low is not None else f.estimate or 0.0) for f in figs]}

    fig = go.Figure()
    nulls = [b for b in tested if b.null and b.null.estimate is not None]
    if nulls:
        nf = [b.null for b in nulls if b.null]
        fig.add_trace(go.Scatter(x=[f.estimate for f in nf], y=[y[b.probe] for b in nulls], mode="markers",
                                 name="null", marker={"symbol": "diamond", "color": "#999", "size": 9},
                                 error_x={**bars(nf), "color": "#bbb"}))
    for flag, colour, name in ((False, "#357", "not flagged"), (True, "#c33", "flagged")):
        part = [b for b in tested if b.flagged is flag]
        if part:
            figs = [b.figure for b in part if b.figure]
            fig.add_trace(go.Scatter(
                x=[f.estimate for f in figs], y=[y[b.probe] for b in part], name=name,
                mode="markers+text" if flag else "markers", marker={"color": colour, "size": 9},
                text=[chart_plain(state_words(b)) for b in part] if flag else None, textposition="top center",
                error_x={**bars(figs), "color": colour}))
    rest = [b for b in biases if b not in tested]
    if rest:
        fig.add_trace(go.Scatter(x=[lo] * len(rest), y=[y[b.probe] for b in rest], mode="text", name="not tested",
                                 text=[chart_plain(state_words(b)) for b in rest], textposition="middle right",
                                 textfont={"color": "#888"}))
    fig.update_layout(height=90 + 26 * len(biases), margin={"l": 10, "r": 10, "t": 30, "b": 40},
                      yaxis={"categoryorder": "array", "categoryarray": list(reversed(list(y.values())))},
                      xaxis_title="each bias's figure with its 95% CI; grey diamond: its null")
    return fig


def bias_plot(points: list[tuple[str, str, Figure]], eoi: float) -> go.Figure | None:
    """Estimates with their intervals, the null (red) and the null ± the effect of interest (grey); only
    the metrics that have a null."""
    import plotly.graph_objects as go

    points = [p for p in points if p[2].null_value is not None]  # the report's null of each figure
    if not points:
        return None
    fig = go.Figure()
    for metric in dict.fromkeys(n for _, n, _ in points):
        ps = [(j, m) for j, n, m in points if n == metric]
        fig.add_trace(go.Scatter(
            x=[m.estimate for _, m in ps], y=[chart_plain(j) for j, _ in ps], mode="markers",
            name=chart_plain(info(metric).title),
            error_x={"type": "data", "array": [(m.ci_high or 0.0) - (m.estimate or 0.0) for _, m in ps],
                     "arrayminus": [(m.estimate or 0.0) - (m.ci_low or 0.0) for _, m in ps]}))
    for x in {float(m.null_value) for _, _, m in points if m.null_value is not None}:
        fig.add_vline(x=x, line_dash="dash", line_color="#c33", annotation_text=f"null {x:g}")
        for side in (-1, 1):
            fig.add_vline(x=x + side * eoi, line_dash="dot", line_color="#999")
    fig.update_layout(height=160 + 40 * len({j for j, _, _ in points}),
                      xaxis_title=f"estimate with 95% CI; dotted: null ± effect of interest ({eoi:.0%})",
                      margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig
