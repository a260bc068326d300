"""The Overview's first screen: every judge in one comparison, sorted by its gap to the humans, the best available
judge named and whether it may replace people. Every figure is the audit's (``reference.like_for_like``: the judge
and the annotators measured the same way, and their difference); this module only orders and words them."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from judgecal.apps.common import fmt_m, md_plain, table

from judgecal.audit.schema import AuditReport, Figure, Judge
from judgecal.report.table import Row, at
from judgecal.report.view import like_definition

DEFINITION_WORDS = {"pairwise": "with each annotator (pairwise)", "leave_one_out": "against the others' majority "
                    "(leave-one-out)", "spans": "span F1 with each annotator (pairwise)"}
JUDGE, HUMANS = "judge's κ (spans: F1)", "annotators' κ, same way"
GAP = "gap to the humans (judge − annotators, 95% CI)"
COMPARISON_HELP = {
    "measured as": "How the judge and the annotators were both measured, on the same items: the judge with each "
                   "annotator beside the annotators with each other (pairwise), or each against the others' majority "
                   "(leave-one-out). Never a judge against a consensus beside people against each other.",
    JUDGE: "The judge's agreement (κ: 0 = chance, 1 = perfect; spans: character F1) measured as the row says.",
    HUMANS: "The annotators' agreement with each other, measured exactly as the judge's on the same items: the "
            "level the judge would reach if it were one more person.",
    GAP: "The judge's figure minus the annotators', with its paired bootstrap interval (audit.json "
         "reference.like_for_like ... difference): 0 or above = as close to the humans as they are to each other.",
    "may replace people": "Only a judge whose verdict is aligned: close to the humans and no serious bias.",
    "what decides it": "The reason that matters most for its verdict (every reason is in its card below).",
    "bias flags": "The biases the audit found significant and at least the effect of interest, in words.",
    "probes not run": "Probes that were not run on this judge: not tested is never 'no bias'.",
}


def _flag_words() -> dict[str, str]:
    from judgecal.audit.decision import flag_words

    return flag_words()


def flag_text(flag: str, words: dict[str, str]) -> str:
    """A flag in words (``position_bias:first`` -> its sentence); a flag without one, its code spelt out."""
    return words.get(flag) or flag.replace("_", " ").replace(":", ": ")


def _figures(j: Judge) -> tuple[str, Figure | None, Figure | None, Figure | None]:
    """How the judge and the annotators were measured (the definition its verdict read first), their figures
    and the audit's difference of the two (``None`` where the audit holds none)."""
    if j.spans is not None and j.spans.like_for_like is not None and j.spans.like_for_like.n_items:
        like = j.spans.like_for_like
        return "spans", like.judge, like.humans, None
    v = j.verdict
    first = (v.human_likeness.reference if v and v.human_likeness else None) or "pairwise"
    for definition in dict.fromkeys((first, "pairwise", "leave_one_out")):
        d = like_definition(j, definition)
        if d is not None and d.judge is not None and d.humans is not None:
            return definition, d.judge.kappa, d.humans.kappa, at(d.difference, "kappa")
    return "", None, None, None


def comparison(rep: AuditReport) -> list[Row]:
    """One row per judge, in the order of the report's page one (:func:`judgecal.report.summary.page_one`: by
    its gap to the humans, the smallest shortfall first; judges whose gap the audit could not measure last, in
    audit.json's order), the best available judge marked ``best``. ``index`` is the judge's place in audit.json."""
    from judgecal.report.summary import page_one

    one = page_one(rep)
    order = {r.index - 1: k for k, r in enumerate(one.rows)}  # the report counts its judges from 1
    best = one.best.index - 1 if one.best else None
    words = _flag_words()
    rows = []
    for k, (name, j) in enumerate(rep.judges.items()):
        v = j.verdict
        definition, judge, humans, gap = _figures(j)
        status = v.status if v else "no verdict"
        rows.append({"index": k, "gap": gap.estimate if gap is not None else None, "judge": name,
                     "verdict": status, "may replace people": "yes" if status == "aligned" else "no",
                     GAP: fmt_m(gap) if gap is not None else "not in the audit",
                     "what decides it": (v.reasons[0] if v and v.reasons else "no verdict in this audit"),
                     "bias flags": "; ".join(flag_text(f, words) for f in j.flags) or "none",
                     JUDGE: fmt_m(judge) if judge else "not measured",
                     HUMANS: fmt_m(humans) if humans else "not measured",
                     "probes not run": len(v.not_tested_probes) if v else None,
                     "measured as": DEFINITION_WORDS.get(definition, "not measured (needs two annotators)"),
                     "best": k == best})
    # rows[k] is the judge at place k of audit.json
    return [rows[k] for k in sorted(range(len(rows)), key=lambda k: order.get(k, len(order) + k))]


def best_line(rows: list[Row]) -> str:
    """The lead's answer in one sentence (markdown, names made literal): the best aligned judge, or that none
    may replace people and which one comes closest."""
    if not rows:
        return "No judge in this audit."
    r = next((r for r in rows if r["best"]), rows[0])  # the report's best available judge
    if r["verdict"] == "aligned":
        return (f"**Best available judge: {md_plain(r['judge'])}** — aligned: it may replace people on this task "
                f"(gap to the humans {md_plain(r[GAP])}).")
    return (f"**No judge may replace people yet.** Best available: **{md_plain(r['judge'])}** — "
            f"{md_plain(r['verdict'])}: {md_plain(r['what decides it'])}.")


def comparison_section(rep: AuditReport) -> list[Row]:
    """The best judge in words, then the comparison grid; returns the rows (the cards below follow their order)."""
    rows = comparison(rep)
    with st.container(key="best-judge"):
        st.markdown(best_line(rows))
    shown = pd.DataFrame([{k: v for k, v in r.items() if k not in ("index", "gap", "best")} for r in rows])
    if not shown.empty:
        table(shown, "comparison", help=COMPARISON_HELP)
    return rows
