"""judgecal align: a candidate judge from the train split's human labels, judged on held-out labels only;
the split and example choice on PandaLM, the whole loop live with the embedded judge (SmolLM2)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import copy_workspace

from judgecal.cli import main
from judgecal.judges.spec import resolve_judge
from judgecal.loop import LoopError
from judgecal.loop.align import choose_shots, conclusion, split_items, write_guidelines


@pytest.fixture(scope="module")
def truth(pandalm_ws):
    cons = pandalm_ws.annotations_repo.consensus_frame("mv")
    return pd.Series(cons["label"].to_numpy(dtype=str), index=cons["item_id"].to_numpy(dtype=str))


def test_split_is_by_item_stratified_and_seeded(truth):
    tr, ho, about = split_items(truth, train_share=0.5, seed=1)
    assert not set(tr) & set(ho) and len(tr) + len(ho) == len(truth) == 999
    assert about["stratified"]
    share = truth.value_counts(normalize=True)
    for part in (tr, ho):
        got = truth.reindex(part).value_counts(normalize=True)
        assert (got - share).abs().max() < 0.005  # each label's share kept within rounding
    assert split_items(truth, seed=1)[0] == tr and split_items(truth, seed=2)[0] != tr
    tr, ho, about = split_items(truth, n_items=40, seed=0)
    assert len(tr) == len(ho) == 20 and about["train_labels"] == dict(
        truth.reindex(tr).value_counts().sort_index())
    with pytest.raises(LoopError, match="strictly between"):
        split_items(truth, train_share=1.0)


def test_shots_come_from_disagreements_shortest_first_labels_in_turn(pandalm_ws, truth):
    items = {it.item_id: it for it in pandalm_ws.items_repo.items()}
    tr, _, _ = split_items(truth, seed=0)
    j = pandalm_ws.judgments_repo.judgments_frame("replay/pandalm/pandalm-7b")
    verdict = pd.Series(j["verdict"].to_numpy(dtype=object), index=j["item_id"].to_numpy(dtype=str)).reindex(tr)
    shots = choose_shots({i: items[i] for i in tr}, verdict, truth, k=4, max_words=120)
    assert len(shots) == 4
    assert all(s["item_id"] in tr and verdict[s["item_id"]] != truth[s["item_id"]] for s in shots)
    assert all(s["answer"] == truth[s["item_id"]] for s in shots)
    assert len({s["answer"] for s in shots}) == 3  # A, B and tie each shown
    rules = write_guidelines({i: items[i] for i in tr}, verdict, truth.reindex(tr))
    tie = float((truth.reindex(tr) == "tie").mean())
    assert rules[0].startswith(f"People called {tie:.0%} of such pairs a tie")


def test_only_the_held_out_split_can_conclude_an_improvement():
    def cmp(lo, passed=True):
        return {"passed": passed, "metrics": {"accuracy": {"ci_low": lo}, "cohen_kappa": {"ci_low": None}}}
    assert conclusion(cmp(0.01)) == "improved"
    assert conclusion(cmp(-0.01)) == "no significant change"
    assert conclusion(cmp(0.01, passed=False)) == "worse"


def test_align_live_with_the_embedded_judge(pandalm_ws, tmp_path, capsys):
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    common = ["-w", str(ws.path), "--judge", "local/smollm2", "--consensus", "mv", "--items", "8", "--quiet",
              "--n-boot", "200", "--shots", "1"]
    assert main(["align", "--method", "fewshot", *common]) == 0
    assert main(["align", "--method", "guidelines", "--evaluate-train", *common]) == 0
    out = capsys.readouterr().out
    assert "held-out conclusion on" in out
    saved = json.loads((ws.path / "reports" / "align.json").read_text())
    assert len(saved) == 2
    for res in saved.values():
        split = res["split"]
        assert split["n_train"] == split["n_held_out"] == 4
        cand = ws.judgments_repo.judgments_frame(res["candidate"])
        base = ws.judgments_repo.judgments_frame(res["judge"])
        assert res["held_out"]["n_items"] <= 4 and res["conclusion"] == conclusion(res["held_out"])
        spec, rubric = resolve_judge(res["candidate_spec"])
        assert spec.name == res["candidate"]
        if res["method"] == "fewshot":
            assert len(rubric.shots) == 1 and res["shots"][0] not in set(cand["item_id"])
            assert cand["item_id"].nunique() == 4 and base["item_id"].nunique() == 8  # never the train split
            msgs = rubric.messages(ws.items_repo.items(ids=[cand["item_id"].iloc[0]])[0])
            assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        else:
            assert "Guidelines from expert reviewers" in rubric.system and res["guidelines"]
            assert res["train"]["improvement"] is None and "not evidence" in res["train"]["note"]
            assert cand["item_id"].nunique() == 8
    ws.close()


def test_align_optimizer_draws_and_scores_on_the_train_split_only(pandalm_ws, truth, tmp_path, capsys):
    """DSPy's random search, its every call made by the embedded judge through judgecal's engine."""
    import yaml

    from judgecal.data.store import Workspace
    from judgecal.loop.align import split_items

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    assert main(["align", "--method", "optimizer", "-w", str(ws.path), "--judge", "local/smollm2", "--consensus",
                 "mv", "--items", "8", "--quiet", "--n-boot", "200", "--shots", "1", "--candidates", "1"]) == 0
    out = capsys.readouterr().out
    assert "BootstrapFewShotWithRandomSearch: 3 example sets scored on 2 train items" in out
    assert "Going to sample" not in out and "Average Metric" not in out  # DSPy's own prints kept off stdout
    res = next(iter(json.loads((ws.path / "reports" / "align.json").read_text()).values()))
    train, held, _ = split_items(truth, n_items=8, seed=0)
    opt = res["optimizer"]
    assert opt["library"] == "dspy 3.4.1" and (opt["n_fit"], opt["n_val"]) == (2, 2)
    assert [s["score"] for s in opt["scores"]] == sorted((s["score"] for s in opt["scores"]), reverse=True)
    assert all(0 <= s["score"] <= 1 and len(s["examples"]) >= 1 for s in opt["scores"])  # none zero-shot
    assert res["shots"] == opt["scores"][0]["examples"] and set(res["shots"]) <= set(train)
    with Workspace(opt["scratch"], create=False) as scratch:  # the optimizer's own calls: train items only
        seen = set(scratch.judgments_repo.judgments_frame()["item_id"])
    assert seen and seen <= set(train) and not seen & set(held)
    assert opt["calls"] + opt["cached_calls"] >= len(opt["scores"]) * opt["n_val"]
    spec, rubric = resolve_judge(res["candidate_spec"])
    items = {it.item_id: it for it in ws.items_repo.items(ids=res["shots"])}
    assert [s.prompt for s in rubric.shots] == [items[i].prompt for i in res["shots"]]
    raw = yaml.safe_load(Path(res["candidate_spec"]).read_text("utf-8"))
    assert raw["description"].endswith("--method optimizer")
    cand = ws.judgments_repo.judgments_frame(res["candidate"])
    assert set(cand["item_id"]) <= set(held) and res["held_out"]["n_items"] <= len(held)
    assert res["conclusion"] == conclusion(res["held_out"])


def test_align_guidelines_quote_the_annotators_rationales(pandalm_ws, truth, tmp_path):
    """Rationales stored beside the people's labels reach the candidate's rubric, train items only."""
    from judgecal.data.records import Annotation
    from judgecal.loop.align import split_items

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    train, held, _ = split_items(truth, n_items=8, seed=0)
    ws.annotations_repo.add_annotations([Annotation(i, "critic", str(truth[i]), "AB", None, "experts", f"e/{i}",
                                   rationale=f"Reason {k}: accuracy before fluency.") for k, i in
                        enumerate(train + held)])
    assert main(["align", "--method", "guidelines", "-w", str(ws.path), "--judge", "local/smollm2", "--consensus",
                 "mv:pandalm", "--items", "8", "--quiet", "--n-boot", "200"]) == 0
    res = next(iter(json.loads((ws.path / "reports" / "align.json").read_text()).values()))
    assert res["rationales"]["train"] == len(train) and res["rationales"]["used"] >= 1
    quoted = [g for g in res["guidelines"] if "accuracy before fluency" in g]
    assert quoted and {a["item_id"] for a in res["rationales"]["annotations"]} <= set(train)
    _, rubric = resolve_judge(res["candidate_spec"])
    assert all(q.split('"')[1] in rubric.system for q in quoted)
    assert not any(f"Reason {k}:" in rubric.system for k in range(len(train), len(train) + len(held)))


def test_optimizer_keeps_bootstrapped_examples_the_judge_answered_as_the_people(pandalm_ws, truth, tmp_path):
    """Short PandaLM items whose truth is A (SmolLM2 answers A to nearly everything): DSPy bootstraps
    examples from the judge's own right answers; each is traced back to its train item."""
    import argparse

    from judgecal.cli import make_engine
    from judgecal.loop.align import showable
    from judgecal.loop.optimize import optimize_shots

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    items = {it.item_id: it for it in ws.items_repo.items()}
    short = sorted((i for i in truth.index if truth[i] == "A" and showable(items[i], 90)),
                   key=lambda i: (len(items[i].prompt) + sum(len(c.text) for c in items[i].candidates), i))[:6]
    assert len(short) == 6
    args = argparse.Namespace(judge="local/smollm2", rubric="pairwise", temperature=0.0, max_tokens=None,
                              concurrency=2, quiet=True, timeout=120.0, max_retry_after=60.0)
    chosen, about = optimize_shots(make_engine(ws, args), items, truth, short, scratch=tmp_path / "scratch",
                                   shots=2, candidates=1, max_words=90, eligible=lambda it: showable(it, 90))
    assert about["n_fit"] + about["n_val"] == 6 and about["candidates"] == 3
    boot = [s for s in about["scores"] if s["bootstrapped"]]
    assert boot, about["scores"]  # the judge answered some fit items as the people did
    assert all(set(s["examples"]) <= set(short) for s in about["scores"])
    assert chosen and all(c["item_id"] in short and c["answer"] == "A" for c in chosen)
    assert all(c["prompt"] == items[c["item_id"]].prompt for c in chosen)
