"""audit.json's schema and a self-contained, escaped audit.html."""

import json
import re

import pytest

from judgecal.audit.run import SCHEMA, run_audit
from judgecal.data.records import Annotation, Candidate, Item, Judgment
from judgecal.data.store import Workspace
from judgecal.report.write import write_report

EVIL = "<script>alert('x')</script>"


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("rep") / "ws")
    items = [Item(f"i{k}", f"q{k} {EVIL}", [Candidate(EVIL), Candidate("b")]) for k in range(30)]
    ws.add_items(items)
    ws.add_annotations([Annotation(f"i{k}", a, "A" if k % 3 else "B") for k in range(30) for a in ("h1", "h2")])
    judge = f"replay/x/{EVIL}"
    rows = []
    for k in range(30):
        for order in ("AB", "BA"):
            v = "A" if order == "AB" else ("B" if k % 2 else "A")
            rows.append(Judgment(key=f"{k}{order}", item_id=f"i{k}", judge=judge, spec_hash="s", order=order,
                                 verdict=v, raw=EVIL, prompt_tokens=100, completion_tokens=2, latency_s=0.5,
                                 cost_usd=0.001))
    ws.add_judgments(rows)
    from judgecal.aggregate.consensus import compute_consensus

    compute_consensus(ws, ("ds",))
    report = run_audit(ws, n_boot=300)
    out = tmp_path_factory.mktemp("out")
    write_report(report, out)
    return out, judge


def test_schema_every_metric_has_estimate_ci_and_n(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    assert rep["schema"] == SCHEMA
    m = rep["judges"][judge]["metrics"]
    for name in ("accuracy", "macro_f1", "cohen_kappa", "position_consistency", "first_position_rate",
                 "invalid_rate"):
        assert {"estimate", "ci_low", "ci_high", "n", "null_value", "p", "q", "mde"} == set(m[name]), name
        assert m[name]["ci_low"] <= m[name]["estimate"] <= m[name]["ci_high"]
    # hand-computed: AB always "A" (shown first); BA picks shown-first on odd k -> 45 / 60 first picks
    assert m["first_position_rate"]["estimate"] == pytest.approx(45 / 60)
    assert m["position_consistency"]["estimate"] == pytest.approx(15 / 30)
    u = rep["judges"][judge]["usage"]
    assert u["prompt_tokens_per_1k"] == 100_000 and u["cost_usd_per_1k"] == pytest.approx(1.0)
    assert u["latency_s_mean"] == 0.5


def test_html_is_self_contained_and_escaped(report_dir):
    out, _ = report_dir
    html = (out / "audit.html").read_text()
    assert "<script" not in html
    assert "&lt;script&gt;" in html
    assert not re.search(r"""(src|href)=["']?https?://""", html)
    assert "<svg" in html


def test_html_report_card_lists_every_metric_with_p_and_q(report_dir):
    out, judge = report_dir
    rep = json.loads((out / "audit.json").read_text())
    html = (out / "audit.html").read_text()
    card = html.split("<h2>Report card</h2>", 1)[1].split("<h2>Plots</h2>", 1)[0]
    rows = re.findall(r"<tr><td class='name'>([^<]+)</td>", card)
    assert rows == list(rep["judges"][judge]["metrics"])
    first = rep["judges"][judge]["metrics"]["first_position_rate"]
    row = re.search(r"<tr><td class='name'>first_position_rate</td>(.*?)</tr>", card).group(1)
    cells = re.findall(r"<td>([^<]*)</td>", row)
    assert cells[0] == f"{first['estimate']:.3f}" and cells[2] == str(first["n"])
    assert cells[4] != "–" and cells[5] != "–"  # tested: p and q are shown


def test_empty_workspace_gives_an_empty_but_valid_report(tmp_path):
    ws = Workspace(tmp_path / "ws")
    rep = run_audit(ws, n_boot=10)
    assert rep["judges"] == {} and rep["consensus"]["n_items"] == 0
    js, html = write_report(rep, tmp_path / "out")
    assert json.loads(js.read_text())["schema"] == SCHEMA


def test_undefined_statistics_are_written_as_null(tmp_path):
    import numpy as np

    rep = {"schema": SCHEMA, "judgecal_version": "x", "generated_at": "t", "consensus": {"n_items": 0},
           "settings": {"consensus": "ds", "invalid_as": "tie", "n_boot": 1, "ci_level": 0.95, "bootstrap": "b"},
           "judges": {"j": {"n_judgments": 1, "metrics": {}, "usage": {"judgments": 1, "prompt_tokens_per_1k": None,
                            "completion_tokens_per_1k": None, "cost_usd_per_1k": None, "latency_s_mean": None,
                            "latency_s_p95": None}, "position": {"flip_rate": float("nan"), "b": np.int64(3)}}}}
    js, _ = write_report(rep, tmp_path)
    back = json.loads(js.read_text())
    assert back["judges"]["j"]["position"] == {"flip_rate": None, "b": 3}


def test_report_card_shows_each_tested_metric_beside_its_null(report_dir):
    out, judge = report_dir
    card = (out / "audit.html").read_text().split("<h2>Report card</h2>", 1)[1].split("<h2>Plots</h2>", 1)[0]
    assert "<th>MDE</th><th>null</th>" in card
    row = re.search(r"<tr><td class='name'>first_position_rate</td>(.*?)</tr>", card).group(1)
    assert re.findall(r"<td>([^<]*)</td>", row)[-1] == "0.500"
    row = re.search(r"<tr><td class='name'>accuracy</td>(.*?)</tr>", card).group(1)
    assert re.findall(r"<td>([^<]*)</td>", row)[-1] == "–"  # descriptive: no null, not tested
