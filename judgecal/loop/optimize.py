"""``judgecal align --method optimizer``: DSPy chooses the judge's worked examples on the train split.

DSPy's ``BootstrapFewShotWithRandomSearch`` (Khattab et al., "DSPy: Compiling Declarative Language Model
Calls into Self-Improving Pipelines", ICLR 2024) searches over sets of demonstrations: the zero-shot
program, labelled examples alone, and ``candidates`` sets of *bootstrapped* examples (train items the judge
itself answered as the people did, in a seeded shuffle, between one and ``shots`` of them) topped up with
labelled ones; each set is scored on a validation part and the best kept.

Here the program is the judge itself: its one predictor renders the judge's own rubric with the set's
examples as earlier chat turns (the rubric's ``shots``) and calls the judge's backend through the engine,
so what DSPy scores is exactly what the candidate spec will run. Its calls go to a scratch workspace
(``<workspace>/align/optimizer``: cached, resumable, never mixed with the audited judges). Both DSPy parts
come from the alignment's **train split only**: ``fit`` (where the examples come from) and ``val`` (where
the sets are scored), split again by item; the held-out split is never shown to the optimizer.
The metric is agreement with the human label in the order the item was given (one call per item and set).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from judgecal.data.records import Item
from judgecal.data.store import Workspace
from judgecal.judges.engine import Engine
from judgecal.judges.rubric import Example
from judgecal.loop import LoopError

INSTALL = "pip install 'judgecal-toolkit[dspy]'"


def _dspy() -> Any:
    """DSPy, imported offline (LiteLLM's local price map, its cache inside the scratch folder)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import dspy
    except ImportError as exc:
        raise LoopError(f"the optimizer method needs DSPy, which is not installed ({exc.name or exc}): {INSTALL}",
                        name="method") from None
    return dspy


@contextlib.contextmanager
def _quiet(verbose: bool) -> Iterator[None]:
    """DSPy prints its search to stdout: to stderr when ``verbose``, else nowhere."""
    sink = sys.stderr if verbose else io.StringIO()
    log = logging.getLogger("dspy")
    level = log.level
    if not verbose:
        log.setLevel(logging.ERROR)
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink if not verbose else sys.stderr):
            yield
    finally:
        log.setLevel(level)


def judge_program(call: Callable[[list[Any], dict[str, str]], str]) -> Any:
    """A DSPy module whose one predictor answers through ``call(demos, inputs)`` (the judge itself);
    it records its trace as DSPy's own ``Predict`` does, so bootstrapping sees its answers."""
    dspy = _dspy()

    class Verdict(dspy.Signature):  # type: ignore[misc, name-defined]
        """Which response follows the instruction better: A (the first), B (the second) or tie."""

        prompt: str = dspy.InputField()
        first: str = dspy.InputField()
        second: str = dspy.InputField()
        answer: str = dspy.OutputField()

    class JudgePredict(dspy.Predict):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__(Verdict)
            self.answer_with = call  # a plain function: DSPy's deep copies share it

        def forward(self, **inputs: str) -> Any:
            pred = dspy.Prediction(answer=self.answer_with(list(self.demos), inputs))
            trace = dspy.settings.trace
            if trace is not None:
                trace.append((self, inputs, pred))
            return pred

    class Judge(dspy.Module):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.verdict = JudgePredict()

        def forward(self, prompt: str, first: str, second: str) -> Any:
            return self.verdict(prompt=prompt, first=first, second=second)

    return Judge()


def optimize_shots(base: Engine, items: dict[str, Item], truth: pd.Series, train: list[str], *,
                   scratch: Path, shots: int = 4, candidates: int = 6, max_words: int = 160, seed: int = 0,
                   eligible: Callable[[Item], bool], verbose: bool = False) -> tuple[list[dict[str, str]],
                                                                                    dict[str, Any]]:
    """The worked examples DSPy's random search chose from ``train`` (dicts as the few-shot method's), and
    what the search did (its parts, each candidate's validation score, calls made)."""
    dspy = _dspy()
    from sklearn.model_selection import train_test_split

    if len(train) < 4:
        raise LoopError(f"the train split has {len(train)} items: the optimizer needs at least 4 (2 to draw "
                        "examples from, 2 to score them on)")
    labels = truth.reindex(train).astype(str)
    counts = labels.value_counts()
    fit, val = train_test_split(sorted(train), train_size=0.5, random_state=seed,
                                stratify=labels.reindex(sorted(train)) if counts.min() >= 2 else None)
    pool = [i for i in sorted(fit) if eligible(items[i])]
    if not pool:
        raise LoopError(f"no train item is short enough to show as an example (at most {max_words} words)")

    def example(i: str) -> Any:
        it = items[i]
        return dspy.Example(item_id=i, prompt=it.prompt, first=it.candidates[0].text,
                            second=it.candidates[1].text, answer=str(truth[i])).with_inputs("prompt", "first",
                                                                                            "second")

    by_text = {(items[i].prompt, items[i].candidates[0].text, items[i].candidates[1].text): items[i]
               for i in [*pool, *val]}
    stats = {"calls": 0, "cached": 0}
    with Workspace(scratch) as sws:
        def answer_with(demos: list[Any], inputs: dict[str, str]) -> str:
            item = by_text[(inputs["prompt"], inputs["first"], inputs["second"])]
            rubric = replace(base.rubric, shots=tuple(Example(str(d.prompt), str(d.first), str(d.answer),
                                                              str(d.second)) for d in demos))
            eng = Engine(sws, base.backend, rubric, spec=base.spec, progress=False, concurrency=1,
                         timeout_s=base.timeout_s, max_retry_after=base.max_retry_after)
            calls = eng.plan([item], orders=("AB",), seed=seed)
            st = eng.run(calls)
            stats["calls"] += st.done
            stats["cached"] += st.cached
            return sws.judgments_repo.verdicts_of([calls[0].key]).get(calls[0].key, "invalid")

        def agrees(ex: Any, pred: Any, trace: Any = None) -> bool:
            return bool(pred.answer == ex.answer)

        with _quiet(verbose):  # DSPy prints from its constructor on
            opt = dspy.teleprompt.BootstrapFewShotWithRandomSearch(
                metric=agrees, max_bootstrapped_demos=shots, max_labeled_demos=shots,
                num_candidate_programs=candidates, num_threads=1, max_errors=10**6)
            # every candidate holds examples (-3, the zero-shot program, is the original judge, which the
            # held-out comparison measures the winner against)
            best = opt.compile(judge_program(answer_with), trainset=[example(i) for i in pool],
                               valset=[example(i) for i in sorted(val)], restrict=range(-2, candidates))
    def item_of(d: Any) -> str:  # a bootstrapped example holds the inputs and the judge's answer, not the id
        return by_text[(str(d.prompt), str(d.first), str(d.second))].item_id

    demos = list(best.verdict.demos)
    chosen = [{"item_id": item_of(d), "prompt": str(d.prompt), "first": str(d.first),
               "second": str(d.second), "answer": str(d.answer)} for d in demos]
    scores = [{"score": round(float(c["score"]) / 100, 4),
               "examples": [item_of(d) for d in c["program"].verdict.demos],
               "bootstrapped": sum(bool(d.get("augmented")) for d in c["program"].verdict.demos)}
              for c in best.candidate_programs]
    about = {"library": f"dspy {dspy.__version__}", "optimizer": "BootstrapFewShotWithRandomSearch",
             "n_fit": len(pool), "n_val": len(val), "candidates": len(scores),
             "best_val_agreement": scores[0]["score"] if scores else None, "scores": scores,
             "calls": stats["calls"], "cached_calls": stats["cached"], "scratch": str(scratch),
             "note": "fit and val are both parts of the train split; the held-out split was never scored"}
    return chosen, about
