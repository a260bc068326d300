"""What a rater with no information gets: the references every agreement figure stands beside.

- **Chance accuracy** of a rater that answers at random with the truth's label shares ``p_k``:
  ``Σ p_k²`` (the expected agreement of two independent raters with the same margins; Cohen, 1960).
- **The trivial rater** that always answers the truth's commonest label ``m`` (the first of the commonest in
  the label set's order), from the truth's count of each label alone (the conventions of
  :mod:`judgecal.stats.classification`): accuracy ``s = n_m / n``; κ 0 (undefined, ``None``, when the truth is
  one label too: 0/0); recall 1 for ``m`` and 0 for the others; precision ``s`` for ``m``, undefined for the
  labels it never gives; macro F1 ``2 s / (k (1 + s))`` (``k`` labels, a label never given counts F1 0) —
  ``2 n_m / (k (n + n_m))``; binary, with the positive label ``+``: TPR 1 and TNR 0 when ``m = +`` (else 0
  and 1), precision ``s`` (undefined when ``m ≠ +``), F1 ``2 s / (1 + s)`` (0 when ``m ≠ +``), balanced
  accuracy 0.5.

Pure functions of counts: nothing is estimated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence


def chance_accuracy(counts: Mapping[str, int | float | None] | Sequence[int | float | None]) -> float | None:
    """``Σ p_k²`` of the label counts (a mapping label → count, or the counts); ``None`` without any label."""
    values = counts.values() if isinstance(counts, Mapping) else counts
    kept = [float(c) for c in values
            if isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(float(c)) and c]
    total = sum(kept)
    return sum((c / total) ** 2 for c in kept) if total else None


def majority_label(labels: Sequence[str], totals: Sequence[int | float]) -> str | None:
    """The first of the commonest labels (``totals`` in the order of ``labels``); ``None`` on no count."""
    if not sum(totals) or len(totals) != len(labels):
        return None
    return str(labels[max(range(len(totals)), key=lambda k: (totals[k], -k))])


def trivial_figures(labels: Sequence[str], totals: Sequence[int | float], task: str | None = None,
                    positive: str | None = None) -> dict[str, float | None]:
    """The always-the-commonest-label rater's figures by metric name (see the module), from the truth's count
    of each label (``totals``, in the order of ``labels``); ``{}`` on no count."""
    names = [str(x) for x in labels]
    m = majority_label(names, totals)
    if m is None:
        return {}
    share = totals[names.index(m)] / sum(totals)
    k = len(names)
    kappa = 0.0 if share < 1 else None
    out: dict[str, float | None] = {"macro_f1": 2 * share / (k * (1 + share)), "accuracy": share,
                                    "cohen_kappa": kappa, "weighted_kappa": kappa}
    for x in names:
        out[f"recall_by_label.{x}"] = 1.0 if x == m else 0.0
        out[f"precision_by_label.{x}"] = share if x == m else None
    if task == "binary" and positive is not None:
        on = str(positive) == m
        out.update({"tpr": 1.0 if on else 0.0, "tnr": 0.0 if on else 1.0, "precision": share if on else None,
                    "f1": 2 * share / (1 + share) if on else 0.0, "balanced_accuracy": 0.5})
    return out


def trivial_rater(labels: Sequence[str], totals: Sequence[int | float], task: str | None = None,
                  positive: str | None = None) -> dict[str, object] | None:
    """``{"label", "n", "figures"}``: the trivial rater's label, the count it was measured on and its figures
    (:func:`trivial_figures`); ``None`` on no count."""
    m = majority_label([str(x) for x in labels], totals)
    if m is None:
        return None
    n = sum(totals)
    return {"label": m, "n": int(n) if float(n).is_integer() else n,
            "figures": trivial_figures(labels, totals, task, positive)}


__all__ = ["chance_accuracy", "majority_label", "trivial_figures", "trivial_rater"]
