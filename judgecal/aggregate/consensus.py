"""Compute and store the human consensus of a workspace."""

from __future__ import annotations

import pandas as pd

from judgecal.aggregate.models import AGGREGATORS
from judgecal.data.records import Consensus
from judgecal.data.store import Workspace


def consensus_frame(annotations: pd.DataFrame, method: str = "ds") -> pd.DataFrame:
    """``item_id, label, posterior`` for every annotated item, by ``method`` (``ds`` or ``mv``)."""
    if method not in AGGREGATORS:
        raise ValueError(f"unknown consensus method {method!r}; known: {', '.join(AGGREGATORS)}")
    if annotations.empty:
        return pd.DataFrame(columns=["item_id", "label", "posterior"])
    model = AGGREGATORS[method]().fit(annotations)
    probas = model.probas_
    posts = [{str(k): float(v) for k, v in row.items() if v > 0} for row in probas.to_dict(orient="records")]
    return pd.DataFrame({"item_id": probas.index.astype(str), "label": model.labels_.reindex(probas.index).to_numpy(),
                         "posterior": posts})


def compute_consensus(ws: Workspace, methods: tuple[str, ...] = ("ds", "mv")) -> dict[str, int]:
    """Aggregate the workspace's human annotations with each method and store the result."""
    ann = ws.annotations_frame()
    counts = {}
    for method in methods:
        frame = consensus_frame(ann, method)
        rows = zip(frame["item_id"].tolist(), frame["label"].tolist(), frame["posterior"].tolist(), strict=True)
        ws.set_consensus((Consensus(str(i), method, str(lab), dict(p)) for i, lab, p in rows), method)
        counts[method] = len(frame)
    return counts
