"""A catalogue of bad inputs: item files, verdict files, configuration files, flags and names.

Every case runs the real entry point (``judgecal.cli.main``) on a copy of one small workspace and asserts
its exact outcome: refused at once with one line on stderr that names the input and the field (exit 2,
nothing on stdout, no traceback) and nothing half-written (every table and every file of the workspace as
it was); or, for the valid-but-degenerate cases, accepted. The accepted cases at the end check what was
stored and shown.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from judgecal.cli import main
from judgecal.data.store import Workspace

REPO = Path(__file__).resolve().parents[1]
ITEMS, VERDICTS = REPO / "data" / "items.jsonl", REPO / "data" / "verdicts.jsonl"
POINTWISE = [{"id": f"pw-{i}", "prompt": f"Rate answer {i}", "response": "Some answer text.",
              "human_labels": {"r1": 1 + i % 10, "r2": 1 + (i + 1) % 10}} for i in range(6)]
OSC_LINK = "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07"
CLEAR = "\x1b[2J\x1b[H"


@dataclass
class Case:
    """``argv`` with ``{dir}`` (the test's folder) and ``{ws}`` (the workspace) filled in; ``files``
    written into the test's folder, ``ws_files`` into the workspace; ``expect``: the fragments of the
    one error line (each filled in like argv)."""

    id: str
    argv: list[str]
    expect: tuple[str, ...]
    files: dict[str, Any] = field(default_factory=dict)
    ws_files: dict[str, Any] = field(default_factory=dict)


def _jsonl(*records: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


# -- item files ------------------------------------------------------------------------------------------

ITEM = {"id": "n1", "prompt": "p", "response_a": "a", "response_b": "b"}
PW_ITEM = {"id": "n1", "prompt": "p", "response": "abc"}


def _item(case_id: str, record: Any, *expect: str, task: str = "pairwise", line: int = 1) -> Case:
    argv = ["import", "{dir}/n.jsonl", "-w", "{ws}"] + (["--task", task] if task != "pairwise" else [])
    return Case(f"item-{case_id}", argv, ("{dir}/n.jsonl:" + str(line) + ": ", *expect, "(nothing imported)"),
                files={"n.jsonl": _jsonl(record) if not isinstance(record, bytes | list) else
                       (record if isinstance(record, bytes) else _jsonl(*record))})


def _without(d: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != key}


ITEM_CASES = [
    _item("no-id", _without(ITEM, "id"), "id: missing required field"),
    _item("id-true", {**ITEM, "id": True}, "id: must be a non-empty string or an integer"),
    _item("id-float", {**ITEM, "id": 1.5}, "id: must be a non-empty string or an integer"),
    _item("id-list", {**ITEM, "id": ["x"]}, "id: must be a non-empty string or an integer"),
    _item("id-object", {**ITEM, "id": {"x": 1}}, "id: must be a non-empty string or an integer"),
    _item("id-empty", {**ITEM, "id": ""}, "id: must be a non-empty string or an integer"),
    _item("id-blank", {**ITEM, "id": "   "}, "id: must be a non-empty string or an integer"),
    _item("id-nan", '{"id": NaN, "prompt": "p", "response_a": "a", "response_b": "b"}',
          "id: must be a non-empty string or an integer"),
    _item("id-too-long", {**ITEM, "id": "i" * 1001}, "id: is 1,001 characters; the limit is 1,000"),
    _item("annotator-too-long", {**ITEM, "human_labels": {"a" * 1001: "A"}}, "human_labels: an annotator's name is "
          "1,001 characters; the limit is 1,000"),
    _item("id-duplicate", [ITEM, ITEM], "id: duplicate id 'n1' (first on line 1)", line=2),
    _item("no-prompt", _without(ITEM, "prompt"), "prompt: missing required field"),
    _item("prompt-number", {**ITEM, "prompt": 5}, "prompt: must be a string, got int"),
    _item("prompt-list", {**ITEM, "prompt": ["p"]}, "prompt: must be a string, got list"),
    _item("prompt-blank", {**ITEM, "prompt": "  \n "}, "prompt: is empty"),
    _item("prompt-too-long", {**ITEM, "prompt": "x" * 200_001}, "prompt: is 200,001 characters; the limit is 200,000"),
    _item("no-response-a", _without(ITEM, "response_a"), "response_a: missing required field"),
    _item("no-response-b", _without(ITEM, "response_b"), "response_b: missing required field"),
    _item("response-a-number", {**ITEM, "response_a": 3}, "response_a: must be a string, got int"),
    _item("response-b-object", {**ITEM, "response_b": {"t": "b"}}, "response_b: must be a string, got dict"),
    _item("response-too-long", {**ITEM, "response_b": "y" * 200_001}, "response_b: is 200,001 characters"),
    _item("model-number", {**ITEM, "model_a": 7}, "model_a: must be a string, got int"),
    _item("family-list", {**ITEM, "family_b": []}, "family_b: must be a string, got list"),
    _item("reference-number", {**ITEM, "reference": 1}, "reference: must be a string, got int"),
    _item("labels-list", {**ITEM, "human_labels": ["A"]}, "human_labels: must be an object of annotator -> label"),
    _item("labels-string", {**ITEM, "human_labels": "A"}, "human_labels: must be an object of annotator -> label"),
    _item("label-unknown", {**ITEM, "human_labels": {"x": "C"}}, "human_labels.x: unknown label 'C'; expected A, B or tie"),
    _item("label-lowercase", {**ITEM, "human_labels": {"x": "a"}}, "human_labels.x: unknown label 'a'"),
    _item("label-number", {**ITEM, "human_labels": {"x": 1}}, "human_labels.x: unknown label 1"),
    _item("label-bool", {**ITEM, "human_labels": {"x": True}}, "human_labels.x: unknown label True"),
    _item("label-list", {**ITEM, "human_labels": {"x": ["A"]}}, "human_labels.x: unknown label ['A']"),
    _item("label-object", {**ITEM, "human_labels": {"x": {"v": "A"}}}, "human_labels.x: unknown label {'v': 'A'}"),
    _item("rationales-list", {**ITEM, "human_labels": {"x": "A"}, "human_rationales": ["why"]},
          "human_rationales: must be an object of annotator -> text"),
    _item("rationale-number", {**ITEM, "human_labels": {"x": "A"}, "human_rationales": {"x": 3}},
          "human_rationales.x: must be text, not int"),
    _item("rationale-without-label", {**ITEM, "human_labels": {"x": "A"}, "human_rationales": {"y": "why"}},
          "human_rationales.y: 'y' has no label on this item in human_labels"),
    _item("metadata-string", {**ITEM, "metadata": "cat"}, "metadata: must be an object"),
    _item("metadata-list", {**ITEM, "metadata": [1]}, "metadata: must be an object"),
    # JSON as Python reads it takes NaN and Infinity; neither is JSON, nor can the store hold one
    _item("metadata-nan", '{"id": "n1", "prompt": "p", "response_a": "a", "response_b": "b", "metadata": {"x": NaN}}',
          "metadata.x: must be a finite number, got nan"),
    _item("metadata-infinite", '{"id": "n1", "prompt": "p", "response_a": "a", "response_b": "b", "metadata": '
          '{"x": [1, 1e400]}}', "metadata.x[1]: must be a finite number, got inf"),
    _item("unknown-field", {**ITEM, "respones_a": "a"}, "respones_a: unknown field for a pairwise item"),
    _item("record-list", "[1, 2]", "a record must be an object, got list"),
    _item("record-number", "5", "a record must be an object, got int"),
    _item("record-string", '"text"', "a record must be an object, got str"),
    _item("record-null", "null", "a record must be an object, got NoneType"),
    _item("bad-json", '{"id": "n1", "prompt": ', "bad JSON: Expecting value at column"),
    _item("bad-json-trailing", json.dumps(ITEM) + " x", "bad JSON: Extra data at column"),
    _item("bad-json-single-quotes", "{'id': 'n1'}", "bad JSON: Expecting property name"),
    _item("huge-integer", '{"id": 1' + "0" * 5000 + ', "prompt": "p", "response_a": "a", "response_b": "b"}',
          "bad JSON: Exceeds the limit (4300 digits) for integer string conversion"),
    _item("deep-json", '{"id": "n1", "metadata": ' + "[" * 5000 + "]" * 5000 + "}", "bad JSON: nested more than 64"),
    _item("deep-metadata", {**ITEM, "metadata": {"a": json.loads("[" * 80 + "]" * 80)}}, "nested more than 64 levels"),
    _item("invalid-utf8", b'{"id": "n1", "prompt": "\xff"}\n', "invalid UTF-8 at byte"),
    _item("latin1", '{"id": "n1", "prompt": "caf\u00e9", "response_a": "a", "response_b": "b"}'.encode("latin-1") + b"\n",
          "invalid UTF-8 at byte"),
    _item("lone-surrogate", '{"id": "n1", "prompt": "\\udc80", "response_a": "a", "response_b": "b"}',
          "prompt: holds a lone surrogate"),
    _item("surrogate-annotator", '{"id": "n1", "prompt": "p", "response_a": "a", "response_b": "b", '
          '"human_labels": {"\\ud800": "A"}}', "human_labels: holds a lone surrogate"),
    _item("looks-pointwise", PW_ITEM, "response: a pointwise item's field", "--task pointwise"),
    _item("pw-looks-pairwise", ITEM, "response_a: a pairwise item's field", "--task pairwise", task="pointwise"),
    _item("pw-no-response", _without(PW_ITEM, "response"), "response: missing required field", task="pointwise"),
    _item("pw-response-number", {**PW_ITEM, "response": 4}, "response: must be a string, got int", task="pointwise"),
    _item("pw-score-11", {**PW_ITEM, "human_labels": {"r": 11}}, "human_labels.r: unknown label 11; expected an "
          "integer 1-10", task="pointwise"),
    _item("pw-score-0", {**PW_ITEM, "human_labels": {"r": 0}}, "human_labels.r: unknown label 0", task="pointwise"),
    _item("pw-score-negative", {**PW_ITEM, "human_labels": {"r": -3}}, "human_labels.r: unknown label -3",
          task="pointwise"),
    _item("pw-score-1e300", {**PW_ITEM, "human_labels": {"r": 1e300}}, "human_labels.r: unknown label 1000000000",
          "...; expected an integer 1-10", task="pointwise"),
    _item("pw-score-half", {**PW_ITEM, "human_labels": {"r": 7.5}}, "human_labels.r: unknown label 7.5",
          task="pointwise"),
    _item("pw-score-word", {**PW_ITEM, "human_labels": {"r": "seven"}}, "human_labels.r: unknown label 'seven'",
          task="pointwise"),
    _item("pw-score-nan", {**PW_ITEM, "human_labels": {"r": "NaN"}}, "human_labels.r: unknown label 'NaN'",
          task="pointwise"),
    _item("pw-score-list", {**PW_ITEM, "human_labels": {"r": [7]}}, "human_labels.r: unknown label [7]",
          task="pointwise"),
    _item("pw-unknown-field", {**PW_ITEM, "response_a": "x"}, "response_a: unknown field for a pointwise item",
          task="pointwise"),
    _item("span-inverted", {**PW_ITEM, "human_spans": {"r": [[2, 1]]}}, "human_spans.r[0]: [2, 1] is not a span of "
          "the 3-character text", task="pointwise"),
    _item("span-past-end", {**PW_ITEM, "human_spans": {"r": [[0, 4]]}}, "human_spans.r[0]: [0, 4] is not a span",
          task="pointwise"),
    _item("span-huge", {**PW_ITEM, "human_spans": {"r": [[0, 10**26]]}}, "human_spans.r[0]: [0, "
          "100000000000000000000000000] is not a span", task="pointwise"),
    _item("span-float", {**PW_ITEM, "human_spans": {"r": [[0, 1e300]]}}, "human_spans.r[0]: start and end must be "
          "integers", task="pointwise"),
    _item("spans-list", {**PW_ITEM, "human_spans": [[0, 1]]}, "human_spans: must be an object of rater", task="pointwise"),
    _item("spans-string", {**PW_ITEM, "human_spans": {"r": "0-1"}}, "human_spans.r: must be a list of [start, end]",
          task="pointwise"),
]


def _file_case(case_id: str, name: str, content: Any, *expect: str, argv_extra: tuple[str, ...] = ()) -> Case:
    return Case(f"file-{case_id}", ["import", "{dir}/" + name, "-w", "{ws}", *argv_extra], expect,
                files={name: content} if content is not None else {})


FILE_CASES = [
    _file_case("empty", "e.jsonl", "", "{dir}/e.jsonl: no records (nothing imported)"),
    _file_case("blank-lines", "e.jsonl", "\n  \n\n", "{dir}/e.jsonl: no records"),
    _file_case("unknown-suffix", "e.txt", _jsonl(ITEM), "{dir}/e.txt: ", ".jsonl, .csv or .parquet", "(nothing imported)"),
    _file_case("missing", "absent.jsonl", None, "{dir}/absent.jsonl: no such file, and not a dataset name"),
    _file_case("folder", "folder.jsonl", "<dir>", "{dir}/folder.jsonl: is a folder, not a file"),
    _file_case("dev-zero-link", "zero.jsonl", "<link:/dev/zero>", "{dir}/zero.jsonl: is not a regular file (a link "
               "to /dev/zero)", "a device, pipe or socket is not read"),
    _file_case("dev-null-link", "null.csv", "<link:/dev/null>", "{dir}/null.csv: is not a regular file (a link to /dev/null)"),
    _file_case("fifo", "pipe.jsonl", "<fifo>", "{dir}/pipe.jsonl: is not a regular file"),
    _file_case("dangling-link", "gone.jsonl", "<link:/nonexistent/x.jsonl>", "{dir}/gone.jsonl: no such file"),
    _file_case("parquet-garbage", "g.parquet", b"not parquet at all", "{dir}/g.parquet: cannot read as parquet"),
    _file_case("csv-empty-prompt", "c.csv", "id,prompt,response_a,response_b\nc1,,a,b\n", "{dir}/c.csv:2: prompt: is empty"),
    _file_case("csv-empty-id", "c.csv", "id,prompt,response_a,response_b\n,p,a,b\n",
               "{dir}/c.csv:2: id: must be a non-empty string or an integer"),
    _file_case("csv-missing-column", "c.csv", "id,prompt,response_a\nc1,p,a\n",
               "{dir}/c.csv:2: response_b: missing required field"),
    _file_case("csv-duplicate-column", "c.csv", "id,prompt,prompt,response_a,response_b\nc1,p,q,a,b\n",
               "{dir}/c.csv:1: prompt: duplicate column"),
    _file_case("csv-extra-field", "c.csv", "id,prompt,response_a,response_b\nc1,p,a,b,x\n",
               "{dir}/c.csv:2: 5 fields, but the header names 4"),
    _file_case("csv-unclosed-quote", "c.csv", 'id,prompt,response_a,response_b\nc1,"p,a,b\n',
               "{dir}/c.csv:2: bad CSV: a quoted field is not closed by the end of the file"),
    _file_case("csv-invalid-utf8", "c.csv", b"id,prompt,response_a,response_b\nc1,\xff,a,b\n",
               "{dir}/c.csv:2: invalid UTF-8 at byte"),
    _file_case("csv-labels-not-json", "c.csv", "id,prompt,response_a,response_b,human_labels\nc1,p,a,b,{oops\n",
               "{dir}/c.csv:2: human_labels: must be an object of annotator -> label"),
    _file_case("csv-bad-label", "c.csv", 'id,prompt,response_a,response_b,human_labels\nc1,p,a,b,"{""x"": ""Z""}"\n',
               "{dir}/c.csv:2: human_labels.x: unknown label 'Z'"),
    _file_case("csv-unknown-column", "c.csv", "id,prompt,response_a,response_b,colour\nc1,p,a,b,red\n",
               "{dir}/c.csv:2: colour: unknown field for a pairwise item"),
    _file_case("conflicting-content", "x.jsonl", _jsonl({"id": "ex-01", "prompt": "another prompt", "response_a": "a",
                                                        "response_b": "b"}),
               "{dir}/x.jsonl:1: id 'ex-01' is already in the workspace with a different prompt"),
    _file_case("replace-on-items", "x.jsonl", _jsonl(ITEM), "--replace applies to --as judgments and to --from formats",
               argv_extra=("--replace",)),
]

# -- verdict files (import --as judgments) -----------------------------------------------------------

VERDICT = {"item_id": "ex-01", "judge": "j/one", "verdict": "A"}
PW_VERDICT = {"item_id": "pw-0", "judge": "j/one", "score": 7}


def _verdict(case_id: str, record: Any, *expect: str, line: int = 1) -> Case:
    return Case(f"verdict-{case_id}", ["import", "{dir}/v.jsonl", "--as", "judgments", "-w", "{ws}"],
                ("{dir}/v.jsonl:" + str(line) + ": ", *expect, "(nothing imported)"),
                files={"v.jsonl": _jsonl(*record) if isinstance(record, list) else _jsonl(record)})


VERDICT_CASES = [
    _verdict("no-item", _without(VERDICT, "item_id"), "item_id: missing required field"),
    _verdict("unknown-item", {**VERDICT, "item_id": "nope"}, "item_id: unknown item 'nope'; import the items first"),
    _verdict("item-bool", {**VERDICT, "item_id": False}, "item_id: must be a non-empty string or an integer"),
    _verdict("no-judge", _without(VERDICT, "judge"), "judge: missing required field"),
    _verdict("judge-empty", {**VERDICT, "judge": " "}, "judge: is empty"),
    _verdict("judge-number", {**VERDICT, "judge": 5}, "judge: must be a string, got int"),
    _verdict("judge-too-long", {**VERDICT, "judge": "j" * 201}, "judge: is 201 characters; the limit is 200"),
    _verdict("judge-humans", {**VERDICT, "judge": "humans"}, "judge: 'humans' is a reserved name"),
    _verdict("judge-Humans", {**VERDICT, "judge": "Humans"}, "judge: 'Humans' is a reserved name"),
    _verdict("judge-humans-padded", {**VERDICT, "judge": " humans "}, "judge: ' humans ' is a reserved name"),
    _verdict("judge-chance", {**VERDICT, "judge": "chance"}, "judge: 'chance' is a reserved name"),
    _verdict("judge-consensus", {**VERDICT, "judge": "consensus"}, "judge: 'consensus' is a reserved name"),
    _verdict("verdict-unknown", {**VERDICT, "verdict": "C"}, "verdict: unknown verdict 'C'; expected A, B, tie or invalid"),
    _verdict("verdict-number", {**VERDICT, "verdict": 1}, "verdict: unknown verdict 1"),
    _verdict("verdict-missing", _without(VERDICT, "verdict"), "verdict: missing required field (A, B, tie or invalid)"),
    _verdict("score-on-pairwise", {**VERDICT, "score": 3}, "score: a pairwise item takes a verdict"),
    _verdict("order-unknown", {**VERDICT, "order": "XY"}, "order: unknown order 'XY'; expected AB or BA"),
    _verdict("order-lowercase", {**VERDICT, "order": "ba"}, "order: unknown order 'ba'"),
    _verdict("sample-negative", {**VERDICT, "sample": -1}, "sample: must be >= 0, got -1"),
    _verdict("sample-fraction", {**VERDICT, "sample": 1.5}, "sample: must be a whole number, got 1.5"),
    _verdict("sample-1e30", {**VERDICT, "sample": 10**30}, "sample: 1e+30 is out of range; a sample index is at most 1e+06"),
    _verdict("sample-400-digits", '{"item_id": "ex-01", "judge": "j/one", "verdict": "A", "sample": 1' + "0" * 400 + "}",
             "sample: a whole number of 401 digits is out of range"),
    _verdict("sample-word", {**VERDICT, "sample": "first"}, "sample: must be a number, got 'first'"),
    _verdict("sample-bool", {**VERDICT, "sample": True}, "sample: must be a number, got bool"),
    _verdict("sample-over-limit", {**VERDICT, "sample": 1_000_001}, "sample: 1e+06 is out of range"),
    _verdict("prompt-tokens-1e30", {**VERDICT, "prompt_tokens": 1e30}, "prompt_tokens: 1e+30 is out of range; a token count "
             "is at most 1e+12"),
    _verdict("prompt-tokens-negative", {**VERDICT, "prompt_tokens": -1}, "prompt_tokens: must be >= 0, got -1"),
    _verdict("prompt-tokens-fraction", {**VERDICT, "prompt_tokens": 2.5}, "prompt_tokens: must be a whole number, got 2.5"),
    _verdict("completion-tokens-huge", {**VERDICT, "completion_tokens": 10**13}, "completion_tokens: 1e+13 is out of range"),
    _verdict("completion-tokens-word", {**VERDICT, "completion_tokens": "many"}, "completion_tokens: must be a number, "
             "got 'many'"),
    _verdict("latency-negative", {**VERDICT, "latency_s": -0.5}, "latency_s: must be >= 0, got -0.5"),
    _verdict("latency-infinite", '{"item_id": "ex-01", "judge": "j/one", "verdict": "A", "latency_s": Infinity}',
             "latency_s: must be a finite number, got inf"),
    _verdict("latency-nan", '{"item_id": "ex-01", "judge": "j/one", "verdict": "A", "latency_s": NaN}',
             "latency_s: must be a finite number, got nan"),
    _verdict("latency-1e30", {**VERDICT, "latency_s": 1e30}, "latency_s: 1e+30 is out of range; a latency (seconds)"),
    _verdict("cost-negative", {**VERDICT, "cost_usd": -0.01}, "cost_usd: must be >= 0, got -0.01"),
    _verdict("cost-1e30", {**VERDICT, "cost_usd": 1e30}, "cost_usd: 1e+30 is out of range; a cost (USD) is at most 1e+09"),
    _verdict("p-a-above-one", {**VERDICT, "p_a": 1.5}, "p_a: must be a probability in [0, 1], got 1.5"),
    _verdict("p-b-negative", {**VERDICT, "p_b": -0.1}, "p_b: must be a probability in [0, 1], got -0.1"),
    _verdict("p-tie-word", {**VERDICT, "p_tie": "high"}, "p_tie: must be a number, got 'high'"),
    _verdict("p-sum-above-one", {**VERDICT, "p_a": 0.7, "p_b": 0.6}, "p_a: p_a + p_b + p_tie is 1.3, more than 1"),
    _verdict("raw-number", {**VERDICT, "raw": 5}, "raw: must be a string, got int"),
    _verdict("raw-too-long", {**VERDICT, "raw": "r" * 200_001}, "raw: is 200,001 characters"),
    _verdict("mutation-empty", {**VERDICT, "mutation": ""}, "mutation: is empty"),
    _verdict("mutation-number", {**VERDICT, "mutation": 3}, "mutation: must be a string, got int"),
    _verdict("unknown-field", {**VERDICT, "verdikt": "A"}, "verdikt: unknown field for a judgment"),
    _verdict("duplicate", [VERDICT, VERDICT], "item_id: duplicate judgment of 'j/one' on item 'ex-01'", line=2),
    _verdict("record-list", "[]", "a record must be an object, got list"),
    _verdict("pw-score-1e300", {**PW_VERDICT, "score": 1e300}, "score: 1e+300 is out of range; a score is a number "
             "from -1e+06 to 1e+06"),
    _verdict("pw-score-minus-1e300", {**PW_VERDICT, "score": -1e300}, "score: -1e+300 is out of range"),
    _verdict("pw-score-1e7", {**PW_VERDICT, "score": 1e7}, "score: 1e+07 is out of range"),
    _verdict("pw-score-word", {**PW_VERDICT, "score": "good"}, "score: must be a number, got 'good'"),
    _verdict("pw-score-nan", '{"item_id": "pw-0", "judge": "j/one", "score": NaN}', "score: must be a finite number"),
    _verdict("pw-score-text-inf", {**PW_VERDICT, "score": "inf"}, "score: must be a finite number, got inf"),
    _verdict("pw-verdict-A", {**PW_VERDICT, "verdict": "A", "score": None}, "verdict: a pointwise item takes a score"),
    _verdict("pw-invalid-with-score", {**PW_VERDICT, "verdict": "invalid"}, "score: an invalid judgment has no score"),
    _verdict("pw-no-score", _without(PW_VERDICT, "score"), "score: missing required field"),
    _verdict("pw-order-BA", {**PW_VERDICT, "order": "BA"}, "order: a pointwise item is shown in one order: AB"),
    _verdict("pw-probabilities", {**PW_VERDICT, "p_a": 0.5}, "p_a: probabilities of A/B/tie apply to pairwise items only"),
    _verdict("spans-on-pairwise", {**VERDICT, "spans": [[0, 1]]}, "spans: spans apply to pointwise items"),
    _verdict("spans-past-end", {**PW_VERDICT, "spans": [[0, 500]]}, "spans[0]: [0, 500] is not a span"),
    _verdict("changed-stored", {**json.loads(VERDICTS.read_text().splitlines()[0]), "verdict": "B"},
             "verdict: differs from the judgment already stored", "pass --replace to overwrite it"),
]


def _verdict_flag(case_id: str, extra: list[str], *expect: str, files: dict[str, Any] | None = None) -> Case:
    return Case(f"verdict-{case_id}", ["import", "{dir}/v.jsonl", "--as", "judgments", "-w", "{ws}", *extra], expect,
                files={"v.jsonl": _jsonl(VERDICT), **(files or {})})


VERDICT_CASES += [
    _verdict_flag("name-flag", ["--name", "x"], "--name applies to items"),
    _verdict_flag("task-flag", ["--task", "pointwise"], "--task applies to items"),
    _verdict_flag("spec-humans", ["--spec", "{dir}/s.yaml"], "{dir}/s.yaml: field 'name' 'humans' is a reserved name",
                  files={"s.yaml": "name: humans\nbackend: import\nmodel: m\n"}),
    _verdict_flag("spec-other-judge", ["--spec", "{dir}/s.yaml"], "{dir}/v.jsonl:1: judge: 'j/one' is not the judge of "
                  "the spec", files={"s.yaml": "name: someone/else\nbackend: import\nmodel: m\n"}),
    Case("verdict-existing-judge-other-spec", ["import", "{dir}/v.jsonl", "--as", "judgments", "--spec",
                                               str(REPO / "data" / "judge.yaml"), "-w", "{ws}"],
         ("{dir}/v.jsonl:1: judge: 'example/acme-judge' is already in the workspace as another judge (spec ",
          "two specs are two judges: import under another name"),
         files={"v.jsonl": _jsonl({"item_id": "ex-01", "judge": "example/acme-judge", "verdict": "A", "sample": 1})}),
    Case("verdict-dev-zero", ["import", "{dir}/z.jsonl", "--as", "judgments", "-w", "{ws}"],
         ("{dir}/z.jsonl: is not a regular file (a link to /dev/zero)",), files={"z.jsonl": "<link:/dev/zero>"}),
    Case("verdict-missing-file", ["import", "{dir}/absent.jsonl", "--as", "judgments", "-w", "{ws}"],
         ("{dir}/absent.jsonl: no such file",)),
    Case("verdict-folder", ["import", "{dir}/d.jsonl", "--as", "judgments", "-w", "{ws}"],
         ("{dir}/d.jsonl: is a folder, not a file",), files={"d.jsonl": "<dir>"}),
]

# -- configuration files ---------------------------------------------------------------------------------

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))
AUDIT = ["audit", "--n-boot", "40", "-w", "{ws}"]


def _thresholds(case_id: str, text: Any, *expect: str) -> Case:
    return Case(f"thresholds-{case_id}", AUDIT, ("{ws}/thresholds.yaml: ", *expect), ws_files={"thresholds.yaml": text})


THRESHOLD_CASES = [
    _thresholds("alpha-5", "alpha: 5\n", "alpha: 5 is out of range; give a number between 0 and 1 (exclusive)"),
    _thresholds("alpha-0", "alpha: 0\n", "alpha: 0 is out of range"),
    _thresholds("alpha-1", "alpha: 1\n", "alpha: 1 is out of range"),
    _thresholds("alpha-negative", "alpha: -0.05\n", "alpha: -0.05 is out of range"),
    _thresholds("alpha-nan", "alpha: .nan\n", "alpha: must be a finite number, got nan"),
    _thresholds("alpha-inf", "alpha: .inf\n", "alpha: must be a finite number, got inf"),
    _thresholds("alpha-word", "alpha: low\n", "alpha: must be a number, got 'low'"),
    _thresholds("alpha-bool", "alpha: true\n", "alpha: must be a number, got True"),
    _thresholds("alpha-null", "alpha: null\n", "alpha: must be a number, got None"),
    _thresholds("alpha-quoted", "alpha: '0.05'\n", "alpha: must be a number, got '0.05'"),
    _thresholds("min-items-negative", "min_items: -10\n", "min_items: -10 is out of range; give a number between 1 and 1e+09"),
    _thresholds("min-items-0", "min_items: 0\n", "min_items: 0 is out of range"),
    _thresholds("min-items-fraction", "min_items: 2.5\n", "min_items: must be a whole number, got 2.5"),
    _thresholds("min-items-inf", "min_items: .inf\n", "min_items: must be a finite number, got inf"),
    _thresholds("min-items-huge", "min_items: 1.0e+30\n", "min_items: 1e+30 is out of range"),
    _thresholds("kappa-above-1", "kappa: {aligned_at_least: 1.5}\n", "kappa.aligned_at_least: 1.5 is out of range; give a "
                "number between -1 and 1"),
    _thresholds("kappa-below-minus-1", "kappa: {not_aligned_below: -2}\n", "kappa.not_aligned_below: -2 is out of range"),
    _thresholds("kappa-nan", "kappa: {not_aligned_below: .NaN}\n", "kappa.not_aligned_below: must be a finite number, got nan"),
    _thresholds("kappa-inverted", "kappa: {not_aligned_below: 0.7, aligned_at_least: 0.3}\n",
                "kappa.not_aligned_below: 0.7 is above kappa.aligned_at_least 0.3; the bounds are inverted"),
    _thresholds("kappa-inverted-by-default", "kappa: {not_aligned_below: 0.65}\n",
                "kappa.not_aligned_below: 0.65 is above kappa.aligned_at_least 0.6"),
    _thresholds("kappa-scalar", "kappa: 0.5\n", "kappa: must be a mapping, got 0.5"),
    _thresholds("kappa-null", "kappa: null\n", "kappa: must be a mapping, got None"),
    _thresholds("kappa-list", "kappa: [0.2, 0.6]\n", "kappa: must be a mapping, got [0.2, 0.6]"),
    _thresholds("kappa-unknown-key", "kappa: {aligned: 0.5}\n", "unknown key 'kappa.aligned'; known: aligned_at_least, "
                "not_aligned_below"),
    _thresholds("kappa-gap-negative", "kappa_gap: {caution_above: -0.1}\n", "kappa_gap.caution_above: -0.1 is out of range"),
    _thresholds("kappa-gap-above-2", "kappa_gap: {not_aligned_above: 3}\n", "kappa_gap.not_aligned_above: 3 is out of range"),
    _thresholds("kappa-gap-inverted", "kappa_gap: {caution_above: 0.4, not_aligned_above: 0.2}\n",
                "kappa_gap.caution_above: 0.4 is above kappa_gap.not_aligned_above 0.2"),
    _thresholds("accuracy-gap-above-1", "accuracy_gap: {caution_above: 1.5}\n", "accuracy_gap.caution_above: 1.5 is out of range"),
    _thresholds("accuracy-gap-inverted", "accuracy_gap: {caution_above: 0.3, not_aligned_above: 0.1}\n",
                "accuracy_gap.caution_above: 0.3 is above accuracy_gap.not_aligned_above 0.1"),
    _thresholds("invalid-rate-negative", "invalid_rate: {caution_above: -0.01}\n", "invalid_rate.caution_above: -0.01 is out"),
    _thresholds("invalid-rate-inverted", "invalid_rate: {caution_above: 0.5}\n",
                "invalid_rate.caution_above: 0.5 is above invalid_rate.not_aligned_above 0.2"),
    _thresholds("position-0.3", "position: {not_aligned_beyond: 0.3}\n", "position.not_aligned_beyond: 0.3 is out of range; "
                "give a number between 0.5 and 1"),
    _thresholds("position-1.2", "position: {not_aligned_beyond: 1.2}\n", "position.not_aligned_beyond: 1.2 is out of range"),
    _thresholds("span-ratio-above-1", "span_f1_ratio: {aligned_at_least: 1.5}\n", "span_f1_ratio.aligned_at_least: 1.5 is out"),
    _thresholds("span-ratio-inverted", "span_f1_ratio: {not_aligned_below: 0.9}\n",
                "span_f1_ratio.not_aligned_below: 0.9 is above span_f1_ratio.aligned_at_least 0.8"),
    _thresholds("business-loss-scalar", "business_loss: 5\n", "business_loss: must be a mapping"),
    _thresholds("business-loss-negative", "business_loss: {tolerated_error_increase: -0.1}\n",
                "business_loss.tolerated_error_increase: must be a positive finite number, got -0.1"),
    _thresholds("business-loss-nan", "business_loss: {tolerated_error_increase: .nan}\n",
                "business_loss.tolerated_error_increase: must be a positive finite number, got nan"),
    _thresholds("business-loss-above-1", "business_loss: {tolerated_error_increase: 2}\n",
                "business_loss.tolerated_error_increase: 2 is out of range; an accuracy gap is at most 1"),
    _thresholds("business-loss-incomplete", "business_loss: {budget: 10}\n", "business_loss needs tolerated_error_increase"),
    _thresholds("business-loss-unknown", "business_loss: {budjet: 10}\n", "business_loss: unknown key 'budjet'"),
    _thresholds("business-loss-zero-cost", "business_loss: {budget: 10, requests: 5, cost_per_error: 0}\n",
                "business_loss.cost_per_error: must be a positive finite number, got 0"),
    _thresholds("unknown-key", "kapa: {not_aligned_below: 0.1}\n", "unknown key 'kapa'; known: accuracy_gap, alpha"),
    _thresholds("version-2", "version: 2\n", "version: version 2, this judgecal reads 1"),
    _thresholds("version-text", "version: '1'\n", "version: version '1', this judgecal reads 1"),
    _thresholds("version-true", "version: true\n", "version: version True, this judgecal reads 1"),
    _thresholds("list", "- 1\n- 2\n", "thresholds are a mapping"),
    _thresholds("scalar", "0.05\n", "thresholds are a mapping"),
    _thresholds("duplicate-key", "alpha: 0.05\nmin_items: 10\nalpha: 0.01\n", "alpha: duplicate key (line 1 and line 3)"),
    _thresholds("duplicate-nested", "kappa:\n  aligned_at_least: 0.6\n  aligned_at_least: 0.7\n",
                "aligned_at_least: duplicate key (line 2 and line 3)"),
    _thresholds("alias-bomb", BOMB, "expands to more than 100,000 values through its aliases"),
    _thresholds("latin1", "# seuil de d\u00e9cision\nalpha: 0.05\n".encode("latin-1"),
                "line 1: not UTF-8 text (byte 0xe9 at offset 12); save the file as UTF-8"),
    _thresholds("bad-yaml", "kappa: [0.2,\n", "not valid YAML"),
    _thresholds("bad-yaml-indent", "kappa:\n  a: 1\n b: 2\n", "not valid YAML (line 3"),
    _thresholds("too-large", "# " + "x" * 1_000_001 + "\n", "larger than 1,000,000 bytes"),
    _thresholds("folder", "<dir>", "not a file"),
]


def _families(case_id: str, text: Any, *expect: str) -> Case:
    return Case(f"families-{case_id}", AUDIT, ("{ws}/families.yaml: ", *expect), ws_files={"families.yaml": text})


FAMILY_CASES = [
    _families("latin1", "acme-*: acm\u00e9\n".encode("latin-1"), "line 1: not UTF-8 text (byte 0xe9 at offset 11)"),
    _families("utf16", "acme-*: acme\n".encode("utf-16"), "not UTF-8 text (byte 0xff at offset 0)"),
    _families("list", "- acme\n", "expected a mapping of model-name patterns to family names"),
    _families("scalar", "acme\n", "expected a mapping"),
    _families("family-number", "acme-*: 5\n", "acme-*: the family must be a non-empty string, got 5"),
    _families("family-empty", "acme-*: ''\n", "acme-*: the family must be a non-empty string, got ''"),
    _families("family-null", "acme-*:\n", "acme-*: the family must be a non-empty string, got None"),
    _families("family-list", "acme-*: [a, b]\n", "acme-*: the family must be a non-empty string, got ['a', 'b']"),
    _families("pattern-number", "7: acme\n", "7: a pattern must be a non-empty string (quote it)"),
    _families("pattern-empty", "'': acme\n", "'': a pattern must be a non-empty string"),
    _families("pattern-too-long", "p" * 300 + ": acme\n", "a pattern is at most 200 characters"),
    _families("duplicate", "acme-*: acme\nacme-*: other\n", "acme-*: duplicate key (line 1 and line 2)"),
    _families("alias-bomb", "pattern: x\n" + BOMB, "expands to more than 100,000 values"),
    _families("bad-yaml", "acme-*: [acme\n", "not valid YAML"),
]


def _spec(case_id: str, text: Any, *expect: str) -> Case:
    return Case(f"spec-{case_id}", ["judge", "--judge", "{dir}/s.yaml", "--quiet", "-w", "{ws}"],
                ("{dir}/s.yaml: ", *expect), files={"s.yaml": text})


LOCAL = "backend: local\nmodel: smollm2\n"
OPENAI = "backend: openai\nmodel: gpt-x\n"
SPEC_CASES = [
    _spec("list", "- local\n", "a judge spec is a mapping with name, description, backend"),
    _spec("unknown-field", LOCAL + "temperature: 0\n", "field 'temperature' is unknown; a spec has name, description"),
    _spec("no-backend", "model: smollm2\n", "field 'backend' is required: a non-empty string without '/'"),
    _spec("backend-slash", "backend: local/x\nmodel: m\n", "field 'backend' is required: a non-empty string without '/'"),
    _spec("model-number", "backend: local\nmodel: 5\n", "field 'model' is required: a non-empty string"),
    _spec("name-empty", LOCAL + "name: ''\n", "field 'name' must be a non-empty string"),
    _spec("name-humans", LOCAL + "name: humans\n", "field 'name' 'humans' is a reserved name"),
    _spec("name-chance", LOCAL + "name: Chance\n", "field 'name' 'Chance' is a reserved name"),
    _spec("name-too-long", LOCAL + "name: " + "n" * 201 + "\n", "field 'name' is 201 characters; the limit is 200"),
    _spec("description-number", LOCAL + "description: 5\n", "field 'description' must be a non-empty string"),
    _spec("parameters-list", LOCAL + "parameters: [1]\n", "field 'parameters' must be a mapping of temperature"),
    _spec("parameters-unknown", LOCAL + "parameters: {top_p: 0.9}\n", "field 'parameters.top_p' is unknown"),
    _spec("temperature-nan", LOCAL + "parameters: {temperature: .nan}\n", "field 'parameters.temperature' must be a number "
          "from 0 to 100, got nan"),
    _spec("temperature-inf", LOCAL + "parameters: {temperature: .inf}\n", "field 'parameters.temperature' must be a number "
          "from 0 to 100, got inf"),
    _spec("temperature-negative", LOCAL + "parameters: {temperature: -1}\n", "field 'parameters.temperature' must be a "
          "number from 0 to 100, got -1"),
    _spec("temperature-101", LOCAL + "parameters: {temperature: 101}\n", "got 101"),
    _spec("temperature-word", LOCAL + "parameters: {temperature: hot}\n", "got 'hot'"),
    _spec("temperature-bool", LOCAL + "parameters: {temperature: true}\n", "got True"),
    _spec("max-tokens-0", LOCAL + "parameters: {max_tokens: 0}\n", "field 'parameters.max_tokens' must be an integer from "
          "1 to 1e+06, got 0"),
    _spec("max-tokens-fraction", LOCAL + "parameters: {max_tokens: 1.5}\n", "field 'parameters.max_tokens' must be an "
          "integer"),
    _spec("max-tokens-huge", LOCAL + "parameters: {max_tokens: 10000000}\n", "field 'parameters.max_tokens' must be an "
          "integer from 1 to 1e+06, got 10000000"),
    _spec("top-logprobs-negative", LOCAL + "parameters: {top_logprobs: -1}\n", "field 'parameters.top_logprobs' must be "
          "an integer from 0 to 100, got -1"),
    _spec("top-logprobs-101", LOCAL + "parameters: {top_logprobs: 101}\n", "got 101"),
    _spec("logprobs-word", LOCAL + "parameters: {logprobs: yes please}\n", "field 'parameters.logprobs' must be true or false"),
    _spec("options-list", LOCAL + "options: [a]\n", "field 'options' must be a mapping of backend options"),
    _spec("option-api-key", OPENAI + "options: {api_key: sk-123}\n", "field 'options.api_key' is a secret: keys come from "
          "the environment"),
    _spec("option-apiKey", OPENAI + "options: {apiKey: sk-123}\n", "field 'options.apiKey' is not an option of backend "
          "'openai'; its options are base_url, max_concurrency, timeout_s"),
    _spec("option-unknown-local", LOCAL + "options: {gpu_layers: 10}\n", "field 'options.gpu_layers' is not an option of "
          "backend 'local'; its options are deterministic, n_batch, n_ctx, n_threads, weights, workers"),
    _spec("option-nested", LOCAL + "options: {weights: {q: 8}}\n", "field 'options.weights' must be a string, number or "
          "boolean"),
    _spec("option-nan", OPENAI + "options: {timeout_s: .nan}\n", "field 'options.timeout_s' must be a finite number, got nan"),
    _spec("base-url-userinfo", OPENAI + "options: {base_url: 'http://user:KEY@127.0.0.1:8000/v1'}\n",
          "field 'options.base_url' holds credentials (user:password@)"),
    _spec("base-url-key-only", OPENAI + "options: {base_url: 'https://KEY@api.example.com/v1'}\n",
          "field 'options.base_url' holds credentials"),
    _spec("base-url-query-key", OPENAI + "options: {base_url: 'http://127.0.0.1:8000/v1?api-key=KEY'}\n",
          "field 'options.base_url' holds a credential in its query"),
    _spec("base-url-query-token", OPENAI + "options: {base_url: 'http://127.0.0.1:8000/v1?access_token=KEY'}\n",
          "field 'options.base_url' holds a credential in its query"),
    _spec("base-url-not-url", OPENAI + "options: {base_url: not a url}\n", "field 'options.base_url' 'not a url' is not a "
          "URL"),
    _spec("base-url-ftp", OPENAI + "options: {base_url: 'ftp://example.com'}\n", "is not an http(s) URL with a host"),
    _spec("base-url-no-host", OPENAI + "options: {base_url: 'http:///v1'}\n", "is not an http(s) URL with a host"),
    _spec("base-url-bad-port", OPENAI + "options: {base_url: 'http://127.0.0.1:99999/v1'}\n", "is not a URL (Port out of "
          "range"),
    _spec("rubric-empty", LOCAL + "rubric: ''\n", "field 'rubric' must be a non-empty string"),
    _spec("rubric-unknown", LOCAL + "rubric: nonesuch\n", "field 'rubric': unknown rubric 'nonesuch'"),
    _spec("duplicate-key", LOCAL + "backend: openai\n", "backend: duplicate key (line 1 and line 3)"),
    _spec("alias-bomb", LOCAL + BOMB, "expands to more than 100,000 values"),
    _spec("latin1", ("# r\u00e9glages\n" + LOCAL).encode("latin-1"), "line 1: not UTF-8 text"),
    _spec("bad-yaml", "backend: [local\n", "not valid YAML"),
    Case("spec-missing-file", ["judge", "--judge", "{dir}/absent.yaml", "-w", "{ws}"],
         ("{dir}/absent.yaml: no such judge spec file",)),
    Case("spec-rubric-bomb", ["judge", "--judge", "{dir}/s.yaml", "-w", "{ws}"],
         ("{dir}/s.yaml: field 'rubric': ", "{dir}/r.yaml: expands to more than 100,000 values"),
         files={"s.yaml": LOCAL + "rubric: r.yaml\n", "r.yaml": "name: r\n" + BOMB}),
]

# -- flags -------------------------------------------------------------------------------------------------

JUDGE = ["judge", "--judge", "local/smollm2"]


def _flag(case_id: str, argv: list[str], *expect: str) -> Case:
    command = " ".join(argv[:2]) if argv[0] in ("annotate", "stability") else argv[0]
    return Case(f"flag-{case_id}", [*argv, "-w", "{ws}"], (f"judgecal {command}: ", *expect))


FLAG_CASES = [
    # a panel's spec is read by the shared loader of configuration files
    Case("panel-spec-device", ["panel", "--spec", "/dev/zero", "-w", "{ws}"], ("judgecal panel: /dev/zero: not a file",)),
    Case("panel-spec-duplicate-key", ["panel", "--spec", "{dir}/p.yaml", "-w", "{ws}"],
         ("judgecal panel: {dir}/p.yaml: members: duplicate key (line 2 and line 3)",),
         files={"p.yaml": "panel:\n  members: [a, b, c]\n  members: [d, e, f]\n  rule: majority\n"}),
    Case("panel-spec-huge", ["panel", "--spec", "{dir}/p.yaml", "-w", "{ws}"],
         ("judgecal panel: {dir}/p.yaml: larger than 1,000,000 bytes",),
         files={"p.yaml": "panel:\n  rule: majority\n  members: [" + ", ".join(["judge"] * 300_000) + "]\n"}),
    _flag("samples-0", [*JUDGE, "--samples", "0"], "argument --samples: 0 is not allowed"),
    _flag("samples-negative", [*JUDGE, "--samples", "-1"], "argument --samples: -1 is not allowed"),
    _flag("samples-billion", [*JUDGE, "--samples", "1000000000"], "argument --samples: 1,000,000,000 is more than 1,000"),
    _flag("samples-1001", [*JUDGE, "--samples", "1001"], "argument --samples: 1,001 is more than 1,000"),
    _flag("samples-float", [*JUDGE, "--samples", "1e3"], "argument --samples: '1e3' is not a whole number"),
    _flag("items-0", [*JUDGE, "--items", "0"], "argument --items: 0 is not allowed"),
    _flag("items-huge", [*JUDGE, "--items", "100000000"], "argument --items: 100,000,000 is more than 10,000,000"),
    _flag("items-word", [*JUDGE, "--items", "all"], "argument --items: 'all' is not a whole number"),
    _flag("concurrency-0", [*JUDGE, "--concurrency", "0"], "argument --concurrency: 0 is not allowed"),
    _flag("concurrency-huge", [*JUDGE, "--concurrency", "100000"], "argument --concurrency: 100,000 is more than 4,096"),
    _flag("max-tokens-0", [*JUDGE, "--max-tokens", "0"], "argument --max-tokens: 0 is not allowed"),
    _flag("max-tokens-huge", [*JUDGE, "--max-tokens", "2000000"], "argument --max-tokens: 2,000,000 is more than 1,000,000"),
    _flag("temperature-nan", [*JUDGE, "--temperature", "nan"], "argument --temperature: nan is not allowed"),
    _flag("temperature-inf", [*JUDGE, "--temperature", "inf"], "argument --temperature: inf is not allowed"),
    _flag("temperature-negative", [*JUDGE, "--temperature", "-0.5"], "argument --temperature: -0.5 is not allowed"),
    _flag("temperature-101", [*JUDGE, "--temperature", "101"], "argument --temperature: 101 is not allowed; give a "
          "temperature from 0 to 100"),
    _flag("temperature-word", [*JUDGE, "--temperature", "warm"], "argument --temperature: 'warm' is not a number"),
    _flag("seed-negative", [*JUDGE, "--seed", "-1"], "argument --seed: -1 is not allowed; give 0 or more"),
    _flag("seed-huge", [*JUDGE, "--seed", str(10**30)], "argument --seed: 1000000000000000000000000000000 is too large"),
    _flag("seed-word", [*JUDGE, "--seed", "x"], "argument --seed: 'x' is not a whole number"),
    _flag("sample-seed-negative", [*JUDGE, "--sample-seed", "-5"], "argument --sample-seed: -5 is not allowed"),
    _flag("timeout-0", [*JUDGE, "--timeout", "0"], "argument --timeout: '0': give a positive number of seconds"),
    _flag("timeout-nan", [*JUDGE, "--timeout", "nan"], "argument --timeout: 'nan': give a positive number of seconds"),
    _flag("timeout-inf", [*JUDGE, "--timeout", "inf"], "argument --timeout: 'inf': give a positive number"),
    _flag("timeout-week", [*JUDGE, "--timeout", "604800"], "argument --timeout: '604800': give a positive number of "
          "seconds (at most 86400, a day)"),
    _flag("max-retry-after-negative", [*JUDGE, "--max-retry-after", "-1"], "argument --max-retry-after: '-1'"),
    _flag("orders-repeated", [*JUDGE, "--orders", "BA,BA"], "argument --orders: 'BA,BA': give AB, BA or AB,BA"),
    _flag("orders-empty", [*JUDGE, "--orders", ""], "argument --orders: '': give AB, BA or AB,BA"),
    _flag("mutation-unknown", [*JUDGE, "--mutation", "shout"], "argument --mutation: unknown mutation 'shout'"),
    _flag("base-url-not-url", [*JUDGE, "--base-url", "not a url"], "argument --base-url: 'not a url' is not a URL"),
    _flag("base-url-empty", [*JUDGE, "--base-url", ""], "argument --base-url: must be a URL such as http://127.0.0.1:8000/v1"),
    _flag("base-url-ftp", [*JUDGE, "--base-url", "ftp://h/v1"], "argument --base-url: 'ftp://h/v1' is not an http(s) URL"),
    _flag("base-url-no-scheme", [*JUDGE, "--base-url", "127.0.0.1:8000"], "argument --base-url: '127.0.0.1:8000' is not "
          "an http(s) URL"),
    _flag("base-url-userinfo", [*JUDGE, "--base-url", "http://user:KEY@h/v1"], "argument --base-url: holds credentials"),
    _flag("base-url-query-key", [*JUDGE, "--base-url", "http://h/v1?api-key=KEY"], "argument --base-url: holds a "
          "credential in its query"),
    _flag("base-url-query-sig", [*JUDGE, "--base-url", "https://h/v1?sig=KEY"], "argument --base-url: holds a credential"),
    _flag("base-url-port-0", [*JUDGE, "--base-url", "http://h:0/v1"], "argument --base-url: 'http://h:0/v1': port 0"),
    _flag("base-url-control", [*JUDGE, "--base-url", "http://h/v1\x1b[2J"], "argument --base-url: 'http://h/v1\\x1b[2J' "
          "is not a URL"),
    _flag("base-url-fragment", [*JUDGE, "--base-url", "http://h/v1#x"], "argument --base-url: 'http://h/v1#x': a server "
          "address has no #fragment"),
    _flag("rate-limit-0", [*JUDGE, "--executor", "ray", "--rate-limit", "0"], "argument --rate-limit: 0 is not allowed"),
    _flag("rate-limit-nan", [*JUDGE, "--executor", "ray", "--rate-limit", "nan"], "argument --rate-limit: nan is not "
          "allowed"),
    _flag("rate-limit-inf", [*JUDGE, "--rate-limit", "inf"], "argument --rate-limit: inf is not allowed"),
    _flag("executor-unknown", [*JUDGE, "--executor", "gpu"], "argument --executor: invalid choice: 'gpu'"),
    _flag("export-with-import", [*JUDGE, "--export-batch", "{dir}/m.jsonl", "--import-batch", "{dir}/m.jsonl",
                                 "{dir}/r.jsonl"], "--export-batch and --import-batch cannot apply together"),
    _flag("address-without-ray", [*JUDGE, "--address", "auto"], "--address applies to --executor ray only; nothing was run"),
    _flag("rate-limit-without-ray", [*JUDGE, "--rate-limit", "5"], "--rate-limit applies to --executor ray only"),
    _flag("ray-with-export", [*JUDGE, "--executor", "ray", "--export-batch", "{dir}/m.jsonl"],
          "--executor ray makes no calls with --export-batch or --import-batch"),
    _flag("metric-with-samples", ["judge", "--judge", "metric/key-facts", "--samples", "3"],
          "metric/key-facts: a metric judge calls no model; --samples would be ignored"),
    _flag("judge-missing", ["judge", "--items", "3"], "the following arguments are required: --judge"),
    _flag("judge-no-slash", ["judge", "--judge", "smollm2"], "judge 'smollm2' is neither <backend>/<model>"),
    _flag("judge-unknown-backend", ["judge", "--judge", "nosuch/model"], "unknown backend 'nosuch'"),
    _flag("source-unknown", [*JUDGE, "--source", "nope"], "no items from source 'nope'"),
    _flag("audit-n-boot-0", ["audit", "--n-boot", "0"], "argument --n-boot: 0 is not allowed"),
    # one or two replicates gave intervals that left out their own estimate, and gate called a difference significant
    _flag("audit-n-boot-2", ["audit", "--n-boot", "2"], "argument --n-boot: 2 is too few; give at least 40"),
    _flag("audit-n-boot-39", ["audit", "--n-boot", "39"], "argument --n-boot: 39 is too few; give at least 40"),
    # plan overflowed (1e-160) or divided by zero (1e-170): "unexpected error"
    _flag("plan-halfwidth-1e-160", ["plan", "--target-halfwidth", "1e-160"],
          "argument --target-halfwidth: 1e-160 is too small; give a half-width of at least 1e-05"),
    _flag("plan-halfwidth-1e-170", ["plan", "--target-halfwidth", "1e-170"], "1e-170 is too small"),
    _flag("plan-tau-negative", ["plan", "--strategy", "active", "--tau", "-0.1"],
          "argument --tau: -0.1 is not between 0 and 1"),
    _flag("plan-tau-word", ["plan", "--strategy", "active", "--tau", "half"], "argument --tau: 'half' is not a number"),
    _flag("plan-active-unlabelled", ["plan", "--strategy", "active", "--unlabelled", "10"],
          "--unlabelled applies to --strategy ppi"),
    _flag("push-tau-2", ["annotate", "push", "--strategy", "active", "--tau", "2"], "argument --tau: 2 is not between"),
    _flag("gate-n-boot-1", ["gate", "--baseline", "a/b", "--candidate", "c/d", "--n-boot", "1"],
          "argument --n-boot: 1 is too few; give at least 40"),
    _flag("audit-n-boot-1e12", ["audit", "--n-boot", "1e12"], "argument --n-boot: '1e12' is not a whole number"),
    _flag("audit-n-boot-trillion", ["audit", "--n-boot", "1000000000000"], "argument --n-boot: 1,000,000,000,000 is more "
          "than 100,000, the most bootstrap replicates one run takes"),
    _flag("audit-n-boot-100001", ["audit", "--n-boot", "100001"], "argument --n-boot: 100,001 is more than 100,000"),
    _flag("audit-selective-target-0", ["audit", "--selective-target", "0"], "argument --selective-target: 0 is not "
          "between 0 and 1 (exclusive)"),
    _flag("audit-selective-target-1", ["audit", "--selective-target", "1"], "argument --selective-target: 1 is not between"),
    _flag("audit-selective-target-nan", ["audit", "--selective-target", "nan"], "argument --selective-target: nan is not"),
    _flag("audit-selective-delta-2", ["audit", "--selective-delta", "2"], "argument --selective-delta: 2 is not between"),
    _flag("audit-invalid-as", ["audit", "--invalid-as", "right"], "argument --invalid-as: invalid choice: 'right'"),
    _flag("audit-shards-without-ray", ["audit", "--shards", "4"], "--shards applies to --executor ray only"),
    _flag("audit-address-without-ray", ["audit", "--address", "auto"], "--address applies to --executor ray only"),
    _flag("audit-shard-dir-without-ray", ["audit", "--shard-dir", "{dir}"], "--shard-dir applies to --executor ray only"),
    _flag("audit-shards-0", ["audit", "--executor", "ray", "--shards", "0"], "argument --shards: 0 is not allowed"),
    _flag("audit-shards-huge", ["audit", "--executor", "ray", "--shards", "20000"], "argument --shards: 20,000 is more "
          "than 10,000"),
    _flag("audit-consensus-unknown", ["audit", "--consensus", "nosuch"], "no consensus 'nosuch' in this workspace"),
    _flag("annotators-n-boot-0", ["annotators", "--n-boot", "0"], "argument --n-boot: 0 is not allowed"),
    _flag("annotators-n-boot-huge", ["annotators", "--n-boot", "500000"], "argument --n-boot: 500,000 is more than 100,000"),
    _flag("plan-halfwidth-0", ["plan", "--target-halfwidth", "0"], "argument --target-halfwidth: 0 is not between 0 and 1"),
    _flag("plan-halfwidth-negative", ["plan", "--target-halfwidth", "-0.1"], "argument --target-halfwidth: -0.1 is not"),
    _flag("plan-halfwidth-1", ["plan", "--target-halfwidth", "1"], "argument --target-halfwidth: 1 is not between"),
    _flag("plan-halfwidth-nan", ["plan", "--target-halfwidth", "nan"], "argument --target-halfwidth: nan is not between"),
    _flag("plan-halfwidth-inf", ["plan", "--target-halfwidth", "inf"], "argument --target-halfwidth: inf is not between"),
    _flag("plan-halfwidth-word", ["plan", "--target-halfwidth", "small"], "argument --target-halfwidth: 'small' is not "
          "a number"),
    _flag("plan-unlabelled-0", ["plan", "--unlabelled", "0"], "argument --unlabelled: 0 is not allowed"),
    _flag("plan-unknown-judge", ["plan", "--consensus", "ds:items", "--judge", "nosuch/judge"], "no judge 'nosuch/judge' in this workspace"),
    _flag("aggregate-method", ["aggregate", "--method", "ds,median"], "argument --method: unknown method 'median'"),
    _flag("aggregate-with-unknown-judge", ["aggregate", "--with-judges", "nosuch"], "--with-judges: no judgments from "
          "'nosuch'"),
    _flag("push-budget-0", ["annotate", "push", "--budget", "0"], "argument --budget: 0 is not allowed"),
    _flag("push-budget-negative", ["annotate", "push", "--budget", "-5"], "argument --budget: -5 is not allowed"),
    _flag("push-budget-word", ["annotate", "push", "--budget", "lots"], "argument --budget: 'lots' is not a whole number"),
    _flag("push-overlap-0", ["annotate", "push", "--overlap", "0"], "argument --overlap: 0 is not allowed"),
    _flag("push-overlap-101", ["annotate", "push", "--overlap", "101"], "argument --overlap: 101 is more than 100"),
    _flag("push-gold-negative", ["annotate", "push", "--gold", "-1"], "argument --gold: -1 is not allowed; give 0 or more"),
    _flag("push-seed-negative", ["annotate", "push", "--seed", "-1"], "argument --seed: -1 is not allowed"),
    _flag("push-port-0", ["annotate", "push", "--port", "0"], "argument --port: 0 is not a port; give 1-65535"),
    _flag("push-port-huge", ["annotate", "push", "--port", "70000"], "argument --port: 70000 is not a port"),
    _flag("push-port-word", ["annotate", "pull", "--port", "http"], "argument --port: 'http' is not a port number"),
    _flag("push-kind", ["annotate", "push", "--kind", "essay"], "argument --kind: invalid choice: 'essay'"),
    _flag("push-strategy", ["annotate", "push", "--strategy", "best"], "argument --strategy: invalid choice: 'best'"),
    _flag("app-port-0", ["app", "--port", "0"], "argument --port: 0 is not a port"),
    _flag("app-port-65536", ["app", "--port", "65536"], "argument --port: 65536 is not a port"),
    _flag("demo-items-0", ["demo", "--items", "0"], "argument --items: 0 is not allowed"),
    _flag("demo-n-boot-huge", ["demo", "--n-boot", "200000"], "argument --n-boot: 200,000 is more than 100,000"),
    _flag("probe-kind", ["probe", "flattery", "--judge", "local/smollm2"], "argument kind: invalid choice: 'flattery'"),
    _flag("probe-base-url", ["probe", "padding", "--judge", "openai/m", "--base-url", "http://u:p@h/v1"],
          "argument --base-url: holds credentials"),
    _flag("import-task", ["import", "{dir}/x.jsonl", "--task", "ranking"], "argument --task: invalid choice: 'ranking'"),
    _flag("import-as", ["import", "{dir}/x.jsonl", "--as", "labels"], "argument --as: invalid choice: 'labels'"),
    _flag("export-suffix", ["export", "items", "{dir}/out.csv"], "{dir}/out.csv: export writes .parquet or .jsonl"),
    _flag("export-table", ["export", "people", "{dir}/out.jsonl"], "argument table: invalid choice: 'people'"),
]
STABILITY = ["stability", "run", "--judge", "local/smollm2"]
FLAG_CASES += [
    _flag("stability-temperature-nan", [*STABILITY, "--temperature", "nan"], "argument --temperature: nan is not "
          "allowed; give 0 to 100"),
    _flag("stability-temperature-negative", [*STABILITY, "--temperature", "-1"], "argument --temperature: -1 is not"),
    _flag("stability-temperatures-inf", [*STABILITY, "--temperatures", "0.7,inf"], "argument --temperatures: inf is not "
          "allowed"),
    _flag("stability-seeds-negative", [*STABILITY, "--seeds", "1,-1"], "argument --seeds: -1 is not allowed; give 0 to "
          "2147483647"),
    _flag("stability-seeds-word", [*STABILITY, "--seeds", "1,two"], "argument --seeds: 'two' is not a whole number"),
    _flag("stability-batch-sizes-0", [*STABILITY, "--batch-sizes", "0,8"], "argument --batch-sizes: 0 is not allowed"),
    _flag("stability-items-huge", [*STABILITY, "--items", "100000000"], "argument --items: 100,000,000 is more than "
          "10,000,000"),
    _flag("stability-sample-seed", [*STABILITY, "--sample-seed", "-3"], "argument --sample-seed: -3 is not allowed"),
    _flag("stability-axes", [*STABILITY, "--axes", "seed,colour"], "argument --axes: unknown axis 'colour'; axes: seed"),
    _flag("stability-score-n-boot", ["stability", "score", "--n-boot", "1000000"], "argument --n-boot: 1,000,000 is "
          "more than 100,000"),
    _flag("stability-guard-threshold-inf", ["stability", "guard", "--threshold", "inf"], "argument --threshold: 'inf': "
          "give a finite number > 0"),
    _flag("stability-guard-threshold-nan", ["stability", "guard", "--threshold", "nan"], "argument --threshold: 'nan'"),
    _flag("stability-scale-nan", ["stability", "repeats", "--judge", "x", "--scale", "1,nan"], "argument --scale: nan is "
          "not allowed"),
]
FLAG_CASES += [  # the loop's commands: gate, align, cascade
    _flag("gate-n-boot-huge", ["gate", "--baseline", "a", "--candidate", "b", "--n-boot", "1000000"],
          "argument --n-boot: 1,000,000 is more than 100,000"),
    _flag("gate-seed-negative", ["gate", "--baseline", "a", "--candidate", "b", "--seed", "-1"],
          "argument --seed: -1 is not allowed"),
    _flag("align-train-share-5", ["align", "--judge", "local/smollm2", "--method", "fewshot", "--train-share", "5"],
          "argument --train-share: 5 is not between 0 and 1"),
    _flag("align-candidates-huge", ["align", "--judge", "local/smollm2", "--method", "optimizer", "--candidates",
                                    "1000"], "argument --candidates: 1,000 is more than 256"),
    _flag("align-shots-0", ["align", "--judge", "local/smollm2", "--method", "fewshot", "--shots", "0"],
          "argument --shots: 0 is not allowed"),
    _flag("cascade-target-nan", ["cascade", "--stage", "x", "--target", "nan"], "argument --target: nan is not between"),
    _flag("cascade-delta-0", ["cascade", "--stage", "x", "--delta", "0"], "argument --delta: 0 is not between 0 and 1"),
    _flag("cascade-human-cost-negative", ["cascade", "--stage", "x", "--human-cost", "-3"],
          "argument --human-cost: '-3': give a cost in USD of at least 0"),
]
VALIDATE_CASES = [
    Case("flag-serve-port-0", ["serve", "--port", "0"], ("judgecal serve: argument --port: 0 is not a port",)),
    Case("flag-serve-unknown-model", ["serve", "--model", "nosuch", "--port", "1"],
         ("judgecal serve: unknown local model 'nosuch'",)),
    Case("flag-validate-seeds-0", ["validate", "--seeds", "0"], ("judgecal validate: argument --seeds: 0 is not allowed",)),
    Case("flag-validate-seeds-huge", ["validate", "--seeds", "1000000"], ("judgecal validate: argument --seeds: "
                                                                          "1,000,000 is more than 100,000",)),
    Case("flag-validate-items-huge", ["validate", "--items", "2000000"], ("judgecal validate: argument --items: 2,000,000 "
                                                                         "is more than 1,000,000",)),
    Case("flag-validate-n-boot-huge", ["validate", "--n-boot", "100001"], ("judgecal validate: argument --n-boot",)),
]

CASES = ITEM_CASES + FILE_CASES + VERDICT_CASES + THRESHOLD_CASES + FAMILY_CASES + SPEC_CASES + FLAG_CASES + VALIDATE_CASES

# -- other tools' files (import --from): the own schema's checks hold for every format ---------------------

BIG = "1" + "0" * 5000  # an integer of 5,001 digits: beyond Python's integer-string limit
ALPACA_REC = {"instruction": "Name a prime.", "output_1": "2", "generator_1": "m1", "output_2": "Nine.",
              "generator_2": "m2", "annotator": "alpaca_eval_gpt4", "preference": 1.0, "price_per_example": 0.001,
              "time_per_example": 0.5}
LANGSMITH_REC = {"run_id": "r1", "key": "helpful", "score": 0.5, "feedback_source": {"type": "model"},
                 "inputs": {"q": "Explain X"}, "outputs": {"o": "X is ..."}}
MT_HUMAN = {"question_id": 1, "model_a": "x", "model_b": "y", "winner": "model_a", "judge": "expert_1", "turn": 1,
            "conversation_a": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A1"}],
            "conversation_b": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "B1"}]}
MLFLOW_REC = {"trace_id": "tr-1", "request": {"q": "What is MLflow?"}, "response": "A platform.", "assessments": [
    {"assessment_name": "relevance", "source": {"source_type": "LLM_JUDGE", "source_id": "openai:/gpt-4o-mini"},
     "feedback": {"value": 4}}]}
PHOENIX_CSV = ("span_id,name,annotator_kind,result.label,result.score,attributes.input.value,attributes.output.value\n"
               "s1,quality,LLM,,0.85,{input},4\n")
PROMPTFOO_DOC = {"evalId": "e1", "results": {"version": 3, "results": [
    {"promptIdx": 0, "testIdx": 0, "vars": {"question": "Capital of France?"},
     "prompt": {"raw": "Answer: Capital of France?"}, "provider": {"id": "openai:gpt-4o-mini"},
     "response": {"output": "Paris."}, "gradingResult": {"pass": True, "score": 0.9, "componentResults": [
         {"pass": True, "score": 0.8, "reason": "Correct.", "tokensUsed": {"prompt": 280, "completion": 20},
          "assertion": {"type": "g-eval", "value": "The answer is correct", "provider": "openai:gpt-4o"}}]}}]}}
EVAL_HEADER = {"eval": {"task": "t", "model": "m", "scorers": [{"name": "rated"}]}}
EVAL_SAMPLE = {"id": 1, "epoch": 1, "input": "Q?", "output": {"completion": "A."}, "scores": {"rated": {"value": 5}}}


def _eval_zip(header: Any, sample: Any = EVAL_SAMPLE, raw_sample: str | None = None, spaces_mb: int = 0) -> bytes:
    """An Inspect ``.eval`` log (a zip of JSON members) holding ``header`` and one sample; ``spaces_mb``: the
    sample is a text of that many MB of spaces instead (a zip bomb, written in chunks)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("header.json", header if isinstance(header, str) else json.dumps(header))
        if spaces_mb:
            with z.open("samples/1_epoch_1.json", "w", force_zip64=True) as fh:
                fh.write(b'{"id": 1, "x": "')
                for _ in range(spaces_mb):
                    fh.write(b" " * 2**20)
                fh.write(b'"}')
        else:
            z.writestr("samples/1_epoch_1.json", raw_sample if raw_sample is not None else json.dumps(sample))
    return buf.getvalue()


def _promptfoo(**component: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(PROMPTFOO_DOC))
    doc["results"]["results"][0]["gradingResult"]["componentResults"][0].update(component)
    return doc


def _from(case_id: str, fmt: str, name: str, content: Any, *expect: str) -> Case:
    """``import FILE --from FMT``: refused with ``expect`` (the file's name first, as ``{dir}/<name>``)."""
    return Case(f"from-{case_id}", ["import", "{dir}/" + name, "--from", fmt, "-w", "{ws}"], (*expect,),
                files={name: content})


FROM_CASES = [
    _from("alpaca-huge-integer", "alpaca_eval", "a.json", json.dumps([ALPACA_REC]).replace('"preference": 1.0',
          f'"preference": {BIG}'), "{dir}/a.json: bad JSON: Exceeds the limit (4300 digits) for integer string"),
    _from("langsmith-huge-integer", "langsmith", "l.jsonl", _jsonl(json.dumps(LANGSMITH_REC).replace(
        '"score": 0.5', f'"score": {BIG}')), "{dir}/l.jsonl:1: bad JSON: Exceeds the limit (4300 digits)"),
    _from("mt-bench-huge-integer", "mt_bench", "m.jsonl", _jsonl(json.dumps(MT_HUMAN).replace(
        '"question_id": 1', f'"question_id": {BIG}')), "{dir}/m.jsonl:1: bad JSON: Exceeds the limit (4300 digits)"),
    _from("eval-huge-integer", "inspect", "h.eval", _eval_zip(EVAL_HEADER, raw_sample=json.dumps(EVAL_SAMPLE).replace(
        '"value": 5', f'"value": {BIG}')), "{dir}/h.eval: samples/1_epoch_1.json: bad JSON: Exceeds the limit (4300"),
    _from("promptfoo-tokens-1e30", "promptfoo", "p.json", json.dumps(_promptfoo(tokensUsed={"prompt": 1e30})),
          "{dir}/p.json: results.results[0].gradingResult.componentResults[0]: prompt_tokens: 1e+30 is out of range; "
          "a token count is at most 1e+12"),
    _from("eval-scorers-true", "inspect", "s.eval", _eval_zip({"eval": {**EVAL_HEADER["eval"], "scorers": True}}),
          "{dir}/s.eval: eval.scorers: must be a list, got bool"),
    _from("eval-scorer-name-list", "inspect", "s.eval", _eval_zip({"eval": {**EVAL_HEADER["eval"],
                                                                           "scorers": [{"name": ["rated"]}]}}),
          "{dir}/s.eval: eval.scorers[0].name: must be a scorer's name, got list"),
    _from("eval-header-list", "inspect", "h.eval", _eval_zip("[]"),
          "{dir}/h.eval: header.json: eval: an Inspect log's header has an eval object"),
    _from("eval-header-empty", "inspect", "h.eval", _eval_zip("{}"),
          "{dir}/h.eval: header.json: eval: an Inspect log's header has an eval object"),
    _from("eval-header-null", "inspect", "h.eval", _eval_zip("null"),
          "{dir}/h.eval: header.json: eval: an Inspect log's header has an eval object"),
    _from("eval-lone-surrogate", "inspect", "u.eval", _eval_zip(EVAL_HEADER, raw_sample=json.dumps(EVAL_SAMPLE).replace(
        '"A."', '"\\ud800"')), "{dir}/u.eval: samples/1_epoch_1.json: output.completion: holds a lone surrogate"),
    _from("promptfoo-nan-in-metadata", "promptfoo", "p.json", json.dumps(_promptfoo()).replace(
        '"question": "Capital of France?"', '"question": "Capital of France?", "n": NaN'),
          "{dir}/p.json: metadata.vars.n: must be a finite number, got nan"),
    _from("eval-infinite-epoch", "inspect", "e.eval", _eval_zip(EVAL_HEADER, raw_sample=json.dumps(
        {**EVAL_SAMPLE, "epoch": 2}).replace('"epoch": 2', '"epoch": Infinity')),
          "{dir}/e.eval: metadata.epoch: must be a finite number, got inf"),
    _from("alpaca-cost-1e308", "alpaca_eval", "a.json", json.dumps([{**ALPACA_REC, "price_per_example": 1e308}]),
          "{dir}/a.json:1: cost_usd: 1e+308 is out of range; a cost (USD) is at most 1e+09"),
    _from("alpaca-latency-minus-1e308", "alpaca_eval", "a.json", json.dumps([{**ALPACA_REC, "time_per_example": -1e308}]),
          "{dir}/a.json:1: latency_s: must be >= 0, got -1e+308"),
    _from("langsmith-score-1e308", "langsmith", "l.jsonl", _jsonl({**LANGSMITH_REC, "score": 1e308}),
          "{dir}/l.jsonl:1: score: 1e+308 is out of range; a score is a number from -1e+06 to 1e+06"),
    _from("mt-bench-single-score-minus-1e308", "mt_bench", "m.jsonl", _jsonl(
        {"question_id": 1, "model": "x", "score": -1e308, "judge": ["gpt-4", "single-v1"], "turn": 1,
         "user_prompt": "[Question]\nQ?\n\n[The Start of Assistant's Answer]\nA\n[The End of Assistant's Answer]",
         "judgment": "Rating: [[-1e308]]"}), "{dir}/m.jsonl:1: score: -1e+308 is out of range"),
    _from("alpaca-annotator-humans", "alpaca_eval", "a.json", json.dumps([{**ALPACA_REC, "annotator": "humans"}]),
          "{dir}/a.json:1: judge: 'humans' is a reserved name"),
    _from("langsmith-key-truth", "langsmith", "l.jsonl", _jsonl({**LANGSMITH_REC, "key": "truth"}),
          "{dir}/l.jsonl:1: judge: 'truth' is a reserved name"),
    _from("alpaca-annotator-100kb", "alpaca_eval", "a.json", json.dumps([{**ALPACA_REC, "annotator": "x" * 100_000}]),
          "{dir}/a.json:1: judge: a name of 100,000 characters; the limit is 200"),
    _from("mt-bench-expert-name-too-long", "mt_bench", "m.jsonl", _jsonl({**MT_HUMAN, "judge": "e" * 1001}),
          "{dir}/m.jsonl:1: annotator: a name of 1,001 characters; the limit is 1,000"),
    _from("langsmith-input-over-limit", "langsmith", "l.jsonl", _jsonl({**LANGSMITH_REC, "inputs": {"q": "x" * 200_000}}),
          "{dir}/l.jsonl:1: input: the run's input is 200,009 characters as text; the limit is 200,000 (refused whole"),
    _from("mlflow-input-over-limit", "mlflow", "t.json", json.dumps([{**MLFLOW_REC, "request": {"q": "x" * 200_000}}]),
          "{dir}/t.json:1: input: the run's input is 200,009 characters as text; the limit is 200,000"),
    _from("phoenix-input-over-limit", "phoenix", "a.csv", PHOENIX_CSV.format(input="x" * 200_001),
          "{dir}/a.csv:2: input: the run's input is 200,001 characters as text; the limit is 200,000"),
    _from("fifo", "alpaca_eval", "pipe.json", "<fifo>", "{dir}/pipe.json: is not a regular file"),
    _from("dev-zero-link", "alpaca_eval", "zero.json", "<link:/dev/zero>",
          "{dir}/zero.json: is not a regular file (a link to /dev/zero)"),
    _from("symlink-loop", "alpaca_eval", "loop.json", "<link:loop.json>",
          "{dir}/loop.json: is a symbolic link loop (it never reaches a file)"),
    Case("file-symlink-loop", ["import", "{dir}/loop.jsonl", "-w", "{ws}"],
         ("{dir}/loop.jsonl: is a symbolic link loop (it never reaches a file)",), files={"loop.jsonl": "<link:loop.jsonl>"}),
    _from("eval-zip-bomb", "inspect", "b.eval", _eval_zip(EVAL_HEADER, spaces_mb=65),
          "{dir}/b.eval: samples/1_epoch_1.json: is 68,157,458 bytes uncompressed; the limit for one member is "
          "67,108,864 bytes"),
]
CASES += FROM_CASES


def test_the_catalogue_holds_at_least_250_distinct_bad_inputs():
    ids = [c.id for c in CASES]
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)
    assert len(CASES) >= 250


# -- the runner ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def base_ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Items (20 pairwise, 6 pointwise) with human labels and 40 recorded verdicts of one judge."""
    root = tmp_path_factory.mktemp("bad-inputs")
    ws = root / "ws"
    assert main(["import", str(ITEMS), "-w", str(ws)]) == 0
    (root / "pw.jsonl").write_text(_jsonl(*POINTWISE))
    assert main(["import", str(root / "pw.jsonl"), "--task", "pointwise", "-w", str(ws)]) == 0
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        w._db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return ws


def _place(path: Path, content: Any) -> None:
    if content == "<dir>":
        path.mkdir()
    elif content == "<fifo>":
        os.mkfifo(path)
    elif isinstance(content, str) and content.startswith("<link:"):
        path.symlink_to(content[len("<link:"):-1])
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, "utf-8")


def snapshot(ws: Path) -> dict[str, Any]:
    """Every table's rows (hashed) and every file of the workspace but SQLite's own journal files."""
    con = sqlite3.connect(f"file:{ws / 'judgecal.sqlite'}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        rows = {t: hashlib.sha256(repr(sorted(map(repr, con.execute(f'SELECT * FROM "{t}"')))).encode()).hexdigest()
                for t in tables}
    finally:
        con.close()
    files = sorted(str(p.relative_to(ws)) for p in ws.rglob("*")
                   if not p.name.endswith(("-wal", "-shm", "-journal")))
    return {"tables": rows, "files": files}


def _fill(text: str, d: Path, ws: Path) -> str:
    return text.replace("{dir}", str(d)).replace("{ws}", str(ws))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_input_is_refused_at_once_in_one_line(case: Case, base_ws: Path, tmp_path: Path, capsys) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(base_ws, ws)
    for name, content in case.files.items():
        _place(tmp_path / name, content)
    for name, content in case.ws_files.items():
        _place(ws / name, content)
    before = snapshot(ws)
    argv = [_fill(a, tmp_path, ws) for a in case.argv]
    capsys.readouterr()
    rc = main(argv)
    cap = capsys.readouterr()
    assert rc == 2, (rc, cap.err)
    assert "Traceback" not in cap.err and cap.out == ""
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    assert lines[0].startswith(f"judgecal {argv[0]}"), lines[0]
    for fragment in case.expect:
        assert _fill(fragment, tmp_path, ws) in lines[0], (fragment, lines[0])
    assert "\x1b" not in cap.err  # untrusted text in the message is shown escaped
    assert snapshot(ws) == before  # nothing half-written


# -- accepted, and never a crash later ------------------------------------------------------------------

def _copy(base_ws: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(base_ws, ws)
    return ws


def test_values_at_the_edge_of_their_range_are_stored_and_audited(base_ws, tmp_path, capsys):
    """The largest accepted score, sample, token count, latency and cost import, and the audit over them runs."""
    ws = _copy(base_ws, tmp_path)
    edge = [{"item_id": f"pw-{i}", "judge": "edge/judge", "score": s, "sample": 1_000_000 if i == 0 else 0,
             "prompt_tokens": 10**12, "completion_tokens": 0, "latency_s": 1e7, "cost_usd": 1e9}
            for i, s in enumerate([1e6, -1e6, 3, 4, 5, 6])]
    (tmp_path / "edge.jsonl").write_text(_jsonl(*edge))
    assert main(["import", str(tmp_path / "edge.jsonl"), "--as", "judgments", "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        got = w.judgments_repo.judgments_frame("edge/judge").set_index("item_id")
    assert got.loc["pw-0", "score"] == 1e6 and got.loc["pw-1", "score"] == -1e6
    assert int(got.loc["pw-0", "sample"]) == 1_000_000 and int(got["prompt_tokens"].max()) == 10**12
    capsys.readouterr()
    assert main(["audit", "--consensus", "mv:pw", "--n-boot", "40", "--json", "-w", str(ws)]) == 0
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    entry = json.loads(cap.out)["judges"]["edge/judge"]
    usage = entry["usage"]  # per 1,000 judgments: 6 judgments of 1e9 USD and 1e12 prompt tokens each
    assert usage["cost_usd_per_1k"] == pytest.approx(1e12) and usage["prompt_tokens_per_1k"] == pytest.approx(1e15)
    assert usage["latency_s_mean"] == pytest.approx(1e7) and usage["judgments"] == 6


@pytest.mark.parametrize(("text", "key", "value"), [
    ("alpha: 0.5\n", ("alpha",), 0.5),
    ("min_items: 1\n", ("min_items",), 1),
    ("min_items: 30.0\n", ("min_items",), 30),
    ("kappa: {not_aligned_below: -1, aligned_at_least: -1}\n", ("kappa", "aligned_at_least"), -1),
    ("kappa: {not_aligned_below: 1, aligned_at_least: 1}\n", ("kappa", "not_aligned_below"), 1),
    ("position: {not_aligned_beyond: 0.5}\n", ("position", "not_aligned_beyond"), 0.5),
    ("kappa_gap: {caution_above: 2, not_aligned_above: 2}\n", ("kappa_gap", "caution_above"), 2),
    ("business_loss: {tolerated_error_increase: 1}\n", ("business_loss", "tolerated_error_increase"), 1.0),
    ("\ufeffversion: 1\nalpha: 0.01\n", ("alpha",), 0.01),
    ("# only a comment\n", ("alpha",), 0.05),
])
def test_thresholds_at_their_bounds_are_accepted(tmp_path, text, key, value):
    from judgecal.audit.decision import load_thresholds

    (tmp_path / "thresholds.yaml").write_text(text, "utf-8")
    t = load_thresholds(tmp_path)
    for k in key:
        t = t[k]
    assert t == value


def test_accepted_thresholds_and_families_run_the_audit(base_ws, tmp_path, capsys):
    ws = _copy(base_ws, tmp_path)
    (ws / "thresholds.yaml").write_text("kappa: {not_aligned_below: 0.4, aligned_at_least: 0.4}\nmin_items: 1\n")
    (ws / "families.yaml").write_bytes("\ufeff'acme-*': acme\n# sans accent: caf\u00e9\n".encode())
    assert main(["audit", "--consensus", "mv:items", "--n-boot", "40", "--json", "-w", str(ws)]) == 0
    rep = json.loads(capsys.readouterr().out)
    verdict = rep["judges"]["example/acme-judge"]["verdict"]
    assert verdict["status"] in ("aligned", "not aligned")  # one bound at 0.4: no 'moderate' band left
    assert not any("fewer than" in r for r in verdict["reasons"])  # min_items 1 applied


def test_a_spec_at_its_bounds_is_accepted(tmp_path):
    from judgecal.judges.spec import load_spec

    f = tmp_path / "s.yaml"
    f.write_text("name: edge\nbackend: openai\nmodel: m\nparameters: {temperature: 100, max_tokens: 1000000, "
                 "top_logprobs: 0}\noptions: {base_url: 'http://127.0.0.1:8000/v1?model=x', timeout_s: 5}\n")
    spec = load_spec(str(f))
    assert (spec.temperature, spec.max_tokens, spec.top_logprobs) == (100.0, 1_000_000, 0)
    assert dict(spec.options)["base_url"] == "http://127.0.0.1:8000/v1?model=x"


def test_a_key_in_the_environment_base_url_never_reaches_the_stored_spec(monkeypatch):
    """OPENAI_BASE_URL is not checked like --base-url; what the spec stores of it has no credentials."""
    from judgecal.judges.backends.openai_http import OpenAIHTTPBackend
    from judgecal.judges.rubric import load_rubric
    from judgecal.judges.spec import JudgeSpec, without_credentials

    assert without_credentials("http://user:SECRET1@127.0.0.1:8000/v1?api-key=SECRET2&model=m") == \
        "http://127.0.0.1:8000/v1?model=m"
    assert without_credentials("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:SECRET1@127.0.0.1:9/v1?token=SECRET2")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-SECRET3")
    backend = OpenAIHTTPBackend("m")
    spec = JudgeSpec(backend="openai-http", model="m").bind(backend, load_rubric("pairwise"))
    stored = json.dumps(spec.to_dict()) + spec.call_identity()
    assert "127.0.0.1:9" in stored
    assert not any(s in stored for s in ("SECRET1", "SECRET2", "SECRET3", "user"))


def test_a_reimport_that_wrote_nothing_says_so(base_ws, tmp_path, capsys):
    ws = _copy(base_ws, tmp_path)
    capsys.readouterr()
    assert main(["import", str(ITEMS), "-w", str(ws)]) == 0
    assert capsys.readouterr().out.strip() == (f"nothing new in {ITEMS}: its 20 items and 60 human labels are already "
                                               "in the workspace")
    rows = [json.loads(line) for line in ITEMS.read_text().splitlines()]
    rows[0]["human_labels"]["annotator1"] = "B"  # one changed label, one new item
    rows.append({"id": "new-1", "prompt": "p", "response_a": "a", "response_b": "b", "human_labels": {"x": "tie"}})
    (tmp_path / "more.jsonl").write_text(_jsonl(*rows))
    assert main(["import", str(tmp_path / "more.jsonl"), "--name", "items", "-w", str(ws)]) == 0
    assert capsys.readouterr().out.strip() == (f"imported 1 items (20 already there) and 1 human labels (1 stored labels "
                                               f"replaced by the file's) from {tmp_path / 'more.jsonl'}")
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(ws)]) == 0
    assert capsys.readouterr().out.startswith(f"nothing new in {VERDICTS}: its 40 judgments from 1 judge(s)")


def test_a_stored_judge_named_humans_cannot_replace_the_human_reference(base_ws, tmp_path, capsys):
    """A workspace that holds a judge named ``humans`` (written before names were checked): the audit's model
    win rates keep the humans' own under ``humans`` and list the judge as ``judge:humans``."""
    from judgecal.data.records import Judgment

    ws = _copy(base_ws, tmp_path)
    assert main(["audit", "--consensus", "mv:items", "--n-boot", "40", "--json", "-w", str(ws)]) == 0
    reference = json.loads(capsys.readouterr().out)["models"]["win_rate"]["humans"]
    with Workspace(ws) as w:
        ids = sorted(i for i in w.items_repo.item_ids() if i.startswith("ex-"))
        w.judgments_repo.add_judgments([Judgment(key=f"h-{i}-{o}", item_id=i, judge="humans", spec_hash="h", order=o, verdict="B")
                         for i in ids for o in ("AB", "BA")])
    assert main(["audit", "--consensus", "mv:items", "--n-boot", "40", "--json", "-w", str(ws)]) == 0
    models = json.loads(capsys.readouterr().out)["models"]
    assert models["win_rate"]["humans"] == reference
    assert "judge:humans" in models["raters"] and models["win_rate"]["judge:humans"] != reference


def test_a_yaml_alias_bomb_is_refused_in_well_under_a_second(tmp_path):
    """Nine levels of nine aliases (9**9 values) and a ten-level one: refused before anything is built."""
    import time

    from judgecal.audit.decision import ThresholdsError, load_thresholds

    for text in (BOMB, BOMB + "j: &j [" + ", ".join(["*i"] * 9) + "]\n"):
        (tmp_path / "thresholds.yaml").write_text(text)
        t0 = time.perf_counter()
        with pytest.raises(ThresholdsError, match="expands to more than 100,000 values"):
            load_thresholds(tmp_path)
        assert time.perf_counter() - t0 < 0.5


# -- untrusted names: inert in the terminal, the PDF and CSV downloads -------------------------------------

def _hostile_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    rows = [{"id": f"h{i}", "prompt": "p", "response_a": f"a{i}", "response_b": "b",
             "model_a": f"model{CLEAR}", "model_b": "other-model",
             "human_labels": {f"ann{CLEAR}": "AB"[i % 2], f"bob{OSC_LINK}": "AB"[i % 2], "carol": "A"}}
            for i in range(12)]
    (tmp_path / f"items{CLEAR}.jsonl").write_text(_jsonl(*rows))
    assert main(["import", str(tmp_path / f"items{CLEAR}.jsonl"), "-w", str(ws)]) == 0
    verdicts = [{"item_id": f"h{i}", "judge": f"judge{OSC_LINK}", "verdict": "A", "order": o}
                for i in range(12) for o in ("AB", "BA")]
    (tmp_path / "v.jsonl").write_text(_jsonl(*verdicts))
    assert main(["import", str(tmp_path / "v.jsonl"), "--as", "judgments", "-w", str(ws)]) == 0
    return ws


def test_escape_sequences_in_names_never_reach_the_terminal_raw(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    ws = _hostile_ws(tmp_path)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "items\\x1b[2J\\x1b[H.jsonl" in out and "judge\\x1b]8;;http://evil.example\\x07click" in out
    for argv in (["annotators", "--n-boot", "40"], ["audit", "--n-boot", "40"], ["aggregate"],
                 ["plan", "--target-halfwidth", "0.2"]):
        assert main([*argv, "-w", str(ws)]) == 0, argv
        cap = capsys.readouterr()
        assert "\x1b" not in cap.out + cap.err and "\x07" not in cap.out + cap.err, argv
    assert main(["annotators", "--n-boot", "40", "-w", str(ws)]) == 0
    shown = capsys.readouterr().out
    assert "ann\\x1b[2J\\x1b[H" in shown and "bob\\x1b]8;;http://evil.example\\x07click\\x1b]8;;\\x07" in shown
    assert main(["audit", "--n-boot", "40", "-w", str(ws)]) == 0
    assert "judge\\x1b]8;;http://evil.example\\x07click\\x1b]8;;\\x07" in capsys.readouterr().out


def test_an_error_line_shows_a_hostile_name_escaped(base_ws, tmp_path, capsys):
    ws = _copy(base_ws, tmp_path)
    (tmp_path / "v.jsonl").write_text(_jsonl({"item_id": f"ex-01{CLEAR}", "judge": "j", "verdict": "A"}))
    assert main(["import", str(tmp_path / "v.jsonl"), "--as", "judgments", "-w", str(ws)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "unknown item 'ex-01\\x1b[2J\\x1b[H'" in err


def test_escape_sequences_in_names_are_shown_escaped_in_the_pdf(tmp_path, capsys):
    import subprocess

    pytest.importorskip("weasyprint")
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed: `make pdf-libs`")
    ws = _hostile_ws(tmp_path)
    assert main(["audit", "--n-boot", "40", "--pdf", "-w", str(ws)]) == 0
    text = subprocess.run(["pdftotext", str(ws / "reports" / "audit.pdf"), "-"], capture_output=True, text=True,
                          check=True).stdout
    assert "\x1b" not in text and "\x07" not in text
    assert "judge\\x1b]8;;http://evil.example\\x07click" in text.replace("\n", "")


@pytest.mark.parametrize(("cell", "written"), [
    ("=HYPERLINK(\"http://evil.example\")", "'=HYPERLINK(\"http://evil.example\")"),
    ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
    ("@SUM(A1:A9)", "'@SUM(A1:A9)"),
    ("\t=1+1", "'\t=1+1"),
    ("\r=1+1", "\\x0d=1+1"),
    ("-0.050 (-0.100–0.000)", "-0.050 (-0.100–0.000)"),  # a figure as the catalogue writes it
    ("-0.050 (-0.100–A1)", "'-0.050 (-0.100–A1)"),
    ("-1 (2–3)+cmd|' /C calc'!A0", "'-1 (2–3)+cmd|' /C calc'!A0"),
    ("-", "'-"),
    ("-0.25", "-0.25"),
    ("+3", "+3"),
    ("1e-5", "1e-5"),
    ("plain name", "plain name"),
    (f"bob{OSC_LINK}", "bob\\x1b]8;;http://evil.example\\x07click\\x1b]8;;\\x07"),
    ("line one\nline two", "line one\nline two"),
])
def test_csv_download_cells_are_inert_in_a_spreadsheet(cell, written):
    import csv
    import io

    import pandas as pd

    from judgecal.inert import csv_frame

    frame = pd.DataFrame({"name": [cell], "=cmd": [cell], "n": [-1.5]})
    text = csv_frame(frame).to_csv(index=False)
    back = list(csv.reader(io.StringIO(text)))
    assert back[0] == ["name", "'=cmd", "n"]
    assert back[1] == [written, written, "-1.5"]
    assert frame["name"].iloc[0] == cell  # the frame shown on the page is left as it was


def test_an_unreachable_base_url_is_named_once(base_ws, tmp_path, capsys):
    """Nothing listens at the address: the run ends with its errors and one line naming the server."""
    from conftest import free_port

    ws = _copy(base_ws, tmp_path)
    url = f"http://127.0.0.1:{free_port()}/v1"
    capsys.readouterr()
    rc = main(["judge", "--judge", "openai-http/m", "--base-url", url, "--items", "1", "--orders", "AB", "--quiet",
               "-w", str(ws)])
    cap = capsys.readouterr()
    assert rc == 69 and "1 errors" in cap.out  # EX_UNAVAILABLE: no call reached the server
    assert cap.err.count(url) == 1 and "Traceback" not in cap.err
    assert f"1 call(s) failed: the server at {url} could not be reached" in cap.err
    assert "error: TransientError: ConnectionRefusedError" in cap.err


@pytest.mark.parametrize(("name", "shown"), [
    ("jud\u200dge", "jud\\u200dge"),  # zero-width joiner: printed alike with `judge`
    ("ju\u200bdge", "ju\\u200bdge"),  # zero-width space
    ("judge\ufeff", "judge\\ufeff"),  # byte-order mark
    ("ju\u00addge", "ju\\xaddge"),  # soft hyphen
    ("one\u2028two", "one\\u2028two"),  # line separator: a line break no eye sees coming
    ("one\u2029two", "one\\u2029two"),  # paragraph separator
    ("\u2066judge\u2069", "\\u2066judge\\u2069"),  # isolates
    ("café 中文 ok", "café 中文 ok"),  # visible text stays as it is
])
def test_characters_that_print_as_nothing_are_shown(name, shown):
    from judgecal.inert import term

    assert term(name) == shown
    assert term(name, keep_lines=True) == shown


def test_names_differing_by_an_invisible_character_print_apart(tmp_path, capsys):
    ws = tmp_path / "ws"
    rows = [{"id": f"z{i}", "prompt": "p", "response_a": f"a{i}", "response_b": "b", "model_a": "m1",
             "model_b": "m2", "human_labels": {"ann": "AB"[i % 2], "bob": "AB"[i % 2]}} for i in range(10)]
    (tmp_path / "items.jsonl").write_text(_jsonl(*rows))
    assert main(["import", str(tmp_path / "items.jsonl"), "-w", str(ws)]) == 0
    verdicts = [{"item_id": f"z{i}", "judge": judge, "verdict": "A", "order": o}
                for judge in ("judge", "jud\u200dge") for i in range(10) for o in ("AB", "BA")]
    (tmp_path / "v.jsonl").write_text(_jsonl(*verdicts))
    assert main(["import", str(tmp_path / "v.jsonl"), "--as", "judgments", "-w", str(ws)]) == 0
    assert main(["aggregate", "-w", str(ws)]) == 0
    capsys.readouterr()
    assert main(["audit", "--n-boot", "40", "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "\u200d" not in out and "jud\\u200dge" in out


def test_a_null_mt_bench_winner_is_a_skipped_label(base_ws, tmp_path, capsys):
    """A person's ``winner: null`` in the MT-Bench human release is a skip, accepted and counted, as a null
    label is everywhere; the other expert's label on the same pair is stored."""
    ws = _copy(base_ws, tmp_path)
    f = tmp_path / "human.jsonl"
    f.write_text(_jsonl({**MT_HUMAN, "winner": None}, {**MT_HUMAN, "judge": "expert_2", "winner": "model_b"}))
    capsys.readouterr()
    assert main(["import", str(f), "--from", "mt_bench", "-w", str(ws)]) == 0, capsys.readouterr().err
    assert "1 null label(s) read as skipped" in capsys.readouterr().out
    with Workspace(ws) as w:
        got = w.annotations_repo.annotations_frame()
        mine = got[got["source"] == "mt_bench:human"]
        assert mine[["annotator", "label"]].values.tolist() == [["expert_2", "B"]]


def test_an_eval_zip_bomb_is_refused_without_inflating_it(tmp_path):
    """A member that inflates to 300 MB (a zip of a few hundred KB) is refused by the size cap: the import's
    whole process stays far below the member's size."""
    import subprocess
    import sys

    bomb = tmp_path / "bomb.eval"
    bomb.write_bytes(_eval_zip(EVAL_HEADER, spaces_mb=300))
    assert bomb.stat().st_size < 1_000_000
    # the process's own high-water mark (VmHWM starts afresh at exec; ru_maxrss would carry the test's)
    code = ("import re, sys\nfrom judgecal.cli import main\nrc = main(sys.argv[1:])\n"
            "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())\n"
            "print(int(hwm.group(1)) // 1024, file=sys.stderr)\nsys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code, "import", str(bomb), "--from", "inspect", "-w",
                          str(tmp_path / "ws")], capture_output=True, text=True, timeout=120)
    err = run.stderr.strip().splitlines()
    assert run.returncode == 2 and "the limit for one member is 67,108,864 bytes" in err[0], run.stderr
    assert int(err[-1]) < 250, f"peak {err[-1]} MB"
    assert not (tmp_path / "ws").exists()


def test_regrade_against_an_unreachable_server_says_why(base_ws, tmp_path, capsys):
    """regrade exited 1 with nothing on stderr when no server listened at --base-url."""
    from conftest import free_port

    ws = _copy(base_ws, tmp_path)
    url = f"http://127.0.0.1:{free_port()}/v1"
    capsys.readouterr()
    (tmp_path / "few.jsonl").write_text(_jsonl({"item_id": "ex-01", "judge": "few/j", "verdict": "A", "order": "AB"}))
    assert main(["import", str(tmp_path / "few.jsonl"), "--as", "judgments", "-w", str(ws)]) == 0
    capsys.readouterr()
    rc = main(["regrade", "--judge", "openai-http/m", "--base-url", url, "--like", "few/j", "--quiet", "-w", str(ws)])
    cap = capsys.readouterr()
    assert rc == 69 and " errors)" in cap.out and "Traceback" not in cap.err  # EX_UNAVAILABLE
    assert cap.err.count(url) == 1 and f"call(s) failed: the server at {url} could not be reached" in cap.err


def test_a_report_is_never_written_over_its_evidence(base_ws: Path, tmp_path: Path, capsys) -> None:
    """``report --out`` and ``gate --markdown`` refuse the file they read, a workspace's database and a folder, with
    nothing written; a device is not read."""
    ws = _copy(base_ws, tmp_path)
    src = ws / "reports" / "audit.json"
    src.parent.mkdir(exist_ok=True)
    golden = json.loads((Path(__file__).parent / "golden" / "pandalm-audit.json").read_text("utf-8"))
    src.write_text(json.dumps({"judgecal_version": "0", "generated_at": "2026-01-01T00:00:00Z", **golden}), "utf-8")
    before, kept = snapshot(ws), src.read_bytes()
    for out, words in ((src, "is the file this command reads"), (ws / "judgecal.sqlite", "is a database"),
                       (tmp_path, "is a folder")):
        capsys.readouterr()
        assert main(["report", "html", str(src), "--out", str(out)]) == 2
        assert words in capsys.readouterr().err
    assert main(["gate", "--baseline", "a", "--candidate", "b", "--markdown", str(ws / "judgecal.sqlite"),
                 "-w", str(ws)]) == 2
    assert "is a database" in capsys.readouterr().err
    assert main(["report", "html", "/dev/zero"]) == 2
    assert "is not a regular file" in capsys.readouterr().err
    assert snapshot(ws) == before and src.read_bytes() == kept
    assert main(["report", "html", str(src), "--out", str(tmp_path / "fine.html")]) == 0  # elsewhere: written
    assert (tmp_path / "fine.html").read_text("utf-8").lstrip().lower().startswith("<!doctype html")


def test_a_server_saying_connection_is_not_a_server_out_of_reach() -> None:
    """Whether the server could not be reached is read from the errors' names, never from the text a server sent
    back (a 401 whose body echoes ``Connection: keep-alive``)."""
    from judgecal.cli.judging import _unreachable

    assert _unreachable("TransientError: ConnectError") and _unreachable("APIConnectionError: Connection error.")
    assert _unreachable("OSError: [Errno 111] Connection refused") and _unreachable("TimeoutError: ")
    assert not _unreachable('AuthenticationError: Error code: 401 - {"headers": "Connection: keep-alive"}')
    assert not _unreachable("BackendError: HTTP 401: Connection refused by policy")
    assert not _unreachable("TransientError: HTTP 503")


@pytest.mark.parametrize("key", ["sk-test-SECRET123\n", " sk-test-SECRET123", "sk-test\x7fSECRET123"])
def test_a_key_with_whitespace_is_refused_at_once_naming_the_variable(key: str, monkeypatch, tmp_path: Path,
                                                                       capsys) -> None:
    from judgecal.errors import BackendError
    from judgecal.judges.backends.openai_http import OpenAIHTTPBackend

    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(BackendError, match="OPENAI_API_KEY holds whitespace or a control character") as err:
        OpenAIHTTPBackend("m")
    assert "SECRET123" not in str(err.value)


def test_json_on_stdout_keeps_its_letters_and_escapes_what_acts_in_a_terminal(capsys) -> None:
    """``--json`` output is the same JSON to a parser; a C1 control or a bidirectional override in a name is written
    as its escape, so the terminal it is printed on never acts on it; other letters stay readable."""
    from judgecal.cli.common import print_json

    value = {"judge": "a\u009b31mb \u202eexe \u05de\u05d5\u05d3\u05dc \x7f", "n": 1}
    for given in (value, json.dumps(value, ensure_ascii=False)):
        print_json(given)
        out = capsys.readouterr().out
        assert json.loads(out) == value
        assert not any(c in out for c in "\u009b\u202e\x7f") and "\u05de\u05d5\u05d3\u05dc" in out
        assert "\\u009b" in out and "\\u202e" in out
