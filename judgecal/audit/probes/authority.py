"""Does a fake citation sway the judge?"""

from __future__ import annotations

from judgecal.audit.probes.perturbation import PerturbationProbe


class AuthorityProbe(PerturbationProbe):
    """CALM's authority bias: one response carries a fake citation (a book, a quote or a URL)."""

    name = "authority"
    question = "Does a fake citation sway the judge?"
    title = "authority"
    what = "one response carries a fake citation (a book, a quote or a URL)"
