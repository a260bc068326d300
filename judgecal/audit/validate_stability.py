"""A planted-instability scenario for ``judgecal validate``: does the decomposition by axis find the axis
that was made to move the judge?

A simulated judge answers ``n_items`` pairwise items with accuracy ``base_accuracy``. Every axis has
``levels`` variants; each variant re-draws a fraction ``noise`` of the verdicts from the same judge (run-to-run
noise, no systematic effect), and the variants of the planted axis also turn a fraction ``effect`` of the
correct verdicts wrong (a real instability). The scenario passes when the axis with the largest share of
the squared accuracy shifts (:func:`judgecal.stats.stability.decompose_by_axis`) is the planted one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecal.errors import InputError
from judgecal.stats import stability as st

AXES = ("seed", "temperature", "mutation", "fewshot", "batch_size", "backend")


def planted_instability(planted: str = "mutation", *, n_items: int = 1000, base_accuracy: float = 0.75,
                        effect: float = 0.06, noise: float = 0.02, levels: int = 2, axes: Sequence[str] = AXES,
                        seed: int = 0) -> dict[str, Any]:
    """Simulate one stability run with ``planted`` moving the judge and decompose it (see module docstring)."""
    if planted not in axes:
        raise InputError(f"planted axis {planted!r} is not among {', '.join(axes)}")
    rng = np.random.default_rng(seed)
    truth = rng.choice(np.array(["A", "B"], dtype=object), size=n_items)
    wrong = np.where(truth == "A", "B", "A").astype(object)

    def draw(mask: np.ndarray) -> np.ndarray:
        return np.where(rng.random(n_items) < base_accuracy, truth, wrong).astype(object)[mask]

    base = np.where(rng.random(n_items) < base_accuracy, truth, wrong).astype(object)
    cols, names = [base], ["base"]
    for ax in axes:
        for _ in range(levels):
            v = base.copy()
            redo = rng.random(n_items) < noise
            v[redo] = draw(redo)
            if ax == planted:
                flip = (v == truth) & (rng.random(n_items) < effect)
                v[flip] = wrong[flip]
            cols.append(v)
            names.append(ax)
    sums = st.accuracy_sums(np.stack(cols, axis=1), truth)
    fig = st.ratio_stat(sums.sum(axis=0))
    dec = st.decompose_by_axis(fig, names)
    return {"planted": planted, "recovered": dec["top_axis"], "passed": dec["top_axis"] == planted,
            "shares": {a: d["share"] for a, d in dec["axes"].items()}, "largest_shift": dec["largest_shift"],
            "sigma_pp": float(st.sigma_pp(fig)), "score": float(st.stability_score(st.sigma_pp(fig)))}
