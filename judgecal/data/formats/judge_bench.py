"""JUDGE-BENCH's common format (Bavaresco et al., ACL 2025): a file of instances with human judgments.

``annotations`` describes each metric: ``metric``, ``category`` (``graded`` or ``categorical``),
``labels_list`` or ``worst``/``best``, and the judging ``prompt``. ``instances``: ``id``, ``instance`` (a
text, or fields such as ``user_prompt``/``query`` and ``response``), and per metric ``majority_human`` or
``mean_human`` with ``individual_human_scores``.

A graded metric whose scores are whole numbers on judgecal's 1-10 scale becomes one pointwise item per
instance (id ``<id>/<metric>``, the metric in ``metadata.metric``) with each person's score as a label
under the source ``judge-bench:human`` (annotators ``rater-1``, ``rater-2``, ... by position), and the
metric's prompt as the rubric text in the metadata. A categorical metric (``labels_list``: yes/no, a
class) becomes one label item per instance and metric (:class:`~judgecal.data.records.LabelSet`, the
metric as its criterion): binary when it has two labels and one of them is a usual positive (``1``,
``Yes``, ``true``, ``pass``, ... as :data:`POSITIVES`), categorical otherwise, each person's label under
the same source; an instance with a majority label only (ToxicChat) keeps it as the label of one rater,
``majority``. A label outside ``labels_list`` drops that instance's metric, counted. The instance's fields
are joined into the item's prompt (all but the response field).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, identity, point_item, read_json_document
from judgecal.data.importers import MAX_TEXT_CHARS, SCORE_RANGE, Problem
from judgecal.data.label_tasks import match, text_of
from judgecal.data.records import LabelSet
from judgecal.data.rows import whole_id

NAME = "judge-bench"
DESCRIPTION = "JUDGE-BENCH files (annotations with category and labels; instances with individual_human_scores)"
HUMANS = "judge-bench:human"
POSITIVES = frozenset({"1", "yes", "true", "pass", "passed", "safe", "correct", "c", "y", "positive", "toxic"})
_RESPONSE_KEYS = ("response", "output", "summary", "generation", "hypothesis", "translation")


def detect(path: Path, head: list[Any]) -> bool:
    return (len(head) == 1 and isinstance(head[0], dict) and isinstance(head[0].get("annotations"), list)
            and isinstance(head[0].get("instances"), list))


def _split(instance: Any) -> tuple[str, str]:
    """(prompt, response) of an instance: the response field, the rest as the prompt."""
    if isinstance(instance, str):
        return "", instance
    if not isinstance(instance, dict) or not all(isinstance(v, str) or v is None for v in instance.values()):
        raise Skip("instance", "must be a text or an object of texts")
    # a null field is an empty one: medical-safety's replies that an assistant never gave are null
    instance = {k: v or "" for k, v in instance.items()}
    key = next((k for k in _RESPONSE_KEYS if k in instance), None)
    if key is None:
        raise Skip("instance", f"has no response field ({', '.join(_RESPONSE_KEYS)})")
    rest = "\n\n".join(f"{k}: {v}" for k, v in instance.items() if k != key)
    return rest, instance[key]


def _whole_scores(scores: list[Any]) -> list[int] | None:
    out = []
    for s in scores:
        x = finite(float(s) if isinstance(s, str) and re.fullmatch(r"\s*-?[0-9]+(\.0*)?\s*", s) else s)
        if x is None or not x.is_integer() or not SCORE_RANGE[0] <= x <= SCORE_RANGE[1]:
            return None
        out.append(int(x))
    return out


def label_set(annotation: dict[str, Any], metric: str) -> LabelSet | None:
    """The label set of a categorical metric (``None`` without a usable ``labels_list``)."""
    labels = annotation.get("labels_list")
    if not isinstance(labels, list) or len(labels) < 2:
        return None
    names = tuple(t for t in (text_of(x) for x in labels) if t)
    if len(names) != len(labels) or len(set(names)) != len(names):
        return None
    positive = next((x for x in names if x.casefold() in POSITIVES), None) if len(names) == 2 else None
    return LabelSet("binary" if positive else "categorical", names, positive, False, metric)


def _categorical(m: Mapped, a: dict[str, Any], metric: str, iid0: Any, prompt: str, response: str,
                 judged: dict[str, Any], scores: list[Any], dataset: str, at: tuple[str, str]) -> None:
    ls = label_set(a, metric)
    if ls is None:
        m.drop(f"{metric}: a categorical metric without two or more distinct labels_list entries")
        return
    given = [(f"rater-{r}", s) for r, s in enumerate(scores, start=1)]
    if not [s for _, s in given if s is not None]:
        given = [("majority", judged.get("majority_human"))]
    labels = [(who, None if s is None else match(s, ls.labels)) for who, s in given]
    if any(got is None and s is not None for (_, s), (_, got) in zip(given, labels, strict=True)):
        m.drop(f"{metric}: instances with a label outside its labels_list")
        return
    if all(got is None for _, got in labels):
        m.drop(f"{metric}: instances without a human label")
        return
    meta = {"metric": metric, "criterion": metric, "record": identity(NAME, str(iid0), ()), "dataset": dataset}
    item = point_item(NAME, iid0, prompt, response, None, meta, criterion=metric)
    iid = item.item_id
    item.label_set = ls.to_dict()
    m.item(item, at[1], (at[0], None))
    for who, got in labels:
        m.label_or_skip(iid, who, got, HUMANS, where=(at[1], None), field=f"annotations.{metric}")


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    doc = read_json_document(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("annotations"), list) or not isinstance(doc.get("instances"), list):
        raise Skip(None, "a JUDGE-BENCH file is an object with the lists annotations and instances")
    metrics: dict[str, dict[str, Any]] = {}
    for k, a in enumerate(doc["annotations"]):
        if not isinstance(a, dict) or not isinstance(a.get("metric"), str) or a.get("category") not in ("graded", "categorical"):
            m.problems.append(Problem(f, None, f"annotations[{k}]", "needs a metric and a category (graded or categorical)"))
            continue
        metrics[a["metric"]] = a
    for k, inst in enumerate(doc["instances"]):
        where = f"instances[{k}]"
        try:
            if not isinstance(inst, dict):
                raise Skip(None, "must be an object")
            iid0 = whole_id(inst.get("id"))
            if isinstance(iid0, bool) or not isinstance(iid0, (str, int)):
                raise Skip("id", "must be a string or an integer")
            prompt, response = _split(inst.get("instance"))
            if len(prompt) > MAX_TEXT_CHARS or len(response) > MAX_TEXT_CHARS:
                raise Skip("instance", f"a text is over the limit of {MAX_TEXT_CHARS:,} characters")
            anns = inst.get("annotations")
            if not isinstance(anns, dict):
                raise Skip("annotations", "must be an object of metric -> judgments")
            for metric, judged in anns.items():
                a = metrics.get(metric)
                if a is None:
                    raise Skip(f"annotations.{metric}", "a metric the file's annotations do not describe")
                if not isinstance(judged, dict):
                    raise Skip(f"annotations.{metric}", "must be an object")
                scores = judged.get("individual_human_scores") or []
                if not isinstance(scores, list):
                    raise Skip(f"annotations.{metric}.individual_human_scores", "must be a list")
                if a["category"] == "categorical":
                    _categorical(m, a, metric, iid0, prompt, response, judged, scores, str(doc.get("dataset", "")),
                                 (f, f"{f}: {where}"))
                    continue
                if not [s for s in scores if s is not None]:
                    m.drop(f"{metric}: instances with a {'mean' if 'mean_human' in judged else 'majority'} "
                           "human score only (no individual scores)")
                    continue
                whole = _whole_scores([s for s in scores if s is not None])
                if whole is None:
                    m.drop(f"{metric}: graded scores that are not whole numbers {SCORE_RANGE[0]}-{SCORE_RANGE[1]} "
                           "(judgecal's pointwise scale)")
                    continue
                meta = {"metric": metric, "dataset": str(doc.get("dataset", ""))}
                item = point_item(NAME, iid0, prompt, response, None, meta, criterion=metric)
                iid = item.item_id
                m.item(item, f"{f}: {where}", (f, None))
                for r, s in enumerate(scores, start=1):
                    if s is None:
                        m.counts["skipped_labels"] += 1
                        continue
                    m.label(iid, f"rater-{r}", str(whole.pop(0)), HUMANS, where=(f"{f}: {where}", None),
                            field=f"annotations.{metric}")
        except Skip as exc:
            m.problems.append(Problem(f, None, f"{where}.{exc.field}" if exc.field else where, str(exc)))
    if not doc["instances"]:
        m.problems.append(Problem(f, None, "instances", "no instances"))
    return m
