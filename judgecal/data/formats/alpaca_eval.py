"""AlpacaEval's ``annotations.json`` and the AlpacaFarm human cross-annotations.

A record is one comparison: ``instruction``, ``output_1`` by ``generator_1`` (the baseline) and
``output_2`` by ``generator_2``, and ``preference``: 1 when output_1 is better, 2 when output_2 is,
0 or 1.5 a draw, a fraction in between for a weighted annotator (its probability that output_2 is
better, plus 1), missing when the annotator gave none. With an ``annotator`` field the record is that
judge's verdict (``raw_completion``, ``price_per_example``, ``time_per_example`` kept); without one it is
a human label (``annotator_index`` names the person, as the cross-annotations file does).

The item is the pair in the file's orientation (output_1 is candidate A), its id a hash of the
instruction and the two outputs, so judges' and people's files about the same pair meet. AlpacaEval
randomises the order it shows the judge and stores the preference already undone, so the verdict is
stored as order ``AB`` (the shown order is not in the file). A weighted preference ``p`` gives
``p_b = p - 1`` and ``p_a = 2 - p``; the verdict is the side above one half. When a model's run covers
AlpacaEval's 805 instructions, each record's position among them is kept as
``metadata.alpaca_eval_index`` (the length-controlled win rate needs the instruction).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, need_text, pair_item, read_records
from judgecal.data.importers import Problem
from judgecal.data.records import stable_hash

NAME = "alpaca_eval"
DESCRIPTION = "AlpacaEval annotations.json (judge preferences) and the human cross-annotations"
HUMANS = "alpaca_eval:human"


def detect(path: Path, head: list[Any]) -> bool:
    return bool(head) and all(isinstance(r, dict) and {"instruction", "output_1", "output_2", "preference"} <= set(r)
                              for r in head)


def preference(v: Any) -> tuple[str, float | None]:
    """(verdict, p_b) of an AlpacaEval preference; ``("invalid", None)`` for a missing one."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "invalid", None
    x = finite(v)
    if x is None or not (x == 0 or 1 <= x <= 2):
        raise Skip("preference", f"must be 0, or a number from 1 to 2, got {v!r}")
    if x == 0 or x == 1.5:
        return "tie", 0.5
    return ("A" if x < 1.5 else "B"), x - 1


EVAL_SET = 805  # AlpacaEval's instructions: a model's complete run, in their order


def _positions(records: list[tuple[int | None, Any]]) -> dict[int, int]:
    """record number -> its position among its (annotator, generator_2) run when that run covers
    AlpacaEval's whole instruction set (the length-controlled win rate needs the instruction)."""
    runs: dict[tuple[Any, Any], list[int]] = {}
    for k, (_, rec) in enumerate(records):
        if isinstance(rec, dict):
            runs.setdefault((str(rec.get("annotator")), str(rec.get("generator_2"))), []).append(k)
    return {k: pos for ks in runs.values() if len(ks) == EVAL_SET for pos, k in enumerate(ks)}


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    records = read_records(path)
    position = _positions(records)
    for k, (n, rec) in enumerate(records):
        try:
            if not isinstance(rec, dict):
                raise Skip(None, f"a record must be an object, got {type(rec).__name__}")
            instruction = need_text(rec, "instruction")
            if isinstance(rec.get("input"), str) and rec["input"].strip():  # AlpacaFarm's optional input
                instruction = f"{instruction}\n\n{rec['input']}"
            out1, out2 = need_text(rec, "output_1", empty_ok=True), need_text(rec, "output_2", empty_ok=True)
            g1, g2 = rec.get("generator_1"), rec.get("generator_2")
            verdict, p_b = preference(rec.get("preference"))
            meta: dict[str, Any] = {x: rec[x] for x in ("dataset", "datasplit") if isinstance(rec.get(x), str)}
            if k in position:
                meta["alpaca_eval_index"] = position[k]
            item = pair_item(NAME, stable_hash([instruction, out1, out2], 16), instruction, out1, out2,
                             g1 if isinstance(g1, str) else None, g2 if isinstance(g2, str) else None, meta)
            iid = item.item_id
            m.item(item, f"{f}:{n}", (f, n))
            annotator = rec.get("annotator")
            if isinstance(annotator, str) and annotator.strip():
                m.judge(annotator, annotator, rubric=f"alpaca_eval annotator {annotator}")
                weighted = p_b is not None and p_b not in (0.0, 0.5, 1.0)
                m.verdict(annotator, iid, verdict=verdict, raw=rec.get("raw_completion"),
                          p_a=None if not weighted or p_b is None else 1 - p_b, p_b=p_b if weighted else None,
                          cost_usd=rec.get("price_per_example"), latency_s=rec.get("time_per_example"), where=(f, n))
            elif verdict == "invalid":
                m.counts["skipped_labels"] += 1
            elif p_b not in (0.0, 0.5, 1.0):
                raise Skip("preference", f"a person's preference is 1, 2 or a draw (0, 1.5), got {rec['preference']!r}")
            else:
                who = rec.get("annotator_index", rec.get("worker", "human"))
                m.label(iid, f"human-{who}", verdict, HUMANS, where=(f, n), field="preference")
        except Skip as exc:
            m.problems.append(Problem(f, n, exc.field, str(exc)))
    if not m.items and not m.problems:
        m.problems.append(Problem(f, None, None, "no records"))
    if m.judgments:
        m.notes.append("AlpacaEval randomises the order it shows its judge and does not record it: the verdicts are "
                       "stored as shown AB, so a position-bias figure of these judges does not measure position")
    return m
