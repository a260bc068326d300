"""The explorer's Loop page: gate, panels, alignment and cascades, as the audit recorded them."""

from __future__ import annotations

import pandas as pd
import streamlit as st
from judgecal.apps.common import audit_caption, needs, report, table

from judgecal.report.loop import TITLES, loop_tables

COMMANDS = {
    "gate": "judgecal gate --baseline J1 --candidate J2",
    "panels": "judgecal panel --members J1,J2,J3",
    "align": "judgecal align --judge J --method fewshot",
    "cascades": "judgecal cascade --stage CHEAP --stage STRONG",
}
HELP = {
    "difference (95% CI)": "Candidate minus baseline on the same items, paired item-bootstrap interval.",
    "result": "worse: beyond the tolerance AND significantly worse (one-sided, Bonferroni over the metrics).",
    "held-out conclusion": "Read on the held-out split only; the candidate was built from the train split.",
    "share decided": "Share of all items this stage decided alone (people: the share left to them).",
    "threshold": "The stage keeps an item when its confidence is at least this; none: it keeps nothing.",
}


def loop_page() -> None:
    st.title("Closing the loop: judge versions, panels, alignment, cascades")
    rep = report()
    if rep is None:
        needs("No audit yet", "judgecal audit --workspace WS")
        return
    audit_caption(rep)
    tables = loop_tables(rep.loop)
    for key, rows in tables.items():
        st.subheader(TITLES[key])
        if rows:
            df = pd.DataFrame(rows)
            table(df, f"loop-{key}", help={c: h for c, h in HELP.items() if c in df.columns})
        else:
            needs("Not run", f"{COMMANDS[key]} (then judgecal audit)")
