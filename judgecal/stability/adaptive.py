"""Adaptive number of repeats for a sampled judge (Wang et al., 2025, arXiv 2506.04734).

The unit is one item in one presentation order; its outcome per call is 1 when the judge prefers the
item's first candidate (item orientation) and 0 otherwise (B, tie, invalid). A unit whose spread is
``s = √(p(1 − p))`` needs ``N = ⌈(z s / ε)²⌉`` calls for its mean to be within ±ε (at most ``n_max``):

- a small pilot: every unit starts with ``n0`` samples (4);
- a pooled spread: ``s²`` is the posterior mean of ``p(1 − p)`` under a Beta prior fitted by moments
  to the units of the same group (presentation order by default: the units of one order share the judge's
  position bias), ``E[p(1−p)] = a b / ((a + b)(a + b + 1))`` with ``a = k + μ m``, ``b = n − k + (1 − μ) m``,
  ``μ`` the group's rate and ``m = μ(1 − μ)/τ² − 1`` its prior strength from the between-unit variance
  ``τ²`` (at least 1, at most the group's smallest ``n``: the prior never outweighs a unit's own samples).
  A unanimous pilot in a group that is nearly always unanimous then stops; one in a mixed group does not;
- growth at most doubling a unit per round, re-estimating between rounds, so an early overestimate of the
  spread does not commit the whole N at once; it stops when every unit has the N its samples ask for.

Sample ``i`` always uses seed ``seed + i``, so the calls are exactly the first N of a fixed-N run (the cache
shares them) and the comparison with a fixed N is made on the same answers. The estimate reported is the
plain mean ``k / n``; the prior only decides how many calls a unit gets.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from judgecal.data.records import Item
from judgecal.errors import InputError
from judgecal.stats.stability import binary_spread, required_repeats

Z95 = 1.959963984540054


def pooled_variance(k: ArrayLike, n: ArrayLike, groups: Sequence[Any]) -> NDArray[np.float64]:
    """Each unit's posterior mean of ``p(1 − p)`` under its group's moment-fitted Beta prior (module docstring)."""
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    g = np.asarray(groups, dtype=object)
    out = np.empty_like(k)
    for key in dict.fromkeys(g.tolist()):
        sel = g == key
        ks, ns = k[sel], n[sel]
        mu = (ks.sum() + 0.5) / (ns.sum() + 1.0)
        seen = ns > 0  # a unit with no sample yet has no rate of its own: it takes the prior (m = 1)
        if seen.sum() > 1:
            rate, per = ks[seen] / ns[seen], mu * (1 - mu) / ns[seen]
            tau2 = max(float(np.var(rate, ddof=1) - np.mean(per)), 1e-6)
            strength = mu * (1 - mu) / tau2 - 1.0
        else:
            strength = 1.0
        m = min(max(strength, 1.0), max(float(ns.min()), 1.0))
        a, b = ks + mu * m, ns - ks + (1 - mu) * m
        out[sel] = a * b / ((a + b) * (a + b + 1))
    return out


SPREADS = ("pooled", "smoothed", "plain")
GROWTHS = ("double", "jump")


def check_rule(*, epsilon: float, n0: int, n_max: int, spread: str, growth: str) -> None:
    """Refuse a rule that cannot run (before any call is paid for)."""
    if not epsilon > 0:
        raise InputError(f"epsilon must be > 0, got {epsilon!r}")
    if not 1 <= n0 <= n_max:
        raise InputError(f"need 1 <= n0 <= n_max, got n0 = {n0!r}, n_max = {n_max!r}")
    if spread not in SPREADS:
        raise InputError(f"spread must be pooled, smoothed or plain, not {spread!r}")
    if growth not in GROWTHS:
        raise InputError(f"growth must be double or jump, not {growth!r}")


def next_n(k: ArrayLike, n: ArrayLike, groups: Sequence[Any], *, epsilon: float, z: float = Z95, n0: int = 4,
           n_max: int = 32, spread: str = "pooled", growth: str = "double") -> NDArray[np.int64]:
    """The samples each unit should have after this round (``== n``: stop). ``spread``: ``"pooled"`` (the
    default, module docstring), ``"smoothed"`` (per unit, ``p̃ = (k + ½)/(n + 1)``) or ``"plain"`` (the sample
    standard deviation, ddof = 1, as the paper states it); ``growth``: ``"double"`` or ``"jump"`` (to N at once)."""
    check_rule(epsilon=epsilon, n0=n0, n_max=n_max, spread=spread, growth=growth)
    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.int64)
    if spread == "pooled":
        s = np.sqrt(pooled_variance(k, n, groups))
    elif spread == "smoothed":
        s = binary_spread(k, n)
    else:  # plain
        p = k / np.maximum(n, 1)
        s = np.where(n > 1, np.sqrt(p * (1 - p) * n / np.maximum(n - 1, 1)), 0.5)
    need = np.clip(required_repeats(s, epsilon, z), n0, n_max)
    target = np.minimum(need, 2 * n) if growth == "double" else need
    return np.asarray(np.maximum(n, target), dtype=np.int64)


def _outcomes(ws: Any, keys: Sequence[str]) -> list[float]:
    from judgecal.stability.runs import _judgments

    got = _judgments(ws, keys)
    return [1.0 if got.get(k, {}).get("verdict") == "A" else 0.0 for k in keys]


def adaptive_repeats(engine: Any, items: Sequence[Item], *, epsilon: float, z: float = Z95, n0: int = 4,
                     n_max: int = 32, max_rounds: int = 10, orders: Sequence[str] = ("AB", "BA"), seed: int = 0,
                     spread: str = "pooled", growth: str = "double") -> dict[str, Any]:
    """Run ``engine`` (a sampled judge) adaptively; per unit the samples used, its estimate and spread."""
    check_rule(epsilon=epsilon, n0=n0, n_max=n_max, spread=spread, growth=growth)
    units = [(it, o) for it in items for o in orders]
    keys = [(it.item_id, o) for it, o in units]
    n: NDArray[np.int64] = np.full(len(units), n0, dtype=np.int64)
    rounds, paid = 0, 0
    while True:
        rounds += 1
        calls = [c for (it, o), m in zip(units, n, strict=True)
                 for c in engine.plan([it], orders=(o,), samples=int(m), seed=seed)]
        paid += engine.run(calls).done
        by_unit: dict[tuple[str, str], list[str]] = {}
        for c in calls:
            by_unit.setdefault((c.item_id, c.order), []).append(c.key)
        k = np.array([sum(_outcomes(engine.ws, by_unit[u])) for u in keys])
        new = next_n(k, n, [o for _, o in keys], epsilon=epsilon, z=z, n0=n0, n_max=n_max, spread=spread,
                     growth=growth)
        if (new == n).all() or rounds >= max_rounds:
            break
        n = new
    s = np.sqrt(pooled_variance(k, n, [o for _, o in keys])) if spread == "pooled" else binary_spread(k, n)
    return {"epsilon": epsilon, "z": z, "n0": n0, "n_max": n_max, "spread": spread, "growth": growth,
            "rounds": rounds, "paid_calls": paid, "calls": int(n.sum()),
            "units": [{"item_id": u[0], "order": u[1], "n": int(m), "estimate": float(x / m), "s": float(v)}
                      for u, m, x, v in zip(keys, n, k, s, strict=True)]}


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


def replay_adaptive(outcomes: dict[Hashable, Sequence[float]], *, epsilon: float, z: float = Z95, n0: int = 4,
                    n_max: int = 32, spread: str = "pooled", growth: str = "double",
                    groups: dict[Hashable, Hashable] | None = None, max_rounds: int = 10) -> dict[Hashable, int]:
    """The adaptive rule on recorded 0/1 outcomes (sample i of each unit at index i): the N each unit ends
    with, round for round as :func:`adaptive_repeats` would. ``groups``: unit -> pooling group (default: the
    unit's last element when it is a tuple, its presentation order)."""
    check_rule(epsilon=epsilon, n0=n0, n_max=n_max, spread=spread, growth=growth)
    units = list(outcomes)
    xs = [np.asarray(outcomes[u], dtype=np.float64) for u in units]
    g = [groups[u] if groups is not None else (u[-1] if isinstance(u, tuple) else 0) for u in units]
    cap = np.array([x.size for x in xs], dtype=np.int64)
    n: NDArray[np.int64] = np.minimum(n0, cap)
    for r in range(1, max_rounds + 1):
        k = np.array([x[:m].sum() for x, m in zip(xs, n, strict=True)])
        new = np.minimum(next_n(k, n, g, epsilon=epsilon, z=z, n0=n0, n_max=n_max, spread=spread, growth=growth),
                         cap)
        if (new == n).all() or r >= max_rounds:
            break
        n = new
    return {u: int(m) for u, m in zip(units, n, strict=True)}
