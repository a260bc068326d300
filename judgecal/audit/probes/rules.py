"""The tests and flag rules the built-in probes share.

Tests (two-sided; ``p`` tests ``estimate = null_value``):

- ``first_position_rate`` (null 0.5): exact McNemar on the two orders' picks of candidate A; MDE of a
  one-sample proportion test on the decisive pairs.
- ``verbosity_excess``, ``self_preference_excess``, ``injection_excess`` (null 0),
  ``instability_rate`` (null 0), ``pad_pick_rate`` (null 0.5): Wald test with the standard error read
  off the item-bootstrap interval (:func:`judgecal.stats.inference.ci_p_value`); MDE from the same SE.
- ``prompt_flip_rate`` (null: the judge's own ``instability_rate``, which alone makes verdicts
  differ): Wald test of the difference, the two SEs combined in quadrature.
- A worst-of-``k`` metric (the worst prompt mutation, the worst injection kind) carries a Bonferroni
  p-value ``min(1, k p)``, so picking the worst does not inflate its significance.

Descriptive metrics (accuracy, macro-F1, kappa, rates with no null) carry no test.

Flags: significant after Benjamini–Hochberg *and* an interval that reaches the effect of interest away from
the null (a bias of exactly that size is then found in most seeds; a significant effect whose interval stops
short of it is negligible). ``<probe>:underpowered``: not significant while the interval still holds the
effect of interest on either side; an interval pinned at the null (no discordant pair, zero variance) is
evidence of no effect and raises nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from judgecal.audit.metric import Metric, clean
from judgecal.audit.probe import AuditConfig
from judgecal.stats.inference import ci_p_value, mde_from_ci


def ci_test(m: Metric, null_value: float = 0.0, k: int = 1) -> Metric:
    """``m`` tested against ``null_value`` with the SE read off its interval (Bonferroni over ``k``)."""
    if m.estimate is None or m.ci_low is None or m.ci_high is None:
        return m.tested(None, null_value)
    p = ci_p_value({"estimate": m.estimate - null_value, "ci_low": m.ci_low - null_value,
                    "ci_high": m.ci_high - null_value})
    return m.tested(None if p is None else min(1.0, k * p), null_value, mde_from_ci(m.ci_low, m.ci_high))


def excess_test(m: Metric, base: Metric | None, k: int = 1) -> Metric:
    """``m`` tested against the estimate of the baseline metric ``base`` (0 when absent), their SEs
    (read off the two intervals) combined in quadrature (Bonferroni over ``k``)."""
    if base is None or base.estimate is None:
        return ci_test(m, 0.0, k)
    if m.estimate is None or m.ci_low is None or m.ci_high is None or base.ci_low is None or base.ci_high is None:
        return m.tested(None, base.estimate)
    half = float(np.hypot(m.ci_high - m.ci_low, base.ci_high - base.ci_low)) / 2
    d = m.estimate - base.estimate
    p = ci_p_value({"estimate": d, "ci_low": d - half, "ci_high": d + half})
    return m.tested(None if p is None else min(1.0, k * p), base.estimate, mde_from_ci(d - half, d + half))


def _reach(m: Metric) -> float | None:
    """How far the interval reaches from the null value (its far end); ``None`` without an interval."""
    if m.ci_low is None or m.ci_high is None:
        return None
    null = m.null_value or 0.0
    return max(abs(m.ci_low - null), abs(m.ci_high - null))


def significant(m: Metric | None, cfg: AuditConfig) -> bool:
    """The flag rule: significant (BH q < alpha) *and* an effect that may be the effect of interest: the
    interval reaches at least the effect of interest away from the null value (so a bias planted at the
    effect of interest is flagged, and a significant but negligible one, whose interval stops short of
    it, is not). Without an interval, the estimate itself must reach it."""
    if m is None or m.q is None or not m.q < cfg.alpha or m.estimate is None:
        return False
    reach = _reach(m)
    far = abs(m.estimate - (m.null_value or 0.0)) if reach is None else reach
    return far >= cfg.effect_of_interest - 1e-12


def underpowered(m: Metric | None, cfg: AuditConfig) -> bool:
    """Not significant, and the interval still holds an effect of interest on either side of the null.
    An interval pinned at the null (no discordant pair, zero variance) is evidence of no effect: never
    underpowered. Without an interval, the test's MDE stands in."""
    if m is None or m.estimate is None or (m.q is not None and m.q < cfg.alpha):
        return False
    reach = _reach(m)
    if reach is None:
        return m.mde is not None and m.mde > cfg.effect_of_interest
    return reach >= cfg.effect_of_interest - 1e-12


def no_sign(m: Metric | None) -> bool:
    """An interval pinned at the null value: zero discordant pairs or zero variance."""
    return (m is not None and m.ci_low is not None and m.ci_high is not None and m.null_value is not None
            and abs(m.ci_low - m.null_value) < 1e-12 and abs(m.ci_high - m.null_value) < 1e-12)


def direction_flags(m: Metric | None, flag: str, cfg: AuditConfig) -> list[str]:
    if m is None:
        return []
    if significant(m, cfg):
        return [f"{flag}:{'more' if (m.estimate or 0) > 0 else 'less'}_than_humans"]
    return [f"{flag}:underpowered"] if underpowered(m, cfg) else []


def plain(d: Mapping[str, Any]) -> dict[str, Any]:
    """A section's ``{estimate, ci_low, ci_high, n}`` dict with undefined values as ``None``."""
    return {k: (int(v) if k == "n" else clean(v) if isinstance(v, float) else v) for k, v in d.items()}


def worst_of(rows: Mapping[str, Any], key: Any) -> tuple[str, Any]:
    """The entry whose ``key`` is largest (undefined values last)."""
    def score(kv: tuple[str, Any]) -> float:
        v = clean(key(kv[1]))
        return -np.inf if v is None else v
    return max(rows.items(), key=score)
