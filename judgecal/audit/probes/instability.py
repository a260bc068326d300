"""Does the judge change its mind between repeated calls of the same prompt?"""

from __future__ import annotations

from collections.abc import Mapping

from judgecal.audit.instability import instability
from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, significant
from judgecal.audit.schema import Figure, Section
from judgecal.audit.verdict import Inputs, PowerCheck
from judgecal.catalogue import ProbeInfo


class InstabilitySection(Section):
    """``instability``: the repeats per (item, order) group and the groups read; how often two of a group's
    verdicts differ, how often all agree, and Fleiss' κ across the samples."""

    repeats_per_group: int | None = None
    n_groups: int | None = None
    instability_rate: Figure | None = None
    unanimity_rate: Figure | None = None
    fleiss_kappa_across_samples: Figure | None = None


class InstabilityProbe(Probe):
    """The chance that two repeated samples of the same prompt disagree (null 0)."""

    name = "instability"
    info = ProbeInfo("instability", "run-to-run instability", "stability", "Does the judge change its mind?",
                     "Repeated calls with the same prompt.", "repeats agree (instability 0)",
                     "judgecal judge --samples 5 --temperature 0.7", "instability_rate")

    inputs = Inputs(samples=2)
    section = InstabilitySection
    power_checks = (PowerCheck("instability_rate", "instability", lambda sc: sc.instability * (1 - sc.instability / 2),
                               boundary=True),)

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        inst = instability(inp.judgments, n_boot=cfg.n_boot, seed=cfg.seed, level=cfg.level)
        if inst:
            res.sections["instability"] = inst
            res.metrics["instability_rate"] = self.test(Metric.of(inst["instability_rate"]))
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["unstable"] if significant(metrics.get("instability_rate"), cfg) else []
