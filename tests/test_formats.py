"""``judgecal import FILE --from FORMAT``: files written in each tool's published shape.

Each file below uses the field names and value conventions of the tool that writes it (AlpacaEval's
annotations.json, FastChat's model_judgment JSONL and the MT-Bench human judgments release, Label
Studio's JSON export, JUDGE-BENCH, JudgeBench, RewardBench 2, Auto-J, Mu-SHROOM); JUDGE-BENCH is also
read from the real published files in the data mirror.
"""

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from judgecal.cli import main
from judgecal.data.formats import FORMATS, detect, map_file
from judgecal.data.importers import ImportValidationError
from judgecal.data.store import Workspace


def _json(path, obj):
    path.write_text(json.dumps(obj, indent=2), "utf-8")
    return path


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


ALPACA = [
    {"instruction": "Name a prime number.", "output_1": "2", "generator_1": "gpt4_1106_preview",
     "output_2": "Nine.", "generator_2": "my-model", "annotator": "weighted_alpaca_eval_gpt4_turbo",
     "preference": 1.0312, "raw_completion": {"content": "m", "logprobs": [-0.03]}, "price_per_example": 0.0013,
     "time_per_example": 0.71},
    {"instruction": "Say hi.", "output_1": "Hi!", "generator_1": "gpt4_1106_preview", "output_2": "",
     "generator_2": "my-model", "annotator": "weighted_alpaca_eval_gpt4_turbo", "preference": 1.75,
     "raw_completion": "M", "price_per_example": 0.0011, "time_per_example": 0.52},
    {"instruction": "Count to 3.", "output_1": "1 2 3", "generator_1": "gpt4_1106_preview", "output_2": "1, 2, 3",
     "generator_2": "my-model", "annotator": "alpaca_eval_gpt4", "preference": 1.5, "raw_completion": "tie",
     "price_per_example": 0.01, "time_per_example": 1.2},
    {"instruction": "Count to 4.", "output_1": "1 2 3 4", "generator_1": "gpt4_1106_preview", "output_2": "1-4",
     "generator_2": "my-model", "annotator": "alpaca_eval_gpt4", "preference": None, "raw_completion": "?"},
]
HUMAN_CROSS = [  # AlpacaFarm's human cross-annotations: no annotator field, annotator_index names the person
    {"instruction": "Name a prime number.", "input": "", "output_1": "2", "output_2": "Nine.", "preference": 1,
     "annotator_index": 3, "dataset": "helpful_base", "datasplit": "eval"},
    {"instruction": "Name a prime number.", "input": "", "output_1": "2", "output_2": "Nine.", "preference": 2,
     "annotator_index": 7, "dataset": "helpful_base", "datasplit": "eval"},
]


def test_alpaca_eval_annotations_and_human_cross_annotations_meet_on_the_pair(tmp_path):
    ws = tmp_path / "ws"
    a = _json(tmp_path / "annotations.json", ALPACA)
    assert detect(a) == "alpaca_eval"
    m = map_file(a)
    by = {(j.judge, j.item_id): j for j in m.judgments.values()}
    assert len(m.items) == 4 and len(by) == 4 and m.counts["empty_responses"] == 1
    w = [j for j in m.judgments.values() if j.judge == "weighted_alpaca_eval_gpt4_turbo"]
    first = next(j for j in w if m.items[j.item_id].prompt == "Name a prime number.")
    assert (first.verdict, first.p_b, first.p_a) == ("A", pytest.approx(0.0312), pytest.approx(0.9688))
    assert first.cost_usd == 0.0013 and first.latency_s == 0.71 and json.loads(first.raw)["content"] == "m"
    second = next(j for j in w if j is not first)
    assert (second.verdict, second.p_b) == ("B", 0.75)
    plain = sorted((j.verdict, j.status, j.p_b) for j in m.judgments.values() if j.judge == "alpaca_eval_gpt4")
    assert plain == [("invalid", "invalid", None), ("tie", "ok", None)]
    assert m.items[first.item_id].candidates[0].model == "gpt4_1106_preview"
    assert any("does not measure position" in note for note in m.notes)  # the shown order is not in the file
    assert main(["import", str(a), "-w", str(ws)]) == 0
    h = _json(tmp_path / "alpaca_farm_human_crossannotations.json", HUMAN_CROSS)
    assert main(["import", str(h), "--from", "alpaca_eval", "-w", str(ws)]) == 0
    with Workspace(ws) as w_:
        ann = w_.annotations_repo.annotations_frame()
        assert set(ann["item_id"]) == {first.item_id}  # the human file's pair is the judge file's item
        assert sorted(zip(ann["annotator"], ann["label"], strict=True)) == [("human-3", "A"), ("human-7", "B")]
        assert set(ann["source"]) == {"alpaca_eval:human"}
        specs = w_.judgments_repo.judge_specs()
        assert {v[0] for v in specs.values()} == {"weighted_alpaca_eval_gpt4_turbo", "alpaca_eval_gpt4"}


PAIR_PROMPT = ("[User Question]\n{q}\n\n[The Start of Assistant A's Answer]\n{a}\n[The End of Assistant A's Answer]\n\n"
               "[The Start of Assistant B's Answer]\n{b}\n[The End of Assistant B's Answer]")
MULTI = ("<|The Start of Assistant {x}'s Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant {x}:\n{a1}\n\n"
         "### User:\n{q2}\n\n### Assistant {x}:\n{a2}\n\n<|The End of Assistant {x}'s Conversation with User|>")


def _mt_pair(qid, m1, m2, t1, t2, g1, g2, turn=1):
    if turn == 1:
        p1, p2 = PAIR_PROMPT.format(q="Q?", a=t1, b=t2), PAIR_PROMPT.format(q="Q?", a=t2, b=t1)
    else:
        p1 = MULTI.format(x="A", q1="Q?", a1=t1, q2="More?", a2=t1 + "!") + "\n\n\n" + MULTI.format(
            x="B", q1="Q?", a1=t2, q2="More?", a2=t2 + "!")
        p2 = p1
    return {"question_id": qid, "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2,
            "judge": ["gpt-4", "pair-v2" if turn == 1 else "pair-v2-multi-turn"], "g1_user_prompt": p1,
            "g1_judgment": f"... [[{'A' if g1 == 'model_1' else 'B'}]]", "g2_user_prompt": p2, "g2_judgment": "...",
            "turn": turn, "tstamp": 1687221000.0}


def test_mt_bench_pair_single_and_human_judgments(tmp_path):
    ws = tmp_path / "ws"
    pair = _jsonl(tmp_path / "gpt-4_pair.jsonl", [
        _mt_pair(81, "vicuna-13b-v1.3", "alpaca-13b", "Vicuna answer", "Alpaca answer", "model_1", "model_1"),
        _mt_pair(82, "alpaca-13b", "vicuna-13b-v1.3", "A2", "V2", "model_1", "error"),
        _mt_pair(81, "vicuna-13b-v1.3", "alpaca-13b", "V t2", "A t2", "tie", "model_2", turn=2),
    ])
    assert detect(pair) == "mt_bench"
    m = map_file(pair)
    assert len(m.items) == 3 and len(m.judgments) == 6
    it = m.items["mt_bench/q81/t1/@alpaca-13b/@vicuna-13b-v1.3"]
    assert [c.text for c in it.candidates] == ["Alpaca answer", "Vicuna answer"] and it.prompt == "Q?"
    v = sorted((j.order, j.verdict) for j in m.judgments.values() if j.item_id == it.item_id)
    # vicuna (model_1) is candidate B: g1 showed it first (order BA); both orders chose it
    assert v == [("AB", "B"), ("BA", "B")]
    q82 = sorted((j.order, j.verdict, j.status) for j in m.judgments.values() if j.item_id.startswith("mt_bench/q82"))
    assert q82 == [("AB", "A", "ok"), ("BA", "invalid", "invalid")]  # alpaca (A) shown first won; g2 an error
    t2 = m.items["mt_bench/q81/t2/@alpaca-13b/@vicuna-13b-v1.3"]
    assert t2.candidates[1].text == "[Turn 1]\nV t2\n\n[Turn 2]\nV t2!"
    assert main(["import", str(pair), "-w", str(ws)]) == 0
    human = _jsonl(tmp_path / "human.jsonl", [
        {"question_id": 81, "model_a": "alpaca-13b", "model_b": "vicuna-13b-v1.3", "winner": "model_b",
         "judge": "expert_5", "conversation_a": [{"role": "user", "content": "Q?"},
                                                 {"role": "assistant", "content": "Alpaca answer"}],
         "conversation_b": [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "Vicuna answer"}],
         "turn": 1},
        {"question_id": 81, "model_a": "vicuna-13b-v1.3", "model_b": "alpaca-13b", "winner": "tie (bothbad)",
         "judge": "author_2", "conversation_a": [{"role": "user", "content": "Q?"},
                                                 {"role": "assistant", "content": "Vicuna answer"}],
         "conversation_b": [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "Alpaca answer"}],
         "turn": 1}])
    assert main(["import", str(human), "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        ann = w.annotations_repo.annotations_frame()
        assert sorted(zip(ann["annotator"], ann["label"], strict=True)) == [("author_2", "tie"), ("expert_5", "B")]
        assert set(ann["item_id"]) == {it.item_id}
    single = _jsonl(tmp_path / "gpt-4_single.jsonl", [
        {"question_id": 81, "model": "alpaca-13b", "judge": ["gpt-4", "single-v1"], "score": 4,
         "user_prompt": "[Question]\nQ?\n\n[The Start of Assistant's Answer]\nAlpaca answer\n[The End of Assistant's Answer]",
         "judgment": "Rating: [[4]]", "turn": 1, "tstamp": 1.0},
        {"question_id": 82, "model": "alpaca-13b", "judge": ["gpt-4", "single-v1"], "score": -1,
         "user_prompt": "[Question]\nQ2\n\n[The Start of Assistant's Answer]\nA2\n[The End of Assistant's Answer]",
         "judgment": "no rating", "turn": 1, "tstamp": 1.0},
        {"question_id": 83, "model": "alpaca-13b", "judge": ["gpt-4", "single-v1"], "score": 7,
         "user_prompt": "some other template", "judgment": "[[7]]", "turn": 1, "tstamp": 1.0}])
    s = map_file(single)
    assert sorted((j.status, j.score) for j in s.judgments.values()) == [("invalid", None), ("ok", 4.0)]
    assert sum(s.dropped.values()) == 1


def test_mt_bench_human_release_as_published_parquet(tmp_path):
    """The release is Parquet with conversations as lists of structs: read as their JSON equivalents."""
    import pandas as pd

    conv = lambda a: [{"content": "Q?", "role": "user"}, {"content": a, "role": "assistant"}]  # noqa: E731
    pd.DataFrame([{"question_id": 81, "model_a": "alpaca-13b", "model_b": "gpt-4", "winner": "model_b",
                   "judge": "expert_0", "conversation_a": conv("A"), "conversation_b": conv("G"), "turn": 1},
                  {"question_id": 81, "model_a": "gpt-4", "model_b": "alpaca-13b", "winner": "tie",
                   "judge": "author_1", "conversation_a": conv("G"), "conversation_b": conv("A"), "turn": 1}]
                 ).to_parquet(tmp_path / "human-00000-of-00001.parquet")
    m = map_file(tmp_path / "human-00000-of-00001.parquet")
    assert list(m.items) == ["mt_bench/q81/t1/@alpaca-13b/@gpt-4"]
    assert sorted((a.annotator, a.label) for a in m.annotations) == [("author_1", "tie"), ("expert_0", "B")]


def test_from_refuses_options_of_the_own_schema(tmp_path, capsys):
    f = _jsonl(tmp_path / "a.jsonl", AUTOJ)
    assert main(["import", str(f), "--from", "autoj", "--name", "x", "-w", str(tmp_path / "ws")]) == 2
    assert "--name names the judges of a --from file, and this file holds no verdicts" in capsys.readouterr().err
    assert not (tmp_path / "ws").exists()


def test_mt_bench_refuses_an_unknown_winner_with_its_line(tmp_path):
    bad = _jsonl(tmp_path / "p.jsonl", [_mt_pair(1, "a", "b", "x", "y", "model_1", "model_1"),
                                        _mt_pair(2, "a", "b", "x", "y", "model_3", "model_1")])
    with pytest.raises(ImportValidationError, match=r"p.jsonl:2: g1_winner: unknown winner 'model_3'"):
        map_file(bad)


def test_labelstudio_export_labels_predictions_skips_and_classes(tmp_path):
    export = [
        {"id": 11, "data": {"prompt": "2+2?", "response_a": "4", "response_b": "5"},
         "annotations": [
             {"id": 1, "completed_by": 3, "result": [{"from_name": "preference", "to_name": "prompt", "type": "choices",
                                                      "value": {"choices": ["A better"]}}], "was_cancelled": False,
              "lead_time": 12.5},
             {"id": 2, "completed_by": {"id": 4, "email": "b@x.org"}, "result": [], "was_cancelled": True}],
         "predictions": [{"model_version": "gpt-4o-judge", "score": 0.8,
                          "result": [{"from_name": "preference", "to_name": "prompt", "type": "choices",
                                      "value": {"choices": ["B better"]}}]}]},
        {"id": 12, "data": {"question": "Is the sky green?", "answer": "Yes."},
         "annotations": [{"id": 3, "completed_by": 3, "was_cancelled": False,
                          "result": [{"type": "rating", "from_name": "q", "to_name": "answer", "value": {"rating": 2}},
                                     {"type": "choices", "from_name": "c", "to_name": "answer",
                                      "value": {"choices": ["Hallucination"]}},
                                     {"type": "labels", "from_name": "l", "to_name": "answer",
                                      "value": {"start": 0, "end": 3, "labels": ["wrong"]}}]}]},
    ]
    f = _json(tmp_path / "project-1-at-2026.json", export)
    assert detect(f) == "labelstudio"
    m = map_file(f)
    assert sorted((a.item_id, a.annotator, a.label, a.time_spent_s) for a in m.annotations) == [
        ("labelstudio/11", "ls-3", "A", 12.5), ("labelstudio/12", "ls-3", "2", None)]
    assert m.counts["skipped_labels"] == 1  # the cancelled annotation
    assert [(j.judge, j.verdict) for j in m.judgments.values()] == [("gpt-4o-judge", "B")]
    assert [(s.start, s.end, s.label) for s in m.spans] == [(0, 3, "wrong")]
    # the 'Hallucination' class is the only value of its control in the file: no label set, counted
    assert list(m.dropped) == ["c: one label only ('Hallucination'), which no usual pair completes; a label set "
                               "needs two (import the file in judgecal's own schema with --task binary/categorical "
                               "--labels to declare them)"]
    assert m.items["labelstudio/12"].task == "pointwise" and sorted(m.items) == ["labelstudio/11", "labelstudio/12"]


def _ls_choice(control, value, to="text"):
    return {"from_name": control, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def test_labelstudio_classes_become_label_items_and_predictions_label_judgments(tmp_path, capsys):
    """A classification project (one response per task, a Yes/No control and a three-class control), one
    annotator and a model's predictions: label items per control, people's labels and the model's label
    verdicts on them; the audit's labels section and accuracy through the CLI."""
    judge = ["Yes", "No", "Yes", "Yes", "No", "Yes"]
    human = ["Yes", "No", "No", "Yes", "Yes", "Yes"]
    topics = ["maths", "history", "maths", "art", "history", "maths"]
    tasks = [{"id": k, "data": {"question": f"Q{k}?", "text": f"Answer {k}."},
              "annotations": [{"id": 10 + k, "completed_by": 7, "lead_time": 3.0, "was_cancelled": False,
                               "result": [_ls_choice("faithful", h), _ls_choice("topic", t)]}],
              "predictions": [{"model_version": "judge-v2", "result": [_ls_choice("faithful", j)]}]}
             for k, (j, h, t) in enumerate(zip(judge, human, topics, strict=True))]
    tasks.append({"id": 99, "data": {"question": "Multi", "text": "x"}, "annotations": [
        {"completed_by": 7, "result": [{"from_name": "tags", "to_name": "text", "type": "choices",
                                        "value": {"choices": ["a", "b"]}}]}]})
    f = _json(tmp_path / "project-2-at-2026.json", tasks)
    m = map_file(f)
    faithful, topic = m.label_sets["faithful"], m.label_sets["topic"]
    assert (faithful.task, faithful.labels, faithful.positive) == ("binary", ("Yes", "No"), "Yes")
    assert (topic.task, topic.labels) == ("categorical", ("maths", "history", "art"))  # first seen first
    assert sorted(m.items) == sorted([f"labelstudio/{k}/{c}" for k in range(6) for c in ("faithful", "topic")]
                                     + ["labelstudio/99"])  # (its multi-select dropped, the task stays)
    it = m.items["labelstudio/0/faithful"]
    assert (it.prompt, it.candidates[0].text, it.metadata["record"]) == ("Q0?", "Answer 0.", "labelstudio/0")
    assert sorted((j.item_id, j.verdict) for j in m.judgments.values()) == [
        (f"labelstudio/{k}/faithful", j) for k, j in enumerate(judge)]
    assert sorted((a.item_id, a.label) for a in m.annotations) == sorted(
        [(f"labelstudio/{k}/faithful", h) for k, h in enumerate(human)]
        + [(f"labelstudio/{k}/topic", t) for k, t in enumerate(topics)])
    assert {a.time_spent_s for a in m.annotations} == {3.0} and {a.annotator for a in m.annotations} == {"ls-7"}
    assert m.dropped == {"tags: choices of none or several values (a multi-select, not one label)": 1}
    ws, out = tmp_path / "ws", tmp_path / "out"
    assert main(["import", str(f), "-w", str(ws)]) == 0
    assert "labels of topic: categorical maths/history/art" in capsys.readouterr().out
    assert main(["aggregate", "-w", str(ws)]) == 0
    assert main(["audit", "-w", str(ws), "--n-boot", "100", "--out", str(out)]) == 0
    entry = json.loads((out / "audit.json").read_text("utf-8"))["judges"]["judge-v2"]
    assert (entry["labels"]["task"], entry["labels"]["labels"], entry["labels"]["positive"]) == (
        "binary", ["Yes", "No"], "Yes")
    agree = sum(j == h for j, h in zip(judge, human, strict=True)) / len(judge)
    assert entry["metrics"]["accuracy"]["estimate"] == pytest.approx(agree)


def test_labelstudio_class_on_one_response_of_a_pair(tmp_path):
    """On a pair, a control about one response (its to_name) labels that response; one about the prompt or
    the pair as a whole cannot be a label item (it rates one response) and is counted as dropped."""
    task = {"id": 5, "data": {"prompt": "Name a prime.", "response_a": "2", "response_b": "Nine"},
            "annotations": [{"completed_by": 1, "result": [
                _ls_choice("pref", "A better", "prompt"), _ls_choice("b_correct", "No", "response_b"),
                _ls_choice("topic", "Maths", "prompt")]}]}
    m = map_file(_json(tmp_path / "pairs.json", [task]))
    it = m.items["labelstudio/5/b_correct"]
    assert (it.task, it.candidates[0].text, it.labels.labels) == ("pointwise", "Nine", ("Yes", "No"))
    assert sorted((a.item_id, a.label) for a in m.annotations) == [("labelstudio/5", "A"),
                                                                    ("labelstudio/5/b_correct", "No")]
    assert m.dropped == {"topic: people's choices on a pair that rate neither response alone (a label item rates "
                         "one response)": 1}


def test_judge_bench_categorical_metrics_become_label_items(tmp_path, capsys):
    """medical-safety: two categorical metrics per instance, one expert label each, become one
    categorical item per instance and metric (the metric its criterion); the counts are the file's own."""
    mirror = os.environ.get("JUDGECAL_DATA_MIRROR")
    f = Path(mirror or "/nonexistent") / "dmg-illc/JUDGE-BENCH/data/medical-safety/data.json"
    if not f.exists():
        pytest.skip("the JUDGE-BENCH mirror is not available")
    assert detect(f) == "judge-bench"
    doc = json.loads(f.read_text("utf-8"))
    declared = {a["metric"]: a["labels_list"] for a in doc["annotations"]}
    want: dict[str, Counter[str]] = {m: Counter() for m in declared}
    for inst in doc["instances"]:
        for metric, judged in inst["annotations"].items():
            want[metric].update(str(s) for s in judged["individual_human_scores"])
    m = map_file(f)
    assert len(m.items) == 2 * len(doc["instances"]) and not m.dropped
    got: dict[str, Counter[str]] = {metric: Counter() for metric in declared}
    for a in m.annotations:
        got[m.items[a.item_id].labels.criterion][a.label] += 1
    assert got == want
    one = m.items[f"judge-bench/{doc['instances'][0]['id']}/query risk level"]
    assert one.labels.task == "categorical" and list(one.labels.labels) == declared["query risk level"]
    assert one.metadata["record"] == f"judge-bench/{doc['instances'][0]['id']}"
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0
    assert f"mapped: {len(m.items)} items" in capsys.readouterr().out


def test_judge_bench_binary_metric_with_a_majority_label_only(tmp_path):
    """ToxicChat's form: two labels, one of them a usual positive (1), and only the majority label:
    a binary item whose one label is the ``majority`` rater's; a label outside labels_list is dropped."""
    doc = {"dataset": "toxic-like", "annotations": [
        {"metric": "toxicity", "category": "categorical", "labels_list": ["0", "1"], "prompt": "..."},
        {"metric": "tone", "category": "categorical", "labels_list": ["calm", "angry"], "prompt": "..."}],
        "instances": [{"id": "a", "instance": "hello there", "annotations": {
            "toxicity": {"majority_human": "1", "individual_human_scores": []},
            "tone": {"majority_human": "loud", "individual_human_scores": []}}}]}
    m = map_file(_json(tmp_path / "jb.json", doc))
    it = m.items["judge-bench/a/toxicity"]
    assert (it.labels.task, it.labels.labels, it.labels.positive) == ("binary", ("0", "1"), "1")
    assert [(a.annotator, a.label) for a in m.annotations] == [("majority", "1")]
    assert "judge-bench/a/tone" not in m.items and sum(m.dropped.values()) == 1


def test_judge_bench_graded_metric_becomes_pointwise_items(tmp_path):
    doc = {"dataset": "summeval-like", "annotations": [
        {"metric": "coherence", "category": "graded", "worst": 1, "best": 5, "prompt": "Rate {{ summary }}"},
        {"metric": "fluency", "category": "graded", "worst": 0.0, "best": 1.0, "prompt": "..."}],
        "instances": [{"id": 1.0, "instance": {"source": "Long article.", "summary": "Short."},
                       "annotations": {"coherence": {"mean_human": 3.5, "individual_human_scores": [3, 4, None]},
                                       "fluency": {"mean_human": 0.5, "individual_human_scores": [0.5, 0.5]}}}]}
    m = map_file(_json(tmp_path / "jb.json", doc))
    it = m.items["judge-bench/1/coherence"]
    assert it.prompt == "source: Long article." and it.candidates[0].text == "Short."
    assert sorted((a.annotator, a.label) for a in m.annotations) == [("rater-1", "3"), ("rater-2", "4")]
    assert m.counts["skipped_labels"] == 1 and sum(m.dropped.values()) == 1  # fluency is not on 1-10


def test_judgebench_and_rewardbench2_best_of_n_as_grouped_pairs(tmp_path):
    jb = _jsonl(tmp_path / "gpt.jsonl", [
        {"pair_id": "p1", "original_id": "o1", "source": "mmlu-pro-math", "question": "1+1?",
         "response_model": "gpt-4o", "response_A": "2", "response_B": "3", "label": "A>B"},
        {"pair_id": "p2", "original_id": "o2", "source": "livecodebench", "question": "code",
         "response_model": "gpt-4o", "response_A": "x", "response_B": "y", "label": "B>A"}])
    assert detect(jb) == "judgebench"
    m = map_file(jb)
    assert sorted((a.item_id, a.label) for a in m.annotations) == [("judgebench/p1/@gpt-4o/@gpt-4o", "A"),
                                                                          ("judgebench/p2/@gpt-4o/@gpt-4o", "B")]
    rb = _jsonl(tmp_path / "rb2.jsonl", [
        {"id": "42", "prompt": "Best answer?", "chosen": ["good"], "rejected": ["bad1", "bad2", "bad3"],
         "num_correct": 1, "num_rejected": 3, "total_completions": 4, "models": ["m0", "m1", "m2", "m3"],
         "subset": "Focus"}])
    assert detect(rb) == "rewardbench2"
    r = map_file(rb)
    assert len(r.items) == 3 and {it.metadata["group"] for it in r.items.values()} == {"42"}
    for a in r.annotations:  # the gold side is where the chosen text is
        it = r.items[a.item_id]
        chosen = it.candidates[0 if a.label == "A" else 1]
        assert (chosen.text, chosen.model) == ("good", "m0")
    assert sorted(a.label for a in r.annotations) == ["A", "A", "B"]  # the chosen side is not always first


AUTOJ = [{"scenario": "chitchat", "label": 1, "prompt": "Hi", "response 1": "", "response 2": "Hello!"},
         {"scenario": "chitchat", "label": 2, "prompt": "Bye", "response 1": "Bye", "response 2": "Bye."}]
MUSHROOM = [{"id": "tst-en-1", "lang": "EN", "model_input": "Q", "model_id": "m",
             "model_output_text": "The answer is 1492 or so.", "hard_labels": [[14, 18], [56 // 4, 56 // 4]],
             "soft_labels": [{"start": 14, "prob": 0.8, "end": 18}], "model_output_tokens": ["The"]}]


def test_autoj_and_mushroom_import_as_published(tmp_path, capsys):
    ws = tmp_path / "ws"
    a = _jsonl(tmp_path / "testdata_pairwise.jsonl", AUTOJ)
    assert main(["import", str(a), "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "detected autoj" in out and "1 empty response(s) kept as text" in out
    s = _jsonl(tmp_path / "mushroom.en-tst.v1.jsonl", MUSHROOM)
    assert main(["import", str(s), "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "detected mushroom" in out and "1 zero-length span(s) dropped" in out
    with Workspace(ws) as w:
        assert sorted(w.annotations_repo.annotations_frame()["label"]) == ["B", "tie"]
        assert [(r.start, r.end) for r in w.spans_repo.spans_frame().itertuples()] == [(14, 18)]


def test_unknown_file_lists_the_formats(tmp_path, capsys):
    f = _json(tmp_path / "mystery.json", [{"foo": 1}])
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"judgecal import: --from FORMAT: {f}: ") and "name its format" in err
    assert all(name in err for name in FORMATS)
    assert not (tmp_path / "ws").exists()
    assert main(["import", str(f), "--from", "nope", "-w", str(tmp_path / "ws")]) == 2
    assert "invalid choice: 'nope'" in capsys.readouterr().err


def test_a_native_file_is_still_read_as_judgecal_schema(tmp_path, capsys):
    f = _jsonl(tmp_path / "mine.jsonl", [{"id": 1, "prompt": "p", "response_a": "a", "response_b": "b"}])
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0
    assert "imported 1 items" in capsys.readouterr().out


def test_a_lone_surrogate_is_refused_by_its_origin(tmp_path):
    rows = [dict(AUTOJ[1]), {**AUTOJ[1], "prompt": "Bad \ud800 text"}]
    f = tmp_path / "autoj.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))  # json.dumps escapes it as \\ud800
    with pytest.raises(ImportValidationError, match=r"autoj.jsonl:2: prompt: holds a lone surrogate"):
        map_file(f)


@pytest.mark.parametrize("fmt, rows, where", [
    ("autoj", [AUTOJ[0], {**AUTOJ[1], "label": [1]}], ":2: label: unknown label [1]"),
    ("judgebench", [{"pair_id": "p", "question": "q", "response_A": "a", "response_B": "b", "label": []}],
     ":1: label: unknown label []"),
    ("mt_bench", [_mt_pair(1, "a", "b", "x", "y", "model_1", [])], ":1: g2_winner: unknown winner []"),
    ("labelstudio", [{"id": 1, "data": {"prompt": "p", "response_a": "a", "response_b": "b"}, "annotations": -1}],
     ":1: annotations: must be a list, got int"),
    ("rewardbench2", [{"id": "1", "prompt": "p", "chosen": [], "rejected": ["r"]}],
     ":1: chosen: must be a text or a non-empty list of texts"),
])
def test_malformed_records_are_refused_whole_with_file_line_field(tmp_path, fmt, rows, where):
    f = tmp_path / "x.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ImportValidationError) as info:
        map_file(f, fmt)
    assert f"{f}{where}" in str(info.value)
    assert main(["import", str(f), "--from", fmt, "-w", str(tmp_path / "ws")]) == 2
    assert not (tmp_path / "ws").exists()


def test_invalid_utf8_names_its_line(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_bytes(json.dumps(AUTOJ[0]).encode() + b"\n" + b'{"prompt": "\xff"}\n')
    with pytest.raises(ImportValidationError, match=r"x.jsonl:2: invalid UTF-8"):
        map_file(f, "autoj")


def test_a_judge_name_taken_by_another_spec_is_refused(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    items = _jsonl(tmp_path / "items.jsonl", [{"id": 1, "prompt": "p", "response_a": "a", "response_b": "b"}])
    verdicts = _jsonl(tmp_path / "v.jsonl", [{"item_id": 1, "judge": "alpaca_eval_gpt4", "verdict": "A"}])
    assert main(["import", str(items), "-w", ws]) == 0
    assert main(["import", str(verdicts), "--as", "judgments", "-w", ws]) == 0
    a = _json(tmp_path / "annotations.json", ALPACA)
    assert main(["import", str(a), "-w", ws]) == 2
    assert "'alpaca_eval_gpt4' is already in the workspace as another judge" in capsys.readouterr().err
    with Workspace(ws) as w:
        assert len(w.judgments_repo.judgments_frame()) == 1 and len(w.items_repo.item_ids()) == 1  # nothing of the file was written


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_nesting_json_cannot_parse_is_one_line_not_a_crash(tmp_path, capsys, suffix):
    f = tmp_path / f"deep{suffix}"
    f.write_text('{"question": "q", "response_A": "a", "response_B": "b", "label": ' + "[" * 100_000 + "]" * 100_000
                 + "}\n")
    assert main(["import", str(f), "--from", "judgebench", "-w", str(tmp_path / "ws")]) == 2
    assert "nested too deeply" in capsys.readouterr().err


def test_labelstudio_empty_result_is_marked_nothing_only_in_a_span_project(tmp_path):
    def task(tid, result):
        return {"id": tid, "data": {"text": "The cat sat."}, "annotations": [{"completed_by": 1, "result": result}]}

    span = {"type": "labels", "to_name": "text", "value": {"start": 4, "end": 7, "labels": ["animal"]}}
    m = map_file(_json(tmp_path / "spans.json", [task(1, [span]), task(2, [])]), "labelstudio")
    assert sorted((s.item_id, s.start, s.end) for s in m.spans) == [("labelstudio/1", 4, 7), ("labelstudio/2", 0, 0)]
    rating = {"type": "rating", "to_name": "text", "value": {"rating": 4}}
    m = map_file(_json(tmp_path / "rating.json", [task(1, [rating]), task(2, [])]), "labelstudio")
    assert m.spans == [] and [a.label for a in m.annotations] == ["4"]


def test_relabelling_items_already_in_the_workspace_is_linear():
    """A file whose criterion items are in the workspace under another spelling of their labels (``Yes``/``No``
    there, ``yes``/``no`` here) has each verdict and label renamed by one look-up: 10,000 items in well under
    a second or two (one pass over every judgment per item took quadratic time)."""
    import time

    from judgecal.data.formats import _same_labels
    from judgecal.data.formats.base import Mapped
    from judgecal.data.records import Candidate, Item, LabelSet

    mine, have = LabelSet("binary", ("yes", "no"), "yes", False, "ok"), LabelSet("binary", ("Yes", "No"), "Yes", False, "ok")
    m = Mapped("mlflow", "t.json")
    m.judge("j")
    stored = {}
    for k in range(10_000):
        iid = f"tr-{k}/ok"
        m.items[iid] = Item(iid, "p", [Candidate("o", None, None)], "pointwise", None, "mlflow", {}, mine.to_dict())
        stored[iid] = Item(iid, "p", [Candidate("o", None, None)], "pointwise", None, "mlflow", {}, have.to_dict())
        m.verdict("j", iid, verdict="yes" if k % 2 else "no", where=("t.json", k + 1))
        m.label(iid, "bob", "no", "mlflow:human")
    items = dict(m.items)
    t0 = time.perf_counter()
    _same_labels(m, items, stored)
    took = time.perf_counter() - t0
    assert Counter(j.verdict for j in m.judgments.values()) == {"Yes": 5_000, "No": 5_000}
    assert {a.label for a in m.annotations} == {"No"} and items["tr-7/ok"].label_set == have.to_dict()
    assert took < 2.0, f"{took:.1f} s"
