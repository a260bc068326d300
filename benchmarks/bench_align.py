"""What `judgecal align` gains for the embedded judge (SmolLM2-135M) on PandaLM, on held-out labels.

A stratified, seeded sample of PandaLM items (majority vote of its three annotators as the truth) is split
by item into train and held-out halves; `align --method fewshot` and `--method guidelines` build two
candidates from the train half; both are compared with the original on the held-out half only (paired item
bootstrap). Then the same workspace runs a cascade: SmolLM2 (on the items it judged), a panel of PandaLM's two
recorded judges, GPT-3.5 recorded, then people.
``python benchmarks/bench_align.py [N_ITEMS] [SHOTS] [WORKSPACE] [--methods fewshot,guidelines,optimizer]
[--candidates K] [--no-cascade]`` (a kept workspace makes a re-run reuse its judgments); prints JSON (kept in
benchmarks/results/align_smollm2.json, and the optimizer's run in align_optimizer_smollm2.json). An honest
zero is a result.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.aggregate.consensus import compute_consensus  # noqa: E402
from judgecal.cli import main  # noqa: E402
from judgecal.data.ingest import import_dataset  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

KEEP = ("cohen_kappa", "accuracy", "macro_f1", "invalid_rate", "first_position_rate", "position_consistency",
        "verbosity_excess")


def summary(res: dict) -> dict:
    held = res["held_out"]
    return {"candidate": res["candidate"], "split": res["split"], "n_shots": len(res["shots"]),
            "guidelines": res["guidelines"], "held_out_items": held["n_items"], "conclusion": res["conclusion"],
            "gate_passed": held["passed"],
            "held_out": {m: {k: held["metrics"][m][k] for k in ("baseline", "candidate", "difference", "ci_low",
                                                                 "ci_high", "result")}
                         for m in KEEP if m in held["metrics"]}}


def cascade(ws_path: Path) -> dict:
    rc = main(["panel", "-w", str(ws_path), "--members", "replay/pandalm/gpt-3.5-turbo,replay/pandalm/pandalm-7b",
               "--name", "panel/pandalm-recorded"])
    out: dict = {"panel_exit": rc}
    for target in (0.9, 0.75, 0.6):
        rc = main(["cascade", "-w", str(ws_path), "--consensus", "mv", "--stage", "local/smollm2", "--stage",
                   "panel/pandalm-recorded", "--stage", "replay/pandalm/gpt-3.5-turbo", "--target", str(target),
                   "--delta", "0.1", "--name", f"target {target}"])
        res = json.loads((ws_path / "reports" / "cascade.json").read_text())[f"target {target}"]
        out[f"target_{target}"] = {
            "exit": rc, "items": res["n_items"], "calibration": res["n_calibration"], "held_out": res["held_out"],
            "share_to_people": res["share_to_people"],
            "stages": [{"judge": st["judge"], "confidence": st["confidence"], "threshold": st["threshold"],
                        "share_decided": st["all_items"]["share_decided"],
                        "held_out_agreement": st["held_out"]["agreement"]} for st in res["stages"]]}
    return out


def run(n_items: int, shots: int, keep: str | None = None, methods: tuple[str, ...] = ("fewshot", "guidelines"),
        candidates: int = 6, with_cascade: bool = True) -> dict:
    out: dict = {"benchmark": "align_smollm2", "machine": machine(), "dataset": "pandalm (testset-v1)",
                 "truth": "mv (three annotators)", "judge": "local/smollm2", "items": n_items, "shots": shots,
                 "orders": "AB,BA", "n_boot": 2000, "methods": {}}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = keep or scratch
        if not (Path(tmp) / "ws" / "judgecal.sqlite").exists():
            ws = Workspace(Path(tmp) / "ws")
            import_dataset(ws, "pandalm")
            compute_consensus(ws, ("mv",))
            ws.close()
        for method in methods:
            t0 = time.perf_counter()
            rc = main(["align", "-w", str(Path(tmp) / "ws"), "--judge", "local/smollm2", "--method", method,
                       "--consensus", "mv", "--items", str(n_items), "--shots", str(shots), "--quiet",
                       "--candidates", str(candidates)])
            saved = json.loads((Path(tmp) / "ws" / "reports" / "align.json").read_text())
            res = next(r for r in saved.values() if r["method"] == method)
            out["methods"][method] = {"exit": rc, "seconds": round(time.perf_counter() - t0, 1), **summary(res)}
            if "optimizer" in res:
                out["methods"][method]["optimizer"] = {k: v for k, v in res["optimizer"].items() if k != "scratch"}
        if with_cascade:
            out["cascade"] = cascade(Path(tmp) / "ws")
    out["peak_rss_mb"] = peak_rss_mb()
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("n_items", nargs="?", type=int, default=80)
    ap.add_argument("shots", nargs="?", type=int, default=4)
    ap.add_argument("workspace", nargs="?")
    ap.add_argument("--methods", default="fewshot,guidelines")
    ap.add_argument("--candidates", type=int, default=6)
    ap.add_argument("--no-cascade", action="store_true")
    a = ap.parse_args()
    print(json.dumps(run(a.n_items, a.shots, a.workspace, tuple(a.methods.split(",")), a.candidates,
                         not a.no_cascade), indent=1))
