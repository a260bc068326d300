"""Model name -> model family, by glob pattern (first match wins); used for self-preference.

``<workspace>/families.yaml`` maps more patterns to families (``my-finetune-*: openai``); they are
tried before the defaults.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import yaml

DEFAULT_FAMILIES: tuple[tuple[str, str], ...] = (
    ("gpt-*", "openai"),
    ("chatgpt*", "openai"),
    ("o1*", "openai"),
    ("claude*", "anthropic"),
    ("llama*", "meta"),
    ("opt-*", "meta"),
    ("pandalm*", "meta"),
    ("bloom*", "bigscience"),
    ("pythia*", "eleutherai"),
    ("cerebras*", "cerebras"),
    ("palm*", "google"),
    ("gemini*", "google"),
    ("falcon*", "tii"),
    ("mistral*", "mistral"),
    ("qwen*", "alibaba"),
    ("smollm*", "huggingface"),
)


def family_of(model: str | None, table: tuple[tuple[str, str], ...] = DEFAULT_FAMILIES) -> str | None:
    """The family of ``model`` by the first matching pattern (case-insensitive), else ``None``."""
    if not model:
        return None
    name = model.lower().split("/")[-1]
    for pattern, family in table:
        if fnmatch(name, pattern.lower()):
            return family
    return None


class FamiliesError(ValueError):
    pass


def load_families(workspace: Path | None = None) -> tuple[tuple[str, str], ...]:
    """The workspace's ``families.yaml`` patterns, then the defaults."""
    path = workspace / "families.yaml" if workspace is not None else None
    if path is None or not path.exists():
        return DEFAULT_FAMILIES
    try:
        data = yaml.safe_load(path.read_text("utf-8")) or {}
    except yaml.YAMLError as exc:
        raise FamiliesError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise FamiliesError(f"{path}: expected a mapping of model-name patterns to family names")
    return tuple(data.items()) + DEFAULT_FAMILIES
