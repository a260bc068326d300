"""What a dataset loader returns (:class:`LoadedDataset`: items, human annotations, recorded verdicts) and the
helpers every loader shares."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from judgecal.data.records import Annotation, Item, Judgment, stable_hash
from judgecal.data.registry import DatasetError


@dataclass
class LoadedDataset:
    name: str
    items: list[Item] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    statistics: dict[str, dict[str, object]] = field(default_factory=dict)


def replay_judgment(
    judge: str, item_id: str, verdict: str | None, raw: str, *, order: str = "AB", sample: int = 0,
    score: float | None = None, source: str = "",
) -> Judgment:
    """A recorded verdict as a Judgment; the key is the hash of (judge, item, order, sample).

    Its spec is the recorded judge's (backend ``replay``, no parameters): one judge across the
    dataset's subsets."""
    from judgecal.data.specs import JudgeSpec

    spec = JudgeSpec.replay(judge).spec_hash
    status = "invalid" if verdict == "invalid" or (verdict is None and score is None) else "ok"
    return Judgment(
        key=stable_hash({"replay": judge, "item": item_id, "order": order, "sample": sample}, 32),
        item_id=item_id, judge=judge, spec_hash=spec, order=order, sample=sample, raw=raw,
        verdict="invalid" if status == "invalid" and score is None else verdict, score=score,
        status=status, prompt_tokens=None, completion_tokens=None, latency_s=None, cost_usd=None,
    )


def _text(value: object) -> str:
    """A response as text; JSON literals (``true``, numbers) become what the generator wrote."""
    if isinstance(value, bool):
        return "True" if value else "False"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None
