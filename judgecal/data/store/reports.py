"""Where the latest audit report is (``meta.latest_report``), what the workspace held when it was written
(``meta.latest_report_state``, so a report older than its evidence is named stale), the reports folder, and
table export."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from judgecal.data.store._db import Database, Repository
from judgecal.data.store.items import ItemsRepository
from judgecal.data.store.judgments import JudgmentsRepository
from judgecal.errors import InputError

# the tables an audit reads, and what their rows are called in a sentence
EVIDENCE = {"items": "items", "judgments": "judgments", "annotations": "human labels",
            "consensus": "consensus labels", "spans": "span annotations"}
DIGESTED = ("annotations", "consensus", "spans")  # changed in place by a pull or an aggregate


class ReportsRepository(Repository):
    """The latest report's path, the reports folder, and export of a table to Parquet or JSONL."""

    def __init__(self, db: Database, folder: Path, items: ItemsRepository, judgments: JudgmentsRepository) -> None:
        super().__init__(db)
        self._folder = folder
        self._items = items
        self._judgments = judgments

    @property
    def reports_dir(self) -> Path:
        return self._folder / "reports"

    def record_report(self, audit_json: Path) -> None:
        """Remember where the latest audit wrote its ``audit.json`` (relative to the workspace when inside it,
        so a moved workspace still finds it), for the explorer and ``judgecal report``."""
        p = Path(audit_json).resolve()
        try:
            where = str(p.relative_to(self._folder.resolve()))
        except ValueError:
            where = str(p)
        state = json.dumps(self.evidence_state())
        digest = _file_digest(p) or ""
        with self._db.transaction() as tx:
            for key, value in (("latest_report", where), ("latest_report_state", state),
                               ("latest_report_digest", digest)):
                tx.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           (key, value))

    def evidence_state(self) -> dict[str, list[Any]]:
        """What an audit reads, per table: its row count and what changes with its content: for items and
        judgments the largest rowid and the store's write token (an update replaces it); for the smaller label
        tables a digest of their rows in sorted order (a pull or an aggregate that rewrites the same rows leaves
        it as it was)."""
        tokens = dict(self._conn.execute("SELECT key, value FROM meta WHERE key IN ('items_version', "
                                         "'judgments_version')"))
        state: dict[str, list[Any]] = {}
        for t in EVIDENCE:
            if t in DIGESTED:
                rows = sorted(repr(row) for row in self._conn.execute(f"SELECT * FROM {t}"))
                h = hashlib.blake2b("\n".join(rows).encode(), digest_size=12)
                state[t] = [len(rows), None, h.hexdigest()]
            else:
                count, top = self._conn.execute(f"SELECT COUNT(*), MAX(rowid) FROM {t}").fetchone()
                state[t] = [count, top, tokens.get(f"{t}_version")]
        return state

    def staleness(self, audit_json: Path) -> str | None:
        """Why ``audit_json`` no longer shows this workspace (e.g. "the workspace changed since: 12 labels
        added"; or, at the latest audit's path, another audit's file than the one it wrote), or ``None`` when it
        does, or when it is not at this workspace's latest audit's path (nothing to compare)."""
        meta = dict(self._conn.execute("SELECT key, value FROM meta WHERE key IN ('latest_report_state', "
                                       "'latest_report_digest')"))
        latest = self.latest_report()
        if latest is None or "latest_report_state" not in meta or latest.resolve() != Path(audit_json).resolve():
            return None
        kept = meta.get("latest_report_digest")
        if kept and _file_digest(Path(audit_json)) not in (None, kept):
            return "this audit.json is not the one the latest audit of this workspace wrote (an earlier audit or a copy)"
        then, now = json.loads(meta["latest_report_state"]), self.evidence_state()
        changes = []
        for table, noun in EVIDENCE.items():
            old, new = then.get(table), now[table]
            if old == new:
                continue
            diff = new[0] - (old[0] if old else 0)
            changes.append(f"{diff:,} {noun} added" if diff > 0 else f"{-diff:,} {noun} removed" if diff < 0
                           else f"{noun} changed")
        if not changes:
            return None
        return "the workspace changed since this audit: " + ", ".join(changes)

    def latest_report(self) -> Path | None:
        """The ``audit.json`` the latest audit of this workspace wrote (it may since have been removed), or None
        when no audit recorded one."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'latest_report'").fetchone()
        return None if row is None else self._folder / row[0]  # an absolute path stays absolute

    def export(self, table: str, path: str | os.PathLike[str]) -> Path:
        """Write one table to Parquet or JSONL (chosen by the file suffix)."""
        if table not in {"items", "judgments", "annotations", "consensus", "spans"}:
            raise InputError(f"unknown table {table!r}", name="table")
        out = Path(path)
        if table == "items":
            df = pd.DataFrame([asdict(it) for it in self._items.items()])
        elif table == "judgments":
            df = self._judgments.judgments_frame()  # one name per judge spec
        else:
            df = pd.read_sql_query(f"SELECT * FROM {table}", self._conn)
        if out.suffix not in (".parquet", ".jsonl", ".json"):
            raise InputError(f"{out}: export writes .parquet or .jsonl")
        tmp = out.with_name(f".{out.name}.tmp")  # a file already at ``out`` is replaced only once the new one is whole
        try:
            if out.suffix == ".parquet":
                _to_parquet(df, tmp)
            else:
                df.to_json(tmp, orient="records", lines=True, force_ascii=False)
            tmp.replace(out)
        finally:
            tmp.unlink(missing_ok=True)
        return out


def _to_parquet(df: pd.DataFrame, path: Path) -> None:
    """``df`` as Parquet; a column of mappings or lists Parquet cannot type (metadata empty everywhere, or holding an
    integer beyond 64 bits) is written as each value's JSON text instead."""
    import pyarrow as pa

    def typable(col: pd.Series) -> bool:
        if col.map(lambda v: v == {}).all():  # a struct with no field
            return False
        try:
            pa.array(col)
        except (pa.ArrowException, OverflowError):
            return False
        return True

    out = df.copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, dict | list)).any() \
                and not typable(out[col]):
            out[col] = out[col].map(lambda v: json.dumps(v, ensure_ascii=False))
    out.to_parquet(path, index=False)


def _file_digest(path: Path) -> str | None:
    """A digest of the file's bytes (which audit.json is there), or ``None`` when it cannot be read."""
    h = hashlib.blake2b(digest_size=12)
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()
