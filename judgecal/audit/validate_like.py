"""Validate the verdict's like-for-like reading on simulations with known answers, as rates over seeds.

- **An annotator as the judge.** Items have a true label (A 45%, B 45%, tie 10%); every rater, the judge
  included, gives it with probability ``q`` and otherwise a label drawn from those shares. The judge is one
  more rater of the same population as the three annotators, so it must read human-like and ``aligned``
  (``q = 0.75``: the annotators agree substantially); at ``q = 0.35`` (the annotators' κ near 0.15) it must
  read human-like and the verdict must say the task is subjective instead of blaming the judge. Target:
  at least 95% of seeds.
- **An order-consistent judge** gives the same verdict in both presentation orders: the position probe
  must never flag it (neither a bias nor ``underpowered``: its interval is pinned at 0.5) and the verdict
  must say "no sign of bias". Target: every seed.
- **Trivial raters.** A judge that always gives the annotators' most frequent label, and span judges that
  mark everything, nothing, or random spans of the annotators' lengths, must never read ``aligned``.
  Target: every seed. The spans: each text (100–400 characters) holds a true faulty stretch with
  probability 0.6 (10–60 characters); each of three annotators marks it with probability 0.85, its ends
  moved by up to 5 characters, and otherwise marks nothing.
- **Planted biases at the effect of interest** (0.05): a first-position rate of 0.55 (``position = 0.1`` in
  :mod:`judgecal.audit.validate`'s judge) and a verbosity excess of 0.05 (``verbosity = 0.1``) must be
  flagged, through the audit's own probes and flag rules, in at least 80% of seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.decision import DEFAULT_THRESHOLDS, judge_verdict
from judgecal.audit.evaluate import evaluate
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.audit.simulate import Scenario, judge_input, simulate
from judgecal.stats import spans as S
from judgecal.stats.reference import like_for_like

LABELS = np.array(["A", "B", "tie"], dtype=object)
SHARES = np.array([0.45, 0.45, 0.10])
TARGETS = {"annotator_as_judge": 0.95, "annotator_as_judge_subjective": 0.95, "order_consistent": 1.0,
           "majority_label": 1.0, "mark_everything": 1.0, "mark_nothing": 1.0, "random_spans": 1.0,
           "planted_position": 0.80, "planted_verbosity": 0.80}


def raters(rng: np.random.Generator, n_items: int, n_raters: int, q: float) -> np.ndarray:
    """Items x raters labels: the true label with probability ``q``, else a draw from :data:`SHARES`."""
    truth = LABELS[rng.choice(3, n_items, p=SHARES)]
    noise = LABELS[rng.choice(3, (n_items, n_raters), p=SHARES)]
    return np.where(rng.random((n_items, n_raters)) < q, truth[:, None], noise)


def entry_for(labels: np.ndarray, judge: np.ndarray, n_boot: int, seed: int) -> dict[str, Any]:
    """A judge's audit entry with only what the agreement rules read (its like-for-like reference)."""
    humans = pd.DataFrame(labels, columns=[f"a{k}" for k in range(labels.shape[1])])
    like = like_for_like(humans, judge, n_boot=n_boot, seed=seed)
    return {"kind": "pairwise", "n_items_with_consensus": len(judge), "metrics": {}, "flags": [],
            "reference": {"like_for_like": like}}


def annotator_as_judge(seed: int, q: float, n_items: int = 300, n_boot: int = 400) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    r = raters(rng, n_items, 4, q)
    v = judge_verdict(entry_for(r[:, :3], r[:, 3], n_boot, seed))
    return {"status": v["status"], "class": (v.get("human_likeness") or {}).get("class"),
            "subjective": bool((v.get("human_likeness") or {}).get("subjective")),
            "says_subjective": any(d["code"] == "humans_subjective" for d in v["details"])}


def majority_label(seed: int, n_items: int = 300, n_boot: int = 400) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    r = raters(rng, n_items, 3, 0.75)
    values, counts = np.unique(r, return_counts=True)
    judge = np.full(n_items, values[counts.argmax()], dtype=object)
    return {"status": judge_verdict(entry_for(r, judge, n_boot, seed))["status"]}


def order_consistent(seed: int, n_items: int = 300, n_boot: int = 400) -> dict[str, Any]:
    """A judge right 80% of the time, its verdict the same in both orders."""
    from judgecal.audit.probes import AlignmentProbe, PositionProbe

    rng = np.random.default_rng(seed)
    ids = np.array([f"i{k}" for k in range(n_items)])
    truth = np.where(rng.random(n_items) < 0.5, "A", "B")
    v = np.where(rng.random(n_items) < 0.8, truth, np.where(truth == "A", "B", "A"))
    frames = [pd.DataFrame({"item_id": ids, "order": o, "sample": 0, "mutation": "none", "verdict": v,
                            "status": "ok"}) for o in ("AB", "BA")]
    inp = JudgeInput("consistent", pd.concat(frames, ignore_index=True), pd.Series(truth, index=ids))
    res = evaluate([inp], AuditConfig(n_boot=n_boot, seed=seed), probes=[AlignmentProbe(), PositionProbe()])[
        "consistent"]
    entry = {"kind": "pairwise", "n_items_with_consensus": n_items, "orders": ["AB", "BA"],
             "metrics": {k: m.to_json() for k, m in res.metrics.items()}, "flags": res.flags,
             **res.sections}
    verdict = judge_verdict(entry)
    return {"flags": [f for f in res.flags if f.startswith("position_bias")],
            "no_sign": any(d["code"] == "no_sign" and d["metric"] == "first_position_rate"
                          for d in verdict["details"])}


def span_world(rng: np.random.Generator, n_items: int = 200) -> tuple[S.Intervals, np.ndarray, np.ndarray]:
    """Three annotators' spans (an empty span where one marked nothing), their rater codes, text lengths."""
    length = rng.integers(100, 401, n_items)
    has = rng.random(n_items) < 0.6
    span_len = rng.integers(10, 61, n_items)
    start = (rng.random(n_items) * (length - span_len)).astype(np.int64)
    items, starts, ends, who = [], [], [], []
    for a in range(3):
        marks = has & (rng.random(n_items) < 0.85)
        s = np.clip(start + rng.integers(-5, 6, n_items), 0, length)
        e = np.clip(start + span_len + rng.integers(-5, 6, n_items), 0, length)
        s, e = np.where(marks, s, 0), np.where(marks, np.maximum(e, s), 0)
        items.append(np.arange(n_items))
        starts.append(s)
        ends.append(e)
        who.append(np.full(n_items, a))
    sp = S.intervals(np.concatenate(items), np.concatenate(starts), np.concatenate(ends))
    return sp, np.concatenate(who), length


def trivial_span(seed: int, marker: str, n_boot: int = 400) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    human, who, length = span_world(rng)
    n = len(length)
    z = np.zeros(n, dtype=np.int64)
    judge = {"mark_everything": S.Intervals(np.arange(n), z, length.astype(np.int64)),
             "mark_nothing": S.Intervals(np.arange(n), z, z.copy()),
             "random_spans": S.random_spans(human, who, length, np.arange(n), seed + 1)}[marker]
    like = S.span_reference(human, who, judge, length, n_boot=n_boot, seed=seed)
    entry = {"kind": "pointwise", "n_items_with_consensus": 0, "flags": [],
             "metrics": {"span_f1": {"estimate": like["judge"]["estimate"]}}, "spans": {"like_for_like": like}}
    return {"status": judge_verdict(entry)["status"], "normalised": like["normalised"]["estimate"]}


def planted(seed: int, which: str, n_items: int, n_boot: int = 400) -> dict[str, Any]:
    """A judge with a bias planted at the effect of interest, through the audit's own probes and flags."""
    from judgecal.audit.probes import AlignmentProbe, PositionProbe, VerbosityProbe

    sc = Scenario(which, position=0.1) if which == "position" else Scenario(which, verbosity=0.1)
    sim = simulate(sc, n_items, 7_000 + seed)
    inp = judge_input(sim)
    inp = JudgeInput(inp.judge, sim["judgments"], inp.truth, lens=inp.lens)
    res = evaluate([inp], AuditConfig(n_boot=n_boot, seed=seed),
                   probes=[AlignmentProbe(), PositionProbe(), VerbosityProbe()])[inp.judge]
    want = "position_bias:first" if which == "position" else "verbosity_bias:more_than_humans"
    return {"detected": want in res.flags, "flags": res.flags}


def rates(seeds: int = 200, n_boot: int = 400, n_position: int = 800, n_verbosity: int = 2500,
          progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Every scenario over ``seeds`` seeds: ``{scenario: {rate, target, ok, seeds, ...}}`` and ``ok``."""
    runs: dict[str, Callable[[int], bool]] = {
        "annotator_as_judge": lambda s: (lambda r: r["status"] == "aligned" and r["class"] == "human-like")(
            annotator_as_judge(s, 0.75, n_boot=n_boot)),
        "annotator_as_judge_subjective": lambda s: (lambda r: r["class"] == "human-like" and r["says_subjective"]
                                                    and r["status"] != "not aligned")(
            annotator_as_judge(100_000 + s, 0.35, n_boot=n_boot)),
        "order_consistent": lambda s: (lambda r: not r["flags"] and r["no_sign"])(order_consistent(s, n_boot=n_boot)),
        "majority_label": lambda s: majority_label(s, n_boot=n_boot)["status"] != "aligned",
        "mark_everything": lambda s: trivial_span(s, "mark_everything", n_boot)["status"] != "aligned",
        "mark_nothing": lambda s: trivial_span(s, "mark_nothing", n_boot)["status"] != "aligned",
        "random_spans": lambda s: trivial_span(s, "random_spans", n_boot)["status"] != "aligned",
        "planted_position": lambda s: planted(s, "position", n_position, n_boot)["detected"],
        "planted_verbosity": lambda s: planted(s, "verbosity", n_verbosity, n_boot)["detected"],
    }
    out: dict[str, Any] = {"seeds": seeds, "n_boot": n_boot, "effect_of_interest": 0.05,
                           "thresholds_version": DEFAULT_THRESHOLDS["version"], "scenarios": {}}
    for name, run in runs.items():
        hits = [bool(run(s)) for s in range(seeds)]
        rate = float(np.mean(hits))
        out["scenarios"][name] = {"rate": rate, "target": TARGETS[name], "ok": rate >= TARGETS[name] - 1e-12,
                                  "misses": int(len(hits) - sum(hits))}
        if progress is not None:
            progress(f"{name}: {rate:.3f} (target {TARGETS[name]:.2f})")
    out["ok"] = all(v["ok"] for v in out["scenarios"].values())
    return out


def checks(seeds: int, n_boot: int) -> list[dict[str, Any]]:
    """``judgecal validate``'s check rows for these scenarios."""
    res = rates(seeds, n_boot)
    return [{"scenario": f"like:{name}", "metric": "rate", "ok": bool(r["ok"]), "estimate": r["rate"],
             "check": f"{name.replace('_', ' ')}: rate {r['rate']:.3f} over {seeds} seeds (target >= {r['target']:.2f})",
             "ci": [None, None], "p": None, "q": None} for name, r in res["scenarios"].items()]


__all__ = ["TARGETS", "annotator_as_judge", "checks", "majority_label", "order_consistent", "planted", "rates",
           "span_world", "trivial_span"]
