"""Adaptive number of repeats against a fixed N = 32 at the same ε, on real runs of the embedded judge at
temperature 0.7 over PandaLM items.

    python benchmarks/bench_adaptive.py --items 12 --out benchmarks/results/adaptive.json

ε is the half-width a fixed N = 32 guarantees for any 0/1 outcome, z · 0.5 / √32 (0.173 at 95%); the adaptive
run starts every (item, order) at n0 = 4 and grows it towards ⌈(z s / ε)²⌉ (arXiv 2506.04734) with the spread
pooled within each presentation order, at most doubling per round (judgecal/stability/adaptive.py). Its calls
are the first N of the fixed run (same seeds, shared cache), so the fixed run then pays only the rest.
Reports the calls each needs, the fraction saved, how far the adaptive estimates are from the fixed-32 ones,
the rules replayed on the recorded answers (this rule and the earlier ones), and the coverage each achieves:
P(|estimate − p| ≤ ε) for every unit, simulated with p set to the fixed-32 rates, beside fixed N = 32's own.
``--sample-seed`` picks other items (a held-out check of a rule chosen on earlier items).
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

# the rule (judgecal's default) and the earlier ones, each as (n0, spread, growth)
RULES = {"pooled_n0_4_double": (4, "pooled", "double"), "smoothed_n0_8_jump": (8, "smoothed", "jump"),
         "plain_n0_8_jump": (8, "plain", "jump")}


def coverage(p: dict, fixed: int, n_sims: int = 1000, seed: int = 0) -> dict:
    """Each rule and fixed N on simulated 0/1 answers with true rates ``p`` (unit -> rate): mean calls and
    the share of units, and the worst unit's share, whose estimate is within ε of its true rate."""
    eps = worst_case_epsilon(fixed)
    units = list(p)
    rates = np.array([p[u] for u in units])
    rng = np.random.default_rng(seed)
    hits: dict[str, list] = {name: [] for name in (*RULES, f"fixed_{fixed}")}
    calls: dict[str, list] = {name: [] for name in hits}
    for _ in range(n_sims):
        draws = (rng.random((len(units), fixed)) < rates[:, None]).astype(float)
        hits[f"fixed_{fixed}"].append(np.abs(draws.mean(axis=1) - rates) <= eps)
        calls[f"fixed_{fixed}"].append(fixed * len(units))
        for name, (n0, spread, growth) in RULES.items():
            n = replay_adaptive(dict(zip(units, draws, strict=True)), epsilon=eps, n0=n0, n_max=fixed,
                                spread=spread, growth=growth)
            est = np.array([draws[i, :n[u]].mean() for i, u in enumerate(units)])
            hits[name].append(np.abs(est - rates) <= eps)
            calls[name].append(sum(n.values()))
    out = {}
    for name, h in hits.items():
        per_unit = np.mean(h, axis=0)
        out[name] = {"mean_calls": round(float(np.mean(calls[name])), 1),
                     "fraction_saved": round(1 - float(np.mean(calls[name])) / (fixed * len(units)), 4),
                     "coverage": round(float(per_unit.mean()), 4), "worst_unit_coverage": round(float(per_unit.min()), 4)}
    return {"simulations": n_sims, "true_rates": "the fixed-N rates of the recorded units", **out}


def replay(ws_path: str, fixed: int) -> dict:
    """The rules replayed on the fixed run's recorded answers (the default must give the live run's calls),
    and their simulated coverage."""
    ws = Workspace(ws_path)
    df = ws.judgments_repo.judgments_frame(columns=["item_id", "order", "sample", "verdict", "judge"])
    ws.close()
    df = df[~df["judge"].astype(str).str.startswith("replay/")].sort_values("sample")
    units = {u: (g["verdict"] == "A").astype(float).tolist()[:fixed] for u, g in df.groupby(["item_id", "order"])}
    eps = worst_case_epsilon(fixed)
    out: dict = {}
    full = {u: float(np.mean(units[u])) for u in units}
    for name, (n0, spread, growth) in RULES.items():
        n = replay_adaptive(units, epsilon=eps, n0=n0, n_max=fixed, spread=spread, growth=growth)
        calls = sum(n.values())
        est = {u: float(np.mean(units[u][:n[u]])) for u in units}
        diff = np.array([abs(est[u] - full[u]) for u in units])
        out[name] = {"calls": calls, "fixed_calls": fixed * len(units),
                     "fraction_saved": round(1 - calls / (fixed * len(units)), 4),
                     "share_within_epsilon": round(float((diff <= eps).mean()), 4),
                     "max_abs_diff": round(float(diff.max()), 4)}
    out["coverage_simulated"] = coverage(full, fixed)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=12)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--fixed", type=int, default=32)
    ap.add_argument("--n0", type=int, default=4)
    ap.add_argument("--sample-seed", type=int, default=0, help="which PandaLM items (0: the 12 of the first run)")
    ap.add_argument("--workspace")
    ap.add_argument("--out")
    ap.add_argument("--replay", action="store_true", help="only replay the rule on --workspace's recorded answers "
                    "and add the figures to --out")
    args = ap.parse_args()
    if args.replay:
        prev = json.loads(Path(args.out).read_text()) if args.out and Path(args.out).exists() else {}
        prev["replay_on_recorded_answers"] = replay(args.workspace, args.fixed)
        text = json.dumps(prev, indent=2)
        print(text)
        if args.out:
            Path(args.out).write_text(text + "\n")
        return
    eps = worst_case_epsilon(args.fixed)
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(args.workspace or Path(tmp) / "ws")
        if "pandalm" not in ws.items_repo.sources():
            import_dataset(ws, "pandalm")
        items = sorted(random.Random(args.sample_seed).sample(ws.items_repo.items(source="pandalm"), args.items),
                       key=lambda it: it.item_id)
        backend = make_backend("local/smollm2")
        spec = JudgeSpec(backend="local", model="smollm2", temperature=args.temperature)
        eng = Engine(ws, backend, load_rubric("pairwise"), spec=spec, concurrency=2, progress=False)
        t0 = time.perf_counter()
        ad = adaptive_repeats(eng, items, epsilon=eps, n0=args.n0, n_max=args.fixed)
        t1 = time.perf_counter()
        fx = fixed_repeats(eng, items, args.fixed)
        t2 = time.perf_counter()
        ws.close()
        recorded = replay(str(ws.path), args.fixed)
    fixed_est = {(u["item_id"], u["order"]): u["estimate"] for u in fx["units"]}
    diff = np.array([abs(u["estimate"] - fixed_est[(u["item_id"], u["order"])]) for u in ad["units"]])
    ns = np.array([u["n"] for u in ad["units"]])
    result = {
        "benchmark": "adaptive repeats vs fixed N", "machine": machine(), "judge": "local/smollm2",
        "temperature": args.temperature, "items": args.items, "sample_seed": args.sample_seed,
        "units": len(ad["units"]), "epsilon": round(eps, 4), "z": ad["z"], "n0": args.n0, "fixed_n": args.fixed,
        "rule": {"spread": ad["spread"], "growth": ad["growth"]},
        "calls": {"adaptive": ad["calls"], "fixed": fx["calls"]},
        "paid_calls": {"adaptive": ad["paid_calls"], "fixed_remainder": fx["paid_calls"]},
        "fraction_saved": round(1 - ad["calls"] / fx["calls"], 4),
        "rounds": ad["rounds"],
        "adaptive_n": {"min": int(ns.min()), "median": float(np.median(ns)), "max": int(ns.max()),
                       "units_at_n0": int((ns == args.n0).sum()), "units_at_fixed": int((ns == args.fixed).sum())},
        "estimate_vs_fixed": {"mean_abs_diff": round(float(diff.mean()), 4), "max_abs_diff": round(float(diff.max()), 4),
                              "share_within_epsilon": round(float((diff <= eps).mean()), 4)},
        "seconds": {"adaptive": round(t1 - t0, 1), "fixed_remainder": round(t2 - t1, 1)},
        "peak_rss_mb": peak_rss_mb(),
        "replay_on_recorded_answers": recorded,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
