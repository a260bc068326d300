"""The workspace: a folder with one SQLite database and a ``reports/`` folder, its areas' repositories composed.

Each area is read and written through its repository (``ws.items_repo.add_items(...)``); the workspace itself
only opens the database, composes the repositories and gives transactions.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path

from judgecal.data.store._db import DB_NAME, Database
from judgecal.data.store.annotations import AnnotationsRepository
from judgecal.data.store.claims import ClaimsRepository
from judgecal.data.store.errors import WorkspaceError
from judgecal.data.store.explorer import ExplorerRepository
from judgecal.data.store.items import ItemsRepository
from judgecal.data.store.judgments import JudgmentsRepository
from judgecal.data.store.labelstudio import LabelStudioRepository
from judgecal.data.store.reports import ReportsRepository
from judgecal.data.store.snapshot import WeightFiles
from judgecal.data.store.spans import SpansRepository
from judgecal.data.store.stability import StabilityRepository


class Workspace:
    """A workspace folder holding ``judgecal.sqlite`` and a ``reports/`` folder.

    Its repositories, one per area, over the one private database connection: ``items_repo``,
    ``judgments_repo``, ``claims_repo``, ``annotations_repo``, ``labelstudio_repo``, ``spans_repo``,
    ``stability_repo``, ``explorer_repo``, ``reports_repo``.
    """

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise WorkspaceError(f"workspace {self.path} does not exist; run `judgecal import` first")
            self.path.mkdir(parents=True, exist_ok=True)  # two first runs at once
        if not self.path.is_dir():
            raise WorkspaceError(f"{self.path}: is a file, not a workspace folder")
        self.db_path = self.path / DB_NAME
        self._db = Database(self.db_path)
        self.items_repo = ItemsRepository(self._db)
        self.judgments_repo = JudgmentsRepository(self._db)
        self.claims_repo = ClaimsRepository(self._db)
        self.annotations_repo = AnnotationsRepository(self._db)
        self.spans_repo = SpansRepository(self._db)
        self.labelstudio_repo = LabelStudioRepository(self._db, self.annotations_repo, self.spans_repo)
        self.stability_repo = StabilityRepository(self._db)
        self.explorer_repo = ExplorerRepository(self._db, self.judgments_repo)
        self.reports_repo = ReportsRepository(self._db, self.path, self.items_repo, self.judgments_repo)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """All-or-nothing: everything inside commits together or not at all (:meth:`Database.transaction`);
        pass the connection it gives as ``conn`` to the methods that take one."""
        return self._db.transaction()

    @property
    def reports_dir(self) -> Path:
        return self.reports_repo.reports_dir

    def bootstrap_weights(self) -> WeightFiles:
        """Where an audit keeps the bootstrap weights it drew, for the next (the cache folder)."""
        return WeightFiles(self.path)
