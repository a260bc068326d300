"""Cascaded selective evaluation (Jung, Brahman & Choi, ICLR 2025, section 3): thresholds for a chain of
judges, each chosen by :func:`judgecal.stats.selective.trust_or_escalate` at ``delta / k`` (Bonferroni over
the ``k`` stages) on the calibration rows that reach its stage, i.e. that every earlier stage escalated.

``conf`` and ``agree`` are ``n x k``: row ``r``'s confidence and agreement with the humans at stage ``j``
(NaN where the stage has no confidence: the row moves on). Pure arrays, no I/O.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecal.errors import StatsError
from judgecal.stats.selective import SelectiveResult, escalate, trust_or_escalate


def cascade_calibrate(conf: ArrayLike, agree: ArrayLike, *, target: float = 0.9,
                      delta: float = 0.1) -> list[tuple[SelectiveResult, int]]:
    """Each stage's result and how many calibration rows reached it."""
    c, a = np.atleast_2d(np.asarray(conf, dtype=np.float64)), np.atleast_2d(np.asarray(agree, dtype=np.float64))
    if c.shape != a.shape:
        raise StatsError(f"conf is {c.shape} but agree is {a.shape}")
    k = c.shape[1]
    reach = np.ones(c.shape[0], dtype=bool)
    out = []
    for j in range(k):
        res = trust_or_escalate(c[reach, j], a[reach, j], target=target, delta=delta / k)
        out.append((res, int(reach.sum())))
        reach &= escalate(c[:, j], res.threshold)
    return out


def cascade_stage(conf: ArrayLike, thresholds: ArrayLike) -> NDArray[np.int64]:
    """The stage that decides each row (``k``: none, the row goes to people)."""
    c = np.atleast_2d(np.asarray(conf, dtype=np.float64))
    thr = np.asarray(thresholds, dtype=np.float64)
    stage = np.full(c.shape[0], c.shape[1], dtype=np.int64)
    for j in range(c.shape[1] - 1, -1, -1):  # the first stage that keeps a row decides it
        stage[~escalate(c[:, j], thr[j])] = j
    return stage


__all__ = ["cascade_calibrate", "cascade_stage"]
