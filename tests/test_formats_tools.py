"""Formats whose tool can write its own result file here: an Inspect eval log produced by inspect_ai
itself (its mock model as the evaluated model and as the grader, so no paid API), with a person's score
edit; and files in the published shapes of promptfoo, DeepEval and MLflow."""


import json

import pytest

from judgecal.cli import main
from judgecal.data.formats import detect, map_file
from judgecal.data.store import Workspace

INSPECT_RUN = r"""
import sys
from pathlib import Path

import inspect_ai as ia
from inspect_ai.dataset import Sample
from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import Score, ScoreEdit, Target, mean, model_graded_qa, scorer
from inspect_ai.solver import TaskState, generate

folder = Path(sys.argv[1])


def out(text, n):
    o = ModelOutput.from_content("mockllm/model", text)
    o.usage = ModelUsage(input_tokens=n, output_tokens=3, total_tokens=n + 3)  # no tokenizer download
    return o


@scorer(metrics=[mean()])
def rated():
    async def score(state: TaskState, target: Target) -> Score:
        got = await get_model(role="grader").generate(f"Rate 1-10: {state.output.completion}")
        return Score(value=float(got.completion.split()[-1]), explanation=got.completion)
    return score


samples = [Sample(input="Capital of France?", target="Paris", id="q1"),
           Sample(input="Say nothing", target="", id="q2"), Sample(input="2+2?", target="4", id=3)]
model = get_model("mockllm/model", custom_outputs=[out(a, 10) for a in ["Paris", "", "4"]])
grader = get_model("mockllm/model", custom_outputs=[out(c, 50) for c in [
    "GRADE: C", "Rating 8", "GRADE: I", "Rating 2", "GRADE: C", "Rating 9"]])
task = ia.Task(dataset=samples, solver=generate(), scorer=[model_graded_qa(model_role="grader"), rated()])
log = ia.eval(task, model=model, model_roles={"grader": grader}, display="none", log_dir=str(folder),
              log_format="eval", max_samples=1)[0]
assert log.status == "success", log.error
log = read_eval_log(log.location)
edit_score(log, "q1", "rated", ScoreEdit(value=6.0, provenance=ProvenanceData(author="alice", reason="too generous")))
for sid in ("q1", "q2"):  # bob's verdicts on the C/I grader: he agrees on q1, not on q2 (an empty answer is right)
    edit_score(log, sid, "model_graded_qa", ScoreEdit(value="C", provenance=ProvenanceData(author="bob", reason="")))
write_eval_log(log, str(folder / "edited.eval"))
write_eval_log(log, str(folder / "edited.json"))
"""


def _inspect_log(folder):
    """Run a real Inspect eval: three samples, a C/I grader (model_graded_qa) and a 1-10 rating scorer,
    then a person edits one rating, as `inspect score edit` does. Returns the .eval and .json logs. It runs
    in its own process: inspect_ai reconfigures the terminal display of the process that imports it."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("inspect_ai is not installed (extra 'inspect')")
    run = subprocess.run([sys.executable, "-c", INSPECT_RUN, str(folder)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return folder / "edited.eval", folder / "edited.json"


def test_inspect_log_written_by_inspect_ai(tmp_path, capsys):
    ev, js = _inspect_log(tmp_path)
    qa = "model_graded_qa"
    for f in (ev, js):
        assert detect(f) == "inspect"
        m = map_file(f)
        # each sample's item names the evaluated model (another model's log numbers its samples alike)
        samples = [f"inspect/task/{sid}/@mockllm%2Fmodel" for sid in ("3", "q1", "q2")]
        assert sorted(m.items) == sorted(samples + [f"{i}/{qa}" for i in samples])
        assert m.items[samples[2]].candidates[0].text == "" and m.counts["empty_responses"] == 2
        got = sorted((j.item_id, j.judge, j.score, j.raw) for j in m.judgments.values() if j.judge == "rated")
        # the scorer's own 8 stays the judge's verdict; alice's edit to 6 is her label
        assert got == [(samples[0], "rated", 9.0, "Rating 9"), (samples[1], "rated", 8.0, "Rating 8"),
                       (samples[2], "rated", 2.0, "Rating 2")]
        # the C/I grader is a binary judge on each sample's item for it; bob's edits are his labels there
        labels = sorted((j.item_id, j.verdict, j.status, j.score) for j in m.judgments.values() if j.judge == qa)
        assert labels == [(f"{samples[0]}/{qa}", "C", "ok", None), (f"{samples[1]}/{qa}", "C", "ok", None),
                          (f"{samples[2]}/{qa}", "I", "ok", None)]
        for i in samples:
            it = m.items[f"{i}/{qa}"]
            assert (it.task, it.labels.task, it.labels.labels, it.labels.positive) == ("pointwise", "binary",
                                                                                       ("C", "I"), "C")
            assert it.metadata["criterion"] == qa and it.metadata["record"] == i
            assert it.candidates[0].text == m.items[i].candidates[0].text
        assert sorted((a.item_id, a.annotator, a.label, a.source) for a in m.annotations) == [
            (samples[1], "alice", "6", "inspect:human"), (f"{samples[1]}/{qa}", "bob", "C", "inspect:human"),
            (f"{samples[2]}/{qa}", "bob", "C", "inspect:human")]
        assert not m.dropped
        assert m.specs["rated"].model == "mockllm/model"
    ws, out = tmp_path / "ws", tmp_path / "out"
    assert main(["import", str(ev), "-w", str(ws)]) == 0
    said = capsys.readouterr().out
    assert "detected inspect" in said and f"labels of {qa}: binary C/I (positive C)" in said
    with Workspace(ws) as w:
        assert sorted(w.judgments_repo.judges()) == [qa, "rated"] and len(w.annotations_repo.annotations_frame()) == 3
    # bob agrees with the grader on q1 (C) and not on q2 (the grader's I): accuracy 1/2
    entry = _audit_judge(ws, out, qa)
    assert (entry["labels"]["task"], entry["labels"]["labels"], entry["labels"]["positive"]) == ("binary", ["C", "I"], "C")
    assert entry["metrics"]["accuracy"]["estimate"] == pytest.approx(1 / 2)


def _audit_judge(ws, out, judge):
    """``aggregate`` and ``audit`` through the CLI; the judge's entry of audit.json."""
    assert main(["aggregate", "-w", str(ws)]) == 0
    assert main(["audit", "-w", str(ws), "--n-boot", "100", "--out", str(out)]) == 0
    return json.loads((out / "audit.json").read_text("utf-8"))["judges"][judge]


def _by_hand(judge, human):
    """The share of items on which the judge's label is the person's."""
    return sum(j == h for j, h in zip(judge, human, strict=True)) / len(judge)


def test_inspect_partial_credit_booleans_and_several_values(tmp_path):
    """A JSON log in Inspect's shape: model_graded_qa(partial_credit=True) gives C/P/I (an ordinal set, lowest
    first), a scorer of booleans a binary true/false one, a score of several values is dropped."""
    def sample(sid, qa, ok, multi=None):
        scores = {"graded": {"value": qa, "explanation": f"GRADE: {qa}"}, "is_ok": {"value": ok}}
        if multi is not None:
            scores["rubric"] = {"value": multi}
        return {"id": sid, "epoch": 1, "input": f"Q{sid}", "target": "t", "output": {"completion": f"A{sid}"},
                "scores": scores}

    log = {"version": 2, "status": "success", "eval": {"task": "t", "model": "mockllm/model", "scorers": [
        {"name": "graded", "options": {"partial_credit": True}}, {"name": "is_ok"}, {"name": "rubric"}]},
        "samples": [sample(1, "C", True, {"a": 1, "b": "C"}), sample(2, "P", False), sample(3, "I", True)]}
    f = tmp_path / "log.json"
    f.write_text(json.dumps(log))
    m = map_file(f)
    assert (m.label_sets["graded"].task, m.label_sets["graded"].labels, m.label_sets["graded"].ordinal) == (
        "categorical", ("I", "P", "C"), True)
    assert (m.label_sets["is_ok"].labels, m.label_sets["is_ok"].positive) == (("true", "false"), "true")
    got = sorted((j.item_id, j.verdict) for j in m.judgments.values())
    t = [f"inspect/t/{k}/@mockllm%2Fmodel" for k in (1, 2, 3)]
    assert got == [(f"{t[0]}/graded", "C"), (f"{t[0]}/is_ok", "true"), (f"{t[1]}/graded", "P"),
                   (f"{t[1]}/is_ok", "false"), (f"{t[2]}/graded", "I"), (f"{t[2]}/is_ok", "true")]
    assert sorted(m.items) == sorted(i for i, _ in got)  # every sample's verdicts are labels: its items only
    assert m.dropped == {"rubric: scores with several values (an object or a list)": 1}


PROMPTFOO = {  # `promptfoo eval -o results.json`, version 3 layout
    "evalId": "eval-2026-12-01T07:00:00", "results": {"version": 3, "timestamp": "2026-12-01T07:00:00.000Z", "prompts": [
        {"raw": "Answer briefly: {{question}}", "label": "brief"}], "results": [
        {"id": "r1", "promptIdx": 0, "testIdx": 0, "promptId": "p0", "vars": {"question": "Capital of France?"},
         "prompt": {"raw": "Answer briefly: Capital of France?", "label": "brief"},
         "provider": {"id": "openai:gpt-4o-mini", "label": ""},
         "response": {"output": "Paris.", "tokenUsage": {"total": 20, "prompt": 15, "completion": 5}, "cost": 0.00001},
         "latencyMs": 412, "success": True, "score": 0.9, "namedScores": {},
         "gradingResult": {"pass": True, "score": 0.9, "reason": "All assertions passed", "componentResults": [
             {"pass": True, "score": 0.8, "reason": "Coherent and correct.", "tokensUsed": {"total": 300, "prompt": 280,
                                                                                     "completion": 20},
              "assertion": {"type": "g-eval", "value": "The answer is correct and concise", "threshold": 0.7,
                            "provider": "openai:gpt-4o"}},
             {"pass": True, "score": 1, "reason": "The output is polite",
              "assertion": {"type": "llm-rubric", "value": "is polite", "provider": {"id": "openai:gpt-4o"}}},
             {"pass": True, "score": 1, "reason": "Expected output to contain 'Paris'",
              "assertion": {"type": "contains", "value": "Paris"}},
             {"pass": False, "score": 0, "reason": "Too terse", "assertion": {"type": "human"}}]}},
        {"id": "r2", "promptIdx": 0, "testIdx": 1, "vars": {"question": "Say nothing"},
         "prompt": {"raw": "Answer briefly: Say nothing", "label": "brief"},
         "provider": {"id": "openai:gpt-4o-mini"}, "response": {"output": ""}, "latencyMs": 300,
         "gradingResult": {"pass": False, "score": 0.4, "componentResults": [
             {"pass": False, "score": 0.4, "reason": "Empty.", "assertion": {"type": "g-eval", "value":
                                                                              "The answer is correct and concise",
                                                                              "provider": "openai:gpt-4o"}}]}}],
        "stats": {"successes": 1, "failures": 1}},
    "config": {"description": "demo", "defaultTest": {"options": {"provider": "openai:gpt-4o"}}}}


def test_promptfoo_results_json(tmp_path):
    f = tmp_path / "results.json"
    f.write_text(json.dumps(PROMPTFOO))
    assert detect(f) == "promptfoo"
    m = map_file(f)
    assert sorted(i for i in m.items if not m.items[i].labels) == ["promptfoo/0/0/@openai:gpt-4o-mini",
                                                                    "promptfoo/1/0/@openai:gpt-4o-mini"]
    got = sorted((j.item_id.split("/")[1], j.judge, j.score, j.raw, j.prompt_tokens) for j in m.judgments.values()
                 if j.score is not None)
    assert got == [("0", "promptfoo:g-eval/openai:gpt-4o", 0.8, "Coherent and correct.", 280),
                   ("1", "promptfoo:g-eval/openai:gpt-4o", 0.4, "Empty.", None)]
    assert m.specs["promptfoo:g-eval/openai:gpt-4o"].rubric == "The answer is correct and concise"
    # each assertion's pass: llm-rubric is that alone; g-eval's at its threshold is a judge of its own
    o0, o1 = "promptfoo/0/0/@openai:gpt-4o-mini", "promptfoo/1/0/@openai:gpt-4o-mini"
    geval, polite = "g-eval: The answer is correct and concise", "llm-rubric: is polite"
    got = sorted((j.item_id, j.judge, j.verdict, j.raw) for j in m.judgments.values() if j.score is None)
    assert got == [(f"{o0}/{geval}", "promptfoo:g-eval/openai:gpt-4o pass/fail", "pass", "Coherent and correct."),
                   (f"{o0}/{polite}", "promptfoo:llm-rubric/openai:gpt-4o", "pass", "The output is polite"),
                   (f"{o1}/{geval}", "promptfoo:g-eval/openai:gpt-4o pass/fail", "fail", "Empty.")]
    assert dict(m.specs["promptfoo:g-eval/openai:gpt-4o pass/fail"].options) == {"threshold": 0.7}
    for iid in (f"{o0}/{geval}", f"{o0}/{polite}", f"{o0}/overall"):
        ls = m.items[iid].labels
        assert (ls.task, ls.labels, ls.positive) == ("binary", ("pass", "fail"), "pass")
    assert m.items[f"{o0}/{polite}"].labels.criterion == polite
    # the thumbs down in promptfoo's viewer is a person's label on the output as a whole
    assert [(a.item_id, a.annotator, a.label, a.source) for a in m.annotations] == [
        (f"{o0}/overall", "promptfoo-human", "fail", "promptfoo:human")]
    assert m.dropped == {"deterministic assertions (contains), not judges": 1}
    assert m.counts["empty_responses"] == 2  # the empty output and its g-eval item


def test_promptfoo_pass_fail_judge_against_people_end_to_end(tmp_path):
    """An llm-rubric judge's pass/fail on six outputs, people's pass/fail on the same outputs (imported first in
    judgecal's own schema, with the ids promptfoo's outputs get): the audit's labels section and accuracy."""
    judge = ["pass", "pass", "fail", "pass", "fail", "fail"]
    human = ["pass", "fail", "fail", "pass", "pass", "fail"]
    rows = [{"promptIdx": 0, "testIdx": k, "vars": {"q": f"Q{k}"}, "prompt": {"raw": f"Answer: Q{k}"},
             "provider": {"id": "my-model"}, "response": {"output": f"A{k}"},
             "gradingResult": {"pass": j == "pass", "componentResults": [
                 {"pass": j == "pass", "score": float(j == "pass"), "reason": "why",
                  "assertion": {"type": "llm-rubric", "value": "is polite", "metric": "polite"}}]}}
            for k, j in enumerate(judge)]
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"results": {"version": 3, "results": rows},
                             "config": {"defaultTest": {"options": {"provider": "openai:gpt-4o"}}}}))
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps({
        "id": f"promptfoo/{k}/0/@my-model", "prompt": f"Answer: Q{k}", "response": f"A{k}", "model": "my-model",
        "metadata": {"vars": {"q": f"Q{k}"}}, "human_labels": {"carol": {"polite": h}}}) + "\n"
        for k, h in enumerate(human)))
    ws = tmp_path / "ws"
    assert main(["import", str(people), "--task", "binary", "--positive", "pass", "--labels", "pass,fail",
                 "--criteria", "polite", "-w", str(ws)]) == 0
    assert main(["import", str(f), "--from", "promptfoo", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        assert len(w.items_repo.item_ids()) == 6  # the outputs' polite items are the people's items
    entry = _audit_judge(ws, tmp_path / "out", "promptfoo:llm-rubric/openai:gpt-4o")
    assert (entry["labels"]["task"], entry["labels"]["labels"], entry["labels"]["criterion"]) == (
        "binary", ["pass", "fail"], "polite")
    assert entry["metrics"]["accuracy"]["estimate"] == pytest.approx(_by_hand(judge, human))


DEEPEVAL = {  # .deepeval/.latest_test_run.json
    "testFile": "test_chatbot.py", "testCases": [
        {"name": "test_case_0", "input": "What if these shoes don't fit?",
         "actualOutput": "We offer a 30-day full refund at no extra cost.",
         "expectedOutput": "You're eligible for a 30 day refund at no extra cost.", "success": True,
         "metricsData": [
             {"name": "Answer Relevancy", "threshold": 0.5, "success": True, "score": 1.0,
              "reason": "The score is 1.00 because the answer addresses the question.", "strictMode": False,
              "evaluationModel": "gpt-4.1", "error": None, "evaluationCost": 0.0021, "verboseLogs": "..."},
             {"name": "Correctness [GEval]", "threshold": 0.5, "success": False, "score": 0.0, "reason": "...",
              "strictMode": True, "evaluationModel": "gpt-4.1", "evaluationCost": 0.001}],
         "runDuration": 2.1, "evaluationCost": 0.0031, "order": 0},
        {"name": "test_case_1", "input": "Hi", "actualOutput": None, "success": False, "metricsData": [
            {"name": "Answer Relevancy", "threshold": 0.5, "success": False, "score": None, "reason": None,
             "strictMode": False, "evaluationModel": "gpt-4.1", "error": "RateLimitError: 429"}], "order": 1}],
    "conversationalTestCases": [], "metricsScores": [], "runDuration": 3.0, "evaluationCost": 0.0031}


def test_deepeval_test_run(tmp_path):
    f = tmp_path / ".latest_test_run.json"
    f.write_text(json.dumps(DEEPEVAL))
    assert detect(f) == "deepeval"
    m = map_file(f)
    got = sorted((j.item_id, j.judge, j.score, j.status, j.cost_usd) for j in m.judgments.values() if j.score
                 is not None or j.item_id.count("/") == 1)
    assert got == [("deepeval/test_case_0", "Answer Relevancy (gpt-4.1)", 1.0, "ok", 0.0021),
                   ("deepeval/test_case_1", "Answer Relevancy (gpt-4.1)", None, "invalid", None)]
    assert m.items["deepeval/test_case_1"].candidates[0].text == ""
    assert m.items["deepeval/test_case_0"].reference.startswith("You're eligible")
    # each metric's pass/fail: the strict metric is that alone, the graded one a second judge of its own
    labels = sorted((j.item_id, j.judge, j.verdict, j.status, j.cost_usd) for j in m.judgments.values()
                    if j.item_id.count("/") == 2)
    assert labels == [
        ("deepeval/test_case_0/Answer Relevancy", "Answer Relevancy (gpt-4.1) pass/fail", "pass", "ok", None),
        ("deepeval/test_case_0/Correctness [GEval]", "Correctness [GEval] (gpt-4.1)", "fail", "ok", 0.001),
        ("deepeval/test_case_1/Answer Relevancy", "Answer Relevancy (gpt-4.1) pass/fail", "invalid", "invalid", None)]
    it = m.items["deepeval/test_case_0/Correctness [GEval]"]
    assert (it.labels.task, it.labels.labels, it.labels.positive, it.labels.criterion) == (
        "binary", ("pass", "fail"), "pass", "Correctness [GEval]")
    assert it.reference == m.items["deepeval/test_case_0"].reference and it.metadata["record"] == "deepeval/test_case_0"
    assert not m.dropped
    assert dict(m.specs["Answer Relevancy (gpt-4.1)"].options) == {"threshold": 0.5}
    assert dict(m.specs["Correctness [GEval] (gpt-4.1)"].options) == {"threshold": 0.5, "strict_mode": True}
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0


def test_deepeval_strict_metric_against_people_end_to_end(tmp_path, capsys):
    """A strict-mode G-Eval metric on six test cases (each stored as its metric's item only), people's pass/fail
    imported first in judgecal's own schema with the same ids: the audit's labels section and accuracy."""
    judge = ["pass", "fail", "pass", "pass", "fail", "pass"]
    human = ["pass", "fail", "fail", "pass", "pass", "pass"]
    metric = "Correctness [GEval]"
    cases = [{"name": f"test_case_{k}", "input": f"Question {k}?", "actualOutput": f"Answer {k}.",
              "success": j == "pass", "order": k, "metricsData": [
                  {"name": metric, "threshold": 1.0, "success": j == "pass", "score": float(j == "pass"),
                   "reason": "...", "strictMode": True, "evaluationModel": "gpt-4.1", "evaluationCost": 0.001}]}
             for k, j in enumerate(judge)]
    f = tmp_path / ".latest_test_run.json"
    f.write_text(json.dumps({"testFile": "test_app.py", "testCases": cases}))
    assert sorted(map_file(f).items) == [f"deepeval/test_case_{k}/{metric}" for k in range(6)]
    people = tmp_path / "people.jsonl"
    people.write_text("".join(json.dumps({"id": f"deepeval/test_case_{k}", "prompt": f"Question {k}?",
                                          "response": f"Answer {k}.", "human_labels": {"alice": {metric: h}}}) + "\n"
                              for k, h in enumerate(human)))
    ws = tmp_path / "ws"
    assert main(["import", str(people), "--task", "binary", "--positive", "pass", "--labels", "pass,fail",
                 "--criteria", metric, "-w", str(ws)]) == 0
    assert main(["import", str(f), "--from", "deepeval", "-w", str(ws)]) == 0
    assert f"labels of {metric}: binary pass/fail (positive pass)" in capsys.readouterr().out
    entry = _audit_judge(ws, tmp_path / "out", f"{metric} (gpt-4.1)")
    assert (entry["labels"]["task"], entry["labels"]["labels"], entry["labels"]["positive"]) == (
        "binary", ["pass", "fail"], "pass")
    assert entry["metrics"]["accuracy"]["estimate"] == pytest.approx(_by_hand(judge, human))


MLFLOW_TRACES = [  # mlflow.search_traces() rows, assessments as Assessment.to_dictionary() writes them
    {"trace_id": "tr-1", "state": "OK", "request": {"messages": [{"role": "user", "content": "What is MLflow?"}]},
     "response": "An open source platform for the ML lifecycle.", "execution_duration": 830, "assessments": [
         {"assessment_id": "a-1", "assessment_name": "relevance", "trace_id": "tr-1",
          "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o-mini"}, "feedback": {"value": 4},
          "rationale": "Mostly relevant.", "valid": False, "create_time": "2026-11-30T10:00:00Z"},
         {"assessment_id": "a-2", "assessment_name": "relevance", "trace_id": "tr-1",
          "source": {"source_type": "HUMAN", "source_id": "bob@example.com"}, "feedback": {"value": 5},
          "rationale": "Fully relevant.", "overrides": "a-1", "valid": True},
         {"assessment_id": "a-3", "assessment_name": "is_safe", "trace_id": "tr-1",
          "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o-mini"}, "feedback": {"value": True}},
         {"assessment_id": "a-4", "assessment_name": "length_ok", "trace_id": "tr-1",
          "source": {"source_type": "CODE", "source_id": "length_check"}, "feedback": {"value": 1}},
         {"assessment_id": "a-5", "assessment_name": "expected_facts", "trace_id": "tr-1",
          "source": {"source_type": "HUMAN", "source_id": "bob@example.com"},
          "expectation": {"value": ["open source"]}}]}]


def test_mlflow_traces_with_assessments(tmp_path):
    f = tmp_path / "traces.json"
    f.write_text(json.dumps(MLFLOW_TRACES))
    assert detect(f) == "mlflow"
    m = map_file(f)
    assert m.items["tr-1"].prompt.startswith('{"messages"') and m.items["tr-1"].candidates[0].text.startswith("An open")
    assert [(j.item_id, j.judge, j.score, j.verdict, j.raw) for j in m.judgments.values()] == [
        ("tr-1", "relevance (openai:/gpt-4o-mini)", 4.0, None, "Mostly relevant."),
        ("tr-1/is_safe", "is_safe (openai:/gpt-4o-mini)", None, "true", "")]
    ls = m.items["tr-1/is_safe"].labels  # a boolean feedback: binary true/false on the trace's item for it
    assert (ls.task, ls.labels, ls.positive, ls.criterion) == ("binary", ("true", "false"), "true", "is_safe")
    assert [(a.annotator, a.label, a.source) for a in m.annotations] == [("bob@example.com", "5", "mlflow:human")]
    assert m.dropped == {"length_ok: code scorers (not judges)": 1, "expectations (ground truth, not feedback)": 1}


def test_langsmith_feedback_on_runs_already_imported(tmp_path, capsys):
    fb = tmp_path / "feedback.jsonl"
    fb.write_text("".join(json.dumps(r) + "\n" for r in [
        {"id": "f1", "run_id": "r-1", "key": "helpfulness", "score": 0.7, "comment": "Good but long.",
         "feedback_source": {"type": "model", "metadata": {"__run": {"run_id": "e1"}}}},
        {"id": "f2", "run_id": "r-1", "key": "helpfulness", "score": 8, "comment": None,
         "feedback_source": {"type": "app", "user_id": "u-42"}},
        {"id": "f3", "run_id": "r-2", "key": "correct", "score": True, "feedback_source": {"type": "model"}}]))
    assert detect(fb) == "langsmith"
    ws = tmp_path / "ws"
    runs = tmp_path / "runs.jsonl"
    runs.write_text(json.dumps({"id": "r-1", "prompt": "Explain X", "response": "X is ..."}) + "\n")
    assert main(["import", str(runs), "--task", "pointwise", "-w", str(ws)]) == 0
    assert main(["import", str(fb), "-w", str(ws)]) == 2  # r-2 is not an item: nothing written
    assert "refers to 'r-2', which is not an item in the workspace" in capsys.readouterr().err
    with Workspace(ws) as w:
        assert w.judgments_repo.judges() == [] and len(w.annotations_repo.annotations_frame()) == 0
    runs.write_text(json.dumps({"id": "r-1", "prompt": "Explain X", "response": "X is ..."}) + "\n"
                    + json.dumps({"id": "r-2", "prompt": "Is 2 prime?", "response": "Yes"}) + "\n")
    assert main(["import", str(runs), "--task", "pointwise", "-w", str(ws)]) == 0
    assert main(["import", str(fb), "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "labels of correct: binary true/false (positive true)" in out
    with Workspace(ws) as w:
        assert sorted(w.judgments_repo.judges()) == ["correct", "helpfulness"]
        j = w.judgments_repo.judgments_frame().set_index("judge")
        assert j.loc["helpfulness", "score"] == 0.7
        assert (j.loc["correct", "item_id"], j.loc["correct", "verdict"]) == ("r-2/correct", "true")
        # the run's item for `correct` is built from the run already in the workspace
        it = w.items_repo.items(ids=["r-2/correct"])[0]
        assert (it.prompt, it.candidates[0].text, it.labels.labels, it.metadata["record"]) == (
            "Is 2 prime?", "Yes", ("true", "false"), "r-2")
        assert w.annotations_repo.annotations_frame()[["annotator", "label"]].values.tolist() == [["u-42", "8"]]


def test_phoenix_span_annotations_csv(tmp_path):
    f = tmp_path / "annotations.csv"
    f.write_text("span_id,name,annotator_kind,result.label,result.score,result.explanation,"
                 "attributes.input.value,attributes.output.value\n"
                 "s1,quality,LLM,,0.85,Clear and correct,What is 2+2?,4\n"
                 "s1,hallucination,LLM,factual,0,The answer is supported,What is 2+2?,4\n"
                 "s1,quality,HUMAN,,7,,What is 2+2?,4\n")
    assert detect(f) == "phoenix"  # a CSV export is recognised too
    m = map_file(f)
    assert [(j.item_id, j.judge, j.score, j.verdict) for j in m.judgments.values()] == [
        ("s1", "quality", 0.85, None), ("s1/hallucination", "hallucination", None, "factual")]
    ls = m.items["s1/hallucination"].labels  # Phoenix's hallucination rails: factual / hallucinated
    assert (ls.task, ls.labels, ls.positive) == ("binary", ("factual", "hallucinated"), "factual")
    assert [(a.annotator, a.label) for a in m.annotations] == [("phoenix-human", "7")]
    assert m.items["s1"].candidates[0].text == "4"


def test_mlflow_yes_no_feedback_against_people_end_to_end(tmp_path, capsys):
    """MLflow's built-in judges answer "yes"/"no"; a person's assessments on the same traces: one binary item
    per trace for the assessment, the judge's verdicts and the people's labels on it, audited."""
    judge = ["yes", "no", "yes", "yes", "no", "no", "yes"]
    human = ["yes", "no", "no", "yes", "yes", "no", "yes"]
    rows = [{"trace_id": f"tr-{k}", "request": {"question": f"Q{k}?"}, "response": f"A{k}.", "assessments": [
        {"assessment_name": "correctness", "trace_id": f"tr-{k}", "feedback": {"value": j}, "rationale": "...",
         "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o-mini"}},
        {"assessment_name": "correctness", "trace_id": f"tr-{k}", "feedback": {"value": h},
         "source": {"source_type": "HUMAN", "source_id": "dana@example.com"}}]}
        for k, (j, h) in enumerate(zip(judge, human, strict=True))]
    f = tmp_path / "traces.json"
    f.write_text(json.dumps(rows))
    m = map_file(f)
    assert sorted(m.items) == sorted([f"tr-{k}" for k in range(7)] + [f"tr-{k}/correctness" for k in range(7)])
    ls = m.items["tr-0/correctness"].labels
    assert (ls.task, ls.labels, ls.positive) == ("binary", ("yes", "no"), "yes")
    assert all(j.verdict in ls.labels for j in m.judgments.values())
    assert sorted(a.label for a in m.annotations) == sorted(human)
    ws = tmp_path / "ws"
    assert main(["import", str(f), "-w", str(ws)]) == 0
    entry = _audit_judge(ws, tmp_path / "out", "correctness (openai:/gpt-4o-mini)")
    assert (entry["labels"]["task"], entry["labels"]["labels"], entry["labels"]["criterion"]) == (
        "binary", ["yes", "no"], "correctness")
    assert entry["metrics"]["accuracy"]["estimate"] == pytest.approx(_by_hand(judge, human))
    # a later file's judge says "YES" only: read as the stored "yes" of that criterion
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"assessment_name": "correctness", "trace_id": "tr-0", "feedback": {"value": "YES"},
                                 "source": {"source_type": "LLM_JUDGE", "source_id": "anthropic:/claude"}}) + "\n")
    assert main(["import", str(later), "--from", "mlflow", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        j = w.judgments_repo.judgments_frame()
        assert j.loc[j["judge"] == "correctness (anthropic:/claude)", "verdict"].tolist() == ["yes"]
    # ... but a label the stored criterion does not have is refused, with nothing written
    later.write_text("".join(json.dumps({"assessment_name": "correctness", "trace_id": f"tr-{k}", "feedback": {
        "value": v}, "source": {"source_type": "LLM_JUDGE", "source_id": "other"}}) + "\n"
        for k, v in enumerate(["yes", "unsure"])))
    capsys.readouterr()
    assert main(["import", str(later), "--from", "mlflow", "-w", str(ws)]) == 2
    assert "is in the workspace with labels ['yes', 'no']; this file gives it binary labels ['yes', 'unsure']" in (
        capsys.readouterr().err)


def test_feedback_labels_sets_per_name_from_the_whole_file(tmp_path):
    """Each feedback name has one label set for the file, from every value given under it: classes in the
    order first seen, 0/1 thumbs as binary 1/0, booleans with 1/0 among them as true/false; a name with
    one label no usual pair completes is dropped with its reason; mostly numbers are scores."""
    def fb(run, key, kind, score=None, value=None):
        src = {"type": kind, "user_id": "u-1"} if kind == "app" else {"type": kind}
        return {"run_id": run, "key": key, "score": score, "value": value, "feedback_source": src,
                "inputs": {"q": run}, "outputs": {"a": run.upper()}}

    f = tmp_path / "feedback.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [
        fb("r1", "tone", "model", value="calm"), fb("r2", "tone", "app", value="angry"),
        fb("r1", "tone", "app", value="neutral"), fb("r3", "tone", "model", value="Calm"),
        fb("r1", "thumbs", "app", score=1), fb("r2", "thumbs", "app", score=0),
        fb("r1", "grounded", "model", score=True), fb("r2", "grounded", "app", score=0),
        fb("r1", "vibe", "model", value="sparkly"),
        fb("r3", "helpful", "model", score=0.4), fb("r1", "helpful", "model", score=0.9),
        fb("r2", "helpful", "model", value="N/A")]))
    m = map_file(f)
    sets = {c: (ls.task, ls.labels, ls.positive) for c, ls in m.label_sets.items()}
    assert sets == {"tone": ("categorical", ("calm", "angry", "neutral"), None),
                    "thumbs": ("binary", ("1", "0"), "1"), "grounded": ("binary", ("true", "false"), "true")}
    for it in m.items.values():
        if it.labels is not None:
            assert it.labels == m.label_sets[it.labels.criterion]
    assert sorted((j.item_id, j.verdict) for j in m.judgments.values() if "/" in j.item_id) == [
        ("r1/grounded", "true"), ("r1/tone", "calm"), ("r3/tone", "calm")]
    assert sorted((a.item_id, a.label) for a in m.annotations) == [
        ("r1/thumbs", "1"), ("r1/tone", "neutral"), ("r2/grounded", "false"), ("r2/thumbs", "0"), ("r2/tone", "angry")]
    # mostly numbers: a score criterion, on which the stray "N/A" is an output that gave no score
    assert [(j.item_id, j.score, j.status) for j in m.judgments.values() if "/" not in j.item_id] == [
        ("r3", 0.4, "ok"), ("r1", 0.9, "ok"), ("r2", None, "invalid")]
    assert list(m.dropped) == ["vibe: one label only ('sparkly'), which no usual pair completes; a label set needs "
                               "two (import the file in judgecal's own schema with --task binary/categorical "
                               "--labels to declare them)"]
    assert {"r1", "r2", "r3"} <= set(m.items)  # the runs stay items: later feedback files refer to them


MLFLOW_RUN = r"""
import json
import sys
from pathlib import Path

import mlflow
from mlflow.entities import AssessmentSource

folder = Path(sys.argv[1])
mlflow.set_tracking_uri((folder / "mlruns").as_uri())
mlflow.set_experiment("judge")


@mlflow.trace
def answer(question: str) -> str:
    return {"What is MLflow?": "An open source platform.", "Say nothing": ""}[question]


ids = []
for q in ("What is MLflow?", "Say nothing"):
    answer(q)
    ids.append(mlflow.get_last_active_trace_id())
judge = AssessmentSource(source_type="LLM_JUDGE", source_id="openai:/gpt-4o-mini")
mlflow.log_feedback(trace_id=ids[0], name="relevance", value=4, rationale="Mostly relevant.", source=judge)
mlflow.log_feedback(trace_id=ids[1], name="relevance", value=2, rationale="Empty.", source=judge)
mlflow.log_feedback(trace_id=ids[0], name="relevance", value=5, source=AssessmentSource(source_type="HUMAN", source_id="bob"))
mlflow.log_feedback(trace_id=ids[1], name="safe", value=True, source=judge)
mlflow.search_traces().to_json(folder / "traces.json", orient="records")
(folder / "ids.json").write_text(json.dumps(ids))
"""


def test_mlflow_traces_written_by_mlflow(tmp_path, capsys):
    """Real MLflow: two traced calls, a judge's and a person's feedback logged with mlflow.log_feedback,
    exported with mlflow.search_traces() (a local file store: no server, no paid API). In its own process,
    so that MLflow's global tracking state stays out of the test session."""
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("mlflow") is None:
        pytest.skip("mlflow is not installed (extra 'mlflow')")
    env = {**os.environ, "MLFLOW_ALLOW_FILE_STORE": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"}
    run = subprocess.run([sys.executable, "-c", MLFLOW_RUN, str(tmp_path)], capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    f, ids = tmp_path / "traces.json", json.loads((tmp_path / "ids.json").read_text())
    assert detect(f) == "mlflow"
    m = map_file(f)
    assert sorted((j.item_id, j.score, j.verdict, j.raw) for j in m.judgments.values()) == sorted(
        [(ids[0], 4.0, None, "Mostly relevant."), (ids[1], 2.0, None, "Empty."), (f"{ids[1]}/safe", None, "true", "")])
    assert [(a.item_id, a.annotator, a.label) for a in m.annotations] == [(ids[0], "bob", "5")]
    assert m.items[ids[0]].candidates[0].text == "An open source platform." and m.counts["empty_responses"] == 2
    assert json.loads(m.items[ids[0]].prompt) == {"question": "What is MLflow?"}
    assert m.items[f"{ids[1]}/safe"].labels.labels == ("true", "false")
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0


PROMPTFOO_ANSWER = """// the evaluated model: fixed answers, no API
class Answer {
  id() { return 'my-model'; }
  async callApi(prompt) {
    return { output: prompt.includes('France') ? 'Paris.' : '', tokenUsage: { total: 12, prompt: 10, completion: 2 } };
  }
}
module.exports = Answer;
"""
PROMPTFOO_GRADER = """// the grader: JSON verdicts in the shapes promptfoo's graders ask for, no API
class Grader {
  id() { return 'local-grader'; }
  async callApi(prompt) {
    const p = typeof prompt === 'string' ? prompt : JSON.stringify(prompt);
    const empty = !p.includes('Paris');
    if (/steps/i.test(p) && !/Evaluation Steps:\\s*\\S/.test(p) && /generate/i.test(p)) {
      return { output: JSON.stringify({ steps: ['Check the answer is correct.', 'Check it is concise.'] }) };
    }
    if (/score/i.test(p) && /steps/i.test(p)) {
      return { output: JSON.stringify({ score: empty ? 2 : 8, reason: empty ? 'Empty.' : 'Correct and concise.' }),
               tokenUsage: { total: 90, prompt: 75, completion: 15 } };
    }
    return { output: JSON.stringify({ reason: empty ? 'No answer.' : 'Polite.', pass: !empty, score: empty ? 0 : 1 }) };
  }
}
module.exports = Grader;
"""
PROMPTFOO_CONFIG = """prompts:
  - "Answer briefly: {{question}}"
providers:
  - file://answer.js
defaultTest:
  options:
    provider: file://grader.js
tests:
  - vars: {question: "Capital of France?"}
    assert:
      - {type: llm-rubric, value: is polite}
      - {type: g-eval, value: The answer is correct and concise, threshold: 0.5}
      - {type: contains, value: Paris}
  - vars: {question: "Say nothing"}
    assert:
      - {type: g-eval, value: The answer is correct and concise, threshold: 0.5}
"""


def test_promptfoo_results_written_by_promptfoo(tmp_path):
    """Real promptfoo (npm; JUDGECAL_PROMPTFOO names its executable, else `promptfoo` on the PATH): a local
    JavaScript provider as the model and another as the grader, so no paid API."""
    import os
    import shutil
    import subprocess

    exe = os.environ.get("JUDGECAL_PROMPTFOO") or shutil.which("promptfoo")
    if not exe:
        pytest.skip("promptfoo is not installed (npm install promptfoo; JUDGECAL_PROMPTFOO=<its executable>)")
    for name, text in (("answer.js", PROMPTFOO_ANSWER), ("grader.js", PROMPTFOO_GRADER),
                       ("promptfooconfig.yaml", PROMPTFOO_CONFIG)):
        (tmp_path / name).write_text(text)
    env = {**os.environ, "PROMPTFOO_DISABLE_TELEMETRY": "1", "PROMPTFOO_DISABLE_UPDATE": "1",
           "PROMPTFOO_DISABLE_SHARING": "1", "PROMPTFOO_CONFIG_DIR": str(tmp_path / ".promptfoo")}
    run = subprocess.run([exe, "eval", "-c", "promptfooconfig.yaml", "-o", "results.json", "--no-cache",
                          "--no-progress-bar"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert (tmp_path / "results.json").exists(), run.stdout[-2000:] + run.stderr[-2000:]
    f = tmp_path / "results.json"
    assert detect(f) == "promptfoo"
    m = map_file(f)
    assert sorted(m.items) == ["promptfoo/0/0/@my-model", "promptfoo/1/0/@my-model"]
    assert sorted((j.item_id, j.judge, j.score, j.raw) for j in m.judgments.values() if j.score is not None) == [
        ("promptfoo/0/0/@my-model", "promptfoo:g-eval/file://grader.js", 0.8, "Correct and concise."),
        ("promptfoo/1/0/@my-model", "promptfoo:g-eval/file://grader.js", 0.2, "Empty.")]
    assert m.specs["promptfoo:g-eval/file://grader.js"].rubric == "The answer is correct and concise"
    geval = "g-eval: The answer is correct and concise"
    assert sorted((j.item_id, j.judge, j.verdict) for j in m.judgments.values() if j.score is None) == [
        (f"promptfoo/0/0/@my-model/{geval}", "promptfoo:g-eval/file://grader.js pass/fail", "pass"),
        ("promptfoo/0/0/@my-model/llm-rubric: is polite", "promptfoo:llm-rubric/file://grader.js", "pass"),
        (f"promptfoo/1/0/@my-model/{geval}", "promptfoo:g-eval/file://grader.js pass/fail", "fail")]
    assert m.dropped == {"deterministic assertions (contains), not judges": 1}
    assert m.counts["empty_responses"] == 2
