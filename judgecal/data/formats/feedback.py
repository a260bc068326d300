"""What MLflow assessments, LangSmith feedback and Phoenix annotations share: a rater's value on a run.

Each format module turns its records into :class:`Feedback` — the run (trace, run or span id), the
feedback's name, who gave it (``human``, ``llm`` or ``code``), its value and explanation, and the run's
input and output when the export carries them. A run with its texts becomes a pointwise item whose id
is the run's id; feedback on a run without them needs that item in the workspace already (imported in
judgecal's own schema with the run ids as item ids). An LLM's numeric value is a score of the judge
named after the feedback (and its model, when the export names it); a person's whole number on
judgecal's 1-10 scale is a label under ``<format>:human``; booleans, labels and other text are binary or
categorical and wait for those task types; a code scorer is not a judge and is counted as dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, point_item, text_of
from judgecal.data.importers import MAX_TEXT_CHARS, SCORE_RANGE


@dataclass
class Feedback:
    run: str
    name: str
    kind: str  # human, llm or code
    value: Any
    explanation: Any = None
    rater: str | None = None  # a person's id, or the judge's model
    prompt: Any = None
    output: Any = None


def number(v: Any) -> float | None:
    """A numeric value (a number, or a number written as text as CSV cells are); booleans are not."""
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            return None
    return finite(v)


def add_run(m: Mapped, run: str, prompt: Any, output: Any, where: str) -> None:
    """The run as a pointwise item when the export carries its input and output (as text or JSON)."""
    if prompt is None or output is None:
        return
    p, o = text_of(prompt), text_of(output)
    if len(p) > MAX_TEXT_CHARS or len(o) > MAX_TEXT_CHARS:
        raise Skip(None, f"a run's input or output is over the limit of {MAX_TEXT_CHARS:,} characters")
    m.item(point_item(m.fmt, run, p, o, None), where, (where, None))


def add(m: Mapped, fb: Feedback, where: str) -> None:
    """Map one feedback (see the module docstring)."""
    add_run(m, fb.run, fb.prompt, fb.output, where)
    if fb.run not in m.items:
        m.external.setdefault(fb.run, where)
    if fb.kind == "code":
        m.drop(f"{fb.name}: code scorers (not judges)")
        return
    x = number(fb.value)
    if fb.kind == "human":
        if x is None or not x.is_integer() or not SCORE_RANGE[0] <= x <= SCORE_RANGE[1]:
            m.wait(f"{fb.name}: human labels that are not whole numbers {SCORE_RANGE[0]}-{SCORE_RANGE[1]}")
            return
        m.label(fb.run, fb.rater or f"{m.fmt}-human", str(int(x)), f"{m.fmt}:human", order=None)
        return
    if x is None:
        m.wait(f"{fb.name}: LLM verdicts that are not numbers (booleans or labels)")
        return
    name = f"{fb.name} ({fb.rater})" if fb.rater else fb.name
    m.judge(name, fb.rater or fb.name, rubric=f"{m.fmt} feedback {fb.name}")
    m.verdict(name, fb.run, score=x, raw=fb.explanation, where=(where, None))
