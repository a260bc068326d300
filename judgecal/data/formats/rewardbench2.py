"""RewardBench 2 (and RewardBench): prompts with chosen and rejected completions.

RewardBench 2: ``id``, ``prompt``, ``chosen`` [...], ``rejected`` [...], ``models`` (the writers of
chosen then rejected), ``subset``. RewardBench: ``id``, ``prompt``, ``chosen``, ``chosen_model``,
``rejected``, ``rejected_model``, ``subset``. A best-of-n record becomes its chosen x rejected pairs,
kept together as one group (``metadata.group``, the record's id); each pair's gold label is its chosen
side, under the source ``rewardbench2:gold``. The chosen completion is put first or second by a hash of
the pair, so that the gold side is not always the same position.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, pair_item, record_id
from judgecal.data.importers import MAX_TEXT_CHARS
from judgecal.data.records import stable_hash

NAME = "rewardbench2"
DESCRIPTION = "RewardBench 2 / RewardBench (prompt, chosen[], rejected[]): best-of-n as grouped pairs"
GOLD = "rewardbench2:gold"


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"prompt", "chosen", "rejected"} <= set(r) for r in head)


def _texts(rec: dict[str, Any], key: str) -> list[str]:
    v = rec.get(key)
    v = [v] if isinstance(v, str) else v
    if not isinstance(v, list) or not v or not all(isinstance(x, str) for x in v):
        raise Skip(key, "must be a text or a non-empty list of texts")
    if any(len(x) > MAX_TEXT_CHARS for x in v):
        raise Skip(key, f"holds a text over the limit of {MAX_TEXT_CHARS:,} characters")
    return list(v)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    for n, rec in m.records(path):
        with m.at(path, n):
            rid = record_id(rec, "id")
            prompt = rec.get("prompt")
            if not isinstance(prompt, str) or not prompt.strip():
                raise Skip("prompt", "must be a non-empty text")
            chosen, rejected = _texts(rec, "chosen"), _texts(rec, "rejected")
            given = rec.get("models")
            if not isinstance(given, list):
                given = [rec.get("chosen_model"), rec.get("rejected_model")] if "chosen_model" in rec else []
            models = [x if isinstance(x, str) else None for x in given]
            if len(models) != len(chosen) + len(rejected):
                models = [None] * (len(chosen) + len(rejected))
            meta: dict[str, Any] = {"group": str(rid)}
            if isinstance(rec.get("subset"), str):
                meta["category"] = rec["subset"]
            for i, c in enumerate(chosen):
                for k, r in enumerate(rejected):
                    mc, mr = models[i], models[len(chosen) + k]
                    first = int(stable_hash([str(rid), i, k], 8), 16) % 2 == 0
                    a, b, ma, mb = (c, r, mc, mr) if first else (r, c, mr, mc)
                    own = (str(rid), f"{i}-{k}") if len(chosen) * len(rejected) > 1 else rid
                    item = pair_item(NAME, own, prompt, a, b, ma, mb, meta)
                    iid = item.item_id
                    m.item(item, f"{f}:{n}", (f, n))
                    m.label(iid, "gold", "A" if first else "B", GOLD)
    m.no_records(path)
    return m
