"""A lead on the example files of ``data/`` (one judge, three annotators): the first screen answers whether the judge
may replace people, and the pages with nothing to show are one "Not run yet" page with their commands, in Debian's
Chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from explorer_browser import PAGES, Browser, serve

ROOT = Path(__file__).resolve().parents[1]
CODES = ("position_bias:", "verbosity_bias:", "n_unlabelled", "lam", "_rate", "not_tested")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Browser, Path]]:
    tmp = tmp_path_factory.mktemp("first")
    for args in (("import", str(ROOT / "data/items.jsonl")),
                 ("import", str(ROOT / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(ROOT / "data/judge.yaml")),
                 ("aggregate",), ("audit", "--n-boot", "100")):
        res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args, "-w", "ws"], capture_output=True, text=True,
                             cwd=tmp)
        assert res.returncode == 0, res.stderr
    with serve(tmp / "ws") as url:
        b = Browser(url)
        b.page.set_viewport_size({"width": 1280, "height": 800})  # a laptop's first screen
        yield b, tmp / "ws"
        b.close()


def test_the_first_screen_says_whether_the_judge_may_replace_people(app: tuple[Browser, Path]) -> None:
    b, ws = app
    report: dict[str, Any] = json.loads((ws / "reports" / "audit.json").read_text())
    (name, entry), = report["judges"].items()
    status = entry["verdict"]["status"]
    b.idle()
    best = b.page.locator(".st-key-best-judge")
    box = best.bounding_box()
    assert box is not None and box["y"] + box["height"] < 800  # no scrolling to the decision
    words = best.inner_text().replace("\u2060", "")
    if status == "aligned":
        assert words.startswith(f"Best available judge: {name}") and "may replace people" in words
    else:
        assert words.startswith("No judge may replace people yet.") and name in words and status in words
        assert entry["verdict"]["reasons"][0] in words  # the decisive reason, on the first screen
    heads, rows = b.grid("comparison")
    assert heads[:3] == ["judge", "verdict", "may replace people"] and rows[0][:3] == [
        name, status, "yes" if status == "aligned" else "no"]
    text = b.text()
    assert "Alignment Score" not in text  # a ranking figure no longer reads like the verdict
    first_screen = " ".join(heads) + words
    assert not any(code in first_screen for code in CODES), first_screen


def test_empty_pages_are_one_not_run_yet_page_with_their_commands(app: tuple[Browser, Path]) -> None:
    b, _ = app
    shown = b.pages()
    folded = [t for t in PAGES if t not in shown]
    assert {"Labels", "Stability", "Loop", "Spans"} <= set(folded)  # the example has no such results
    assert {"Overview", "Judges", "Biases", "Items"} <= set(shown)
    assert shown[-1] == f"Not run yet ({len(folded)})"
    b.open(shown[-1])
    for title in folded:
        panel = b.page.locator(f".st-key-not-run-{title.lower().replace(' ', '-')}").inner_text()
        assert panel.startswith(title) and "judgecal " in panel, panel
    assert "judgecal stability run --workspace WS --judge J" in b.text()
    assert "judgecal gate --baseline J1 --candidate J2" in b.text()


def test_every_column_label_is_words_not_codes(app: tuple[Browser, Path]) -> None:
    b, _ = app
    for title in b.pages():
        b.open(title)
        heads = b.page.locator("[data-testid='stDataFrame'] thead th").all_inner_texts()
        assert not [h for h in heads if "_" in h or re.search(r"[a-z]:[a-z]", h)], (title, heads)
        assert "invalid_as" not in b.text() and "position_bias:" not in b.text(), title
