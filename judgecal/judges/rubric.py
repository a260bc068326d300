"""Rubrics: YAML prompt templates that render an item's candidates in a given order."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from judgecal.data.records import Item, stable_hash


class RubricError(ValueError):
    """A rubric file that is missing, unreadable or lacks a field."""


@dataclass(frozen=True)
class Rubric:
    name: str
    kind: str
    system: str
    template: str
    labels: tuple[str, ...] = ("A", "B", "tie")
    scale_min: int = 1
    scale_max: int = 5
    version: str = ""

    def messages(self, item: Item, order: str = "AB") -> list[dict[str, str]]:
        """Chat messages for ``item`` with its candidates shown in ``order`` (``AB`` or ``BA``)."""
        cands = item.candidates
        if self.kind == "pairwise":
            if len(cands) != 2:
                raise RubricError(f"rubric {self.name} needs 2 candidates, item {item.item_id} has {len(cands)}")
            first, second = (cands[0], cands[1]) if order == "AB" else (cands[1], cands[0])
            fields = {"first": first.text, "second": second.text}
        else:
            fields = {"first": cands[0].text, "second": ""}
        fields.update(prompt=item.prompt, reference=item.reference or "")
        user = self.template.format_map(fields)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def _from_dict(d: dict[str, Any], origin: str) -> Rubric:
    for key in ("name", "kind", "system", "template"):
        if key not in d:
            raise RubricError(f"{origin}: missing field {key!r}")
    if d["kind"] not in ("pairwise", "pointwise"):
        raise RubricError(f"{origin}: kind must be pairwise or pointwise, got {d['kind']!r}")
    scale = d.get("scale") or {}
    return Rubric(
        name=d["name"], kind=d["kind"], system=d["system"].strip(), template=d["template"],
        labels=tuple(d.get("labels", ("A", "B", "tie"))), scale_min=int(scale.get("min", 1)),
        scale_max=int(scale.get("max", 5)), version=stable_hash(d, 12),
    )


def builtin_names() -> list[str]:
    pkg = resources.files("judgecal.rubrics")
    return sorted(p.name[:-5] for p in pkg.iterdir() if p.name.endswith(".yaml"))


def load_rubric(name_or_path: str) -> Rubric:
    """A built-in rubric by name (``pairwise``, ``pointwise-5`` ...) or a YAML file path."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.exists():
        text, origin = p.read_text("utf-8"), str(p)
    else:
        res = resources.files("judgecal.rubrics").joinpath(f"{name_or_path}.yaml")
        if not res.is_file():
            raise RubricError(f"unknown rubric {name_or_path!r}; built-in: {', '.join(builtin_names())}")
        text, origin = res.read_text("utf-8"), f"rubrics/{name_or_path}.yaml"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RubricError(f"{origin}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise RubricError(f"{origin}: a rubric is a mapping")
    return _from_dict(data, origin)
