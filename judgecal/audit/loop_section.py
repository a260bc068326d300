"""The loop part of an audit: the last ``judgecal gate``, the panels, the alignments and the cascades of the
workspace (``<workspace>/reports/{gate,panels,align,cascade}.json``) at ``audit.json``'s ``loop``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from judgecal.audit.schema import Loop, known_part

FILES = {"gate": "gate.json", "panels": "panels.json", "align": "align.json", "cascades": "cascade.json"}
HEAVY = ("escalated", "verdicts")  # per-item maps kept in cascade.json only


def load_loop(reports_dir: str | Path) -> dict[str, Any]:
    """What the loop commands stored, without the per-item maps, as far as :class:`~judgecal.audit.schema.Loop`
    names it; ``{}`` when none ran."""
    out: dict[str, Any] = {}
    for key, name in FILES.items():
        try:
            data = json.loads((Path(reports_dir) / name).read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if key == "cascades" and isinstance(data, dict):
            data = {k: {f: v for f, v in c.items() if f not in HEAVY} for k, c in data.items() if isinstance(c, dict)}
        if data:
            out[key] = data
    return known_part(Loop, out)  # a key another version stored stays in its file, not in the audit


def attach_loop(ws: Any, report: dict[str, Any]) -> dict[str, Any]:
    """Add ``loop`` to ``report`` when any loop command ran in the workspace; returns ``report``."""
    loop = load_loop(ws.reports_dir)
    if loop:
        report["loop"] = loop
    return report
