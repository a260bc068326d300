"""Transitivity: on prompts with three or more responses judged pairwise, how often a rater's preferences cycle.

A response is its text within a prompt (two items whose candidates have the same text compare the same
responses); a pair of responses judged on several items counts once, by its first item. A *rater* gives one
preference per pair: each annotator of the truth's source, and each (order, sample) reading of the judge (its
calls in order ``AB``, sample 0, are one rater, as one annotator is), so the judge's rate and the humans' are
measured alike on the same triads. Ties and cycles: :mod:`judgecal.stats.triads`; an unreadable verdict
counts as the audit's ``invalid_as`` says (a tie, or no preference: the triad is then left out for that
reading).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.data.sources import SourceError, select
from judgecal.data.store import Workspace
from judgecal.stats import bootstrap as stats
from judgecal.stats.triads import is_cycle, random_cycle_rate


@dataclass
class TriadSet:
    """The triads of a workspace: ``edges`` (index: item_id; ``prompt``, ``flip``: the item's A is the
    second response of the pair), ``triads`` (rows of prompt number and the positions in ``edges`` of the
    pairs ``uv``, ``vw``, ``uw``) and ``human``: item_id, rater, label of the triads' items."""

    edges: pd.DataFrame
    triads: NDArray[np.int64]
    human: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["item_id", "rater", "label"]))

    def __len__(self) -> int:
        return len(self.triads)


def find_triads(keys: pd.DataFrame, human: pd.DataFrame | None = None) -> TriadSet:
    """The triads in ``keys`` (``item_id``, ``prompt``, ``a``, ``b``: numbers standing for the prompt and the two
    responses' texts, as :meth:`~judgecal.data.store.items.ItemsRepository.item_facts` gives them); ``human``: ``item_id``, ``rater``, ``label``
    of the people (kept for the triads' items)."""
    k = keys[keys["a"] != keys["b"]]
    # numbered in order of first appearance, so that what follows never depends on the numbers given
    codes, _ = pd.factorize(np.concatenate([k["a"].to_numpy(), k["b"].to_numpy()]))
    a, b = codes[: len(k)], codes[len(k):]
    k = k.assign(prompt=pd.factorize(k["prompt"])[0])
    u, v = np.minimum(a, b), np.maximum(a, b)
    e = pd.DataFrame({"item_id": k["item_id"].to_numpy(), "prompt": k["prompt"].to_numpy(), "u": u, "v": v,
                      "flip": a > b}).drop_duplicates(["prompt", "u", "v"])
    at = {(p, a, b): n for n, (p, a, b) in enumerate(zip(e["prompt"], e["u"], e["v"], strict=True))}
    above: dict[tuple[int, int], list[int]] = {}  # (prompt, v) -> every w > v paired with it
    for p, x, y in at:
        above.setdefault((p, x), []).append(y)
    rows = [(p, n, at[(p, y, w)], at[(p, x, w)])  # uv, vw, uw
            for (p, x, y), n in at.items() for w in above.get((p, y), ()) if (p, x, w) in at]
    triads = np.asarray(sorted(rows), dtype=np.int64).reshape(-1, 4)
    edges = e.reset_index(drop=True).iloc[np.unique(triads[:, 1:])] if len(triads) else e.iloc[:0]
    if len(triads):  # positions into the kept edges
        triads[:, 1:] = np.searchsorted(edges.index.to_numpy(), triads[:, 1:])
    edges = edges.set_index("item_id")[["prompt", "flip"]]
    hum = pd.DataFrame(columns=["item_id", "rater", "label"]) if human is None else (
        human[human["item_id"].isin(edges.index)][["item_id", "rater", "label"]])
    return TriadSet(edges, triads, hum)


def workspace_triads(ws: Workspace, pairs: pd.DataFrame, source: str | None = None) -> TriadSet | None:
    """The triads among ``pairs`` (the two-candidate pairwise rows of :meth:`~judgecal.data.store.items.ItemsRepository.item_facts` of ``ws``,
    indexed by item_id) with the labels of ``source``'s people (every person's when ``None``; each
    ``source/annotator`` one rater); ``None`` when there is none."""
    p = pairs["prompt_key"]
    many = pairs[p.map(p.value_counts()) >= 3]
    keys = pd.DataFrame({"item_id": many.index.to_numpy(), "prompt": many["prompt_key"].to_numpy(),
                         "a": many["text_key_a"].to_numpy(), "b": many["text_key_b"].to_numpy()})
    found = find_triads(keys)
    if not len(found):
        return None
    ann = ws.annotations_repo.annotations_frame()
    if source is not None and len(ann):
        try:
            ann = select(ann, source)
        except SourceError:
            ann = ann.iloc[:0]
    ann = ann[ann["item_id"].isin(found.edges.index)]
    found.human = pd.DataFrame({"item_id": ann["item_id"], "label": ann["label"],
                                "rater": ann["source"].astype(str) + "/" + ann["annotator"].astype(str)})
    return found


def _signs(labels: pd.DataFrame, edges: pd.DataFrame, invalid_as: str) -> NDArray[np.float64]:
    """edges x raters matrix of signs (+1: the pair's first response preferred, -1 the second, 0 a tie, NaN
    none) from ``item_id``, ``rater``, ``label`` rows in item orientation."""
    lab = labels[labels["item_id"].isin(edges.index)].drop_duplicates(["item_id", "rater"])
    label = lab["label"].astype(str).replace({"invalid": "tie" if invalid_as == "tie" else ""})
    side = label.map({"A": 1.0, "B": -1.0, "tie": 0.0}).to_numpy(dtype=np.float64)
    flip = edges["flip"].reindex(lab["item_id"]).to_numpy(dtype=bool)
    signed = np.where(flip, -side, side)
    raters, r = np.unique(lab["rater"].astype(str).to_numpy(), return_inverse=True)
    out = np.full((len(edges), len(raters)), np.nan)
    out[edges.index.get_indexer(pd.Index(lab["item_id"])), r] = signed
    return out


def _per_prompt(ts: TriadSet, signs: NDArray[np.float64], prompts: NDArray[np.int64]) -> NDArray[np.float64]:
    """Per prompt (of ``prompts``): cycles, complete (triad, rater) readings, ties and labels on triad pairs."""
    s = [signs[ts.triads[:, j]] for j in (1, 2, 3)]  # triads x raters each
    complete = ~(np.isnan(s[0]) | np.isnan(s[1]) | np.isnan(s[2]))
    cyc = is_cycle(*s) & complete
    at = np.searchsorted(prompts, ts.triads[:, 0])
    out = np.zeros((len(prompts), 4))
    out[:, 0] = np.bincount(at, weights=cyc.sum(1), minlength=len(prompts))
    out[:, 1] = np.bincount(at, weights=complete.sum(1), minlength=len(prompts))
    edge_prompt = np.searchsorted(prompts, ts.edges["prompt"].to_numpy())
    out[:, 2] = np.bincount(edge_prompt, weights=(signs == 0).sum(1), minlength=len(prompts))
    out[:, 3] = np.bincount(edge_prompt, weights=(~np.isnan(signs)).sum(1), minlength=len(prompts))
    return out


def transitivity(judgments: pd.DataFrame, ts: TriadSet, *, invalid_as: str = "tie", n_boot: int = 2000,
                 seed: int = 0, level: float = 0.95) -> dict[str, Any]:
    """The judge's intransitive rate beside the humans' on the same triads (prompt-clustered bootstrap, paired),
    their difference, and a random rater's rate at the judge's own tie rate; ``{}`` with no triad judged."""
    if not len(ts) or judgments.empty:
        return {}
    mine = judgments[judgments["item_id"].isin(ts.edges.index) & judgments["verdict"].notna()]
    rater = mine["order"].astype(str) + "/" + mine["sample"].astype(str)
    labels = pd.DataFrame({"item_id": mine["item_id"].to_numpy(), "rater": rater.to_numpy(),
                           "label": mine["verdict"].to_numpy()})
    prompts = np.unique(ts.triads[:, 0])
    judge = _per_prompt(ts, _signs(labels, ts.edges, invalid_as), prompts)
    if judge[:, 1].sum() == 0:
        return {}
    human = _per_prompt(ts, _signs(ts.human, ts.edges, invalid_as), prompts) if len(ts.human) else np.zeros_like(judge)
    sums = np.column_stack([judge, human])
    boot = stats.bootstrap_sums(sums, n_boot, seed)
    ties = float(judge[:, 2].sum() / judge[:, 3].sum())

    def rate(c: int) -> Any:
        return lambda m: stats.safe_ratio(m[:, c], m[:, c + 1])

    out: dict[str, Any] = {}
    specs: list[tuple[str, Any, float]] = [("judge", rate(0), judge[:, 1].sum())]
    if human[:, 1].sum() > 0:
        specs += [("humans", rate(4), human[:, 1].sum()),
                  ("excess", lambda m: rate(0)(m) - rate(4)(m), judge[:, 1].sum())]
    for name, fn, n in specs:
        est, lo, hi = stats.estimate_with_ci(fn, sums, boot, level)
        out[name] = {"estimate": est, "ci_low": lo, "ci_high": hi, "n": int(n)}
    out["random"] = random_cycle_rate(ties)
    out["tie_rate"] = ties
    out["n_triads"] = int(len(ts))
    out["n_prompts"] = int(len(prompts))
    return out
