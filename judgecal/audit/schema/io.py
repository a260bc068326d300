"""Reading and writing the typed report: :func:`read_report` (an ``audit.json`` of this schema validated, an
earlier one's upgraded), :func:`json_safe`, and the JSON Schema generated from the types (:func:`json_schema`,
:func:`write_schema`)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from judgecal.audit.schema.models import SCHEMA, SCHEMA_FILE, AuditReport


def _filled(model: type[BaseModel], data: Any) -> Any:
    """``data`` with each field ``model`` requires and ``data`` lacks set to an empty value of its type
    (``None`` where it may be null, else ``""``, ``0``, ``[]``, ``{}``, a literal's first value, a nested part
    filled the same way), and the
    parts present filled in turn; what ``data`` holds is kept as it is."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, field in model.model_fields.items():
        key = field.alias or name
        ann = field.annotation
        if key not in out:
            if field.is_required():
                out[key] = _empty(ann)
            continue
        out[key] = _fill_value(ann, out[key])
    return out


def _parts(ann: Any) -> list[Any]:
    """The alternatives of a union annotation (``X | None``), or the annotation alone."""
    args = get_args(ann)
    return [a for a in args if a is not type(None)] if get_origin(ann) in (Union, UnionType) else [ann]


def _fill_value(ann: Any, value: Any) -> Any:
    for part in _parts(ann):
        if isinstance(part, type) and issubclass(part, BaseModel) and isinstance(value, dict):
            return _filled(part, value)
        if get_origin(part) is dict and isinstance(value, dict):
            inner = get_args(part)[1]
            return {k: _fill_value(inner, v) for k, v in value.items()}
        if get_origin(part) is list and isinstance(value, list):
            inner = get_args(part)[0]
            return [_fill_value(inner, v) for v in value]
    return value


def _empty(ann: Any) -> Any:
    if type(None) in get_args(ann):
        return None  # a figure's estimate that may be undefined: undefined
    part = _parts(ann)[0]
    origin = get_origin(part)
    if origin is Literal:
        return get_args(part)[0]
    if isinstance(part, type) and issubclass(part, BaseModel):
        return _filled(part, {})
    return {dict: {}, list: []}.get(origin) if origin else {str: "", int: 0, float: 0.0}.get(part)


def read_report(data: AuditReport | dict[str, Any]) -> AuditReport:
    """The typed report a surface reads: an :class:`AuditReport` as it is; ``audit.json``'s object of this
    schema validated (a :class:`pydantic.ValidationError` names the bad field); an earlier schema's
    (``judgecal.audit/1``) or a part of one upgraded: the fields the types require and it lacks are set
    empty, what it holds is validated as it is."""
    if isinstance(data, AuditReport):
        return data
    clean = json_safe(data)
    if clean.get("schema") == SCHEMA:
        try:
            return AuditReport.from_json(clean)
        except ValidationError:
            pass  # a part of an audit (a test's, a page's) without every field: upgraded like an earlier one
    report = AuditReport.from_json(_filled(AuditReport, {**clean, "schema": SCHEMA}))
    report._upgraded_from = str(clean.get("schema", ""))
    return report


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
