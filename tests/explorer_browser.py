"""Driving the explorer in Debian's Chromium (Playwright): start the server, move between pages, read the
grids and the downloads. Shared by the explorer's browser tests (one server and one browser per module)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
from conftest import free_port, wait_http

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
PAGES = ("Overview", "Judges", "Labels", "Biases", "Models", "Stability", "Loop", "Over time", "Spans", "Annotators",
         "Items")


@contextmanager
def serve(ws_dir: Path, judgecal: list[str] | None = None, cwd: Path | None = None) -> Iterator[str]:
    """``judgecal app`` on ``ws_dir`` (``judgecal``: the command to run instead of this interpreter's
    ``-m judgecal.cli``, e.g. an installed console script); its address once healthy."""
    port = free_port()
    proc = subprocess.Popen([*(judgecal or [sys.executable, "-m", "judgecal.cli"]), "app", "--workspace",
                             str(ws_dir), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_http(f"{url}/_stcore/health", proc, 90, "streamlit")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


class Browser:
    """One Chromium page; records console errors, page errors, dialogs and requests to ``watch``."""

    def __init__(self, url: str, watch: str = "evil.example") -> None:
        from playwright.sync_api import sync_playwright

        self._pw = sync_playwright().start()
        self.browser = self._pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        self.page = self.browser.new_page(viewport={"width": 2600, "height": 1400}, accept_downloads=True)
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("request", lambda r: self.requests.append(r.url) if watch in r.url else None)
        self.external: list[str] = []  # anything not fetched from the explorer itself
        self.page.on("request", lambda r: None if r.url.startswith((url, "data:", "blob:"))
                     else self.external.append(r.url))
        self.page.goto(url)
        self.idle()

    def close(self) -> None:
        self.browser.close()
        self._pw.stop()

    def idle(self, timeout: float = 120_000) -> None:
        """Wait until the script run has finished (no 'Running' status widget) and the page has settled."""
        p = self.page
        p.locator("[data-testid='stMain'] h1").first.wait_for(timeout=timeout)
        p.wait_for_timeout(400)
        p.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]') && "
                            "!document.querySelector('[data-stale=\"true\"]')", timeout=timeout)
        p.wait_for_timeout(300)

    def pages(self) -> list[str]:
        """The sidebar's pages, in order (the empty ones are folded into one "Not run yet (N)")."""
        self.page.locator("[data-testid='stSidebarNav'] a").first.wait_for(timeout=30_000)
        return [t.strip() for t in self.page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()]

    def open(self, title: str) -> None:
        self.page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
        self.page.locator("[data-testid='stMain'] h1", has_text=self._h1(title)).wait_for(timeout=60_000)
        self.idle()
        exc = self.page.locator("[data-testid='stException']").all_inner_texts()
        assert exc == [], exc

    @staticmethod
    def _h1(title: str) -> str:
        if title.startswith("Not run yet"):
            return "Not run yet"
        return {"Overview": "Overview", "Judges": "Judges", "Labels": "Labels", "Biases": "Biases", "Models": "Models",
                "Stability": "Stability", "Loop": "Closing the loop", "Over time": "Over time", "Spans": "Spans", "Annotators": "Annotators", "Items": "Items"}[title]

    def grid(self, key: str) -> tuple[list[str], list[list[str]]]:
        """Header and cell texts the grid of table ``key`` shows (its accessible table: the rows drawn)."""
        g = self.page.locator(f".st-key-tbl-{key} [data-testid='stDataFrame']")
        g.locator("table[role='grid']").wait_for(state="attached", timeout=30_000)
        heads = g.locator("thead th").all_inner_texts()
        rows = [r.locator("td").all_inner_texts() for r in g.locator("tbody tr").all()]
        return heads, rows

    def download(self, key: str) -> bytes:
        with self.page.expect_download() as d:
            self.page.locator(f".st-key-dl-{key} button").first.click()
        return Path(d.value.path()).read_bytes()

    def csv(self, key: str) -> pd.DataFrame:
        return pd.read_csv(io.BytesIO(self.download(key)), dtype=str, keep_default_na=False)

    def assert_csv_is_grid(self, key: str) -> pd.DataFrame:
        """The downloaded CSV of ``key`` holds exactly the cells the grid shows (every row and column drawn),
        each made inert for a spreadsheet (:func:`judgecal.inert.csv_cell`: a text starting with = + - @
        behind a quote)."""
        from judgecal.inert import csv_cell

        heads, rows = self.grid(key)
        csv = self.csv(key)
        assert heads and [csv_cell(h) for h in heads] == list(csv.columns)[: len(heads)], (heads, list(csv.columns))
        assert len(rows) == min(len(csv), len(rows)) and rows, key
        for i, row in enumerate(rows):
            assert [_norm(csv_cell(c)) for c in row] == [_norm(v) for v in csv.iloc[i, : len(row)]], (key, i, row)
        return csv

    def select(self, key: str, option: str) -> None:
        self.page.locator(f".st-key-{key} input").click()
        self.page.get_by_role("option", name=option, exact=True).click()
        self.idle()

    def multiselect(self, key: str, option: str) -> None:
        self.select(key, option)
        self.page.keyboard.press("Escape")

    def clear(self, key: str) -> None:
        """Remove a multiselect's (only) choice."""
        self.page.locator(f".st-key-{key} input").click()
        self.page.keyboard.press("Backspace")
        self.page.keyboard.press("Escape")
        self.idle()

    def tick(self, key: str) -> None:
        self.page.locator(f".st-key-{key} label").click()
        self.idle()

    def text(self) -> str:
        return self.page.inner_text("body").replace("\u2060", "")


def _norm(v: Any) -> str:
    """A cell as text: the grid drops a float's trailing '.0' and shows missing values as empty."""
    s = str(v).strip()
    if s in ("None", "nan", "<NA>"):
        return ""
    return s[:-2] if s.endswith(".0") and s[:-2].lstrip("-").isdigit() else s
