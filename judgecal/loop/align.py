"""``judgecal align``: a candidate judge built from the human labels, judged on labels it never touched.

1. **Split by item** (:func:`split_items`): the items with the truth are split into a train and a held-out
   part, stratified by the human label and seeded (scikit-learn's ``train_test_split``); an optional
   stratified subsample first keeps a CPU run small.
2. **Build the candidate from the train split only**:
   - ``fewshot``: worked examples chosen from the train items where the judge's item verdict disagrees with
     the people (shortest first, taking the human labels in turn so that no label dominates), shown before
     each item as earlier chat turns (the rubric's ``shots``);
   - ``guidelines``: rules written from the train split's labels: how often people called a tie, how
     often they preferred the longer response, and which mistake the judge made most (e.g. "said A where
     people said B"), then up to five guidelines quoted from the annotators' own rationales on train items
     (:mod:`judgecal.loop.rationales`), added to the rubric's system prompt;
   - ``optimizer``: DSPy's random search over sets of worked examples, scored on a part of the train split
     (:mod:`judgecal.loop.optimize`; the ``dspy`` extra).
   The candidate is a new rubric file and a new judge spec file (never pooled with the original).
3. **Judge the held-out split** with both the original and the candidate, and compare them there only
   (:func:`judgecal.loop.compare.compare_judges`: paired differences with CIs for κ, accuracy and every
   bias, and the gate's rule). The conclusion reads the held-out split alone: ``improved`` when κ or
   accuracy is significantly higher (the interval of the difference above 0) and nothing is worse by the
   gate's rule; ``worse`` when the gate fails it; otherwise ``no significant change``. A train-split
   comparison (``evaluate_train``) is shown as such and never called an improvement: its examples came
   from those very items.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from judgecal.audit.decision import load_thresholds
from judgecal.audit.models import item_verdicts
from judgecal.data.records import Item, stable_hash
from judgecal.data.store import Workspace
from judgecal.data.yamlfile import load_yaml, parse_yaml
from judgecal.errors import ConfigError
from judgecal.judges.spec import JudgeSpec
from judgecal.loop import LoopError
from judgecal.loop.compare import compare_judges, judge_frame
from judgecal.loop.gate import decide

METHODS = ("fewshot", "guidelines", "optimizer")


def split_items(truth: pd.Series, *, train_share: float = 0.5, seed: int = 0,
                n_items: int | None = None) -> tuple[list[str], list[str], dict[str, Any]]:
    """Train and held-out item ids, stratified by label when every label has two items (else at random),
    and what the split holds (label counts per part)."""
    from sklearn.model_selection import train_test_split

    if not 0 < train_share < 1:
        raise LoopError(f"train share {train_share}: give a share strictly between 0 and 1", name="train_share")
    t = truth.sort_index()
    ids, labels = t.index.astype(str).to_numpy(), t.to_numpy(dtype=str)

    def strata(lab: np.ndarray) -> np.ndarray | None:
        _, counts = np.unique(lab, return_counts=True)
        return lab if counts.min() >= 2 else None

    if n_items is not None and n_items < len(ids):
        if n_items < 4:
            raise LoopError(f"{n_items} items: an alignment needs at least 4 (2 per split)", name="items")
        ids, _, labels, _ = train_test_split(ids, labels, train_size=n_items, random_state=seed,
                                             stratify=strata(labels))
    if len(ids) < 4:
        raise LoopError(f"only {len(ids)} items have a human label: an alignment needs at least 4")
    st = strata(labels)
    tr, ho, ltr, lho = train_test_split(ids, labels, train_size=train_share, random_state=seed, stratify=st)
    about = {"seed": seed, "train_share": train_share, "stratified": st is not None, "n_train": len(tr),
             "n_held_out": len(ho),
             "train_labels": {str(k): int(v) for k, v in zip(*np.unique(ltr, return_counts=True), strict=True)},
             "held_out_labels": {str(k): int(v) for k, v in zip(*np.unique(lho, return_counts=True), strict=True)}}
    return sorted(map(str, tr)), sorted(map(str, ho)), about


def _words(item: Item) -> int:
    return len(item.prompt.split()) + sum(len(c.text.split()) for c in item.candidates)


def showable(item: Item, max_words: int = 160) -> bool:
    """Whether ``item`` can be a worked example: a prompt, two non-empty responses, at most ``max_words``."""
    return (len(item.candidates) == 2 and bool(item.prompt.strip()) and all(c.text.strip() for c in item.candidates)
            and _words(item) <= max_words)


def choose_shots(items: dict[str, Item], verdict: pd.Series, truth: pd.Series, k: int = 4,
                 max_words: int = 160) -> list[dict[str, str]]:
    """Up to ``k`` examples from the items where ``verdict`` (the judge's item verdict) is not the
    human label: shortest first (at most ``max_words`` words), one human label after another."""
    wrong = [i for i in verdict.index if i in items and i in truth.index and verdict[i] != truth[i]
             and showable(items[i], max_words)]
    by_label: dict[str, list[str]] = {}
    for i in sorted(wrong, key=lambda i: (_words(items[i]), i)):
        by_label.setdefault(str(truth[i]), []).append(i)
    chosen: list[str] = []
    while len(chosen) < k and any(by_label.values()):
        for lab in sorted(by_label):
            if by_label[lab] and len(chosen) < k:
                chosen.append(by_label[lab].pop(0))
    return [{"item_id": i, "prompt": items[i].prompt, "first": items[i].candidates[0].text,
             "second": items[i].candidates[1].text, "answer": str(truth[i])} for i in chosen]


def write_guidelines(items: dict[str, Item], verdict: pd.Series, truth: pd.Series) -> list[str]:
    """Rules from the train split's labels and the judge's most common mistake there."""
    t = truth.reindex([i for i in truth.index if i in items])
    n = len(t)
    if n == 0:
        return []
    rules = []
    tie = float((t == "tie").mean())
    rules.append(f"People called {tie:.0%} of such pairs a tie: answer tie only when neither response is better."
                 if tie < 0.2 else f"People called {tie:.0%} of such pairs a tie: when both responses are "
                 "equally good or equally poor, answer tie.")
    dec = [i for i in t.index if t[i] in ("A", "B")]
    diff = {i: len(items[i].candidates[0].text.split()) - len(items[i].candidates[1].text.split()) for i in dec}
    longer = [i for i in dec if diff[i] != 0]
    if longer:
        share = float(np.mean([(t[i] == "A") == (diff[i] > 0) for i in longer]))
        rules.append(f"People preferred the longer response in {share:.0%} of the pairs they decided: "
                     + ("length alone is not a reason to prefer a response." if share < 0.65 else
                        "a fuller answer that stays correct is usually better."))
    both = verdict.reindex(t.index).dropna()
    errors = pd.Series([f"{both[i]}->{t[i]}" for i in both.index if both[i] != t[i]], dtype=object)
    if len(errors):
        top = errors.value_counts().index[0]
        said, truly = top.split("->")
        rules.append(f"A common mistake is to answer {said} where the right answer is {truly}; check for it.")
    first = float((t == "A").mean())
    rules.append(f"The better response was shown first in {first:.0%} of these pairs: its position says nothing "
                 "about its quality.")
    return rules


def rubric_source(name_or_path: str) -> dict[str, Any]:
    """The rubric's YAML as a mapping (a built-in by name, or a file)."""
    p = Path(name_or_path)
    try:  # the shared loader: a regular file of at most 1 MB, UTF-8, no duplicate key, no alias bomb
        if p.suffix in (".yaml", ".yml") and p.exists():
            data = load_yaml(p)
        else:
            built_in = resources.files("judgecal.rubrics").joinpath(f"{name_or_path}.yaml")
            data = parse_yaml(built_in.read_text("utf-8"), f"rubric {name_or_path}")
    except ConfigError as exc:
        raise LoopError(str(exc)) from None
    if not isinstance(data, dict):
        raise LoopError(f"{name_or_path}: a rubric is a mapping")
    return data


def candidate_spec(spec: JudgeSpec, method: str, shots: list[dict[str, str]], rules: list[str],
                   folder: Path) -> Path:
    """Write the candidate's rubric and judge spec into ``folder``; returns the spec file."""
    raw = rubric_source(spec.rubric)
    if raw.get("kind") != "pairwise":
        raise LoopError(f"rubric {spec.rubric!r}: alignment builds pairwise judges only, this one is {raw.get('kind')}")
    if method in ("fewshot", "optimizer"):
        raw["shots"] = [{k: v for k, v in s.items() if k != "item_id"} for s in shots]
    else:
        raw["system"] = str(raw["system"]).rstrip() + "\nGuidelines from expert reviewers:\n" + "\n".join(
            f"- {r}" for r in rules)
    tag = stable_hash([method, raw], 8)
    raw["name"] = f"{raw['name']}-{method}-{tag}"
    folder.mkdir(parents=True, exist_ok=True)
    rubric_path = folder / f"{raw['name']}.yaml"
    rubric_path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True), "utf-8")
    name = f"{spec.base_name}+{method}-{tag}"
    params = {k: v for k, v in (("temperature", spec.temperature), ("max_tokens", spec.max_tokens),
                                ("logprobs", spec.logprobs), ("top_logprobs", spec.top_logprobs)) if v is not None}
    body = {"name": name, "description": f"{spec.base_name} aligned by judgecal align --method {method}",
            "backend": spec.backend, "model": spec.model, "rubric": rubric_path.name, "parameters": params}
    if spec.options:
        body["options"] = dict(spec.options)
    path = folder / f"{name.replace('/', '_')}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True), "utf-8")
    return path


def conclusion(held: dict[str, Any]) -> str:
    """``improved``, ``worse`` or ``no significant change`` from the held-out comparison (gate rule applied)."""
    if not held["passed"]:
        return "worse"
    up = [m for m in ("cohen_kappa", "accuracy") if (held["metrics"].get(m) or {}).get("ci_low") is not None
          and held["metrics"][m]["ci_low"] > 0]
    return "improved" if up else "no significant change"


def run_align(ws: Workspace, judge: str, method: str, truth: pd.Series, *,
              engine_for: Callable[[str], Any], folder: Path, n_items: int | None = None,
              train_share: float = 0.5, seed: int = 0, shots: int = 4, max_words: int = 160,
              n_boot: int = 2000, invalid_as: str = "tie", evaluate_train: bool = False,
              orders: tuple[str, ...] = ("AB", "BA"), consensus: str = "", candidates: int = 6,
              verbose: bool = False) -> dict[str, Any]:
    """The whole loop (see the module docstring); ``engine_for(judge)`` makes an engine for a judge
    argument (the CLI's ``make_engine``)."""
    if method not in METHODS:
        raise LoopError(f"method {method!r}: choose {', '.join(METHODS)}", name="method")
    pairs = {it.item_id: it for it in ws.items_repo.items() if it.task == "pairwise" and len(it.candidates) == 2
             and not it.source.startswith("probe:")}
    t = truth[truth.index.isin(list(pairs))]
    train, held, about = split_items(t, train_share=train_share, seed=seed, n_items=n_items)
    base = engine_for(judge)
    base.run(base.plan([pairs[i] for i in train + held], orders=orders, seed=seed))
    base_name = ws.judgments_repo.judge_names().get((base.judge, base.spec_hash), base.judge)
    frame = judge_frame(ws, base_name)
    verdict = item_verdicts(frame[frame["item_id"].isin(train)], invalid_as)
    chosen = choose_shots(pairs, verdict, t, k=shots, max_words=max_words) if method == "fewshot" else []
    rules: list[str] = []
    extra: dict[str, Any] = {}
    if method == "guidelines":
        from judgecal.loop.rationales import distil

        quoted, extra["rationales"] = distil(ws.annotations_repo.annotations_frame(), t, verdict, train)
        rules = write_guidelines({i: pairs[i] for i in train}, verdict, t.reindex(train)) + quoted
    if method == "optimizer":
        from judgecal.loop.optimize import optimize_shots

        chosen, extra["optimizer"] = optimize_shots(
            base, pairs, t, train, scratch=ws.path / "align" / "optimizer", shots=shots, candidates=candidates,
            max_words=max_words, seed=seed, eligible=lambda it: showable(it, max_words), verbose=verbose)
    if method == "fewshot" and not chosen:
        raise LoopError(f"{base_name} disagrees with the people on no train item short enough to show "
                        f"(at most {max_words} words): nothing to learn few-shot examples from")
    spec_path = candidate_spec(replace(base.spec, name=base.spec.name or base_name), method, chosen, rules, folder)
    cand = engine_for(str(spec_path))
    cand_items = held + (train if evaluate_train else [])
    cand.run(cand.plan([pairs[i] for i in cand_items], orders=orders, seed=seed))
    cand_name = ws.judgments_repo.judge_names().get((cand.judge, cand.spec_hash), cand.judge)
    assert not {s["item_id"] for s in chosen} & set(held), "a few-shot example came from the held-out split"
    th = load_thresholds(ws.path)
    held_cmp = decide(compare_judges(ws, base_name, cand_name, truth, items=held, invalid_as=invalid_as,
                                     n_boot=n_boot, seed=seed, alpha=float(th["alpha"])), th["gate"])
    out: dict[str, Any] = {
        "schema": "judgecal.align/1", "judge": base_name, "candidate": cand_name, "method": method,
        "candidate_spec": str(spec_path), "consensus": consensus, "split": about,
        "shots": [s["item_id"] for s in chosen], "guidelines": rules,
        **extra, "held_out": held_cmp, "conclusion": conclusion(held_cmp),
        "basis": "the held-out split only: the candidate was built from the train split and never saw these items",
    }
    if evaluate_train:
        tr = compare_judges(ws, base_name, cand_name, truth, items=train, invalid_as=invalid_as, n_boot=n_boot,
                            seed=seed)
        out["train"] = {**tr, "improvement": None,
                        "note": "train split: the candidate's examples or rules came from these items; a gain here "
                                "is not evidence of an improvement"}
    return out
