"""DeepEval test runs (``.deepeval/.latest_test_run.json``, or a saved test run).

``testCases[]`` {``name``, ``input``, ``actualOutput``, ``expectedOutput``, ``metricsData[]`` {``name``,
``threshold``, ``success``, ``score``, ``reason``, ``strictMode``, ``evaluationModel``,
``evaluationCost``, ``error``}}. Each test case becomes a pointwise item (``deepeval/<name>``); each
metric is a judge named ``<metric> (<evaluation model>)`` whose verdict is the metric's score (0-1; the
threshold kept in the spec), with its reason and cost.

DeepEval decides each metric pass/fail (``success``: the score at or above the threshold; a test fails
when any of its metrics does), so that decision is also a binary judgment (labels ``pass``/``fail``,
positive ``pass``) on the test case's item for the metric, ``deepeval/<name>/<metric>`` (the metric as
the criterion, so people's pass/fail labels on it can be set beside it). A metric in strict mode is
pass/fail only (its score, 0 or 1, restates ``success``): it is that binary judgment alone, by the judge
``<metric> (<evaluation model>)``. A graded metric keeps its score under that name, and its pass/fail is
the judge ``<metric> (<evaluation model>) pass/fail`` (two readouts of one call are two judges: the audit
reads a judge on one scale, and the threshold decides this one). A metric that errored is an invalid
verdict of each. A test case whose metrics are all strict is stored as its criterion items only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, listed, point_item, read_json_document, text_of
from judgecal.data.formats.labels import pass_fail
from judgecal.data.importers import MAX_TEXT_CHARS, Problem
from judgecal.data.records import Item

NAME = "deepeval"
DESCRIPTION = "DeepEval test run JSON (testCases[] with metricsData[])"


def detect(path: Path, head: list[Any]) -> bool:
    doc = head[0] if len(head) == 1 else None
    return isinstance(doc, dict) and isinstance(doc.get("testCases"), list)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME, runs=True)
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
            ref = tc.get("expectedOutput") if isinstance(tc.get("expectedOutput"), str) else None
            item = point_item(NAME, name, prompt, output, None, reference=ref)
            m.item(item, f"{f}: {where}", (f, None))
            for j, md in enumerate(listed(tc.get("metricsData"), "metricsData")):
                _metric(m, item, md, f"{where}.metricsData[{j}]")
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    m.settle(lambda criterion, _: pass_fail(criterion))
    return m


def _metric(m: Mapped, item: Item, md: Any, where: str) -> None:
    if not isinstance(md, dict) or not isinstance(md.get("name"), str):
        raise Skip(None, f"{where} needs a metric name")
    iid, metric = item.item_id, md["name"]
    model = md.get("evaluationModel") if isinstance(md.get("evaluationModel"), str) else None
    name = f"{metric} ({model})" if model else metric
    threshold = finite(md.get("threshold"))
    score = finite(md.get("score"))
    error = md.get("error")
    raw = text_of(error or md.get("reason"))
    strict = bool(md.get("strictMode"))
    if not strict:
        judge = m.judge(name, model or metric, rubric=f"deepeval metric {metric}", threshold=threshold)
        if error or score is None:
            m.verdict(judge, iid, verdict="invalid", raw=raw, where=(where, None))
        else:
            m.verdict(judge, iid, score=score, raw=md.get("reason"), cost_usd=md.get("evaluationCost"),
                      where=(where, None))
    success = md.get("success")
    if not isinstance(success, bool) and strict and score in (0.0, 1.0):
        success = score == 1.0  # strict mode scores 1 for a pass, 0 for a fail
    if not isinstance(success, bool) and not error and not strict:
        return  # a graded metric without a pass/fail: its score is all it gave
    judge = m.judge(name if strict else f"{name} pass/fail", model or metric, rubric=f"deepeval metric {metric}",
                    threshold=threshold, strict_mode=True if strict else None)
    bad = bool(error) or not isinstance(success, bool) or (not strict and score is None)
    m.vote(metric, iid, None if bad else ("pass" if success else "fail"), base=item, judge=judge, raw=raw,
           invalid=bad, where=(where, None), cost_usd=md.get("evaluationCost") if strict else None)
