"""Where the latest audit report is (``meta.latest_report``), the reports folder, and table export."""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from judgecal.data.store._db import Database, Repository
from judgecal.data.store.items import ItemsRepository
from judgecal.data.store.judgments import JudgmentsRepository


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
        with self._db.transaction() as tx:
            tx.execute("INSERT INTO meta VALUES ('latest_report', ?) ON CONFLICT(key) DO UPDATE SET value = "
                       "excluded.value", (where,))

    def latest_report(self) -> Path | None:
        """The ``audit.json`` the latest audit of this workspace wrote (it may since have been removed), or None
        when no audit recorded one."""
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'latest_report'").fetchone()
        return None if row is None else self._folder / row[0]  # an absolute path stays absolute

    def export(self, table: str, path: str | os.PathLike[str]) -> Path:
        """Write one table to Parquet or JSONL (chosen by the file suffix)."""
        if table not in {"items", "judgments", "annotations", "consensus", "spans"}:
            raise ValueError(f"unknown table {table!r}")
        out = Path(path)
        if table == "items":
            df = pd.DataFrame([asdict(it) for it in self._items.items()])
        elif table == "judgments":
            df = self._judgments.judgments_frame()  # one name per judge spec
        else:
            df = pd.read_sql_query(f"SELECT * FROM {table}", self._conn)
        if out.suffix == ".parquet":
            df.to_parquet(out, index=False)
        elif out.suffix in (".jsonl", ".json"):
            df.to_json(out, orient="records", lines=True, force_ascii=False)
        else:
            raise ValueError(f"{out}: export writes .parquet or .jsonl")
        return out
