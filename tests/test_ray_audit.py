"""The distributed audit (Parquet shards by item, per-item sums from Ray tasks, the bootstrap on the
reduced sums) gives the single-machine audit's alignment figures on PandaLM's real human labels and
recorded judges, for both ways of counting invalid verdicts, and the driver keeps items x judges."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ray")

from conftest import copy_workspace  # noqa: E402

from judgecal.audit.pipeline import AuditOptions, audit_workspace  # noqa: E402
from judgecal.data.records import Judgment  # noqa: E402
from judgecal.distributed.audit import (  # noqa: E402
    COVERED,
    SumsReducer,
    distributed_audit,
    shard_of,
    shard_sums,
    write_shards,
)


@pytest.fixture(scope="module")
def local_ray():
    import ray

    os.environ["RAY_AUTH_MODE"] = "disabled"  # a throwaway local cluster: no token file in the home folder
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200_000_000, log_to_driver=False,
             logging_level="ERROR")
    try:
        yield ray
    finally:
        ray.shutdown()


def _same(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, abs_tol=1e-12))


@pytest.fixture(scope="module")
def both_orders_ws(pandalm_ws, tmp_path_factory):
    """PandaLM (real human consensus, recorded judges in one order) plus a seeded judge in both orders
    with two samples, ties and invalid answers, so the position metrics have pairs to count."""
    ws = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("ray_audit") / "ws")
    rng = np.random.default_rng(5)
    items = sorted(ws.annotations_repo.consensus_frame("ds")["item_id"].unique())
    rows = []
    for i in items:
        for order in ("AB", "BA"):
            for s in range(2):
                v = str(rng.choice(["A", "B", "tie", "invalid"], p=[0.5, 0.3, 0.1, 0.1]))
                rows.append(Judgment(f"{i}|{order}|{s}", i, "sim/both-orders", "h0", order=order, sample=s,
                                     verdict=v, status="invalid" if v == "invalid" else "ok"))
    ws.judgments_repo.add_judgments(rows)
    yield ws
    ws.close()


@pytest.mark.parametrize("invalid_as", ["tie", "wrong"])
def test_same_alignment_figures_as_the_single_machine_audit(both_orders_ws, local_ray, tmp_path, invalid_as):
    ws = both_orders_ws
    single = audit_workspace(ws, AuditOptions(n_boot=300, seed=3, invalid_as=invalid_as)).to_json()
    dist = distributed_audit(ws, tmp_path / "shards", n_boot=300, seed=3, invalid_as=invalid_as, n_shards=7)
    assert dist["settings"]["distributed"]["shards"] == 7
    assert set(dist["judges"]) == set(single["judges"]) and len(single["judges"]) >= 3
    compared = 0
    for judge, s in single["judges"].items():
        d = dist["judges"][judge]
        for key in ("n_judgments", "n_items", "n_items_with_consensus", "orders", "kind"):
            assert d[key] == s[key], (judge, key)
        names = [m for m in COVERED if m in s["metrics"]]
        assert set(names) == set(d["metrics"]), judge
        for m in names:
            for f in ("estimate", "ci_low", "ci_high", "n"):
                assert _same(d["metrics"][m][f], s["metrics"][m][f]), (judge, m, f, d["metrics"][m], s["metrics"][m])
                compared += 1
    assert compared >= 4 * (10 + 4 + 4)  # every covered metric of the two-order judge, 4 of each other one
    # the position probe from the reduced pair counts and debiased sums: McNemar, the MDE, the section
    s, d = single["judges"]["sim/both-orders"], dist["judges"]["sim/both-orders"]
    assert json.dumps(d["position"], sort_keys=True, default=str) == json.dumps(s["position"], sort_keys=True,
                                                                                default=str)
    assert d["position"]["pairs"] > 0 and d["position"]["mcnemar_b"] + d["position"]["mcnemar_c"] > 0
    for f in ("p", "null_value", "mde"):
        assert _same(d["metrics"]["first_position_rate"][f], s["metrics"]["first_position_rate"][f]), f
    assert d["metrics"]["debiased_accuracy"]["n"] == s["metrics"]["debiased_accuracy"]["n"] > 0
    assert all("position" not in e for j, e in dist["judges"].items() if j != "sim/both-orders")  # one order
    assert dist["judges"]["sim/both-orders"]["metrics"]["flip_rate"]["n"] > 0


def test_shards_split_by_item_and_classes_merge(tmp_path):
    """Shards hold whole items; a class seen in one shard only ('invalid' counted as its own class) is
    merged into the same confusion layout the single path builds."""
    rows = []
    for i in range(40):
        for order in ("AB", "BA"):
            verdict = "invalid" if i == 7 and order == "BA" else ("A" if (i + (order == "BA")) % 3 else "B")
            rows.append((f"it{i}", "j", order, 0, "none", verdict, "ok" if verdict != "invalid" else "invalid"))
    df = pd.DataFrame(rows, columns=["item_id", "judge", "order", "sample", "mutation", "verdict", "status"])
    truth = pd.Series(["A" if i % 2 else "B" for i in range(40)], index=[f"it{i}" for i in range(40)])
    paths = write_shards([df.iloc[:30], df.iloc[30:]], tmp_path, n_shards=5)
    seen: set[str] = set()
    red = SumsReducer(len(truth))
    for p in paths:
        part = pd.read_parquet(p)
        assert not (set(part["item_id"]) & seen)  # an item lives in one shard only
        seen |= set(part["item_id"])
        assert (shard_of(part["item_id"].to_numpy(), 5) == int(p.stem[-5:])).all()
        red.add(shard_sums(p, truth, invalid_as="wrong"))
    assert seen == set(truth.index)
    from judgecal.audit.alignment import judge_sums, truth_codes

    whole = judge_sums(df, truth_codes(df["item_id"], truth), truth.to_numpy(), len(truth), "wrong")
    merged = red.judge_sums()["j"]
    assert merged.classes == whole.classes == ("A", "B", "invalid", "tie")
    np.testing.assert_array_equal(merged.sums, whole.sums)


def test_a_pointwise_judge_stays_pointwise_on_every_shard(local_ray, tmp_path):
    """Forty 1-5 ratings and a scoring judge with one unreadable answer: a shard that holds only that
    answer must not make the judge a judge of pairs (the single path's rule, from every shard's evidence)."""
    from test_audit_pointwise import _write_inputs

    from judgecal.cli import main
    from judgecal.data.store import Workspace

    items, scores = _write_inputs(tmp_path)
    ws_dir = str(tmp_path / "ws")
    assert main(["import", str(items), "--task", "pointwise", "-w", ws_dir]) == 0
    assert main(["import", str(scores), "--as", "judgments", "-w", ws_dir]) == 0
    assert main(["aggregate", "-w", ws_dir, "--method", "mv"]) == 0
    with Workspace(ws_dir) as ws:
        single = audit_workspace(ws, AuditOptions(consensus="mv", n_boot=100, seed=3)).to_json()
        dist = distributed_audit(ws, tmp_path / "shards", consensus="mv", n_boot=100, seed=3, n_shards=40)
    alone = [p for p in (tmp_path / "shards").iterdir()
             if set(pd.read_parquet(p)["verdict"].dropna()) == {"invalid"} and pd.read_parquet(p)["score"].isna().all()]
    assert alone  # the shard that would have said "pairwise" on its own
    s, d = single["judges"]["rater-llm"], dist["judges"]["rater-llm"]
    assert s["kind"] == d["kind"] == "pointwise"
    assert d["metrics"] == {} and d["n_judgments"] == s["n_judgments"] == 40
