"""PandaLM testset-v1 read straight from the dataset mirror, for the statistics tests.

``cmp_key`` is ``"modelX_modelY"``: ``response1`` was written by ``modelX`` (item orientation ``A``).
Annotators label 0 (tie), 1 (response1) or 2 (response2); the humans' label is the majority of three
(no majority: tie). GPT-3.5's recorded verdicts are ``"1"``, ``"2"``, ``"Tie"`` or unparsable
(``"garbage"``), counted as a tie (the authors' rule).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

_LABEL = {0: "tie", 1: "A", 2: "B"}


@dataclass(frozen=True)
class PandaLM:
    model_a: NDArray[np.object_]
    model_b: NDArray[np.object_]
    annotators: NDArray[np.object_]  # items x 3, "A"/"B"/"tie"
    humans: NDArray[np.object_]  # majority label
    gpt35: NDArray[np.object_]
    category: NDArray[np.object_]


def load(mirror: Path) -> PandaLM:
    root = mirror / "WeOpenML" / "PandaLM" / "data"
    items = json.loads((root / "testset-v1.json").read_text())
    gpt = {r["idx"]: r["gpt_result"] for r in json.loads((root / "gpt-3.5-turbo-testset-v1.json").read_text())}
    ann = np.array([[_LABEL[r[f"annotator{k}"]] for k in (1, 2, 3)] for r in items], dtype=object)
    maj = []
    for row in ann:
        vals, counts = np.unique(row.astype(str), return_counts=True)
        maj.append(vals[counts.argmax()] if counts.max() >= 2 else "tie")
    return PandaLM(
        model_a=np.array([r["cmp_key"].split("_")[0] for r in items], dtype=object),
        model_b=np.array([r["cmp_key"].split("_")[1] for r in items], dtype=object),
        annotators=ann,
        humans=np.array(maj, dtype=object),
        gpt35=np.array([{"1": "A", "2": "B", "Tie": "tie"}.get(gpt[r["idx"]], "tie") for r in items], dtype=object),
        category=np.array([r["motivation_app"] for r in items], dtype=object),
    )
