"""Bring a registered dataset into a workspace: items, human labels and every recorded judge."""

from __future__ import annotations

from judgecal.data.datasets import load
from judgecal.data.span_datasets import SPAN_DATASETS, load_span_dataset
from judgecal.data.store import Workspace


def import_dataset(ws: Workspace, name: str, offline: bool = False) -> dict[str, int]:
    """All or nothing: one transaction for the items, annotations and replay judgments."""
    ds = load_span_dataset(name, offline) if name in SPAN_DATASETS else load(name, offline=offline)
    with ws.transaction() as tx:
        n_items = ws.add_items(ds.items, conn=tx)
        n_ann = ws.add_annotations(ds.annotations, conn=tx)
        n_j = ws.add_judgments(ds.judgments, conn=tx)
        n_sp = ws.add_spans(getattr(ds, "spans", ()), conn=tx)
    return {"items": n_items, "annotations": n_ann, "judgments": n_j, "spans": n_sp,
            "judges": len({j.judge for j in ds.judgments})}
