"""Import the user's own items from JSONL, CSV or Parquet, all or nothing.

Schema (one record per line/row; ``id`` may be a string or an integer):

- pairwise: ``id``, ``prompt``, ``response_a``, ``response_b``; optional ``model_a``,
  ``model_b``, ``family_a``, ``family_b``, ``reference``, ``human_labels`` (object: annotator ->
  ``"A"``/``"B"``/``"tie"``), ``human_rationales`` (object: annotator -> the reason they gave, for an
  annotator with a label on that item), ``metadata`` (object).
- pointwise: ``id``, ``prompt``, ``response``; optional ``model``, ``family``, ``reference``,
  ``human_labels`` (annotator -> integer score), ``human_spans`` (annotator -> list of
  ``[start, end]`` or ``[start, end, label]``, character offsets into ``response``; an empty list
  when the annotator marked nothing), ``human_rationales``, ``metadata``.

Every problem is reported with file, line (1-based; the header is line 1 in a CSV, rows follow)
and field; nothing is written unless the whole file is valid.

Degenerate but valid input is accepted and counted in :attr:`ImportResult.counts`: an empty or
whitespace-only response (a refusal, a truncation: a real output, stored as given; an empty CSV cell in
a response column is an empty response), a zero-length span ``[s, s]`` (it marks nothing: dropped), a
``null`` label or span list (the annotator skipped the item: not a label). Parquet's nested columns are
read as their JSON equivalents (:mod:`judgecal.data.rows`), and a whole-number float id is that integer.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import errno
import io
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from judgecal.data.families import family_of
from judgecal.data.label_tasks import Declared, LabelSetError, expected, match, resolve
from judgecal.data.records import (
    LABEL_TASKS,
    VERDICTS,
    Annotation,
    Candidate,
    Item,
    LabelSet,
    Span,
    criterion_id,
)
from judgecal.data.rows import id_problem, parquet_rows, whole_id
from judgecal.data.span_import import parse_spans
from judgecal.data.store import Workspace
from judgecal.data.times import parse_period, parse_time
from judgecal.errors import InputError, UserError
from judgecal.inert import term

MAX_TEXT_CHARS = 200_000
PAIRWISE_FIELDS = {"id", "prompt", "response_a", "response_b", "model_a", "model_b", "family_a",
                   "family_b", "reference", "human_labels", "human_rationales", "metadata", "time", "period"}
POINTWISE_FIELDS = {"id", "prompt", "response", "model", "family", "reference", "human_labels", "human_spans",
                    "human_rationales", "metadata", "time", "period"}
LABEL_FIELDS = POINTWISE_FIELDS - {"human_spans"}  # a binary or categorical item: labels, not spans
TASKS = ("pairwise", "pointwise", *LABEL_TASKS)
SCORE_RANGE = (1, 10)
MAX_ID_CHARS = 1_000  # an item id or an annotator's name: a key, shown in every table
RESPONSES = ("response", "response_a", "response_b")  # may be empty: a refusal or a truncation is an output
MAX_DEPTH = 64  # nesting levels a record may have (metadata is small; deeper is refused, never a crash)


REQUIRED_TEXT = frozenset({"id", "prompt", "response_a", "response_b", "response", "item_id", "judge"})


def not_a_file(path: Path) -> str:
    """Why ``path``, which exists, is not a file to read: a folder, or a device, pipe or socket (a link
    to ``/dev/zero`` never ends)."""
    target = path.resolve()
    if target.is_dir():
        return "is a folder, not a file"
    via = f" (a link to {target})" if path.is_symlink() else ""
    return f"is not a regular file{via}: a device, pipe or socket is not read"


def not_there(path: Path) -> str | None:
    """Why ``path`` cannot be opened when it does not exist as far as a read can tell: a link that loops
    back on itself, a link to nothing, or no file at all; ``None`` when it is there."""
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symbolic link loop (it never reaches a file)"
        return "file does not exist" + (f" (a link to {os.readlink(path)})" if path.is_symlink() else "")
    return None


def metadata_problem(field: str, v: Any) -> tuple[str, str] | None:
    """Metadata that JSON and the store can hold: valid Unicode, finite numbers, JSON's types only (no bytes), at most
    64 levels deep."""
    depth, bad = _scan({field: v})
    if depth > MAX_DEPTH:
        return field, f"nested more than {MAX_DEPTH} levels deep"
    if bad:
        return bad, "holds a lone surrogate (\\ud800-\\udfff), not valid Unicode"
    stack: list[tuple[str, Any]] = [(field, v)]
    while stack:
        where, x = stack.pop()
        if isinstance(x, dict):
            stack.extend((f"{where}.{k}", y) for k, y in x.items())
        elif isinstance(x, list | tuple):
            stack.extend((f"{where}[{i}]", y) for i, y in enumerate(x))
        elif isinstance(x, float) and not math.isfinite(x):
            return where, f"must be a finite number, got {x}"
        elif x is not None and not isinstance(x, str | int | float | bool):
            return where, f"must be text, a number, true/false, null, a list or an object (got {type(x).__name__})"
    return None


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        """``file:line: field: message`` on one line: a name from the file (a field naming an annotator, a
        judge in the message) shows its newlines and other control characters escaped (:func:`judgecal.inert.term`)."""
        where = term(self.file) + (f":{self.line}" if self.line is not None else "")
        return f"{where}: {term(self.field) + ': ' if self.field else ''}{term(self.message)}"


class ImportValidationError(UserError, ValueError):
    """Raised with every problem found; nothing was written."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        if len(problems) == 1:
            super().__init__(f"{problems[0]} (nothing imported)")
        else:
            super().__init__(f"{len(problems)} problem(s), nothing imported:\n{shown}{more}")


@dataclass
class ImportResult:
    items: list[Item] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)  # item id -> line it came from
    written: dict[str, int] = field(default_factory=dict)  # after the write: new items, annotations, spans
    # degenerate but valid input, accepted and counted: empty responses, zero-length spans dropped,
    # null (skipped) labels and span lists
    counts: dict[str, int] = field(default_factory=lambda: {"empty_responses": 0, "zero_length_spans": 0,
                                                            "skipped_labels": 0})


def _records(path: Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """Read (line, record) pairs; undecodable lines become problems."""
    f = str(path)
    if (why := not_there(path)) is not None:
        return [], [Problem(f, None, None, why)]
    if not path.is_file():
        return [], [Problem(f, None, None, not_a_file(path))]
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return _jsonl_records(path, f)
    if suffix in (".csv", ".parquet"):
        if suffix == ".csv":
            try:
                data = path.read_bytes()
            except OSError as exc:
                return [], [Problem(f, None, None, f"cannot read: {exc.strerror}")]
            raw, problems = _csv_rows(data, f)
        else:
            try:
                table = parquet_rows(path)
            except Exception as exc:  # pyarrow raises many types for unreadable files
                return [], [Problem(f, None, None, f"cannot read as parquet: {exc}")]
            raw, problems = [(n, {str(k): v for k, v in r.items()}) for n, r in enumerate(table, start=1)], []
        rows = []
        for n, rec in raw:
            # an empty cell is an absent value, except in a required text column, where it is named as empty
            clean = {k: v for k, v in rec.items() if not (v is None or (isinstance(v, float) and math.isnan(v))
                                                          or (v == "" and k not in REQUIRED_TEXT))}
            for k in ("human_labels", "human_rationales", "human_spans", "metadata"):
                if isinstance(clean.get(k), str):
                    with contextlib.suppress(json.JSONDecodeError, RecursionError):
                        clean[k] = json.loads(clean[k])
            rows.append((n, clean))
        return rows, problems
    return [], [Problem(f, None, None, f"unknown file type {suffix!r}; use .jsonl, .csv or .parquet")]


class DuplicateKey(ValueError):
    """A key given twice in one JSON object (e.g. an annotator twice in ``human_labels``)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: JSON parsers keep the last of a repeated key silently, so an
    annotator's first label would be lost without a word."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f"{key[:80]!r} given twice in one object (one key, one value: the first would "
                                   "be lost)")
            seen.add(key)
    return d


def _jsonl_records(path: Path, f: str) -> tuple[list[tuple[int, Any]], list[Problem]]:
    out, problems = [], []
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed below)
    except OSError as exc:
        return [], [Problem(f, None, None, f"cannot read: {exc.strerror}")]
    with fh:
        for n, raw in enumerate(fh, start=1):
            if n == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]  # a byte-order mark, as some editors write (and CSV allows)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.append(Problem(f, n, None, f"invalid UTF-8 at byte {exc.start}"))
                continue
            if not text.strip():
                continue
            try:
                out.append((n, json.loads(text, object_pairs_hook=_unique_keys)))
            except json.JSONDecodeError as exc:
                problems.append(Problem(f, n, None, f"bad JSON: {exc.msg} at column {exc.colno}"))
            except DuplicateKey as exc:
                problems.append(Problem(f, n, None, str(exc)))
            except RecursionError:
                problems.append(Problem(f, n, None, f"bad JSON: nested more than {MAX_DEPTH} levels deep"))
            except ValueError as exc:  # e.g. an integer of more than 4,300 digits
                problems.append(Problem(f, n, None, f"bad JSON: {str(exc).splitlines()[0]}"))
    return out, problems


def _csv_rows(data: bytes, f: str) -> tuple[list[tuple[int, dict[str, Any]]], list[Problem]]:
    """Rows keyed by the header, each with the physical line it starts on (a quoted field may span lines)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [Problem(f, data[: exc.start].count(b"\n") + 1, None, f"invalid UTF-8 at byte {exc.start}")]
    csv.field_size_limit(max(csv.field_size_limit(), 4 * MAX_TEXT_CHARS))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)  # strict: an unclosed quote is an error
    rows: list[tuple[int, dict[str, Any]]] = []
    problems: list[Problem] = []
    end = 0  # the physical line the last record ended on
    try:
        header = next(reader, None)
        if header is None:
            return [], []
        dup = sorted({c for c in header if header.count(c) > 1})
        if dup:
            return [], [Problem(f, 1, dup[0], "duplicate column")]
        end = reader.line_num
        for rec in reader:
            start, end = end + 1, reader.line_num
            if not rec:
                continue  # a blank line
            if len(rec) > len(header):
                problems.append(Problem(f, start, None, f"{len(rec)} fields, but the header names {len(header)}"))
                continue
            rows.append((start, dict(zip(header, rec, strict=False))))  # missing trailing fields: absent
    except csv.Error as exc:  # reported on the line where the record it could not read starts
        why = "a quoted field is not closed by the end of the file" if "end of data" in str(exc) else str(exc)
        problems.append(Problem(f, end + 1, None, f"bad CSV: {why}"))
    return rows, problems


def _scan(rec: dict[str, Any]) -> tuple[int, str | None]:
    """The nesting depth of ``rec`` and the first field holding text that is not valid Unicode (a lone
    surrogate such as JSON's ``"\\ud800"``, which no UTF-8 store or file can hold)."""
    depth, bad = 0, None
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in rec.items()]
    if any(isinstance(k, str) and not _is_unicode(k) for k in rec):
        bad = "(a field name)"
    while stack:
        where, v, d = stack.pop()
        depth = max(depth, d)
        if isinstance(v, dict):
            if bad is None and any(isinstance(k, str) and not _is_unicode(k) for k in v):
                bad = where
            stack.extend((f"{where}.{k}", x, d + 1) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((where, x, d + 1) for x in v)
        elif bad is None and isinstance(v, str) and not _is_unicode(v):
            bad = where
    return depth, bad


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _score(label: Any) -> Any:
    """A pointwise score written as a whole number (``7``, ``"7"``, ``7.0``, ``"7.0"``) as an int; anything
    else unchanged (and then refused). Only ASCII digits count: ``"²"`` is not a score."""
    if isinstance(label, float) and label.is_integer():
        return int(label)
    if isinstance(label, str) and re.fullmatch(r"\s*[0-9]+(\.0*)?\s*", label):
        return int(float(label))
    return label


def _text(rec: dict[str, Any], key: str, f: str, n: int, problems: list[Problem], required: bool) -> str | None:
    v = rec.get(key)
    if v is None:
        if required:
            problems.append(Problem(f, n, key, "missing required field"))
        return None
    if not isinstance(v, str):
        problems.append(Problem(f, n, key, f"must be a string, got {type(v).__name__}"))
        return None
    if required and not v.strip() and key not in RESPONSES:
        problems.append(Problem(f, n, key, "is empty"))
        return None
    if len(v) > MAX_TEXT_CHARS:
        problems.append(Problem(f, n, key, f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,}"))
        return None
    return v


def _other_task(records: list[tuple[int, Any]], task: str) -> tuple[int, str, str] | None:
    """``(line, field, other task)`` when every record has the other task's response field(s) and none of
    this task's: a pointwise file imported without ``--task pointwise`` (or the reverse)."""
    mine, theirs, other = ((("response_a", "response_b"), ("response",), "pointwise") if task == "pairwise"
                           else (("response",), ("response_a", "response_b"), "pairwise"))
    dicts = [(n, r) for n, r in records if isinstance(r, dict)]
    if not dicts or len(dicts) != len(records):
        return None
    if all(any(k in r for k in theirs) and not any(k in r for k in mine) for _, r in dicts):
        return dicts[0][0], theirs[0], other
    return None


# progress(done, total, step): where a long import is (judgecal.progress.Bar.report)
Progress = Callable[[int, int, str], None]
WRITE_CHUNK = 5000  # rows per write between two progress reports


def _seen_labels(records: list[tuple[int, Any]]) -> list[Any]:
    """Every human label value of the file, in order (inside criterion objects too)."""
    out: list[Any] = []
    for _, rec in records:
        labels = rec.get("human_labels") if isinstance(rec, dict) else None
        for v in (labels.values() if isinstance(labels, dict) else ()):
            out.extend(v.values() if isinstance(v, dict) else [v])
    return out


def parse_records(path: Path, task: str, source: str, progress: Progress | None = None,
                  declared: Declared | None = None) -> tuple[ImportResult, list[Problem]]:
    f = str(path)
    records, problems = _records(path)
    if not records and not problems:
        problems.append(Problem(f, None, None, "no records"))
    allowed = PAIRWISE_FIELDS if task == "pairwise" else POINTWISE_FIELDS
    result = ImportResult()
    label_sets: dict[str, LabelSet] = {}
    if declared is not None:
        allowed = LABEL_FIELDS
        try:
            label_sets = {c: resolve(declared, _seen_labels(records), c) for c in (declared.criteria or ("",))}
        except LabelSetError as exc:
            return result, [*problems, Problem(f, None, "human_labels", str(exc))]
        task = "pointwise"
    shape = None if problems else _other_task(records, task)
    if shape is not None:  # one line instead of every record's every field
        n, field, other = shape
        return result, [Problem(f, n, field, f"a {other} item's field, and no record is a {task} item: "
                                f"this file looks {other}; import it with --task {other}"
                                + (" (the default)" if other == "pairwise" else ""))]
    seen = result.lines
    for k, (n, rec) in enumerate(records):
        if progress is not None and not k % 1000:
            progress(k, len(records), "checking")
        if not isinstance(rec, dict):
            problems.append(Problem(f, n, None, f"a record must be an object, got {type(rec).__name__}"))
            continue
        depth, not_unicode = _scan(rec)
        if depth > MAX_DEPTH:
            problems.append(Problem(f, n, None, f"nested more than {MAX_DEPTH} levels deep"))
            continue
        if not_unicode:
            problems.append(Problem(f, n, not_unicode, "holds a lone surrogate (\\ud800-\\udfff), not valid Unicode"))
            continue
        for k in sorted(set(rec) - allowed):
            problems.append(Problem(f, n, k, f"unknown field for a {task} item"))
        raw_id = whole_id(rec.get("id"))
        if raw_id is None:
            problems.append(Problem(f, n, "id", "missing required field"))
            continue
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or str(raw_id).strip() == "":
            problems.append(Problem(f, n, "id", id_problem(raw_id)))
            continue
        item_id = str(raw_id)
        if len(item_id) > MAX_ID_CHARS:
            problems.append(Problem(f, n, "id", f"is {len(item_id):,} characters; the limit is {MAX_ID_CHARS:,}"))
            continue
        if item_id in seen:
            problems.append(Problem(f, n, "id", f"duplicate id {item_id!r} (first on line {seen[item_id]})"))
            continue
        seen[item_id] = n
        prompt = _text(rec, "prompt", f, n, problems, True)
        reference = _text(rec, "reference", f, n, problems, False)
        meta = rec.get("metadata", {})
        if not isinstance(meta, dict):
            problems.append(Problem(f, n, "metadata", "must be an object"))
            meta = {}
        elif why := metadata_problem("metadata", meta):
            problems.append(Problem(f, n, *why))
            meta = {}
        meta = _when(rec, meta, f, n, problems)
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
                result.counts["empty_responses"] += not text.strip()
                cands.append(Candidate(text, model, fam or family_of(model)))
        labels = rec.get("human_labels", {})
        anns = []
        if not isinstance(labels, dict):
            problems.append(Problem(f, n, "human_labels", "must be an object of annotator -> label"))
            labels = {}
        for annotator, label in labels.items():
            if len(str(annotator)) > MAX_ID_CHARS:
                problems.append(Problem(f, n, "human_labels", f"an annotator's name is {len(str(annotator)):,} "
                                        f"characters; the limit is {MAX_ID_CHARS:,}"))
                continue
            if label is None:  # the annotator skipped the item: not a label, not an error
                result.counts["skipped_labels"] += 1
                continue
            if label_sets:
                anns.extend(_labels_of(item_id, str(annotator), label, label_sets, source, f, n, problems,
                                       result.counts))
                continue
            if task == "pointwise":
                label = _score(label)
            if isinstance(label, bool | list | dict) or label not in valid_labels:
                want = "A, B or tie" if task == "pairwise" else f"an integer {SCORE_RANGE[0]}-{SCORE_RANGE[1]}"
                shown = repr(label) if len(repr(label)) <= 40 else repr(label)[:37] + "..."
                problems.append(Problem(f, n, f"human_labels.{annotator}", f"unknown label {shown}; expected {want}"))
                continue
            anns.append(Annotation(item_id, str(annotator), str(label), "AB", None, source, f"{source}/{item_id}/{annotator}"))
        anns = _with_rationales(rec.get("human_rationales"), anns, f, n, problems)
        if prompt is None or len(cands) != len(keys):
            continue
        if label_sets:
            result.items.extend(_label_items(item_id, prompt, cands, reference, source, meta, label_sets))
            result.annotations.extend(anns)
            if len(label_sets) > 1:  # one record, one item per criterion: each is traced to its line
                seen.update({criterion_id(item_id, c): n for c in label_sets})
            continue
        result.items.append(Item(item_id, prompt, cands, task, reference, source, meta))  # type: ignore[arg-type]
        spans, bad = parse_spans(rec.get("human_spans"), cands[0].text, item_id, source, counts=result.counts)
        problems.extend(Problem(f, n, fld, msg) for fld, msg in bad)
        result.spans.extend(spans)
        result.annotations.extend(anns)
    return result, problems


def _labels_of(item_id: str, annotator: str, label: Any, label_sets: dict[str, LabelSet], source: str, f: str,
               n: int, problems: list[Problem], counts: dict[str, int]) -> list[Annotation]:
    """One annotator's label(s) on a binary or categorical record: one label, or with criteria an object
    ``{criterion: label}`` (a criterion left out or ``null``: skipped)."""
    fld = f"human_labels.{annotator}"
    if "" in label_sets:
        given = {"": label}
    elif not isinstance(label, dict):
        problems.append(Problem(f, n, fld, f"must be an object of criterion -> label ({', '.join(label_sets)})"))
        return []
    else:
        given = {str(k): v for k, v in label.items()}
    out = []
    for crit, value in given.items():
        where = f"{fld}.{crit}" if crit else fld
        ls = label_sets.get(crit)
        if ls is None:
            problems.append(Problem(f, n, where, f"unknown criterion; declared: {', '.join(label_sets)}"))
            continue
        if value is None:
            counts["skipped_labels"] += 1
            continue
        got = match(value, ls.labels)
        if got is None:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
            problems.append(Problem(f, n, where, f"unknown label {shown}; expected {expected(ls)}"))
            continue
        iid = criterion_id(item_id, crit) if crit else item_id
        out.append(Annotation(iid, annotator, got, None, None, source, f"{source}/{iid}/{annotator}"))
    return out


def _when(rec: dict[str, Any], meta: dict[str, Any], f: str, n: int, problems: list[Problem]) -> dict[str, Any]:
    """``meta`` with the record's ``time`` (ISO 8601, stored as UTC) and ``period`` (a name), when given."""
    out = meta
    for key, parse in (("time", parse_time), ("period", parse_period)):
        if rec.get(key) is None:
            continue
        if key in meta:
            problems.append(Problem(f, n, key, f"given twice: as the record's {key} and as metadata.{key}"))
            continue
        try:
            out = {**out, key: parse(rec[key])}
        except ValueError as exc:
            problems.append(Problem(f, n, key, str(exc)))
    return out


def _label_items(item_id: str, prompt: str, cands: list[Candidate], reference: str | None, source: str,
                 meta: dict[str, Any], label_sets: dict[str, LabelSet]) -> list[Item]:
    """The record's item, or one item per criterion (``<id>/<criterion>``, the criterion escaped as
    :func:`criterion_id` does, ``metadata.criterion`` and ``metadata.record`` set), each carrying its label set."""
    if "" in label_sets:
        return [Item(item_id, prompt, cands, "pointwise", reference, source, meta, label_sets[""].to_dict())]
    return [Item(criterion_id(item_id, c), prompt, cands, "pointwise", reference, source,
                 {**meta, "criterion": c, "record": item_id}, ls.to_dict()) for c, ls in label_sets.items()]


def _with_rationales(raw: Any, anns: list[Annotation], f: str, n: int,
                     problems: list[Problem]) -> list[Annotation]:
    """``anns`` with each annotator's rationale (``human_rationales``: annotator -> text) attached (to each
    of their labels on a multi-criterion record); a rationale must belong to an annotator who labelled the
    item. ``null`` or blank text is no rationale."""
    if raw is None:
        return anns
    if not isinstance(raw, dict):
        problems.append(Problem(f, n, "human_rationales", "must be an object of annotator -> text"))
        return anns
    who_labelled = {a.annotator for a in anns}
    given: dict[str, str] = {}
    for who, text in raw.items():
        fld = f"human_rationales.{who}"
        if text is None or (isinstance(text, str) and not text.strip()):
            continue
        if not isinstance(text, str):
            problems.append(Problem(f, n, fld, f"must be text, not {type(text).__name__}"))
        elif len(text) > MAX_TEXT_CHARS:
            problems.append(Problem(f, n, fld, f"is {len(text):,} characters; the limit is {MAX_TEXT_CHARS:,}"))
        elif str(who) not in who_labelled:
            problems.append(Problem(f, n, fld, f"{who!r} has no label on this item in human_labels"))
        else:
            given[str(who)] = text.strip()
    return [replace(a, rationale=given[a.annotator]) if a.annotator in given else a for a in anns]


def validate_file(path: str | Path, task: str = "pairwise", source: str | None = None,
                  progress: Progress | None = None, declared: Declared | None = None) -> ImportResult:
    """Parse and validate ``path`` completely; raise :class:`ImportValidationError` naming every problem.
    ``task`` binary or categorical takes its labels from ``declared`` (:func:`judgecal.data.label_tasks.declare`)."""
    if task not in TASKS:
        raise InputError(f"task must be one of {', '.join(TASKS)}, got {task!r}", name="task")
    if (task in LABEL_TASKS) != (declared is not None) or (declared is not None and declared.task != task):
        raise InputError(f"task {task}: the labels are declared for binary and categorical tasks only", name="task")
    p = Path(path)
    result, problems = parse_records(p, task, source or p.stem, progress, declared)
    if problems:
        raise ImportValidationError(problems)
    return result


def import_file(
    ws: Workspace, path: str | Path, task: str = "pairwise", source: str | None = None,
    validated: ImportResult | None = None, progress: Progress | None = None, declared: Declared | None = None,
) -> ImportResult:
    """Validate ``path`` completely (unless ``validated`` is given), then write all of it in one transaction
    (``progress`` hears the rows written so far, in chunks)."""
    p = Path(path)
    result = validated if validated is not None else validate_file(p, task, source, progress, declared)
    rows = len(result.items) + len(result.annotations) + len(result.spans)

    def wrote(n: int) -> None:
        if progress is not None:
            progress(n, rows, "writing")

    # an id already stored is checked inside the write transaction: identical content is skipped,
    # other content refused (ItemConflictError), so concurrent imports cannot overwrite each other
    with ws.transaction() as tx:
        def count(table: str) -> int:
            return int(tx.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

        before = {"annotations": count("annotations"), "spans": count("spans")}
        changed = ws.annotations_repo.changed_annotations(result.annotations, conn=tx)
        items = ws.items_repo.add_items(result.items, conn=tx, origins={i: f"{p}:{n}" for i, n in result.lines.items()},
                             progress=wrote)
        for k in range(0, len(result.annotations), WRITE_CHUNK):
            ws.annotations_repo.add_annotations(result.annotations[k : k + WRITE_CHUNK], conn=tx)
            wrote(len(result.items) + min(k + WRITE_CHUNK, len(result.annotations)))
        ws.spans_repo.add_spans(result.spans, conn=tx)
        wrote(rows)
        result.written = {"items": items, "annotations": count("annotations") - before["annotations"],
                          "changed_annotations": changed, "spans": count("spans") - before["spans"]}
    return result
