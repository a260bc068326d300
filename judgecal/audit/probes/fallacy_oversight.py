"""Does the judge overlook broken reasoning behind a correct answer?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class FallacyOversightProbe(PerturbationProbe):
    """CALM's fallacy-oversight bias, read from its published rewrites: the correct answer rewritten to reach the
    same result through broken reasoning. Read the other way from the other perturbations: a sound judge moves away
    from it; the flag means it did not."""

    name = "fallacy_oversight"
    question = "Does the judge overlook broken reasoning behind a correct answer?"
    title = "fallacy-oversight"
    what = "the correct response's reasoning is rewritten to be broken (its final answer kept)"
    how_to_run = "judgecal import calm --set fact, then judgecal probe fallacy_oversight --judge JUDGE"
