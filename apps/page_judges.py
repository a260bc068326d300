"""Overview (the trust dashboard), Judges (agreement against references) and Biases (each probe in words)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    audit_caption,
    chart_plain,
    fmt_ci,
    fmt_interval,
    fmt_m,
    fmt_number,
    fmt_p,
    md_plain,
    needs,
    no_audit,
    plain_text,
    report,
    table,
)

import judgecal.audit.probes  # noqa: F401  (the registered probes describe themselves in the catalogue)
from judgecal.audit.profile import profile_counts
from judgecal.audit.schema import (
    AuditReport,
    BiasEntry,
    BiasFigure,
    Breakdown,
    Comparisons,
    Figure,
    GroupAccuracy,
    Humans,
    Judge,
    Reason,
)
from judgecal.catalogue import METRICS, ProbeInfo, flag_info, info, probe_groups
from judgecal.inert import isolated
from judgecal.report.bias_profile import profile_rows, state_words
from judgecal.report.summary import COLUMNS as SUMMARY_COLUMNS
from judgecal.report.summary import NOTE as SUMMARY_NOTE
from judgecal.report.summary import SummaryRow, more_words, summary_rows
from judgecal.report.table import Row, at

if TYPE_CHECKING:
    import plotly.graph_objects as go

STATUS_WORDS = {"aligned": ":green[**aligned**]", "caution": ":orange[**caution**]",
                "not aligned": ":red[**not aligned**]"}


NO_VERDICT = ["not computed in this audit: re-run `judgecal audit` to see it"]


def verdict_of(entry: Judge) -> tuple[str, list[str], list[Reason]]:
    """The audit's verdict of a judge as the report wrote it (status, reasons, structured reasons); an audit
    written before verdicts existed has none, and the explorer says so rather than judging the judge itself."""
    v = entry.verdict
    return (v.status, list(v.reasons), list(v.details)) if v else ("no verdict", list(NO_VERDICT), [])


def stability_score(name: str, entry: Judge) -> str:
    s = entry.stability.score if entry.stability else None
    if not s:
        return "not measured"
    return f"{fmt_ci(s.score, s.ci)} ({s.figure})"


def _verdict_kappa(j: Judge) -> str:
    """The κ the judge's verdict reads: a pointwise judge's on an ordinal scale is quadratic-weighted."""
    name = j.pointwise.kappa if j.pointwise else "cohen_kappa"
    value = fmt_m(j.figure(name))
    return f"{value}, weighted" if name == "weighted_kappa" and j.figure(name) else value


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


def trust_table(rep: AuditReport) -> pd.DataFrame:
    rows = []
    for name, j in rep.judges.items():
        status, reasons, _ = verdict_of(j)
        sa = at(rep.models.system_alignment, name) if rep.models else None
        align = sa.spearman if sa else None
        usage = j.usage  # cost and latency per 1,000 judgments
        lat = usage.latency_s_mean
        rows.append({"judge": name, "verdict": status,
                     RANKING: fmt_m(align) if align else "not measured",
                     "Stability Score": stability_score(name, j),
                     **like_cells(j),  # what the verdict reads, first; the consensus figure beside it
                     KAPPA_CONSENSUS: _verdict_kappa(j),
                     ACCURACY_CONSENSUS: fmt_m(j.figure("accuracy")),
                     "cost per 1,000 (USD)": fmt_number(usage.cost_usd_per_1k),
                     "time per 1,000 (s)": fmt_number(None if lat is None else lat * 1000, 1),
                     "judgments": int(j.n_judgments), "reasons": "; ".join(reasons) or "none"})
    h = rep.humans
    if h is not None and h.to_json():
        several = (h.n_annotators or 0) > 1
        rows.append({"judge": "humans (reference)", "verdict": "reference",
                     RANKING: "1 (by definition)", "Stability Score": "not measured",
                     LIKE_KAPPA: "in each judge's row", LIKE_HUMANS: "in each judge's row",
                     KAPPA_CONSENSUS: f"{fmt_m(h.fleiss_kappa)} {ANOTHER_FLEISS}" if several
                     else "not measured (one annotator)",
                     ACCURACY_CONSENSUS: f"{fmt_m(h.loo_accuracy)} {ANOTHER_LOO}" if several
                     else "not measured (one annotator)",
                     "cost per 1,000 (USD)": "n/a", "time per 1,000 (s)": "n/a", "judgments": int(h.n_items or 0),
                     "reasons": f"{h.n_annotators} annotators on {h.n_items} items; κ is their Fleiss' κ, "
                                "accuracy an annotator's agreement with the others (leave-one-out)"})
    return pd.DataFrame(rows)


OVERVIEW_HELP = {
    "verdict": "aligned / caution / not aligned, from the thresholds in thresholds.yaml (see the reasons).",
    RANKING: "Spearman correlation between the judge's and the humans' model win rates (whether it ranks the "
             "candidate models as people do), with its bootstrap interval; not the verdict, which reads the "
             "judge's agreement item by item.",
    "Stability Score": "The lowest stability figure of the judge's latest stability run (1 = the same answers "
                       "under every variant).",
    "time per 1,000 (s)": "Mean call latency × 1,000: seconds for 1,000 judgments made one after another.",
}


def _figures_md(row: SummaryRow) -> str:
    """A summary row's figures as a markdown table, every cell made literal text."""
    head = "| | " + " | ".join(md_plain(row.headers[c]) for c in SUMMARY_COLUMNS) + " |"
    rule = "|" + "---|" * (len(SUMMARY_COLUMNS) + 1)
    body = ["| " + " | ".join([f"**{md_plain(f['title'])}**", *(md_plain(f[c]) for c in SUMMARY_COLUMNS)]) + " |"
            for f in row.figures]
    return "\n".join([head, rule, *body])


def summary_card(k: int, row: SummaryRow, reasons: list[str]) -> None:
    """One judge of page one of the trust report (:func:`judgecal.report.summary.summary_rows`), as there."""
    with st.container(border=True, key=f"summary-{k}"):
        st.markdown(f"**{md_plain(row.judge)}** — {STATUS_WORDS.get(row.status, md_plain(row.status))} "
                    f" \n{md_plain(row.basis)}")
        st.markdown(f"**Most important:** {md_plain(row.reason)}{md_plain(more_words(row))}")
        if row.figures:
            st.markdown(_figures_md(row))
        if row.stability:
            plain_text(row.stability)
        st.markdown(f"**Not tested:** {md_plain(row.not_tested)}")
        if len(reasons) > 1:
            with st.expander(f"Every reason ({len(reasons)})"):
                plain_text("\n".join(f"• {r}" for r in reasons))


def overview() -> None:
    from judgecal.apps.page_overview import comparison_section

    st.title("Overview: which judge can replace people?")
    rep = report()
    if rep is None:
        no_audit()
        return
    audit_caption(rep)
    order = [r["index"] for r in comparison_section(rep)]  # the lead's decision first, on the first screen
    # then page one of the trust report, in its words, each judge in the comparison's order
    st.subheader("Each judge: its verdict and why")
    rows = summary_rows(rep)
    for k in order:
        summary_card(k, rows[k], verdict_of(rep.judges[rows[k].judge])[1])
    st.caption(md_plain(SUMMARY_NOTE))
    st.subheader("Every figure of each judge")
    table(trust_table(rep), "overview", help=OVERVIEW_HELP,
          metrics={KAPPA_CONSENSUS: "cohen_kappa", ACCURACY_CONSENSUS: "accuracy"})
    st.caption(LIKE_CAPTION)
    if rep.humans is None:
        st.info("This audit predates the humans' reference section: re-run `judgecal audit` to see it here.")


# -- Judges --------------------------------------------------------------------------------------------
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

    st.title("Judges: agreement with the humans")
    rep = report()
    if rep is None:
        no_audit()
        return
    audit_caption(rep)
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


# -- Biases -----------------------------------------------------------------------------------------------
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
    st.title("Biases: each probe in plain words")
    rep = report()
    if rep is None:
        no_audit()
        return
    audit_caption(rep)
    from judgecal.apps.page_overview import flag_text

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
