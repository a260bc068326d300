"""Does social proof ("90% of people prefer Response A") sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class BandwagonProbe(PerturbationProbe):
    """CALM's bandwagon bias: the instructions say most people prefer one response."""

    name = "bandwagon"
    question = 'Does social proof ("90% of people prefer Response A") sway the judge?'
    title = "bandwagon"
    what = "the instructions say most people prefer one response"
