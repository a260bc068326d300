"""promptfoo's ``results.json`` (``promptfoo eval -o results.json``).

``results.results[]``: one output per test and prompt — ``testIdx``, ``promptIdx``, ``vars``, ``prompt.raw``,
``provider`` (``id``), ``response`` (``output``, ``tokenUsage``, ``cost``), ``latencyMs`` — and its
``gradingResult.componentResults[]`` {``pass``, ``score``, ``reason``, ``assertion`` {``type``, ``value``,
``provider``, ``rubricPrompt``}}. Each output becomes a pointwise item (``promptfoo/<test>/<prompt>/<provider>``)
written by its provider. A model-graded assertion (``llm-rubric``, ``g-eval``, ``factuality``,
``model-graded-*``, ``answer-relevance``, ``context-*``, ``select-best``) is a judge named
``promptfoo:<type>/<grader>`` with its rubric; its verdict is a score when the score is graded (``g-eval``,
or any score other than 0 and 1), else it is pass/fail and waits for the binary task type. A ``human``
assertion (a rating in promptfoo's viewer) is a person's label, pass/fail as well. Deterministic
assertions (``contains``, ``equals``, ``javascript`` …) are not judges and are counted as dropped.
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
from judgecal.data.importers import MAX_TEXT_CHARS, Problem

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
    m = Mapped(NAME)
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
            iid = f"{NAME}/{r.get('testIdx', k)}/{r.get('promptIdx', 0)}/{provider}"
            vars_ = obj(r.get("vars"))
            m.item(point_item(NAME, iid, prompt, output, provider, {"vars": vars_}), f"{f}: {where}", (f, None))
            grading = obj(r.get("gradingResult"))
            for c, comp in enumerate(listed(grading.get("componentResults"), "gradingResult.componentResults")):
                _component(m, iid, comp, default_grader, f"{where}.gradingResult.componentResults[{c}]")
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    return m


def _component(m: Mapped, iid: str, comp: Any, default_grader: str | None, where: str) -> None:
    if not isinstance(comp, dict) or not isinstance(comp.get("assertion"), dict):
        m.drop("grading results without an assertion")
        return
    a = comp["assertion"]
    kind = a.get("type")
    score = finite(comp.get("score"))
    if kind == "human":
        if score is not None and score not in (0.0, 1.0):
            m.wait("human ratings with a fractional score (judgecal's labels are 1-10)")
        else:
            m.wait("human pass/fail ratings")
        return
    if kind not in MODEL_GRADED:
        m.drop(f"deterministic assertions ({kind}), not judges")
        return
    grader = _provider(a.get("provider")) or default_grader or "default grader"
    rubric = a.get("rubricPrompt") or a.get("value") or ""
    judge = m.judge(f"promptfoo:{kind}/{grader}", grader, rubric=text_of(rubric))
    if kind in GRADED_SCORES or (score is not None and score not in (0.0, 1.0)):
        tokens = obj(comp.get("tokensUsed"))
        m.verdict(judge, iid, score=score, raw=comp.get("reason"), prompt_tokens=tokens.get("prompt"),
                  completion_tokens=tokens.get("completion"), where=(where, None))
    else:
        m.wait(f"promptfoo:{kind} pass/fail verdicts")
