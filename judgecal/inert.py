"""Untrusted text made inert at an output boundary: terminals, PDF text and CSV downloads.

Names of judges, models, annotators, specs and items, and the text of model outputs, come from files
and models. Shown raw they can act: an ANSI/OSC escape clears a terminal or plants a hyperlink, a
bidirectional override reorders what a reader sees, a CSV cell starting with ``=`` runs as a formula in
a spreadsheet. Every surface that shows such text passes it through here, once, where it leaves:

- :func:`term`: C0 and C1 control characters, DEL, the bidirectional controls and the characters that print
  as nothing (zero-width, line separators) are shown escaped (``\\x1b``, ``\\u202e``, ``\\u200d``), so
  ``ESC]8;;…`` prints as text; a backslash stays a backslash.
  ``keep_lines=True`` keeps newlines and tabs (multi-line messages and model text).
- :func:`inert_tree`: :func:`term` over every string (keys too) of a JSON-like tree.
- :func:`csv_cell` / :func:`csv_frame`: a text cell starting with ``= + - @`` (or a tab or carriage
  return, which spreadsheets skip before reading a formula) gets a leading ``'``, as OWASP's CSV
  injection guidance says, unless the text is just a number or a figure with its interval; control
  characters are escaped as for a terminal. Numbers stay numbers.

- :func:`isolated`: :func:`term` (newlines kept), and a text holding right-to-left letters wrapped in the first-strong
  isolate ``U+2068``…``U+2069`` (plain text's ``dir="auto"``), so it never reorders the text around it: for surfaces
  that take no markup (Streamlit markdown, chart labels); :func:`isolated_frame`: the same over a table's text cells
  (the explorer's grids).

HTML is escaped by the templates' autoescaping (and isolated there with ``<bdi>`` / ``dir="auto"``), not here.
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Any

# C0 controls, DEL, C1 controls, the Unicode bidirectional marks, embeddings, overrides and isolates, and the
# characters that print as nothing (soft hyphen, Mongolian vowel separator, zero-width space/joiners, word joiner
# and invisible operators, byte-order mark) or break a line where none is seen (line and paragraph separators):
# shown, ``judge`` and ``jud\u200dge`` never print alike
_UNSEEN = "\xad\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_UNSEEN}]")
_CONTROL_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_UNSEEN}]")
# the blocks that hold the right-to-left letters (Hebrew to NKo and beyond, their presentation forms, the
# supplementary right-to-left scripts): a cell with none of these nor a control character is shown as it is
_MAYBE_RTL_OR_CONTROL = f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_UNSEEN}\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufefe" \
    "\U00010800-\U00010fff\U0001e800-\U0001efff]"
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
# a number, or a figure as the catalogue writes it, ``-0.038 (-0.158–0.049)``: digits, signs, points and
# parentheses only (no letter but an exponent's e), so no function, reference or DDE call can hide in it
_NUM = r"[+\-−]?(\d[\d,]*\.?\d*|\.\d+)([eE][+-]?\d+)?%?"
_NUMBER = re.compile(rf"{_NUM}( \({_NUM}–{_NUM}\))?")


def _escape(m: re.Match[str]) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def term(text: Any, keep_lines: bool = False) -> str:
    """``text`` as a string whose control characters are shown escaped (never acted on)."""
    s = text if isinstance(text, str) else str(text)
    return (_CONTROL_KEEP_LINES if keep_lines else _CONTROL).sub(_escape, s)


def isolated(text: Any) -> str:
    """``text`` through :func:`term` (newlines kept), wrapped in ``U+2068``…``U+2069`` (first-strong isolate) when it
    holds a right-to-left letter: shown as written, in its own direction, without reordering its neighbours."""
    s = term(text, keep_lines=True)
    return f"\u2068{s}\u2069" if any(unicodedata.bidirectional(c) in ("R", "AL") for c in s) else s


def inert_tree(obj: Any) -> Any:
    """Every string of a JSON-like tree (dict keys included) through :func:`term`, newlines kept; a dataclass
    (a surface's typed view) is walked field by field."""
    if isinstance(obj, str):
        return term(obj, keep_lines=True)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: inert_tree(getattr(obj, f.name))
                                           for f in dataclasses.fields(obj) if f.init})
    if isinstance(obj, dict):
        return {(term(k, keep_lines=True) if isinstance(k, str) else k): inert_tree(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [inert_tree(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(inert_tree(v) for v in obj)
    return obj


def csv_cell(value: Any) -> Any:
    """A cell for a CSV download: text made inert (see the module docstring), anything else unchanged. A
    text that is just a number (``-0.25``, ``+3``, ``1e-5``) or a figure with its interval
    (``-0.038 (-0.158–0.049)``) is left as it is: it holds nothing a spreadsheet could run."""
    if not isinstance(value, str):
        return value
    s = term(value, keep_lines=True)
    return "'" + s if s.startswith(FORMULA_PREFIXES) and not _NUMBER.fullmatch(s) else s


_JSON_UNSEEN = re.compile(f"[\x7f-\x9f{_UNSEEN}]")


def inert_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with DEL, the C1 controls, the bidirectional controls and
    the characters that print as nothing written as ``\\uXXXX`` escapes: the same JSON to a parser, inert in a
    terminal (only a string can hold them, and an escape is valid there); other letters stay as they are."""
    return _JSON_UNSEEN.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def isolated_frame(frame: Any) -> Any:
    """A copy of a pandas frame to show in a grid: each text cell through :func:`isolated` (control characters shown
    escaped, a right-to-left text isolated), found by one vectorised scan per column; numbers stay numbers. The
    column names too, each made unique (a model named as another column gets `` (2)``: a grid needs one name each)."""
    out = frame.copy()
    names: list[str] = []
    for c in out.columns:
        shown = name = isolated(c)
        k = 2
        while name in names:
            name, k = f"{shown} ({k})", k + 1
        names.append(name)
    out.columns = names
    for i, dtype in enumerate(out.dtypes):
        if str(dtype) not in ("object", "string", "str"):
            continue
        col = out.iloc[:, i]
        text = col.map(lambda v: isinstance(v, str))
        hit = text & col.where(text, "").astype(str).str.contains(_MAYBE_RTL_OR_CONTROL, regex=True)
        if hit.any():
            col = col.astype(object).copy()
            col[hit] = col[hit].map(isolated)
            out.isetitem(i, col)
    return out


def csv_frame(frame: Any) -> Any:
    """A copy of a pandas frame ready for ``to_csv``: every text cell and column name through :func:`csv_cell`."""
    out = frame.copy()
    out.columns = [csv_cell(str(c)) for c in out.columns]
    for i, dtype in enumerate(out.dtypes):
        if str(dtype) in ("object", "string", "str"):
            out.isetitem(i, out.iloc[:, i].map(csv_cell))
    return out
