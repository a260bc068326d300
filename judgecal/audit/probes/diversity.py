"""Does an author's stated identity sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class DiversityProbe(PerturbationProbe):
    """CALM's diversity bias: one response's author is said to belong to an identity group."""

    name = "diversity"
    question = "Does an author's stated identity sway the judge?"
    title = "diversity"
    what = "one response's author is said to belong to an identity group"
    severity = "serious"  # verdicts that move with an author's identity are unfair, not only noisy
