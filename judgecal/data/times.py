"""When a record happened: ``time`` (ISO 8601) and ``period`` (any name), read the same way by every importer.

A time is stored as UTC ISO 8601 text (``2026-03-01T09:30:00+00:00``); one written without a zone is read
as UTC. :func:`period_of` turns it into the day, ISO week or month it falls in.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from judgecal.errors import InputError

BY = ("day", "week", "month", "period")
MAX_PERIOD_CHARS = 1_000


def parse_time(value: Any) -> str:
    """``value`` as UTC ISO 8601 text; :class:`~judgecal.errors.InputError` (a ``ValueError``) with a one-line
    reason when it is not ISO 8601."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be an ISO 8601 date or time (2026-03-01T09:30:00Z), got {_shown(value)}")
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise InputError(f"is not an ISO 8601 date or time (2026-03-01T09:30:00Z): {_shown(value)}") from None
    try:  # an offset can carry a time past year 1 or 9999 in UTC
        dt = dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)
    except OverflowError:
        raise InputError(f"falls outside the years 1 to 9999 in UTC: {_shown(value)}") from None
    return dt.isoformat()


def parse_period(value: Any) -> str:
    """A period's name: non-empty text (a whole number is read as its text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"must be a non-empty name, got {_shown(value)}")
    if len(value) > MAX_PERIOD_CHARS:
        raise InputError(f"is {len(value):,} characters; the limit is {MAX_PERIOD_CHARS:,}")
    return value


def period_of(time: str, by: str) -> str:
    """The ``by`` (day, week, month) that a stored time falls in: ``2026-03-01``, ``2026-W09``, ``2026-03``."""
    dt = datetime.fromisoformat(time).astimezone(UTC)
    if by == "day":
        return dt.strftime("%Y-%m-%d")
    if by == "week":
        year, week, _ = dt.isocalendar()
        return f"{year}-W{week:02d}"
    if by == "month":
        return dt.strftime("%Y-%m")
    raise InputError(f"a period is one of {', '.join(BY)}, not {by!r}", name="by")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
