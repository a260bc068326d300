"""Page one in the terminal, run through the real command line: the example judge in `data/` (the README shows
this output) and PandaLM's two recorded judges. One table ranked by the gap to the humans, at 80 and 150
columns nothing cut and no line twice; `--details` adds the per-judge blocks without saying anything twice."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from judgecal.cli import main
from judgecal.report.terminal import merged_reasons

ROOT = Path(__file__).resolve().parents[1]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's ten lines, run in a folder of their own (the workspace is ``ws`` there, as in the README)."""
    folder = tmp_path_factory.mktemp("example")
    ws = str(folder / "ws")
    data = ROOT / "data"
    assert main(["import", str(data / "items.jsonl"), "-w", ws]) == 0
    assert main(["import", str(data / "verdicts.jsonl"), "--as", "judgments", "--spec", str(data / "judge.yaml"),
                 "-w", ws]) == 0
    assert main(["aggregate", "-w", ws]) == 0
    return folder


def _lines(out: str, width: int, rows_alike: bool = False) -> list[str]:
    """The output's lines: none wider than ``width``, none twice but rules (``rows_alike``: two judges' rows of
    the table may share a line, as two judges read against the same annotators with like reasons do; every
    line outside the table once)."""
    lines = [line.rstrip() for line in out.splitlines()]
    assert max(len(line) for line in lines) <= width and "…" not in out
    body = range(next(k for k, x in enumerate(lines) if x.startswith("─")),
                 next(k for k, x in enumerate(lines) if x.startswith("best available"))) if rows_alike else ()
    filled = [x for k, x in enumerate(lines) if x.strip() and k not in body and set(x) != {"─"}]
    assert len(filled) == len(set(filled)), [x for x in filled if filled.count(x) > 1]
    return lines


@pytest.mark.parametrize("width", [80, 150])
def test_the_example_audit_is_one_short_page(example, capsys, monkeypatch, width):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(example)
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    lines = _lines(_run(capsys, "audit", "-w", "ws"), width)
    assert len(lines) <= 30
    rep = json.loads((example / "ws" / "reports" / "audit.json").read_text())
    v = rep["judges"]["example/acme-judge"]["verdict"]
    assert lines[-3].startswith("truth: ds of source items") and lines[-2:] == [
        "wrote ws/reports/audit.json", "wrote ws/reports/audit.html"]
    assert " ".join(" ".join(lines).split()).count("best available judge: example/acme-judge (not aligned") == 1
    assert not any(line.startswith(("  -", "  !", "  ?", "  =")) for line in lines)
    assert any(line.startswith("example/acme-judge") for line in lines) and v["status"] == "not aligned"
    if width == 80:  # the README shows this output, as it is
        readme = (ROOT / "README.md").read_text("utf-8")
        shown = readme.split("## Your judge in ten lines", 1)[1].split("```text\n", 1)[1].split("```", 1)[0]
        assert shown.splitlines() == lines


def test_details_say_each_thing_once(example, capsys, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(example)
    monkeypatch.setenv("COLUMNS", "80")
    capsys.readouterr()
    lines = _lines(_run(capsys, "audit", "--details", "-w", "ws"), 80)
    flat = " ".join(" ".join(lines).split())
    v = json.loads((example / "ws" / "reports" / "audit.json").read_text())["judges"]["example/acme-judge"]["verdict"]
    merged = merged_reasons(v["reasons"])
    assert len(merged) == len(v["reasons"]) - 1  # the two sentences on the agreement figure, folded into one
    assert "0.40 below; no better than always answering 'A'" in flat
    cut = next(k for k, x in enumerate(lines) if x.startswith("best available"))
    start = next(x for x in lines if "the reason that matters most" in x).index("the reason that matters most")
    column = " ".join(" ".join(x[start:] for x in lines[:cut]).split())  # the table's last column, read down
    assert " ".join(merged[0].split()) in column  # the reason that matters most: in the table, not again below
    below = " ".join(" ".join(lines[cut:]).split())
    assert " ".join(merged[0].split()) not in below
    for r in merged[1:]:  # every other reason once, in the details
        assert below.count(" ".join(r.split())) == 1, r
    for probe in v["not_tested"]:
        assert flat.count(" ".join(probe.split())) == 1
    assert flat.count("like with like (pairwise):") == 1 and not any(line.startswith("  =") for line in lines)
    assert "prefers the response shown first" not in flat  # the position flag: its reason already says it


def test_a_new_audit_without_pdf_names_the_old_pdf_stale(example, capsys, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.chdir(example)
    capsys.readouterr()
    out = _run(capsys, "audit", "--pdf", "-w", "ws")
    assert "wrote ws/reports/audit.pdf" in out
    first = (example / "ws" / "reports" / "audit.pdf").read_bytes()
    out = _run(capsys, "audit", "-w", "ws")
    assert not (example / "ws" / "reports" / "audit.pdf").exists()
    assert (example / "ws" / "reports" / "audit.stale.pdf").read_bytes() == first
    assert "stale: the PDF of an earlier audit, renamed ws/reports/audit.stale.pdf" in out
    assert "this audit's PDF: judgecal report pdf ws/reports/audit.json" in out
    out = _run(capsys, "audit", "-w", "ws")  # nothing left to retire: nothing said
    assert "stale" not in out


@pytest.mark.parametrize("width", [80, 150])
def test_two_recorded_judges_ranked_by_their_gap(tmp_path_factory, mirror, capsys, monkeypatch, width):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp(f"pandalm{width}")
    ws = str(folder / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    lines = _lines(_run(capsys, "audit", "--n-boot", "200", "-w", ws), width, rows_alike=True)
    rep = json.loads((folder / "ws" / "reports" / "audit.json").read_text())
    gaps = {n: j["reference"]["like_for_like"]["pairwise"]["difference"]["kappa"]["estimate"]
            for n, j in rep["judges"].items()}
    assert len(gaps) == 2 and len(set(gaps.values())) == 2
    text = "\n".join(lines)
    at = {n: text.index(f"{g:+.3f}") for n, g in gaps.items()}
    best, worst = sorted(gaps, key=lambda n: -gaps[n])
    assert at[best] < at[worst]
    flat = " ".join(text.split())
    assert f"best available judge: {best} ({rep['judges'][best]['verdict']['status']}, {gaps[best]:+.3f}" in flat
    if all(j["verdict"]["status"] != "aligned" for j in rep["judges"].values()):
        assert "it may not replace people (no judge is aligned)" in flat
    n_untested = {n: len(j["verdict"]["not_tested_probes"]) for n, j in rep["judges"].items()}
    for name, n in n_untested.items():
        assert re.search(rf"\b{n}( not tested)?\b", text), name
