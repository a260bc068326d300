"""Run the audit of every judge in a workspace against the human consensus."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd

from judgecal import __version__
from judgecal.audit.alignment import judge_metrics, usage_metrics
from judgecal.data.store import Workspace

SCHEMA = "judgecal.audit/1"
COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "score", "status", "prompt_tokens",
           "completion_tokens", "latency_s", "cost_usd")


def run_audit(ws: Workspace, *, consensus: str = "ds", invalid_as: str = "tie", n_boot: int = 2000,
              seed: int = 0, level: float = 0.95, judges: list[str] | None = None) -> dict[str, Any]:
    """The audit as a JSON-ready dict (schema ``judgecal.audit/1``, see ``docs`` in the README)."""
    cons = ws.consensus_frame(consensus)
    truth = pd.Series(cons["label"].to_numpy(), index=cons["item_id"].to_numpy())
    frame = ws.judgments_frame(columns=COLUMNS)
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "judgecal_version": __version__,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"consensus": consensus, "invalid_as": invalid_as, "n_boot": n_boot, "seed": seed,
                     "ci_level": level, "bootstrap": "item-level cluster bootstrap, percentile interval"},
        "consensus": {"method": consensus, "n_items": int(len(truth)),
                      "label_counts": {str(k): int(v) for k, v in truth.value_counts().items()}},
        "judges": {},
    }
    names = judges or sorted(frame["judge"].unique())
    for judge in names:
        jf = frame[frame["judge"] == judge]
        pairwise = jf["verdict"].notna().any()
        entry: dict[str, Any] = {
            "kind": "pairwise" if pairwise else "pointwise",
            "n_judgments": int(len(jf)),
            "n_items": int(jf["item_id"].nunique()),
            "n_items_with_consensus": int(jf.loc[jf["item_id"].isin(truth.index), "item_id"].nunique()),
            "orders": sorted(jf["order"].unique().tolist()),
            "metrics": judge_metrics(jf, truth, invalid_as=invalid_as, n_boot=n_boot, seed=seed, level=level)
            if pairwise and len(truth) else {},
            "usage": usage_metrics(jf),
        }
        report["judges"][judge] = entry
    return report
