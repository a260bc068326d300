"""Binary and categorical records of the formats: the label set a file gives each criterion.

A format reads a record's pass/fail, ``C``/``I``, boolean or class as a vote (``Mapped.vote``): the
criterion (a metric, a scorer, a feedback's name, a Label Studio control), the record it is about, the
value, and who gave it (a judge or a person). Once the whole file is read (``Mapped.settle``) each
criterion gets one :class:`~judgecal.data.records.LabelSet` for the whole file, from every value the file
gives it (:func:`declare`), or the format's own (DeepEval's and promptfoo's ``pass``/``fail``, Inspect's
``C``/``I``/``P``); each vote becomes a judge's verdict or a person's label on the criterion's item
``<record>/<criterion>``.

:func:`declare` reads the values seen, first seen first (a spelling that differs only in case is the same
label): two labels of a usual pair (``pass``/``fail``, ``yes``/``no``, ``true``/``false``, ``1``/``0``,
``C``/``I``, ``correct``/``incorrect``, ``success``/``failure`` ... :data:`PAIRS`), or a single one of them
(the pair completes it), are binary with the pair's positive; two labels of which exactly one is a usual
positive (:data:`POSITIVES`) are binary too; any other two or more labels are categorical, in the order
first seen. A criterion with one label that no pair completes, or with free text rather than labels (more
than :data:`~judgecal.data.label_tasks.MAX_LABELS` values, or one longer than
:data:`~judgecal.data.label_tasks.MAX_LABEL_CHARS` characters), has no label set: its records are counted
as dropped with that reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from judgecal.data.label_tasks import MAX_LABEL_CHARS, MAX_LABELS
from judgecal.data.label_tasks import PAIRS as _USUAL
from judgecal.data.label_tasks import text_of as _text_of
from judgecal.data.records import LabelSet

# the usual two-label vocabularies (positive first): judgecal's own, and those of the tools' graders
PAIRS: tuple[tuple[str, str], ...] = (*_USUAL, ("passed", "failed"), ("factual", "hallucinated"),
                                      ("relevant", "unrelated"), ("non-toxic", "toxic"), ("up", "down"))
POSITIVES = frozenset({a for a, _ in PAIRS} | {"succeeded", "ok", "right", "accept", "accepted", "approved"})
PASS_FAIL = ("pass", "fail")


def label_text(value: Any) -> str | None:
    """A value as a label's text: a string (stripped), a boolean as ``true``/``false``, a whole number as its
    digits; ``None`` for anything else (a fraction, a list, an object, an empty string)."""
    text = _text_of(value)
    return text or None


def mostly_numbers(values: Iterable[Any], number: Callable[[Any], float | None]) -> bool:
    """Whether a criterion's values (``None`` left out) are read as scores: all numbers, or more numbers than
    other values (a stray ``N/A`` among scores is an output that gave no score, not a reason to read the
    scores as labels). Booleans are not numbers."""
    given = [v for v in values if v is not None]
    nums = sum(not isinstance(v, bool) and number(v) is not None for v in given)
    return nums == len(given) or nums > len(given) - nums


def pass_fail(criterion: str) -> LabelSet:
    """The binary ``pass``/``fail`` set (positive ``pass``) of a pass/fail metric or assertion."""
    return LabelSet("binary", PASS_FAIL, "pass", False, criterion)


def _spell(label: str, like: str) -> str:
    """The usual label ``label`` written as the file writes ``like`` (``PASS`` -> ``FAIL``, ``Yes`` -> ``No``)."""
    if like.isupper():
        return label.upper()
    return label.capitalize() if like[:1].isupper() else label


def seen(values: Iterable[str]) -> list[str]:
    """The labels in first-seen order; a later spelling that differs only in case is the first one."""
    out: dict[str, str] = {}
    for v in values:
        out.setdefault(v.casefold(), v)
    return list(out.values())


def declare(criterion: str, values: Iterable[str]) -> LabelSet | str:
    """The label set of ``criterion`` from the label texts a file gives it, or why there is none."""
    labels = seen(values)
    if not labels:
        return "no value that is a label"
    if len(labels) > MAX_LABELS or any(len(x) > MAX_LABEL_CHARS for x in labels):
        return (f"free text, not labels ({len(labels)} distinct values; a label set has at most {MAX_LABELS} "
                f"labels of at most {MAX_LABEL_CHARS} characters)")
    folded = {x.casefold(): x for x in labels}
    pairs = [(p, n) for p, n in PAIRS if set(folded) <= {p, n}]
    if (len(labels) == 2 and pairs) or (len(labels) == 1 and len(pairs) == 1):
        pos, neg = pairs[0]
        like = labels[0]
        p, n = folded.get(pos, _spell(pos, like)), folded.get(neg, _spell(neg, like))
        return LabelSet("binary", (p, n), p, False, criterion)
    if len(labels) == 1:
        return (f"one label only ({labels[0]!r}), which no usual pair completes; a label set needs two (import the "
                "file in judgecal's own schema with --task binary/categorical --labels to declare them)")
    positives = [x for x in labels if x.casefold() in POSITIVES]
    if len(labels) == 2 and len(positives) == 1:
        p = positives[0]
        return LabelSet("binary", (p, next(x for x in labels if x != p)), p, False, criterion)
    return LabelSet("categorical", tuple(labels), None, False, criterion)


def words(ls: LabelSet) -> str:
    """A label set in words, for the import summary."""
    kind = ls.task + (", ordinal" if ls.ordinal else "")
    shown = "/".join(ls.labels[:8]) + ("/..." if len(ls.labels) > 8 else "")
    return f"{kind} {shown}" + (f" (positive {ls.positive})" if ls.task == "binary" else "")
