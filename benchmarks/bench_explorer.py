"""Explorer at scale: first meaningful paint (<= 2 s) and an item click (<= 0.5 s) on a workspace of 100,000
items and 1,000,000 judgments, measured in headless Chromium (Debian's, driven by Playwright). Prints JSON.

First paint: from navigation to the Overview's first verdict with its reasons drawn, on a freshly started
server (cold caches); the trust table's grid, which Streamlit loads as a separate component, is timed too.
Items page: from navigating to its address (the app loads again in the browser) to its first item drawn, its
caches cold. Item click: from submitting an item id on the Items page to that item's prompt drawn (each
item opened once, so nothing is cached for it). Filters: each of the Items page's filters ticked once (its
query not cached yet), until the page's run has finished. Every page's first visit: on a second freshly
started server, from the Overview each page in turn through the sidebar, from the click until the page's
run has finished (Streamlit's ``script_finished`` message) and nothing stale is left on screen.

``--items N`` builds a smaller workspace (N items, 10 judgments each) for a quick look; the recorded figures
are at the default 100,000 items / 1,000,000 judgments.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import machine, peak_rss_mb  # noqa: E402

from judgecal.audit.pipeline import AuditOptions, audit_workspace  # noqa: E402
from judgecal.data.records import Annotation, Candidate, Consensus, Item, Judgment  # noqa: E402
from judgecal.data.store import Workspace  # noqa: E402

N_ITEMS, N_JUDGES, ORDERS = 100_000, 5, ("AB", "BA")  # N_ITEMS: --items
MODELS = [f"model-{k}" for k in range(8)]
CATEGORIES = ["coding", "maths", "writing", "advice", "facts"]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
N_CLICKS = 10


def build(path: Path, rng: np.random.Generator, n_items: int = N_ITEMS) -> dict[str, float]:
    ws = Workspace(path)
    t0 = time.perf_counter()
    pairs = rng.choice(len(MODELS), size=(n_items, 2))
    pairs[:, 1] = np.where(pairs[:, 1] == pairs[:, 0], (pairs[:, 0] + 1) % len(MODELS), pairs[:, 1])
    ws.items_repo.add_items([Item(f"item{i}", f"Prompt number {i}: " + "words " * 40,
                       [Candidate(f"Answer A to {i}. " + "text " * 80, MODELS[pairs[i, 0]]),
                        Candidate(f"Answer B to {i}. " + "text " * 60, MODELS[pairs[i, 1]])],
                       source="bench", metadata={"category": CATEGORIES[i % len(CATEGORIES)]})
                  for i in range(n_items)])
    labels = np.array(["A", "B", "tie"])
    truth = labels[rng.choice(3, n_items, p=[0.45, 0.45, 0.1])]
    ws.annotations_repo.set_consensus([Consensus(f"item{i}", "ds", str(truth[i])) for i in range(n_items)], "ds")
    with ws.transaction() as tx:
        ws.annotations_repo.add_annotations([Annotation(f"item{i}", f"annotator{a}", str(truth[i] if rng.random() < 0.8 else "tie"),
                                       "AB", 30.0, "bench", f"{i}-{a}") for i in range(0, n_items, 20)
                            for a in range(3)], conn=tx)
    for j in range(N_JUDGES):
        v = labels[rng.choice(3, size=(n_items, 2), p=[0.45, 0.45, 0.1])]
        ws.judgments_repo.add_judgments([Judgment(key=f"{j}-{i}-{o}", item_id=f"item{i}", judge=f"bench/judge{j}", spec_hash="s",
                                   order=o, raw=f"Verdict: {v[i, k]} because " + "reason " * 30,
                                   verdict=str(v[i, k]), prompt_tokens=300, completion_tokens=40, latency_s=0.2,
                                   cost_usd=0.0001) for i in range(n_items) for k, o in enumerate(ORDERS)])
    n = ws.judgments_repo.count_judgments()
    ws.close()
    return {"build_s": round(time.perf_counter() - t0, 1), "judgments": n}


def audit(path: Path) -> dict[str, float]:
    """``judgecal audit``'s audit.json (200 bootstrap replicates: the explorer reads it, its CIs do not matter)."""
    t0 = time.perf_counter()
    ws = Workspace(path)
    report = audit_workspace(ws, AuditOptions(n_boot=200)).to_json()
    ws.close()
    ws.reports_dir.mkdir(exist_ok=True)
    (ws.reports_dir / "audit.json").write_text(json.dumps(report, ensure_ascii=False, allow_nan=False), "utf-8")
    return {"audit_s": round(time.perf_counter() - t0, 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGES = ("Judges", "Labels", "Biases", "Models", "Stability", "Loop", "Spans", "Annotators", "Items")  # after the Overview
FILTERS = ("f-humans", "f-orders", "f-judges", "f-spans")


@contextmanager
def server(ws: Path) -> Iterator[str]:
    """``judgecal app`` on ``ws``, freshly started (cold caches); its address once healthy."""
    import httpx

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "judgecal.cli", "app", "--workspace", str(ws), "--port",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if httpx.get(f"{url}/_stcore/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


class Runs:
    """Counts the script runs the server reports finished (its ``script_finished`` messages, read off the
    page's websocket): a page is drawn when its run has finished and nothing stale is left on screen."""

    def __init__(self, page: Any) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        self.page, self.finished, self._msg = page, 0, ForwardMsg
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload: bytes | str) -> None:
        if isinstance(payload, bytes):
            msg = self._msg.FromString(payload)
            if msg.WhichOneof("type") == "script_finished" and msg.script_finished in (0, 3):  # done, fragment done
                self.finished += 1

    def timed(self, action: Callable[[], None], timeout_s: float = 300) -> float:
        """Seconds from ``action`` until the run it starts has finished and the page has no stale element."""
        n, t = self.finished, time.perf_counter()
        action()
        while self.finished == n:
            if time.perf_counter() - t > timeout_s:
                raise TimeoutError("the page's run did not finish")
            self.page.wait_for_timeout(10)
        self.page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]') && "
                                    "!document.querySelector('[data-testid=\"stStatusWidget\"]')",
                                    timeout=timeout_s * 1000)
        return time.perf_counter() - t


def measure(ws: Path, n_items: int) -> dict[str, object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        with server(ws) as url:
            out = measure_overview_and_items(browser.new_page(viewport={"width": 1600, "height": 1000}), url,
                                             n_items)
        with server(ws) as url:
            out |= measure_pages(browser.new_page(viewport={"width": 1600, "height": 1000}), url)
        browser.close()
    return out


def measure_overview_and_items(page: Any, url: str, n_items: int) -> dict[str, object]:
    runs = Runs(page)
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
        item = f"item{(k * 7919 + 12345) % n_items}"
        box.fill(item)
        t = time.perf_counter()
        box.press("Enter")
        page.get_by_text(f"Prompt number {item[4:]}:", exact=False).first.wait_for(timeout=60_000)
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
                               timeout=60_000)
        clicks.append(time.perf_counter() - t)
    box.fill("")
    runs.timed(lambda: box.press("Enter"))
    filters = {}
    for key in FILTERS:  # tick (its query not cached yet), then untick (cached)
        label = page.locator(f".st-key-{key} label")
        filters[key[2:]] = round(runs.timed(label.click), 3)
        runs.timed(label.click)
    page.locator(".st-key-f-category input").click()
    option = page.get_by_role("option", name=CATEGORIES[1], exact=True)
    filters["category"] = round(runs.timed(option.click), 3)
    return {"first_paint_s": round(first_paint, 3), "trust_table_paint_s": round(table_paint, 3),
            "items_page_first_s": round(items_first, 3),
            "item_click_s": {"median": round(statistics.median(clicks), 3), "max": round(max(clicks), 3),
                             "all": [round(c, 3) for c in clicks]},
            "items_filter_first_s": filters}


def measure_pages(page: Any, url: str) -> dict[str, object]:
    """Every page's first visit on a fresh server: the Overview by its address, then each page through the
    sidebar, as a reader moves through the explorer."""
    runs = Runs(page)
    visits = {"Overview": round(runs.timed(lambda: page.goto(url)), 3)}
    page.locator("[data-testid='stSidebarNav'] a").first.wait_for(timeout=30_000)
    shown = [t.strip() for t in page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()]
    # pages with nothing to show are folded into one "Not run yet (N)" page: visit what the sidebar lists
    for title in [t for t in PAGES if any(s.startswith(t) for s in shown)] + [s for s in shown if s.startswith("Not run")]:
        link = page.locator("[data-testid='stSidebarNav'] a", has_text=title).first
        visits[title] = round(runs.timed(link.click), 3)
    return {"page_first_visit_s": visits, "pages_over_2_s": [name for name, s in visits.items() if s > 2]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=N_ITEMS, help=f"items to build (default {N_ITEMS:,}; 10 "
                    "judgments each); a workspace kept in JUDGECAL_BENCH_WS is reused as it is")
    opts = ap.parse_args()
    rng = np.random.default_rng(0)
    keep = os.environ.get("JUDGECAL_BENCH_WS")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(keep) if keep else Path(tmp) / "ws"
        built: dict[str, Any] = build(ws, rng, opts.items) if not (ws / "judgecal.sqlite").exists() else {"reused_workspace": True}
        if not (ws / "reports" / "audit.json").exists():
            built |= audit(ws)
        t0 = time.perf_counter()
        w = Workspace(ws)  # a workspace from an earlier judgecal gets the explorer's indexes here, not mid-measure
        n_items = len(w.items_repo.item_ids())
        n_judgments = w.judgments_repo.count_judgments()
        w.close()
        built["workspace_open_s"] = round(time.perf_counter() - t0, 2)
        load = os.getloadavg()
        res = measure(ws, n_items)
        # before and after (1, 5 and 15 minutes): a shared machine, other work runs beside this one
        res["load_average"] = {"before": [round(x, 1) for x in load], "after": [round(x, 1) for x in os.getloadavg()]}
        print(json.dumps({"benchmark": "explorer", "machine": machine(), "items": n_items, "judgments": n_judgments,
                          **built, **res, "db_mb": round((ws / "judgecal.sqlite").stat().st_size / 2**20, 1),
                          "peak_rss_mb_builder": peak_rss_mb(),
                          "targets": {"first_paint_s": "<= 2", "trust_table_paint_s": "<= 2",
                                      "items_page_first_s": "<= 2", "page_first_visit_s": "<= 2 each",
                                      "item_click_s": "<= 0.5"}}, indent=1))


if __name__ == "__main__":
    main()
