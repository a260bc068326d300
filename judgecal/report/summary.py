"""Page one of the trust report: one row per judge, read from ``audit.json``.

Each row holds the judge's verdict, the reason that matters most (the first of the verdict's reasons,
which :func:`judgecal.audit.decision.judge_verdict` orders most serious first), its agreement with people
beside the humans' like-for-like reference (the judge with each annotator beside the annotators with each
other, on the same items), chance and a trivial rater on the same basis, and the probes that were not run.

One producer, many renderers: page one of ``audit.html`` and of the PDF and the explorer's Overview all
show these rows, in this order and with these words; nothing here formats HTML or markdown (each renderer
escapes the text it is given).
"""

from __future__ import annotations

import math
from typing import Any

from judgecal.catalogue import fmt_metric, fmt_number
from judgecal.report.view import SECTIONS, stability_line

#: the columns of a row's figures, beside the figure's title; each row names them in its ``headers``
COLUMNS = ("judge", "humans", "chance", "trivial")
PAIRWISE = {"judge": "the judge with each annotator", "humans": "the annotators with each other",
            "chance": "chance", "trivial": "a trivial rater"}
LEAVE_ONE_OUT = {"judge": "the judge against the others' majority",
                 "humans": "each annotator against the others' majority", "chance": "chance", "trivial": "a trivial rater"}
CONSENSUS = {"judge": "the judge against the consensus", "humans": "the humans, same way", "chance": "chance",
             "trivial": "a trivial rater"}
LEGEND = {"aligned": "close to the humans, no serious bias",
          "caution": "usable with care, reasons listed",
          "not aligned": "do not use it in place of people"}
NOTE = ("Like with like: each judge beside the annotators measured the same way on the same items (never beside a "
        "consensus, which is less noisy than one person and would flatter the judge); chance: a rater answering at "
        "random with the same label shares; trivial: always the annotators' most frequent label. \"Not tested\" is "
        "never \"no bias\".")
NO_REASON = "no reason recorded"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v) if math.isfinite(float(v)) else None


def _figure(title: str, judge: str, humans: str, chance: str, trivial: str) -> dict[str, str]:
    return dict(zip(("title", *COLUMNS), (title, judge, humans, chance, trivial), strict=True))


Figures = tuple[str, dict[str, str], list[dict[str, str]]]  # basis in words, column headers, figures


def _like_figures(entry: dict[str, Any], definition: str) -> Figures | None:
    """The judge and the annotators measured the same way (``reference.like_for_like``)."""
    lfl = (entry.get("reference") or {}).get("like_for_like") or {}
    d = lfl.get(definition) or {}
    if not d or not d.get("judge") or not d.get("humans"):
        return None
    j, h = d["judge"], d["humans"]
    triv = lfl.get("trivial") or {}
    kword = str(lfl.get("kappa_word") or "κ")
    label = f"always {str(triv.get('label'))!r}" if triv.get("label") is not None else "always one label"
    trivial_acc = _num(triv.get("accuracy"))
    words = "pairwise" if definition == "pairwise" else "leave-one-out"
    basis = f"like with like: {words}, the same {lfl.get('n_items')} items, {lfl.get('n_annotators')} annotators"
    return basis, PAIRWISE if definition == "pairwise" else LEAVE_ONE_OUT, [
        _figure(kword, fmt_metric(j.get("kappa")), fmt_metric(h.get("kappa")), "0.000",
                f"{fmt_number(_num(triv.get('kappa')) or 0.0)} ({label})"),  # a constant rater's κ is 0
        _figure("agreement", fmt_metric(j.get("accuracy")), fmt_metric(h.get("accuracy")),
                fmt_number(_num(j.get("chance_accuracy"))),
                f"{fmt_number(trivial_acc)} ({label})" if trivial_acc is not None else "not measured"),
    ]


def _span_figures(entry: dict[str, Any]) -> Figures | None:
    """A span judge: mean pairwise character F1 beside the annotators' and the best trivial marker's."""
    like = (entry.get("spans") or {}).get("like_for_like") or {}
    if not like or not like.get("judge") or not like.get("n_items"):  # no item with two annotators' spans
        return None
    best = like.get("best_baseline")
    base = ((like.get("baselines") or {}).get(best) or {}) if best else {}
    trivial = f"{fmt_metric(base)} ({str(best).replace('_', ' ')})" if best else "not measured"
    basis = f"like with like: mean pairwise character F1, the same {like.get('n_items')} items"
    return basis, {**PAIRWISE, "trivial": "the best trivial marker"}, [
        _figure("span F1", fmt_metric(like.get("judge")), fmt_metric(like.get("humans")), "n/a", trivial)]


def _consensus_figures(entry: dict[str, Any]) -> Figures:
    """Without two annotators on its items: the judge against the consensus, no human reference to read."""
    metrics = entry.get("metrics") or {}
    if not entry.get("n_items_with_consensus"):
        return "no human label on the items it judged: agreement not measured", CONSENSUS, []
    ref = entry.get("reference") or {}
    kname = (entry.get("pointwise") or {}).get("kappa", "cohen_kappa")
    missing = "not measured (needs two annotators)"
    base = _num(ref.get("base_rate"))
    return "against the consensus: no items with two annotators, so no like-for-like reference", CONSENSUS, [
        _figure("weighted κ" if kname == "weighted_kappa" else "κ", fmt_metric(metrics.get(kname)), missing,
                "0.000", "0.000 (always one label)"),
        _figure("accuracy", fmt_metric(metrics.get("accuracy")), missing, fmt_number(_num(ref.get("chance_accuracy"))),
                f"{fmt_number(base)} (always the most frequent label)" if base is not None else "not measured"),
    ]


def summary_row(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One judge's row of page one (see the module's docstring)."""
    got_v = entry.get("verdict")
    v: dict[str, Any] = got_v if isinstance(got_v, dict) else {}
    status = str(v.get("status") or "no verdict")
    reasons = [str(r) for r in v.get("reasons") or []]
    if status == "no verdict":
        reasons = [f"not computed; produced by {SECTIONS['verdict']}"]
    definition = str((v.get("human_likeness") or {}).get("reference") or "pairwise")
    got = (_span_figures(entry) or _like_figures(entry, definition)
           or _like_figures(entry, "leave_one_out" if definition == "pairwise" else "pairwise")
           or _consensus_figures(entry))
    if "not_tested_probes" in v:  # the structured list (audits before it carry the sentences only)
        probes = [str(p) for p in v["not_tested_probes"]]
        not_tested = ", ".join(probes) if probes else "nothing: every probe ran"
    else:
        probes = []
        not_tested = "; ".join(str(r) for r in v.get("not_tested") or []) or "nothing: every probe ran"
    return {"judge": name, "status": status, "reason": reasons[0] if reasons else NO_REASON,
            "more_reasons": max(len(reasons) - 1, 0), "n_labelled": entry.get("n_items_with_consensus") or 0,
            "basis": got[0], "headers": got[1], "figures": got[2], "not_tested": not_tested,
            "not_tested_probes": probes,
            "stability": stability_line(entry.get("stability"))}


def summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Page one's rows, one per judge in audit.json's order."""
    return [summary_row(name, entry) for name, entry in (report.get("judges") or {}).items()]


def more_words(row: dict[str, Any]) -> str:
    """`` (+2 more reasons)`` after the reason that matters most, or nothing."""
    n = row["more_reasons"]
    return f" (+{n} more reason{'' if n == 1 else 's'})" if n else ""
