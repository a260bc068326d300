"""``judgecal audit`` on the CLI path, on this machine and with ``--executor ray`` (a loopback cluster of
separate ``ray start`` processes): seconds and the driver's peak memory, side by side in one run, on one
workspace of N synthetic judgments (default 1,000,000: 10 judges x 50,000 items x 2 orders).

With the executor, the cluster computes the alignment and position figures from per-item sums first and the
audit reads them instead of computing them (the other probes and sections still read the judgments here), so
the driver's memory is what the rest of the audit needs. Each audit runs in its own process (the CLI's own
``main``), so its peak memory is its own. ``local_first``: the first audit of the workspace, which reads the
judgments out of SQLite and leaves their columnar copy in ``cache/``; ``local`` and ``ray``: later audits. ``profile``: one more local audit, step by step (seconds and peak
memory after each step). Prints JSON; the targets are 1M judgments in <= 5 s and <= 400 MB.
``python bench_audit_driver.py [--items 50000] [--judges 10] [--n-boot 2000]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import audit_profile, fresh, machine  # noqa: E402

from judgecal.data.records import Consensus, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

ORDERS = ("AB", "BA")


def build(path: Path, n_items: int, n_judges: int, seed: int = 0) -> int:
    rng = np.random.default_rng(seed)
    ws = Workspace(path)
    labels = np.array(["A", "B", "tie"])
    truth = labels[rng.choice(3, n_items, p=[0.45, 0.45, 0.1])]
    ws.annotations_repo.set_consensus([Consensus(f"item{i}", "ds", str(truth[i])) for i in range(n_items)], "ds")
    for j in range(n_judges):
        v = labels[rng.choice(3, size=(n_items, 2), p=[0.45, 0.45, 0.1])]
        ws.judgments_repo.add_judgments([Judgment(key=f"{j}-{i}-{o}", item_id=f"item{i}", judge=f"bench/judge{j}", spec_hash="s",
                                   order=o, raw=str(v[i, k]), verdict=str(v[i, k]), prompt_tokens=300,
                                   completion_tokens=2, latency_s=0.2, cost_usd=0.0001)
                          for i in range(n_items) for k, o in enumerate(ORDERS)])
    n = ws.judgments_repo.count_judgments()
    ws.close()
    return n


def _cli_audit(*args: str) -> dict[str, float]:
    """``judgecal audit`` in a fresh process: its wall seconds and peak resident memory."""
    code = ("import json, resource, sys, time; from judgecal.cli import main; t = time.perf_counter(); "
            "rc = main(sys.argv[1:]); print(json.dumps({'rc': rc, 'seconds': round(time.perf_counter() - t, 2), "
            "'peak_rss_mb': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))")
    res = subprocess.run(fresh([sys.executable, "-c", code, "audit", "--quiet", *args]), capture_output=True,
                         text=True)
    out = json.loads(res.stdout.strip().splitlines()[-1])
    if out["rc"] != 0:
        raise SystemExit(res.stderr)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=50_000)
    ap.add_argument("--judges", type=int, default=10)
    ap.add_argument("--n-boot", type=int, default=2000)
    args = ap.parse_args()
    from judgecal.distributed.loopback import LoopbackCluster

    result: dict[str, object] = {"benchmark": "audit_driver", "machine": machine(),
                                 "load_average_1min_at_start": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        ws = Path(tmp) / "ws"
        t0 = time.perf_counter()
        n = build(ws, args.items, args.judges)
        result.update(judgments=n, items=args.items, judges=args.judges, n_boot=args.n_boot,
                      build_s=round(time.perf_counter() - t0, 1))
        common = ["--workspace", str(ws), "--n-boot", str(args.n_boot)]
        cluster = LoopbackCluster(workers=1, cpus_per_worker=1, head_cpus=0)
        try:
            cluster.start()
            # a first audit reads the judgments out of SQLite, draws its bootstrap weights and leaves both in the
            # workspace's cache/ folder; a later one (the same judgments) reads them back
            runs: dict[str, list[dict[str, float]]] = {}
            for k in range(2):  # alternate, so a load spike falls on each
                shutil.rmtree(ws / "cache", ignore_errors=True)
                runs.setdefault("local_first", []).append(_cli_audit(*common, "--out", str(Path(tmp) / f"first{k}")))
                runs.setdefault("local", []).append(_cli_audit(*common, "--out", str(Path(tmp) / f"local{k}")))
                runs.setdefault("ray", []).append(_cli_audit(*common, "--out", str(Path(tmp) / f"ray{k}"),
                                                             "--executor", "ray", "--address", cluster.address))
        finally:
            cluster.stop()
        a = json.loads((Path(tmp) / "local0" / "audit.json").read_text())
        b = json.loads((Path(tmp) / "ray0" / "audit.json").read_text())
        same = all(a["judges"][j]["metrics"] == b["judges"][j]["metrics"] for j in a["judges"])
        result["profile"] = audit_profile(str(ws), "ds", args.n_boot)  # where the local audit's time goes
    result["local_first"] = runs["local_first"]
    result["local"] = runs["local"]
    result["ray"] = runs["ray"]
    result["same_figures"] = same
    result["targets"] = {"local_seconds": "<= 5", "driver_peak_rss_mb": "<= 400"}
    result["driver_peak_rss_mb"] = {"local": min(r["peak_rss_mb"] for r in runs["local"]),
                                    "ray": min(r["peak_rss_mb"] for r in runs["ray"])}
    result["children_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
