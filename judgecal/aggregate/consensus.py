"""Compute and store the human consensus of a workspace."""

from __future__ import annotations

import pandas as pd

from judgecal.aggregate.models import AGGREGATORS, MajorityVote
from judgecal.data.records import Consensus
from judgecal.data.sources import consensus_name, select, sources
from judgecal.data.store import Workspace
from judgecal.errors import InputError


def consensus_frame(annotations: pd.DataFrame, method: str = "ds", labelled: bool = False) -> pd.DataFrame:
    """``item_id, label, posterior`` for every annotated item, by ``method`` (``ds`` or ``mv``).

    ``labelled``: the items carry one declared label set (binary or categorical), so a majority vote's
    even split is broken by sorted label order, never turned into the pairwise ``tie``.
    """
    if method not in AGGREGATORS:
        raise InputError(f"unknown consensus method {method!r}; known: {', '.join(AGGREGATORS)}",
                         name="method")
    if annotations.empty:
        return pd.DataFrame(columns=["item_id", "label", "posterior"])
    model = (MajorityVote(tie_break=(), ab_tie=False) if labelled and method == "mv"
             else AGGREGATORS[method]()).fit(annotations)
    probas = model.probas_
    posts = [{str(k): float(v) for k, v in row.items() if v > 0} for row in probas.to_dict(orient="records")]
    return pd.DataFrame({"item_id": probas.index.astype(str), "label": model.labels_.reindex(probas.index).to_numpy(),
                         "posterior": posts})


def _by_label_set(annotations: pd.DataFrame, method: str, sets: pd.Series) -> pd.DataFrame:
    """:func:`consensus_frame` fitted apart for the items without a label set (pairwise verdicts, scores)
    and for each label set (``LabelSet.key()``: each criterion of a record is a question of its own, with
    annotators' own confusion matrices); one frame."""
    if sets.empty:
        return consensus_frame(annotations, method)
    number: dict[tuple[object, ...], int] = {}
    code_of = {str(i): number.setdefault(ls.key(), len(number)) for i, ls in sets.items()}
    codes = annotations["item_id"].astype(str).map(code_of).fillna(-1).astype(int).to_numpy()
    frames = [consensus_frame(annotations[codes == c], method, labelled=int(c) >= 0) for c in sorted(set(codes))]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else consensus_frame(annotations.iloc[:0], method)


def judges_as_annotators(ws: Workspace, judges: tuple[str, ...]) -> pd.DataFrame:
    """Each judge's decisive verdicts as extra annotators named ``judge:<name>`` (one per order)."""
    j = ws.judgments_repo.judgments_frame(columns=("item_id", "judge", "order", "verdict"))
    j = j[j["judge"].isin(judges) & j["verdict"].isin(["A", "B", "tie"])]
    return pd.DataFrame({"item_id": j["item_id"], "annotator": "judge:" + j["judge"] + ":" + j["order"],
                         "label": j["verdict"]})


def compute_consensus(ws: Workspace, methods: tuple[str, ...] = ("ds", "mv"),
                      judges: tuple[str, ...] = (), source: str | None = None) -> dict[str, int]:
    """Aggregate the human annotations with each method and store the result per method and source.

    ``source`` is a selector (:mod:`judgecal.data.sources`): the result is stored as
    ``<method>:<source>``. Without it, a workspace whose labels come from one source stores the plain
    method name (``ds``); one with several sources is never pooled: each source is aggregated on its
    own and stored as ``<method>:<source>`` (``all`` pools them, only when asked for).

    With ``judges``, the same methods also run with those judges as additional annotators, on the
    items people labelled; that result is stored apart as ``<method>+judges`` and never replaces
    the human consensus.

    Binary and categorical items (those with a label set) are aggregated apart from the others and one
    label set (one criterion) at a time, so each label's posterior stays within the item's own labels.
    """
    for m in methods:
        if m not in AGGREGATORS:
            raise InputError(f"unknown consensus method {m!r}; known: {', '.join(AGGREGATORS)}",
                             name="method")
    every = ws.annotations_repo.annotations_frame()
    present = sources(every)
    selectors: list[str | None] = [source] if source is not None else [None] if len(present) <= 1 else [*present]
    extra = judges_as_annotators(ws, judges) if judges else None
    sets = ws.items_repo.label_sets()
    counts = {}
    for sel in selectors:
        ann = (every if sel is None else select(every, sel))[["item_id", "annotator", "label"]]
        variants = [(m, m, ann) for m in methods]
        if extra is not None:
            both = pd.concat([ann, extra[extra["item_id"].isin(set(ann["item_id"]))]], ignore_index=True)
            variants += [(f"{m}+judges", m, both) for m in methods]
        for stem, method, data in variants:
            name = consensus_name(stem, sel)
            frame = _by_label_set(data, method, sets)
            rows = zip(frame["item_id"].tolist(), frame["label"].tolist(), frame["posterior"].tolist(), strict=True)
            ws.annotations_repo.set_consensus((Consensus(str(i), name, str(lab), dict(p)) for i, lab, p in rows), name)
            counts[name] = len(frame)
    return counts
