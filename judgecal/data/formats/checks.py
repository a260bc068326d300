"""The own schema's checks, applied to what every ``--from`` format maps (:class:`~judgecal.data.formats.base.Mapped`
calls them for each item, verdict, label and judge; no format module repeats them).

A judgment's numbers are read with the checkers of judgecal's own verdict files
(:data:`judgecal.data.verdicts.FIELDS`: finite, within the ranges every later sum and SQLite integer can
hold); names with the own schema's limits and reserved names; texts with its 200,000-character limit
(never cut: a text over it is refused, so nothing is stored half); metadata must be finite numbers,
valid Unicode and at most :data:`~judgecal.data.importers.MAX_DEPTH` levels deep. Each check returns why
a value is refused (``(field, message)``), or ``None``.
"""

from __future__ import annotations

from typing import Any

from judgecal.data.importers import MAX_ID_CHARS, MAX_TEXT_CHARS, _scan, metadata_problem
from judgecal.data.names import reserved_name_problem
from judgecal.data.verdicts import FIELDS, MAX_NAME_CHARS, _Bad

Why = tuple[str | None, str]

NUMBERS = ("score", "p_a", "p_b", "p_tie", "prompt_tokens", "completion_tokens", "latency_s", "cost_usd")


def number(field: str, v: Any) -> tuple[Any, Why | None]:
    """``v`` read as the own schema reads judgment field ``field`` (``None`` stays absent)."""
    if v is None:
        return None, None
    try:
        return FIELDS[field](v), None
    except _Bad as exc:
        return None, (field, str(exc))


def judge_name(name: str) -> Why | None:
    """A judge's name as a verdict file's ``judge``: not empty, not reserved, at most 200 characters."""
    if not name.strip():
        return "judge", "is empty"
    if len(name) > MAX_NAME_CHARS:
        return "judge", f"a name of {len(name):,} characters; the limit is {MAX_NAME_CHARS}"
    if why := reserved_name_problem(name):
        return "judge", why
    return None


def annotator_name(name: str) -> Why | None:
    """A person's name as the own schema's ``human_labels`` keys: at most 1,000 characters."""
    if len(name) > MAX_ID_CHARS:
        return "annotator", f"a name of {len(name):,} characters; the limit is {MAX_ID_CHARS:,}"
    return None


def item_id(iid: str) -> Why | None:
    if len(iid) > MAX_ID_CHARS:
        return "id", f"an item id of {len(iid):,} characters; the limit is {MAX_ID_CHARS:,}"
    return None


def text(field: str, v: str | None) -> Why | None:
    if v is not None and len(v) > MAX_TEXT_CHARS:
        return field, f"is {len(v):,} characters; the limit is {MAX_TEXT_CHARS:,} (refused whole, never cut)"
    return None


def unicode(field: str, v: Any) -> Why | None:
    """A lone surrogate anywhere in ``v`` (text no UTF-8 store can hold)."""
    _, bad = _scan({field: v})
    return (bad, "holds a lone surrogate (\\ud800-\\udfff), not valid Unicode") if bad else None


def metadata(field: str, v: Any) -> Why | None:
    """Metadata that JSON and the store can hold (:func:`judgecal.data.importers.metadata_problem`)."""
    return metadata_problem(field, v)
