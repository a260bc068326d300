"""Inspect (``inspect_ai``) eval logs: the ``.eval`` zip (Zstandard-compressed, read with ``zipfile-zstd``,
which inspect-ai installs) and the ``.json`` log.

The header names the evaluated model (``eval.model``), the grader (``eval.model_roles.grader``) and the
scorers (``eval.scorers[]``). Each sample (``id``, ``epoch``, ``input``, ``output.completion``) becomes a
pointwise item (one per epoch: ``inspect/<task>/<id>``, ``/e<epoch>`` after the first); each score
``scores.<name>`` is a verdict of the judge ``<name>``: the first ``history`` entry when the score was
edited (the scorer's own value), else the score. Later ``history`` entries carry a ``provenance``
(``author``, ``reason``): each is a person's label (source ``inspect:human``; the last edit by each
person counts). A sample's ``error`` makes no verdict.

A scorer whose values in the log (its own and people's edits) are numbers (or mostly: another value is
then an invalid verdict) gives scores on the sample's item, and an edit is a label when it is a whole
number on judgecal's 1-10 scale (another edit is counted as dropped). Any other scorer gives labels: ``C``/``I`` (``CORRECT``/``INCORRECT``) make a
binary task (labels ``C``, ``I``, positive ``C``), and with ``P`` (``PARTIAL``) an ordinal categorical one
(``I``, ``P``, ``C``, lowest first); booleans, ``N`` (no answer) or other labels are read as any format's
are (:func:`judgecal.data.formats.labels.declare`). Each sample's label verdict and edits go on its item
for the scorer, ``<sample item>/<scorer>`` (the scorer as the criterion); a value that is no label (a
fraction among labels) is an invalid verdict. A score with several values (an object or a list) is
counted as dropped.
"""

from __future__ import annotations

import contextlib
import json
import zipfile
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import (
    Mapped,
    Skip,
    check_text,
    finite,
    listed,
    loads,
    obj,
    point_item,
    read_json_document,
)
from judgecal.data.formats.labels import declare, mostly_numbers, seen
from judgecal.data.importers import MAX_TEXT_CHARS, SCORE_RANGE, Problem
from judgecal.data.records import Item, LabelSet

NAME = "inspect"
DESCRIPTION = "Inspect eval logs (.eval zip or .json): samples with scores, score edits as human labels"
HUMANS = "inspect:human"


def detect(path: Path, head: list[Any]) -> bool:
    if path.suffix.lower() == ".eval":
        return zipfile.is_zipfile(path)
    return (len(head) == 1 and isinstance(head[0], dict) and isinstance(head[0].get("eval"), dict)
            and "samples" in head[0] and "task" in head[0]["eval"])


MAX_MEMBER_BYTES = 64 * 2**20  # one member of an .eval zip, uncompressed: far above a real sample's size


def _member(z: zipfile.ZipFile, name: str) -> Any:
    """The JSON document in member ``name``, read at most :data:`MAX_MEMBER_BYTES` (whatever the zip's header
    declares: a member that inflates past the cap is refused before it is held whole)."""
    info = z.getinfo(name)
    if info.file_size > MAX_MEMBER_BYTES:
        raise Skip(name, f"is {info.file_size:,} bytes uncompressed; the limit for one member is "
                   f"{MAX_MEMBER_BYTES:,} bytes")
    with z.open(info) as fh:
        data = fh.read(MAX_MEMBER_BYTES + 1)
    if len(data) > MAX_MEMBER_BYTES:
        raise Skip(name, f"inflates past {MAX_MEMBER_BYTES:,} bytes, the limit for one member (its header "
                   f"declares {info.file_size:,})")
    doc = loads(data, field=name)
    check_text(doc, field=name)
    return doc


def _read(path: Path) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """(header, [(where, sample)]) of a .eval zip or a .json log."""
    if path.suffix.lower() == ".eval":
        with contextlib.suppress(ImportError):  # Inspect compresses .eval logs with Zstandard, which Python's
            import zipfile_zstd  # noqa: F401  zipfile reads once this (a dependency of inspect-ai) is loaded
        try:
            with zipfile.ZipFile(path) as z:
                names = z.namelist()
                if "header.json" in names:
                    hname = "header.json"
                elif "_journal/start.json" in names:  # a log still running or cut off
                    hname = "_journal/start.json"
                else:
                    raise Skip(None, "an .eval log without header.json")
                header = _member(z, hname)
                if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
                    raise Skip(f"{hname}: eval", "an Inspect log's header has an eval object")
                samples = [(n, _member(z, n)) for n in sorted(names) if n.startswith("samples/") and n.endswith(".json")]
        except NotImplementedError:
            raise Skip(None, "this .eval log is compressed with Zstandard: pip install zipfile-zstd (it comes with "
                       "inspect-ai), or convert it with `inspect log convert --to json`") from None
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, RuntimeError) as exc:
            raise Skip(None, f"cannot read the .eval log: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        return header, samples
    doc = read_json_document(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
        raise Skip("eval", "an Inspect log has an eval object")
    rows = doc.get("samples") or []
    if not isinstance(rows, list):
        raise Skip("samples", "must be a list")
    return doc, [(f"samples[{k}]", sample) for k, sample in enumerate(rows)]


def _input_text(v: Any) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list):  # chat messages: their text, in order
        parts = []
        for msg in v:
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, list):
                content = "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
            if isinstance(content, str):
                parts.append(content if msg.get("role") == "user" else f"[{msg.get('role')}] {content}")
        return "\n\n".join(parts)
    raise Skip("input", "must be a text or a list of messages")


def _grader(header: dict[str, Any]) -> str | None:
    roles = header["eval"].get("model_roles") or {}
    g = roles.get("grader") if isinstance(roles, dict) else None
    g = g[0] if isinstance(g, list) and g else g
    return g.get("model") if isinstance(g, dict) and isinstance(g.get("model"), str) else None


def parse(path: Path) -> Mapped:
    m = Mapped(NAME, runs=True)
    f = str(path)
    header, samples = _read(path)
    ev = header["eval"]
    task, model, grader = str(ev.get("task", "task")), ev.get("model"), _grader(header)
    scorers: dict[str, dict[str, Any]] = {}
    for k, sc in enumerate(listed(ev.get("scorers"), "eval.scorers")):
        if isinstance(sc, dict):
            if not isinstance(sc.get("name"), str):
                raise Skip(f"eval.scorers[{k}].name", f"must be a scorer's name, got {type(sc.get('name')).__name__}")
            scorers[sc["name"]] = sc
    found: list[tuple[Item, str, Values, dict[str, Any] | None, str]] = []
    for where, s in samples:
        try:
            if not isinstance(s, dict):
                raise Skip(None, "a sample must be an object")
            sid, epoch = s.get("id"), s.get("epoch", 1)
            if isinstance(sid, bool) or not isinstance(sid, (str, int)):
                raise Skip("id", "must be a string or an integer")
            prompt = _input_text(s.get("input"))
            out = s.get("output") or {}
            completion = out.get("completion") if isinstance(out, dict) else None
            if s.get("error") and not isinstance(completion, str):
                m.drop("samples that ended in an error (no output)")
                continue
            if not isinstance(completion, str):
                raise Skip("output.completion", "must be a string")
            if len(prompt) > MAX_TEXT_CHARS or len(completion) > MAX_TEXT_CHARS:
                raise Skip("input", f"a text is over the limit of {MAX_TEXT_CHARS:,} characters")
            own = (task, str(sid)) + ((f"e{epoch}",) if epoch not in (1, None) else ())
            meta = {"epoch": epoch, "target": s["target"]} if isinstance(s.get("target"), str) else {"epoch": epoch}
            item = point_item(NAME, own, prompt, completion, model if isinstance(model, str) else None, meta)
            m.item(item, f"{f}: {where}", (f, None))
            for name, score in obj(s.get("scores")).items():
                found.append((item, str(name), _values(score, f"{where}.scores.{name}"), scorers.get(name),
                              f"{where}.scores.{name}"))
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    if not samples:
        m.problems.append(Problem(f, None, "samples", "the log holds no samples"))
    given: dict[str, list[Any]] = {}
    for _, name, ((own, _), edits), _, _ in found:
        given.setdefault(name, []).extend([own, *(v for _, v in edits)])
    numeric = {name: mostly_numbers(vs, finite) for name, vs in given.items()}
    for item, name, values, scorer, where in found:
        _score(m, item, name, values, numeric[name], scorer, grader, where)
    m.settle(_declare)
    return m


Values = tuple[tuple[Any, Any], list[tuple[str, Any]]]  # ((the scorer's value, its explanation), [(author, edit)])


def _values(score: Any, where: str) -> Values:
    """The scorer's own value (the first ``history`` entry when the score was edited) and people's edits."""
    if not isinstance(score, dict):
        raise Skip(None, f"{where} must be an object")
    history = [h for h in listed(score.get("history"), "history") if isinstance(h, dict)]
    original = history[0] if history and not history[0].get("provenance") else score
    edits = []
    for edit in history:
        prov = edit.get("provenance")
        if isinstance(prov, dict) and isinstance(prov.get("author"), str) and edit.get("value") != "UNCHANGED":
            edits.append((prov["author"], edit.get("value")))
    raw = original.get("explanation")
    # a score's history is a log of revisions: the last edit by each person is their label
    last = list({who: v for who, v in edits}.items())
    return (original.get("value"), raw if raw != "UNCHANGED" else score.get("explanation")), last


CORRECT = {"correct": "C", "incorrect": "I", "partial": "P"}


def _declare(criterion: str, values: list[str]) -> LabelSet | str:
    """Inspect's own labels: ``C``/``I`` binary, with ``P`` ordinal ``I`` < ``P`` < ``C``; else as any format."""
    labels = {CORRECT.get(x.casefold(), x.upper()) for x in seen(values)}
    if labels <= {"C", "I"}:
        return LabelSet("binary", ("C", "I"), "C", False, criterion)
    if labels <= {"C", "I", "P"}:
        return LabelSet("categorical", ("I", "P", "C"), None, True, criterion)
    return declare(criterion, values)


def _score(m: Mapped, item: Item, name: str, values: Values, numeric: bool, scorer: dict[str, Any] | None,
           grader: str | None, where: str) -> None:
    """One sample's score of ``name``: a score and 1-10 labels on the sample's item when the scorer's values
    are numbers, else a label verdict and labels on its item for the scorer."""
    (value, raw), edits = values
    if isinstance(value, dict | list) or any(isinstance(v, dict | list) for _, v in edits):
        m.drop(f"{name}: scores with several values (an object or a list)")
        return
    options = (scorer or {}).get("options") or {}
    judge = m.judge(name, grader or name, rubric=f"inspect scorer {name}",
                    scorer_options=json.dumps(options, sort_keys=True, default=str) if options else None)
    if not numeric:
        m.vote(name, item.item_id, _named(value), base=item, judge=judge, raw=raw, invalid=value is None,
               where=(where, None))
        for author, v in edits:
            m.vote(name, item.item_id, _named(v), base=item, annotator=author, source=HUMANS, where=(where, None))
        return
    x = finite(value)
    m.verdict(judge, item.item_id, score=x, verdict="invalid" if x is None else None, raw=raw, where=(where, None))
    for author, v in edits:
        y = finite(v)
        if y is None or not y.is_integer() or not SCORE_RANGE[0] <= y <= SCORE_RANGE[1]:
            m.drop(f"{name}: human edits that are not whole numbers {SCORE_RANGE[0]}-{SCORE_RANGE[1]} "
                   "(judgecal's pointwise labels)")
            continue
        m.label(item.item_id, author, str(int(y)), HUMANS, order=None, where=(where, None))


def _named(v: Any) -> Any:
    """``CORRECT``/``INCORRECT``/``PARTIAL`` (the names of Inspect's constants) as ``C``/``I``/``P``."""
    return CORRECT.get(v.strip().casefold(), v) if isinstance(v, str) else v
