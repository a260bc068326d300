"""Explorer at scale: first meaningful paint (<= 2 s) and an item click (<= 0.5 s) on a workspace of 100,000
items and 1,000,000 judgments, measured in headless Chromium (Debian's, driven by Playwright). Prints JSON.

First paint: from navigation to the Overview's first verdict with its reasons drawn, on a freshly started
server (cold caches); the trust table's grid, which Streamlit loads as a separate component, is timed too. Item click: from submitting an item id on the Items page to that item's prompt drawn (each
item opened once, so nothing is cached for it).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.run import run_audit  # noqa: E402
from judgecal.data.records import Annotation, Candidate, Consensus, Item, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402
from judgecal.report.write import json_safe  # noqa: E402

N_ITEMS, N_JUDGES, ORDERS = 100_000, 5, ("AB", "BA")
MODELS = [f"model-{k}" for k in range(8)]
CATEGORIES = ["coding", "maths", "writing", "advice", "facts"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
N_CLICKS = 10


def build(path: Path, rng: np.random.Generator) -> dict[str, float]:
    ws = Workspace(path)
    t0 = time.perf_counter()
    pairs = rng.choice(len(MODELS), size=(N_ITEMS, 2))
    pairs[:, 1] = np.where(pairs[:, 1] == pairs[:, 0], (pairs[:, 0] + 1) % len(MODELS), pairs[:, 1])
    ws.add_items([Item(f"item{i}", f"Prompt number {i}: " + "words " * 40,
                       [Candidate(f"Answer A to {i}. " + "text " * 80, MODELS[pairs[i, 0]]),
                        Candidate(f"Answer B to {i}. " + "text " * 60, MODELS[pairs[i, 1]])],
                       source="bench", metadata={"category": CATEGORIES[i % len(CATEGORIES)]})
                  for i in range(N_ITEMS)])
    labels = np.array(["A", "B", "tie"])
    truth = labels[rng.choice(3, N_ITEMS, p=[0.45, 0.45, 0.1])]
    ws.set_consensus([Consensus(f"item{i}", "ds", str(truth[i])) for i in range(N_ITEMS)], "ds")
    with ws.transaction() as tx:
        ws.add_annotations([Annotation(f"item{i}", f"annotator{a}", str(truth[i] if rng.random() < 0.8 else "tie"),
                                       "AB", 30.0, "bench", f"{i}-{a}") for i in range(0, N_ITEMS, 20)
                            for a in range(3)], conn=tx)
    for j in range(N_JUDGES):
        v = labels[rng.choice(3, size=(N_ITEMS, 2), p=[0.45, 0.45, 0.1])]
        ws.add_judgments([Judgment(key=f"{j}-{i}-{o}", item_id=f"item{i}", judge=f"bench/judge{j}", spec_hash="s",
                                   order=o, raw=f"Verdict: {v[i, k]} because " + "reason " * 30,
                                   verdict=str(v[i, k]), prompt_tokens=300, completion_tokens=40, latency_s=0.2,
                                   cost_usd=0.0001) for i in range(N_ITEMS) for k, o in enumerate(ORDERS)])
    n = ws.count_judgments()
    ws.close()
    return {"build_s": round(time.perf_counter() - t0, 1), "judgments": n}


def audit(path: Path) -> dict[str, float]:
    """``judgecal audit``'s audit.json (200 bootstrap replicates: the explorer reads it, its CIs do not matter)."""
    t0 = time.perf_counter()
    ws = Workspace(path)
    report = json_safe(run_audit(ws, n_boot=200))
    ws.close()
    ws.reports_dir.mkdir(exist_ok=True)
    (ws.reports_dir / "audit.json").write_text(json.dumps(report, ensure_ascii=False, allow_nan=False), "utf-8")
    return {"audit_s": round(time.perf_counter() - t0, 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(ws: Path) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws), "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        import httpx

        for _ in range(300):
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            t0 = time.perf_counter()
            page.goto(url)  # the Overview
            page.locator("[data-testid='stMarkdownContainer']", has_text="bench/judge0").first.wait_for(timeout=120_000)
            first_paint = time.perf_counter() - t0  # the first judge's verdict and reasons are readable
            page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=120_000)
            table_paint = time.perf_counter() - t0  # the trust table's grid (a component Streamlit loads lazily)
            t1 = time.perf_counter()
            page.goto(f"{url}/items")
            page.get_by_text("Every judge's verdict").wait_for(timeout=300_000)
            items_first = time.perf_counter() - t1
            box = page.get_by_label("Open an item by id (any item, listed or not)")
            clicks = []
            for k in range(N_CLICKS):
                item = f"item{(k * 7919 + 12345) % N_ITEMS}"
                box.fill(item)
                t = time.perf_counter()
                box.press("Enter")
                page.get_by_text(f"Prompt number {item[4:]}:", exact=False).first.wait_for(timeout=60_000)
                page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                       timeout=60_000)
                clicks.append(time.perf_counter() - t)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"first_paint_s": round(first_paint, 3), "trust_table_paint_s": round(table_paint, 3),
            "items_page_first_s": round(items_first, 3),
            "item_click_s": {"median": round(statistics.median(clicks), 3), "max": round(max(clicks), 3),
                             "all": [round(c, 3) for c in clicks]}}


def main() -> None:
    rng = np.random.default_rng(0)
    keep = os.environ.get("JUDGECAL_BENCH_WS")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(keep) if keep else Path(tmp) / "ws"
        built = build(ws, rng) if not (ws / "judgecal.sqlite").exists() else {"reused_workspace": True}
        if not (ws / "reports" / "audit.json").exists():
            built |= audit(ws)
        load = os.getloadavg()[0]
        res = measure(ws)
        res["load_average_1m"] = [round(load, 1), round(os.getloadavg()[0], 1)]  # before and after: a shared machine
        print(json.dumps({"benchmark": "explorer", "machine": machine(), "items": N_ITEMS, **built, **res,
                          "db_mb": round((ws / "judgecal.sqlite").stat().st_size / 2**20, 1),
                          "peak_rss_mb_builder": peak_rss_mb(),
                          "targets": {"first_paint_s": "<= 2", "item_click_s": "<= 0.5"}}, indent=1))


if __name__ == "__main__":
    main()
