"""Label Studio bookkeeping (tables ``ls_*``; see _schema._LS_SCHEMA for what each holds)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from judgecal.data.records import Annotation, Span
from judgecal.data.store._db import Database, Repository
from judgecal.data.store.annotations import AnnotationsRepository
from judgecal.data.store.spans import SpansRepository


class LabelStudioRepository(Repository):
    """The only reader and writer of the ls_* tables (a pull also writes annotations and spans)."""

    def __init__(self, db: Database, annotations: AnnotationsRepository, spans: SpansRepository) -> None:
        super().__init__(db)
        self._annotations = annotations
        self._spans = spans

    _LS_COPY_COLS = ("task_key", "project", "annotator", "project_id", "item_id", "flipped", "gold_label",
                     "gold_from", "position", "pushed_at")
    _LS_LABEL_COLS = ("project_id", "annotation_id", "task_key", "item_id", "annotator", "completed_by",
                      "updated_by", "choice", "status", "note", "updated_at")

    def ls_projects(self, project: str) -> dict[str, dict[str, Any]]:
        """annotator ('' for a shared project) -> project_id, org_id, overlap, seed of ``project``."""
        rows = self._conn.execute("SELECT annotator, project_id, org_id, overlap, seed FROM ls_projects "
                                  "WHERE project = ? ORDER BY created_at, annotator", (project,))
        return {a: {"project_id": p, "org_id": o, "overlap": ov, "seed": s} for a, p, o, ov, s in rows}

    def ls_save_project(self, project: str, annotator: str, project_id: int, org_id: int | None, overlap: int,
                        seed: int) -> None:
        self._conn.execute("INSERT INTO ls_projects VALUES (?, ?, ?, ?, ?, ?, strftime('%s', 'now')) "
                           "ON CONFLICT (project, annotator) DO UPDATE SET project_id = excluded.project_id, "
                           "org_id = excluded.org_id, overlap = excluded.overlap, seed = excluded.seed",
                           (project, annotator, project_id, org_id, overlap, seed))

    def ls_add_copies(self, rows: Iterable[dict[str, Any]]) -> int:
        """Record task copies sent to Label Studio (one transaction); returns how many."""
        data = [tuple(r[c] for c in self._LS_COPY_COLS) for r in rows]
        with self._db.transaction() as tx:
            tx.executemany(f"INSERT INTO ls_copies ({', '.join(self._LS_COPY_COLS)}) "
                           f"VALUES ({', '.join('?' for _ in self._LS_COPY_COLS)})", data)
        return len(data)

    def _project_rows(self, table: str, cols: tuple[str, ...], order: str, project: str | None) -> pd.DataFrame:
        q, args = f"SELECT {', '.join(cols)} FROM {table}", []
        if project is not None:
            q, args = q + " WHERE project = ?", [project]
        return pd.read_sql_query(f"{q} ORDER BY {order}", self._conn, params=args)

    def ls_copies_frame(self, project: str | None = None) -> pd.DataFrame:
        return self._project_rows("ls_copies", self._LS_COPY_COLS, "annotator, position", project)

    _LS_ACTIVE_COLS = ("project", "item_id", "pi", "drawn", "seed", "tau", "budget", "judge")

    def ls_record_active(self, project: str, draw: pd.DataFrame, *, seed: int, tau: float, budget: int,
                         judge: str | None) -> int:
        """Record an active push's draw into ``project`` (``draw``: item_id index, ``pi``, ``drawn``)."""
        data = [(project, str(i), float(p), int(bool(d)), seed, tau, budget, judge)
                for i, p, d in zip(draw.index, draw["pi"], draw["drawn"], strict=True)]
        with self._db.transaction() as tx:
            tx.executemany(f"INSERT INTO ls_active ({', '.join(self._LS_ACTIVE_COLS)}, drawn_at) "
                           f"VALUES ({', '.join('?' for _ in self._LS_ACTIVE_COLS)}, strftime('%s', 'now'))", data)
        return len(data)

    def ls_active_frame(self, project: str | None = None) -> pd.DataFrame:
        """The recorded active draws (every project when ``None``), one row per (project, item)."""
        return self._project_rows("ls_active", self._LS_ACTIVE_COLS, "project, item_id", project)

    def ls_pushed_items(self, project: str | None = None) -> set[str]:
        """Items sent to ``project`` (to any project when ``None``)."""
        q, args = "SELECT DISTINCT item_id FROM ls_copies", []
        if project is not None:
            q, args = q + " WHERE project = ?", [project]
        return {r[0] for r in self._conn.execute(q, args)}

    def ls_gold(self, project: str | None = None) -> dict[str, str]:
        """item_id -> known label of the gold items sent to ``project`` (all projects when ``None``)."""
        q, args = "SELECT DISTINCT item_id, gold_label FROM ls_copies WHERE gold_label IS NOT NULL", []
        if project is not None:
            q, args = q + " AND project = ?", [project]
        return dict(self._conn.execute(q, args).fetchall())

    def ls_seen(self, project_ids: Iterable[int]) -> dict[tuple[int, int], str]:
        """(project_id, annotation_id) -> updated_at of every annotation already pulled from those projects."""
        ids = list(project_ids)
        if not ids:
            return {}
        q = (f"SELECT project_id, annotation_id, updated_at FROM ls_labels "
             f"WHERE project_id IN ({', '.join('?' for _ in ids)})")
        return {(int(p), int(a)): u for p, a, u in self._conn.execute(q, ids)}

    def ls_record_pull(self, anns: Iterable[Annotation], labels: Iterable[dict[str, Any]],
                       spans: Mapping[str, Iterable[Span]] | None = None, withdrawn: Iterable[str] = (),
                       reopened: Iterable[tuple[int, int, str]] = ()) -> None:
        """Store pulled annotations and what was learnt about each (ok, cancelled, rejected, flagged) at once.

        ``spans`` maps a span annotation's id (``ls:<project_id>:<annotation_id>``, kept in each span's
        ``note`` as ``{"annotation_id": ...}``) to its spans: they replace whatever that annotation, or the
        same rater's earlier annotation of the item in that project, left before. ``withdrawn`` names
        annotations (same ids) that no longer count: whatever an earlier pull stored of them is removed.
        ``reopened`` ((project_id, annotation_id, why)) marks annotations an earlier pull took as rejected for
        ``why`` and as not yet seen, so the next pull reads them again.
        """
        data = [tuple(r.get(c) for c in self._LS_LABEL_COLS) for r in labels]
        anns = list(anns)
        gone: list[tuple[str | None]] = [(ref,) for ref in withdrawn]
        with self._db.transaction() as tx:
            tx.executemany("DELETE FROM annotations WHERE annotation_id = ?", [(a.annotation_id,) for a in anns] + gone)
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND CASE WHEN json_valid(note) THEN "
                           "json_extract(note, '$.annotation_id') END = ?", gone)
            self._annotations.add_annotations(anns, conn=tx)
            groups = {k: list(v) for k, v in (spans or {}).items()}
            # an annotation's spans replace its former ones and the rater's earlier spans of that item
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND CASE WHEN json_valid(note) THEN "
                           "json_extract(note, '$.annotation_id') END = ?", [(k,) for k in groups])
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND item_id = ? AND rater = ? AND source = ?",
                           [(g[0].item_id, g[0].rater, g[0].source) for g in groups.values() if g])
            self._spans.add_spans([sp for g in groups.values() for sp in g], conn=tx)
            tx.executemany(f"INSERT OR REPLACE INTO ls_labels ({', '.join(self._LS_LABEL_COLS)}) "
                           f"VALUES ({', '.join('?' for _ in self._LS_LABEL_COLS)})", data)
            tx.executemany("UPDATE ls_labels SET status = 'rejected', note = ?, updated_at = '' "
                           "WHERE project_id = ? AND annotation_id = ?", [(w, p, a) for p, a, w in reopened])

    def ls_labels_frame(self, project: str | None = None) -> pd.DataFrame:
        """Every pulled annotation with its status; ``project`` keeps those of that judgecal project."""
        cols = ", ".join(f"l.{c}" for c in self._LS_LABEL_COLS)
        q, args = f"SELECT {cols} FROM ls_labels l", []
        if project is not None:
            q += " WHERE l.project_id IN (SELECT project_id FROM ls_projects WHERE project = ?)"
            args = [project]
        return pd.read_sql_query(q + " ORDER BY l.project_id, l.annotation_id", self._conn, params=args)
