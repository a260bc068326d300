"""Labels: binary and categorical judges against the humans.

For a judge of items with declared labels (``judgecal import --task binary|categorical``): its verdict per
criterion, the confusion with the human truth, its rates beside the annotators' measured the same way and
beside a trivial rater, the pass rate corrected by the human labels (binary), and the items where it and the
human consensus part, each with the prompt, the response, the judge's raw answer and the annotators' labels
and rationales. Every figure is read from audit.json through :func:`judgecal.report.labels.label_view`
(the HTML report and the terminal read the same); the items come from the workspace's explorer queries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    chart_plain,
    md_plain,
    plain_text,
    query,
    table,
    titled_report,
)

from judgecal.inert import isolated
from judgecal.report.labels import LabelView, RateRow, criteria_of, is_label_judge, label_view, trusted_words

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from judgecal.audit.schema import AuditReport, Figure, Judge

STATUS = {"aligned": ":green[**aligned**]", "caution": ":orange[**caution**]", "not aligned": ":red[**not aligned**]"}
POOLED = "all criteria together (pooled)"
MAX_LISTED = 200
#: the disagreements read from SQLite (shortest ids first); the label and criterion filters apply to these
MAX_DISAGREEMENTS = 20_000


def _status(s: str) -> str:
    return STATUS.get(s, md_plain(s))


def labels_page() -> None:
    rep = titled_report("Labels: binary and categorical judges against the humans")
    if rep is None:
        return
    judges = rep.judges
    names = [n for n, e in judges.items() if is_label_judge(e)]
    if not names:
        st.info("No judge of binary or categorical items in this audit — produced by `judgecal import --task binary` "
                "(or `--task categorical`) with the judges' verdicts, then `judgecal audit --workspace WS`.")
        return
    judge = st.selectbox("Judge", names, format_func=isolated, key="labels-judge")
    entry = judges[judge]
    crits = criteria_of(entry)
    criterion = None
    if crits:
        options = list(range(len(crits) + 1))
        if st.session_state.get("labels-criterion") not in options:
            st.session_state.pop("labels-criterion", None)
        k = st.selectbox("Criterion", options, key="labels-criterion",
                         format_func=lambda i: isolated(crits[i]) if i < len(crits) else POOLED,
                         help="The judge was read on each criterion apart (one item per criterion); the pooled "
                              "figures mix the criteria.")
        criterion = crits[k] if k < len(crits) else None
    view = label_view(entry, criterion)
    if view is None:
        st.info("This criterion has no label figures in the audit.")
        return
    verdict_section(entry, view, criterion)
    confusion_section(view)
    rates_section(view)
    if view.task == "binary":
        prevalence_section(view)
    disagreements_section(rep, judge, view, crits)


def verdict_section(entry: Judge, view: LabelView, criterion: str | None) -> None:
    with st.container(border=True, key="labels-verdict"):
        if view.criteria:
            st.markdown(md_plain((trusted_words(view) or "").capitalize() + "."))
            table(pd.DataFrame([{"criterion": c.criterion, "verdict": c.status} for c in view.criteria]),
                  "labels-criteria", help={"verdict": "The judge's verdict on that criterion's items alone."})
        where = (f" on {md_plain(criterion)}" if criterion is not None else
                 f" on all criteria together ({md_plain(', '.join(view.pooled))})" if view.pooled else "")
        st.markdown(f"**Verdict{where}:** {_status(view.verdict.status)}")
        if view.verdict.reasons:
            plain_text("\n".join(f"• {r}" for r in view.verdict.reasons))
        labels = (" < " if view.ordinal else ", ").join(view.labels)
        pos = f"; a pass is {view.positive!r}" if view.positive is not None else ""
        st.caption(md_plain(f"{view.task} labels: {labels}{pos} · {view.n_judgments} judgments, "
                            f"{view.n_with_truth} with a human truth, {view.n_invalid} unparsable · the humans: "
                            f"{view.humans_basis}"
                            + "".join(f"; {h.title} {h.value}" for h in view.humans_agreement)))


def confusion_section(view: LabelView) -> None:
    import plotly.graph_objects as go

    st.subheader("Confusion: the human truth (rows) against the judge (columns)")
    conf = view.confusion
    labels, counts, shares = conf.labels, conf.counts, conf.shares
    if not counts:
        st.info("No judgment on an item with a human truth.")
        return
    rows = [{"human truth": lab, **{f"judge: {c}": counts[i][k] for k, c in enumerate(labels)},
             "row total": conf.row_totals[i]} for i, lab in enumerate(labels)]
    c1, c2 = st.columns(2)
    with c1:
        table(pd.DataFrame(rows), "labels-confusion",
              help={"row total": "Judgments on items whose human truth is this row's label."})
        st.caption("Counts of judgments (each sample and order once) on items with a human truth; the heatmap "
                   "beside shows each cell's share of its row (a row's shares are the judge's answers to that truth).")
    text = [[f"{counts[i][k]}<br>({shares[i][k]:.0%})" if shares[i][k] is not None else f"{counts[i][k]}"
             for k in range(len(labels))] for i in range(len(labels))]
    fig = go.Figure(go.Heatmap(z=[[s if s is not None else 0 for s in row] for row in shares],
                               x=[chart_plain(f"judge {c}") for c in labels],
                               y=[chart_plain(f"humans {c}") for c in labels], text=text, texttemplate="%{text}",
                               colorscale="Blues", zmin=0, zmax=1, showscale=False, hoverinfo="skip"))
    fig.update_layout(height=140 + 60 * len(labels), margin={"l": 10, "r": 10, "t": 10, "b": 30},
                      yaxis_autorange="reversed")
    c2.plotly_chart(fig, key="labels-confusion-plot")


def rates_section(view: LabelView) -> None:
    st.subheader("Agreement and rates: the judge beside the annotators and a trivial rater")
    like = view.has_like
    rows = []
    for r in view.rates:
        row = {"figure": r.title, "judge against the consensus (95% CI)": r.judge_text,
               "trivial rater": r.trivial_text}
        if like:
            row |= {"judge with each annotator": r.like_judge_text,
                    "annotators with each other": r.humans_text, "trivial rater, same way": r.trivial_like_text}
        rows.append(row)
    table(pd.DataFrame(rows), "labels-rates", help={
        "trivial rater": f"A rater {view.trivial_words} (named below), against the consensus: recall 1 for "
                         "that label and 0 for the others, balanced accuracy 0.5, κ 0.",
        "judge with each annotator": "The judge's figure pooled over every (annotator, judgment) pair on items with "
                                     "two or more annotators: like with like.",
        "annotators with each other": "The annotators' own figure pooled over every ordered pair of them on the same "
                                      "items: what the judge is read beside.",
        "trivial rater, same way": "The trivial rater measured with each annotator on the same pairs."})
    st.caption(md_plain(
        f"Trivial rater: always {view.trivial_label!r}, the consensus' most frequent label on these items — a "
        "figure it reaches is not alignment. " + ("Like with like: " + view.like_definition + "." if like else
                                                  "The judge with each annotator beside the annotators with each "
                                                  "other: not measured (needs items labelled by two or more "
                                                  "annotators).")))
    with st.expander("What each figure means"):
        plain_text("\n".join(f"{r.title}: {r.definition}" for r in view.rates))
    fig = rates_plot(view)
    if fig is not None:
        st.plotly_chart(fig, key="labels-rates-plot")


def _errors(ms: list[Figure]) -> dict[str, str | list[float]]:
    """Plotly's asymmetric error bars of figures (no bar where the interval was not computed)."""
    def side(m: Figure, v: float | None) -> float:
        return abs(float(v) - float(m.estimate or 0.0)) if isinstance(v, int | float) else 0.0

    return {"type": "data", "array": [side(m, m.ci_high) for m in ms], "arrayminus": [side(m, m.ci_low) for m in ms]}


def _series(r: RateRow, key: str) -> Figure | None:
    """One series' figure of a rate row: the judge against the consensus, with each annotator, or the annotators."""
    return r.judge if key == "judge" else r.like_judge if key == "like_judge" else r.humans


# each series a little above or below its row, so that equal figures do not hide each other
SERIES = (("judge", "judge against the consensus", "#357", "circle", -0.22),
          ("like_judge", "judge with each annotator", "#2a7", "circle-open", -0.07),
          ("humans", "annotators with each other", "#c33", "diamond", 0.08))


def rates_plot(view: LabelView) -> go.Figure | None:
    """Per rate: the judge against the consensus, the judge with each annotator beside the annotators with each
    other (each with its CI), and the trivial rater (grey cross)."""
    import plotly.graph_objects as go

    rates = view.rates
    traces = []
    for key, name, color, symbol, dy in SERIES:
        pts = [(i, m) for i, r in enumerate(rates) if (m := _series(r, key)) is not None and m.estimate is not None]
        if pts:
            traces.append(go.Scatter(x=[m.estimate for _, m in pts], y=[i + dy for i, _ in pts], mode="markers",
                                     name=name, marker={"color": color, "symbol": symbol, "size": 10},
                                     error_x=_errors([m for _, m in pts])))
    triv = [(i, r.trivial) for i, r in enumerate(rates) if r.trivial is not None]
    if triv:
        traces.append(go.Scatter(x=[v for _, v in triv], y=[i + 0.22 for i, _ in triv], mode="markers",
                                 name=chart_plain(f"trivial rater (always {view.trivial_label!r})"),
                                 marker={"color": "#777", "symbol": "x", "size": 10}))
    if not traces:
        return None
    fig = go.Figure(traces)
    low = min([0.0, *(x for t in traces for x in t.x)])  # a κ below chance
    fig.update_layout(xaxis_title="estimate (95% CI)", xaxis_range=[low - 0.02, 1.02], height=160 + 40 * len(rates),
                      yaxis={"tickvals": list(range(len(rates))), "ticktext": [chart_plain(r.title) for r in rates],
                             "autorange": "reversed", "zeroline": False},
                      margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return fig


def prevalence_section(view: LabelView) -> None:
    import plotly.graph_objects as go

    st.subheader(f"Pass rate: the share labelled {md_plain(repr(view.positive))}, corrected by the human labels")
    rows = view.prevalence
    if not rows and view.pooled:
        st.info("Per criterion only: a pass rate over several criteria is the pass rate of nothing. Pick a criterion.")
        return
    if not rows:
        st.info("Not computed: the audit has no pass rate for this judge.")
        return
    table(pd.DataFrame([{"estimate": r.title, "pass rate (95% CI)": r.value, "n": r.n, "how": r.definition}
                        for r in rows]), "labels-prevalence",
          help={"n": "Items the estimate reads: every judged item (judge-reported) or the human-labelled ones."})
    pts = [(i, r.estimate, r.ci_high, r.metric) for i, r in enumerate(rows)
           if r.estimate is not None and r.metric is not None]
    if pts:
        top = max(max(est, hi or 0.0) for _, est, hi, _ in pts) or 1.0
        fig = go.Figure(go.Scatter(x=[est for _, est, _, _ in pts], y=[i for i, _, _, _ in pts], mode="markers",
                                   marker={"size": 11, "color": "#357"}, name="pass rate",
                                   error_x=_errors([m for _, _, _, m in pts])))
        for i, r in enumerate(rows):
            if r.estimate is None:  # an empty row says why, never a missing one
                fig.add_annotation(x=0, y=i, text=chart_plain(r.value), showarrow=False, xanchor="left",
                                   font={"color": "#777"})
        fig.update_layout(xaxis_title="pass rate (95% CI)", height=120 + 50 * len(rows), showlegend=False,
                          xaxis_range=[-0.03 * top, 1.08 * top],
                          yaxis={"tickvals": list(range(len(rows))), "ticktext": [chart_plain(r.title) for r in rows],
                                 "autorange": "reversed", "zeroline": False},
                          margin={"l": 10, "r": 10, "t": 20, "b": 40})
        st.plotly_chart(fig, key="labels-prevalence-plot")
    if view.prevalence_words:
        st.caption(md_plain(view.prevalence_words))
    if view.plan_words:
        with st.container(border=True, key="labels-plan"):
            st.markdown("**How many human labels?** " + md_plain(view.plan_words))


# -- the items where the judge and the humans part -------------------------------------------------------
def _criterion_of(ids: pd.Series) -> pd.Series:
    sets = query("items_repo.label_sets")
    return ids.map(lambda i: getattr(sets.get(i), "criterion", None) or "")


def disagreements_section(rep: AuditReport, judge: str, view: LabelView, crits: list[str]) -> None:
    st.header("Where the judge and the humans part")
    method = rep.settings.consensus
    n, found = query("explorer_repo.explorer_find_items", judge, method, humans=True, limit=MAX_DISAGREEMENTS)
    if not n:
        st.info("The judge's label equals the human consensus on every item it labelled.")
        return
    found = pd.DataFrame({"item_id": found["item_id"], "criterion": _criterion_of(found["item_id"]),
                          "human consensus": found["humans"], "judge's label": found["judge AB"]})
    c1, c2, c3 = st.columns(3)
    humans = c1.multiselect("human label", view.labels, format_func=isolated, key="labels-f-human")
    judged = c2.multiselect("judge's label", sorted(set(found["judge's label"].dropna().astype(str))),
                            key="labels-f-judge")
    where = c3.multiselect("criterion", crits, format_func=isolated, key="labels-f-criterion") if crits else []
    keep = pd.Series(True, index=found.index)
    if humans:
        keep &= found["human consensus"].astype(str).isin(humans)
    if judged:
        keep &= found["judge's label"].astype(str).isin(judged)
    if where:
        keep &= found["criterion"].isin(where)
    shown = found[keep]
    cut = f"; the first {MAX_DISAGREEMENTS:,} (shortest ids first) are filtered" if n > MAX_DISAGREEMENTS else ""
    st.caption(md_plain(f"{n:,} items where the judge's label (its first sample, unmutated prompt) differs from "
                        f"the human consensus ({method}){cut}; {len(shown):,} match the filters"
                        + (f", the first {MAX_LISTED} listed" if len(shown) > MAX_LISTED else "") + "."))
    cols = ["item_id", *(["criterion"] if crits else []), "human consensus", "judge's label"]
    table(shown[cols].head(MAX_LISTED), "labels-disagreements", height=260)
    if shown.empty:
        st.info("No disagreement matches these filters.")
        return
    disagreement_view(shown["item_id"].head(MAX_LISTED).tolist(), judge)


@st.fragment
def disagreement_view(ids: list[str], judge: str) -> None:
    """One disagreement opened: a fragment, so picking another item reruns only this part."""
    item_id = st.selectbox("Open a disagreement", ids, format_func=isolated, key="labels-item")
    item = query("explorer_repo.explorer_item", item_id)
    if item is None:
        st.warning("No item with this id in the workspace.")
        return
    c1, c2 = st.columns(2)
    with c1:
        st.subheader("Prompt")
        plain_text(item.prompt or "(empty prompt)")
    with c2:
        st.subheader("Response")
        for cand in item.candidates:
            if cand.model:
                plain_text(f"model: {cand.model}")
            plain_text(cand.text or "(empty response)")
    st.subheader("The judge's answer, as it wrote it")
    j = query("explorer_repo.explorer_item_judgments", item_id, query("judgments_repo.judge_names"))
    mine = j[j["judge"] == judge] if not j.empty else j
    if mine.empty:
        plain_text("No judgment of this judge on this item.")
    for _, r in mine.head(10).iterrows():
        st.caption(md_plain(f"label {r['verdict']} · sample {r['sample']} · {r['status']}"))
        plain_text(r["raw"] or "(empty)")
    st.subheader("The humans: labels and rationales")
    ann = query("explorer_repo.explorer_item_annotations", item_id)
    if ann.empty:
        plain_text("No human label on this item.")
        return
    wrote = int(ann["rationale"].notna().sum()) if "rationale" in ann else 0
    st.caption(f"{len(ann)} labels; {wrote} with a rationale.")
    table(ann[[c for c in ("annotator", "label", "rationale", "source") if c in ann]], "labels-item-annotations",
          height=min(420, 38 + 35 * len(ann)))
