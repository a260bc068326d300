"""How close each judge's spans are to the people's: the span part of a judge's audit entry.

For every judge with spans in the workspace, on the items (and candidates) where both the judge and at
least one person left spans (an empty span counts: "looked, marked nothing"), against the human
consensus (characters marked by more than half of the item's annotators, optionally weighted by
annotator quality): ``span_iou`` (mean per-item character IoU), ``span_f1`` (mean per-item character
F1), ``span_precision``, ``span_recall`` and ``micro_f1``; ``span_match_f1`` (spans found at IoU >= 0.5,
labels ignored); ``detection_balanced_accuracy`` (does the judge mark anything where the consensus
does). Beside them, ``human_f1``: the annotators' mean pairwise character F1 on the same items, the
ceiling a judge can hope to reach (``n = 0`` when an item never has two annotators). Every figure is
``{estimate, ci_low, ci_high, n}`` with an item-bootstrap CI (:mod:`judgecal.stats.spans`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.store import Workspace
from judgecal.stats import spans as S


def _codes(frame: pd.DataFrame, keys: pd.Index) -> np.ndarray:
    return keys.get_indexer(pd.MultiIndex.from_arrays([frame.item_id, frame.candidate]))


def span_alignment(spans: pd.DataFrame, *, weights: Mapping[str, float] | None = None, n_boot: int = 2000,
                   seed: int = 0, lengths: Mapping[tuple[str, int], int] | None = None
                   ) -> dict[str, dict[str, dict[str, object]]]:
    """Judge name -> span metrics against the human consensus, from a spans frame (``ws.spans_repo.spans_frame``).

    ``weights`` maps annotator -> quality weight for the consensus (unweighted when ``None``). Each entry
    also holds ``like_for_like`` (:func:`judgecal.stats.spans.span_reference`): the judge's F1 with each
    annotator beside the annotators' with each other and the trivial markers' on the same items;
    ``lengths`` ((item_id, candidate) -> text length) enables the markers that need the text.
    """
    human = spans[spans.kind == "human"]
    judged = spans[spans.kind == "judge"]
    out: dict[str, dict[str, dict[str, object]]] = {}
    for judge, js in judged.groupby("rater", sort=True):
        keys = pd.MultiIndex.from_frame(human[["item_id", "candidate"]].drop_duplicates()).intersection(
            pd.MultiIndex.from_frame(js[["item_id", "candidate"]].drop_duplicates()))
        if not len(keys):
            continue
        keys = keys.sort_values()
        h = human[_codes(human, keys) >= 0]
        j = js[_codes(js, keys) >= 0]
        raters, names = pd.factorize(h.rater)
        w = None if weights is None else np.array([float(weights.get(r, 1.0)) for r in names])
        hv = S.intervals(_codes(h, keys), h.start, h.end)
        jv = S.intervals(_codes(j, keys), j.start, j.end)
        n = len(keys)
        cons = S.consensus(hv, raters, w)
        scores = S.span_scores(jv, cons, n, n_boot=n_boot, seed=seed)
        entry = {"span_iou": scores["iou"], "span_f1": scores["f1"], "span_precision": scores["precision"],
                 "span_recall": scores["recall"], "span_micro_f1": scores["micro_f1"],
                 "span_match_f1": S.span_matches(jv, cons, n, 0.5, n_boot=n_boot, seed=seed)["f1"],
                 "detection_balanced_accuracy": S.detection(S.marked(jv, n), S.marked(cons, n), n_boot=n_boot,
                                                            seed=seed)["balanced_accuracy"],
                 "human_f1": S.human_ceiling(hv, raters, n_boot=n_boot, seed=seed)}
        n_chars = None if lengths is None else np.array([int(lengths.get((str(i), int(c)), 0)) for i, c in keys])
        if n_chars is not None and ((hv.end > n_chars[hv.item]).any() or (jv.end > n_chars[jv.item]).any()):
            n_chars = None  # a text shorter than its spans: not the text they were marked on
        entry["like_for_like"] = S.span_reference(hv, raters, jv, n_chars, n_boot=n_boot, seed=seed)
        out[str(judge)] = entry
    return out


def workspace_span_alignment(ws: Workspace, source: str | None = None, **kw: Any) -> dict[str, dict[str, dict[str, object]]]:
    """:func:`span_alignment` over the workspace's spans (of one ``source`` when given)."""
    return span_alignment(ws.spans_repo.spans_frame(source=source), **kw)


def human_span_agreement(spans: pd.DataFrame, both_marked: bool = False, n_boot: int = 2000,
                         seed: int = 0) -> dict[str, object]:
    """The annotators' mean pairwise character F1 over every item with two or more of them."""
    h = spans[spans.kind == "human"]
    keys = pd.MultiIndex.from_frame(h[["item_id", "candidate"]].drop_duplicates()).sort_values()
    raters, _ = pd.factorize(h.rater)
    return S.human_ceiling(S.intervals(_codes(h, keys), h.start, h.end), raters, both_marked, n_boot, seed)


__all__ = ["human_span_agreement", "span_alignment", "workspace_span_alignment"]
