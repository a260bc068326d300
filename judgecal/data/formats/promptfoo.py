"""promptfoo's ``results.json`` (``promptfoo eval -o results.json``).

``results.results[]``: one output per test and prompt — ``testIdx``, ``promptIdx``, ``vars``, ``prompt.raw``,
``provider`` (``id``), ``response`` (``output``, ``tokenUsage``, ``cost``), ``latencyMs`` — and its
``gradingResult.componentResults[]`` {``pass``, ``score``, ``reason``, ``assertion`` {``type``, ``value``,
``provider``, ``rubricPrompt``}}. Each output becomes a pointwise item (``promptfoo/<test>/<prompt>/<provider>``)
written by its provider. A model-graded assertion (``llm-rubric``, ``g-eval``, ``factuality``,
``model-graded-*``, ``answer-relevance``, ``context-*``, ``select-best``) is a judge named
``promptfoo:<type>/<grader>`` with its rubric; its verdict is a score when the score is graded (``g-eval``,
or any score other than 0 and 1). Deterministic assertions (``contains``, ``equals``, ``javascript`` …) are
not judges and are counted as dropped.

Every assertion also passes or fails (``pass``): that is a binary judgment (labels ``pass``/``fail``,
positive ``pass``) on the output's item for the assertion, ``<output item>/<criterion>``, the criterion
being the assertion's ``metric`` when it names one, else ``<type>: <value>`` (a long value cut, with a
short hash that keeps two values apart). An assertion that is pass/fail only (``llm-rubric``, a 0/1
score) is that judgment alone, by ``promptfoo:<type>/<grader>``; a graded one keeps its score under that
name and its pass/fail (at its threshold) is the judge ``promptfoo:<type>/<grader> pass/fail``, as a
DeepEval metric's is. A ``human`` assertion (a thumbs up or down in promptfoo's viewer, which rates the
output as a whole) is a person's pass/fail label (``promptfoo-human``, source ``promptfoo:human``) on the
criterion ``overall``; one without a ``pass`` is counted as dropped. An output whose only verdicts are
pass/fail is stored as its criterion items only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import (
    Mapped,
    Skip,
    finite,
    listed,
    obj,
    point_item,
    read_json_document,
    text_of,
)
from judgecal.data.formats.labels import pass_fail
from judgecal.data.importers import MAX_TEXT_CHARS, Problem
from judgecal.data.records import Item, stable_hash

NAME = "promptfoo"
DESCRIPTION = "promptfoo results.json (results.results[] with gradingResult.componentResults[])"
MODEL_GRADED = ("llm-rubric", "g-eval", "factuality", "answer-relevance", "context-faithfulness", "context-recall",
                "context-relevance", "select-best", "model-graded-closedqa", "model-graded-factuality",
                "search-rubric", "pi", "conversation-relevance")
GRADED_SCORES = ("g-eval",)


def detect(path: Path, head: list[Any]) -> bool:
    doc = head[0] if len(head) == 1 else None
    return (isinstance(doc, dict) and isinstance(doc.get("results"), dict)
            and isinstance(doc["results"].get("results"), list))


def _provider(v: Any) -> str | None:
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        got = v.get("id") or v.get("label")
        return got if isinstance(got, str) else None
    return None


def parse(path: Path) -> Mapped:
    m = Mapped(NAME, runs=True)
    f = str(path)
    doc = read_json_document(path)
    if not (isinstance(doc, dict) and isinstance(doc.get("results"), dict) and isinstance(doc["results"].get("results"), list)):
        raise Skip("results.results", "a promptfoo results file holds the list results.results")
    default_grader = _provider(obj(obj(obj(doc.get("config")).get("defaultTest")).get("options")).get("provider"))
    for k, r in enumerate(doc["results"]["results"]):
        where = f"results.results[{k}]"
        try:
            if not isinstance(r, dict):
                raise Skip(None, "must be an object")
            provider = _provider(r.get("provider")) or "provider"
            prompt = obj(r.get("prompt")).get("raw")
            if not isinstance(prompt, str):
                raise Skip("prompt.raw", "must be a string")
            resp = obj(r.get("response"))
            if "output" not in resp:
                m.drop("outputs without a response (the provider failed)")
                continue
            output = resp["output"] if isinstance(resp["output"], str) else text_of(resp["output"])
            if len(prompt) > MAX_TEXT_CHARS or len(output) > MAX_TEXT_CHARS:
                raise Skip("response.output", f"a text is over the limit of {MAX_TEXT_CHARS:,} characters")
            vars_ = obj(r.get("vars"))
            item = point_item(NAME, (str(r.get("testIdx", k)), str(r.get("promptIdx", 0))), prompt, output, provider,
                              {"vars": vars_})
            m.item(item, f"{f}: {where}", (f, None))
            grading = obj(r.get("gradingResult"))
            for c, comp in enumerate(listed(grading.get("componentResults"), "gradingResult.componentResults")):
                _component(m, item, comp, default_grader, f"{where}.gradingResult.componentResults[{c}]")
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    m.settle(lambda criterion, _: pass_fail(criterion))
    return m


def criterion(a: dict[str, Any], kind: str) -> str:
    """The assertion's criterion: its ``metric``, else ``<type>: <value>`` (cut to 60 characters, with a hash)."""
    if isinstance(a.get("metric"), str) and a["metric"].strip():
        return a["metric"].strip()
    value = " ".join(text_of(a.get("value")).split())
    if not value:
        return str(kind)
    if len(value) > 60:
        value = f"{value[:60]}… #{stable_hash(value, 6)}"
    return f"{kind}: {value}"


def _passed(comp: dict[str, Any], score: float | None) -> bool | None:
    if isinstance(comp.get("pass"), bool):
        return bool(comp["pass"])
    return None if score not in (0.0, 1.0) else score == 1.0


def _component(m: Mapped, item: Item, comp: Any, default_grader: str | None, where: str) -> None:
    if not isinstance(comp, dict) or not isinstance(comp.get("assertion"), dict):
        m.drop("grading results without an assertion")
        return
    a = comp["assertion"]
    kind = a.get("type")
    score = finite(comp.get("score"))
    iid = item.item_id
    if kind == "human":
        passed = comp.get("pass")
        if not isinstance(passed, bool):
            m.drop("human ratings without a pass/fail")
            return
        m.vote("overall", iid, "pass" if passed else "fail", base=item, annotator="promptfoo-human",
               source=f"{NAME}:human", where=(where, None))
        return
    if kind not in MODEL_GRADED:
        m.drop(f"deterministic assertions ({kind}), not judges")
        return
    grader = _provider(a.get("provider")) or default_grader or "default grader"
    rubric = a.get("rubricPrompt") or a.get("value") or ""
    name = f"promptfoo:{kind}/{grader}"
    tokens = obj(comp.get("tokensUsed"))
    cost: dict[str, Any] = {"prompt_tokens": tokens.get("prompt"), "completion_tokens": tokens.get("completion")}
    graded = kind in GRADED_SCORES or (score is not None and score not in (0.0, 1.0))
    if graded:
        judge = m.judge(name, grader, rubric=text_of(rubric))
        m.verdict(judge, iid, score=score, raw=comp.get("reason"), where=(where, None), **cost)
        name, cost = f"{name} pass/fail", {}
    passed = _passed(comp, None if graded else score)
    if graded and passed is None:
        return  # a graded assertion without a pass/fail: its score is all it gave
    judge = m.judge(name, grader, rubric=text_of(rubric), threshold=finite(a.get("threshold")) if graded else None)
    m.vote(criterion(a, str(kind)), iid, None if passed is None else ("pass" if passed else "fail"), base=item,
           judge=judge, raw=comp.get("reason"), invalid=passed is None, where=(where, None), **cost)
