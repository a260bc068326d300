"""Every ``--from`` format against hostile variations of a valid file of that format (Hypothesis).

A valid file of each format is changed in one to three places: a value replaced by one of the wrong type,
a huge, negative, NaN or infinite number, an integer of 5,001 digits, a long or lone-surrogate text, a null,
or its key removed. The real command (``judgecal import FILE --from FORMAT``) must then either import it
cleanly (exit 0) or refuse it (exit 2) with error lines that each name the file (or the workspace that
feedback on earlier runs needs), never an unexpected error,
a traceback, or a workspace left behind by a refusal. ``JUDGECAL_FUZZ_EXAMPLES`` sets the examples per
format (150 by default).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgecal.cli import main

EXAMPLES = int(os.environ.get("JUDGECAL_FUZZ_EXAMPLES", "150"))
BIG = "__big_integer__"  # written into the file as an integer of 5,001 digits (json.dumps cannot write one)

PROMPTFOO = {"evalId": "e1", "results": {"version": 3, "results": [
    {"promptIdx": 0, "testIdx": 0, "vars": {"question": "Capital of France?"},
     "prompt": {"raw": "Answer: Capital of France?", "label": "brief"}, "provider": {"id": "openai:gpt-4o-mini"},
     "response": {"output": "Paris.", "tokenUsage": {"prompt": 15, "completion": 5}, "cost": 0.00001},
     "latencyMs": 412, "gradingResult": {"pass": True, "score": 0.9, "componentResults": [
         {"pass": True, "score": 0.8, "reason": "Correct.", "tokensUsed": {"prompt": 280, "completion": 20},
          "assertion": {"type": "g-eval", "value": "The answer is correct", "provider": "openai:gpt-4o"}},
         {"pass": True, "score": 1, "reason": "Polite", "assertion": {"type": "llm-rubric", "value": "is polite",
                                                                       "provider": {"id": "openai:gpt-4o"}}},
         {"pass": False, "score": 0, "reason": "Too terse", "assertion": {"type": "human"}}]}}]}}
DEEPEVAL = {"testFile": "t.py", "testCases": [
    {"name": "c0", "input": "Shoes don't fit?", "actualOutput": "30-day refund.", "expectedOutput": "Refund.",
     "metricsData": [{"name": "Answer Relevancy", "threshold": 0.5, "success": True, "score": 1.0, "reason": "ok",
                      "strictMode": False, "evaluationModel": "gpt-4.1", "evaluationCost": 0.002},
                     {"name": "Correct [GEval]", "threshold": 0.5, "success": False, "score": 0.0, "reason": "no",
                      "strictMode": True, "evaluationModel": "gpt-4.1", "evaluationCost": 0.001}]}]}
MLFLOW = [{"trace_id": "tr-1", "request": {"messages": [{"role": "user", "content": "What is MLflow?"}]},
           "response": "A platform.", "execution_duration": 830, "assessments": [
               {"assessment_name": "relevance", "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/g"},
                "feedback": {"value": 4}, "rationale": "Mostly."},
               {"assessment_name": "relevance", "source": {"source_type": "HUMAN", "source_id": "bob"},
                "feedback": {"value": 5}},
               {"assessment_name": "is_safe", "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/g"},
                "feedback": {"value": True}}]}]
LANGSMITH = [{"run_id": "r-1", "key": "helpful", "score": 0.7, "comment": "Good.", "feedback_source": {"type": "model"},
              "inputs": {"q": "Explain X"}, "outputs": {"o": "X is ..."}},
             {"run_id": "r-1", "key": "helpful", "score": 8, "feedback_source": {"type": "app", "user_id": "u-42"},
              "inputs": {"q": "Explain X"}, "outputs": {"o": "X is ..."}}]
PHOENIX = [{"span_id": "s1", "name": "quality", "annotator_kind": "LLM", "result.score": 0.85,
            "result.explanation": "Clear", "attributes.input.value": "2+2?", "attributes.output.value": "4"},
           {"span_id": "s1", "name": "hallucination", "annotator_kind": "LLM", "result.label": "factual",
            "attributes.input.value": "2+2?", "attributes.output.value": "4"},
           {"span_id": "s1", "name": "quality", "annotator_kind": "HUMAN", "result.score": 7,
            "attributes.input.value": "2+2?", "attributes.output.value": "4"}]
ALPACA = [{"instruction": "Name a prime.", "output_1": "2", "generator_1": "gpt4", "output_2": "Nine.",
           "generator_2": "mine", "annotator": "alpaca_eval_gpt4", "preference": 1.03,
           "raw_completion": {"content": "m", "logprobs": [-0.03]}, "price_per_example": 0.0013, "time_per_example": 0.7},
          {"instruction": "Say hi.", "output_1": "Hi!", "generator_1": "gpt4", "output_2": "", "generator_2": "mine",
           "annotator": "alpaca_eval_gpt4", "preference": None, "raw_completion": "?"}]
CONV = [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": "A."}]
MT_BENCH = [{"question_id": 81, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "expert_1", "turn": 1,
             "conversation_a": CONV, "conversation_b": [CONV[0], {"role": "assistant", "content": "B."}]},
            {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "tie", "judge": ["gpt-4", "pair-v2"],
             "turn": 1, "conversation_a": CONV, "conversation_b": [CONV[0], {"role": "assistant", "content": "B."}]},
            {"question_id": 82, "model": "x", "score": 7, "judge": ["gpt-4", "single-v1"], "turn": 1,
             "user_prompt": "[Question]\nQ?\n\n[The Start of Assistant's Answer]\nA\n[The End of Assistant's Answer]",
             "judgment": "Rating: [[7]]"}]
LABELSTUDIO = [{"id": 11, "data": {"prompt": "2+2?", "response_a": "4", "response_b": "5"}, "annotations": [
    {"id": 1, "completed_by": 3, "lead_time": 12.5, "was_cancelled": False, "result": [
        {"from_name": "preference", "to_name": "prompt", "type": "choices", "value": {"choices": ["A better"]}}]}],
    "predictions": [{"model_version": "judge-v1", "score": 0.8, "result": [
        {"from_name": "preference", "to_name": "prompt", "type": "choices", "value": {"choices": ["B better"]}}]}]},
    {"id": 12, "data": {"question": "Sky green?", "answer": "Yes."}, "annotations": [
        {"id": 3, "completed_by": 3, "result": [
            {"type": "rating", "from_name": "q", "to_name": "answer", "value": {"rating": 2}},
            {"type": "labels", "from_name": "l", "to_name": "answer", "value": {"start": 0, "end": 3, "labels": ["x"]}}]}]}]
JUDGE_BENCH = {"dataset": "demo", "annotations": [
    {"metric": "quality", "category": "graded", "worst": 1, "best": 5, "prompt": "Rate it."},
    {"metric": "safe", "category": "categorical", "labels_list": ["Yes", "No"], "prompt": "Safe?"}],
    "instances": [{"id": 1, "instance": {"user_prompt": "Hi", "response": "Hello"},
                   "annotations": {"quality": {"mean_human": 4, "individual_human_scores": [4, 5]},
                                   "safe": {"majority_human": "Yes", "individual_human_scores": ["Yes", "No"]}}}]}
JUDGEBENCH = [{"pair_id": "p1", "original_id": "o1", "source": "mmlu-pro-math", "question": "1+1?",
               "response_model": "gpt-4o", "response_A": "2", "response_B": "3", "label": "A>B"}]
REWARDBENCH2 = [{"id": "42", "prompt": "Best answer?", "chosen": ["good"], "rejected": ["bad1", "bad2"],
                 "num_correct": 1, "models": ["m0", "m1", "m2"], "subset": "Focus"}]
AUTOJ = [{"scenario": "chitchat", "label": 1, "prompt": "Hi", "response 1": "", "response 2": "Hello!"}]
MUSHROOM = [{"id": "tst-en-1", "lang": "EN", "model_input": "Q", "model_id": "m", "model_output_text": "It is 1492.",
             "hard_labels": [[6, 10]], "soft_labels": [{"start": 6, "prob": 0.8, "end": 10}]}]
INSPECT = {"eval": {"task": "t", "model": "mockllm/model", "scorers": [{"name": "rated"}, {"name": "qa"}],
                    "model_roles": {"grader": {"model": "mockllm/grader"}}},
           "samples": [{"id": "q1", "epoch": 1, "input": [{"role": "user", "content": "Capital?"}], "target": "Paris",
                        "output": {"completion": "Paris"}, "scores": {
                            "rated": {"value": 8, "explanation": "good", "history": [
                                {"value": 8}, {"value": 6, "provenance": {"author": "alice", "reason": "meh"}}]},
                            "qa": {"value": "C", "explanation": "GRADE: C"}}}]}


def _json(doc: Any) -> bytes:
    return json.dumps(doc).replace(f'"{BIG}"', "1" + "0" * 5000).encode()


def _jsonl(rows: Any) -> bytes:
    if not isinstance(rows, list):
        return _json(rows)
    return b"".join(_json(r) + b"\n" for r in rows)


def _csv(rows: Any) -> bytes:
    import csv

    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return _json(rows)
    cols = sorted({k for r in rows for k in r})
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(cols)
    for r in rows:
        w.writerow(["" if r.get(c) is None else (json.dumps(r[c]) if isinstance(r[c], dict | list) else
                    ("1" + "0" * 5000 if r[c] == BIG else str(r[c]))) for c in cols])
    return buf.getvalue().encode("utf-8", "surrogatepass")


def _eval(doc: Any) -> bytes:
    """An Inspect ``.eval`` zip: the log without its samples as header.json, each sample a member."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        head = {k: v for k, v in doc.items() if k != "samples"} if isinstance(doc, dict) else doc
        z.writestr("header.json", _json(head))
        samples = doc.get("samples") if isinstance(doc, dict) else None
        for k, s in enumerate(samples if isinstance(samples, list) else []):
            z.writestr(f"samples/{k}_epoch_1.json", _json(s))
    return buf.getvalue()


# format -> (file name, valid content, writer)
FILES: dict[str, tuple[str, Any, Callable[[Any], bytes]]] = {
    "alpaca_eval": ("annotations.json", ALPACA, _json), "mt_bench": ("judgments.jsonl", MT_BENCH, _jsonl),
    "labelstudio": ("project.json", LABELSTUDIO, _json), "judge-bench": ("data.json", JUDGE_BENCH, _json),
    "judgebench": ("gpt.jsonl", JUDGEBENCH, _jsonl), "rewardbench2": ("rb2.jsonl", REWARDBENCH2, _jsonl),
    "inspect": ("log.json", INSPECT, _json), "inspect-eval": ("log.eval", INSPECT, _eval),
    "promptfoo": ("results.json", PROMPTFOO, _json), "deepeval": ("run.json", DEEPEVAL, _json),
    "mlflow": ("traces.json", MLFLOW, _json), "langsmith": ("feedback.jsonl", LANGSMITH, _jsonl),
    "phoenix": ("annotations.csv", PHOENIX, _csv), "autoj": ("pairs.jsonl", AUTOJ, _jsonl),
    "mushroom": ("mushroom.jsonl", MUSHROOM, _jsonl),
}

HOSTILE = st.one_of(
    st.none(), st.booleans(), st.sampled_from([0, -1, 1e308, -1e308, 1e30, 10**30, -(10**19), 2**63, 1e-320]),
    st.sampled_from([float("nan"), float("inf"), float("-inf")]), st.just(BIG), st.integers(), st.floats(),
    st.text(max_size=20), st.sampled_from(["\ud800", "a\udfffb", "humans", "truth", " ", "x" * 200_001, "y" * 1001,
                                           "A", "B", "tie", "model_a", "C", "I", "yes", "error", "UNCHANGED"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just("<missing>"),
)


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``doc`` (the document itself excluded) where a value can be replaced or removed."""
    out: list[tuple[Any, ...]] = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += [(*at, k), *_paths(v, (*at, k))]
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += [(*at, i), *_paths(v, (*at, i))]
    return out


def _mutate(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    if value == "<missing>":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


@st.composite
def hostile_file(draw: st.DrawFn, fmt: str) -> bytes:
    _, doc, write = FILES[fmt]
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        if not paths:
            break
        doc = _mutate(doc, draw(st.sampled_from(paths)), draw(HOSTILE))
    return write(doc)


def _run(fmt: str, content: bytes) -> tuple[int, str, bool]:
    name = FILES[fmt][0]
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / name
        f.write_bytes(content)
        ws = Path(d) / "ws"
        err, out = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main(["import", str(f), "--from", fmt.removesuffix("-eval"), "-w", str(ws)])
        made = ws.exists()
        shutil.rmtree(ws, ignore_errors=True)
        return rc, err.getvalue().replace(str(f), "FILE"), made


@pytest.mark.parametrize("fmt", FILES)
def test_the_valid_file_of_each_format_imports(fmt):
    rc, err, made = _run(fmt, FILES[fmt][2](FILES[fmt][1]))
    assert rc == 0 and made, err


@pytest.mark.parametrize("fmt", FILES)
def test_a_hostile_file_is_imported_or_refused_in_lines_naming_it(fmt):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 150,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(hostile_file(fmt))
    def check(content: bytes) -> None:
        rc, err, made = _run(fmt, content)
        assert rc in (0, 2), err
        assert "Traceback" not in err and "unexpected error" not in err, err
        if rc == 2:
            lines = err.strip().splitlines()
            assert lines and lines[0].startswith("judgecal import: "), err
            assert not made, "a refused file left a workspace"
            if len(lines) == 1:  # the file named (or the workspace, that feedback on earlier runs needs)
                assert "FILE" in lines[0] or "workspace" in lines[0], err
            else:  # several problems: a count, then one line each, every one naming the file
                assert "problem(s), nothing imported" in lines[0], err
                assert all(x.startswith("  FILE") or x.startswith("  ... and ") for x in lines[1:]), err

    check()
