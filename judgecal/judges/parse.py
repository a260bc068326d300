"""Parse verdicts and scores from judge text; anything unparsable is ``None`` (recorded ``invalid``).

Token probabilities: ``label_probs`` renormalises the first answer token's top log-probabilities
over the labels, ``expected_score`` is the G-Eval estimate ``sum_s s * p(s) / sum_s p(s)``
(Liu et al., 2023, "G-Eval").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

_BRACKET = re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.I)
_AFTER = r"(?=\s*(?:$|[.,:;!)\]\n]|(?:is|wins|was|better|response)\b))"
_LEAD = re.compile(
    r"^\W*(?:(?:the\s+)?(?:final\s+)?(?:verdict|answer|winner|choice)\s*(?:is)?\s*[:\-]?\s*)?"
    r"(?:(?:response|output|assistant)\s*\(?\s*(A|B|1|2)\b|\(?(A|B)\)?" + _AFTER + r"|(tie|equal|neither|both)\b)",
    re.I,
)
_NAMED = re.compile(r"\b(?:response|output|assistant|answer)\s*\(?\s*(A|B|1|2)\)?\s+(?:is|was)\s+(?:better|superior|preferred|the winner)", re.I)
_VERDICT = re.compile(r"\b(?:verdict|winner|answer|choice|preferred)\s*(?:is)?\s*[:\-]?\s*(?:response|output|assistant)?\s*\(?\s*(A|B|tie)\b", re.I)
_TIE_WORDS = re.compile(r"\b(?:tie|equally good|equally bad|both (?:are )?equal)\b", re.I)
_MAP = {"a": "A", "1": "A", "b": "B", "2": "B", "c": "tie", "tie": "tie", "equal": "tie", "neither": "tie", "both": "tie"}


def parse_verdict(text: str | None) -> str | None:
    """``A``, ``B`` or ``tie`` from a judge's reply, or ``None`` when it cannot be told.

    Tried in order: ``[[A]]``-style brackets (``[[C]]`` = tie), a leading answer (``"B"``,
    ``"Response A"``, ``"Verdict: tie"``), "Response A is better", "verdict: B", tie words.
    Several different bracketed verdicts make the text ambiguous (``None``).
    """
    if not text:
        return None
    t = text.strip()
    found = {_MAP[m.lower()] for m in _BRACKET.findall(t)}
    if len(found) == 1:
        return found.pop()
    if len(found) > 1:
        return None
    m = _LEAD.match(t)
    if m:
        return _MAP[next(g for g in m.groups() if g).lower()]
    named = {_MAP[x.lower()] for x in _NAMED.findall(t)}
    if len(named) == 1:
        return named.pop()
    v = _VERDICT.findall(t)
    if v:
        return _MAP[v[-1].lower()]
    if _TIE_WORDS.search(t):
        return "tie"
    return None


_SCORE_PATTERNS = (
    re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]"),
    re.compile(r"\[RESULT\]\s*(\d+(?:\.\d+)?)", re.I),
    re.compile(r"\b(?:rating|score)\s*(?:is|of)?\s*[:=]?\s*(\d+(?:\.\d+)?)", re.I),
    re.compile(r"^\W*(\d+(?:\.\d+)?)\s*(?:/\s*\d+)?\b"),
    re.compile(r"\b(\d+(?:\.\d+)?)\s*/\s*(?:5|10)\b"),
)


def parse_score(text: str | None, lo: int = 1, hi: int = 5) -> float | None:
    """A score in ``[lo, hi]`` from ``[[7]]``, ``[RESULT] 4``, ``Score: 3``, a leading number or ``4/5``."""
    if not text:
        return None
    for pat in _SCORE_PATTERNS:
        m = pat.search(text.strip())
        if m:
            v = float(m.group(1))
            return v if lo <= v <= hi else None
    return None


def _norm_token(tok: str) -> str:
    return tok.strip().strip("[](){}.:*\"'").lower()


def label_probs(top: Iterable[tuple[str, float]]) -> dict[str, float] | None:
    """P(A), P(B), P(tie) from one position's top (token, logprob) pairs, renormalised."""
    mass = {"A": 0.0, "B": 0.0, "tie": 0.0}
    for tok, lp in top:
        n = _norm_token(tok)
        key = {"a": "A", "b": "B", "tie": "tie", "ti": "tie", "t": "tie", "c": "tie"}.get(n)
        if key is not None and lp is not None and math.isfinite(lp):
            mass[key] += math.exp(lp)
    total = sum(mass.values())
    if total <= 0:
        return None
    return {k: v / total for k, v in mass.items()}


def expected_score(top: Iterable[tuple[str, float]], lo: int, hi: int) -> float | None:
    """G-Eval expected score over the integer tokens in ``[lo, hi]`` among the top candidates."""
    num = den = 0.0
    for tok, lp in top:
        n = _norm_token(tok)
        if n.isdigit() and lo <= int(n) <= hi and lp is not None and math.isfinite(lp):
            p = math.exp(lp)
            num += p * int(n)
            den += p
    return num / den if den > 0 else None
