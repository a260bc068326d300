"""Registered datasets with spans: FaithBench (hallucination spans) and Summary of a Haystack (key facts).

- ``faithbench``: one pointwise item per summary (the article is the prompt, the summary the one
  candidate, its summarizer the model). Each annotation becomes a human span (label kept: the most
  severe of its labels; the annotator's labels and note, as a JSON list, in ``note``). The eight detectors'
  summary-level predictions become replay judges ``replay/faithbench/<detector>`` whose ``score`` is
  the predicted probability (or 0/1 decision) that the summary is *consistent*. The authors'
  binarisation (``scripts/binarize.py``: worst label of all annotations; Questionable and Unwanted*
  count as hallucinated) is kept in ``metadata['hallucinated']``. The release does not say who read a
  summary without marking it, so an item's raters are those who marked something on it.
- ``summary-of-a-haystack``: one pointwise item per (summary, reference insight): the summary's
  bullets joined by newlines are the candidate, the insight is the reference (the key fact), the
  bullets' character spans are in ``metadata['bullets']``. The person's coverage label is an
  annotation (``full`` / ``partial`` / ``none``) and the bullet they linked is a human span (an empty
  span when they linked none). Each of the six LLM judges is ``replay/summhay/<model>`` with score
  1 / 0.5 / 0 and its linked bullets (``bullet_id - 1`` is the bullet index) as judge spans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgecal.data.datasets import LoadedDataset, replay_judgment
from judgecal.data.families import family_of
from judgecal.data.records import Annotation, Candidate, Item, Span
from judgecal.data.registry import FAITHBENCH_BATCHES, DatasetError, fetch

SPAN_DATASETS: tuple[str, ...] = ("faithbench", "summary-of-a-haystack")

FAITHBENCH_DETECTORS: tuple[str, ...] = ("hhemv1", "hhem-2.1", "hhem-2.1-english", "trueteacher", "true_nli",
                                         "gpt-3.5-turbo", "gpt-4-turbo", "gpt_4o")
# scripts/binarize.py: severity of each label; the sample's label is the worst; these count as hallucinated.
FAITHBENCH_SEVERITY = {"Benign": 1, "Questionable": 2, "Unwanted": 3, "Unwanted.Intrinsic": 3, "Unwanted.Extrinsic": 3}
FAITHBENCH_HALLUCINATED = frozenset({"Questionable", "Unwanted", "Unwanted.Intrinsic", "Unwanted.Extrinsic"})

SUMMHAY_COVERAGE = {"fully_covered": "full", "partially_covered": "partial", "not_covered": "none",
                    "full_coverage": "full", "partial_coverage": "partial", "no_coverage": "none"}
COVERAGE_SCORE = {"full": 1.0, "partial": 0.5, "none": 0.0}


@dataclass
class SpanDataset(LoadedDataset):
    """A loaded dataset that also carries spans."""

    spans: list[Span] = field(default_factory=list)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: not valid JSON ({exc})") from None


def faithbench_label(labels: list[str]) -> str:
    """The most severe label of one annotation (``Unwanted.Intrinsic`` over ``Unwanted`` when it is the
    only specific one); ``""`` when the annotator gave none."""
    known = [x for x in labels if x in FAITHBENCH_SEVERITY]
    if not known:
        return ""
    worst = max(FAITHBENCH_SEVERITY[x] for x in known)
    top = sorted({x for x in known if FAITHBENCH_SEVERITY[x] == worst})
    specific = [x for x in top if x.startswith("Unwanted.")]
    return specific[0] if len(specific) == 1 else ("Unwanted" if worst == 3 else top[0])


def faithbench_hallucinated(labels: list[list[str]]) -> bool:
    """The authors' binarisation ("worst" aggregation): hallucinated when the worst label of all the
    summary's annotations is Questionable or Unwanted*; consistent when Benign or unannotated."""
    flat = [x for lab in labels for x in lab if x in FAITHBENCH_SEVERITY]
    if not flat:
        return False
    return max(FAITHBENCH_SEVERITY[x] for x in flat) >= min(FAITHBENCH_SEVERITY[x] for x in FAITHBENCH_HALLUCINATED)


def load_faithbench(offline: bool = False) -> SpanDataset:
    files = fetch("faithbench", offline=offline)
    out = SpanDataset("faithbench")
    ids: dict[str, str] = {}  # rater name (a short prefix of the annotator id) -> the full id
    for b in FAITHBENCH_BATCHES:
        path = files[f"data_for_release/batch_{b}.json"]
        data = _read(path)
        samples = data.get("samples") if isinstance(data, dict) else None
        if not isinstance(samples, list):
            raise DatasetError(f"{path}: expected an object with a 'samples' list")
        for n, s in enumerate(samples):
            item_id = f"faithbench/{b}/{s['sample_id']}"
            summary, meta = str(s["summary"]), s.get("metadata") or {}
            model = meta.get("summarizer")
            anns = s.get("annotations") or []
            out.items.append(Item(
                item_id=item_id, prompt=str(s["source"]), task="pointwise", source="faithbench",
                candidates=[Candidate(summary, model, family_of(model))],
                metadata={"batch": b, "sample_id": s["sample_id"], "raw_sample_id": meta.get("raw_sample_id"),
                          "hallucinated": faithbench_hallucinated([a.get("label") or [] for a in anns])},
            ))
            notes: dict[tuple[str, int, int, str], list[dict[str, Any]]] = {}
            for k, a in enumerate(anns):
                start, end = a.get("summary_start"), a.get("summary_end")
                where = f"{path}: samples[{n}].annotations[{k}]"
                if not (isinstance(start, int) and isinstance(end, int) and 0 <= start <= end <= len(summary)):
                    raise DatasetError(f"{where}.summary_start: [{start}, {end}] is not a span of the summary")
                if summary[start:end] != a.get("summary_span"):
                    raise DatasetError(f"{where}.summary_span: does not match summary[{start}:{end}]")
                labels = a.get("label") or []
                rater = f"faithbench/{str(a['annotator_id'])[:8]}"
                if ids.setdefault(rater, str(a["annotator_id"])) != str(a["annotator_id"]):
                    raise DatasetError(f"{where}.annotator_id: two annotators share the prefix {rater}")
                key = (rater, start, end, faithbench_label(labels))
                notes.setdefault(key, []).append({"labels": labels, "note": a.get("note")})
            # an annotator who marked the same stretch twice with the same label (the release has two
            # such pairs): one span, both notes kept
            out.spans.extend(Span(item_id, r, 0, st, en, lab, "faithbench", "human",
                                  note=json.dumps(ns, ensure_ascii=False)) for (r, st, en, lab), ns in notes.items())
            for det in FAITHBENCH_DETECTORS:
                v = meta.get(det)
                score = float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
                out.judgments.append(replay_judgment(f"replay/faithbench/{det}", item_id, None, json.dumps(v),
                                                     score=score, source="faithbench"))
    return out


def _summhay_judge(key: str) -> str:
    prompt, model = key.removeprefix("predictions_").split("_", 1)
    return f"replay/summhay/{model}" + ("" if prompt == "prompted" else f"-{prompt}")


def load_summhay(offline: bool = False) -> SpanDataset:
    name = "summary-of-a-haystack"
    path = fetch(name, offline=offline)["data/eval_benchmark_data.json"]
    rows = _read(path)
    if not isinstance(rows, list):
        raise DatasetError(f"{path}: expected a list of summaries")
    out = SpanDataset(name)
    for n, r in enumerate(rows):
        bullets = [str(x) for x in r["summary"]]
        text = "\n".join(bullets)
        bounds, pos = [], 0
        for bl in bullets:
            bounds.append([pos, pos + len(bl)])
            pos += len(bl) + 1
        model = r["summkey"].rsplit("_", 1)[-1]
        human = {a["insight_id"]: a for a in r["annotation"]}
        preds = {k: {p["insight_id"]: p for p in r[k]} for k in r if k.startswith("predictions_")}
        for ins in r["reference_insights"]:
            iid = ins["insight_id"]
            item_id = f"summhay/{n}/{iid}"
            where = f"{path}: [{n}]"
            out.items.append(Item(
                item_id=item_id, prompt=str(r["subtopic"]), task="pointwise", reference=str(ins["insight"]),
                source=name, candidates=[Candidate(text, model, family_of(model))],
                metadata={"summary": n, "summkey": r["summkey"], "subtopic_id": r["subtopic_id"], "topic": r["topic"],
                          "insight_id": iid, "insight_name": ins.get("insight_name"), "query": ins.get("query"),
                          "bullets": bounds},
            ))
            h = human.get(iid)
            if h is None or h["coverage"] not in SUMMHAY_COVERAGE:
                raise DatasetError(f"{where}.annotation: insight {iid} has no known coverage label")
            cov = SUMMHAY_COVERAGE[h["coverage"]]
            out.annotations.append(Annotation(item_id, "summhay/annotator", cov, None, None, name, f"{item_id}/human"))
            link = h.get("candidate_id")
            out.spans.extend(_bullet_spans(item_id, "summhay/annotator", "human", cov, name, bounds,
                                           [] if link == "no_selection" else [int(link)], f"{where}.annotation"))
            for key, by_insight in preds.items():
                judge = _summhay_judge(key)
                p = by_insight.get(iid)
                label = SUMMHAY_COVERAGE.get(str(p.get("coverage")).lower()) if p else None
                raw = json.dumps(p, ensure_ascii=False)
                out.judgments.append(replay_judgment(judge, item_id, None, raw, source=name,
                                                     score=COVERAGE_SCORE[label] if label else None))
                b = p.get("bullet_id") if p else None
                ids = [x - 1 for x in (b if isinstance(b, list) else [b]) if isinstance(x, int)]
                out.spans.extend(_bullet_spans(item_id, judge, "judge", label or "", name, bounds, ids, f"{where}.{key}"))
    return out


def _bullet_spans(item_id: str, rater: str, kind: str, label: str, source: str, bounds: list[list[int]],
                  idx: list[int], where: str) -> list[Span]:
    """The linked bullets as spans; one empty span when none is linked."""
    if not idx:
        return [Span(item_id, rater, 0, 0, 0, "", source, kind)]
    out = []
    for i in dict.fromkeys(idx):
        if not 0 <= i < len(bounds):
            raise DatasetError(f"{where}: bullet {i} of a {len(bounds)}-bullet summary does not exist")
        out.append(Span(item_id, rater, 0, bounds[i][0], bounds[i][1], label, source, kind))
    return out


def load_span_dataset(name: str, offline: bool = False) -> SpanDataset:
    if name == "faithbench":
        return load_faithbench(offline)
    if name == "summary-of-a-haystack":
        return load_summhay(offline)
    raise DatasetError(f"{name!r} is not a span dataset; span datasets: {', '.join(SPAN_DATASETS)}")


__all__ = ["SPAN_DATASETS", "SpanDataset", "faithbench_hallucinated", "faithbench_label", "load_faithbench",
           "load_span_dataset", "load_summhay"]
