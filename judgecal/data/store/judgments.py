"""Judgments and the judges that made them (tables ``judgments`` and ``judge_specs``): adding and reading
judgments, the cache of answered calls, and one readable name per judge spec."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

import pandas as pd

from judgecal.data.records import JUDGMENT_FIELDS, Judgment
from judgecal.data.store import snapshot
from judgecal.data.store._db import Repository, _compact_frame
from judgecal.data.store._schema import SCHEMA_VERSION
from judgecal.data.store.naming import spec_names

_judgment_row = attrgetter(*JUDGMENT_FIELDS)
_JCOLS = ", ".join(f'"{f}"' for f in JUDGMENT_FIELDS)


class JudgmentsRepository(Repository):
    """Judgments (add, cache, verdicts, frames, counts, environments) and judge specs and names."""

    @property
    def _folder(self) -> Path:
        """The workspace folder (its ``cache/`` holds the columnar copies, :mod:`.snapshot`)."""
        return Path(self._db.path).parent

    def judgment_fields(self, keys: Iterable[str], columns: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """key -> the stored ``columns`` (fields of :class:`Judgment`) of each of ``keys`` that is stored."""
        bad = [c for c in columns if c not in JUDGMENT_FIELDS]
        if bad:
            raise ValueError(f"not judgment fields: {', '.join(bad)}")
        cols = ", ".join(f'"{c}"' for c in columns)
        keys = list(keys)
        out: dict[str, tuple[Any, ...]] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i:i + 900]
            q = f"SELECT key, {cols} FROM judgments WHERE key IN ({', '.join('?' for _ in chunk)})"
            out.update((r[0], tuple(r[1:])) for r in self._conn.execute(q, chunk))
        return out

    def judge_spec_hashes(self, judges: Iterable[str]) -> list[tuple[str, str]]:
        """The distinct (judge, spec hash) pairs stored for ``judges``."""
        names = list(judges)
        out: list[tuple[str, str]] = []
        for i in range(0, len(names), 900):
            chunk = names[i:i + 900]
            q = f"SELECT DISTINCT judge, spec_hash FROM judgments WHERE judge IN ({', '.join('?' for _ in chunk)})"
            out += [(str(j), str(h)) for j, h in self._conn.execute(q, chunk)]
        return out

    def add_judgments(
        self, judgments: Iterable[Judgment], conn: sqlite3.Connection | None = None, replace: bool = False
    ) -> int:
        """Insert judgments; a key already present is kept (the cache) unless ``replace``. A write that replaced
        no stored judgment only appended, so the columnar copies of the judgments are extended by its rows
        rather than made again (:func:`.snapshot.bump_version`)."""
        if conn is None:
            with self._db.transaction() as tx:
                return self.add_judgments(judgments, conn=tx, replace=replace)
        before = conn.total_changes
        top = snapshot.top_rowid(conn, "judgments")
        rows: Iterable[tuple[Any, ...]] = map(_judgment_row, judgments)
        appended = True
        if replace:
            rows = list(rows)
            appended = not self.judgment_fields((r[0] for r in rows), ["key"]) if rows else True
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        conn.executemany(f"{verb} INTO judgments ({_JCOLS}) VALUES ({', '.join('?' for _ in JUDGMENT_FIELDS)})", rows)
        added = conn.total_changes - before
        if added:  # the columnar copies of the judgments are out of date
            snapshot.bump_version(conn, "judgments", appended_after=top if appended else None)
        return added

    def cached_keys(self, keys: Iterable[str]) -> set[str]:
        """Keys already answered (a stored ``error`` is retried, not cached)."""
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key FROM judgments WHERE status != 'error' AND key IN ({', '.join('?' for _ in chunk)})"
            found.update(r[0] for r in self._conn.execute(q, chunk))
        return found

    def verdicts_of(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> stored verdict (item orientation) of the calls ``keys`` that have one."""
        keys = list(keys)
        out: dict[str, str] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, verdict FROM judgments WHERE key IN ({', '.join('?' for _ in chunk)})"
            out.update((str(k), str(v)) for k, v in self._conn.execute(q, chunk) if v is not None)
        return out

    # -- judge specs (see _schema._SPECS_SCHEMA) ------------------------------------------------
    def add_judge_specs(self, specs: Iterable[tuple[str, str, Mapping[str, Any]]],
                        conn: sqlite3.Connection | None = None) -> int:
        """Store ``(spec_hash, base name, spec)`` rows; a hash already stored keeps its first name."""
        c = conn or self._conn
        before = c.total_changes
        c.executemany("INSERT OR IGNORE INTO judge_specs VALUES (?, ?, ?, ?)",
                      [(h, name, json.dumps(dict(spec), sort_keys=True), time.time()) for h, name, spec in specs])
        return c.total_changes - before

    def judge_specs(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """spec_hash -> (base name, spec) of every stored spec."""
        rows = self._conn.execute("SELECT spec_hash, name, spec FROM judge_specs").fetchall()
        return {h: (name, json.loads(spec)) for h, name, spec in rows}

    def judge_names(self) -> dict[tuple[str, str], str]:
        """(stored judge, spec_hash) of every judgment -> the judge's name (:func:`spec_names`).

        A stored spec is one judge whatever name its rows carry; a replay judge
        (``replay/<dataset>/<judge>``) is named by its recorded source, one judge across the dataset's
        subsets; any other (judge, spec_hash) without a stored spec is a judge of its own.
        """
        specs = self.judge_specs()
        unit_of: dict[tuple[str, str], tuple[str, ...]] = {}
        units: dict[tuple[str, ...], tuple[str, Mapping[str, Any] | None, str]] = {}
        for judge, h in self._judge_pairs():
            unit: tuple[str, ...]
            if judge.startswith("replay/"):
                unit, base, spec = ("name", judge), judge, None
            elif h in specs:
                unit, (base, spec) = ("spec", h), specs[h]
            else:
                unit, base, spec = ("pair", judge, h), judge, None
            unit_of[(judge, h)] = unit
            units.setdefault(unit, (base, spec, h))
        names = spec_names([(u, base, spec, h) for u, (base, spec, h) in units.items()])
        return {pair: names[u] for pair, u in unit_of.items()}

    def _judge_pairs(self) -> list[tuple[str, str]]:
        """Every distinct (judge, spec_hash) of the judgments in order, found by seeking the (judge, spec_hash)
        index from one pair to the next: a few lookups per judge instead of a scan of every judgment."""
        out: list[tuple[str, str]] = []
        q = "SELECT judge, spec_hash FROM judgments INDEXED BY judgments_judge_spec WHERE "
        row = self._conn.execute(q + "1 ORDER BY judge, spec_hash LIMIT 1").fetchone()
        while row is not None:
            out.append((row[0], row[1]))
            judge, h = row
            row = self._conn.execute(
                q + ("judge IS ? AND spec_hash IS NOT NULL" if h is None else "judge IS ? AND spec_hash > ?")
                + " ORDER BY spec_hash LIMIT 1", (judge,) if h is None else (judge, h)).fetchone()
            if row is None:
                row = self._conn.execute(
                    q + ("judge IS NOT NULL" if judge is None else "judge > ?") + " ORDER BY judge, spec_hash LIMIT 1",
                    () if judge is None else (judge,)).fetchone()
        return out

    def _judge_sql(self, judge: str | None) -> tuple[str, list[str], str, list[str]]:
        """The judge column as named by :meth:`judge_names` (SQL and its arguments), and the WHERE
        clause that keeps one named judge."""
        names = self.judge_names()
        renamed = [(j, h, n) for (j, h), n in names.items() if n != j]
        col, col_args = '"judge"', []
        if renamed:
            col = "CASE " + " ".join("WHEN judge = ? AND spec_hash = ? THEN ?" for _ in renamed) + " ELSE judge END"
            col_args = [x for row in renamed for x in row]
        if judge is None:
            return col, col_args, "", []
        pairs = [pair for pair, n in names.items() if n == judge]
        if not pairs:
            return col, col_args, " WHERE 0", []
        where = " WHERE " + " OR ".join("(judge = ? AND spec_hash = ?)" for _ in pairs)
        return col, col_args, where, [x for pair in pairs for x in pair]

    def judges(self) -> list[str]:
        """Every judge, one name per spec."""
        return sorted(set(self.judge_names().values()))

    def judgments_frame(self, judge: str | None = None, columns: Iterable[str] | None = None,
                        compact: bool = False) -> pd.DataFrame:
        """Judgments as a frame; ``compact`` stores the text columns as categoricals and the numbers in
        the narrowest exact types (an audit of a million judgments then fits in a few hundred MB).
        The ``judge`` column names each spec apart (:meth:`judge_names`); ``judge`` selects one."""
        cols = list(columns) if columns else list(JUDGMENT_FIELDS)
        col, col_args, where, where_args = self._judge_sql(judge)
        select = ", ".join(f'{col} AS "judge"' if c == "judge" else f'"{c}"' for c in cols)
        q = f"SELECT {select} FROM judgments{where}"
        args = (col_args if "judge" in cols else []) + where_args

        order = ""

        def compact_read(conn: sqlite3.Connection, since: int | None = None) -> pd.DataFrame:
            # the count sizes the columns once (a hint: rows written meanwhile are read too)
            if since is None:
                count = conn.execute(f"SELECT COUNT(*) FROM judgments{where}", where_args).fetchone()[0]
                return _compact_frame(conn.execute(q + order, args), cols, rows=int(count))
            # the rows appended since a kept copy, in rowid order as a whole read gives them (after it)
            count = conn.execute("SELECT COUNT(*) FROM judgments WHERE rowid > ?", (since,)).fetchone()[0]
            return _compact_frame(conn.execute(f"{q} WHERE rowid > ? ORDER BY rowid", [*args, since]), cols,
                                  rows=int(count))

        # the audit's read: from its columnar copy while the judgments are unchanged, extended by the rows appended
        # since it was made (never inside a write transaction, whose rows may still be rolled back)
        if compact and judge is None and not self._conn.in_transaction:
            order = " ORDER BY rowid"  # a scan of the table: the order the copy's extensions keep
            with self._db.reading() as conn:
                key = f"{snapshot.table_state(conn, 'judgments', SCHEMA_VERSION)}:{json.dumps(col_args)}"
                return snapshot.kept_frame(conn, self._folder, "judgments", "judgments", key, cols,
                                           lambda since: compact_read(conn, since))
        if compact:
            return compact_read(self._conn)
        # read in chunks: the driver's row tuples for a million rows would double the peak memory
        parts = list(pd.read_sql_query(q, self._conn, params=args, chunksize=100_000))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)

    def judgment_columns(self, columns: Sequence[str]) -> Iterator[pd.Series]:
        """The columns of ``judgments_frame(columns=columns, compact=True)``, one at a time and in that order:
        a reader that keeps part of each (one judge's rows) never holds the whole frame besides its parts."""
        cols = list(columns)
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            frame = self.judgments_frame(columns=cols, compact=True)
            return (frame.pop(c) for c in cols)
        _, col_args, _, _ = self._judge_sql(None)
        with self._db.reading() as conn:
            key = f"{snapshot.table_state(conn, 'judgments', SCHEMA_VERSION)}:{json.dumps(col_args)}"
        stream = snapshot.load_columns(self._folder, "judgments", key, cols)
        if stream is None:  # no copy yet, or another state's: the frame is read (and its copy made) once
            frame = self.judgments_frame(columns=cols, compact=True)
            stream = snapshot.load_columns(self._folder, "judgments", key, cols)
            if stream is None:  # the copy could not be written: the frame's own columns, each dropped once given
                return (frame.pop(c) for c in cols)
            del frame
        return stream

    def judgments_copy(self, columns: Sequence[str]) -> pd.DataFrame | None:
        """``columns`` of every judgment from the columnar copy an audit left in the cache folder (as
        :meth:`judgments_frame` with ``compact=True``), or ``None`` when there is no copy of the judgments as
        they are now, or it lacks a column: a reader that would otherwise read one judge out of SQLite takes
        its rows from the copy instead, and never makes a copy of its own (which would replace the audit's)."""
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            return None
        _, col_args, _, _ = self._judge_sql(None)
        with self._db.reading() as conn:
            key = f"{snapshot.table_state(conn, 'judgments', SCHEMA_VERSION)}:{json.dumps(col_args)}"
        return snapshot.load_frame(self._folder, "judgments", key, list(columns))

    def judgment_chunks(self, columns: Iterable[str], chunk: int = 200_000) -> Iterator[pd.DataFrame]:
        """Every judgment in frames of at most ``chunk`` rows (the ``judge`` column named as in
        :meth:`judgments_frame`): a reader's memory holds one chunk, not the table."""
        cols = list(columns)
        col, col_args, _, _ = self._judge_sql(None)
        select = ", ".join(f'{col} AS "judge"' if c == "judge" else f'"{c}"' for c in cols)
        yield from pd.read_sql_query(f"SELECT {select} FROM judgments", self._conn,
                                     params=col_args if "judge" in cols else [], chunksize=chunk)

    def environment_counts(self) -> list[tuple[str, str, str | None, int]]:
        """``(judge, spec_hash, env, judgments)`` for each environment fingerprint a spec's judgments carry
        (a scan of every judgment, kept in the cache folder while the judgments are unchanged)."""
        q = "SELECT judge, spec_hash, env, COUNT(*) FROM judgments GROUP BY judge, spec_hash, env"
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            return [(str(j), str(h), e, int(n)) for j, h, e, n in self._conn.execute(q)]

        def read(since: int | None, old: list[list[Any]] | None) -> list[list[Any]]:
            counts = {(j, h, e): n for j, h, e, n in old or []}
            for j, h, e, n in conn.execute(q if since is None else q.replace(" GROUP BY", " WHERE rowid > ? GROUP BY"),
                                           () if since is None else (since,)):
                counts[str(j), str(h), e] = counts.get((str(j), str(h), e), 0) + int(n)
            return [[j, h, e, n] for (j, h, e), n in counts.items()]

        with snapshot.filling(self._folder, "environments"), self._db.reading() as conn:
            key = snapshot.table_state(conn, "judgments", SCHEMA_VERSION)
            rows = snapshot.kept_value(conn, self._folder, "environments", "judgments", key, read)
        return [(str(j), str(h), None if e is None else str(e), int(n)) for j, h, e, n in rows]

    def judgments_with(self, column: str, stamps: bool = True) -> bool:
        """Whether any judgment carries ``column`` (``time`` or ``period``); ``stamps=False`` leaves out the
        judgments of judgecal's own engine (those with an environment fingerprint, ``env``), whose ``time`` is
        the stamp of the live call rather than a time the record was given."""
        if column not in ("time", "period"):
            raise ValueError(f"not a when column: {column!r}")
        live = "" if stamps else " AND env IS NULL"
        q = f'SELECT 1 FROM judgments WHERE "{column}" IS NOT NULL{live}'
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            return self._conn.execute(q + " LIMIT 1").fetchone() is not None

        def read(since: int | None, old: bool | None) -> bool:  # none so far: only the rows appended are looked at
            return bool(old) or conn.execute(q + ("" if since is None else " AND rowid > ?") + " LIMIT 1",
                                             () if since is None else (since,)).fetchone() is not None

        with self._db.reading() as conn:  # a scan of every judgment when none has one: kept in the cache folder
            key = snapshot.table_state(conn, "judgments", SCHEMA_VERSION)
            return bool(snapshot.kept_value(conn, self._folder, f"with-{column}-{'all' if stamps else 'given'}",
                                            "judgments", key, read))

    def count_judgments(self, judge: str | None = None) -> int:
        if judge is None:
            return int(self._conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])
        _, _, where, args = self._judge_sql(judge)
        return int(self._conn.execute(f"SELECT COUNT(*) FROM judgments{where}", args).fetchone()[0])
