"""The workspace's errors."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Mapping

from judgecal.errors import UserError


class WorkspaceError(UserError, RuntimeError):
    """A workspace that cannot be opened or is of an unknown schema."""


class ItemConflictError(WorkspaceError):
    """Items whose ids are already in the workspace with other content; nothing was written."""

    def __init__(self, conflicts: list[tuple[str, list[str]]], origins: Mapping[str, str] | None = None) -> None:
        self.ids = [i for i, _ in conflicts]
        where = (origins or {}).get(self.ids[0])
        first, fields = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        super().__init__(f"{where + ': ' if where else ''}id {first!r} is already in the workspace with a different "
                         f"{', '.join(fields)}{more}; nothing written (give new ids or use another workspace)")



class DiskFullError(WorkspaceError):
    """A write that found the disk full (``ENOSPC``, SQLite's "database or disk is full"); the transaction was
    rolled back, so the workspace is as it was."""


def disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write that found no space left: SQLite's ``SQLITE_FULL`` or an ``ENOSPC``."""
    if isinstance(exc, sqlite3.Error):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL or "disk is full" in str(exc)
    return isinstance(exc, OSError) and exc.errno == errno.ENOSPC
