"""Model name -> model family, by glob pattern (first match wins); used for self-preference.

``<workspace>/families.yaml`` maps more patterns to families (``my-finetune-*: openai``); they are
tried before the defaults.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

from judgecal.data.yamlfile import ConfigError, read_yaml_as

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


class FamiliesError(ConfigError):
    """A ``families.yaml`` that cannot be read or holds a bad entry: ``file: field: message``."""


MAX_PATTERN_CHARS = 200


def load_families(workspace: Path | None = None) -> tuple[tuple[str, str], ...]:
    """The workspace's ``families.yaml`` patterns, then the defaults. The file is UTF-8 YAML, a mapping
    of non-empty pattern strings to non-empty family names, each key once
    (:func:`judgecal.data.yamlfile.load_yaml`)."""
    path = workspace / "families.yaml" if workspace is not None else None
    if path is None or not path.exists():
        return DEFAULT_FAMILIES
    data = read_yaml_as(path, FamiliesError)
    if data is None:
        return DEFAULT_FAMILIES
    if not isinstance(data, dict):
        raise FamiliesError(f"{path}: expected a mapping of model-name patterns to family names")
    for pattern, family in data.items():
        if not isinstance(pattern, str) or not pattern.strip():
            raise FamiliesError(f"{path}: {pattern!r}: a pattern must be a non-empty string (quote it)")
        if len(pattern) > MAX_PATTERN_CHARS:
            raise FamiliesError(f"{path}: {pattern[:40]!r}...: a pattern is at most {MAX_PATTERN_CHARS} characters")
        if not isinstance(family, str) or not family.strip():
            raise FamiliesError(f"{path}: {pattern}: the family must be a non-empty string, got {family!r}")
        if len(family) > MAX_PATTERN_CHARS:
            raise FamiliesError(f"{path}: {pattern}: a family name is at most {MAX_PATTERN_CHARS} characters")
    return tuple(data.items()) + DEFAULT_FAMILIES
