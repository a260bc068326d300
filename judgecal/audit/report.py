"""The audit's typed report: what ``audit.json`` (schema ``judgecal.audit/2``) holds, as pydantic models.

:func:`judgecal.audit.pipeline.audit_workspace` returns an :class:`AuditReport`; ``audit.json`` is its
:meth:`AuditReport.to_json`, and the JSON Schema shipped beside this module (``audit.schema.json``,
:func:`json_schema`) is generated from these types, so the file, the schema and the code cannot drift
apart (a test regenerates it and compares). The parts every surface reads are typed here: the settings,
the truth, each judge's counts, figures (:class:`Figure`), flags, verdict with its structured reasons
(:class:`Verdict`, :class:`Reason`), its item-by-item breakdown, and the comparisons of judges. The
sections a probe or an analysis adds (``position``, ``labels``, ``pointwise``, ``stability``, ...) are
kept as they are written, as extra fields, and described in docs/reference/audit-json.md.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA = "judgecal.audit/2"
SCHEMA_FILE = Path(__file__).with_name("audit.schema.json")
Status = Literal["aligned", "caution", "not aligned"]


class _Open(BaseModel):
    """A part of the report whose own fields are typed and whose sections beyond them are kept as written."""

    model_config = ConfigDict(extra="allow")


class Figure(_Open):
    """One figure: estimate, interval, sample size; for a test, its null, p, BH q and minimum detectable effect."""

    estimate: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | float | None = None
    null_value: float | None = None
    p: float | None = None
    q: float | None = None
    mde: float | None = None


class Reason(_Open):
    """One reason of a verdict: how serious, which rule (``code``), which figure, and the sentence."""

    severity: Status
    code: str
    metric: str | None = None
    text: str


class Verdict(_Open):
    """A judge's verdict: its status, its reasons most serious first (sentences and structured), and what
    was not tested."""

    status: Status
    reasons: list[str]
    details: list[Reason] = Field(default_factory=list)
    not_tested: list[str] = Field(default_factory=list)
    not_tested_probes: list[str] = Field(default_factory=list)


class GroupAccuracy(_Open):
    """A judge's accuracy on one group of items (a category, a candidate model), with Wilson's interval."""

    value: str
    n: int
    accuracy: Figure


class Breakdown(_Open):
    """A judge of pairs item by item: the confusion with the humans (rows ``humans``, columns ``judge``)
    and its accuracy by category and by candidate model."""

    n_items: int
    humans: list[str]
    judge: list[str]
    confusion: list[list[int]]
    by_category: list[GroupAccuracy]
    by_model: list[GroupAccuracy]
    interval: str


class Comparison(_Open):
    """Accuracy of judge X minus judge Y on the items both judged, with its paired bootstrap interval."""

    x: str
    y: str
    n_items: int
    accuracy_x: float | None = None
    accuracy_y: float | None = None
    difference: Figure | None = None
    p: float | None = None
    significant: bool | None = None


class Comparisons(_Open):
    """Every two judges of pairs compared (a pair once, X before Y by name), from one shared bootstrap."""

    pairs: list[Comparison]
    method: str | None = None
    n_boot: int | None = None
    note: str | None = None


class Judge(_Open):
    """One judge: what it judged, its figures (:class:`Figure` by metric name), flags, verdict, breakdown."""

    kind: Literal["pairwise", "pointwise"]
    n_judgments: int
    n_items: int
    n_items_with_consensus: int
    orders: list[str]
    metrics: dict[str, Figure]
    usage: dict[str, Any]
    flags: list[str]
    verdict: Verdict | None = None
    breakdown: Breakdown | None = None


class Settings(_Open):
    """How the audit was computed: the truth, how an unreadable answer counts, the bootstrap, the tests."""

    consensus: str
    truth_source: str | None
    invalid_as: str
    n_boot: int
    seed: int
    ci_level: float
    bootstrap: str
    effect_of_interest: float | None = None
    multiple_testing: str | None = None
    alpha: float | None = None
    thresholds: dict[str, Any] | None = None


class Truth(_Open):
    """The consensus the judges were read against: its method and source, its annotators and labels."""

    method: str
    aggregator: str | None = None
    source: str | None = None


class AuditReport(_Open):
    """The whole audit (``audit.json``)."""

    schema_: Literal["judgecal.audit/2"] = Field("judgecal.audit/2", alias="schema")
    judgecal_version: str
    generated_at: str
    settings: Settings
    consensus: Truth
    judges: dict[str, Judge]
    comparisons: Comparisons | None = None
    models: dict[str, Any] | None = None
    humans: dict[str, Any] | None = None
    annotators: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditReport:
        """The report from ``audit.json``'s object (a :class:`pydantic.ValidationError` names the bad field)."""
        return cls.model_validate(data)

    def to_json(self) -> dict[str, Any]:
        """``audit.json``'s object: every field as it was set, nothing added (typed fields first, then the
        sections kept as written)."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def json_safe(obj: Any) -> Any:
    """NaN and infinities (undefined statistics) become ``null``; numpy scalars become Python numbers."""
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``audit.json``, generated from :class:`AuditReport`."""
    schema = AuditReport.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://judgecal.dev/schemas/audit-2.json"
    return schema


def write_schema(path: Path = SCHEMA_FILE) -> Path:
    """Write :func:`json_schema` (the file shipped with the package); returns its path."""
    path.write_text(json.dumps(json_schema(), indent=1, ensure_ascii=False) + "\n", "utf-8")
    return path


if __name__ == "__main__":  # python -m judgecal.audit.report: regenerate audit.schema.json
    print(write_schema())
