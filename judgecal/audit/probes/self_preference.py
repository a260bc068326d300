"""Does the judge favour its own model family?"""

from __future__ import annotations

from collections.abc import Mapping

from judgecal.audit.metric import Metric, clean
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, direction_flags, plain
from judgecal.audit.schema import Figure, Section
from judgecal.audit.self_preference import self_preference
from judgecal.audit.verdict import PowerCheck
from judgecal.catalogue import ProbeInfo


class SelfPreferenceSection(Section):
    """``self_preference``: how often the judge picks its own family's response where the humans preferred the
    other, its and the humans' win rate of the own response, and the share of pairs showing it first."""

    self_pick_when_lost: Figure | None = None
    judge_win_rate: float | None = None
    human_win_rate: float | None = None
    own_shown_as_a: float | None = None


class SelfPreferenceProbe(Probe):
    """Judge minus humans in the win rate of the judge's own family's response."""

    name = "self_preference"
    section = SelfPreferenceSection
    info = ProbeInfo("self_preference", "self-preference", "self-preference",
                     "Does the judge favour its own model family?",
                     "Items where exactly one response comes from the judge's family.",
                     "the judge's win rate for its family equals the humans' (excess 0)",
                     "needs the judge's model family among the candidates", "self_preference_excess")

    power_checks = (PowerCheck("self_preference_excess", "self_preference",
                               lambda sc: sc.self_pref / 2 * (1 - sc.instability)),)

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        sp = self_preference(inp.judgments, inp.truth, inp.own_is_a, n_boot=cfg.n_boot,
                             seed=cfg.seed) if len(inp.own_is_a) else {}
        if sp:
            res.metrics["self_preference_excess"] = self.test(Metric.of(sp["self_preference_excess"]))
            res.sections["self_preference"] = {k: (plain(v) if isinstance(v, dict) else clean(v))
                                               for k, v in sp.items() if k != "self_preference_excess"}
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return direction_flags(metrics.get("self_preference_excess"), "self_preference", cfg)
