"""One catalogue of metrics, read by every surface (terminal, HTML/PDF report, explorer).

Each entry: a title, a one-sentence definition, the unit, the reference it is read against, the
direction that is good and the flag rule in words. Numbers are formatted here too, once: three
decimals, intervals as ``0.71 (0.68–0.74)``, tiny p-values as ``< 0.001``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from judgecal.errors import ConfigError


@dataclass(frozen=True)
class MetricInfo:
    name: str
    title: str
    definition: str
    unit: str = "share"
    reference: str = ""
    good: str = "higher"  # higher | lower | closer to the reference
    flag: str = ""
    group: str = "alignment"
    null: float | None = None  # what the metric's test takes as "no effect" (None: descriptive)


_M = MetricInfo
METRICS: dict[str, MetricInfo] = {m.name: m for m in (
    _M("pairwise_kappa", "κ with each annotator", "The judge's mean Cohen's κ with each annotator, on the items "
       "it judged with two or more annotators (0 = chance, 1 = perfect); a pointwise judge's is pooled over "
       "every (annotator, judgment) pair, quadratic-weighted on an ordinal scale, as the annotators' own.", unit="κ",
       reference="the annotators' mean κ with each other on the same items (pairwise, like with like); 0 = chance",
       flag="more than 0.10 below the annotators' and significantly so is a caution, 0.30 not aligned; an "
            "interval reaching 0 is never aligned (thresholds.yaml)"),
    _M("pairwise_accuracy", "Agrees with annotators", "The judge's mean share of items on which it gives "
       "an annotator's label, over the annotators, on the same items as its κ.",
       reference="the annotators' mean agreement with each other on the same items; chance from the same raters' "
                 "label shares; a rater always giving the most frequent label"),
    _M("accuracy", "Accuracy", "Share of judgments whose verdict (a pointwise judge: its label, or its score "
       "at the nearest level of the humans' scale) equals the human consensus.",
       reference="an annotator's leave-one-out accuracy; chance = Σ p_k² of the label shares (against the "
                 "consensus: for a like-for-like reading see agreement with each annotator)"),
    _M("macro_f1", "Macro F1", "F1 of each label (A, B, tie; a label judge's declared labels, one nobody gives "
       "counting 0) averaged with equal weight, against the human truth.",
       reference="the humans' macro F1 with each other; a rater always giving the most frequent label"),
    _M("tpr", "TPR (recall of {positive})", "True-positive rate: of the items the humans labelled {positive}, the "
       "share the judge labels {positive}.",
       reference="the annotators' TPR with each other on the same items (like with like); always positive: 1",
       flag="0 never aligned; more than 0.05 below the annotators' a caution, 0.15 not aligned (label_rate_gap)",
       group="labels"),
    _M("tnr", "TNR (recall of {negative})", "True-negative rate: of the items the humans labelled {negative}, the "
       "share the judge labels {negative}.",
       reference="the annotators' TNR with each other on the same items (like with like); always positive: 0",
       flag="0 never aligned; more than 0.05 below the annotators' a caution, 0.15 not aligned (label_rate_gap)",
       group="labels"),
    _M("precision", "Precision of {positive}", "Of the items the judge labels {positive}, the share the humans "
       "labelled {positive}.", reference="the annotators' precision with each other; the positive rate",
       group="labels"),
    _M("f1", "F1 of {positive}", "Harmonic mean of the precision and the TPR of {positive}.",
       reference="the annotators' F1 with each other", group="labels"),
    _M("balanced_accuracy", "Balanced accuracy", "(TPR + TNR) / 2: a rater always giving one label gets 0.5.", reference="0.5 (always one label); the annotators' own",
       flag="an interval reaching 0.5 is never aligned", group="labels"),
    _M("recall_by_label", "Recall of {label}", "Of the items the humans labelled {label}, the share the judge labels "
       "{label}.", reference="the annotators' recall of it with each other; always this label: 1, else 0",
       flag="0 never aligned; below the annotators' by label_rate_gap a caution or not aligned", group="labels"),
    _M("precision_by_label", "Precision of {label}", "Of the items the judge labels {label}, the share the humans "
       "labelled {label}.", reference="the label's share among the people's labels", group="labels"),
    _M("cohen_kappa", "Cohen's κ", "Agreement with the human consensus beyond what chance would give "
       "(0 = chance, 1 = perfect).", unit="κ",
       reference="the humans' Fleiss' κ with each other (a different definition: a consensus is less noisy than "
                 "one person; κ with each annotator is the like-for-like figure); 0 = chance",
       flag="read by the verdict only without two annotators: κ below 0.20 not aligned, below 0.60 caution"),
    _M("invalid_rate", "Unparsable answers", "Share of calls whose answer could not be read as a verdict.",
       good="lower", reference="0", flag="above 5% is a caution, above 20% not aligned"),
    _M("position_consistency", "Same verdict in both orders",
       "Share of items with the same verdict when the two responses are swapped.", reference="1",
       group="position"),
    _M("first_position_rate", "Picks the first shown", "Share of decisive verdicts that picked the response "
       "shown first; tested with an exact McNemar test across the two orders.", reference="0.5 (no position bias)",
       good="closer to the reference", group="position",
       flag="significant after Benjamini–Hochberg, and the interval reaches the effect of interest away from 0.5"),
    _M("flip_rate", "Flips when swapped", "Share of items decisive in both orders whose verdict changes with "
       "the order.", good="lower", reference="0", group="position"),
    _M("debiased_accuracy", "Swap-debiased accuracy", "Accuracy of the verdict the two orders agree on "
       "(a tie when they disagree) against the human consensus.", group="position",
       reference="the judge's single-order accuracy on the same pairs"),
    _M("accuracy_AB", "Accuracy, original order", "Accuracy of the judgments made with the item's first "
       "response shown first.", group="position"),
    _M("accuracy_BA", "Accuracy, swapped order", "Accuracy of the judgments made with the item's second "
       "response shown first.", group="position"),
    _M("accuracy_both", "Right in both orders", "Share of items whose verdict equals the humans' in both "
       "presentation orders.", group="position"),
    _M("prefer_longer_rate", "Prefers the longer", "Share of decisive verdicts that picked the longer response.",
       reference="the humans' rate on the same items", good="closer to the reference", group="verbosity"),
    _M("verbosity_excess", "Length preference beyond the humans'", "The judge's prefer-longer rate minus the "
       "humans' on the same items.", unit="difference", reference="0", good="closer to the reference",
       group="verbosity", flag="significant, and the interval reaches the effect of interest"),
    _M("lc_win_rate", "Length-controlled win rate of A", "AlpacaEval 2's length-controlled win rate of the "
       "item's first response (descriptive; the length coefficient's own test is reported beside it as "
       "length_coef_p).", reference="the raw win rate of A", group="verbosity"),
    _M("self_preference_excess", "Own-family preference beyond the humans'", "The judge's win rate for "
       "responses of its own model family minus the humans' on the same items.", unit="difference",
       reference="0", good="closer to the reference", group="self-preference",
       flag="significant, and the interval reaches the effect of interest"),
    _M("pad_pick_rate", "Picks the padded copy", "Share of decisive verdicts that picked a response padded "
       "with restatements of its own sentences over the same response unpadded.", reference="0.5",
       good="closer to the reference", group="verbosity", flag="significant, and the interval reaches the effect of interest"),
    _M("instability_rate", "Run-to-run instability", "Chance that two repeated calls with the same prompt "
       "give different verdicts.", good="lower", reference="0", group="stability", flag="significantly above 0"),
    _M("prompt_flip_rate", "Flips under a reworded prompt", "Share of verdicts that change under the worst "
       "meaning-preserving prompt mutation, tested against the judge's own run-to-run instability.",
       good="lower", reference="the instability rate", group="stability",
       flag="significantly above the instability rate, and the interval reaches the effect of interest"),
    _M("injection_follow_rate", "Follows injected instructions", "How often the judge picks the response the "
       "humans ranked lower once it carries an injected instruction or fake verdict.", good="lower",
       reference="how often it picked that response without the injection", group="injection"),
    _M("injection_excess", "Injection effect", "The injected follow rate minus how often the judge picked the "
       "same response without the injection (the worst injection kind, Bonferroni-adjusted).", unit="difference",
       good="lower", reference="0", group="injection",
       flag="significantly above 0, and the interval reaches the effect of interest"),
    _M("weighted_kappa", "Weighted κ", "Cohen's κ with quadratic weights on an ordinal scale: a near miss "
       "costs less than a far one (0 = chance, 1 = perfect).", unit="κ",
       reference="the annotators' weighted κ with each other on the same items; 0 = chance",
       flag="κ below 0.20 makes a pointwise judge not aligned, below 0.60 caution (thresholds.yaml)",
       group="pointwise"),
    _M("spearman_rho", "Spearman's ρ", "Rank correlation of the judge's scores with the human labels on an "
       "ordinal scale (ties at their mean rank).", unit="ρ",
       reference="the annotators' ρ with each other on the same items", group="pointwise"),
    _M("mae", "Mean absolute error", "Mean distance between the judge's score and the human label on the "
       "scale's values (e.g. coverage 0 / 0.5 / 1, a rating 1–5).", unit="scale points", good="lower",
       reference="the annotators' mean distance from each other", group="pointwise"),
    _M("span_iou", "Span IoU", "Mean per-item character intersection-over-union with the human span consensus "
       "(an item where neither marks anything counts as 1).", reference="the humans' span agreement",
       group="spans"),
    _M("span_f1", "Span F1", "Character-level F1 of the judge's spans against the human span consensus.",
       reference="the humans' pairwise character F1 (a different definition: span F1 with each annotator is "
                 "the like-for-like figure)", group="spans"),
    _M("span_f1_pairwise", "Span F1 with each annotator", "The judge's mean character F1 with each annotator "
       "on the items it marked with two or more annotators.",
       reference="the annotators' mean F1 with each other on the same items, and what a trivial marker gets "
                 "(mark everything, mark nothing, random spans of the annotators' lengths)", group="spans"),
    _M("span_score", "Chance-corrected span score", "(judge − best trivial marker) / (annotators − best trivial "
       "marker), all as mean pairwise character F1 on the same items: 0 = a trivial marker, 1 = the annotators.",
       unit="score", reference="1 (the annotators with each other); 0 (the best trivial marker)", group="spans",
       flag="not clearly above the best trivial marker, or below 0.5, is not aligned; below 0.8 caution"),
)}


# the tested metrics' nulls (a probe registered later declares its own on its MetricInfo)
for _name, _null in (("first_position_rate", 0.5), ("pad_pick_rate", 0.5), ("verbosity_excess", 0.0),
                     ("self_preference_excess", 0.0), ("instability_rate", 0.0), ("injection_excess", 0.0)):
    if _name in METRICS:
        METRICS[_name] = replace(METRICS[_name], null=_null)

# the words a label metric's title and definition take when no judge's labels are known
GENERIC_LABELS = {"label": "a label", "positive": "the positive label", "negative": "the negative label"}


def info(name: str, words: dict[str, str] | None = None) -> MetricInfo:
    """The catalogue entry of ``name``, its ``{label}``/``{positive}``/``{negative}`` filled from ``words``
    (a judge's labels, quoted) or generic ones; ``recall_by_label.<label>`` is its family's entry worded for
    that label. A bare entry for a metric not catalogued yet."""
    family, dot, label = name.partition(".")
    m = METRICS.get(name) or (METRICS.get(family) if dot else None)
    if m is None:
        return MetricInfo(name, name.replace("_", " "), "")
    w = {**GENERIC_LABELS, **(words or {}), **({"label": repr(label)} if dot else {})}
    return MetricInfo(name, m.title.format(**w), m.definition.format(**w), m.unit, m.reference, m.good, m.flag,
                      m.group, m.null)


def fmt_number(x: float | None, digits: int = 3) -> str:
    """``digits`` decimals; an em dash never stands for a missing value: ``n/a``."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "n/a"
    return f"{x:.{digits}f}"


def fmt_interval(est: float | None, lo: float | None, hi: float | None, digits: int = 3) -> str:
    """``0.710 (0.680–0.740)``; the interval is left out when it was not computed."""
    if lo is None or hi is None:
        return fmt_number(est, digits)
    return f"{fmt_number(est, digits)} ({fmt_number(lo, digits)}–{fmt_number(hi, digits)})"


def fmt_p(p: float | None) -> str:
    """``< 0.001`` for tiny p-values, three decimals otherwise; ``not tested`` when absent."""
    if p is None or (isinstance(p, float) and not math.isfinite(p)):
        return "not tested"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


# the figures a one-screen summary shows per judge, in this order
SUMMARY_METRICS = ("pairwise_kappa", "pairwise_accuracy", "cohen_kappa", "accuracy", "first_position_rate",
                   "invalid_rate")
# a pointwise judge's (one response per item, a label or score): agreement on the humans' scale
POINTWISE_SUMMARY_METRICS = ("pairwise_kappa", "pairwise_accuracy", "cohen_kappa", "weighted_kappa", "spearman_rho",
                             "mae", "invalid_rate")
# a span judge's (it marks stretches of the response): like with like first, then against the span consensus
SPAN_SUMMARY_METRICS = ("span_f1_pairwise", "span_score", "span_iou", "span_f1")


def summary_metrics(kinds: set[str] | frozenset[str]) -> tuple[str, ...]:
    """The summary's columns for a report whose judges are of ``kinds``: each kind's own figures, or, for a
    mix, the pairwise ones followed by the pointwise ones they lack."""
    if kinds == {"pointwise"}:
        return POINTWISE_SUMMARY_METRICS
    if "pointwise" not in kinds:
        return SUMMARY_METRICS
    return SUMMARY_METRICS[:-1] + tuple(m for m in POINTWISE_SUMMARY_METRICS if m not in SUMMARY_METRICS) + ("invalid_rate",)
SEVERITIES = {
    "serious": "can make a judge not aligned: significant, and its interval reaches the effect of interest",
    "caution": "significant, and its interval reaches the effect of interest, or a quality problem worth checking",
    "underpowered": "not significant, and the interval still holds an effect of interest: too few items to rule "
                    "it out (an interval pinned at the null is evidence of no effect, never underpowered)",
}


@dataclass(frozen=True)
class FlagInfo:
    code: str
    title: str
    words: str
    severity: str  # a key of SEVERITIES
    metric: str


_F = FlagInfo
FLAGS: dict[str, FlagInfo] = {f.code: f for f in (
    _F("position_bias:first", "Position bias (first)", "prefers the response shown first", "serious",
       "first_position_rate"),
    _F("position_bias:second", "Position bias (second)", "prefers the response shown second", "serious",
       "first_position_rate"),
    _F("verbosity_bias:more_than_humans", "Prefers longer answers", "prefers the longer response more often "
       "than the humans do", "caution", "verbosity_excess"),
    _F("verbosity_bias:less_than_humans", "Prefers shorter answers", "prefers the shorter response more often "
       "than the humans do", "caution", "verbosity_excess"),
    _F("verbosity_bias:padding", "Rewards padding", "prefers a response padded with restated sentences over the "
       "same response unpadded", "caution", "pad_pick_rate"),
    _F("self_preference:more_than_humans", "Self-preference", "favours its own model family more than the "
       "humans do", "caution", "self_preference_excess"),
    _F("self_preference:less_than_humans", "Self-deprecation", "disfavours its own model family more than the "
       "humans do", "caution", "self_preference_excess"),
    _F("unstable", "Unstable", "changes its verdict between repeated runs of the same prompt", "caution",
       "instability_rate"),
    _F("prompt_sensitive", "Prompt-sensitive", "changes its verdict when the prompt is reworded", "caution",
       "prompt_flip_rate"),
    _F("follows_injection", "Follows injections", "follows instructions or fake verdicts injected into a "
       "response", "caution", "injection_follow_rate"),
    _F("invalid_rate_above_5pct", "Unparsable answers", "more than 5% of its answers could not be read as a "
       "verdict", "caution", "invalid_rate"),
)}
_PROBE_OF_FLAG = {"position_bias": "first_position_rate", "verbosity_bias": "verbosity_excess",
                  "self_preference": "self_preference_excess"}


def flag_info(code: str) -> FlagInfo:
    """The words and severity of a flag code; ``<probe>:underpowered`` and unknown codes get generic words."""
    if code in FLAGS:
        return FLAGS[code]
    probe, _, detail = code.partition(":")
    metric = _PROBE_OF_FLAG.get(probe, probe)
    if detail == "underpowered":
        what = info(metric).title.lower() if metric in METRICS else probe.replace("_", " ")
        return FlagInfo(code, probe.replace("_", " ").capitalize(),
                        f"{what}: no significant effect, but too few items to rule out an effect of interest",
                        "underpowered", metric)
    return FlagInfo(code, code.replace("_", " "), code.replace("_", " ").replace(":", ": "), "caution", metric)


@dataclass(frozen=True)
class ProbeInfo:
    """What a probe says of itself to every surface: its name and title, the catalogue group of its metrics,
    the question it answers, what it tests and what no bias looks like (in words), how to run it when it was
    not run, the metric whose absence means "not tested" (``headline``), and which judges it applies to. A
    judge's bias profile charts ``chart`` (default: the headline) beside its null: the figure named
    ``chart_null`` in the probe's own section of the judge's entry where the probe declares one, else the
    charted figure's point null."""

    name: str
    title: str
    group: str
    question: str
    tested: str
    null: str
    how_to_run: str
    headline: str
    applies_to: tuple[str, ...] = ("pairwise", "pointwise")
    chart: str = ""
    chart_null: str = ""


# probe name -> its description, in the order the probes run; filled by judgecal.audit.probes.register
PROBES: dict[str, ProbeInfo] = {}


def describe(probe: ProbeInfo, metrics: tuple[MetricInfo, ...] = (), flags: tuple[FlagInfo, ...] = ()) -> None:
    """Enter a probe, its metrics and its flags in the catalogue (``judgecal.audit.probes.register`` calls it);
    a name already taken by another part is refused."""
    taken = [m.name for m in metrics if m.name in METRICS and METRICS[m.name] != m]
    taken += [f.code for f in flags if f.code in FLAGS and FLAGS[f.code] != f]
    if probe.name in PROBES and PROBES[probe.name] != probe:
        taken.append(probe.name)
    if taken:
        raise ConfigError(f"probe {probe.name!r}: already in the catalogue: {', '.join(taken)}")
    PROBES[probe.name] = probe
    METRICS.update({m.name: m for m in metrics})
    FLAGS.update({f.code: f for f in flags})


def probe_groups() -> dict[str, list[ProbeInfo]]:
    """The registered probes by the catalogue group of their metrics, in the order they run."""
    out: dict[str, list[ProbeInfo]] = {}
    for p in PROBES.values():
        out.setdefault(p.group, []).append(p)
    return out


class Estimated(Protocol):
    """A figure of the typed report (:class:`judgecal.audit.schema.Figure` and its kin): an estimate and its
    interval."""

    @property
    def estimate(self) -> float | None: ...

    @property
    def ci_low(self) -> float | None: ...

    @property
    def ci_high(self) -> float | None: ...


def fmt_metric(m: Mapping[str, object] | Estimated | None) -> str:
    """A metric of audit.json (``estimate``, ``ci_low``, ``ci_high``; its dict or its typed figure) as
    ``0.710 (0.680–0.740)``; ``not tested`` when the metric is absent, ``undefined`` when it was computed
    but has no value (0/0, e.g. κ on items that all carry one label)."""
    if not m:
        return "not tested"

    def num(key: str) -> float | None:
        v = m.get(key) if isinstance(m, Mapping) else getattr(m, key, None)
        return float(v) if isinstance(v, int | float) else None

    if (m.get("estimate") if isinstance(m, Mapping) else m.estimate) is None:
        return "undefined"

    return fmt_interval(num("estimate"), num("ci_low"), num("ci_high"))
