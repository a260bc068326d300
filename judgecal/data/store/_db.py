"""The workspace database, private to this package: the SQLite file opened (WAL, busy timeout), its schema
created, versioned and migrated; all-or-nothing transactions; and the compact frame reader.

Only the repositories of :mod:`judgecal.data.store` hold a :class:`Database`; nothing else reaches its connection.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.records import ANNOTATION_FIELDS, JUDGMENT_FIELDS
from judgecal.data.store._schema import (
    _CLAIMS_SCHEMA,
    _EXPLORER_SCHEMA,
    _JUDGMENT_TYPES,
    _LS_SCHEMA,
    _MIGRATION_SQL,
    _SCHEMA,
    _SNAPSHOT_SCHEMA,
    _SPANS_SCHEMA,
    _SPECS_SCHEMA,
    _STABILITY_SCHEMA,
    MIGRATIONS,
    SCHEMA_VERSION,
)
from judgecal.data.store.errors import DiskFullError, WorkspaceError, disk_full

DB_NAME = "judgecal.sqlite"
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process's write lock


def _is_locked(exc: sqlite3.OperationalError) -> bool:
    """SQLite's answer when another connection holds the lock it needs (``SQLITE_BUSY`` / ``SQLITE_LOCKED``)."""
    return "locked" in str(exc) or "busy" in str(exc)


class Database:
    """One connection to a workspace's ``judgecal.sqlite``, its schema created or migrated on opening."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if self.path.exists():
            if not (os.access(self.path, os.R_OK | os.W_OK) and os.access(self.path.parent, os.W_OK | os.X_OK)):
                raise WorkspaceError(f"{self.path}: the workspace is read-only; judgecal needs to write to "
                                     "the database and its folder")
            with open(self.path, "rb") as fh:
                head = fh.read(16)
            if head and head != b"SQLite format 3\x00":
                raise WorkspaceError(f"{self.path}: not a judgecal workspace database (not SQLite, or damaged)")
        self.conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        row = self._set_up()
        old = SCHEMA_VERSION if row is None else int(row[0])  # a new workspace starts at this version
        if old < SCHEMA_VERSION and all(v in MIGRATIONS for v in range(old + 1, SCHEMA_VERSION + 1)):
            with self.transaction() as tx:
                for v in range(old + 1, SCHEMA_VERSION + 1):
                    for sql in _MIGRATION_SQL.get(v, ()):
                        tx.execute(sql)
                have = {r[1] for r in tx.execute("PRAGMA table_info(annotations)")}
                for f in ANNOTATION_FIELDS:  # columns added to the record since (7: rationale)
                    if f not in have:
                        tx.execute(f"ALTER TABLE annotations ADD COLUMN {f} TEXT")
                have = {r[1] for r in tx.execute("PRAGMA table_info(judgments)")}
                for f in JUDGMENT_FIELDS:  # columns added since (8: p_labels; 9: time, period), at the end as in the record
                    if f not in have:
                        tx.execute(f'ALTER TABLE judgments ADD COLUMN "{f}" {_JUDGMENT_TYPES.get(f, "TEXT")}')
                tx.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        elif old != SCHEMA_VERSION:
            raise WorkspaceError(
                f"{self.path}: schema version {old}, this judgecal reads {SCHEMA_VERSION}"
            )

    def _set_up(self) -> tuple[str] | None:
        """WAL mode, the tables (each created if missing) and the schema version; the version row as it was.

        Two processes opening a new workspace at once can find the database locked at once, without SQLite's busy
        wait (switching to WAL, or a read upgraded to a write): every step is idempotent, so it is retried until
        :data:`BUSY_TIMEOUT_S` has passed."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute("PRAGMA synchronous=NORMAL")
                for script in (_SCHEMA + _LS_SCHEMA, _CLAIMS_SCHEMA, _SPECS_SCHEMA, _SPANS_SCHEMA, _STABILITY_SCHEMA,
                               _EXPLORER_SCHEMA, _SNAPSHOT_SCHEMA):
                    self.conn.executescript(script)
                row: tuple[str] | None = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
                if row is None:
                    self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                return row
            except sqlite3.OperationalError as exc:
                if not _is_locked(exc):
                    raise
                if time.monotonic() > deadline:
                    raise self._kept_locked() from None
                if self.conn.in_transaction:
                    self.conn.rollback()
                time.sleep(0.05)

    def full(self) -> DiskFullError:
        return DiskFullError(f"{self.path.parent}: the disk is full; nothing was written, the workspace is as it "
                             "was (free some space and run the command again)")

    def _kept_locked(self) -> WorkspaceError:
        return WorkspaceError(f"{self.path}: another judgecal process kept the workspace locked for "
                              f"{BUSY_TIMEOUT_S:g} s; try again when it has finished")

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing: everything inside commits together or not at all.

        ``BEGIN IMMEDIATE`` takes the workspace's write lock at once: a second writer waits for it
        (up to the connection's 30 s busy timeout) and then stops with a clear message. A write or commit
        that finds the disk full (which SQLite has already rolled back) is a :class:`DiskFullError` naming the
        workspace.
        """
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not _is_locked(exc):
                raise
            raise self._kept_locked() from None
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            if self.conn.in_transaction:  # (SQLite has already rolled back a write that filled the disk)
                self.conn.execute("ROLLBACK")
            if disk_full(exc):
                raise self.full() from None
            raise


    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every query inside sees the same state of the database (WAL), whatever
        another process commits meanwhile. Inside a transaction already, that one is used."""
        if self.conn.in_transaction:
            yield self.conn
            return
        self.conn.execute("BEGIN")
        try:
            yield self.conn
        finally:
            self.conn.execute("COMMIT")


class Repository:
    """One area's SQL over the workspace's :class:`Database` (the base of every repository)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @property
    def _conn(self) -> sqlite3.Connection:
        return self._db.conn


_FLOATS = ("p_a", "p_b", "p_tie", "score", "expected_score", "latency_s", "cost_usd", "created_at")
_INTS = ("sample", "prompt_tokens", "completion_tokens", "seed")


def _compact_frame(cursor: sqlite3.Cursor, cols: list[str], chunk: int = 5_000, rows: int = 0) -> pd.DataFrame:
    """Rows of ``cursor`` as a frame of categoricals (text) and float64 / nullable integers (numbers).

    Each column is written into one array as the chunks come: ``rows`` (the count expected, a hint) sizes it once,
    and it grows in place when more come. Each chunk's text columns are factorised at once and their codes mapped
    into one dictionary per column, so no per-row string object outlives its chunk. The frame keeps the arrays
    as its columns (not copied into blocks): reading costs the frame's own size and one chunk.
    """
    lookup: list[dict[Any, int]] = [{} for _ in cols]
    numeric = [col in _FLOATS or col in _INTS for col in cols]
    arrays: list[np.ndarray[Any, Any]] = [np.empty(max(rows, 0), dtype=np.float64 if num else np.int32)
                                         for num in numeric]
    n = 0
    while fetched := cursor.fetchmany(chunk):
        m = len(fetched)
        table = np.array(fetched, dtype=object).reshape(m, len(cols))
        del fetched
        if n + m > len(arrays[0]):  # more rows than hinted: each array grows in place (realloc, no second copy)
            for k in range(len(cols)):
                arrays[k].resize(max(n + m, 2 * len(arrays[k])), refcheck=False)
        for k in range(len(cols)):
            values = table[:, k]
            if numeric[k]:
                arrays[k][n:n + m] = values  # None reads as NaN
            else:
                codes, uniques = pd.factorize(values, use_na_sentinel=True)
                lut = np.array([lookup[k].setdefault(u, len(lookup[k])) for u in uniques] + [-1], dtype=np.int32)
                arrays[k][n:n + m] = lut[codes]
        n += m
        del table
    out: dict[str, Any] = {}
    for k, col in enumerate(cols):
        data = arrays[k]
        arrays[k] = np.zeros(0)  # let go once its column is made
        data.resize(n, refcheck=False)
        if col in _FLOATS:
            out[col] = data
        elif col in _INTS:
            out[col] = pd.array(data, dtype="Int64") if np.isnan(data).any() else data.astype(np.int64)
        else:
            # plain object categories: a pyarrow-backed one would be converted to Python strings on each lookup
            out[col] = pd.Categorical.from_codes(data, categories=pd.Index(list(lookup[k]), dtype=object))
        del data
    return pd.DataFrame(out, columns=cols, copy=False)
