"""Validate the probes on a simulated judge with planted, analytically known biases.

The simulated humans pick the truly better response (A or B, each half the time, independent of
position, length and authorship). The simulated judge's base verdict for an item in an order: with
probability ``position`` the response shown first, else with probability ``verbosity`` the longer
one, else with probability ``self_pref`` its own family's response (when the pair has exactly one),
else the truly better one with probability ``accuracy`` and a coin flip otherwise. On top of it,
each repeated sample is replaced by a coin flip with probability ``instability``, each prompt
mutation's verdict with probability ``template``; on a pair whose human loser carries an injection
it picks that response with probability ``injection``, else judges the pair afresh; on a response against its padded copy it
picks the first shown with probability ``position``, else the padded (longer) one with probability
``verbosity``, else either at random. Because the truth is independent of order, length and
authorship, each planted effect has a closed form when it is the only one:

- first_position_rate = 0.5 + position / 2
- verbosity_excess = verbosity / 2   (the humans prefer the longer response half the time)
- pad_pick_rate = 0.5 + verbosity / 2
- self_preference_excess = self_pref / 2
- instability_rate = instability (1 - instability / 2)   (two repeats differ)
- prompt_flip_rate = template / 2   (per mutation, against the unmutated prompt)
- injection_excess = injection (1 - (1 - accuracy) / 2)   (the clean judge picks the loser (1-accuracy)/2)

The probes and their tests are the audit's own: the simulated judgments become the same
:class:`~judgecal.audit.probe.JudgeInput` that ``run_audit`` builds from a workspace and go through
:func:`~judgecal.audit.evaluate.evaluate` (every registered probe, BH over every tested metric), so a
change to a probe's test changes the report and its validation alike.

Fast mode (the test suite): one seed per scenario; every planted effect must be covered by its 95%
CI and be significant after Benjamini-Hochberg, and the null scenario must stay silent. Slow mode:
each metric's 95% CIs must cover the truth 93-97% of the time over many seeds, pooled over the seven
scenarios (a window of about +-2% is 1.3 standard errors of one scenario's coverage at 200 seeds, so
it is checked on the pooled figure), with no single scenario under 90%. A rate whose truth is exactly
0 (a deterministic judge) has the degenerate interval [0, 0] and is left out of coverage.

The perturbation battery (:mod:`judgecal.audit.validate_battery`): each template planted at its effect of interest
and a clean judge, deterministic and sampled, decided at fixed N and by the sequential rule — the flag rates,
their agreement and the calls saved, with which goals are met — under ``battery`` (8 seeds in fast mode).

The like-for-like scenarios (:mod:`judgecal.audit.validate_like`: an annotator as the judge, an
order-consistent judge, trivial raters, biases planted at the effect of interest) run as rates over seeds:
20 in fast mode, ``seeds`` in slow mode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from judgecal.audit.evaluate import evaluate
from judgecal.audit.probe import AuditConfig
from judgecal.audit.probes import PROBES
from judgecal.audit.simulate import MUTATIONS as MUTATIONS
from judgecal.audit.simulate import REPEATS as REPEATS
from judgecal.audit.simulate import SCENARIOS as SCENARIOS
from judgecal.audit.simulate import Scenario as Scenario
from judgecal.audit.simulate import judge_input as judge_input
from judgecal.audit.simulate import simulate as simulate
from judgecal.audit.simulate import with_traps_and_triads as with_traps_and_triads
from judgecal.audit.verdict import PowerCheck

FAST_BATTERY_SEEDS = 8


def probe(sim: dict[str, Any], n_boot: int, seed: int) -> dict[str, dict[str, Any]]:
    """Run the audit's registered probes (:func:`judgecal.audit.evaluate.evaluate`, the report's own path)
    on the simulated judge; returns the validated metrics as they would appear in ``audit.json``."""
    cfg, inp = AuditConfig(n_boot=n_boot, seed=seed), judge_input(sim)
    res = evaluate([inp], cfg)["simulated"]
    # the probes that read trap pairs or triads, on the same judge given them (with_traps_and_triads), apart: the
    # simulation's own figures stay those of its audit
    idle = [p for p in PROBES if p.info is not None and p.info.headline not in res.metrics]
    more = evaluate([with_traps_and_triads(inp)], cfg, probes=idle)["simulated"].metrics if idle else {}
    got = {**more, **res.metrics}
    return {k: got[k].to_json() for k in validated() if k in got}


def _power_checks() -> list[PowerCheck]:
    """The closed forms the registered probes declare (:class:`judgecal.audit.verdict.PowerCheck`), in their order."""
    return [c for p in PROBES for c in p.power_checks]


def truths(sc: Scenario) -> dict[str, float]:
    """Closed forms (each probe's :attr:`~judgecal.audit.probe.Probe.power_checks`); those of a single planted
    effect hold whatever ``instability`` is."""
    return {c.metric: c.truth(sc) for c in _power_checks()}


def planted() -> dict[str, tuple[str, ...]]:
    """scenario -> the metrics whose effect it plants."""
    out: dict[str, tuple[str, ...]] = {}
    for c in _power_checks():
        out[c.planted] = (*out.get(c.planted, ()), c.metric)
    return out


def validated() -> tuple[str, ...]:
    """The metrics the scenarios check: those with a closed form (above), then each tested metric (a null value)
    a probe declares without one: checked to stay silent in the null scenario."""
    known = tuple(c.metric for c in _power_checks())
    added = [m.name for p in PROBES for m in p.metric_infos if m.null is not None and m.name not in known]
    return (*known, *added)


def probe_checks(n_items: int = 1000, seeds: int = 1, n_boot: int = 1000,
                 alpha: float = 0.05) -> tuple[list[dict[str, Any]], dict[str, list[bool]]]:
    """Every scenario through every registered probe: the checks of seed 0 and, per scenario and metric,
    whether each seed's interval covered the truth."""
    checks: list[dict[str, Any]] = []
    hits: dict[str, list[bool]] = {}
    metrics = validated()
    plants = planted()
    boundary = {c.metric for c in _power_checks() if c.boundary}
    for sc in SCENARIOS:
        truth = truths(sc)
        for s in range(seeds):
            out = probe(simulate(sc, n_items, 1000 * s + len(sc.name)), n_boot, s)
            for metric in metrics:
                r = out.get(metric) or {"estimate": None, "ci_low": None, "ci_high": None, "p": None, "q": None}
                known = truth.get(metric)
                covered = known is not None and r["ci_low"] is not None and r["ci_low"] <= known <= r["ci_high"]
                if known is not None and not (metric in boundary and known == 0):
                    hits.setdefault(f"{sc.name}:{metric}", []).append(bool(covered))
                if s > 0:
                    continue
                if metric in plants.get(sc.name, ()):
                    ok = covered and r["q"] is not None and r["q"] < alpha
                    what = f"planted {metric} recovered (truth {truth[metric]:.3f}) and significant"
                elif sc.name == "null":
                    # None: untestable, e.g. a rate of exactly 0; a metric the audit did not report fails
                    ok = metric in out and (r["q"] is None or not r["q"] < alpha)
                    what = f"no {metric} effect reported at null"
                else:
                    continue
                checks.append({"scenario": sc.name, "metric": metric, "check": what, "ok": bool(ok),
                               "estimate": r["estimate"], "ci": [r["ci_low"], r["ci_high"]], "p": r["p"], "q": r["q"]})
    return checks, hits


def validate(n_items: int = 1000, seeds: int = 1, n_boot: int = 1000, alpha: float = 0.05,
             battery_seeds: int | None = None) -> dict[str, Any]:
    """Run every scenario; ``seeds > 1`` also measures CI coverage (slow mode). ``battery``: the perturbation
    battery's rates over ``battery_seeds`` seeds (default: :data:`FAST_BATTERY_SEEDS` in fast mode, ``seeds`` in
    slow mode; 0: not run), apart from the checks (:mod:`judgecal.audit.validate_battery`)."""
    results: dict[str, Any] = {"n_items": n_items, "seeds": seeds, "checks": [], "coverage": {}}
    results["checks"], hits = probe_checks(n_items, seeds, n_boot, alpha)
    if seeds > 1:
        for metric in truths(SCENARIOS[0]):
            pooled = [h for key, h in hits.items() if key.endswith(f":{metric}")]
            per = {key.split(":")[0]: float(np.mean(h)) for key, h in hits.items() if key.endswith(f":{metric}")}
            rate = float(np.mean(np.concatenate(pooled)))
            results["coverage"][metric] = {"coverage": rate, "by_scenario": per,
                                           "ok": bool(0.93 <= rate <= 0.97 and min(per.values()) >= 0.90)}
    from judgecal.audit.validate_stats import check_all  # win rates, PPI++, selective, alt test, calibration

    checks, coverage = check_all(seeds > 1, seeds, n_boot)
    results["checks"] += checks
    results["coverage"].update(coverage)
    from judgecal.audit.validate_stability import AXES as STABILITY_AXES
    from judgecal.audit.validate_stability import planted_instability

    for axis in STABILITY_AXES:  # instability planted on one axis of a stability run: the decomposition names it
        r = planted_instability(axis, n_items=n_items, seed=0)
        results["checks"].append({"scenario": f"instability:{axis}", "metric": "stability_top_axis",
                                  "check": f"the variance decomposition recovers the planted {axis} axis",
                                  "ok": bool(r["passed"]), "estimate": float(r["shares"][axis]),
                                  "ci": [None, None], "p": None, "q": None})
    from judgecal.audit.validate_like import checks as like_checks  # like with like, as rates over seeds

    results["checks"] += like_checks(seeds if seeds > 1 else 20, min(n_boot, 400))
    results["ok"] = all(c["ok"] for c in results["checks"]) and all(c["ok"] for c in results["coverage"].values())
    if battery_seeds != 0:  # the perturbation battery, fixed N beside the sequential rule (rates over seeds)
        from judgecal.audit.validate_battery import validate_battery

        results["battery"] = validate_battery(n_items, battery_seeds or (seeds if seeds > 1 else FAST_BATTERY_SEEDS),
                                              min(n_boot, 400))
    return results
