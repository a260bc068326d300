"""Store and audit at scale: insert 1M judgments (target <= 30 s), audit them (<= 20 s, 2,000
bootstrap replicates), peak memory <= 1 GB. Prints JSON."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.pipeline import AuditOptions, audit_workspace  # noqa: E402
from judgecal.data.records import Consensus, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

N_JUDGES, N_ITEMS, ORDERS = 10, 50_000, ("AB", "BA")


def judgments(rng: np.random.Generator, j: int) -> list[Judgment]:
    """One judge's 100,000 judgments (a chunk, so the harness itself stays small)."""
    out = []
    labels = np.array(["A", "B", "tie"])
    v = labels[rng.choice(3, size=(N_ITEMS, 2), p=[0.45, 0.45, 0.1])]
    for i in range(N_ITEMS):
        for o, order in enumerate(ORDERS):
            out.append(Judgment(key=f"{j}-{i}-{order}", item_id=f"item{i}", judge=f"bench/judge{j}",
                                spec_hash="s", order=order, raw=str(v[i, o]), verdict=str(v[i, o]),
                                prompt_tokens=300, completion_tokens=2, latency_s=0.2, cost_usd=0.0001))
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        truth = np.array(["A", "B", "tie"])[rng.choice(3, N_ITEMS, p=[0.45, 0.45, 0.1])]
        ws.annotations_repo.set_consensus([Consensus(f"item{i}", "ds", str(truth[i])) for i in range(N_ITEMS)], "ds")
        insert_s = 0.0
        for j in range(N_JUDGES):
            rows = judgments(rng, j)
            t0 = time.perf_counter()
            ws.judgments_repo.add_judgments(rows)
            insert_s += time.perf_counter() - t0
        del rows
        n = ws.judgments_repo.count_judgments()
        t1 = time.perf_counter()
        report = audit_workspace(ws, AuditOptions(n_boot=2000)).to_json()
        audit_s = time.perf_counter() - t1
        acc = report["judges"]["bench/judge0"]["metrics"]["accuracy"]
        print(json.dumps({
            "benchmark": "store", "machine": machine(), "judgments": n, "judges": N_JUDGES, "items": N_ITEMS,
            "insert_s": round(insert_s, 2), "audit_s": round(audit_s, 2), "n_boot": 2000,
            "example_metric": acc, "peak_rss_mb": peak_rss_mb(),
            "db_mb": round((Path(tmp) / "ws" / "judgecal.sqlite").stat().st_size / 2**20, 1),
            "targets": {"insert_s": "<= 30", "audit_s": "<= 20", "peak_rss_mb": "<= 1024"},
        }, indent=1))


if __name__ == "__main__":
    main()
