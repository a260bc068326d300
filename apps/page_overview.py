"""The Overview: first every judge in one comparison, sorted by its gap to the humans, the best available judge named
and whether it may replace people; then the trust dashboard (a card per judge with its verdict and reasons, and the
trust table). Every figure is the audit's (``reference.like_for_like``: the judge and the annotators measured the
same way, and their difference); this module only orders and words them."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from judgecal.apps.common import (
    fmt_ci,
    fmt_m,
    fmt_number,
    md_plain,
    plain_text,
    table,
    titled_report,
)
from judgecal.apps.page_judges import (
    ACCURACY_CONSENSUS,
    ANOTHER_FLEISS,
    ANOTHER_LOO,
    KAPPA_CONSENSUS,
    LIKE_CAPTION,
    LIKE_HUMANS,
    LIKE_KAPPA,
    RANKING,
    like_cells,
    verdict_of,
)

import judgecal.audit.probes  # noqa: F401  (the registered probes describe themselves in the catalogue)
from judgecal.audit.schema import AuditReport, Figure, Judge
from judgecal.report.summary import COLUMNS as SUMMARY_COLUMNS
from judgecal.report.summary import NOTE as SUMMARY_NOTE
from judgecal.report.summary import SummaryRow, more_words, summary_rows
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


STATUS_WORDS = {"aligned": ":green[**aligned**]", "caution": ":orange[**caution**]",
                "not aligned": ":red[**not aligned**]"}


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
    rep = titled_report("Overview: which judge can replace people?")
    if rep is None:
        return
    # the lead's decision first, on the first screen
    order = [k for k in (r["index"] for r in comparison_section(rep)) if isinstance(k, int)]
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
