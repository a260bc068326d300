"""The explorer's Over time page: a judge's agreement with the human truth period by period with its interval, the
baseline band, the drift boundary and the period where drift was declared. Every figure is
:func:`judgecal.audit.monitor.monitor`'s for the workspace (cached per state); this page only draws and words it."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    Stamp,
    chart_plain,
    fmt_interval,
    fmt_number,
    md_plain,
    report,
    stamp,
    table,
    ws_path,
)

from judgecal.audit.schema import MonitorSeries

BY_WORDS = {"period": "period (as the records name it)", "day": "day", "week": "ISO week", "month": "month"}
HELP = {
    "agreement (95% CI)": "Share of the period's items where the judge's verdict equals the truth, Wilson interval.",
    "κ": "Cohen's κ of the judge with the truth on the period's items (0 = chance, 1 = perfect).",
    "annotators": "The annotators' leave-one-out accuracy on the period's items: the humans' own level.",
    "since the baseline (anytime-valid CI)": "The agreement over every item since the baseline period up to this "
                                             "one, with its confidence sequence: valid however often one looks.",
    "drop (anytime-valid CI)": "The baseline's agreement minus the agreement since it.",
    "decision": "DRIFT: the agreement since the baseline lies below the baseline's (its upper bound under the "
                "baseline band's lower edge, the drift boundary) and the drop can reach the effect of interest.",
}


@st.cache_resource(max_entries=8, show_spinner=False)
def _choices(path: str, key: Stamp) -> tuple[list[str], list[str]]:
    """The groupings the records allow and the judges (typed store queries), per state."""
    from judgecal.audit.monitor import by_choices
    from judgecal.data.store import Workspace

    ws = Workspace(path, create=False)
    try:
        return by_choices(ws), ws.judgments_repo.judges()
    finally:
        ws.close()


def by_choices() -> list[str]:
    """``by`` choices of this workspace (none: no record carries a time or a period)."""
    p = ws_path()
    return _choices(str(p), stamp(p))[0]


@st.cache_data(max_entries=32, show_spinner="Following the judge over its periods...")
def _series(path: str, key: Stamp, judge: str, by: str, consensus: str) -> MonitorSeries | str:
    """:func:`judgecal.audit.monitor.monitor`'s result with ``judgecal monitor``'s defaults (the workspace's
    thresholds), typed, or its one-line reason when it cannot run, per state."""
    from judgecal.audit.monitor import MonitorError, monitor, settings
    from judgecal.data.sources import SourceError
    from judgecal.data.store import Workspace

    ws = Workspace(path, create=False)
    try:
        alpha, effect = settings(ws)
        return MonitorSeries.model_validate(monitor(ws, judge, by=by, consensus=consensus, alpha=alpha, effect=effect))
    except (MonitorError, SourceError) as exc:
        return str(exc)
    finally:
        ws.close()


def rows(series: MonitorSeries) -> pd.DataFrame:
    """The table: one row per period, as the monitor gives it (numbers formatted, nothing computed)."""
    out = []
    for r in series.periods:
        after = r.role == "after"
        out.append({
            "period": r.period, "role": r.role, "n": r.n,
            "agreement (95% CI)": fmt_interval(r.agreement, r.agreement_low, r.agreement_high),
            "κ": fmt_number(r.kappa), "annotators": fmt_number(r.humans.estimate) if r.humans else "n/a",
            "invalid rate": fmt_number(r.invalid_rate),
            "items since the baseline": str(r.since_baseline) if after else "",
            "window from": r.window_from or "" if after else "",
            "agreement in the window (anytime-valid CI)": fmt_interval(r.window_agreement, r.window_low,
                                                                       r.window_high) if after else "",
            "drop (anytime-valid CI)": fmt_interval(r.drop, r.drop_low, r.drop_high) if after else "",
            "decision": ("DRIFT" if r.drift else "no drift") if after else r.role})
    return pd.DataFrame(out)


def figure(series: MonitorSeries) -> Any:
    """The chart: each period's agreement and interval, the agreement of the window that gives the most
    evidence of a drop with its sequence, the baseline band, the boundary (its lower edge) and the period where drift was declared."""
    import plotly.graph_objects as go

    periods = series.periods
    x = [chart_plain(r.period) for r in periods]
    b = series.baseline_agreement
    fig = go.Figure()
    fig.add_hrect(y0=b.low, y1=b.high, fillcolor="#4c78a8", opacity=0.15, line_width=0)
    fig.add_hline(y=b.low, line_dash="dash", line_color="#b33",
                  annotation_text="drift boundary (the baseline's lower bound)", annotation_position="bottom right")
    fig.add_trace(go.Scatter(
        x=x, y=[r.agreement for r in periods], mode="markers", name="agreement in the period",
        error_y={"type": "data", "symmetric": False, "array": [r.agreement_high - r.agreement for r in periods],
                 "arrayminus": [r.agreement - r.agreement_low for r in periods]}))
    after = [r for r in periods if r.role == "after"]
    if after:
        ax = [chart_plain(r.period) for r in after]
        fig.add_trace(go.Scatter(x=ax, y=[r.window_high for r in after], mode="lines", line={"width": 0},
                                 showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(x=ax, y=[r.window_low for r in after], mode="lines", line={"width": 0},
                                 fill="tonexty", fillcolor="rgba(245,133,24,0.2)", name="anytime-valid interval"))
        fig.add_trace(go.Scatter(x=ax, y=[r.window_agreement for r in after], mode="lines+markers",
                                 name="agreement in the window (from the period it names on)", line={"color": "#f58518"}))
    if series.first_drift is not None:  # a category axis places a line by the category's index
        at = [r.period for r in periods].index(series.first_drift)
        fig.add_vline(x=at, line_color="#b33")
        fig.add_annotation(x=at, y=1.0, yref="paper", text=chart_plain(f"drift declared: {series.first_drift}"),
                           showarrow=False, xanchor="left", yanchor="bottom")
    fig.update_layout(height=420, margin={"t": 30, "b": 40}, yaxis={"title": "agreement with the truth",
                      "range": [0, 1.02]}, xaxis={"title": BY_WORDS[series.by], "type": "category"},
                      legend={"orientation": "h", "y": -0.2})
    return fig


def decision_line(series: MonitorSeries) -> str:
    """The decision in one sentence (markdown, names made literal)."""
    b = series.baseline_agreement
    base = f"baseline {md_plain(series.baseline)}: {fmt_interval(b.estimate, b.low, b.high)}, {b.n} items"
    if series.first_drift is not None:
        return f"**Drift declared at {md_plain(series.first_drift)}** ({base})."
    after = sum(r.role == "after" for r in series.periods)
    return f"**No drift** over {after} period(s) since the baseline ({base})."


def over_time_page() -> None:
    st.title("Over time: has the judge drifted?")
    p = ws_path()
    choices, judges = _choices(str(p), stamp(p))
    if not choices:
        st.info("No item or verdict carries a time or a period — give the records one and import them "
                "(docs/how-to/monitor.md), then `judgecal monitor --workspace WS --by period`.")
        return
    c1, c2 = st.columns([3, 1])
    judge = c1.selectbox("Judge", judges, key="ot-judge")
    by = c2.selectbox("Group by", choices, index=choices.index("week") if "week" in choices else 0,
                      format_func=lambda b: BY_WORDS[b], key="ot-by")  # judgecal monitor's default first
    if judge is None:
        st.info("No judge in this workspace yet.")
        return
    rep = report()
    consensus = rep.settings.consensus if rep is not None else "ds"
    series = _series(str(p), stamp(p), judge, by, consensus)
    if isinstance(series, str):
        st.warning(md_plain(series))
        return
    with st.container(key="ot-decision"):
        st.markdown(decision_line(series))
    st.caption(md_plain(f"Truth: consensus {series.consensus}; effect of interest {series.effect_of_interest:.2f}, "
                        f"alpha {series.alpha:.2f}. Blue band: the baseline's interval. Rule: {series.method}."))
    if series.items_without_period:
        st.caption(f"{series.items_without_period} item(s) without a {'period' if by == 'period' else 'time'} "
                   "left out.")
    st.plotly_chart(figure(series), key="ot-plot")
    table(rows(series), "over-time", help=HELP)
