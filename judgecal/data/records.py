"""The record model shared by every stage of the loop.

Pairwise verdicts are always stored in *item orientation*: ``A`` means the item's first
candidate won, whatever order the judge saw. :func:`to_item_orientation` is the one place
where a presentation order is undone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from judgecal.errors import InputError

Verdict = Literal["A", "B", "tie", "invalid"]
Order = Literal["AB", "BA"]
VERDICTS: tuple[str, ...] = ("A", "B", "tie")
ORDERS: tuple[str, ...] = ("AB", "BA")
STATUSES: tuple[str, ...] = ("ok", "invalid", "error", "too_long")


def to_item_orientation(shown: str | None, order: str) -> str | None:
    """Map a verdict about the *shown* positions back to the item's candidates.

    ``shown`` is ``"A"`` when the judge preferred the first response it was shown. With order
    ``"BA"`` the item's second candidate was shown first, so ``A`` and ``B`` swap; ``tie``,
    ``invalid`` and ``None`` are unchanged.
    """
    if order not in ORDERS:
        raise InputError(f"order must be 'AB' or 'BA', got {order!r}")
    if order == "BA" and shown in ("A", "B"):
        return "B" if shown == "A" else "A"
    return shown


def stable_hash(obj: Any, n: int = 16) -> str:
    """A short sha256 of a JSON-serialisable object with sorted keys."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:n]


@dataclass(frozen=True)
class Candidate:
    """One response to judge, with the model that wrote it and that model's family."""

    text: str
    model: str | None = None
    family: str | None = None


LABEL_TASKS: tuple[str, ...] = ("binary", "categorical")


@dataclass(frozen=True)
class LabelSet:
    """The labels a binary or categorical item may get, declared on import.

    ``binary``: exactly two labels, ``positive`` the one a pass rate counts (``pass``, ``yes``, ``1``, ``C``:
    whatever the file uses). ``categorical``: two or more labels; ``ordinal`` when their order (lowest
    first) is meaningful, which weights κ. ``criterion`` names the rubric criterion an item is labelled on
    (one item per criterion of a multi-criterion record), ``""`` for a single question.
    """

    task: str
    labels: tuple[str, ...]
    positive: str | None = None
    ordinal: bool = False
    criterion: str = ""

    def __post_init__(self) -> None:
        if self.task not in LABEL_TASKS:
            raise InputError(f"a label set's task is binary or categorical, not {self.task!r}")
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels) or not all(self.labels):
            raise InputError(f"a label set needs two or more distinct, non-empty labels, got {list(self.labels)}")
        if self.task == "binary" and (len(self.labels) != 2 or self.positive not in self.labels):
            raise InputError(f"a binary label set has two labels and names the positive one, got {list(self.labels)} "
                             f"with positive {self.positive!r}")
        if self.task == "categorical" and self.positive is not None and self.positive not in self.labels:
            raise InputError(f"positive label {self.positive!r} is not one of {list(self.labels)}")

    @property
    def negative(self) -> str | None:
        return next((lab for lab in self.labels if lab != self.positive), None) if self.task == "binary" else None

    def key(self) -> tuple[Any, ...]:
        """What makes two items' figures comparable: the same task, labels and criterion."""
        return (self.task, self.labels, self.positive, self.ordinal, self.criterion)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "labels": list(self.labels), "positive": self.positive, "ordinal": self.ordinal,
                "criterion": self.criterion}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LabelSet:
        return cls(str(d["task"]), tuple(str(x) for x in d["labels"]), d.get("positive"), bool(d.get("ordinal")),
                   str(d.get("criterion") or ""))


@dataclass
class Item:
    """One thing to judge: a prompt with one (pointwise) or two (pairwise) candidates.

    A pointwise item may carry a :class:`LabelSet` (``label_set``, as a dict): its human and judge labels
    are then one of those labels (a binary or categorical task), not scores.
    """

    item_id: str
    prompt: str
    candidates: list[Candidate]
    task: Literal["pairwise", "pointwise"] = "pairwise"
    reference: str | None = None
    source: str = "user"
    metadata: dict[str, Any] = field(default_factory=dict)
    label_set: dict[str, Any] | None = None

    @property
    def labels(self) -> LabelSet | None:
        return LabelSet.from_dict(self.label_set) if self.label_set else None

    def to_json(self) -> str:
        d = asdict(self)
        if d["label_set"] is None:  # an item without one is stored as it always was
            del d["label_set"]
        return json.dumps(d, ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, blob: str) -> Item:
        d = json.loads(blob)
        d["candidates"] = [Candidate(**c) for c in d["candidates"]]
        return cls(**d)


@dataclass
class Judgment:
    """One judge call, in item orientation, with the raw text kept."""

    key: str
    item_id: str
    judge: str
    spec_hash: str
    order: str = "AB"
    mutation: str = "none"
    sample: int = 0
    seed: int | None = None
    raw: str = ""
    verdict: str | None = None
    score: float | None = None
    p_a: float | None = None
    p_b: float | None = None
    p_tie: float | None = None
    expected_score: float | None = None
    status: str = "ok"
    rubric_version: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    env: str | None = None
    created_at: float | None = None
    # a binary or categorical judge's probability of each label (JSON object label -> p), when it gave them
    p_labels: str | None = None
    time: str | None = None  # when the verdict was given (UTC ISO 8601), when the record says
    period: str | None = None  # the period it belongs to (any name), when the record says


@dataclass
class Annotation:
    """One human label, in item orientation."""

    item_id: str
    annotator: str
    label: str
    shown_order: str | None = None
    time_spent_s: float | None = None
    source: str = "user"
    annotation_id: str | None = None
    rationale: str | None = None  # the annotator's own words, when they gave any (untrusted text)


@dataclass
class Consensus:
    """The aggregated human label of one item, with the method and its posterior."""

    item_id: str
    method: str
    label: str
    posterior: dict[str, float] = field(default_factory=dict)


JUDGMENT_FIELDS: tuple[str, ...] = tuple(Judgment.__dataclass_fields__)
ANNOTATION_FIELDS: tuple[str, ...] = tuple(Annotation.__dataclass_fields__)


# -- spans ----------------------------------------------------------------------------------------
SPAN_KINDS: tuple[str, ...] = ("human", "judge")


@dataclass(frozen=True)
class Span:
    """One marked stretch ``text[start:end]`` of one candidate's text, by a person or a judge.

    Offsets are character offsets into ``item.candidates[candidate].text``. A rater who looked at a
    text and marked nothing is recorded by one empty span (``start == end == 0``, label ``""``): it
    says the rater was there and adds no character. ``score`` is the rater's probability that the
    stretch is marked (soft labels), when it gives one; ``note`` keeps the rater's own words.
    """

    item_id: str
    rater: str
    candidate: int
    start: int
    end: int
    label: str = ""
    source: str = "user"
    kind: str = "human"
    score: float | None = None
    note: str | None = None

    @property
    def empty(self) -> bool:
        return self.end <= self.start


SPAN_FIELDS: tuple[str, ...] = tuple(Span.__dataclass_fields__)


# -- identity --------------------------------------------------------------------------------------
# An item id is made of parts joined by ``/``. Each part is escaped (``%`` and ``/`` anywhere, ``@`` and
# ``#`` at its start) so that no part can pass for two, or for a model (``@<model>``) or a content digest
# (``#<digest>``): record ``1`` with criterion ``a/b`` is ``1/a%2Fb``, record ``1/a`` with criterion ``b``
# is ``1/a/b``. A part without these characters reads as before.
def escape(part: Any) -> str:
    """``part`` as one part of an item id (see above)."""
    s = str(part).replace("%", "%25").replace("/", "%2F")
    return ("%40" + s[1:] if s.startswith("@") else "%23" + s[1:] if s.startswith("#") else s)


def criterion_id(record: str, criterion: str) -> str:
    """The item of ``record`` judged on ``criterion``: ``<record>/<criterion, escaped>``."""
    return f"{record}/{escape(criterion)}"
