"""A JSON export of a Label Studio project (any labeling config).

Each task: ``id``, ``data`` (the texts), ``annotations`` [{``completed_by``, ``result``, ``was_cancelled``,
``lead_time``}] — people's labels — and ``predictions`` [{``model_version``, ``result``, ``score``}] — a
judge's (the model version names it). Label Studio's own JSON export lists predictions by id and writes
each out in full only inside an annotation made from it; those are read there, and a prediction given
by id alone is counted as dropped. The item's texts are found by the usual field names: a prompt
(``prompt``, ``instruction``, ``question``, ``query``, ``input``) and two responses (``response_a``/
``response_b``, ``answer_a``/``answer_b``, ``output_1``/``output_2``, ``response1``/``response2``), or one
(``response``, ``answer``, ``output``, ``completion``, ``text``).

A result maps by its type: ``choices`` that name a side (``A``, ``B``, ``A better``, ``Response A``,
``Tie``, ``Both bad`` …) are pairwise labels; ``rating`` a 1-10 score; ``labels`` with ``start``/``end``
spans on the response. A cancelled annotation (``was_cancelled``, a skip) is not a label. Labels go under
the source ``labelstudio:human``, annotators named ``ls-<user id>``.

Other choices (a class, yes/no, or any choice on a single response) are binary or categorical: each
``choices`` control (its ``from_name``) is a criterion, its item ``<task item>/<from_name>``, and its label
set comes from the values the file gives it, people's and predictions' alike, in the order first seen
(:func:`judgecal.data.formats.labels.declare`: ``Yes``/``No`` binary with positive ``Yes``, a class list
categorical; an export does not carry the labeling config, so a choice nobody picked is not in the set).
A person's choice is their label, a prediction's a verdict of its judge. On a pair, such a control is
about one response when its ``to_name`` is that response's field (its item is that response), and is
counted as dropped otherwise (a label item rates one response). A choice of several values (a
multi-select) is counted as dropped. A task whose only labels are such choices is stored as its
criterion items only.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import (
    Mapped,
    Skip,
    finite,
    listed,
    pair_item,
    point_item,
    read_records,
    text_of,
)
from judgecal.data.importers import MAX_TEXT_CHARS, SCORE_RANGE, Problem
from judgecal.data.records import Item, Span
from judgecal.data.rows import whole_id

NAME = "labelstudio"
DESCRIPTION = "Label Studio JSON export (data, annotations[] as human labels, predictions[] as a judge)"
HUMANS = "labelstudio:human"
PROMPTS = ("prompt", "instruction", "question", "query", "input")
PAIRS = (("response_a", "response_b"), ("answer_a", "answer_b"), ("output_1", "output_2"), ("response1", "response2"))
SINGLE = ("response", "answer", "output", "completion", "text")
SIDES = {"a": "A", "a better": "A", "response a": "A", "answer a": "A", "left": "A", "b": "B", "b better": "B",
         "response b": "B", "answer b": "B", "right": "B", "tie": "tie", "both bad": "tie", "equal": "tie",
         "both good": "tie", "same": "tie", "draw": "tie"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and isinstance(r.get("data"), dict)
                              and ("annotations" in r or "predictions" in r) for r in head)


def _texts(data: dict[str, Any]) -> tuple[str, list[str], str]:
    """(prompt, candidate texts, the response field) of a task's data."""
    def text(k: str) -> str:
        v = data[k]
        if not isinstance(v, str):
            raise Skip(f"data.{k}", f"must be a string, got {type(v).__name__}")
        if len(v) > MAX_TEXT_CHARS:
            raise Skip(f"data.{k}", f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,}")
        return v

    pk = next((k for k in PROMPTS if k in data), None)
    prompt = text(pk) if pk else ""
    for a, b in PAIRS:
        if a in data and b in data:
            return prompt, [text(a), text(b)], a
    rk = next((k for k in SINGLE if k in data), None)
    if rk is None:
        raise Skip("data", f"no response field ({', '.join(p[0] for p in PAIRS)}/..., or {', '.join(SINGLE)})")
    return prompt, [text(rk)], rk


def _reading(result: Any, pairwise: bool, response_field: str, text: str) -> list[tuple[str, Any]]:
    """The result list as (kind, value) readings: ``side``, ``score``, ``span``, ``class`` (``(from_name,
    to_name, choice)``) or ``multi`` (a choice of several values, dropped)."""
    if not isinstance(result, list):
        raise Skip("result", "must be a list")
    out: list[tuple[str, Any]] = []
    for r in result:
        if not isinstance(r, dict) or not isinstance(r.get("value"), dict):
            raise Skip("result", "each result needs a value object")
        kind, value = r.get("type"), r["value"]
        if kind == "choices":
            picked = value.get("choices")
            if not isinstance(picked, list) or not all(isinstance(x, str) for x in picked):
                raise Skip("result.value.choices", "must be a list of texts")
            if len(picked) != 1:
                out.append(("multi", str(r.get("from_name") or "choices")))  # (none picked: no label either)
                continue
            side = SIDES.get(picked[0].strip().lower())
            if pairwise and side is not None:
                out.append(("side", side))
            else:
                to = r.get("to_name")
                out.append(("class", (str(r.get("from_name") or "choices"), to if isinstance(to, str) else None,
                                      picked[0])))
        elif kind == "rating":
            x = finite(value.get("rating"))
            if x is None or not x.is_integer() or not SCORE_RANGE[0] <= x <= SCORE_RANGE[1]:
                raise Skip("result.value.rating", f"must be a whole number {SCORE_RANGE[0]}-{SCORE_RANGE[1]}, "
                           f"got {value.get('rating')!r}")
            out.append(("score", int(x)))
        elif kind == "labels" and not pairwise and r.get("to_name") in (response_field, None):
            s, e = value.get("start"), value.get("end")
            if not (isinstance(s, int) and isinstance(e, int) and 0 <= s <= e <= len(text)):
                raise Skip("result.value", f"[{s!r}, {e!r}] is not a span of the {len(text)}-character response")
            labels = listed(value.get("labels"), "result.value.labels") or [""]
            out.append(("span", (s, e, str(labels[0]))))
    return out


def _classes(m: Mapped, item: Item, rfield: str, readings: list[tuple[str, Any]], who: str,
             where: tuple[str, int | None], **vote: Any) -> None:
    """The task's class choices as votes on its criterion items (``vote``: the judge, or the person)."""
    for kind, v in readings:
        if kind == "multi":
            m.drop(f"{v}: choices of none or several values (a multi-select, not one label)")
            continue
        if kind != "class":
            continue
        control, to, choice = v
        base = item
        if item.task == "pairwise":
            fields = (rfield, dict(PAIRS)[rfield])
            if to not in fields:
                m.drop(f"{control}: {who} on a pair that rate neither response alone (a label item rates one "
                       "response)")
                continue
            c = item.candidates[fields.index(to)]
            base = replace(point_item(NAME, "", item.prompt, c.text, c.model), item_id=item.item_id)
        m.vote(control, item.item_id, choice, base=base, where=where, **vote)


def _predictions(m: Mapped, task: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's predictions as objects. Label Studio's JSON export lists a task's predictions by id and
    writes a prediction out in full only inside an annotation made from it (``annotations[].prediction``);
    an id found nowhere in full is counted as dropped (its result is not in the file)."""
    full: dict[Any, dict[str, Any]] = {}
    ids: list[Any] = []
    for k, p in enumerate(listed(task.get("predictions"), "predictions")):
        if isinstance(p, dict):
            full[p.get("id", f"#{k}")] = p
        elif isinstance(p, int) and not isinstance(p, bool):
            ids.append(p)
        else:
            raise Skip(f"predictions[{k}]", "must be an object or a prediction id")
    for ann in listed(task.get("annotations"), "annotations"):
        p = ann.get("prediction") if isinstance(ann, dict) else None
        if isinstance(p, dict) and isinstance(p.get("result"), list):
            full.setdefault(p.get("id"), p)
    missing = [i for i in ids if i not in full]
    if missing:
        m.drop("predictions exported by id only (their result is not in the file)", len(missing))
    return list(full.values())


def _marks_spans(tasks: list[tuple[int | None, Any]]) -> bool:
    """Whether the project marks spans (some annotation holds a ``labels`` result): only then does an
    empty result say "looked and marked nothing"."""
    for _, task in tasks:
        anns = task.get("annotations") if isinstance(task, dict) else None
        for ann in anns if isinstance(anns, list) else []:
            result = ann.get("result") if isinstance(ann, dict) else None
            if isinstance(result, list) and any(isinstance(r, dict) and r.get("type") == "labels" for r in result):
                return True
    return False


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    tasks = read_records(path)
    spans_project = _marks_spans(tasks)
    for n, task in tasks:
        where = (f, n)
        try:
            if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
                raise Skip(None, "a task must be an object with a data object")
            tid = whole_id(task.get("id", task.get("data", {}).get("id")))
            if isinstance(tid, bool) or not isinstance(tid, (str, int)):
                raise Skip("id", "must be a string or an integer")
            prompt, texts, rfield = _texts(task["data"])
            pairwise = len(texts) == 2
            item = (pair_item(NAME, tid, prompt, texts[0], texts[1], None, None) if pairwise
                    else point_item(NAME, tid, prompt, texts[0], None))
            iid = item.item_id
            m.item(item, f"{f}:{n}" if n else f"{f}: task {tid}", where)
            for k, ann in enumerate(listed(task.get("annotations"), "annotations")):
                if not isinstance(ann, dict):
                    raise Skip(f"annotations[{k}]", "must be an object")
                if ann.get("was_cancelled"):
                    m.counts["skipped_labels"] += 1
                    continue
                who = ann.get("completed_by")
                who = who.get("id", who.get("email")) if isinstance(who, dict) else who
                annotator = f"ls-{who}"
                readings = _reading(ann.get("result"), pairwise, rfield, texts[-1])
                spent = finite(ann.get("lead_time"))
                _classes(m, item, rfield, readings, "people's choices", where, annotator=annotator, source=HUMANS,
                         time_spent_s=spent, label_field=f"annotations[{k}]")
                marks = [v for kind, v in readings if kind == "span"]
                for kind, v in readings:
                    if kind in ("side", "score"):
                        m.label(iid, annotator, str(v), HUMANS, time_spent_s=spent, where=where,
                                field=f"annotations[{k}]")
                if marks or (spans_project and not pairwise and ann.get("result") == []):
                    kept = [(s, e, lab) for s, e, lab in marks if e > s]
                    m.counts["zero_length_spans"] += len(marks) - len(kept)
                    m.spans.extend(Span(iid, annotator, 0, s, e, lab, HUMANS, "human") for s, e, lab in kept)
                    if not kept:
                        m.spans.append(Span(iid, annotator, 0, 0, 0, "", HUMANS, "human"))
            for pred in _predictions(m, task):
                version = pred.get("model_version")
                judge = m.judge(f"{version}" if isinstance(version, str) and version.strip() else "labelstudio-prediction")
                readings = _reading(pred.get("result"), pairwise, rfield, texts[-1])
                _classes(m, item, rfield, readings, "predicted choices", where, judge=judge,
                         raw=text_of(pred.get("result")))
                got = [(kind, v) for kind, v in readings if kind in ("side", "score")]
                if got:
                    kind, v = got[0]
                    m.verdict(judge, iid, verdict=v if kind == "side" else None,
                              score=float(v) if kind == "score" else None, raw=text_of(pred.get("result")),
                              sample=0, where=where)
                elif any(kind == "span" for kind, _ in readings):
                    m.drop("predicted spans (judge spans come with `import --as judgments`)")
        except Skip as exc:
            m.problems.append(Problem(f, n, exc.field, str(exc)))
    m.settle()
    if not m.items and not m.problems:
        m.problems.append(Problem(f, None, None, "no tasks"))
    if any(m.items[j.item_id].task == "pairwise" for j in m.judgments.values()):
        m.notes.append("a prediction does not record the order its model saw: pairwise predictions are stored as "
                       "shown AB, so a position-bias figure of these judges does not measure position")
    return m
