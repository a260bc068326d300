"""The columnar copy of the audit's judgments frame (judgecal.data.store.snapshot): read back exactly, used
only while the judgments are unchanged, and never a reason for a read to fail."""

import os

import numpy as np
import pandas as pd
import pytest

from judgecal.data.records import Judgment
from judgecal.data.store import Workspace
from judgecal.data.store._db import _compact_frame

COLS = ["item_id", "judge", "order", "sample", "verdict", "p_a", "prompt_tokens", "latency_s", "p_labels"]


def _rows(n: int, start: int = 0) -> list[Judgment]:
    return [Judgment(key=f"k{i}", item_id=f"i{i % 7}", judge=f"t/j{i % 2}", spec_hash="s", order="AB" if i % 3 else "BA",
                     sample=i % 4, verdict=[None, "A", "B", "tie", "invalid"][i % 5], p_a=None if i % 2 else 0.1 * i,
                     prompt_tokens=None if i == 3 else i, latency_s=1 / (i + 3), env=f"env{i % 2}")
            for i in range(start, start + n)]


def _from_sqlite(ws: Workspace) -> pd.DataFrame:
    """The frame read from the database itself, bypassing the copy."""
    col, args, _, _ = ws.judgments_repo._judge_sql(None)
    select = ", ".join(f'{col} AS "judge"' if c == "judge" else f'"{c}"' for c in COLS)
    return _compact_frame(ws._db.conn.execute(f"SELECT {select} FROM judgments", args), COLS)


def _same_columns(columns, frame: pd.DataFrame) -> None:
    got = list(columns)
    assert len(got) == len(COLS)
    for name, column in zip(COLS, got, strict=True):
        pd.testing.assert_series_equal(column.reset_index(drop=True), frame[name], check_names=False)


def _copy(ws: Workspace):
    return ws.path / "cache" / "judgments.arrow"


def test_the_copy_reads_back_exactly_and_is_used(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(45))
    first = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert _copy(ws).exists()
    stamp = _copy(ws).stat().st_mtime_ns
    again = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert _copy(ws).stat().st_mtime_ns == stamp  # read from the copy, not written again
    pd.testing.assert_frame_equal(again, first)
    pd.testing.assert_frame_equal(again, _from_sqlite(ws))  # dtypes too: categoricals, Int64 with a gap
    assert str(again["prompt_tokens"].dtype) == "Int64" and again["prompt_tokens"].isna().sum() == 1
    # the same copy serves the columns in another order, and one at a time
    reordered = ws.judgments_repo.judgments_frame(columns=COLS[::-1], compact=True)
    assert list(reordered.columns) == COLS[::-1] and _copy(ws).stat().st_mtime_ns == stamp
    _same_columns(ws.judgments_repo.judgment_columns(COLS), first)


@pytest.mark.parametrize("hint", [0, 1, 44, 45, 46, 1000])
@pytest.mark.parametrize("chunk", [1, 4, 45, 5000])
def test_a_compact_read_sized_by_any_hint_holds_every_row(tmp_path, hint, chunk):
    """The count only sizes the columns: too few rows hinted (they grow in place), too many (trimmed) or none, in
    chunks of any size, the frame holds every row exactly as the plain read does."""
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(45))
    col, args, _, _ = ws.judgments_repo._judge_sql(None)
    select = ", ".join(f'{col} AS "judge"' if c == "judge" else f'"{c}"' for c in COLS)
    got = _compact_frame(ws._db.conn.execute(f"SELECT {select} FROM judgments", args), COLS, chunk=chunk, rows=hint)
    plain = ws.judgments_repo.judgments_frame(columns=COLS)
    assert len(got) == 45 and list(got.columns) == COLS
    for c in COLS:
        want = plain[c].astype(object).where(plain[c].notna(), None).tolist()
        assert got[c].astype(object).where(got[c].notna(), None).tolist() == want, c
    assert str(got["prompt_tokens"].dtype) == "Int64" and str(got["sample"].dtype) == "int64"
    assert isinstance(got["verdict"].dtype, pd.CategoricalDtype) and got["latency_s"].dtype == np.float64
    empty = _compact_frame(ws._db.conn.execute(f"SELECT {select} FROM judgments WHERE 0", args), COLS, rows=hint)
    assert empty.shape == (0, len(COLS))


@pytest.mark.parametrize("change", ["add", "add_in_transaction", "replace", "update_by_hand", "delete_by_hand"])
def test_any_change_to_the_judgments_makes_a_new_copy(tmp_path, change):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(20))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    conn = ws._db.conn
    if change == "add":
        ws.judgments_repo.add_judgments(_rows(5, start=20))
    elif change == "add_in_transaction":
        with ws.transaction() as tx:
            ws.judgments_repo.add_judgments(_rows(5, start=20), conn=tx)
    elif change == "replace":
        row = _rows(1, start=4)[0]
        row.verdict = "A" if row.verdict != "A" else "B"
        ws.judgments_repo.add_judgments([row], replace=True)
    elif change == "update_by_hand":  # the row count and the largest rowid stay as they were
        conn.execute("UPDATE judgments SET verdict = 'B' WHERE key = 'k1'")
    else:
        conn.execute("DELETE FROM judgments WHERE key = 'k19'")  # the last row: the largest rowid changes too
    got = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    pd.testing.assert_frame_equal(got, _from_sqlite(ws))
    _same_columns(ws.judgments_repo.judgment_columns(COLS), _from_sqlite(ws))


def test_an_unchanged_add_keeps_the_copy(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(10))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    stamp = _copy(ws).stat().st_mtime_ns
    assert ws.judgments_repo.add_judgments(_rows(10)) == 0  # every key already answered: nothing changed
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert _copy(ws).stat().st_mtime_ns == stamp


def test_a_damaged_or_foreign_copy_is_read_again_from_the_database(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(30))
    expected = _from_sqlite(ws)
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    _copy(ws).write_bytes(_copy(ws).read_bytes()[:200])  # truncated
    pd.testing.assert_frame_equal(ws.judgments_repo.judgments_frame(columns=COLS, compact=True), expected)
    _copy(ws).write_bytes(b"not arrow at all")
    _same_columns(ws.judgments_repo.judgment_columns(COLS), expected)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_cache_folder_that_cannot_be_written_is_not_an_error(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(30))
    (ws.path / "cache").mkdir()
    (ws.path / "cache").chmod(0o500)
    try:
        frame = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
        columns = list(ws.judgments_repo.judgment_columns(COLS))
    finally:
        (ws.path / "cache").chmod(0o700)
    pd.testing.assert_frame_equal(frame, _from_sqlite(ws))
    _same_columns(columns, frame)
    assert not list((ws.path / "cache").iterdir())


def test_a_cache_path_that_is_a_file_is_not_an_error(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(30))
    (ws.path / "cache").write_text("a file where the folder would be")
    frame = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    pd.testing.assert_frame_equal(frame, _from_sqlite(ws))
    _same_columns(ws.judgments_repo.judgment_columns(COLS), frame)
    assert sorted(n for _, _, _, n in ws.judgments_repo.environment_counts()) == [15, 15]


def test_environment_counts_follow_the_judgments(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(10))
    assert sorted((e, n) for _, _, e, n in ws.judgments_repo.environment_counts()) == [("env0", 5), ("env1", 5)]
    assert (ws.path / "cache" / "environments.json").exists()
    ws.judgments_repo.add_judgments(_rows(3, start=10))
    assert sorted((e, n) for _, _, e, n in ws.judgments_repo.environment_counts()) == [("env0", 7), ("env1", 6)]
    ws._db.conn.execute("UPDATE judgments SET env = NULL WHERE key = 'k0'")
    assert sorted((str(e), n) for _, _, e, n in ws.judgments_repo.environment_counts()) == [("None", 1), ("env0", 6), ("env1", 6)]


def test_the_audit_reads_the_same_with_and_without_the_copy(tmp_path):
    """judge_inputs splits the columns one at a time: each judge's frames equal the rows of the whole frame."""
    from judgecal.audit.alignment import usage_metrics
    from judgecal.audit.run import COLUMNS, KEPT, UNRECORDED, judge_inputs

    ws = Workspace(tmp_path / "ws")
    rows = _rows(60)
    for i, r in enumerate(rows):
        r.mutation = "none" if i % 5 else "paraphrase"
    ws.judgments_repo.add_judgments(rows)
    truth = pd.Series(["A"] * 7, index=pd.Index([f"i{i}" for i in range(7)], dtype=object))
    whole = ws.judgments_repo.judgments_frame(columns=COLUMNS, compact=True)
    for inp in judge_inputs(ws, truth):
        mine = whole[whole["judge"] == inp.judge]
        # the usage columns are read for the judge's usage, not kept; nor the probabilities it never gave
        unrecorded = [c for group in UNRECORDED if mine.loc[:, list(group)].isna().all().all() for c in group]
        # t/j0 gave P(A) on its calls (p_a, p_b and p_tie stay), t/j1 none
        assert unrecorded == (["p_labels"] if inp.judge == "t/j0" else ["p_a", "p_b", "p_tie", "p_labels"])
        kept = mine.loc[:, [c for c in KEPT if c not in unrecorded]]
        pd.testing.assert_frame_equal(inp.judgments, kept[mine["mutation"] == "none"], check_index_type=False)
        pd.testing.assert_frame_equal(inp.mutated, kept[mine["mutation"] != "none"], check_index_type=False)
        assert inp.usage == usage_metrics(mine[mine["mutation"] == "none"])
        assert inp.usage is not None and inp.usage["latency_s_mean"] is not None
        assert len(inp.probes) == 0
    assert np.isclose(whole["latency_s"].sum(), sum(1 / (i + 3) for i in range(60)))


def test_item_facts_are_kept_while_the_items_are_unchanged(tmp_path):
    from judgecal.data.records import Candidate, Item

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([Item(f"i{k}", "Which is better?", [Candidate("one two three", "m1"), Candidate("", "m2")])
                  for k in range(5)])
    fresh = ws.items_repo._item_facts(ws._db.conn).set_index("item_id")
    first = ws.items_repo.item_facts()
    pd.testing.assert_frame_equal(first, fresh)
    assert first.loc["i0", "len_a"] == 3 and first.loc["i0", "len_b"] == 0  # an empty response counts 0 words
    cached = ws.path / "cache" / "item_facts.arrow"
    stamp = cached.stat().st_mtime_ns
    pd.testing.assert_frame_equal(ws.items_repo.item_facts(), fresh)
    assert cached.stat().st_mtime_ns == stamp
    ws.items_repo.add_items([Item("i9", "Which?", [Candidate("a b", "m3"), Candidate("c", "m4")])])
    assert ws.items_repo.item_facts().loc["i9", "model_a"] == "m3"
    ws._db.conn.execute("""UPDATE items SET data = json_set(data, '$.candidates[0].text', 'x y z w') WHERE item_id = 'i1'""")
    assert ws.items_repo.item_facts().loc["i1", "len_a"] == 4


def test_columns_being_read_come_from_one_copy_while_another_replaces_it(tmp_path):
    """Another process re-judges (rows move to the end) and writes a new copy while this one streams columns:
    every column it gets still comes from the copy it started with."""
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(6))
    before = _from_sqlite(ws)
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    stream = ws.judgments_repo.judgment_columns(COLS)
    first = next(stream)
    other = Workspace(ws.path)
    again = _rows(2)
    for r in again:
        r.verdict = "tie"
    other.judgments_repo.add_judgments(again, replace=True)
    other.judgments_repo.judgments_frame(columns=COLS, compact=True)  # a new copy under the same name
    _same_columns([first, *stream], before)
    _same_columns(ws.judgments_repo.judgment_columns(COLS), _from_sqlite(ws))  # and the next read sees the new state


def test_no_copy_is_made_or_used_inside_a_transaction_that_is_rolled_back(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(4))
    with pytest.raises(RuntimeError), ws.transaction() as tx:
        ws.judgments_repo.add_judgments(_rows(2, start=100), conn=tx)
        assert len(ws.judgments_repo.judgments_frame(columns=COLS, compact=True)) == 6  # it sees its own rows...
        assert len(list(ws.judgments_repo.judgment_columns(COLS))[0]) == 6
        raise RuntimeError("rolled back")
    assert not _copy(ws).exists()  # ...but keeps no copy of them
    ws.judgments_repo.add_judgments(_rows(2, start=200))  # as many rows again: the state must not match a rolled-back one
    pd.testing.assert_frame_equal(ws.judgments_repo.judgments_frame(columns=COLS, compact=True), _from_sqlite(ws))


def test_a_database_made_again_never_reads_the_old_copy(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(6))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    ws.close()
    (tmp_path / "ws" / "judgecal.sqlite").unlink()
    ws = Workspace(tmp_path / "ws")  # the same size again, other verdicts: same row count, same largest rowid
    rows = _rows(6)
    for r in rows:
        r.verdict = "tie"
    ws.judgments_repo.add_judgments(rows)
    got = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert set(got["verdict"].dropna()) == {"tie"}


def test_a_text_column_holding_a_blob_is_read_from_the_database_each_time(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(4))
    ws._db.conn.execute("UPDATE judgments SET verdict = CAST('tie' AS BLOB) WHERE key = 'k0'")
    first = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    second = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert list(first["verdict"].astype(object)) == list(second["verdict"].astype(object))
    assert not _copy(ws).exists()


def test_a_judge_asked_for_twice_is_read_once(tmp_path):
    from judgecal.audit.run import judge_inputs

    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(20))
    truth = pd.Series(["A"] * 7, index=pd.Index([f"i{i}" for i in range(7)], dtype=object))
    a, b = judge_inputs(ws, truth, ["t/j0", "t/j0"])
    assert a is b and len(a.judgments) == 10


def test_an_audit_reads_back_the_weights_an_earlier_one_drew(tmp_path, pandalm_ws, monkeypatch):
    """The bootstrap weights an audit drew are kept in the cache folder; the next audit reads them instead of
    drawing them again and says the same, and one without the folder draws them again and says the same."""
    import shutil

    from conftest import copy_workspace, json_differences

    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.stats import bootstrap

    monkeypatch.setattr(bootstrap, "STORED_FROM", 100_000)  # PandaLM's 999 items x 300 replicates are kept
    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    options = AuditOptions(consensus="ds", n_boot=300)

    def audit():  # type: ignore[no-untyped-def]
        report = audit_workspace(ws, options).to_json()
        return {k: v for k, v in report.items() if k not in ("generated_at", "provenance")}

    drawn, counts = [], bootstrap._counts
    monkeypatch.setattr(bootstrap, "_counts", lambda n, n_boot, *a: drawn.append(n) or counts(n, n_boot, *a))
    first = audit()
    kept = sorted((ws.path / "cache").glob("bootstrap-*.weights"))
    assert 999 in drawn and "bootstrap-999-300-0" in [p.name.split("-numpy")[0] for p in kept]
    drawn.clear()
    read_back = audit()
    assert 999 not in drawn  # the items' weights came from the file
    monkeypatch.undo()
    monkeypatch.setattr(bootstrap, "STORED_FROM", 100_000)
    shutil.rmtree(ws.path / "cache")
    again = audit()
    assert not json_differences(first, read_back) and not json_differences(first, again)
    ws.close()


def test_environments_counted_ahead_in_a_thread_are_what_the_caller_reads(tmp_path, monkeypatch):
    """warmed() counts the environments on its own connection while the caller works; the caller's call waits
    for that count and reads its copy (the GROUP BY runs once), and a count that fails in the thread is made
    again by the caller's call."""
    import threading

    from judgecal.data.store import snapshot
    from judgecal.data.store.warm import warmed

    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(10))
    expected = sorted(ws.judgments_repo.environment_counts())
    (ws.path / "cache" / "environments.json").unlink()
    counted_in = []  # the thread of each count made (and kept) from SQLite
    save_json, table_state = snapshot.save_json, snapshot.table_state

    def recording(folder, name, key, value):
        counted_in.append(threading.current_thread().name)
        save_json(folder, name, key, value)

    monkeypatch.setattr(snapshot, "save_json", recording)
    with warmed(ws.path):
        got = sorted(ws.judgments_repo.environment_counts())  # waits for the thread's count, then reads its copy
    assert got == expected and counted_in == ["judgecal-warm"]
    (ws.path / "cache" / "environments.json").unlink()
    counted_in.clear()

    def failing_in_the_thread(conn, table, version):
        if threading.current_thread().name == "judgecal-warm":
            raise OSError("the disk went away")
        return table_state(conn, table, version)

    monkeypatch.setattr(snapshot, "table_state", failing_in_the_thread)
    with warmed(ws.path):
        got = sorted(ws.judgments_repo.environment_counts())
    assert got == expected and counted_in == [threading.current_thread().name]
    with pytest.raises(ValueError, match="not a read that can be filled ahead: items"), warmed(ws.path, ("items",)):
        pass


# -- copies extended by appended rows (snapshot.appended_since) ------------------------------------------------


def _spy(monkeypatch) -> list:
    """The top rowid each copy lookup found it could extend from (None: made again from every row)."""
    from judgecal.data.store import snapshot

    seen: list = []
    real = snapshot.appended_since

    def spy(*args):
        seen.append(real(*args))
        return seen[-1]

    monkeypatch.setattr(snapshot, "appended_since", spy)
    return seen


def _more(n: int, start: int) -> list[Judgment]:
    """Rows with new judges, items and verdict words, so every categorical gains categories."""
    rows = _rows(n, start=start)
    for r in rows:
        r.judge, r.item_id, r.verdict = f"new/j{r.sample}", f"n{r.sample}", ["A", "B", f"word{r.sample}"][r.sample % 3]
    return rows


@pytest.mark.parametrize("how", ["add", "add_in_transaction", "replace_with_new_keys", "three_batches"])
def test_rows_only_appended_extend_the_copy_to_what_a_whole_read_gives(tmp_path, monkeypatch, how):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(20))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    ws.judgments_repo.environment_counts()
    seen = _spy(monkeypatch)
    if how == "add":
        ws.judgments_repo.add_judgments(_more(7, 20))
    elif how == "add_in_transaction":
        with ws.transaction() as tx:
            ws.judgments_repo.add_judgments(_more(7, 20), conn=tx)
    elif how == "replace_with_new_keys":  # a re-judging run whose keys are all new replaces nothing
        ws.judgments_repo.add_judgments(_more(7, 20), replace=True)
    else:
        for k in range(3):
            ws.judgments_repo.add_judgments(_more(3, 20 + 3 * k))
    got = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert seen == [20]  # extended from the copy's 20 rows: only the rows above them were read
    pd.testing.assert_frame_equal(got, _from_sqlite(ws))  # categories in order of first appearance, Int64 kept
    _same_columns(ws.judgments_repo.judgment_columns(COLS), _from_sqlite(ws))
    fresh = [(j, h, e, n) for j, h, e, n in ws._db.conn.execute(
        "SELECT judge, spec_hash, env, COUNT(*) FROM judgments GROUP BY judge, spec_hash, env")]
    counts = ws.judgments_repo.environment_counts()
    assert seen[-1] == 20  # the environments counted too: the counts of the rows appended added to the kept ones
    assert sorted(counts, key=str) == sorted(fresh, key=str)
    assert sorted(ws.judgments_repo.environment_counts(), key=str) == sorted(fresh, key=str)


@pytest.mark.parametrize("change", ["replace_a_stored_key", "update_by_hand", "delete_by_hand"])
def test_a_change_to_a_stored_row_after_appends_makes_the_copy_again(tmp_path, monkeypatch, change):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(20))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    ws.judgments_repo.add_judgments(_more(4, 20))
    if change == "replace_a_stored_key":
        rows = _more(2, 40) + _rows(1, start=3)  # new keys and one stored one, changed
        rows[-1].verdict = "tie" if rows[-1].verdict != "tie" else "A"
        ws.judgments_repo.add_judgments(rows, replace=True)
    elif change == "update_by_hand":
        ws._db.conn.execute("UPDATE judgments SET verdict = 'B' WHERE key = 'k2'")
    else:
        ws._db.conn.execute("DELETE FROM judgments WHERE key = 'k5'")
    seen = _spy(monkeypatch)
    got = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert seen == [None]
    pd.testing.assert_frame_equal(got, _from_sqlite(ws))


def test_a_database_restored_from_a_backup_and_appended_to_never_extends_a_later_copy(tmp_path, monkeypatch):
    import shutil

    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(10))
    ws.close()
    db = tmp_path / "ws" / "judgecal.sqlite"
    shutil.copy(db, tmp_path / "backup.sqlite")
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(5, start=10))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)  # the copy holds rows 1..15
    ws.close()
    shutil.copy(tmp_path / "backup.sqlite", db)  # back to rows 1..10 and the token they had
    ws = Workspace(tmp_path / "ws")
    other = _more(5, 10)  # rows 11..15 again, other rows
    ws.judgments_repo.add_judgments(other)
    seen = _spy(monkeypatch)
    got = ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    assert seen == [None]
    pd.testing.assert_frame_equal(got, _from_sqlite(ws))
    assert set(got["judge"].astype(str)) >= {"new/j0"}


def test_item_facts_metadata_and_times_are_extended_by_new_items(tmp_path, monkeypatch):
    from judgecal.data.records import Candidate, Item

    def items(start: int, n: int) -> list[Item]:
        return [Item(f"i{k}", f"Prompt {k % 3}?", [Candidate("one two" * (k % 4), f"m{k}"), Candidate("x", "m")],
                     metadata={"time": f"2025-01-{1 + k % 28:02d}"} if k % 2 else {})
                for k in range(start, start + n)]

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(items(0, 10))
    ws.items_repo.item_facts(), ws.items_repo.item_metadata("time")
    assert not ws.judgments_repo.judgments_with("time")
    ws.items_repo.add_items(items(10, 6))
    rows = _rows(3)
    for r in rows:
        r.time = "2025-02-01T00:00:00Z"
    ws.judgments_repo.add_judgments(rows)
    seen = _spy(monkeypatch)
    facts, times = ws.items_repo.item_facts(), ws.items_repo.item_metadata("time")
    assert seen[:2] == [10, 10]  # both extended from the ten items kept
    pd.testing.assert_frame_equal(facts, ws.items_repo._item_facts(ws._db.conn).set_index("item_id"))
    pd.testing.assert_series_equal(times, ws.items_repo._item_metadata(ws._db.conn, "time"))
    assert list(times.index) == [f"i{k}" for k in range(1, 16, 2)]
    assert facts.loc["i13", "prompt_key"] == facts.loc["i1", "prompt_key"]  # one prompt, one key, across the parts
    assert ws.judgments_repo.judgments_with("time")  # the first time given, in the rows appended


def test_a_copy_whose_key_is_not_text_is_made_again(tmp_path):
    """A copy in cache/ whose state key holds bytes that are not UTF-8 (a damaged or foreign file) is neither read
    nor extended: the frame comes from the database, and the copy is written again."""
    import pyarrow as pa

    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(8))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    ws.judgments_repo.add_judgments(_rows(4, start=8))
    table = pa.table({"item_id": ["x"]}).replace_schema_metadata({b"judgecal.state": b"\xff\xfe:\x80"})
    with pa.OSFile(str(_copy(ws)), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    pd.testing.assert_frame_equal(ws.judgments_repo.judgments_frame(columns=COLS, compact=True), _from_sqlite(ws))


@pytest.mark.parametrize("value", ["garbage", "tok:notanumber:1", "", "a:b"])
def test_a_write_token_link_edited_by_hand_breaks_the_chain_without_an_error(tmp_path, monkeypatch, value):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments(_rows(8))
    ws.judgments_repo.judgments_frame(columns=COLS, compact=True)
    ws.judgments_repo.add_judgments(_rows(4, start=8))
    ws._db.conn.execute("UPDATE meta SET value = ? WHERE key LIKE 'judgments_parent:%'", (value,))
    seen = _spy(monkeypatch)
    pd.testing.assert_frame_equal(ws.judgments_repo.judgments_frame(columns=COLS, compact=True), _from_sqlite(ws))
    assert seen == [None]
    ws.judgments_repo.add_judgments(_rows(2, start=12))  # the next append reads the edited link too
    pd.testing.assert_frame_equal(ws.judgments_repo.judgments_frame(columns=COLS, compact=True), _from_sqlite(ws))
