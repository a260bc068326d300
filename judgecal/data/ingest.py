"""Bring a registered dataset into a workspace: items, human labels and every recorded judge."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from judgecal.data.datasets import load
from judgecal.data.records import Judgment
from judgecal.data.span_datasets import SPAN_DATASETS, load_span_dataset
from judgecal.data.store import Workspace


def replay_specs(judgments: Iterable[Judgment]) -> list[tuple[str, str, dict[str, Any]]]:
    """(spec_hash, name, spec) of each recorded judge among ``judgments``, for the workspace's spec table."""
    from judgecal.data.specs import JudgeSpec

    specs = {j.judge: JudgeSpec.replay(j.judge) for j in judgments}
    return [(s.spec_hash, name, s.to_dict()) for name, s in specs.items()]


def import_dataset(ws: Workspace, name: str, offline: bool = False, sets: tuple[str, ...] | None = None
                   ) -> dict[str, Any]:
    """All or nothing: one transaction for the items, annotations and replay judgments (``notes``: what the
    loader counted as skipped or partial, by kind)."""
    ds = load_span_dataset(name, offline) if name in SPAN_DATASETS else load(name, offline=offline, sets=sets)
    with ws.transaction() as tx:
        n_items = ws.items_repo.add_items(ds.items, conn=tx)
        n_ann = ws.annotations_repo.add_annotations(ds.annotations, conn=tx)
        n_j = ws.judgments_repo.add_judgments(ds.judgments, conn=tx)
        ws.judgments_repo.add_judge_specs(replay_specs(ds.judgments), conn=tx)
        n_sp = ws.spans_repo.add_spans(getattr(ds, "spans", ()), conn=tx)
    return {"items": n_items, "annotations": n_ann, "judgments": n_j, "spans": n_sp,
            "judges": len({j.judge for j in ds.judgments}), "notes": ds.statistics.get(name, {}) if name == "calm" else {}}
