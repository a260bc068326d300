"""Span judges' answers: parse the quotes a judge gives and align each to character offsets.

A span judge answers with quotes of the text it judges, one per line (bullets, numbers and quotation
marks allowed), or ``NONE``. Each quote is aligned to ``text[start:end]`` by the first path that finds it:

1. ``exact``: the quote as written (stripped) is a substring of the text;
2. ``normalised``: both sides NFKD-decomposed without combining marks, case-folded, typographic quotes
   and dashes made plain, whitespace runs collapsed to one space; the match is mapped back to the
   original offsets through the index of every normalised character (a quote with ``...`` / ``…``
   matches its pieces in order, the span running from the first to the last);
3. ``fuzzy``: the best window of the normalised text by rapidfuzz's ``partial_ratio_alignment``
   (normalised Indel similarity of the quote against a window of its length, 0-100) when it reaches
   ``threshold`` (default 85) and the quote has at least ``min_fuzzy`` (8) characters; the window is
   widened to whole words.

A quote found nowhere is kept as ``unaligned`` (it is recorded, never dropped). When a quote occurs
several times, the first occurrence that overlaps no earlier quote's span is taken (an exact one, else a
normalised one, else the first exact one), so a judge quoting a repeated phrase twice marks both places.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rapidfuzz import fuzz

from judgecal.data.records import Span

MATCHES: tuple[str, ...] = ("exact", "normalised", "fuzzy", "unaligned")
_PLAIN = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                        "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"',
                        "\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
                        "\u2212": "-"})
_SPACES = re.compile(r"\s+")
_IS_SPACE = np.zeros(256, dtype=bool)
_IS_SPACE[[c for c in range(128) if chr(c).isspace()]] = True
_ELLIPSIS = re.compile(r"\s*(?:\.{3,}|\u2026)\s*")


@dataclass(frozen=True)
class Alignment:
    """Where one quote lies in the text: ``text[start:end]`` (``start == end == 0`` when unaligned)."""

    quote: str
    start: int
    end: int
    match: str  # one of MATCHES
    similarity: float  # 100 for exact and normalised matches; the fuzzy score otherwise

    @property
    def aligned(self) -> bool:
        return self.match != "unaligned"


def normalise(text: str) -> tuple[str, np.ndarray]:
    """``text`` normalised (see the module) and, per normalised character, its offset in ``text``."""
    if not text:
        return "", np.zeros(0, dtype=np.int64)
    if text.isascii():  # vectorised: lower-casing keeps offsets, only whitespace runs collapse
        b = np.frombuffer(text.lower().encode("ascii"), dtype=np.uint8)
        space = _IS_SPACE[b]
        keep = ~(space & np.concatenate(([False], space[:-1])))
        return np.where(space, np.uint8(32), b)[keep].tobytes().decode("ascii"), np.flatnonzero(keep)
    chars: list[str] = []
    index: list[int] = []
    for i, c in enumerate(text):
        if c.isspace():
            if not chars or chars[-1] != " ":
                chars.append(" ")
                index.append(i)
            continue
        for d in unicodedata.normalize("NFKD", c).translate(_PLAIN).casefold():
            if not unicodedata.combining(d):
                chars.append(d)
                index.append(i)
    return "".join(chars), np.asarray(index, dtype=np.int64)


def _clean_quote(q: str) -> str:
    return q.strip().strip("\"'`\u2018\u2019\u201c\u201d\u00ab\u00bb").strip()


def _occurrences(hay: str, needle: str) -> list[int]:
    out, k = [], hay.find(needle)
    while k >= 0:
        out.append(k)
        k = hay.find(needle, k + 1)
    return out


class Aligner:
    """Aligns quotes to one text; the normalised text is built once, on the first quote that needs it."""

    def __init__(self, text: str, threshold: float = 85.0, min_fuzzy: int = 8) -> None:
        self.text, self.threshold, self.min_fuzzy = text, threshold, min_fuzzy
        self._norm: tuple[str, np.ndarray] | None = None
        self.taken: list[tuple[int, int]] = []  # spans of the quotes aligned so far

    @property
    def norm(self) -> tuple[str, np.ndarray]:
        if self._norm is None:
            self._norm = normalise(self.text)
        return self._norm

    def _free(self, start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in self.taken)

    def _pick(self, spans: Sequence[tuple[int, int]]) -> tuple[int, int]:
        return next((sp for sp in spans if self._free(*sp)), spans[0])

    def _to_original(self, ns: int, ne: int) -> tuple[int, int]:
        index, t = self.norm[1], self.text
        end = int(index[ne - 1]) + 1
        while end < len(t) and unicodedata.combining(t[end]):  # marks the normalised text dropped
            end += 1
        return int(index[ns]), end

    def _normalised(self, nq: str, free_only: bool = False) -> tuple[int, int] | None:
        ntext = self.norm[0]
        hits = [(k, k + len(nq)) for k in _occurrences(ntext, nq)]
        if free_only:
            hits = [h for h in hits if self._free(*self._to_original(*h))]
            if not hits:
                return None
        if not hits:
            pieces = [p for p in _ELLIPSIS.split(nq) if p]
            if len(pieces) < 2:
                return None
            pos, first = 0, -1
            for p in pieces:  # every piece, in order
                k = ntext.find(p, pos)
                if k < 0:
                    return None
                first, pos = (k if first < 0 else first), k + len(p)
            hits = [(first, pos)]
        spans = [self._to_original(*h) for h in hits]
        return self._pick(spans)

    def _fuzzy(self, nq: str) -> tuple[int, int, float] | None:
        ntext = self.norm[0]
        if len(nq) < self.min_fuzzy or len(nq) > len(ntext):
            return None
        res = fuzz.partial_ratio_alignment(nq, ntext, score_cutoff=self.threshold)
        if res is None or res.dest_end <= res.dest_start:
            return None
        start, end = self._to_original(res.dest_start, res.dest_end)
        t = self.text
        while start > 0 and t[start - 1].isalnum() and t[start].isalnum():  # whole words
            start -= 1
        while end < len(t) and t[end - 1].isalnum() and t[end].isalnum():
            end += 1
        while start < end and t[start].isspace():
            start += 1
        while end > start and t[end - 1].isspace():
            end -= 1
        return (start, end, float(res.score)) if end > start else None

    def align(self, quote: str) -> Alignment:
        """One quote's :class:`Alignment` (exact, then normalised, then fuzzy, else unaligned)."""
        q = _clean_quote(quote)
        out = Alignment(quote, 0, 0, "unaligned", 0.0)
        hits = [(k, k + len(q)) for k in _occurrences(self.text, q)] if q else []
        free = next((h for h in hits if self._free(*h)), None)
        if free is not None:
            out = Alignment(quote, *free, "exact", 100.0)
        elif q:
            nq = (_SPACES.sub(" ", q.lower()) if q.isascii() else normalise(q)[0]).strip()
            if nq and (found := self._normalised(nq, free_only=bool(hits))) is not None:
                out = Alignment(quote, *found, "normalised", 100.0)  # a free place only found normalised
            elif hits:
                out = Alignment(quote, *hits[0], "exact", 100.0)
            elif nq and (fz := self._fuzzy(nq)) is not None:
                out = Alignment(quote, fz[0], fz[1], "fuzzy", round(fz[2], 2))
        if out.aligned:
            self.taken.append((out.start, out.end))
        return out


def align_quotes(text: str, quotes: Sequence[str], threshold: float = 85.0, min_fuzzy: int = 8) -> list[Alignment]:
    """Every quote aligned to ``text``, in order (see :class:`Aligner`)."""
    al = Aligner(text, threshold, min_fuzzy)
    return [al.align(q) for q in quotes]


# -- parsing a judge's answer ------------------------------------------------------------------------
_NONE = re.compile(r"^[\W_]*(?:none|nothing|no (?:\w+ )?(?:spans?|quotes?|problems?|errors?|hallucinations?))\b",
                   re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+\u2022\u00b7>]+|\(?\d{1,3}[.):\]]|\[\d{1,3}\])\s*")
_PREFIX = re.compile(r"^(?:(?:unsupported|problematic|hallucinated)?\s*(?:quote|span|text|answer)s?\s*\d*)\s*:\s*",
                     re.IGNORECASE)
_QUOTED = re.compile(r'"([^"\n]+)"|\u201c([^\u201d\n]+)\u201d|\u00ab([^\u00bb\n]+)\u00bb|`([^`\n]+)`')


def parse_quotes(raw: str) -> list[str] | None:
    """The quotes of a judge's answer, in order (a repeated quote too): ``[]`` for ``NONE`` (nothing marked),
    ``None`` when there is nothing to read (empty, or only a heading such as ``Spans:``).

    A line's quoted parts (``"..."``, ``“...”``, ``«...»``, backticks) are its quotes; a line with none
    is one quote once bullets, numbers and a ``Quote:`` prefix are removed. A line ending in ``:``
    without quotation marks is a heading and skipped.
    """
    lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
    if not lines:
        return None
    if _NONE.match(_BULLET.sub("", lines[0])):
        return []
    out: list[str] = []
    for ln in lines:
        body = _PREFIX.sub("", _BULLET.sub("", ln)).strip()
        found = [next(g for g in m.groups() if g is not None) for m in _QUOTED.finditer(body)]
        if not found and body and not body.endswith(":"):
            found = [body]
        for q in found:
            q = _clean_quote(q)
            if q:
                out.append(q)
    return out or None


_COVERAGE_ALIASES = {"fully": "full", "partially": "partial", "not": "none", "no": "none"}


def parse_coverage(raw: str, labels: Sequence[str]) -> tuple[str | None, list[str]]:
    """A key-fact judge's answer: the first of ``labels`` it names (``fully``, ``partially``, ``not`` and
    ``no`` read as ``full``, ``partial`` and ``none`` when those are labels) and the quotes after it
    (none for ``none``); ``(None, [])`` when it names no label."""
    words = {w.lower(): w for w in labels}
    words.update({a: words[t] for a, t in _COVERAGE_ALIASES.items() if t in words})
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(words, key=len, reverse=True))) + r")\b",
                         re.IGNORECASE)
    lines = [ln for ln in raw.splitlines() if ln.strip()]
    for k, ln in enumerate(lines):
        m = pattern.search(ln)
        if m is None:
            continue
        label = words[m.group(1).lower()]
        rest = [mm.group(0) for mm in _QUOTED.finditer(ln[m.end():])] + lines[k + 1:]
        quotes = (parse_quotes("\n".join(rest)) or []) if label != words.get("none") else []
        return label, quotes
    return None, []


def read_span_answer(raw: str, text: str, coverage: Sequence[tuple[str, float]] = (),
                     threshold: float = 85.0) -> tuple[str, float | None, list[Alignment]]:
    """A span judge's answer about ``text``: status (``ok``, or ``invalid`` when nothing can be read:
    no quotes and no ``NONE``, or no coverage label when ``coverage`` is asked for), the coverage score
    and every quote's :class:`Alignment`."""
    score: float | None = None
    if coverage:
        label, quotes = parse_coverage(raw, [c for c, _ in coverage])
        if label is None:
            return "invalid", None, []
        score = dict(coverage)[label]
    else:
        parsed = parse_quotes(raw)
        if parsed is None:
            return "invalid", None, []
        quotes = parsed
    return "ok", score, align_quotes(text, quotes, threshold)


# -- judge spans -------------------------------------------------------------------------------------
def judge_spans(item_id: str, rater: str, source: str, alignments: Sequence[Alignment], label: str = "",
                candidate: int = 0) -> list[Span]:
    """The spans table rows of one span judgment (``source`` = the judgment's key, ``kind`` judge).

    Each aligned place is one span whose ``note`` is JSON ``{"quotes", "match", "similarity"}``.
    Unaligned quotes are kept in one empty span (``start == end == 0``) whose note is
    ``{"unaligned": [...]}``; that row, or a plain empty span when the judge quoted nothing, also
    says the judge looked at the text.
    """
    places: dict[tuple[int, int], dict[str, Any]] = {}
    unaligned = [a.quote for a in alignments if not a.aligned]
    for a in alignments:
        if a.aligned:
            p = places.setdefault((a.start, a.end), {"quotes": [], "match": a.match, "similarity": a.similarity})
            p["quotes"].append(a.quote)
    out = [Span(item_id, rater, candidate, s, e, label, source, "judge", note=json.dumps(p, ensure_ascii=False))
           for (s, e), p in places.items()]
    if unaligned:
        out.append(Span(item_id, rater, candidate, 0, 0, "", source, "judge",
                        note=json.dumps({"unaligned": unaligned}, ensure_ascii=False)))
    elif not out:
        out.append(Span(item_id, rater, candidate, 0, 0, "", source, "judge"))
    return out


def quote_counts(spans: Any) -> dict[str, dict[str, int]]:
    """Per judge (rater), from a spans frame of judge spans: how many quotes took each path of
    :data:`MATCHES`, and ``quotes`` in all."""
    out: dict[str, dict[str, int]] = {}
    for rater, note in zip(spans["rater"], spans["note"], strict=True):
        c = out.setdefault(str(rater), dict.fromkeys((*MATCHES, "quotes"), 0))
        if not isinstance(note, str):
            continue
        try:
            d = json.loads(note)
        except json.JSONDecodeError:
            continue
        if not isinstance(d, dict):
            continue
        if "unaligned" in d:
            c["unaligned"] += len(d["unaligned"])
            c["quotes"] += len(d["unaligned"])
        elif d.get("match") in MATCHES:
            c[d["match"]] += len(d.get("quotes") or ())
            c["quotes"] += len(d.get("quotes") or ())
    return out


__all__ = ["MATCHES", "Aligner", "Alignment", "align_quotes", "judge_spans", "normalise", "parse_coverage",
           "parse_quotes", "quote_counts", "read_span_answer"]
