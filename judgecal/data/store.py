"""The workspace: a folder with one SQLite database (WAL, transactions, schema version) and reports.

Judgments are keyed by the content hash of the call (see ``judges.engine.cache_key``), so a
re-run inserts nothing twice and a killed run resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, astuple
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.records import (
    ANNOTATION_FIELDS,
    JUDGMENT_FIELDS,
    Annotation,
    Consensus,
    Item,
    Judgment,
)

SCHEMA_VERSION = 2
# Additive migrations: version -> what it adds (the CREATE TABLE IF NOT EXISTS below does the work).
MIGRATIONS = {2: "Label Studio task mapping (ls_tasks) and pulled annotation ids (ls_pulled)"}
DB_NAME = "judgecal.sqlite"

_JUDGMENT_TYPES = {
    "key": "TEXT PRIMARY KEY",
    "sample": "INTEGER",
    "seed": "INTEGER",
    "score": "REAL",
    "p_a": "REAL",
    "p_b": "REAL",
    "p_tie": "REAL",
    "expected_score": "REAL",
    "prompt_tokens": "INTEGER",
    "completion_tokens": "INTEGER",
    "latency_s": "REAL",
    "cost_usd": "REAL",
    "created_at": "REAL",
}

_judgment_row = attrgetter(*JUDGMENT_FIELDS)
_JCOLS = ", ".join(f'"{f}"' for f in JUDGMENT_FIELDS)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY, source TEXT NOT NULL, task TEXT NOT NULL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judgments (
    {", ".join(f'"{f}" {_JUDGMENT_TYPES.get(f, "TEXT")}' for f in JUDGMENT_FIELDS)}
);
CREATE INDEX IF NOT EXISTS judgments_judge ON judgments (judge);
CREATE TABLE IF NOT EXISTS annotations (
    {", ".join(f"{f} {'REAL' if f == 'time_spent_s' else 'TEXT'}" for f in ANNOTATION_FIELDS)},
    UNIQUE (item_id, annotator, source)
);
CREATE TABLE IF NOT EXISTS ls_tasks (
    task_key TEXT PRIMARY KEY, project TEXT NOT NULL, project_id INTEGER NOT NULL, item_id TEXT NOT NULL,
    flipped INTEGER NOT NULL, gold_label TEXT, task_id INTEGER, pushed_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ls_tasks_item ON ls_tasks (project, item_id);
CREATE TABLE IF NOT EXISTS ls_pulled (
    annotation_id INTEGER NOT NULL, project_id INTEGER NOT NULL, updated_at TEXT NOT NULL,
    status TEXT NOT NULL, PRIMARY KEY (project_id, annotation_id)
);
CREATE TABLE IF NOT EXISTS consensus (
    item_id TEXT NOT NULL, method TEXT NOT NULL, label TEXT NOT NULL, posterior TEXT NOT NULL,
    PRIMARY KEY (item_id, method)
);
"""


_FLOATS = ("p_a", "p_b", "p_tie", "score", "expected_score", "latency_s", "cost_usd", "created_at")
_INTS = ("sample", "prompt_tokens", "completion_tokens", "seed")


def _compact_frame(cursor: sqlite3.Cursor, cols: list[str], chunk: int = 20_000) -> pd.DataFrame:
    """Rows of ``cursor`` as a frame of categoricals (text) and float64 / nullable integers (numbers).

    Each chunk's text columns are factorised at once and their codes mapped into one dictionary per
    column, so no per-row string object outlives its chunk.
    """
    lookup: list[dict[Any, int]] = [{} for _ in cols]
    pieces: list[list[np.ndarray]] = [[] for _ in cols]
    while rows := cursor.fetchmany(chunk):
        table = np.array(rows, dtype=object).reshape(len(rows), len(cols))
        del rows
        for k, col in enumerate(cols):
            values = table[:, k]
            if col in _FLOATS or col in _INTS:
                pieces[k].append(np.array(values, dtype=np.float64))
            else:
                codes, uniques = pd.factorize(values, use_na_sentinel=True)
                lut = np.array([lookup[k].setdefault(u, len(lookup[k])) for u in uniques] + [-1], dtype=np.int32)
                pieces[k].append(lut[codes])
        del table
    out: dict[str, Any] = {}
    for k, col in enumerate(cols):
        data: np.ndarray[Any, Any] = np.concatenate(pieces[k]) if pieces[k] else np.zeros(0)
        pieces[k] = []
        if col in _FLOATS:
            out[col] = data
        elif col in _INTS:
            out[col] = pd.array(data, dtype="Int64") if np.isnan(data).any() else data.astype(np.int64)  # type: ignore[arg-type]
        else:
            out[col] = pd.Categorical.from_codes(data.astype(np.int32), categories=list(lookup[k]))  # type: ignore[call-overload]
    return pd.DataFrame(out, columns=cols)


class WorkspaceError(RuntimeError):
    """A workspace that cannot be opened or is of an unknown schema."""


class Workspace:
    """A workspace folder holding ``judgecal.sqlite`` and a ``reports/`` folder."""

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise WorkspaceError(f"workspace {self.path} does not exist; run `judgecal import` first")
            self.path.mkdir(parents=True)
        self.db_path = self.path / DB_NAME
        self.conn = sqlite3.connect(self.db_path, timeout=30, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self.conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) < SCHEMA_VERSION and all(v in MIGRATIONS for v in range(int(row[0]) + 1, SCHEMA_VERSION + 1)):
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise WorkspaceError(
                f"{self.db_path}: schema version {row[0]}, this judgecal reads {SCHEMA_VERSION}"
            )

    @property
    def reports_dir(self) -> Path:
        return self.path / "reports"

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing: everything inside commits together or not at all."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- items ---------------------------------------------------------------------------
    def add_items(self, items: Iterable[Item], conn: sqlite3.Connection | None = None) -> int:
        rows = [(it.item_id, it.source, it.task, it.to_json()) for it in items]
        c = conn or self.conn
        before = c.total_changes
        c.executemany("INSERT OR REPLACE INTO items VALUES (?, ?, ?, ?)", rows)
        return c.total_changes - before

    def item_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT item_id FROM items")}

    def items(self, source: str | None = None, ids: Iterable[str] | None = None) -> list[Item]:
        q, args = "SELECT data FROM items", []
        if source is not None:
            q, args = q + " WHERE source = ?", [source]
        out = [Item.from_json(r[0]) for r in self.conn.execute(q + " ORDER BY rowid", args)]
        if ids is not None:
            wanted = set(ids)
            out = [it for it in out if it.item_id in wanted]
        return out

    def item_facts(self) -> pd.DataFrame:
        """One row per item: source, task, the word lengths and families of its first two candidates.

        Streamed from SQLite, so an audit never holds every response text at once.
        """
        q = ("SELECT item_id, source, task, json_extract(data, '$.candidates[0].text'), "
             "json_extract(data, '$.candidates[1].text'), json_extract(data, '$.candidates[0].family'), "
             "json_extract(data, '$.candidates[1].family'), json_array_length(data, '$.candidates'), "
             "json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model') "
             "FROM items ORDER BY rowid")
        rows = [(i, src, task, len(str(a).split()) if a is not None else 0,
                 len(str(b).split()) if b is not None else 0, fa, fb, n, ma, mb)
                for i, src, task, a, b, fa, fb, n, ma, mb in self.conn.execute(q)]
        return pd.DataFrame(rows, columns=["item_id", "source", "task", "len_a", "len_b", "family_a", "family_b",
                                           "n_candidates", "model_a", "model_b"]).set_index("item_id")

    def sources(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT source FROM items ORDER BY source")]

    # -- judgments -----------------------------------------------------------------------
    def add_judgments(
        self, judgments: Iterable[Judgment], conn: sqlite3.Connection | None = None, replace: bool = False
    ) -> int:
        """Insert judgments; a key already present is kept (the cache) unless ``replace``."""
        c = conn or self.conn
        before = c.total_changes
        placeholders = ", ".join("?" for _ in JUDGMENT_FIELDS)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO judgments ({_JCOLS}) VALUES ({placeholders})"
        if conn is None:
            with self.transaction() as tx:
                tx.executemany(sql, map(_judgment_row, judgments))
        else:
            c.executemany(sql, map(_judgment_row, judgments))
        return c.total_changes - before

    def cached_keys(self, keys: Iterable[str]) -> set[str]:
        """Keys already answered (a stored ``error`` is retried, not cached)."""
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key FROM judgments WHERE status != 'error' AND key IN ({', '.join('?' for _ in chunk)})"
            found.update(r[0] for r in self.conn.execute(q, chunk))
        return found

    def judges(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT judge FROM judgments ORDER BY judge")]

    def judgments_frame(self, judge: str | None = None, columns: Iterable[str] | None = None,
                        compact: bool = False) -> pd.DataFrame:
        """Judgments as a frame; ``compact`` stores the text columns as categoricals and the numbers in
        the narrowest exact types (an audit of a million judgments then fits in a few hundred MB)."""
        cols = list(columns) if columns else list(JUDGMENT_FIELDS)
        q = f"SELECT {', '.join(f'{chr(34)}{c}{chr(34)}' for c in cols)} FROM judgments"
        args: list[str] = []
        if judge is not None:
            q, args = q + " WHERE judge = ?", [judge]
        if compact:
            return _compact_frame(self.conn.execute(q, args), cols)
        # read in chunks: the driver's row tuples for a million rows would double the peak memory
        parts = list(pd.read_sql_query(q, self.conn, params=args, chunksize=100_000))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)

    def count_judgments(self, judge: str | None = None) -> int:
        if judge is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])
        return int(self.conn.execute("SELECT COUNT(*) FROM judgments WHERE judge=?", (judge,)).fetchone()[0])

    # -- annotations and consensus ---------------------------------------------------------
    def add_annotations(self, anns: Iterable[Annotation], conn: sqlite3.Connection | None = None) -> int:
        c = conn or self.conn
        before = c.total_changes
        placeholders = ", ".join("?" for _ in ANNOTATION_FIELDS)
        c.executemany(
            f"INSERT OR REPLACE INTO annotations ({', '.join(ANNOTATION_FIELDS)}) VALUES ({placeholders})",
            [astuple(a) for a in anns],
        )
        return c.total_changes - before

    def annotations_frame(self) -> pd.DataFrame:
        return pd.read_sql_query(
            f"SELECT {', '.join(ANNOTATION_FIELDS)} FROM annotations ORDER BY rowid", self.conn
        )

    def set_consensus(self, rows: Iterable[Consensus], method: str) -> None:
        with self.transaction() as tx:
            tx.execute("DELETE FROM consensus WHERE method = ?", (method,))
            tx.executemany(
                "INSERT INTO consensus VALUES (?, ?, ?, ?)",
                [(c.item_id, c.method, c.label, json.dumps(c.posterior)) for c in rows],
            )

    def consensus_frame(self, method: str | None = None) -> pd.DataFrame:
        q, args = "SELECT item_id, method, label, posterior FROM consensus", []
        if method is not None:
            q, args = q + " WHERE method = ?", [method]
        return pd.read_sql_query(q, self.conn, params=args)

    # -- export ------------------------------------------------------------------------------
    def export(self, table: str, path: str | os.PathLike[str]) -> Path:
        """Write one table to Parquet or JSONL (chosen by the file suffix)."""
        if table not in {"items", "judgments", "annotations", "consensus"}:
            raise ValueError(f"unknown table {table!r}")
        out = Path(path)
        if table == "items":
            df = pd.DataFrame([asdict(it) for it in self.items()])
        else:
            df = pd.read_sql_query(f"SELECT * FROM {table}", self.conn)
        if out.suffix == ".parquet":
            df.to_parquet(out, index=False)
        elif out.suffix in (".jsonl", ".json"):
            df.to_json(out, orient="records", lines=True, force_ascii=False)
        else:
            raise ValueError(f"{out}: export writes .parquet or .jsonl")
        return out
