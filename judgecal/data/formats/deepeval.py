"""DeepEval test runs (``.deepeval/.latest_test_run.json``, or a saved test run).

``testCases[]`` {``name``, ``input``, ``actualOutput``, ``expectedOutput``, ``metricsData[]`` {``name``,
``threshold``, ``success``, ``score``, ``reason``, ``strictMode``, ``evaluationModel``,
``evaluationCost``, ``error``}}. Each test case becomes a pointwise item (``deepeval/<name>``); each
metric is a judge named ``<metric> (<evaluation model>)`` whose verdict is the metric's score (0-1; the
threshold kept in the spec), with its reason and cost. A metric in strict mode scores 0 or 1 only: it
is pass/fail and waits for the binary task type. A metric that errored is an invalid verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, listed, point_item, read_json_document, text_of
from judgecal.data.importers import MAX_TEXT_CHARS, Problem

NAME = "deepeval"
DESCRIPTION = "DeepEval test run JSON (testCases[] with metricsData[])"


def detect(path: Path, head: list[Any]) -> bool:
    doc = head[0] if len(head) == 1 else None
    return isinstance(doc, dict) and isinstance(doc.get("testCases"), list)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    doc = read_json_document(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("testCases"), list):
        raise Skip("testCases", "a DeepEval test run holds the list testCases")
    for k, tc in enumerate(doc["testCases"]):
        where = f"testCases[{k}]"
        try:
            if not isinstance(tc, dict):
                raise Skip(None, "must be an object")
            prompt, output = tc.get("input"), tc.get("actualOutput")
            if not isinstance(prompt, str):
                raise Skip("input", "must be a string")
            if output is None:
                output = ""  # a test case whose model gave nothing: an empty output
            if not isinstance(output, str):
                raise Skip("actualOutput", "must be a string")
            if len(prompt) > MAX_TEXT_CHARS or len(output) > MAX_TEXT_CHARS:
                raise Skip("input", f"a text is over the limit of {MAX_TEXT_CHARS:,} characters")
            name = tc.get("name") if isinstance(tc.get("name"), str) else f"test_case_{tc.get('order', k)}"
            iid = f"{NAME}/{name}"
            ref = tc.get("expectedOutput") if isinstance(tc.get("expectedOutput"), str) else None
            m.item(point_item(NAME, iid, prompt, output, None, reference=ref), f"{f}: {where}", (f, None))
            for j, md in enumerate(listed(tc.get("metricsData"), "metricsData")):
                _metric(m, iid, md, f"{where}.metricsData[{j}]")
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    return m


def _metric(m: Mapped, iid: str, md: Any, where: str) -> None:
    if not isinstance(md, dict) or not isinstance(md.get("name"), str):
        raise Skip(None, f"{where} needs a metric name")
    model = md.get("evaluationModel") if isinstance(md.get("evaluationModel"), str) else None
    if md.get("strictMode"):
        m.wait(f"{md['name']}: strict-mode pass/fail verdicts")
        return
    judge = m.judge(f"{md['name']} ({model})" if model else md["name"], model or md["name"],
                    rubric=f"deepeval metric {md['name']}", threshold=finite(md.get("threshold")))
    score = finite(md.get("score"))
    if md.get("error") or score is None:
        m.verdict(judge, iid, verdict="invalid", raw=text_of(md.get("error") or md.get("reason")), where=(where, None))
        return
    m.verdict(judge, iid, score=score, raw=md.get("reason"), cost_usd=md.get("evaluationCost"), where=(where, None))
