"""The one loop that runs the audit's probes: every registered probe over every judge, Benjamini-Hochberg
once over all tested metrics, then each probe's flags. ``judgecal audit`` and ``judgecal validate`` both call
:func:`evaluate`, so the report and its validation run the same tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from judgecal.audit.probe import AuditConfig, JudgeInput, JudgeResult, Probe
from judgecal.audit.probes import FLAG_ORDER, PROBES
from judgecal.stats.inference import benjamini_hochberg


def evaluate(inputs: Sequence[JudgeInput], cfg: AuditConfig, probes: Sequence[Probe] | None = None,
             flag_order: Sequence[str] | None = None,
             step: Callable[[str], None] | None = None) -> dict[str, JudgeResult]:
    """Run ``probes`` (default: every registered probe, in order) over every judge; BH over every
    tested metric of all judges; then each probe's flags (in ``flag_order`` of probe names). ``step``
    hears the name of each probe as it starts."""
    probes = PROBES if probes is None else probes
    out = {inp.judge: JudgeResult() for inp in inputs}
    for p in probes:
        if step is not None:
            step(p.name)
        eligible = [inp for inp in inputs if not p.needs_alignment or "accuracy" in out[inp.judge].metrics]
        for judge, res in p.run_all(eligible, cfg, {j: r.metrics for j, r in out.items()}).items():
            out[judge].add(res)
    tested = [(judge, name) for judge, r in out.items() for name, m in r.metrics.items() if m.is_tested]
    qs = benjamini_hochberg([out[j].metrics[n].p for j, n in tested])  # type: ignore[misc]
    for (judge, name), q in zip(tested, qs, strict=True):
        out[judge].metrics[name] = replace(out[judge].metrics[name], q=q)
    by_name = {p.name: p for p in probes}
    for r in out.values():
        for name in flag_order or FLAG_ORDER:
            if name in by_name:
                r.flags += by_name[name].flags(r.metrics, cfg)
    return out
