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
    for f in (ev, js):
        assert detect(f) == "inspect"
        m = map_file(f)
        assert sorted(m.items) == ["inspect/task/3", "inspect/task/q1", "inspect/task/q2"]
        assert m.items["inspect/task/q2"].candidates[0].text == "" and m.counts["empty_responses"] == 1
        got = sorted((j.item_id, j.judge, j.score, j.raw) for j in m.judgments.values())
        # the scorer's own 8 stays the judge's verdict; alice's edit to 6 is her label
        assert got == [("inspect/task/3", "rated", 9.0, "Rating 9"), ("inspect/task/q1", "rated", 8.0, "Rating 8"),
                       ("inspect/task/q2", "rated", 2.0, "Rating 2")]
        assert [(a.item_id, a.annotator, a.label, a.source) for a in m.annotations] == [
            ("inspect/task/q1", "alice", "6", "inspect:human")]
        assert m.waiting == {"model_graded_qa: verdicts that are not numbers (C/I/P, booleans or labels)": 3}
        assert m.specs["rated"].model == "mockllm/model"
    assert main(["import", str(ev), "-w", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "detected inspect" in out and "waiting 3: model_graded_qa" in out
    with Workspace(tmp_path / "ws") as ws:
        assert ws.judges() == ["rated"] and len(ws.annotations_frame()) == 1


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
    assert sorted(m.items) == ["promptfoo/0/0/openai:gpt-4o-mini", "promptfoo/1/0/openai:gpt-4o-mini"]
    got = sorted((j.item_id.split("/")[1], j.judge, j.score, j.raw, j.prompt_tokens) for j in m.judgments.values())
    assert got == [("0", "promptfoo:g-eval/openai:gpt-4o", 0.8, "Coherent and correct.", 280),
                   ("1", "promptfoo:g-eval/openai:gpt-4o", 0.4, "Empty.", None)]
    assert m.specs["promptfoo:g-eval/openai:gpt-4o"].rubric == "The answer is correct and concise"
    assert m.waiting == {"promptfoo:llm-rubric pass/fail verdicts": 1, "human pass/fail ratings": 1}
    assert m.dropped == {"deterministic assertions (contains), not judges": 1}
    assert m.counts["empty_responses"] == 1


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
    got = sorted((j.item_id, j.judge, j.score, j.status, j.cost_usd) for j in m.judgments.values())
    assert got == [("deepeval/test_case_0", "Answer Relevancy (gpt-4.1)", 1.0, "ok", 0.0021),
                   ("deepeval/test_case_1", "Answer Relevancy (gpt-4.1)", None, "invalid", None)]
    assert m.items["deepeval/test_case_1"].candidates[0].text == ""
    assert m.items["deepeval/test_case_0"].reference.startswith("You're eligible")
    assert m.waiting == {"Correctness [GEval]: strict-mode pass/fail verdicts": 1}
    assert dict(m.specs["Answer Relevancy (gpt-4.1)"].options) == {"threshold": 0.5}
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0


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
    assert [(j.judge, j.score, j.raw) for j in m.judgments.values()] == [
        ("relevance (openai:/gpt-4o-mini)", 4.0, "Mostly relevant.")]
    assert [(a.annotator, a.label, a.source) for a in m.annotations] == [("bob@example.com", "5", "mlflow:human")]
    assert m.waiting == {"is_safe: LLM verdicts that are not numbers (booleans or labels)": 1}
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
        assert w.judges() == [] and len(w.annotations_frame()) == 0
    runs.write_text(json.dumps({"id": "r-1", "prompt": "Explain X", "response": "X is ..."}) + "\n"
                    + json.dumps({"id": "r-2", "prompt": "Is 2 prime?", "response": "Yes"}) + "\n")
    assert main(["import", str(runs), "--task", "pointwise", "-w", str(ws)]) == 0
    assert main(["import", str(fb), "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "waiting 1: correct: LLM verdicts that are not numbers" in out
    with Workspace(ws) as w:
        assert w.judges() == ["helpfulness"]
        assert w.judgments_frame()["score"].tolist() == [0.7]
        assert w.annotations_frame()[["annotator", "label"]].values.tolist() == [["u-42", "8"]]


def test_phoenix_span_annotations_csv(tmp_path):
    f = tmp_path / "annotations.csv"
    f.write_text("span_id,name,annotator_kind,result.label,result.score,result.explanation,"
                 "attributes.input.value,attributes.output.value\n"
                 "s1,quality,LLM,,0.85,Clear and correct,What is 2+2?,4\n"
                 "s1,hallucination,LLM,factual,0,The answer is supported,What is 2+2?,4\n"
                 "s1,quality,HUMAN,,7,,What is 2+2?,4\n")
    assert detect(f) == "phoenix"  # a CSV export is recognised too
    m = map_file(f)
    assert [(j.judge, j.score) for j in m.judgments.values()] == [("quality", 0.85)]
    assert [(a.annotator, a.label) for a in m.annotations] == [("phoenix-human", "7")]
    assert m.waiting == {"hallucination: LLM verdicts that are not numbers (booleans or labels)": 1}
    assert m.items["s1"].candidates[0].text == "4"


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
    assert sorted((j.item_id, j.score, j.raw) for j in m.judgments.values()) == sorted(
        [(ids[0], 4.0, "Mostly relevant."), (ids[1], 2.0, "Empty.")])
    assert [(a.item_id, a.annotator, a.label) for a in m.annotations] == [(ids[0], "bob", "5")]
    assert m.items[ids[0]].candidates[0].text == "An open source platform." and m.counts["empty_responses"] == 1
    assert json.loads(m.items[ids[0]].prompt) == {"question": "What is MLflow?"}
    assert m.waiting == {"safe: LLM verdicts that are not numbers (booleans or labels)": 1}
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
    assert sorted(m.items) == ["promptfoo/0/0/my-model", "promptfoo/1/0/my-model"]
    assert sorted((j.item_id, j.judge, j.score, j.raw) for j in m.judgments.values()) == [
        ("promptfoo/0/0/my-model", "promptfoo:g-eval/file://grader.js", 0.8, "Correct and concise."),
        ("promptfoo/1/0/my-model", "promptfoo:g-eval/file://grader.js", 0.2, "Empty.")]
    assert m.specs["promptfoo:g-eval/file://grader.js"].rubric == "The answer is correct and concise"
    assert m.waiting == {"promptfoo:llm-rubric pass/fail verdicts": 1}
    assert m.dropped == {"deterministic assertions (contains), not judges": 1}
    assert m.counts["empty_responses"] == 1
