"""A judge that drifts, from real recorded verdicts: LLMBar Natural's 100 pairs with their gold label, GPT-4's
verdicts (Swap: both orders) for the first period and Falcon's for the later ones, all under one judge name, in
four monthly periods. Shared by the monitor's tests, the explorer's Over time page and the report's section."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from judgecal.cli import main
from judgecal.data.store import Workspace

GOOD, WEAK = "replay/llmbar/GPT-4/Swap", "replay/llmbar/Falcon/Swap"
SIZES = (40, 20, 20, 20)  # LLMBar Natural's 100 pairs, in its own order, as four monthly periods


def read_llmbar(folder: Path, mirror: Path) -> dict[str, Any]:
    """LLMBar Natural as read by judgecal: items in order, the gold label, both judges' stored verdicts."""
    from judgecal.data.ingest import import_dataset

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    with Workspace(folder / "ws") as ws:
        import_dataset(ws, "llmbar/Natural")
        items = sorted(ws.items_repo.items(), key=lambda it: int(it.item_id.rsplit("/", 1)[-1]))
        ann = ws.annotations_repo.annotations_frame()
        return {"items": items, "gold": dict(zip(ann["item_id"], ann["label"], strict=True)),
                "verdicts": {j: ws.judgments_repo.judgments_frame(j) for j in (GOOD, WEAK)}}


def write_files(data: dict[str, Any], out: Path, switch: int | None, *, when: str = "period",
                on: str = "items") -> Path:
    """items.jsonl and verdicts.jsonl in judgecal's own format: period k (2024-01, ...) judged by GPT-4 before
    ``switch`` and by Falcon from it, all as one judge; ``when``: ``period`` names, or a ``time`` in the month
    (the n-th item of a period n hours after its start), written on the ``items`` or on the judge's ``verdicts``."""
    out.mkdir(parents=True, exist_ok=True)
    items, verdicts, start = [], [], 0
    for k, size in enumerate(SIZES):
        judge = WEAK if switch is not None and k >= switch else GOOD
        frame = data["verdicts"][judge]
        for n, it in enumerate(data["items"][start:start + size]):
            mark = {"period": f"2024-{k + 1:02d}"} if when == "period" else {"time": f"2024-{k + 1:02d}-{n // 24 + 1:02d}T{n % 24:02d}:00:00Z"}
            items.append({"id": it.item_id, "prompt": it.prompt, "response_a": it.candidates[0].text,
                          "response_b": it.candidates[1].text, "human_labels": {"gold": data["gold"][it.item_id]},
                          **(mark if on == "items" else {})})
            for r in frame[frame["item_id"] == it.item_id].itertuples():
                flip = {"A": "B", "B": "A"} if r.order == "BA" else {}
                verdicts.append({"item_id": it.item_id, "judge": "production-judge", "order": r.order,
                                 "verdict": flip.get(r.verdict, r.verdict),  # as shown to the judge
                                 **(mark if on == "verdicts" else {})})
        start += size
    (out / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items), "utf-8")
    (out / "verdicts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in verdicts), "utf-8")
    return out


def build_workspace(files: Path, ws: Path) -> str:
    """The workspace of :func:`write_files`' files, imported and aggregated through the command line."""
    assert main(["import", str(files / "items.jsonl"), "-w", str(ws)]) == 0
    assert main(["import", str(files / "verdicts.jsonl"), "--as", "judgments", "-w", str(ws)]) == 0
    assert main(["aggregate", "-w", str(ws)]) == 0
    return str(ws)
