"""Arize Phoenix span annotations and evaluations (a dataframe saved as JSONL, JSON, CSV or Parquet).

A record: ``span_id`` (or ``context.span_id``), ``name``, ``annotator_kind`` (``HUMAN``, ``LLM`` or
``CODE``), and the result as ``label``/``score``/``explanation`` or nested in ``result`` (or flattened,
``result.score``). A record that also carries the span's ``attributes.input.value`` and
``attributes.output.value`` brings the span as an item; otherwise the span must be in the workspace.
A person's id is ``identifier`` or ``user_id`` when the export has one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, obj
from judgecal.data.formats.feedback import Feedback, add, add_all

NAME = "phoenix"
DESCRIPTION = "Phoenix span annotations / evaluations (span_id, name, annotator_kind, label/score/explanation)"
KINDS = {"HUMAN": "human", "LLM": "llm", "CODE": "code"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and ("span_id" in r or "context.span_id" in r)
                              and "annotator_kind" in r for r in head)


def _result(rec: dict[str, Any], k: str) -> Any:
    return obj(rec.get("result")).get(k, rec.get(f"result.{k}", rec.get(k)))


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    pending: list[Feedback] = []
    for n, rec in m.records(path):
        with m.at(path, n):
            span = rec.get("span_id", rec.get("context.span_id"))
            if not isinstance(span, str) or not span.strip():
                raise Skip("span_id", "must be a span id")
            name = rec.get("name")
            if not isinstance(name, str) or not name.strip():
                raise Skip("name", "must be the annotation's name")
            kind = KINDS.get(str(rec.get("annotator_kind", "")).upper())
            if kind is None:
                raise Skip("annotator_kind", f"unknown annotator kind {rec.get('annotator_kind')!r}; expected HUMAN, "
                           "LLM or CODE")
            score = _result(rec, "score")
            label = _result(rec, "label")
            # a classification eval's score restates its label (1 or 0): the verdict is the label
            binary = isinstance(label, str) and label.strip() and score in (0, 1, "0", "1", 0.0, 1.0)
            value = label if binary or score is None else score
            who = rec.get("identifier") or rec.get("user_id")
            add(m, Feedback(span, name, kind, value, _result(rec, "explanation"),
                            str(who) if who and kind == "human" else None,
                            rec.get("attributes.input.value"), rec.get("attributes.output.value")),
                f"{f}:{n}" if n else f, pending)
    add_all(m, pending)
    return m
