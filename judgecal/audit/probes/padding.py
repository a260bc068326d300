"""Does padding a response with restatements of its own sentences win the judge over?"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from judgecal.audit.metric import Metric
from judgecal.audit.padding import SOURCE, padded_items, padding_preference
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import ci_test, significant
from judgecal.audit.schema import Figure, Section
from judgecal.audit.verdict import Inputs, LiveCalls, PowerCheck
from judgecal.catalogue import ProbeInfo
from judgecal.data.records import Item


def _padded(base: list[Item], truth: pd.Series, n: int | None) -> tuple[list[Item], list[Item]]:
    """The sampled base pairs and a padded copy of each (one response restated against itself)."""
    return base, padded_items(base)

class PaddingSection(Section):
    """``padding``: how often the judge calls a padded pair a tie, over the pairs read (its pick rate is its
    metric)."""

    pad_tie_rate: Figure | None = None
    n_pairs: int | None = None


class PaddingProbe(Probe):
    """Share of decisive verdicts that pick a response's padded copy over the response (null 0.5)."""

    name = "padding"
    info = ProbeInfo("padding", "padding", "verbosity", "Does padding a response win the judge over?",
                     "The padding probe pads a response with restatements of its own sentences.",
                     "a padded copy is picked as often as the original (0.5)", "judgecal probe padding",
                     "pad_pick_rate", ("pairwise",))

    inputs = Inputs(orders=("AB", "BA"), probe_sources=(SOURCE,))
    section = PaddingSection
    live_calls = LiveCalls("judge", what="padded", reports="pad_pick_rate", make=_padded)
    power_checks = (PowerCheck("pad_pick_rate", "verbosity", lambda sc: 0.5 + sc.verbosity / 2 * (1 - sc.instability)),)

    def test(self, m: Metric) -> Metric:
        return ci_test(m, 0.5)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        padded = frozenset(it.item_id for it in inp.pairs(SOURCE))
        pad = padding_preference(inp.probes, padded, n_boot=cfg.n_boot, seed=cfg.seed,
                                 level=cfg.level) if padded and len(inp.probes) else {}
        if pad:
            res.sections["padding"] = {k: v for k, v in pad.items() if k != "pad_pick_rate"}
            pick = {k: v for k, v in pad["pad_pick_rate"].items() if k not in ("p", "mde")}
            res.metrics["pad_pick_rate"] = self.test(Metric.of(pick))
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["verbosity_bias:padding"] if significant(metrics.get("pad_pick_rate"), cfg) else []
