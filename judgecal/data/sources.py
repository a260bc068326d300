"""Label sources: which people a human label comes from, and selectors that name a set of them.

Every annotation carries a ``source``: a dataset's own annotators (``pandalm``, ``llmbar/Natural``, an
imported file's name), experts pulled from Label Studio (``label-studio:<project>``), or gold answers
(source ``gold`` or ``gold:<name>``, or an annotator named ``gold`` / ``*-gold`` such as LLMBar's
``llmbar-gold``). A *selector* names the labels an aggregation or an audit uses as its truth:

- an exact source name, e.g. ``pandalm`` or ``label-studio:Blind review``;
- ``experts``: every ``label-studio*`` source;
- ``dataset`` (or ``crowd``): a dataset's own annotators, i.e. neither experts nor gold;
- ``gold``: the gold labels;
- ``all``: every label, pooled, only when asked for by name.

A consensus is stored per method and source as ``<method>:<selector>`` (``ds:experts``,
``mv:pandalm``); a workspace whose labels come from one source keeps the plain method name (``ds``).
"""

from __future__ import annotations

import pandas as pd

from judgecal.errors import UserError

ALIASES = ("experts", "dataset", "crowd", "gold", "all")


class SourceError(UserError, ValueError):
    """A selector that names no labels, or a request that would pool several sources silently."""


def label_kind(source: pd.Series, annotator: pd.Series) -> pd.Series:
    """``experts``, ``gold`` or ``dataset`` for each label."""
    src, ann = source.astype(str), annotator.astype(str)
    gold = (src == "gold") | src.str.startswith("gold:") | (ann == "gold") | ann.str.endswith("-gold")
    expert = src.str.startswith("label-studio")
    kind = pd.Series("dataset", index=source.index, dtype=object)
    kind[expert] = "experts"
    kind[gold & ~expert] = "gold"
    return kind


def select(annotations: pd.DataFrame, selector: str) -> pd.DataFrame:
    """The labels ``selector`` names (see the module docstring); :class:`SourceError` when none."""
    if selector == "all":
        return annotations
    if selector in ("experts", "dataset", "crowd", "gold"):
        kind = label_kind(annotations["source"], annotations["annotator"])
        out = annotations[kind == ("dataset" if selector == "crowd" else selector)]
    else:
        out = annotations[annotations["source"].astype(str) == selector]
    if out.empty:
        raise SourceError(f"no human labels from source {selector!r}; sources here: "
                          f"{', '.join(sources(annotations)) or 'none'} (or experts, dataset, gold, all)")
    return out


def sources(annotations: pd.DataFrame) -> list[str]:
    """The distinct sources of ``annotations``, sorted."""
    return sorted({str(s) for s in annotations["source"].unique()}) if len(annotations) else []


def split_name(name: str) -> tuple[str, str | None]:
    """``"ds:experts"`` -> ``("ds", "experts")``; ``"ds"`` -> ``("ds", None)``. Only the first ``:``
    separates, so ``ds:label-studio:Blind review`` names the source ``label-studio:Blind review``."""
    method, sep, selector = name.partition(":")
    return method, (selector if sep else None)


def consensus_name(method: str, selector: str | None) -> str:
    return method if selector is None else f"{method}:{selector}"
