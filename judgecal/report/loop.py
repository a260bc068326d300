"""The loop part of a report: the plain rows every surface (HTML/PDF report, explorer) shows of ``audit.json``'s
``loop`` (:class:`judgecal.audit.schema.Loop`; :mod:`judgecal.audit.loop_section` reads it from the workspace)."""

from __future__ import annotations

from judgecal.audit.loop_section import FILES
from judgecal.audit.schema import Alignment, Loop, LoopMetric
from judgecal.report.table import Row

TITLES = {
    "gate": "Gate: the candidate against the baseline on the same human-labelled items (paired bootstrap)",
    "panels": "Panels: strict majority of their members (undecided slots never broken)",
    "align": "Alignment from the human labels: held-out split only",
    "cascades": "Cascades: cheap judge, stronger judge, people (Trust or Escalate over the chain)",
}


def built_from(a: Alignment) -> str:
    """What an alignment's candidate was built from, in words (train split only)."""
    shots, rules = len(a.shots), len(a.guidelines)
    o = a.optimizer
    if a.method == "optimizer" and o is not None and o.to_json():
        return (f"{shots} examples chosen by {o.library} {o.optimizer} from {o.candidates} "
                f"sets scored on {o.n_val} train items (best agreement {o.best_val_agreement})")
    if a.method == "guidelines":
        r = a.rationales
        used, agree, positional = (r.used, r.agree_with_truth, r.positional) if r else (0, 0, 0)
        return (f"{rules} guidelines, {used} quoted from annotators' rationales "
                f"({agree} on train items agreeing with the truth, {positional} "
                "left out for naming a shown position)")
    return f"{shots} examples from the judge's disagreements on the train split"

def _ci(r: LoopMetric) -> str:
    d, lo, hi = r.difference, r.ci_low, r.ci_high
    if d is None:
        return "undefined"
    return f"{d:+.3f} ({lo:+.3f} to {hi:+.3f})" if lo is not None and hi is not None else f"{d:+.3f}"


def _metric_rows(metrics: dict[str, LoopMetric]) -> list[Row]:
    return [{"metric": name, "baseline": r.baseline, "candidate": r.candidate,
             "difference (95% CI)": _ci(r), "tolerance": r.tolerance, "result": r.result}
            for name, r in metrics.items()]


def loop_tables(loop: Loop | None) -> dict[str, list[Row]]:
    """Rows per part: ``gate`` (one per metric), ``panels`` (one per panel), ``align`` (one per candidate and
    metric of the held-out comparison), ``cascades`` (one per cascade and stage, then its people row)."""
    loop = loop or Loop()
    out: dict[str, list[Row]] = {k: [] for k in FILES}
    gate = loop.gate
    if gate is not None and gate.to_json():
        for row in _metric_rows(gate.metrics):
            out["gate"].append({"baseline judge": gate.baseline, "candidate judge": gate.candidate,
                                "items": gate.n_items, **row,
                                "gate": "passed" if gate.passed else "failed"})
    for name, p in loop.panels.items():
        out["panels"].append({"panel": name, "members": ", ".join(map(str, p.members)),
                              "rule": p.rule, "verdict slots": p.slots, "decided": p.decided,
                              "unanimous": p.unanimous, "no majority": p.no_majority})
    for name, a in loop.align.items():
        split = a.split
        for row in _metric_rows(a.held_out.metrics if a.held_out else {}):
            out["align"].append({"candidate judge": name, "from": a.judge, "method": a.method,
                                 "built from": built_from(a), "train labels": split.n_train if split else None,
                                 "held-out labels": split.n_held_out if split else None, **row,
                                 "held-out conclusion": a.conclusion})
    for name, c in loop.cascades.items():
        guarantee = 1 - float(c.delta or 0)
        for st in c.stages:
            out["cascades"].append({
                "cascade": name, "stage": st.judge, "threshold": st.threshold,
                "share decided": st.all_items.share_decided if st.all_items else None,
                "held-out agreement": st.held_out.agreement if st.held_out else None,
                "target": c.target, "guarantee holds with probability": guarantee,
                "cost per item": None})
        out["cascades"].append({
            "cascade": name, "stage": "people", "threshold": None, "share decided": c.share_to_people,
            "held-out agreement": c.held_out.agreement if c.held_out else None, "target": c.target,
            "guarantee holds with probability": guarantee, "cost per item": c.cost_per_item})
    return out
