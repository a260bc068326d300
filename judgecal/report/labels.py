"""What a binary or categorical ("label") judge's figures are read beside, from ``audit.json``.

A judge of items with a declared label set carries a ``labels`` section (and, labelled on several
criteria, one per criterion under ``criteria``). This module turns one such part into plain data that
every surface renders the same way (the explorer's Labels page, the HTML/PDF report, the terminal):

- the confusion matrix (rows: the human truth, columns: the judge) with each row's shares;
- accuracy and κ, then the rates — binary: TPR, TNR, precision, F1, balanced accuracy; categorical: recall
  and precision of each label — and macro F1, each beside the same figure of the judge with each annotator and of the annotators
  with each other on the same items (``like_for_like``, when two or more annotators labelled them) and
  beside a **trivial rater** that always answers the truth's most frequent label;
- binary: the pass rate as the judge reports it, corrected (Rogan–Gladen), PPI++ and from the human labels
  alone, and the plan (how many human labels a ±0.05 pass rate needs) in words.

The trivial rater's figures follow from the truth's count of each label alone (the conventions of
:mod:`judgecal.stats.classification`): recall 1 for its label and 0 for the others; precision its label's
share of the truth, undefined for the labels it never gives; macro F1 ``2 m / (k (n + m))`` (``m`` the
commonest label's count; a label never given counts F1 0); balanced accuracy 0.5; accuracy the commonest
label's share; κ 0. It is measured on the
basis of the figure it stands beside: against the consensus from the confusion's row totals; with each
annotator from the annotators' labels over the same (annotator, judgment) pairs as the judge's figure
(each label's recall ``n`` in ``like_for_like.judge``). Nothing here is estimated; nothing formats HTML
or markdown (each renderer escapes what it is given).

The label metrics' titles and definitions are the catalogue's (:func:`judgecal.catalogue.info`), worded
with the judge's own labels by :func:`metric_info`.
"""

from __future__ import annotations

import math
from typing import Any

from judgecal.catalogue import MetricInfo, fmt_metric, fmt_number, info

# the label metrics: their titles and definitions are the catalogue's, worded with a judge's labels
LABEL_METRICS = ("tpr", "tnr", "precision", "f1", "balanced_accuracy", "macro_f1", "recall_by_label",
                 "precision_by_label")
BINARY_RATES = ("tpr", "tnr", "precision", "f1", "balanced_accuracy", "macro_f1")
PREVALENCE = (
    ("judge_reported", "judge-reported", "the share of every item the judge labelled that it labels {positive}"),
    ("rogan_gladen", "corrected (Rogan–Gladen)", "the judge's rate corrected by its TPR and TNR measured on the "
     "human-labelled items: (rate + TNR − 1) / (TPR + TNR − 1)"),
    ("ppi", "PPI++", "the human labels, plus the judge on the items without one, its errors measured on the "
     "labelled items (prediction-powered inference)"),
    ("human_only", "human-only", "the share of the human-labelled items the humans labelled {positive}"),
)
#: the pointwise figures that read a score's order: they do not apply to a nominal label set
ORDINAL_ONLY = ("weighted_kappa", "spearman_rho", "mae")
TRIVIAL_WORDS = "always answering the truth's most frequent label"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _q(label: Any) -> str:
    return repr(str(label))


def is_label_judge(entry: dict[str, Any]) -> bool:
    """A judge of items with a declared label set (binary or categorical)."""
    return isinstance(entry.get("labels"), dict) and bool(entry["labels"].get("labels"))


def is_nominal(entry: dict[str, Any]) -> bool:
    """A label judge whose labels have no order: weighted κ, Spearman's ρ and the mean error do not apply."""
    return is_label_judge(entry) and not entry["labels"].get("ordinal")


def criteria_of(entry: dict[str, Any]) -> list[str]:
    """The criteria a judge was read on one by one (``[]`` for one label set)."""
    return [str(c) for c in (entry.get("criteria") or {})]


def metric_info(name: str, labels: dict[str, Any] | None = None) -> MetricInfo:
    """The catalogue entry of ``name`` worded with the judge's ``labels`` section (its positive label, the
    label of a per-label figure)."""
    base = name.partition(".")[0]
    if base not in LABEL_METRICS or (base == "macro_f1" and labels is None):
        return info(name)
    lab = labels or {}
    names = [str(x) for x in lab.get("labels") or []]
    pos = lab.get("positive")
    neg = next((x for x in names if x != str(pos)), None) if pos is not None else None
    words = {k: v for k, v in (("positive", _q(pos) if pos is not None else None),
                               ("negative", _q(neg) if neg is not None else None)) if v is not None}
    return info(name, words)


def rate_names(labels: dict[str, Any], kappa: str = "cohen_kappa") -> list[str]:
    """The figures a label part shows, in order: accuracy and κ (``kappa``: the κ the judge is read on,
    quadratic-weighted on an ordered set), then its rates."""
    if labels.get("task") == "binary":
        return ["accuracy", kappa, *BINARY_RATES]
    names = [str(x) for x in labels.get("labels") or []]
    return ["accuracy", kappa, *(f"recall_by_label.{x}" for x in names), *(f"precision_by_label.{x}" for x in names),
            "macro_f1"]


def confusion_view(labels: dict[str, Any]) -> dict[str, Any]:
    """The confusion counts with their row totals and row-normalised shares (``None`` for an empty row)."""
    conf = labels.get("confusion") or {}
    names = [str(x) for x in conf.get("labels") or labels.get("labels") or []]
    counts = [[int(c) for c in row] for row in conf.get("counts") or []]
    totals = [sum(r) for r in counts]
    shares = [[(c / t if t else None) for c in r] for r, t in zip(counts, totals, strict=True)]
    return {"labels": names, "counts": counts, "row_totals": totals, "col_totals": [sum(c) for c in zip(*counts, strict=True)]
            if counts else [], "shares": shares, "n": sum(totals), "majority": _majority(labels, totals),
            "rows": str(conf.get("rows") or "human truth"), "columns": str(conf.get("columns") or "judge")}


def trivial_figures(labels: dict[str, Any], totals: list[int] | list[float]) -> dict[str, float | None]:
    """What a rater always answering the commonest truth label gets, per rate (see the module), from the
    truth's count of each label on the basis the figures beside it are measured on."""
    names = [str(x) for x in labels.get("labels") or []]
    n = sum(totals)
    if not n or len(totals) != len(names):
        return {}
    major = max(range(len(totals)), key=lambda k: (totals[k], -k))  # the first of the commonest
    m, share = names[major], totals[major] / n
    k = len(names)
    kappa = 0.0 if share < 1 else None  # a constant rater's κ is 0; 0/0 when the truth is one label too
    out: dict[str, float | None] = {"macro_f1": 2 * share / (k * (1 + share)), "accuracy": share,
                                    "cohen_kappa": kappa, "weighted_kappa": kappa}
    for x in names:
        out[f"recall_by_label.{x}"] = 1.0 if x == m else 0.0
        out[f"precision_by_label.{x}"] = share if x == m else None  # it never gives the others: 0/0
    pos = labels.get("positive")
    if labels.get("task") == "binary" and pos is not None:
        on = str(pos) == m
        out.update({"tpr": 1.0 if on else 0.0, "tnr": 0.0 if on else 1.0, "precision": share if on else None,
                    "f1": 2 * share / (1 + share) if on else 0.0, "balanced_accuracy": 0.5})
    return out


def _majority(labels: dict[str, Any], totals: list[int] | list[float]) -> str | None:
    names = [str(x) for x in labels.get("labels") or []]
    if not sum(totals) or len(totals) != len(names):
        return None
    return names[max(range(len(totals)), key=lambda k: (totals[k], -k))]


def _like_totals(labels: dict[str, Any]) -> list[int]:
    """The annotators' count of each label over the judge's (annotator, judgment) pairs of ``like_for_like``
    (each label's recall is over the pairs whose annotator gave it): the trivial rater's basis there."""
    side = ((labels.get("like_for_like") or {}).get("judge") or {}).get("recall_by_label") or {}
    return [int((side.get(str(x)) or {}).get("n") or 0) for x in labels.get("labels") or []]


def _like(side: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """A rate of one side of ``like_for_like`` (``recall_by_label`` is a mapping there)."""
    if not side:
        return None
    base, _, label = name.partition(".")
    if base == "recall_by_label":
        return (side.get("recall_by_label") or {}).get(label)
    got = side.get("kappa" if name in ("cohen_kappa", "weighted_kappa") else name)
    return got if isinstance(got, dict) else None


def _trivial_text(name: str, value: float | None, majority: str | None, positive: Any = None) -> str:
    if majority is None:
        return "not measured"
    if value is None:
        label = name.partition(".")[2] or ("" if positive is None else str(positive))
        return f"undefined (never answers {_q(label)})" if label else "undefined (never answers it)"
    return fmt_number(value)


def part_of(entry: dict[str, Any], criterion: str | None = None) -> dict[str, Any]:
    """The judge's figures on one criterion (``criteria[criterion]``), or its top-level ones."""
    if criterion is None:
        return entry
    return (entry.get("criteria") or {}).get(criterion) or {}


def prevalence_rows(labels: dict[str, Any]) -> list[dict[str, Any]]:
    """A binary part's pass rate, four ways, each with its interval (``[]`` when not computed)."""
    prev = labels.get("prevalence") or {}
    if not prev:
        return []
    pos = _q(prev.get("positive", labels.get("positive")))
    rows = []
    for key, title, definition in PREVALENCE:
        m = prev.get(key) or None
        rows.append({"name": key, "title": title, "definition": definition.format(positive=pos), "metric": m,
                     "value": fmt_metric(m) if m else "not computed", "n": (m or {}).get("n"),
                     "estimate": _num((m or {}).get("estimate")), "ci_low": _num((m or {}).get("ci_low")),
                     "ci_high": _num((m or {}).get("ci_high"))})
    return rows


def pass_rate_line(labels: dict[str, Any]) -> str | None:
    """``pass rate ('1'): judge-reported X, corrected (Rogan–Gladen) Y, PPI++ Z, human-only W``."""
    rows = prevalence_rows(labels)
    if not rows:
        return None
    pos = _q((labels.get("prevalence") or {}).get("positive", labels.get("positive")))
    return f"pass rate ({pos}): " + ", ".join(f"{r['title']} {r['value']}" for r in rows)


def prevalence_words(labels: dict[str, Any]) -> str | None:
    """How the four pass rates were computed: the labelled and judged counts, the undefined corrections."""
    prev = labels.get("prevalence") or {}
    if not prev:
        return None
    n_l, n_all = prev.get("n_labelled"), prev.get("n_all")
    out = (f"The judge labelled {n_all} items, {n_l} of them with a human label; the corrections read its TPR "
           "and TNR (Rogan–Gladen) or its errors (PPI++) on the labelled ones.")
    if n_l is not None and n_l == n_all:
        out += (" Every judged item carries a human label, so both corrections equal the human-only rate here: "
                "they matter where the judge labels items people did not.")
    rg = prev.get("rogan_gladen") or {}
    if rg and rg.get("estimate") is None:
        out += " Rogan–Gladen is undefined: TPR + TNR ≤ 1, the judge is no better than chance."
    elif rg.get("n_undefined"):
        out += f" {rg['n_undefined']} bootstrap replicates had no correction (TPR + TNR ≤ 1 there)."
    ppi = prev.get("ppi") or {}
    if _num(ppi.get("width_ratio")) is not None and n_l != n_all:
        out += f" PPI++'s interval is {fmt_number(_num(ppi['width_ratio']), 2)}× the width of the human-only one."
    return out


def plan_words(labels: dict[str, Any]) -> str | None:
    """The plan in words: how many human labels a pass rate within ± the half-width needs."""
    plan = labels.get("plan") or {}
    if not plan:
        return None
    h, level = _num(plan.get("halfwidth")), _num(plan.get("level"))
    pct = f"{level:.0%}" if level is not None else "95%"
    words = (f"For a pass rate within ±{fmt_number(h, 2)} at {pct} confidence: {plan.get('n_human_only')} human "
             f"labels on their own, or {plan.get('n_ppi')} with PPI++ (the judge labelling the other items)")
    gain = _num((plan.get("ppi_plan") or {}).get("gain"))
    if gain is not None and gain > 1.005:
        words += f": {fmt_number(gain, 2)}× fewer"
    words += f". {plan.get('n_labelled')} of the {plan.get('n_all')} judged items carry a human label now"
    more_h, more_p = plan.get("more_human_only") or 0, plan.get("more_ppi") or 0
    words += (f": {more_h} more needed human-only, {more_p} with PPI++." if more_h or more_p else
              ": enough for both.")
    if plan.get("enough_items") is False:
        words += " The judged items are too few for the PPI++ plan: judge more items."
    if plan.get("rho_defined") is False:
        words += (" The judge's and the humans' labels do not vary together on the labelled items (one side is "
                  "constant): the judge buys nothing here.")
    if (plan.get("ppi_plan") or {}).get("exceeds_ceiling"):
        words += " " + str((plan.get("ppi_plan") or {}).get("ceiling_note") or "")
    if plan.get("pass_rate") in (0, 0.0, 1, 1.0):
        words += " The labelled items all carry one label: read the plan as \"no variance seen\", not \"no labels needed\"."
    return words


def _status(part: dict[str, Any]) -> dict[str, Any]:
    v = part.get("verdict")
    if isinstance(v, dict) and v.get("status"):
        return {"status": str(v["status"]), "reasons": [str(r) for r in v.get("reasons") or []]}
    return {"status": "no verdict", "reasons": []}


def label_view(entry: dict[str, Any], criterion: str | None = None) -> dict[str, Any] | None:
    """Everything a surface shows of one label part of a judge (``criterion``: one of :func:`criteria_of`;
    ``None``: the top-level figures, pooled over its criteria when it has several). ``None`` when the
    judge has no such part."""
    part = part_of(entry, criterion)
    labels = part.get("labels") if isinstance(part.get("labels"), dict) else None
    if not labels:
        return None
    metrics = part.get("metrics") or {}
    conf = confusion_view(labels)
    trivial = trivial_figures(labels, conf["row_totals"])
    like = labels.get("like_for_like") or {}
    like_tot = _like_totals(labels) if like else []
    like_major = _majority(labels, like_tot) if like else None
    trivial_like = trivial_figures(labels, like_tot) if like else {}
    rates = []
    kappa = str((part.get("pointwise") or {}).get("kappa") or "cohen_kappa")
    for name in rate_names(labels, kappa):
        mi = metric_info(name, labels)
        judge, lj, lh = metrics.get(name), _like(like.get("judge"), name), _like(like.get("humans"), name)
        t, tl = trivial.get(name), trivial_like.get(name)
        rates.append({"name": name, "title": mi.title, "definition": mi.definition,
                      "judge": judge, "judge_text": fmt_metric(judge),
                      "trivial": t, "trivial_text": _trivial_text(name, t, conf["majority"], labels.get("positive")),
                      "like_judge": lj, "like_judge_text": fmt_metric(lj) if lj else _no_like(like, name),
                      "humans": lh, "humans_text": fmt_metric(lh) if lh else _no_like(like, name),
                      "trivial_like": tl if lj else None,
                      "trivial_like_text": _trivial_text(name, tl, like_major, labels.get("positive")) if lj else _no_like(like, name)})
    crit = entry.get("criteria") or {}
    got_v = entry.get("verdict")
    v: dict[str, Any] = got_v if isinstance(got_v, dict) else {}
    humans = labels.get("humans") or {}
    return {
        "criterion": criterion, "pooled": [str(c) for c in labels.get("pooled_criteria") or []],
        "task": str(labels.get("task") or ""), "labels": conf["labels"], "ordinal": bool(labels.get("ordinal")),
        "positive": None if labels.get("positive") is None else str(labels["positive"]),
        "n_judgments": labels.get("n_judgments"), "n_with_truth": labels.get("n_with_truth"),
        "n_invalid": labels.get("n_invalid"),
        "verdict": _status(part),
        "confusion": conf, "trivial_label": conf["majority"], "trivial_like_label": like_major,
        "trivial_words": TRIVIAL_WORDS, "has_like": bool(like), "rates": rates,
        "like_definition": str(like.get("definition") or ""),
        "humans_agreement": [
            {"title": "Fleiss' κ", "value": _on_items(humans.get("fleiss_kappa"))},
            {"title": f"Krippendorff's α ({(humans.get('krippendorff_alpha') or {}).get('level_of_measurement', 'nominal')})",
             "value": _on_items(humans.get("krippendorff_alpha"))}] if humans else [],
        "humans_basis": (f"{humans.get('n_annotators')} annotators on {humans.get('n_items')} items"
                         if humans else "one annotator per item: the annotators' own figures are not measured"),
        "prevalence": prevalence_rows(labels), "pass_rate_line": pass_rate_line(labels),
        "prevalence_words": prevalence_words(labels), "plan_words": plan_words(labels),
        "criteria": [{"criterion": str(c), "status": str((v.get("criteria") or {}).get(c)
                                                          or _status(p)["status"])} for c, p in crit.items()],
        "trusted_on": [str(c) for c in v.get("trusted_on") or []],
        "not_trusted_on": [str(c) for c in v.get("not_trusted_on") or []],
    }


def _on_items(m: dict[str, Any] | None) -> str:
    """``0.148 (0.131–0.170) on 298 items``: the humans' agreement with the items it was measured on (Fleiss' κ
    reads only the items with the most common number of labels)."""
    n = (m or {}).get("n")
    return fmt_metric(m) + (f" on {n} items" if m and n is not None else "")


def _no_like(like: dict[str, Any], name: str) -> str:
    if not like:
        return "not measured (needs two annotators)"
    return "not measured"  # like_for_like carries no per-label precision


def trusted_words(view: dict[str, Any]) -> str | None:
    """``trusted on: toxicity; not trusted on: jailbreaking`` for a judge of several criteria."""
    if not view["criteria"]:
        return None
    yes = ", ".join(view["trusted_on"]) or "none"
    no = ", ".join(view["not_trusted_on"]) or "none"
    return f"trusted on: {yes}; not trusted on: {no}"


def label_views(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """Each part a report shows: one per criterion (the pooled figures after them), or the one part."""
    crit = criteria_of(entry)
    parts = [label_view(entry, c) for c in crit] + [label_view(entry)]
    return [p for p in parts if p is not None]


__all__ = ["LABEL_METRICS", "ORDINAL_ONLY", "criteria_of", "is_label_judge", "is_nominal", "label_view",
           "label_views", "metric_info", "trusted_words"]
