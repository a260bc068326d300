"""The workspace's errors."""

from __future__ import annotations

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

