"""Guidelines distilled from the annotators' own rationales (``judgecal align --method guidelines``).

Extractive, so that every guideline is a person's words and can be traced to an annotation:

1. **Candidates**: rationales on *train* items, given by an annotator whose label is the truth's (a
   reason for the right answer). A rationale that speaks of the responses by position ("the first",
   "Response B", "left") is left out: annotators saw the pair in a random order, so out of its task it
   points at the wrong response. Whitespace is folded and long ones are cut at a word (``max_chars``).
2. **Ranking**: TF-IDF vectors (scikit-learn), a rationale's centrality is its mean cosine similarity to
   the others (what many reviewers said), plus 1 when the judge got that item wrong (the mistakes to
   correct come first); near-copies (cosine ≥ 0.8) count once.
3. **Selection** by maximal marginal relevance (Carbonell & Goldstein, SIGIR 1998): take the best-ranked,
   then repeatedly the one maximising rank − max similarity to those taken, up to ``k``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

POSITION_WORDS = re.compile(r"\b(?i:first|second|former|latter|left|on the right|the right (?:one|response|side))\b"
                            r"|\b(?i:response|answer|option|output|assistant|candidate)\s*(?:[12]|[AB])\b")
POSITION_LETTER = re.compile(r"(?<![\w'])[AB](?![\w'])")  # a bare capital A or B names a shown position


def positional(text: str) -> bool:
    """Whether ``text`` refers to a response by where it was shown."""
    return bool(POSITION_WORDS.search(text) or POSITION_LETTER.search(text))


def _clip(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0]
    return cut + "…"


def distil(annotations: pd.DataFrame, truth: pd.Series, verdict: pd.Series, train: list[str], *, k: int = 5,
           max_chars: int = 240) -> tuple[list[str], dict[str, Any]]:
    """Up to ``k`` guidelines quoted from rationales (see the module docstring), and the counts of what was
    available and left out, so a report can say where the guidelines came from."""
    about: dict[str, Any] = {"with_rationale": 0, "train": 0, "agree_with_truth": 0, "positional": 0, "used": 0,
                             "from_mistakes": 0, "annotations": []}
    if annotations.empty or "rationale" not in annotations:
        return [], about
    a = annotations[annotations["rationale"].notna()]
    a = a[a["rationale"].astype(str).str.strip() != ""]
    about["with_rationale"] = len(a)
    a = a[a["item_id"].astype(str).isin(set(train))]
    about["train"] = len(a)
    t = truth.reindex(a["item_id"].astype(str)).to_numpy(dtype=object)
    a = a[a["label"].astype(str).to_numpy() == t.astype(str)]
    about["agree_with_truth"] = len(a)
    pos = np.array([positional(str(r)) for r in a["rationale"]], dtype=bool)
    about["positional"] = int(pos.sum())
    a = a[~pos]
    if a.empty:
        return [], about
    texts = [_clip(str(r), max_chars) for r in a["rationale"]]
    wrong = np.array([str(verdict.get(i, "")) != str(truth.get(i)) for i in a["item_id"].astype(str)], dtype=float)
    from sklearn.feature_extraction.text import TfidfVectorizer

    try:
        vec = TfidfVectorizer(stop_words="english", sublinear_tf=True).fit_transform(texts)
        sim = (vec @ vec.T).toarray()
    except ValueError:  # nothing but stop words
        sim = np.eye(len(texts))
    n = len(texts)
    central = (sim.sum(axis=1) - 1.0) / max(n - 1, 1)
    rank = central + wrong
    chosen: list[int] = []
    for _ in range(min(k, n)):
        redundancy = sim[:, chosen].max(axis=1) if chosen else np.zeros(n)
        score = np.where(redundancy >= 0.8, -np.inf, rank - redundancy)
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        if not np.isfinite(score[best]):
            break
        chosen.append(best)
    rows = a.iloc[chosen]
    rules = []
    for j, (_, r) in zip(chosen, rows.iterrows(), strict=True):
        lead = "Where the responses were equally good or poor, a reviewer wrote" if str(r["label"]) == "tie" \
            else "A reviewer explained their choice"
        rules.append(f'{lead}: "{texts[j]}"')
    about.update(used=len(chosen), from_mistakes=int(wrong[chosen].sum()),
                 annotations=[{"item_id": str(r["item_id"]), "annotator": str(r["annotator"])}
                              for _, r in rows.iterrows()])
    return rules, about
