"""Scale-out on a loopback Ray cluster (separate ``ray start`` processes on 127.0.0.1).

1. Judging: judgments/s of the embedded judge (SmolLM2-135M, llama.cpp, one thread per worker node)
   with one and with two worker nodes of one CPU each, and the driver's peak memory.
2. The distributed audit of N synthetic judgments (default 10M: 2 judges x 2 orders x 5 samples x 500k
   items, Parquet shards by item) against the single-process computation of the same figures on the
   same shards: seconds, each driver's peak memory, and whether the figures are equal.

Each measured driver runs in its own process so its peak memory is its own. Prints JSON.
``python bench_ray.py [--judgments 10000000] [--items-to-judge 24] [--n-boot 200]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

JUDGES = {"sim/strong": (0.80, 0.05), "sim/biased": (0.60, 0.25)}  # accuracy, pull towards the first position
ORDERS, SAMPLES, SHARDS = ("AB", "BA"), 5, 32


def synthetic(n_judgments: int, out: Path, seed: int = 0) -> tuple[int, Path]:
    """Shards of synthetic judgments and the truth; returns (items, truth file)."""
    from judgecal.distributed.audit import write_shards

    per_item = len(JUDGES) * len(ORDERS) * SAMPLES
    n_items = n_judgments // per_item
    rng = np.random.default_rng(seed)
    labels = np.array(["A", "B", "tie"])
    truth = pd.Series(labels[rng.choice(3, n_items, p=[0.45, 0.45, 0.10])],
                      index=pd.Index([f"it{i:08d}" for i in range(n_items)], name="item_id"), name="label")

    def frames(chunk: int = 20_000):  # type: ignore[no-untyped-def]
        for lo in range(0, n_items, chunk):
            ids = truth.index[lo:lo + chunk].to_numpy(dtype=object)
            t = truth.to_numpy()[lo:lo + chunk]
            parts = []
            for judge, (acc, pull) in JUDGES.items():
                for order in ORDERS:
                    for s in range(SAMPLES):
                        u = rng.random(len(ids))
                        right = u < acc
                        wrong = labels[rng.integers(0, 3, len(ids))]
                        v = np.where(right, t, wrong)
                        first = "A" if order == "AB" else "B"
                        v = np.where(rng.random(len(ids)) < pull, first, v)
                        v = np.where(rng.random(len(ids)) < 0.02, "invalid", v)
                        parts.append(pd.DataFrame({"item_id": ids, "judge": judge, "order": order, "sample": s,
                                                   "mutation": "none", "verdict": v,
                                                   "status": np.where(v == "invalid", "invalid", "ok")}))
            yield pd.concat(parts, ignore_index=True)

    write_shards(frames(), out / "shards", SHARDS)
    truth.to_frame().to_parquet(out / "truth.parquet")
    return n_items, out / "truth.parquet"


def _truth(path: str) -> pd.Series:
    return pd.read_parquet(path)["label"]


def audit_distributed(shard_dir: str, truth_path: str, address: str, n_boot: int) -> dict[str, object]:
    from judgecal.distributed.audit import distributed_alignment

    truth = _truth(truth_path)
    t0 = time.perf_counter()
    rep = distributed_alignment(sorted(Path(shard_dir).glob("*.parquet")), truth, n_boot=n_boot, address=address)
    return {"seconds": round(time.perf_counter() - t0, 2), "peak_rss_mb": peak_rss_mb(), "judges": rep["judges"]}


def audit_single(shard_dir: str, truth_path: str, n_boot: int) -> dict[str, object]:
    """The same figures in one process: every judgment in one (categorical) frame, the alignment probe's
    maths over it (:func:`judgecal.audit.alignment.judge_sums`, one shared bootstrap)."""
    import pyarrow.parquet as pq

    from judgecal.audit.alignment import judge_sums, metrics_from, truth_codes
    from judgecal.audit.metric import Metric
    from judgecal.stats import bootstrap as stats

    truth = _truth(truth_path)
    t0 = time.perf_counter()
    frame = pq.read_table(shard_dir, read_dictionary=["item_id", "judge", "order", "mutation", "verdict",
                                                      "status"]).to_pandas()
    sums = {}
    for judge in sorted(frame["judge"].unique()):
        j = frame[frame["judge"] == judge]
        js = judge_sums(j, truth_codes(j["item_id"], truth), truth.to_numpy(), len(truth))
        if js is not None:
            sums[str(judge)] = (js, len(j))
        del j
    boot = stats.bootstrap_sums(np.hstack([js.sums for js, _ in sums.values()]), n_boot, 0)
    out, start = {}, 0
    for judge, (js, n) in sums.items():
        w = js.sums.shape[1]
        out[judge] = {"n_judgments": n, "metrics": {k: Metric.of(v).to_json() for k, v in
                                                   metrics_from(js, boot[:, start:start + w]).items()}}
        start += w
    return {"seconds": round(time.perf_counter() - t0, 2), "peak_rss_mb": peak_rss_mb(), "judges": out}


def judge_rate(address: str, n_items: int, tag: str) -> dict[str, object]:
    from judgecal.data.records import Candidate, Item
    from judgecal.data.store import Workspace
    from judgecal.distributed.judge import remote_backend, run_on_ray
    from judgecal.judges.engine import Engine
    from judgecal.judges.rubric import load_rubric

    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        items = [Item(f"{tag}{k}", f"What is {k} + {k + 1}?", [Candidate(str(2 * k + 1)), Candidate(str(2 * k))])
                 for k in range(n_items + 4)]
        ws.items_repo.add_items(items)
        eng = Engine(ws, remote_backend("local/smollm2", {}, address), load_rubric("pairwise"), progress=False)
        run_on_ray(eng, eng.plan(items[:4]), batch_size=1)  # warm-up: every worker process loads the model
        calls = eng.plan(items[4:])
        t0 = time.perf_counter()
        st = run_on_ray(eng, calls, batch_size=2)
        secs = time.perf_counter() - t0
        return {"judgments": st.done, "errors": st.errors, "seconds": round(secs, 2),
                "judgments_per_s": round(st.done / secs, 2), "driver_peak_rss_mb": peak_rss_mb()}


def _sub(*args: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--judgments", type=int, default=10_000_000)
    ap.add_argument("--items-to-judge", type=int, default=24)
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--skip-judge", action="store_true")
    args = ap.parse_args()
    from judgecal.distributed.loopback import LoopbackCluster

    result: dict[str, object] = {"benchmark": "ray", "machine": machine(),
                                 "load_average_1min_at_start": round(os.getloadavg()[0], 2)}
    cluster = LoopbackCluster(workers=1, cpus_per_worker=1, head_cpus=0)
    try:
        cluster.start()
        if not args.skip_judge:
            one = _sub("_judge", cluster.address, str(args.items_to_judge), "a")
            cluster.add_worker()
            two = _sub("_judge", cluster.address, str(args.items_to_judge), "b")
            result["judging"] = {"judge": "local/smollm2", "one_worker_node": one, "two_worker_nodes": two,
                                 "ratio_two_over_one": round(two["judgments_per_s"] / one["judgments_per_s"], 2)}
        else:
            cluster.add_worker()
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
            t0 = time.perf_counter()
            n_items, truth = synthetic(args.judgments, Path(tmp))
            gen = time.perf_counter() - t0
            dist = _sub("_audit_dist", str(Path(tmp) / "shards"), str(truth), cluster.address, str(args.n_boot))
            single = _sub("_audit_single", str(Path(tmp) / "shards"), str(truth), str(args.n_boot))
            same = all(dist["judges"][j]["metrics"][k][f] == m[f] for j in single["judges"]
                       for k, m in single["judges"][j]["metrics"].items() for f in ("estimate", "ci_low", "ci_high", "n"))
            result["audit"] = {
                "judgments": args.judgments, "items": n_items, "judges": len(JUDGES), "orders": len(ORDERS),
                "samples": SAMPLES, "shards": SHARDS, "n_boot": args.n_boot, "generate_and_shard_s": round(gen, 1),
                "distributed": {k: dist[k] for k in ("seconds", "peak_rss_mb")},
                "single_process": {k: single[k] for k in ("seconds", "peak_rss_mb")},
                "driver_memory_ratio_single_over_distributed": round(single["peak_rss_mb"] / dist["peak_rss_mb"], 2),
                "same_figures": same,
                "accuracy": {j: dist["judges"][j]["metrics"]["accuracy"] for j in dist["judges"]},
            }
    finally:
        cluster.stop()
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        cmd, rest = sys.argv[1], sys.argv[2:]
        if cmd == "_judge":
            res = judge_rate(rest[0], int(rest[1]), rest[2])
        elif cmd == "_audit_dist":
            res = audit_distributed(rest[0], rest[1], rest[2], int(rest[3]))
        else:
            res = audit_single(rest[0], rest[1], int(rest[2]))
        print(json.dumps(res))
    else:
        main()
