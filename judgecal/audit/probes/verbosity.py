"""Does the judge prefer longer responses more than the humans do?"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from judgecal.audit.metric import Metric, clean
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, direction_flags, plain
from judgecal.audit.schema import Figure, Section
from judgecal.audit.verbosity import verbosity_deferred
from judgecal.audit.verdict import Inputs, PowerCheck
from judgecal.catalogue import ProbeInfo
from judgecal.stats.bootstrap import Replicates


class LengthControl(Section):
    """A length-controlled win rate of candidate A (AlpacaEval 2's GLM on the length difference): the raw rate, the
    rate at no length difference, the length coefficient and its Wald p."""

    raw_win_rate_a: float | None = None
    lc_win_rate: float | None = None
    length_coef: float | None = None
    length_coef_p: float | None = None


class VerbositySection(Section):
    """``verbosity``: how often the humans prefer the longer response, and their length-controlled win rate (the
    judge's own are its metrics)."""

    human_prefer_longer_rate: Figure | None = None
    human_length_control: LengthControl | None = None


class VerbosityProbe(Probe):
    """Judge minus humans in the share of decisive picks of the longer response; LC win rate beside it."""

    name = "verbosity"
    info = ProbeInfo("verbosity", "verbosity", "verbosity",
                     "Does the judge prefer longer responses more than the humans do?",
                     "Each decisive verdict is compared with the lengths of the two responses.",
                     "the judge picks the longer response as often as the humans (excess 0)",
                     "needs a human consensus and two candidates per item", "verbosity_excess", ("pairwise",))

    inputs = Inputs()
    section = VerbositySection
    power_checks = (PowerCheck("verbosity_excess", "verbosity", lambda sc: sc.verbosity / 2 * (1 - sc.instability)),)

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.0)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        return self.run_all([inp], cfg, {inp.judge: done})[inp.judge]

    def run_all(self, inputs: Sequence[JudgeInput], cfg: AuditConfig,
                done: Mapping[str, Mapping[str, Metric]]) -> dict[str, ProbeResult]:
        """Every judge's bootstrap in one pass over the weights (the humans' columns, alike beside every judge
        on the same items, multiplied once)."""
        out = {inp.judge: ProbeResult() for inp in inputs}
        reps = Replicates(cfg.n_boot, cfg.seed)
        shared: dict[tuple[int, int], dict[str, Any]] = {}  # what the items give, once for each truth and lengths
        for inp in inputs:
            got = (verbosity_deferred(inp.judgments, inp.truth, inp.lens, shared.setdefault((id(inp.truth), id(inp.lens)), {}))
                   if len(inp.lens) else None)
            if got is not None:
                per_item, finish = got
                reps.add(per_item, partial(self._fill, out[inp.judge], finish, len(inp.judgments)))
        reps.run()
        return out

    def _fill(self, res: ProbeResult, finish: Callable[[np.ndarray], dict[str, Any]], n: int,
              boot: np.ndarray) -> None:
        verb = finish(boot)
        lc = verb["judge_length_control"]
        res.metrics = {
            "prefer_longer_rate": Metric.of(verb["prefer_longer_rate"]),
            "verbosity_excess": self.test(Metric.of(verb["verbosity_excess"])),
            # descriptive: the length coefficient's Wald p is a test of another quantity, kept beside it
            "lc_win_rate": Metric(lc["lc_win_rate"], n=n,
                                  extra={"raw_win_rate_a": clean(lc["raw_win_rate_a"]),
                                         "length_coef": clean(lc["length_coef"]),
                                         "length_coef_p": clean(lc["length_coef_p"])}),
        }
        res.sections["verbosity"] = {
            "human_prefer_longer_rate": plain(verb["human_prefer_longer_rate"]),
            "human_length_control": {k: clean(v) for k, v in verb["human_length_control"].items()}}

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return direction_flags(metrics.get("verbosity_excess"), "verbosity_bias", cfg)
