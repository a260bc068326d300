"""The last annotator write holes of the managed Label Studio server, tried on the real server as two annotators.

One server for the module: alice and bob, each in an organisation of their own, review a PandaLM sample (and a
two-item rating project). Each test names the finding it guards against.
"""

import json
import subprocess
import uuid

import httpx
import pytest
from conftest import copy_workspace, free_port

from judgecal.annotation import kinds
from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotators, login, reviewers
from judgecal.annotation.select import select
from judgecal.annotation.server import ManagedServer, venv_dir
from judgecal.cli import main
from judgecal.data.records import Candidate, Item

PROJECT = "Blind review"
RATING = "Rating check"
ALICE, BOB = "alice@example.org", "bob@example.org"
TOUR = "/api/current-user/product-tour?name=prompts_page"
MISSING = 2**31 - 1
ODD = {"+N": "+{}", "' N'": " {}", "'N '": "{} ", "N.0": "{}.0"}
ARABIC = str.maketrans("0123456789", "\u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669")


@pytest.fixture(scope="module")
def ls(tmp_path_factory, pandalm_ws):
    from judgecal.judges.rubric import load_rubric

    ws_dir = tmp_path_factory.mktemp("holes") / "ws"
    ws = copy_workspace(pandalm_ws, ws_dir)
    server = ManagedServer(ws_dir, port=free_port())
    conn = server.start()
    people = {p["email"]: p for p in create_annotators(server, [ALICE, BOB])}
    admin = lstasks.client(conn)
    res = lstasks.push(ws, admin, select(ws, "random", 6, source="pandalm", seed=3), project=PROJECT, overlap=1,
                       seed=5, reviewers=reviewers(ws.path))
    ws.items_repo.add_items([Item(f"rate-{k}", f"Explain {k}.", [Candidate(f"An answer about {k}.", "m1")], task="pointwise")
                  for k in range(2)])
    rated = lstasks.push(ws, admin, ["rate-0", "rate-1"], project=RATING, overlap=2, seed=1,
                         reviewers=reviewers(ws.path), kind="likert", rubric=load_rubric("pointwise-5"))
    sessions = {e: login(server.url, e, p["password"]) for e, p in people.items()}
    tokens = {e: httpx.Client(base_url=conn.url, timeout=30, headers={
        "Authorization": f"Token {s.get('/api/current-user/token').json()['token']}"}) for e, s in sessions.items()}
    area = {}
    for email, s in sessions.items():
        pid = res.project_ids[email]
        tasks = s.get(f"/api/tasks/?project={pid}&page_size=100").json()["tasks"]
        ann = s.post(f"/api/tasks/{tasks[0]['id']}/annotations/", json={"result": lstasks.annotation_json("A")})
        view = s.post("/api/dm/views/", json={"project": pid, "data": {"title": f"tab of {email}"}})
        assert (ann.status_code, view.status_code) == (201, 201)
        area[email] = {"pid": pid, "tasks": [t["id"] for t in tasks], "annotation": ann.json()["id"],
                       "view": view.json()["id"], "user_id": people[email]["user_id"],
                       "rating_pid": rated.project_ids[email]}
    yield {"ws": ws, "server": server, "conn": conn, "admin": admin, "people": people, "sessions": sessions,
           "tokens": tokens, "area": area}
    for c in [*sessions.values(), *tokens.values()]:
        c.close()
    server.stop()
    ws.close()


def _django(ls, code):
    """Run ``code`` in Label Studio's own Python with judgecal's settings; its stdout."""
    setup = ("import os, sys, label_studio; sys.path.insert(0, os.path.dirname(label_studio.__file__)); "
             "import django; django.setup(); ")
    done = subprocess.run([str(venv_dir() / "bin" / "python"), "-c", setup + code], env=ls["server"].env(),
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def _unique_id(ls, annotation):
    return _django(ls, f"from tasks.models import Annotation; print(Annotation.objects.get(pk={annotation}).unique_id)")


@pytest.mark.parametrize("kind", ["sessions", "tokens"])
def test_product_tour_writes_only_its_state_onto_the_requesters_own_record(ls, kind):
    """Finding: PATCH /api/current-user/product-tour with {"user": <bob>} moved alice's record onto bob (any user,
    unbounded JSON, logged nowhere). A body may set only ``state`` and ``interaction_data``, bounded; anything
    else is refused (403 naming the field, logged), so no record can be written onto another user."""
    alice, bob = ls[kind][ALICE], ls[kind][BOB]
    mine = alice.get(TOUR).json()
    theirs_before = bob.get(TOUR).json()
    r = alice.patch(TOUR, json={"user": ls["area"][BOB]["user_id"], "state": "completed"})
    assert r.status_code == 403 and "'user'" in r.json()["detail"]
    r = alice.patch(TOUR, json={"state": "ready", "interaction_data": {"additional_data": {"x": "x" * 100_000}}})
    assert r.status_code == 403 and "limit" in r.json()["detail"]
    # alice's record is still hers (a moved one would be re-created with a new id), bob's unchanged
    assert alice.get(TOUR).json()["id"] == mine["id"]
    after = bob.get(TOUR).json()
    assert (after["id"], after["state"], after["interaction_data"]) == (
        theirs_before["id"], theirs_before["state"], theirs_before["interaction_data"])
    assert _django(ls, "from users.product_tours.models import UserProductTour as T; "
                       f"print(T.objects.filter(pk={mine['id']}).values_list('user_id', flat=True).first())") \
        == str(ls["area"][ALICE]["user_id"])
    # what the page's tour sends still works
    ok = alice.patch(TOUR, json={"state": "completed", "interaction_data": {"index": 2, "action": "next"}})
    assert ok.status_code == 200, ok.text
    assert (ok.json()["state"], ok.json()["interaction_data"]["index"]) == ("completed", 2)


def test_unique_id_is_the_servers(ls):
    """Finding: an annotator could set an annotation's unique_id (200); a taken one answered 409, confirming it
    exists; a malformed one 500. Now it is dropped unless it is the id of the annotator's own lock on the task
    (what the labeling page sends): bob's taken id, a fresh one and a malformed one all create an annotation with
    an id of the server's, and a PATCH cannot change it."""
    alice, area = ls["sessions"][ALICE], ls["area"][ALICE]
    task = area["tasks"][1]
    bobs = _unique_id(ls, ls["area"][BOB]["annotation"])
    made = []
    for value in (bobs, bobs, str(uuid.uuid4()), "not-a-uuid"):
        r = alice.post(f"/api/tasks/{task}/annotations/", json={"result": lstasks.annotation_json("B"),
                                                                 "unique_id": value})
        assert r.status_code == 201, (value, r.status_code, r.text[:200])
        made.append(r.json()["id"])
        assert _unique_id(ls, made[-1]) not in (value, bobs)
    before = _unique_id(ls, area["annotation"])
    assert alice.patch(f"/api/annotations/{area['annotation']}/", json={"unique_id": bobs}).status_code == 200
    assert _unique_id(ls, area["annotation"]) == before
    for aid in made:
        assert alice.delete(f"/api/annotations/{aid}/").status_code == 204


def _odd(form, n):
    return str(n).translate(ARABIC) if form == "Arabic-Indic" else ODD[form].format(n)


@pytest.mark.parametrize("form", [*ODD, "Arabic-Indic"])
def test_an_id_written_oddly_is_scoped_like_the_plain_id(ls, form):
    """Finding: a query id written ``+2`` or `` 2`` passed the extension's ``isdigit()`` scope check, and bob's
    project answered 403 where a missing one answered 404 (an existence oracle). Every id in a path or query is
    now read as the server reads it (``int()``), so bob's id and a missing one answer alike, and alice's own id
    written so still works as the plain one does."""
    alice, bob_area, mine = ls["tokens"][ALICE], ls["area"][BOB], ls["area"][ALICE]
    asks = {
        "tasks of a project": lambda n: alice.get("/api/tasks/", params={"project": _odd(form, n)}),
        "tabs of a project": lambda n: alice.get("/api/dm/views/", params={"project": _odd(form, n)}),
        "a tab": lambda n: alice.get(f"/api/dm/views/{_odd(form, n)}/"),
        "a task's annotations": lambda n: alice.get("/api/annotations/", params={"task": _odd(form, n)}),
    }
    ids = {"tasks of a project": (bob_area["pid"], mine["pid"]), "tabs of a project": (bob_area["pid"], mine["pid"]),
           "a tab": (bob_area["view"], mine["view"]), "a task's annotations": (bob_area["tasks"][0], mine["tasks"][0])}
    for what, ask in asks.items():
        theirs, missing = ask(ids[what][0]), ask(MISSING)
        assert theirs.status_code == missing.status_code, (what, theirs.status_code, missing.status_code)
        assert theirs.status_code >= 400 and BOB not in theirs.text and f"tab of {BOB}" not in theirs.text
    if form in ("+N", "' N'"):
        plain = alice.get("/api/tasks/", params={"project": mine["pid"]})
        odd = alice.get("/api/tasks/", params={"project": _odd(form, mine["pid"])})
        assert odd.status_code == plain.status_code == 200 and odd.json()["total"] == plain.json()["total"] > 0


def test_annotate_check_tries_the_three_new_holes(ls, capsys):
    """Finding: `annotate check` tried none of these. It now moves a product-tour record onto the other
    annotator, sets unique_id, and asks for the other's project by its id written oddly, and says
    "independent" only after all were refused; with alice let through (judgecal's service group) each is named."""
    base = ["annotate", "check", "--workspace", str(ls["ws"].path), "--port", str(ls["server"].port)]
    assert main(base) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["independent"] is True
    for me, them in ((ALICE, BOB), (BOB, ALICE)):
        writes = rep["annotators"][me]["writes"]
        assert writes[f"move a product-tour record onto {them}"] == "refused"
        assert writes["write a 100 KB product-tour record"] == "refused"
        assert writes["set an annotation's unique_id"] == "refused (the field was ignored)"
        odd = [k for k in writes if k.startswith(f"tell whether {them}'s project exists")]
        assert len(odd) == 5 and all(writes[k] == "refused" for k in odd)
    group = ("from django.contrib.auth.models import Group; from users.models import User; "
             f"User.objects.get(email='{ALICE}').groups.{{}}(Group.objects.get(name='judgecal-service'))")
    _django(ls, group.format("add"))
    try:
        code = main(base)
    finally:
        _django(ls, group.format("remove"))
    rep = json.loads(capsys.readouterr().out)
    assert code == 1 and rep["independent"] is False
    alice = rep["annotators"][ALICE]["writes"]
    for what in (f"move a product-tour record onto {BOB}", "write a 100 KB product-tour record",
                 "set an annotation's unique_id"):
        assert alice[what].startswith("FAILED"), (what, alice[what])
        assert any(r.startswith(f"{ALICE} could {what}: ") for r in rep["reasons"])
    assert "409" in alice["set an annotation's unique_id"]


def test_pull_refuses_an_answer_given_twice(ls):
    """Finding: a pairwise (or rating) answer given twice in one annotation was accepted by pull, the last one
    taken. Now the annotation is recorded as a problem ("answered twice") and not counted."""
    ws, alice, area = ls["ws"], ls["tokens"][ALICE], ls["area"][ALICE]
    twice = [*lstasks.annotation_json("A"), *lstasks.annotation_json("B")]
    r = alice.post(f"/api/tasks/{area['tasks'][-1]}/annotations/", json={"result": twice})
    assert r.status_code == 201
    pulled = lstasks.pull(ws, ls["admin"], project=PROJECT, reviewers=reviewers(ws.path))
    mine = [p for p in pulled.problems if p.startswith(f"annotation {r.json()['id']} ")]
    assert len(mine) == 1 and "answered twice" in mine[0] and "skipped" in mine[0]
    assert f"ls:{area['pid']}:{r.json()['id']}" not in set(ws.annotations_repo.annotations_frame()["annotation_id"])
    # a rating given twice, and one given once beside it
    tasks = alice.get(f"/api/tasks/?project={area['rating_pid']}&page_size=10").json()["tasks"]
    two = alice.post(f"/api/tasks/{tasks[0]['id']}/annotations/",
                     json={"result": [*kinds.rating_json(2), *kinds.rating_json(5)]})
    one = alice.post(f"/api/tasks/{tasks[1]['id']}/annotations/", json={"result": kinds.rating_json(4)})
    assert (two.status_code, one.status_code) == (201, 201)
    pulled = lstasks.pull(ws, ls["admin"], project=RATING, reviewers=reviewers(ws.path))
    assert pulled.new == 1
    assert [p for p in pulled.problems if "answered twice" in p] == [
        f"annotation {two.json()['id']} on task {tasks[0]['id']} by {ALICE}: the rating is answered twice, skipped"]
    rated = ws.annotations_repo.annotations_frame()
    assert rated[rated["source"] == f"label-studio:{RATING}"]["label"].tolist() == ["4"]
