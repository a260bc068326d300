"""MT-Bench (FastChat ``llm_judge``): pairwise and single judgments, and the human judgments release.

- ``model_judgment/<judge>_pair.jsonl``: ``question_id``, ``model_1``, ``model_2``, ``g1_winner`` (the
  judge saw model_1's answer first) and ``g2_winner`` (the swapped order), each ``model_1``, ``model_2``,
  ``tie`` or ``error`` and already undone to model names; ``judge`` [model, prompt name];
  ``g1_user_prompt``/``g1_judgment``, ``g2_…``; ``turn``.
- ``<judge>_single.jsonl``: ``question_id``, ``model``, ``score`` (``-1``: no score could be parsed),
  ``judge``, ``user_prompt``, ``judgment``, ``turn``.
- the human judgments release (``lmsys/mt_bench_human_judgments``): ``question_id``, ``model_a``,
  ``model_b``, ``winner`` (``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``; ``null``: a person skipped
  the pair, counted as skipped), ``judge`` (a person such
  as ``expert_3``, or [model, prompt] for the judge's verdict with both orders combined),
  ``conversation_a``/``conversation_b`` ([{role, content}]), ``turn``.

An item is one question, turn and pair of models: its candidates are the two models in name order, so
a judge's file and the people's file meet on ``mt_bench/q<id>/t<turn>/<model>/<model>``. The judge files
hold the answers only inside the rendered judge prompt; they are read back from FastChat's templates
(single and multi-turn, with or without a reference answer), and a prompt in another template is counted
as dropped. Turn 2's prompt and answers carry turn 1 before them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from judgecal.data.formats.base import Mapped, Skip, finite, pair_item, point_item

NAME = "mt_bench"
DESCRIPTION = "MT-Bench judgments (<judge>_pair.jsonl, <judge>_single.jsonl) and the human judgments release"
HUMANS = "mt_bench:human"
_PAIR_1 = re.compile(r"\[User Question\]\n(?P<q>.*?)\n\n(?:\[The Start of Reference Answer\]\n(?P<ref>.*?)\n"
                     r"\[The End of Reference Answer\]\n\n)?\[The Start of Assistant A's Answer\]\n(?P<a>.*?)\n"
                     r"\[The End of Assistant A's Answer\]\n\n\[The Start of Assistant B's Answer\]\n(?P<b>.*?)\n"
                     r"\[The End of Assistant B's Answer\]", re.S)
_SINGLE_1 = re.compile(r"\[Question\]\n(?P<q>.*?)\n\n(?:\[The Start of Reference Answer\]\n(?P<ref>.*?)\n"
                       r"\[The End of Reference Answer\]\n\n)?\[The Start of Assistant's Answer\]\n(?P<a>.*?)\n"
                       r"\[The End of Assistant's Answer\]", re.S)
_CONV = r"<\|The Start of Assistant {x}'s Conversation with User\|>\n\n### User:\n(?P<q1{x}>.*?)\n\n### Assistant {x}:\n" \
        r"(?P<a1{x}>.*?)\n\n### User:\n(?P<q2{x}>.*?)\n\n### Assistant {x}:\n(?P<a2{x}>.*?)\n\n" \
        r"<\|The End of Assistant {x}'s Conversation with User\|>"
_MULTI_A = re.compile(_CONV.format(x="A"), re.S)
_MULTI_B = re.compile(_CONV.format(x="B"), re.S)
_WINNER = {"model_1": 1, "model_2": 2, "model_a": 1, "model_b": 2, "tie": 0, "tie (bothbad)": 0}


def detect(path: Path, head: list[Any]) -> bool:
    keys = [set(r) for r in head if isinstance(r, dict)]
    return bool(keys) and len(keys) == len(head) and all(
        "question_id" in k and ({"model_1", "model_2", "g1_winner"} <= k or {"model", "score", "judge"} <= k
                                or {"model_a", "model_b", "winner", "conversation_a"} <= k) for k in keys)


def _turn_text(turn: int, qs: tuple[str, str], ans: tuple[str, str]) -> tuple[str, str]:
    if turn == 1:
        return qs[0], ans[0]
    return f"[Turn 1]\n{qs[0]}\n\n[Turn 2]\n{qs[1]}", f"[Turn 1]\n{ans[0]}\n\n[Turn 2]\n{ans[1]}"


def _pair_texts(prompt: Any, turn: int) -> tuple[str, str, str] | None:
    """(question, answer A, answer B) as the item holds them, from a FastChat pairwise judge prompt."""
    if not isinstance(prompt, str):
        return None
    if turn == 1:
        hit = _PAIR_1.search(prompt)
        return (hit["q"], hit["a"], hit["b"]) if hit else None
    a, b = _MULTI_A.search(prompt), _MULTI_B.search(prompt)
    if not (a and b):
        return None
    q, ta = _turn_text(2, (a["q1A"], a["q2A"]), (a["a1A"], a["a2A"]))
    return q, ta, _turn_text(2, (b["q1B"], b["q2B"]), (b["a1B"], b["a2B"]))[1]


def _single_texts(prompt: Any, turn: int) -> tuple[str, str] | None:
    if not isinstance(prompt, str):
        return None
    if turn == 1:
        hit = _SINGLE_1.search(prompt)
        return (hit["q"], hit["a"]) if hit else None
    a = _MULTI_A.search(prompt)
    return _turn_text(2, (a["q1A"], a["q2A"]), (a["a1A"], a["a2A"])) if a else None


def _conversation(conv: Any, turn: int, field: str) -> tuple[str, str]:
    if not isinstance(conv, list) or not all(isinstance(t, dict) and isinstance(t.get("content"), str) for t in conv):
        raise Skip(field, "must be a list of {role, content}")
    users = [t["content"] for t in conv if t.get("role") == "user"]
    bots = [t["content"] for t in conv if t.get("role") == "assistant"]
    if len(users) < turn or len(bots) < turn:
        raise Skip(field, f"has no turn {turn}")
    return _turn_text(turn, (users[0], users[-1]), (bots[0], bots[turn - 1]))


def _judge_name(judge: Any, suffix: str = "") -> tuple[str, str, str]:
    if not (isinstance(judge, list) and len(judge) >= 2 and all(isinstance(x, str) for x in judge[:2])):
        raise Skip("judge", "must be [model, prompt name]")
    return f"{judge[0]}:{judge[1]}{suffix}", judge[0], judge[1]


def _turn(rec: dict[str, Any]) -> int:
    t = rec.get("turn", 1)
    if t not in (1, 2):
        raise Skip("turn", f"must be 1 or 2, got {t!r}")
    return int(t)


def parse(path: Path) -> Mapped:
    m = Mapped(NAME)
    f = str(path)
    for n, rec in m.records(path):
        with m.at(path, n):
            qid, turn = rec.get("question_id"), _turn(rec)
            if isinstance(qid, bool) or not isinstance(qid, (int, str)):
                raise Skip("question_id", "missing required field" if qid is None else "must be a string or an integer")
            if "g1_winner" in rec:
                _pair(m, rec, qid, turn, (f, n))
            elif "score" in rec:
                _single(m, rec, qid, turn, (f, n))
            elif "winner" in rec:
                _human(m, rec, qid, turn, (f, n))
            else:
                raise Skip(None, "neither a pairwise (g1_winner), single (score) nor human (winner) judgment")
    m.no_records(path)
    if any(j.judge.endswith(" (both orders)") for j in m.judgments.values()):
        m.notes.append("the release's judge verdicts combine both orders: stored as one verdict (shown AB) of the "
                       "judge '<model>:<prompt> (both orders)', apart from the per-order judgments of a _pair.jsonl")
    return m


def _models(rec: dict[str, Any], k1: str, k2: str) -> tuple[str, str]:
    a, b = rec.get(k1), rec.get(k2)
    for k, v in ((k1, a), (k2, b)):
        if not isinstance(v, str) or not v.strip():
            raise Skip(k, "missing required field" if v is None else "must be a model name")
    if a == b:
        raise Skip(k2, "the same model as " + k1)
    return str(a), str(b)


def _winner(v: Any, field: str) -> int | None:
    if v == "error":
        return None
    if not isinstance(v, str) or v not in _WINNER:
        raise Skip(field, f"unknown winner {v!r}")
    return _WINNER[v]


def _side(w: int | None, first_is_a: bool) -> str:
    if w is None:
        return "invalid"
    if w == 0:
        return "tie"
    return "A" if (w == 1) == first_is_a else "B"


def _pair(m: Mapped, rec: dict[str, Any], qid: Any, turn: int, where: tuple[str, int | None]) -> None:
    m1, m2 = _models(rec, "model_1", "model_2")
    name, model, prompt = _judge_name(rec.get("judge"))
    g1, g2 = _winner(rec.get("g1_winner"), "g1_winner"), _winner(rec.get("g2_winner"), "g2_winner")
    texts = _pair_texts(rec.get("g1_user_prompt"), turn)
    if texts is None:
        m.drop("judge prompt not in a FastChat template (the answers cannot be read back)")
        return
    q, t1, t2 = texts
    first_is_a = m1 < m2
    (ma, ta), (mb, tb) = sorted([(m1, t1), (m2, t2)])
    item = pair_item(NAME, (f"q{qid}", f"t{turn}"), q, ta, tb, ma, mb, {"question_id": qid, "turn": turn})
    iid = item.item_id
    m.item(item, f"{where[0]}:{where[1]}", where)
    m.judge(name, model, rubric=prompt)
    m.verdict(name, iid, verdict=_side(g1, first_is_a), order="AB" if first_is_a else "BA",
              raw=rec.get("g1_judgment"), where=where)
    if "g2_winner" in rec:
        m.verdict(name, iid, verdict=_side(g2, first_is_a), order="BA" if first_is_a else "AB",
                  raw=rec.get("g2_judgment"), where=where)


def _single(m: Mapped, rec: dict[str, Any], qid: Any, turn: int, where: tuple[str, int | None]) -> None:
    model = rec.get("model")
    if not isinstance(model, str) or not model.strip():
        raise Skip("model", "must be a model name")
    name, jmodel, prompt = _judge_name(rec.get("judge"))
    score = finite(rec.get("score"))
    if score is None:
        raise Skip("score", f"must be a number, got {rec.get('score')!r}")
    texts = _single_texts(rec.get("user_prompt"), turn)
    if texts is None:
        m.drop("judge prompt not in a FastChat template (the answer cannot be read back)")
        return
    item = point_item(NAME, (f"q{qid}", f"t{turn}"), texts[0], texts[1], model, {"question_id": qid, "turn": turn})
    iid = item.item_id
    m.item(item, f"{where[0]}:{where[1]}", where)
    m.judge(name, jmodel, rubric=prompt)
    m.verdict(name, iid, score=None if score == -1 else score, verdict="invalid" if score == -1 else None,
              raw=rec.get("judgment"), where=where)


def _human(m: Mapped, rec: dict[str, Any], qid: Any, turn: int, where: tuple[str, int | None]) -> None:
    ma0, mb0 = _models(rec, "model_a", "model_b")
    qa, ta = _conversation(rec.get("conversation_a"), turn, "conversation_a")
    _, tb = _conversation(rec.get("conversation_b"), turn, "conversation_b")
    # a null winner: a person who skipped the pair (counted below), a judge that gave none (as "error")
    w = None if rec.get("winner") is None else _winner(rec.get("winner"), "winner")
    first_is_a = ma0 < mb0
    (ma, xa), (mb, xb) = sorted([(ma0, ta), (mb0, tb)])
    item = pair_item(NAME, (f"q{qid}", f"t{turn}"), qa, xa, xb, ma, mb, {"question_id": qid, "turn": turn})
    iid = item.item_id
    m.item(item, f"{where[0]}:{where[1]}", where)
    judge = rec.get("judge")
    if isinstance(judge, str):
        if w is None:
            m.counts["skipped_labels"] += 1
        else:
            m.label(iid, judge, _side(w, first_is_a), HUMANS, order=None, where=where, field="winner")
        return
    name, model, prompt = _judge_name(judge, " (both orders)")
    m.judge(name, model, rubric=prompt)
    m.verdict(name, iid, verdict=_side(w, first_is_a), where=where)
