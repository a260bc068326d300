"""Stability runs of the embedded judge on real PandaLM items (LLMBar Natural with --datasets pandalm,llmbar):
seeds, temperature, prompt mutations, few-shot, llama.cpp batch size, concurrency and backend (llama.cpp vs
transformers).

    python benchmarks/bench_stability.py --items 20 --out benchmarks/results/stability.json
    python benchmarks/bench_stability.py --judge local/gemma3 --items 20 --out benchmarks/results/stability_gemma3.json

Two runs per dataset: greedy decoding as the base (seed variants reuse it: greedy ignores the seed) over
every axis, and sampling at temperature 0.7 over seeds (its base is the first run's temperature=0.7
variant, answered by the cache), then the judge beside the other embedded judge (the ``judge`` axis: item
agreement and κ between local/smollm2 and local/gemma3, same items and prompts). Prints and writes each run's Stability Scores, decomposition, cross-backend
agreement, the guard at 1.4 points and the calls paid. Needs the local and hf extras; no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.aggregate.consensus import compute_consensus  # noqa: E402
from judgecal.audit.stability_section import summarise_run  # noqa: E402
from judgecal.data.ingest import import_dataset  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.stability.runs import OTHER_EMBEDDED, run_stability  # noqa: E402

# one or two levels per axis: on 2 shared cores a call of the embedded judge takes ~1-4 s
LEVELS = {"temperature": (0.7,), "mutation": ("whitespace", "paraphrase"), "fewshot": ("fewshot_ab",),
          "batch_size": (64,), "concurrency": (1,)}


def _brief(s: dict) -> dict:
    figs = {k: {x: r[x] for x in ("figures", "sigma_pp", "sigma_ci", "score", "score_ci")}
            | {"top_axis": r["decomposition"]["top_axis"], "largest_shift": r["decomposition"]["largest_shift"],
               "axis_shares": {a: d["share"] for a, d in r["decomposition"]["axes"].items()}}
            for k, r in s["figures"].items() if k in ("accuracy", "kappa") or k.startswith("winrate:")}
    return {"run_id": s["run_id"], "judge": s["judge"], "n_items": s["n_items"],
            "variants": [{k: v[k] for k in ("name", "axis", "paid", "calls", "reused_from", "identical_outputs")} | {
                "accuracy": v["figures"].get("accuracy"), "kappa": v["figures"].get("kappa")} for v in s["variants"]],
            "calls": s["calls"], "figures": figs, "cross_backend": s["cross_backend"],
            "cross_judge": s["cross_judge"],
            "guard_1_4": {"status": s["guard"]["status"],
                          "violations": [(v["figure"], v["name"], v["shift_pp"]) for v in s["guard"]["violations"]
                                         if v["figure"] in ("accuracy", "kappa")]},
            "fingerprint_diffs": s["fingerprint_diffs"], "notes": s["notes"]}


def bench(ws: Workspace, source: str | None, items: int, consensus: str, judge: str = "local/smollm2") -> list[dict]:
    out = []
    t0 = time.perf_counter()
    greedy = run_stability(ws, judge, ["seed", "temperature", "mutation", "fewshot", "batch_size",
                                                 "concurrency", "backend"], items=items, source=source,
                           consensus=consensus, levels=LEVELS)
    t1 = time.perf_counter()
    run = next(r for r in ws.stability_repo.stability_runs() if r["run_id"] == greedy["run_id"])
    out.append({"run": "greedy base, every axis", "levels": {k: list(v) for k, v in LEVELS.items()}, "seconds": round(t1 - t0, 1),
                **_brief(summarise_run(ws, run, n_boot=1000))})
    sampled = run_stability(ws, judge, ["seed"], items=items, source=source, consensus=consensus,
                            temperature=0.7, levels={"seed": (1, 2)})
    run = next(r for r in ws.stability_repo.stability_runs() if r["run_id"] == sampled["run_id"])
    t2 = time.perf_counter()
    out.append({"run": "temperature 0.7, seeds 0-2", "seconds": round(t2 - t1, 1),
                **_brief(summarise_run(ws, run, n_boot=1000))})
    if judge.removeprefix("local/") in OTHER_EMBEDDED:
        beside = run_stability(ws, judge, ["judge"], items=items, source=source, consensus=consensus)
        run = next(r for r in ws.stability_repo.stability_runs() if r["run_id"] == beside["run_id"])
        out.append({"run": "greedy, beside the other embedded judge", "seconds": round(time.perf_counter() - t2, 1),
                    **_brief(summarise_run(ws, run, n_boot=1000))})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--judge", default="local/smollm2", help="local/smollm2 or local/gemma3")
    ap.add_argument("--datasets", default="pandalm", help="comma list of pandalm, llmbar (LLMBar Natural)")
    ap.add_argument("--workspace", help="reuse this workspace (its cache) instead of a temporary one")
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args()
    result: dict = {"benchmark": "stability", "judge": args.judge, "machine": machine(), "items": args.items,
                    "datasets": {}}
    with tempfile.TemporaryDirectory() as tmp:
        wanted = args.datasets.split(",")
        if "pandalm" in wanted:
            ws = Workspace(args.workspace or Path(tmp) / "ws")
            if "pandalm" not in ws.items_repo.sources():
                import_dataset(ws, "pandalm")
            compute_consensus(ws, ("ds",))
            result["datasets"]["pandalm"] = bench(ws, "pandalm", args.items, "ds", args.judge)
            ws.close()
        if "llmbar" in wanted:  # its own workspace: one gold label per item, the consensus is that label (mv)
            ws = Workspace((Path(args.workspace) if args.workspace else Path(tmp) / "ws").with_name("ws-llmbar"))
            if "llmbar/Natural" not in ws.items_repo.sources():
                import_dataset(ws, "llmbar/Natural")
            compute_consensus(ws, ("mv",))
            result["datasets"]["llmbar/Natural"] = bench(ws, "llmbar/Natural", args.items, "mv", args.judge)
            ws.close()
    result["peak_rss_mb"] = peak_rss_mb()
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
