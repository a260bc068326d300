"""Auto-J's pairwise test set (``data/test/testdata_pairwise.jsonl``, GAIR-NLP/auto-j).

A record: ``scenario``, ``label`` (0: ``response 1`` is better, 1: ``response 2`` is, 2: a tie — the
authors' human label), ``prompt``, ``response 1``, ``response 2``. Each becomes a pairwise item (its
``scenario`` as ``metadata.category``) with the label under the source ``autoj:human``. The published set
holds an empty response; it is an output like any other and is imported as such (and counted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, need_text, pair_item
from judgecal.data.records import stable_hash

NAME = "autoj"
DESCRIPTION = "Auto-J pairwise test set (scenario, label 0/1/2, prompt, response 1, response 2)"
HUMANS = "autoj:human"
LABELS = {0: "A", 1: "B", 2: "tie"}


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"prompt", "response 1", "response 2", "label"} <= set(r)
                              for r in head)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    for n, rec in m.records(path):
        with m.at(path, n):
            prompt = need_text(rec, "prompt")
            r1, r2 = need_text(rec, "response 1", empty_ok=True), need_text(rec, "response 2", empty_ok=True)
            label = rec.get("label")
            if label is not None and (isinstance(label, bool) or not isinstance(label, int) or label not in LABELS):
                raise Skip("label", f"unknown label {label!r}; expected 0, 1 or 2")
            scenario = rec.get("scenario")
            meta = {"category": scenario} if isinstance(scenario, str) else {}
            item = pair_item(NAME, stable_hash([prompt, r1, r2], 16), prompt, r1, r2, None, None, meta)
            iid = item.item_id
            m.item(item, f"{f}:{n}", (f, n))
            m.label_or_skip(iid, "autoj-human", None if label is None else LABELS[label], HUMANS)
    m.no_records(path)
    return m
