"""``judgecal regrade --judge J2 --like J1``: a new judge version on exactly the items an old one judged,
in the same presentation orders and as many samples, so that ``judgecal gate`` compares like with like."""

from __future__ import annotations

from typing import Any

from judgecal.data.store import Workspace
from judgecal.loop import LoopError
from judgecal.loop.compare import judge_frame


def plan_like(ws: Workspace, engine: Any, like: str, *, seed: int = 0, items: set[str] | None = None) -> list[Any]:
    """The engine's calls for the items ``like`` judged (unmutated, probe copies left out; only ``items``
    when given), each in the orders ``like`` used on it and with as many samples."""
    frame = judge_frame(ws, like)
    if items is not None:
        frame = frame[frame["item_id"].isin(items)]
    if frame.empty:
        raise LoopError(f"{like} judged no item to regrade")
    per_item = frame.groupby("item_id").agg(orders=("order", lambda s: tuple(sorted(set(s)))),
                                           samples=("sample", "max"))
    by_id = {it.item_id: it for it in ws.items_repo.items(ids=list(per_item.index))}
    calls: list[Any] = []
    groups: dict[tuple[tuple[str, ...], int], list[Any]] = {}
    for item_id, orders, samples in zip(per_item.index, per_item["orders"], per_item["samples"], strict=True):
        if item_id in by_id:
            groups.setdefault((orders, int(samples) + 1), []).append(by_id[item_id])
    for (orders, samples), todo in groups.items():
        calls += engine.plan(todo, orders=orders, samples=samples, seed=seed)
    return calls
