"""Do the authors' names sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class CompassionFadeProbe(PerturbationProbe):
    """CALM's compassion-fade bias: the responses are signed with model names."""

    name = "compassion_fade"
    question = "Do the authors' names sway the judge?"
    title = "compassion-fade"
    what = "the responses are signed with model names"
