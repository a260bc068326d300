"""vllm/<model> on a GPU: offline ``vllm.LLM`` judging PandaLM pairs in both orders, batched.

Run on a machine with a GPU and vllm installed (``pip install 'judgecal-toolkit[vllm]'``):

    python benchmarks/gpu_vllm.py --model /path/to/SmolLM2-135M-Instruct --items 500

``--model`` is a local folder or a hub id vllm can load. Prints JSON with throughput, the invalid
rate and the position metrics of the run. Not part of the test run (no GPU there).
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
from judgecal.audit.pipeline import AuditOptions, audit_workspace  # noqa: E402
from judgecal.data.ingest import import_dataset  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.judges.engine import Engine  # noqa: E402
from judgecal.judges.registry import make_backend  # noqa: E402
from judgecal.judges.rubric import load_rubric  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--items", type=int, default=500)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        import_dataset(ws, "pandalm")
        compute_consensus(ws, ("ds",))
        items = ws.items_repo.items(source="pandalm")[: args.items]
        judge = f"vllm/{args.model}"
        t0 = time.perf_counter()
        backend = make_backend(judge)
        load_s = time.perf_counter() - t0
        eng = Engine(ws, backend, load_rubric("pairwise"), judge=judge, concurrency=1024, progress=True)
        t1 = time.perf_counter()
        st = eng.run(eng.plan(items))
        run_s = time.perf_counter() - t1
        rep = audit_workspace(ws, AuditOptions(n_boot=1000)).to_json()["judges"][judge]
        import torch

        print(json.dumps({
            "benchmark": "gpu_vllm", "machine": machine(), "gpu": torch.cuda.get_device_name(0),
            "model": args.model, "calls": st.done, "load_s": round(load_s, 1), "run_s": round(run_s, 2),
            "verdicts_per_s": round(st.done / run_s, 1), "errors": st.errors, "metrics": rep["metrics"],
            "peak_rss_mb": peak_rss_mb(),
        }, indent=1))


if __name__ == "__main__":
    main()
