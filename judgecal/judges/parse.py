"""Parse verdicts and scores from judge text; anything unparsable is ``None`` (recorded ``invalid``).

A binary or categorical item's label: :func:`parse_label` (the item's own labels, never hard-coded).

Token probabilities: ``label_probs`` renormalises the first answer token's top log-probabilities
over the labels (``label_set_probs`` over an item's label set), ``expected_score`` is the G-Eval
estimate ``sum_s s * p(s) / sum_s p(s)`` (Liu et al., 2023, "G-Eval").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

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


# -- labels of a binary or categorical item ------------------------------------------------------
# Labels come from the user's file: untrusted text, only ever put into a pattern through re.escape.
_QUOTES = "`\"'\u201c\u201d\u2018\u2019"
_OPEN = rf"[\s*_#>{_QUOTES}\[(]*"  # markdown, quotes and brackets before an answer
_OPEN_LINE = rf"[ \t*_#>{_QUOTES}\[(]*"  # the same within one line
_CLOSE = rf"(?=$|[\s.,;:!?)\]}}*_{_QUOTES}/|\\-])"  # what may follow the label itself
_END = rf"(?=[ \t]*(?:$|[\n.,;:!?)\]}}*_{_QUOTES}]))"  # a second label that ends the answer
_SEP = r"(?:[\s*_]*[:=\-\u2013\u2014])?"  # ":", "=", a dash, after markdown
_LEAD_IN = (r"(?:(?:the|my)\s+)?(?:final\s+)?(?:answer|verdict|label|judge?ment|decision|grade|result|"
            r"classification|assessment|evaluation)(?:\s*is\b)?" + _SEP)
# anywhere: a colon or "=", never a dash (a reason may say "the answer - no doubt - is")
_MARKER = (r"(?<!\w)(?:final\s+)?(?:answer|verdict|label|judge?ment|decision|grade|classification)"
           r"(?:\s*is\b)?[\s*_]*[:=]")
_SHUT = rf"[*_{_QUOTES}\u201d\u2019)\]]*"  # markdown and quotes closing the label
_JOIN = r"\s*(?:/|\||&|,|\bor\b|\band\b|\bvs\b\.?)"  # "pass/fail", "yes or no": two labels at once
# Each run of optional characters is matched by one quantifier (no two adjacent ones share characters), so
# a failed match backtracks linearly, whatever the judge wrote.


@dataclass(frozen=True)
class _LabelPatterns:
    bracket: re.Pattern[str]
    lead: re.Pattern[str]
    second: re.Pattern[str]
    marker: re.Pattern[str]
    line: re.Pattern[str]


def _alternatives(labels: tuple[str, ...]) -> str:
    """The labels as one alternation, longest first (``C++`` before ``C``), each escaped; inner spaces
    match any run of whitespace."""
    shown = sorted({" ".join(lab.split()) for lab in labels if lab.strip()}, key=len, reverse=True)
    return "|".join(re.escape(lab).replace(r"\ ", r"\s+") for lab in shown)


@lru_cache(maxsize=256)
def _label_patterns(labels: tuple[str, ...]) -> _LabelPatterns:
    alt = f"(?P<label>{_alternatives(labels)})"
    flags = re.IGNORECASE
    return _LabelPatterns(
        bracket=re.compile(r"\[\[\s*" + alt + r"\s*\]\]", flags),
        lead=re.compile(r"^" + _OPEN + f"(?:{_LEAD_IN}{_OPEN})?" + alt + _CLOSE, flags),
        second=re.compile(r"^" + _SHUT + _JOIN + _OPEN + alt + _END, flags),
        marker=re.compile(_MARKER + _OPEN + alt + _CLOSE, flags | re.MULTILINE),
        line=re.compile(r"^" + _OPEN_LINE + alt + rf"[ \t.!*_{_QUOTES})\]]*$", flags | re.MULTILINE),
    )


def _which(found: str, labels: tuple[str, ...]) -> str | None:
    """The label a matched text names: equal ignoring case and inner whitespace; two labels that differ
    only in case (a pathological file) are told apart by exact case, else the text is ambiguous."""
    key = " ".join(found.split()).casefold()
    hits = [lab for lab in labels if " ".join(lab.split()).casefold() == key]
    if len(hits) > 1:
        hits = [lab for lab in hits if " ".join(lab.split()) == " ".join(found.split())]
    return hits[0] if len(hits) == 1 else None


def _one(found: Iterable[str | None]) -> tuple[bool, str | None]:
    """(anything found, the one label found or ``None`` when it was ambiguous)."""
    got = set(found)
    if not got:
        return False, None
    return True, (got.pop() if len(got) == 1 and None not in got else None)


def parse_label(text: str | None, labels: Iterable[str]) -> str | None:
    """The one label of ``labels`` that a judge's answer gives, or ``None`` (recorded ``invalid``).

    Matching ignores case and surrounding markdown, quotes and punctuation; the label is returned as
    declared. Only the decisive position counts, tried in this order:

    1. ``[[label]]`` brackets anywhere: one label in them, or ``None`` when they name two;
    2. the answer's start, after an optional lead-in (``PASS``, ``**fail**``, ``"yes".``, ``Answer: PASS``,
       ``Verdict - yes``, ``The answer is no``), followed by anything (a reason), together with every
       ``answer:``/``verdict:``/``label:`` marker elsewhere (``Reason: ... Answer: fail``, the reason
       first); the start naming two labels at once (``pass/fail``, ``yes or no``) or the start and a
       marker naming different labels is ambiguous (``None``);
    3. otherwise a line that is one label and nothing else (``...reason.\\nFAIL``), if all such lines agree.

    A label named inside a sentence (``the response would pass if``) is not an answer. A label that
    is part of a longer word or token (``fails``, ``C`` in ``C++`` when only ``C`` is a label) does not
    match. ``labels`` are literal text, never patterns.
    """
    labs = tuple(labels)
    if not text or not any(lab.strip() for lab in labs):
        return None
    t = text.strip()
    pats = _label_patterns(labs)
    seen, label = _one(_which(m.group("label"), labs) for m in pats.bracket.finditer(t))
    if seen:
        return label
    decisive: list[str | None] = []
    lead = pats.lead.match(t)
    if lead:
        first = _which(lead.group("label"), labs)
        second = pats.second.match(t[lead.end():])
        if second and _which(second.group("label"), labs) != first:
            return None
        decisive.append(first)
    decisive += [_which(m.group("label"), labs) for m in pats.marker.finditer(t)]
    seen, label = _one(decisive)
    if seen:
        return label
    return _one(_which(m.group("label"), labs) for m in pats.line.finditer(t))[1]


AMBIGUOUS_SHARE = 0.05  # a first token that could begin two labels may hold at most this share of the label mass


def _token_labels(tok: str, labels: tuple[str, ...]) -> list[str]:
    """The labels a first answer token could begin: the token (ignoring case and surrounding space, else
    also its markdown and punctuation) is a prefix of the label."""
    raw = tok.strip().casefold()
    if not raw:
        return []
    hits = [lab for lab in labels if lab.strip().casefold().startswith(raw)]
    bare = _norm_token(tok)
    if not hits and bare and bare != raw:
        hits = [lab for lab in labels if lab.strip().casefold().startswith(bare)]
    return hits


def label_set_probs(top: Iterable[tuple[str, float]], labels: Iterable[str],
                    reply: str | None = None) -> dict[str, float] | None:
    """P(label) for each of ``labels`` from the first answer token's top (token, logprob) pairs.

    A token counts for a label when it could begin it (``pass``, `` PASS``, ``P`` and ``**pass`` all
    begin ``pass``; ``un`` begins ``unsafe``); the masses are renormalised over the labels, as
    :func:`label_probs` does for ``A``/``B``/``tie``. A token that could begin two or more labels (``C``
    for ``C`` and ``C++``, ``1`` for ``1`` and ``10``, ``g`` for ``good`` and ``great``) says nothing about
    which one follows: its mass goes to none of them, and when such tokens hold :data:`AMBIGUOUS_SHARE`
    or more of all the label mass the probabilities are not given (``None``) rather than guessed.

    With ``reply`` (the judge's text), they are given only when the reply itself begins with one of
    those label tokens: otherwise the answer is elsewhere (after ``Answer:``, ``**`` or a sentence) and
    the first token's probabilities are not the answer's. ``None`` too when no top token begins a label.
    """
    labs = tuple(labels)
    mass = dict.fromkeys(labs, 0.0)
    ambiguous = 0.0
    opens = False
    start = reply.lstrip().casefold() if reply is not None else ""
    for tok, lp in top:
        if lp is None or not math.isfinite(lp):
            continue
        hits = _token_labels(tok, labs)
        if hits and tok.strip() and start.startswith(tok.strip().casefold()):
            opens = True
        if len(hits) == 1:
            mass[hits[0]] += math.exp(lp)
        elif hits:
            ambiguous += math.exp(lp)
    total = sum(mass.values())
    if total <= 0 or ambiguous >= AMBIGUOUS_SHARE * (total + ambiguous) or (reply is not None and not opens):
        return None
    return {k: v / total for k, v in mass.items()}
