"""Agreement statistics against statsmodels, scikit-learn, krippendorff and PandaLM's published figures."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from judgecal.aggregate.agreement import count_matrix, fleiss_kappa, krippendorff_alpha, pairwise_cohen


def _frame(labels: np.ndarray) -> pd.DataFrame:
    n_items, n_raters = labels.shape
    return pd.DataFrame({"item_id": np.repeat(np.arange(n_items), n_raters).astype(str),
                         "annotator": np.tile([f"r{j}" for j in range(n_raters)], n_items),
                         "label": labels.ravel()})


@pytest.mark.parametrize("seed", range(4))
def test_against_reference_implementations(seed):
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    truth = rng.choice(["A", "B", "tie"], 200)
    labels = np.where(rng.random((200, 3)) < 0.7, truth[:, None], rng.choice(["A", "B", "tie"], (200, 3)))
    df = _frame(labels)
    counts, _, _ = count_matrix(df)
    assert fleiss_kappa(df, n_boot=50)["estimate"] == pytest.approx(sm_fleiss(counts), abs=1e-9)
    codes = np.searchsorted(np.array(["A", "B", "tie"]), labels).T.astype(float)
    ref = krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal")
    assert krippendorff_alpha(df, n_boot=50)["estimate"] == pytest.approx(ref, abs=1e-9)
    pc = pairwise_cohen(df, n_boot=50)
    assert pc["r0|r1"]["estimate"] == pytest.approx(cohen_kappa_score(labels[:, 0], labels[:, 1]), abs=1e-9)


def test_hand_computed_and_edge_cases():
    # perfect agreement on two labels: kappa = alpha = 1
    df = _frame(np.array([["A", "A"], ["B", "B"], ["A", "A"]]))
    assert fleiss_kappa(df, n_boot=20)["estimate"] == pytest.approx(1.0)
    assert krippendorff_alpha(df, n_boot=20)["estimate"] == pytest.approx(1.0)
    # one label only: chance agreement is 1, kappa undefined -> None, never an exception
    const = _frame(np.array([["A", "A"], ["A", "A"]]))
    assert fleiss_kappa(const, n_boot=20)["estimate"] is None
    assert fleiss_kappa(pd.DataFrame(columns=["item_id", "annotator", "label"]))["n"] == 0


def test_pandalm_published_agreement(pandalm_ws):
    ann = pandalm_ws.annotations_repo.annotations_frame()
    fk = fleiss_kappa(ann, n_boot=300)
    assert round(fk["estimate"], 3) == 0.864
    assert fk["ci_low"] < fk["estimate"] < fk["ci_high"]
    pc = pairwise_cohen(ann, n_boot=100)
    got = [round(pc[k]["estimate"], 3) for k in ("pandalm-annotator1|pandalm-annotator2",
                                                  "pandalm-annotator1|pandalm-annotator3",
                                                  "pandalm-annotator2|pandalm-annotator3")]
    assert sorted(got) == sorted([0.852, 0.879, 0.862])
