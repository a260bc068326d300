"""Validate the probes on a simulated judge with planted, analytically known biases.

The simulated humans pick the truly better response (A or B, each half the time, independent of
position, length and authorship). The simulated judge, per judgment, with probability ``position``
picks the response shown first, else with probability ``verbosity`` the longer one, else with
probability ``self_pref`` its own family's response (when the pair has exactly one), else the truly
better one with probability ``accuracy`` and a coin flip otherwise. Because the truth is independent
of order, length and authorship, each planted effect has a closed form when it is the only one:

- first_position_rate = 0.5 + position / 2
- verbosity_excess = verbosity / 2   (the humans prefer the longer response half the time)
- self_preference_excess = self_pref / 2

Fast mode (the test suite): one seed per scenario; every planted effect must be covered by its 95%
CI and be significant after Benjamini-Hochberg, and the null scenario must stay silent. Slow mode:
the 95% CIs must cover the truth 93-97% of the time over many seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit.alignment import judge_metrics
from judgecal.audit.position import position_tests
from judgecal.audit.self_preference import self_preference
from judgecal.audit.tests_stats import benjamini_hochberg, ci_p_value
from judgecal.audit.verbosity import verbosity


@dataclass(frozen=True)
class Scenario:
    name: str
    position: float = 0.0
    verbosity: float = 0.0
    self_pref: float = 0.0
    accuracy: float = 0.8


SCENARIOS = (Scenario("null"), Scenario("position", position=0.3), Scenario("verbosity", verbosity=0.3),
             Scenario("self_preference", self_pref=0.3))


def simulate(sc: Scenario, n_items: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    ids = np.array([f"s{i}" for i in range(n_items)])
    truth = rng.choice(np.array(["A", "B"]), n_items)
    len_a, len_b = rng.integers(20, 400, n_items), rng.integers(20, 400, n_items)
    # half the items pit the judge's own family against another; own is A or B at random
    has_own = rng.random(n_items) < 0.5
    own_a = rng.random(n_items) < 0.5
    rows = []
    for i in range(n_items):
        longer = "A" if len_a[i] > len_b[i] else "B"
        for order in ("AB", "BA"):
            first = "A" if order == "AB" else "B"
            u = rng.random()
            if u < sc.position:
                v = first
            elif u < sc.position + sc.verbosity:
                v = longer
            elif has_own[i] and u < sc.position + sc.verbosity + sc.self_pref:
                v = "A" if own_a[i] else "B"
            else:
                v = truth[i] if rng.random() < sc.accuracy else rng.choice(["A", "B"])
            rows.append((ids[i], order, v))
    j = pd.DataFrame(rows, columns=["item_id", "order", "verdict"]).assign(sample=0, mutation="none", status="ok")
    return {"judgments": j, "truth": pd.Series(truth, index=ids),
            "lens": pd.DataFrame({"len_a": len_a, "len_b": len_b}, index=ids),
            "own_is_a": pd.Series(own_a[has_own], index=ids[has_own])}


def probe(sim: dict[str, Any], n_boot: int, seed: int) -> dict[str, dict[str, Any]]:
    """Run the real probes; returns the three tested metrics with estimate, CI and p."""
    m = judge_metrics(sim["judgments"], sim["truth"], n_boot=n_boot, seed=seed)
    pos = position_tests(sim["judgments"])
    first = {**m["first_position_rate"], "p": pos["mcnemar_p"]}
    verb = verbosity(sim["judgments"], sim["truth"], sim["lens"], n_boot=n_boot, seed=seed)["verbosity_excess"]
    selfp = self_preference(sim["judgments"], sim["truth"], sim["own_is_a"], n_boot=n_boot,
                            seed=seed)["self_preference_excess"]
    out = {"first_position_rate": first, "verbosity_excess": {**verb, "p": ci_p_value(verb)},
           "self_preference_excess": {**selfp, "p": ci_p_value(selfp)}}
    q = benjamini_hochberg([out[k]["p"] if out[k]["p"] is not None else np.nan for k in out])
    for k, qq in zip(out, q, strict=True):
        out[k]["q"] = float(qq)
    return out


def truths(sc: Scenario) -> dict[str, float]:
    return {"first_position_rate": 0.5 + sc.position / 2, "verbosity_excess": sc.verbosity / 2,
            "self_preference_excess": sc.self_pref / 2}


PLANTED = {"position": "first_position_rate", "verbosity": "verbosity_excess", "self_preference": "self_preference_excess"}


def validate(n_items: int = 1000, seeds: int = 1, n_boot: int = 1000, alpha: float = 0.05) -> dict[str, Any]:
    """Run every scenario; ``seeds > 1`` also measures CI coverage (slow mode)."""
    results: dict[str, Any] = {"n_items": n_items, "seeds": seeds, "checks": [], "coverage": {}}
    hits: dict[str, list[bool]] = {}
    for sc in SCENARIOS:
        truth = truths(sc)
        for s in range(seeds):
            out = probe(simulate(sc, n_items, 1000 * s + len(sc.name)), n_boot, s)
            for metric, r in out.items():
                covered = r["ci_low"] <= truth[metric] <= r["ci_high"]
                hits.setdefault(f"{sc.name}:{metric}", []).append(bool(covered))
                if s > 0:
                    continue
                planted_here = PLANTED.get(sc.name) == metric
                if planted_here:
                    ok = covered and r["q"] < alpha
                    what = f"planted {metric} recovered (truth {truth[metric]:.3f}) and significant"
                elif sc.name == "null":
                    ok = r["q"] >= alpha
                    what = f"no {metric} effect reported at null"
                else:
                    continue
                results["checks"].append({"scenario": sc.name, "metric": metric, "check": what, "ok": bool(ok),
                                          "estimate": r["estimate"], "ci": [r["ci_low"], r["ci_high"]],
                                          "q": r["q"]})
    if seeds > 1:
        for key, h in hits.items():
            rate = float(np.mean(h))
            results["coverage"][key] = {"coverage": rate, "ok": bool(0.93 <= rate <= 0.97)}
    results["ok"] = all(c["ok"] for c in results["checks"]) and all(c["ok"] for c in results["coverage"].values())
    return results
