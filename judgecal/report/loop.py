"""The loop part of a report: the plain rows every surface (HTML/PDF report, explorer) shows of ``audit.json``'s
``loop`` (:mod:`judgecal.audit.loop_section` reads it from the workspace)."""

from __future__ import annotations

from typing import Any

from judgecal.audit.loop_section import FILES

TITLES = {
    "gate": "Gate: the candidate against the baseline on the same human-labelled items (paired bootstrap)",
    "panels": "Panels: strict majority of their members (undecided slots never broken)",
    "align": "Alignment from the human labels: held-out split only",
    "cascades": "Cascades: cheap judge, stronger judge, people (Trust or Escalate over the chain)",
}


def built_from(a: dict[str, Any]) -> str:
    """What an alignment's candidate was built from, in words (train split only)."""
    shots, rules = len(a.get("shots") or []), len(a.get("guidelines") or [])
    if a.get("method") == "optimizer" and a.get("optimizer"):
        o = a["optimizer"]
        return (f"{shots} examples chosen by {o.get('library')} {o.get('optimizer')} from {o.get('candidates')} "
                f"sets scored on {o.get('n_val')} train items (best agreement {o.get('best_val_agreement')})")
    if a.get("method") == "guidelines":
        r = a.get("rationales") or {}
        return (f"{rules} guidelines, {r.get('used', 0)} quoted from annotators' rationales "
                f"({r.get('agree_with_truth', 0)} on train items agreeing with the truth, {r.get('positional', 0)} "
                "left out for naming a shown position)")
    return f"{shots} examples from the judge's disagreements on the train split"

def _ci(r: dict[str, Any]) -> str:
    d, lo, hi = r.get("difference"), r.get("ci_low"), r.get("ci_high")
    if d is None:
        return "undefined"
    return f"{d:+.3f} ({lo:+.3f} to {hi:+.3f})" if lo is not None and hi is not None else f"{d:+.3f}"


def _metric_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"metric": name, "baseline": r.get("baseline"), "candidate": r.get("candidate"),
             "difference (95% CI)": _ci(r), "tolerance": r.get("tolerance"), "result": r.get("result")}
            for name, r in metrics.items()]


def loop_tables(loop: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """Rows per part: ``gate`` (one per metric), ``panels`` (one per panel), ``align`` (one per candidate and
    metric of the held-out comparison), ``cascades`` (one per cascade and stage, then its people row)."""
    loop = loop or {}
    out: dict[str, list[dict[str, Any]]] = {k: [] for k in FILES}
    gate = loop.get("gate")
    if gate:
        for row in _metric_rows(gate.get("metrics") or {}):
            out["gate"].append({"baseline judge": gate.get("baseline"), "candidate judge": gate.get("candidate"),
                                "items": gate.get("n_items"), **row,
                                "gate": "passed" if gate.get("passed") else "failed"})
    for name, p in (loop.get("panels") or {}).items():
        out["panels"].append({"panel": name, "members": ", ".join(map(str, p.get("members") or [])),
                              "rule": p.get("rule"), "verdict slots": p.get("slots"), "decided": p.get("decided"),
                              "unanimous": p.get("unanimous"), "no majority": p.get("no_majority")})
    for name, a in (loop.get("align") or {}).items():
        split = a.get("split") or {}
        for row in _metric_rows((a.get("held_out") or {}).get("metrics") or {}):
            out["align"].append({"candidate judge": name, "from": a.get("judge"), "method": a.get("method"),
                                 "built from": built_from(a), "train labels": split.get("n_train"),
                                 "held-out labels": split.get("n_held_out"), **row,
                                 "held-out conclusion": a.get("conclusion")})
    for name, c in (loop.get("cascades") or {}).items():
        for st in c.get("stages") or []:
            out["cascades"].append({
                "cascade": name, "stage": st.get("judge"), "threshold": st.get("threshold"),
                "share decided": (st.get("all_items") or {}).get("share_decided"),
                "held-out agreement": (st.get("held_out") or {}).get("agreement"),
                "target": c.get("target"), "guarantee holds with probability": 1 - float(c.get("delta", 0)),
                "cost per item": None})
        held = c.get("held_out") or {}
        out["cascades"].append({
            "cascade": name, "stage": "people", "threshold": None, "share decided": c.get("share_to_people"),
            "held-out agreement": held.get("agreement"), "target": c.get("target"),
            "guarantee holds with probability": 1 - float(c.get("delta", 0)), "cost per item": c.get("cost_per_item")})
    return out
