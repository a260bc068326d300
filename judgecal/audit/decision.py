"""A verdict per judge: ``aligned``, ``caution`` or ``not aligned``, with its reasons in words.

The rules read the audit's own figures against thresholds kept in a versioned ``thresholds.yaml``
(``<workspace>/thresholds.yaml`` overrides the defaults below, key by key):

- agreement: Cohen's κ with the human consensus (a pointwise judge on an ordinal scale: the
  quadratic-weighted κ named by its ``pointwise.kappa``, beside the annotators' own on its items);
  below ``kappa.not_aligned_below`` the judge is not
  aligned, below ``kappa.aligned_at_least`` it needs caution. When the humans' own agreement with each
  other is known, the gap ``κ_humans − κ_judge`` is read against ``kappa_gap`` too.
- accuracy gap: ``accuracy_humans − accuracy_judge`` (the humans' accuracy being the leave-one-out
  agreement of an annotator with the others) against ``accuracy_gap``; the largest acceptable gap can
  instead come from the business-loss backcalculation (``business_loss``): a tolerated error increase
  ``Δε`` (given, or ``budget / (requests × cost_per_error)``) is the largest gap one accepts.
- biases: a flag counts only when it is significant (BH q < α) *and* its effect is at least the effect
  of interest; a severe one (``position.not_aligned_beyond``: the judge picks one position in more than
  that share of decisive verdicts) makes the judge not aligned.
- invalid answers: ``invalid_rate`` against its thresholds.
- too little evidence (fewer items with a human label than ``min_items``) is a caution, never "aligned".

A probe that was not run is listed as "not tested" and never read as "no bias".
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from judgecal.catalogue import FLAGS

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
    "position": {"not_aligned_beyond": 0.80},
    "span_f1_ratio": {"not_aligned_below": 0.50, "aligned_at_least": 0.80},
    "business_loss": None,
    "gate": {"kappa_tolerance": 0.03, "accuracy_tolerance": 0.02, "invalid_rate_tolerance": 0.02,
             "bias_tolerance": 0.05},  # judgecal gate (judgecal/loop/gate.py)
}
STATUSES = ("aligned", "caution", "not aligned")

# flag -> what it means in words, from the one catalogue (the invalid rate has its own rule below)
FLAG_WORDS = {code: f.words for code, f in FLAGS.items() if f.metric != "invalid_rate"}
# metric that a probe produces -> (probe name, how to run it)
PROBES = {
    "first_position_rate": ("position", "judge both presentation orders (--orders AB,BA)"),
    "verbosity_excess": ("verbosity", "needs a human consensus and two candidates per item"),
    "self_preference_excess": ("self-preference", "needs the judge's model family among the candidates"),
    "instability_rate": ("run-to-run instability", "judgecal judge --samples 5 --temperature 0.7"),
    "prompt_flip_rate": ("prompt sensitivity", "judgecal judge --mutation paraphrase ..."),
    "pad_pick_rate": ("padding", "judgecal probe padding"),
    "injection_follow_rate": ("verdict injection", "judgecal probe injection"),
}

# probes that compare two responses shown together: they do not apply to a pointwise judge
PAIRWISE_PROBES = ("first_position_rate", "verbosity_excess", "pad_pick_rate", "injection_follow_rate")


class ThresholdsError(ValueError):
    """A thresholds file that cannot be read or names unknown keys."""


def _merge(base: dict[str, Any], over: dict[str, Any], origin: str, path: str = "") -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in over.items():
        where = f"{path}{key}"
        if key not in base:
            raise ThresholdsError(f"{origin}: unknown key {where!r}; known: {', '.join(sorted(base))}")
        if isinstance(base[key], dict) and value is not None:
            if not isinstance(value, dict):
                raise ThresholdsError(f"{origin}: {where} must be a mapping")
            out[key] = _merge(base[key], value, origin, where + ".")
        elif key == "business_loss":
            out[key] = _business_loss(value, origin)
        else:
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ThresholdsError(f"{origin}: {where} must be a number, got {value!r}")
            out[key] = value
    return out


def _business_loss(value: Any, origin: str) -> dict[str, float] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ThresholdsError(f"{origin}: business_loss must be a mapping")
    known = {"tolerated_error_increase", "budget", "requests", "cost_per_error"}
    if extra := set(value) - known:
        raise ThresholdsError(f"{origin}: business_loss: unknown key {sorted(extra)[0]!r}; known: {', '.join(sorted(known))}")
    for k, v in value.items():
        if not isinstance(v, int | float) or isinstance(v, bool) or v <= 0:
            raise ThresholdsError(f"{origin}: business_loss.{k} must be a positive number, got {v!r}")
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
    try:
        data = yaml.safe_load(p.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ThresholdsError(f"{p}: cannot read ({str(exc).splitlines()[0]})") from None
    if data is None:
        return copy.deepcopy(DEFAULT_THRESHOLDS)
    if not isinstance(data, dict):
        raise ThresholdsError(f"{p}: thresholds are a mapping")
    if data.get("version", THRESHOLDS_VERSION) != THRESHOLDS_VERSION:
        raise ThresholdsError(f"{p}: version {data.get('version')!r}, this judgecal reads {THRESHOLDS_VERSION}")
    return _merge(DEFAULT_THRESHOLDS, data, str(p))


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def judge_verdict(entry: dict[str, Any], thresholds: dict[str, Any] | None = None, *,
                  human_kappa: float | None = None, human_accuracy: float | None = None,
                  effect_of_interest: float = 0.05) -> dict[str, Any]:
    """``{status, reasons, not_tested}`` for one judge's audit entry (``report["judges"][name]``)."""
    t = thresholds or DEFAULT_THRESHOLDS
    m = entry.get("metrics", {})
    reasons: list[tuple[int, str]] = []  # (severity 0 aligned-note / 1 caution / 2 not aligned, text)

    def est(name: str) -> float | None:
        v = m.get(name, {}).get("estimate")
        return None if v is None else float(v)

    n_items = int(entry.get("n_items_with_consensus") or 0)
    kappa_name = (entry.get("pointwise") or {}).get("kappa", "cohen_kappa")  # weighted on an ordinal scale
    kappa, acc = est(kappa_name), est("accuracy")
    kappa_word = "weighted κ" if kappa_name == "weighted_kappa" else "κ"
    span_f1 = est("span_f1")
    if span_f1 is not None:
        ceiling = (entry.get("spans", {}).get("human_f1") or {}).get("estimate")
        ref = f" against the annotators' {_fmt(ceiling)} with each other" if ceiling is not None else ""
        words = f"span F1 {_fmt(span_f1)}{ref}"
        ratio = span_f1 / ceiling if ceiling else None
        if ratio is None:
            reasons.append((1, f"{words}: no two annotators on its items, so no ceiling to read it against"))
        elif ratio < t["span_f1_ratio"]["not_aligned_below"]:
            reasons.append((2, f"{words}: less than {t['span_f1_ratio']['not_aligned_below']:.0%} of the humans' agreement"))
        elif ratio < t["span_f1_ratio"]["aligned_at_least"]:
            reasons.append((1, f"{words}: below {t['span_f1_ratio']['aligned_at_least']:.0%} of the humans' agreement"))
        else:
            reasons.append((0, words))
    if n_items == 0 and span_f1 is None:
        reasons.append((1, "no human labels on the items it judged: agreement not measured"))
    elif kappa is None and span_f1 is None:  # labelled items, but κ is 0/0
        reasons.append((1, f"{kappa_word} undefined on its {n_items} items with a human label (the labels or "
                           "its answers all on one level, or no answer readable): agreement not measured"))
    elif kappa is not None and n_items > 0:
        ref = f" against the humans' {_fmt(human_kappa)} with each other" if human_kappa is not None else ""
        words = f"{kappa_word} {_fmt(kappa)}{ref} (0 = chance, 1 = perfect)"
        if kappa < t["kappa"]["not_aligned_below"]:  # κ <= 0: chance or below, never "better"
            reasons.append((2, f"{words}: {'no' if kappa <= 0 else 'barely'} better than chance"))
        elif kappa < t["kappa"]["aligned_at_least"]:
            reasons.append((1, f"{words}: moderate agreement"))
        else:
            reasons.append((0, f"{words}"))
        if human_kappa is not None:
            gap = human_kappa - kappa
            if gap > t["kappa_gap"]["not_aligned_above"]:
                reasons.append((2, f"its {kappa_word} is {_fmt(gap)} below the humans' agreement with each other"))
            elif gap > t["kappa_gap"]["caution_above"]:
                reasons.append((1, f"its {kappa_word} is {_fmt(gap)} below the humans' agreement with each other"))
        if n_items < t["min_items"]:
            reasons.append((1, f"only {n_items} items with a human label (fewer than {t['min_items']})"))
    if acc is not None and human_accuracy is not None:
        gap = human_accuracy - acc
        limit = tolerated_gap(t.get("business_loss"))
        if limit is not None:
            if gap > limit:
                reasons.append((2, f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}, "
                                   f"more than the {_fmt(limit)} the business-loss budget tolerates"))
        elif gap > t["accuracy_gap"]["not_aligned_above"]:
            reasons.append((2, f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}"))
        elif gap > t["accuracy_gap"]["caution_above"]:
            reasons.append((1, f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}"))
    inv = est("invalid_rate")
    if inv is not None:
        if inv > t["invalid_rate"]["not_aligned_above"]:
            reasons.append((2, f"{inv:.0%} of its answers could not be parsed"))
        elif inv > t["invalid_rate"]["caution_above"]:
            reasons.append((1, f"{inv:.0%} of its answers could not be parsed"))
    first = m.get("first_position_rate", {})
    fpr = first.get("estimate")
    severe = t["position"]["not_aligned_beyond"]
    position_significant = first.get("q") is not None and first["q"] < t["alpha"]
    if fpr is not None and position_significant and max(fpr, 1 - fpr) > severe:
        side = "first" if fpr > 0.5 else "second"
        reasons.append((2, f"picks the response shown {side} {max(fpr, 1 - fpr):.0%} of the time"))
    for flag in entry.get("flags", []):
        if flag.startswith("position_bias:") and not flag.endswith("underpowered") and any(
                "picks the response shown" in r for _, r in reasons):
            continue
        if flag.endswith(":underpowered"):
            reasons.append((1, f"{flag.split(':')[0].replace('_', ' ')}: too few items to rule out an effect of "
                               f"{effect_of_interest:.0%}"))
        elif flag in FLAG_WORDS:
            reasons.append((1, FLAG_WORDS[flag]))
    pointwise = entry.get("kind") == "pointwise"
    hints = {k: how for k, (_, how) in PROBES.items()}
    if {"AB", "BA"} <= set(entry.get("orders") or []):  # both orders judged: what is missing is the truth
        hints["first_position_rate"] = "needs both orders of items with a human label"
    not_tested = [f"{probe}: not tested ({hints[metric]})" for metric, (probe, _) in PROBES.items()
                  if metric not in m and not (pointwise and metric in PAIRWISE_PROBES)]
    if pointwise:  # one response per item: nothing to swap, pad or compare lengths against
        not_tested.append(", ".join(PROBES[k][0] for k in PAIRWISE_PROBES) + ": apply to pairwise judges only")
    worst = max((s for s, _ in reasons), default=0)
    status = STATUSES[worst]
    ordered = [r for s, r in sorted(reasons, key=lambda sr: -sr[0])]
    return {"status": status, "reasons": ordered, "not_tested": not_tested}
