"""Annotators (agreement, quality, confusion, label sources) and Items (filters and the side-by-side view)."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    audit_caption,
    chart_plain,
    fmt_m,
    fmt_number,
    md_plain,
    plain_text,
    query,
    report,
    table,
    titled_report,
)

from judgecal.aggregate.annotators import by_source
from judgecal.audit.schema import Annotators, AuditReport
from judgecal.inert import isolated


def annotators_page() -> None:
    import plotly.graph_objects as go

    rep = titled_report("Annotators: how far the people agree", caption=False)
    if rep is None:
        return
    summ = rep.annotators
    if summ is None:
        st.info("No human labels in this audit — produced by `judgecal annotate pull` or by importing a dataset "
                "with labels, then `judgecal audit`.")
        return
    audit_caption(rep)
    per = {s: Annotators.model_validate(part) for s, part in by_source(summ.to_json()).items()}
    names = [str(s) for s in per]
    pick = st.selectbox("Label source (one group of people at a time, never pooled)", names, format_func=isolated,
                        key="ann-source") if len(per) > 1 else names[0]
    src = per[next(s for s in per if str(s) == pick)]
    fk, ka = src.fleiss_kappa, src.krippendorff_alpha
    table(pd.DataFrame([
        {"statistic": "Fleiss' κ", "value (95% CI)": fmt_m(fk), "items": fk.n if fk else None},
        {"statistic": "Krippendorff's α", "value (95% CI)": fmt_m(ka), "items": ka.n if ka else None},
        *[{"statistic": f"Cohen's κ {pair.replace('|', ' vs ')}", "value (95% CI)": fmt_m(m), "items": m.n}
          for pair, m in src.pairwise_cohen_kappa.items()],
    ]), "annotators-agreement",
        help={"value (95% CI)": "Agreement beyond chance (0 = chance, 1 = perfect), item-bootstrap interval."})
    if note := src.pairwise_note:
        st.caption(md_plain(note))
    st.subheader("Each annotator")
    rows = [{"annotator": name, "labels": r.n_labels, "agreement with the others": fmt_m(r.loo_accuracy),
             "gold accuracy": fmt_m(gold) if (gold := r.gold_accuracy) else "no gold items",
             "flags": ", ".join(f.replace("_", " ") for f in ("likely_spammer", "systematic_bias") if getattr(r, f))
             or "none"} for name, r in src.annotators.items()]
    table(pd.DataFrame(rows), "annotators-quality",
          help={"agreement with the others": "Share of the annotator's labels equal to the majority of the others "
                                             "on the same item (leave-one-out)."})
    st.subheader("Where the labels come from")
    table(pd.DataFrame([x.to_json() for x in summ.sources], columns=["source", "labels", "items", "annotators"]), "annotators-sources")
    with_conf = [(n, r.confusion) for n, r in src.annotators.items() if r.confusion is not None][:6]
    if with_conf:
        st.subheader("Each annotator against the others")
        cols = st.columns(min(3, len(with_conf)))
        for k, (name, conf) in enumerate(with_conf):
            fig = go.Figure(go.Heatmap(z=conf.counts, x=[chart_plain(c) for c in conf.cols_annotator],
                                       y=[chart_plain(r) for r in conf.rows_consensus],
                                       colorscale="Blues", showscale=False, texttemplate="%{z}"))
            fig.update_layout(title={"text": chart_plain(name), "font": {"size": 12}}, xaxis_title="annotator said",
                              yaxis_title="the others said", height=300, margin={"l": 10, "r": 10, "t": 40, "b": 40},
                              yaxis_autorange="reversed")  # rows top to bottom, as the judges' confusion
            cols[k % len(cols)].plotly_chart(fig, key=f"ann-conf-{k}")


MAX_LISTED = 200


def _filtered(rep: AuditReport | None, judges: list[str]) -> tuple[int, pd.DataFrame, str | None]:
    """The filters, and what they select: the store selects in SQLite (``explorer_find_items``) how many items
    match and the first :data:`MAX_LISTED`; each filter's choices are read from an index."""
    focus = st.selectbox("Judge in focus", judges, format_func=isolated, key="items-judge") if judges else None
    c1, c2, c3, c4 = st.columns(4)
    disagree_h = c1.checkbox("judge disagrees with the humans", key="f-humans")
    disagree_o = c2.checkbox("the judge's two orders disagree", key="f-orders")
    disagree_j = c3.checkbox("judges disagree with each other", key="f-judges")
    spans = c4.checkbox("spans present", key="f-spans")
    c1, c2, c3 = st.columns(3)
    cats: dict[str, list[Any]] = {}  # as shown -> the stored values (a category may be a number)
    for c in query("explorer_repo.explorer_categories"):
        cats.setdefault(str(c), []).append(c)
    cat = c1.multiselect("category", sorted(cats), format_func=isolated, key="f-category")
    models: dict[str, list[Any]] = {}
    for m in query("explorer_repo.explorer_models"):
        models.setdefault(str(m), []).append(m)
    model = c2.multiselect("model", sorted(models), format_func=isolated, key="f-model")
    src = c3.multiselect("label source", query("explorer_repo.explorer_label_source_names"), format_func=isolated, key="f-source")

    method = rep.settings.consensus if rep else None
    n, found = query("explorer_repo.explorer_find_items", focus, method, humans=disagree_h, orders=disagree_o,
                     judges=disagree_j, spans=spans, categories=tuple(v for c in cat for v in cats[c]),
                     models=tuple(v for m in model for v in models[m]), label_sources=tuple(src),
                     limit=MAX_LISTED)
    return n, found, focus


def items_page() -> None:
    st.title("Items: where the judges and the humans part")
    rep = report()
    judges = list(rep.judges) if rep else query("explorer_repo.explorer_judges")
    n, listed, focus = _filtered(rep, judges)
    st.caption(f"{n:,} items match" + (f"; the first {MAX_LISTED} are listed" if n > MAX_LISTED else ""))
    table(listed.drop(columns=["task"]), "items", height=260)  # shortest ids first
    if not n:
        st.info("No item matches these filters.")
        return
    item_view(listed["item_id"].tolist(), focus)


@st.fragment
def item_view(ids: list[str], focus: str | None) -> None:
    """The item picker and the item: a fragment, so opening an item reruns only this part of the page."""
    typed = st.text_input("Open an item by id (any item, listed or not)", key="items-id").strip()
    choice = typed or st.selectbox("Item", ids, format_func=isolated, key="items-pick")
    show_item(choice, focus)


def show_item(item_id: str, focus: str | None) -> None:
    item = query("explorer_repo.explorer_item", item_id)
    if item is None:
        st.warning("No item with this id in the workspace.")
        return
    st.subheader("Prompt")
    plain_text(item.prompt)
    if item.reference:
        st.caption("Reference answer")
        plain_text(item.reference)
    cols = st.columns(max(1, len(item.candidates)))
    for col, (k, cand) in zip(cols, enumerate(item.candidates), strict=False):
        with col:
            st.subheader(f"Response {'AB'[k] if k < 2 else k + 1}")
            plain_text(f"model: {cand.model or 'unknown'}")
            plain_text(cand.text)
    if item.metadata:
        with st.expander("Item metadata"):
            st.code(json.dumps(item.metadata, ensure_ascii=False, indent=2), language=None)
    st.subheader("The humans")
    ann = query("explorer_repo.explorer_item_annotations", item_id)
    if ann.empty:
        plain_text("No human label on this item.")
    else:
        table(ann, "item-labels")
    cons = query("explorer_repo.explorer_item_consensus", item_id)
    if not cons.empty:
        cons = cons.assign(posterior=[", ".join(f"{k} {fmt_number(float(v))}" for k, v in json.loads(p).items())
                                      if p else "" for p in cons["posterior"]])
        table(cons, "item-consensus", help={"posterior": "The aggregator's probability of each label."})
    st.subheader("Every judge's verdict (item orientation: A is the first response above)")
    j = query("explorer_repo.explorer_item_judgments", item_id, query("judgments_repo.judge_names"))
    if j.empty:
        plain_text("No judge has judged this item.")
        return
    if focus:
        j = pd.concat([j[j["judge"] == focus], j[j["judge"] != focus]])
    table(j, "item-judgments")
    st.caption("Rationales as the judges wrote them (raw output):")
    for _, r in j.head(40).iterrows():
        with st.expander(f"{md_plain(str(r['judge']))} · order {md_plain(str(r['order']))} · sample "
                         f"{r['sample']} · verdict {md_plain(str(r['verdict']))}"):
            plain_text(r["raw"] or "(empty)")
