"""Binary and categorical tasks on import: the declared labels, and each value a file gives read as one of them.

``judgecal import FILE --task binary --positive pass`` (the other label found in the file, or named with
``--labels pass,fail``) and ``--task categorical --labels safe,unsafe,unsure [--ordinal]``. A file writes
its labels as it likes: ``true``/``false``, ``1``/``0``, ``"PASS"``; a value is read as a declared label
when its text (a JSON boolean as ``true``/``false``, a whole number as its digits) equals the label, or
equals it ignoring case when that names one label only. ``--criteria helpful,harmless``: each record is
judged on several criteria, its human labels are objects ``{criterion: label}``, and it is stored as one
item per criterion (``<id>/<criterion>``), each with the same prompt and response.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from judgecal.data.records import LABEL_TASKS, LabelSet
from judgecal.errors import InputError, UserError

# the usual two-label vocabularies: the negative of a declared positive label when the file shows only one
PAIRS = (("pass", "fail"), ("yes", "no"), ("true", "false"), ("1", "0"), ("c", "i"), ("safe", "unsafe"),
         ("correct", "incorrect"), ("good", "bad"), ("acceptable", "unacceptable"), ("y", "n"),
         ("positive", "negative"), ("success", "failure"))
MAX_LABELS = 64
MAX_LABEL_CHARS = 200


class LabelSetError(UserError, ValueError):
    """A declaration (the positive label, the labels) that cannot make a label set with the labels a file gives.
    A declaration refused on its own is an :class:`~judgecal.errors.InputError` naming the input."""


@dataclass(frozen=True)
class Declared:
    """What the user declared on the command line; :func:`resolve` makes the :class:`LabelSet`."""

    task: str
    labels: tuple[str, ...] = ()
    positive: str | None = None
    ordinal: bool = False
    criteria: tuple[str, ...] = ()


def _names(text: str | None, what: str) -> tuple[str, ...]:
    if not text:
        return ()
    names = tuple(x.strip() for x in text.split(","))
    if any(not x for x in names):
        raise InputError(f"{what} {text!r}: an empty name between commas", name=what)
    if len(set(names)) != len(names):
        raise InputError(f"{what} {text!r}: a name given twice", name=what)
    if len(names) > MAX_LABELS or any(len(x) > MAX_LABEL_CHARS for x in names):
        raise InputError(f"{what}: at most {MAX_LABELS} names of at most {MAX_LABEL_CHARS} characters", name=what)
    return names


def declare(task: str, labels: str | None = None, positive: str | None = None, ordinal: bool = False,
            criteria: str | None = None) -> Declared | None:
    """The declaration of ``task`` (``None`` for pairwise and pointwise-score tasks, which take none); a
    declaration that cannot make a label set is an :class:`~judgecal.errors.InputError` naming the input."""
    if task not in LABEL_TASKS:
        if labels or positive or ordinal or criteria:
            raise InputError(f"labels, a positive label, an order and criteria apply to binary or categorical "
                             f"tasks, not {task}", name="task")
        return None
    names = _names(labels, "labels")
    if task == "binary":
        if not positive or not positive.strip():
            raise InputError("a binary task needs a positive label: the label a pass rate counts", name="positive")
        if ordinal:
            raise InputError("ordered labels apply to categorical tasks (two labels have one order only)",
                             name="ordinal")
        if names and (len(names) != 2 or positive.strip() not in names):
            raise InputError(f"a binary task has two labels, one of them the positive {positive.strip()!r}; got "
                             f"{', '.join(names)}", name="labels")
    elif len(names) < 2:
        raise InputError("a categorical task needs two or more labels (a,b[,c...]), lowest first when ordered",
                         name="labels")
    elif positive is not None and positive.strip() not in names:
        raise InputError(f"positive label {positive.strip()!r} is not one of the labels {', '.join(names)}",
                         name="positive")
    return Declared(task, names, positive.strip() if positive else None, ordinal, _names(criteria, "criteria"))


def text_of(value: Any) -> str | None:
    """A label value as text (``None`` for a value that is not a label: a list, an object, a fraction)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else None
    if isinstance(value, str):
        return value.strip()
    return None


def match(value: Any, labels: Iterable[str]) -> str | None:
    """The declared label ``value`` stands for: the same text, else the one label equal ignoring case."""
    text = text_of(value)
    if text is None:
        return None
    labels = tuple(labels)
    if text in labels:
        return text
    folded = [lab for lab in labels if lab.casefold() == text.casefold()]
    return folded[0] if len(folded) == 1 else None


def resolve(decl: Declared, seen: Iterable[Any], criterion: str = "") -> LabelSet:
    """The label set of ``decl``; a binary task without declared labels takes its negative label from the
    values the file gives (``seen``), or from the usual pair of the positive label."""
    labels = decl.labels
    if decl.task == "binary" and not labels:
        pos = str(decl.positive)
        others: list[str] = []
        for v in seen:
            t = text_of(v)
            if t is not None and t.casefold() != pos.casefold() and t.casefold() not in {o.casefold() for o in others}:
                others.append(t)
        if len(others) > 1:
            raise LabelSetError(f"binary task with positive label {pos!r}: the file gives {len(others) + 1} labels "
                                f"({', '.join([pos, *others[:5]])}); declare the two labels ({pos},NEG)")
        if not others:
            pair = next((b if a == pos.casefold() else a for a, b in PAIRS if pos.casefold() in (a, b)), None)
            if pair is None:
                raise LabelSetError(f"binary task with positive label {pos!r}: every label in the file is {pos!r}; "
                                    f"declare the negative one among the labels ({pos},NEG)")
            others = [pair.upper() if pos.isupper() else pair]
        labels = (pos, others[0])
    try:
        return LabelSet(decl.task, labels, decl.positive, decl.ordinal, criterion)
    except ValueError as exc:
        raise LabelSetError(str(exc)) from None


def expected(ls: LabelSet) -> str:
    """The declared labels, for an error message."""
    return "one of " + ", ".join(repr(x) for x in ls.labels)
