"""The human loop against a real Label Studio server, started by the test suite."""

import json

import httpx
import pytest
from conftest import copy_workspace, free_port

from judgecal.aggregate.consensus import consensus_frame
from judgecal.aggregate.quality import annotator_report
from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotator, list_annotators, login
from judgecal.annotation.select import select
from judgecal.annotation.server import LabelStudioError, ManagedServer

PROJECT = "Blind review"


@pytest.fixture(scope="module")
def loop(tmp_path_factory, pandalm_ws):
    ws_dir = tmp_path_factory.mktemp("ls") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    server = ManagedServer(ws_dir, port=free_port())
    conn = server.start()
    bodies: list[str] = []

    def record(request: httpx.Request) -> None:
        request.read()
        bodies.append(f"{request.method} {request.url} {request.content.decode('utf-8', 'replace')}")

    ls = lstasks.client(conn, httpx.Client(timeout=60, event_hooks={"request": [record]}))
    yield ws, server, ls, bodies
    server.stop()
    ws.close()


def _truth(ws):
    return consensus_frame(ws.annotations_frame()[lambda d: d["source"] == "pandalm"], "mv").set_index("item_id")["label"]


def test_push_annotate_pull_aggregate(loop):
    ws, server, ls, bodies = loop
    truth = _truth(ws)
    items = select(ws, "random", 50, source="pandalm", seed=1)
    gold_ids = select(ws, "random", 5, source="pandalm", seed=2, exclude=set(items))
    res = lstasks.push(ws, ls, items, project=PROJECT, overlap=3, gold={i: truth[i] for i in gold_ids}, seed=7)
    assert (res.created, res.gold, res.already) == (55, 5, 0)
    # re-pushing creates nothing new
    again = lstasks.push(ws, ls, items, project=PROJECT, overlap=3, gold={i: truth[i] for i in gold_ids})
    assert (again.created, again.already) == (0, 55)
    tasks = list(ls.tasks.list(project=res.project_id, fields="all", page_size=100))
    assert len(tasks) == 55
    mapping = dict(ws.conn.execute("SELECT task_key, item_id FROM ls_tasks").fetchall())
    flipped = dict(ws.conn.execute("SELECT task_key, flipped FROM ls_tasks").fetchall())
    assert 10 < sum(flipped.values()) < 45  # A/B order randomised per task

    people = [create_annotator(ls, server, f"reviewer{k}@example.org") for k in range(3)]
    assert [p["email"] for p in list_annotators(ws.path)] == [p["email"] for p in people]
    for k, person in enumerate(people):
        session = login(server.url, person["email"], person["password"])
        for t in tasks:
            item = mapping[t.data["key"]]
            label = truth[item] if k < 2 else "tie"  # reviewer2 always says tie
            shown = {"A": "B", "B": "A"}.get(label, label) if flipped[t.data["key"]] else label
            r = session.post(f"/api/tasks/{t.id}/annotations/", json={
                "result": lstasks.annotation_json(shown), "lead_time": 12.5})
            assert r.status_code == 201, r.text
        session.close()

    pulled = lstasks.pull(ws, ls, project=PROJECT)
    assert (pulled.new, pulled.problems) == (165, [])
    ann = ws.annotations_frame()
    ls_ann = ann[ann["source"] == f"label-studio:{PROJECT}"]
    assert len(ls_ann) == 165 and ls_ann["annotation_id"].is_unique
    assert set(ls_ann["annotator"]) == {p["email"] for p in people}
    good = ls_ann[ls_ann["annotator"] != "reviewer2@example.org"]
    assert (good["label"].to_numpy() == truth.reindex(good["item_id"]).to_numpy()).all()
    assert (ls_ann["time_spent_s"] == 12.5).all()
    # a second pull brings nothing twice
    assert lstasks.pull(ws, ls, project=PROJECT).new == 0

    cons = consensus_frame(ls_ann, "mv").set_index("item_id")["label"]
    assert (cons.to_numpy() == truth.reindex(cons.index).to_numpy()).all()
    rep = annotator_report(ls_ann, gold=pd_series(lstasks.gold_labels(ws, PROJECT)))
    assert rep["reviewer2@example.org"]["systematic_bias"]
    assert rep["reviewer0@example.org"]["gold_accuracy"]["estimate"] == 1.0


def pd_series(d):
    import pandas as pd

    return pd.Series(d)


def test_blindness_no_identity_leaves_judgecal(loop):
    ws, _, _, bodies = loop
    assert bodies, "the transport saw no requests"
    sent = "\n".join(bodies)
    pushed = [r[0] for r in ws.conn.execute("SELECT item_id FROM ls_tasks")]
    items = ws.items(ids=pushed)
    secrets_ = {"pandalm", "PandaLM"} | set(pushed)
    secrets_ |= {c.model for it in items for c in it.candidates if c.model}
    secrets_ |= set(ws.judges())
    j = ws.judgments_frame()
    secrets_ |= {r for r in j[j["item_id"].isin(pushed)]["raw"] if len(r) > 20}
    leaked = sorted(s for s in secrets_ if s and s in sent)
    assert leaked == []


def test_bad_annotations_are_reported_and_skipped(loop):
    ws, _, ls, _ = loop
    pid = ws.conn.execute("SELECT project_id FROM ls_tasks LIMIT 1").fetchone()[0]
    task = next(iter(ls.tasks.list(project=pid, page_size=10)))
    ls.annotations.create(id=task.id, result=[{"from_name": "preference", "to_name": "prompt", "type": "choices",
                                               "value": {"choices": ["C better"]}}])
    ls.annotations.create(id=task.id, result=[{"from_name": "sentiment", "to_name": "prompt", "type": "choices",
                                               "value": {"choices": ["A better"]}}])
    ls.annotations.create(id=task.id, result=lstasks.annotation_json("A"), was_cancelled=True)
    before = len(ws.annotations_frame())
    res = lstasks.pull(ws, ls, project=PROJECT)
    assert res.new == 0
    msgs = " | ".join(res.problems)
    assert "not in the labeling config" in msgs and "unknown field 'sentiment'" in msgs and "cancelled" in msgs
    assert len(ws.annotations_frame()) == before


def test_pull_while_the_server_is_down(loop):
    ws, server, ls, _ = loop
    pid = ws.conn.execute("SELECT project_id FROM ls_tasks LIMIT 1").fetchone()[0]
    task = list(ls.tasks.list(project=pid, page_size=10))[1]
    ls.annotations.create(id=task.id, result=lstasks.annotation_json("B"))
    before = len(ws.annotations_frame())
    server.stop()
    with pytest.raises(LabelStudioError, match="cannot reach Label Studio"):
        lstasks.pull(ws, ls, project=PROJECT)
    assert len(ws.annotations_frame()) == before
    server.start()
    res = lstasks.pull(ws, ls, project=PROJECT)
    assert res.new == 1
    assert len(ws.annotations_frame()) == before + 1
    assert lstasks.pull(ws, ls, project=PROJECT).new == 0


def test_label_config_and_guidelines_ship_in_the_package():
    assert "A better" in lstasks.label_config("pairwise") and "$response_b" in lstasks.label_config("pairwise")
    assert "<Rating" in lstasks.label_config("likert") and "<Labels" in lstasks.label_config("spans")
    assert "not told which system wrote" in lstasks.guidelines()
    json.dumps(lstasks.annotation_json("tie"))
