"""judgecal explorer: alignment with CIs, position bias, and an item drill-down.

Run with ``judgecal app --workspace DIR``. Reads ``<workspace>/reports/audit.json`` and the
workspace database; never calls a judge. Every string from the data (model, judge and annotator names,
item text, raw judge output, metadata) is untrusted: long text goes through ``st.text``; names in
tables, captions and charts are escaped first (``md_plain`` for Streamlit's markdown, which
``st.table`` cells and captions are; ``chart_plain`` for plotly's HTML-like labels), so no link, image
or markup in the data is ever rendered.
"""

from __future__ import annotations

import argparse
import html
import json
import re
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


_MD_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
_AUTOLINK = re.compile(r"(?<=[:@])|(?=\.[^\W\d_])")  # where GFM autolinks and emoji shortcodes are found
WORD_JOINER = "\u2060"


def md_plain(value: Any) -> Any:
    """``value`` as literal text in Streamlit markdown. Each ASCII punctuation character is
    backslash-escaped (CommonMark allows that for all of them), so no link, image, HTML, directive
    (``:red[...]``), math or table syntax is parsed. Autolinks (``http://``, ``www.x``, ``a@b.c``) and
    emoji shortcodes (``:smile:``) are found later, in the text itself, so an invisible word joiner
    follows each ``:`` and ``@`` and precedes each ``.`` before a letter (so ``www.x`` is no link).
    Non-strings pass through."""
    if not isinstance(value, str):
        return value
    return _MD_PUNCT.sub(r"\\\1", _AUTOLINK.sub(WORD_JOINER, value))


def plain_table(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every text cell, index label and column name passed through ``md_plain`` (``st.table``
    renders markdown in all of them)."""
    out = df.map(md_plain) if len(df) else df.copy()
    out.index = out.index.map(md_plain)
    out.columns = out.columns.map(md_plain)
    return out


def chart_plain(value: Any) -> str:
    """``value`` as literal text in a plotly label, which understands ``<a>``, ``<b>``, ``<br>`` and
    entities: ``<``, ``>`` and ``&`` become entities."""
    return html.escape(str(value), quote=False)


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
        row["flags"] = ", ".join(j.get("flags", [])) or "–"
        rows.append(row)
    return pd.DataFrame(rows)


BIAS_METRICS = ("first_position_rate", "debiased_accuracy", "prefer_longer_rate", "verbosity_excess", "lc_win_rate",
                "pad_pick_rate", "self_preference_excess", "instability_rate", "prompt_flip_rate",
                "injection_follow_rate")


def _num(v: Any) -> str:
    if v is None:
        return "–"
    return f"{v:.1e}" if 0 < abs(v) < 0.001 else f"{v:.4f}"


def report_card(report: dict[str, Any]) -> pd.DataFrame:
    """One row per (judge, bias metric): estimate [CI], n, p, BH q and minimum detectable effect."""
    rows = []
    for name, j in report["judges"].items():
        for metric in BIAS_METRICS:
            m = j["metrics"].get(metric)
            if m:
                rows.append({"judge": name, "metric": metric, "estimate [95% CI]": fmt_metric(m), "n": m.get("n"),
                             "p": _num(m.get("p")), "q (BH)": _num(m.get("q")), "MDE": _num(m.get("mde"))})
    return pd.DataFrame(rows)


def position_plot(report: dict[str, Any]) -> go.Figure | None:
    names, est, lo, hi = [], [], [], []
    for name, j in report["judges"].items():
        m = j["metrics"].get("first_position_rate")
        if m and m["estimate"] is not None:
            names.append(chart_plain(name))
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


@st.cache_data(show_spinner="Computing annotator agreement...")
def annotator_summary(ws_path: str, stamp: float) -> dict[str, Any]:
    """Agreement and per-annotator quality (cached per workspace state)."""
    from judgecal.aggregate.agreement import fleiss_kappa, krippendorff_alpha, pairwise_cohen
    from judgecal.aggregate.quality import annotator_report

    ws = Workspace(ws_path, create=False)
    ann = ws.annotations_frame()
    from judgecal.annotation.tasks import gold_labels

    gold = gold_labels(ws)
    out = {"n": len(ann), "fleiss_kappa": fleiss_kappa(ann, 500), "krippendorff_alpha": krippendorff_alpha(ann, 500),
           "pairwise": pairwise_cohen(ann, 500),
           "annotators": annotator_report(ann, pd.Series(gold) if gold else None)}
    ws.close()
    return out


def annotators_section(ws_path: Path) -> None:
    st.header("Annotators")
    stamp = (ws_path / "judgecal.sqlite").stat().st_mtime
    summ = annotator_summary(str(ws_path), stamp)
    if summ["n"] == 0:
        st.info("No human labels yet: `judgecal annotate pull` or import a dataset with labels.")
        return
    st.table(plain_table(pd.DataFrame([
        {"statistic": "Fleiss' kappa", "value": fmt_metric(summ["fleiss_kappa"]), "items": summ["fleiss_kappa"]["n"]},
        {"statistic": "Krippendorff's alpha", "value": fmt_metric(summ["krippendorff_alpha"]),
         "items": summ["krippendorff_alpha"]["n"]},
        *[{"statistic": f"Cohen's kappa {pair.replace('|', ' vs ')}", "value": fmt_metric(m), "items": m["n"]}
          for pair, m in summ["pairwise"].items()],
    ]).set_index("statistic")))
    rows = []
    for name, r in summ["annotators"].items():
        rows.append({"annotator": name, "labels": r["n_labels"],
                     "agreement with the others": fmt_metric(r.get("loo_accuracy")),
                     "gold accuracy": fmt_metric(r.get("gold_accuracy")),
                     "flags": ", ".join(f for f in ("likely_spammer", "systematic_bias") if r.get(f)) or "–"})
    st.table(plain_table(pd.DataFrame(rows).set_index("annotator")))
    with_conf = [(n, r["confusion"]) for n, r in summ["annotators"].items() if "confusion" in r][:6]
    cols = st.columns(min(3, len(with_conf)) or 1)
    for k, (name, conf) in enumerate(with_conf):
        fig = go.Figure(go.Heatmap(z=conf["counts"], x=[chart_plain(c) for c in conf["cols_annotator"]],
                                   y=[chart_plain(r) for r in conf["rows_consensus"]],
                                   colorscale="Blues", showscale=False, texttemplate="%{z}"))
        fig.update_layout(title={"text": chart_plain(name), "font": {"size": 12}}, xaxis_title="annotator said",
                          yaxis_title="the others said", height=300, margin={"l": 10, "r": 10, "t": 40, "b": 40})
        cols[k % len(cols)].plotly_chart(fig)


def main() -> None:
    st.set_page_config(page_title="judgecal explorer", layout="wide")
    ws_path = Path(_args().workspace)
    report_path = ws_path / "reports" / "audit.json"
    st.title("judgecal explorer")
    if not report_path.exists():
        st.warning(f"No audit yet in {md_plain(str(ws_path))}: run `judgecal audit` on this workspace.")
        return
    report = json.loads(report_path.read_text("utf-8"))
    s = report["settings"]
    st.caption(f"Audit {report['generated_at']} · consensus {md_plain(s['consensus'])} over "
               f"{report['consensus']['n_items']} items · {s['n_boot']} bootstrap replicates · {int(s['ci_level'] * 100)}% intervals")

    st.header("Alignment with the humans")
    st.table(plain_table(alignment_table(report).set_index("judge")))

    st.header("Position bias")
    fig = position_plot(report)
    if fig is None:
        st.info("No judge was run in both presentation orders.")
    else:
        st.plotly_chart(fig)

    st.header("Bias report card")
    card = report_card(report)
    if card.empty:
        st.info("No bias metric yet: judge in both orders, or run `judgecal probe padding|injection`.")
    else:
        st.caption("p and BH q test each bias against its null; a null result whose MDE exceeds the effect of "
                   "interest is flagged underpowered, not 'no bias'.")
        st.table(plain_table(card.set_index("judge")))

    annotators_section(ws_path)

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
            st.text(f"model: {cand.model or 'unknown'}")
            st.text(cand.text)
    ann = ws.annotations_frame()
    st.subheader("Human labels")
    st.table(plain_table(ann[ann["item_id"] == choice][["annotator", "label", "source"]].reset_index(drop=True)))
    cons = ws.consensus_frame()
    st.table(plain_table(cons[cons["item_id"] == choice][["method", "label", "posterior"]].reset_index(drop=True)))
    st.subheader("Judge verdicts (item orientation) — compare with the human labels above")
    st.table(plain_table(judged[judged["item_id"] == choice].drop(columns=["item_id"]).reset_index(drop=True)))


main()
