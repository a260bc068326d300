"""The thresholds a verdict reads: judgecal's defaults, a workspace's ``thresholds.yaml`` over them key by key,
each value checked against the range the rules can use (:class:`ThresholdsError` names the file, the field and the
value). The rules themselves are in :mod:`judgecal.audit.decision`; the business-loss bound
``Δε = budget / (requests × cost_per_error)`` (:func:`tolerated_gap`) is the largest accuracy gap one accepts.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from judgecal.audit.verdict import ThresholdSpec
from judgecal.data.yamlfile import ConfigError, read_yaml_as

THRESHOLDS_FILE = "thresholds.yaml"
THRESHOLDS_VERSION = 1
DEFAULT_THRESHOLDS: dict[str, Any] = {
    "version": THRESHOLDS_VERSION,
    "alpha": 0.05,
    "min_items": 30,
    "kappa": {"not_aligned_below": 0.20, "aligned_at_least": 0.60},
    "kappa_gap": {"caution_above": 0.10, "not_aligned_above": 0.30},
    "accuracy_gap": {"caution_above": 0.05, "not_aligned_above": 0.15},
    "invalid_rate": {"caution_above": 0.05, "not_aligned_above": 0.20},
    "serious_bias": {"not_aligned_beyond": 0.30},
    "span_f1_ratio": {"not_aligned_below": 0.50, "aligned_at_least": 0.80},
    "span_score": {"not_aligned_below": 0.50, "aligned_at_least": 0.80},
    "label_rate_gap": {"caution_above": 0.05, "not_aligned_above": 0.15},
    "reference": "pairwise",
    "business_loss": None,
    "gate": {"kappa_tolerance": 0.03, "accuracy_tolerance": 0.02, "invalid_rate_tolerance": 0.02,
             "bias_tolerance": 0.05},  # judgecal gate (judgecal/loop/gate.py)
}
# a probe's own thresholds (its ThresholdSpec) are added when it is registered (declare_thresholds)
REFERENCES = ("pairwise", "leave_one_out")
STATUSES = ("aligned", "caution", "not aligned")


class ThresholdsError(ConfigError):
    """A thresholds file that cannot be read, names unknown keys or holds a value the rules cannot use:
    ``file: field: message``."""


# leaf -> (lowest, highest, whole number): what the rules below can read; out of range is refused
RANGES: dict[str, tuple[float, float, bool]] = {
    "alpha": (0.0, 1.0, False), "min_items": (1, 1_000_000_000, True),
    "kappa.not_aligned_below": (-1.0, 1.0, False), "kappa.aligned_at_least": (-1.0, 1.0, False),
    "kappa_gap.caution_above": (0.0, 2.0, False), "kappa_gap.not_aligned_above": (0.0, 2.0, False),
    "accuracy_gap.caution_above": (0.0, 1.0, False), "accuracy_gap.not_aligned_above": (0.0, 1.0, False),
    "invalid_rate.caution_above": (0.0, 1.0, False), "invalid_rate.not_aligned_above": (0.0, 1.0, False),
    "label_rate_gap.caution_above": (0.0, 1.0, False), "label_rate_gap.not_aligned_above": (0.0, 1.0, False),
    "serious_bias.not_aligned_beyond": (0.0, 2.0, False),
    "span_f1_ratio.not_aligned_below": (0.0, 1.0, False), "span_f1_ratio.aligned_at_least": (0.0, 1.0, False),
    "span_score.not_aligned_below": (0.0, 1.0, False), "span_score.aligned_at_least": (0.0, 1.0, False),
    "gate.kappa_tolerance": (0.0, 2.0, False), "gate.accuracy_tolerance": (0.0, 1.0, False),
    "gate.invalid_rate_tolerance": (0.0, 1.0, False), "gate.bias_tolerance": (0.0, 1.0, False),
}
OPEN = {"alpha"}  # 0 < alpha < 1: a test at level 0 or 1 decides nothing
# (lower, upper): the first may not exceed the second, or a rule would skip its middle band
ORDERED = (("kappa.not_aligned_below", "kappa.aligned_at_least"),
           ("kappa_gap.caution_above", "kappa_gap.not_aligned_above"),
           ("accuracy_gap.caution_above", "accuracy_gap.not_aligned_above"),
           ("invalid_rate.caution_above", "invalid_rate.not_aligned_above"),
           ("label_rate_gap.caution_above", "label_rate_gap.not_aligned_above"),
           ("span_f1_ratio.not_aligned_below", "span_f1_ratio.aligned_at_least"),
           ("span_score.not_aligned_below", "span_score.aligned_at_least"))


def declare_thresholds(spec: ThresholdSpec) -> None:
    """Add a probe's thresholds (its defaults, at their place before ``spec.before``, and their ranges) to those
    every thresholds file is read against; declaring the same again changes nothing, another value is refused."""
    if spec.key in DEFAULT_THRESHOLDS:
        if DEFAULT_THRESHOLDS[spec.key] != dict(spec.defaults):
            raise ThresholdsError(f"thresholds: {spec.key!r} is already declared with other defaults")
        return
    items = list(DEFAULT_THRESHOLDS.items())
    DEFAULT_THRESHOLDS.clear()
    for key, value in items:
        if key == spec.before:
            DEFAULT_THRESHOLDS[spec.key] = dict(spec.defaults)
        DEFAULT_THRESHOLDS[key] = value
    DEFAULT_THRESHOLDS.setdefault(spec.key, dict(spec.defaults))
    RANGES.update({f"{spec.key}.{leaf}": r for leaf, r in spec.ranges.items()})


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _leaf(value: Any, origin: str, where: str) -> float | int:
    """One threshold, checked against :data:`RANGES`."""
    lo, hi, whole = RANGES[where]
    if not _is_number(value):
        raise ThresholdsError(f"{origin}: {where}: must be a number, got {value!r}")
    if not math.isfinite(value):
        raise ThresholdsError(f"{origin}: {where}: must be a finite number, got {value}")
    if whole and value != int(value):
        raise ThresholdsError(f"{origin}: {where}: must be a whole number, got {value!r}")
    inside = lo < value < hi if where in OPEN else lo <= value <= hi
    if not inside:
        bounds = f"between {lo:g} and {hi:g}" + (" (exclusive)" if where in OPEN else "")
        raise ThresholdsError(f"{origin}: {where}: {value!r} is out of range; give a number {bounds}")
    return int(value) if whole else value


def _merge(base: dict[str, Any], over: dict[str, Any], origin: str, path: str = "") -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        where = f"{path}{key}"
        if key not in base:
            raise ThresholdsError(f"{origin}: unknown key {where!r}; known: {', '.join(sorted(map(str, base)))}")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ThresholdsError(f"{origin}: {where}: must be a mapping, got {value!r}")
            out[key] = _merge(base[key], value, origin, where + ".")
        elif key == "business_loss":
            out[key] = _business_loss(value, origin)
        elif key == "reference":
            if value not in REFERENCES:
                raise ThresholdsError(f"{origin}: reference must be one of {', '.join(REFERENCES)}, got {value!r}")
            out[key] = value
        elif key == "version":
            out[key] = value
        else:
            out[key] = _leaf(value, origin, where)
    return out


def _ordered(t: dict[str, Any], origin: str) -> None:
    for low, high in ORDERED:
        a, b = (t[low.split(".")[0]][low.split(".")[1]], t[high.split(".")[0]][high.split(".")[1]])
        if a > b:
            raise ThresholdsError(f"{origin}: {low}: {a:g} is above {high} {b:g}; the bounds are inverted")


def _business_loss(value: Any, origin: str) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ThresholdsError(f"{origin}: business_loss: must be a mapping")
    known = {"tolerated_error_increase", "budget", "requests", "cost_per_error"}
    if extra := set(value) - known:
        raise ThresholdsError(f"{origin}: business_loss: unknown key {sorted(map(str, extra))[0]!r}; known: "
                              f"{', '.join(sorted(known))}")
    for k, v in value.items():
        if not _is_number(v) or not math.isfinite(v) or v <= 0:
            raise ThresholdsError(f"{origin}: business_loss.{k}: must be a positive finite number, got {v!r}")
    if value.get("tolerated_error_increase", 0) > 1:
        raise ThresholdsError(f"{origin}: business_loss.tolerated_error_increase: "
                              f"{value['tolerated_error_increase']!r} is out of range; an accuracy gap is at most 1")
    if "tolerated_error_increase" not in value and not {"budget", "requests", "cost_per_error"} <= set(value):
        raise ThresholdsError(f"{origin}: business_loss needs tolerated_error_increase, "
                              "or budget, requests and cost_per_error")
    return {k: float(v) for k, v in value.items()}


def tolerated_gap(business_loss: dict[str, float] | None) -> float | None:
    """The largest acceptable accuracy gap from the business-loss backcalculation:
    ``Δε = budget / (requests × cost_per_error)`` unless ``tolerated_error_increase`` is given."""
    if not business_loss:
        return None
    if "tolerated_error_increase" in business_loss:
        return business_loss["tolerated_error_increase"]
    return business_loss["budget"] / (business_loss["requests"] * business_loss["cost_per_error"])


def load_thresholds(path: str | Path | None) -> dict[str, Any]:
    """Defaults, overridden by ``path`` (a file, or a workspace folder holding ``thresholds.yaml``)."""
    if path is None:
        return copy.deepcopy(DEFAULT_THRESHOLDS)
    p = Path(path)
    if p.is_dir():
        p = p / THRESHOLDS_FILE
    if not p.exists():
        return copy.deepcopy(DEFAULT_THRESHOLDS)
    data = read_yaml_as(p, ThresholdsError)
    if data is None:
        return copy.deepcopy(DEFAULT_THRESHOLDS)
    if not isinstance(data, dict):
        raise ThresholdsError(f"{p}: thresholds are a mapping")
    version = data.get("version", THRESHOLDS_VERSION)
    if version != THRESHOLDS_VERSION or isinstance(version, bool):
        raise ThresholdsError(f"{p}: version: version {version!r}, this judgecal reads {THRESHOLDS_VERSION}")
    out = _merge(DEFAULT_THRESHOLDS, data, str(p))
    _ordered(out, str(p))
    return out
