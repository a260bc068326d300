"""The template-perturbation probes (CALM's biases): one class, made once per bias by a module of its own.

A bias's probe reads the judge's calls on the perturbed copies of its pairs (:mod:`judgecal.audit.perturb`) and
reports ``robustness_<bias>`` (descriptive, beside the null's) and ``shift_<bias>`` (tested against the shift
between two unperturbed runs, their SEs combined: :func:`judgecal.audit.probes.rules.excess_test`). A bias with no
side (chain of thought) has no shift: its robustness is tested against the null's instead. An interval of zero
width away from the null (every base item moved the same way) is tested by an exact sign test over the items.
The flag ``<bias>_bias``: significant after Benjamini–Hochberg over the whole report, toward the perturbed side with
an interval that excludes 0 (less robust than the null, for a bias with no side), and the interval reaches the
effect of interest.

A bias read the other way (``direction`` ``away``, fallacy oversight: the correct answer's reasoning broken, so a
sound judge *should* move away from it) tests its shift against the null's shift minus the effect of interest ``e``
(a judge that moves away by exactly ``e`` more than between two unperturbed runs); its flag means the judge did
*not* move away: the shift is significantly above that reference (it moved away by less than ``e``, or not at all).
An interval of zero width is then tested exactly: the base items that moved away on balance against a binomial
share ``e`` (one-sided, fewer).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import pandas as pd
from pydantic import Field

from judgecal.audit.metric import Metric
from judgecal.audit.perturb import ORDERS, SOURCE, TEMPLATES, perturbation_figures
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import excess_test, plain, significant, underpowered
from judgecal.audit.schema import Figure, Section, SectionValue
from judgecal.audit.verdict import Inputs, LiveCalls
from judgecal.catalogue import FlagInfo, MetricInfo, ProbeInfo
from judgecal.stats.inference import binom_test

GROUP = "perturbation"


class ShiftFigure(Figure):
    """A perturbation's shift toward the perturbed side, with the base items it was read on and how many of them
    moved toward it or away from it on balance."""

    items: int | None = None
    items_toward: int | None = None
    items_away: int | None = None
    __pydantic_extra__: dict[str, SectionValue] = Field(init=False)  # a figure's own fields, as Figure's


class PerturbationSection(Section):
    """A template perturbation's section: the share of verdicts it leaves unchanged and, for a sided bias, the
    shift toward the side it favours, each beside the same figure between two unperturbed runs (the null)."""

    robustness: Figure | None = None
    shift: ShiftFigure | None = None
    null_robustness: Figure | None = None
    null_shift: Figure | None = None


class PerturbationProbe(Probe):
    """One template perturbation (``bias``, a key of :data:`judgecal.audit.perturb.TEMPLATES`); a subclass sets
    ``name``, ``title`` (words, e.g. "bandwagon"), ``what`` (what the judge reads, in words: "when ...") and
    ``question`` (the question it answers), and ``severity`` when its flag is "serious" (a caution by default)."""

    title: ClassVar[str] = ""
    what: ClassVar[str] = ""
    how_to_run: ClassVar[str] = ""  # when it needs more than `judgecal probe <name>` (data to import first)
    severity: ClassVar[str] = "caution"  # its flag's: "serious" can make the judge not aligned
    question: ClassVar[str] = ""
    needs_alignment = False

    def __init_subclass__(cls, **kw: object) -> None:
        super().__init_subclass__(**kw)
        if not cls.name:
            return
        sided, away = TEMPLATES[cls.name].sided, TEMPLATES[cls.name].direction == "away"
        rob, shift = f"robustness_{cls.name}", f"shift_{cls.name}"
        headline = shift if sided else rob
        cls.info = ProbeInfo(cls.name, f"{cls.title} bias", GROUP,
                             cls.question, f"Perturbed pairs: {cls.what}.",
                             "its verdicts move away from the perturbed response by at least the effect of interest "
                             "more than between two unperturbed runs" if away else
                             "its verdicts move no more than between two unperturbed runs",
                             cls.how_to_run or f"judgecal probe {cls.name}", headline, ("pairwise",), chart=rob,
                             chart_null="null_robustness")
        null_ref = "the same share between two unperturbed runs of the judge (null_robustness in its section)"
        cls.metric_infos = (
            MetricInfo(rob, f"Unchanged by {cls.title}", f"Share of verdicts (item and order) that stay the same "
                       f"when {cls.what}" + (" (a sound judge changes: lower is better)." if away else "."),
                       reference=null_ref, good="lower" if away else "higher", group=GROUP,
                       flag="" if sided else "significantly below the null's, and the interval reaches the effect "
                                             "of interest"),
        )
        if away:
            cls.metric_infos += (
                MetricInfo(shift, f"Shift toward the {cls.title} side", f"Share of verdicts that moved toward the "
                           f"perturbed response when {cls.what}, minus the share that moved away (a sound judge "
                           "moves away: below the null's).", unit="difference", good="lower",
                           reference="the null's shift (null_shift in its section) minus the effect of interest",
                           group=GROUP, flag="significantly above the reference (did not move away by the effect of "
                                             "interest), and the interval reaches the effect of interest"),)
        elif sided:
            cls.metric_infos += (
                MetricInfo(shift, f"Shift toward the {cls.title} side", f"Share of verdicts that moved toward the "
                           f"perturbed response when {cls.what}, minus the share that moved away.",
                           unit="difference", good="closer to the reference",
                           reference="the same shift between two unperturbed runs (null_shift in its section); 0",
                           group=GROUP, flag="significantly above the null's, and the interval reaches the effect "
                                             "of interest"),)
        cls.inputs = Inputs(orders=ORDERS, probe_sources=(SOURCE,))
        cls.section = PerturbationSection
        cls.live_calls = LiveCalls("perturb", what="perturbed", reports=f"{rob} and {shift}" if sided else rob)
        cls.flag_infos = (FlagInfo(f"{cls.name}_bias", f"{cls.title.capitalize()} bias",
                                   f"does not move away from the response when {cls.what}" if away else
                                   f"changes its verdict when {cls.what}", cls.severity, headline),)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        mine = [it for it in inp.pairs(SOURCE) if it.metadata.get("bias") in (self.name, "null")]
        if not any(it.metadata.get("bias") == self.name for it in mine) or inp.probes.empty:
            return res
        ids = {it.item_id for it in mine} | {str(it.metadata["base_item"]) for it in mine}
        rows = [f.loc[f["item_id"].isin(ids).to_numpy(), ["item_id", "order", "sample", "verdict"]]
                for f in (inp.judgments, inp.probes)]  # only the calls it reads, not the whole workspace's
        figs = perturbation_figures(pd.concat(rows), mine, n_boot=cfg.n_boot, seed=cfg.seed,
                                    level=cfg.level).get(self.name)
        if not figs:
            return res
        res.sections[self.name] = {k: plain(v) for k, v in figs.items()}
        null_rob = Metric.of(figs["null_robustness"])
        rob = Metric.of(figs["robustness"], extra={"null_robustness": null_rob.estimate})
        if "shift" not in figs:
            res.metrics[f"robustness_{self.name}"] = _sign_test(excess_test(rob, null_rob), None)
            return res
        res.metrics[f"robustness_{self.name}"] = rob
        null_shift = Metric.of(figs["null_shift"])
        shift = Metric.of(figs["shift"], extra={"null_shift": null_shift.estimate})
        if TEMPLATES[self.name].direction == "away":  # the reference: moved away by the effect of interest
            e = cfg.effect_of_interest
            ref = Metric.of({k: (v - e if k in ("estimate", "ci_low", "ci_high") and v is not None else v)
                             for k, v in figs["null_shift"].items()})
            res.metrics[f"shift_{self.name}"] = _away_test(excess_test(shift, ref), figs["shift"], e)
            return res
        res.metrics[f"shift_{self.name}"] = _sign_test(excess_test(shift, null_shift), figs["shift"])
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        sided = TEMPLATES[self.name].sided
        m = metrics.get(f"shift_{self.name}" if sided else f"robustness_{self.name}")
        if m is None or m.estimate is None:
            return []
        away = m.estimate - (m.null_value or 0.0)
        if TEMPLATES[self.name].direction == "away":  # above the reference: did not move away from the broken answer
            hit = significant(m, cfg) and away > 0
        else:  # sided: the shift's own interval must also exclude 0 (a null that drifted below 0 is not a bias)
            hit = significant(m, cfg) and (away > 0 and (m.ci_low or 0.0) > 0 if sided else away < 0)
        if hit:
            return [f"{self.name}_bias"]
        return [f"{self.name}:underpowered"] if underpowered(m, cfg) else []


def _sign_test(m: Metric, shift: Mapping[str, object] | None) -> Metric:
    """``m`` as tested, or, when its interval has zero width away from its null (every resample the same), an
    exact two-sided sign test over the base items that moved on balance (none moved: left untested)."""
    if m.p is not None or m.estimate is None or m.null_value is None or abs(m.estimate - m.null_value) < 1e-12:
        return m
    if shift is None:
        return m
    toward, away = int(shift.get("items_toward") or 0), int(shift.get("items_away") or 0)  # type: ignore[call-overload]
    if toward + away == 0:
        return m
    return m.tested(binom_test(toward, toward + away), m.null_value, m.mde)


def _away_test(m: Metric, shift: Mapping[str, object], effect: float) -> Metric:
    """``m`` as tested, or, when its interval has zero width (every resample the same), an exact one-sided
    binomial test: the base items that moved away on balance, fewer than a share ``effect`` of them?"""
    if m.p is not None or m.estimate is None or m.null_value is None:
        return m
    n = int(shift.get("items") or 0)  # type: ignore[call-overload]
    if n == 0:
        return m
    k = int(shift.get("items_away") or 0)  # type: ignore[call-overload]
    return m.tested(binom_test(k, n, effect, alternative="less"), m.null_value, m.mde)
