"""Models (win rates, ranking, corrected results), Stability and Spans."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    Stamp,
    audit_caption,
    chart_plain,
    fmt_ci,
    fmt_interval,
    fmt_m,
    fmt_number,
    fmt_p,
    needs,
    plain_text,
    query,
    report,
    stamp,
    table,
    titled_report,
    ws_path,
)

from judgecal.audit.schema import Strength, WinRate
from judgecal.catalogue import info
from judgecal.inert import isolated
from judgecal.report.table import Row, at


def _wr(row: WinRate) -> str:
    return fmt_interval(row.estimate, row.ci_low, row.ci_high)


def _bt(row: Strength) -> str:
    """A Bradley–Terry row of audit.json (its strength is ``score``) with its interval and rank range."""
    text = fmt_interval(row.score, row.ci_low, row.ci_high)
    lo, hi = row.rank_low, row.rank_high
    return text + (f", rank {lo}–{hi}" if lo is not None and hi is not None and lo != hi else "")


def models_page() -> None:
    import plotly.graph_objects as go

    rep = titled_report("Models: which model is better, by each rater", caption=False)
    if rep is None:
        return
    m = rep.models
    if m is None or not m.to_json():
        needs("No model-level results yet", "judgecal audit --workspace WS (items must name their candidates' models)")
        return
    audit_caption(rep)
    raters = list(m.raters or m.win_rate)
    if not raters:
        st.info("No rater has verdicts on items naming two different models.")
        return
    rater = st.selectbox("Rater", raters, format_func=isolated, key="models-rater")
    st.caption("humans = the human consensus; a judge's item verdict is swap-debiased when both orders were judged.")
    wr = at(m.win_rate, rater) or {}
    bt = at(m.bradley_terry, rater) or {}
    rows = []
    for rank, model in enumerate(at(m.ranking, rater) or list(wr), 1):
        w, b = at(wr, model), at(bt, model)
        rows.append({"rank": rank, "model": model, "win rate (95% CI)": _wr(w) if w and w.to_json() else "n/a",
                     "comparisons": w.n if w else None,
                     "Bradley–Terry (95% CI)": _bt(b) if b and b.to_json() else "n/a"})
    st.subheader("Ranking")
    table(pd.DataFrame(rows), "models-ranking",
          help={"win rate (95% CI)": "(wins + ties/2) / comparisons, item-bootstrap interval.",
                "Bradley–Terry (95% CI)": "Bradley–Terry strength fitted to every comparison (evalica's iteration)."})
    mx = at(m.matrix, rater)
    if mx and mx.models:
        st.subheader("Win rate of the row model against the column model")
        names = mx.models
        est, lo, hi = mx.estimate, mx.ci_low, mx.ci_high
        text = [[(fmt_interval(est[i][k], lo[i][k] if lo else None, hi[i][k] if hi else None)
                  if est[i][k] == est[i][k] else "") for k in range(len(names))] for i in range(len(names))]
        fig = go.Figure(go.Heatmap(z=est, x=[chart_plain(n) for n in names], y=[chart_plain(n) for n in names],
                                   text=text, texttemplate="%{text}", colorscale="RdBu", zmin=0, zmax=1))
        fig.update_layout(height=200 + 45 * len(names), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                          yaxis_autorange="reversed")  # rows top to bottom, as in the table below
        st.plotly_chart(fig, key="models-heatmap")
        frame = pd.DataFrame(text, columns=names)
        frame.insert(0, "model", names, allow_duplicates=True)  # a model may be called "model": the grid tells them apart
        table(frame, "models-matrix")
    sa = m.system_alignment
    if sa:
        st.subheader("Does each judge rank the models as the humans do?")
        rows = [{"judge": j, "Spearman (95% CI)": fmt_m(a.spearman), "p": fmt_p(a.spearman.p_value if a.spearman
                                                                                 else None),
                 "Kendall τ (95% CI)": fmt_m(a.kendall), "reversed model pairs": len(a.reversed_pairs)}
                for j, a in sa.items()]
        table(pd.DataFrame(rows), "models-alignment",
              help={"Spearman (95% CI)": "Model ranking agreement: rank correlation of the judge's and the humans' model "
                                         "win rates."})
    ppi = m.ppi
    if ppi:
        st.subheader("Corrected win rates (human-calibrated, PPI++ or active)")
        st.caption("Prediction-powered inference: the judge's verdicts on every item, corrected by its errors on "
                   "the human-labelled ones; the interval is valid however good the judge is.")
        rows = []
        for judge, p in ppi.items():
            # labels from an active push are weighed by their inclusion probabilities (active inference)
            how = "active" if p.estimator == "active" else "PPI++"
            for model, r in p.win_rate.items():  # each row: its estimate, interval and what PPI++ used
                extra = r.to_json()
                rows.append({"judge": judge, "model": model, "estimator": how, "corrected win rate": fmt_interval(
                    r.estimate, r.ci_low, r.ci_high),
                    "human-labels-only win rate": fmt_interval(r.classical_estimate, r.classical_ci_low,
                                                               r.classical_ci_high),
                    **{words(k): (fmt_number(v) if isinstance(v, float) else v) for k, v in extra.items()
                       if k not in ("estimate", "ci_low", "ci_high", "classical_estimate", "classical_ci_low",
                                    "classical_ci_high")}})
        if rows:
            table(pd.DataFrame(rows), "models-ppi", help=PPI_HELP)
        else:
            st.info("Too few human-labelled items for corrected win rates.")


@st.cache_data(max_entries=4, show_spinner=False)
def _stored_runs(path: str, key: Stamp) -> int:
    """How many stability runs the workspace stores (a typed store query: the explorer scores none itself)."""
    from judgecal.data.store import Workspace

    ws = Workspace(path, create=False)
    try:
        return len(ws.stability_repo.stability_runs())
    finally:
        ws.close()


def stability_page() -> None:
    st.title("Stability: does the judge give the same answers?")
    rep = report()
    summ = {j: e.stability for j, e in (rep.judges if rep else {}).items() if e.stability}
    if not summ:
        p = ws_path()
        stored = _stored_runs(str(p), stamp(p))
        if stored:  # scored by the audit, never here: the page shows what audit.json holds
            needs(f"{stored} stability run(s) stored but not yet in an audit", "judgecal audit --workspace WS")
        else:
            needs("No stability run yet", "judgecal stability run --workspace WS --judge J")
        return
    rows, figs = [], []
    for judge, e in summ.items():
        s = e.score
        rows.append({"judge": judge, "Stability Score": fmt_ci(s.score, s.ci) if s else "not measured",
                     "weakest figure": (s.figure if s else None) or "n/a", "guard": e.guard, "runs": len(e.runs)})
        for run in e.runs:
            for fig, r in run.figures.items():
                figs.append({"judge": judge, "run": run.run_id, "origin": run.origin, "figure": fig,
                             "score": fmt_ci(r.score, r.score_ci), "variants": len(run.variants),
                             "items": run.n_items})
    table(pd.DataFrame(rows), "stability-scores",
          help={"Stability Score": "The lowest of the latest run's stability figures (1 = identical under every "
                                   "variant), with its bootstrap interval.",
                "guard": "ok, or which variant moved a figure beyond the guard's threshold."})
    if figs:
        st.subheader("Figures per run")
        table(pd.DataFrame(figs), "stability-figures")
    from judgecal.report.stability import stability_tables

    judge = st.selectbox("Judge", list(summ), format_func=isolated, key="stability-judge")
    parts = stability_tables(summ[judge])
    for key, title in (("axes", "Which axis moves the figures"), ("environment", "What changed in the environment"),
                       ("agreement", "Other backends and other judges on the same items")):
        if parts[key]:
            st.subheader(title)
            table(shown_rows(parts[key]), f"stability-{key}")


#: audit.json's field names as column labels: words, not codes (a name not listed is spelt out)
WORDS = {"lam": "weight of the judge's verdicts (λ)", "n_labelled": "items with a human label",
         "n_unlabelled": "items judged without a human label", "width_ratio": "interval width vs human labels only",
         "difference_pp": "difference (points)", "max_shift_pp": "largest shift (points)",
         "sigma_pp": "spread (points)", "item_agreement": "item agreement", "within_tolerance": "within tolerance",
         "score_ci": "score interval", "kappa": "κ"}
PPI_HELP = {"estimator": "PPI++ when the labelled items were a uniform sample; active when they came from "
            "`annotate push --strategy active`: each label weighed by 1 / the probability its item was drawn with.",
            "weight of the judge's verdicts (λ)": "PPI++'s power-tuning weight: 0 = the human labels alone, 1 = "
            "the judge's verdicts fully corrected by its errors.",
            "interval width vs human labels only": "The corrected interval's width over the human-labels-only "
            "interval's: below 1, the judge's verdicts narrowed it."}


def words(key: str) -> str:
    """A field name of audit.json as a column label."""
    return WORDS.get(key, key.replace("_", " "))


def shown_rows(rows: list[Row]) -> pd.DataFrame:
    """Stability rows as the page shows them: a κ that is 0/0 reads ``undefined``, a tolerance that applies
    only to another backend ``n/a`` for another judge, any other missing value ``n/a`` (never ``None``)."""
    out = []
    for r in rows:
        r = dict(r)
        if "kappa" in r and r["kappa"] is None:
            r["kappa"] = "undefined"
        if at(r, "kind") == "judge" and at(r, "within_tolerance") is None:
            r["within_tolerance"] = "n/a (another judge)"
        out.append({words(k): "n/a" if v is None else v for k, v in r.items()})
    df = pd.DataFrame(out)
    mixed = [c for c in df.columns if df[c].map(lambda v: isinstance(v, str)).any()]  # one type per column
    return df.astype({c: str for c in mixed})


def _marked(text: str, spans: pd.DataFrame) -> str:
    """``text`` with each marked stretch between ⟦ and ⟧ (plain text; no markup)."""
    out, pos = [], 0
    for s, e in sorted({(int(a), int(b)) for a, b in zip(spans["start"], spans["end"], strict=True) if b > a}):
        s = max(s, pos)
        if e <= s:
            continue
        out += [text[pos:s], "⟦", text[s:e], "⟧"]
        pos = e
    return "".join(out + [text[pos:]])


def spans_page() -> None:
    st.title("Spans: what people and judges marked")
    items = query("explorer_repo.explorer_span_items")
    if items.empty:
        needs("No spans in this workspace",
              "judgecal import faithbench (human spans) or judgecal judge --rubric spans-hallucination")
        return
    rep = report()
    rows = []
    for judge, j in (rep.judges if rep else {}).items():
        ceiling = j.spans.human_f1 if j.spans else None
        for name in ("span_iou", "span_f1"):
            if name in j.metrics:
                rows.append({"judge": judge, "metric": info(name).title,
                             "estimate (95% CI)": fmt_m(j.metrics[name]),
                             "annotators with each other (F1)": fmt_m(ceiling)
                             if ceiling is not None and ceiling.estimate is not None
                             else "not measured (one annotator per item)"})
    if rows:
        table(pd.DataFrame(rows), "spans-metrics", metrics={"estimate (95% CI)": "span_f1"},
              help={"annotators with each other (F1)": "Mean character F1 of two annotators' spans on the same "
                                                       "item: the ceiling a judge's span F1 is read against."})
    ids = sorted(items["item_id"].unique(), key=lambda i: (len(i), i))
    st.caption(f"{len(ids)} items with spans; marked stretches are shown between ⟦ and ⟧.")
    pick = st.selectbox("Item", ids[:2000], format_func=isolated, key="spans-item")
    item = query("explorer_repo.explorer_item", pick)
    spans = query("explorer_repo.explorer_item_spans", pick)
    if item is None:
        st.warning("This item is not in the workspace.")
        return
    if item.reference:  # what the spans answer to, e.g. the key fact a summary should cover
        st.caption("Reference")
        plain_text(item.reference)
    for c in sorted(spans["candidate"].unique()):
        text = item.candidates[int(c)].text if int(c) < len(item.candidates) else ""
        st.subheader(f"Response {int(c) + 1}")
        mine = spans[spans["candidate"] == c]
        humans, judges = mine[mine["kind"] == "human"], mine[mine["kind"] != "human"]
        left, right = st.columns(2)
        with left:
            st.caption("People")
            for rater, g in humans.groupby("rater"):
                plain_text(f"{rater}:\n{_marked(text, g)}")
        with right:
            st.caption("Judges")
            for rater, g in judges.groupby("rater"):
                plain_text(f"{rater}:\n{_marked(text, g)}")
        shown = mine.assign(marked=[text[int(s):int(e)] for s, e in zip(mine["start"], mine["end"], strict=True)])
        table(shown[["rater", "kind", "start", "end", "label", "marked", "source"]], f"spans-item-{int(c)}")
