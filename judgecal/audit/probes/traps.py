"""Does the judge fall for traps (EvalBiasBench's pairs whose better response is known) more than it errs on
ordinary pairs?"""

from __future__ import annotations

from collections.abc import Mapping

from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, plain, significant, underpowered
from judgecal.audit.schema import Figure, Section
from judgecal.audit.traps import CHANCE, trap_accuracy
from judgecal.catalogue import FlagInfo, MetricInfo, ProbeInfo

GAP = "trap_gap"


class TrapPart(Section):
    """One trap: its slug (the metric's suffix), the judge's accuracy on it and the gap to the ordinary pairs."""

    slug: str | None = None
    accuracy: Figure | None = None
    gap: Figure | None = None


class TrapsSection(Section):
    """``traps``: chance, how ties score, the accuracy on every trap pair, on the ordinary pairs and the gap, and
    each trap's figures."""

    chance: float | None = None
    ties: str | None = None
    all: Figure | None = None
    ordinary: Figure | None = None
    gap: Figure | None = None
    traps: dict[str, TrapPart] = {}


class TrapProbe(Probe):
    """Accuracy per trap beside chance (0.5: a tie scores half) and beside the judge's accuracy on the ordinary
    pairs of the workspace (:mod:`judgecal.audit.traps`); ``trap_gap`` (every trap pooled) and ``trap_gap.<trap>``
    (per trap), tested against 0, Benjamini–Hochberg with every tested metric of the report. Flag
    ``falls_for_traps`` when the traps' accuracy, or one trap's, is significantly below the ordinary one and its
    interval reaches the effect of interest. Read from the judgments already in the workspace (``judgecal import
    evalbiasbench``, then ``judgecal judge``): no calls of its own."""

    name = "traps"
    section = TrapsSection
    needs_alignment = False
    info = ProbeInfo("traps", "trap sets", "traps", "Does the judge fall for trap pairs more than it errs on "
                     "ordinary pairs?",
                     "Pairs built so that a biased judge picks the worse response (EvalBiasBench: length, "
                     "concreteness, empty reference, content continuation, nested instruction, familiar knowledge), "
                     "the better one known.",
                     "its accuracy on each trap equals its accuracy on the ordinary pairs",
                     "judgecal import evalbiasbench, then judgecal judge --judge JUDGE", "trap_accuracy", ("pairwise",))
    metric_infos = (
        MetricInfo("trap_accuracy", "Accuracy on trap pairs", "Share of judgments on the trap pairs that pick the "
                   "known better response (a tie scores 1/2), every trap pooled.",
                   reference="chance 0.5; its accuracy on the ordinary pairs", group="traps"),
        MetricInfo("ordinary_accuracy", "Accuracy on ordinary pairs", "Share of judgments on the workspace's other "
                   "pairs (truth A or B) that agree with the truth, scored as on the trap pairs.",
                   reference="chance 0.5", group="traps"),
        MetricInfo(GAP, "Trap gap", "Accuracy on the trap pairs (every trap pooled; one trap's in "
                   "trap_gap.length_bias and its like) minus accuracy on the ordinary pairs (negative: the traps fool it beyond its "
                   "usual errors).", unit="difference",
                   reference="0", good="closer to the reference",
                   flag="significantly below 0, and the interval reaches the effect of interest", group="traps",
                   null=0.0),
    )
    flag_infos = (FlagInfo("falls_for_traps", "Falls for traps", "is fooled by a trap set more often than it errs "
                           "on ordinary pairs", "caution", GAP),)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        if inp.traps.empty or not inp.pairwise:
            return res
        got = trap_accuracy(inp.judgments, inp.traps, inp.truth, invalid_as=cfg.invalid_as, n_boot=cfg.n_boot,
                            seed=cfg.seed, level=cfg.level)
        if not got:
            return res
        ordinary = got.get("ordinary")
        res.metrics["trap_accuracy"] = Metric.of(got["all"], extra={
            "chance": CHANCE, "ordinary_accuracy": None if ordinary is None else ordinary["estimate"],
            "traps": len(got["traps"])})
        if ordinary is not None:
            res.metrics["ordinary_accuracy"] = Metric.of(ordinary, extra={"chance": CHANCE})
        if "gap" in got:
            res.metrics[GAP] = ci_test(Metric.of(got["gap"]), 0.0)
        for trap, part in got["traps"].items():
            if "gap" in part:
                res.metrics[f"{GAP}.{part['slug']}"] = ci_test(Metric.of(part["gap"], extra={"trap": trap}), 0.0)
        res.sections["traps"] = {
            "chance": CHANCE, "ties": "a tie scores 1/2 (an unreadable verdict too when counted as a tie)",
            "all": plain(got["all"]), "ordinary": None if ordinary is None else plain(ordinary),
            "gap": plain(got["gap"]) if "gap" in got else None,
            "traps": {t: {k: (plain(v) if isinstance(v, dict) else v) for k, v in p.items()}
                      for t, p in got["traps"].items()}}
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        gaps = [m for name, m in metrics.items() if name == GAP or name.startswith(f"{GAP}.")]
        if any(significant(m, cfg) and (m.estimate or 0) < 0 for m in gaps):
            return ["falls_for_traps"]
        return ["traps:underpowered"] if any(underpowered(m, cfg) for m in gaps) else []
