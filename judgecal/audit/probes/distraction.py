"""Does an irrelevant fact sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class DistractionProbe(PerturbationProbe):
    """CALM's distraction bias: an irrelevant fact about one response's author is given."""

    name = "distraction"
    question = "Does an irrelevant fact sway the judge?"
    title = "distraction"
    what = "an irrelevant fact about one response's author is given"
