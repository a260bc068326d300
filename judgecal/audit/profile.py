"""Each judge's bias profile: every registered probe that describes itself, in the order they run, with the figure a
chart draws (the probe's declared ``chart`` metric, else its headline) beside its null, whether it was flagged, or
why it was not tested and the command that tests it. Built once, where the audit is built; every surface (terminal,
HTML/PDF, explorer) renders the judge's ``biases`` list and computes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from judgecal.catalogue import SEVERITIES, ProbeInfo, flag_info, info

KEYS = ("estimate", "ci_low", "ci_high")


def bias_profile(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The profile of one judge's audit entry (``report["judges"][name]``, its metrics and flags already set)."""
    from judgecal.audit.probes import PROBES

    pointwise = entry.get("kind") == "pointwise"
    metrics: Mapping[str, Any] = entry.get("metrics") or {}
    out = []
    for probe in PROBES:
        pi = probe.info
        if pi is None:  # not a bias probe (agreement with the humans)
            continue
        own = {pi.headline, pi.chart, *(m.name for m in probe.metric_infos)} - {""}
        codes = [c for c in entry.get("flags") or [] if flag_info(c).metric in own
                 or c.partition(":")[0] == probe.name]
        flagged = [c for c in codes if flag_info(c).severity != "underpowered"]
        metric = pi.chart or pi.headline
        row: dict[str, Any] = {"probe": probe.name, "title": pi.title, "metric": metric,
                               "metric_title": info(metric).title}
        fig = metrics.get(metric)
        if pointwise and "pointwise" not in pi.applies_to:
            row["status"] = "not applicable"
        elif not isinstance(fig, Mapping) or pi.headline not in metrics:
            row |= {"status": "not tested", "how_to_run": pi.how_to_run}
        else:
            row |= {"status": "tested", "figure": {k: _num(fig.get(k)) for k in KEYS}, "null": _null(entry, pi, fig)}
        severity = max((flag_info(c).severity for c in flagged), key=list(SEVERITIES).index, default=None)
        row |= {"flagged": bool(flagged), "flags": codes,
                "underpowered": any(flag_info(c).severity == "underpowered" for c in codes), "severity": severity}
        out.append(row)
    return out


def _null(entry: Mapping[str, Any], pi: ProbeInfo, fig: Mapping[str, Any]) -> dict[str, float | None] | None:
    """The null beside the charted figure: the probe's own null figure (with its interval) where it declares
    one, else the figure's tested null, else the catalogue's; ``None`` for a descriptive figure."""
    section = entry.get(pi.name)
    declared = section.get(pi.chart_null) if pi.chart_null and isinstance(section, Mapping) else None
    if isinstance(declared, Mapping):
        return {k: _num(declared.get(k)) for k in KEYS}
    point = _num(fig.get("null_value"))
    if point is None:
        point = info(pi.chart or pi.headline).null
    return None if point is None else {"estimate": point, "ci_low": None, "ci_high": None}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None


def profile_counts(biases: list[Mapping[str, Any]]) -> tuple[int, list[str]]:
    """How many biases were tested, and the titles of those flagged (``authority``, ``self-preference``), in the
    profile's order."""
    tested = [b for b in biases if b.get("status") == "tested"]
    return len(tested), [str(b["title"]).removesuffix(" bias") for b in biases if b.get("flagged")]
