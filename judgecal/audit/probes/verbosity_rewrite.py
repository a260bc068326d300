"""Does the judge move toward an answer made longer with nothing added?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class VerbosityRewriteProbe(PerturbationProbe):
    """CALM's verbosity bias, read from its published rewrites: the rejected response rewritten longer, its content
    and answer kept, so the shift is toward the padded wrong side. The ``verbosity`` probe beside it measures the
    judge's taste for length on the pairs as they are, against the humans'."""

    name = "verbosity_rewrite"
    question = "Does the judge move toward an answer made longer with nothing added?"
    title = "verbose rewrite"
    what = "the rejected response is rewritten longer, its content and answer kept"
    how_to_run = "judgecal import calm --set fact, then judgecal probe verbosity_rewrite --judge JUDGE"
