"""The explorer's Over time page in Debian's Chromium, on real recorded verdicts that drift (LLMBar Natural, GPT-4's
verdicts for the first period and Falcon's from the second under one judge name, :mod:`drifting`): the page names
the period where ``monitor()`` declares drift and its table holds ``monitor()``'s figures, a period name from a file
stays inert; on the same items without periods the page is one of the "Not run yet" panels."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from drifting import build_workspace, read_llmbar, write_files
from explorer_browser import Browser, serve

from judgecal.catalogue import fmt_interval, fmt_number
from judgecal.data.store import Workspace

JUDGE = "production-judge"
HOSTILE = "2024-03 <img src=x onerror=alert(1)> [link](http://evil.example/p) **bold**"


def _audit(ws: str) -> None:
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "audit", "--n-boot", "100", "-w", ws],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def _rename(files: Path, old: str, new: str | None) -> None:
    """Rename the period ``old`` in the files (``new`` ``None``: drop every period)."""
    for name in ("items.jsonl", "verdicts.jsonl"):
        rows = [json.loads(line) for line in (files / name).read_text("utf-8").splitlines()]
        for r in rows:
            if new is None:
                r.pop("period", None)
            elif r.get("period") == old:
                r["period"] = new
        (files / name).write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")


@pytest.fixture(scope="module")
def llmbar(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> dict:
    return read_llmbar(tmp_path_factory.mktemp("llmbar"), mirror)


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory, llmbar: dict) -> Iterator[tuple[Browser, str]]:
    tmp = tmp_path_factory.mktemp("drift")
    files = write_files(llmbar, tmp / "f", switch=1)
    _rename(files, "2024-03", HOSTILE)
    ws = build_workspace(files, tmp / "ws")
    _audit(ws)
    with serve(Path(ws)) as url:
        b = Browser(url)
        yield b, ws
        b.close()


def test_the_page_names_the_drift_period_and_shows_the_monitors_figures(drifted: tuple[Browser, str]) -> None:
    from judgecal.audit.monitor import monitor, settings

    b, ws = drifted
    assert "Over time" in b.pages()
    b.open("Over time")
    report = json.loads((Path(ws) / "reports" / "audit.json").read_text("utf-8"))
    with Workspace(ws, create=False) as w:
        alpha, effect = settings(w)  # judgecal monitor's defaults, as the page uses them
        series = monitor(w, JUDGE, by="period", consensus=report["settings"]["consensus"], alpha=alpha, effect=effect)
    assert series["first_drift"] == "2024-02"  # the switch to the weaker judge
    decision = b.page.locator(".st-key-ot-decision").inner_text().replace("\u2060", "")
    assert decision.startswith(f"Drift declared at {series['first_drift']}")
    b.page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=30_000)
    heads, rows = b.grid("over-time")
    assert heads[:4] == ["period", "role", "n", "agreement (95% CI)"]
    col = {h: k for k, h in enumerate(heads)}
    assert [r[0] for r in rows] == [p["period"] for p in series["periods"]]  # the hostile name as plain text
    for row, p in zip(rows, series["periods"], strict=True):
        assert row[col["n"]] == str(p["n"])
        assert row[col["agreement (95% CI)"]] == fmt_interval(p["agreement"], p["agreement_low"], p["agreement_high"])
        assert row[col["κ"]] == fmt_number(p["kappa"])
        if p["role"] == "after":
            assert row[col["drop (anytime-valid CI)"]] == fmt_interval(p["drop"], p["drop_low"], p["drop_high"])
            assert row[col["decision"]] == ("DRIFT" if p["drift"] else "no drift")
        else:
            assert row[col["decision"]] == p["role"]
    assert [r[col["decision"]] for r in rows] == ["baseline", "DRIFT", "DRIFT", "DRIFT"]
    b.assert_csv_is_grid("over-time")
    assert b.dialogs == [] and b.requests == [] and b.external == [] and b.errors == []
    assert not b.page.locator("[data-testid='stMain'] img[src='x']").count()


def test_without_periods_the_page_is_listed_as_not_run_yet(drifted: tuple[Browser, str], llmbar: dict,
                                                            tmp_path: Path) -> None:
    b, _ = drifted  # one Chromium per module: the same browser visits a second explorer
    files = write_files(llmbar, tmp_path / "f", switch=1)
    _rename(files, "", None)
    ws = build_workspace(files, tmp_path / "ws")
    _audit(ws)
    with serve(Path(ws)) as url:
        b.page.goto(url)
        b.idle()
        shown = b.pages()
        assert "Over time" not in shown and shown[-1].startswith("Not run yet")
        b.open(shown[-1])
        panel = b.page.locator(".st-key-not-run-over-time").inner_text()
        assert panel.startswith("Over time") and "judgecal monitor --workspace WS --by period" in panel


def test_records_with_a_time_are_grouped_by_week_or_month(drifted: tuple[Browser, str], llmbar: dict,
                                                          tmp_path: Path) -> None:
    from judgecal.audit.monitor import monitor

    b, _ = drifted
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=1, when="time"), tmp_path / "ws")
    _audit(ws)
    with serve(Path(ws)) as url:
        b.page.goto(url)
        b.idle()
        b.open("Over time")
        assert b.page.locator(".st-key-ot-by input").input_value() == "ISO week"  # judgecal monitor's default
        b.select("ot-by", "month")
        with Workspace(ws, create=False) as w:
            series = monitor(w, JUDGE, by="month", consensus="ds")
        assert series["first_drift"] == "2024-02"
        decision = b.page.locator(".st-key-ot-decision").inner_text().replace("\u2060", "")
        assert decision.startswith("Drift declared at 2024-02")
        heads, rows = b.grid("over-time")
        col = {h: k for k, h in enumerate(heads)}
        assert [r[0] for r in rows] == ["2024-01", "2024-02", "2024-03", "2024-04"]
        assert [r[col["agreement (95% CI)"]] for r in rows] == [
            fmt_interval(p["agreement"], p["agreement_low"], p["agreement_high"]) for p in series["periods"]]
