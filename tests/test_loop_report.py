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
    j = ws.judgments_frame(GPT)
    ws.add_judgments([Judgment(key=f"a-{r.key}", item_id=r.item_id, judge="always/A", spec_hash="a0",
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
