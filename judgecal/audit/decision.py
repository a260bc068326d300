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

Where the rules live: each is a typed function ``VerdictInput -> list[Effect]`` (:mod:`judgecal.audit.verdict`);
the agreement, spans and labels rules in :mod:`judgecal.audit.section_rules`, each probe's own in its
:meth:`~judgecal.audit.probe.Probe.verdict_rule` (the position and invalid-answer rules are their probes'), the
flags' and no-sign readings here; the thresholds file is read and checked in :mod:`judgecal.audit.thresholds`
(names re-exported here). This module names no probe: it reads the registry.
"""

from __future__ import annotations

from typing import Any

from judgecal.audit.probe import Probe
from judgecal.audit.probes import PROBES
from judgecal.audit.section_rules import LATE_RULES, SECTION_RULES, human_likeness
from judgecal.audit.thresholds import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
from judgecal.audit.thresholds import ORDERED as ORDERED
from judgecal.audit.thresholds import RANGES as RANGES
from judgecal.audit.thresholds import REFERENCES as REFERENCES
from judgecal.audit.thresholds import THRESHOLDS_FILE as THRESHOLDS_FILE
from judgecal.audit.thresholds import THRESHOLDS_VERSION as THRESHOLDS_VERSION
from judgecal.audit.thresholds import ThresholdsError as ThresholdsError
from judgecal.audit.thresholds import load_thresholds as load_thresholds
from judgecal.audit.thresholds import tolerated_gap as tolerated_gap
from judgecal.audit.verdict import Effect, Figure, Severity, VerdictInput
from judgecal.catalogue import FLAGS

STATUSES = ("aligned", "caution", "not aligned")


def flag_words() -> dict[str, str]:
    """flag -> what it means in words, from the one catalogue (the invalid rate has its own rule below)."""
    return {code: f.words for code, f in FLAGS.items() if f.metric != "invalid_rate"}


def _flag_metric(code: str) -> str | None:
    """The metric a flag (or an ``<probe>:underpowered`` flag's probe part) is read from."""
    return FLAGS[code].metric if code in FLAGS else None


def _r(severity: Severity, code: str, metric: str | None, text: str) -> Effect:
    """A verdict's reason: what it says, how serious it is, which rule (``code``) and figure gave it."""
    return Effect(severity, code, metric, text)


def _described() -> list[Probe]:
    """The registered probes that describe themselves (a headline metric, a title), in the order they run."""
    return [p for p in PROBES if p.info is not None]


def _own_readings() -> set[str]:
    """The metrics whose probe's verdict rule reads them in full (the generic readings below skip them)."""
    return {m for p in PROBES for m in p.rule_metrics}






def probe_rules(v: VerdictInput) -> list[Effect]:
    """Every registered probe's own verdict rule (:meth:`judgecal.audit.probe.Probe.verdict_rule`), in the
    order the probes run."""
    return [e for p in PROBES for e in p.verdict_rule(v)]


def flag_rule(v: VerdictInput, replaced: set[str] | None = None) -> list[Effect]:
    """The flags, in the report's order, read by the severity their probe declares (``FlagInfo``): an
    ``<probe>:underpowered`` flag is a caution (too few items to rule the effect out); a "serious" one whose
    figure lies more than ``serious_bias.not_aligned_beyond`` from its null is not aligned; any other a caution.
    A flag on a metric in ``replaced`` (a probe's rule spoke for it) adds nothing."""
    out: list[Effect] = []
    words = flag_words()
    own = _own_readings()
    for flag in v.flags:
        if flag.endswith(":underpowered"):
            part = flag.split(":")[0]
            out.append(_r(1, "flag:" + flag, _flag_metric(part), f"{part.replace('_', ' ')}: not significant, but its "
                          f"interval still holds an effect of {v.effect_of_interest:.0%}: too few items to rule it out"))
        elif flag in words:
            if replaced and _flag_metric(flag) in replaced:
                continue
            out.append(_serious(flag, words[flag], v, own) or _r(1, "flag:" + flag, _flag_metric(flag), words[flag]))
    return out


def _serious(flag: str, words: str, v: VerdictInput, own: set[str]) -> Effect | None:
    """A flag its probe declares serious whose figure lies more than ``serious_bias.not_aligned_beyond`` from its
    null: not aligned (a metric its probe's rule reads in full keeps that rule); ``None`` otherwise (a caution)."""
    f = FLAGS.get(flag)
    if f is None or f.severity != "serious" or f.metric in own:
        return None
    fig = v.figure(f.metric)
    est, null = fig.estimate, fig.null_value
    beyond = (v.thresholds.get("serious_bias") or {}).get("not_aligned_beyond")
    if est is None or null is None or beyond is None or abs(est - null) <= beyond:
        return None
    return _r(2, "serious_bias", f.metric, f"{words}: {abs(est - null):.2f} from no bias, beyond {beyond:.2f}")




def no_sign_rule(v: VerdictInput) -> list[Effect]:
    """Tested metrics whose interval is pinned at the null (no variation at all): evidence of no bias, said so in
    words; a probe whose rule reads its metric in full says it itself (``stage="no_sign"``)."""
    own = _own_readings()
    titles = {p.info.headline: p.info.title for p in _described() if p.info is not None}
    out = []
    for name, m in v.metrics.items():
        if name in own or m.null_value is None:
            continue
        if m.ci_low == m.ci_high == m.null_value and m.estimate == m.null_value:
            out.append(_r(0, "no_sign", name, f"{titles.get(name, name.replace('_', ' '))}: no sign of bias "
                                              "(no variation at all)"))
    return out


def judge_verdict(entry: dict[str, Any], thresholds: dict[str, Any] | None = None, *,
                  human_kappa: float | None = None, human_accuracy: float | None = None,
                  effect_of_interest: float = 0.05) -> dict[str, Any]:
    """``{status, reasons, not_tested, not_tested_probes}`` for one judge's audit entry
    (``report["judges"][name]``): the reasons most serious first (the first is the one that decided the
    status), ``not_tested_probes`` the names of the probes that were not run. The reasons come from the
    sections' rules (:data:`SECTION_RULES`), each registered probe's rule, its flags, the late rules
    (:data:`LATE_RULES`) and the no-sign notes, in that order."""
    t = thresholds or DEFAULT_THRESHOLDS
    metrics = entry.get("metrics") or {}
    v = VerdictInput({k: Figure.of(m) for k, m in metrics.items()}, tuple(entry.get("flags") or ()), t,
                     effect_of_interest, tuple(entry.get("orders") or ()), str(entry.get("kind") or "pairwise"),
                     entry, human_kappa, human_accuracy)
    reasons: list[Effect] = [e for rule in SECTION_RULES for e in rule(v)]
    own = probe_rules(v)
    reasons += [e for e in own if e.stage == "rule"]
    reasons += flag_rule(v, {e.metric for e in own if e.replaces_flags and e.metric is not None})
    reasons += [e for rule in LATE_RULES for e in rule(v)]
    reasons += [e for e in own if e.stage == "no_sign"]
    reasons += no_sign_rule(v)
    pointwise = v.kind == "pointwise"
    probes = _described()
    pairwise_probes = [p for p in probes if p.info is not None and p.info.applies_to == ("pairwise",)]
    missing = [p for p in probes if p.info is not None and p.info.headline not in metrics
               and not (pointwise and p in pairwise_probes)]
    not_tested = [f"{p.info.title}: not tested ({p.not_tested_hint(v) or p.info.how_to_run})"
                  for p in missing if p.info is not None]
    if pointwise:  # one response per item: nothing to swap, pad or compare lengths against
        not_tested.append(", ".join(p.info.title for p in pairwise_probes if p.info is not None)
                          + ": apply to pairwise judges only")
    worst = max((r.severity for r in reasons), default=0)
    ordered = sorted(reasons, key=lambda r: -r.severity)
    out: dict[str, Any] = {"status": STATUSES[worst], "reasons": [r.text for r in ordered],
                           "details": [{"severity": STATUSES[r.severity], "code": r.code, "metric": r.metric,
                                        "text": r.text} for r in ordered],
                           "not_tested": not_tested,
                           "not_tested_probes": [p.info.title for p in missing if p.info is not None]}
    likeness = human_likeness(v)
    if likeness is not None:
        out["human_likeness"] = likeness
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

