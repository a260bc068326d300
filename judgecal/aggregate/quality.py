"""Annotator quality: confusion matrices and accuracy against the leave-one-out consensus and
against gold items, plus flags for likely spammers and systematic bias.

Leave-one-out (LOO) consensus for annotator ``w`` on item ``i`` is the label the other annotators of ``i``
gave most often, when one label leads; items with no other annotator, or whose others tie, are left out (the
audit's definition, :func:`judgecal.audit.human.loo_accuracy`). Flags:

- ``likely_spammer``: LOO agreement's 95% Wilson upper bound is below ``chance + margin``, where
  chance is the agreement of a labeler guessing at the consensus label frequencies.
- ``systematic_bias``: one label makes up at least ``bias_share`` of the annotator's labels while
  the LOO consensus gives it at most ``bias_share - 0.3`` of the same items (e.g. always "tie").
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.stats.inference import wilson


def leave_one_out(df: pd.DataFrame) -> pd.DataFrame:
    """``item_id, annotator, label, loo`` for every annotation whose item's other annotators agree on one
    label more often than on any other (``loo``); items with no other annotator, or whose others tie, are
    left out. The definition of the audit's annotators' leave-one-out accuracy
    (:func:`judgecal.audit.human.loo_accuracy`), so an annotator's figure here and the humans' figure beside
    every judge are one figure, pooled or not.

    Vectorised: the item's label counts minus the annotator's own label, then its unique maximum.
    """
    items, i_codes = np.unique(df["item_id"].to_numpy(dtype=str), return_inverse=True)
    labels, l_codes = np.unique(df["label"].to_numpy(dtype=str), return_inverse=True)
    counts = np.zeros((len(items), len(labels)))
    np.add.at(counts, (i_codes, l_codes), 1.0)
    others = counts[i_codes]
    others[np.arange(len(df)), l_codes] -= 1
    top = others == others.max(1, keepdims=True)
    keep = (others.sum(1) > 0) & (top.sum(1) == 1)
    rows = np.flatnonzero(keep)
    loo = labels[others[keep].argmax(1)]
    sub = df.iloc[rows]
    return pd.DataFrame({"item_id": sub["item_id"].to_numpy(), "annotator": sub["annotator"].to_numpy(),
                         "label": sub["label"].to_numpy(dtype=str), "loo": loo.astype(str)})


def annotator_report(df: pd.DataFrame, gold: pd.Series | None = None, *, margin: float = 0.1,
                     bias_share: float = 0.8) -> dict[str, dict[str, Any]]:
    """Per-annotator quality; ``gold`` maps item_id -> known label for gold items."""
    df = df.assign(label=df["label"].astype(str))
    loo = leave_one_out(df)
    labels = sorted(set(df["label"]) | set(loo["loo"]) if len(loo) else set(df["label"]))
    freq = loo["loo"].value_counts(normalize=True) if len(loo) else pd.Series(dtype=float)
    out: dict[str, dict[str, Any]] = {}
    for ann, grp in df.groupby("annotator"):
        entry: dict[str, Any] = {"n_labels": int(len(grp))}
        mine = loo[loo["annotator"] == ann]
        if len(mine):
            agree = float((mine["label"] == mine["loo"]).sum())
            lo, hi = wilson(agree, len(mine))
            own = mine["label"].value_counts(normalize=True)
            chance = float(sum(own.get(lab, 0.0) * freq.get(lab, 0.0) for lab in labels))
            conf = pd.crosstab(mine["loo"], mine["label"]).reindex(index=labels, columns=labels, fill_value=0)
            top = str(own.idxmax())
            entry.update(
                loo_accuracy={"estimate": agree / len(mine), "ci_low": lo, "ci_high": hi, "n": int(len(mine))},
                chance_agreement=chance,
                confusion={"rows_consensus": labels, "cols_annotator": labels, "counts": conf.to_numpy().tolist()},
                likely_spammer=bool(hi < chance + margin),
                systematic_bias=bool(own.max() >= bias_share
                                     and (mine["loo"] == top).mean() <= bias_share - 0.3),
                most_used_label=top, most_used_share=float(own.max()),
            )
        if gold is not None:
            g = grp[grp["item_id"].isin(gold.index)]
            if len(g):
                right = float((g["label"].to_numpy() == gold.reindex(g["item_id"]).astype(str).to_numpy()).sum())
                lo, hi = wilson(right, len(g))
                entry["gold_accuracy"] = {"estimate": right / len(g), "ci_low": lo, "ci_high": hi, "n": int(len(g))}
        out[str(ann)] = entry
    return out
