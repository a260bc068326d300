"""Real data as it comes: degenerate but valid input is accepted and counted, malformed input refused.

The files are written in the published layouts of Auto-J's pairwise test set (``scenario``, ``label``,
``prompt``, ``response 1``, ``response 2``; one published response is empty) and Mu-SHROOM's span files
(``id``, ``model_input``, ``model_output_text``, ``hard_labels``, ``soft_labels``; 108 published spans
of the English test set have zero length), converted to judgecal's own schema here as a user would.
"""

import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judgecal.cli import main
from judgecal.data.importers import ImportValidationError, import_file, validate_file
from judgecal.data.store import Workspace

AUTOJ = [  # Auto-J's field layout; label 0: response 1 better, 1: response 2, 2: tie
    {"scenario": "code_generation", "label": 0, "prompt": "Write a function that adds two numbers.",
     "response 1": "def add(a, b):\n    return a + b", "response 2": ""},
    {"scenario": "chitchat", "label": 2, "prompt": "How are you?", "response 1": "Fine, thanks.",
     "response 2": "  \n"},
    {"scenario": "rewriting", "label": 1, "prompt": "Shorten: 'a very very long sentence'",
     "response 1": "a very very long sentence", "response 2": "a long sentence"},
]
MUSHROOM = [  # Mu-SHROOM's field layout; [56, 56]-style zero-length spans are in the published set
    {"id": "val-en-1", "lang": "EN", "model_input": "Who wrote Hamlet?", "model_id": "tiiuae/falcon-7b",
     "model_output_text": "Hamlet was written by Christopher Marlowe in 1492.",
     "hard_labels": [[22, 41], [45, 49], [49, 49]],
     "soft_labels": [{"start": 22, "prob": 0.66, "end": 41}, {"start": 45, "prob": 1.0, "end": 49}]},
    {"id": "val-en-2", "lang": "EN", "model_input": "Capital of France?", "model_id": "tiiuae/falcon-7b",
     "model_output_text": "Paris.", "hard_labels": [[3, 3]], "soft_labels": []},
    {"id": "val-en-3", "lang": "EN", "model_input": "Say nothing.", "model_id": "tiiuae/falcon-7b",
     "model_output_text": "", "hard_labels": [], "soft_labels": []},
]


def _as_judgecal_pairwise(rows):
    return [{"id": n, "prompt": r["prompt"], "response_a": r["response 1"], "response_b": r["response 2"],
             "human_labels": {"autoj": {0: "A", 1: "B", 2: "tie"}[r["label"]]}, "metadata": {"category": r["scenario"]}}
            for n, r in enumerate(rows)]


def _as_judgecal_spans(rows):
    return [{"id": r["id"], "prompt": r["model_input"], "response": r["model_output_text"],
             "human_spans": {"majority": r["hard_labels"]}} for r in rows]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def test_empty_responses_are_accepted_counted_and_stored_as_text(tmp_path):
    ws = Workspace(tmp_path / "ws")
    res = import_file(ws, _jsonl(tmp_path / "autoj.jsonl", _as_judgecal_pairwise(AUTOJ)))
    assert len(res.items) == 3 and res.counts["empty_responses"] == 2
    stored = {it.item_id: it for it in ws.items_repo.items()}
    assert stored["0"].candidates[1].text == "" and stored["1"].candidates[1].text == "  \n"
    assert sorted(ws.annotations_repo.annotations_frame()["label"]) == ["A", "B", "tie"]


def test_an_empty_prompt_is_still_refused(tmp_path):
    rows = _as_judgecal_pairwise(AUTOJ)
    rows[1]["prompt"] = " "
    with pytest.raises(ImportValidationError, match=r"autoj.jsonl:2: prompt: is empty"):
        validate_file(_jsonl(tmp_path / "autoj.jsonl", rows))


def test_zero_length_spans_are_dropped_and_counted(tmp_path):
    ws = Workspace(tmp_path / "ws")
    res = import_file(ws, _jsonl(tmp_path / "mushroom.jsonl", _as_judgecal_spans(MUSHROOM)), task="pointwise")
    assert res.counts["zero_length_spans"] == 2
    sp = ws.spans_repo.spans_frame(kind="human").sort_values(["item_id", "start"])
    got = {(r.item_id, r.start, r.end) for r in sp.itertuples()}
    # item 1 keeps its two real spans; item 2's only span had zero length: the rater marked nothing,
    # kept as the one empty span that says so, as an empty list is (item 3)
    assert got == {("val-en-1", 22, 41), ("val-en-1", 45, 49), ("val-en-2", 0, 0), ("val-en-3", 0, 0)}
    assert res.counts["empty_responses"] == 1


def test_a_zero_length_span_outside_the_text_is_still_refused(tmp_path):
    rows = _as_judgecal_spans(MUSHROOM)
    rows[1]["human_spans"] = {"majority": [[9, 9]]}  # "Paris." has 6 characters
    with pytest.raises(ImportValidationError, match=r"mushroom.jsonl:2: human_spans.majority\[0\]: \[9, 9\] is not a span"):
        validate_file(_jsonl(tmp_path / "mushroom.jsonl", rows), task="pointwise")


def test_null_labels_are_skips_not_labels_nor_errors(tmp_path):
    ws = Workspace(tmp_path / "ws")
    rows = _as_judgecal_pairwise(AUTOJ)
    rows[0]["human_labels"] = {"autoj": "A", "ann2": None}
    rows[1]["human_labels"] = {"autoj": None}
    res = import_file(ws, _jsonl(tmp_path / "autoj.jsonl", rows))
    assert res.counts["skipped_labels"] == 2
    ann = ws.annotations_repo.annotations_frame()
    assert len(ann) == 2 and set(ann["annotator"]) == {"autoj"}


def test_parquet_nested_columns_read_as_json(tmp_path):
    """list, map and struct columns (spans, labels, metadata with decimals), and a float id column."""
    ws = Workspace(tmp_path / "ws")
    table = pa.table({
        "id": pa.array([1.0, 2.0], pa.float64()),
        "prompt": ["Who wrote Hamlet?", "Capital of France?"],
        "response": [MUSHROOM[0]["model_output_text"], "Paris."],
        "human_labels": pa.array([[("ann1", 3), ("ann2", None)], [("ann1", 5)]], pa.map_(pa.string(), pa.int64())),
        "human_spans": pa.array([{"ann1": [[22, 41], [49, 49]]}, {"ann1": []}],
                                pa.struct([("ann1", pa.list_(pa.list_(pa.int64())))])),
        "metadata": pa.array([{"cost": decimal.Decimal("0.125"), "n": decimal.Decimal("3")},
                              {"cost": decimal.Decimal("1.500"), "n": decimal.Decimal("4")}],
                             pa.struct([("cost", pa.decimal128(6, 3)), ("n", pa.decimal128(6, 0))])),
    })
    pq.write_table(table, tmp_path / "spans.parquet")
    res = import_file(ws, tmp_path / "spans.parquet", task="pointwise")
    assert [it.item_id for it in res.items] == ["1", "2"]
    assert res.items[0].metadata == {"cost": 0.125, "n": 3} and isinstance(res.items[0].metadata["n"], int)
    assert res.counts == {"empty_responses": 0, "zero_length_spans": 1, "skipped_labels": 1}
    assert sorted(ws.annotations_repo.annotations_frame()["label"]) == ["3", "5"]
    assert sorted((r.item_id, r.start, r.end) for r in ws.spans_repo.spans_frame().itertuples()) == [("1", 22, 41), ("2", 0, 0)]
    assert json.loads(ws._db.conn.execute("SELECT data FROM items WHERE item_id = '1'").fetchone()[0])["metadata"]["cost"] == 0.125


def test_parquet_with_a_pandas_index_and_a_malformed_row_is_refused_whole(tmp_path):
    import pandas as pd

    df = pd.DataFrame({"id": ["a", "b"], "prompt": ["p", "q"], "response_a": ["x", ""], "response_b": ["y", "z"],
                       "human_labels": [{"ann": "A"}, {"ann": "C"}]}, index=[7, 9])
    df.to_parquet(tmp_path / "x.parquet")
    with pytest.raises(ImportValidationError) as info:
        import_file(Workspace(tmp_path / "ws"), tmp_path / "x.parquet")
    assert [str(p) for p in info.value.problems] == [
        f"{tmp_path / 'x.parquet'}:2: human_labels.ann: unknown label 'C'; expected A, B or tie"]


def test_csv_empty_response_cell_is_an_empty_response(tmp_path):
    (tmp_path / "x.csv").write_text("id,prompt,response_a,response_b\n1,p,,b\n")
    res = validate_file(tmp_path / "x.csv")
    assert res.items[0].candidates[0].text == "" and res.counts["empty_responses"] == 1


def test_cli_summary_counts_what_it_accepted(tmp_path, capsys):
    f = _jsonl(tmp_path / "autoj.jsonl", _as_judgecal_pairwise(AUTOJ))
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "imported 3 items and 3 human labels" in out and "accepted: 2 empty response(s) kept as text" in out
    g = _jsonl(tmp_path / "m.jsonl", _as_judgecal_spans(MUSHROOM))
    assert main(["import", str(g), "--task", "pointwise", "-w", str(tmp_path / "ws")]) == 0
    assert "2 zero-length span(s) dropped (they mark nothing)" in capsys.readouterr().out
