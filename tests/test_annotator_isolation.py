"""Independent blind review on the real managed Label Studio server, checked as the annotators.

One server for the module: alice and bob, each in an organisation of their own, review a PandaLM sample.
Each test names the finding it guards against (what Label Studio's open-source edition does when every
annotator is a member of one organisation).
"""

import os
import shutil
from pathlib import Path

import httpx
import pytest
from conftest import annotator_page, copy_workspace, free_port

from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotators, login, reviewers
from judgecal.annotation.gold import draw_gold
from judgecal.annotation.select import select
from judgecal.annotation.server import Connection, ManagedServer
from judgecal.cli import main
from judgecal.errors import InputError

PROJECT = "Blind review"


@pytest.fixture(scope="module")
def review(tmp_path_factory, pandalm_ws):
    ws_dir = tmp_path_factory.mktemp("iso") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    server = ManagedServer(ws_dir, port=free_port())
    conn = server.start()
    people = {p["email"]: p for p in create_annotators(server, ["alice@example.org", "bob@example.org"])}
    admin = lstasks.client(conn)
    items = select(ws, "random", 8, source="pandalm", seed=3)
    gold = draw_gold(ws, "pandalm", 2, project=PROJECT, exclude=set(items), seed=4)
    res = lstasks.push(ws, admin, items, project=PROJECT, overlap=1, gold=gold, gold_from="pandalm", seed=5,
                       reviewers=reviewers(ws.path))
    sessions = {e: login(server.url, e, p["password"]) for e, p in people.items()}
    # each annotates their first task, so there is someone else's work to look for
    for email, s in sessions.items():
        pid = res.project_ids[email]
        first = s.get(f"/api/tasks/?project={pid}&page_size=1").json()["tasks"][0]
        r = s.post(f"/api/tasks/{first['id']}/annotations/", json={
            "result": [*lstasks.annotation_json("A"), {"from_name": "rationale", "to_name": "prompt",
                                                        "type": "textarea", "value": {"text": [f"by {email}"]}}]})
        assert r.status_code == 201, r.text
    yield {"ws": ws, "server": server, "conn": conn, "admin": admin, "people": people, "push": res,
           "sessions": sessions, "items": items, "gold": gold}
    for s in sessions.values():
        s.close()
    server.stop()
    ws.close()


def _token_client(review, email):
    """The annotator's own API token (as they would get it from their account page)."""
    tok = review["sessions"][email].get("/api/current-user/token").json()["token"]
    return httpx.Client(base_url=review["conn"].url, headers={"Authorization": f"Token {tok}"}, timeout=30)


def _bob_work(review):
    bob = review["sessions"]["bob@example.org"]
    pid = review["push"].project_ids["bob@example.org"]
    tasks = bob.get(f"/api/tasks/?project={pid}&fields=all&page_size=100").json()["tasks"]
    done = next(t for t in tasks if t["total_annotations"])
    return pid, done["id"], done["annotations"][0]["id"], review["people"]["bob@example.org"]


def test_push_gives_each_annotator_their_own_project_and_order(review):
    res, ws = review["push"], review["ws"]
    assert len(set(res.project_ids.values())) == 2
    copies = ws.labelstudio_repo.ls_copies_frame(PROJECT)
    per = {e: g.sort_values("position")["item_id"].tolist() for e, g in copies.groupby("annotator")}
    # overlap 1: each ordinary item goes to one annotator; gold goes to both
    assert sorted(per["alice@example.org"] + per["bob@example.org"]) == sorted(review["items"] + 2 * list(review["gold"]))
    assert set(review["gold"]) <= set(per["alice@example.org"]) & set(per["bob@example.org"])
    assert (copies.groupby("annotator")["position"].apply(lambda p: sorted(p) == list(range(len(p))))).all()
    # Label Studio serves each annotator their recorded order
    for email, s in review["sessions"].items():
        pid = res.project_ids[email]
        shown = [t["data"]["key"] for t in s.get(f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]]
        mine = copies[copies["annotator"] == email].sort_values("position")["task_key"].tolist()
        assert shown == mine


def test_finding_same_task_order_for_everyone(review, tmp_path):
    """Every annotator used to receive tasks in one order: now each order is drawn per annotator."""
    ws2 = copy_workspace(review["ws"], tmp_path / "ws2")
    try:
        ws2._db.conn.execute("DELETE FROM ls_copies")
        ws2._db.conn.execute("DELETE FROM ls_projects")
        res = lstasks.push(ws2, review["admin"], review["items"], project="Order check", overlap=2, seed=11,
                           reviewers=reviewers(review["ws"].path))
        copies = ws2.labelstudio_repo.ls_copies_frame("Order check")
        orders = [g.sort_values("position")["item_id"].tolist() for _, g in copies.groupby("annotator")]
        assert sorted(orders[0]) == sorted(orders[1]) == sorted(review["items"])
        assert orders[0] != orders[1]
        assert set(ws2.labelstudio_repo.ls_projects("Order check")[e]["seed"] for e in res.project_ids) == {11}
    finally:
        ws2.close()


def test_annotator_api_sees_nothing_of_another_annotator(review):
    """As alice (her token and her session): bob's project, tasks, annotations, user and membership stay hidden."""
    bpid, btask, bann, bob = _bob_work(review)
    alice_pid = review["push"].project_ids["alice@example.org"]
    for c in (_token_client(review, "alice@example.org"), review["sessions"]["alice@example.org"]):
        projects = c.get("/api/projects/").json()["results"]
        ids = {p["id"] for p in projects}
        assert alice_pid in ids and bpid not in ids
        # every project she can list is in her own organisation (the order test added a second one there)
        assert {p["organization"] for p in projects} == {review["people"]["alice@example.org"]["org_id"]}
        for path in (f"/api/projects/{bpid}/", f"/api/tasks/?project={bpid}", f"/api/tasks/{btask}/",
                     f"/api/annotations/{bann}/", f"/api/tasks/{btask}/annotations/",
                     f"/api/projects/{bpid}/export?exportType=JSON", f"/api/projects/{bpid}/next",
                     f"/api/organizations/{bob['org_id']}/memberships", f"/api/users/{bob['user_id']}/"):
            r = c.get(path)
            assert r.status_code in (403, 404), (path, r.status_code)
            assert "bob@example.org" not in r.text
        users = c.get("/api/users/").json()
        me = c.get("/api/current-user/whoami").json()
        members = c.get(f"/api/organizations/{me['active_organization']}/memberships").json()["results"]
        seen = {u["email"] for u in users} | {m["user"]["email"] for m in members}
        assert "bob@example.org" not in seen and "alice@example.org" in seen
        assert all(e == "alice@example.org" or e.endswith("@judgecal.local") for e in seen)
        # her own tasks carry only her own annotations
        for t in c.get(f"/api/tasks/?project={alice_pid}&fields=all&page_size=100").json()["tasks"]:
            assert {a["completed_by"] for a in t["annotations"]} <= {me["id"]}


def test_annotator_cannot_change_anything_but_their_own_annotations(review):
    """Findings: PATCH of another's annotation answered 200; Settings -> Delete project worked."""
    bpid, _, bann, bob = _bob_work(review)
    alice = review["sessions"]["alice@example.org"]
    apid = review["push"].project_ids["alice@example.org"]
    me = alice.get("/api/current-user/whoami").json()
    for c in (_token_client(review, "alice@example.org"), alice):
        refused = {
            "PATCH bob's annotation": c.patch(f"/api/annotations/{bann}/", json={"result": []}),
            "DELETE bob's annotation": c.delete(f"/api/annotations/{bann}/"),
            "DELETE own project": c.delete(f"/api/projects/{apid}/"),
            "DELETE bob's project": c.delete(f"/api/projects/{bpid}/"),
            "PATCH own project settings": c.patch(f"/api/projects/{apid}/", json={"title": "mine now"}),
            "POST a project": c.post("/api/projects/", json={"title": "new"}),
            "DELETE a task": c.delete(f"/api/tasks/{c.get(f'/api/tasks/?project={apid}').json()['tasks'][0]['id']}/"),
            "join bob's organisation": c.patch(f"/api/users/{me['id']}/", json={"active_organization": bob["org_id"]}),
            "PATCH bob's user": c.patch(f"/api/users/{bob['user_id']}/", json={"first_name": "x"}),
        }
        assert {k: r.status_code for k, r in refused.items() if r.status_code not in (403, 404)} == {}
    # bob's annotation is untouched and alice's own work stays editable
    b = review["sessions"]["bob@example.org"].get(f"/api/annotations/{bann}/").json()
    assert b["result"][0]["value"]["choices"] == ["A better"]
    own = alice.get(f"/api/tasks/?project={apid}&fields=all&page_size=100").json()["tasks"]
    aid = next(t for t in own if t["total_annotations"])["annotations"][0]["id"]
    assert alice.patch(f"/api/annotations/{aid}/", json={"result": lstasks.annotation_json("B")}).status_code == 200
    assert apid in {p["id"] for p in alice.get("/api/projects/").json()["results"]}


def test_guidelines_are_html_for_the_pairwise_config_only(review):
    """Findings: markdown shown literally; the pairwise project showed the rating and span sections."""
    pid = review["push"].project_ids["alice@example.org"]
    p = review["sessions"]["alice@example.org"].get(f"/api/projects/{pid}/").json()
    html = p["expert_instruction"]
    assert "<h2>Pairwise tasks</h2>" in html and "<strong>Both bad</strong>" in html
    assert "**" not in html and "\n## " not in html
    assert "Rating tasks" not in html and "Marking facts" not in html
    assert "Both bad" in p["label_config"]
    assert lstasks.markdown_html("<script>alert(1)</script> & **b**") == \
        "<p>&lt;script&gt;alert(1)&lt;/script&gt; &amp; <strong>b</strong></p>\n"


def test_pull_flags_a_change_by_anyone_else_and_does_not_count_it(review):
    """Findings: a PATCH by someone else was credited to the original annotator; then, to whoever changed it,
    who was counted as another expert. A label changed by anyone but the project's annotator is not theirs:
    it is reported and left out of aggregation."""
    ws, admin = review["ws"], review["admin"]
    first = lstasks.pull(ws, admin, project=PROJECT, reviewers=reviewers(ws.path))
    assert first.flagged == [] and first.new >= 2
    _, btask, bann, bob = _bob_work(review)
    svc = lstasks.client(Connection(review["conn"].url, bob["service_token"]))
    svc.annotations.update(id=bann, result=lstasks.annotation_json("tie"))
    res = lstasks.pull(ws, admin, project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.new, res.updated) == (0, 0) and len(res.flagged) == 1 and bob["service_email"] in res.flagged[0]
    assert "made by bob@example.org" in res.flagged[0] and "not counted" in res.flagged[0]
    ann = ws.annotations_repo.annotations_frame()
    # counted neither as bob's (he did not make this label) nor as the service account's
    assert f"ls:{review['push'].project_ids['bob@example.org']}:{bann}" not in set(ann["annotation_id"])
    assert bob["service_email"] not in set(ann["annotator"])
    lab = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id").loc[bann]
    assert (lab["status"], lab["completed_by"], lab["updated_by"]) == ("flagged", "bob@example.org", bob["service_email"])


def test_cancelled_only_task_is_reported_and_both_bad_kept(review):
    """Finding: a task whose only annotation was cancelled was not reported."""
    ws, admin = review["ws"], review["admin"]
    alice = review["sessions"]["alice@example.org"]
    pid = review["push"].project_ids["alice@example.org"]
    todo = [t for t in alice.get(f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]
            if not t["total_annotations"]]
    r = alice.post(f"/api/tasks/{todo[0]['id']}/annotations/", json={"result": [], "was_cancelled": True})
    assert r.status_code == 201
    r = alice.post(f"/api/tasks/{todo[1]['id']}/annotations/", json={"result": lstasks.annotation_json("both_bad")})
    assert r.status_code == 201
    res = lstasks.pull(ws, admin, project=PROJECT, reviewers=reviewers(ws.path))
    assert res.cancelled == 1 and any("cancelled" in p and "alice@example.org" in p for p in res.problems)
    labels = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id")
    assert labels.loc[r.json()["id"], "choice"] == "both_bad"
    ann = ws.annotations_repo.annotations_frame()
    assert ann[ann["annotation_id"] == f"ls:{pid}:{r.json()['id']}"]["label"].tolist() == ["tie"]


def test_gold_needs_a_named_source_and_is_pushed_once(review, capsys):
    """Findings: --gold without --gold-from took one annotator's labels; a repeated push added new gold."""
    ws = review["ws"]
    with pytest.raises(InputError, match="gold items need a source"):
        draw_gold(ws, None, 2, project=PROJECT)
    assert draw_gold(ws, "pandalm", 2, project=PROJECT, exclude=set(review["items"]), seed=4) == {}
    before = len(ws.labelstudio_repo.ls_copies_frame(PROJECT))
    argv = ["annotate", "push", "--workspace", str(ws.path), "--port", str(review["server"].port),
            "--budget", "8", "--source", "pandalm", "--seed", "3", "--overlap", "1", "--gold", "2"]
    assert main(argv) == 2
    assert "judgecal annotate: --gold-from: gold items need a source" in capsys.readouterr().err
    assert main([*argv, "--gold-from", "pandalm"]) == 0
    assert "0 new tasks (0 gold)" in capsys.readouterr().out
    assert len(ws.labelstudio_repo.ls_copies_frame(PROJECT)) == before
    # a seeded draw from a stored consensus, never the first items
    from judgecal.aggregate.consensus import compute_consensus

    compute_consensus(ws, ("mv",))
    drawn = draw_gold(ws, "consensus:mv", 3, project="Other", seed=1)
    assert drawn == draw_gold(ws, "consensus:mv", 3, project="Other", seed=1) != draw_gold(
        ws, "consensus:mv", 3, project="Other", seed=2)


def test_overlap_change_is_applied_or_refused(review):
    """Finding: a push with another --overlap was silently ignored."""
    ws, admin, items = review["ws"], review["admin"], review["items"]
    same = lstasks.push(ws, admin, items, project=PROJECT, overlap=1, seed=5, reviewers=reviewers(ws.path))
    assert (same.created, same.messages) == (0, [])
    res = lstasks.push(ws, admin, items, project=PROJECT, overlap=2, seed=5, reviewers=reviewers(ws.path))
    assert res.created == len(items) and "raised from 1 to 2" in res.messages[0]
    copies = ws.labelstudio_repo.ls_copies_frame(PROJECT)
    assert (copies[copies["item_id"].isin(items)].groupby("item_id").size() == 2).all()
    with pytest.raises(InputError, match="was pushed with overlap 2; lowering it to 1"):
        lstasks.push(ws, admin, items, project=PROJECT, overlap=1, seed=5, reviewers=reviewers(ws.path))


def test_annotate_check_and_external_server_refusal(review, capsys, monkeypatch):
    """`annotate check` tries, as each annotator, the writes into the other's work and reports the managed
    server as independent only when all were refused; an external server without annotator logins is "not
    checked" (exit 1); one whose organisation holds several annotators is refused unless
    --allow-shared-visibility."""
    import json

    ws, conn, server = review["ws"], review["conn"], review["server"]
    base = ["--workspace", str(ws.path), "--port", str(server.port)]
    before = {e: _state(review, e) for e in review["people"]}
    assert main(["annotate", "check", *base]) == 0
    out = capsys.readouterr().out
    rep = json.loads(out)
    assert rep["independent"] is True and rep["reasons"] == [] and rep["not_checked"] == []
    for me, them in PAIRS:
        r = rep["annotators"][me]
        assert (r["others_annotations_visible"], r["can_change_project_settings"]) == (0, False)
        assert r["writes"] == {
            f"read {them}'s drafts": "refused", f"add a draft to {them}'s task": "refused",
            f"read {them}'s annotation": "refused", f"change {them}'s annotation": "refused",
            f"delete {them}'s annotation": "refused",
            f"add a tab to {them}'s project": "refused", f"post an annotation credited to {them}": "refused",
            "annotate their own task": "ok", f"re-credit their annotation to {them}": "refused",
            f"mark their annotation as changed by {them}": "refused",
            f"move their annotation into {them}'s project": "refused",
            f"move a product-tour record onto {them}": "refused", "write a 100 KB product-tour record": "refused",
            "set an annotation's unique_id": "refused (the field was ignored)",
            **{f"tell whether {them}'s project exists (id written {form})": "refused"
               for form in ("+N", "' N'", "'N '", "N.0", "in Arabic-Indic digits")}}
    # the check's own task and annotations are gone again
    assert {e: _state(review, e) for e in review["people"]} == before
    # an external server, asked without annotator logins: nothing was tried, so nothing is claimed
    monkeypatch.setenv("JUDGECAL_LS_URL", conn.url)
    monkeypatch.setenv("JUDGECAL_LS_TOKEN", conn.token)
    assert main(["annotate", "check", *base]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["independent"] == "not checked" and '"independent": true' not in captured.out
    assert "not checked: no annotator logins" in captured.err
    monkeypatch.delenv("JUDGECAL_LS_URL")
    monkeypatch.delenv("JUDGECAL_LS_TOKEN")
    # the organiser's own organisation, as an external server in the open-source edition would have it
    org = review["admin"].users.whoami().active_organization
    for k in range(2):
        review["admin"].users.create(username=f"shared{k}@example.org", email=f"shared{k}@example.org",
                                     active_organization=org)
    monkeypatch.setenv("JUDGECAL_LS_URL", conn.url)
    monkeypatch.setenv("JUDGECAL_LS_TOKEN", conn.token)
    push = ["annotate", "push", *base, "--project", "Shared", "--budget", "3", "--source", "pandalm"]
    assert main(push) == 2
    err = capsys.readouterr().err
    assert "labels would not be independent" in err and "shared0@example.org" in err
    assert main(["annotate", "check", *base]) == 1
    assert main([*push, "--allow-shared-visibility"]) == 0
    assert "3 new tasks" in capsys.readouterr().out
    assert set(ws.labelstudio_repo.ls_projects("Shared")) == {""}
    # asked as an annotator of that shared organisation, check sees the other's label and name
    sessions = {}
    for k in range(2):
        email = f"shared{k}@example.org"
        assert server.manage("reset_password", "--username", email, "--password", "pw-shared-123").returncode == 0
        sessions[k] = login(conn.url, email, "pw-shared-123")
    pid = ws.labelstudio_repo.ls_projects("Shared")[""]["project_id"]
    task = sessions[0].get(f"/api/tasks/?project={pid}&page_size=1").json()["tasks"][0]
    assert sessions[0].post(f"/api/tasks/{task['id']}/annotations/",
                            json={"result": lstasks.annotation_json("A")}).status_code == 201
    monkeypatch.setenv("JUDGECAL_LS_ANNOTATOR_TOKENS", sessions[1].get("/api/current-user/token").json()["token"])
    capsys.readouterr()
    assert main(["annotate", "check", *base]) == 1
    out = capsys.readouterr().out
    assert "shared1@example.org sees 1 annotation(s) by others" in out
    assert "shared1@example.org sees other people: shared0@example.org" in out
    rep = json.loads(out)
    assert rep["independent"] is False
    assert rep["annotators"]["shared1@example.org"]["writes"].startswith("not checked")
    for c in sessions.values():
        c.close()


def test_browser_as_annotator(review):
    """alice in Chromium: only her project, formatted guidelines, the pairwise controls with "Both bad",
    no tab of bob's; she labels a task and submits it."""
    out = Path(os.environ.get("JUDGECAL_TEST_ARTIFACTS") or review["ws"].path / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    url, alice = review["conn"].url, review["people"]["alice@example.org"]
    pid = review["push"].project_ids["alice@example.org"]
    before = {t["id"]: t["total_annotations"] for t in review["sessions"]["alice@example.org"].get(
        f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]}
    with annotator_page(url, alice) as page:
        page.goto(f"{url}/")  # the home page: her project, without "Create Project" and "Invite Members"
        page.get_by_text("Recent Projects").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out / "0-home.png"))
        for refused in ("Create Project", "Invite Members"):
            found = page.get_by_text(refused, exact=True)
            assert found.count() >= 1 and all(not b.is_visible() for b in found.all()), refused
        page.goto(f"{url}/projects/")
        page.get_by_text(PROJECT).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out / "1-projects.png"))
        # controls the server would refuse her are not shown: no "Create", no project menu
        assert page.locator("#judgecal-annotator").count() == 1
        assert page.locator('button[aria-label="Create new project"]').first.is_hidden()
        assert page.locator('button[aria-label="Project options"]').first.is_hidden()
        hrefs = {a.get_attribute("href") for a in page.locator("a[href^='/projects/'][href$='/data']").all()}
        assert f"/projects/{pid}/data" in hrefs
        assert f"/projects/{review['push'].project_ids['bob@example.org']}/data" not in hrefs
        # the label stream opens with the guidelines, as formatted text, the pairwise section only
        page.goto(f"{url}/projects/{pid}/data?labeling=1")
        page.locator("h2", has_text="Pairwise tasks").first.wait_for(timeout=90_000)
        assert page.locator("strong", has_text="Both bad").count() >= 1
        assert page.locator("h2", has_text="Rating tasks").count() == 0 and "**Both bad**" not in page.content()
        page.screenshot(path=str(out / "2-guidelines.png"))
        page.keyboard.press("Escape")
        both_bad = page.locator("label", has_text="Both bad").first
        both_bad.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out / "3-task.png"))
        settings = page.locator(f'a[href="/projects/{pid}/settings"]')
        assert settings.count() >= 1 and all(not a.is_visible() for a in settings.all())
        assert page.get_by_role("button", name="Instructions").first.is_visible()  # what she needs stays
        for choice in ("A better", "B better", "Tie", "Both bad"):
            assert page.locator("label", has_text=choice).count() >= 1
        body = page.content()
        assert "bob@example.org" not in body and "Rating" not in body
        both_bad.click()
        page.get_by_role("button", name="Submit").first.click()
        page.wait_for_timeout(3000)
        page.screenshot(path=str(out / "4-submitted.png"))
    after = {t["id"]: t for t in review["sessions"]["alice@example.org"].get(
        f"/api/tasks/?project={pid}&fields=all&page_size=100").json()["tasks"]}
    done = [t for i, t in after.items() if t["total_annotations"] > before.get(i, 0)]
    assert len(done) == 1
    assert done[0]["annotations"][-1]["result"][0]["value"]["choices"] == ["Both bad"]


# -- writes into another annotator's work (issue: drafts, tabs, moved and re-credited annotations) --------

PAIRS = [("alice@example.org", "bob@example.org"), ("bob@example.org", "alice@example.org")]
RATIONALE = [{"from_name": "rationale", "to_name": "prompt", "type": "textarea", "value": {"text": ["mine"]}}]


@pytest.fixture(scope="module")
def planted(review):
    """Each annotator's own work to attack: an annotation, a draft and a tab, on tasks of their own (the last
    two in their order, which no other test labels)."""
    out = {}
    for email, s in review["sessions"].items():
        pid = review["push"].project_ids[email]
        tasks = s.get(f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]
        drafted, annotated = tasks[-1]["id"], tasks[-2]["id"]
        draft = s.post(f"/api/tasks/{drafted}/drafts", json={"result": lstasks.annotation_json("B"), "lead_time": 2})
        ann = s.post(f"/api/tasks/{annotated}/annotations/", json={"result": lstasks.annotation_json("A")})
        view = s.post("/api/dm/views/", json={"project": pid, "data": {"title": f"tab of {email}"}})
        assert (draft.status_code, ann.status_code, view.status_code) == (201, 201, 201), (draft.text, view.text)
        out[email] = {"pid": pid, "task": drafted, "annotated": annotated, "draft": draft.json()["id"],
                      "annotation": ann.json()["id"], "view": view.json()["id"],
                      "user_id": review["people"][email]["user_id"]}
    return out


def _state(review, email):
    """Everything of ``email``'s project that an attack could change, read by their service account."""
    person = review["people"][email]
    with httpx.Client(base_url=review["conn"].url, timeout=30,
                      headers={"Authorization": f"Token {person['service_token']}"}) as svc:
        pid = review["push"].project_ids[email]
        tasks = svc.get(f"/api/tasks/?project={pid}&fields=all&page_size=100").json()["tasks"]
        anns = sorted((a["id"], t["id"], a["completed_by"], a.get("updated_by"), a["project"])
                      for t in tasks for a in t["annotations"])
        drafts = sorted((d["id"], d["task"], d["user"]) for t in tasks
                        for d in svc.get(f"/api/tasks/{t['id']}/drafts").json())
        views = sorted((v["id"], v["project"]) for v in svc.get(f"/api/dm/views/?project={pid}").json())
    return {"annotations": anns, "drafts": drafts, "views": views}


def _attacks(mine, theirs):
    """The requests of the issue's table and their variants: name -> (method, path, JSON body or form)."""
    them = theirs["user_id"]
    choice = lstasks.annotation_json("A")
    return {
        # the table
        "read their task's drafts": ("GET", f"/api/tasks/{theirs['task']}/drafts", None),
        "draft on their task": ("POST", f"/api/tasks/{theirs['task']}/drafts", {"result": choice, "lead_time": 1}),
        "tab in their project": ("POST", "/api/dm/views/", {"project": theirs["pid"], "data": {"title": "x"}}),
        "move my annotation to their task": ("PATCH", f"/api/annotations/{mine['annotation']}/",
                                             {"task": theirs["task"]}),
        "re-credit my annotation to them": ("PATCH", f"/api/annotations/{mine['annotation']}/",
                                            {"completed_by": them}),
        "new annotation credited to them": ("POST", f"/api/tasks/{mine['task']}/annotations/",
                                            {"result": choice, "completed_by": them}),
        # the same ends by other fields and routes
        "read their draft": ("GET", f"/api/drafts/{theirs['draft']}/", None),
        "move my annotation to their project": ("PATCH", f"/api/annotations/{mine['annotation']}/",
                                                {"project": theirs["pid"]}),
        "mark my annotation changed by them": ("PATCH", f"/api/annotations/{mine['annotation']}/",
                                               {"updated_by": them}),
        "PUT my annotation to their task": ("PUT", f"/api/annotations/{mine['annotation']}/",
                                            {"result": choice, "task": theirs["task"]}),
        "move my annotation by a form": ("PATCH-FORM", f"/api/annotations/{mine['annotation']}/",
                                         {"task": str(theirs["task"])}),
        "mark my annotation as ground truth": ("PATCH", f"/api/annotations/{mine['annotation']}/",
                                               {"ground_truth": True}),
        "annotation on their task": ("POST", f"/api/tasks/{theirs['task']}/annotations/", {"result": choice}),
        "annotation consuming their draft": ("POST", f"/api/tasks/{mine['task']}/annotations/",
                                             {"result": choice, "draft_id": theirs["draft"]}),
        "my draft pointed at their task": ("POST", f"/api/tasks/{mine['task']}/drafts",
                                           {"result": choice, "task": theirs["task"]}),
        "move my draft to their task": ("PATCH", f"/api/drafts/{mine['draft']}/", {"task": theirs["task"]}),
        "give my draft to them": ("PATCH", f"/api/drafts/{mine['draft']}/", {"user": them}),
        "change their draft": ("PATCH", f"/api/drafts/{theirs['draft']}/", {"result": []}),
        "delete their draft": ("DELETE", f"/api/drafts/{theirs['draft']}/", None),
        "move my tab to their project": ("PATCH", f"/api/dm/views/{mine['view']}/", {"project": theirs["pid"]}),
        "change their tab": ("PATCH", f"/api/dm/views/{theirs['view']}/", {"data": {"title": "y"}}),
        "delete their tab": ("DELETE", f"/api/dm/views/{theirs['view']}/", None),
        "reset their tabs": ("DELETE", f"/api/dm/views/reset/?project={theirs['pid']}", None),
        "their next task": ("POST", f"/api/dm/actions/?id=next_task&project={theirs['pid']}", None),
        "their uploaded file": ("GET", f"/data/upload/{theirs['pid']}/x.txt", None),
        "their uploaded file (HEAD)": ("HEAD", f"/data/upload/{theirs['pid']}/x.txt", None),
        "an uploaded file that does not exist": ("GET", f"/data/upload/{mine['pid']}/nothing.txt", None),
    }


def _send(c, method, path, body):
    if method == "PATCH-FORM":
        return c.patch(path, data=body)
    return c.request(method, path, json=body) if body is not None else c.request(method, path)


@pytest.mark.parametrize("kind", ["session", "token"])
@pytest.mark.parametrize(("me", "them"), PAIRS)
def test_annotator_cannot_write_into_anothers_work(review, planted, me, them, kind):
    """Findings: as alice (and as bob), her drafts read and planted in bob's task, a tab in his project, her
    annotation moved into his project or credited to him all answered 200/201; a view PATCH to another project
    and /data/upload/<other project>/... answered 500. Each is now refused (403, or 404 for what is not hers)
    and changes nothing."""
    c = review["sessions"][me] if kind == "session" else _token_client(review, me)
    mine, theirs = planted[me], planted[them]
    before = {e: _state(review, e) for e in (me, them)}
    got = {name: _send(c, *req) for name, req in _attacks(mine, theirs).items()}
    assert {k: r.status_code for k, r in got.items() if r.status_code not in (403, 404)} == {}
    assert all(them not in r.text for r in got.values())
    # what the server said names the refused field, for the annotator who tried
    assert "'task'" in got["move my annotation to their task"].json()["detail"]
    assert "'completed_by'" in got["new annotation credited to them"].json()["detail"]
    assert {e: _state(review, e) for e in (me, them)} == before
    # her own work stays hers to change
    own = {
        "draft": c.patch(f"/api/drafts/{mine['draft']}/", json={"result": lstasks.annotation_json("tie"),
                                                                 "lead_time": 3}),
        "tab": c.patch(f"/api/dm/views/{mine['view']}/", json={"project": mine["pid"], "data": {
            "title": f"tab of {me}", "hiddenColumns": {"explore": ["tasks:inner_id"]}}}),
        "annotation": c.patch(f"/api/annotations/{mine['annotation']}/",
                              json={"result": lstasks.annotation_json("A"), "lead_time": 4.0}),
        "next task": c.post(f"/api/dm/actions/?id=next_task&project={mine['pid']}"),
    }
    assert {k: r.status_code for k, r in own.items()} == {"draft": 200, "tab": 200, "annotation": 200,
                                                           "next task": 200}
    assert own["annotation"].json()["completed_by"] == mine["user_id"]


def test_pull_counts_only_the_projects_annotator(review, planted):
    """Finding: an annotation credited to someone else in bob's project was counted as a third expert,
    named "user-2". Now it is reported with who made it, by email, and never enters aggregation."""
    ws, admin = review["ws"], review["admin"]
    lstasks.pull(ws, admin, project=PROJECT, reviewers=reviewers(ws.path))
    bob, alice = review["people"]["bob@example.org"], review["people"]["alice@example.org"]
    bpid, aid = planted["bob@example.org"]["pid"], planted["bob@example.org"]["annotation"]
    ref = f"ls:{bpid}:{aid}"
    assert ws.annotations_repo.annotations_frame().set_index("annotation_id").loc[ref, "annotator"] == "bob@example.org"
    # only an account that may write anything can still do this: bob's service account re-credits it to alice
    with httpx.Client(base_url=review["conn"].url, headers={"Authorization": f"Token {bob['service_token']}"},
                      timeout=30) as svc:
        assert svc.patch(f"/api/annotations/{aid}/", json={"completed_by": alice["user_id"]}).status_code == 200
    res = lstasks.pull(ws, admin, project=PROJECT, reviewers=reviewers(ws.path))
    mine = [f for f in res.flagged if f.startswith(f"annotation {aid} ")]
    assert len(mine) == 1 and "made by alice@example.org" in mine[0] and bob["service_email"] in mine[0]
    assert "the project of bob@example.org" in mine[0] and "not counted" in mine[0]
    assert all("user-" not in f and "unknown user" not in f for f in res.flagged)
    ann = ws.annotations_repo.annotations_frame()
    assert ref not in set(ann["annotation_id"])  # withdrawn: it is no longer bob's label
    assert set(ann[ann["source"] == f"label-studio:{PROJECT}"]["annotator"]) <= {"alice@example.org",
                                                                                  "bob@example.org"}
    lab = ws.labelstudio_repo.ls_labels_frame(PROJECT).set_index("annotation_id").loc[aid]
    assert (lab["status"], lab["completed_by"]) == ("flagged", "alice@example.org")


_FETCH_ALL = """async (reqs) => {
  const csrf = (document.cookie.split('; ').find(c => c.startsWith('csrftoken=')) || '=').split('=')[1];
  const out = {};
  for (const [name, [method, path, body]] of Object.entries(reqs)) {
    const form = method === 'PATCH-FORM';
    const init = {method: form ? 'PATCH' : method, headers: {'X-CSRFToken': csrf}};
    if (body !== null) {
      init.headers['Content-Type'] = form ? 'application/x-www-form-urlencoded' : 'application/json';
      init.body = form ? new URLSearchParams(body).toString() : JSON.stringify(body);
    }
    const r = await fetch(path, init);
    out[name] = [r.status, await r.text()];
  }
  return out;
}"""


def _login(browser, url, person):
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{url}/user/login/")
    page.fill("input[name=email]", person["email"])
    page.fill("input[name=password]", person["password"])
    page.locator("button[type=submit], input[type=submit]").first.click()
    page.wait_for_load_state("networkidle", timeout=60_000)
    return page, errors


@pytest.mark.parametrize(("me", "them"), PAIRS)
def test_browser_attacks_are_refused_and_the_victims_page_works(review, planted, me, them):
    """In Chromium, logged in as one annotator, the page's own fetch (session cookie, CSRF token) tries every
    attack; then the other annotator's data manager and labeling page open without "Failed to resolve
    reference ... to type 'User'" (what an annotation credited to a stranger did) and show no tab or draft of
    the attacker's."""
    from playwright.sync_api import sync_playwright

    url = review["conn"].url
    mine, theirs = planted[me], planted[them]
    before = _state(review, them)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update"])
        try:
            page, _ = _login(browser, url, review["people"][me])
            page.goto(f"{url}/projects/{mine['pid']}/data")
            got = page.evaluate(_FETCH_ALL, {k: list(v) for k, v in _attacks(mine, theirs).items()})
            assert {k: s for k, (s, _) in got.items() if s not in (403, 404)} == {}
            assert all(them not in text for _, text in got.values())
            assert _state(review, them) == before
            # the victim's pages
            victim, errors = _login(browser, url, review["people"][them])
            victim.goto(f"{url}/projects/{theirs['pid']}/data")
            victim.get_by_text(f"tab of {them}").first.wait_for(timeout=60_000)
            assert victim.get_by_text("x", exact=True).count() == 0  # the attacker's tab title
            victim.goto(f"{url}/projects/{theirs['pid']}/data?task={theirs['annotated']}")
            victim.locator("label", has_text="Both bad").first.wait_for(timeout=90_000)
            victim.wait_for_timeout(1500)
            body = victim.content()
            assert "Failed to resolve reference" not in body and me not in body
            assert not [e for e in errors if "Failed to resolve reference" in e], errors
        finally:
            browser.close()


def test_empty_response_is_shown_as_a_placeholder(review):
    """Finding: an empty response (a refusal) showed as a blank panel. The annotator sees "(empty response)",
    her label on it is pulled and counted like any other."""
    from judgecal.annotation.kinds import EMPTY, task_data
    from judgecal.data.records import Candidate, Item

    ws, alice = review["ws"], review["people"]["alice@example.org"]
    item = Item("empty-response-1", "Write a haiku about rain.", [Candidate("", "m1"), Candidate("Rain on tin roofs.",
                                                                                                   "m2")])
    assert task_data("pairwise", item, "k")["response_a"] == EMPTY == "(empty response)"
    assert task_data("likert", Item("e2", "p", [Candidate(" \n")], task="pointwise"), "k")["response"] == EMPTY
    ws.items_repo.add_items([item])
    res = lstasks.push(ws, review["admin"], [item.item_id], project="Empty check", overlap=1, seed=2,
                       reviewers=[r for r in reviewers(ws.path) if r["email"] == alice["email"]])
    pid = res.project_ids[alice["email"]]
    s = review["sessions"][alice["email"]]
    task = s.get(f"/api/tasks/?project={pid}&fields=all").json()["tasks"][0]
    flipped = bool(ws.labelstudio_repo.ls_copies_frame("Empty check")["flipped"].iloc[0])
    assert task["data"]["response_b" if flipped else "response_a"] == EMPTY
    with annotator_page(review["conn"].url, alice) as page:
        page.goto(f"{review['conn'].url}/projects/{pid}/data?task={task['id']}")
        # both panels render: the placeholder and the other response (the grid behind may render them first)
        page.get_by_text(EMPTY, exact=True).filter(visible=True).first.wait_for(timeout=90_000)
        page.get_by_text("Rain on tin roofs.").filter(visible=True).first.wait_for(timeout=60_000)
    # choosing the other response over the empty one is a label like any other
    shown = "A" if flipped else "B"
    assert s.post(f"/api/tasks/{task['id']}/annotations/",
                  json={"result": lstasks.annotation_json(shown)}).status_code == 201
    pulled = lstasks.pull(ws, review["admin"], project="Empty check", reviewers=reviewers(ws.path))
    assert (pulled.new, pulled.problems, pulled.flagged) == (1, [], [])
    ann = ws.annotations_repo.annotations_frame()
    assert ann[ann["item_id"] == item.item_id]["label"].tolist() == ["B"]


def test_annotate_check_reports_each_write_that_gets_through_and_undoes_it(review, capsys):
    """If the server let alice write anything (here: she is put in judgecal's service group, which the guard
    lets through), `annotate check` names each write into bob's work that got through, exits 1, and leaves
    bob's project (and hers) as it found them."""
    import json
    import subprocess

    from judgecal.annotation.server import venv_dir

    server = review["server"]

    def service_group(op):  # Django, in Label Studio's own Python with judgecal's settings
        code = ("import os, sys, label_studio; sys.path.insert(0, os.path.dirname(label_studio.__file__)); "
                "import django; django.setup(); from django.contrib.auth.models import Group; "
                "from users.models import User; "
                f"User.objects.get(email='alice@example.org').groups.{op}(Group.objects.get(name='judgecal-service'))")
        done = subprocess.run([str(venv_dir() / "bin" / "python"), "-c", code], env=server.env(),
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr[-2000:]

    before = {e: _state(review, e) for e in review["people"]}
    service_group("add")
    try:
        code = main(["annotate", "check", "--workspace", str(review["ws"].path), "--port", str(server.port)])
    finally:
        service_group("remove")
    rep = json.loads(capsys.readouterr().out)
    assert code == 1 and rep["independent"] is False
    alice = rep["annotators"]["alice@example.org"]["writes"]
    bob = "bob@example.org"
    for what in (f"add a draft to {bob}'s task", f"add a tab to {bob}'s project", f"change {bob}'s annotation",
                 f"post an annotation credited to {bob}", f"re-credit their annotation to {bob}",
                 f"move their annotation into {bob}'s project"):
        assert alice[what].startswith("FAILED"), (what, alice[what])
        assert any(r.startswith(f"alice@example.org could {what}: ") for r in rep["reasons"])
    # bob, still guarded, got nowhere
    assert all(v == "ok" or v.startswith("refused") for v in rep["annotators"][bob]["writes"].values()), \
        rep["annotators"][bob]["writes"]
    assert {e: _state(review, e) for e in review["people"]} == before


def test_empty_response_placeholder_for_every_kind():
    """Each kind shows "(empty response)" for an empty or blank response; a span task still checks regions
    against the real (empty) text, so marking the placeholder is rejected and marking nothing is the answer."""
    from judgecal.annotation.kinds import EMPTY, Config, parse_spans, spans_json, task_data
    from judgecal.data.records import Candidate, Item

    pair = Item("p", "prompt", [Candidate("ok"), Candidate("")])
    assert (task_data("pairwise", pair, "k")["response_b"], task_data("pairwise", pair, "k", True)["response_a"]) \
        == (EMPTY, EMPTY)
    assert task_data("pairwise", pair, "k")["response_a"] == "ok"
    single = Item("s", "the article", [Candidate("\t ")], task="pointwise")
    assert task_data("likert", single, "k")["response"] == EMPTY
    assert task_data("spans", single, "k")["text"] == EMPTY
    cfg = Config("spans", "label", "text", ("Questionable",))
    _, problem = parse_spans(spans_json([(0, 6, "Questionable")], EMPTY), cfg, "")
    assert problem is not None and "is not a stretch of the text (length 0)" in problem
    assert parse_spans([], cfg, "") == ([], None)
