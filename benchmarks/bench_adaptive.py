"""Adaptive number of repeats against a fixed N = 32 at the same ε, on real runs of the embedded judge at
temperature 0.7 over PandaLM items.

    python benchmarks/bench_adaptive.py --items 12 --out benchmarks/results/adaptive.json

ε is the half-width a fixed N = 32 guarantees for any 0/1 outcome, z · 0.5 / √32 (0.173 at 95%); the adaptive
run starts every (item, order) at n0 = 8 and grows it to ⌈(z s / ε)²⌉ (arXiv 2506.04734). Its calls are the
first N of the fixed run (same seeds, shared cache), so the fixed run then pays only the rest. Reports the
calls each needs, the fraction saved, and how far the adaptive estimates are from the fixed-32 ones.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.data.ingest import import_dataset  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.judges.engine import Engine  # noqa: E402
from judgecal.judges.registry import make_backend  # noqa: E402
from judgecal.judges.rubric import load_rubric  # noqa: E402
from judgecal.judges.spec import JudgeSpec  # noqa: E402
from judgecal.stability.adaptive import adaptive_repeats, fixed_repeats, replay_adaptive  # noqa: E402
from judgecal.stats.stability import worst_case_epsilon  # noqa: E402


def replay(ws_path: str, fixed: int, n0: int) -> dict:
    """The adaptive rule replayed on the fixed run's recorded answers: the smoothed spread (must give the live
    run's calls) and the paper's plain sample standard deviation (stops a unanimous unit at n0)."""
    ws = Workspace(ws_path)
    df = ws.judgments_frame(columns=["item_id", "order", "sample", "verdict", "judge"])
    ws.close()
    df = df[~df["judge"].astype(str).str.startswith("replay/")].sort_values("sample")
    units = {u: (g["verdict"] == "A").astype(float).tolist()[:fixed] for u, g in df.groupby(["item_id", "order"])}
    eps = worst_case_epsilon(fixed)
    out = {}
    for spread in ("smoothed", "plain"):
        n = replay_adaptive(units, epsilon=eps, n0=n0, n_max=fixed, spread=spread)
        calls = sum(n.values())
        est = {u: float(np.mean(units[u][:n[u]])) for u in units}
        full = {u: float(np.mean(units[u])) for u in units}
        diff = np.array([abs(est[u] - full[u]) for u in units])
        out[spread] = {"calls": calls, "fixed_calls": fixed * len(units),
                       "fraction_saved": round(1 - calls / (fixed * len(units)), 4),
                       "share_within_epsilon": round(float((diff <= eps).mean()), 4),
                       "max_abs_diff": round(float(diff.max()), 4)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--fixed", type=int, default=32)
    ap.add_argument("--n0", type=int, default=8)
    ap.add_argument("--workspace")
    ap.add_argument("--out")
    ap.add_argument("--replay", action="store_true", help="only replay the rule on --workspace's recorded answers "
                    "and add the figures to --out")
    args = ap.parse_args()
    if args.replay:
        prev = json.loads(Path(args.out).read_text()) if args.out and Path(args.out).exists() else {}
        prev["replay_on_recorded_answers"] = replay(args.workspace, args.fixed, args.n0)
        text = json.dumps(prev, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return
    eps = worst_case_epsilon(args.fixed)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(args.workspace or Path(tmp) / "ws")
        if "pandalm" not in ws.sources():
            import_dataset(ws, "pandalm")
        items = sorted(random.Random(0).sample(ws.items(source="pandalm"), args.items), key=lambda it: it.item_id)
        backend = make_backend("local/smollm2")
        spec = JudgeSpec(backend="local", model="smollm2", temperature=args.temperature)
        eng = Engine(ws, backend, load_rubric("pairwise"), spec=spec, concurrency=2, progress=False)
        t0 = time.perf_counter()
        ad = adaptive_repeats(eng, items, epsilon=eps, n0=args.n0, n_max=args.fixed)
        t1 = time.perf_counter()
        fx = fixed_repeats(eng, items, args.fixed)
        t2 = time.perf_counter()
        ws.close()
    fixed_est = {(u["item_id"], u["order"]): u["estimate"] for u in fx["units"]}
    diff = np.array([abs(u["estimate"] - fixed_est[(u["item_id"], u["order"])]) for u in ad["units"]])
    ns = np.array([u["n"] for u in ad["units"]])
    result = {
        "benchmark": "adaptive repeats vs fixed N", "machine": machine(), "judge": "local/smollm2",
        "temperature": args.temperature, "items": args.items, "units": len(ad["units"]), "epsilon": round(eps, 4),
        "z": ad["z"], "n0": args.n0, "fixed_n": args.fixed,
        "calls": {"adaptive": ad["calls"], "fixed": fx["calls"]},
        "fraction_saved": round(1 - ad["calls"] / fx["calls"], 4),
        "rounds": ad["rounds"],
        "adaptive_n": {"min": int(ns.min()), "median": float(np.median(ns)), "max": int(ns.max()),
                       "units_at_n0": int((ns == args.n0).sum()), "units_at_fixed": int((ns == args.fixed).sum())},
        "estimate_vs_fixed": {"mean_abs_diff": round(float(diff.mean()), 4), "max_abs_diff": round(float(diff.max()), 4),
                              "share_within_epsilon": round(float((diff <= eps).mean()), 4)},
        "seconds": {"adaptive": round(t1 - t0, 1), "fixed_remainder": round(t2 - t1, 1)},
        "peak_rss_mb": peak_rss_mb(),
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
