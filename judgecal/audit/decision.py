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

import math
from collections.abc import Mapping
from typing import Any

from judgecal.audit.probe import Probe
from judgecal.audit.probes import PROBES
from judgecal.audit.thresholds import DEFAULT_THRESHOLDS as DEFAULT_THRESHOLDS
from judgecal.audit.thresholds import ORDERED as ORDERED
from judgecal.audit.thresholds import RANGES as RANGES
from judgecal.audit.thresholds import REFERENCES as REFERENCES
from judgecal.audit.thresholds import THRESHOLDS_FILE as THRESHOLDS_FILE
from judgecal.audit.thresholds import THRESHOLDS_VERSION as THRESHOLDS_VERSION
from judgecal.audit.thresholds import ThresholdsError as ThresholdsError
from judgecal.audit.thresholds import load_thresholds as load_thresholds
from judgecal.audit.thresholds import tolerated_gap
from judgecal.audit.verdict import Effect, Figure, Severity, VerdictInput, VerdictRule
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


def agreement_rule(v: VerdictInput) -> list[Effect]:
    """The agreement section's rule: a span judge against its like-for-like reference (else the span F1 ratio to
    the annotators'), else like with like (κ and agreement beside the annotators'), else κ with the consensus
    against ``kappa`` and the humans' κ against ``kappa_gap``; too few items is a caution; the accuracy gap to an
    annotator against ``accuracy_gap`` or the business-loss bound when no like-for-like reference exists."""
    entry, t, human_kappa, human_accuracy = dict(v.sections), v.thresholds, v.human_kappa, v.human_accuracy
    reasons: list[Effect] = []
    n_items = int(entry.get("n_items_with_consensus") or 0)
    kappa_name = (entry.get("pointwise") or {}).get("kappa", "cohen_kappa")  # weighted on an ordinal scale
    kappa, acc = v.figure(kappa_name).estimate, v.figure("accuracy").estimate
    kappa_word = "weighted κ" if kappa_name == "weighted_kappa" else "κ"
    span_f1 = v.figure("span_f1").estimate
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
    if like is not None and n_items > 0 and span_f1 is None:
        reasons += _like_reasons(entry, like, t)[0]
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
    return reasons


def human_likeness(v: VerdictInput) -> dict[str, Any] | None:
    """The class the like-for-like reading gives the judge (human-like, super-consistent, below the humans), with
    the κ z-score and the alternative annotator test beside it; ``None`` where the agreement rule reads none."""
    entry = dict(v.sections)
    like = _chosen_reference(entry, v.thresholds)
    if like is None or int(entry.get("n_items_with_consensus") or 0) <= 0 or v.figure("span_f1").estimate is not None:
        return None
    return _like_reasons(entry, like, v.thresholds)[1]


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


def labels_rule(v: VerdictInput) -> list[Effect]:
    """The labels section's rule (:func:`_label_reasons`): a binary or categorical judge against the trivial rater
    and the humans' own rates."""
    labels = v.sections.get("labels")
    return _label_reasons(labels, dict(v.sections.get("metrics") or {}), dict(v.thresholds)) if labels else []


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


#: the sections' rules read before the probes' (agreement, then what the probes say) and after the flags (labels)
SECTION_RULES: tuple[VerdictRule, ...] = (agreement_rule,)
LATE_RULES: tuple[VerdictRule, ...] = (labels_rule,)


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


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _chosen_reference(entry: dict[str, Any], t: Mapping[str, Any]) -> dict[str, Any] | None:
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


def _like_reasons(entry: dict[str, Any], like: dict[str, Any], t: Mapping[str, Any]
                  ) -> tuple[list[Effect], dict[str, Any]]:
    """The agreement reasons read like with like (:mod:`judgecal.stats.reference`): the judge's κ and
    agreement beside the humans' on the same definition and items; the gap counts only when its paired
    interval excludes 0; a judge not clearly above chance (κ's interval reaching 0, as a rater that always
    gives one label) is never aligned; weak agreement among the humans themselves is stated as such."""
    out: list[Effect] = []
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
        sev: Severity = 2 if gap > t["kappa_gap"]["not_aligned_above"] else 1
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


def _label_reasons(labels: dict[str, Any], m: dict[str, Any], t: dict[str, Any]) -> list[Effect]:
    """A binary or categorical judge's rates, each against the trivial rater and the humans' own:

    - its balanced accuracy (binary) or macro-F1's recall side must be clearly above what one constant label
      gets: a balanced-accuracy interval reaching 0.5, or a label it never recognises (recall 0), is not
      aligned — a judge that always says PASS on a 90%-pass set has TNR 0, however high its accuracy;
    - like with like (two or more annotators): its TPR and TNR (per-label recall on a categorical set), pooled
      over every (annotator, judgment) pair, beside the annotators' own over every pair of them; a gap above
      ``label_rate_gap`` is a caution or not aligned.
    """
    out: list[Effect] = []
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


def _span_reasons(like: dict[str, Any], t: Mapping[str, Any]) -> list[Effect]:
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
