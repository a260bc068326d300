"""Import the user's own items from JSONL, CSV or Parquet, all or nothing.

Schema (one record per line/row; ``id`` may be a string or an integer):

- pairwise: ``id``, ``prompt``, ``response_a``, ``response_b``; optional ``model_a``,
  ``model_b``, ``family_a``, ``family_b``, ``reference``, ``human_labels`` (object: annotator ->
  ``"A"``/``"B"``/``"tie"``), ``metadata`` (object).
- pointwise: ``id``, ``prompt``, ``response``; optional ``model``, ``family``, ``reference``,
  ``human_labels`` (annotator -> integer score), ``metadata``.

Every problem is reported with file, line (1-based; the header is line 1 in a CSV, rows follow)
and field; nothing is written unless the whole file is valid.
"""

from __future__ import annotations

import contextlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecal.data.families import family_of
from judgecal.data.records import VERDICTS, Annotation, Candidate, Item
from judgecal.data.store import Workspace

MAX_TEXT_CHARS = 200_000
PAIRWISE_FIELDS = {"id", "prompt", "response_a", "response_b", "model_a", "model_b", "family_a",
                   "family_b", "reference", "human_labels", "metadata"}
POINTWISE_FIELDS = {"id", "prompt", "response", "model", "family", "reference", "human_labels", "metadata"}
SCORE_RANGE = (1, 10)


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {self.field + ': ' if self.field else ''}{self.message}"


class ImportValidationError(ValueError):
    """Raised with every problem found; nothing was written."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(f"{len(problems)} problem(s), nothing imported:\n{shown}{more}")


@dataclass
class ImportResult:
    items: list[Item] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


def _records(path: Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """Read (line, record) pairs; undecodable lines become problems."""
    f = str(path)
    if not path.exists():
        return [], [Problem(f, None, None, "file does not exist")]
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        out, problems = [], []
        with open(path, "rb") as fh:
            for n, raw in enumerate(fh, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    problems.append(Problem(f, n, None, f"invalid UTF-8 at byte {exc.start}"))
                    continue
                if not text.strip():
                    continue
                try:
                    out.append((n, json.loads(text)))
                except json.JSONDecodeError as exc:
                    problems.append(Problem(f, n, None, f"bad JSON: {exc.msg} at column {exc.colno}"))
        return out, problems
    if suffix in (".csv", ".parquet"):
        import pandas as pd

        try:
            if suffix == ".csv":
                df = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
                first = 2
            else:
                df = pd.read_parquet(path)
                first = 1
        except UnicodeDecodeError as exc:
            return [], [Problem(f, None, None, f"invalid UTF-8 at byte {exc.start}")]
        except Exception as exc:  # pandas/pyarrow raise many types for unreadable files
            return [], [Problem(f, None, None, f"cannot read as {suffix[1:]}: {exc}")]
        rows = []
        for n, rec in enumerate(df.to_dict(orient="records"), start=first):
            clean = {k: v for k, v in rec.items() if not (v is None or (isinstance(v, float) and math.isnan(v)) or v == "")}
            for k in ("human_labels", "metadata"):
                if isinstance(clean.get(k), str):
                    with contextlib.suppress(json.JSONDecodeError):
                        clean[k] = json.loads(clean[k])
            rows.append((n, clean))
        return rows, []
    return [], [Problem(f, None, None, f"unknown file type {suffix!r}; use .jsonl, .csv or .parquet")]


def _text(rec: dict[str, Any], key: str, f: str, n: int, problems: list[Problem], required: bool) -> str | None:
    v = rec.get(key)
    if v is None:
        if required:
            problems.append(Problem(f, n, key, "missing required field"))
        return None
    if not isinstance(v, str):
        problems.append(Problem(f, n, key, f"must be a string, got {type(v).__name__}"))
        return None
    if required and not v.strip():
        problems.append(Problem(f, n, key, "is empty"))
        return None
    if len(v) > MAX_TEXT_CHARS:
        problems.append(Problem(f, n, key, f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,}"))
        return None
    return v


def parse_records(path: Path, task: str, source: str, existing_ids: set[str]) -> tuple[ImportResult, list[Problem]]:
    f = str(path)
    records, problems = _records(path)
    if not records and not problems:
        problems.append(Problem(f, None, None, "no records"))
    allowed = PAIRWISE_FIELDS if task == "pairwise" else POINTWISE_FIELDS
    seen: dict[str, int] = {}
    result = ImportResult()
    for n, rec in records:
        if not isinstance(rec, dict):
            problems.append(Problem(f, n, None, f"a record must be an object, got {type(rec).__name__}"))
            continue
        for k in sorted(set(rec) - allowed):
            problems.append(Problem(f, n, k, f"unknown field for a {task} item"))
        raw_id = rec.get("id")
        if raw_id is None:
            problems.append(Problem(f, n, "id", "missing required field"))
            continue
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id).strip() == "":
            problems.append(Problem(f, n, "id", "must be a non-empty string or an integer"))
            continue
        item_id = str(raw_id)
        if item_id in seen:
            problems.append(Problem(f, n, "id", f"duplicate id {item_id!r} (first on line {seen[item_id]})"))
            continue
        seen[item_id] = n
        if item_id in existing_ids:
            problems.append(Problem(f, n, "id", f"id {item_id!r} already exists in the workspace"))
        prompt = _text(rec, "prompt", f, n, problems, True)
        reference = _text(rec, "reference", f, n, problems, False)
        meta = rec.get("metadata", {})
        if not isinstance(meta, dict):
            problems.append(Problem(f, n, "metadata", "must be an object"))
            meta = {}
        if task == "pairwise":
            keys = [("response_a", "model_a", "family_a"), ("response_b", "model_b", "family_b")]
            valid_labels: set[Any] = set(VERDICTS)
        else:
            keys = [("response", "model", "family")]
            valid_labels = set(range(SCORE_RANGE[0], SCORE_RANGE[1] + 1))
        cands = []
        for rk, mk, fk in keys:
            text = _text(rec, rk, f, n, problems, True)
            model = _text(rec, mk, f, n, problems, False)
            fam = _text(rec, fk, f, n, problems, False)
            if text is not None:
                cands.append(Candidate(text, model, fam or family_of(model)))
        labels = rec.get("human_labels", {})
        anns = []
        if not isinstance(labels, dict):
            problems.append(Problem(f, n, "human_labels", "must be an object of annotator -> label"))
            labels = {}
        for annotator, label in labels.items():
            if task == "pointwise" and isinstance(label, str) and label.strip().isdigit():
                label = int(label)
            if isinstance(label, bool) or label not in valid_labels:
                want = "A, B or tie" if task == "pairwise" else f"an integer {SCORE_RANGE[0]}-{SCORE_RANGE[1]}"
                problems.append(Problem(f, n, f"human_labels.{annotator}", f"unknown label {label!r}; expected {want}"))
                continue
            anns.append(Annotation(item_id, str(annotator), str(label), "AB", None, source, f"{source}/{item_id}/{annotator}"))
        if prompt is None or len(cands) != len(keys):
            continue
        result.items.append(Item(item_id, prompt, cands, task, reference, source, meta))  # type: ignore[arg-type]
        result.annotations.extend(anns)
    return result, problems


def import_file(ws: Workspace, path: str | Path, task: str = "pairwise", source: str | None = None) -> ImportResult:
    """Validate ``path`` completely, then write all of it in one transaction (or nothing)."""
    if task not in ("pairwise", "pointwise"):
        raise ValueError(f"task must be 'pairwise' or 'pointwise', got {task!r}")
    p = Path(path)
    result, problems = parse_records(p, task, source or p.stem, ws.item_ids())
    if problems:
        raise ImportValidationError(problems)
    with ws.transaction() as tx:
        ws.add_items(result.items, conn=tx)
        ws.add_annotations(result.annotations, conn=tx)
    return result
