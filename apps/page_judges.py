"""The Judges page: each judge's agreement with the humans beside the annotators' own (like with like), the
pointwise and per-category figures, paired comparisons between judges, and the verdict's confidence; the verdict
helpers the Overview and Biases pages share."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    chart_plain,
    fmt_interval,
    fmt_m,
    fmt_number,
    fmt_p,
    md_plain,
    needs,
    plain_text,
    table,
    titled_report,
)

import judgecal.audit.probes  # noqa: F401  (the registered probes describe themselves in the catalogue)
from judgecal.audit.schema import (
    AuditReport,
    Breakdown,
    Comparisons,
    Figure,
    GroupAccuracy,
    Humans,
    Judge,
    Reason,
)
from judgecal.inert import isolated
from judgecal.report.table import Row, at

if TYPE_CHECKING:
    import plotly.graph_objects as go


NO_VERDICT = ["not computed in this audit: re-run `judgecal audit` to see it"]


def verdict_of(entry: Judge) -> tuple[str, list[str], list[Reason]]:
    """The audit's verdict of a judge as the report wrote it (status, reasons, structured reasons); an audit
    written before verdicts existed has none, and the explorer says so rather than judging the judge itself."""
    v = entry.verdict
    return (v.status, list(v.reasons), list(v.details)) if v else ("no verdict", list(NO_VERDICT), [])


def humans_row(h: Humans) -> Row:
    """The Judges page's reference row: the annotators' Fleiss' κ and leave-one-out accuracy, or "not
    measured" when one annotator labelled each item (nobody to agree with, where it read "undefined")."""
    several = (h.n_annotators or 0) > 1
    return {"judge": "humans with each other",
            ACCURACY_CONSENSUS: f"{fmt_m(h.loo_accuracy)} {ANOTHER_LOO}" if several else "not measured (one annotator)",
            "macro F1": "n/a",
            KAPPA_CONSENSUS: f"{fmt_m(h.fleiss_kappa)} {ANOTHER_FLEISS}" if several else "not measured (one annotator)",
            "chance accuracy": "n/a", "items with a human label": int(h.n_items or 0)}


LIKE_KAPPA, LIKE_HUMANS = "κ with each annotator", "annotators with each other (same items, same way)"
KAPPA_CONSENSUS, ACCURACY_CONSENSUS = "κ with the consensus", "accuracy against the consensus"
RANKING = "model ranking agreement (Spearman ρ)"
ANOTHER_FLEISS = "(Fleiss' κ among them: another definition than a judge's κ with the consensus)"
ANOTHER_LOO = "(leave-one-out: another definition than a judge's accuracy against the consensus)"
LIKE_CAPTION = ("Like with like: a judge's κ with each annotator is read beside the annotators' κ with each other, "
                "measured the same way (pairwise mean Cohen's κ) on the same items. κ with the consensus is another "
                "definition: a consensus of several people is less noisy than one person, so it is not compared with "
                "the humans' Fleiss' κ.")


def like_cells(j: Judge) -> dict[str, str]:
    """The like-for-like pair of a judge: its mean κ with each annotator and the annotators' with each other
    on the same items (audit.json ``reference.like_for_like.pairwise``), or why it is not measured."""
    from judgecal.report.view import like_reference

    like = like_reference(j)
    if like is None:
        why = "n/a (pointwise)" if j.kind == "pointwise" else "not measured (needs two annotators)"
        return {LIKE_KAPPA: why, LIKE_HUMANS: why}
    return {LIKE_KAPPA: like.judge_kappa, LIKE_HUMANS: f"{like.kappa} ({like.n_items} items)"}


def _estimated(m: Figure | None) -> Figure | None:
    return m if m is not None and m.estimate is not None else None


def _errors(ms: list[Figure]) -> dict[str, str | list[float]]:
    """Plotly's horizontal error bars of figures that have an estimate (no interval: none drawn)."""
    return {"type": "data", "array": [(m.ci_high or m.estimate or 0.0) - (m.estimate or 0.0) for m in ms],
            "arrayminus": [(m.estimate or 0.0) - (m.ci_low or m.estimate or 0.0) for m in ms]}


def like_plot(rep: AuditReport) -> go.Figure | None:
    """Each judge's κ with each annotator (dot, CI) beside the annotators' κ with each other on its items
    (red diamond, CI): the reference is per judge, so it sits on the judge's row, never as one shared line."""
    import plotly.graph_objects as go

    from judgecal.report.view import like_definition

    names, judge, humans = [], [], []
    for name, j in rep.judges.items():
        pw = like_definition(j)
        jk = _estimated(pw.judge.kappa) if pw and pw.judge else None
        hk = _estimated(pw.humans.kappa) if pw and pw.humans else None
        if jk is not None and hk is not None:
            names.append(chart_plain(name))
            judge.append(jk)
            humans.append(hk)
    if not names:
        return None

    def trace(ms: list[Figure], label: str, color: str, symbol: str) -> go.Scatter:
        return go.Scatter(x=[m.estimate for m in ms], y=names, mode="markers", name=label,
                          marker={"color": color, "symbol": symbol, "size": 10}, error_x=_errors(ms))

    fig = go.Figure([trace(judge, "judge with each annotator", "#357", "circle"),
                     trace(humans, "annotators with each other (same items)", "#c33", "diamond")])
    fig.add_vline(x=0.0, line_dash="dot", line_color="#888", annotation_text="chance")
    fig.update_layout(xaxis_title="mean Cohen's κ, pairwise (95% CI)", height=160 + 40 * len(names),
                      margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig


def agreement_plot(rows: list[tuple[str, Figure | None]], ref: dict[str, float | None], title: str) -> go.Figure:
    import plotly.graph_objects as go

    shown = [(chart_plain(n), m) for n, m in rows if m is not None and m.estimate is not None]
    ms = [m for _, m in shown]
    fig = go.Figure(go.Scatter(x=[m.estimate for m in ms], y=[n for n, _ in shown], mode="markers", name="judge",
                               error_x=_errors(ms)))
    names = [n for n, _ in shown]
    for (label, x), color in zip(ref.items(), ("#2a7", "#c33", "#888"), strict=False):
        if x is not None and np.isfinite(x):
            fig.add_vline(x=x, line_dash="dash", line_color=color, annotation_text=label)
    fig.update_layout(xaxis_title=title, height=140 + 40 * len(names), margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig


POINTWISE_COLUMNS = {"accuracy": "accuracy", "cohen_kappa": "κ", "weighted_kappa": "weighted κ",
                     "spearman_rho": "Spearman's ρ", "mae": "mean abs. error"}


def pointwise_table(rep: AuditReport) -> pd.DataFrame:
    """One row per pointwise judge (audit.json's ``pointwise`` section) and, under it, the annotators' own
    agreement on its items when several labelled them ("not measured" otherwise)."""
    rows = []
    for name, j in rep.judges.items():
        pw = j.pointwise
        if pw is None:
            continue
        scale = pw.scale
        sep = " < " if scale and scale.kind == "ordinal" else ", "  # a nominal scale's labels have no order
        kind = f"{(scale.kind or '') if scale else ''}: {sep.join(scale.levels if scale else [])}"
        rows.append({"judge": name, "scale": kind, **{col: _cell(j.metrics, m) for m, col in POINTWISE_COLUMNS.items()}})
        hum = pw.humans if pw.humans is not None and pw.humans.to_json() else None
        figs = hum.figures() if hum else {}  # the annotators' figures by metric name
        rows.append({"judge": f"  annotators on its items ({hum.n_items if hum.n_items is not None else 0} items)"
                     if hum else "  annotators on its items: not measured (one label per item)", "scale": kind,
                     **{col: _cell(figs, m) for m, col in POINTWISE_COLUMNS.items()}})
    return pd.DataFrame(rows)


def _cell(metrics: dict[str, Figure], name: str) -> str:
    """A pointwise figure: ``n/a`` where the scale has none (a nominal scale's ρ), ``undefined`` where it
    is 0/0 on these items (every label on one level), else its estimate and CI."""
    m = at(metrics, name)
    return fmt_m(m) if m else "n/a"


def judges_page() -> None:

    rep = titled_report("Judges: agreement with the humans")
    if rep is None:
        return
    h = rep.humans
    chance = rep.consensus.chance_accuracy  # Σ p_k² of the truth's labels, the audit's
    rows = []
    for name, j in rep.judges.items():
        scores = j.kind == "pointwise"  # no A/B/tie labels to average an F1 over
        rows.append({"judge": name, ACCURACY_CONSENSUS: fmt_m(j.figure("accuracy")),
                     "macro F1": "n/a (pointwise)" if scores else fmt_m(j.figure("macro_f1")),
                     KAPPA_CONSENSUS: fmt_m(j.figure("cohen_kappa")),
                     "chance accuracy": fmt_number((j.reference.chance_accuracy if j.reference else None) or chance),
                     **like_cells(j),
                     "items with a human label": int(j.n_items_with_consensus)})
    if h is not None and h.to_json():
        rows.append(humans_row(h))
    table(pd.DataFrame(rows), "judges-agreement",
          metrics={ACCURACY_CONSENSUS: "accuracy", "macro F1": "macro_f1", KAPPA_CONSENSUS: "cohen_kappa"},
          help={"chance accuracy": "Accuracy of a rater drawing labels at random with the humans' label shares "
                                   "(Σ p_k²)."})
    chance = next((j.reference.chance_accuracy for j in rep.judges.values() if j.reference and j.reference.to_json()),
                  chance)
    st.subheader("Like with like: each judge beside the annotators, measured the same way")
    st.caption(LIKE_CAPTION)
    fig = like_plot(rep)
    if fig is not None:
        st.plotly_chart(fig, key="like-plot")
    else:
        st.caption("Not measured: needs items labelled by two annotators (re-run `judgecal audit` on such labels).")
    c1, c2 = st.columns(2)
    c1.plotly_chart(agreement_plot([(n, j.figure("accuracy")) for n, j in rep.judges.items()],
                                   {"chance": chance}, "accuracy against the consensus (95% CI)"), key="acc-plot")
    c2.plotly_chart(agreement_plot([(n, j.figure("cohen_kappa")) for n, j in rep.judges.items()],
                                   {"chance": 0.0}, "Cohen's κ with the consensus (95% CI)"), key="kappa-plot")
    st.caption("Against the consensus: no humans' line here, because the humans' Fleiss' κ and leave-one-out "
               "accuracy are other definitions; the like-for-like comparison is the plot above.")
    pointwise = pointwise_table(rep)
    if not pointwise.empty:
        st.header("Pointwise judges: labels and scores on the humans' scale")
        table(pointwise, "judges-pointwise", metrics={c: n for n, c in POINTWISE_COLUMNS.items()})
        if any(j.labels is not None and j.labels.labels for j in rep.judges.values()):
            st.caption("Binary and categorical judges: their confusion, TPR/TNR or each label's recall beside the "
                       "annotators and a trivial rater, the corrected pass rate and the items where they part from "
                       "the humans are on the Labels page.")

    st.header("Judge against the humans, item by item")
    # the confusion, the breakdowns and the paired difference read A/B/tie verdicts: a pointwise judge's
    # score would be compared with the humans' labels as text, every item "wrong"
    judges = [n for n, j in rep.judges.items() if j.kind != "pointwise"]
    if not judges:
        st.info("Every judge here is pointwise: its agreement on the humans' scale is in the table above; "
                "the item-by-item confusion, the breakdowns and the paired comparison are for judges of pairs.")
        return
    if not any(rep.judges[n].breakdown for n in judges):
        needs("This audit has no item-by-item section (no human consensus on the pairs, or an audit written "
              "before it existed)", "judgecal audit --workspace WS")
        return
    st.caption("One verdict per item: the verdict both orders agree on, a tie when they disagree; an unparsable "
               f"answer counts as {'a tie' if rep.settings.invalid_as == 'tie' else 'invalid'}"
               " (as the audit was told to count it).")
    pick = st.selectbox("Judge", judges, format_func=isolated, key="conf-judge")
    confusion_section(rep.judges[pick].breakdown)
    confidence_section(rep, pick)
    comparison_section(rep, judges)


def confusion_section(b: Breakdown | None) -> None:
    """The judge's confusion with the humans and its accuracy by category and model (audit.json ``breakdown``)."""
    import plotly.graph_objects as go

    if b is None:
        st.info("No item of this judge has a human label.")
        return
    humans, judge = b.humans, b.judge
    shown = pd.DataFrame(b.confusion, columns=[f"judge said {c}" for c in judge])
    shown.insert(0, "humans said", humans)
    c1, c2 = st.columns(2)
    with c1:
        table(shown, "judges-confusion")
    c2.plotly_chart(go.Figure(go.Heatmap(z=b.confusion, x=[f"judge {c}" for c in judge],
                                         y=[f"humans {c}" for c in humans], colorscale="Blues",
                                         texttemplate="%{z}", showscale=False)).update_layout(
        height=300, margin={"l": 10, "r": 10, "t": 10, "b": 30}, yaxis_autorange="reversed"), key="conf-plot")

    st.subheader("Where it agrees: by category and by candidate model")
    col = "accuracy (Wilson 95% CI)"

    def groups(rows: list[GroupAccuracy], name: str) -> pd.DataFrame:
        return pd.DataFrame([{name: g.value, "items": g.n, col: fmt_m(g.accuracy)} for g in rows],
                            columns=[name, "items", col])

    c1, c2 = st.columns(2)
    with c1:
        if b.by_category:
            table(groups(b.by_category, "category"), "judges-by-category")
        else:
            st.info("The items carry no category (metadata.category).")
    with c2:
        if b.by_model:
            table(groups(b.by_model, "model"), "judges-by-model")
        else:
            st.info("The items do not name their candidates' models.")


def comparison_section(rep: AuditReport, judges: list[str]) -> None:
    """Is one judge significantly better than another (audit.json ``comparisons``, a paired item bootstrap)?"""
    st.subheader("Is one judge significantly better than another?")
    if len(judges) < 2:
        st.info("One judge only.")
        return
    comp = rep.comparisons
    c1, c2 = st.columns(2)
    x = c1.selectbox("Judge X", judges, index=0, format_func=isolated, key="pair-x")
    y = c2.selectbox("Judge Y", judges, index=1, format_func=isolated, key="pair-y")
    res = paired_row(comp, x, y)
    if res is None:
        st.info(md_plain((comp.note if comp else None) or ("The same judge twice." if x == y else
                                                           "The two judges share no item with a human label.")))
        return
    table(pd.DataFrame([res]), "judges-paired",
          help={"accuracy X − Y": "Difference in item-level accuracy on the items both judged, with a paired item "
                                  "bootstrap interval (the same resampled items for both judges).",
                "p (two-sided)": "Bootstrap p-value of 'no difference'."})
    plain_text(res["in words"])


def paired_row(comp: Comparisons | None, x: str, y: str) -> Row | None:
    """The report's comparison of X and Y, turned so that it reads X − Y (a pair is stored once)."""
    pair = next((p for p in (comp.pairs if comp else []) if {p.x, p.y} == {x, y} and x != y), None)
    if pair is None or not pair.n_items or pair.difference is None:
        return None
    flip = pair.x != x
    d = pair.difference

    def turned(v: float | None) -> float | None:
        return None if v is None else -v

    est, lo, hi = ((turned(d.estimate), turned(d.ci_high), turned(d.ci_low)) if flip
                   else (d.estimate, d.ci_low, d.ci_high))
    sig = bool(pair.significant)
    est = est or 0.0
    words = (f"{x} is {'significantly ' if sig else 'not significantly '}"
             f"{'better' if est > 0 else 'worse' if est < 0 else 'different'} than {y} on these {pair.n_items} items"
             + ("" if sig else " (the interval includes 0)"))
    acc_x, acc_y = (pair.accuracy_y, pair.accuracy_x) if flip else (pair.accuracy_x, pair.accuracy_y)
    return {"judge X": x, "judge Y": y, "items": int(pair.n_items), "accuracy X": fmt_number(acc_x),
            "accuracy Y": fmt_number(acc_y), "accuracy X − Y": fmt_interval(est, lo, hi),
            "p (two-sided)": fmt_p(pair.p), "in words": words}


def _yes(v: Any) -> str:
    return "n/a" if v is None else ("yes" if v else "no")


def confidence_section(rep: AuditReport, pick: str) -> None:
    """Could the judge replace an annotator (alternative annotator test), and is its confidence calibrated
    and usable to keep only the verdicts it is sure of (selective evaluation)?"""
    import plotly.graph_objects as go

    st.subheader("Could it replace an annotator? Is its confidence calibrated?")
    rows = []
    for name, j in rep.judges.items():
        alt, cal, sel = j.replace_annotator, j.calibration, j.selective
        rows.append({
            "judge": name,
            "replaces an annotator": _yes(alt.passed) if alt else "not tested (needs annotators' labels)",
            "winning rate": fmt_number(alt.winning_rate) if alt else "n/a",
            "confidence": (cal.confidence if cal else None) or "none recorded",
            "ECE (95% CI)": fmt_m(cal.ece) if cal else "not tested",
            "mean confidence": fmt_number(cal.mean_confidence) if cal else "n/a",
            "agreement": fmt_number(cal.agreement) if cal else "n/a",
            "selective: feasible": _yes(sel.feasible) if sel else "not tested",
            "kept (coverage)": fmt_number(sel.coverage) if sel else "n/a",
            "escalated to people": sel.n_escalated if sel else None})
    table(pd.DataFrame(rows), "judges-confidence", help={
        "replaces an annotator": "Alternative annotator test: the judge agrees with the others at least as often "
                                 "as the annotator it would replace (within ε), for enough annotators (BY-corrected).",
        "winning rate": "Share of annotators the judge beats in the alternative annotator test.",
        "ECE (95% CI)": "Expected calibration error: mean gap between stated confidence and agreement with the "
                        "humans (0 = calibrated).",
        "selective: feasible": "Whether a confidence threshold keeps verdicts that agree with the humans at the "
                               "target rate with the stated risk.",
        "kept (coverage)": "Share of items the judge may decide alone at that threshold."})
    cal = rep.judges[pick].calibration if pick in rep.judges else None
    bins = [b for b in (cal.reliability if cal else []) if b.n and b.confidence is not None]
    if bins:
        fig = go.Figure(go.Scatter(x=[b.confidence for b in bins], y=[b.accuracy for b in bins],
                                   mode="markers+lines", name="judge",
                                   text=[f"n = {b.n}" for b in bins]))
        fig.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line={"dash": "dash", "color": "#888"})
        fig.update_layout(xaxis_title="stated confidence", yaxis_title="agreement with the humans",
                          xaxis_range=[0, 1], yaxis_range=[0, 1], height=320,
                          margin={"l": 10, "r": 10, "t": 10, "b": 40})
        st.caption("Reliability of the judge chosen above (dashed: perfectly calibrated).")
        st.plotly_chart(fig, key="reliability-plot")
