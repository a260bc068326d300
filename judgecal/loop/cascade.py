"""Cascades: a cheap judge, then a stronger one, then people, with the Trust-or-Escalate guarantee held
over the whole chain (cascaded selective evaluation; Jung, Brahman & Choi, ICLR 2025, "Trust or Escalate:
LLM Judges with Provable Guarantees for Human Agreement", section 3).

Every item starts at the first stage. Stage ``i`` keeps the items that reach it whose confidence is at least
its threshold ``λ_i`` and passes the rest on; what the last judge passes on goes to people. The labelled
items are split at random (seeded) into a calibration and a held-out half. On the calibration half each
``λ_i`` is chosen in turn, on the items that reach stage ``i``, by the fixed-sequence test of
:func:`judgecal.stats.selective.trust_or_escalate` at level ``δ / k`` (Bonferroni over the ``k`` stages), so
that with probability at least ``1 − δ`` every stage's kept items agree with the people at a rate of at least
``target`` — and so do the kept items of the whole chain, a mixture of rates each at least ``target``. (A
later stage's test is conditional on the thresholds before it, which the calibration half chose; the
held-out half, never used to choose anything, checks the guarantee on data: the share each stage decided,
the agreement of the chain's kept items, the share left to people.)

A judge's confidence on an item: its token probabilities averaged over its calls that gave a verdict (a tie
at the top gives no confidence: the item moves on, never decided by label order; a panel's vote shares
count the same way, and a panel slot without a strict majority gives none), else the share of its samples behind the
modal verdict; a judge with neither (one recorded verdict) has confidence 1 on every valid verdict, so its
stage keeps all or nothing. Cost per item: each stage's recorded cost per item (``cost_usd`` summed over
its calls), or one given for it, weighted by the share of items that reach it; people cost ``human_cost``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.confidence import item_confidence
from judgecal.audit.models import item_verdicts
from judgecal.data.store import Workspace
from judgecal.loop import LoopError
from judgecal.loop.compare import judge_frame
from judgecal.stats import selective
from judgecal.stats.selective_cascade import cascade_calibrate

LABELS = ("A", "B", "tie")


def stage_confidence(frame: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """item_id -> ``verdict, confidence`` of one judge, and what the confidence is."""
    p = frame[frame["p_a"].notna() & frame["p_b"].notna() & frame["verdict"].isin(LABELS)]
    if len(p):
        m = p.assign(p_tie=p["p_tie"].fillna(0.0)).astype({"p_a": float, "p_b": float, "p_tie": float}) \
            .groupby("item_id")[["p_a", "p_b", "p_tie"]].mean()
        probs = m.to_numpy()
        tot = probs.sum(1)
        top = probs.max(1)
        tied = (np.isclose(probs, top[:, None]).sum(1) > 1) | (tot <= 0)
        label = np.asarray(LABELS, dtype=object)[probs.argmax(1)]
        conf = np.divide(top, tot, out=np.full(len(tot), np.nan), where=tot > 0)
        label[tied], conf[tied] = None, np.nan
        return pd.DataFrame({"verdict": label, "confidence": conf}, index=m.index.astype(str)), "token probabilities"
    conf, kind = item_confidence(frame)
    if kind is not None:
        return conf, kind
    v = item_verdicts(frame, invalid_as="none")
    ok = v.isin(LABELS)
    return pd.DataFrame({"verdict": v.where(ok, None), "confidence": np.where(ok, 1.0, np.nan)},
                        index=v.index), "none (one verdict: kept all or nothing)"


def stage_cost(frame: pd.DataFrame) -> float | None:
    """Mean recorded cost per item (its calls' ``cost_usd`` summed), ``None`` when none was recorded."""
    c = frame.dropna(subset=["cost_usd"]) if "cost_usd" in frame else frame.iloc[:0]
    if c.empty:
        return None
    return float(c.groupby("item_id")["cost_usd"].sum().mean())


def run_cascade(ws: Workspace, stages: list[str], truth: pd.Series, *, target: float = 0.9, delta: float = 0.1,
                seed: int = 0, costs: dict[str, float] | None = None, human_cost: float | None = None,
                name: str = "") -> dict[str, Any]:
    """The cascade's thresholds, guarantee, per-stage shares, cost per item and escalated items."""
    if len(stages) < 1 or len(set(stages)) != len(stages):
        raise LoopError(f"a cascade needs one or more different judges in order, got {stages}")
    if not 0 < target < 1 or not 0 < delta < 1:
        raise LoopError(f"the target and delta must lie strictly between 0 and 1, got {target} and {delta}")
    frames = {s: judge_frame(ws, s) for s in stages}
    confs = {s: stage_confidence(f) for s, f in frames.items()}
    items = pd.Index(sorted(set(frames[stages[0]]["item_id"])), dtype=object)
    if not len(items):
        raise LoopError(f"the first stage {stages[0]} judged no item")
    t = truth.copy()
    t.index = t.index.astype(str)
    labelled = items[items.isin(t.index)]
    if len(labelled) < 2:
        raise LoopError(f"only {len(labelled)} of the first stage's items have a human label: nothing to calibrate on")
    rng = np.random.default_rng(seed)
    cal_mask = rng.permutation(len(labelled)) < (len(labelled) + 1) // 2
    cal, held = labelled[cal_mask], labelled[~cal_mask]
    k = len(stages)
    reach_held, reach_all = held, items
    out_stages, decided_held, kept_all = [], [], pd.Series(dtype=object)
    cost_total, cost_known = 0.0, True
    truth_cal = t.reindex(cal).to_numpy(dtype=object)
    calibrated = cascade_calibrate(
        np.column_stack([confs[s][0]["confidence"].reindex(cal).to_numpy(dtype=float) for s in stages]),
        np.column_stack([(confs[s][0]["verdict"].reindex(cal).to_numpy(dtype=object) == truth_cal).astype(float)
                         for s in stages]), target=target, delta=delta)
    for s, (res, n_reached) in zip(stages, calibrated, strict=True):
        conf, kind = confs[s]

        def keep(ids: pd.Index, conf: pd.DataFrame = conf, thr: float = res.threshold) -> pd.Index:
            cc = conf["confidence"].reindex(ids).to_numpy(dtype=float)
            return ids[~selective.escalate(cc, thr)]

        kh, ka = keep(reach_held), keep(reach_all)
        hv = conf["verdict"].reindex(kh).to_numpy(dtype=object)
        decided_held.append(pd.Series(hv == t.reindex(kh).to_numpy(dtype=object), index=kh))
        kept_all = pd.concat([kept_all, conf["verdict"].reindex(ka)])
        unit = (costs or {}).get(s, stage_cost(frames[s]))
        if unit is None:
            cost_known = False
        else:
            cost_total += unit * len(reach_all) / len(items)
        out_stages.append({
            "judge": s, "confidence": kind, "threshold": None if not np.isfinite(res.threshold) else res.threshold,
            "feasible": res.feasible, "delta_stage": delta / k,
            "calibration": {"reached": n_reached, "kept": res.n_kept, "agreement": res.agreement,
                            "agreement_lower_bound": res.agreement_lower_bound},
            "held_out": {"reached": len(reach_held), "decided": len(kh),
                         "agreement": float(decided_held[-1].mean()) if len(kh) else None},
            "all_items": {"reached": len(reach_all), "decided": len(ka), "share_decided": len(ka) / len(items)},
            "cost_per_item_reaching": unit})
        reach_held, reach_all = reach_held.difference(kh), reach_all.difference(ka)
    held_ok = pd.concat(decided_held) if decided_held else pd.Series(dtype=bool)
    people = len(reach_all) / len(items)
    if human_cost is not None:
        cost_total += human_cost * people
    last = confs[stages[-1]][0]["confidence"].reindex(reach_all).fillna(0.0)
    return {
        "schema": "judgecal.cascade/1", "name": name or " -> ".join(stages) + " -> people", "stages": out_stages,
        "target": target, "delta": delta, "seed": seed, "n_items": len(items), "n_labelled": len(labelled),
        "n_calibration": len(cal), "n_held_out": len(held),
        "guarantee": {"statement": f"with probability at least {1 - delta:g}, the items the judges decide agree with "
                                   f"the people at a rate of at least {target:g}",
                      "method": "fixed-sequence testing per stage at delta/k on the calibration items reaching it "
                                "(Jung et al., ICLR 2025; Bonferroni over the stages)"},
        "held_out": {"decided": int(len(held_ok)), "coverage": len(held_ok) / len(held) if len(held) else None,
                     "agreement": float(held_ok.mean()) if len(held_ok) else None,
                     "to_people": len(reach_held)},
        "share_to_people": people,
        "cost_per_item": cost_total if cost_known else None,
        "cost_note": None if cost_known else "a stage has no recorded cost and none was given (--cost JUDGE=USD)",
        "human_cost": human_cost,
        "escalated": {str(i): round(float(2.0 - c), 6) for i, c in last.items()},
        "verdicts": {str(i): v for i, v in kept_all.items()},
    }
