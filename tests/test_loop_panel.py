"""Panels: a strict majority of several judges on PandaLM, audited beside its members."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workspace

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.cli import main
from judgecal.data.records import Judgment
from judgecal.loop import LoopError
from judgecal.loop.panel import load_panel, majority, make_panel, run_panel

GPT, P7B = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"


@pytest.fixture(scope="module")
def ws(pandalm_ws, tmp_path_factory):
    """PandaLM plus a third member that answers A on the first 600 items and abstains (no call) on the rest."""
    w = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("panel") / "ws")
    j = w.judgments_repo.judgments_frame(GPT).sort_values("item_id").head(600)
    w.judgments_repo.add_judgments([Judgment(key=f"a-{r.key}", item_id=r.item_id, judge="always/A", spec_hash="a0",
                              order=r.order, verdict="A", raw="A") for r in j.itertuples()])
    yield w
    w.close()


def _verdicts(ws, judge):
    f = ws.judgments_repo.judgments_frame(judge)
    return pd.Series(f["verdict"].to_numpy(dtype=object), index=f["item_id"].to_numpy(dtype=str))


def test_strict_majority_counts_abstentions_and_never_breaks_ties():
    votes = pd.DataFrame({"A": [2, 1, 1, 2, 0], "B": [1, 1, 1, 0, 0], "tie": [0, 1, 0, 0, 3]})
    label, won = majority(votes, 3)
    assert list(label) == ["A", None, None, "A", "tie"]
    assert list(won) == [True, False, False, True, True]
    # four members, two for A, one for B, one abstained: two is not more than half of four
    label, won = majority(pd.DataFrame({"A": [2], "B": [1]}), 4)
    assert label[0] is None and not won[0]


def test_panel_of_three_against_a_hand_count(ws):
    got = run_panel(ws, make_panel([GPT, P7B, "always/A"], name="trio"))
    a, b, c = _verdicts(ws, GPT), _verdicts(ws, P7B), _verdicts(ws, "always/A")
    frame = pd.DataFrame({"a": a, "b": b}).join(c.rename("c"), how="left")
    expect = {}
    for item, row in frame.iterrows():
        votes = [v for v in row if isinstance(v, str) and v in ("A", "B", "tie")]
        top = max(("A", "B", "tie"), key=votes.count)
        expect[item] = top if votes.count(top) * 2 > 3 else "invalid"
    panel = _verdicts(ws, "trio")
    assert panel.to_dict() == expect
    assert got["decided"] == sum(v != "invalid" for v in expect.values())
    assert got["no_majority"] == sum(v == "invalid" for v in expect.values()) > 0
    raw = ws.judgments_repo.judgments_frame("trio").set_index("item_id")["raw"]
    assert raw[panel == "invalid"].str.startswith("no majority: ").all()


def test_members_order_is_not_a_tie_break(ws):
    one = run_panel(ws, make_panel([GPT, P7B], name="duo"))
    other = run_panel(ws, make_panel([P7B, GPT], name="duo"))
    assert one["spec_hash"] == other["spec_hash"]
    v = _verdicts(ws, "duo")
    a, b = _verdicts(ws, GPT).reindex(v.index), _verdicts(ws, P7B).reindex(v.index)
    both = (a == b) & a.isin(["A", "B", "tie"])
    assert (v[both] == a[both]).all() and (v[~both] == "invalid").all()


def test_panel_is_audited_beside_its_members(ws):
    run_panel(ws, make_panel([GPT, P7B], name="duo"))
    rep = audit_workspace(ws, AuditOptions(consensus="mv", n_boot=100)).to_json()
    assert {"duo", GPT, P7B} <= set(rep["judges"])
    duo = rep["judges"]["duo"]["metrics"]
    truth = ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    v = _verdicts(ws, "duo").replace({"invalid": "tie"})
    assert duo["accuracy"]["estimate"] == pytest.approx(float(np.mean(v.to_numpy() == truth.reindex(v.index))))


def test_panel_spec_file_and_its_errors(ws, tmp_path, capsys):
    spec = tmp_path / "panel.yaml"
    spec.write_text(f"name: file-duo\npanel:\n  members: [{GPT}, {P7B}]\n  rule: majority\n")
    assert load_panel(spec).members == (GPT, P7B)
    assert main(["panel", "--spec", str(spec), "-w", str(ws.path)]) == 0
    assert "file-duo" in ws.judgments_repo.judges()
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"panel:\n  members: [{GPT}]\n")
    with pytest.raises(LoopError, match=r"bad.yaml: .*panel.members"):
        load_panel(bad)
    bad.write_text(f"panel:\n  members: [{GPT}, {P7B}]\n  rule: first\n")
    capsys.readouterr()
    assert main(["panel", "--spec", str(bad), "-w", str(ws.path)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml: field 'panel.rule'" in err and err.count("\n") == 1
    assert main(["panel", "--members", f"{GPT},nobody/x", "-w", str(ws.path)]) == 2


@pytest.mark.parametrize(("name", "words"), [
    ("humans", "'humans' is a reserved name"),
    ("Truth ", "'Truth' is a reserved name"),
    ("x" * 201, "a judge's name is 201 characters; the limit is 200"),
])
def test_a_panel_name_is_checked_as_an_imported_judge_name(ws, capsys, name, words):
    before = set(ws.judgments_repo.judges())
    capsys.readouterr()
    assert main(["panel", "--members", f"{GPT},{P7B}", "--name", name, "-w", str(ws.path)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    assert set(ws.judgments_repo.judges()) == before


def test_a_panel_never_takes_the_name_of_another_judge(ws, capsys):
    """A second spec under an existing judge's name made gate, cascade and panel fail afterwards."""
    before = ws.judgments_repo.judgments_frame(P7B)
    capsys.readouterr()
    assert main(["panel", "--members", f"{GPT},always/A", "--name", P7B, "-w", str(ws.path)]) == 2
    err = capsys.readouterr().err
    assert f"a judge named {P7B!r} is already in this workspace" in err and err.count("\n") == 1, err
    assert ws.judgments_repo.judgments_frame(P7B)["verdict"].tolist() == before["verdict"].tolist()
    assert {h for (_, h), n in ws.judgments_repo.judge_names().items() if n == P7B} == set(before["spec_hash"])
    # the same panel again under its own name replaces its own earlier run: allowed
    assert main(["panel", "--members", f"{GPT},{P7B}", "--name", "duo-again", "-w", str(ws.path)]) == 0
    assert main(["panel", "--members", f"{GPT},{P7B}", "--name", "duo-again", "-w", str(ws.path)]) == 0
