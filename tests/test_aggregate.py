"""Aggregators on a simulated crowd with planted spammers and biased annotators; annotator quality."""

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from judgecal.aggregate.models import AGGREGATORS, DawidSkene, MajorityVote
from judgecal.aggregate.quality import annotator_report
from judgecal.stats.inference import wilson

LABELS = np.array(["A", "B", "tie"])


def crowd(seed: int = 0, n_items: int = 400):
    """3 careful annotators (acc .85), 2 uniform spammers, 1 always-"tie" annotator, 1 "A"-biased."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(LABELS, n_items, p=[0.45, 0.45, 0.1])
    rows = []
    for i, t in enumerate(truth):
        for w in range(7):
            if w < 3:
                lab = t if rng.random() < 0.85 else rng.choice(LABELS)
            elif w < 5:
                lab = rng.choice(LABELS)
            elif w == 5:
                lab = "tie"
            else:
                lab = "A" if rng.random() < 0.6 else t
            rows.append((f"i{i}", f"w{w}", str(lab)))
    return pd.DataFrame(rows, columns=["item_id", "annotator", "label"]), pd.Series(truth, index=[f"i{i}" for i in range(n_items)])


@pytest.mark.parametrize("seed", [0, 1])
def test_dawid_skene_beats_majority_vote(seed, capsys):
    df, truth = crowd(seed)
    acc = {}
    for name in ("mv", "ds", "onecoin"):
        lab = AGGREGATORS[name]().fit(df).labels_.reindex(truth.index)
        acc[name] = float((lab.to_numpy() == truth.to_numpy()).mean())
    with capsys.disabled():
        print(f"\nsimulated crowd seed {seed}: " + ", ".join(f"{k} accuracy {v:.3f}" for k, v in acc.items()))
    assert acc["ds"] > acc["mv"] + 0.05
    assert acc["ds"] > 0.9


def test_glad_on_a_small_set():
    df, truth = crowd(0, n_items=60)
    m = AGGREGATORS["glad"](n_iter=50).fit(df)
    assert ((m.labels_.reindex(truth.index).to_numpy() == truth.to_numpy()).mean()) > 0.8
    assert np.allclose(m.probas_.sum(axis=1), 1)


def test_inputs_are_not_mutated_and_errors_are_sorted():
    df, _ = crowd(0, 50)
    before = df.copy()
    ds = DawidSkene().fit(df)
    pd.testing.assert_frame_equal(df, before)
    assert ds.errors_.index.is_monotonic_increasing
    assert np.allclose(ds.errors_.groupby(level="worker").sum().to_numpy(), 1)  # columns: observed label
    assert set(ds.priors_.index) == {"A", "B", "tie"}


def test_annotator_report_flags_the_planted_annotators():
    df, truth = crowd(0)
    gold = truth.iloc[:40]
    rep = annotator_report(df, gold)
    for w in ("w0", "w1", "w2"):
        assert not rep[w]["likely_spammer"] and not rep[w]["systematic_bias"]
        assert rep[w]["gold_accuracy"]["estimate"] > 0.75
    assert rep["w3"]["likely_spammer"] and rep["w4"]["likely_spammer"]
    assert rep["w5"]["systematic_bias"] and rep["w5"]["most_used_label"] == "tie"
    conf = np.array(rep["w0"]["confusion"]["counts"])
    assert conf.sum() == rep["w0"]["loo_accuracy"]["n"]


def test_wilson_matches_statsmodels():
    lo, hi = wilson(37, 50)
    ref = proportion_confint(37, 50, method="wilson")
    assert (lo, hi) == pytest.approx(ref, abs=1e-12)
    assert np.isnan(wilson(0, 0)[0])


def test_majority_vote_posteriors_are_vote_shares():
    df = pd.DataFrame({"item_id": ["x"] * 3, "annotator": ["a", "b", "c"], "label": ["A", "A", "B"]})
    p = MajorityVote().fit(df).probas_
    assert p.loc["x", "A"] == pytest.approx(2 / 3)


def test_leave_one_out_matches_majority_vote_of_the_others():
    df, _ = crowd(3, n_items=40)
    from judgecal.aggregate.quality import leave_one_out

    loo = leave_one_out(df).set_index(["item_id", "annotator"])
    led = 0
    for r in df.itertuples():  # by hand: the others' counts, kept only when one label leads
        counts = df[(df["item_id"] == r.item_id) & (df["annotator"] != r.annotator)]["label"].value_counts()
        leads = len(counts) and (len(counts) == 1 or counts.iloc[0] > counts.iloc[1])
        assert ((r.item_id, r.annotator) in loo.index) == bool(leads)
        if leads:
            led += 1
            assert loo.loc[(r.item_id, r.annotator), "loo"] == counts.index[0]
    assert led == len(loo) and 0 < led < len(df)  # the crowd has items whose others tie


def test_judges_as_extra_annotators_are_kept_apart(pandalm_ws, tmp_path):
    from conftest import copy_workspace

    from judgecal.aggregate.consensus import compute_consensus

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    counts = compute_consensus(ws, ("mv",), judges=("replay/pandalm/gpt-3.5-turbo",))
    assert counts == {"mv": 999, "mv+judges": 999}
    human = ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    assert human.equals(pandalm_ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"])
    mixed = ws.annotations_repo.consensus_frame("mv+judges").set_index("item_id")["label"]
    assert (mixed != human.reindex(mixed.index)).any()  # the judge's votes move some 2-vs-1 items


def test_an_annotators_agreement_is_one_figure_on_every_page(pandalm_ws):
    """The annotators' leave-one-out accuracy beside every judge (audit) and each annotator's on the
    Annotators page (``judgecal annotators``) are one definition: per annotator equal, pooled their sum
    (they were 0.956 pooled against 0.888-0.896 per annotator when the pages treated the others' ties apart)."""
    from judgecal.aggregate.quality import annotator_report
    from judgecal.audit.human import loo_accuracy

    ann = pandalm_ws.annotations_repo.annotations_frame()
    wide = ann.pivot(index="item_id", columns="annotator", values="label").astype(object)
    audit = loo_accuracy(wide.where(wide.notna(), None), n_boot=50)
    page = annotator_report(ann)
    assert set(page) == set(audit["per_annotator"]) and len(page) == 3
    right = n = 0.0
    for name, entry in page.items():
        mine = entry["loo_accuracy"]
        assert mine["estimate"] == pytest.approx(audit["per_annotator"][name]["estimate"], abs=1e-12)
        assert mine["n"] == audit["per_annotator"][name]["n"]
        right, n = right + mine["estimate"] * mine["n"], n + mine["n"]
    assert audit["estimate"] == pytest.approx(right / n, abs=1e-12) and n == audit["n"]
