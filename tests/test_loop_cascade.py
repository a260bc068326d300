"""Cascades on PandaLM: a panel of the recorded judges, then one recorded judge, then people; thresholds
checked against the single-judge Trust-or-Escalate test, costs by hand, the people's share sent by
`annotate push --strategy escalate`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workspace

from judgecal.annotation.select import select
from judgecal.cli import main
from judgecal.loop import LoopError
from judgecal.loop.cascade import run_cascade, stage_confidence
from judgecal.loop.compare import judge_frame
from judgecal.loop.panel import make_panel, run_panel
from judgecal.stats import selective

GPT, P7B = "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"


@pytest.fixture(scope="module")
def ws(pandalm_ws, tmp_path_factory):
    w = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("cascade") / "ws")
    run_panel(w, make_panel([GPT, P7B], name="duo"))
    yield w
    w.close()


@pytest.fixture(scope="module")
def truth(ws):
    cons = ws.annotations_repo.consensus_frame("mv")
    return pd.Series(cons["label"].to_numpy(dtype=str), index=cons["item_id"].to_numpy(dtype=str))


def test_confidence_of_a_panel_and_of_a_single_recorded_verdict(ws):
    conf, kind = stage_confidence(judge_frame(ws, "duo"))
    assert kind == "token probabilities"
    duo = ws.judgments_repo.judgments_frame("duo").set_index("item_id")
    # unanimous slots: confidence 1; slots without a strict majority: none (they move on)
    assert set(conf["confidence"].dropna()) == {1.0}
    assert set(conf["confidence"].dropna().index) == set(duo.index[duo["status"] == "ok"])
    conf, kind = stage_confidence(judge_frame(ws, GPT))
    assert kind.startswith("none") and conf["confidence"].isna().sum() == 25  # its 25 unparsable answers


def test_one_stage_is_trust_or_escalate(ws, truth):
    res = run_cascade(ws, ["duo"], truth, target=0.75, delta=0.1, seed=3)
    conf, _ = stage_confidence(judge_frame(ws, "duo"))
    ids = pd.Index(sorted(truth.index))
    cal = ids[np.random.default_rng(3).permutation(len(ids)) < (len(ids) + 1) // 2]
    c = conf.reindex(cal)
    agree = (c["verdict"].to_numpy(dtype=object) == truth.reindex(cal).to_numpy(dtype=object)).astype(float)
    ref = selective.trust_or_escalate(c["confidence"].to_numpy(dtype=float), agree, target=0.75, delta=0.1)
    st = res["stages"][0]
    assert st["threshold"] == ref.threshold == 1.0 and st["calibration"]["kept"] == ref.n_kept
    assert st["all_items"]["decided"] == int(conf["confidence"].notna().sum())
    assert res["share_to_people"] == pytest.approx(1 - st["all_items"]["decided"] / 999)
    assert res["held_out"]["agreement"] >= 0.75  # the guarantee, seen on the held-out half


def test_two_stages_split_delta_and_calibrate_on_what_reaches_them(ws, truth):
    res = run_cascade(ws, ["duo", GPT], truth, target=0.6, delta=0.1, seed=0,
                      costs={"duo": 0.002, GPT: 0.001}, human_cost=0.5)
    s1, s2 = res["stages"]
    assert s1["delta_stage"] == s2["delta_stage"] == 0.05
    assert s2["calibration"]["reached"] == s1["calibration"]["reached"] - s1["calibration"]["kept"]
    assert s2["all_items"]["reached"] == 999 - s1["all_items"]["decided"]
    decided = s1["all_items"]["decided"] + s2["all_items"]["decided"]
    assert res["share_to_people"] == pytest.approx(1 - decided / 999)
    # cost: every item pays stage 1, those it passes on pay stage 2, the rest pay people
    expect = 0.002 + 0.001 * s2["all_items"]["reached"] / 999 + 0.5 * res["share_to_people"]
    assert res["cost_per_item"] == pytest.approx(expect)
    assert len(res["escalated"]) == 999 - decided
    with pytest.raises(LoopError):
        run_cascade(ws, ["duo", "duo"], truth)


def test_cli_and_escalate_push_selection(ws, capsys):
    assert main(["cascade", "-w", str(ws.path), "--consensus", "mv", "--stage", "duo", "--stage", GPT,
                 "--target", "0.6", "--name", "cheap-then-gpt"]) == 0
    out = capsys.readouterr().out
    assert "cost per item unknown" in out and "annotate push --strategy escalate" in out
    stored = json.loads((ws.path / "reports" / "cascade.json").read_text())["cheap-then-gpt"]
    chosen = select(ws, "escalate", 10_000, judge="cheap-then-gpt")
    assert set(chosen) == set(stored["escalated"])
    scores = [stored["escalated"][i] for i in chosen]
    assert scores == sorted(scores, reverse=True)  # least confident first
    assert main(["cascade", "-w", str(ws.path), "--consensus", "mv", "--stage", "nobody/x"]) == 2
    assert main(["cascade", "-w", str(ws.path), "--stage", "duo", "--cost", "duo=abc"]) == 2
