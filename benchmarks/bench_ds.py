"""Dawid-Skene on 1,000,000 annotations: judgecal's aggregator against bare crowd-kit on the same
data (integer-coded ids for crowd-kit; judgecal codes the string ids itself), run alternately.
Targets: judgecal's time within 1.2x of crowd-kit's; peak memory <= 700 MB (measured in a fresh
process per run). Prints JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import fresh, machine  # noqa: E402

N_ITEMS, PER_ITEM = 200_000, 5

CHILD = r"""
import json, resource, sys, time
import numpy as np, pandas as pd
which = sys.argv[1]
rng = np.random.default_rng(0)
n_items, per_item, n_workers = {n_items}, {per_item}, 2000
truth = rng.choice(3, n_items, p=[0.45, 0.45, 0.1])
task = np.repeat(np.arange(n_items), per_item)
worker = rng.integers(0, n_workers, task.size)
skill = rng.uniform(0.3, 0.95, n_workers)
label = np.where(rng.random(task.size) < skill[worker], truth[task], rng.integers(0, 3, task.size))
names = np.array(["A", "B", "tie"])
if which == "crowdkit":
    from crowdkit.aggregation import DawidSkene
    df = pd.DataFrame({{"task": task, "worker": worker, "label": label}})
    t0 = time.perf_counter(); out = DawidSkene(n_iter=100, tol=1e-5).fit(df).labels_; dt = time.perf_counter() - t0
    acc = float((out.sort_index().to_numpy() == truth).mean())
else:
    from judgecal.aggregate.models import DawidSkene
    df = pd.DataFrame({{"item_id": pd.Series(task).map("item{{}}".format), "annotator": pd.Series(worker).map("w{{}}".format),
                       "label": names[label]}})
    t0 = time.perf_counter(); out = DawidSkene(n_iter=100, tol=1e-5).fit(df).labels_; dt = time.perf_counter() - t0
    idx = out.index.str[4:].astype(int)
    acc = float((out.to_numpy() == names[truth[idx]]).mean())
print(json.dumps({{"seconds": dt, "accuracy": acc, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""


def run(which: str) -> dict[str, float]:
    code = CHILD.format(n_items=N_ITEMS, per_item=PER_ITEM)
    out = subprocess.run(fresh([sys.executable, "-c", code, which]), capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    runs: dict[str, list[dict[str, float]]] = {"crowdkit": [], "judgecal": []}
    for _ in range(2):
        for which in ("crowdkit", "judgecal"):
            runs[which].append(run(which))
    best = {k: min(r["seconds"] for r in v) for k, v in runs.items()}
    print(json.dumps({
        "benchmark": "dawid_skene_1m", "machine": machine(), "annotations": N_ITEMS * PER_ITEM, "items": N_ITEMS,
        "runs": runs, "best_seconds": best, "ratio_judgecal_over_crowdkit": round(best["judgecal"] / best["crowdkit"], 3),
        "judgecal_peak_rss_mb": max(r["peak_rss_mb"] for r in runs["judgecal"]),
        "targets": {"ratio": "<= 1.2", "judgecal_peak_rss_mb": "<= 700"},
    }, indent=1))


if __name__ == "__main__":
    main()
