"""Prompt mutations for sensitivity probes: meaning-preserving changes to how a judge is asked.

A mutation maps a rubric to a rubric, acting only on the fields the rubric declares
(:mod:`judgecal.judges.rubric`): it never edits rendered text, so the prompt and the responses are
shown unchanged. A mutation that a rubric gives it nothing to act on is refused
(:class:`MutationError`), never run as a silent no-op. A judge insensitive to the prompt gives the
same verdict under every mutation.

- ``whitespace``: the template with extra blank lines and trailing spaces (any rubric).
- ``instruction_after``: the responses first, the instruction after them (a template that opens
  with ``{prompt}`` and closes with ``{question}``).
- ``paraphrase``: the declared ``paraphrase`` system prompt and/or question.
- ``option_order``: the declared answer ``options`` in reverse (``tie, B, or A``; pairwise rubrics).
- ``fewshot_ab`` / ``fewshot_ba``: the rubric's declared ``fewshot`` examples before the item, in
  declared and in reverse order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from judgecal.data.records import Item
from judgecal.judges.rubric import Rubric, RubricError

Messages = list[dict[str, str]]


class MutationError(RubricError):
    """A mutation asked of a rubric that does not declare what the mutation acts on."""


@dataclass(frozen=True)
class Mutation:
    name: str
    kinds: tuple[str, ...]
    missing: Callable[[Rubric], str | None]  # what the rubric lacks for this mutation, or None
    transform: Callable[[Rubric], Rubric]


def _paragraphs(r: Rubric) -> list[str]:
    return r.template.split("\n\n")


def _instruction_after_missing(r: Rubric) -> str | None:
    paras = _paragraphs(r)
    if not r.question:
        return "a declared 'question' (shown last as {question})"
    if len(paras) < 3 or "{prompt}" not in paras[0] or paras[-1].strip() != "{question}":
        return ("a 'template' whose first paragraph shows {prompt} and whose last paragraph is {question}, "
                "with the responses between them")
    return None


def _instruction_after(r: Rubric) -> Rubric:
    paras = _paragraphs(r)
    return replace(r, template="\n\n".join([*paras[1:-1], paras[0], paras[-1]]))


def _whitespace(r: Rubric) -> Rubric:
    return replace(r, template=re.sub(r"\n", "\n\n", r.template).replace("\n\n\n\n", "\n\n\n") + "  \n")


def _paraphrase_missing(r: Rubric) -> str | None:
    return None if (r.paraphrase_system or r.paraphrase_question) else "a declared 'paraphrase' (system and/or question)"


def _paraphrase(r: Rubric) -> Rubric:
    return replace(r, system=r.paraphrase_system or r.system, question=r.paraphrase_question or r.question)


def _option_order_missing(r: Rubric) -> str | None:
    return None if len(r.options) >= 2 else "at least two declared 'options' (shown in the question as {options})"


def _fewshot_missing(r: Rubric) -> str | None:
    return None if len(r.fewshot) >= 2 else f"at least two declared 'fewshot' examples in its ({r.kind}) format"


MUTATIONS: dict[str, Mutation] = {m.name: m for m in (
    Mutation("whitespace", ("pairwise", "pointwise", "labels"), lambda r: None, _whitespace),
    Mutation("instruction_after", ("pairwise", "pointwise", "labels"), _instruction_after_missing, _instruction_after),
    Mutation("paraphrase", ("pairwise", "pointwise", "labels"), _paraphrase_missing, _paraphrase),
    Mutation("option_order", ("pairwise",), _option_order_missing,
             lambda r: replace(r, options=tuple(reversed(r.options)))),
    Mutation("fewshot_ab", ("pairwise", "pointwise"), _fewshot_missing, lambda r: replace(r, shots=r.fewshot)),
    Mutation("fewshot_ba", ("pairwise", "pointwise"), _fewshot_missing,
             lambda r: replace(r, shots=tuple(reversed(r.fewshot)))),
)}


def mutate(name: str, rubric: Rubric) -> Rubric:
    """``rubric`` under mutation ``name`` (``none`` returns it unchanged); refuses a rubric the
    mutation does not apply to, naming the rubric and what it lacks."""
    if name == "none":
        return rubric
    if name not in MUTATIONS:
        raise MutationError(f"unknown mutation {name!r}; known: none, {', '.join(MUTATIONS)}")
    m = MUTATIONS[name]
    where = f"rubric {rubric.name}" + (f" ({rubric.origin})" if rubric.origin else "")
    if rubric.kind not in m.kinds:
        raise MutationError(f"{where}: mutation {name!r} applies to {' or '.join(m.kinds)} rubrics, "
                            f"and this one is {rubric.kind}")
    missing = m.missing(rubric)
    if missing:
        raise MutationError(f"{where}: mutation {name!r} needs {missing}")
    return m.transform(rubric)


def apply(name: str, rubric: Rubric, item: Item, order: str = "AB") -> Messages:
    """The chat messages for ``item`` in ``order`` under mutation ``name``."""
    return mutate(name, rubric).messages(item, order)
