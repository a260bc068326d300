"""Prompt mutations for sensitivity probes: meaning-preserving changes to how a judge is asked.

Each mutation maps a rubric's chat messages for an item (in a given presentation order) to new
messages. A judge insensitive to the prompt gives the same verdict under every mutation.

- ``whitespace``: the same text with extra blank lines and trailing spaces.
- ``instruction_after``: the responses first, the instruction after them.
- ``paraphrase``: the system prompt and the question reworded.
- ``option_order``: the answer options listed as ``tie, B, or A``.
- ``fewshot_ab`` / ``fewshot_ba``: two worked examples before the item, in either order.
"""

from __future__ import annotations

import re
from collections.abc import Callable

Messages = list[dict[str, str]]

PARAPHRASE_SYSTEM = ("Act as a fair evaluator. Judge which of the two answers better satisfies the "
                     "instruction; neither the position of an answer nor its length should matter.")
EXAMPLES = (
    ("What is the capital of Italy?", "Rome.", "Milan.", "A"),
    ("Name a primary colour.", "Green.", "Blue.", "B"),
)


def _user(msgs: Messages) -> str:
    return next(m["content"] for m in msgs if m["role"] == "user")


def _replace_user(msgs: Messages, text: str) -> Messages:
    return [{**m, "content": text} if m["role"] == "user" else dict(m) for m in msgs]


def whitespace(msgs: Messages) -> Messages:
    return _replace_user(msgs, re.sub(r"\n", "\n\n", _user(msgs)).replace("\n\n\n\n", "\n\n\n") + "  \n")


def instruction_after(msgs: Messages) -> Messages:
    text = _user(msgs)
    head, sep, rest = text.partition("\n\n")
    if not sep or "[Instruction]" not in head:
        return [dict(m) for m in msgs]
    body, qsep, question = rest.rpartition("\n\n")
    return _replace_user(msgs, f"{body}\n\n{head}\n\n{question}" if qsep else f"{rest}\n\n{head}")


def paraphrase(msgs: Messages) -> Messages:
    out = [{**m, "content": PARAPHRASE_SYSTEM} if m["role"] == "system" else dict(m) for m in msgs]
    text = _user(out).replace("Which response is better? Reply with exactly one word: A, B, or tie.",
                              "Which answer is better? Answer with a single word: A, B, or tie.")
    return _replace_user(out, text)


def option_order(msgs: Messages) -> Messages:
    return _replace_user(msgs, _user(msgs).replace("A, B, or tie.", "tie, B, or A."))


def _fewshot(msgs: Messages, order: tuple[int, ...]) -> Messages:
    shots: Messages = []
    for k in order:
        q, a, b, ans = EXAMPLES[k]
        shots.append({"role": "user", "content": (
            f"[Instruction]\n{q}\n\n[The Start of Response A]\n{a}\n[The End of Response A]\n\n"
            f"[The Start of Response B]\n{b}\n[The End of Response B]\n\n"
            "Which response is better? Reply with exactly one word: A, B, or tie.")})
        shots.append({"role": "assistant", "content": ans})
    system = [dict(m) for m in msgs if m["role"] == "system"]
    rest = [dict(m) for m in msgs if m["role"] != "system"]
    return system + shots + rest


MUTATIONS: dict[str, Callable[[Messages], Messages]] = {
    "whitespace": whitespace,
    "instruction_after": instruction_after,
    "paraphrase": paraphrase,
    "option_order": option_order,
    "fewshot_ab": lambda m: _fewshot(m, (0, 1)),
    "fewshot_ba": lambda m: _fewshot(m, (1, 0)),
}


def apply(name: str, msgs: Messages) -> Messages:
    """``msgs`` under mutation ``name`` (``none`` returns a copy)."""
    if name == "none":
        return [dict(m) for m in msgs]
    if name not in MUTATIONS:
        raise ValueError(f"unknown mutation {name!r}; known: none, {', '.join(MUTATIONS)}")
    return MUTATIONS[name](msgs)
