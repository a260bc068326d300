"""Intransitive triads: three responses to one prompt judged pairwise that form a cycle.

A triad ``u < v < w`` has three pairwise preferences, each a sign: ``s_uv = +1`` when ``u`` is preferred to
``v``, ``-1`` when ``v`` is, ``0`` for a tie. It is *intransitive* when they form a strict cycle, ``u > v > w > u``
or ``u < v < w < u``: ``s_uv == s_vw == -s_uw != 0``. A tie never makes a cycle (a triad with a tie counts, as
not intransitive), so the rate is the share of all judged triads that are strict cycles.

A random rater that ties each pair with probability ``t`` and otherwise picks either response with probability
1/2, independently, gives a cycle when all three pairs are decisive (probability ``(1 - t)^3``) and the three
coin flips take one of the 2 cyclic orientations of 2^3 = 8: ``(1 - t)^3 / 4`` (0.25 without ties).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from judgecal.errors import StatsError


def is_cycle(s_uv: NDArray[np.float64], s_vw: NDArray[np.float64], s_uw: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Whether each triad's signs form a strict cycle (NaN, a missing preference, is never one)."""
    s_uv, s_vw, s_uw = (np.asarray(x, dtype=np.float64) for x in (s_uv, s_vw, s_uw))
    return (s_uv != 0) & (s_uv == s_vw) & (s_vw == -s_uw)


def random_cycle_rate(tie_rate: float) -> float:
    """The intransitive share a random rater with tie probability ``tie_rate`` shows: ``(1 - t)^3 / 4``."""
    if not 0.0 <= tie_rate <= 1.0:
        raise StatsError(f"a tie rate is a share between 0 and 1, got {tie_rate}")
    return (1.0 - tie_rate) ** 3 / 4.0
