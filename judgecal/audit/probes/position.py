"""Does the judge prefer a position? McNemar across the two orders and the swap-debiased accuracy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np

from judgecal.audit.metric import Metric, clean
from judgecal.audit.position import debiased_from, debiased_sums, paired_orders, position_tests
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import significant, underpowered
from judgecal.audit.schema import Figure, Section
from judgecal.audit.verdict import Effect, Inputs, PowerCheck, ThresholdSpec, VerdictInput
from judgecal.catalogue import ProbeInfo
from judgecal.stats import bootstrap as stats


class PositionSection(Section):
    """``position``: the pairs judged in both orders, those decided the same way in neither (``decisive_pairs``:
    a side picked in at least one order), the flips between orders, McNemar's test of the two kinds of flip
    (``b``: first shown won both ways round, ``c``: second), its direction and minimum detectable first-position
    rate, and the accuracy of one order picked at random per pair."""

    pairs: int | None = None
    decisive_pairs: int | None = None
    flips: int | None = None
    flip_rate: float | None = None
    mcnemar_b: int | None = None
    mcnemar_c: int | None = None
    mcnemar_p: float | None = None
    mcnemar_midp: float | None = None
    direction: Literal["first", "second", "none"] | None = None
    first_position_mde: float | None = None
    paired_single_order_accuracy: Figure | None = None


class PositionProbe(Probe):
    """McNemar test of the first-position rate, flip counts, and the swap-debiased accuracy."""

    name = "position"
    info = ProbeInfo("position", "position", "position", "Does the judge prefer a position?",
                     "Each pair is judged in both orders.",
                     "no preference: the first-shown response is picked half the time (0.5)",
                     "judge both presentation orders (--orders AB,BA)", "first_position_rate", ("pairwise",))
    inputs = Inputs(orders=("AB", "BA"))
    section = PositionSection
    thresholds = (ThresholdSpec("position", {"not_aligned_beyond": 0.80}, {"not_aligned_beyond": (0.5, 1.0, False)},
                                before="serious_bias"),)
    power_checks = (PowerCheck("first_position_rate", "position",
                               lambda sc: 0.5 + sc.position / 2 * (1 - sc.instability)),)
    rule_metrics = ("first_position_rate",)

    def verdict_rule(self, v: VerdictInput) -> list[Effect]:
        """A severe position bias (significant, and the judge picks one position in more than
        ``position.not_aligned_beyond`` of its decisive verdicts) is not aligned and stands for its flag; an
        interval pinned at 0.5 (no pair judged differently in the two orders) is no sign of bias."""
        out: list[Effect] = []
        first = v.figure("first_position_rate")
        fpr = first.estimate
        if (fpr is not None and first.q is not None and first.q < v.thresholds["alpha"]
                and max(fpr, 1 - fpr) > v.thresholds["position"]["not_aligned_beyond"]):
            side = "first" if fpr > 0.5 else "second"
            out.append(Effect(2, "position_severe", "first_position_rate",
                              f"picks the response shown {side} {max(fpr, 1 - fpr):.0%} of the time", replaces_flags=True))
        pos = v.sections.get(self.name) or {}
        if pos.get("decisive_pairs") and pos.get("mcnemar_b") == 0 and pos.get("mcnemar_c") == 0:
            out.append(Effect(0, "no_sign", "first_position_rate",
                              "position: no sign of bias (identical in both orders)", stage="no_sign"))
        return out

    def not_tested_hint(self, v: VerdictInput) -> str | None:
        if set(self.inputs.orders) <= set(v.orders):  # both orders judged: what is missing is the truth
            return "needs both orders of items with a human label"
        return None

    def test(self, m: Metric, pos: Mapping[str, Any]) -> Metric:
        return m.tested(clean(pos["mcnemar_p"]), 0.5, clean(pos["first_position_mde"]))

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        """McNemar per judge; the debiased accuracies of all judges from one item bootstrap over the
        consensus items (the alignment probe's resampling unit, paired across judges)."""
        out, deb = {}, {}
        for inp in inputs:
            res = out[inp.judge] = ProbeResult()
            if inp.orders != ["AB", "BA"]:
                continue
            pairs = paired_orders(inp.judgments)  # made once for both uses
            pos = position_tests(inp.judgments, pairs)
            if not pos:
                continue
            res.sections["position"] = pos
            if "first_position_rate" in done[inp.judge]:
                res.metrics["first_position_rate"] = self.test(done[inp.judge]["first_position_rate"], pos)
            sums, n_pairs = debiased_sums(inp.judgments, inp.truth, cfg.invalid_as, pairs)
            if n_pairs:
                deb[inp.judge] = (sums, n_pairs)
        if deb:
            boot = stats.bootstrap_sums(np.hstack([s for s, _ in deb.values()]), cfg.n_boot, cfg.seed)
            for k, (judge, (sums, n_pairs)) in enumerate(deb.items()):
                got = debiased_from(sums, boot[:, 3 * k:3 * k + 3], n_pairs, cfg.level)
                out[judge].metrics["debiased_accuracy"] = Metric.of(got["debiased_accuracy"])
                out[judge].sections["position"]["paired_single_order_accuracy"] = got["paired_single_order_accuracy"]
        return out

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        return self.run_all([inp], cfg, {inp.judge: done})[inp.judge]

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        m = metrics.get("first_position_rate")
        if m is None or m.q is None:
            return []
        if significant(m, cfg):
            return [f"position_bias:{'first' if (m.estimate or 0.5) > 0.5 else 'second'}"]
        return ["position_bias:underpowered"] if underpowered(m, cfg) else []


class GivenPosition(PositionProbe):
    """The position probe whose test and section came with :class:`GivenAlignment`: nothing to compute; its
    flags are the position probe's own."""

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        return {inp.judge: ProbeResult() for inp in inputs}
