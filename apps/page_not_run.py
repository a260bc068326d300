"""Pages with nothing to show yet, folded into one "Not run yet" panel with the commands that would fill them, so
the sidebar lists only pages that answer something. What decides it is the audit (and, for spans and stored
stability runs, a typed store query), never a figure computed here."""

from __future__ import annotations

import streamlit as st
from judgecal.apps.common import md_plain, query, report, stamp, ws_path
from judgecal.apps.page_models import _stored_runs
from judgecal.apps.page_over_time import by_choices

from judgecal.audit.schema import AuditReport
from judgecal.report.labels import is_label_judge
from judgecal.report.loop import loop_tables

TITLE = "Not run yet"
AUDIT = "judgecal audit --workspace WS"

#: page -> (the question it would answer, the commands that fill it)
FILLS: dict[str, tuple[str, list[str]]] = {
    "Labels": ("Can a judge of binary or categorical labels be trusted, criterion by criterion?",
               ["judgecal import FILE --task binary (or --task categorical) with the judges' verdicts", AUDIT]),
    "Models": ("Does a judge rank the candidate models as people do?",
               [f"{AUDIT} (on items whose two candidates name their models)"]),
    "Stability": ("Does a judge give the same answers when run again or reworded?",
                  ["judgecal stability run --workspace WS --judge J", AUDIT]),
    "Loop": ("Is a new judge version better, does a panel or a cascade help, does alignment from labels help?",
             ["judgecal gate --baseline J1 --candidate J2", "judgecal panel --members J1,J2,J3",
              "judgecal align --judge J --method fewshot", "judgecal cascade --stage CHEAP --stage STRONG",
              f"then {AUDIT}"]),
    "Over time": ("Has a judge drifted away from the humans since its baseline period?",
                  ["judgecal import FILE (items or verdicts with a time or a period)",
                   "judgecal monitor --workspace WS --by period"]),
    "Spans": ("Which stretches of a response do people and judges mark?",
              ["judgecal import faithbench (human spans) or judgecal judge --rubric spans-hallucination", AUDIT]),
    "Annotators": ("How far do the people agree with each other?",
                   ["judgecal annotate pull (or import a dataset with labels)", AUDIT]),
}


def folded(rep: AuditReport | None) -> list[str]:
    """The pages of :data:`FILLS` with nothing to show for this audit, in sidebar order (none without an audit:
    every page then says where it looked for one)."""
    if rep is None:
        return []
    judges = rep.judges.values()
    path = ws_path()
    empty = {
        "Labels": not any(is_label_judge(e) for e in judges),
        "Models": rep.models is None or not rep.models.to_json(),
        "Stability": not any(e.stability for e in judges) and not _stored_runs(str(path), stamp(path)),
        "Loop": not any(loop_tables(rep.loop).values()),
        "Over time": not by_choices(),
        "Spans": bool(query("explorer_repo.explorer_span_items").empty),
        "Annotators": rep.annotators is None,
    }
    return [page for page in FILLS if empty[page]]


def not_run_page() -> None:
    st.title("Not run yet: what each empty page would answer")
    pages = folded(report())
    if not pages:
        st.info("Every page has something to show.")
        return
    st.caption("These pages have nothing to show for this workspace's latest audit; each command below fills one. "
               "They join the sidebar once the audit holds their results.")
    for page in pages:
        question, commands = FILLS[page]
        with st.container(border=True, key=f"not-run-{page.lower().replace(' ', '-')}"):
            st.markdown(f"**{page}** — {md_plain(question)}")
            st.code("\n".join(commands), language="bash")
