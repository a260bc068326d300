"""The perturbation battery validated on a simulated judge: fixed N against the sequential rule.

Three judges over ``n_items`` synthetic pairs (:func:`judgecal.audit.simulate.simulate`), each deterministic and
sampled (a coin flip on a call with probability ``SAMPLED`` — the noise between two unperturbed runs of a judge
sampled at temperature 0.7): *clean* (ignores every perturbation) and *planted* (every template planted at the
effect of interest: a sided one pushes the verdict to the perturbed side so that its shift exceeds the null's by
exactly ``effect``; chain of thought turns the verdict so that it loses ``effect`` of robustness against the
null's; a challenged verdict goes to the challenged side so that its flips exceed those after an agreeing turn by
``effect``: manipulability). Fallacy oversight reads the other way: the clean judge moves away from the broken
(correct) answer by twice the effect of interest beyond the null, the planted one does not move at all — each at the
effect of interest from the flag's reference (the null minus the effect). Each seed's judge is decided twice per bias:

- **fixed N**: every item judged, the battery's probes run as the audit runs them (item bootstrap, BH over the
  battery), ``<bias>_bias`` flagged or not;
- **sequential**: the items taken in batches of ``batch``, each bias stopping on its own once
  :func:`judgecal.stats.group_sequential.sequential_decision` settles it (the budget is the fixed N).

Rows per judge and bias: the share of seeds flagged by each rule, their agreement, and the calls each used (a
base item's clean and null runs cost 4 calls while any bias is still running, each running template 2,
manipulability 4: a challenge and an agreeing turn after each clean verdict).
Goals: detection of each planted bias >= 80% and a clean judge flagged <= 5% (each rule, each bias), and the
sequential rule on average >= 40% fewer calls than fixed N over the battery.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from judgecal.audit import challenge
from judgecal.audit.evaluate import evaluate
from judgecal.audit.perturb import SOURCE as PERTURB_SOURCE
from judgecal.audit.perturb import TEMPLATES, item_excess
from judgecal.audit.probe import AuditConfig
from judgecal.audit.simulate import Scenario, judge_input, simulate
from judgecal.stats.group_sequential import batch_looks, sequential_decision

SAMPLED = 0.2  # a sampled judge's chance that a call is a fresh coin flip (temperature 0.7)
ACCURACY = 0.8
GOALS = {"detect": 0.80, "false_flag": 0.05, "saving": 0.40}
BIASES = (*TEMPLATES, challenge.BIAS)  # every probe of the battery
COST = {b: 2 * len(challenge.KINDS) if b == challenge.BIAS else 2 for b in BIASES}  # own calls per item


def scenarios(effect: float) -> list[tuple[str, Scenario]]:
    """The four judges: clean and planted, deterministic and sampled (the push set so the excess is ``effect``)."""
    out = []
    for kind, u in (("deterministic", 0.0), ("sampled", SAMPLED)):
        win = (1 - u) * (ACCURACY + (1 - ACCURACY) / 2) + u / 2  # the clean run picks the humans' winner
        push = effect / (win - u / 2 * (2 * win - 1))
        out += [(f"clean {kind}", Scenario(f"clean-{kind}", instability=u, accuracy=ACCURACY, perturbation=0.0,
                                           catch=2 * push)),
                (f"planted {kind}", Scenario(f"planted-{kind}", instability=u, accuracy=ACCURACY, perturbation=push,
                                             unsided=effect / (1 - u), challenge=effect / (1 - u / 2), catch=0.0))]
    return out


def battery_probes(biases: tuple[str, ...] = BIASES) -> list[Any]:
    from judgecal.audit.probes import PROBES

    return [p for p in PROBES if p.name in biases]


def one_seed(sc: Scenario, n_items: int, seed: int, cfg: AuditConfig, batch: int,
             biases: tuple[str, ...] = BIASES) -> dict[str, dict[str, Any]]:
    """bias -> fixed-N flag, sequential decision and the units (items) the sequential rule used."""
    sim = simulate(sc, n_items, seed)
    inp = judge_input(sim)
    flags = evaluate([inp], cfg, probes=battery_probes(biases))["simulated"].flags
    excess = item_excess(pd.concat([sim["judgments"], sim["probes"]]), inp.pairs(PERTURB_SOURCE), cfg.effect_of_interest) \
        if set(biases) & set(TEMPLATES) else {}
    if challenge.BIAS in biases:
        excess[challenge.BIAS] = challenge.item_excess(sim["probes"], inp.pairs(PERTURB_SOURCE))
    out = {}
    for bias in biases:
        x = excess.get(bias, pd.Series(dtype=float)).to_numpy()
        seq = sequential_decision(x, batch=batch, n_max=n_items, effect=cfg.effect_of_interest, alpha=cfg.alpha)
        out[bias] = {"fixed": f"{bias}_bias" in flags, "sequential": seq["decision"] == "flag", "n": seq["n"]}
    return out


def battery_calls(stops: list[int], n_items: int, batch: int, costs: list[int] | None = None) -> int:
    """Calls the sequential battery makes: per batch, 4 per item (clean and null, both orders) while any bias
    runs, and each running bias's own calls per item (``costs``, 2 each by default)."""
    costs = costs if costs is not None else [2] * len(stops)
    total, prev = 0, 0
    for n in batch_looks(n_items, batch):
        running = sum(c for s, c in zip(stops, costs, strict=True) if s >= n)
        if running == 0:
            break
        total += (int(n) - prev) * (4 + running)
        prev = int(n)
    return total


def validate_battery(n_items: int = 400, seeds: int = 20, n_boot: int = 400, batch: int = 20,
                     effect: float | None = None, biases: tuple[str, ...] = BIASES) -> dict[str, Any]:
    """Every judge over ``seeds`` seeds: the rows, the savings and which goals are met; ``biases``: the battery's
    probes decided (every one by default; fewer: Benjamini–Hochberg over those only, the calls of those only)."""
    cfg = AuditConfig(n_boot=n_boot, seed=0) if effect is None else AuditConfig(n_boot=n_boot, seed=0,
                                                                                 effect_of_interest=effect)
    fixed_calls = (4 + sum(COST[b] for b in biases)) * n_items
    rows: list[dict[str, Any]] = []
    savings: list[float] = []
    for name, sc in scenarios(cfg.effect_of_interest):
        per: dict[str, dict[str, list[Any]]] = {b: {"fixed": [], "sequential": [], "agree": [], "n": []}
                                                for b in biases}
        for s in range(seeds):
            got = one_seed(sc, n_items, 7919 * s + 13, cfg, batch, biases)
            for b, r in got.items():
                per[b]["fixed"].append(r["fixed"])
                per[b]["sequential"].append(r["sequential"])
                per[b]["agree"].append(r["fixed"] == r["sequential"])
                per[b]["n"].append(r["n"])
            savings.append(1 - battery_calls([r["n"] for r in got.values()], n_items, batch,
                                             [COST[b] for b in got]) / fixed_calls)
        planted = name.startswith("planted")
        for b, r in per.items():
            fixed, seq = float(np.mean(r["fixed"])), float(np.mean(r["sequential"]))
            goal = GOALS["detect"] if planted else GOALS["false_flag"]
            rows.append({"judge": name, "bias": b, "flagged_fixed": fixed, "flagged_sequential": seq,
                         "agreement": float(np.mean(r["agree"])), "calls_fixed": COST[b] * n_items,
                         "calls_sequential": float(COST[b] * np.mean(r["n"])),
                         "ok": bool(min(fixed, seq) >= goal) if planted else bool(max(fixed, seq) <= goal)})
    saving = float(np.mean(savings))
    by_judge = {name: float(np.mean(savings[k * seeds:(k + 1) * seeds])) for k, (name, _) in
                enumerate(scenarios(cfg.effect_of_interest))}
    return {"n_items": n_items, "seeds": seeds, "batch": batch, "biases": list(biases), "effect_of_interest": cfg.effect_of_interest,
            "alpha": cfg.alpha, "sampled_noise": SAMPLED, "rows": rows, "calls_fixed": fixed_calls,
            "saving": saving, "saving_by_judge": by_judge,
            "agreement": float(np.mean([r["agreement"] for r in rows])),
            "goals": {"detect": all(r["ok"] for r in rows if r["judge"].startswith("planted")),
                      "false_flag": all(r["ok"] for r in rows if r["judge"].startswith("clean")),
                      "saving": saving >= GOALS["saving"]}}
