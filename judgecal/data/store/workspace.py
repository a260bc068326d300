"""The workspace: a folder with one SQLite database and a ``reports/`` folder, its areas' repositories composed.

Each public method of :class:`Workspace` that reads or writes an area is that area's repository method,
bound by :class:`_Delegate` (one line each: no code of its own, the repository's signature and docstring).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from types import MethodType
from typing import Concatenate, Generic, ParamSpec, TypeVar, cast, overload

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

R = TypeVar("R")
P = ParamSpec("P")
T = TypeVar("T")


class _Delegate(Generic[R, P, T]):
    """A :class:`Workspace` method that is ``method`` of the workspace's repository attribute ``repo``."""

    def __init__(self, repo: str, method: Callable[Concatenate[R, P], T]) -> None:
        self.repo = repo
        self.method = method
        self.__doc__ = method.__doc__

    @overload
    def __get__(self, ws: None, owner: type[Workspace]) -> _Delegate[R, P, T]: ...

    @overload
    def __get__(self, ws: Workspace, owner: type[Workspace]) -> Callable[P, T]: ...

    def __get__(self, ws: Workspace | None, owner: type[Workspace]) -> _Delegate[R, P, T] | Callable[P, T]:
        if ws is None:
            return self
        return cast(Callable[P, T], MethodType(self.method, getattr(ws, self.repo)))

    def __call__(self, ws: Workspace, /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``Workspace.method(ws, ...)``, as with a method defined in the class."""
        return self.method(getattr(ws, self.repo), *args, **kwargs)


class Workspace:
    """A workspace folder holding ``judgecal.sqlite`` and a ``reports/`` folder.

    Its repositories, one per area, over the one private database connection: ``items_repo``,
    ``judgments_repo``, ``claims_repo``, ``annotations_repo``, ``labelstudio_repo``, ``spans_repo``,
    ``stability_repo``, ``explorer_repo``, ``reports_repo``. Every method below is one of theirs.
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

    record_report = _Delegate("reports_repo", ReportsRepository.record_report)
    latest_report = _Delegate("reports_repo", ReportsRepository.latest_report)
    staleness = _Delegate("reports_repo", ReportsRepository.staleness)
    export = _Delegate("reports_repo", ReportsRepository.export)

    # -- items
    add_items = _Delegate("items_repo", ItemsRepository.add_items)
    item_ids = _Delegate("items_repo", ItemsRepository.item_ids)
    ids_under = _Delegate("items_repo", ItemsRepository.ids_under)
    items = _Delegate("items_repo", ItemsRepository.items)
    item_tasks = _Delegate("items_repo", ItemsRepository.item_tasks)
    item_facts = _Delegate("items_repo", ItemsRepository.item_facts)
    response_clusters = _Delegate("items_repo", ItemsRepository.response_clusters)
    label_sets = _Delegate("items_repo", ItemsRepository.label_sets)
    item_metadata = _Delegate("items_repo", ItemsRepository.item_metadata)
    sources = _Delegate("items_repo", ItemsRepository.sources)

    # -- judgments and judge specs
    add_judgments = _Delegate("judgments_repo", JudgmentsRepository.add_judgments)
    judgment_fields = _Delegate("judgments_repo", JudgmentsRepository.judgment_fields)
    judge_spec_hashes = _Delegate("judgments_repo", JudgmentsRepository.judge_spec_hashes)
    cached_keys = _Delegate("judgments_repo", JudgmentsRepository.cached_keys)
    verdicts_of = _Delegate("judgments_repo", JudgmentsRepository.verdicts_of)
    add_judge_specs = _Delegate("judgments_repo", JudgmentsRepository.add_judge_specs)
    judge_specs = _Delegate("judgments_repo", JudgmentsRepository.judge_specs)
    judge_names = _Delegate("judgments_repo", JudgmentsRepository.judge_names)
    judges = _Delegate("judgments_repo", JudgmentsRepository.judges)
    judgments_frame = _Delegate("judgments_repo", JudgmentsRepository.judgments_frame)
    judgment_columns = _Delegate("judgments_repo", JudgmentsRepository.judgment_columns)
    judgments_copy = _Delegate("judgments_repo", JudgmentsRepository.judgments_copy)
    judgment_chunks = _Delegate("judgments_repo", JudgmentsRepository.judgment_chunks)
    environment_counts = _Delegate("judgments_repo", JudgmentsRepository.environment_counts)
    count_judgments = _Delegate("judgments_repo", JudgmentsRepository.count_judgments)
    judgments_with = _Delegate("judgments_repo", JudgmentsRepository.judgments_with)

    # -- claims
    claim = _Delegate("claims_repo", ClaimsRepository.claim)
    heartbeat = _Delegate("claims_repo", ClaimsRepository.heartbeat)
    release = _Delegate("claims_repo", ClaimsRepository.release)

    # -- annotations and consensus
    add_annotations = _Delegate("annotations_repo", AnnotationsRepository.add_annotations)
    changed_annotations = _Delegate("annotations_repo", AnnotationsRepository.changed_annotations)
    annotations_frame = _Delegate("annotations_repo", AnnotationsRepository.annotations_frame)
    annotations_on = _Delegate("annotations_repo", AnnotationsRepository.annotations_on)
    set_consensus = _Delegate("annotations_repo", AnnotationsRepository.set_consensus)
    consensus_frame = _Delegate("annotations_repo", AnnotationsRepository.consensus_frame)
    consensus_labels = _Delegate("annotations_repo", AnnotationsRepository.consensus_labels)
    has_consensus = _Delegate("annotations_repo", AnnotationsRepository.has_consensus)

    # -- Label Studio
    ls_projects = _Delegate("labelstudio_repo", LabelStudioRepository.ls_projects)
    ls_save_project = _Delegate("labelstudio_repo", LabelStudioRepository.ls_save_project)
    ls_add_copies = _Delegate("labelstudio_repo", LabelStudioRepository.ls_add_copies)
    ls_copies_frame = _Delegate("labelstudio_repo", LabelStudioRepository.ls_copies_frame)
    ls_pushed_items = _Delegate("labelstudio_repo", LabelStudioRepository.ls_pushed_items)
    ls_record_active = _Delegate("labelstudio_repo", LabelStudioRepository.ls_record_active)
    ls_active_frame = _Delegate("labelstudio_repo", LabelStudioRepository.ls_active_frame)
    ls_gold = _Delegate("labelstudio_repo", LabelStudioRepository.ls_gold)
    ls_seen = _Delegate("labelstudio_repo", LabelStudioRepository.ls_seen)
    ls_record_pull = _Delegate("labelstudio_repo", LabelStudioRepository.ls_record_pull)
    ls_labels_frame = _Delegate("labelstudio_repo", LabelStudioRepository.ls_labels_frame)

    # -- spans
    add_spans = _Delegate("spans_repo", SpansRepository.add_spans)
    spans_frame = _Delegate("spans_repo", SpansRepository.spans_frame)
    replace_judge_spans = _Delegate("spans_repo", SpansRepository.replace_judge_spans)

    # -- stability
    add_stability_run = _Delegate("stability_repo", StabilityRepository.add_stability_run)
    stability_runs = _Delegate("stability_repo", StabilityRepository.stability_runs)
    stability_variants = _Delegate("stability_repo", StabilityRepository.stability_variants)
    stability_verdicts = _Delegate("stability_repo", StabilityRepository.stability_verdicts)

    # -- explorer (read only)
    explorer_items_index = _Delegate("explorer_repo", ExplorerRepository.explorer_items_index)
    explorer_item = _Delegate("explorer_repo", ExplorerRepository.explorer_item)
    explorer_item_judgments = _Delegate("explorer_repo", ExplorerRepository.explorer_item_judgments)
    explorer_item_annotations = _Delegate("explorer_repo", ExplorerRepository.explorer_item_annotations)
    explorer_item_consensus = _Delegate("explorer_repo", ExplorerRepository.explorer_item_consensus)
    explorer_item_spans = _Delegate("explorer_repo", ExplorerRepository.explorer_item_spans)
    explorer_verdicts = _Delegate("explorer_repo", ExplorerRepository.explorer_verdicts)
    explorer_label_sources = _Delegate("explorer_repo", ExplorerRepository.explorer_label_sources)
    explorer_span_items = _Delegate("explorer_repo", ExplorerRepository.explorer_span_items)
    explorer_judges = _Delegate("explorer_repo", ExplorerRepository.explorer_judges)
    explorer_categories = _Delegate("explorer_repo", ExplorerRepository.explorer_categories)
    explorer_models = _Delegate("explorer_repo", ExplorerRepository.explorer_models)
    explorer_label_source_names = _Delegate("explorer_repo", ExplorerRepository.explorer_label_source_names)
    explorer_find_items = _Delegate("explorer_repo", ExplorerRepository.explorer_find_items)

