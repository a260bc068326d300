"""JudgeBench (ScalerLab): pairs with an objectively correct side.

A record: ``pair_id``, ``original_id``, ``source``, ``question``, ``response_model``, ``response_A``,
``response_B``, ``label`` (``A>B`` or ``B>A``; ``A=B`` a tie). Each becomes a pairwise item with the label
under the source ``judgebench:gold`` (the annotator ``gold``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, need_text, pair_item, record_id

NAME = "judgebench"
DESCRIPTION = "JudgeBench pairs (question, response_A, response_B, label 'A>B'/'B>A')"
GOLD = "judgebench:gold"
LABELS = {"A>B": "A", "B>A": "B", "A=B": "tie", "A>>B": "A", "B>>A": "B"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"response_A", "response_B", "label"} <= set(r) for r in head)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    for n, rec in m.records(path):
        with m.at(path, n):
            pid = record_id(rec, "pair_id", "id")
            q = need_text(rec, "question")
            a, b = need_text(rec, "response_A", empty_ok=True), need_text(rec, "response_B", empty_ok=True)
            label = rec.get("label")
            if label is not None and (not isinstance(label, str) or label not in LABELS):
                raise Skip("label", f"unknown label {label!r}; expected A>B or B>A")
            model = rec.get("response_model") if isinstance(rec.get("response_model"), str) else None
            meta = {k: rec[k] for k in ("source", "original_id") if isinstance(rec.get(k), (str, int))}
            if isinstance(meta.get("source"), str):
                meta["category"] = meta["source"]
            item = pair_item(NAME, pid, q, a, b, model, model, meta)
            iid = item.item_id
            m.item(item, f"{f}:{n}", (f, n))
            m.label_or_skip(iid, "gold", None if label is None else LABELS[label], GOLD)
    m.no_records(path)
    return m
