"""The embedded judge (SmolLM2-135M, ``local/smollm2``) over CALM's three sets and EvalBiasBench, within a stated
budget of calls: ``python benchmarks/bench_calm.py [ITEMS_PER_SET [JUDGE [TRAP_PAIRS]]]`` (defaults 4,
local/smollm2, 24).

Per CALM set, the ITEMS_PER_SET shortest pairs (fewest characters of prompt and responses: on two shared cores a
call costs seconds per hundred tokens; the fact set's among the pairs that carry the published sentiment,
fallacy and verbosity rewrites, the alignment set's among those with the authority rewrites) go through ``judgecal
probe battery`` (the clean run, a second unperturbed run and every perturbation that applies, both orders, and a
challenge and an agreeing turn after each clean verdict); the
TRAP_PAIRS shortest of EvalBiasBench's 80 trap pairs are judged in both orders (``judgecal judge``); then
``judgecal audit``.
The budget is the battery's cost (``2 x (biases + 2) + 4`` calls per pair) plus two per trap pair, stated in the output
before anything runs. Writes benchmarks/results/calm.json: per probe its figures (overall and per set), its flags,
the calls spent and the wall time of each stage, and the machine.

The same with an API judge (the key from OPENAI_API_KEY / ANTHROPIC_API_KEY):
``python benchmarks/bench_calm.py 100 openai/gpt-4o`` or ``anthropic/claude-sonnet-4-5`` (results then go to
``calm_<model>.json``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.perturb import TEMPLATED, TEMPLATES, perturbation_figures  # noqa: E402
from judgecal.cli import main as cli  # noqa: E402
from judgecal.cli.battery import calls_per_item  # noqa: E402
from judgecal.cli.challenge import FOLLOW_UPS  # noqa: E402
from judgecal.data.calm import load_calm  # noqa: E402
from judgecal.data.evalbiasbench import load_evalbiasbench  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

ITEMS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
JUDGE = sys.argv[2] if len(sys.argv) > 2 else "local/smollm2"
TRAPS = int(sys.argv[3]) if len(sys.argv) > 3 else 24
# set -> the rewrites its pairs must carry
SETS: dict[str, tuple[str, ...]] = {"fact": ("sentiment", "fallacy_oversight", "verbosity"), "alignment": ("authority",),
                                    "refinement": ()}


def _size(it: Any) -> int:
    return len(it.prompt) + sum(len(c.text) for c in it.candidates)


def _run(argv: list[str]) -> float:
    t0 = time.perf_counter()
    code = cli(argv)
    if code != 0:
        raise SystemExit(f"judgecal {' '.join(argv)}: exit {code}")
    return round(time.perf_counter() - t0, 1)


def main() -> None:
    os.environ.setdefault("JUDGECAL_DATA_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "datasets"))
    out: dict[str, Any] = {"benchmark": "calm", "judge": JUDGE, "items_per_set": ITEMS, "machine": machine()}
    with tempfile.TemporaryDirectory(prefix="judgecal-bench-calm-") as tmp:
        # JUDGECAL_BENCH_WS keeps the workspace (a rerun reads its cached calls)
        ws_path = os.environ.get("JUDGECAL_BENCH_WS") or str(Path(tmp) / "ws")
        t0 = time.perf_counter()
        ds, traps = load_calm(), load_evalbiasbench()
        ws = Workspace(Path(ws_path))
        chosen: dict[str, list[str]] = {}
        for s, needs in SETS.items():
            pool = [it for it in ds.items if it.metadata["calm_set"] == s
                    and set(needs) <= set(it.metadata.get("rewrites", {}))]
            chosen[s] = [it.item_id for it in sorted(pool, key=_size)[:ITEMS]]
        chosen["evalbiasbench"] = [it.item_id for it in sorted(traps.items, key=_size)[:TRAPS]]
        keep = {i for ids in chosen.values() for i in ids}
        for d in (ds, traps):
            ws.items_repo.add_items([it for it in d.items if it.item_id in keep])
            ws.annotations_repo.add_annotations([a for a in d.annotations if a.item_id in keep])
        ws.close()  # the commands below open it themselves
        wall: dict[str, float] = {"import": round(time.perf_counter() - t0, 1)}
        out["items"] = chosen
        applies = {s: len(TEMPLATED) + sum(TEMPLATES[b].data_only and (TEMPLATES[b].key or b) in SETS[s]
                                           for b in TEMPLATES) for s in SETS}
        budget = {s: calls_per_item(applies[s], FOLLOW_UPS) * len(chosen[s]) for s in SETS} | {"evalbiasbench": 2 * TRAPS}
        out["budget_calls"] = {**budget, "total": sum(budget.values())}
        print(f"budget: {out['budget_calls']}", file=sys.stderr, flush=True)
        judge = ["--judge", JUDGE, "--quiet", "-w", ws_path]
        for s in SETS:
            wall[f"battery {s}"] = _run(["probe", "battery", "--source", f"calm/{s}", *judge])
        wall["traps"] = _run(["judge", "--source", "evalbiasbench", "--orders", "AB,BA", *judge])
        # CALM's and EvalBiasBench's gold labels, one per item: pooled as the truth
        wall["audit"] = _run(["audit", "--n-boot", "1000", "--consensus", "ds:all", "--quiet", "-w", ws_path])
        rep = json.loads((Path(ws_path) / "reports" / "audit.json").read_text())
        entry = rep["judges"][JUDGE]
        ws = Workspace(Path(ws_path))
        frame = ws.judgments_repo.judgments_frame(judge=JUDGE)
        out["calls_spent"] = {"total": int(len(frame)), "ok": int((frame["status"] == "ok").sum()),
                              "unparsed": int((frame["verdict"] == "invalid").sum())}
        out["calls_spent"] |= {s: int(frame["item_id"].str.startswith(f"calm/{s}/").sum()) for s in SETS}
        out["calls_spent"]["evalbiasbench"] = int(frame["item_id"].str.startswith("evalbiasbench/").sum())
        out["seconds"] = wall
        metrics = entry["metrics"]
        probes: dict[str, Any] = {}
        copies = ws.items_repo.items(source="probe:perturbation")
        mine = frame[frame["mutation"] == "none"] if "mutation" in frame else frame
        for bias in TEMPLATES:
            row: dict[str, Any] = {k: metrics.get(f"{k}_{bias}") for k in ("robustness", "shift")}
            row["section"] = entry.get(bias)
            row["flags"] = [f for f in entry.get("flags", []) if f.partition(":")[0] in (bias, f"{bias}_bias")]
            per_set = {}
            for s in SETS:
                cs = [c for c in copies if str(c.metadata["base_item"]).startswith(f"calm/{s}/")
                      and c.metadata["bias"] in (bias, "null")]
                figs = perturbation_figures(mine, cs, n_boot=1000).get(bias)
                if figs:
                    kinds = {c.metadata.get("perturbation") for c in cs if c.metadata["bias"] == bias}
                    per_set[s] = {"perturbation": sorted(k for k in kinds if k), **figs}
            row["per_set"] = per_set
            probes[bias] = row
        out["probes"] = probes
        out["traps"] = {k: v for k, v in metrics.items() if k.startswith("trap")} | {"section": entry.get("traps")}
        section = entry.get("manipulability") or {}
        out["manipulability"] = {"flip_rate_challenged": metrics.get("flip_rate_challenged"),
                                 "flip_rate_null": section.get("flip_rate_null"), "section": section}
        out["other_metrics"] = {k: metrics[k] for k in ("accuracy", "first_position_rate", "cohen_kappa")
                                if k in metrics}
        out["flags"] = entry.get("flags", [])
        out["verdict"] = entry.get("verdict")
        out["biases"] = entry.get("biases")
        ws.close()
    out["peak_rss_mb"] = peak_rss_mb()
    text = json.dumps(out, indent=1, default=str)
    print(text)
    name = "calm.json" if JUDGE == "local/smollm2" else f"calm_{JUDGE.replace('/', '_')}.json"
    (Path(__file__).parent / "results" / name).write_text(text + "\n")


if __name__ == "__main__":
    main()
