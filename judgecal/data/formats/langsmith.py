"""LangSmith feedback exports (``client.list_feedback()`` saved as JSONL, JSON or CSV).

A record: ``run_id``, ``key`` (the feedback's name), ``score`` (a number or a boolean), ``value``,
``comment``, ``feedback_source`` {``type``: ``model`` for an LLM evaluator, ``app``/``api`` for a person,
``user_id``} (or, flattened, ``feedback_source.type``). A record that also carries the run's ``inputs``
and ``outputs`` brings the run as an item; otherwise the run must be in the workspace already.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, obj
from judgecal.data.formats.feedback import Feedback, add, add_all

NAME = "langsmith"
DESCRIPTION = "LangSmith feedback (run_id, key, score/value, comment, feedback_source.type)"
KINDS = {"model": "llm", "app": "human", "api": "human", "auto_eval": "llm"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"run_id", "key"} <= set(r) for r in head)


def _source(rec: dict[str, Any]) -> dict[str, Any]:
    src = rec.get("feedback_source")
    if isinstance(src, str):  # a CSV cell holding JSON
        try:
            src = json.loads(src)
        except ValueError:  # not JSON (or an integer of more than 4,300 digits): the cell is the type
            src = {"type": src}
        except RecursionError:
            raise Skip("feedback_source", "bad JSON: nested too deeply") from None
    out = obj(src)
    for k in ("type", "user_id", "user_name"):
        if f"feedback_source.{k}" in rec:
            out.setdefault(k, rec[f"feedback_source.{k}"])
    return out


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    pending: list[Feedback] = []
    for n, rec in m.records(path):
        with m.at(path, n):
            run, key = rec.get("run_id"), rec.get("key")
            if not isinstance(run, str) or not run.strip():
                raise Skip("run_id", "must be a run id")
            if not isinstance(key, str) or not key.strip():
                raise Skip("key", "must be the feedback's name")
            src = _source(rec)
            kind = KINDS.get(str(src.get("type", "")).lower())
            if kind is None:
                raise Skip("feedback_source.type", f"unknown source {src.get('type')!r}; expected model, app or api")
            value = rec.get("score") if rec.get("score") is not None else rec.get("value")
            who = src.get("user_name") or src.get("user_id")
            add(m, Feedback(run, key, kind, value, rec.get("comment"), str(who) if who and kind == "human" else None,
                            rec.get("inputs"), rec.get("outputs")), f"{f}:{n}" if n else f, pending)
    add_all(m, pending)
    return m
