"""Import judge verdicts produced elsewhere (JSONL, CSV or Parquet), all or nothing.

One judgment per record, about an item already in the workspace:

- ``item_id`` (string or integer), ``judge`` (a name; one name is one judge spec).
- pairwise items: ``verdict`` — ``A``, ``B`` or ``tie`` *as the judge saw them* (``A`` is the
  response shown first), or ``invalid`` for an output that could not be parsed; ``order`` — ``AB``
  when ``response_a`` was shown first, ``BA`` when it was shown second (default ``AB``).
  Optional ``p_a``/``p_b``/``p_tie``: the judge's probabilities, oriented like the verdict.
- pointwise items: ``score`` (a finite number) or ``verdict: invalid``; ``order`` is ``AB``.
- binary and categorical items (imported with ``--task binary`` / ``categorical``): ``label``, one of the
  item's labels (read as the item import reads them: ``PASS`` is ``pass``, ``true`` is ``true``), or
  ``verdict: invalid``; optional ``p_<label>`` (``p_pass``, ``p_fail``), the judge's probability of each
  label, kept as ``p_labels``; ``order`` is ``AB``.
- optional everywhere: ``sample`` (integer >= 0, default 0), ``mutation`` (default ``none``),
  ``raw``, ``prompt_tokens``, ``completion_tokens``, ``latency_s``, ``cost_usd``, ``time`` (ISO 8601, when
  the verdict was given; stored as UTC) and ``period`` (the period's name), which ``judgecal monitor`` groups by.
- pointwise items: ``spans`` — the judge's spans on the response, ``[[start, end] or [start, end,
  label], ...]`` in character offsets (``[]``: it marked nothing), or the item import's form
  ``{judge: [...]}``; checked against the text (:mod:`judgecal.data.span_import`). A record with spans
  needs no score. They are stored as judge spans of that judgment (source: its key), replaced with it.

Verdicts and probabilities are turned into item orientation once, by
:func:`judgecal.data.records.to_item_orientation`. Each judgment's key is the hash of
(judge, item, order, sample, mutation): re-importing a file stores nothing twice; a record whose
content differs from the stored judgment of the same key is refused unless ``replace=True``.

An imported judge is a spec like any other (:mod:`judgecal.judges.spec`): by default backend
``import`` with the judge's name as its model; given a spec file (name, backend, model, rubric,
parameters), every record must be that spec's judge and carries its hash. The spec is stored with
the judgments. A judge name already used in the workspace by another spec (a live or recorded judge,
or an import under another spec) is refused — two specs are two judges — except that ``replace=True``
may move an imported judge to a new spec.
"""

from __future__ import annotations

import json
import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecal.data.importers import MAX_TEXT_CHARS, ImportValidationError, Problem, _records
from judgecal.data.label_tasks import expected, match
from judgecal.data.names import MAX_NAME_CHARS, reserved_name_problem
from judgecal.data.records import ORDERS, VERDICTS, Judgment, LabelSet, Span, stable_hash, to_item_orientation
from judgecal.data.rows import id_problem, whole_id
from judgecal.data.span_import import parse_spans
from judgecal.data.specs import JudgeSpec
from judgecal.data.store import Workspace
from judgecal.data.times import parse_period, parse_time

VERDICT_VALUES: tuple[str, ...] = (*VERDICTS, "invalid")
# Ranges a record is checked against on the way in, so that every later sum, square and SQLite integer
# stays finite: far beyond any real judge, far inside float64 and int64.
MAX_SCORE = 1e6  # a score on any rubric's scale; squared and summed over millions of items, still finite
MAX_SAMPLE = 1_000_000
MAX_TOKENS = 10**12
MAX_LATENCY_S = 1e7  # about 116 days
MAX_COST_USD = 1e9
# What two imports of the same key must agree on (created_at is the time of the import).
COMPARED = ("spec_hash", "verdict", "score", "status", "raw", "p_a", "p_b", "p_tie", "prompt_tokens",
            "completion_tokens", "latency_s", "cost_usd", "p_labels", "time", "period")


class _Bad(ValueError):
    """One field's problem (its message)."""


def _name(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad(f"must be a string, got {type(v).__name__}")
    if not v.strip():
        raise _Bad("is empty")
    if len(v) > MAX_NAME_CHARS:
        raise _Bad(f"is {len(v):,} characters; the limit is {MAX_NAME_CHARS}")
    return v


def _judge(v: Any) -> str:
    name = _name(v)
    if why := reserved_name_problem(name):
        raise _Bad(why)
    return name


def _id(v: Any) -> str:
    v = whole_id(v)  # 3.0, as a Parquet column with a missing value stores integers, is item 3
    if isinstance(v, bool) or not isinstance(v, (str, int)) or str(v).strip() == "":
        raise _Bad(id_problem(v))
    return str(v)


def _raw(v: Any) -> str:
    if not isinstance(v, str):
        raise _Bad(f"must be a string, got {type(v).__name__}")
    if len(v) > MAX_TEXT_CHARS:
        raise _Bad(f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,}")
    return v


def _number(v: Any) -> float:
    if type(v) is int:
        try:
            float(v)
        except OverflowError:  # beyond a float's reach; the ranges below catch what SQLite cannot hold
            raise _Bad(f"a whole number of {len(str(abs(v)))} digits is out of range") from None
    if type(v) is float or type(v) is int:  # the common case, without the numbers.Real check
        if not math.isfinite(v):
            raise _Bad(f"must be a finite number, got {v}")
        return float(v)
    if isinstance(v, str):  # CSV cells arrive as text
        try:
            v = float(v.strip())
        except ValueError:
            raise _Bad(f"must be a number, got {v!r}") from None
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise _Bad(f"must be a number, got {type(v).__name__}")
    x = float(v)
    if not math.isfinite(x):
        raise _Bad(f"must be a finite number, got {x}")
    return x


def _non_negative(v: Any) -> float:
    x = _number(v)
    if x < 0:
        raise _Bad(f"must be >= 0, got {x:g}")
    return x


def _bounded(hi: float, what: str) -> Callable[[Any], float]:
    """A number from 0 to ``hi``: what an audit can sum and SQLite can store (a 64-bit integer)."""
    def check(v: Any) -> float:
        x = _non_negative(v)
        if x > hi:
            raise _Bad(f"{x:g} is out of range; {what} is at most {hi:g}")
        return x
    return check


def _whole(hi: int, what: str) -> Callable[[Any], int]:
    bounded = _bounded(hi, what)

    def check(v: Any) -> int:
        x = bounded(v)
        if x != int(x):
            raise _Bad(f"must be a whole number, got {x:g}")
        return int(x)
    return check


def _score(v: Any) -> float:
    x = _number(v)
    if abs(x) > MAX_SCORE:
        raise _Bad(f"{x:g} is out of range; a score is a number from {-MAX_SCORE:g} to {MAX_SCORE:g}")
    return x


def _probability(v: Any) -> float:
    x = _number(v)
    if not 0.0 <= x <= 1.0:
        raise _Bad(f"must be a probability in [0, 1], got {x:g}")
    return x


def _parsed(parse: Callable[[Any], str], v: Any) -> str:
    try:
        return parse(v)
    except ValueError as exc:
        raise _Bad(str(exc)) from None


def _choice(values: tuple[str, ...], what: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if v not in values:
            raise _Bad(f"unknown {what} {v!r}; expected {', '.join(values[:-1])} or {values[-1]}")
        return str(v)
    return check


# Field -> checker. A new optional field (e.g. spans) is one more entry here and one in _judgment.
FIELDS: dict[str, Callable[[Any], Any]] = {
    "item_id": _id, "judge": _judge, "verdict": _choice(VERDICT_VALUES, "verdict"), "score": _score,
    "order": _choice(ORDERS, "order"), "sample": _whole(MAX_SAMPLE, "a sample index"), "mutation": _name,
    "raw": _raw, "p_a": _probability, "p_b": _probability, "p_tie": _probability,
    "prompt_tokens": _whole(MAX_TOKENS, "a token count"), "completion_tokens": _whole(MAX_TOKENS, "a token count"),
    "latency_s": _bounded(MAX_LATENCY_S, "a latency (seconds)"), "cost_usd": _bounded(MAX_COST_USD, "a cost (USD)"),
    "spans": lambda v: v, "time": lambda v: _parsed(parse_time, v), "period": lambda v: _parsed(parse_period, v),
}
REQUIRED = ("item_id", "judge")
DEFAULTS: dict[str, Any] = {"order": "AB", "sample": 0, "mutation": "none", "raw": ""}


def import_spec(judge: str) -> JudgeSpec:
    """The spec of a judge imported without a spec file: backend ``import``, its name as the model."""
    return JudgeSpec(backend="import", model=judge, rubric="", temperature=None, max_tokens=None, logprobs=None,
                     top_logprobs=None, name=judge)


def judgment_key(judge: str, item_id: str, order: str, sample: int, mutation: str) -> str:
    """Deterministic key of an imported judgment: re-importing the same record finds it."""
    return stable_hash({"import": judge, "item": item_id, "order": order, "sample": sample,
                        "mutation": mutation}, 32)


@dataclass
class VerdictImport:
    """What an import wrote (new and replaced judgments), what it found stored unchanged, its judges."""

    judgments: list[Judgment] = field(default_factory=list)
    spans: dict[str, list[Span]] = field(default_factory=dict)  # judgment key -> its judge spans
    judges: list[str] = field(default_factory=list)
    specs: dict[str, JudgeSpec] = field(default_factory=dict)
    new: int = 0
    unchanged: int = 0
    replaced: int = 0
    zero_length_spans: int = 0  # judge spans [s, s]: they mark nothing, dropped


def _judgment(v: dict[str, Any], task: str, spec_hash: str, f: str, n: int, problems: list[Problem]) -> Judgment | None:
    """One validated record (``v``: field -> checked value) as a Judgment in item orientation."""
    verdict, score, order = v.get("verdict"), v.get("score"), v["order"]
    before = len(problems)
    if task == "pairwise":
        if score is not None:
            problems.append(Problem(f, n, "score", "a pairwise item takes a verdict (A, B, tie or invalid), not a score"))
        elif verdict is None:
            problems.append(Problem(f, n, "verdict", "missing required field (A, B, tie or invalid)"))
    else:
        if verdict is not None and verdict != "invalid":
            problems.append(Problem(f, n, "verdict", f"a pointwise item takes a score, not the verdict {verdict!r}"))
        elif verdict is None and score is None and "spans" not in v:
            problems.append(Problem(f, n, "score", "missing required field (a number, spans, or verdict: invalid)"))
        elif verdict is not None and score is not None:
            problems.append(Problem(f, n, "score", "an invalid judgment has no score"))
        if order != "AB":
            problems.append(Problem(f, n, "order", "a pointwise item is shown in one order: AB"))
        for k in ("p_a", "p_b", "p_tie"):
            if k in v:
                problems.append(Problem(f, n, k, "probabilities of A/B/tie apply to pairwise items only"))
    probs = [v[k] for k in ("p_a", "p_b", "p_tie") if k in v]
    if sum(probs) > 1.0 + 1e-6:
        problems.append(Problem(f, n, "p_a", f"p_a + p_b + p_tie is {sum(probs):.6g}, more than 1"))
    if len(problems) > before:
        return None
    p_first, p_second = v.get("p_a"), v.get("p_b")
    p_a, p_b = (p_first, p_second) if order == "AB" else (p_second, p_first)
    judge, item_id = v["judge"], v["item_id"]
    return Judgment(
        key=judgment_key(judge, item_id, order, v["sample"], v["mutation"]), item_id=item_id, judge=judge,
        spec_hash=spec_hash, order=order, mutation=v["mutation"], sample=v["sample"], raw=v["raw"],
        verdict=to_item_orientation(verdict, order), score=score, p_a=p_a, p_b=p_b, p_tie=v.get("p_tie"),
        status="invalid" if verdict == "invalid" else "ok", prompt_tokens=v.get("prompt_tokens"),
        completion_tokens=v.get("completion_tokens"), latency_s=v.get("latency_s"), cost_usd=v.get("cost_usd"),
        created_at=time.time(), time=v.get("time"), period=v.get("period"),
    )


def _is_label_field(k: str) -> bool:
    """``label`` and ``p_<label>``: the fields of a binary or categorical judgment beyond :data:`FIELDS`."""
    return k == "label" or (k.startswith("p_") and k not in FIELDS)


def _label_judgment(rec: dict[str, Any], v: dict[str, Any], ls: LabelSet, spec_hash: str, f: str, n: int,
                    problems: list[Problem]) -> Judgment | None:
    """A binary or categorical judgment: ``label`` (one of the item's labels, matched as on the item import)
    or ``verdict: invalid``; optional ``p_<label>`` probabilities (they sum to at most 1)."""
    before = len(problems)
    verdict, label = v.get("verdict"), rec.get("label")
    want = expected(ls)
    if verdict is not None and verdict != "invalid":
        problems.append(Problem(f, n, "verdict", f"a {ls.task} item takes a label ({want}) or verdict: invalid"))
    if "score" in v:
        problems.append(Problem(f, n, "score", f"a {ls.task} item takes a label ({want}), not a score"))
    if v["order"] != "AB":
        problems.append(Problem(f, n, "order", "a pointwise item is shown in one order: AB"))
    got = None
    if verdict == "invalid":
        if label is not None:
            problems.append(Problem(f, n, "label", "an invalid judgment has no label"))
    elif label is None:
        problems.append(Problem(f, n, "label", f"missing required field ({want}, or verdict: invalid)"))
    else:
        got = match(label, ls.labels)
        if got is None:
            shown = repr(label) if len(repr(label)) <= 40 else repr(label)[:37] + "..."
            problems.append(Problem(f, n, "label", f"unknown label {shown}; expected {want}"))
    probs: dict[str, float] = {}
    for k in sorted(x for x in rec if x.startswith("p_") and rec[x] is not None):
        name = match(k[2:], ls.labels)
        if name is None or name in probs:
            problems.append(Problem(f, n, k, f"not the probability of one label ({want})"))
            continue
        try:
            probs[name] = _probability(rec[k])
        except _Bad as exc:
            problems.append(Problem(f, n, k, str(exc)))
    if sum(probs.values()) > 1.0 + 1e-6:
        problems.append(Problem(f, n, "p_" + next(iter(probs)), f"the label probabilities sum to "
                                f"{sum(probs.values()):.6g}, more than 1"))
    if len(problems) > before:
        return None
    judge, item_id = v["judge"], v["item_id"]
    return Judgment(
        key=judgment_key(judge, item_id, "AB", v["sample"], v["mutation"]), item_id=item_id, judge=judge,
        spec_hash=spec_hash, order="AB", mutation=v["mutation"], sample=v["sample"], raw=v["raw"],
        verdict=got or "invalid", status="ok" if got else "invalid", prompt_tokens=v.get("prompt_tokens"),
        completion_tokens=v.get("completion_tokens"), latency_s=v.get("latency_s"), cost_usd=v.get("cost_usd"),
        created_at=time.time(), p_labels=json.dumps(probs, sort_keys=True, ensure_ascii=False) if probs else None,
        time=v.get("time"), period=v.get("period"),
    )


def _stored(ws: Workspace, keys: list[str]) -> dict[str, tuple[Any, ...]]:
    return ws.judgments_repo.judgment_fields(keys, COMPARED)


def _other_specs(ws: Workspace, wanted: dict[str, str], replace: bool) -> dict[str, str]:
    """Judge name -> a spec hash already stored under that name other than the one this import gives
    it (``wanted``: name -> hash); with ``replace``, another *imported* spec of the name is allowed."""
    stored = ws.judgments_repo.judge_specs()
    out: dict[str, str] = {}
    for judge, h in ws.judgments_repo.judge_spec_hashes(sorted(wanted)):
        imported = stored.get(h, ("", {}))[1].get("backend") == "import"
        if h != wanted[judge] and not (replace and imported):
            out[judge] = h
    return out


def _differs(j: Judgment, stored: tuple[Any, ...]) -> list[str]:
    def same(a: Any, b: Any) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0)
        return bool(a == b) or (a in (None, "") and b in (None, ""))

    return [c for c, old in zip(COMPARED, stored, strict=True) if not same(getattr(j, c), old)]


def parse_verdicts(ws: Workspace, path: Path, replace: bool = False,
                   spec: JudgeSpec | None = None) -> tuple[VerdictImport, list[Problem]]:
    """Validate every record of ``path`` against the schema and the workspace; write nothing."""
    f = str(path)
    records, problems = _records(path)
    if not records and not problems:
        problems.append(Problem(f, None, None, "no records"))
    tasks = ws.items_repo.item_tasks()
    label_sets = ws.items_repo.label_sets()
    with_spans = {str(r.get("item_id")) for _, r in records if isinstance(r, dict) and r.get("spans") is not None}
    texts = {it.item_id: it.candidates[0].text for it in ws.items_repo.items(ids=with_spans)} if with_spans else {}
    seen: dict[str, int] = {}
    first_line: dict[str, int] = {}
    specs: dict[str, JudgeSpec] = {}
    hashes: dict[str, str] = {}
    out = VerdictImport()
    for n, rec in records:
        if not isinstance(rec, dict):
            problems.append(Problem(f, n, None, f"a record must be an object, got {type(rec).__name__}"))
            continue
        before = len(problems)
        for k in sorted(set(rec) - set(FIELDS)):
            if not _is_label_field(k):
                problems.append(Problem(f, n, k, "unknown field for a judgment"))
        ls = label_sets.get(str(whole_id(rec.get("item_id"))))
        v: dict[str, Any] = dict(DEFAULTS)
        for k, check in FIELDS.items():
            if ls is not None and k.startswith("p_"):
                continue  # a label's probability, read with the label
            if rec.get(k) is None:
                if k in REQUIRED:
                    problems.append(Problem(f, n, k, "missing required field"))
                continue
            try:
                v[k] = check(rec[k])
            except _Bad as exc:
                problems.append(Problem(f, n, k, str(exc)))
        if len(problems) > before:
            continue
        task = tasks.get(v["item_id"])
        if task is None:
            problems.append(Problem(f, n, "item_id", f"unknown item {v['item_id']!r}; import the items first"))
            continue
        if spec is not None and v["judge"] != spec.base_name:
            problems.append(Problem(f, n, "judge", (
                f"{v['judge']!r} is not the judge of the spec {spec.origin or ''} ({spec.base_name!r})")))
            continue
        if v["judge"] not in specs:
            specs[v["judge"]] = spec or import_spec(v["judge"])
            hashes[v["judge"]] = specs[v["judge"]].spec_hash
            first_line[v["judge"]] = n
        if "spans" in v and task != "pointwise":
            problems.append(Problem(f, n, "spans", "spans apply to pointwise items (offsets into the response)"))
            continue
        if ls is not None:
            j = _label_judgment(rec, v, ls, hashes[v["judge"]], f, n, problems)
        else:
            for k in sorted(x for x in rec if _is_label_field(x)):
                problems.append(Problem(f, n, k, "unknown field for a judgment (label and p_<label> are for "
                                        "binary and categorical items)"))
            j = _judgment(v, task, hashes[v["judge"]], f, n, problems)
        if j is None:
            continue
        if "spans" in v:
            marks = v["spans"]
            if isinstance(marks, dict):
                if set(marks) != {v["judge"]}:
                    problems.append(Problem(f, n, "spans", f"as an object, spans name one rater: the judge {v['judge']!r}"))
                    continue
                marks = marks[v["judge"]]
            counts: dict[str, int] = {}
            sp, bad = parse_spans({v["judge"]: marks}, texts[v["item_id"]], v["item_id"], j.key, "spans", "judge",
                                  counts=counts)
            out.zero_length_spans += counts.get("zero_length_spans", 0)
            if bad:
                problems.extend(Problem(f, n, where.replace(f"spans.{v['judge']}", "spans"), msg) for where, msg in bad)
                continue
            out.spans[j.key] = sp
        if j.key in seen:
            problems.append(Problem(f, n, "item_id", (
                f"duplicate judgment of {j.judge!r} on item {j.item_id!r} (order {j.order}, sample {j.sample}, "
                f"mutation {j.mutation!r}; first on line {seen[j.key]})")))
            continue
        seen[j.key] = n
        out.judgments.append(j)
    clash = _other_specs(ws, hashes, replace)
    for judge, h in clash.items():
        problems.append(Problem(f, first_line[judge], "judge", (
            f"{judge!r} is already in the workspace as another judge (spec {h}); "
            "two specs are two judges: import under another name")))
    out.judgments = [j for j in out.judgments if j.judge not in clash]
    stored = _stored(ws, [j.key for j in out.judgments])
    stored_spans = _stored_spans(ws, [k for k in out.spans if k in stored])
    line = {j.key: seen[j.key] for j in out.judgments}
    keep = []
    for j in out.judgments:
        if j.key not in stored:
            out.new += 1
            keep.append(j)
            continue
        changed = _differs(j, stored[j.key])
        if j.key in out.spans and _span_rows(out.spans[j.key]) != stored_spans.get(j.key, []):
            changed.append("spans")
        if not changed:
            out.unchanged += 1
        elif replace:
            out.replaced += 1
            keep.append(j)
        else:
            problems.append(Problem(f, line[j.key], changed[0], (
                f"differs from the judgment already stored for this judge, item, order, sample and mutation "
                f"({', '.join(changed)}); pass --replace to overwrite it")))
    out.judgments, out.judges, out.specs = keep, sorted(first_line), specs
    kept = {j.key for j in keep}
    out.spans = {k: v for k, v in out.spans.items() if k in kept}
    return out, problems


def _span_rows(spans: list[Span]) -> list[tuple[int, int, str]]:
    return sorted((s.start, s.end, s.label) for s in spans)


def _stored_spans(ws: Workspace, keys: list[str]) -> dict[str, list[tuple[int, int, str]]]:
    """Judgment key -> its stored judge spans, as comparable rows."""
    if not keys:
        return {}
    frame = ws.spans_repo.spans_frame(kind="judge")
    frame = frame[frame["source"].isin(keys)]
    return {str(k): sorted(zip(g["start"].astype(int), g["end"].astype(int), g["label"].astype(str), strict=True))
            for k, g in frame.groupby("source")}


def import_verdicts(ws: Workspace, path: str | Path, replace: bool = False,
                    spec: JudgeSpec | None = None) -> VerdictImport:
    """Validate ``path`` completely, then write its new (or, with ``replace``, changed) judgments and
    their judge specs, or nothing. Raises :class:`ImportValidationError` with every problem.
    ``spec``: the spec of the file's one judge (default: :func:`import_spec` per name).

    The checks against the workspace (items, stored judgments and specs) and the writes share one write
    transaction, so a concurrent import or judge run cannot slip in between them."""
    with ws.transaction() as tx:
        res, problems = parse_verdicts(ws, Path(path), replace, spec)
        if problems:
            raise ImportValidationError(problems)
        ws.judgments_repo.add_judge_specs([(s.spec_hash, s.base_name, s.to_dict()) for s in res.specs.values()], conn=tx)
        ws.judgments_repo.add_judgments(res.judgments, conn=tx, replace=True)
        if res.spans:
            ws.spans_repo.replace_judge_spans(list(res.spans), [sp for spans in res.spans.values() for sp in spans], conn=tx)
    return res
