import sqlite3

import pandas as pd
import pytest

from judgecal.data.records import Candidate, Item, Judgment
from judgecal.data.store import Workspace, WorkspaceError


def _j(key: str, verdict: str = "A") -> Judgment:
    return Judgment(key=key, item_id="i1", judge="t/j", spec_hash="s", verdict=verdict)


def test_wal_schema_and_cache(tmp_path):
    ws = Workspace(tmp_path / "ws")
    assert ws._db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ws.judgments_repo.add_judgments([_j("k1"), _j("k2")]) == 2
    # the same key again is the cache: kept as it was
    assert ws.judgments_repo.add_judgments([_j("k1", "B")]) == 0
    df = ws.judgments_repo.judgments_frame()
    assert sorted(df["key"]) == ["k1", "k2"]
    assert df.set_index("key").loc["k1", "verdict"] == "A"


def test_error_rows_are_not_cached(tmp_path):
    ws = Workspace(tmp_path / "ws")
    err = _j("k1")
    err.status = "error"
    ws.judgments_repo.add_judgments([err, _j("k2")])
    assert ws.judgments_repo.cached_keys(["k1", "k2", "k3"]) == {"k2"}


def test_transaction_is_all_or_nothing(tmp_path):
    ws = Workspace(tmp_path / "ws")
    with pytest.raises(RuntimeError), ws.transaction() as tx:
        ws.items_repo.add_items([Item("a", "p", [Candidate("x"), Candidate("y")])], conn=tx)
        raise RuntimeError("boom")
    assert ws.items_repo.item_ids() == set()


def test_schema_version_mismatch_is_a_clear_error(tmp_path):
    Workspace(tmp_path / "ws").close()
    con = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    with pytest.raises(WorkspaceError, match="schema version 99"):
        Workspace(tmp_path / "ws")


def test_missing_workspace_is_not_created_when_reading(tmp_path):
    with pytest.raises(WorkspaceError, match="does not exist"):
        Workspace(tmp_path / "nope", create=False)
    assert not (tmp_path / "nope").exists()


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_export_round_trip(tmp_path, suffix):
    ws = Workspace(tmp_path / "ws")
    ws.judgments_repo.add_judgments([_j("k1"), _j("k2", "tie")])
    out = ws.reports_repo.export("judgments", tmp_path / f"j{suffix}")
    df = pd.read_parquet(out) if suffix == ".parquet" else pd.read_json(out, lines=True)
    assert sorted(df["verdict"]) == ["A", "tie"]
    with pytest.raises(ValueError):
        ws.reports_repo.export("judgments", tmp_path / "j.xlsx")


def test_compact_frame_holds_the_same_judgments(tmp_path):
    ws = Workspace(tmp_path / "ws")
    rows = [Judgment(key=f"k{i}", item_id=f"i{i % 7}", judge=f"t/j{i % 2}", spec_hash="s", order="AB" if i % 3 else "BA",
                     sample=i % 4, verdict=[None, "A", "B", "tie", "invalid"][i % 5], p_a=None if i % 2 else 0.25,
                     prompt_tokens=None if i == 3 else i, latency_s=0.1 * i) for i in range(45)]
    ws.judgments_repo.add_judgments(rows)
    cols = ["item_id", "judge", "order", "sample", "verdict", "p_a", "prompt_tokens", "latency_s"]
    plain = ws.judgments_repo.judgments_frame(columns=cols)
    compact = ws.judgments_repo.judgments_frame(columns=cols, compact=True)
    assert isinstance(compact["item_id"].dtype, pd.CategoricalDtype) and compact["item_id"].nunique() == 7
    for col in cols:
        a = plain[col].astype(object).where(plain[col].notna(), None).tolist()
        b = compact[col].astype(object).where(compact[col].notna(), None).tolist()
        assert a == b, col
    assert ws.judgments_repo.judgments_frame(columns=cols, compact=True, judge="t/j0").shape == (23, len(cols))


def test_item_metadata_finds_every_key_and_only_metadata(tmp_path):
    """The metadata lookup skips items whose JSON cannot hold the key: a key JSON escapes, a value named like the
    key in a response or elsewhere, and items without metadata are all read right."""
    ws = Workspace(tmp_path / "ws")
    odd = "sub set"  # not a plain name: looked up in every item
    ws.items_repo.add_items([
        Item("a", "p", [Candidate('says "category": "maths"'), Candidate("y")], metadata={"category": "code"}),
        Item("b", 'mentions "category" too', [Candidate("x"), Candidate("y")]),
        Item("c", "p", [Candidate("x"), Candidate("y")], metadata={odd: 3, "category": None}),
        Item("d", "p", [Candidate("x"), Candidate("y")], metadata={"other": {"category": "nested"}}),
    ])
    for _ in range(2):  # read from SQLite, then from the copy kept in the cache folder
        assert ws.items_repo.item_metadata("category").to_dict() == {"a": "code"}
        assert ws.items_repo.item_metadata(odd).to_dict() == {"c": "3"}
        assert ws.items_repo.item_metadata("missing").empty
    assert len(list((ws.path / "cache").glob("metadata-*.json"))) == 3
    ws.items_repo.add_items([Item("e", "p", [Candidate("x"), Candidate("y")], metadata={"category": "maths"})])
    assert ws.items_repo.item_metadata("category").to_dict() == {"a": "code", "e": "maths"}  # the items changed: read again
    ws._db.conn.execute("UPDATE items SET data = json_set(data, '$.metadata.category', 'prose') WHERE item_id = 'a'")
    assert ws.items_repo.item_metadata("category").to_dict() == {"a": "prose", "e": "maths"}


def test_opening_a_workspace_another_process_keeps_locked_says_so(tmp_path, monkeypatch):
    """Opening waits for another writer's lock and, when it gives up, says so in one line (no raw SQLite error)."""
    from judgecal.data.store import _db

    Workspace(tmp_path / "ws").close()
    other = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite", isolation_level=None)
    other.execute("PRAGMA journal_mode=DELETE")  # out of WAL: an exclusive lock keeps every other connection out
    other.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(_db, "BUSY_TIMEOUT_S", 0.3)
    with pytest.raises(WorkspaceError, match="kept the workspace locked for 0.3 s"):
        Workspace(tmp_path / "ws")
    other.execute("COMMIT")
    other.close()
    Workspace(tmp_path / "ws").close()  # free again: it opens
