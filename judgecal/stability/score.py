"""Stability runs from stored repeats: a recorded judge's repeated pointwise scores as a ``scores`` run
(:func:`repeats_run`); the runs are scored by the audit (:mod:`judgecal.audit.stability_section`)."""

from __future__ import annotations

import json
import time
from typing import Any

from judgecal.audit.stability_section import StabilityError
from judgecal.data.records import stable_hash


def repeats_run(ws: Any, judge: str, *, scale: tuple[float, float] = (1.0, 5.0)) -> dict[str, Any]:
    """Store a ``scores`` run from a judge's stored repeated pointwise scores: sample index s is variant s
    (e.g. Prometheus' three GPT-4 scores per MT-Bench response: ``replay/prometheus/gpt-4``); scores are put
    on 0-1 by the rubric's ``scale`` (default 1-5), so σ is in points of the scale's range."""
    df = ws.judgments_repo.judgments_frame(judge=judge, columns=["item_id", "sample", "score", "raw", "env", "spec_hash"])
    df = df[df["score"].notna()]
    if df.empty:
        raise StabilityError(f"no stored scores of {judge!r}; import or run it first")
    samples = sorted(int(s) for s in df["sample"].unique())
    if len(samples) < 2:
        raise StabilityError(f"{judge!r} has one score per item; a stability run needs repeats (judge it with "
                             "several samples)")
    items = {it.item_id: it for it in ws.items_repo.items(ids=list(df["item_id"].unique()))}
    models = {i: (it.candidates[0].model if it.candidates else None) for i, it in items.items()}
    rows: list[dict[str, Any]] = []
    verdicts: list[tuple[int, str, str, str]] = []
    for j, s in enumerate(samples):
        part = df[df["sample"] == s]
        mean = float(((part["score"] - scale[0]) / (scale[1] - scale[0])).mean())
        rows.append({"variant": j, "name": "base" if j == 0 else f"repeat={s}", "axis": "base" if j == 0 else "repeat",
                     "level": str(s), "spec_hash": str(part["spec_hash"].iloc[0]), "reused_from": None,
                     "calls": int(len(part)), "paid": 0, "env": part["env"].iloc[0], "prompt": None,
                     "figures": {"mean_score": round(mean, 10)}})
        verdicts.extend((j, str(i), repr(float(x)), str(r)[:2000]) for i, x, r in
                        zip(part["item_id"], part["score"], part["raw"], strict=True))
    run_id = stable_hash({"repeats": judge, "n": int(len(df))})
    ws.stability_repo.add_stability_run({"run_id": run_id, "judge": judge, "spec_hash": rows[0]["spec_hash"], "origin": "replay",
                          "created_at": time.time(),
                          "config": {"kind": "scores", "scale": list(scale), "samples": samples,
                                     "models": {i: m for i, m in models.items() if m}}}, rows, verdicts)
    return {"run_id": run_id, "variants": rows}


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, default=str)
