"""The trust report follows each judge over time when records carry a time or a period, on real recorded verdicts
that drift (LLMBar Natural, GPT-4's verdicts for the first period and Falcon's from the second under one judge
name, :mod:`drifting`): audit.json's ``over_time`` is ``monitor()``'s result, audit.html and the PDF show the
section with its chart, the terminal's page one says where the judge drifted in one line; the same items without
the switch say "no drift", and without periods the report has no such part."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from drifting import build_workspace, read_llmbar, write_files

from judgecal.catalogue import fmt_interval
from judgecal.cli import main
from judgecal.data.store import Workspace

JUDGE = "production-judge"


@pytest.fixture(scope="module")
def llmbar(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> dict:
    return read_llmbar(tmp_path_factory.mktemp("llmbar"), mirror)


def _audited(llmbar: dict, tmp: Path, switch: int | None, capsys: pytest.CaptureFixture[str],
             *extra: str) -> tuple[str, dict, str]:
    ws = build_workspace(write_files(llmbar, tmp / "f", switch=switch), tmp / "ws")
    capsys.readouterr()
    assert main(["audit", "--n-boot", "100", *extra, "-w", ws]) == 0
    out = capsys.readouterr().out
    return ws, json.loads((Path(ws) / "reports" / "audit.json").read_text("utf-8")), out


def test_a_drifting_judge_is_named_on_page_one_and_in_the_report(llmbar, tmp_path, capsys):
    from judgecal.audit.monitor import monitor

    pdf = shutil.which("pdftotext") is not None and _weasyprint()
    ws, report, out = _audited(llmbar, tmp_path, 1, capsys, *(["--pdf"] if pdf else []))
    assert f"over time: {JUDGE} drifted from 2024-02\n" in out
    with Workspace(ws, create=False) as w:
        series = monitor(w, JUDGE, consensus=report["settings"]["consensus"])
    section = report["judges"][JUDGE]["over_time"]
    assert section == json.loads(json.dumps({k: v for k, v in series.items() if k != "judge"}))
    assert main(["monitor", "-w", ws, "--by", "period", "--consensus", report["settings"]["consensus"], "--json"]) == 1
    assert section == {k: v for k, v in json.loads(capsys.readouterr().out).items() if k != "judge"}  # as CI reads it
    assert section["first_drift"] == "2024-02" and section["by"] == "period" and section["alpha"] == 0.05
    assert "confidence sequence" in section["method"]
    html = (Path(ws) / "reports" / "audit.html").read_text("utf-8")
    part = html[html.index(">Over time</h4>"):]
    assert 'class="plot over-time"' in part[:400] and "Drift declared at 2024-02" in part
    assert "drift boundary" in part and "error 0.05" in part
    for p in series["periods"]:  # each period's row, its figures as monitor() gives them
        cells = fmt_interval(p["agreement"], p["agreement_low"], p["agreement_high"])
        assert re.search(rf">{re.escape(p['period'])}</bdi>.*?{re.escape(cells)}", part, re.S), p["period"]
    if pdf:
        text = subprocess.run(["pdftotext", str(Path(ws) / "reports" / "audit.pdf"), "-"], capture_output=True,
                              text=True, check=True).stdout
        assert "Over time" in text and "Drift declared at 2024-02" in text.replace("\n", " ")


def test_a_judge_without_drift_says_so_in_one_line(llmbar, tmp_path, capsys):
    _, report, out = _audited(llmbar, tmp_path, None, capsys)
    assert f"over time: {JUDGE}: no drift over 4 periods\n" in out
    assert report["judges"][JUDGE]["over_time"]["first_drift"] is None


def test_without_time_or_period_the_report_has_no_over_time_part(llmbar, tmp_path, capsys):
    files = write_files(llmbar, tmp_path / "f", switch=1)
    for name in ("items.jsonl", "verdicts.jsonl"):
        rows = [json.loads(line) for line in (files / name).read_text("utf-8").splitlines()]
        (files / name).write_text("".join(json.dumps({k: v for k, v in r.items() if k != "period"}) + "\n"
                                          for r in rows), "utf-8")
    ws = build_workspace(files, tmp_path / "ws")
    capsys.readouterr()
    assert main(["audit", "--n-boot", "100", "-w", ws]) == 0
    assert "over time" not in capsys.readouterr().out
    report = json.loads((Path(ws) / "reports" / "audit.json").read_text("utf-8"))
    assert "over_time" not in report["judges"][JUDGE]
    assert "Over time" not in (Path(ws) / "reports" / "audit.html").read_text("utf-8")


def _weasyprint() -> bool:
    try:
        import weasyprint  # noqa: F401
    except (ImportError, OSError):
        return False
    return True


def test_records_with_a_time_are_followed_by_week_as_the_monitor_does_by_default(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=1, when="time"), tmp_path / "ws")
    capsys.readouterr()
    assert main(["audit", "--n-boot", "100", "-w", ws]) == 0
    section = json.loads((Path(ws) / "reports" / "audit.json").read_text("utf-8"))["judges"][JUDGE]["over_time"]
    capsys.readouterr()
    code = main(["monitor", "-w", ws, "--json"])  # its default grouping: ISO weeks
    series = json.loads(capsys.readouterr().out)
    assert section["by"] == "week" and section["periods"][0]["period"] == "2024-W01"
    assert section == {k: v for k, v in series.items() if k != "judge"} and code == (1 if section["drift"] else 0)
