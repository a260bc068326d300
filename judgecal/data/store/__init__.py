"""The workspace store: a folder with one SQLite database (WAL, transactions, schema version) and reports.

Judgments are keyed by the content hash of the call (see ``judges.engine.cache_key``), so a
re-run inserts nothing twice and a killed run resumes where it stopped.

Only this package speaks SQL to the database, over one private connection (:mod:`._db`; its schema in
:mod:`._schema`). Each area is a repository owning that area's SQL, reached as an attribute of
:class:`Workspace`:

- ``ws.items_repo`` (:mod:`.items`): items, their facts, label sets, metadata, sources;
- ``ws.judgments_repo`` (:mod:`.judgments`): judgments, the call cache, judge specs and names;
- ``ws.claims_repo`` (:mod:`.claims`): claims that keep concurrent judge runs from repeating a call;
- ``ws.annotations_repo`` (:mod:`.annotations`): human labels and consensus;
- ``ws.labelstudio_repo`` (:mod:`.labelstudio`): Label Studio bookkeeping (``ls_*``);
- ``ws.spans_repo`` (:mod:`.spans`): human and judge spans;
- ``ws.stability_repo`` (:mod:`.stability`): stability runs, variants and verdicts;
- ``ws.explorer_repo`` (:mod:`.explorer`): the explorer's read-only queries (``explorer_*``);
- ``ws.reports_repo`` (:mod:`.reports`): the latest report, the reports folder, export.

``Workspace`` itself gives ``ws.transaction()``, ``ws.reports_dir`` and ``ws.bootstrap_weights()``. Tests that
need raw SQL use ``ws._db.conn``.
"""

from judgecal.data.store._db import DB_NAME
from judgecal.data.store._schema import MIGRATIONS, SCHEMA_VERSION
from judgecal.data.store.claims import Claims, RunOwner, pid_alive
from judgecal.data.store.errors import ItemConflictError, WorkspaceError
from judgecal.data.store.naming import SPEC_DEFAULTS, spec_names
from judgecal.data.store.workspace import Workspace

__all__ = ["DB_NAME", "MIGRATIONS", "SCHEMA_VERSION", "SPEC_DEFAULTS", "Claims",
           "ItemConflictError", "RunOwner", "Workspace", "WorkspaceError", "pid_alive", "spec_names"]
