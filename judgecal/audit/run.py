"""Run the audit of every judge in a workspace against the human consensus."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from judgecal import __version__
from judgecal.audit import stats
from judgecal.audit.alignment import JudgeSums, judge_sums, metrics_from, truth_codes, usage_metrics
from judgecal.data.store import Workspace

SCHEMA = "judgecal.audit/1"
COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "status", "prompt_tokens",
           "completion_tokens", "latency_s", "cost_usd")


def run_audit(ws: Workspace, *, consensus: str = "ds", invalid_as: str = "tie", n_boot: int = 2000,
              seed: int = 0, level: float = 0.95, judges: list[str] | None = None) -> dict[str, Any]:
    """The audit as a JSON-ready dict (schema ``judgecal.audit/1``, documented in the README).

    One item-level bootstrap over the consensus items serves every judge (paired intervals).
    """
    cons = ws.consensus_frame(consensus)
    truth = pd.Series(cons["label"].to_numpy(dtype=str), index=cons["item_id"].to_numpy(dtype=str))
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
    codes_all = truth_codes(frame["item_id"], truth)
    judge_col = frame["judge"].to_numpy(dtype=str)
    names = judges or sorted(set(judge_col))
    sums: dict[str, JudgeSums] = {}
    for judge in names:
        mask = judge_col == judge
        jf = frame[mask]
        codes = codes_all[mask]
        pairwise = bool(jf["verdict"].notna().any())
        js = judge_sums(jf, codes, truth.to_numpy(), len(truth), invalid_as) if pairwise and len(truth) else None
        if js is not None:
            sums[judge] = js
        report["judges"][judge] = {
            "kind": "pairwise" if pairwise else "pointwise",
            "n_judgments": int(len(jf)),
            "n_items": int(jf["item_id"].nunique()),
            "n_items_with_consensus": int(len(np.unique(codes[codes >= 0]))),
            "orders": sorted(jf["order"].unique().tolist()),
            "metrics": {},
            "usage": usage_metrics(jf),
        }
    if sums:
        widths = [js.sums.shape[1] for js in sums.values()]
        boot = stats.bootstrap_sums(np.hstack([js.sums for js in sums.values()]), n_boot, seed)
        start = 0
        for (judge, js), w in zip(sums.items(), widths, strict=True):
            report["judges"][judge]["metrics"] = metrics_from(js, boot[:, start:start + w], level)
            start += w
    return report
