"""What a blind task shows and what its answer may be, per kind of review.

- ``pairwise``: the prompt and two responses (A/B order drawn per copy); a choice.
- ``spans``: the text to mark (an item's one candidate) and its source (the item's prompt: for
  FaithBench the article); labelled stretches of the text, from the label set of ``spans.xml``.
- ``likert``: the prompt, the response and the rubric the judges were given; a rating on the rubric's
  scale (``likert.xml`` with ``maxRating`` set to the scale's size).
- ``labels``: the prompt and the response of a binary or categorical item (one that carries a
  :class:`~judgecal.data.records.LabelSet`); one of its declared labels, picked from a single-choice list
  (``labels.xml``, generated per project from the label set). The criterion items of a multi-criterion
  record (``metadata["record"]``) are one task: the texts once, one list per criterion (``crit_0``,
  ``crit_1``, ... under the criterion's name); the answer splits back into one label per criterion item.

A task carries only these texts and an opaque key. What an answer may contain is read back from the
project's own labeling config (:func:`read_config`), so a pull checks against what the annotator saw.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import resources
from typing import Any

from judgecal.data.records import Item, LabelSet
from judgecal.errors import UserError

KINDS = ("pairwise", "spans", "likert", "labels")
DEFAULT_PROJECT = {"pairwise": "Blind review", "spans": "Blind span review", "likert": "Blind rating review",
                   "labels": "Blind label review"}
# the guidelines section that belongs to each kind's labeling config
SECTIONS = {"pairwise": "Pairwise tasks", "likert": "Rating tasks", "spans": "Marking spans",
            "labels": "Label tasks"}


class KindError(UserError, ValueError):
    """An item or a rubric that a kind of review cannot show."""


@dataclass(frozen=True)
class Question:
    """One single-choice list of a ``labels`` config: its control name, the header shown above it (the
    criterion's name for a record's criterion) and its labels, in the declared order."""

    control: str
    title: str
    labels: tuple[str, ...]


@dataclass(frozen=True)
class Config:
    """What a project's labeling config accepts: its kind, the span control (``from_name`` ->
    ``to_name``) and its labels, or the rating control and its largest value, or (``labels``) its
    questions, the first one's control and labels, and whether a rubric is shown."""

    kind: str
    control: str = ""
    target: str = ""
    labels: tuple[str, ...] = ()
    max_rating: int = 0
    questions: tuple[Question, ...] = ()
    rubric: bool = False


def asset(name: str) -> str:
    return resources.files("judgecal.annotation_assets").joinpath(name).read_text("utf-8")


def label_config(kind: str, scale_max: int | None = None, questions: tuple[Question, ...] = (),
                 rubric: bool = False) -> str:
    """The labeling config of ``kind``; for ``likert`` with the rating's ``maxRating`` set to ``scale_max``;
    for ``labels`` the one of ``questions`` (:func:`labels_config`; ``labels.xml`` itself without them)."""
    if kind not in KINDS:
        raise KindError(f"unknown kind of review {kind!r}; choose from {', '.join(KINDS)}")
    if kind == "labels" and questions:
        return labels_config(questions, rubric)
    xml = asset(f"{kind}.xml")
    if kind == "likert" and scale_max is not None:
        xml = re.sub(r'maxRating="\d+"', f'maxRating="{int(scale_max)}"', xml, count=1)
    return xml


def read_config(xml: str) -> Config:
    """The :class:`Config` of a labeling config (the kind from its controls)."""
    root = ET.fromstring(xml)
    labels = root.find(".//Labels")
    if labels is not None:
        return Config("spans", labels.get("name", ""), labels.get("toName", ""),
                      tuple(lab.get("value", "") for lab in labels.findall("Label")))
    rating = root.find(".//Rating")
    if rating is not None:
        return Config("likert", rating.get("name", ""), rating.get("toName", ""),
                      max_rating=int(rating.get("maxRating", "5")))
    questions, title, target = [], "", ""
    for el in root.iter():  # document order: a question's header is the last one before its list
        if el.tag == "Header":
            title = el.get("value", "")
        elif el.tag == "Choices" and _QUESTION.fullmatch(el.get("name", "")):
            questions.append(Question(el.get("name", ""), title, tuple(
                c.get("alias", c.get("value", "")) for c in el.findall("Choice"))))
            target = target or el.get("toName", "")
    if questions:
        return Config("labels", questions[0].control, target, questions[0].labels, questions=tuple(questions),
                      rubric=any(el.get("name") == "rubric" for el in root.iter("Text")))
    return Config("pairwise")


def check_item(kind: str, item: Item) -> None:
    """Refuse an item the kind cannot show (a pairwise task needs two candidates, the others one; a labels
    task a label set)."""
    need = 2 if kind == "pairwise" else 1
    if len(item.candidates) != need:
        raise KindError(f"item {item.item_id!r} has {len(item.candidates)} candidate(s); a {kind} task shows "
                        f"{need}")
    if kind == "labels" and not item.label_set:
        raise KindError(f"item {item.item_id!r} has no label set; a labels task shows the labels a binary or "
                        "categorical item declares (import it as a binary or categorical task)")


EMPTY = "(empty response)"


def shown(text: str) -> str:
    """A response as an annotator sees it: an empty (or whitespace-only) one as :data:`EMPTY`, not a blank panel."""
    return text if text.strip() else EMPTY


def task_data(kind: str, item: Item, key: str, flipped: bool = False, rubric: str = "") -> dict[str, str]:
    """The task's data: the texts to show and the opaque key, nothing else.

    An empty response is shown as :data:`EMPTY`; a span annotation is still checked against the real
    (empty) text on pull, so the only answer it accepts there is "nothing marked".
    """
    if kind == "pairwise":
        first, second = (item.candidates[1], item.candidates[0]) if flipped else (item.candidates[0], item.candidates[1])
        return {"prompt": item.prompt, "response_a": shown(first.text), "response_b": shown(second.text), "key": key}
    if kind == "spans":
        # not "source": Label Studio's frontend resolves $source to the whole task (id, lock, dates) as JSON
        return {"document": item.prompt, "text": shown(item.candidates[0].text), "key": key}
    if kind == "labels" and not rubric:  # a labels project shows a rubric only when it was pushed with one
        return {"prompt": item.prompt, "response": shown(item.candidates[0].text), "key": key}
    return {"prompt": item.prompt, "response": shown(item.candidates[0].text), "rubric": rubric, "key": key}


def parse_spans(result: list[dict[str, Any]], cfg: Config, text: str) -> tuple[list[tuple[int, int, str]], str | None]:
    """The (start, end, label) regions of one annotation, each checked against ``text`` and the config.

    Offsets are character offsets into ``text`` (Label Studio's ``value.start``/``value.end`` for a
    plain-text ``Text`` tag); a region must lie inside the text, its ``value.text`` must equal
    ``text[start:end]`` and its labels must be the config's. No region at all: the annotator marked
    nothing (``[]``). Any problem rejects the whole annotation, so no annotator's marking is kept in part.
    """
    out: list[tuple[int, int, str]] = []
    for k, r in enumerate(result):
        name, kind, value = r.get("from_name"), r.get("type"), r.get("value") or {}
        if name != cfg.control or kind != "labels":
            return [], f"unknown field {name!r} ({kind})"
        start, end, shown = value.get("start"), value.get("end"), value.get("text")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(text)):
            return [], f"region {k}: [{start}, {end}] is not a stretch of the text (length {len(text)})"
        if shown != text[start:end]:
            return [], f"region {k}: its text {str(shown)[:40]!r} is not text[{start}:{end}] {text[start:end][:40]!r}"
        labels = value.get("labels") or []
        bad = [lab for lab in labels if lab not in cfg.labels]
        if not labels or bad:
            return [], f"region {k}: label(s) {bad or labels!r} not in the labeling config ({', '.join(cfg.labels)})"
        out.extend((start, end, str(lab)) for lab in labels)
    return out, None


def parse_rating(result: list[dict[str, Any]], cfg: Config) -> tuple[int | None, str | None]:
    """The rating of one annotation (``1..max_rating``), checked against the config; a rating given twice
    is refused (never the last one taken)."""
    rating = None
    for r in result:
        name, kind = r.get("from_name"), r.get("type")
        if name == "rationale" and kind == "textarea":
            continue
        if name != cfg.control or kind != "rating":
            return None, f"unknown field {name!r} ({kind})"
        if rating is not None:
            return None, "the rating is answered twice"
        v = (r.get("value") or {}).get("rating")
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= cfg.max_rating:
            return None, f"rating {v!r} is not in 1..{cfg.max_rating} of the labeling config"
        rating = v
    return rating, None if rating is not None else "no rating given"


# -- labels: binary and categorical items, one question per item or per criterion of a record -------------
_QUESTION = re.compile(r"label|crit_\d+")  # the control names a labels config gives its questions
MAX_HOTKEYS = 9  # keys 1..9 pick the options in the order shown, counted across the task's questions
ASK = "Which label fits the response?"
# characters an XML 1.0 document cannot hold at all (not even as &#...;): a label with one is refused
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def record_of(item: Item) -> str | None:
    """The record a criterion item belongs to (``metadata["record"]`` of an item whose label set names a
    criterion); ``None`` for an item that is a question of its own."""
    ls = item.labels
    rec = item.metadata.get("record") if ls is not None and ls.criterion else None
    return None if rec in (None, "") else str(rec)


def _set(item: Item) -> LabelSet:
    ls = item.labels
    if ls is None:
        raise KindError(f"item {item.item_id!r} has no label set")
    return ls


def _describe(ls: LabelSet) -> str:
    labels = ", ".join(repr(lab) for lab in ls.labels[:6]) + (", ..." if len(ls.labels) > 6 else "")
    return f"{ls.task} [{labels}]" + (f" on criterion {ls.criterion!r}" if ls.criterion else "")


def label_units(items: list[Item]) -> tuple[tuple[Question, ...], dict[str, tuple[str, ...]]]:
    """The questions every task of a labels project asks, and per task its items in question order.

    Items that are questions of their own are one task each (the task's id is the item's), all with the
    same label set. The criterion items of records are one task per record (the task's id is the record's),
    every record with the same criteria and labels, its items sharing one prompt and one response; the
    criteria keep the order of the first record's items. Anything else raises :class:`KindError`, before a
    push changes anything.
    """
    if not items:
        return (), {}
    for it in items:
        check_item("labels", it)
    records = [record_of(it) for it in items]
    mixed = [it for it, rec in zip(items, records, strict=True) if (rec is None) != (records[0] is None)]
    if mixed:
        one, other = (items[0], mixed[0]) if records[0] is not None else (mixed[0], items[0])
        raise KindError(f"item {one.item_id!r} is a criterion of record {record_of(one)!r} but item "
                        f"{other.item_id!r} is a question of its own: push records and single items to "
                        "different projects")
    if records[0] is None:
        first = _set(items[0])
        for it in items:
            ls = _set(it)
            if ls.key() != first.key():
                raise KindError(f"items {items[0].item_id!r} ({_describe(first)}) and {it.item_id!r} "
                                f"({_describe(ls)}) have different label sets; a project asks one question: "
                                "push them to different projects")
        title = f"{first.criterion}: which label fits the response?" if first.criterion else ASK
        return (Question("label", title, first.labels),), {it.item_id: (it.item_id,) for it in items}
    groups: dict[str, list[Item]] = {}
    for it, rec in zip(items, records, strict=True):
        groups.setdefault(str(rec), []).append(it)
    (rec0, first_items), *_ = groups.items()
    layout = {_set(it).criterion: _set(it).key() for it in first_items}
    order = [_set(it).criterion for it in first_items]

    def ordered(its: list[Item]) -> list[Item]:
        return sorted(its, key=lambda it: order.index(_set(it).criterion))

    members: dict[str, tuple[str, ...]] = {}
    for rec, its in groups.items():
        got = {_set(it).criterion: _set(it).key() for it in its}
        if len(got) != len(its):
            raise KindError(f"record {rec!r} has a criterion twice ({', '.join(it.item_id for it in its)})")
        if got != layout:
            raise KindError(f"record {rec!r} is labelled on {', '.join(_describe(_set(it)) for it in its)} "
                            f"but record {rec0!r} on {', '.join(_describe(_set(it)) for it in first_items)}: "
                            "the records of one project share their criteria and labels; push them to "
                            "different projects")
        texts = {(it.prompt, it.candidates[0].text) for it in its}
        if len(texts) > 1:
            raise KindError(f"record {rec!r}: its criterion items differ in prompt or response; a record's "
                            "criteria are asked of one text")
        members[rec] = tuple(it.item_id for it in ordered(its))
    questions = tuple(Question(f"crit_{k}", _set(it).criterion, _set(it).labels)
                      for k, it in enumerate(ordered(first_items)))
    return questions, members


def _display(text: str) -> str:
    """Text as a config attribute Label Studio shows: its frontend replaces ``$name`` in a ``Header`` or
    ``Choice`` value with task data, so an invisible word joiner (U+2060) follows each ``$`` and the text
    looks the same (the exact label is the choice's ``alias``, which is what an annotation records)."""
    return text.replace("$", "$\u2060")


def labels_config(questions: tuple[Question, ...], rubric: bool = False) -> str:
    """The labeling config of a labels project: ``labels.xml`` with its example question replaced by
    ``questions`` (each a header and a single-choice list; options keep the declared order, the first
    :data:`MAX_HOTKEYS` across the task get keys 1..9) and, without ``rubric``, no rubric block.

    Labels and criterion names are untrusted text: they go into attributes only (escaped by the XML
    writer); one holding a character XML cannot carry is refused.
    """
    if not questions:
        raise KindError("a labels project needs at least one question")
    for q in questions:
        for what, name in [("criterion", q.title), *(("label", lab) for lab in q.labels)]:
            if _NOT_XML.search(name):
                raise KindError(f"{what} {name[:60]!r} holds a control character a labeling config cannot "
                                "carry; rename it on import")
    root = ET.fromstring(asset("labels.xml"))
    kids = list(root)
    at = next(k for k, el in enumerate(kids) if el.tag == "Choices")
    header, example = kids[at - 1], kids[at]
    root.remove(header)
    root.remove(example)
    key = 0
    for n, q in enumerate(questions):
        h = ET.Element("Header", value=_display(q.title))
        h.tail = header.tail
        c = ET.Element("Choices", name=q.control, toName="response", choice="single-radio", required="true")
        if len(q.labels) <= 5 and all(len(lab) <= 24 for lab in q.labels):
            c.set("showInline", "true")
        c.text = example.text
        for lab in q.labels:
            opt = ET.SubElement(c, "Choice", value=_display(lab), alias=lab)
            key += 1
            if key <= MAX_HOTKEYS:
                opt.set("hotkey", str(key))
            opt.tail = example.text
        opt.tail = example[-1].tail
        c.tail = example.tail
        root.insert(at - 1 + 2 * n, h)
        root.insert(at + 2 * n, c)
    if not rubric:
        kids = list(root)
        where = next(k for k, el in enumerate(kids) if el.tag == "Text" and el.get("name") == "rubric")
        root.remove(kids[where - 1])
        root.remove(kids[where])
    return ET.tostring(root, encoding="unicode")


def _field(q: Question, many: bool) -> str:
    return f"field {q.control!r}" + (f" (criterion {q.title[:60]!r})" if many else "")


def parse_labels(result: list[dict[str, Any]], cfg: Config) -> tuple[dict[str, str], str | None]:
    """control -> the label picked for each question of one annotation, checked against the config.

    Every question must be answered with exactly one of its labels (an annotation that answers part of a
    record is rejected whole, as Label Studio's ``required`` would have refused it); the rationale box is
    read by :func:`parse_rationale`. A problem names the field.
    """
    asked = {q.control: q for q in cfg.questions}
    many = len(cfg.questions) > 1
    picked: dict[str, str] = {}
    for r in result:
        name, kind = r.get("from_name"), r.get("type")
        if name == "rationale" and kind == "textarea":
            continue
        q = asked.get(str(name)) if isinstance(name, str) else None
        if q is None or kind != "choices":
            return {}, f"unknown field {name!r} ({kind})"
        if name in picked:
            return {}, f"{_field(q, many)}: answered twice"
        v = (r.get("value") or {}).get("choices")
        if not isinstance(v, list) or len(v) != 1 or not isinstance(v[0], str) or v[0] not in q.labels:
            shown_labels = ", ".join(q.labels[:10]) + (", ..." if len(q.labels) > 10 else "")
            return {}, f"{_field(q, many)}: choice {repr(v)[:80]} is not in the labeling config ({shown_labels})"
        picked[q.control] = v[0]
    missing = [q for q in cfg.questions if q.control not in picked]
    if missing:
        return {}, f"{_field(missing[0], many)}: no label given"
    return picked, None


MAX_RATIONALE_CHARS = 10_000


def parse_rationale(result: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """(the annotator's rationale, problem) from one annotation's result list: the ``rationale`` text
    area's lines joined, stripped; ``None`` when the box was left empty. Stored as written (it may speak of
    the responses as they were shown, e.g. "A", which the annotation's ``shown_order`` explains)."""
    parts: list[str] = []
    for r in result:
        if r.get("from_name") != "rationale" or r.get("type") != "textarea":
            continue
        text = (r.get("value") or {}).get("text")
        text = [text] if isinstance(text, str) else text
        if not isinstance(text, list) or not all(isinstance(t, str) for t in text):
            return None, "the rationale is not text"
        parts.extend(t for t in text if t.strip())
    joined = "\n".join(p.strip() for p in parts)
    if len(joined) > MAX_RATIONALE_CHARS:
        return None, f"the rationale is {len(joined):,} characters; the limit is {MAX_RATIONALE_CHARS:,}"
    return joined or None, None


def spans_json(regions: list[tuple[int, int, str]], text: str, control: str = "label",
               target: str = "text") -> list[dict[str, Any]]:
    """The result payload of marked regions, as Label Studio's UI submits it."""
    return [{"from_name": control, "to_name": target, "type": "labels",
             "value": {"start": s, "end": e, "text": text[s:e], "labels": [lab]}} for s, e, lab in regions]


def rating_json(rating: int) -> list[dict[str, Any]]:
    """The result payload of a Likert rating, as Label Studio's UI submits it."""
    return [{"from_name": "score", "to_name": "response", "type": "rating", "value": {"rating": rating}}]


def labels_json(picked: str | dict[str, str]) -> list[dict[str, Any]]:
    """The result payload of a labels task, as Label Studio's UI submits it: ``picked`` is the label of a
    single question, or control (``crit_0``, ...) -> label for a record's criteria."""
    answers = {"label": picked} if isinstance(picked, str) else picked
    return [{"from_name": c, "to_name": "response", "type": "choices", "value": {"choices": [lab]}}
            for c, lab in answers.items()]


def rationale_json(text: str) -> list[dict[str, Any]]:
    """The result payload of the rationale box of a task whose responses are shown as ``response``."""
    return [{"from_name": "rationale", "to_name": "response", "type": "textarea", "value": {"text": [text]}}]
