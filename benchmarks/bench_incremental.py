"""Incremental audits at scale: a workspace of 10M synthetic judgments in 52 weekly periods (20 judges x 2 orders
x 250,016 items; each item's ``metadata.time`` in its week, so the audit's over-time section groups by week; the
truth set as a stored consensus, no annotators), then one more week of 200,000 judgments (5,000 items) added.

Measured, each audit in its own process (``judgecal audit``'s own ``main``) so its peak memory is its own:
``full_cold`` (nothing in ``cache/``: the judgments read out of SQLite, every period's partials computed),
``full_warm`` (the same workspace again: the columnar copies and every partial read back), then the week is added
(``add_week``: its items, judgments and the truth written), ``after_add`` (the audit of the workspace with the new
week: only the new week's partials computed; the columnar copies of the judgments made again, as every write
replaces them), ``monitor_after_add`` (``judgecal monitor --by week --json`` of one judge after another week
is added, the partials of its old periods read back), ``monitor_again`` (nothing changed since) and
``monitor_after_add_profile`` (one more week added, then the monitor under cProfile: where its time goes). The same through Ray (``--executor ray`` on a loopback cluster: ``ray_after_add``). Targets: the full
audit <= 60 s and <= 2 GB peak, a week added re-audited in <= 3 s. Prints JSON (saved as
``results/incremental.json``); where the time goes is in ``profile`` (the step-by-step audit of the workspace
after the week is added).

The workspace is built once under ``--root`` (default ``/tmp/judgecal-bench-incremental``) and copied for each
run, so a rerun does not write 10M judgments again. Synthetic records: what is measured is the store and the
audit at scale, not a judge.
``python bench_incremental.py [--root DIR] [--items-per-week 4808] [--judges 20] [--weeks 52] [--skip-ray]``
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import audit_profile, fresh, machine  # noqa: E402

from judgecal.data.records import Candidate, Consensus, Item, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

ORDERS = ("AB", "BA")
LABELS = np.array(["A", "B", "tie"])
START = datetime(2025, 1, 6, tzinfo=UTC)  # a Monday: week k is 2025-W(k+2) ...


def _week_items(week: int, n: int) -> list[Item]:
    t0 = START + timedelta(weeks=week)
    return [Item(f"w{week:03d}-{i:05d}", f"Question {week}.{i}: which answer is better?",
                 [Candidate(f"answer {i} a", "m1", "f1"), Candidate(f"answer {i} b", "m2", "f2")],
                 metadata={"time": (t0 + timedelta(seconds=int(i * 604_800 // max(n, 1)))).isoformat()})
            for i in range(n)]


def _week_judgments(rng: np.random.Generator, week: int, truth: np.ndarray, judges: int,
                    drift_from: int | None) -> Iterator[Judgment]:
    """Each judge's verdicts on one week's items: right with its accuracy (judge j: 0.60 + 0.01 j), else a
    random label; judge 0 loses 0.10 of accuracy from week ``drift_from`` on (a drift the monitor should see)."""
    n = len(truth)
    for j in range(judges):
        acc = 0.60 + 0.01 * j - (0.10 if j == 0 and drift_from is not None and week >= drift_from else 0.0)
        for order in ORDERS:
            right = rng.random(n) < acc
            v = np.where(right, truth, LABELS[rng.integers(0, 3, n)])
            for i in range(n):
                yield Judgment(key=f"{j}-{week}-{i}-{order}", item_id=f"w{week:03d}-{i:05d}", judge=f"bench/judge{j:02d}",
                               spec_hash="s", order=order, raw=str(v[i]), verdict=str(v[i]), prompt_tokens=300,
                               completion_tokens=2, latency_s=0.2, cost_usd=0.0001)


def add_week(ws: Workspace, rng: np.random.Generator, week: int, n: int, judges: int, truth: dict[str, str]) -> None:
    """One week's items, its truth (the stored consensus, written again whole: set_consensus replaces a method)
    and its judgments."""
    items = _week_items(week, n)
    ws.items_repo.add_items(items)
    t = LABELS[rng.choice(3, n, p=[0.45, 0.45, 0.1])]
    truth.update({it.item_id: str(t[i]) for i, it in enumerate(items)})
    ws.annotations_repo.set_consensus([Consensus(i, "ds", lab) for i, lab in truth.items()], "ds")
    ws.judgments_repo.add_judgments(_week_judgments(rng, week, t, judges, drift_from=40))


def build(path: Path, weeks: int, per_week: int, judges: int) -> dict[str, object]:
    """The base workspace (``weeks`` weeks), built once; its truth is kept beside it for the weeks added later."""
    done = path / "built.json"
    if done.exists():
        return json.loads(done.read_text())
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    truth: dict[str, str] = {}
    with Workspace(path / "ws") as ws:
        for week in range(weeks):
            items = _week_items(week, per_week)
            ws.items_repo.add_items(items)
            t = LABELS[rng.choice(3, per_week, p=[0.45, 0.45, 0.1])]
            truth.update({it.item_id: str(t[i]) for i, it in enumerate(items)})
            ws.judgments_repo.add_judgments(_week_judgments(rng, week, t, judges, drift_from=40))
            print(f"week {week}: {ws.judgments_repo.count_judgments():,} judgments", file=sys.stderr, flush=True)
        ws.annotations_repo.set_consensus([Consensus(i, "ds", lab) for i, lab in truth.items()], "ds")
        n = ws.judgments_repo.count_judgments()
    (path / "truth.json").write_text(json.dumps(truth))
    info = {"judgments": n, "items": len(truth), "judges": judges, "weeks": weeks, "items_per_week": per_week,
            "build_s": round(time.perf_counter() - t0, 1)}
    done.write_text(json.dumps(info))
    return info


def _cli(*args: str) -> dict[str, object]:
    """``judgecal ARGS`` in a fresh process: exit status, wall seconds and peak resident memory."""
    code = ("import json, resource, sys, time; from judgecal.cli import main; t = time.perf_counter(); "
            "rc = main(sys.argv[1:]); print(json.dumps({'rc': rc, 'seconds': round(time.perf_counter() - t, 2), "
            "'peak_rss_mb': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))")
    res = subprocess.run(fresh([sys.executable, "-c", code, *args]), capture_output=True, text=True)
    try:
        out: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"judgecal {' '.join(args)} failed:\n{res.stderr[-3000:]}") from None
    if out["rc"] not in (0, 1):
        raise SystemExit(res.stderr[-3000:])
    return out


_PROFILED = """
import cProfile, io, json, pstats, sys, time
from judgecal.cli import main
prof = cProfile.Profile()
t = time.perf_counter()
prof.enable()
rc = main(sys.argv[1:])
prof.disable()
seconds = time.perf_counter() - t
stats = pstats.Stats(prof, stream=io.StringIO())
rows = sorted(((f"{fn[0].split('/judgecal/')[-1].split('/site-packages/')[-1]}:{fn[1]}({fn[2]})", st[3])
               for fn, st in stats.stats.items() if not fn[0].startswith(("<", "~"))), key=lambda r: -r[1])[:30]
print(json.dumps({"rc": rc, "seconds_under_profiler": round(seconds, 2),
                  "cumulative_s": [[name, round(s, 3)] for name, s in rows]}))
"""


def _profiled(*args: str) -> dict[str, object]:
    """``judgecal ARGS`` under cProfile in a fresh process: the functions with the most cumulative time."""
    res = subprocess.run([sys.executable, "-c", _PROFILED, *args], capture_output=True, text=True)
    try:
        out: dict[str, object] = json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"judgecal {' '.join(args)} failed:\n{res.stderr[-3000:]}") from None
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=Path("/tmp/judgecal-bench-incremental"))
    ap.add_argument("--weeks", type=int, default=52)
    ap.add_argument("--items-per-week", type=int, default=4_808)
    ap.add_argument("--added-items", type=int, default=5_000)
    ap.add_argument("--judges", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--skip-ray", action="store_true")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args()
    base = args.root / f"base-{args.weeks}x{args.items_per_week}x{args.judges}"
    info = build(base, args.weeks, args.items_per_week, args.judges)
    if args.build_only:
        print(json.dumps(info))
        return
    result: dict[str, object] = {"benchmark": "incremental", "machine": machine(),
                                 "load_average_1min_at_start": round(os.getloadavg()[0], 2), **info,
                                 "n_boot": args.n_boot, "records": "synthetic (see the script's docstring)"}
    work = args.root / "work"
    shutil.rmtree(work, ignore_errors=True)
    t0 = time.perf_counter()
    shutil.copytree(base / "ws", work)
    result["copy_s"] = round(time.perf_counter() - t0, 1)
    ws_args = ["--workspace", str(work), "--n-boot", str(args.n_boot), "--quiet"]
    out = args.root / "out"
    result["full_cold"] = _cli("audit", *ws_args, "--out", str(out / "cold"))
    result["full_warm"] = _cli("audit", *ws_args, "--out", str(out / "warm"))
    truth = json.loads((base / "truth.json").read_text())
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    with Workspace(work) as ws:
        add_week(ws, rng, args.weeks, args.added_items, args.judges, truth)
        n = ws.judgments_repo.count_judgments()
    result["add_week"] = {"seconds": round(time.perf_counter() - t0, 1), "judgments_added": args.added_items * 2
                          * args.judges, "judgments_after": n}
    result["after_add"] = _cli("audit", *ws_args, "--out", str(out / "after"))
    monitor = ["monitor", "--workspace", str(work), "--judge", "bench/judge00", "--by", "week", "--json"]
    with Workspace(work) as ws:
        add_week(ws, rng, args.weeks + 1, args.added_items, args.judges, truth)
    result["monitor_after_add"] = _cli(*monitor)
    result["monitor_again"] = _cli(*monitor)
    with Workspace(work) as ws:
        add_week(ws, rng, args.weeks + 2, args.added_items, args.judges, truth)
    result["monitor_after_add_profile"] = _profiled(*monitor)
    if not args.skip_ray:
        from judgecal.distributed.loopback import LoopbackCluster

        with Workspace(work) as ws:
            add_week(ws, rng, args.weeks + 3, args.added_items, args.judges, truth)
        cluster = LoopbackCluster(workers=1, cpus_per_worker=1, head_cpus=0)
        try:
            cluster.start()
            result["ray_after_add"] = _cli("audit", *ws_args, "--out", str(out / "ray"), "--executor", "ray",
                                           "--address", cluster.address)
        finally:
            cluster.stop()
        a = json.loads((out / "after" / "audit.json").read_text())
        b = json.loads((out / "ray" / "audit.json").read_text())
        result["ray_note"] = ("ray_after_add audits the workspace with one more week than after_add (its own "
                              "week added first), so its figures are not compared with after_add's")
        result["ray_judges"] = len(b["judges"]) == len(a["judges"])
    cold = json.loads((out / "cold" / "audit.json").read_text())
    warm = json.loads((out / "warm" / "audit.json").read_text())
    result["warm_equals_cold"] = {k: v for k, v in cold.items() if k not in ("generated_at", "provenance")} == {
        k: v for k, v in warm.items() if k not in ("generated_at", "provenance")}
    result["profile"] = audit_profile(str(work), "ds", args.n_boot)
    result["targets"] = {"full_seconds": "<= 60", "full_peak_rss_mb": "<= 2048", "week_added_seconds": "<= 3"}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
