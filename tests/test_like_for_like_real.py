"""Like with like on real data: a held-out PandaLM annotator imported as a judge reads human-level with no
bias flag; a mark-everything span judge on FaithBench is not aligned; DICES-990 (crowd safety ratings) is
explained as subjective rather than blamed on a judge."""

from __future__ import annotations

import json
import os
import re
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from judgecal.data.records import Annotation, Judgment, Span
from judgecal.data.store import Workspace

PEOPLE = ("pandalm-annotator1", "pandalm-annotator2", "pandalm-annotator3")


@pytest.fixture(scope="module", params=PEOPLE)
def held_out(request, pandalm_ws, tmp_path_factory):  # type: ignore[no-untyped-def]
    """PandaLM with one annotator taken out of the humans and imported as a judge, in both orders."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.pipeline import AuditOptions, audit_workspace

    person = request.param
    ws = Workspace(tmp_path_factory.mktemp("held") / "ws")
    ws.items_repo.add_items(pandalm_ws.items_repo.items())
    ann = pandalm_ws.annotations_repo.annotations_frame()
    ws.annotations_repo.add_annotations(Annotation(r.item_id, r.annotator, r.label, source=r.source)
                       for r in ann[ann["annotator"] != person].itertuples())
    mine = ann[ann["annotator"] == person]
    ws.judgments_repo.add_judgments([Judgment(key=f"{r.item_id}/{o}", item_id=r.item_id, judge=f"import/{person}", spec_hash="p",
                               order=o, verdict=r.label, raw=r.label) for r in mine.itertuples() for o in ("AB", "BA")])
    compute_consensus(ws, ("ds",))
    report = audit_workspace(ws, AuditOptions(n_boot=400)).to_json()
    yield person, report, ann
    ws.close()


def test_held_out_annotator_reads_human_level_with_no_bias_flag(held_out):  # type: ignore[no-untyped-def]
    person, report, ann = held_out
    entry = report["judges"][f"import/{person}"]
    wide = ann.pivot(index="item_id", columns="annotator", values="label")
    others = [p for p in PEOPLE if p != person]
    # like with like, by hand: the person's mean κ with each of the two others beside their κ with each other
    pw = entry["reference"]["like_for_like"]["pairwise"]
    kj = np.mean([cohen_kappa_score(wide[person], wide[o]) for o in others])
    kh = cohen_kappa_score(wide[others[0]], wide[others[1]])
    assert pw["judge"]["kappa"]["estimate"] == pytest.approx(kj)
    assert pw["humans"]["kappa"]["estimate"] == pytest.approx(kh)
    assert pw["judge"]["accuracy"]["estimate"] == pytest.approx(np.mean([(wide[person] == wide[o]).mean()
                                                                         for o in others]))
    assert entry["reference"]["like_for_like"]["n_items"] == 999
    v = entry["verdict"]
    assert v["status"] == "aligned", v["reasons"]
    assert v["human_likeness"]["class"] in ("human-like", "super-consistent")
    assert any("agrees with people" in r for r in v["reasons"])
    # identical verdicts in both orders: no flag at all, and the verdict says there is no sign of bias
    assert entry["flags"] == []
    m = entry["metrics"]["first_position_rate"]
    assert (m["estimate"], m["ci_low"], m["ci_high"]) == (0.5, 0.5, 0.5)
    assert "position: no sign of bias (identical in both orders)" in v["reasons"]
    assert not any("too few items" in r or "underpowered" in r for r in v["reasons"])
    print(f"\n{person} as a judge: κ {kj:.3f} with each other annotator, the others {kh:.3f} with each other;",
          v["status"], v["human_likeness"]["class"])


def test_held_out_annotator_surfaces_show_the_like_for_like_reference(held_out):  # type: ignore[no-untyped-def]
    from rich.console import Console

    from judgecal.report.terminal import print_summary
    from judgecal.report.write import render_html

    person, report, _ = held_out
    pw = report["judges"][f"import/{person}"]["reference"]["like_for_like"]["pairwise"]
    from judgecal.catalogue import fmt_metric

    console = Console(width=120, record=True)
    print_summary(report, console, details=True)
    out = " ".join(console.export_text().split())
    assert f"κ with each annotator {fmt_metric(pw['judge']['kappa'])}" in out
    assert f"annotators with each other: {fmt_metric(pw['humans']['kappa'])} (pairwise, the same 999 items)" in out
    assert "like with like (pairwise): the judge's mean Cohen's κ" in out
    html = render_html(report)
    plain = " ".join(re.sub(r"<[^>]+>", "", html).split())
    assert "Like with like." in plain and "humans, same way: " + fmt_metric(pw["humans"]["kappa"]) in plain
    assert 'class="row-ref"' in html  # the forest plot draws the reference on the judge's own row


@pytest.fixture(scope="module")
def faithbench(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    """FaithBench with a judge that marks every summary from its first character to its last."""
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.cli import main

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    path = tmp_path_factory.mktemp("fb") / "ws"
    assert main(["import", "faithbench", "-w", str(path)]) == 0
    ws = Workspace(path)
    items = ws.items_repo.items(source="faithbench")
    judge = "baseline/mark-everything"
    ws.judgments_repo.add_judgments([Judgment(key=f"all/{it.item_id}", item_id=it.item_id, judge=judge, spec_hash="all",
                               raw="everything") for it in items])
    ws.spans_repo.add_spans([Span(it.item_id, judge, 0, 0, len(it.candidates[0].text), "Unwanted", f"all/{it.item_id}", "judge")
                  for it in items])
    report = audit_workspace(ws, AuditOptions(n_boot=300)).to_json()
    yield ws, items, report["judges"][judge]
    ws.close()


def test_mark_everything_on_faithbench_is_not_aligned(faithbench):  # type: ignore[no-untyped-def]
    ws, items, entry = faithbench
    like = entry["spans"]["like_for_like"]
    # by hand with Python sets: the whole summary against each annotator, on items with two or more of them
    text = {it.item_id: it.candidates[0].text for it in items}
    sp = ws.spans_repo.spans_frame(source="faithbench", kind="human")
    marks: dict[str, dict[str, set[int]]] = {}
    for r in sp.itertuples():
        marks.setdefault(r.item_id, {}).setdefault(r.rater, set()).update(range(r.start, r.end))

    def f1(a: set[int], b: set[int]) -> float:
        return 1.0 if not a and not b else 2 * len(a & b) / (len(a) + len(b))

    judge_f1, human_f1 = [], []
    for item, by in marks.items():
        if len(by) < 2:
            continue
        everything = set(range(len(text[item])))
        judge_f1 += [f1(everything, m) for m in by.values()]
        human_f1 += [f1(a, b) for a, b in combinations(by.values(), 2)]
    assert like["judge"]["estimate"] == pytest.approx(np.mean(judge_f1), abs=1e-9)
    assert like["humans"]["estimate"] == pytest.approx(np.mean(human_f1), abs=1e-9)
    assert like["baselines"]["mark_everything"]["estimate"] == pytest.approx(like["judge"]["estimate"])
    assert like["above_baseline"]["ci_low"] <= 0
    v = entry["verdict"]
    assert v["status"] == "not aligned"
    assert any(r.endswith("not clearly above the trivial marker") for r in v["reasons"])
    print("\nFaithBench mark-everything: span F1 against the consensus", entry["metrics"]["span_f1"]["estimate"],
          "| with each annotator", like["judge"]["estimate"], "beside the annotators'", like["humans"]["estimate"],
          "| best trivial marker", like["best_baseline"], {k: b["estimate"] for k, b in like["baselines"].items()})


def _dices(mirror) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """DICES-990's safety ratings as items x rater slots (the k-th rating of each conversation; the raters in
    a slot differ between conversations, so a slot is a random rater of the crowd, not one person)."""
    import ast

    raw = json.loads((mirror / "dmg-illc/JUDGE-BENCH/data/dices/dices_990.json").read_text("utf-8"))
    rows = {}
    for inst in raw["instances"]:
        ann = inst["annotations"]
        ann = ast.literal_eval(ann) if isinstance(ann, str) else ann
        rows[inst["id"]] = ann["safety"]["individual_human_scores"]
    width = min(len(v) for v in rows.values())
    return pd.DataFrame({k: v[:width] for k, v in rows.items()}).T


def test_dices_subjective_task_is_explained_not_blamed(mirror):  # type: ignore[no-untyped-def]
    from judgecal.audit.decision import judge_verdict
    from judgecal.stats.reference import like_for_like

    wide = _dices(mirror)
    assert len(wide) == 990 and wide.shape[1] >= 60  # 60-odd ratings on every conversation
    humans, judge = wide.iloc[:, :5], wide.iloc[:, 5].to_numpy(dtype=object)  # a sixth rater as the "judge"
    like = like_for_like(humans, judge, n_boot=400)
    pw = like["pairwise"]
    kh = np.mean([cohen_kappa_score(humans.iloc[:, a], humans.iloc[:, b]) for a, b in combinations(range(5), 2)])
    assert pw["humans"]["kappa"]["estimate"] == pytest.approx(kh)
    assert kh < 0.2  # crowd raters of safety agree weakly
    entry = {"kind": "pairwise", "n_items_with_consensus": 990, "metrics": {}, "flags": [],
             "reference": {"like_for_like": like}}
    v = judge_verdict(entry)
    assert v["human_likeness"]["class"] == "human-like" and v["human_likeness"]["subjective"]
    assert any("the task is subjective here, and no single rater, human or model, is reliable" in r
               for r in v["reasons"])
    assert not any("better than chance" in r for r in v["reasons"])  # the judge is not blamed
    assert v["status"] == "caution"
    print(f"\nDICES-990: a rater's κ {pw['judge']['kappa']['estimate']:.3f} with five others, theirs {kh:.3f};",
          v["status"])
