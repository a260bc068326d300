"""Annotators' rationales: kept on import, and the guidelines ``judgecal align`` quotes from them."""

import json

import pandas as pd

from judgecal.data.importers import import_file
from judgecal.data.store import Workspace
from judgecal.loop.rationales import distil, positional


def test_rationales_import_with_their_labels_csv_too(tmp_path):
    rec = {"id": "q1", "prompt": "2+2?", "response_a": "4", "response_b": "5",
           "human_labels": {"ann1": "A", "ann2": "tie", "ann3": None},
           "human_rationales": {"ann1": "  Four is correct.  ", "ann2": None, "ann3": None}}
    (tmp_path / "a.jsonl").write_text(json.dumps(rec) + "\n", "utf-8")
    with Workspace(tmp_path / "ws") as ws:
        import_file(ws, tmp_path / "a.jsonl")
        ann = ws.annotations_repo.annotations_frame().set_index("annotator")
        assert ann.loc["ann1", "rationale"] == "Four is correct." and pd.isna(ann.loc["ann2", "rationale"])
        assert "ann3" not in ann.index  # skipped label, no rationale to hang on it
    pd.DataFrame([{**rec, "id": "q2", "human_labels": json.dumps(rec["human_labels"]),
                   "human_rationales": json.dumps({"ann2": "Both wrong."})}]).to_csv(tmp_path / "b.csv", index=False)
    with Workspace(tmp_path / "ws") as ws:
        import_file(ws, tmp_path / "b.csv")
        ann = ws.annotations_repo.annotations_frame()
        got = ann[ann["item_id"] == "q2"].set_index("annotator")["rationale"]
        assert pd.isna(got["ann1"]) and got["ann2"] == "Both wrong."


def test_an_older_workspace_gains_the_rationale_column(tmp_path):
    import sqlite3

    from judgecal.data.records import Annotation
    from judgecal.data.store import SCHEMA_VERSION

    with Workspace(tmp_path / "ws") as ws:
        ws._db.conn.execute("ALTER TABLE annotations DROP COLUMN rationale")
        ws._db.conn.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "ws") as ws:
        ws.annotations_repo.add_annotations([Annotation("i", "a", "A", rationale="why")])
        assert ws.annotations_repo.annotations_frame()["rationale"].tolist() == ["why"]
    db = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


def test_position_words_mark_a_rationale_that_cannot_leave_its_task():
    for text in ("The first one is better", "Response B misses the point", "A is right", "left answer wins",
                 "answer 2 is complete"):
        assert positional(text), text
    for text in ("Correct and concise; the other rambles", "It is a good answer, a bit long", "Both fail at B12"):
        assert not positional(text), text


def _frame(rows):
    return pd.DataFrame(rows, columns=["item_id", "annotator", "label", "rationale"])


def test_distil_quotes_agreeing_train_rationales_mistakes_first_without_copies():
    truth = pd.Series({"1": "A", "2": "B", "3": "tie", "4": "A", "5": "B"})
    verdict = pd.Series({"1": "B", "2": "B", "3": "A", "4": "A", "5": "A"})  # wrong on 1, 3, 5
    ann = _frame([
        ("1", "p", "A", "Correct arithmetic matters more than style."),
        ("1", "q", "A", "Correct arithmetic matters more than style!"),  # a near-copy: counted once
        ("2", "p", "B", "Concise and correct."),
        ("3", "p", "tie", "Equally vague answers."),
        ("4", "p", "B", "I disagree with the others here."),  # not the truth's label: left out
        ("4", "q", "A", "The first response is better."),  # names a position: left out
        ("5", "p", "B", "Follows the requested format exactly."),  # held out below: never used
        ("2", "q", "B", None), ("2", "r", "B", "   "),
    ])
    rules, about = distil(ann, truth, verdict, train=["1", "2", "3", "4"], k=5)
    assert about["with_rationale"] == 7 and about["train"] == 6 and about["agree_with_truth"] == 5
    assert about["positional"] == 1 and about["used"] == 3 and about["from_mistakes"] == 2
    assert rules[0].endswith('"Correct arithmetic matters more than style."') or rules[0].endswith('style!"')
    assert any(r.startswith("Where the responses were equally good or poor") and "Equally vague" in r for r in rules)
    assert not any("format" in r or "disagree" in r or "first" in r for r in rules)
    assert rules[-1].endswith('"Concise and correct."')  # the only one from an item the judge got right
    assert {a["item_id"] for a in about["annotations"]} == {"1", "2", "3"}


def test_distil_without_rationales_says_so():
    truth = pd.Series({"1": "A"})
    rules, about = distil(_frame([("1", "p", "A", None)]), truth, truth, train=["1"])
    assert rules == [] and about["with_rationale"] == 0
    long = "word " * 200
    rules, _ = distil(_frame([("1", "p", "A", long)]), truth, truth, train=["1"], max_chars=50)
    assert rules[0].endswith('…"') and len(rules[0]) < 120
