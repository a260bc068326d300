"""Reading and writing the typed report: :func:`read_report` (an ``audit.json`` of this schema validated, an
earlier one's upgraded), :func:`json_safe`, and the JSON Schema generated from the types (:func:`json_schema`,
:func:`write_schema`)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from judgecal.audit.schema.models import SCHEMA, SCHEMA_FILE, AuditReport
from judgecal.stats.trivial import chance_accuracy, trivial_rater

Z95 = 1.959963984540054


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
        out[key] = _through(ann, out[key], _filled)
    return out


def known_part(model: type[BaseModel], data: Any) -> Any:
    """``data`` with every key that ``model`` (and each part in it, in turn) does not name left out: how a record
    another version of judgecal stored (a gate's, a cascade's) is shown in an audit; the stored file is kept."""
    if not isinstance(data, dict):
        return data
    by_key = {f.alias or name: f.annotation for name, f in model.model_fields.items()}
    keep_rest = model.model_config.get("extra") == "allow"
    return {k: _through(by_key[k], v, known_part) if k in by_key else v for k, v in data.items()
            if k in by_key or keep_rest}


def _parts(ann: Any) -> list[Any]:
    """The alternatives of a union annotation (``X | None``), or the annotation alone."""
    args = get_args(ann)
    return [a for a in args if a is not type(None)] if get_origin(ann) in (Union, UnionType) else [ann]


def _through(ann: Any, value: Any, on_part: Callable[[type[BaseModel], Any], Any]) -> Any:
    """``value``, read as the annotation ``ann`` says, with ``on_part`` applied to each report part in it (a
    mapping typed as a model, however deep in mappings and lists); anything else as it is."""
    for part in _parts(ann):
        if isinstance(part, type) and issubclass(part, BaseModel) and isinstance(value, dict):
            return on_part(part, value)
        if get_origin(part) is dict and isinstance(value, dict):
            return {k: _through(get_args(part)[1], v, on_part) for k, v in value.items()}
        if get_origin(part) is list and isinstance(value, list):
            return [_through(get_args(part)[0], v, on_part) for v in value]
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
    empty, the keys they do not name left out, what it holds is validated as it is."""
    if isinstance(data, AuditReport):
        return data
    clean = with_references(json_safe(data))
    if clean.get("schema") == SCHEMA:
        try:
            return AuditReport.from_json(clean)
        except ValidationError:
            pass  # a part of an audit (a test's, a page's) without every field: upgraded like an earlier one
    # what the types name is read; a key an earlier (or later) judgecal wrote and these types do not name is left
    # out of what the surfaces show (the file keeps it): `judgecal report` refuses such a /2 file, naming the key
    report = AuditReport.from_json(known_part(AuditReport, _filled(AuditReport, {**clean, "schema": SCHEMA})))
    report._upgraded_from = str(clean.get("schema", ""))
    return report


def with_references(data: Any) -> Any:
    """An ``audit.json`` object written before the audit stored the references its figures stand beside, with
    them filled from what it holds (as the audit computes them; a key present is kept): the consensus'
    chance accuracy ``Σ p_k²``, a stability figure's half-width ``1.96 σ``, a label part's trivial rater."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    cons = out.get("consensus")
    if isinstance(cons, dict) and "chance_accuracy" not in cons and isinstance(cons.get("label_counts"), dict):
        out["consensus"] = {**cons, "chance_accuracy": chance_accuracy(cons["label_counts"])}
    judges = out.get("judges")
    if isinstance(judges, dict):
        out["judges"] = {name: _judge_references(j) for name, j in judges.items()}
    return out


def _judge_references(judge: Any) -> Any:
    if not isinstance(judge, dict):
        return judge
    out = {**judge, **({"labels": _label_references(judge["labels"])} if "labels" in judge else {})}
    if isinstance(judge.get("criteria"), dict):
        out["criteria"] = {c: {**p, "labels": _label_references(p["labels"])} if isinstance(p, dict) and "labels" in p
                           else p for c, p in judge["criteria"].items()}
    stab = judge.get("stability")
    if isinstance(stab, dict) and isinstance(stab.get("runs"), list):
        out["stability"] = {**stab, "runs": [_run_references(r) for r in stab["runs"]]}
    return out


def _run_references(run: Any) -> Any:
    figs = run.get("figures") if isinstance(run, dict) else None
    if not isinstance(figs, dict):
        return run
    filled = {k: {**f, "halfwidth_pp": None if not isinstance(f.get("sigma_pp"), int | float) else Z95 * f["sigma_pp"]}
              if isinstance(f, dict) and "halfwidth_pp" not in f else f for k, f in figs.items()}
    return {**run, "figures": filled}


def _label_references(labels: Any) -> Any:
    """A label part with its trivial raters: from the confusion's row totals, and on the like-for-like basis
    (each label's recall ``n`` of the judge's side)."""
    if not isinstance(labels, dict) or not labels.get("labels"):
        return labels
    names = [str(x) for x in labels["labels"]]
    task, pos = labels.get("task"), labels.get("positive")
    pos = None if pos is None else str(pos)
    out = dict(labels)
    if "trivial" not in out:
        conf = out.get("confusion")
        counts = conf.get("counts") if isinstance(conf, dict) else None
        totals = [sum(int(c) for c in row) for row in counts or []]
        out["trivial"] = trivial_rater(names, totals, task, pos)
    like = out.get("like_for_like")
    if isinstance(like, dict) and like and "trivial" not in like:
        side = like.get("judge")
        recall = side.get("recall_by_label") if isinstance(side, dict) else None
        recall = recall if isinstance(recall, dict) else {}
        totals = [int((recall.get(x) or {}).get("n") or 0) for x in names]
        out["like_for_like"] = {**like, "trivial": trivial_rater(names, totals, task, pos)}
    return out


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
