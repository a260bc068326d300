"""The loop in the trust report and the explorer: gate, panel and cascade results in audit.json, the HTML page
(names escaped) and the explorer's Loop page in a real browser (Debian's Chromium), checked against the JSON."""

from __future__ import annotations

import json

import pytest
from conftest import copy_workspace
from explorer_browser import Browser, serve

from judgecal.cli import main
from judgecal.data.records import Judgment

GPT, P7B = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"
EVIL = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def ws_dir(pandalm_ws, tmp_path_factory):
    d = tmp_path_factory.mktemp("loop-report") / "ws"
    ws = copy_workspace(pandalm_ws, d)
    j = ws.judgments_repo.judgments_frame(GPT)
    ws.judgments_repo.add_judgments([Judgment(key=f"a-{r.key}", item_id=r.item_id, judge="always/A", spec_hash="a0",
                               order=r.order, verdict="A", raw="A") for r in j.itertuples()])
    ws.close()
    w = ["-w", str(d)]
    assert main(["gate", "--baseline", GPT, "--candidate", "always/A", "--consensus", "mv", "--n-boot", "200", *w]) == 1
    assert main(["panel", "--members", f"{GPT},{P7B}", "--name", EVIL, *w]) == 0
    assert main(["cascade", "--stage", EVIL, "--stage", GPT, "--target", "0.6", "--consensus", "mv", *w]) == 0
    assert main(["audit", "--consensus", "mv", "--n-boot", "100", *w]) == 0
    return d


def test_audit_json_and_html_carry_the_loop(ws_dir):
    rep = json.loads((ws_dir / "reports" / "audit.json").read_text())
    loop = rep["loop"]
    assert loop["gate"]["candidate"] == "always/A" and not loop["gate"]["passed"]
    assert loop["panels"][EVIL]["decided"] + loop["panels"][EVIL]["no_majority"] == 999
    (cascade,) = loop["cascades"].values()
    assert "escalated" not in cascade and [s["judge"] for s in cascade["stages"]] == [EVIL, GPT]
    assert EVIL in rep["judges"]  # the panel is audited beside its members
    html = (ws_dir / "reports" / "audit.html").read_text()
    assert "Closing the loop" in html and "Gate: the candidate against the baseline" in html
    assert EVIL not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_explorer_loop_page(ws_dir):
    rep = json.loads((ws_dir / "reports" / "audit.json").read_text())
    with serve(ws_dir) as url:
        b = Browser(url)
        try:
            b.open("Loop")
            heads, rows = b.grid("loop-gate")
            assert "difference (95% CI)" in heads
            metric = heads.index("metric")
            assert [r[metric] for r in rows] == list(rep["loop"]["gate"]["metrics"])
            csv = b.assert_csv_is_grid("loop-gate")
            assert set(csv["result"]) >= {"worse"} and set(csv["gate"]) == {"failed"}
            b.assert_csv_is_grid("loop-panels")
            cas = b.csv("loop-cascades")
            assert list(cas["stage"]) == [EVIL, GPT, "people"]
            assert "Not run" in b.text()  # no alignment in this workspace: said, with its command
            assert b.dialogs == [] and b.errors == []
        finally:
            b.close()


def test_the_loop_section_is_typed_and_an_alignment_shows_its_held_out_rows(ws_dir):
    from judgecal.audit.schema import Loop, read_report
    from judgecal.report.loop import loop_tables

    data = json.loads((ws_dir / "reports" / "audit.json").read_text())
    rep = read_report(data)
    assert json.dumps(rep.to_json()) == json.dumps(data)  # typed, every key written back in its order
    assert isinstance(rep.loop, Loop) and rep.loop.gate is not None
    assert list(rep.loop.gate.metrics) == list(data["loop"]["gate"]["metrics"])
    assert rep.loop.gate.passed is data["loop"]["gate"]["passed"]
    (name,) = rep.loop.cascades
    assert [s.judge for s in rep.loop.cascades[name].stages] == [s["judge"] for s in data["loop"]["cascades"][name]["stages"]]
    metrics = {"accuracy": {"baseline": 0.61, "candidate": 0.66, "difference": 0.05, "ci_low": 0.01, "ci_high": 0.09,
                            "worse_by": -0.05, "worse_bound": -0.01, "tolerance": 0.02, "result": "not worse"}}
    align = {"judge": GPT, "candidate": "aligned/x", "method": "guidelines", "split": {"n_train": 40, "n_held_out": 60},
             "shots": [], "guidelines": ["prefer the factual answer", "ignore length"],
             "rationales": {"used": 1, "agree_with_truth": 7, "positional": 2}, "held_out": {"metrics": metrics},
             "conclusion": "better on the held-out split"}
    rows = loop_tables(Loop.model_validate({"align": {"aligned/x": align}}))["align"]
    assert len(rows) == 1 and rows[0]["from"] == GPT and rows[0]["train labels"] == 40
    assert rows[0]["held-out labels"] == 60 and rows[0]["difference (95% CI)"] == "+0.050 (+0.010 to +0.090)"
    assert rows[0]["built from"].startswith("2 guidelines, 1 quoted") and "7 on train items" in rows[0]["built from"]
