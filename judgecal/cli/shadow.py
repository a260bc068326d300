"""Another distribution that installs the import package ``judgecal`` (the unrelated ``judgecal`` on the
package index does): installed beside judgecal-toolkit, one silently overwrites or shadows the other's files.
The command line says so in one line at start-up.

Only the metadata folders (``*.dist-info``, ``*.egg-info``) on ``sys.path`` whose distribution name mentions
``judgecal`` are read: listing the folders costs about a millisecond, where
``importlib.metadata.packages_distributions()`` reads every installed distribution's file list (about a
second with a few hundred installed)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

OURS = "judgecal_toolkit"
IMPORT_NAME = "judgecal"
_META = re.compile(r"^(?P<name>[^-]+)(?:-[^-]*)?\.(?:dist-info|egg-info)$")


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _provides(meta: Path) -> bool:
    """Whether the metadata folder ``meta`` lists the import package ``judgecal`` among its files."""
    for listing, pattern in (("top_level.txt", rf"^{IMPORT_NAME}$"), ("RECORD", rf"^{IMPORT_NAME}/"),
                             ("SOURCES.txt", rf"^{IMPORT_NAME}/")):
        try:
            text = (meta / listing).read_text("utf-8", errors="replace")
        except OSError:
            continue
        if re.search(pattern, text, re.MULTILINE):
            return True
    return False


def _version(meta: Path) -> str:
    for name in ("METADATA", "PKG-INFO"):
        try:
            text = (meta / name).read_text("utf-8", errors="replace")
        except OSError:
            continue
        found = re.search(r"^Version:\s*(\S+)", text, re.MULTILINE)
        if found:
            return found.group(1)
    return "?"


def other_providers(paths: list[str] | None = None) -> list[tuple[str, str, Path]]:
    """``(name, version, metadata folder)`` of each distribution other than judgecal-toolkit, on ``paths``
    (default ``sys.path``), that installs the import package ``judgecal``."""
    found: list[tuple[str, str, Path]] = []
    seen: set[str] = set()
    for entry in sys.path if paths is None else paths:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a folder (a zip file, a path that does not exist)
            continue
        for name in names:
            m = _META.match(name)
            if not m or IMPORT_NAME not in _normal(m["name"]) or _normal(m["name"]) == OURS:
                continue
            meta = Path(entry or ".", name)
            if str(meta.resolve()) not in seen and _provides(meta):
                seen.add(str(meta.resolve()))
                found.append((m["name"], _version(meta), meta))
    return found


def warning() -> str | None:
    """The start-up line when another distribution installs ``judgecal`` too (``None`` when none does)."""
    from judgecal.inert import term

    others = other_providers()
    if not others:
        return None
    name, version, meta = others[0]
    return (f"warning: the distribution {term(name)} {term(version)} ({term(meta.parent)}) also installs the "
            f"import package 'judgecal' and may shadow judgecal-toolkit's files: pip uninstall {term(name)} && "
            "pip install --force-reinstall --no-deps judgecal-toolkit")
