"""The explorer finds the audit: before any audit it says where it looked and which command writes one; after
``judgecal audit --out DIR`` (a folder outside the workspace) it opens that audit, and then the latest one.
In Debian's Chromium on the example files of ``data/``."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from explorer_browser import Browser, serve

ROOT = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path) -> str:
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args], capture_output=True, text=True, cwd=cwd)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("finds")
    _cli("import", str(ROOT / "data/items.jsonl"), "-w", "ws", cwd=tmp)
    _cli("import", str(ROOT / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(ROOT / "data/judge.yaml"),
         "-w", "ws", cwd=tmp)
    _cli("aggregate", "-w", "ws", cwd=tmp)
    return tmp / "ws"


def test_the_workspace_records_where_each_audit_wrote(ws: Path) -> None:
    from judgecal.data.store import Workspace

    tmp = ws.parent
    with Workspace(ws, create=False) as w:
        assert w.reports_repo.latest_report() is None
    _cli("audit", "--n-boot", "100", "-w", "ws", cwd=tmp)
    with Workspace(ws, create=False) as w:
        assert w.reports_repo.latest_report() == ws / "reports" / "audit.json"
    _cli("audit", "--n-boot", "100", "--out", "elsewhere", "-w", "ws", cwd=tmp)  # relative to the caller
    with Workspace(ws, create=False) as w:
        assert w.reports_repo.latest_report() == (tmp / "elsewhere" / "audit.json").resolve()
    (ws / "reports" / "audit.json").unlink()  # the explorer test starts with no audit where it looks first
    (tmp / "elsewhere" / "audit.json").rename(tmp / "elsewhere" / "moved.json")


def test_explorer_says_where_it_looked_then_opens_the_latest_audit(ws: Path) -> None:
    tmp = ws.parent
    with serve(ws) as url:
        b = Browser(url)
        try:
            text = b.text()
            assert "No audit found for this workspace" in text
            assert str((tmp / "elsewhere" / "audit.json").resolve()) in text  # the recorded place
            assert str(ws.resolve() / "reports" / "audit.json") in text or str(ws / "reports" / "audit.json") in text
            assert "judgecal audit --workspace" in text
            # an audit written outside the workspace (as `judgecal audit --out reports -w ws` does)
            _cli("audit", "--n-boot", "100", "--out", "reports", "-w", "ws", cwd=tmp)
            report = json.loads((tmp / "reports" / "audit.json").read_text("utf-8"))
            b.page.reload()
            b.idle()
            text = b.text()
            assert "No audit found" not in text
            assert "example/acme-judge" in text and "not aligned" in text
            assert report["generated_at"] in text  # the caption names the audit shown
            assert b.errors == []
            # an audit.json that is not an audit: its path, the field at fault and the command, no traceback
            target = tmp / "reports" / "audit.json"
            bad = json.loads(target.read_text("utf-8"))
            first = next(iter(bad["judges"]))
            bad["judges"][first]["metrics"]["accuracy"]["estimate"] = "high"
            target.write_text(json.dumps(bad), "utf-8")
            b.page.reload()
            b.page.get_by_text("cannot be read as an audit").wait_for(timeout=60_000)
            text = b.text()
            assert f"judges.{first}.metrics.accuracy.estimate" in text and "judgecal audit --workspace" in text
            assert b.page.locator("[data-testid='stException']").count() == 0
            target.write_text("{not json", "utf-8")
            b.page.reload()
            b.page.get_by_text("cannot be read as an audit").wait_for(timeout=60_000)
            assert str(target.resolve()) in b.text() or str(target) in b.text()
            assert b.page.locator("[data-testid='stException']").count() == 0
        finally:
            b.close()
