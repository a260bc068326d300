"""Engine throughput against a loopback OpenAI-compatible server adding 200 ms per request.

Target: concurrency 64, 5,000 calls: >= 90% of the ideal 320 calls/s (>= 80% at concurrency 256),
peak memory <= 300 MB; the cached re-run <= 5 s with zero requests. Also reports the engine's CPU
per call, split into planning (prompt rendering + content hashing), the HTTP path (backend and event
loop), turning replies into judgments, and SQLite writes, and the stand-in server's CPU per request
apart (it shares the machine's cores with the engine), with the 1-minute load average before and after
each run. Prints JSON.

``python bench_engine.py [--backend openai-http|openai] [--concurrency 64] [--calls 5000] [--repeats 1]
[--also 256:10000]``
(``openai`` is the official SDK, ``openai-http`` the plain-httpx path; both are the same judge).
"""

from __future__ import annotations

import argparse
import json
import os
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

DELAY = 0.2


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def timed(obj: object, name: str, acc: dict[str, float]) -> None:
    """Wrap ``obj.name`` to add its thread CPU time to ``acc[name]``."""
    fn = getattr(obj, name)

    def wrapper(*a, **kw):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        try:
            return fn(*a, **kw)
        finally:
            acc[name] += time.thread_time() - t

    setattr(obj, name, wrapper)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) another process has used, from /proc."""
    with open(f"/proc/{pid}/stat") as fh:
        ticks = sum(int(x) for x in fh.read().rsplit(")", 1)[1].split()[11:13])
    return ticks / os.sysconf("SC_CLK_TCK")


def one_run(base: str, backend_name: str, n_calls: int, concurrency: int, server_pid: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp) / "ws")
        items = [Item(f"i{k}", f"Question {k}: what is {k} + {k}?", [Candidate(str(2 * k)), Candidate(str(k))])
                 for k in range(n_calls // 2)]
        ws.items_repo.add_items(items)
        backend = make_backend(f"{backend_name}/bench", base_url=f"{base}/v1", api_key="sk-bench",
                               max_concurrency=max(256, concurrency))
        eng = Engine(ws, backend, load_rubric("pairwise"), concurrency=concurrency, progress=False)
        acc = {"store": 0.0, "to_judgment": 0.0}
        timed(eng, "store", acc)
        timed(eng, "to_judgment", acc)
        c0 = cpu()
        calls = eng.plan(items)
        plan_cpu = cpu() - c0
        served0 = httpx.get(f"{base}/count").json()["count"]
        c1, s1, t0 = cpu(), process_cpu_s(server_pid), time.perf_counter()
        st = eng.run(calls)
        first, run_cpu = time.perf_counter() - t0, cpu() - c1
        server_cpu = process_cpu_s(server_pid) - s1
        load_after = os.getloadavg()[0]
        served = httpx.get(f"{base}/count").json()["count"] - served0
        t1 = time.perf_counter()
        st2 = eng.run(eng.plan(items))
        cached = time.perf_counter() - t1
        served2 = httpx.get(f"{base}/count").json()["count"] - served0
        ideal = concurrency / DELAY
        rate = st.done / first
        n = max(1, st.done)
        per = {"plan_render_hash": plan_cpu / len(calls), "judgment_parse": acc["to_judgment"] / n,
               "sqlite_writes": acc["store"] / n}
        per["http_backend_event_loop"] = run_cpu / n - per["judgment_parse"] - per["sqlite_writes"]
        per["total"] = per["plan_render_hash"] + run_cpu / n
        return {"seconds": round(first, 2), "calls_per_s": round(rate, 1), "ideal_calls_per_s": ideal,
                "fraction_of_ideal": round(rate / ideal, 3), "errors": st.errors, "requests_served": served,
                "cpu_ms_per_call": {k: round(v * 1000, 3) for k, v in per.items()},
                "loopback_server_cpu_ms_per_request": round(server_cpu * 1000 / max(1, served), 3),
                "load_average_1min_after": round(load_after, 2),
                "cached_rerun_s": round(cached, 2), "cached_rerun_requests": served2 - served,
                "cached_rerun_cached": st2.cached}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="openai-http", choices=["openai-http", "openai"])
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--calls", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--also", action="append", default=[], metavar="CONCURRENCY:CALLS",
                    help="more runs at another concurrency (e.g. 256:10000), each in a section concurrency_<C>")
    args = ap.parse_args()
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
    def series(calls: int, concurrency: int) -> dict[str, object]:
        runs = []
        for _ in range(args.repeats):
            load = os.getloadavg()[0]
            runs.append({"load_average_1min_before": round(load, 2),
                         **one_run(base, args.backend, calls, concurrency, server.pid)})
        fractions = sorted(float(r["fraction_of_ideal"]) for r in runs)  # type: ignore[arg-type]
        return {"calls": calls, "concurrency": concurrency, "runs": runs, "fraction_of_ideal_min": fractions[0],
                "fraction_of_ideal_median": fractions[len(runs) // 2]}

    try:
        main_series = series(args.calls, args.concurrency)
        more = {}
        for spec in args.also:
            conc, _, calls = spec.partition(":")
            more[f"concurrency_{int(conc)}"] = series(int(calls or args.calls), int(conc))
        served_total = httpx.get(f"{base}/count").json()["count"]
        server_ms = process_cpu_s(server.pid) * 1000 / max(1, served_total)  # the stand-in server's own CPU
        print(json.dumps({
            "benchmark": "engine", "machine": machine(), "backend": args.backend, **main_series,
            "server_delay_s": DELAY, **more,
            "loopback_server_cpu_ms_per_request": round(server_ms, 3),
            "peak_rss_mb": peak_rss_mb(),
            "targets": {"fraction_of_ideal": ">= 0.9 at concurrency 64, >= 0.8 at 256", "peak_rss_mb": "<= 300",
                        "cached_rerun_s": "<= 5"},
        }, indent=1))
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
