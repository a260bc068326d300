"""The audit's sections beyond the probes: models, the humans' reference, confidence and a verdict per judge.

:func:`add_sections` extends a report built by :func:`judgecal.audit.run.run_audit`:

- ``models`` (:mod:`judgecal.audit.models`);
- ``humans``: the truth's annotators, their Fleiss' κ and leave-one-out accuracy (:mod:`judgecal.audit.human`);
- ``comparisons``: each two judges of pairs, the paired difference of their accuracies, and per judge of
  pairs ``breakdown``: its confusion with the humans and its accuracy by category and by candidate model
  (:mod:`judgecal.audit.breakdown`);
- per judge: ``reference`` (κ and accuracy beside the base rate, a chance rater and the humans, and
  ``like_for_like``: the judge and the annotators measured the same way on the same items, pairwise and
  leave-one-out, :mod:`judgecal.stats.reference`; its pairwise judge side is also under ``metrics`` as
  ``pairwise_kappa`` and ``pairwise_accuracy``),
  ``replace_annotator`` (alternative annotator test and κ z-score, when annotators' labels exist),
  ``calibration`` and ``selective`` (when the judge has a confidence, :mod:`judgecal.audit.confidence`),
  ``verdict`` = ``{status, reasons, not_tested}`` from the workspace's ``thresholds.yaml``
  (:func:`judgecal.audit.decision.judge_verdict`), and ``biases``: its bias profile, one entry per probe
  (:func:`judgecal.audit.profile.bias_profile`);
- per judge with spans: ``span_iou`` and ``span_f1`` under ``metrics`` and a ``spans`` section (every span
  figure and the annotators' pairwise F1 beside it, :mod:`judgecal.audit.spans`), against the span
  consensus of one named source of human spans (the report's ``spans``: that source, its annotators,
  items and marked spans);
- per pointwise judge (scores or labels of its own per item): ``accuracy``, ``cohen_kappa`` and, on an
  ordinal scale, ``weighted_kappa``, ``spearman_rho`` and ``mae`` under ``metrics``, and a ``pointwise``
  section with the scale and the annotators' agreement on the same items (:mod:`judgecal.audit.pointwise`);
  its verdict reads its κ against that ceiling, not against the pooled Fleiss' κ.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from judgecal.audit import breakdown, confidence, human, models
from judgecal.audit.active_ppi import draws_for_source
from judgecal.audit.decision import criteria_verdict, judge_verdict, load_thresholds
from judgecal.audit.pointwise import add_pointwise
from judgecal.audit.probe import AuditConfig, JudgeInput
from judgecal.audit.profile import bias_profile
from judgecal.audit.spans import span_alignment
from judgecal.audit.win_rates import alpaca_texts
from judgecal.data.sources import SourceError
from judgecal.data.sources import select as select_source
from judgecal.data.store import Workspace

# the steps of add_sections that a progress bar counts: these, then one per judge
SECTION_STEPS = ("models", "humans", "spans", "pointwise")


def add_sections(report: dict[str, Any], ws: Workspace, consensus: str, truth: pd.Series, about: dict[str, Any],
                 inputs: list[JudgeInput], cfg: AuditConfig, *, target: float = confidence.TARGET,
                 delta: float = confidence.DELTA, epsilon: float = human.EPSILON,
                 step: Callable[[str], None] | None = None) -> dict[str, Any]:
    step = step or (lambda name: None)
    thresholds = load_thresholds(ws.path)
    category = ws.items_repo.item_metadata("category")  # read once: the models section and each judge's breakdown
    items = models.item_models(ws, category)
    verdicts = {inp.judge: models.item_verdicts(inp.judgments, cfg.invalid_as) for inp in inputs if inp.pairwise}
    step("models")
    report["models"] = models.models_section(items, truth, inputs, cfg, verdicts=verdicts, lc_texts=alpaca_texts(ws),
                                             draws=draws_for_source(ws, about.get("source")))
    report["comparisons"] = breakdown.comparisons(verdicts, truth, cfg.n_boot, cfg.seed, cfg.level)
    step("humans")
    wide = human.annotator_matrix(ws, consensus, truth)
    humans = report["humans"] = human.humans_section(about, wide, cfg.n_boot, cfg.seed, cfg.level)
    report["settings"]["selective"] = {"target": target, "delta": delta, "split": "random halves of the "
                                       "labelled items: calibration, held out"}
    report["settings"]["replace_annotator"] = {"epsilon": epsilon, "q": human.ALT_Q,
                                               "procedure": "Benjamini-Yekutieli over annotators"}
    report["settings"]["thresholds"] = thresholds
    step("spans")
    add_spans(report, ws, about.get("source"), cfg)
    step("pointwise")
    add_pointwise(report, inputs, wide, cfg, ws.items_repo.response_clusters(), ws.items_repo.label_sets())
    human_kappa = _finite((humans.get("fleiss_kappa") or {}).get("estimate"))
    human_accuracy = _finite(humans["loo_accuracy"].get("estimate"))
    shared: dict[str, Any] = {}  # what each judge's breakdown reads alike (codes of categories and models)
    for inp in inputs:
        step(f"reference and verdict of {inp.judge}")
        entry = report["judges"][inp.judge]
        if inp.pairwise:
            verdict = verdicts[inp.judge]
            by_item = breakdown.judge_items(verdict, truth, category, items, cfg.level, shared)
            if by_item["n_items"]:  # a judge with no labelled item has nothing to break down
                entry["breakdown"] = by_item
            entry["reference"] = human.judge_reference(verdict, truth, humans, wide, n_boot=cfg.n_boot,
                                                       seed=cfg.seed, level=cfg.level)
            pw = (entry["reference"].get("like_for_like") or {}).get("pairwise")
            if pw:  # the judge's own side of the like-for-like reference, as figures of its own
                for name, key in (("pairwise_kappa", "kappa"), ("pairwise_accuracy", "accuracy")):
                    entry["metrics"][name] = {**pw["judge"][key], "null_value": None, "p": None, "q": None,
                                              "mde": None}
            alt = human.replace_annotator(wide, verdict, epsilon=epsilon, q=human.ALT_Q)
            if alt is not None:
                entry["replace_annotator"] = alt
            conf, kind = confidence.item_confidence(inp.judgments)
            if kind is not None and len(conf):
                entry["calibration"] = confidence.calibration_section(conf, kind, truth, n_boot=cfg.n_boot,
                                                                      seed=cfg.seed, level=cfg.level)
                entry["selective"] = confidence.selective_section(conf, truth, target=target, delta=delta,
                                                                  seed=cfg.seed)
        elif entry.get("labels"):
            _label_confidence(entry, inp, truth, wide, cfg, target, delta, epsilon)
        kappa, accuracy = human_kappa, human_accuracy
        if "pointwise" in entry:  # the humans' agreement on this judge's items and scale, never the pooled one
            ceiling = entry["pointwise"].get("humans") or {}
            kappa = _finite((ceiling.get(entry["pointwise"]["kappa"]) or {}).get("estimate"))
            accuracy = _finite((ceiling.get("accuracy") or {}).get("estimate"))
        entry["verdict"] = judge_verdict(entry, thresholds, human_kappa=kappa, human_accuracy=accuracy,
                                         effect_of_interest=cfg.effect_of_interest)
        entry["biases"] = bias_profile(entry)
        if entry.get("criteria"):  # a verdict per criterion, and which ones the judge can be trusted on
            for part in entry["criteria"].values():
                ceiling = part["pointwise"].get("humans") or {}
                part["verdict"] = judge_verdict(
                    part, thresholds, human_kappa=_finite((ceiling.get(part["pointwise"]["kappa"]) or {}).get("estimate")),
                    human_accuracy=_finite((ceiling.get("accuracy") or {}).get("estimate")),
                    effect_of_interest=cfg.effect_of_interest)
            entry["verdict"] = criteria_verdict(entry["verdict"], entry["criteria"])
    return report


def _label_confidence(entry: dict[str, Any], inp: JudgeInput, truth: pd.Series, wide: pd.DataFrame, cfg: AuditConfig,
                      target: float, delta: float, epsilon: float) -> None:
    """A binary or categorical judge's calibration, Trust or Escalate and alternative annotator test, as a
    pairwise judge's: from its label probabilities (or vote shares), and its first label on each item."""
    labels = tuple(entry["labels"]["labels"])
    jf = inp.judgments
    ok = jf[(jf["status"].astype(str) == "ok") & jf["verdict"].isin(labels)]
    first = ok.drop_duplicates("item_id").set_index(ok.drop_duplicates("item_id")["item_id"].astype(str))["verdict"]
    alt = human.replace_annotator(wide.reindex(wide.index.intersection(first.index)), first.astype(object),
                                  epsilon=epsilon, q=human.ALT_Q)
    if alt is not None:
        entry["replace_annotator"] = alt
    conf, kind = confidence.label_confidence(jf, labels)
    if kind is not None and len(conf):
        entry["calibration"] = confidence.calibration_section(conf, kind, truth, n_boot=cfg.n_boot, seed=cfg.seed,
                                                              level=cfg.level)
        entry["selective"] = confidence.selective_section(conf, truth, target=target, delta=delta, seed=cfg.seed)


def _finite(v: Any) -> float | None:
    return None if v is None or not math.isfinite(float(v)) else float(v)


def add_spans(report: dict[str, Any], ws: Workspace, selector: str | None, cfg: AuditConfig) -> None:
    """Span figures per judge against the span consensus of one source of human spans.

    The source is the truth's own selector when human spans carry it, else the only source of human
    spans; several sources and no selector that names one of them are never pooled: the report says so.
    Judge spans are tied to the judge through the judgment that produced them (their ``source`` is
    the judgment key), so two specs of one model stay two judges here too.
    """
    spans = ws.spans_repo.spans_frame()
    if spans.empty or not (spans["kind"] == "judge").any():
        return
    human_spans = spans[spans["kind"] == "human"].rename(columns={"rater": "annotator"})
    present = sorted({str(s) for s in human_spans["source"].unique()})
    chosen: pd.DataFrame | None = None
    if selector is not None:
        try:
            chosen = select_source(human_spans, selector)
        except SourceError:
            chosen = None
    if chosen is None and len(present) == 1:
        chosen = human_spans
    if chosen is None:
        report["spans"] = {"source": None, "note": (
            "no human spans to compare with" if not present else
            f"human spans come from {len(present)} sources ({', '.join(present)}); choose one with "
            "--consensus <method>:<source>")}
        return
    keys = ws.judgments_repo.judgments_frame(columns=("key", "judge"))
    judge_of = dict(zip(keys["key"].astype(str), keys["judge"].astype(str), strict=True))
    judged = spans[spans["kind"] == "judge"].copy()
    judged["rater"] = judged["source"].astype(str).map(judge_of).fillna(judged["rater"].astype(str))
    frame = pd.concat([chosen.rename(columns={"annotator": "rater"}), judged], ignore_index=True)
    used = sorted({str(s) for s in chosen["source"].unique()})
    report["spans"] = {"source": used[0] if len(used) == 1 else selector, "sources": used,
                       "n_annotators": int(chosen["annotator"].nunique()), "n_items": int(chosen["item_id"].nunique()),
                       "n_spans": int((chosen["end"] > chosen["start"]).sum())}  # the truth, for its one line
    marked = frame[["item_id", "candidate"]].drop_duplicates()
    texts = {it.item_id: it for it in ws.items_repo.items(ids=marked["item_id"].astype(str).unique().tolist())}
    lengths = {(str(i), int(c)): len(texts[str(i)].candidates[int(c)].text or "")
               for i, c in marked.itertuples(index=False)
               if str(i) in texts and 0 <= int(c) < len(texts[str(i)].candidates)}
    for judge, figures in span_alignment(frame, n_boot=cfg.n_boot, seed=cfg.seed, lengths=lengths).items():
        entry = report["judges"].get(judge)
        if entry is None:
            continue
        entry["spans"] = {"source": report["spans"]["source"], **figures}
        for name in ("span_iou", "span_f1"):
            entry["metrics"][name] = {**figures[name], "p": None, "q": None, "mde": None}
        like: dict[str, Any] = dict(figures.get("like_for_like") or {})
        if like.get("judge"):
            entry["metrics"]["span_f1_pairwise"] = {**like["judge"], "p": None, "q": None, "mde": None}
            entry["metrics"]["span_score"] = {**like["normalised"], "p": None, "q": None, "mde": None}
