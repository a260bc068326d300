"""The probe interface and the one loop that runs the audit's probes.

A probe answers one question about a judge (alignment, position, verbosity, ...). It reads the
judge's prepared :class:`JudgeInput`, returns its :class:`~judgecal.audit.metric.Metric` values, each
with its own test (``p`` against its null value) and its detail sections, and states its flag rule.
:func:`judgecal.audit.evaluate.evaluate` runs the registered probes over every judge, then applies
Benjamini-Hochberg once over all tested metrics and asks each probe for its flags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pydantic import BaseModel

from judgecal.audit.alignment import truth_codes
from judgecal.audit.metric import Metric
from judgecal.audit.transitivity import TriadSet
from judgecal.audit.verdict import Effect, Inputs, LiveCalls, PowerCheck, ThresholdSpec, VerdictInput
from judgecal.catalogue import FlagInfo, MetricInfo, ProbeInfo
from judgecal.data.records import Item


@dataclass(frozen=True)
class AuditConfig:
    invalid_as: str = "tie"
    n_boot: int = 2000
    seed: int = 0
    level: float = 0.95
    effect_of_interest: float = 0.05
    alpha: float = 0.05


@dataclass
class JudgeInput:
    """Everything a probe may read about one judge, prepared once.

    ``judgments``: its unmutated calls on the audited items (every order and sample); ``mutated``: its
    calls under prompt mutations; ``probes``: its unmutated calls on probe pairs (padded, injected, perturbed
    copies, a plugin's); ``truth``: item_id -> consensus label; ``lens``: item_id -> ``len_a, len_b`` (words) of
    the two-candidate pairwise items; ``own_is_a``: item_id -> candidate A is the judge's own family
    (pairs with exactly one own candidate); ``probe_items``: the probe pairs of each source a registered probe
    declares it reads (``Inputs.probe_sources``; :meth:`pairs`); ``usage``: tokens, latency and cost
    of ``judgments``; ``traps``: item_id -> ``trap``, ``answer`` of the trap pairs (:mod:`judgecal.audit.traps`);
    ``triads``: the prompts' triads of responses judged pairwise, with the people's labels on them
    (:mod:`judgecal.audit.transitivity`).
    """

    judge: str
    judgments: pd.DataFrame
    truth: pd.Series
    mutated: pd.DataFrame = field(default_factory=pd.DataFrame)
    probes: pd.DataFrame = field(default_factory=pd.DataFrame)
    lens: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["len_a", "len_b"]))
    own_is_a: pd.Series = field(default_factory=lambda: pd.Series(dtype=bool))
    #: source (``probe:padding``, ``probe:perturbation``, a plugin's) -> the probe pairs stored under it
    probe_items: Mapping[str, list[Item]] = field(default_factory=dict)
    #: the usage of ``judgments`` (:func:`judgecal.audit.alignment.usage_of`) when computed as they were read
    #: (their usage columns then not kept); ``None``: computed from ``judgments``
    usage: dict[str, float | int | None] | None = None
    #: whether any item it judged is a pairwise item (False: every one is a pointwise or labelled item, whose
    #: labels may be named A, B or tie without making it a judge of pairs)
    on_pairs: bool = True
    traps: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["trap", "answer"]))
    triads: TriadSet | None = None

    def pairs(self, source: str) -> list[Item]:
        """The probe pairs stored under ``source`` (none when the workspace holds none or no probe declares it)."""
        return list(self.probe_items.get(source, ()))

    @cached_property
    def codes(self) -> NDArray[np.int64]:
        """Each judgment's index into ``truth`` (-1: no consensus)."""
        return truth_codes(self.judgments["item_id"], self.truth)

    @cached_property
    def pairwise(self) -> bool:
        """A judge of pairs: it judged some pairwise item (``on_pairs``) and gave some verdict A / B / tie, or
        only verdicts (``invalid``) and no score on items whose human label, where there is one, is A / B / tie;
        a pointwise judge's unreadable answers are ``invalid`` verdicts beside its scores, or instead of them when
        none was readable. A judge of labelled items is never one, whatever its labels are called."""
        if not (len(self.judgments) and self.on_pairs):  # labelled items' labels may be called A, B or tie
            return False
        v = self.judgments["verdict"]
        if v.isin(("A", "B", "tie")).any():
            return True
        scored = "score" in self.judgments and bool(self.judgments["score"].notna().any())
        if scored or not v.notna().any():
            return False
        labels = self.truth.reindex(pd.Index(self.judgments["item_id"].astype(str).unique())).dropna()
        return bool(labels.astype(str).isin(("A", "B", "tie")).all())

    @cached_property
    def orders(self) -> list[str]:
        return sorted(str(o) for o in self.judgments["order"].unique()) if len(self.judgments) else []


@dataclass
class ProbeResult:
    metrics: dict[str, Metric] = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)


class Probe:
    """One question about a judge, declared in one module. A probe states:

    - ``name`` (snake_case: its section and flags) and ``info`` (:class:`~judgecal.catalogue.ProbeInfo`: its
      question, null in words, how to run it, headline metric, the judges it applies to; ``None``: the alignment
      figures, always run), ``metric_infos`` and ``flag_infos`` (catalogue entries; a built-in probe's metrics may
      be in the catalogue already);
    - ``inputs`` (:class:`~judgecal.audit.verdict.Inputs`): what it reads of a judge's calls (default: unmutated
      calls on pairs, any order, one sample);
    - ``live_calls`` (:class:`~judgecal.audit.verdict.LiveCalls`): the calls ``judgecal probe NAME`` makes for it
      (``None``, the default: it reads the calls ``judgecal judge`` makes);
    - ``thresholds`` (:class:`~judgecal.audit.verdict.ThresholdSpec`): thresholds its verdict rule reads, added to
      ``thresholds.yaml``'s known keys;
    - ``section``: the type of the section it writes (a :class:`~judgecal.audit.schema.Section`, or a pydantic
      ``RootModel`` of a mapping of them; ``None``: it writes none);
    - ``power_checks`` (:class:`~judgecal.audit.verdict.PowerCheck`): closed-form figures ``judgecal validate``
      recovers on the simulated judge (none: its tested metrics must stay silent in the null scenario);
    - :meth:`verdict_rule`: its own effects on the verdict (default none: its flags move the judge by the
      severity each ``FlagInfo`` declares, a caution, or not aligned when "serious" and far from the null);
      ``rule_metrics``: the metrics that rule reads in full (the generic serious-flag and no-sign readings skip
      them);
    - :meth:`run` (or :meth:`run_all`) and :meth:`flags`.

    ``needs_alignment``: run only on pairwise judges with a consensus (the alignment probe produced their
    ``accuracy``). Probes run in order, each over every judge (:meth:`run_all`), so a probe reads the metrics of
    those before it. A perturbation-style probe that keeps every default needs only its description, run and
    flags."""

    name: ClassVar[str] = ""
    needs_alignment: ClassVar[bool] = True
    info: ClassVar[ProbeInfo | None] = None
    metric_infos: ClassVar[tuple[MetricInfo, ...]] = ()
    flag_infos: ClassVar[tuple[FlagInfo, ...]] = ()
    inputs: ClassVar[Inputs] = Inputs()
    live_calls: ClassVar[LiveCalls | None] = None
    thresholds: ClassVar[tuple[ThresholdSpec, ...]] = ()
    power_checks: ClassVar[tuple[PowerCheck, ...]] = ()
    section: ClassVar[type[BaseModel] | None] = None
    rule_metrics: ClassVar[tuple[str, ...]] = ()

    def verdict_rule(self, v: VerdictInput) -> list[Effect]:
        """Its own effects on one judge's verdict, beyond its flags' declared severity (default: none)."""
        return []

    def not_tested_hint(self, v: VerdictInput) -> str | None:
        """Why its headline is missing, in words, when the judge has the calls it reads (default ``None``: then
        ``info.how_to_run`` says how to run it)."""
        return None

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        """Metrics (tested) and sections of one judge; ``done`` holds the metrics of earlier probes."""
        raise NotImplementedError

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        """Every judge at once; a probe that bootstraps across judges (alignment, position) overrides it to
        draw one set of item resamples for all of them (paired intervals, one weight matrix)."""
        return {inp.judge: self.run(inp, cfg, done[inp.judge]) for inp in inputs}

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        """Plain-word flags from the metrics once they carry their BH ``q``."""
        return []


@dataclass
class JudgeResult:
    metrics: dict[str, Metric] = field(default_factory=dict)
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)

    def add(self, res: ProbeResult) -> None:
        self.metrics.update(res.metrics)
        for name, sec in res.sections.items():
            self.sections.setdefault(name, {}).update(sec)
