"""The audit's ``over_time`` part of each judge: what ``judgecal monitor --json`` gives for it with its default
settings (:func:`judgecal.audit.monitor.monitor` by the grouping of :func:`judgecal.audit.monitor.default_by`,
the audit's truth, the workspace thresholds' ``alpha`` and ``accuracy_gap.caution_above`` as the effect of
interest), only when a record carries a time or a period, so a workspace without them gets the same report as
before. A judge that cannot be monitored (too few baseline items, no verdict with a truth) gets the monitor's
one-line reason as ``error``. Each period's figures are partials cached under a fingerprint of that period's
inputs (:mod:`judgecal.audit.period_cache`), so a week added computes that week's figures only."""

from __future__ import annotations

from typing import Any

from judgecal.audit.monitor import MonitorError, default_by, every_judge_rows, monitor, settings
from judgecal.data.sources import SourceError
from judgecal.data.store import Workspace


def attach_over_time(ws: Workspace, report: dict[str, Any], consensus: str) -> None:
    """Add ``over_time`` to each judge of ``report`` (nothing when no record carries a time or a period)."""
    by = default_by(ws)
    if by is None:
        return
    alpha, effect = settings(ws)
    rows = every_judge_rows(ws)  # every judge's verdicts read once (each period's figures are cached partials)
    shared: dict[str, Any] = {}  # and the truth, the items' facts and times, the annotators' labels
    for judge, entry in report["judges"].items():
        try:
            series = monitor(ws, judge, by=by, consensus=consensus, alpha=alpha, effect=effect, frame=rows,
                             shared=shared)
        except (MonitorError, SourceError) as exc:
            entry["over_time"] = {"by": by, "error": str(exc)}
            continue
        entry["over_time"] = {k: v for k, v in series.items() if k != "judge"}
