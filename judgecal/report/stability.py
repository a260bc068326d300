"""The stability part of a report: each judge's stored stability runs (:mod:`judgecal.stability.score`)
at ``judges.<judge>.stability`` — the Stability Score with its CI, the runs, the guard — when any were
measured (``judgecal stability run`` / ``import`` / ``repeats``)."""

from __future__ import annotations

from typing import Any


def attach_stability(ws: Any, report: dict[str, Any], n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Add ``stability`` to every judge of ``report`` that has stored stability runs; returns ``report``."""
    if not ws.stability_runs():
        return report
    from judgecal.stability.score import stability_summary

    for judge, summary in stability_summary(ws, n_boot=n_boot, seed=seed).items():
        if judge in report.get("judges", {}):
            report["judges"][judge]["stability"] = summary
    return report
