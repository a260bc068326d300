"""An item's identity keeps every judgment: the models whose outputs it holds, the criterion and the file's own
id are part of it (escaped, so no two of them read alike); a second run file of one tool adds to a workspace;
``--name`` names a ``--from`` file's judge; a re-import that changes a stored verdict is refused unless
``--replace``. Files are written in each tool's own shape (as the format tests write them)."""

import json

import pytest

from judgecal.cli import main
from judgecal.data.formats import map_file
from judgecal.data.store import Workspace


def _json(path, doc):
    path.write_text(json.dumps(doc), "utf-8")
    return path


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _judgments(ws):
    with Workspace(ws) as w:
        frame = w.judgments_repo.judgments_frame()
        items = {it.item_id: it for it in w.items_repo.items()}
    return frame, items


# -- ids: the criterion and the record's own id are separate parts ------------------------------------------
def test_own_schema_record_1_on_a_slash_b_and_record_1_slash_a_on_b_are_two_items(tmp_path, capsys):
    f = _jsonl(tmp_path / "labels.jsonl", [
        {"id": "1", "prompt": "first", "response": "one", "human_labels": {"ann": {"a/b": "pass", "b": "fail"}}},
        {"id": "1/a", "prompt": "second", "response": "two", "human_labels": {"ann": {"a/b": "fail", "b": "pass"}}}])
    ws = tmp_path / "ws"
    assert main(["import", str(f), "--task", "binary", "--labels", "pass,fail", "--positive", "pass",
                 "--criteria", "a/b,b", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        items = {it.item_id: it for it in w.items_repo.items()}
        ann = w.annotations_repo.annotations_frame()
    assert len(items) == 4  # two records, two criteria each: none dropped
    assert items["1/a%2Fb"].prompt == "first" and items["1/a/b"].prompt == "second"
    assert (items["1/a%2Fb"].metadata["criterion"], items["1/a/b"].metadata["criterion"]) == ("a/b", "b")
    labels = dict(zip(ann["item_id"], ann["label"], strict=True))
    assert labels == {"1/a%2Fb": "pass", "1/b": "fail", "1/a/a%2Fb": "fail", "1/a/b": "pass"}


def test_from_format_record_1_on_a_slash_b_and_record_1_slash_a_on_b_are_two_items(tmp_path):
    """DeepEval: test case ``1`` scored on metric ``a/b``, test case ``1/a`` on metric ``b``."""
    def case(name, metric, ok):
        return {"name": name, "input": f"Q {name}", "actualOutput": f"A {name}", "success": ok, "metricsData": [
            {"name": metric, "threshold": 0.5, "success": ok, "score": float(ok), "reason": "r",
             "evaluationModel": "gpt-4.1"}]}
    f = _json(tmp_path / ".latest_test_run.json", {"testFile": "t.py", "testCases": [case("1", "a/b", True),
                                                                                      case("1/a", "b", False)]})
    m = map_file(f, "deepeval")
    verdicts = {j.item_id: j.verdict for j in m.judgments.values() if j.score is None}
    assert verdicts == {"deepeval/1/a%2Fb": "pass", "deepeval/1%2Fa/b": "fail"}
    assert m.items["deepeval/1/a%2Fb"].prompt == "Q 1" and m.items["deepeval/1%2Fa/b"].prompt == "Q 1/a"


# -- models: two models that answered alike are two items ---------------------------------------------------
def _alpaca(model, answers, prefs, annotator="weighted_alpaca_eval_gpt4_turbo"):
    """AlpacaEval ``annotations.json`` of ``model`` against the baseline (output_1), one record per instruction."""
    return [{"instruction": f"Instruction {k}", "output_1": f"Baseline answer {k}", "generator_1": "gpt4_1106_preview",
             "output_2": a, "generator_2": model, "annotator": annotator, "preference": p,
             "raw_completion": "m" if p < 1.5 else "M", "price_per_example": 0.001, "time_per_example": 0.5}
            for k, (a, p) in enumerate(zip(answers, prefs, strict=True))]


def test_two_models_with_identical_answers_keep_their_own_verdicts(tmp_path, capsys):
    ws = tmp_path / "ws"
    # both answered the first instruction with "Test"; the judge preferred one of them, not the other
    a = _json(tmp_path / "x_annotations.json", _alpaca("model-x", ["Test", "X says 2"], [1.8, 1.2]))
    b = _json(tmp_path / "y_annotations.json", _alpaca("model-y", ["Test", "Y says 3"], [1.1, 1.7]))
    assert main(["import", str(a), "-w", str(ws)]) == 0
    assert main(["import", str(b), "-w", str(ws)]) == 0
    frame, items = _judgments(ws)
    assert len(items) == 4 and len(frame) == 4
    got = sorted((items[i].candidates[1].model, items[i].candidates[1].text, round(p, 2))
                 for i, p in zip(frame["item_id"], frame["p_b"], strict=True))
    assert got == [("model-x", "Test", 0.8), ("model-x", "X says 2", 0.2), ("model-y", "Test", 0.1),
                   ("model-y", "Y says 3", 0.7)]
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  written: 2 new items (0 already there), 2 new judgments (0 already there)")
    # a file that names no models cannot tell which of the two "Test" pairs it labels: refused, not guessed
    people = _json(tmp_path / "people.json", [{"instruction": "Instruction 0", "output_1": "Baseline answer 0",
                                               "output_2": "Test", "preference": 2, "annotator_index": 1}])
    assert main(["import", str(people), "--from", "alpaca_eval", "-w", str(ws)]) == 2
    err = capsys.readouterr().err.strip()
    assert "names no models" in err and "its texts under 2 ids" in err and len(err.splitlines()) == 1
    with Workspace(ws) as w:
        assert len(w.annotations_repo.annotations_frame()) == 0


def test_inspect_logs_of_two_models_with_identical_completions_are_two_items(tmp_path):
    def log(model, rating):
        return {"version": 2, "status": "success", "eval": {"task": "qa", "model": model, "scorers": [{"name": "rated"}]},
                "samples": [{"id": 1, "epoch": 1, "input": "Q?", "output": {"completion": "Same answer."},
                             "scores": {"rated": {"value": rating, "explanation": f"Rating {rating}"}}}]}
    ws = tmp_path / "ws"
    for model, rating in (("openai/model-a", 8), ("openai/model-b", 3)):
        f = _json(tmp_path / f"{rating}.json", log(model, rating))
        assert main(["import", str(f), "--from", "inspect", "-w", str(ws)]) == 0
    frame, items = _judgments(ws)
    got = sorted((items[i].candidates[0].model, s) for i, s in zip(frame["item_id"], frame["score"], strict=True))
    assert got == [("openai/model-a", 8.0), ("openai/model-b", 3.0)]


# -- a second run file of one tool adds ------------------------------------------------------------------------
def _promptfoo(outputs, scores, provider="my-model"):
    """``promptfoo eval -o results.json`` (version 3): one g-eval assertion per output."""
    return {"evalId": f"eval-{outputs[0]}", "results": {"version": 3, "results": [
        {"promptIdx": 0, "testIdx": k, "vars": {"q": f"Q{k}"}, "prompt": {"raw": f"Answer: Q{k}"},
         "provider": {"id": provider}, "response": {"output": o},
         "gradingResult": {"pass": s >= 0.5, "score": s, "componentResults": [
             {"pass": s >= 0.5, "score": s, "reason": "why",
              "assertion": {"type": "g-eval", "value": "is correct", "provider": "openai:gpt-4o"}}]}}
        for k, (o, s) in enumerate(zip(outputs, scores, strict=True))]},
        "config": {"defaultTest": {"options": {"provider": "openai:gpt-4o"}}}}


def test_a_second_promptfoo_eval_adds_to_the_workspace(tmp_path, capsys):
    ws = tmp_path / "ws"
    first = _json(tmp_path / "first.json", _promptfoo(["Paris.", "Four."], [0.9, 0.2]))
    second = _json(tmp_path / "second.json", _promptfoo(["Lyon.", "Four."], [0.1, 0.2]))  # case 1: same output
    assert main(["import", str(first), "-w", str(ws)]) == 0
    assert main(["import", str(second), "-w", str(ws)]) == 0
    # case 0's new output and its g-eval pass/fail item are new; case 1 (the same output, scored alike) is there
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  written: 2 new items (2 already there), 2 new judgments (2 already there)")
    frame, items = _judgments(ws)
    scores = sorted((items[i].candidates[0].text, s) for i, s in zip(frame["item_id"], frame["score"], strict=True)
                    if s == s)  # the scores (the pass/fail verdicts have none)
    assert scores == [("Four.", 0.2), ("Lyon.", 0.1), ("Paris.", 0.9)]
    lyon = next(i for i, it in items.items() if it.candidates[0].text == "Lyon." and not it.label_set)
    assert lyon.startswith("promptfoo/0/0/@my-model/#")  # the plain id is the first eval's case 0
    # a re-import of the second file finds its items again and writes nothing
    assert main(["import", str(second), "-w", str(ws)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  written: 0 new items (4 already there), 0 new judgments (4 already there)")


def test_a_second_inspect_log_of_one_model_adds_to_the_workspace(tmp_path):
    def log(answer, rating):
        return {"version": 2, "status": "success", "eval": {"task": "qa", "model": "openai/m", "scorers": [
            {"name": "rated"}]}, "samples": [{"id": 1, "epoch": 1, "input": "Q?", "output": {"completion": answer},
                                              "scores": {"rated": {"value": rating}}}]}
    ws = tmp_path / "ws"
    for answer, rating in (("Yes.", 9), ("No.", 2)):
        f = _json(tmp_path / f"{rating}.json", log(answer, rating))
        assert main(["import", str(f), "--from", "inspect", "-w", str(ws)]) == 0
    frame, items = _judgments(ws)
    got = sorted((items[i].candidates[0].text, s) for i, s in zip(frame["item_id"], frame["score"], strict=True))
    assert got == [("No.", 2.0), ("Yes.", 9.0)]


# -- --name on --from --------------------------------------------------------------------------------------------
def test_name_names_the_judge_of_a_from_import(tmp_path, capsys):
    ws = tmp_path / "ws"
    f = _json(tmp_path / "annotations.json", _alpaca("model-x", ["A", "B"], [1.8, 1.2], annotator="alpaca_eval_gpt4"))
    assert main(["import", str(f), "--name", "grader-v1", "-w", str(ws)]) == 0
    # the same file under another name is another judge (its own spec), never pooled with the first
    assert main(["import", str(f), "--name", "grader-v2", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        frame = w.judgments_repo.judgments_frame()
        specs = w.judgments_repo.judge_specs()
    assert sorted(set(frame["judge"])) == ["grader-v1", "grader-v2"] and len(frame) == 4
    assert sorted(name for name, _ in specs.values()) == ["grader-v1", "grader-v2"]
    assert {s["model"] for _, s in specs.values()} == {"alpaca_eval_gpt4"}  # the grader the file named stays its model
    # a name the own schema refuses is refused here too: one line, exit 2, nothing written
    capsys.readouterr()
    assert main(["import", str(f), "--name", "humans", "-w", str(ws)]) == 2
    err = capsys.readouterr().err.strip()
    assert "humans" in err and len(err.splitlines()) == 1
    with Workspace(ws) as w:
        assert len(w.judgments_repo.judgments_frame()) == 4


def test_name_prefixes_the_judges_of_a_file_with_several(tmp_path):
    f = _json(tmp_path / "log.json", {"version": 2, "status": "success", "eval": {
        "task": "qa", "model": "openai/m", "scorers": [{"name": "rated"}, {"name": "graded"}]}, "samples": [
        {"id": 1, "epoch": 1, "input": "Q?", "output": {"completion": "A."},
         "scores": {"rated": {"value": 7}, "graded": {"value": "C"}}},
        {"id": 2, "epoch": 1, "input": "Q2?", "output": {"completion": "B."},
         "scores": {"rated": {"value": 4}, "graded": {"value": "I"}}}]})
    m = map_file(f, "inspect", judge="run2")
    assert sorted({j.judge for j in m.judgments.values()}) == ["run2/graded", "run2/rated"]


# -- a re-import with changed verdicts ---------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["promptfoo", "mt_bench"])
def test_a_reimport_with_a_changed_verdict_is_refused_without_replace(tmp_path, capsys, fmt):
    ws = tmp_path / "ws"
    if fmt == "promptfoo":
        f, before, after, write = tmp_path / "results.json", _promptfoo(["Paris."], [0.9]), _promptfoo(["Paris."], [0.3]), _json
    else:
        def rec(score):
            return {"question_id": 81, "model": "vicuna-13b", "judge": ["gpt-4", "single-v1"], "score": score,
                    "user_prompt": "[Instruction]\nPlease act as an impartial judge.\n\n[Question]\nQ?\n\n"
                                   "[The Start of Assistant's Answer]\nAn answer.\n[The End of Assistant's Answer]",
                    "judgment": f"Rating: [[{score}]]", "turn": 1, "tstamp": 1.0}
        f, before, after, write = tmp_path / "gpt-4_single.jsonl", [rec(8)], [rec(3)], _jsonl
    write(f, before)
    assert main(["import", str(f), "--from", fmt, "-w", str(ws)]) == 0
    write(f, after)
    assert main(["import", str(f), "--from", fmt, "-w", str(ws)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "differs from the one stored" in err and "--replace" in err
    assert str(f) in err
    frame, _ = _judgments(ws)
    assert frame["score"].dropna().tolist() == ([0.9] if fmt == "promptfoo" else [8.0])
    write(f, before)
    assert main(["import", str(f), "--from", fmt, "-w", str(ws)]) == 0  # the same file again: nothing new
    assert f"0 new judgments ({2 if fmt == 'promptfoo' else 1} already there)" in capsys.readouterr().out
    write(f, after)
    assert main(["import", str(f), "--from", fmt, "--replace", "-w", str(ws)]) == 0
    # promptfoo: the score and the g-eval pass/fail verdict it sets; MT-Bench: the rating
    assert f"{2 if fmt == 'promptfoo' else 1} replaced" in capsys.readouterr().out
    frame, _ = _judgments(ws)
    assert frame["score"].dropna().tolist() == ([0.3] if fmt == "promptfoo" else [3.0])


def test_a_workspace_written_before_ids_named_models_is_met_by_a_reimport(tmp_path, capsys):
    """Items stored under the earlier ids (AlpacaEval's digest alone, MT-Bench's ``.../<model>``) are found again
    when the same comparison is imported: its verdicts land on the stored item, nothing is added twice."""
    from judgecal.data.formats.base import pair_item, point_item
    from judgecal.data.records import stable_hash

    ws = tmp_path / "ws"
    recs = _alpaca("model-x", ["Test"], [1.8])
    r = recs[0]
    old = pair_item("alpaca_eval", "", r["instruction"], r["output_1"], r["output_2"], r["generator_1"],
                    r["generator_2"])
    old.item_id = "alpaca_eval/" + stable_hash([r["instruction"], r["output_1"], r["output_2"]], 16)
    single = point_item("mt_bench", ("q81", "t1"), "Q?", "An answer.", "vicuna-13b", {"question_id": 81, "turn": 1})
    single.item_id = "mt_bench/q81/t1/vicuna-13b"
    with Workspace(ws) as w:
        w.items_repo.add_items([old, single])
    f = _json(tmp_path / "annotations.json", recs)
    assert main(["import", str(f), "-w", str(ws)]) == 0
    mt = _jsonl(tmp_path / "gpt-4_single.jsonl", [{
        "question_id": 81, "model": "vicuna-13b", "judge": ["gpt-4", "single-v1"], "score": 8,
        "user_prompt": "[Question]\nQ?\n\n[The Start of Assistant's Answer]\nAn answer.\n[The End of Assistant's Answer]",
        "judgment": "Rating: [[8]]", "turn": 1, "tstamp": 1.0}])
    assert main(["import", str(mt), "-w", str(ws)]) == 0
    frame, items = _judgments(ws)
    assert sorted(items) == sorted([old.item_id, single.item_id])
    assert sorted(frame["item_id"]) == sorted([old.item_id, single.item_id])
    # a second model's identical answer is not the stored item (its model differs): a new one
    other = _json(tmp_path / "y.json", _alpaca("model-y", ["Test"], [1.1]))
    assert main(["import", str(other), "-w", str(ws)]) == 0
    _, items = _judgments(ws)
    assert len(items) == 3


def test_several_models_files_in_one_workspace_give_each_its_own_win_rates(tmp_path, capsys):
    """Three models' AlpacaEval annotation files over the same 40 instructions, where they answered 8 of them alike
    ("Test"): each model keeps its 40 items, and its win rate and weighted win rate are those of its own file."""
    ws = str(tmp_path / "ws")
    files = {}
    for m, model in enumerate(("model-a", "model-b", "model-c")):
        answers = ["Test" if k % 5 == 0 else f"{model} answer {k}" for k in range(40)]
        prefs = [1.0 + ((k * (m + 3)) % 11) / 10 for k in range(40)]
        files[model] = _alpaca(model, answers, prefs)
        assert main(["import", str(_json(tmp_path / f"{model}.json", files[model])), "-w", ws]) == 0
    capsys.readouterr()
    assert main(["audit", "-w", ws, "--n-boot", "200", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["models"]
    weighted = rep["win_rate_weighted"]["weighted_alpaca_eval_gpt4_turbo"]
    plain = rep["win_rate"]["weighted_alpaca_eval_gpt4_turbo"]
    for model, recs in files.items():
        p = [r["preference"] - 1 for r in recs]
        assert weighted[model]["n"] == 40 and weighted[model]["estimate"] == pytest.approx(sum(p) / 40)
        wins = sum(1.0 if x > 0.5 else 0.5 if x == 0.5 else 0.0 for x in p) / 40
        assert plain[model]["estimate"] == pytest.approx(wins)
