"""Are the judge's preferences among three or more responses to one prompt transitive?"""

from __future__ import annotations

from collections.abc import Mapping

from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, plain, significant, underpowered
from judgecal.audit.schema import Figure, Section
from judgecal.audit.transitivity import transitivity
from judgecal.catalogue import FlagInfo, MetricInfo, ProbeInfo

EXCESS = "intransitivity_excess"


class TransitivitySection(Section):
    """``transitivity``: how ties count, the judge's and the humans' intransitive rate over the prompts' triads,
    a random rater's at the judge's tie rate, the triads and prompts read."""

    ties: str | None = None
    judge: Figure | None = None
    humans: Figure | None = None
    random_rate: float | None = None
    tie_rate: float | None = None
    n_triads: int | None = None
    n_prompts: int | None = None


class TransitivityProbe(Probe):
    """Share of intransitive triads (A > B, B > C, C > A on one prompt; a tie never makes a cycle, see
    :mod:`judgecal.stats.triads`), per reading of the judge (each order and sample), beside the annotators' own
    rate on the same triads (each annotator one reading: like with like) and a random rater's, ``(1 - t)^3 / 4`` at
    the judge's tie rate ``t`` (0.25 without ties). ``intransitivity_excess`` (tested, null 0): the judge's rate
    minus the humans', prompt-clustered bootstrap; flag ``intransitive`` when significantly above."""

    name = "transitivity"
    section = TransitivitySection
    needs_alignment = False
    info = ProbeInfo("transitivity", "transitivity", "transitivity",
                     "Are the judge's preferences among several responses to one prompt transitive?",
                     "Triads of responses to one prompt judged pair by pair: A > B, B > C and C > A is a cycle.",
                     "its preferences cycle no more often than the annotators' on the same triads",
                     "judgecal judge --judge JUDGE on items with three or more responses per prompt, judged pairwise",
                     "intransitive_rate", ("pairwise",))
    metric_infos = (
        MetricInfo("intransitive_rate", "Intransitive triads", "Share of triads (three responses to one prompt, "
                   "each pair judged) whose three verdicts form a cycle; each order and sample of the judge is one "
                   "reading, a tie never a cycle.", good="lower",
                   reference="the annotators' rate on the same triads (each annotator one reading); a random "
                             "rater: (1 − t)³ / 4 at the judge's tie rate t (0.25 without ties)",
                   group="transitivity"),
        MetricInfo(EXCESS, "Intransitivity beyond the humans'", "The judge's intransitive rate minus the "
                   "annotators' on the same triads.", unit="difference", good="lower", reference="0",
                   flag="significantly above 0, and the interval reaches the effect of interest",
                   group="transitivity", null=0.0),
    )
    flag_infos = (FlagInfo("intransitive", "Intransitive", "its preferences among three responses cycle more often "
                           "than the annotators' do", "caution", EXCESS),)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        if inp.triads is None or not len(inp.triads) or not inp.pairwise:
            return res
        got = transitivity(inp.judgments, inp.triads, invalid_as=cfg.invalid_as, n_boot=cfg.n_boot, seed=cfg.seed,
                           level=cfg.level)
        if not got:
            return res
        humans = got.get("humans")
        res.metrics["intransitive_rate"] = Metric.of(got["judge"], extra={
            "human_rate": None if humans is None else humans["estimate"], "random_rate": got["random"],
            "tie_rate": got["tie_rate"], "n_triads": got["n_triads"]})
        if "excess" in got:
            res.metrics[EXCESS] = ci_test(Metric.of(got["excess"]), 0.0)
        res.sections["transitivity"] = {
            "ties": "a tie never makes a cycle; the random rate is (1 - t)^3 / 4 at the judge's tie rate t",
            "judge": plain(got["judge"]), "humans": None if humans is None else plain(humans),
            "random_rate": got["random"], "tie_rate": got["tie_rate"], "n_triads": got["n_triads"],
            "n_prompts": got["n_prompts"]}
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        m = metrics.get(EXCESS)
        if significant(m, cfg) and m is not None and (m.estimate or 0) > 0:
            return ["intransitive"]
        return ["transitivity:underpowered"] if underpowered(m, cfg) else []
