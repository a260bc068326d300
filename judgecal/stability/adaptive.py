"""Adaptive number of repeats for a sampled judge (Wang et al., 2025, arXiv 2506.04734).

The unit is one item in one presentation order; its outcome per call is 1 when the judge prefers the
item's first candidate (item orientation) and 0 otherwise (B, tie, invalid). Start every unit with ``n0``
samples, estimate its spread ``s`` (:func:`judgecal.stats.stability.binary_spread`, smoothed so that a
unanimous start is not taken for certainty), grow it to ``N = ⌈(z s / ε)²⌉`` (at most ``n_max``), and iterate
with the new samples until every unit has at least the N its own samples ask for. Sample ``i`` always uses
seed ``seed + i``, so the calls are exactly the first N of a fixed-N run (the cache shares them) and the
comparison with a fixed N is made on the same answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgecal.data.records import Item
from judgecal.stats.stability import binary_spread, required_repeats


def _outcomes(ws: Any, keys: Sequence[str]) -> list[float]:
    from judgecal.stability.runs import _judgments

    got = _judgments(ws, keys)
    return [1.0 if got.get(k, {}).get("verdict") == "A" else 0.0 for k in keys]


def adaptive_repeats(engine: Any, items: Sequence[Item], *, epsilon: float, z: float = 1.959963984540054,
                     n0: int = 8, n_max: int = 32, max_rounds: int = 10, orders: Sequence[str] = ("AB", "BA"),
                     seed: int = 0) -> dict[str, Any]:
    """Run ``engine`` (a sampled judge) adaptively; per unit the samples used, its estimate and spread."""
    units = [(it, o) for it in items for o in orders]
    n = {(it.item_id, o): n0 for it, o in units}
    rounds, paid = 0, 0
    while True:
        rounds += 1
        calls = [c for it, o in units for c in engine.plan([it], orders=(o,), samples=n[(it.item_id, o)], seed=seed)]
        paid += engine.run(calls).done
        by_unit: dict[tuple[str, str], list[str]] = {}
        for c in calls:
            by_unit.setdefault((c.item_id, c.order), []).append(c.key)
        k = {u: sum(_outcomes(engine.ws, keys)) for u, keys in by_unit.items()}
        s = {u: float(binary_spread(k[u], n[u])) for u in n}
        need = {u: int(min(n_max, max(n0, int(required_repeats(s[u], epsilon, z))))) for u in n}
        grow = {u: need[u] for u in n if need[u] > n[u]}
        if not grow or rounds >= max_rounds:
            break
        n.update(grow)
    return {"epsilon": epsilon, "z": z, "n0": n0, "n_max": n_max, "rounds": rounds, "paid_calls": paid,
            "calls": int(sum(n.values())),
            "units": [{"item_id": u[0], "order": u[1], "n": n[u], "estimate": k[u] / n[u], "s": s[u]} for u in n]}


def fixed_repeats(engine: Any, items: Sequence[Item], n: int, *, orders: Sequence[str] = ("AB", "BA"),
                  seed: int = 0) -> dict[str, Any]:
    """The same judge with a fixed ``n`` samples per unit (answers shared with an adaptive run by the cache)."""
    calls = engine.plan(items, orders=orders, samples=n, seed=seed)
    paid = engine.run(calls).done
    by_unit: dict[tuple[str, str], list[str]] = {}
    for c in calls:
        by_unit.setdefault((c.item_id, c.order), []).append(c.key)
    est = {u: float(np.mean(_outcomes(engine.ws, keys))) for u, keys in by_unit.items()}
    return {"calls": len(calls), "paid_calls": paid,
            "units": [{"item_id": u[0], "order": u[1], "n": n, "estimate": e} for u, e in est.items()]}


def replay_adaptive(outcomes: dict[Any, Sequence[float]], *, epsilon: float, z: float = 1.959963984540054,
                    n0: int = 8, n_max: int = 32, spread: str = "smoothed") -> dict[Any, int]:
    """The adaptive rule on recorded 0/1 outcomes (sample i of each unit at index i): the N each unit ends
    with. ``spread="smoothed"`` is :func:`adaptive_repeats`' rule; ``"plain"`` uses the sample standard
    deviation (ddof = 1) as the paper states it, which stops a unanimous unit at n0."""
    out = {}
    for unit, xs in outcomes.items():
        x = np.asarray(xs, dtype=np.float64)
        n = min(n0, x.size)
        while True:
            if spread == "plain":
                s = float(np.std(x[:n], ddof=1)) if n > 1 else 0.5
            else:
                s = float(binary_spread(x[:n].sum(), n))
            need = int(min(n_max, max(n0, int(required_repeats(s, epsilon, z)))))
            if need <= n or n >= x.size:
                break
            n = min(need, x.size)
        out[unit] = n
    return out
