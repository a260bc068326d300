"""Marked stretches of a candidate's text, by people and judges (table ``spans``; see records.Span)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import astuple

import pandas as pd

from judgecal.data.records import SPAN_FIELDS, Span
from judgecal.data.store._db import Repository


class SpansRepository(Repository):
    """The only reader and writer of the spans table."""

    def add_spans(self, spans: Iterable[Span], conn: sqlite3.Connection | None = None) -> int:
        """Insert spans (a span already stored is replaced, so re-importing is idempotent)."""
        if conn is None:
            with self._db.transaction() as tx:
                return self.add_spans(spans, conn=tx)
        rows = [astuple(sp) for sp in spans]
        cols = ", ".join(f'"{f}"' for f in SPAN_FIELDS)
        sql = f"INSERT OR REPLACE INTO spans ({cols}) VALUES ({', '.join('?' for _ in SPAN_FIELDS)})"
        before = conn.total_changes
        conn.executemany(sql, rows)
        return conn.total_changes - before

    def spans_frame(self, kind: str | None = None, source: str | None = None,
                    raters: Iterable[str] | None = None) -> pd.DataFrame:
        """Spans as a frame with the columns of :class:`Span`, in insertion order."""
        where, args = [], []
        for col, val in (("kind", kind), ("source", source)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        if raters is not None:
            names = list(raters)
            where.append(f"rater IN ({', '.join('?' for _ in names)})")
            args.extend(names)
        cols = ", ".join(f'"{f}"' for f in SPAN_FIELDS)
        q = f"SELECT {cols} FROM spans" + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY rowid"
        return pd.read_sql_query(q, self._conn, params=args)

    def replace_judge_spans(self, sources: Iterable[str], spans: Iterable[Span],
                            conn: sqlite3.Connection | None = None) -> int:
        """The judge spans of the judgments ``sources`` (their keys) become ``spans``: a judgment called
        again leaves no spans of its former answer behind."""
        if conn is None:
            with self._db.transaction() as tx:
                return self.replace_judge_spans(sources, spans, conn=tx)
        conn.executemany("DELETE FROM spans WHERE kind = 'judge' AND source = ?", [(s,) for s in sources])
        return self.add_spans(spans, conn=conn)
