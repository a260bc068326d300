"""A verdict per judge: ``aligned``, ``caution`` or ``not aligned``, with its reasons in words.

The rules read the audit's own figures against thresholds kept in a versioned ``thresholds.yaml``
(``<workspace>/thresholds.yaml`` overrides the defaults below, key by key):

- agreement, like with like (``reference.like_for_like`` of the audit entry, :mod:`judgecal.stats.reference`;
  ``reference`` picks ``pairwise`` or ``leave_one_out``): the judge's κ with the annotators beside theirs with
  each other on the same items. The gap ``κ_humans − κ_judge`` counts against ``kappa_gap`` only when its
  paired interval excludes 0; otherwise the judge "agrees with people as well as they agree with each
  other". A judge whose κ interval reaches 0 (a rater always giving one label gets κ 0) is never aligned.
  The κ bands then describe the humans: below ``kappa.not_aligned_below`` the task is subjective (a
  caution that says no single rater, human or model, is reliable there). Agreement (raw) beside the
  annotators', chance and the trivial rater, against ``accuracy_gap`` (or the business-loss bound).
  ``human_likeness`` in the verdict names the class (human-like / super-consistent / below the humans), with
  the Judge's Verdict κ z-score class and the alternative annotator test beside it (three or more annotators).
- without two annotators: Cohen's κ with the human consensus (a pointwise judge on an ordinal scale: the
  quadratic-weighted κ named by its ``pointwise.kappa``, beside the annotators' own on its items) against
  ``kappa``, the gap to the humans' κ against ``kappa_gap``, and the accuracy gap
  ``accuracy_humans − accuracy_judge`` (an annotator's leave-one-out accuracy) against ``accuracy_gap``; the
  largest acceptable gap can instead come from the business-loss backcalculation (``business_loss``): a
  tolerated error increase ``Δε`` (given, or ``budget / (requests × cost_per_error)``) is the largest gap
  one accepts.
- span judges: the chance-corrected span score (``span_score``), never aligned unless clearly above the best
  trivial marker (:func:`judgecal.stats.spans.span_reference`); ``span_f1_ratio`` without the texts.
- biases: a flag counts only when it is significant (BH q < α) *and* its interval reaches the effect of
  interest; an interval pinned at the null reads "no sign of bias"; a severe one (``position.not_aligned_beyond``: the judge picks one position in more than
  that share of decisive verdicts) makes the judge not aligned; so does a flag its probe declares "serious"
  (its ``FlagInfo`` severity) whose figure lies more than ``serious_bias.not_aligned_beyond`` from its null.
- invalid answers: ``invalid_rate`` against its thresholds.
- too little evidence (fewer items with a human label than ``min_items``) is a caution, never "aligned".

A probe that was not run is listed as "not tested" and never read as "no bias".
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from judgecal.catalogue import FLAGS
from judgecal.data.yamlfile import ConfigError, load_yaml

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
    "serious_bias": {"not_aligned_beyond": 0.30},
    "span_f1_ratio": {"not_aligned_below": 0.50, "aligned_at_least": 0.80},
    "span_score": {"not_aligned_below": 0.50, "aligned_at_least": 0.80},
    "label_rate_gap": {"caution_above": 0.05, "not_aligned_above": 0.15},
    "reference": "pairwise",
    "business_loss": None,
    "gate": {"kappa_tolerance": 0.03, "accuracy_tolerance": 0.02, "invalid_rate_tolerance": 0.02,
             "bias_tolerance": 0.05},  # judgecal gate (judgecal/loop/gate.py)
}
REFERENCES = ("pairwise", "leave_one_out")
STATUSES = ("aligned", "caution", "not aligned")


def flag_words() -> dict[str, str]:
    """flag -> what it means in words, from the one catalogue (the invalid rate has its own rule below)."""
    return {code: f.words for code, f in FLAGS.items() if f.metric != "invalid_rate"}


def _flag_metric(code: str) -> str | None:
    """The metric a flag (or an ``<probe>:underpowered`` flag's probe part) is read from."""
    return FLAGS[code].metric if code in FLAGS else None
# (severity 0 aligned-note / 1 caution / 2 not aligned, text, code, metric): one reason of a verdict
Reason = tuple[int, str, str, str | None]


def _r(severity: int, code: str, metric: str | None, text: str) -> Reason:
    """A verdict's reason: what it says, how serious it is, which rule (``code``) and figure gave it."""
    return (severity, text, code, metric)


def _probes() -> tuple[dict[str, tuple[str, str]], tuple[str, ...]]:
    """The registered probes' headline metric -> (title, how to run it), and those that apply to pairs only."""
    from judgecal.audit.probes import optional_probes, pairwise_only

    return optional_probes(), pairwise_only()


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
    "position.not_aligned_beyond": (0.5, 1.0, False), "serious_bias.not_aligned_beyond": (0.0, 2.0, False),
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
    try:
        data = load_yaml(p)
    except ConfigError as exc:
        raise ThresholdsError(str(exc)) from None
    except OSError as exc:
        raise ThresholdsError(f"{p}: cannot read ({exc.strerror or exc})") from None
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


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def judge_verdict(entry: dict[str, Any], thresholds: dict[str, Any] | None = None, *,
                  human_kappa: float | None = None, human_accuracy: float | None = None,
                  effect_of_interest: float = 0.05) -> dict[str, Any]:
    """``{status, reasons, not_tested, not_tested_probes}`` for one judge's audit entry
    (``report["judges"][name]``): the reasons most serious first (the first is the one that decided the
    status), ``not_tested_probes`` the names of the probes that were not run."""
    t = thresholds or DEFAULT_THRESHOLDS
    m = entry.get("metrics", {})
    reasons: list[Reason] = []

    def est(name: str) -> float | None:
        v = m.get(name, {}).get("estimate")
        return None if v is None else float(v)

    n_items = int(entry.get("n_items_with_consensus") or 0)
    kappa_name = (entry.get("pointwise") or {}).get("kappa", "cohen_kappa")  # weighted on an ordinal scale
    kappa, acc = est(kappa_name), est("accuracy")
    kappa_word = "weighted κ" if kappa_name == "weighted_kappa" else "κ"
    span_f1 = est("span_f1")
    span_like = (entry.get("spans") or {}).get("like_for_like")
    if span_f1 is not None and span_like:
        reasons += _span_reasons(span_like, t)
    elif span_f1 is not None:
        ceiling = (entry.get("spans", {}).get("human_f1") or {}).get("estimate")
        ref = f" against the annotators' {_fmt(ceiling)} with each other" if ceiling is not None else ""
        words = f"span F1 {_fmt(span_f1)}{ref}"
        ratio = span_f1 / ceiling if ceiling else None
        if ratio is None:
            reasons.append(_r(1, "span_no_ceiling", "span_f1", f"{words}: no two annotators on its items, so no ceiling to read it against"))
        elif ratio < t["span_f1_ratio"]["not_aligned_below"]:
            reasons.append(_r(2, "span_f1_ratio", "span_f1", f"{words}: less than {t['span_f1_ratio']['not_aligned_below']:.0%} of the humans' agreement"))
        elif ratio < t["span_f1_ratio"]["aligned_at_least"]:
            reasons.append(_r(1, "span_f1_ratio", "span_f1", f"{words}: below {t['span_f1_ratio']['aligned_at_least']:.0%} of the humans' agreement"))
        else:
            reasons.append(_r(0, "span_f1_ratio", "span_f1", words))
    like = _chosen_reference(entry, t)
    likeness: dict[str, Any] | None = None
    if like is not None and n_items > 0 and span_f1 is None:
        got, likeness = _like_reasons(entry, like, t)
        reasons += got
        if n_items < t["min_items"]:
            reasons.append(_r(1, "too_few_items", None, f"only {n_items} items with a human label (fewer than {t['min_items']})"))
    elif n_items == 0 and span_f1 is None:
        reasons.append(_r(1, "no_human_labels", None, "no human labels on the items it judged: agreement not measured"))
    elif kappa is None and span_f1 is None:  # labelled items, but κ is 0/0
        reasons.append(_r(1, "kappa_undefined", kappa_name, f"{kappa_word} undefined on its {n_items} items with a human label (the labels or "
                           "its answers all on one level, or no answer readable): agreement not measured"))
    elif kappa is not None and n_items > 0:
        ref = f" against the humans' {_fmt(human_kappa)} with each other" if human_kappa is not None else ""
        words = f"{kappa_word} {_fmt(kappa)}{ref} (0 = chance, 1 = perfect)"
        if kappa < t["kappa"]["not_aligned_below"]:  # κ <= 0: chance or below, never "better"
            reasons.append(_r(2, "kappa", kappa_name, f"{words}: {'no' if kappa <= 0 else 'barely'} better than chance"))
        elif kappa < t["kappa"]["aligned_at_least"]:
            reasons.append(_r(1, "kappa", kappa_name, f"{words}: moderate agreement"))
        else:
            reasons.append(_r(0, "kappa", kappa_name, f"{words}"))
        if human_kappa is not None:
            gap = human_kappa - kappa
            if gap > t["kappa_gap"]["not_aligned_above"]:
                reasons.append(_r(2, "kappa_gap", kappa_name, f"its {kappa_word} is {_fmt(gap)} below the humans' agreement with each other"))
            elif gap > t["kappa_gap"]["caution_above"]:
                reasons.append(_r(1, "kappa_gap", kappa_name, f"its {kappa_word} is {_fmt(gap)} below the humans' agreement with each other"))
        if n_items < t["min_items"]:
            reasons.append(_r(1, "too_few_items", None, f"only {n_items} items with a human label (fewer than {t['min_items']})"))
    if like is None and acc is not None and human_accuracy is not None:
        gap = human_accuracy - acc
        limit = tolerated_gap(t.get("business_loss"))
        if limit is not None:
            if gap > limit:
                reasons.append(_r(2, "accuracy_gap", "accuracy", f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}, "
                                   f"more than the {_fmt(limit)} the business-loss budget tolerates"))
        elif gap > t["accuracy_gap"]["not_aligned_above"]:
            reasons.append(_r(2, "accuracy_gap", "accuracy", f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}"))
        elif gap > t["accuracy_gap"]["caution_above"]:
            reasons.append(_r(1, "accuracy_gap", "accuracy", f"accuracy {_fmt(acc)} is {_fmt(gap)} below an annotator's {_fmt(human_accuracy)}"))
    inv = est("invalid_rate")
    if inv is not None:
        if inv > t["invalid_rate"]["not_aligned_above"]:
            reasons.append(_r(2, "invalid_rate", "invalid_rate", f"{inv:.0%} of its answers could not be parsed"))
        elif inv > t["invalid_rate"]["caution_above"]:
            reasons.append(_r(1, "invalid_rate", "invalid_rate", f"{inv:.0%} of its answers could not be parsed"))
    first = m.get("first_position_rate", {})
    fpr = first.get("estimate")
    severe = t["position"]["not_aligned_beyond"]
    position_significant = first.get("q") is not None and first["q"] < t["alpha"]
    if fpr is not None and position_significant and max(fpr, 1 - fpr) > severe:
        side = "first" if fpr > 0.5 else "second"
        reasons.append(_r(2, "position_severe", "first_position_rate", f"picks the response shown {side} {max(fpr, 1 - fpr):.0%} of the time"))
    flag_text = flag_words()
    for flag in entry.get("flags", []):
        if flag.startswith("position_bias:") and not flag.endswith("underpowered") and any(
                r[2] == "position_severe" for r in reasons):
            continue
        if flag.endswith(":underpowered"):
            reasons.append(_r(1, "flag:" + flag, _flag_metric(flag.split(":")[0]), f"{flag.split(':')[0].replace('_', ' ')}: not significant, but its interval still "
                               f"holds an effect of {effect_of_interest:.0%}: too few items to rule it out"))
        elif flag in flag_text:
            reasons.append(_serious(flag, flag_text[flag], m, t) or _r(1, "flag:" + flag, _flag_metric(flag),
                                                                     flag_text[flag]))
    if entry.get("labels"):
        reasons += _label_reasons(entry["labels"], m, t)
    reasons += _no_sign_reasons(entry)
    pointwise = entry.get("kind") == "pointwise"
    probes, pairwise_probes = _probes()
    hints = {k: how for k, (_, how) in probes.items()}
    if {"AB", "BA"} <= set(entry.get("orders") or []):  # both orders judged: what is missing is the truth
        hints["first_position_rate"] = "needs both orders of items with a human label"
    missing = [metric for metric in probes if metric not in m and not (pointwise and metric in pairwise_probes)]
    not_tested = [f"{probes[metric][0]}: not tested ({hints[metric]})" for metric in missing]
    if pointwise:  # one response per item: nothing to swap, pad or compare lengths against
        not_tested.append(", ".join(probes[k][0] for k in pairwise_probes) + ": apply to pairwise judges only")
    worst = max((r[0] for r in reasons), default=0)
    status = STATUSES[worst]
    ordered = sorted(reasons, key=lambda r: -r[0])
    out: dict[str, Any] = {"status": status, "reasons": [r[1] for r in ordered],
                           "details": [{"severity": STATUSES[sev], "code": code, "metric": metric, "text": text}
                                       for sev, text, code, metric in ordered],
                           "not_tested": not_tested, "not_tested_probes": [probes[metric][0] for metric in missing]}
    if likeness is not None:
        out["human_likeness"] = likeness
    return out


def _serious(flag: str, words: str, m: dict[str, Any], t: dict[str, Any]) -> Reason | None:
    """A flag its probe declares serious whose figure lies more than ``serious_bias.not_aligned_beyond`` from its
    null: not aligned, as a severe position bias is (position keeps its own rule, ``position.not_aligned_beyond``);
    ``None`` otherwise (the flag is a caution)."""
    f = FLAGS.get(flag)
    if f is None or f.severity != "serious" or f.metric == "first_position_rate":
        return None
    fig = m.get(f.metric) or {}
    est, null = fig.get("estimate"), fig.get("null_value")
    beyond = (t.get("serious_bias") or {}).get("not_aligned_beyond")
    if est is None or null is None or beyond is None or abs(est - null) <= beyond:
        return None
    return _r(2, "serious_bias", f.metric, f"{words}: {abs(est - null):.2f} from no bias, beyond {beyond:.2f}")


def _chosen_reference(entry: dict[str, Any], t: dict[str, Any]) -> dict[str, Any] | None:
    """The like-for-like reference the verdict reads (``thresholds.reference``, else the other definition),
    with its name under ``name``; ``None`` when neither has both κ values."""
    lfl = (entry.get("reference") or {}).get("like_for_like") or {}
    for name in (t.get("reference", "pairwise"), *REFERENCES):
        d = lfl.get(name)
        if d and d["judge"]["kappa"].get("estimate") is not None and d["humans"]["kappa"].get("estimate") is not None:
            return {**d, "name": name, "trivial": lfl.get("trivial"), "n_items": lfl.get("n_items"),
                    "kappa_word": lfl.get("kappa_word")}
    return None


def _ci(m: dict[str, Any]) -> str:
    lo, hi = m.get("ci_low"), m.get("ci_high")
    return "" if lo is None or hi is None else f" ({_fmt(lo)} to {_fmt(hi)})"


def _like_reasons(entry: dict[str, Any], like: dict[str, Any], t: dict[str, Any]
                  ) -> tuple[list[Reason], dict[str, Any]]:
    """The agreement reasons read like with like (:mod:`judgecal.stats.reference`): the judge's κ and
    agreement beside the humans' on the same definition and items; the gap counts only when its paired
    interval excludes 0; a judge not clearly above chance (κ's interval reaching 0, as a rater that always
    gives one label) is never aligned; weak agreement among the humans themselves is stated as such."""
    out: list[Reason] = []
    j, h, d = like["judge"], like["humans"], like["difference"]
    jk, hk = float(j["kappa"]["estimate"]), float(h["kappa"]["estimate"])
    pairwise = like["name"] == "pairwise"
    kw = like.get("kappa_word") or "κ"
    if pairwise:
        base = (f"{kw} {_fmt(jk)} with each annotator beside the annotators' {_fmt(hk)} with each other "
                f"(pairwise, the same {like.get('n_items')} items)")
    else:
        base = (f"{kw} {_fmt(jk)} against the majority of the other annotators beside an annotator's {_fmt(hk)} "
                f"against the same majority (leave-one-out, the same {like.get('n_items')} items)")
    dk = d["kappa"]
    gap = hk - jk
    d_hi, d_lo = dk.get("ci_high"), dk.get("ci_low")
    j_lo, h_lo = j["kappa"].get("ci_low"), h["kappa"].get("ci_low")
    trivial = jk <= 0 or (j_lo is not None and j_lo <= 0)
    below = gap > t["kappa_gap"]["caution_above"] and d_hi is not None and d_hi < 0
    subjective = hk < t["kappa"]["not_aligned_below"]
    if trivial and (h_lo is not None and h_lo > 0):
        cls = "below the humans"
        out.append(_r(2, "like_kappa_chance", "pairwise_kappa", f"{base}: not clearly above chance, which a rater that always gives the same label "
                       "reaches (κ 0), while the annotators are clearly above it"))
    elif trivial:
        cls = "like the humans, at chance"
        out.append(_r(1, "like_kappa_chance", "pairwise_kappa", f"{base}: neither the judge nor the annotators are clearly above chance"))
    elif below:
        cls = "below the humans"
        sev = 2 if gap > t["kappa_gap"]["not_aligned_above"] else 1
        lo, hi = dk.get("ci_low"), dk.get("ci_high")
        ci = "" if lo is None or hi is None else f" (difference {_fmt(lo)} to {_fmt(hi)})"
        out.append(_r(sev, "like_kappa_gap", "pairwise_kappa", f"{base}: {_fmt(gap)} below the humans' agreement with each other{ci}"))
    elif d_lo is not None and d_lo > 0 and -gap > t["kappa_gap"]["caution_above"]:
        cls = "super-consistent"
        out.append(_r(0, "like_kappa_super", "pairwise_kappa", f"{base}: agrees with people more than they agree with each other"))
    else:
        cls = "human-like"
        out.append(_r(0, "like_kappa_human", "pairwise_kappa", f"{base}: agrees with people as well as they agree with each other"))
    if subjective:
        out.append(_r(1, "humans_subjective", "pairwise_kappa", f"the annotators themselves agree weakly ({kw} {_fmt(hk)} with each other): the task is "
                       "subjective here, and no single rater, human or model, is reliable on it"))
    elif hk < t["kappa"]["aligned_at_least"]:
        out.append(_r(0, "humans_moderate", "pairwise_kappa", f"the annotators agree moderately with each other ({kw} {_fmt(hk)})"))
    ja, ha = j["accuracy"].get("estimate"), h["accuracy"].get("estimate")
    triv = like.get("trivial") or {}
    if ja is not None and ha is not None:
        words = (f"agreement {_fmt(ja)} with each annotator beside the annotators' {_fmt(ha)} with each other"
                 if pairwise else f"agreement {_fmt(ja)} with the others' majority beside an annotator's {_fmt(ha)}")
        words += f" (chance {_fmt(j['chance_accuracy'] or 0)} and {_fmt(h['chance_accuracy'] or 0)}"
        if triv.get("accuracy") is not None:
            words += f"; always {triv['label']!r}: {_fmt(triv['accuracy'])}"
        words += ")"
        agap, da = ha - ja, d["accuracy"]
        significant = da.get("ci_high") is not None and da["ci_high"] < 0
        limit = tolerated_gap(t.get("business_loss"))
        if limit is not None:
            if agap > limit:
                out.append(_r(2, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below, more than the {_fmt(limit)} the business-loss "
                               "budget tolerates"))
        elif significant and agap > t["accuracy_gap"]["not_aligned_above"]:
            out.append(_r(2, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below"))
        elif significant and agap > t["accuracy_gap"]["caution_above"]:
            out.append(_r(1, "like_accuracy_gap", "pairwise_accuracy", f"{words}: {_fmt(agap)} below"))
        if triv.get("accuracy") is not None and ja <= triv["accuracy"] + 1e-9 < ha:
            out.append(_r(1, "like_accuracy_trivial", "pairwise_accuracy", f"{words}: no better than always answering {triv['label']!r}"))
    alt = entry.get("replace_annotator") or {}
    kz = alt.get("kappa_z") or {}
    likeness: dict[str, Any] = {"class": cls, "reference": like["name"], "subjective": bool(subjective),
                                "judge_kappa": jk, "human_kappa": hk, "difference": dk}
    if isinstance(kz.get("z"), int | float) and math.isfinite(kz["z"]) and kz.get("n_pairs", 0) >= 2:
        likeness["kappa_z"] = {"z": kz["z"], "class": kz.get("pattern")}
        out.append(_r(0, "kappa_z", None, f"Judge's Verdict κ z-score {kz['z']:.2f} over {kz['n_pairs']} annotator pairs: "
                       f"{kz.get('pattern')}"))
    if alt.get("n_annotators", 0) >= 2 and alt.get("winning_rate") is not None and (
            (entry.get("reference") or {}).get("like_for_like") or {}).get("n_annotators", 0) >= 3:
        likeness["alt_test"] = {"passed": bool(alt.get("passed")), "winning_rate": alt["winning_rate"]}
        out.append(_r(0, "alt_test", None, f"alternative annotator test (ε {alt.get('epsilon')}): "
                       f"{'passes' if alt.get('passed') else 'does not pass'}, winning rate "
                       f"{alt['winning_rate']:.2f} over {alt['n_annotators']} annotators"))
    return out, likeness


def _label_reasons(labels: dict[str, Any], m: dict[str, Any], t: dict[str, Any]) -> list[Reason]:
    """A binary or categorical judge's rates, each against the trivial rater and the humans' own:

    - its balanced accuracy (binary) or macro-F1's recall side must be clearly above what one constant label
      gets: a balanced-accuracy interval reaching 0.5, or a label it never recognises (recall 0), is not
      aligned — a judge that always says PASS on a 90%-pass set has TNR 0, however high its accuracy;
    - like with like (two or more annotators): its TPR and TNR (per-label recall on a categorical set), pooled
      over every (annotator, judgment) pair, beside the annotators' own over every pair of them; a gap above
      ``label_rate_gap`` is a caution or not aligned.
    """
    out: list[Reason] = []
    binary = labels.get("task") == "binary"
    names = ({"tpr": f"TPR (recall of {labels.get('positive')!r})", "tnr": "TNR"} if binary else
             {f"recall_by_label.{lab}": f"recall of {lab!r}" for lab in labels.get("labels") or []})
    never = [words for name, words in names.items() if (m.get(name) or {}).get("estimate") == 0]
    if never:
        out.append(_r(2, "label_never", None, f"{', '.join(never)} 0: it never recognises that label, as a rater always giving one "
                       "label would"))
    bal = m.get("balanced_accuracy") or {}
    if binary and bal.get("estimate") is not None and not never:
        lo = bal.get("ci_low")
        words = f"balanced accuracy {_fmt(bal['estimate'])}{_ci(bal)} (0.5 = always one label)"
        if lo is None or lo <= 0.5:
            out.append(_r(2, "balanced_accuracy", "balanced_accuracy", f"{words}: not clearly above a rater that always gives one label"))
        else:
            out.append(_r(0, "balanced_accuracy", "balanced_accuracy", words))
    like = labels.get("like_for_like") or {}
    j, h = like.get("judge") or {}, like.get("humans") or {}
    for name, words in names.items():
        key = name.split(".", 1)
        jm = (j.get("recall_by_label") or {}).get(key[1]) if len(key) == 2 else j.get(name)
        hm = (h.get("recall_by_label") or {}).get(key[1]) if len(key) == 2 else h.get(name)
        je, he = (jm or {}).get("estimate"), (hm or {}).get("estimate")
        if je is None or he is None or not (math.isfinite(je) and math.isfinite(he)):
            continue
        gap = he - je
        text = f"{words} {_fmt(je)} with each annotator beside the annotators' {_fmt(he)} with each other"
        if gap > t["label_rate_gap"]["not_aligned_above"]:
            out.append(_r(2, "label_rate_gap", name, f"{text}: {_fmt(gap)} below"))
        elif gap > t["label_rate_gap"]["caution_above"]:
            out.append(_r(1, "label_rate_gap", name, f"{text}: {_fmt(gap)} below"))
        else:
            out.append(_r(0, "label_rate_gap", name, text))
    return out


def criteria_verdict(overall: dict[str, Any], criteria: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The verdict of a judge of several criteria: the worst criterion's status, which criteria it can be
    trusted on (``aligned``) and which not, each criterion's first reason; the pooled reasons after them."""
    status = {c: part["verdict"]["status"] for c, part in criteria.items()}
    worst = max((STATUSES.index(s) for s in status.values()), default=0)
    reasons = [f"on {c}: {part['verdict']['status']}" + (f" ({part['verdict']['reasons'][0]})"
                                                        if part["verdict"]["reasons"] else "")
               for c, part in sorted(criteria.items(), key=lambda cp: -STATUSES.index(status[cp[0]]))]
    details = [{"severity": part["verdict"]["status"], "code": "criterion", "metric": None, "criterion": c,
                "text": text} for (c, part), text in zip(sorted(criteria.items(), key=lambda cp: -STATUSES.index(
                    status[cp[0]])), reasons, strict=True)]
    return {**overall, "status": STATUSES[worst], "reasons": [*reasons, *overall["reasons"]],
            "details": [*details, *overall.get("details", [])],
            "criteria": status, "trusted_on": [c for c, s in status.items() if s == "aligned"],
            "not_trusted_on": [c for c, s in status.items() if s != "aligned"]}


def _span_reasons(like: dict[str, Any], t: dict[str, Any]) -> list[Reason]:
    """A span judge read against its like-for-like reference and the best trivial marker
    (:func:`judgecal.stats.spans.span_reference`): never aligned unless clearly above that marker."""
    j, h = like["judge"].get("estimate"), like["humans"].get("estimate")
    best = like.get("best_baseline")
    base_f1 = ((like.get("baselines") or {}).get(best) or {}).get("estimate")
    norm, above = like.get("normalised") or {}, like.get("above_baseline") or {}
    if j is None:
        return [_r(1, "span_undefined", "span_score", "span F1 undefined on its items: agreement not measured")]
    words = f"span F1 {_fmt(j)} with each annotator"
    if h is None:
        return [_r(1, "span_no_reference", "span_score", f"{words}: no two annotators on its items, so no reference to read it against")]
    words += f" beside the annotators' {_fmt(h)} with each other (pairwise)"
    if base_f1 is not None:
        words += f"; the best trivial marker ({str(best).replace('_', ' ')}) gets {_fmt(base_f1)}"
    n = norm.get("estimate")
    if above.get("ci_low") is None or above["ci_low"] <= 0:
        return [_r(2, "span_trivial", "span_score", f"{words}: not clearly above the trivial marker")]
    if n is None:
        return [_r(1, "span_no_scale", "span_score", f"{words}: the annotators are no better than the trivial marker, so no scale to read it on")]
    words += f"; chance-corrected span score {_fmt(n)}{_ci(norm)} (0 = the trivial marker, 1 = the annotators)"
    if n < t["span_score"]["not_aligned_below"]:
        return [_r(2, "span_score", "span_score", words)]
    if n < t["span_score"]["aligned_at_least"]:
        return [_r(1, "span_score", "span_score", words)]
    return [_r(0, "span_score", "span_score", words)]


def _no_sign_reasons(entry: dict[str, Any]) -> list[Reason]:
    """Probes whose interval is pinned at the null: evidence of no bias, said so in words."""
    out = []
    pos = entry.get("position") or {}
    if pos.get("decisive_pairs") and pos.get("mcnemar_b") == 0 and pos.get("mcnemar_c") == 0:
        out.append(_r(0, "no_sign", "first_position_rate", "position: no sign of bias (identical in both orders)"))
    for name, m in (entry.get("metrics") or {}).items():
        if name == "first_position_rate" or not isinstance(m, dict) or m.get("null_value") is None:
            continue
        if m.get("ci_low") == m.get("ci_high") == m.get("null_value") and m.get("estimate") == m["null_value"]:
            probe = _probes()[0].get(name, (name.replace("_", " "), ""))[0]
            out.append(_r(0, "no_sign", name, f"{probe}: no sign of bias (no variation at all)"))
    return out
