"""Names people give raters (judges, specs) against the keys judgecal itself uses beside them.

The audit keys a model's win rates by rater: ``humans`` (the human consensus) beside every judge, and
the explorer sets ``chance`` beside them. A judge named ``humans`` would replace the human reference.
Such a name is refused where it enters (a judge spec's ``name``, an imported verdict's ``judge``), and a
stored one that collides (from an older workspace) is shown namespaced (:func:`rater_key`).
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Iterable

RESERVED_RATERS = frozenset({"humans", "chance", "consensus", "truth"})
MAX_NAME_CHARS = 200  # a judge's, annotator's or model's name


def reserved_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a judge, or ``None``."""
    if name.strip().lower() in RESERVED_RATERS:
        return (f"{name!r} is a reserved name ({', '.join(sorted(RESERVED_RATERS))} stand for the humans and "
                "references beside every judge); name the judge otherwise")
    return None


def judge_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a judge a command creates (a panel, an aligned judge), or ``None``: the
    checks an imported verdict's ``judge`` passes."""
    if not name.strip():
        return "a judge's name is empty"
    if len(name) > MAX_NAME_CHARS:
        return f"a judge's name is {len(name):,} characters; the limit is {MAX_NAME_CHARS}"
    return reserved_name_problem(name)


def rater_key(judge: str) -> str:
    """The key a judge is listed under beside the reserved ones: its name, or ``judge:<name>`` when that
    name is reserved."""
    return f"judge:{judge}" if judge.strip().lower() in RESERVED_RATERS else judge


def fold(name: str) -> str:
    """``name`` as a person reads it: NFKC-normalised, case-folded, invisible (format, ``Cf``) characters
    dropped, each run of white space one space and none at either end."""
    kept = "".join(ch for ch in unicodedata.normalize("NFKC", name) if unicodedata.category(ch) != "Cf")
    return " ".join(kept.casefold().split())


def lookalikes(new: Iterable[str], stored: Iterable[str] = ()) -> list[list[str]]:
    """Groups of two or more different names, at least one of them in ``new``, that read the same
    (:func:`fold`): ``"gpt-4"`` and ``"gpt-4 "`` are two judges to judgecal, one to the person who wrote them.
    Each group sorted, the groups in the order of their first name."""
    fresh = set(new)
    groups: defaultdict[str, set[str]] = defaultdict(set)
    for name in fresh | set(stored):
        groups[fold(name)].add(name)
    return sorted(sorted(g) for g in groups.values() if len(g) > 1 and g & fresh)
