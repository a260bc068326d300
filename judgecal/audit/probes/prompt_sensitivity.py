"""Does rewording the prompt change the judge's verdict more than repeating it does?"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pandas as pd

from judgecal.audit.metric import Metric
from judgecal.audit.probe import AuditConfig, JudgeInput, Probe, ProbeResult
from judgecal.audit.probes.rules import excess_test, significant, worst_of
from judgecal.audit.schema import Figure, Section
from judgecal.audit.sensitivity import prompt_sensitivity
from judgecal.audit.verdict import Inputs, PowerCheck
from judgecal.catalogue import ProbeInfo

if TYPE_CHECKING:
    from judgecal.audit.simulate import Scenario

def _flip_truth(sc: Scenario) -> float:
    """``prompt_flip_rate`` of the simulated judge: a mutated call is a coin flip with probability
    ``r = 1 - (1 - template)(1 - instability)``, against an unmutated call that is one with probability
    ``instability``."""
    u = sc.instability
    r = 1 - (1 - sc.template) * (1 - u)
    return (1 - u / 2) * r / 2 + u / 2 * (1 - r / 2)

class MutationFlips(Section):
    """How often a prompt mutation changes the verdict of the unmutated prompt."""

    flip_rate: Figure | None = None


class PromptSensitivitySection(Section):
    """``prompt_sensitivity``: each mutation's flip rate, Fleiss' κ of the verdicts across the templates, and the
    accuracy under each template with its range."""

    mutations: dict[str, MutationFlips] = {}
    fleiss_kappa_across_templates: Figure | None = None
    accuracy_by_template: dict[str, float | None] | None = None
    accuracy_range: float | None = None


class PromptSensitivityProbe(Probe):
    """Verdict flips under the worst meaning-preserving prompt mutation, tested against the judge's
    own run-to-run instability."""

    name = "prompt_sensitivity"
    info = ProbeInfo("prompt_sensitivity", "prompt sensitivity", "stability",
                     "Does rewording the prompt change its verdict?",
                     "Reworded prompts: meaning-preserving mutations of the judge's prompt.",
                     "rewording flips no more verdicts than repeating the same prompt does",
                     "judgecal judge --mutation paraphrase ...", "prompt_flip_rate")
    needs_alignment = False

    inputs = Inputs(mutations=True)
    section = PromptSensitivitySection
    power_checks = (PowerCheck("prompt_flip_rate", "prompt_sensitivity", _flip_truth, boundary=True),)

    def test(self, m: Metric, base: Metric | None, k: int = 1) -> Metric:
        return excess_test(m, base, k)

    def run(self, inp: JudgeInput, cfg: AuditConfig, done: Mapping[str, Metric]) -> ProbeResult:
        res = ProbeResult()
        if not len(inp.mutated):
            return res
        cols = ["item_id", "order", "sample", "mutation", "verdict"]
        mj = inp.mutated[cols]
        # the unmutated calls of the same items only
        plain = inp.judgments.loc[inp.judgments["item_id"].isin(mj["item_id"].unique()).to_numpy(), cols]
        sens = prompt_sensitivity(pd.concat([plain, mj], ignore_index=True), inp.truth, n_boot=cfg.n_boot,
                                  seed=cfg.seed)
        if not sens or not sens["mutations"]:
            return res
        res.sections["prompt_sensitivity"] = sens
        name, worst = worst_of(sens["mutations"], lambda r: r["flip_rate"]["estimate"])
        k = len(sens["mutations"])
        flip = Metric.of(worst["flip_rate"], extra={"mutation": name, "mutations": k})
        res.metrics["prompt_flip_rate"] = self.test(flip, done.get("instability_rate"), k)
        return res

    def flags(self, metrics: Mapping[str, Metric], cfg: AuditConfig) -> list[str]:
        return ["prompt_sensitive"] if significant(metrics.get("prompt_flip_rate"), cfg) else []
