"""Human labels and their consensus (tables ``annotations`` and ``consensus``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import astuple

import pandas as pd

from judgecal.data.records import ANNOTATION_FIELDS, Annotation, Consensus
from judgecal.data.store._db import Repository


class AnnotationsRepository(Repository):
    """Annotations (add, compare, read) and each consensus method's labels."""

    def add_annotations(self, anns: Iterable[Annotation], conn: sqlite3.Connection | None = None) -> int:
        c = conn or self._conn
        before = c.total_changes
        placeholders = ", ".join("?" for _ in ANNOTATION_FIELDS)
        c.executemany(
            f"INSERT OR REPLACE INTO annotations ({', '.join(ANNOTATION_FIELDS)}) VALUES ({placeholders})",
            [astuple(a) for a in anns],
        )
        return c.total_changes - before

    def changed_annotations(self, anns: Iterable[Annotation], conn: sqlite3.Connection | None = None) -> int:
        """How many of ``anns`` are stored (same item, annotator and source) with another label: what
        :meth:`add_annotations` would replace."""
        c = conn or self._conn
        want = {(a.item_id, a.annotator, a.source): a.label for a in anns}
        ids = sorted({k[0] for k in want})
        changed = 0
        for i in range(0, len(ids), 900):
            chunk = ids[i : i + 900]
            q = f"SELECT item_id, annotator, source, label FROM annotations WHERE item_id IN ({', '.join('?' for _ in chunk)})"
            changed += sum(1 for item, who, src, label in c.execute(q, chunk)
                           if (item, who, src) in want and want[(item, who, src)] != label)
        return changed

    def annotations_on(self, item_ids: Iterable[str], source: str) -> list[Annotation]:
        """The stored labels of ``source`` on ``item_ids``."""
        ids, out = sorted(set(item_ids)), []
        for i in range(0, len(ids), 900):
            chunk = ids[i : i + 900]
            q = (f"SELECT {', '.join(ANNOTATION_FIELDS)} FROM annotations WHERE source = ? AND item_id IN "
                 f"({', '.join('?' for _ in chunk)})")
            out += [Annotation(*row) for row in self._conn.execute(q, [source, *chunk])]
        return out

    def annotator_names(self) -> set[str]:
        """Every annotator with a stored label."""
        return {r[0] for r in self._conn.execute("SELECT DISTINCT annotator FROM annotations")}

    def annotations_frame(self) -> pd.DataFrame:
        return pd.read_sql_query(
            f"SELECT {', '.join(ANNOTATION_FIELDS)} FROM annotations ORDER BY rowid", self._conn
        )

    def set_consensus(self, rows: Iterable[Consensus], method: str) -> None:
        with self._db.transaction() as tx:
            tx.execute("DELETE FROM consensus WHERE method = ?", (method,))
            tx.executemany(
                "INSERT INTO consensus VALUES (?, ?, ?, ?)",
                [(c.item_id, c.method, c.label, json.dumps(c.posterior)) for c in rows],
            )

    def has_consensus(self, method: str) -> bool:
        """Whether the consensus ``method`` is stored (one row looked up, none read)."""
        return self._conn.execute("SELECT 1 FROM consensus WHERE method = ? LIMIT 1", (method,)).fetchone() is not None

    def consensus_labels(self, method: str) -> pd.Series:
        """item_id -> label of the consensus ``method`` (without the posteriors :meth:`consensus_frame` reads)."""
        rows = self._conn.execute("SELECT item_id, label FROM consensus WHERE method = ?", (method,)).fetchall()
        return pd.Series([r[1] for r in rows], index=pd.Index([r[0] for r in rows], dtype=object), dtype=object)

    def consensus_frame(self, method: str | None = None) -> pd.DataFrame:
        q, args = "SELECT item_id, method, label, posterior FROM consensus", []
        if method is not None:
            q, args = q + " WHERE method = ?", [method]
        return pd.read_sql_query(q, self._conn, params=args)
