"""What every format importer shares: reading JSON with line numbers, and the :class:`Mapped` result.

A format module maps one file, all or nothing, into judgecal's records: items, verdicts (in item
orientation, with order, probabilities, raw text, tokens, cost and latency when the file has them),
human labels under a named source, and a judge spec per grader. What it cannot map is counted with
its reason in ``dropped`` (it has no place in judgecal, e.g. a deterministic assertion or a code scorer),
never silently. A binary or categorical verdict or label (pass/fail, C/I, a boolean, a class) is a
:class:`Vote` until the whole file is read; :meth:`Mapped.settle` then gives each criterion one label set
for the file (:mod:`judgecal.data.formats.labels`) and makes each vote a verdict or a label on the
criterion's item ``<record>/<criterion>``. Malformed input is a :class:`Problem` naming file, line and
field, and nothing is written.
"""

from __future__ import annotations

import json
import math
import numbers
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from judgecal.data.families import family_of
from judgecal.data.formats import checks
from judgecal.data.formats.labels import declare, label_text
from judgecal.data.importers import MAX_TEXT_CHARS, Problem, _scan
from judgecal.data.records import (
    Annotation,
    Candidate,
    Item,
    Judgment,
    LabelSet,
    Span,
    criterion_id,
    escape,
    stable_hash,
    to_item_orientation,
)
from judgecal.data.rows import id_problem, parquet_rows, whole_id
from judgecal.data.specs import JudgeSpec


class Skip(ValueError):
    """A field's problem inside a format module: becomes a :class:`Problem` at the record's line."""

    def __init__(self, field: str | None, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.line = line


@dataclass
class Vote:
    """A binary or categorical value given on one record and criterion, kept until the file's label set of
    that criterion is known: a judge's verdict (``judge``) or a person's label (``annotator``, ``source``)."""

    criterion: str
    record: str  # the record's item id; the criterion's item is ``<record>/<criterion>``
    base: Item | None  # the record's texts (a pointwise item); None: the record is in the workspace already
    value: Any  # the file's value; None: a person skipped it
    judge: str | None = None
    annotator: str = ""
    source: str = ""
    raw: Any = ""
    invalid: bool = False  # a judge's call that gave no value (an error)
    where: tuple[str, int | None] = ("", None)
    extra: dict[str, Any] = field(default_factory=dict)  # tokens, cost, latency; a person's time_spent_s
    label_field: str = "label"  # where the file gives a person's value (named when it conflicts with another)

    @property
    def item_id(self) -> str:
        return criterion_id(self.record, self.criterion)


Declare = Callable[[str, list[str]], LabelSet | str]


@dataclass
class Mapped:
    """One file mapped into judgecal's records, with what was left out and why."""

    fmt: str
    path: str = ""
    items: dict[str, Item] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    judgments: dict[str, Judgment] = field(default_factory=dict)
    specs: dict[str, JudgeSpec] = field(default_factory=dict)  # judge name -> spec
    spans: list[Span] = field(default_factory=list)
    origins: dict[str, str] = field(default_factory=dict)  # item id -> file:line
    dropped: Counter[str] = field(default_factory=Counter)  # reason -> records
    counts: dict[str, int] = field(default_factory=lambda: {"empty_responses": 0, "zero_length_spans": 0,
                                                            "skipped_labels": 0, "duplicate_labels": 0})
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # items the file refers to without their texts (feedback on runs): id -> where; they must be in the
    # workspace already (imported with those ids), or nothing is written
    external: dict[str, str] = field(default_factory=dict)
    votes: list[Vote] = field(default_factory=list)  # binary/categorical values until :meth:`settle`
    label_sets: dict[str, LabelSet] = field(default_factory=dict)  # criterion -> its label set in this file
    # criterion items of records in the workspace (their texts are there): item id -> (record id, label set)
    derived: dict[str, tuple[str, LabelSet]] = field(default_factory=dict)
    refused: set[str] = field(default_factory=set)  # items refused (once, with their problem): nothing more on them
    runs: bool = False  # a tool's run file, its cases numbered from 0: a case met again with other texts is another
    # (item, annotator, source) -> (label, where and in which field first given): one person, one label per item
    given: dict[tuple[str, str, str], tuple[str, str, str]] = field(default_factory=dict)
    here: tuple[str, int | None] | None = None  # the record :meth:`at` is mapping

    # -- building ------------------------------------------------------------------------------
    def records(self, path: Path) -> Iterator[tuple[int | None, dict[str, Any]]]:
        """``path``'s records that are objects, as ``(line, record)``; any other record is a problem."""
        for n, rec in read_records(path):
            if isinstance(rec, dict):
                yield n, rec
            else:
                self.problems.append(Problem(str(path), n, None,
                                             f"a record must be an object, got {type(rec).__name__}"))

    @contextmanager
    def at(self, path: Path, line: int | None) -> Iterator[None]:
        """Map one record: a :class:`Skip` raised inside becomes a problem at ``path:line``."""
        self.here = (str(path), line)
        try:
            yield
        except Skip as exc:
            self.problems.append(Problem(str(path), line, exc.field, str(exc)))
        finally:
            self.here = None

    def no_records(self, path: Path) -> None:
        """A file that mapped nothing and had no problem says it held no records."""
        if not self.items and not self.problems and not self.dropped:
            self.problems.append(Problem(str(path), None, None, "no records"))

    def item(self, item: Item, origin: str, where: tuple[str, int | None]) -> None:
        """Add ``item``; the same id again must carry the same content (a pair judged twice). The own
        schema's limits (id, texts, model names, metadata) are checked here for every format."""
        texts = [("prompt", item.prompt), ("reference", item.reference)]
        for k, c in enumerate(item.candidates):
            texts += [(f"response[{k}]", c.text), (f"model[{k}]", c.model), (f"family[{k}]", c.family)]
        why = checks.item_id(item.item_id) or next(
            (w for f, t in texts if (w := checks.text(f, t) or checks.unicode(f, t))), None) or (
            checks.metadata("metadata", item.metadata))
        if why is not None:
            self.refuse(where, why, f"item {item.item_id[:80]!r}")
            self.refused.add(item.item_id)
            return
        old = self.items.get(item.item_id)
        if old is None:
            self.items[item.item_id] = item
            self.origins[item.item_id] = origin
            self.counts["empty_responses"] += sum(not c.text.strip() for c in item.candidates)
        elif old.to_json() != item.to_json():
            self.problems.append(Problem(where[0], where[1], None, (
                f"item {item.item_id!r} appears again with other text (first at {self.origins[item.item_id]})")))

    def refuse(self, where: tuple[str, int | None], why: checks.Why, what: str = "") -> None:
        """A value the own schema refuses, at ``where`` (file, line), naming its field."""
        field_, message = why
        self.problems.append(Problem(where[0] or self.path, where[1], field_,
                                     f"{message}{f' ({what})' if what else ''}"))

    def judge(self, name: str, model: str | None = None, rubric: str = "", **options: Any) -> str:
        """Register the judge ``name`` (its spec: backend ``import``, the grader's model and prompt)."""
        if name not in self.specs:
            opts = tuple(sorted((k, v) for k, v in options.items() if v not in (None, "", [], {})))
            self.specs[name] = JudgeSpec(backend="import", model=model or name, rubric=rubric,
                                         temperature=None, max_tokens=None, logprobs=None, top_logprobs=None,
                                         name=name, options=opts)
        return name

    def rename_judges(self, name: str) -> None:
        """``--name``: the file's one judge is called ``name``; several are ``<name>/<judge>`` each. The name is
        part of the spec (``options.imported_as``), so a second file of one tool imported under another name
        is another judge, never pooled with the first."""
        from judgecal.data.verdicts import judgment_key

        new = {j: name if len(self.specs) == 1 else f"{name}/{j}" for j in self.specs}
        for n in new.values():
            if (why := checks.judge_name(n) or checks.unicode("judge", n)) is not None:
                self.problems.append(Problem(self.path or "--name", None, why[0], f"--name gives {n[:80]!r}: {why[1]}"))
                return
        self.specs = {new[j]: replace(s, name=new[j], options=tuple(sorted({**dict(s.options), "imported_as": new[j]}
                                                                                 .items())))
                      for j, s in self.specs.items()}
        out: dict[str, Judgment] = {}
        for jm in self.judgments.values():
            jm.judge = new[jm.judge]
            jm.spec_hash = self.specs[jm.judge].spec_hash
            jm.key = judgment_key(jm.judge, jm.item_id, jm.order, jm.sample, jm.mutation)
            out[jm.key] = jm
        self.judgments = out

    def rename_items(self, ids: dict[str, str]) -> None:
        """Give items other ids (a file that names no models, met with the stored item of its texts), with
        everything on them: verdicts, labels, spans."""
        from judgecal.data.verdicts import judgment_key

        self.items = {ids.get(i, i): replace(it, item_id=ids.get(i, i)) for i, it in self.items.items()}
        self.origins = {ids.get(i, i): w for i, w in self.origins.items()}
        out: dict[str, Judgment] = {}
        for j in self.judgments.values():
            if j.item_id in ids:
                j.item_id = ids[j.item_id]
                j.key = judgment_key(j.judge, j.item_id, j.order, j.sample, j.mutation)
            out[j.key] = j
        self.judgments = out
        self.annotations = [a if a.item_id not in ids else replace(
            a, item_id=ids[a.item_id], annotation_id=f"{a.source}/{ids[a.item_id]}/{a.annotator}"
            if a.annotation_id == f"{a.source}/{a.item_id}/{a.annotator}" else a.annotation_id)
            for a in self.annotations]
        self.spans = [s if s.item_id not in ids else replace(s, item_id=ids[s.item_id]) for s in self.spans]

    def verdict(self, judge: str, item_id: str, *, verdict: str | None = None, score: float | None = None,
                order: str = "AB", shown: bool = False, sample: int = 0, raw: Any = "", p_a: float | None = None,
                p_b: float | None = None, p_tie: float | None = None, prompt_tokens: Any = None,
                completion_tokens: Any = None, latency_s: Any = None, cost_usd: Any = None,
                where: tuple[str, int | None] = ("", None)) -> None:
        """One judgment. ``verdict`` is in item orientation unless ``shown`` (then as the judge saw it in
        ``order``); ``invalid`` (or neither verdict nor score) records an output that gave none."""
        from judgecal.data.verdicts import judgment_key

        if item_id in self.refused:
            return
        spec = self.specs[judge]
        nums: dict[str, Any] = {"score": score, "p_a": p_a, "p_b": p_b, "p_tie": p_tie,
                                "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                "latency_s": latency_s, "cost_usd": cost_usd}
        whys = [checks.judge_name(judge), checks.text("judge.model", spec.model), checks.text("judge.rubric",
                spec.rubric), checks.metadata("judge.options", dict(spec.options)),
                checks.text("raw", raw if isinstance(raw, str) else None), checks.unicode("raw", raw)]
        for k, v in nums.items():
            nums[k], bad = checks.number(k, v)
            whys.append(bad)
        why = next((w for w in whys if w is not None), None)
        if why is not None:
            self.refuse(where, why, f"judge {judge[:80]!r}")
            return
        score, p_a, p_b, p_tie = nums["score"], nums["p_a"], nums["p_b"], nums["p_tie"]
        if shown:
            verdict = to_item_orientation(verdict, order)
            if order == "BA":
                p_a, p_b = p_b, p_a
        key = judgment_key(judge, item_id, order, sample, "none")
        if key in self.judgments:
            self.problems.append(Problem(where[0], where[1], None, (
                f"a second verdict of {judge!r} on item {item_id!r} (order {order}, sample {sample})")))
            return
        status = "invalid" if score is None and verdict in (None, "invalid") else "ok"
        self.judgments[key] = Judgment(
            key=key, item_id=item_id, judge=judge, spec_hash=self.specs[judge].spec_hash, order=order,
            sample=sample, raw=text_of(raw), verdict="invalid" if status == "invalid" else verdict, score=score,
            p_a=p_a, p_b=p_b, p_tie=p_tie, status=status,
            prompt_tokens=nums["prompt_tokens"], completion_tokens=nums["completion_tokens"],
            latency_s=nums["latency_s"], cost_usd=nums["cost_usd"], created_at=time.time())

    def label(self, item_id: str, annotator: str, label: str, source: str, order: str | None = "AB",
              time_spent_s: float | None = None, where: tuple[str, int | None] | None = None,
              field: str = "label") -> None:
        """A person's label; a name or time the own schema refuses is a problem at ``where`` (else the record
        being mapped, else the line of the item's record). One person's label on one item given again (same item,
        annotator and source) is that label, counted as ``duplicate_labels``, when it is the same; another label
        is a problem naming ``field`` (nothing is written: one person gives one label per item, never the last
        one taken)."""
        if item_id in self.refused:
            return
        at = where or self.here or (self.origins.get(item_id) or self.path, None)
        why = checks.annotator_name(annotator) or checks.unicode("annotator", annotator) or checks.number(
            "latency_s", time_spent_s)[1]
        if why is not None:
            self.refuse(at, (why[0] if why[0] != "latency_s" else "time_spent_s", why[1]), f"label on {item_id[:80]!r}")
            return
        key = (item_id, annotator, source)
        first = self.given.get(key)
        if first is not None:
            if first[0] == label:
                self.counts["duplicate_labels"] += 1
            else:
                self.refuse(at, (field, f"{annotator[:80]!r} labels item {item_id[:80]!r} {label!r} here and "
                                 f"{first[0]!r} in {first[2]} at {first[1]}: one person gives one label per item"))
            return
        self.given[key] = (label, f"{at[0]}:{at[1]}" if at[1] is not None else at[0], field)
        self.annotations.append(Annotation(item_id, annotator, label, order, time_spent_s, source,
                                           f"{source}/{item_id}/{annotator}"))

    def label_or_skip(self, item_id: str, annotator: str, label: str | None, source: str,
                      where: tuple[str, int | None] | None = None, field: str = "label") -> None:
        """A person's label (:meth:`label`); ``None`` is a skipped item, counted (not a label, not an error)."""
        if label is None:
            self.counts["skipped_labels"] += 1
        else:
            self.label(item_id, annotator, label, source, where=where, field=field)

    def vote(self, criterion: str, record: str, value: Any, *, base: Item | None, judge: str | None = None,
             annotator: str = "", source: str = "", raw: Any = "", invalid: bool = False,
             where: tuple[str, int | None] = ("", None), label_field: str = "label", **extra: Any) -> None:
        """A binary or categorical value of ``record`` on ``criterion`` (see :class:`Vote`); ``judge`` must be
        registered (:meth:`judge`)."""
        self.votes.append(Vote(criterion, record, base, value, judge, annotator, source, raw, invalid, where, extra,
                               label_field))

    def settle(self, declare_set: Declare = declare, keep_records: bool = False) -> None:
        """Give each criterion its label set (``declare_set(criterion, label texts seen)``, first seen first; a
        text instead of a set is why there is none, and the criterion's votes are dropped with it) and make
        every vote a verdict or a label on the criterion's item. A record item that then carries nothing
        (no verdict, label or span of its own) is left out, its criterion items standing for it, unless
        ``keep_records`` (a run that later feedback files refer to)."""
        by: dict[str, list[Vote]] = {}
        for v in self.votes:
            by.setdefault(v.criterion, []).append(v)
        records = {v.record for v in self.votes if v.base is not None}
        self.votes = []
        for crit, votes in by.items():
            texts = [t for v in votes if not v.invalid and (t := label_text(v.value)) is not None]
            ls = declare_set(crit, texts)
            if isinstance(ls, str):
                self.drop(f"{crit}: {ls}", len(votes))
                continue
            self.label_sets[crit] = ls
            for v in votes:
                self._settle(v, ls)
        if keep_records:
            return
        used = ({j.item_id for j in self.judgments.values()} | {a.item_id for a in self.annotations}
                | {s.item_id for s in self.spans})
        carried = {it.metadata.get("record") for it in self.items.values() if it.label_set}
        for r in sorted((records & carried) - used):
            item = self.items.get(r)
            if item is not None and not item.label_set:
                del self.items[r]
                self.origins.pop(r, None)
                self.counts["empty_responses"] -= sum(not c.text.strip() for c in item.candidates)

    def _settle(self, v: Vote, ls: LabelSet) -> None:
        from judgecal.data.label_tasks import match

        iid = v.item_id
        if v.record in self.refused:
            return
        if v.judge is None and v.value is None:
            self.counts["skipped_labels"] += 1
            return
        got = None if v.invalid else match(v.value, ls.labels)
        if v.judge is None and got is None:
            self.drop(f"{v.criterion}: human labels that are not one label (a number with a fraction, a list)")
            return
        if v.base is None:
            self.derived.setdefault(iid, (v.record, ls))
        else:
            b = v.base
            item = Item(iid, b.prompt, [b.candidates[0]], "pointwise", b.reference, b.source,
                        {**b.metadata, "criterion": v.criterion, "record": v.record}, ls.to_dict())
            origin = self.origins.get(v.record) or (f"{v.where[0]}:{v.where[1]}" if v.where[1] else v.where[0])
            self.item(item, origin, v.where)
        if v.judge is not None:
            self.verdict(v.judge, iid, verdict=got or "invalid", raw=v.raw, where=v.where, **v.extra)
        else:
            self.label(iid, v.annotator, str(got), v.source, order=None, time_spent_s=v.extra.get("time_spent_s"),
                       where=v.where, field=v.label_field)

    def drop(self, why: str, n: int = 1) -> None:
        if n:
            self.dropped[why] += n

    # -- reporting -----------------------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        judges = Counter(j.judge for j in self.judgments.values())
        return {"format": self.fmt, "items": len(self.items) + len(set(self.derived) - set(self.items)),
                "judgments": len(self.judgments), "judges": dict(judges), "human_labels": len(self.annotations),
                "label_sources": dict(Counter(a.source for a in self.annotations)), "spans": len(self.spans),
                "label_sets": {c: ls.to_dict() for c, ls in self.label_sets.items()},
                "accepted": {k: v for k, v in self.counts.items() if v}, "dropped": dict(self.dropped),
                "notes": list(self.notes)}


# -- reading ---------------------------------------------------------------------------------------
def read_json_document(path: Path) -> Any:
    """The JSON document in ``path`` (a :class:`Skip` naming the line of a syntax error)."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Skip(None, f"invalid UTF-8 at byte {exc.start}") from None
    doc = loads(text)
    check_text(doc)
    return doc


def loads(text: str | bytes, line: int | None = None, field: str | None = None) -> Any:
    """``text`` parsed as JSON; a syntax error, too deep a nesting or an integer of more than 4,300 digits
    (beyond Python's integer-string limit) is a :class:`Skip` at ``line`` and ``field``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if line is None else f"column {exc.colno}"
        raise Skip(field, f"bad JSON at {at}: {exc.msg}", line) from None
    except RecursionError:
        raise Skip(field, "bad JSON: nested too deeply", line) from None
    except UnicodeDecodeError as exc:
        raise Skip(field, f"invalid UTF-8 at byte {exc.start}", line) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise Skip(field, f"bad JSON: {str(exc).splitlines()[0]}", line) from None


def check_text(doc: Any, line: int | None = None, field: str | None = None) -> None:
    """Refuse text that no UTF-8 store can hold (a lone surrogate, which JSON's ``\\ud800`` escapes
    can write), naming the field (and the line when known; ``field``: where ``doc`` is, e.g. an archive member)."""
    _, bad = _scan({"": doc})
    if bad is not None:
        where = ": ".join(x for x in (field, bad.removeprefix(".")) if x) or None
        raise Skip(where, "holds a lone surrogate (\\ud800-\\udfff), not valid Unicode", line)


def array_lines(path: Path) -> list[int]:
    """The 1-based line on which each element of the top-level JSON array in ``path`` starts."""
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    dec = json.JSONDecoder()
    i = text.find("[") + 1
    lines: list[int] = []
    line, seen = 1, 0
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return lines
        line += text.count("\n", seen, i)
        seen = i
        lines.append(line)
        try:
            _, i = dec.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            return lines


def read_records(path: Path) -> list[tuple[int | None, Any]]:
    """(line, record) for a JSON array, a JSON Lines file or a Parquet file; one record (line None)
    for any other JSON document. Syntax errors raise :class:`Skip`."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            return [(n, r) for n, r in enumerate(parquet_rows(path), start=1)]
        except Exception as exc:  # pyarrow raises many types for unreadable files
            raise Skip(None, f"cannot read as parquet: {exc}") from None
    if suffix == ".csv":
        from judgecal.data.importers import _csv_rows

        rows, problems = _csv_rows(path.read_bytes(), str(path))
        if problems:
            raise Skip(None, str(problems[0]).split(": ", 1)[-1])
        return [(n, {k: v for k, v in r.items() if v != ""}) for n, r in rows]
    if suffix in (".jsonl", ".ndjson"):
        out: list[tuple[int | None, Any]] = []
        data = path.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Skip(None, f"invalid UTF-8 at byte {exc.start}", data[: exc.start].count(b"\n") + 1) from None
        for n, line in enumerate(text.split("\n"), start=1):
            if line.strip():
                out.append((n, loads(line, n)))
                check_text(out[-1][1], n)
        return out
    doc = read_json_document(path)
    if isinstance(doc, list):  # (already checked as a whole; the line is found for the message)
        lines = array_lines(path)
        return [(lines[k] if k < len(lines) else None, r) for k, r in enumerate(doc)]
    return [(None, doc)]


def head_records(path: Path, n: int = 5) -> list[Any]:
    """The first records of ``path`` for detection (cheap for JSON Lines; a whole document otherwise)."""
    try:
        if path.suffix.lower() == ".parquet":
            return list(parquet_rows(path, limit=n))
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            out = []
            with open(path, encoding="utf-8-sig") as fh:
                for line in fh:
                    if line.strip():
                        out.append(json.loads(line))
                    if len(out) >= n:
                        break
            return out
        return [r for _, r in read_records(path)[:n]]
    except (Skip, OSError, ValueError, RecursionError):
        return []


# -- values ----------------------------------------------------------------------------------------
def text_of(v: Any) -> str:
    """Raw output as text: a string as is, anything else as compact JSON."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, default=str)


def number_or_none(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    x = float(v)
    return x if math.isfinite(x) and x >= 0 else None


def count_or_none(v: Any) -> int | None:
    x = number_or_none(v)
    return int(x) if x is not None and x.is_integer() else None


def finite(v: Any) -> float | None:
    """A finite real number (not a bool), else None."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return None
    x = float(v)
    return x if math.isfinite(x) else None


def record_id(rec: dict[str, Any], key: str, *fallbacks: str) -> str | int:
    """``rec[key]`` (when absent, the first fallback key present) as an id: a non-empty string or an integer (a
    whole-number float is that integer); anything else is a :class:`Skip` naming ``key``."""
    raw = rec[key] if key in rec else next((rec[k] for k in fallbacks if k in rec), None)
    rid = whole_id(raw)
    if isinstance(rid, bool) or not isinstance(rid, str | int) or not str(rid).strip():
        raise Skip(key, id_problem(rid))
    return rid


def need_text(rec: dict[str, Any], key: str, *, empty_ok: bool = False) -> str:
    v = rec.get(key)
    if not isinstance(v, str):
        raise Skip(key, "missing required field" if v is None else f"must be a string, got {type(v).__name__}")
    if not empty_ok and not v.strip():
        raise Skip(key, "is empty")
    if len(v) > MAX_TEXT_CHARS:
        raise Skip(key, f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,}")
    return v


def item_id(fmt: str, *parts: Any) -> str:
    """A deterministic id from what identifies an item in a format that has none."""
    return f"{fmt}/{stable_hash(list(parts), 16)}"


# -- identity (the parts escaped as judgecal.data.records.escape does) ---------------------------------
def identity(fmt: str, own: Any, models: tuple[str | None, ...], pairwise: bool = False) -> str:
    """What makes an item of format ``fmt`` a comparison of its own: the file's own id (``own``: one part,
    or a tuple of parts), then each model whose output it holds (``@<model>``; a pair's two in sorted
    order, whatever the order it was shown in). Two models that answered alike are two items; the same
    comparison met in two files is one item (a run file's case met again with other texts: :func:`digested`)."""
    parts = [escape(p) for p in (own if isinstance(own, tuple) else (own,))]
    named = [m for m in models if m]
    parts += [f"@{escape(m)}" for m in (sorted(named) if pairwise else named)]
    return "/".join([fmt, *parts])


def digested(item: Item) -> str:
    """``item``'s id with a digest of its texts (``#<digest>``) after its record's id: the id of a run file's
    case whose plain id the workspace holds with other texts (a second promptfoo eval, Inspect log or
    DeepEval run numbers its cases from 0 too)."""
    d = "#" + stable_hash([item.task, item.prompt, item.reference or "", [c.text for c in item.candidates]], 12)
    rec, crit = item.metadata.get("record"), item.metadata.get("criterion")
    if isinstance(rec, str) and isinstance(crit, str) and item.item_id == criterion_id(rec, crit):
        return criterion_id(f"{rec}/{d}", crit)
    return f"{item.item_id}/{d}"


def pair_item(fmt: str, own: Any, prompt: str, a: str, b: str, model_a: str | None, model_b: str | None,
              metadata: dict[str, Any] | None = None, reference: str | None = None) -> Item:
    """A pairwise item, its id the :func:`identity` of its own id (``own``) and both models."""
    iid = identity(fmt, _own(own), (model_a, model_b), True)
    return Item(iid, prompt, [Candidate(a, model_a, family_of(model_a)), Candidate(b, model_b, family_of(model_b))],
                "pairwise", reference, fmt, metadata or {})


def point_item(fmt: str, own: Any, prompt: str, response: str, model: str | None,
               metadata: dict[str, Any] | None = None, reference: str | None = None,
               criterion: str | None = None) -> Item:
    """A one-response item, its id the :func:`identity` of its own id (``own``) and its model; with
    ``criterion``, that record's item on the criterion (:func:`criterion_id`)."""
    iid = identity(fmt, _own(own), (model,))
    iid = iid if criterion is None else criterion_id(iid, criterion)
    return Item(iid, prompt, [Candidate(response, model, family_of(model))], "pointwise", reference, fmt,
                metadata or {})


def _own(own: Any) -> Any:
    return tuple(str(whole_id(p)) for p in own) if isinstance(own, tuple) else str(whole_id(own))


def obj(v: Any) -> dict[str, Any]:
    """``v`` when it is an object, else an empty one (an optional part of a record)."""
    return v if isinstance(v, dict) else {}


def listed(v: Any, field: str) -> list[Any]:
    """``v`` as a list (``None``: empty); anything else is the field's problem."""
    if v is None:
        return []
    if not isinstance(v, list):
        raise Skip(field, f"must be a list, got {type(v).__name__}")
    return v
