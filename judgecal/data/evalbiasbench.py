"""EvalBiasBench (OffsetBias, Park et al. 2024): hand-built pairs whose better response is known, in six traps.

``biasbench.json`` maps each trap (``length bias``, ``concreteness``, ``empty reference``,
``content_continuation``, ``nested_instruction``, ``familiar knowledge preference bias``) to pairs of
``instruction``, ``response1``, ``response2`` and ``label`` (1 or 2: the better response). Each pair becomes a
pairwise item whose metadata carry its trap (``trap``) and known answer (``trap_answer``, ``A`` or ``B``), and
whose known answer is also a gold label (annotator ``evalbiasbench-gold``), so the audit can use it as truth.
"""

from __future__ import annotations

import re

from judgecal.data.loaded import LoadedDataset, _read_json, _text
from judgecal.data.records import Annotation, Candidate, Item
from judgecal.data.registry import DatasetError, fetch

NAME = "evalbiasbench"
FILE = "data/evalbiasbench/biasbench.json"
TRAP_KEY, ANSWER_KEY = "trap", "trap_answer"


def trap_slug(trap: str) -> str:
    """A trap's name as a snake_case word (``length bias`` -> ``length_bias``): its metrics' suffix."""
    return re.sub(r"[^a-z0-9]+", "_", trap.lower()).strip("_") or "trap"


def load_evalbiasbench(offline: bool = False) -> LoadedDataset:
    """The 80 pairs as items (trap and known answer in their metadata) with the known answer as a gold label."""
    path = fetch(NAME, offline=offline)[FILE]
    data = _read_json(path)
    if not isinstance(data, dict):
        raise DatasetError(f"{path}: expected an object mapping each trap to its pairs")
    out = LoadedDataset(NAME)
    for trap, rows in data.items():
        if not isinstance(rows, list):
            raise DatasetError(f"{path}: {trap!r}: expected a list of pairs")
        for i, row in enumerate(rows):
            label = row.get("label") if isinstance(row, dict) else None
            if label not in (1, 2) or not all(k in row for k in ("instruction", "response1", "response2")):
                raise DatasetError(f"{path}: {trap!r}[{i}]: needs instruction, response1, response2 and label 1 or 2")
            item_id = f"{NAME}/{trap_slug(str(trap))}/{i}"
            answer = "A" if label == 1 else "B"
            out.items.append(Item(
                item_id=item_id, prompt=_text(row["instruction"]), source=NAME,
                candidates=[Candidate(_text(row["response1"])), Candidate(_text(row["response2"]))],
                metadata={TRAP_KEY: str(trap), ANSWER_KEY: answer, "index": i},
            ))
            out.annotations.append(Annotation(
                item_id=item_id, annotator=f"{NAME}-gold", label=answer, shown_order="AB", source=NAME,
                annotation_id=f"{item_id}/gold",
            ))
    return out
