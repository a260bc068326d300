"""Spans given with an item or a judgment: ``{rater: [[start, end] or [start, end, label], ...]}``.

Offsets are character offsets into the candidate's text, ``0 <= start < end <= len(text)``. An empty
list says the rater looked and marked nothing; it is kept as one empty span so that "neither marked
anything" can count as agreement. A zero-length span ``[s, s]`` marks nothing: it is dropped and
counted, as the official scorers of span tasks ignore it.
"""

from __future__ import annotations

from typing import Any

from judgecal.data.records import Span


def parse_spans(value: Any, text: str, item_id: str, source: str, field: str = "human_spans",
                kind: str = "human", candidate: int = 0, counts: dict[str, int] | None = None
                ) -> tuple[list[Span], list[tuple[str, str]]]:
    """Validate ``value`` against ``text``; returns the spans and ``(field, message)`` problems.

    Degenerate but valid marks are accepted and counted in ``counts`` when given: a zero-length span
    ``[s, s]`` marks nothing and is dropped (``zero_length_spans``; a rater left with none marked
    nothing, as ``[]`` says); a rater whose list is ``null`` skipped the text (``skipped_labels``)."""
    counts = counts if counts is not None else {}
    if value is None:
        return [], []
    if not isinstance(value, dict):
        return [], [(field, "must be an object of rater -> list of [start, end] or [start, end, label]")]
    spans: list[Span] = []
    problems: list[tuple[str, str]] = []
    for rater, marks in value.items():
        where = f"{field}.{rater}"
        if not str(rater).strip():
            problems.append((field, "a rater name is empty"))
            continue
        if marks is None:
            counts["skipped_labels"] = counts.get("skipped_labels", 0) + 1
            continue
        if not isinstance(marks, list):
            problems.append((where, f"must be a list of [start, end] or [start, end, label], got {type(marks).__name__}"))
            continue
        kept = 0
        for k, m in enumerate(marks):
            here = f"{where}[{k}]"
            if not isinstance(m, (list, tuple)) or len(m) not in (2, 3):
                problems.append((here, f"must be [start, end] or [start, end, label], got {m!r:.60}"))
                continue
            start, end = m[0], m[1]
            label = m[2] if len(m) == 3 else ""
            if any(isinstance(v, bool) or not isinstance(v, int) for v in (start, end)):
                problems.append((here, f"start and end must be integers, got {start!r}, {end!r}"))
                continue
            if not isinstance(label, str):
                problems.append((here, f"the label must be a string, got {type(label).__name__}"))
                continue
            if start == end and 0 <= start <= len(text):
                counts["zero_length_spans"] = counts.get("zero_length_spans", 0) + 1
                continue
            if not 0 <= start < end <= len(text):
                problems.append((here, f"[{start}, {end}] is not a span of the {len(text)}-character text "
                                       "(0 <= start < end <= length)"))
                continue
            spans.append(Span(item_id, str(rater), candidate, start, end, label, source, kind))
            kept += 1
        if not kept and not any(w.startswith(where) for w, _ in problems):  # looked and marked nothing
            spans.append(Span(item_id, str(rater), candidate, 0, 0, "", source, kind))
    return spans, problems
