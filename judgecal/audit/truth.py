"""The truth an audit uses: a stored consensus, named by method and label source, never a silent mix.

``ds:experts`` is the Dawid-Skene consensus of the Label Studio experts' labels, ``mv:pandalm`` the
majority vote of PandaLM's own annotators (see :mod:`judgecal.data.sources`). A plain method name
(``ds``) is accepted only while the workspace's human labels come from one source; with several it
would name a pool, and the audit stops with the names to choose from.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from judgecal.data.sources import SourceError, select, sources, split_name
from judgecal.data.store import Workspace
from judgecal.stats.agreement import fleiss_kappa
from judgecal.stats.trivial import chance_accuracy


def resolve_truth(ws: Workspace, consensus: str, n_boot: int = 2000,
                  seed: int = 0) -> tuple[pd.Series, dict[str, Any]]:
    """``item_id -> label`` of the consensus ``consensus`` and the report's description of it: method,
    source, the sources it draws on, how many annotators gave how many labels on its items, and their
    Fleiss' kappa (item-bootstrap CI), and the accuracy of a rater answering at random with its label shares
    ``p_k``: ``Σ p_k²``."""
    # plain object indexes: every judge's lookup reuses this index's hash table (a pyarrow-backed string
    # index would be converted to Python strings again on each lookup)
    cons = ws.annotations_repo.consensus_labels(consensus)
    truth = pd.Series(cons.to_numpy(dtype=str).astype(object),
                      index=pd.Index(cons.index.to_numpy(dtype=str).astype(object), dtype=object))
    method, selector = split_name(consensus)
    ann = ws.annotations_repo.annotations_frame()
    present = sources(ann)
    if selector is None and len(present) > 1:
        stored = sorted(m for m in set(ws.annotations_repo.consensus_frame()["method"]) if m.startswith(f"{method}:"))
        raise SourceError(
            f"consensus {consensus!r} does not say whose labels are the truth, and this workspace holds labels "
            f"from {len(present)} sources ({', '.join(present)}); choose one: "
            + ", ".join(stored or [f"{method}:{s}" for s in present]) + f" (or {method}:experts, {method}:all)")
    labels = ann if selector is None else _select_or_empty(ann, selector)
    labels = labels[labels["item_id"].isin(truth.index)]
    about: dict[str, Any] = {
        "method": consensus, "aggregator": method,
        "source": selector if selector is not None else (present[0] if present else None),
        "sources": sources(labels), "n_items": int(len(truth)),
        "label_counts": {str(k): int(v) for k, v in truth.value_counts().items()},
        "n_annotators": int(labels["annotator"].nunique()), "n_labels": int(len(labels)),
    }
    if len(labels):
        about["fleiss_kappa"] = fleiss_kappa(labels, n_boot, seed)
    about["chance_accuracy"] = chance_accuracy(about["label_counts"])  # Σ p_k²: a random rater's accuracy
    return truth, about


def _select_or_empty(ann: pd.DataFrame, selector: str) -> pd.DataFrame:
    try:
        return select(ann, selector)
    except SourceError:
        return ann.iloc[:0]


def _n(count: Any, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def describe_spans(spans: dict[str, Any]) -> str:
    """One line naming the span truth (the report's ``spans``), e.g. ``human spans of source faithbench: 3
    annotators on 750 items, 2187 marked spans (consensus: the characters more than half of an item's
    annotators marked)``, or why there is none."""
    if not spans.get("source"):
        return f"no span consensus: {spans.get('note') or 'no human spans to compare with'}"
    where = spans["source"]
    if spans.get("sources") and spans["sources"] != [where]:
        where += f" ({', '.join(spans['sources'])})"
    if "n_annotators" not in spans:  # an audit.json written before the counts were kept
        return f"human spans of source {where}"
    return (f"human spans of source {where}: {_n(spans['n_annotators'], 'annotator')} on "
            f"{_n(spans['n_items'], 'item')}, {_n(spans['n_spans'], 'marked span')} (consensus: the characters more "
            "than half of an item's annotators marked)")


def describe(about: dict[str, Any]) -> str:
    """One line naming the truth, e.g. ``ds over source experts (label-studio:Blind review): 3
    annotators, 60 labels on 20 items``."""
    src = about.get("source")
    where = "" if src is None else f" of source {src}"
    if about.get("sources") and about["sources"] != [src]:
        where += f" ({', '.join(about['sources'])})"
    def n(count: Any, word: str) -> str:
        return f"{count} {word}" + ("" if count == 1 else "s")

    return (f"{about['aggregator']}{where}: {n(about.get('n_annotators', 0), 'annotator')}, "
            f"{n(about.get('n_labels', 0), 'label')} on {n(about['n_items'], 'item')}")
