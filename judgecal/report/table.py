"""The typed shapes of what the report's generic renderers show: a table row of plain cells (the HTML
template's ``value`` macro, the explorer's tables) and a JSON value (a probe's section of ``audit.json``, a part of an older one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, TypeVar

#: one cell of a table: text, a number, a yes/no, nothing, or an interval's two ends
Cell: TypeAlias = str | int | float | bool | None | Sequence[float | None]
#: a value of ``audit.json`` as written (a section no type names yet; rendered generically)
Json: TypeAlias = str | int | float | bool | None | list["Json"] | dict[str, "Json"]
#: one row of a table, by column title
Row: TypeAlias = dict[str, Cell]



K = TypeVar("K")
V = TypeVar("V")


def at(mapping: Mapping[K, V] | None, key: K | None) -> V | None:
    """The value of ``key`` in a typed mapping of the report (a judge's figures by name, a section's parts),
    or ``None`` where it holds none: what a surface shows there says so ("not measured", "not tested")."""
    if mapping is None or key is None:
        return None
    try:
        return mapping[key]
    except KeyError:
        return None


__all__ = ["Cell", "Json", "Row", "at"]
