"""A judge's confidence, checked against the humans: calibration and selective evaluation.

Confidence per item (:mod:`judgecal.stats.calibration`):

- *token probabilities*: the item-oriented ``P(A), P(B), P(tie)`` averaged over the judge's calls on
  the item (both orders when both were judged); the verdict is their argmax, the confidence its
  normalised probability;
- else *vote share*, when the judge was sampled more than once: the modal verdict over every call on
  the item and its share.

On the items with the truth: the reliability table, ECE with an item-bootstrap CI, and ECE after
cross-fitted isotonic recalibration (each item calibrated by a model that never saw it).

Selective evaluation (Trust or Escalate; Jung et al., ICLR 2025, :mod:`judgecal.stats.selective`):
the labelled items are split at random in halves; the threshold is chosen on the calibration half so
that the agreement of the items the judge keeps is at least ``target`` with probability ``1 - delta``;
the other half checks it (held-out coverage and agreement). Items below the threshold are escalated to
people: ``judgecal annotate push --strategy escalate --judge J`` sends them.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.schema import Judge, Selective, read_report
from judgecal.errors import InputError
from judgecal.stats import calibration, selective

TARGET, DELTA = 0.9, 0.1
N_BINS = 10
PROBS, VOTES = "token probabilities", "vote share"


def item_confidence(judgments: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """item_id -> ``verdict, confidence`` and the kind of confidence (``None``: the judge has none)."""
    empty = pd.DataFrame(columns=["verdict", "confidence"])
    if not len(judgments):
        return empty, None
    j = judgments
    if {"p_a", "p_b"} <= set(j.columns) and j["p_a"].notna().any() and j["p_b"].notna().any():
        p = j.loc[j["p_a"].notna() & j["p_b"].notna(), ["item_id", "p_a", "p_b"]].copy()
        p["p_tie"] = j.loc[p.index, "p_tie"].fillna(0.0) if "p_tie" in j else 0.0
        m = p.astype({"p_a": float, "p_b": float, "p_tie": float}).groupby("item_id", sort=True).mean()
        lab, conf = calibration.confidence_from_probs(m["p_a"], m["p_b"], m["p_tie"])
        return pd.DataFrame({"verdict": lab, "confidence": conf}, index=m.index.astype(str)), PROBS
    if "sample" in j and (j["sample"] > 0).any():
        v = j.loc[j["verdict"].isin(calibration.VERDICTS), ["item_id", "verdict"]]
        if v.empty:
            return empty, None
        slot = v.groupby("item_id").cumcount()
        votes = pd.DataFrame({"item_id": v["item_id"].astype(str).to_numpy(), "slot": slot.to_numpy(),
                              "v": v["verdict"].to_numpy(dtype=object)}).pivot(index="item_id", columns="slot",
                                                                                 values="v")
        lab, conf = calibration.confidence_from_votes(votes.astype(object).where(votes.notna(), None))
        return pd.DataFrame({"verdict": lab, "confidence": conf}, index=votes.index), VOTES
    return empty, None


def label_confidence(judgments: pd.DataFrame, labels: tuple[str, ...]) -> tuple[pd.DataFrame, str | None]:
    """A binary or categorical judge's item_id -> ``verdict, confidence``: its label probabilities
    (``p_labels``) averaged over its calls on the item, the argmax label and its normalised probability;
    else the modal label's share of the item's valid calls when it was sampled more than once."""
    empty = pd.DataFrame(columns=["verdict", "confidence"])
    j = judgments
    if "p_labels" in j and j["p_labels"].notna().any():
        rows = j.loc[j["p_labels"].notna(), ["item_id", "p_labels"]]
        probs = np.array([[float(d.get(lab, 0.0)) for lab in labels]
                          for d in (json.loads(str(b)) for b in rows["p_labels"])], dtype=np.float64)
        m = pd.DataFrame(probs, index=rows["item_id"].astype(str).to_numpy()).groupby(level=0, sort=True).mean()
        total = m.to_numpy().sum(1)
        ok = total > 0
        best = m.to_numpy().argmax(1)
        conf = np.where(ok, m.to_numpy().max(1) / np.where(ok, total, 1.0), np.nan)
        return pd.DataFrame({"verdict": np.asarray(labels, dtype=object)[best], "confidence": conf},
                            index=m.index)[ok], PROBS
    if "sample" in j and (j["sample"] > 0).any():
        v = j[j["verdict"].isin(labels) & (j["status"].astype(str) == "ok")]
        if v.empty:
            return empty, None
        counts = pd.crosstab(v["item_id"].astype(str), v["verdict"].astype(str))
        return pd.DataFrame({"verdict": counts.idxmax(axis=1).to_numpy(dtype=object),
                             "confidence": (counts.max(axis=1) / counts.sum(axis=1)).to_numpy(dtype=float)},
                            index=counts.index), VOTES
    return empty, None


def _agree(conf: pd.DataFrame, truth: pd.Series) -> pd.DataFrame:
    both = conf.index.intersection(truth.index)
    out = conf.loc[both].copy()
    out["agree"] = (out["verdict"].to_numpy(dtype=object) == truth.reindex(both).to_numpy(dtype=object)).astype(float)
    return out[np.isfinite(out["confidence"].to_numpy(dtype=float))]


def calibration_section(conf: pd.DataFrame, kind: str, truth: pd.Series, *, n_boot: int = 2000, seed: int = 0,
                        level: float = 0.95, n_bins: int = N_BINS) -> dict[str, Any]:
    """Reliability table, ECE with CI and ECE after cross-fitted isotonic recalibration."""
    lab = _agree(conf, truth)
    c, y = lab["confidence"].to_numpy(dtype=float), lab["agree"].to_numpy(dtype=float)
    out: dict[str, Any] = {"confidence": kind, "n": int(len(c)), "n_bins": n_bins}
    if len(c) == 0:
        return out
    out["mean_confidence"], out["agreement"] = float(c.mean()), float(y.mean())
    out["ece"] = calibration.ece(c, y, n_bins=n_bins, n_boot=n_boot, seed=seed, level=level)
    out["reliability"] = calibration.reliability_bins(c, y, n_bins).to_dict("records")
    if len(c) >= 10:
        cal = calibration.cross_fit_calibrate(c, y, method="isotonic", seed=seed)
        out["recalibrated"] = {"method": "isotonic, 5-fold cross-fitted",
                               "ece": calibration.ece(cal, y, n_bins=n_bins, n_boot=n_boot, seed=seed, level=level)}
    return out


def selective_section(conf: pd.DataFrame, truth: pd.Series, *, target: float = TARGET, delta: float = DELTA,
                      seed: int = 0) -> dict[str, Any]:
    """Trust or Escalate: threshold from a random half of the labelled items, checked on the other half;
    coverage of every item the judge has a confidence for."""
    lab = _agree(conf, truth)
    rng = np.random.default_rng(seed)
    cal = rng.permutation(len(lab)) < (len(lab) + 1) // 2
    res = selective.trust_or_escalate(lab["confidence"].to_numpy(dtype=float)[cal],
                                      lab["agree"].to_numpy(dtype=float)[cal], target=target, delta=delta)
    out: dict[str, Any] = res.as_dict()
    out["held_out"] = selective.evaluate(lab["confidence"].to_numpy(dtype=float)[~cal],
                                         lab["agree"].to_numpy(dtype=float)[~cal], res.threshold)
    esc = selective.escalate(conf["confidence"].to_numpy(dtype=float), res.threshold)
    out["n_items"] = int(len(conf))
    out["n_escalated"] = int(esc.sum())
    out["coverage_all_items"] = float(1 - esc.mean()) if len(conf) else float("nan")
    return out


def escalated_scores(ws: Any, judge: str, item_ids: list[str]) -> pd.Series:
    """Items the judge escalates under the threshold of the workspace's last audit: score
    ``2 - confidence`` (least confident first; no confidence scores 2), 0 for items it keeps. ``judge`` may
    name a cascade (``judgecal cascade``): its last stage's escalated items, as the cascade stored them."""
    try:
        cascade = json.loads((ws.reports_dir / "cascade.json").read_text("utf-8")).get(judge)
    except (OSError, ValueError, AttributeError):
        cascade = None
    if isinstance(cascade, dict) and isinstance(cascade.get("escalated"), dict):
        return pd.Series(cascade["escalated"], dtype=float).reindex(item_ids).fillna(0.0)
    path = ws.reports_dir / "audit.json"
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        raise InputError(f"{path}: no audit to read the escalation threshold from; run `judgecal audit` first") from None
    try:
        report = read_report(data)
    except (ValueError, AttributeError, TypeError) as e:  # pydantic's ValidationError names the field
        raise InputError(f"{path}: not an audit this judgecal reads ({e}); run `judgecal audit` again") from None

    def selective_of(entry: Judge | None) -> Selective | None:
        sel = None if entry is None else entry.selective
        return sel if sel is not None and sel.model_fields_set else None

    sel = selective_of(report.judges.get(judge))
    if sel is None:
        known = [j for j, e in report.judges.items() if selective_of(e) is not None]
        raise InputError(f"{path}: judge {judge!r} has no selective evaluation (judges with one: "
                         f"{', '.join(known) or 'none'})")
    threshold = float("inf") if sel.threshold is None else float(sel.threshold)
    frame = ws.judgments_repo.judgments_frame(judge=judge, columns=("item_id", "order", "sample", "mutation", "verdict", "p_a",
                                                     "p_b", "p_tie"))
    conf, _ = item_confidence(frame[frame["mutation"] == "none"])
    c = conf["confidence"].astype(float).reindex(item_ids)
    esc = pd.Series(selective.escalate(c.to_numpy(dtype=float), threshold), index=item_ids)
    return pd.Series(np.where(esc, 2.0 - c.fillna(0.0).to_numpy(), 0.0), index=item_ids)
