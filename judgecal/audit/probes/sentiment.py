"""Does the tone of an answer sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class SentimentProbe(PerturbationProbe):
    """CALM's sentiment bias, read from its published rewrites: the perturbed response rewritten cheerful, the other
    one sad, angry or fearful (the same content in both), so the shift is toward the cheerful side."""

    name = "sentiment"
    question = "Does the tone of an answer sway the judge?"
    title = "sentiment"
    what = "one response is rewritten in a cheerful tone and the other in a sad, angry or fearful one"
    how_to_run = "judgecal import calm --set fact, then judgecal probe sentiment --judge JUDGE"
