"""What MLflow assessments, LangSmith feedback and Phoenix annotations share: a rater's value on a run.

Each format module turns its records into :class:`Feedback` — the run (trace, run or span id), the
feedback's name, who gave it (``human``, ``llm`` or ``code``), its value and explanation, and the run's
input and output when the export carries them — and hands them all to :func:`add_all`. A run with its
texts becomes a pointwise item whose id is the run's id; feedback on a run without them needs that item
in the workspace already (imported in judgecal's own schema with the run ids as item ids). A code
scorer is not a judge and is counted as dropped.

Each feedback name is read on one scale for the whole file, from every value given under it (by judges
and by people): when they are all numbers (not only ``0`` and ``1``), an LLM's value is a score of the
judge named after the feedback (and its model, when the export names it) and a person's whole number on
judgecal's 1-10 scale a label under ``<format>:human`` (another value is counted as dropped; a judge's
value that is no number is an invalid verdict); so when most of them are numbers. Otherwise
the name is a binary or categorical criterion: booleans make a binary task (labels ``true``/``false``,
positive ``true``; ``1``/``0`` among them are read as ``true``/``false``), numbers that are only ``0`` and
``1`` a binary ``1``/``0`` one, ``yes``/``no`` a binary one with positive ``yes``, and any other labels a
categorical one, in the order first seen (:func:`judgecal.data.formats.labels.declare`). The LLM's label
is a verdict of that judge and a person's a label, on the run's item for the name, ``<run>/<name>``
(built from the run in the workspace when the file has no texts); a judge's feedback without a value (an
error) is an invalid verdict, a person's is a skipped label. The run's own item is kept either way: the
runs are what later feedback files refer to.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, point_item, text_of
from judgecal.data.formats.labels import mostly_numbers
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
    where: str = ""


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
    for what, t in (("input", p), ("output", o)):  # kept whole or refused: a text cut mid-JSON misreads
        if len(t) > MAX_TEXT_CHARS:
            raise Skip(what, f"the run's {what} is {len(t):,} characters as text; the limit is {MAX_TEXT_CHARS:,} "
                       "(refused whole, never cut)")
    m.item(replace(point_item(m.fmt, run, p, o, None), item_id=run), where, (where, None))  # the run's own id


def add(m: Mapped, fb: Feedback, where: str, pending: list[Feedback]) -> None:
    """One feedback: its run as an item now, its value in ``pending`` until :func:`add_all` knows its scale."""
    add_run(m, fb.run, fb.prompt, fb.output, where)
    if fb.run not in m.items:
        m.external.setdefault(fb.run, where)
    if fb.kind == "code":
        m.drop(f"{fb.name}: code scorers (not judges)")
        return
    fb.where = where
    pending.append(fb)


def _scale(values: list[Any]) -> str:
    """``bool`` (booleans, with 0/1 read as them), ``01`` (numbers that are 0 and 1 only, 0 among them),
    ``score`` (numbers, or mostly numbers: :func:`~judgecal.data.formats.labels.mostly_numbers`) or
    ``labels``."""
    given = [v for v in values if v is not None]
    if any(isinstance(v, bool) for v in given):
        return "bool" if all(isinstance(v, bool) or number(v) in (0.0, 1.0) for v in given) else "labels"
    nums = [number(v) for v in given]
    if all(x is not None for x in nums):
        return "01" if nums and set(nums) <= {0.0, 1.0} and 0.0 in nums else "score"
    return "score" if mostly_numbers(given, number) else "labels"


def _label(v: Any, scale: str) -> Any:
    if v is None or isinstance(v, bool):
        return v
    if scale == "bool":
        return number(v) == 1.0
    if scale == "01":
        return str(int(number(v) or 0))
    return v


def add_all(m: Mapped, pending: list[Feedback]) -> None:
    """Map every feedback of the file (see the module docstring), then settle the label criteria."""
    names: dict[str, list[Any]] = {}
    for fb in pending:
        names.setdefault(fb.name, []).append(fb.value)
    scales = {name: _scale(values) for name, values in names.items()}
    for fb in pending:
        name = f"{fb.name} ({fb.rater})" if fb.rater and fb.kind == "llm" else fb.name
        if fb.kind == "llm":
            m.judge(name, fb.rater or fb.name, rubric=f"{m.fmt} feedback {fb.name}")
        scale = scales[fb.name]
        if scale != "score":
            base = m.items.get(fb.run)
            value = _label(fb.value, scale)
            if fb.kind == "llm":
                m.vote(fb.name, fb.run, value, base=base, judge=name, raw=fb.explanation, invalid=value is None,
                       where=(fb.where, None))
            else:
                m.vote(fb.name, fb.run, value, base=base, annotator=fb.rater or f"{m.fmt}-human",
                       source=f"{m.fmt}:human", where=(fb.where, None))
            continue
        x = number(fb.value)
        if fb.kind == "llm":
            m.verdict(name, fb.run, score=x, verdict="invalid" if x is None else None, raw=fb.explanation,
                      where=(fb.where, None))
        elif fb.value is None:
            m.counts["skipped_labels"] += 1
        elif x is None or not x.is_integer() or not SCORE_RANGE[0] <= x <= SCORE_RANGE[1]:
            m.drop(f"{fb.name}: human labels that are not whole numbers {SCORE_RANGE[0]}-{SCORE_RANGE[1]} "
                   "(judgecal's pointwise labels)")
        else:
            m.label(fb.run, fb.rater or f"{m.fmt}-human", str(int(x)), f"{m.fmt}:human", order=None,
                    where=(fb.where, None))
    m.settle(keep_records=True)
