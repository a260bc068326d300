"""Blind span and Likert review on the real managed Label Studio server, with real FaithBench items.

One server for the module. The embedded judge (SmolLM2-135M) marks hallucination spans on three
FaithBench summaries; the same three go to alice and bob, each in an organisation of their own, who mark
spans as themselves (their own API token); the pull stores their character offsets, and the judge is
scored against them. Two items go to Likert review through the CLI.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from conftest import annotator_page, free_port, recording_client

from judgecal.annotation import kinds
from judgecal.annotation import tasks as lstasks
from judgecal.annotation.annotators import create_annotators, login, reviewers
from judgecal.annotation.server import ManagedServer
from judgecal.cli import main
from judgecal.errors import UserError

PROJECT = "Blind span review"
SOURCE = f"label-studio:{PROJECT}"
JUDGE = "local/smollm2"
WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def review(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    from judgecal.data.store import Workspace

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)  # module scope: before the per-test environment
    path = tmp_path_factory.mktemp("lsspans") / "ws"
    assert main(["import", "faithbench", "-w", str(path)]) == 0
    assert main(["judge", "--judge", JUDGE, "--rubric", "spans-hallucination", "--source", "faithbench",
                 "--items", "3", "--max-tokens", "128", "--concurrency", "1", "--quiet", "-w", str(path)]) == 0
    ws = Workspace(path)
    items = sorted(set(ws.judgments_repo.judgments_frame(judge=JUDGE)["item_id"]))
    assert len(items) == 3
    server = ManagedServer(path, port=free_port())
    conn = server.start()
    http, bodies = recording_client()
    admin = lstasks.client(conn, http)
    people = {p["email"]: p for p in create_annotators(server, ["alice@example.org", "bob@example.org"])}
    res = lstasks.push(ws, admin, items, project=PROJECT, overlap=2, seed=3, reviewers=reviewers(ws.path),
                       http=http, kind="spans")
    sessions = {e: login(server.url, e, p["password"]) for e, p in people.items()}
    tokens = {e: httpx.Client(base_url=conn.url, timeout=60, headers={
        "Authorization": f"Token {s.get('/api/current-user/token').json()['token']}"}) for e, s in sessions.items()}
    yield {"ws": ws, "server": server, "conn": conn, "admin": admin, "people": people, "push": res, "items": items,
           "bodies": bodies, "http": http, "sessions": sessions, "tokens": tokens}
    for c in [*sessions.values(), *tokens.values()]:
        c.close()
    server.stop()
    ws.close()


def _texts(ws, ids):  # type: ignore[no-untyped-def]
    return {it.item_id: it.candidates[0].text for it in ws.items_repo.items(ids=list(ids))}


def sources_of(ws, item):  # type: ignore[no-untyped-def]
    return ws.items_repo.items(ids=[item])[0].prompt.strip()


def _tasks(review, email, project=PROJECT):  # type: ignore[no-untyped-def]
    pid = review["ws"].labelstudio_repo.ls_projects(project)[email]["project_id"]
    return review["tokens"][email].get(f"/api/tasks/?project={pid}&fields=all&page_size=100").json()["tasks"]


def _words(text: str, first: int, last: int) -> tuple[int, int]:
    """The character span from the start of word ``first`` to the end of word ``last``."""
    w = list(WORD.finditer(text))
    return w[first].start(), w[last].end()


# the marks each annotator makes, by item position: (first word, last word, label); [] = marked nothing
MARKS = {"alice@example.org": [[(2, 4, "Unwanted.Extrinsic")], [], [(0, 1, "Questionable"), (5, 6, "Benign")]],
         "bob@example.org": [[(3, 6, "Unwanted.Intrinsic")], [], []]}


def test_span_tasks_are_blind_and_each_annotator_has_their_own(review) -> None:  # type: ignore[no-untyped-def]
    ws, res, items = review["ws"], review["push"], review["items"]
    assert (res.created, res.already) == (6, 0) and len(set(res.project_ids.values())) == 2
    texts = _texts(ws, items)
    by_key = dict(zip(ws.labelstudio_repo.ls_copies_frame(PROJECT)["task_key"], ws.labelstudio_repo.ls_copies_frame(PROJECT)["item_id"], strict=True))
    sources = {it.item_id: it.prompt for it in ws.items_repo.items(ids=items)}
    for email in MARKS:
        tasks = _tasks(review, email)
        assert len(tasks) == 3
        for t in tasks:
            assert set(t["data"]) == {"document", "text", "key"}  # the texts and an opaque key, nothing else
            item = by_key[t["data"]["key"]]
            assert t["data"]["text"] == texts[item] and t["data"]["document"] == sources[item]
        project = review["tokens"][email].get(f"/api/projects/{res.project_ids[email]}/").json()
        cfg = kinds.read_config(project["label_config"])
        assert cfg == kinds.Config("spans", "label", "text", ("Unwanted.Intrinsic", "Unwanted.Extrinsic",
                                                              "Questionable", "Benign"))
        assert "<h2>Marking spans</h2>" in project["expert_instruction"]
        assert "Pairwise tasks" not in project["expert_instruction"]
    # a re-push adds nothing; a project of one kind takes no tasks of another
    again = lstasks.push(ws, review["admin"], items, project=PROJECT, overlap=2, seed=3, reviewers=reviewers(ws.path),
                         kind="spans")
    assert (again.created, again.already) == (0, 3)
    from judgecal.judges.rubric import load_rubric

    with pytest.raises(UserError, match="needs a pointwise rubric"):
        lstasks.push(ws, review["admin"], items, project=PROJECT, kind="likert", reviewers=reviewers(ws.path))
    other = next(it.item_id for it in ws.items_repo.items(source="faithbench") if it.item_id not in items)
    with pytest.raises(UserError, match="holds spans tasks, not likert"):
        lstasks.push(ws, review["admin"], [other], project=PROJECT, kind="likert", rubric=load_rubric("pointwise-5"),
                     reviewers=reviewers(ws.path))
    with pytest.raises(UserError, match="a pairwise task shows 2"):
        lstasks.push(ws, review["admin"], [other], project="Other", reviewers=reviewers(ws.path))
    assert len(ws.labelstudio_repo.ls_copies_frame()) == 6
    # no model name, item id, dataset name or judge output left judgecal
    sent = "\n".join(review["bodies"])
    assert "/import" in sent
    shown = "\n".join(texts.values()) + "\n".join(sources.values())
    j = ws.judgments_repo.judgments_frame(judge=JUDGE)
    secrets_ = {"faithbench", "FaithBench", JUDGE, "smollm2", *items}
    secrets_ |= {c.model for it in ws.items_repo.items(ids=items) for c in it.candidates if c.model}
    secrets_ |= {r for r in j["raw"] if len(r) > 20 and r.strip() not in shown}
    assert sorted(s for s in secrets_ if s and s in sent) == []


def test_annotators_mark_spans_and_the_pull_stores_their_offsets(review) -> None:  # type: ignore[no-untyped-def]
    ws, items = review["ws"], review["items"]
    texts = _texts(ws, items)
    copies = ws.labelstudio_repo.ls_copies_frame(PROJECT)
    key_item = dict(zip(copies["task_key"], copies["item_id"], strict=True))
    expected = set()
    for email, marks in MARKS.items():
        for t in _tasks(review, email):
            item = key_item[t["data"]["key"]]
            text = texts[item]
            regions = [(*_words(text, a, b), lab) for a, b, lab in marks[items.index(item)]]
            r = review["tokens"][email].post(f"/api/tasks/{t['id']}/annotations/", json={
                "result": kinds.spans_json(regions, text), "lead_time": 30.0})
            assert r.status_code == 201, r.text
            expected |= {(item, email, s, e, lab) for s, e, lab in regions} or {(item, email, 0, 0, "")}
    res = lstasks.pull(ws, review["admin"], project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.new, res.problems, res.flagged) == (6, [], [])
    sp = ws.spans_repo.spans_frame(kind="human", source=SOURCE)
    assert set(zip(sp.item_id, sp.rater, sp.start, sp.end, sp.label, strict=True)) == expected
    assert len(sp) == len(expected) and (sp.candidate == 0).all()
    for row in sp.itertuples():  # the stored offsets are the characters the annotator marked
        assert json.loads(row.note)["annotation_id"].startswith("ls:")
    assert lstasks.pull(ws, review["admin"], project=PROJECT, reviewers=reviewers(ws.path)).new == 0
    # the annotator sees only their own work: no model name, item id or the other's spans
    alice, bob = review["tokens"]["alice@example.org"], review["tokens"]["bob@example.org"]
    seen = json.dumps(_tasks(review, "bob@example.org"))
    me = bob.get("/api/current-user/whoami").json()
    assert all(a["completed_by"] == me["id"] for t in json.loads(seen) for a in t["annotations"])
    assert "Unwanted.Extrinsic" not in seen and "Questionable" not in seen  # alice's labels
    assert not any(s in seen for s in [*items, "faithbench", "alice@example.org",
                                       *(c.model for it in ws.items_repo.items(ids=items) for c in it.candidates if c.model)])
    alice_ann = _tasks(review, "alice@example.org")[0]["annotations"][0]["id"]
    assert bob.get(f"/api/annotations/{alice_ann}/").status_code in (403, 404)
    assert alice.get(f"/api/annotations/{alice_ann}/").status_code == 200

    # agreement between the two from the pulled spans, against a hand count per item
    from judgecal.stats import spans as S

    codes = {i: k for k, i in enumerate(items)}
    raters, _ = pd.factorize(sp.rater)
    pw = S.pairwise_f1(S.intervals(sp.item_id.map(codes), sp.start, sp.end), raters)
    (a0, a1), (b0, b1) = _words(texts[items[0]], 2, 4), _words(texts[items[0]], 3, 6)
    inter = max(0, min(a1, b1) - max(a0, b0))
    hand = [2 * inter / ((a1 - a0) + (b1 - b0)), 1.0, 0.0]  # overlap; both marked nothing; one marked nothing
    assert np.allclose(pw["f1"][np.argsort(pw["item"])], hand)
    ceiling = S.human_ceiling(S.intervals(sp.item_id.map(codes), sp.start, sp.end), raters, n_boot=200)
    assert ceiling["estimate"] == pytest.approx(np.mean(hand)) and ceiling["n"] == 3
    review["hand_f1"] = dict(zip(items, hand, strict=True))


def test_bad_span_annotations_are_reported_never_kept(review) -> None:  # type: ignore[no-untyped-def]
    ws, items = review["ws"], review["items"]
    before = ws.spans_repo.spans_frame(source=SOURCE)
    texts = _texts(ws, items)
    copies = ws.labelstudio_repo.ls_copies_frame(PROJECT)
    key_item = dict(zip(copies["task_key"], copies["item_id"], strict=True))
    t = _tasks(review, "alice@example.org")[0]
    text = texts[key_item[t["data"]["key"]]]
    s, e = _words(text, 0, 0)
    bad = {"outside the text": [{"from_name": "label", "to_name": "text", "type": "labels", "value": {
               "start": len(text) - 2, "end": len(text) + 5, "text": text[-2:], "labels": ["Benign"]}}],
           "is not text[": [{"from_name": "label", "to_name": "text", "type": "labels", "value": {
               "start": s, "end": e, "text": text[s:e] + "x", "labels": ["Benign"]}}],
           "not in the labeling config": kinds.spans_json([(s, e, "Wrong fact")], text)}
    for result in bad.values():
        assert review["tokens"]["alice@example.org"].post(f"/api/tasks/{t['id']}/annotations/",
                                                          json={"result": result}).status_code == 201
    r = review["tokens"]["alice@example.org"].post(f"/api/tasks/{t['id']}/annotations/", json={
        "result": kinds.spans_json([(s, e, "Benign")], text), "was_cancelled": True})
    assert r.status_code == 201
    res = lstasks.pull(ws, review["admin"], project=PROJECT, reviewers=reviewers(ws.path))
    assert (res.new, res.cancelled) == (0, 1)
    msgs = " | ".join(res.problems)
    assert "is not a stretch of the text" in msgs and "is not text[" in msgs and "Wrong fact" in msgs
    assert "cancelled" in msgs
    assert ws.spans_repo.spans_frame(source=SOURCE).equals(before)
    status = ws.labelstudio_repo.ls_labels_frame(PROJECT)["status"].value_counts()
    assert (status["rejected"], status["cancelled"], status["ok"]) == (3, 1, 6)


def test_likert_round_trip_through_the_cli(review, capsys) -> None:  # type: ignore[no-untyped-def]
    from judgecal.judges.rubric import load_rubric

    ws, server = review["ws"], review["server"]
    base = ["--workspace", str(ws.path), "--port", str(server.port)]
    assert main(["annotate", "push", "--kind", "likert", "--budget", "2", "--source", "faithbench", "--seed", "1",
                 "--overlap", "2", *base]) == 0
    assert "4 new tasks" in capsys.readouterr().out
    # span review through the CLI too: a random draw only, into the span project
    assert main(["annotate", "push", "--kind", "spans", "--strategy", "disagreement", *base]) == 2
    assert "draws its items at random" in capsys.readouterr().err
    before = len(ws.labelstudio_repo.ls_copies_frame(PROJECT))
    assert main(["annotate", "push", "--kind", "spans", "--budget", "1", "--source", "faithbench", "--seed", "9",
                 "--overlap", "2", *base]) == 0
    assert "2 new tasks" in capsys.readouterr().out and len(ws.labelstudio_repo.ls_copies_frame(PROJECT)) == before + 2
    copies = ws.labelstudio_repo.ls_copies_frame(kinds.DEFAULT_PROJECT["likert"])
    key_item = dict(zip(copies["task_key"], copies["item_id"], strict=True))
    assert copies["item_id"].nunique() == 2 and len(copies) == 4
    rubric = load_rubric("pointwise-5")
    ratings = {"alice@example.org": [4, 2], "bob@example.org": [5, 7]}
    ids = sorted(set(copies["item_id"]))
    for email, marks in ratings.items():
        tasks = _tasks(review, email, kinds.DEFAULT_PROJECT["likert"])
        assert len(tasks) == 2
        for t in tasks:
            assert set(t["data"]) == {"prompt", "response", "rubric", "key"}
            assert t["data"]["rubric"] == rubric.system.strip()
            rating = marks[ids.index(key_item[t["data"]["key"]])]
            assert review["tokens"][email].post(f"/api/tasks/{t['id']}/annotations/", json={
                "result": kinds.rating_json(rating)}).status_code == 201
    assert main(["annotate", "pull", *base]) == 0
    out = capsys.readouterr()
    assert "Blind rating review: 3 new" in out.out and "Blind span review: 0 new" in out.out
    assert "rating 7 is not in 1..5" in out.err
    ann = ws.annotations_repo.annotations_frame()
    got = ann[ann.source == "label-studio:Blind rating review"]
    want = {(ids[k], e, str(r)) for e, rs in ratings.items() for k, r in enumerate(rs) if r <= 5}
    assert set(zip(got.item_id, got.annotator, got.label, strict=True)) == want
    assert got.label.astype(int).between(1, 5).all()


def test_embedded_judge_spans_scored_against_the_pulled_spans(review) -> None:  # type: ignore[no-untyped-def]
    from judgecal.audit.spans import span_alignment

    ws, items = review["ws"], review["items"]
    sp = ws.spans_repo.spans_frame()
    frame = sp[((sp.kind == "human") & (sp.source == SOURCE)) | ((sp.kind == "judge") & (sp.rater == JUDGE))]
    judged = sorted(set(frame[frame.kind == "judge"].item_id))
    assert judged and set(judged) <= set(items)
    entry = span_alignment(frame, n_boot=200)[JUDGE]
    for name in ("span_iou", "span_f1", "span_precision", "span_recall", "human_f1"):
        m = entry[name]
        assert m["n"] >= 1 and 0.0 <= m["estimate"] <= 1.0 and m["ci_low"] <= m["estimate"] <= m["ci_high"], name
    assert entry["span_iou"]["n"] == len(judged)
    hand = review.get("hand_f1")
    if hand is not None:  # the ceiling beside the judge is the annotators' agreement on the judge's items
        assert entry["human_f1"]["estimate"] == pytest.approx(np.mean([hand[i] for i in judged]))


def test_browser_annotator_marks_a_span(review) -> None:  # type: ignore[no-untyped-def]
    """carol, in Chromium, selects a word of the text in the span labeling UI and submits it."""
    ws, server = review["ws"], review["server"]
    carol = create_annotators(server, ["carol@example.org"])[0]
    item = review["items"][0]
    res = lstasks.push(ws, review["admin"], [item], project="Browser span check", overlap=1, seed=1,
                       reviewers=[carol], kind="spans")
    pid = res.project_ids["carol@example.org"]
    text = _texts(ws, [item])[item]
    word = max(WORD.finditer(text), key=lambda m: len(m.group()))  # a long, likely unique word
    out = Path(os.environ.get("JUDGECAL_TEST_ARTIFACTS") or ws.path / "artifacts")
    out.mkdir(parents=True, exist_ok=True)
    with annotator_page(server.url, carol) as page:
        page.goto(f"{server.url}/projects/{pid}/data?labeling=1")
        page.locator("h2", has_text="Marking spans").first.wait_for(timeout=90_000)
        page.keyboard.press("Escape")
        page.get_by_text("Unwanted.Extrinsic").first.wait_for(timeout=60_000)
        page.wait_for_timeout(1000)
        body, shown = page.content(), " ".join(page.inner_text("body").split())
        assert "faithbench" not in body and item not in body and "unique_lock_id" not in shown
        assert " ".join(sources_of(ws, item).split())[:60] in shown  # the document itself, not the task
        page.get_by_text("Unwanted.Extrinsic").first.click()  # choose the label, then select the word
        selected = page.evaluate(
            """([word, start, text]) => {
                const docs = [document, ...[...document.querySelectorAll('iframe')].map(n => n.contentDocument)];
                const head = text.trim().slice(0, 50);
                for (const doc of docs) {
                  if (!doc) continue;
                  const walker = doc.createTreeWalker(doc.body, NodeFilter.SHOW_TEXT);
                  let node;
                  while ((node = walker.nextNode())) {
                    if (!node.textContent.includes(head)) continue;  // the text to mark, not the document
                    const at = node.textContent.indexOf(word, Math.max(0, start - 5));
                    if (at < 0) continue;
                    const range = doc.createRange();
                    range.setStart(node, at);
                    range.setEnd(node, at + word.length);
                    const rect = range.getBoundingClientRect();
                    const frame = doc === document ? {left: 0, top: 0} :
                      [...document.querySelectorAll('iframe')].find(f => f.contentDocument === doc)
                        .getBoundingClientRect();
                    return {x0: frame.left + rect.left + 1, x1: frame.left + rect.right - 1,
                            y: frame.top + rect.top + rect.height / 2};
                  }
                }
                return null;
            }""", [word.group(), word.start(), text])
        assert selected, "the word was not found on the page"
        page.mouse.move(selected["x0"], selected["y"])
        page.mouse.down()
        page.mouse.move(selected["x1"], selected["y"], steps=8)
        page.mouse.up()
        page.wait_for_timeout(1000)
        page.screenshot(path=str(out / "span-1-marked.png"))
        page.get_by_role("button", name="Submit").first.click()
        page.wait_for_timeout(3000)
        page.screenshot(path=str(out / "span-2-submitted.png"))
    pulled = lstasks.pull(ws, review["admin"], project="Browser span check", reviewers=reviewers(ws.path))
    assert (pulled.new, pulled.problems) == (1, [])
    sp = ws.spans_repo.spans_frame(source="label-studio:Browser span check")
    assert len(sp) == 1
    row = sp.iloc[0]
    assert (row.item_id, row.rater, row.label) == (item, "carol@example.org", "Unwanted.Extrinsic")
    assert text[row.start:row.end] == word.group()
