"""The one producer of an audit: :func:`audit_workspace` makes the ``audit.json`` that ``judgecal audit`` writes.

The steps, in order: the workspace's configuration files are read (a bad one stops the audit before anything
is computed or stored); the truth's consensus is computed when it is missing; every probe and section runs on
every judge (:func:`judgecal.audit.run.run_audit`); with an executor (``--executor ray``), the alignment
and position figures come from per-item sums on the cluster, computed there first and read here instead of
computed again; then the annotators' agreement per source
(:mod:`judgecal.aggregate.annotators`), the stability runs, the loop's results, each judge over its periods (when records carry a time or
a period, :mod:`judgecal.audit.over_time_section`) and the provenance are attached. The CLI, the tests, the benchmarks and the explorer's fixtures call this function, so
every surface reads the same report (``validate`` runs the same probes on simulated judges, without a workspace).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from judgecal.audit.schema import AuditReport, json_safe
from judgecal.data.sources import split_name
from judgecal.data.store import Workspace
from judgecal.data.store.warm import warmed
from judgecal.errors import InputError
from judgecal.stats.bootstrap import shared_weights

#: the aggregators a consensus is computed with when it is asked for and not stored (``<method>[:<source>]``)
CONSENSUS_METHODS = ("ds", "mv", "onecoin", "glad")


def ensure_consensus(ws: Workspace, consensus: str, computing: Callable[[], None] = lambda: None) -> None:
    """Make sure the consensus ``consensus`` (``<method>[:<source>]``) is stored: one that is stays as it is; one of
    :data:`CONSENSUS_METHODS` that is not is computed (``computing`` is called first); any other name raises
    :class:`~judgecal.errors.InputError` naming the consensuses the workspace holds. With no human label the
    consensus computed is empty: an audit without people still measures what needs none (position, stability)."""
    if ws.annotations_repo.has_consensus(consensus):
        return
    method, source = split_name(consensus)
    if method not in CONSENSUS_METHODS:
        stored = ", ".join(sorted(set(ws.annotations_repo.consensus_frame()["method"]))) or "none"
        raise InputError(f"no consensus '{consensus}' in this workspace (methods there: {stored}; "
                         f"an aggregator's name, one of {', '.join(CONSENSUS_METHODS)}, computes one)", name="consensus")
    from judgecal.aggregate.consensus import compute_consensus  # the producer alone reaches the layer below

    computing()
    compute_consensus(ws, (method,), source=source)


@dataclass(frozen=True)
class AuditOptions:
    """What an audit computes: the truth (``<method>[:<source>]``), how an unreadable verdict counts, the
    bootstrap, and the selective-evaluation target (``None``: the defaults)."""

    consensus: str = "ds"
    invalid_as: str = "tie"
    n_boot: int = 2000
    seed: int = 0
    level: float = 0.95
    selective_target: float | None = None
    selective_delta: float | None = None


class Executor(Protocol):
    """Where the alignment figures are computed when not here (:class:`judgecal.distributed.audit.RayExecutor`)."""

    def reach(self) -> None:
        """Reach the cluster, or raise a :class:`judgecal.errors.JudgecalError` saying why."""

    def alignment(self, ws: Workspace, options: AuditOptions) -> dict[str, Any]:
        """The alignment figures computed on the cluster: ``{"judges": {judge: {counts, "metrics",
        "position"}}, ...}``; the audit reads them instead of computing them."""

    def finish(self, report: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
        """``report`` checked against what the cluster read (the same judgments) and told what ran where."""


# progress(done, total, step): where the audit is (judgecal.progress.Bar.report); total None: unknown
Progress = Callable[[int, int | None, str], None]
# the steps after run_audit's own (the caller writes the report files)
AFTER = ("annotators", "stability", "loop", "report")


def audit_workspace(ws: Workspace, options: AuditOptions | None = None, executor: Executor | None = None,
                    progress: Progress | None = None) -> AuditReport:
    """The audit of ``ws``, typed (:class:`judgecal.audit.schema.AuditReport`; ``.to_json()`` is audit.json)."""
    # every section's item bootstrap of the same items draws its replicates once, or reads them back from the
    # workspace's cache folder when an earlier audit drew them
    with shared_weights(store=ws.bootstrap_weights()):
        return _audit(ws, options or AuditOptions(), executor, progress)


def _audit(ws: Workspace, o: AuditOptions, executor: Executor | None, progress: Progress | None) -> AuditReport:
    from judgecal.audit.decision import load_thresholds
    from judgecal.audit.run import run_audit
    from judgecal.data.families import load_families

    tell = progress or (lambda done, total, step: None)
    steps = [0]

    def at(done: int, total: int, step: str) -> None:
        steps[0] = total
        tell(done, total + len(AFTER), step)

    load_thresholds(ws.path)  # the workspace's configuration files are read before anything is computed
    load_families(ws.path)  # or stored, so a bad one stops the audit with nothing half-written
    ensure_consensus(ws, o.consensus, lambda: tell(0, None, f"consensus {o.consensus}"))
    computed = None
    if executor is not None:
        executor.reach()  # an unreachable cluster is said before anything runs here
        tell(0, None, "alignment on the cluster")
        computed = executor.alignment(ws, o)  # replaces the alignment sums and bootstrap here, not repeated
    # the judges' environments are counted in a thread while the judgments are read (judgecal.data.store.warm),
    # once every input is known good: a refused audit leaves the workspace, its cache folder included, untouched
    with warmed(ws.path):
        report = run_audit(ws, consensus=o.consensus, invalid_as=o.invalid_as, n_boot=o.n_boot, seed=o.seed,
                           level=o.level, selective_target=o.selective_target,
                           selective_delta=o.selective_delta, progress=at,
                           given=None if computed is None else computed["judges"])
    if executor is not None and computed is not None:
        report = executor.finish(report, computed)
    from judgecal.aggregate.annotators import annotators_report
    from judgecal.audit.loop_section import attach_loop
    from judgecal.audit.over_time_section import attach_over_time
    from judgecal.audit.provenance import provenance
    from judgecal.audit.stability_section import attach_stability

    tell(steps[0], None, "annotators")
    ann = ws.annotations_repo.annotations_frame()
    if not ann.empty:  # each source's people, never pooled (what `judgecal annotators` writes)
        report["annotators"] = annotators_report(ann, ws.labelstudio_repo.ls_gold(None), min(o.n_boot, 1000))
    tell(steps[0] + 1, None, "stability")
    attach_stability(ws, report, n_boot=min(o.n_boot, 1000))
    tell(steps[0] + 2, None, "loop")
    attach_loop(ws, report)  # gate, panels, align, cascades
    attach_over_time(ws, report, o.consensus)  # each judge over its periods, when records carry a time or period
    tell(steps[0] + 3, None, "report")
    report["provenance"] = provenance(ws, report)
    return AuditReport.from_json(json_safe(report))


__all__ = ["CONSENSUS_METHODS", "ensure_consensus", "AuditOptions", "Executor", "audit_workspace"]
