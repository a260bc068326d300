"""Does being told an answer was refined sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class RefinementAwareProbe(PerturbationProbe):
    """CALM's refinement-aware bias: one response is said to be a refined version."""

    name = "refinement_aware"
    question = "Does being told an answer was refined sway the judge?"
    title = "refinement-aware"
    what = "one response is said to be a refined version"
