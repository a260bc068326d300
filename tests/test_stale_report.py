"""A report older than its workspace's evidence is named stale: `judgecal report` writes it as
``audit.stale.{html,pdf}`` with a line saying what changed, and the explorer warns on every page that shows it.
Evidence is the items, judgments, human labels, consensus and spans an audit reads; a fresh audit clears it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "judgecal.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "100"}, timeout=300)


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "data", tmp_path / "data")
    for args in (("import", "data/items.jsonl", "-w", "ws", "--quiet"),
                 ("import", "data/verdicts.jsonl", "--as", "judgments", "--spec", "data/judge.yaml", "-w", "ws",
                  "--quiet"),
                 ("aggregate", "-w", "ws"), ("audit", "-w", "ws", "--n-boot", "40")):
        res = _cli(*args, cwd=tmp_path)
        assert res.returncode == 0, (args, res.stderr)
    return tmp_path / "ws"


def _more_labels(tmp_path: Path) -> int:
    """A fourth annotator labels every item again (the same items, so only the human labels change)."""
    rows = [json.loads(line) for line in (tmp_path / "data" / "items.jsonl").read_text("utf-8").splitlines()]
    for r in rows:
        r["human_labels"] = {"annotator4": next(iter(r["human_labels"].values()))}
    (tmp_path / "more").mkdir()  # the same file name: the same source
    (tmp_path / "more" / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    res = _cli("import", "more/items.jsonl", "-w", "ws", "--quiet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    return len(rows)


def test_report_names_a_stale_audit_and_a_new_audit_clears_it(ws: Path) -> None:
    tmp = ws.parent
    fresh = _cli("report", "html", "ws/reports/audit.json", cwd=tmp)
    assert fresh.returncode == 0 and "stale" not in fresh.stdout + fresh.stderr, fresh
    assert (ws / "reports" / "audit.html").is_file() and not (ws / "reports" / "audit.stale.html").exists()

    n = _more_labels(tmp)
    stale = _cli("report", "html", "ws/reports/audit.json", cwd=tmp)
    assert stale.returncode == 0, stale.stderr
    lines = stale.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("stale: the workspace changed since this audit: ")
    assert f"{n} human labels added" in lines[0] and "audit.stale.html" in lines[0]
    assert (ws / "reports" / "audit.stale.html").is_file() and "audit.stale.html" in stale.stdout

    # an aggregate that writes the same consensus again changes nothing; another method's consensus does
    assert _cli("aggregate", "-w", "ws", cwd=tmp).returncode == 0
    assert _cli("audit", "-w", "ws", "--n-boot", "40", cwd=tmp).returncode == 0
    assert _cli("aggregate", "-w", "ws", cwd=tmp).returncode == 0
    again = _cli("report", "html", "ws/reports/audit.json", cwd=tmp)
    assert again.returncode == 0 and "stale" not in again.stderr, again.stderr
    assert _cli("aggregate", "-w", "ws", "--method", "onecoin", cwd=tmp).returncode == 0
    mv = _cli("report", "pdf", "ws/reports/audit.json", cwd=tmp)
    assert "consensus labels added" in mv.stderr and (ws / "reports" / "audit.stale.pdf").is_file(), mv.stderr


def test_an_audit_json_outside_a_workspace_is_rendered_as_it_is(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "copy"
    elsewhere.mkdir()
    shutil.copy(ws / "reports" / "audit.json", elsewhere / "audit.json")
    _more_labels(ws.parent)
    res = _cli("report", "html", str(elsewhere / "audit.json"), cwd=tmp_path)
    assert res.returncode == 0 and res.stderr == "" and (elsewhere / "audit.html").is_file(), res


def test_an_audit_written_deeper_in_its_workspace_is_named_stale_too(ws: Path) -> None:
    tmp = ws.parent
    assert _cli("audit", "-w", "ws", "--n-boot", "40", "--out", "ws/runs/2026-12", cwd=tmp).returncode == 0
    _more_labels(tmp)
    res = _cli("report", "html", "ws/runs/2026-12/audit.json", cwd=tmp)
    assert res.returncode == 0 and "human labels added" in res.stderr, res
    assert (ws / "runs" / "2026-12" / "audit.stale.html").is_file()

def test_an_earlier_audit_json_put_back_in_place_of_the_latest_is_named_stale(ws: Path) -> None:
    tmp = ws.parent
    shutil.copy(ws / "reports" / "audit.json", tmp / "earlier.json")
    _more_labels(tmp)
    assert _cli("audit", "-w", "ws", "--n-boot", "40", cwd=tmp).returncode == 0
    shutil.copy(tmp / "earlier.json", ws / "reports" / "audit.json")  # restored from a backup, or another's copy
    res = _cli("report", "html", "ws/reports/audit.json", cwd=tmp)
    assert res.returncode == 0 and res.stderr.startswith("stale: ") and len(res.stderr.strip().splitlines()) == 1, res
    assert "not the one the latest audit of this workspace wrote" in res.stderr
    assert (ws / "reports" / "audit.stale.html").is_file()

def test_the_explorer_warns_that_the_audit_is_stale(ws: Path) -> None:
    from explorer_browser import Browser, serve

    _more_labels(ws.parent)
    with serve(ws) as url:
        b = Browser(url)
        try:
            b.idle()
            for page in ("Overview", "Judges"):
                b.open(page)
                text = b.text()
                assert "This audit is stale" in text and "20 human labels added" in text, text[:2000]
                assert f"judgecal audit -w {ws}" in text
        finally:
            b.close()
    assert _cli("audit", "-w", "ws", "--n-boot", "40", cwd=ws.parent).returncode == 0
    with serve(ws) as url:
        b = Browser(url)
        try:
            b.idle()
            b.open("Overview")
            assert "This audit is stale" not in b.text() and "example/acme-judge" in b.text()
        finally:
            b.close()
