"""The human loop against a real Label Studio server, started by the test suite."""

import json

import pytest
from conftest import copy_workspace, free_port, recording_client

from judgecal.aggregate.consensus import consensus_frame
from judgecal.aggregate.quality import annotator_report
from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotators, list_annotators, login, reviewers
from judgecal.annotation.gold import draw_gold
from judgecal.annotation.select import select
from judgecal.annotation.server import LabelStudioError, ManagedServer

PROJECT = "Blind review"


@pytest.fixture(scope="module")
def loop(tmp_path_factory, pandalm_ws):
    ws_dir = tmp_path_factory.mktemp("ls") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    server = ManagedServer(ws_dir, port=free_port())
    conn = server.start()
    http, bodies = recording_client()
    ls = lstasks.client(conn, http)
    yield ws, server, ls, bodies, http
    server.stop()
    ws.close()


def _truth(ws):
    return consensus_frame(ws.annotations_repo.annotations_frame()[lambda d: d["source"] == "pandalm"], "mv").set_index("item_id")["label"]


def test_push_annotate_pull_aggregate(loop):
    ws, server, ls, bodies, http = loop
    truth = _truth(ws)
    people = create_annotators(server, [f"reviewer{k}@example.org" for k in range(3)])
    assert [p["email"] for p in list_annotators(ws.path)] == [p["email"] for p in people]
    assert len({p["org_id"] for p in people}) == 3  # an organisation each
    items = select(ws, "random", 20, source="pandalm", seed=1)
    gold = draw_gold(ws, "pandalm", 3, project=PROJECT, exclude=set(items), seed=2)
    assert all(gold[i] == truth[i] for i in gold)  # the source's agreed answer
    res = lstasks.push(ws, ls, items, project=PROJECT, overlap=3, gold=gold, gold_from="pandalm", seed=7,
                       reviewers=reviewers(ws.path), http=http)
    assert (res.created, res.gold, res.already) == (69, 9, 0)  # 23 items x 3 annotators
    # re-pushing creates nothing new, gold included
    again_gold = draw_gold(ws, "pandalm", 3, project=PROJECT, exclude=set(items), seed=2)
    again = lstasks.push(ws, ls, items, project=PROJECT, overlap=3, gold=again_gold, reviewers=reviewers(ws.path),
                         http=http)
    assert (again_gold, again.created, again.already) == ({}, 0, 20)
    copies = ws.labelstudio_repo.ls_copies_frame(PROJECT)
    mapping = dict(zip(copies["task_key"], copies["item_id"], strict=True))
    flipped = dict(zip(copies["task_key"], copies["flipped"], strict=True))
    assert 15 < sum(flipped.values()) < 54  # A/B order randomised per copy

    for k, person in enumerate(people):
        session = login(server.url, person["email"], person["password"])
        pid = res.project_ids[person["email"]]
        tasks = session.get(f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]
        assert len(tasks) == 23
        for t in tasks:
            item = mapping[t["data"]["key"]]
            label = truth[item] if k < 2 else "tie"  # reviewer2 always says tie
            shown = {"A": "B", "B": "A"}.get(label, label) if flipped[t["data"]["key"]] else label
            why = [{"from_name": "rationale", "to_name": "prompt", "type": "textarea",
                    "value": {"text": [f"reason for {item}", "  "]}}] if k == 0 else []
            r = session.post(f"/api/tasks/{t['id']}/annotations/", json={
                "result": lstasks.annotation_json(shown) + why, "lead_time": 12.5})
            assert r.status_code == 201, r.text
        session.close()

    pulled = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path), http=http)
    assert (pulled.new, pulled.problems, pulled.flagged) == (69, [], [])
    ann = ws.annotations_repo.annotations_frame()
    ls_ann = ann[ann["source"] == f"label-studio:{PROJECT}"]
    assert len(ls_ann) == 69 and ls_ann["annotation_id"].is_unique
    assert set(ls_ann["annotator"]) == {p["email"] for p in people}
    good = ls_ann[ls_ann["annotator"] != "reviewer2@example.org"]
    assert (good["label"].to_numpy() == truth.reindex(good["item_id"]).to_numpy()).all()
    assert (ls_ann["time_spent_s"] == 12.5).all()
    # reviewer0's rationale box is kept as written (blank lines dropped); the others left it empty
    mine = ls_ann["annotator"] == "reviewer0@example.org"
    assert (ls_ann.loc[mine, "rationale"] == "reason for " + ls_ann.loc[mine, "item_id"]).all()
    assert ls_ann.loc[~mine, "rationale"].isna().all()
    # a second pull brings nothing twice
    assert lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path)).new == 0

    cons = consensus_frame(ls_ann, "mv").set_index("item_id")["label"]
    assert (cons.to_numpy() == truth.reindex(cons.index).to_numpy()).all()
    rep = annotator_report(ls_ann, gold=pd_series(lstasks.gold_labels(ws, PROJECT)))
    assert rep["reviewer2@example.org"]["systematic_bias"]
    assert rep["reviewer0@example.org"]["gold_accuracy"]["estimate"] == 1.0


def pd_series(d):
    import pandas as pd

    return pd.Series(d)


def test_blindness_no_identity_leaves_judgecal(loop):
    ws, _, _, bodies, _ = loop
    assert any("/import" in b for b in bodies), "the transport saw no task import"
    sent = "\n".join(bodies)
    pushed = sorted(ws.labelstudio_repo.ls_pushed_items())
    items = ws.items_repo.items(ids=pushed)
    secrets_ = {"pandalm", "PandaLM"} | set(pushed)
    secrets_ |= {c.model for it in items for c in it.candidates if c.model}
    secrets_ |= set(ws.judgments_repo.judges())
    j = ws.judgments_repo.judgments_frame()
    secrets_ |= {r for r in j[j["item_id"].isin(pushed)]["raw"] if len(r) > 20}
    leaked = sorted(s for s in secrets_ if s and s in sent)
    assert leaked == []


def _first_tasks(ws, server, n=2):
    person = reviewers(ws.path)[0]
    session = login(server.url, person["email"], person["password"])
    pid = ws.labelstudio_repo.ls_projects(PROJECT)[person["email"]]["project_id"]
    return session, session.get(f"/api/tasks/?project={pid}&page_size={n}").json()["tasks"]


def test_bad_annotations_are_reported_and_skipped(loop):
    ws, server, ls, _, _ = loop
    session, tasks = _first_tasks(ws, server)
    tid = tasks[0]["id"]
    for result, cancelled in (([{"from_name": "preference", "to_name": "prompt", "type": "choices",
                                 "value": {"choices": ["C better"]}}], False),
                              ([{"from_name": "sentiment", "to_name": "prompt", "type": "choices",
                                 "value": {"choices": ["A better"]}}], False),
                              ([*lstasks.annotation_json("A"), {"from_name": "rationale", "to_name": "prompt",
                                "type": "textarea", "value": {"text": [{"nested": 1}]}}], False),
                              (lstasks.annotation_json("A"), True)):
        r = session.post(f"/api/tasks/{tid}/annotations/", json={"result": result, "was_cancelled": cancelled})
        assert r.status_code == 201, r.text
    before = len(ws.annotations_repo.annotations_frame())
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.new, res.cancelled) == (0, 1)
    msgs = " | ".join(res.problems)
    assert "not in the labeling config" in msgs and "unknown field 'sentiment'" in msgs and "cancelled" in msgs
    assert "the rationale is not text" in msgs
    assert len(ws.annotations_repo.annotations_frame()) == before
    status = ws.labelstudio_repo.ls_labels_frame(PROJECT)["status"].value_counts()
    assert (status["rejected"], status["cancelled"]) == (3, 1)


def test_pull_while_the_server_is_down(loop):
    ws, server, ls, _, _ = loop
    session, tasks = _first_tasks(ws, server)
    first = _own_annotation(ws, session, tasks[1])
    r = session.post(f"/api/tasks/{tasks[1]['id']}/annotations/", json={"result": first["result"]})
    assert r.status_code == 201
    new_id = f"ls:{tasks[1]['project']}:{r.json()['id']}"
    before = ws.annotations_repo.annotations_frame()
    server.stop()
    with pytest.raises(LabelStudioError, match="cannot reach Label Studio"):
        lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert ws.annotations_repo.annotations_frame().equals(before)
    server.start()
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert res.new == 1
    # the annotator's second annotation of that task gives the same label: one label, counted as a duplicate
    assert (res.duplicates, res.conflicts, res.problems) == (1, 0, [])
    after = ws.annotations_repo.annotations_frame()
    assert new_id not in set(after["annotation_id"]) and after.equals(before)
    assert lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path)).new == 0


def _own_annotation(ws, session, task):
    """The annotator's annotation of ``task`` that the first pull took (read back from the server)."""
    rows = ws.labelstudio_repo.ls_labels_frame(PROJECT)
    aid = rows[(rows["task_key"] == task["data"]["key"]) & (rows["status"] == "ok")]["annotation_id"].iloc[0]
    r = session.get(f"/api/annotations/{int(aid)}/")
    assert r.status_code == 200, r.text
    return r.json()


def test_a_person_annotating_a_task_twice_with_another_label(loop):
    """Two annotations by one person on one task that disagree: neither is counted (not the last one taken),
    the pull says so, each pull says so again until the person makes them agree; then one label counts."""
    ws, server, ls, _, _ = loop
    session, tasks = _first_tasks(ws, server, n=3)
    task = tasks[2]
    first = _own_annotation(ws, session, task)
    item = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id").loc[first["id"], "item_id"]
    who = "reviewer0@example.org"
    mine = lambda: ws.annotations_repo.annotations_frame()[lambda d: (d["item_id"] == item) & (d["annotator"] == who)  # noqa: E731
                                          & (d["source"] == f"label-studio:{PROJECT}")]
    was = mine()["label"].tolist()
    assert len(was) == 1
    given = {c for r in first["result"] for c in r["value"].get("choices", [])}  # the server adds ids to each
    shown = next(c for c in ("A", "B", "tie")
                 if not given & set(lstasks.annotation_json(c)[0]["value"]["choices"]))
    r = session.post(f"/api/tasks/{task['id']}/annotations/", json={"result": lstasks.annotation_json(shown)})
    assert r.status_code == 201, r.text
    second = r.json()["id"]
    for _ in range(2):  # reported on every pull while they disagree, and nothing of either counted
        res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
        assert res.conflicts == 1 and res.new == 0, res
        assert any(f"{who} labels item {item!r}" in p and f":{first['id']}" in p and f":{second}" in p
                   for p in res.problems), res.problems
        assert mine().empty
        status = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id")["status"]
        assert (status[first["id"]], status[second]) == ("rejected", "rejected")
    # the person makes the second agree with the first: one label again, the first's
    assert session.patch(f"/api/annotations/{second}/", json={"result": first["result"]}).status_code == 200
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.conflicts, res.duplicates, res.problems) == (0, 1, [])
    assert mine()["label"].tolist() == was
    assert mine()["annotation_id"].tolist() == [f"ls:{task['project']}:{first['id']}"]


def test_an_annotation_its_annotator_deletes_is_withdrawn(loop):
    """The annotator deletes the only annotation of a task that an earlier pull counted: the next pull withdraws
    the label (it no longer counts anywhere), records it as deleted, says so once; a new answer on that task is
    then the person's label, with no conflict against the deleted one."""
    ws, server, ls, _, _ = loop
    session, tasks = _first_tasks(ws, server, n=4)
    task = tasks[3]
    first = _own_annotation(ws, session, task)
    ref = f"ls:{task['project']}:{first['id']}"
    assert ref in set(ws.annotations_repo.annotations_frame()["annotation_id"])
    assert session.delete(f"/api/annotations/{first['id']}/").status_code == 204
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.deleted, res.new, res.conflicts) == (1, 0, 0), res
    assert any(f"annotation {first['id']} by reviewer0@example.org" in w for w in res.withdrawn), res.withdrawn
    assert ref not in set(ws.annotations_repo.annotations_frame()["annotation_id"])
    status = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id")["status"]
    assert status[first["id"]] == "deleted"
    again = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (again.deleted, again.withdrawn) == (0, [])  # said once
    given = {c for r in first["result"] for c in r["value"].get("choices", [])}
    other = next(c for c in ("A", "B", "tie") if not given & set(lstasks.annotation_json(c)[0]["value"]["choices"]))
    r = session.post(f"/api/tasks/{task['id']}/annotations/", json={"result": lstasks.annotation_json(other)})
    assert r.status_code == 201, r.text
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.new, res.conflicts, res.deleted) == (1, 0, 0), res
    assert f"ls:{task['project']}:{r.json()['id']}" in set(ws.annotations_repo.annotations_frame()["annotation_id"])


def test_deleting_an_answer_its_repeat_stood_behind_keeps_the_repeat(loop):
    """The person answered a task twice with the same label (counted once, the first); they delete the first: the
    second, the same label, is now their label, not lost."""
    ws, server, ls, _, _ = loop
    session, tasks = _first_tasks(ws, server, n=5)
    task = tasks[4]
    first = _own_annotation(ws, session, task)
    r = session.post(f"/api/tasks/{task['id']}/annotations/", json={"result": first["result"]})
    assert r.status_code == 201, r.text
    second = r.json()["id"]
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.duplicates, res.new) == (1, 1), res
    labels = ws.annotations_repo.annotations_frame().set_index("annotation_id")["label"]
    was = labels[f"ls:{task['project']}:{first['id']}"]
    assert session.delete(f"/api/annotations/{first['id']}/").status_code == 204
    res = lstasks.pull(ws, ls, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.deleted, res.conflicts, res.duplicates) == (1, 0, 0), res
    labels = ws.annotations_repo.annotations_frame().set_index("annotation_id")["label"]
    assert f"ls:{task['project']}:{first['id']}" not in labels.index
    assert labels[f"ls:{task['project']}:{second}"] == was


def test_annotators_says_how_many_tasks_each_person_skipped(loop, capsys):
    """``judgecal annotators`` shows each Label Studio annotator's skips (cancelled annotations, as pulled) beside
    their labels; reviewer0 skipped one task in an earlier test, the others none."""
    from judgecal.cli import main

    ws, _, _, _, _ = loop
    rows = ws.labelstudio_repo.ls_labels_frame(PROJECT)
    assert (rows["status"] == "cancelled").sum() == 1
    assert main(["annotators", "-w", str(ws.path), "--source", f"label-studio:{PROJECT}"]) == 0
    lines = {ln.split()[0]: ln for ln in capsys.readouterr().out.splitlines() if "@example.org" in ln}
    assert "skipped 1" in lines["reviewer0@example.org"], lines
    assert "skipped" not in lines["reviewer1@example.org"], lines


def test_label_config_and_guidelines_ship_in_the_package():
    assert "A better" in lstasks.label_config("pairwise") and "$response_b" in lstasks.label_config("pairwise")
    assert "<Rating" in lstasks.label_config("likert") and "<Labels" in lstasks.label_config("spans")
    assert "not told which system wrote" in lstasks.guidelines()
    assert "Both bad" in lstasks.label_config("pairwise") and lstasks.CHOICES["Both bad"] == "both_bad"
    # each config's guidelines carry its own section and the shared ones, not the others'
    assert "## Rating tasks" in lstasks.guidelines("likert") and "## Pairwise tasks" not in lstasks.guidelines("likert")
    assert "## Marking facts" not in lstasks.guidelines("pairwise") and "## Please" in lstasks.guidelines("spans")


def test_schema_2_workspace_keeps_its_label_studio_state(tmp_path):
    """An older workspace's ls_tasks/ls_pulled rows move into ls_copies/ls_projects/ls_labels on open."""
    from judgecal.data.store import Workspace

    with Workspace(tmp_path / "old") as ws:
        ws._db.conn.execute("INSERT INTO ls_tasks VALUES ('k1', 'Blind review', 7, 'item1', 1, 'A', NULL, 1.0)")
        ws._db.conn.execute("INSERT INTO ls_pulled VALUES (11, 7, '2024-01-01T00:00:00.000000Z', 'ok')")
        ws._db.conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "old") as ws:
        copies = ws.labelstudio_repo.ls_copies_frame("Blind review")
        assert copies[["task_key", "annotator", "project_id", "item_id", "flipped", "gold_label"]].values.tolist() == [
            ["k1", "", 7, "item1", 1, "A"]]
        assert ws.labelstudio_repo.ls_projects("Blind review")[""]["project_id"] == 7
        assert ws.labelstudio_repo.ls_gold("Blind review") == {"item1": "A"} and ws.labelstudio_repo.ls_seen([7]) == {(7, 11): "2024-01-01T00:00:00.000000Z"}
    json.dumps(lstasks.annotation_json("tie"))
