"""MLflow assessments, alone or with their traces (``mlflow.search_traces()`` saved as JSON, JSONL or
Parquet).

An assessment: ``assessment_name``, ``trace_id``, ``source`` {``source_type`` ``LLM_JUDGE``/``HUMAN``/
``CODE``, ``source_id``}, ``feedback`` {``value``}, ``rationale``, ``overrides`` (the assessment it
corrects), ``valid``. A trace row carries ``trace_id``, ``request``, ``response`` and its
``assessments``; a file of assessments alone refers to traces already in the workspace. A human
assessment that overrides a judge's is that person's label; the judge's overridden value stays its
verdict. Expectations (ground truth) are not feedback and are counted as dropped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, obj
from judgecal.data.formats.feedback import Feedback, add, add_all, add_run

NAME = "mlflow"
DESCRIPTION = "MLflow assessments (assessment_name, trace_id, source.source_type, feedback.value), or traces with them"
KINDS = {"LLM_JUDGE": "llm", "HUMAN": "human", "CODE": "code"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and (
        {"assessment_name", "trace_id", "source"} <= set(r) or {"trace_id", "assessments"} <= set(r)) for r in head)


def _feedback(a: dict[str, Any], request: Any = None, response: Any = None) -> Feedback | None:
    if not isinstance(a.get("trace_id"), str) or not isinstance(a.get("assessment_name"), str):
        raise Skip(None, "an assessment needs trace_id and assessment_name")
    if "feedback" not in a:
        return None
    source = obj(a.get("source"))
    kind = KINDS.get(str(source.get("source_type", "")).upper())
    if kind is None:
        raise Skip("source.source_type", f"unknown source type {source.get('source_type')!r}; expected LLM_JUDGE, "
                   "HUMAN or CODE")
    rater = source.get("source_id") if isinstance(source.get("source_id"), str) else None
    return Feedback(a["trace_id"], a["assessment_name"], kind, obj(a.get("feedback")).get("value"),
                    a.get("rationale"), rater, request, response)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    pending: list[Feedback] = []
    for n, rec in m.records(path):
        where = f"{f}:{n}" if n else f
        with m.at(path, n):
            if "assessments" in rec:
                listed = rec.get("assessments") or []
                if not isinstance(listed, list):
                    raise Skip("assessments", "must be a list")
                if not isinstance(rec.get("trace_id"), str):
                    raise Skip("trace_id", "must be a string")
                add_run(m, rec["trace_id"], rec.get("request"), rec.get("response"), where)
                pairs = [(a, rec.get("request"), rec.get("response")) for a in listed if isinstance(a, dict)]
            else:
                pairs = [(rec, None, None)]
            for a, req, resp in pairs:
                fb = _feedback({"trace_id": rec.get("trace_id"), **a}, req, resp)
                if fb is None:
                    m.drop("expectations (ground truth, not feedback)")
                    continue
                add(m, fb, where, pending)
    add_all(m, pending)
    return m
