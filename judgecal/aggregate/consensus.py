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


def judges_as_annotators(ws: Workspace, judges: tuple[str, ...]) -> pd.DataFrame:
    """Each judge's decisive verdicts as extra annotators named ``judge:<name>`` (one per order)."""
    j = ws.judgments_frame(columns=("item_id", "judge", "order", "verdict"))
    j = j[j["judge"].isin(judges) & j["verdict"].isin(["A", "B", "tie"])]
    return pd.DataFrame({"item_id": j["item_id"], "annotator": "judge:" + j["judge"] + ":" + j["order"],
                         "label": j["verdict"]})


def compute_consensus(ws: Workspace, methods: tuple[str, ...] = ("ds", "mv"),
                      judges: tuple[str, ...] = ()) -> dict[str, int]:
    """Aggregate the human annotations with each method and store the result.

    With ``judges``, the same methods also run with those judges as additional annotators, on the
    items people labelled; that result is stored apart as ``<method>+judges`` and never replaces
    the human consensus.
    """
    ann = ws.annotations_frame()[["item_id", "annotator", "label"]]
    counts = {}
    variants = [(m, ann) for m in methods]
    if judges:
        extra = judges_as_annotators(ws, judges)
        both = pd.concat([ann, extra[extra["item_id"].isin(set(ann["item_id"]))]], ignore_index=True)
        variants += [(f"{m}+judges", both) for m in methods]
    for name, data in variants:
        frame = consensus_frame(data, name.split("+")[0])
        rows = zip(frame["item_id"].tolist(), frame["label"].tolist(), frame["posterior"].tolist(), strict=True)
        ws.set_consensus((Consensus(str(i), name, str(lab), dict(p)) for i, lab, p in rows), name)
        counts[name] = len(frame)
    return counts
