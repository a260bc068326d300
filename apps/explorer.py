"""judgecal explorer: alignment with CIs, position bias, and an item drill-down.

Run with ``judgecal app --workspace DIR``. Reads ``<workspace>/reports/audit.json`` and the
workspace database; never calls a judge. Model output is shown only through Streamlit's text
elements, which escape it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from judgecal.data.store import Workspace

METRICS = ("accuracy", "macro_f1", "cohen_kappa", "position_consistency", "first_position_rate", "invalid_rate")


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True)
    return ap.parse_known_args(sys.argv[1:])[0]


def fmt_metric(m: dict[str, Any] | None) -> str:
    """``estimate [ci_low, ci_high]`` with four decimals, or an en dash."""
    if not m or m.get("estimate") is None:
        return "–"
    lo, hi = m.get("ci_low"), m.get("ci_high")
    ci = f" [{lo:.4f}, {hi:.4f}]" if lo is not None and hi is not None else ""
    return f"{m['estimate']:.4f}{ci}"


def alignment_table(report: dict[str, Any]) -> pd.DataFrame:
    rows = []
    for name, j in report["judges"].items():
        row = {"judge": name, "judgments": j["n_judgments"]}
        row.update({m: fmt_metric(j["metrics"].get(m)) for m in METRICS})
        rows.append(row)
    return pd.DataFrame(rows)


def position_plot(report: dict[str, Any]) -> go.Figure | None:
    names, est, lo, hi = [], [], [], []
    for name, j in report["judges"].items():
        m = j["metrics"].get("first_position_rate")
        if m and m["estimate"] is not None:
            names.append(name)
            est.append(m["estimate"])
            lo.append(m["estimate"] - m["ci_low"])
            hi.append(m["ci_high"] - m["estimate"])
    if not names:
        return None
    fig = go.Figure(go.Scatter(x=est, y=names, mode="markers", error_x={"type": "data", "array": hi, "arrayminus": lo}))
    fig.add_vline(x=0.5, line_dash="dash", line_color="#c33")
    fig.update_layout(xaxis_title="P(judge picks the response shown first), 95% CI", xaxis_range=[0, 1],
                      height=120 + 40 * len(names), margin={"l": 10, "r": 10, "t": 10, "b": 40})
    return fig


def main() -> None:
    st.set_page_config(page_title="judgecal explorer", layout="wide")
    ws_path = Path(_args().workspace)
    report_path = ws_path / "reports" / "audit.json"
    st.title("judgecal explorer")
    if not report_path.exists():
        st.warning(f"No audit yet in {ws_path}: run `judgecal audit --workspace {ws_path}`.")
        return
    report = json.loads(report_path.read_text("utf-8"))
    s = report["settings"]
    st.caption(f"Audit {report['generated_at']} · consensus {s['consensus']} over {report['consensus']['n_items']} "
               f"items · {s['n_boot']} bootstrap replicates · {int(s['ci_level'] * 100)}% intervals")

    st.header("Alignment with the humans")
    st.table(alignment_table(report).set_index("judge"))

    st.header("Position bias")
    fig = position_plot(report)
    if fig is None:
        st.info("No judge was run in both presentation orders.")
    else:
        st.plotly_chart(fig)

    st.header("Item drill-down")
    ws = Workspace(ws_path, create=False)
    items = {it.item_id: it for it in ws.items()}
    if not items:
        st.info("The workspace has no items.")
        return
    judged = ws.judgments_frame(columns=("item_id", "judge", "order", "sample", "verdict", "score", "status", "raw"))
    choice = st.selectbox("Item", sorted(items, key=lambda i: (len(i), i)))
    item = items[choice]
    st.subheader("Prompt")
    st.text(item.prompt)
    cols = st.columns(len(item.candidates))
    for col, (label, cand) in zip(cols, zip("AB", item.candidates, strict=False), strict=False):
        with col:
            st.subheader(f"Response {label}")
            st.caption(f"model: {cand.model or 'unknown'}")
            st.text(cand.text)
    ann = ws.annotations_frame()
    st.subheader("Human labels")
    st.table(ann[ann["item_id"] == choice][["annotator", "label", "source"]].reset_index(drop=True))
    cons = ws.consensus_frame()
    st.table(cons[cons["item_id"] == choice][["method", "label", "posterior"]].reset_index(drop=True))
    st.subheader("Judge verdicts (item orientation)")
    st.table(judged[judged["item_id"] == choice].drop(columns=["item_id"]).reset_index(drop=True))


main()
