"""Deterministic metrics run as judges: ``metric/<name>`` scores items without a model call.

A metric judge is a spec like any other (backend ``metric``, the metric as its model, its settings as
options; ``--judge metric/<name>`` or a spec file with ``backend: metric``), so ``judgecal audit``
audits it beside the LLM judges. Its judgments carry the metric's score,
its raw answer (the figures behind the score, as JSON) and, where the metric points at a stretch of the
text, that stretch as a judge span of the judgment.

- ``metric/keyfacts-token-f1``: for a pointwise item whose ``reference`` is a key fact, the token F1
  of the fact against each unit of the response (its bullets: ``metadata['bullets']`` when the item
  records them, else the response's non-empty lines), the best unit's F1 read as coverage ``full``
  (>= ``full``, default 0.5), ``partial`` (>= ``partial``, default 0.25) or ``none``
  (:mod:`judgecal.stats.keyfacts`); the score is 1 / 0.5 / 0 and the best unit is its span (an
  empty span for ``none``). Items without a reference are skipped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from judgecal.data.records import Item, Judgment, Span, stable_hash
from judgecal.data.store import Workspace
from judgecal.errors import UserError
from judgecal.judges.spec import JudgeSpec, SpecError, load_spec
from judgecal.stats import keyfacts as K

METRICS: dict[str, dict[str, Any]] = {
    "keyfacts-token-f1": {"full": K.DEFAULT_FULL, "partial": K.DEFAULT_PARTIAL, "split": "lines"},
}
COVERAGE_SCORE = {"none": 0.0, "partial": 0.5, "full": 1.0}


class MetricError(UserError, ValueError):
    """An unknown metric or a bad option."""


def metric_request(judge: str) -> tuple[str, dict[str, Any], str] | None:
    """What ``--judge`` asks of a metric: ``metric/<name>``, or a spec file (YAML) whose backend is
    ``metric`` (its ``model`` the metric, its ``options`` the settings, its ``name`` the judge's name);
    ``(metric, options, name)``, or ``None`` for any other judge."""
    if judge.startswith("metric/"):
        return judge.removeprefix("metric/"), {}, ""
    if not judge.endswith((".yaml", ".yml")) or not Path(judge).is_file():
        return None
    try:
        spec = load_spec(judge)
    except SpecError:
        return None  # reported by the ordinary path, with the file and field
    if spec.backend != "metric":
        return None
    raw = yaml.safe_load(Path(judge).read_text("utf-8"))  # read once already by load_spec
    for field in ("rubric", "parameters"):  # a metric calls no model: a model's settings would be ignored
        if field in raw:
            raise MetricError(f"field {field!r}: a metric judge calls no model and takes none; its settings "
                              f"are options ({', '.join(METRICS.get(spec.model, {}))})")
    return spec.model, dict(spec.options), spec.name


def metric_spec(model: str, options: dict[str, Any] | None = None, name: str = "") -> JudgeSpec:
    """The spec of ``metric/<model>`` with ``options`` over the metric's defaults."""
    if model not in METRICS:
        raise MetricError(f"unknown metric {model!r}; known: {', '.join(sorted(METRICS))}")
    opts = {**METRICS[model], **(options or {})}
    for key in opts:
        if key not in METRICS[model]:
            raise MetricError(f"metric {model!r}: unknown option {key!r}; options: {', '.join(METRICS[model])}")
    for key in ("full", "partial"):
        v = opts[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1:
            raise MetricError(f"metric {model!r}: field 'options.{key}' must be a number in [0, 1], got {v!r}")
    if opts["partial"] > opts["full"]:
        raise MetricError(f"metric {model!r}: field 'options.partial' must be at most options.full "
                          f"(0 <= partial <= full <= 1), got {opts['partial']!r} > {opts['full']!r}")
    if opts["split"] not in ("lines", "sentences"):
        raise MetricError(f"metric {model!r}: field 'options.split' must be lines or sentences, got {opts['split']!r}")
    return JudgeSpec(backend="metric", model=model, rubric="", temperature=None, max_tokens=None, logprobs=None,
                     top_logprobs=None, options=tuple(sorted(opts.items())), name=name or f"metric/{model}")


def _units(item: Item, split: str) -> list[tuple[int, int]]:
    """The response's units: the item's recorded bullets (checked against the text), else its lines or
    sentences."""
    if "bullets" not in item.metadata:
        return K.units(item.candidates[0].text, split)
    bullets, size = item.metadata["bullets"], len(item.candidates[0].text)
    if not isinstance(bullets, list):
        raise MetricError(f"item {item.item_id!r}: field 'metadata.bullets' must be a list of [start, end] "
                          f"character offsets into the response, got {bullets!r}")
    for i, b in enumerate(bullets):
        if not (isinstance(b, list) and len(b) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in b)
                and 0 <= b[0] <= b[1] <= size):
            raise MetricError(f"item {item.item_id!r}: field 'metadata.bullets[{i}]' must be [start, end] with "
                              f"0 <= start <= end <= {size} (the response's length), got {b!r}")
    return [(int(s), int(e)) for s, e in bullets]


def keyfacts_judgments(items: Sequence[Item], spec: JudgeSpec) -> tuple[list[Judgment], list[Span], int]:
    """The judgments and spans of ``metric/keyfacts-token-f1`` on ``items``, and how many were skipped
    (not pointwise, or no reference)."""
    opts = dict(spec.options)
    scored = [it for it in items if len(it.candidates) == 1 and it.reference]
    units, group, bounds = [], [], []
    for k, it in enumerate(scored):
        for s, e in _units(it, str(opts["split"])):
            units.append(it.candidates[0].text[s:e])
            group.append(k)
            bounds.append((s, e))
    best, f1 = K.best_units([it.reference or "" for it in scored], np.arange(len(scored)), units, group)
    codes = K.coverage_codes(f1, float(opts["full"]), float(opts["partial"]))
    name, h = spec.base_name, spec.spec_hash
    judgments, spans = [], []
    now = time.time()
    for k, it in enumerate(scored):
        cov = K.COVERAGE[int(codes[k])]
        key = stable_hash({"metric": h, "item": it.item_id}, 32)
        unit = int(best[k])
        raw = json.dumps({"coverage": cov, "token_f1": round(float(f1[k]), 6), "unit": unit if unit >= 0 else None})
        judgments.append(Judgment(key=key, item_id=it.item_id, judge=name, spec_hash=h, raw=raw,
                                  score=COVERAGE_SCORE[cov], status="ok", created_at=now))
        s, e = bounds[unit] if unit >= 0 and cov != "none" else (0, 0)
        spans.append(Span(it.item_id, name, 0, s, e, cov if e > s else "", key, "judge"))
    return judgments, spans, len(items) - len(scored)


def run_metric_judge(ws: Workspace, model: str, items: Sequence[Item], options: dict[str, Any] | None = None,
                     name: str = "") -> dict[str, Any]:
    """Score ``items`` with the metric ``model`` and store its spec, judgments and spans in one transaction
    (a re-run replaces its own judgments: the metric is deterministic)."""
    spec = metric_spec(model, options, name)
    judgments, spans, skipped = keyfacts_judgments(items, spec)
    with ws.transaction() as tx:
        ws.judgments_repo.add_judge_specs([(spec.spec_hash, spec.base_name, spec.to_dict())], conn=tx)
        ws.judgments_repo.add_judgments(judgments, conn=tx, replace=True)
        ws.spans_repo.replace_judge_spans([j.key for j in judgments], spans, conn=tx)
    return {"judge": ws.judgments_repo.judge_names().get((spec.base_name, spec.spec_hash), spec.base_name),
            "spec_hash": spec.spec_hash, "scored": len(judgments), "skipped": skipped}


__all__ = ["METRICS", "MetricError", "keyfacts_judgments", "metric_request", "metric_spec", "run_metric_judge"]
