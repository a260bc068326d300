"""Mu-SHROOM (SemEval 2025 Task 3) span files: hallucinated stretches of model outputs.

A record: ``id``, ``lang``, ``model_input``, ``model_output_text``, ``model_id``, ``hard_labels``
([[start, end], ...] character offsets: the stretches most annotators marked), ``soft_labels``
([{start, end, prob}]: the share of annotators who marked each stretch), and the model's
``model_output_tokens``/``model_output_logits``. Each record becomes a pointwise item whose hard labels
are human spans of the rater ``annotators (majority)`` under the source ``mushroom:human``. A zero-length
span marks nothing: it is dropped and counted, as the official scorer ignores it. Soft labels, tokens
and logits are not imported (counted in the summary).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, need_text, point_item, record_id
from judgecal.data.importers import Problem
from judgecal.data.span_import import parse_spans

NAME = "mushroom"
DESCRIPTION = "Mu-SHROOM hallucination spans (model_input, model_output_text, hard_labels, soft_labels)"
HUMANS = "mushroom:human"
RATER = "annotators (majority)"


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"model_output_text", "hard_labels"} <= set(r) for r in head)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    for n, rec in m.records(path):
        with m.at(path, n):
            rid = record_id(rec, "id")
            prompt = need_text(rec, "model_input")
            text = need_text(rec, "model_output_text", empty_ok=True)
            model = rec.get("model_id") if isinstance(rec.get("model_id"), str) else None
            meta = {"lang": rec["lang"]} if isinstance(rec.get("lang"), str) else {}
            item = point_item(NAME, rid, prompt, text, model, meta)
            iid = item.item_id
            m.item(item, f"{f}:{n}", (f, n))
            spans, bad = parse_spans({RATER: rec.get("hard_labels")}, text, iid, HUMANS, "hard_labels",
                                     counts=m.counts)
            for where, msg in bad:
                m.problems.append(Problem(f, n, where.replace(f"hard_labels.{RATER}", "hard_labels"), msg))
            m.spans.extend(spans)
            if rec.get("soft_labels"):
                m.drop("soft_labels not imported (the hard labels are their majority)")
    m.no_records(path)
    return m
