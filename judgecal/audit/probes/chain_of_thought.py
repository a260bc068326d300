"""Does reasoning first change the judge's verdicts?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class ChainOfThoughtProbe(PerturbationProbe):
    """CALM's chain-of-thought bias: the judge is asked to reason before its verdict."""

    name = "chain_of_thought"
    question = "Does reasoning first change the judge's verdicts?"
    title = "chain-of-thought"
    what = "the judge is asked to reason before its verdict"
