"""Blind label review (binary, categorical and multi-criterion items) on the real managed Label Studio server.

One server for the module. Three annotators, each in an organisation of their own, get pass/fail items,
a three-label categorical set (one label full of XML and Label Studio template characters) and
multi-criterion records (one task per record, one single-choice list per criterion); they answer as
themselves through Label Studio's API; the pull stores one annotation per item (per criterion item for a
record), and `judgecal aggregate` turns them into a consensus.
"""

from __future__ import annotations

import json
import os
import re

import httpx
import pytest
from conftest import free_port, recording_client

from judgecal.aggregate.consensus import compute_consensus
from judgecal.annotation import kinds
from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotators, login, reviewers
from judgecal.annotation.server import Connection, ManagedServer
from judgecal.cli import main
from judgecal.data.records import Annotation, Candidate, Item, LabelSet
from judgecal.errors import UserError

PEOPLE = ["alice@example.org", "bob@example.org", "carol@example.org"]
BINARY, CATEGORY, CRITERIA = "Pass review", "Safety review", "Criteria review"
PASS_FAIL = LabelSet("binary", ("pass", "fail"), "pass")
HOSTILE = 'unsure <b>"&amp;"</b> $prompt'  # untrusted text: XML markup, an entity, a Label Studio $variable
SAFETY = LabelSet("categorical", ("safe", "unsafe", HOSTILE))
HELPFUL = LabelSet("categorical", ("low", "mid", "high"), ordinal=True, criterion="helpful")
HARMLESS = LabelSet("binary", ("yes", "no"), "yes", criterion="harmless")
MODELS = {"secret-model-7b", "hidden-family", "zz-other-model"}  # must never reach Label Studio


def _item(item_id: str, ls: LabelSet, k: int, source: str, **meta: str) -> Item:
    return Item(item_id, f"Question {k}: explain step {k} of the recipe.", [Candidate(
        f"Answer {k}: first do this, then that." if k % 3 else "", "secret-model-7b" if k % 2 else "zz-other-model",
        "hidden-family")], task="pointwise", source=source, metadata=dict(meta), label_set=ls.to_dict())


def _record(k: int, source: str = "crit-src") -> list[Item]:
    rec = f"rec-{k}"
    return [_item(f"{rec}/{ls.criterion}", ls, k, source, criterion=ls.criterion, record=rec)
            for ls in (HELPFUL, HARMLESS)]


BIN_IDS = [f"bin-{k}" for k in range(4)]
CAT_IDS = [f"cat-{k}" for k in range(3)]
RECORDS = [f"rec-{k}" for k in range(3)]
# what each annotator answers: bob agrees with alice, carol always says "fail" / "unsafe" / "low", "no"
BIN_TRUTH = {"bin-0": "pass", "bin-1": "fail", "bin-2": "pass", "bin-3": "pass"}
CAT_TRUTH = {"cat-0": "safe", "cat-1": HOSTILE, "cat-2": "unsafe"}
CRIT_TRUTH = {"rec-0": {"helpful": "high", "harmless": "yes"}, "rec-1": {"helpful": "mid", "harmless": "no"},
              "rec-2": {"helpful": "low", "harmless": "yes"}}
CAROL = {"binary": "fail", "categorical": "unsafe", "helpful": "low", "harmless": "no"}


@pytest.fixture(scope="module")
def review(tmp_path_factory):  # type: ignore[no-untyped-def]
    from judgecal.data.store import Workspace

    path = tmp_path_factory.mktemp("lslabels") / "ws"
    ws = Workspace(path)
    ws.items_repo.add_items([_item(i, PASS_FAIL, k, "bin-src") for k, i in enumerate(BIN_IDS)]
                 + [_item(i, SAFETY, k, "cat-src") for k, i in enumerate(CAT_IDS)]
                 + [it for k in range(len(RECORDS)) for it in _record(k)]
                 + [it for k in range(3, 5) for it in _record(k, "cli-src")])
    server = ManagedServer(path, port=free_port())
    conn = server.start()
    http, bodies = recording_client()
    admin = lstasks.client(conn, http)
    people = {p["email"]: p for p in create_annotators(server, PEOPLE)}
    pushed = {project: lstasks.push(ws, admin, ids, project=project, overlap=3, seed=5,
                                    reviewers=reviewers(ws.path), http=http, kind="labels")
              for project, ids in ((BINARY, BIN_IDS), (CATEGORY, CAT_IDS),
                                   (CRITERIA, [f"{r}/{c}" for r in RECORDS for c in ("harmless", "helpful")]))}
    sessions = {e: login(server.url, e, p["password"]) for e, p in people.items()}
    tokens = {e: httpx.Client(base_url=conn.url, timeout=60, headers={
        "Authorization": f"Token {s.get('/api/current-user/token').json()['token']}"}) for e, s in sessions.items()}
    yield {"ws": ws, "server": server, "admin": admin, "people": people, "pushed": pushed, "bodies": bodies,
           "http": http, "tokens": tokens}
    for c in [*sessions.values(), *tokens.values()]:
        c.close()
    server.stop()
    ws.close()


def _tasks(review, email, project):  # type: ignore[no-untyped-def]
    pid = review["ws"].labelstudio_repo.ls_projects(project)[email]["project_id"]
    return review["tokens"][email].get(f"/api/tasks/?project={pid}&fields=all&page_size=100").json()["tasks"]


def _keys(ws, project):  # type: ignore[no-untyped-def]
    copies = ws.labelstudio_repo.ls_copies_frame(project)
    return dict(zip(copies["task_key"], copies["item_id"], strict=True))


def _project(review, email, project):  # type: ignore[no-untyped-def]
    pid = review["ws"].labelstudio_repo.ls_projects(project)[email]["project_id"]
    return review["tokens"][email].get(f"/api/projects/{pid}/").json()


def _answer(review, email, task_id, result):  # type: ignore[no-untyped-def]
    r = review["tokens"][email].post(f"/api/tasks/{task_id}/annotations/", json={"result": result, "lead_time": 7.5})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_tasks_are_blind_and_ask_the_declared_labels(review) -> None:  # type: ignore[no-untyped-def]
    ws, pushed = review["ws"], review["pushed"]
    assert [(r.created, r.already) for r in pushed.values()] == [(12, 0), (9, 0), (9, 0)]  # a record is one task
    want = {BINARY: (("label", kinds.ASK, PASS_FAIL.labels),),
            CATEGORY: (("label", kinds.ASK, SAFETY.labels),),
            CRITERIA: (("crit_0", "helpful", HELPFUL.labels), ("crit_1", "harmless", HARMLESS.labels))}
    for project, questions in want.items():
        for email in PEOPLE:
            tasks = _tasks(review, email, project)
            assert len(tasks) == {BINARY: 4, CATEGORY: 3, CRITERIA: 3}[project]
            for t in tasks:
                assert set(t["data"]) == {"prompt", "response", "key"}  # texts and an opaque key, nothing else
                assert t["data"]["response"].strip()  # an empty response is shown as "(empty response)"
            p = _project(review, email, project)
            cfg = kinds.read_config(p["label_config"])
            assert cfg.kind == "labels" and not cfg.rubric
            assert [(q.control, q.title, q.labels) for q in cfg.questions] == list(questions)
            assert "<h2>Label tasks</h2>" in p["expert_instruction"] and "Pairwise tasks" not in p["expert_instruction"]
            n = sum(len(q[2]) for q in questions)
            assert [f'hotkey="{k}"' in p["label_config"] for k in range(1, n + 2)] == [True] * n + [False]
    # a record's criterion items are copies K:crit_0 (helpful, its first criterion) and K:crit_1 of one task
    keys = _keys(ws, CRITERIA)
    assert all(item.endswith("/helpful" if k.endswith(":crit_0") else "/harmless") for k, item in keys.items())
    assert {k.split(":")[0] for k in keys} == {t["data"]["key"] for e in PEOPLE for t in _tasks(review, e, CRITERIA)}
    # the hostile label went into the config escaped, and comes back exactly
    raw = _project(review, PEOPLE[0], CATEGORY)["label_config"]
    assert HOSTILE not in raw and "&lt;b&gt;" in raw and 'value="unsure' in raw and "$\u2060prompt" in raw
    # no model name, family, item id, record id or source left judgecal
    sent = "\n".join(review["bodies"])
    assert "/import" in sent
    secrets_ = MODELS | set(BIN_IDS) | set(CAT_IDS) | set(RECORDS) | {"bin-src", "cat-src", "crit-src"}
    assert sorted(s for s in secrets_ if s in sent) == []
    # a re-push adds nothing
    again = lstasks.push(ws, review["admin"], BIN_IDS, project=BINARY, overlap=3, seed=5,
                         reviewers=reviewers(ws.path), kind="labels")
    assert (again.created, again.already) == (0, 4)


def _titles(review) -> list[str]:  # type: ignore[no-untyped-def]
    url = review["server"].url
    return sorted(p.title for r in reviewers(review["ws"].path)
                  for p in lstasks.client(Connection(url, r["service_token"])).projects.list())


def test_pushes_that_mix_questions_are_refused_before_anything_changes(review) -> None:  # type: ignore[no-untyped-def]
    ws, admin = review["ws"], review["admin"]
    before, copies = _titles(review), len(ws.labelstudio_repo.ls_copies_frame())
    people = reviewers(ws.path)
    cases = [([BIN_IDS[0], CAT_IDS[0]], "New project", "different label sets"),
             ([BIN_IDS[0], "rec-0/helpful", "rec-0/harmless"], "New project", "push records and single items"),
             (CAT_IDS, BINARY, "asks 'Which label fits the response?': pass, fail"),  # an existing project
             (["rec-0/helpful", "rec-1/helpful", "rec-1/harmless"], "New project", "share their criteria")]
    for ids, project, message in cases:
        with pytest.raises(UserError, match=re.escape(message)):
            lstasks.push(ws, admin, ids, project=project, reviewers=people, kind="labels")
    ws.items_repo.add_items([Item("plain-1", "p", [Candidate("r", "secret-model-7b")], task="pointwise", source="plain"),
                  Item("ctl-1", "p", [Candidate("r")], task="pointwise", source="plain",
                       label_set=LabelSet("binary", ("ok\x07", "bad"), "ok\x07").to_dict())])
    with pytest.raises(UserError, match="has no label set"):
        lstasks.push(ws, admin, ["plain-1"], project="New project", reviewers=people, kind="labels")
    with pytest.raises(UserError, match="control character"):
        lstasks.push(ws, admin, ["ctl-1"], project="New project", reviewers=people, kind="labels")
    with pytest.raises(UserError, match="holds labels tasks, not likert"):
        from judgecal.judges.rubric import load_rubric

        lstasks.push(ws, admin, ["plain-1"], project=BINARY, reviewers=people, kind="likert",
                     rubric=load_rubric("pointwise-5"))
    assert _titles(review) == before and len(ws.labelstudio_repo.ls_copies_frame()) == copies and not ws.labelstudio_repo.ls_projects("New project")


def test_annotators_answer_and_the_pull_stores_declared_labels(review) -> None:  # type: ignore[no-untyped-def]
    ws = review["ws"]
    for project, truth in ((BINARY, BIN_TRUTH), (CATEGORY, CAT_TRUTH)):
        keys = _keys(ws, project)
        for email in PEOPLE:
            for t in _tasks(review, email, project):
                item = keys[t["data"]["key"]]
                label = CAROL["binary" if project == BINARY else "categorical"] if email == PEOPLE[2] else truth[item]
                why = kinds.rationale_json(f"because {item}") if email == PEOPLE[0] else []
                _answer(review, email, t["id"], kinds.labels_json(label) + why)
    keys = _keys(ws, CRITERIA)
    for email in PEOPLE:
        for t in _tasks(review, email, CRITERIA):
            rec = keys[t["data"]["key"] + ":crit_0"].split("/")[0]
            want = {c: CAROL[c] for c in ("helpful", "harmless")} if email == PEOPLE[2] else CRIT_TRUTH[rec]
            why = kinds.rationale_json(f"record {rec}") if email == PEOPLE[1] else []
            _answer(review, email, t["id"], kinds.labels_json({"crit_0": want["helpful"], "crit_1": want["harmless"]})
                    + why)
    for project, n in ((BINARY, 12), (CATEGORY, 9), (CRITERIA, 9)):
        res = lstasks.pull(ws, review["admin"], project=project, reviewers=reviewers(ws.path))
        assert (res.new, res.problems, res.flagged) == (n, [], []), project
        assert lstasks.pull(ws, review["admin"], project=project, reviewers=reviewers(ws.path)).new == 0
    ann = ws.annotations_repo.annotations_frame()
    got = ann[ann.source == f"label-studio:{BINARY}"]
    want = {(i, e, CAROL["binary"] if e == PEOPLE[2] else lab) for i, lab in BIN_TRUTH.items() for e in PEOPLE}
    assert set(zip(got.item_id, got.annotator, got.label, strict=True)) == want and len(got) == 12
    assert (got.time_spent_s == 7.5).all() and got.shown_order.isna().all()
    alice = got.annotator == PEOPLE[0]
    assert (got.loc[alice, "rationale"] == "because " + got.loc[alice, "item_id"]).all()
    assert got.loc[~alice, "rationale"].isna().all()
    cat = ann[ann.source == f"label-studio:{CATEGORY}"]
    assert set(cat.label) == {"safe", "unsafe", HOSTILE}  # the declared label string, exactly
    crit = ann[ann.source == f"label-studio:{CRITERIA}"]
    assert len(crit) == 18 and crit.annotation_id.is_unique  # one per criterion item, from 9 answers
    for row in crit.itertuples():
        rec, criterion = row.item_id.split("/")
        assert row.label == (CAROL[criterion] if row.annotator == PEOPLE[2] else CRIT_TRUTH[rec][criterion])
        assert row.annotation_id.endswith("/crit_0" if criterion == "helpful" else "/crit_1")
        assert (row.rationale if isinstance(row.rationale, str) else None) == (
            f"record {rec}" if row.annotator == PEOPLE[1] else None)
    labels = ws.labelstudio_repo.ls_labels_frame(CRITERIA)
    assert set(labels.item_id) == set(RECORDS)  # a record's answer is one row, named by the record
    assert {json.dumps(CRIT_TRUTH[r]) for r in RECORDS} >= set(labels[labels.annotator == PEOPLE[0]].choice)


def test_aggregate_gives_a_consensus_within_each_label_set(review, capsys) -> None:  # type: ignore[no-untyped-def]
    ws = review["ws"]
    assert main(["aggregate", "--workspace", str(ws.path)]) == 0
    assert "each aggregated on its own" in capsys.readouterr().out
    for method in ("ds", "mv"):
        for project, truth in ((BINARY, BIN_TRUTH), (CATEGORY, CAT_TRUTH)):
            cons = ws.annotations_repo.consensus_frame(f"{method}:label-studio:{project}").set_index("item_id")
            assert cons.label.to_dict() == truth, (method, project)
        cons = ws.annotations_repo.consensus_frame(f"{method}:label-studio:{CRITERIA}").set_index("item_id")
        assert cons.label.to_dict() == {f"{r}/{c}": lab for r, d in CRIT_TRUTH.items() for c, lab in d.items()}
        # each criterion is aggregated on its own labels: no posterior mass on another criterion's labels
        for item, post in cons.posterior.items():
            allowed = set((HELPFUL if item.endswith("/helpful") else HARMLESS).labels)
            assert set(json.loads(post) if isinstance(post, str) else post) <= allowed


def test_bad_answers_are_rejected_naming_the_field(review) -> None:  # type: ignore[no-untyped-def]
    ws, email = review["ws"], PEOPLE[0]
    before = ws.annotations_repo.annotations_frame()
    bin_task = _tasks(review, email, BINARY)[0]["id"]
    for result in (kinds.labels_json("maybe"),  # not a label of the config
                   [{"from_name": "verdict", "to_name": "response", "type": "choices", "value": {"choices": ["pass"]}}],
                   [{"from_name": "label", "to_name": "response", "type": "choices",
                     "value": {"choices": ["pass", "fail"]}}],
                   kinds.rationale_json("no label at all")):
        _answer(review, email, bin_task, result)
    r = review["tokens"][email].post(f"/api/tasks/{bin_task}/annotations/", json={
        "result": kinds.labels_json("pass"), "was_cancelled": True})
    assert r.status_code == 201
    res = lstasks.pull(ws, review["admin"], project=BINARY, reviewers=reviewers(ws.path))
    assert (res.new, res.cancelled) == (0, 1)
    msgs = " | ".join(res.problems)
    assert "field 'label': choice ['maybe'] is not in the labeling config (pass, fail)" in msgs
    assert "unknown field 'verdict'" in msgs and "choice ['pass', 'fail']" in msgs
    assert "field 'label': no label given" in msgs and "cancelled" in msgs
    crit_task = _tasks(review, email, CRITERIA)[0]["id"]
    _answer(review, email, crit_task, kinds.labels_json({"crit_0": "high", "crit_1": "perhaps"}))
    _answer(review, email, crit_task, kinds.labels_json({"crit_0": "high"}))
    res = lstasks.pull(ws, review["admin"], project=CRITERIA, reviewers=reviewers(ws.path))
    msgs = " | ".join(res.problems)
    assert res.new == 0 and "field 'crit_1' (criterion 'harmless'): choice ['perhaps']" in msgs
    assert "field 'crit_1' (criterion 'harmless'): no label given" in msgs
    assert ws.annotations_repo.annotations_frame().equals(before)
    status = ws.labelstudio_repo.ls_labels_frame()["status"].value_counts()
    assert (status["rejected"], status["cancelled"]) == (6, 1)


def test_a_changed_record_answer_replaces_every_criterion_label(review) -> None:  # type: ignore[no-untyped-def]
    ws, email = review["ws"], PEOPLE[1]
    task = _tasks(review, email, CRITERIA)[0]
    aid = task["annotations"][0]["id"]
    rec = _keys(ws, CRITERIA)[task["data"]["key"] + ":crit_0"].split("/")[0]
    client = review["tokens"][email]

    def mine() -> dict[str, str]:
        ann = ws.annotations_repo.annotations_frame()
        ann = ann[(ann.annotator == email) & ann.item_id.str.startswith(f"{rec}/")]
        return dict(zip(ann.item_id, ann.label, strict=True))

    assert mine() == {f"{rec}/{c}": lab for c, lab in CRIT_TRUTH[rec].items()}
    r = client.patch(f"/api/annotations/{aid}/", json={"result": kinds.labels_json({"crit_0": "mid", "crit_1": "no"})})
    assert r.status_code == 200, r.text
    res = lstasks.pull(ws, review["admin"], project=CRITERIA, reviewers=reviewers(ws.path))
    assert (res.new, res.updated) == (0, 1)
    assert mine() == {f"{rec}/helpful": "mid", f"{rec}/harmless": "no"}
    # changed into something the config does not allow: every criterion label of it is withdrawn
    r = client.patch(f"/api/annotations/{aid}/", json={"result": kinds.labels_json({"crit_0": "mid", "crit_1": "x"})})
    assert r.status_code == 200, r.text
    lstasks.pull(ws, review["admin"], project=CRITERIA, reviewers=reviewers(ws.path))
    assert mine() == {}


def test_label_review_through_the_cli(review, capsys) -> None:  # type: ignore[no-untyped-def]
    ws, server = review["ws"], review["server"]
    base = ["--workspace", str(ws.path), "--port", str(server.port)]
    assert main(["annotate", "push", "--kind", "labels", "--strategy", "disagreement", *base]) == 2
    assert "draws its items at random" in capsys.readouterr().err
    assert main(["annotate", "push", "--kind", "labels", "--budget", "1", "--source", "cli-src", "--seed", "2",
                 "--overlap", "2", *base]) == 0
    assert "2 new tasks" in capsys.readouterr().out  # one record (both its criteria) for two annotators
    project = kinds.DEFAULT_PROJECT["labels"]
    copies = ws.labelstudio_repo.ls_copies_frame(project)
    assert len(copies) == 4 and copies.item_id.str.split("/").str[0].nunique() == 1
    key_item = dict(zip(copies.task_key, copies.item_id, strict=True))
    for email in sorted(set(copies.annotator)):
        (t,) = _tasks(review, email, project)
        assert key_item[t["data"]["key"] + ":crit_1"].endswith("/harmless")
        _answer(review, email, t["id"], kinds.labels_json({"crit_0": "high", "crit_1": "yes"}))
    assert main(["annotate", "pull", "--project", project, "--quiet", *base]) == 0
    assert f"{project}: 2 new" in capsys.readouterr().out
    ann = ws.annotations_repo.annotations_frame()
    got = ann[ann.source == f"label-studio:{project}"]
    assert sorted(got.label) == ["high", "high", "yes", "yes"]


def test_majority_vote_on_labels_named_a_and_b_never_says_tie(tmp_path) -> None:
    """A categorical set whose labels are A, B, C (multiple choice): an even A/B split is broken by label
    order, never turned into the pairwise 'tie', which is not one of the item's labels; pairwise items
    keep their tie."""
    from judgecal.data.store import Workspace

    abc = LabelSet("categorical", ("A", "B", "C"))
    with Workspace(tmp_path / "ws") as ws:
        ws.items_repo.add_items([Item("mc-1", "p", [Candidate("r")], task="pointwise", source="s", label_set=abc.to_dict()),
                      Item("pw-1", "p", [Candidate("r1"), Candidate("r2")], source="s")])
        ws.annotations_repo.add_annotations([Annotation("mc-1", "u1", "A", source="s"), Annotation("mc-1", "u2", "B", source="s"),
                            Annotation("pw-1", "u1", "A", source="s"), Annotation("pw-1", "u2", "B", source="s")])
        compute_consensus(ws, ("mv", "ds"))
        mv = ws.annotations_repo.consensus_frame("mv").set_index("item_id").label
        assert mv.to_dict() == {"mc-1": "A", "pw-1": "tie"}
        assert ws.annotations_repo.consensus_frame("ds").set_index("item_id").label["mc-1"] in abc.labels


def test_the_labels_config_ships_and_reads_back() -> None:
    assert "<Choices" in lstasks.label_config("labels") and '$response' in lstasks.label_config("labels")
    assert "## Label tasks" in lstasks.guidelines("labels") and "## Rating tasks" not in lstasks.guidelines("labels")
    assert "## Label tasks" not in lstasks.guidelines("pairwise")
    many = kinds.Question("label", "Pick $one", tuple(f"l{k}" for k in range(12)))
    xml = kinds.labels_config((many,), rubric=True)
    cfg = kinds.read_config(xml)
    assert cfg.questions == (kinds.Question("label", "Pick $\u2060one", many.labels),) and cfg.rubric
    assert xml.count("hotkey=") == 9 and "showInline" not in xml  # keys 1..9 for the first nine only
    assert kinds.read_config(lstasks.label_config("pairwise")).kind == "pairwise"


def test_browser_annotator_answers_a_record_with_hotkeys(review) -> None:  # type: ignore[no-untyped-def]
    """dave, in Chromium, answers a record's two criteria with keys 3 and 5 (counted across the task) and
    submits; the pull stores the exact labels, the hostile one included, shown but never interpreted."""
    from pathlib import Path

    from conftest import annotator_page

    ws, server = review["ws"], review["server"]
    dave = create_annotators(server, ["dave@example.org"])[0]
    safety = LabelSet("categorical", SAFETY.labels, criterion="safety")
    ws.items_repo.add_items([_item(f"rec-9/{ls.criterion}", ls, 9, "browser-src", criterion=ls.criterion, record="rec-9")
                  for ls in (safety, HARMLESS)])
    res = lstasks.push(ws, review["admin"], ["rec-9/safety", "rec-9/harmless"], project="Browser label check",
                       overlap=1, seed=1, reviewers=[dave], kind="labels")
    pid = res.project_ids["dave@example.org"]
    out = Path(os.environ.get("JUDGECAL_TEST_ARTIFACTS") or ws.path / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    with annotator_page(server.url, dave) as page:
        page.goto(f"{server.url}/projects/{pid}/data?labeling=1")
        page.locator("h2", has_text="Label tasks").first.wait_for(timeout=90_000)
        page.keyboard.press("Escape")
        page.get_by_text("harmless", exact=True).first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        shown = " ".join(page.inner_text("body").split())
        assert 'unsure <b>"&amp;"</b> $\u2060prompt' in shown  # the label as text, its $ not replaced
        assert "secret-model" not in page.content() and "rec-9" not in page.content()
        page.get_by_text("Response", exact=True).first.click()  # focus the task, not a text box
        page.keyboard.press("3")
        page.keyboard.press("5")
        page.wait_for_timeout(500)
        page.screenshot(path=str(out / "labels-1-chosen.png"))
        page.get_by_role("button", name="Submit").first.click()
        page.wait_for_timeout(3000)
        page.screenshot(path=str(out / "labels-2-submitted.png"))
    pulled = lstasks.pull(ws, review["admin"], project="Browser label check", reviewers=reviewers(ws.path))
    assert (pulled.new, pulled.problems) == (1, [])
    ann = ws.annotations_repo.annotations_frame()
    got = ann[ann.source == "label-studio:Browser label check"]
    assert dict(zip(got.item_id, got.label, strict=True)) == {"rec-9/safety": HOSTILE, "rec-9/harmless": "no"}
