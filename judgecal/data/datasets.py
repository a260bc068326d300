"""Loaders that turn registered datasets into Items, human Annotations and replay Judgments.

Replay judgments keep the recorded raw text; verdicts are mapped to item orientation.
PandaLM's unparsable GPT-3.5 outputs (``"garbage"``) become recorded ``invalid`` verdicts.
"""

from __future__ import annotations

import json
import re

from judgecal.data.evalbiasbench import load_evalbiasbench
from judgecal.data.families import family_of
from judgecal.data.loaded import LoadedDataset, _read_json, _text, replay_judgment
from judgecal.data.records import Annotation, Candidate, Item
from judgecal.data.registry import COMMITS, LLMBAR_SUBSETS, DatasetError, fetch, llmbar_evaluators

PANDALM_LABELS = {0: "tie", 1: "A", 2: "B"}
PANDALM_GPT = {"1": "A", "2": "B", "Tie": "tie"}


def load_pandalm(offline: bool = False) -> LoadedDataset:
    files = fetch("pandalm", offline=offline)
    raw = _read_json(files["data/testset-v1.json"])
    assert isinstance(raw, list)
    out = LoadedDataset("pandalm")
    for row in raw:
        idx = int(row["idx"])
        item_id = f"pandalm/{idx}"
        m1, m2 = row["cmp_key"].split("_", 1)
        prompt = str(row["instruction"]) + (f"\n\n{row['input']}" if row.get("input") else "")
        # a few responses are the JSON literal true (the generator wrote "True"): keep them as text
        r1, r2 = _text(row["response1"]), _text(row["response2"])
        out.items.append(Item(
            item_id=item_id, prompt=prompt, source="pandalm",
            candidates=[Candidate(r1, m1, family_of(m1)), Candidate(r2, m2, family_of(m2))],
            metadata={"idx": idx, "motivation_app": row.get("motivation_app"), "cmp_key": row["cmp_key"]},
        ))
        for a in (1, 2, 3):
            out.annotations.append(Annotation(
                item_id=item_id, annotator=f"pandalm-annotator{a}", label=PANDALM_LABELS[int(row[f"annotator{a}"])],
                shown_order="AB", source="pandalm", annotation_id=f"pandalm/{idx}/{a}",
            ))
    for fname, judge, key in (
        ("data/gpt-3.5-turbo-testset-v1.json", "replay/pandalm/gpt-3.5-turbo", "gpt"),
        ("data/pandalm-7b-testset-v1.json", "replay/pandalm/pandalm-7b", "pandalm"),
    ):
        rows = _read_json(files[fname])
        assert isinstance(rows, list)
        for r in rows:
            result = r[f"{key}_result"]
            verdict = PANDALM_GPT.get(str(result)) if key == "gpt" else PANDALM_LABELS.get(int(result))
            text = f"{result}\n{r.get(f'{key}_reason', '')}"
            out.judgments.append(replay_judgment(judge, f"pandalm/{r['idx']}", verdict or "invalid", text, source="pandalm"))
    return out


def _winner(res: dict[str, object]) -> str:
    w = res.get("winner")
    return {"1": "A", "2": "B"}.get(str(w), "invalid")


def _completion(res: dict[str, object]) -> str:
    c = res.get("completion")
    if isinstance(c, list) and c:
        return str(c[0])
    return json.dumps(res, ensure_ascii=False)


def load_llmbar(name: str, offline: bool = False) -> LoadedDataset:
    """LLMBar subset ``name`` (e.g. ``llmbar/Natural``): items, gold label, every evaluator x strategy.

    ``result.json`` holds, per item, a list whose last dict with a ``"swap = False"`` key carries
    the final winner of each presentation order (``"1"``/``"2"``, already in item orientation).
    """
    if name not in LLMBAR_SUBSETS:
        raise DatasetError(f"unknown LLMBar subset {name!r}; known: {', '.join(LLMBAR_SUBSETS)}")
    root = LLMBAR_SUBSETS[name]
    files = fetch(name, offline=offline)
    data = _read_json(files[f"{root}/dataset.json"])
    assert isinstance(data, list)
    out = LoadedDataset(name)
    for i, row in enumerate(data):
        item_id = f"{name}/{i}"
        out.items.append(Item(
            item_id=item_id, prompt=_text(row["input"]), source=name,
            candidates=[Candidate(_text(row["output_1"])), Candidate(_text(row["output_2"]))],
            metadata={"index": i},
        ))
        out.annotations.append(Annotation(
            item_id=item_id, annotator="llmbar-gold", label={1: "A", 2: "B"}[int(row["label"])],
            shown_order="AB", source=name, annotation_id=f"{item_id}/gold",
        ))
    for ev, strategies in llmbar_evaluators(name).items():
        for st in strategies:
            path = files.get(f"{root}/evaluators/{ev}/{st}/result.json")
            if path is None:
                continue
            judge = f"replay/llmbar/{ev}/{st}"
            results = _read_json(path)
            assert isinstance(results, list)
            for i, row in enumerate(results):
                final = [e for e in row["results"] if isinstance(e, dict) and "swap = False" in e][-1]
                for order, k in (("AB", "swap = False"), ("BA", "swap = True")):
                    out.judgments.append(replay_judgment(
                        judge, f"{name}/{i}", _winner(final[k]), _completion(final[k]), order=order, source=name,
                    ))
            stats_path = files.get(f"{root}/evaluators/{ev}/{st}/statistics.json")
            if stats_path is not None:
                stats = _read_json(stats_path)
                assert isinstance(stats, dict)
                out.statistics[judge] = stats
    return out


_RESPONSE = re.compile(r"###Response to evaluate:\n(.*?)\n\n###Reference Answer[^\n]*:\n(.*?)\n\n###Score Rubrics", re.S)


def load_prometheus_mtbench(offline: bool = False) -> LoadedDataset:
    """Prometheus' MT-Bench set: pointwise items, GPT-4's three independent 1-5 scores as samples."""
    files = fetch("prometheus/mt-bench", offline=offline)
    rows = _read_json(files["eval/benchmark/data/mt_bench_eval.json"])
    assert isinstance(rows, list)
    out = LoadedDataset("prometheus/mt-bench")
    for n, row in enumerate(rows):
        item_id = f"prometheus/mt-bench/{n}"
        m = _RESPONSE.search(row["instruction"])
        response, reference = (m.group(1), m.group(2)) if m else (row["instruction"], None)
        model = row.get("response_source")
        out.items.append(Item(
            item_id=item_id, prompt=row["instruction"], task="pointwise", reference=reference,
            candidates=[Candidate(response, model, family_of(model))], source="prometheus/mt-bench",
            metadata={"idx": row.get("idx"), "category": row.get("category")},
        ))
        feedback = row.get("gpt4_feedback")
        fb = json.loads(feedback) if isinstance(feedback, str) and feedback.startswith("[") else feedback
        for s, score in enumerate(row["gpt4_score"]):
            raw = fb[s] if isinstance(fb, list) and s < len(fb) else str(score)
            out.judgments.append(replay_judgment(
                "replay/prometheus/gpt-4", item_id, None, str(raw), sample=s, score=float(score),
                source="prometheus/mt-bench",
            ))
    return out


def load(name: str, offline: bool = False, sets: tuple[str, ...] | None = None) -> LoadedDataset:
    """Load any registered dataset by name (``sets``: CALM's sets, all by default)."""
    if name == "calm":
        from judgecal.data.calm import SETS, load_calm

        return load_calm(sets or SETS, offline)
    if name == "pandalm":
        return load_pandalm(offline)
    if name == "prometheus/mt-bench":
        return load_prometheus_mtbench(offline)
    if name in LLMBAR_SUBSETS:
        return load_llmbar(name, offline)
    if name == "evalbiasbench":
        return load_evalbiasbench(offline)
    raise DatasetError(f"unknown dataset {name!r}; `judgecal datasets list` shows the names")


__all__ = ["COMMITS", "LoadedDataset", "load", "replay_judgment", "_text", "load_llmbar", "load_pandalm", "load_prometheus_mtbench"]
