"""The embedded judge (SmolLM2-135M, `--rubric labels`) as a binary judge on ToxicChat's toxicity labels.

A balanced, seeded sample of JUDGE-BENCH's ToxicChat test file (N toxic and N non-toxic instances, the
toxicity metric only; its one label per instance is the experts' majority) is written as a JUDGE-BENCH file,
imported, judged through the command line, aggregated and audited. Prints JSON: the judge's call time and
the audit's label figures (TPR, TNR, balanced accuracy, κ, the judge-reported and corrected toxic rates) with
the machine. ``python benchmarks/bench_label_judge.py [N_PER_LABEL]`` (kept in
benchmarks/results/label_judge_smollm2.json). Reads the dataset mirror (``JUDGECAL_DATA_MIRROR``).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.cli import main  # noqa: E402

FILE = "dmg-illc/JUDGE-BENCH/data/toxic_chat/toxic_chat_test.json"
KEEP = ("tpr", "tnr", "balanced_accuracy", "precision", "cohen_kappa", "accuracy", "macro_f1", "invalid_rate")


def sample(src: Path, per_label: int, out: Path) -> int:
    doc = json.loads(src.read_text("utf-8"))
    picked = []
    for label in ("1", "0"):
        picked += [i for i in doc["instances"] if i["annotations"]["toxicity"]["majority_human"] == label][:per_label]
    for i in picked:
        i["annotations"] = {"toxicity": i["annotations"]["toxicity"]}
    doc["instances"] = picked
    doc["annotations"] = [a for a in doc["annotations"] if a["metric"] == "toxicity"]
    out.write_text(json.dumps(doc), "utf-8")
    return len(picked)


def run(per_label: int) -> dict:
    mirror = Path(os.environ.get("JUDGECAL_DATA_MIRROR", "../shared/datasets"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n = sample(mirror / FILE, per_label, root / "toxic.json")
        ws = str(root / "ws")
        assert main(["import", str(root / "toxic.json"), "-w", ws]) == 0
        t0 = time.perf_counter()
        assert main(["judge", "--judge", "local/smollm2", "--rubric", "labels", "-w", ws, "--quiet"]) == 0
        judge_s = time.perf_counter() - t0
        assert main(["aggregate", "-w", ws]) == 0
        assert main(["audit", "-w", ws, "--n-boot", "2000", "--out", str(root / "out")]) == 0
        rep = json.loads((root / "out" / "audit.json").read_text("utf-8"))
    entry = rep["judges"]["local/smollm2"]
    m = entry["metrics"]
    prev = entry["labels"]["prevalence"]
    return {
        "benchmark": "label_judge_smollm2", "dataset": "JUDGE-BENCH ToxicChat test, toxicity (experts' majority)",
        "items": n, "per_label": per_label, "judge": "local/smollm2", "rubric": "labels",
        "judge_seconds": round(judge_s, 1), "seconds_per_item": round(judge_s / n, 2),
        "figures": {k: {f: m[k][f] for f in ("estimate", "ci_low", "ci_high", "n")} for k in KEEP if k in m},
        "toxic_rate": {k: {f: prev[k].get(f) for f in ("estimate", "ci_low", "ci_high")}
                       for k in ("judge_reported", "rogan_gladen", "ppi", "human_only")},
        "confusion": entry["labels"]["confusion"], "verdict": entry["verdict"]["status"],
        "reasons": entry["verdict"]["reasons"][:3], "peak_rss_mb": peak_rss_mb(), "machine": machine(),
    }


if __name__ == "__main__":
    with contextlib.redirect_stdout(sys.stderr):  # the commands' own output; stdout is the JSON
        result = run(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
    print(json.dumps(result, indent=1))
