"""Engine throughput against a loopback OpenAI-compatible server adding 200 ms per request.

Target: concurrency 64, 5,000 calls: >= 90% of the ideal 320 calls/s, peak memory <= 300 MB;
the cached re-run <= 5 s with zero requests. Prints JSON.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.data.records import Candidate, Item  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.judges.engine import Engine  # noqa: E402
from judgecal.judges.registry import make_backend  # noqa: E402
from judgecal.judges.rubric import load_rubric  # noqa: E402

N_CALLS, CONCURRENCY, DELAY = 5000, 64, 0.2


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("loopback_server.py")), str(port),
                               str(DELAY)])
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(f"{base}/count")
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            ws = Workspace(Path(tmp) / "ws")
            items = [Item(f"i{k}", f"Question {k}: what is {k} + {k}?", [Candidate(str(2 * k)), Candidate(str(k))])
                     for k in range(N_CALLS // 2)]
            ws.add_items(items)
            backend = make_backend("openai/bench", base_url=f"{base}/v1", api_key="sk-bench")
            eng = Engine(ws, backend, load_rubric("pairwise"), concurrency=CONCURRENCY, progress=False)
            calls = eng.plan(items)
            t0 = time.perf_counter()
            st = eng.run(calls)
            first = time.perf_counter() - t0
            served = httpx.get(f"{base}/count").json()["count"]
            t1 = time.perf_counter()
            st2 = eng.run(eng.plan(items))
            cached = time.perf_counter() - t1
            served2 = httpx.get(f"{base}/count").json()["count"]
            ideal = CONCURRENCY / DELAY
            rate = st.done / first
            print(json.dumps({
                "benchmark": "engine", "machine": machine(), "calls": len(calls), "concurrency": CONCURRENCY,
                "server_delay_s": DELAY, "seconds": round(first, 2), "calls_per_s": round(rate, 1),
                "ideal_calls_per_s": ideal, "fraction_of_ideal": round(rate / ideal, 3),
                "errors": st.errors, "requests_served": served,
                "cached_rerun_s": round(cached, 2), "cached_rerun_requests": served2 - served,
                "cached_rerun_cached": st2.cached, "peak_rss_mb": peak_rss_mb(),
                "targets": {"fraction_of_ideal": ">= 0.9", "peak_rss_mb": "<= 300", "cached_rerun_s": "<= 5"},
            }, indent=1))
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
