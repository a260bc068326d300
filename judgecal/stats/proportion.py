"""Confidence intervals for a proportion, vectorised over groups.

Wilson's score interval (Wilson, 1927, JASA 22:209-212) for ``k`` successes in ``n`` trials at level
``1 - alpha``, with ``z`` the ``1 - alpha/2`` normal quantile and ``p = k / n``:

``(p + z^2/2n ± z sqrt(p(1 - p)/n + z^2/4n^2)) / (1 + z^2/n)``

It stays inside ``[0, 1]`` and keeps its coverage near ``p = 0`` or ``1`` where the Wald interval
collapses (Brown, Cai & DasGupta, 2001, Stat Sci 16:101-133). It equals statsmodels'
``proportion_confint(k, n, alpha, method="wilson")``; ``n = 0`` gives NaN.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def wilson_interval(k: ArrayLike, n: ArrayLike, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
    """Wilson's interval ``(low, high)`` for each ``k`` of ``n`` (arrays broadcast together)."""
    k_, n_ = np.broadcast_arrays(np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64))
    z = NormalDist().inv_cdf(0.5 + level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k_ / n_
        denom = 1 + z * z / n_
        centre = (p + z * z / (2 * n_)) / denom
        half = z * np.sqrt(p * (1 - p) / n_ + z * z / (4 * n_ * n_)) / denom
    bad = n_ <= 0
    return np.where(bad, np.nan, centre - half), np.where(bad, np.nan, centre + half)
