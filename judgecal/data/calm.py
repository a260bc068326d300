"""CALM ("Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge", Ye et al., ICLR 2025): its base pairs and
its published rewrites.

Three sets of pairs, each ``answer1`` the chosen (or correct) response and ``answer2`` the rejected one, so the
preference is known (a gold label ``A``, annotator ``calm-chosen``):

- ``alignment`` (``base_datasets/alignment_dataset.json``, 439 DPO pairs), with the authority rewrites
  (``answer{1,2}_with_reference_{book,quote,url}``);
- ``fact`` (``base_datasets/fact_related_dataset.json``, 500 GSM8K / MATH / ScienceQA pairs), with the sentiment
  rewrites (``answer{1,2}_{cheerful,sad,angry,fear}``), the fallacy rewrite of the correct answer
  (``answer1_fallacy_oversight``) and the longer rejected answer (``answer2_longer``);
- ``refinement`` (``base_datasets/refinement_aware_dataset.json``, 150): candidate A is the polished answer
  (``answer1_polished``), B the initial one (``answer1``).

A rewrite is matched to its pair by (question, answer1, answer2) and kept in the item's metadata as
``rewrites[<bias>][<side>][<variant>]`` (side ``A`` / ``B`` in item orientation); the perturbation probes read it
in place of judgecal's template (:func:`judgecal.audit.perturb.perturb`). Records of a rewrite file that match no
pair, rewrites with some variants missing, and pairs whose two responses are the same text are kept or skipped as
said and counted (``LoadedDataset.statistics["calm"]``). A record that is not an object, or lacks a field or has
a non-text one, stops the import with ``file:line: field``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from judgecal.data.loaded import LoadedDataset
from judgecal.data.records import Annotation, Candidate, Item
from judgecal.data.registry import CALM_FILES, CALM_REPO, DatasetError, fetch

NAME = "calm"
REPO = CALM_REPO
BASE = {"alignment": "base_datasets/alignment_dataset.json", "fact": "base_datasets/fact_related_dataset.json",
        "refinement": "base_datasets/refinement_aware_dataset.json"}
# bias -> (file, set, {field: (side, variant)})
REWRITES: dict[str, tuple[str, str, dict[str, tuple[str, str]]]] = {
    "authority": ("bias_datasets/authority_bias_standardized.json", "alignment",
                  {f"answer{k}_with_reference_{v}": ("AB"[k - 1], v) for k in (1, 2) for v in ("book", "quote", "url")}),
    "sentiment": ("bias_datasets/sentiment_bias_standardized.json", "fact",
                  {f"answer{k}_{v}": ("AB"[k - 1], v) for k in (1, 2) for v in ("cheerful", "sad", "angry", "fear")}),
    "fallacy_oversight": ("bias_datasets/fallacy_oversight_bias_standardized.json", "fact",
                          {"answer1_fallacy_oversight": ("A", "fallacy")}),
    "verbosity": ("bias_datasets/verbosity_bias_standardized.json", "fact", {"answer2_longer": ("B", "longer")}),
}
REFINEMENT_FILE = "bias_datasets/refinement_bias_standardized.json"  # the refinement set again, as published
FILES = CALM_FILES  # the registry's list: the base sets, each rewrite file and REFINEMENT_FILE
SETS = tuple(BASE)
GOLD = "calm-chosen"


def records(path: Path) -> list[tuple[int, Any]]:
    """The top-level JSON array of ``path`` as (line where the record starts, record)."""
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: not UTF-8 text ({exc})") from None
    dec = json.JSONDecoder()
    i = len(text) - len(text.lstrip())
    if not text[i:i + 1] == "[":
        raise DatasetError(f"{path}:1: expected a JSON array of records")
    out: list[tuple[int, Any]] = []
    i += 1
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text):
            raise DatasetError(f"{path}:{text.count(chr(10)) + 1}: the array is not closed")
        if text[i] == "]":
            return out
        try:
            rec, end = dec.raw_decode(text, i)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        out.append((text.count("\n", 0, i) + 1, rec))
        i = end


def _field(path: Path, line: int, rec: Any, name: str) -> str:
    if not isinstance(rec, dict):
        raise DatasetError(f"{path}:{line}: expected an object with question, answer1 and answer2")
    if name not in rec:
        raise DatasetError(f"{path}:{line}: {name}: missing")
    value = rec[name]
    if not isinstance(value, str):
        raise DatasetError(f"{path}:{line}: {name}: expected text, got {type(value).__name__}")
    return value


def load_calm(sets: tuple[str, ...] = SETS, offline: bool = False) -> LoadedDataset:
    """The pairs of ``sets`` as items (the chosen response A, a gold label A), the published rewrites in their
    metadata; what was skipped or partial is counted in ``statistics["calm"]``."""
    unknown = [s for s in sets if s not in BASE]
    if unknown:
        raise DatasetError(f"unknown CALM set {unknown[0]!r}; the sets are {', '.join(SETS)}")
    files = fetch(NAME, offline=offline)
    out = LoadedDataset(NAME)
    counts: Counter[str] = Counter()
    for s in dict.fromkeys(sets):
        path = files[BASE[s]]
        by_key: dict[tuple[str, str, str], Item] = {}
        for k, (line, rec) in enumerate(records(path)):
            q = _field(path, line, rec, "question")
            if s == "refinement":
                first, second = _field(path, line, rec, "answer1_polished"), _field(path, line, rec, "answer1")
            else:
                first, second = _field(path, line, rec, "answer1"), _field(path, line, rec, "answer2")
            if first == second:
                counts[f"{s}: pairs whose two responses are the same text (kept)"] += 1
            item_id = f"{NAME}/{s}/{k}"
            item = Item(item_id=item_id, prompt=q, source=f"{NAME}/{s}",
                        candidates=[Candidate(first), Candidate(second)],
                        metadata={"calm_set": s, "index": k, "line": line,
                                  "data_resource": str(rec.get("data_resource", ""))})
            by_key.setdefault((q, rec.get("answer1", ""), rec.get("answer2", "")), item)
            out.items.append(item)
            out.annotations.append(Annotation(item_id=item_id, annotator=GOLD, label="A", shown_order="AB",
                                              source=NAME, annotation_id=f"{item_id}/gold"))  # one source: CALM
        counts[f"{s}: pairs"] = len(by_key)
        for bias, (fname, target, fields) in REWRITES.items():
            if target != s:
                continue
            _attach(files[fname], bias, fields, by_key, counts)
    out.statistics[NAME] = dict(counts)
    return out


def _attach(path: Path, bias: str, fields: dict[str, tuple[str, str]], by_key: dict[tuple[str, str, str], Item],
            counts: Counter[str]) -> None:
    """Put each record's rewrites on the pair it rewrites (matched by question and both answers)."""
    for line, rec in records(path):
        key = (_field(path, line, rec, "question"), _field(path, line, rec, "answer1"),
               _field(path, line, rec, "answer2"))
        item = by_key.get(key)
        if item is None:
            counts[f"{bias}: records matching no pair (skipped)"] += 1
            continue
        got: dict[str, dict[str, str]] = {}
        for name, (side, variant) in fields.items():
            if name in rec:
                got.setdefault(side, {})[variant] = _field(path, line, rec, name)
        if not got:
            counts[f"{bias}: records with no rewrite (skipped)"] += 1
            continue
        if sum(len(v) for v in got.values()) < len(fields):
            counts[f"{bias}: records with some rewrites missing (kept)"] += 1
        item.metadata.setdefault("rewrites", {})[bias] = got
        counts[f"{bias}: pairs with rewrites"] += 1
