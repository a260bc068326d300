"""Nothing else moves: the real audits the test suite builds (workspaces from the mirror's datasets, each audited
through :func:`judgecal.audit.pipeline.audit_workspace`) and the sha256 of each ``audit.json``, apart from the
version, the time and where it ran (what the golden test leaves out). Run on the code before a change and after
it: equal digests say the change moved no figure, flag, verdict or word of any of these audits.

    JUDGECAL_DATA_MIRROR=... python benchmarks/bench_unchanged.py [OUT.json] [--only NAME ...]

Run against another checkout's code with ``PYTHONPATH=<checkout>`` (the output names the code it ran). Prints
JSON and writes it to OUT (default ``benchmarks/results/unchanged.json``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

HERE = Path(__file__).resolve().parent
VOLATILE = ("judgecal_version", "generated_at", "provenance")  # the release, the clock, the machine and paths
LLMBAR = ("llmbar/Natural", "llmbar/Processed/MT-Bench", "llmbar/Processed/LLMEval^2")  # the subsets in the mirror
DEMO_CALLS = HERE.parent / "tests" / "golden" / "demo-smollm2-judgments.jsonl"  # the embedded judge's recorded calls
# name -> (datasets imported, consensus methods computed, the audit's options); "demo-calls": the demo's
# recorded embedded-judge calls stored as well (the golden demo audit's workspace)
CASES: dict[str, tuple[tuple[str, ...], tuple[str, ...], dict[str, Any]]] = {
    "pandalm ds": (("pandalm",), ("ds", "mv"), {"consensus": "ds", "n_boot": 300}),
    "pandalm mv": (("pandalm",), ("ds", "mv"), {"consensus": "mv", "n_boot": 300}),
    "pandalm ds invalid-as-wrong seed 3": (("pandalm",), ("ds",), {"consensus": "ds", "invalid_as": "wrong",
                                                                   "n_boot": 200, "seed": 3}),
    "pandalm onecoin": (("pandalm",), ("onecoin",), {"consensus": "onecoin", "n_boot": 200}),
    "pandalm glad": (("pandalm",), ("glad",), {"consensus": "glad", "n_boot": 200}),
    "demo (pandalm and the embedded judge's recorded calls)": (("pandalm", "demo-calls"), ("ds", "mv"),
                                                               {"consensus": "ds", "n_boot": 2000}),
    **{f"{name} mv": ((name,), ("mv",), {"consensus": "mv", "n_boot": 200}) for name in LLMBAR},
    "llmbar/Natural ds": (("llmbar/Natural",), ("ds",), {"consensus": "ds", "n_boot": 200}),
    "prometheus/mt-bench mv": (("prometheus/mt-bench",), ("mv",), {"consensus": "mv", "n_boot": 200}),
    "prometheus/mt-bench ds": (("prometheus/mt-bench",), ("ds",), {"consensus": "ds", "n_boot": 200}),
    "evalbiasbench mv": (("evalbiasbench",), ("mv",), {"consensus": "mv", "n_boot": 200}),
    "faithbench ds": (("faithbench",), ("ds",), {"consensus": "ds", "n_boot": 200}),
    "faithbench mv": (("faithbench",), ("mv",), {"consensus": "mv", "n_boot": 200}),
    "summary-of-a-haystack ds": (("summary-of-a-haystack",), ("ds",), {"consensus": "ds", "n_boot": 200}),
    "summary-of-a-haystack mv": (("summary-of-a-haystack",), ("mv",), {"consensus": "mv", "n_boot": 200}),
}


def digest(report: dict[str, Any]) -> str:
    """sha256 of the report as the golden file writes it, the volatile parts left out."""
    data = {k: v for k, v in report.items() if k not in VOLATILE}
    return hashlib.sha256((json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8")).hexdigest()


def audit_case(root: Path, datasets: tuple[str, ...], methods: tuple[str, ...], options: dict[str, Any]) -> dict[str, Any]:
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.data.ingest import import_dataset
    from judgecal.data.store import Workspace

    ws = Workspace(root / "ws")
    try:
        for name in datasets:
            if name == "demo-calls":
                from judgecal.data.records import Judgment

                lines = [json.loads(ln) for ln in DEMO_CALLS.read_text("utf-8").splitlines() if ln.strip()]
                calls = [Judgment(**row) for row in lines[1:]]
                ws.judgments_repo.add_judge_specs([(calls[0].spec_hash, calls[0].judge, lines[0]["spec"])])
                ws.judgments_repo.add_judgments(calls)
            else:
                import_dataset(ws, name)
        compute_consensus(ws, methods)
        t0 = time.perf_counter()
        report = audit_workspace(ws, AuditOptions(**options)).to_json()
        return {"sha256": digest(report), "judges": len(report["judges"]), "audit_s": round(time.perf_counter() - t0, 2)}
    finally:
        ws.close()


def code_version() -> dict[str, str]:
    import judgecal

    pkg = Path(judgecal.__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "-C", str(pkg), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(pkg), "status", "--porcelain", "--", "."], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit, dirty = "unknown", ""
    return {"commit": commit + ("+changes" if dirty else ""), "package": str(pkg)}


def main(argv: list[str]) -> None:
    only = argv[argv.index("--only") + 1:] if "--only" in argv else []
    args = argv[:argv.index("--only")] if "--only" in argv else argv
    out = Path(args[0]) if args else HERE / "results" / "unchanged.json"
    audits: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["JUDGECAL_CACHE_DIR"] = str(Path(tmp) / "cache")
        for k, (name, (datasets, methods, options)) in enumerate(CASES.items()):
            if only and name not in only:
                continue
            try:
                audits[name] = {**audit_case(Path(tmp) / str(k), datasets, methods, options), "options": options}
            except Exception as e:  # a case the code cannot audit is recorded, so before and after still compare
                audits[name] = {"error": f"{type(e).__name__}: {e}", "options": options}
            print(name, audits[name].get("sha256", audits[name].get("error")), file=sys.stderr, flush=True)
    result = {"benchmark": "unchanged", "machine": machine(), "code": code_version(), "volatile": list(VOLATILE),
              "audits": audits, "peak_rss_mb": peak_rss_mb()}
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(json.dumps(result, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
