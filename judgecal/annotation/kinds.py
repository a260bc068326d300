"""What a blind task shows and what its answer may be, per kind of review.

- ``pairwise``: the prompt and two responses (A/B order drawn per copy); a choice.
- ``spans``: the text to mark (an item's one candidate) and its source (the item's prompt: for
  FaithBench the article); labelled stretches of the text, from the label set of ``spans.xml``.
- ``likert``: the prompt, the response and the rubric the judges were given; a rating on the rubric's
  scale (``likert.xml`` with ``maxRating`` set to the scale's size).

A task carries only these texts and an opaque key. What an answer may contain is read back from the
project's own labeling config (:func:`read_config`), so a pull checks against what the annotator saw.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from importlib import resources
from typing import Any

from judgecal.data.records import Item
from judgecal.errors import UserError

KINDS = ("pairwise", "spans", "likert")
DEFAULT_PROJECT = {"pairwise": "Blind review", "spans": "Blind span review", "likert": "Blind rating review"}
# the guidelines section that belongs to each kind's labeling config
SECTIONS = {"pairwise": "Pairwise tasks", "likert": "Rating tasks", "spans": "Marking spans"}


class KindError(UserError, ValueError):
    """An item or a rubric that a kind of review cannot show."""


@dataclass(frozen=True)
class Config:
    """What a project's labeling config accepts: its kind, the span control (``from_name`` ->
    ``to_name``) and its labels, or the rating control and its largest value."""

    kind: str
    control: str = ""
    target: str = ""
    labels: tuple[str, ...] = ()
    max_rating: int = 0


def asset(name: str) -> str:
    return resources.files("judgecal.annotation_assets").joinpath(name).read_text("utf-8")


def label_config(kind: str, scale_max: int | None = None) -> str:
    """The labeling config of ``kind``; for ``likert`` with the rating's ``maxRating`` set to ``scale_max``."""
    if kind not in KINDS:
        raise KindError(f"unknown kind of review {kind!r}; choose from {', '.join(KINDS)}")
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
    return Config("pairwise")


def check_item(kind: str, item: Item) -> None:
    """Refuse an item the kind cannot show (a pairwise task needs two candidates, the others one)."""
    need = 2 if kind == "pairwise" else 1
    if len(item.candidates) != need:
        raise KindError(f"item {item.item_id!r} has {len(item.candidates)} candidate(s); a {kind} task shows "
                        f"{need}")


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
    """The rating of one annotation (``1..max_rating``), checked against the config."""
    rating = None
    for r in result:
        name, kind = r.get("from_name"), r.get("type")
        if name == "rationale" and kind == "textarea":
            continue
        if name != cfg.control or kind != "rating":
            return None, f"unknown field {name!r} ({kind})"
        v = (r.get("value") or {}).get("rating")
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= cfg.max_rating:
            return None, f"rating {v!r} is not in 1..{cfg.max_rating} of the labeling config"
        rating = v
    return rating, None if rating is not None else "no rating given"


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
