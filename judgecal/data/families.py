"""Model name -> model family, by glob pattern (first match wins); used for self-preference."""

from __future__ import annotations

from fnmatch import fnmatch

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
