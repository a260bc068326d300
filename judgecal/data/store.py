"""The workspace: a folder with one SQLite database (WAL, transactions, schema version) and reports.

Judgments are keyed by the content hash of the call (see ``judges.engine.cache_key``), so a
re-run inserts nothing twice and a killed run resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, astuple, dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from judgecal.data.records import (
    ANNOTATION_FIELDS,
    JUDGMENT_FIELDS,
    SPAN_FIELDS,
    Annotation,
    Consensus,
    Item,
    Judgment,
    LabelSet,
    Span,
)
from judgecal.errors import UserError

SCHEMA_VERSION = 8
# Additive migrations: version -> what it adds (the CREATE TABLE IF NOT EXISTS below does the work;
# _MIGRATION_SQL holds the data a version copies forward, if any).
MIGRATIONS = {2: "Label Studio task mapping (ls_tasks) and pulled annotation ids (ls_pulled)",
              3: "Label Studio per-annotator projects (ls_projects), task copies (ls_copies), pulled labels (ls_labels)",
              4: "judge specs (judge_specs) and the (judge, spec_hash) index of judgments",
              5: "human and judge spans (spans)",
              6: "stability runs, their variants and per-item verdicts (stability_*)",
              7: "annotators' rationales (annotations.rationale)",
              8: "a label judge's label probabilities (judgments.p_labels)"}
DB_NAME = "judgecal.sqlite"
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process's write lock

_JUDGMENT_TYPES = {
    "key": "TEXT PRIMARY KEY",
    "sample": "INTEGER",
    "seed": "INTEGER",
    "score": "REAL",
    "p_a": "REAL",
    "p_b": "REAL",
    "p_tie": "REAL",
    "expected_score": "REAL",
    "prompt_tokens": "INTEGER",
    "completion_tokens": "INTEGER",
    "latency_s": "REAL",
    "cost_usd": "REAL",
    "created_at": "REAL",
}

_judgment_row = attrgetter(*JUDGMENT_FIELDS)
_JCOLS = ", ".join(f'"{f}"' for f in JUDGMENT_FIELDS)

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    item_id TEXT PRIMARY KEY, source TEXT NOT NULL, task TEXT NOT NULL, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS judgments (
    {", ".join(f'"{f}" {_JUDGMENT_TYPES.get(f, "TEXT")}' for f in JUDGMENT_FIELDS)}
);
CREATE INDEX IF NOT EXISTS judgments_judge ON judgments (judge);
CREATE INDEX IF NOT EXISTS judgments_item ON judgments (item_id);
CREATE TABLE IF NOT EXISTS annotations (
    {", ".join(f"{f} {'REAL' if f == 'time_spent_s' else 'TEXT'}" for f in ANNOTATION_FIELDS)},
    UNIQUE (item_id, annotator, source)
);
CREATE TABLE IF NOT EXISTS ls_tasks (
    task_key TEXT PRIMARY KEY, project TEXT NOT NULL, project_id INTEGER NOT NULL, item_id TEXT NOT NULL,
    flipped INTEGER NOT NULL, gold_label TEXT, task_id INTEGER, pushed_at REAL NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS ls_tasks_item ON ls_tasks (project, item_id);
CREATE TABLE IF NOT EXISTS ls_pulled (
    annotation_id INTEGER NOT NULL, project_id INTEGER NOT NULL, updated_at TEXT NOT NULL,
    status TEXT NOT NULL, PRIMARY KEY (project_id, annotation_id)
);
CREATE TABLE IF NOT EXISTS consensus (
    item_id TEXT NOT NULL, method TEXT NOT NULL, label TEXT NOT NULL, posterior TEXT NOT NULL,
    PRIMARY KEY (item_id, method)
);
"""

# -- Label Studio state (read and written only through the Workspace methods below) ----------------
# ls_projects: one Label Studio project per (judgecal project, annotator); annotator '' = one shared project.
# ls_copies: one row per task sent (an item's copy for one annotator), with its opaque key, A/B flip,
#            gold answer and where it came from, and its place in that annotator's random order.
# ls_labels: every annotation pulled, who made it (completed_by) and who last changed it (updated_by),
#            the choice as shown (e.g. both_bad), and whether it was ok, cancelled, rejected or flagged.
_LS_SCHEMA = """
CREATE TABLE IF NOT EXISTS ls_projects (
    project TEXT NOT NULL, annotator TEXT NOT NULL, project_id INTEGER NOT NULL, org_id INTEGER,
    overlap INTEGER NOT NULL, seed INTEGER NOT NULL, created_at REAL NOT NULL, PRIMARY KEY (project, annotator)
);
CREATE TABLE IF NOT EXISTS ls_copies (
    task_key TEXT PRIMARY KEY, project TEXT NOT NULL, annotator TEXT NOT NULL, project_id INTEGER NOT NULL,
    item_id TEXT NOT NULL, flipped INTEGER NOT NULL, gold_label TEXT, gold_from TEXT, position INTEGER NOT NULL,
    pushed_at REAL NOT NULL, UNIQUE (project, annotator, item_id)
);
CREATE TABLE IF NOT EXISTS ls_labels (
    project_id INTEGER NOT NULL, annotation_id INTEGER NOT NULL, task_key TEXT, item_id TEXT, annotator TEXT,
    completed_by TEXT, updated_by TEXT, choice TEXT, status TEXT NOT NULL, note TEXT, updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, annotation_id)
);
"""
_MIGRATION_SQL: dict[int, tuple[str, ...]] = {3: (
    "INSERT OR IGNORE INTO ls_copies SELECT task_key, project, '', project_id, item_id, flipped, gold_label, "
    "NULL, rowid, pushed_at FROM ls_tasks",
    "INSERT OR IGNORE INTO ls_projects SELECT project, '', project_id, NULL, 0, 0, MIN(pushed_at) FROM ls_tasks "
    "GROUP BY project, project_id",
    "INSERT OR IGNORE INTO ls_labels (project_id, annotation_id, status, updated_at) "
    "SELECT project_id, annotation_id, status, updated_at FROM ls_pulled",
)}

# -- judge-call claims: concurrent judge runs on one workspace never make the same call twice ------------
# runs: one row per live judge run (a random owner id, its pid and host, a heartbeat it refreshes);
# claims: the call keys a run is making. Not data: both are emptied as runs end or die.
_CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (owner TEXT PRIMARY KEY, pid INTEGER NOT NULL, host TEXT NOT NULL,
                                 heartbeat REAL NOT NULL);
CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, owner TEXT NOT NULL);
"""

# -- judge specs: a judge is a spec (backend, model, rubric, every output-changing parameter) -----------
# judge_specs: each spec once, its hash -> base name and JSON (judgecal.judges.spec). A judgment keeps its
# spec's base name (judgments.judge) and hash (judgments.spec_hash); judge_names() gives each spec its own
# readable name, which is what the judgments frame shows, so no consumer ever pools two specs.
_SPECS_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_specs (spec_hash TEXT PRIMARY KEY, name TEXT NOT NULL, spec TEXT NOT NULL,
                                        created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS judgments_judge_spec ON judgments (judge, spec_hash);
"""
# What a bare name stands for when one name has several specs (the defaults of judgecal.judges.spec).
SPEC_DEFAULTS: dict[str, Any] = {"rubric": "pairwise", "temperature": 0.0, "max_tokens": 8, "logprobs": True,
                                 "top_logprobs": 10}
_SUFFIX_ORDER = ("rubric", "rubric_hash", "temperature", "max_tokens", "logprobs", "top_logprobs", "model",
                 "identity", "endpoint", "backend")


def _flat_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in spec.items() if k not in ("options", "name")}
    if out.get("logprobs") is False:  # without log-probabilities, how many is moot
        out["top_logprobs"] = SPEC_DEFAULTS["top_logprobs"]
    for k, v in (spec.get("options") or {}).items():
        out[k if k not in out else f"options.{k}"] = v
    return out


def _show(v: Any) -> str:
    return ("true" if v else "false") if isinstance(v, bool) else "none" if v is None else str(v)


def spec_names(units: Sequence[tuple[Any, str, Mapping[str, Any] | None, str]]) -> dict[Any, str]:
    """Readable, distinct names for judge specs given as ``(unit, base name, spec or None, spec hash)``.

    A base name with one spec keeps it (``local/smollm2``). Several specs under one base name get a
    suffix naming where each departs from :data:`SPEC_DEFAULTS` among the fields that differ
    (``local/smollm2[temperature=0.7]``, ``local/smollm2[rubric=pointwise-5]``); the one spec at the
    defaults, if there is one, keeps the bare name. Two versions of one rubric show its content hash
    (``rubric=pairwise@1a2b3c``); a spec not stored (older workspaces) shows its hash (``[spec=1a2b3c4d]``).
    """
    by_base: dict[str, list[tuple[Any, Mapping[str, Any] | None, str]]] = {}
    for unit, base, spec, h in units:
        by_base.setdefault(base, []).append((unit, spec, h))
    out: dict[Any, str] = {}
    for base, group in by_base.items():
        if len(group) == 1:
            out[group[0][0]] = base
            continue
        flats = [_flat_spec(s) if s is not None else {"spec": h[:8]} for _, s, h in group]
        keys: set[str] = set().union(*flats)
        differ = sorted((k for k in keys if len({json.dumps(f.get(k), sort_keys=True, default=str) for f in flats}) > 1),
                        key=lambda k: (_SUFFIX_ORDER.index(k) if k in _SUFFIX_ORDER else len(_SUFFIX_ORDER), k))
        if "rubric_hash" in differ and len({(f.get("rubric"), f.get("rubric_hash")) for f in flats}) == \
                len({f.get("rubric") for f in flats}):
            differ.remove("rubric_hash")  # the rubric's name tells its versions apart

        def default(f: Mapping[str, Any], k: str) -> bool:
            return k in SPEC_DEFAULTS and f.get(k) == SPEC_DEFAULTS[k]

        plain = [i for i, f in enumerate(flats) if all(default(f, k) for k in differ)]
        for i, ((unit, _, _), f) in enumerate(zip(group, flats, strict=True)):
            if plain == [i]:
                out[unit] = base
                continue
            shown = [k for k in differ if not default(f, k)] or differ
            parts = []
            for k in shown:
                if k == "rubric" and "rubric_hash" in differ:
                    continue
                if k == "rubric_hash":
                    parts.append(f"rubric={_show(f.get('rubric'))}@{str(f.get('rubric_hash'))[:6]}")
                else:
                    parts.append(f"{k}={_show(f.get(k))}")
            out[unit] = f"{base}[{';'.join(parts)}]"
    # the last word: two units never share a name
    seen: dict[str, int] = {}
    for name in out.values():
        seen[name] = seen.get(name, 0) + 1
    hashes = {unit: h for unit, _, _, h in units}
    return {u: (f"{n}[spec={hashes[u][:8]}]" if seen[n] > 1 else n) for u, n in out.items()}


@dataclass(frozen=True)
class RunOwner:
    """Who holds claims: a random id, the process and the host."""

    id: str
    pid: int
    host: str

    @classmethod
    def here(cls) -> RunOwner:
        return cls(uuid.uuid4().hex, os.getpid(), socket.gethostname())


@dataclass
class Claims:
    """The outcome of :meth:`Workspace.claim`: keys this run now holds, keys another live run holds."""

    mine: set[str] = field(default_factory=set)
    held: set[str] = field(default_factory=set)
    holders: list[str] = field(default_factory=list)


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with id ``pid`` is running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_FLOATS = ("p_a", "p_b", "p_tie", "score", "expected_score", "latency_s", "cost_usd", "created_at")
_INTS = ("sample", "prompt_tokens", "completion_tokens", "seed")


def _compact_frame(cursor: sqlite3.Cursor, cols: list[str], chunk: int = 20_000) -> pd.DataFrame:
    """Rows of ``cursor`` as a frame of categoricals (text) and float64 / nullable integers (numbers).

    Each chunk's text columns are factorised at once and their codes mapped into one dictionary per
    column, so no per-row string object outlives its chunk.
    """
    lookup: list[dict[Any, int]] = [{} for _ in cols]
    pieces: list[list[np.ndarray]] = [[] for _ in cols]
    while rows := cursor.fetchmany(chunk):
        table = np.array(rows, dtype=object).reshape(len(rows), len(cols))
        del rows
        for k, col in enumerate(cols):
            values = table[:, k]
            if col in _FLOATS or col in _INTS:
                pieces[k].append(np.array(values, dtype=np.float64))
            else:
                codes, uniques = pd.factorize(values, use_na_sentinel=True)
                lut = np.array([lookup[k].setdefault(u, len(lookup[k])) for u in uniques] + [-1], dtype=np.int32)
                pieces[k].append(lut[codes])
        del table
    out: dict[str, Any] = {}
    for k, col in enumerate(cols):
        data: np.ndarray[Any, Any] = np.concatenate(pieces[k]) if pieces[k] else np.zeros(0)
        pieces[k] = []
        if col in _FLOATS:
            out[col] = data
        elif col in _INTS:
            out[col] = pd.array(data, dtype="Int64") if np.isnan(data).any() else data.astype(np.int64)  # type: ignore[arg-type]
        else:
            out[col] = pd.Categorical.from_codes(data.astype(np.int32), categories=list(lookup[k]))  # type: ignore[call-overload]
    return pd.DataFrame(out, columns=cols)

# -- spans: marked stretches of a candidate's text, by people and judges (see records.Span) ---------------
# One row per span; a rater who marked nothing on an item has one empty span (start = end = 0). Written and
# read only through Workspace.add_spans / spans_frame.
_SPANS_SCHEMA = """
CREATE TABLE IF NOT EXISTS spans (
    item_id TEXT NOT NULL, rater TEXT NOT NULL, candidate INTEGER NOT NULL, start INTEGER NOT NULL,
    "end" INTEGER NOT NULL, label TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL, score REAL, note TEXT,
    UNIQUE (item_id, rater, candidate, start, "end", label, source, kind)
);
CREATE INDEX IF NOT EXISTS spans_item ON spans (item_id);
"""

# -- Stability: runs of one judge over variants (seed, temperature, mutation, ..., backend, GPU) -----------
# A run has variants; each variant is one judgment set (or reuses another variant's, ``reused_from``) with
# its headline figures (JSON) and environment fingerprint; per item its swap-debiased verdict and raw
# outputs, so scores, bootstrap CIs and the guard's diff report are recomputed from the workspace alone.
# Written and read only through the Stability methods of Workspace.
_STABILITY_SCHEMA = """
CREATE TABLE IF NOT EXISTS stability_runs (
    run_id TEXT PRIMARY KEY, judge TEXT NOT NULL, spec_hash TEXT, origin TEXT NOT NULL, created_at REAL NOT NULL,
    config TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS stability_variants (
    run_id TEXT NOT NULL, variant INTEGER NOT NULL, name TEXT NOT NULL, axis TEXT NOT NULL, level TEXT NOT NULL,
    spec_hash TEXT, reused_from INTEGER, calls INTEGER NOT NULL, paid INTEGER NOT NULL, env TEXT, prompt TEXT,
    figures TEXT NOT NULL, PRIMARY KEY (run_id, variant)
);
CREATE TABLE IF NOT EXISTS stability_verdicts (
    run_id TEXT NOT NULL, variant INTEGER NOT NULL, item_id TEXT NOT NULL, verdict TEXT, raw TEXT,
    PRIMARY KEY (run_id, variant, item_id)
);
"""

# -- Explorer indexes (read by the Explorer queries of Workspace; no data of their own, so no migration) ---
# judgments_explorer covers the item verdicts the Items page filters on (the first sample of the unmutated
# prompt, per judge and item, in each order): one judge's verdicts are one index range read in item order,
# every judge's one index scan. The items_* expression indexes hold the Items page's filter values.
_EXPLORER_SCHEMA = """
CREATE INDEX IF NOT EXISTS judgments_explorer ON judgments (mutation, sample, judge, spec_hash, item_id, "order",
                                                            verdict);
CREATE INDEX IF NOT EXISTS items_category ON items (json_extract(data, '$.metadata.category'));
CREATE INDEX IF NOT EXISTS items_model_a ON items (json_extract(data, '$.candidates[0].model'));
CREATE INDEX IF NOT EXISTS items_model_b ON items (json_extract(data, '$.candidates[1].model'));
"""


class WorkspaceError(UserError, RuntimeError):
    """A workspace that cannot be opened or is of an unknown schema."""


class ItemConflictError(WorkspaceError):
    """Items whose ids are already in the workspace with other content; nothing was written."""

    def __init__(self, conflicts: list[tuple[str, list[str]]], origins: Mapping[str, str] | None = None) -> None:
        self.ids = [i for i, _ in conflicts]
        where = (origins or {}).get(self.ids[0])
        first, fields = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        super().__init__(f"{where + ': ' if where else ''}id {first!r} is already in the workspace with a different "
                         f"{', '.join(fields)}{more}; nothing written (give new ids or use another workspace)")


class Workspace:
    """A workspace folder holding ``judgecal.sqlite`` and a ``reports/`` folder."""

    def __init__(self, path: str | os.PathLike[str], create: bool = True) -> None:
        self.path = Path(path)
        if not self.path.exists():
            if not create:
                raise WorkspaceError(f"workspace {self.path} does not exist; run `judgecal import` first")
            self.path.mkdir(parents=True, exist_ok=True)  # two first runs at once
        if not self.path.is_dir():
            raise WorkspaceError(f"{self.path}: is a file, not a workspace folder")
        self.db_path = self.path / DB_NAME
        if self.db_path.exists():
            if not (os.access(self.db_path, os.R_OK | os.W_OK) and os.access(self.path, os.W_OK | os.X_OK)):
                raise WorkspaceError(f"{self.db_path}: the workspace is read-only; judgecal needs to write to "
                                     "the database and its folder")
            with open(self.db_path, "rb") as fh:
                head = fh.read(16)
            if head and head != b"SQLite format 3\x00":
                raise WorkspaceError(f"{self.db_path}: not a judgecal workspace database (not SQLite, or damaged)")
        self.conn = sqlite3.connect(self.db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA + _LS_SCHEMA)
        self.conn.executescript(_CLAIMS_SCHEMA)
        self.conn.executescript(_SPECS_SCHEMA)
        self.conn.executescript(_SPANS_SCHEMA)
        self.conn.executescript(_STABILITY_SCHEMA)
        self.conn.executescript(_EXPLORER_SCHEMA)
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self.conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        elif int(row[0]) < SCHEMA_VERSION and all(v in MIGRATIONS for v in range(int(row[0]) + 1, SCHEMA_VERSION + 1)):
            with self.transaction() as tx:
                for v in range(int(row[0]) + 1, SCHEMA_VERSION + 1):
                    for sql in _MIGRATION_SQL.get(v, ()):
                        tx.execute(sql)
                have = {r[1] for r in tx.execute("PRAGMA table_info(annotations)")}
                for f in ANNOTATION_FIELDS:  # columns added to the record since (7: rationale)
                    if f not in have:
                        tx.execute(f"ALTER TABLE annotations ADD COLUMN {f} TEXT")
                have = {r[1] for r in tx.execute("PRAGMA table_info(judgments)")}
                for f in JUDGMENT_FIELDS:  # columns added since (8: p_labels), at the end as in the record
                    if f not in have:
                        tx.execute(f'ALTER TABLE judgments ADD COLUMN "{f}" {_JUDGMENT_TYPES.get(f, "TEXT")}')
                tx.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        elif int(row[0]) != SCHEMA_VERSION:
            raise WorkspaceError(
                f"{self.db_path}: schema version {row[0]}, this judgecal reads {SCHEMA_VERSION}"
            )

    @property
    def reports_dir(self) -> Path:
        return self.path / "reports"

    def record_report(self, audit_json: Path) -> None:
        """Remember where the latest audit wrote its ``audit.json`` (relative to the workspace when inside it,
        so a moved workspace still finds it), for the explorer and ``judgecal report``."""
        p = Path(audit_json).resolve()
        try:
            where = str(p.relative_to(self.path.resolve()))
        except ValueError:
            where = str(p)
        with self.transaction() as tx:
            tx.execute("INSERT INTO meta VALUES ('latest_report', ?) ON CONFLICT(key) DO UPDATE SET value = "
                       "excluded.value", (where,))

    def latest_report(self) -> Path | None:
        """The ``audit.json`` the latest audit of this workspace wrote (it may since have been removed), or None
        when no audit recorded one."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'latest_report'").fetchone()
        return None if row is None else self.path / row[0]  # an absolute path stays absolute

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing: everything inside commits together or not at all.

        ``BEGIN IMMEDIATE`` takes the workspace's write lock at once: a second writer waits for it
        (up to the connection's 30 s busy timeout) and then stops with a clear message.
        """
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise WorkspaceError(f"{self.db_path}: another judgecal process kept the workspace locked for "
                                 f"{BUSY_TIMEOUT_S:g} s; try again when it has finished") from None
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- items ---------------------------------------------------------------------------
    def add_items(self, items: Iterable[Item], conn: sqlite3.Connection | None = None,
                  origins: Mapping[str, str] | None = None, progress: Callable[[int], None] | None = None) -> int:
        """Insert items; an id already stored with the same content is skipped (re-importing is
        idempotent), one stored with other content raises :class:`ItemConflictError` and writes
        nothing. Check and insert run in one write transaction (the caller's, when ``conn`` is
        given), so two concurrent imports cannot overwrite each other. ``origins`` maps an id to where
        it came from (``file:line``) for the message; ``progress(n)`` hears how many are inserted so far."""
        items = list(items)
        if conn is None:
            with self.transaction() as tx:
                return self.add_items(items, conn=tx, origins=origins, progress=progress)
        before = conn.total_changes
        conflicts: list[tuple[str, list[str]]] = []
        for i in range(0, len(items), 900):
            chunk = items[i : i + 900]
            q = f"SELECT item_id, data FROM items WHERE item_id IN ({', '.join('?' for _ in chunk)})"
            stored = dict(conn.execute(q, [it.item_id for it in chunk]).fetchall())
            for it in chunk:
                if it.item_id in stored:
                    # both through JSON, so e.g. a tuple and the list it is stored as compare equal
                    old = asdict(Item.from_json(stored[it.item_id]))
                    diff = [k for k, v in asdict(Item.from_json(it.to_json())).items() if old.get(k) != v]
                    if diff:
                        conflicts.append((it.item_id, diff))
        if conflicts:
            raise ItemConflictError(conflicts, origins)
        for i in range(0, len(items), 900):
            conn.executemany("INSERT OR IGNORE INTO items VALUES (?, ?, ?, ?)",
                             [(it.item_id, it.source, it.task, it.to_json()) for it in items[i : i + 900]])
            if progress is not None:
                progress(min(i + 900, len(items)))
        return conn.total_changes - before

    def item_ids(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT item_id FROM items")}

    def items(self, source: str | None = None, ids: Iterable[str] | None = None) -> list[Item]:
        q, args = "SELECT data FROM items", []
        if source is not None:
            q, args = q + " WHERE source = ?", [source]
        out = [Item.from_json(r[0]) for r in self.conn.execute(q + " ORDER BY rowid", args)]
        if ids is not None:
            wanted = set(ids)
            out = [it for it in out if it.item_id in wanted]
        return out

    def item_tasks(self) -> dict[str, str]:
        """item_id -> its task (``pairwise``, ``pointwise``, ...)."""
        return {str(i): str(t) for i, t in self.conn.execute("SELECT item_id, task FROM items")}

    def item_facts(self) -> pd.DataFrame:
        """One row per item: source, task, the word lengths and families of its first two candidates.

        Streamed from SQLite, so an audit never holds every response text at once.
        """
        q = ("SELECT item_id, source, task, json_extract(data, '$.candidates[0].text'), "
             "json_extract(data, '$.candidates[1].text'), json_extract(data, '$.candidates[0].family'), "
             "json_extract(data, '$.candidates[1].family'), json_array_length(data, '$.candidates'), "
             "json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model') "
             "FROM items ORDER BY rowid")
        rows = [(i, src, task, len(str(a).split()) if a is not None else 0,
                 len(str(b).split()) if b is not None else 0, fa, fb, n, ma, mb)
                for i, src, task, a, b, fa, fb, n, ma, mb in self.conn.execute(q)]
        return pd.DataFrame(rows, columns=["item_id", "source", "task", "len_a", "len_b", "family_a", "family_b",
                                           "n_candidates", "model_a", "model_b"]).set_index("item_id")

    def response_clusters(self) -> pd.Series:
        """item_id -> cluster number of the pointwise items: items with the same prompt and response (several
        key facts checked against one summary) are one cluster (ranked in SQLite: no text leaves it)."""
        q = ("SELECT item_id, dense_rank() OVER (ORDER BY json_extract(data, '$.prompt'), "
             "json_extract(data, '$.candidates[0].text')) FROM items WHERE task = 'pointwise'")
        return pd.Series({i: int(c) for i, c in self.conn.execute(q)}, dtype=np.int64)

    def label_sets(self) -> pd.Series:
        """item_id -> :class:`LabelSet` of the binary and categorical items (streamed from SQLite)."""
        rows = self.conn.execute("SELECT item_id, json_extract(data, '$.label_set') FROM items "
                                 "WHERE json_extract(data, '$.label_set') IS NOT NULL ORDER BY rowid")
        cache: dict[str, LabelSet] = {}
        out = {}
        for i, blob in rows:
            if blob not in cache:
                cache[blob] = LabelSet.from_dict(json.loads(blob))
            out[i] = cache[blob]
        return pd.Series(out, dtype=object)

    def item_metadata(self, key: str) -> pd.Series:
        """item_id -> ``metadata[key]`` as text, for the items that carry it (streamed from SQLite)."""
        rows = self.conn.execute("SELECT item_id, json_extract(data, '$.metadata.' || json_quote(?)) FROM items "
                                 "ORDER BY rowid", (key,))
        return pd.Series({i: str(v) for i, v in rows if v is not None}, dtype=object)

    def sources(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT DISTINCT source FROM items ORDER BY source")]

    # -- judgments -----------------------------------------------------------------------
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
            out.update((r[0], tuple(r[1:])) for r in self.conn.execute(q, chunk))
        return out

    def judge_spec_hashes(self, judges: Iterable[str]) -> list[tuple[str, str]]:
        """The distinct (judge, spec hash) pairs stored for ``judges``."""
        names = list(judges)
        out: list[tuple[str, str]] = []
        for i in range(0, len(names), 900):
            chunk = names[i:i + 900]
            q = f"SELECT DISTINCT judge, spec_hash FROM judgments WHERE judge IN ({', '.join('?' for _ in chunk)})"
            out += [(str(j), str(h)) for j, h in self.conn.execute(q, chunk)]
        return out

    def add_judgments(
        self, judgments: Iterable[Judgment], conn: sqlite3.Connection | None = None, replace: bool = False
    ) -> int:
        """Insert judgments; a key already present is kept (the cache) unless ``replace``."""
        c = conn or self.conn
        before = c.total_changes
        placeholders = ", ".join("?" for _ in JUDGMENT_FIELDS)
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        sql = f"{verb} INTO judgments ({_JCOLS}) VALUES ({placeholders})"
        if conn is None:
            with self.transaction() as tx:
                tx.executemany(sql, map(_judgment_row, judgments))
        else:
            c.executemany(sql, map(_judgment_row, judgments))
        return c.total_changes - before

    def cached_keys(self, keys: Iterable[str]) -> set[str]:
        """Keys already answered (a stored ``error`` is retried, not cached)."""
        keys = list(keys)
        found: set[str] = set()
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key FROM judgments WHERE status != 'error' AND key IN ({', '.join('?' for _ in chunk)})"
            found.update(r[0] for r in self.conn.execute(q, chunk))
        return found

    def verdicts_of(self, keys: Iterable[str]) -> dict[str, str]:
        """key -> stored verdict (item orientation) of the calls ``keys`` that have one."""
        keys = list(keys)
        out: dict[str, str] = {}
        for i in range(0, len(keys), 900):
            chunk = keys[i : i + 900]
            q = f"SELECT key, verdict FROM judgments WHERE key IN ({', '.join('?' for _ in chunk)})"
            out.update((str(k), str(v)) for k, v in self.conn.execute(q, chunk) if v is not None)
        return out

    # -- claims: concurrent judge runs never make the same call twice -----------------------------
    def claim(self, keys: Sequence[str], owner: RunOwner, stale_s: float = 60.0) -> Claims:
        """In one write transaction: drop the claims of dead runs (same host and pid gone, or no
        heartbeat for ``stale_s``), then claim every key neither answered nor held by a live run."""
        now, out = time.time(), Claims()
        keys = list(dict.fromkeys(keys))
        with self.transaction() as tx:
            for oid, pid, host, beat in tx.execute("SELECT owner, pid, host, heartbeat FROM runs").fetchall():
                if oid != owner.id and (now - beat > stale_s or (host == owner.host and not pid_alive(pid))):
                    tx.execute("DELETE FROM claims WHERE owner = ?", (oid,))
                    tx.execute("DELETE FROM runs WHERE owner = ?", (oid,))
            tx.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)", (owner.id, owner.pid, owner.host, now))
            holders: set[str] = set()
            for i in range(0, len(keys), 900):
                chunk = keys[i : i + 900]
                marks = ", ".join("?" for _ in chunk)
                answered = {r[0] for r in tx.execute(
                    f"SELECT key FROM judgments WHERE status != 'error' AND key IN ({marks})", chunk)}
                taken = dict(tx.execute(f"SELECT key, owner FROM claims WHERE key IN ({marks})", chunk).fetchall())
                free = [k for k in chunk if k not in answered and k not in taken]
                tx.executemany("INSERT INTO claims VALUES (?, ?)", [(k, owner.id) for k in free])
                out.mine.update(free)
                for k, o in taken.items():
                    if k not in answered:
                        (out.mine if o == owner.id else out.held).add(k)
                        holders.add(o)
            holders.discard(owner.id)
            for oid in sorted(holders):
                row = tx.execute("SELECT pid, host FROM runs WHERE owner = ?", (oid,)).fetchone()
                if row:
                    out.holders.append(f"pid {row[0]} on {row[1]}")
        return out

    def heartbeat(self, owner: RunOwner) -> None:
        """Tell other runs this one is alive (its claims stay valid)."""
        self.conn.execute("UPDATE runs SET heartbeat = ? WHERE owner = ?", (time.time(), owner.id))

    def release(self, owner: RunOwner) -> None:
        """Drop every claim of ``owner`` (a run that ended)."""
        with self.transaction() as tx:
            tx.execute("DELETE FROM claims WHERE owner = ?", (owner.id,))
            tx.execute("DELETE FROM runs WHERE owner = ?", (owner.id,))

    # -- judge specs (see _SPECS_SCHEMA) --------------------------------------------------------
    def add_judge_specs(self, specs: Iterable[tuple[str, str, Mapping[str, Any]]],
                        conn: sqlite3.Connection | None = None) -> int:
        """Store ``(spec_hash, base name, spec)`` rows; a hash already stored keeps its first name."""
        c = conn or self.conn
        before = c.total_changes
        c.executemany("INSERT OR IGNORE INTO judge_specs VALUES (?, ?, ?, ?)",
                      [(h, name, json.dumps(dict(spec), sort_keys=True), time.time()) for h, name, spec in specs])
        return c.total_changes - before

    def judge_specs(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """spec_hash -> (base name, spec) of every stored spec."""
        rows = self.conn.execute("SELECT spec_hash, name, spec FROM judge_specs").fetchall()
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
        row = self.conn.execute(q + "1 ORDER BY judge, spec_hash LIMIT 1").fetchone()
        while row is not None:
            out.append((row[0], row[1]))
            judge, h = row
            row = self.conn.execute(
                q + ("judge IS ? AND spec_hash IS NOT NULL" if h is None else "judge IS ? AND spec_hash > ?")
                + " ORDER BY spec_hash LIMIT 1", (judge,) if h is None else (judge, h)).fetchone()
            if row is None:
                row = self.conn.execute(
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
        if compact:
            return _compact_frame(self.conn.execute(q, args), cols)
        # read in chunks: the driver's row tuples for a million rows would double the peak memory
        parts = list(pd.read_sql_query(q, self.conn, params=args, chunksize=100_000))
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)

    def judgment_chunks(self, columns: Iterable[str], chunk: int = 200_000) -> Iterator[pd.DataFrame]:
        """Every judgment in frames of at most ``chunk`` rows (the ``judge`` column named as in
        :meth:`judgments_frame`): a reader's memory holds one chunk, not the table."""
        cols = list(columns)
        col, col_args, _, _ = self._judge_sql(None)
        select = ", ".join(f'{col} AS "judge"' if c == "judge" else f'"{c}"' for c in cols)
        yield from pd.read_sql_query(f"SELECT {select} FROM judgments", self.conn,
                                     params=col_args if "judge" in cols else [], chunksize=chunk)

    def environment_counts(self) -> list[tuple[str, str, str | None, int]]:
        """``(judge, spec_hash, env, judgments)`` for each environment fingerprint a spec's judgments carry."""
        return [(str(j), str(h), e, int(n)) for j, h, e, n in self.conn.execute(
            "SELECT judge, spec_hash, env, COUNT(*) FROM judgments GROUP BY judge, spec_hash, env")]

    def count_judgments(self, judge: str | None = None) -> int:
        if judge is None:
            return int(self.conn.execute("SELECT COUNT(*) FROM judgments").fetchone()[0])
        _, _, where, args = self._judge_sql(judge)
        return int(self.conn.execute(f"SELECT COUNT(*) FROM judgments{where}", args).fetchone()[0])

    # -- annotations and consensus ---------------------------------------------------------
    def add_annotations(self, anns: Iterable[Annotation], conn: sqlite3.Connection | None = None) -> int:
        c = conn or self.conn
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
        c = conn or self.conn
        want = {(a.item_id, a.annotator, a.source): a.label for a in anns}
        ids = sorted({k[0] for k in want})
        changed = 0
        for i in range(0, len(ids), 900):
            chunk = ids[i : i + 900]
            q = f"SELECT item_id, annotator, source, label FROM annotations WHERE item_id IN ({', '.join('?' for _ in chunk)})"
            changed += sum(1 for item, who, src, label in c.execute(q, chunk)
                           if (item, who, src) in want and want[(item, who, src)] != label)
        return changed

    def annotations_frame(self) -> pd.DataFrame:
        return pd.read_sql_query(
            f"SELECT {', '.join(ANNOTATION_FIELDS)} FROM annotations ORDER BY rowid", self.conn
        )

    def set_consensus(self, rows: Iterable[Consensus], method: str) -> None:
        with self.transaction() as tx:
            tx.execute("DELETE FROM consensus WHERE method = ?", (method,))
            tx.executemany(
                "INSERT INTO consensus VALUES (?, ?, ?, ?)",
                [(c.item_id, c.method, c.label, json.dumps(c.posterior)) for c in rows],
            )

    def consensus_frame(self, method: str | None = None) -> pd.DataFrame:
        q, args = "SELECT item_id, method, label, posterior FROM consensus", []
        if method is not None:
            q, args = q + " WHERE method = ?", [method]
        return pd.read_sql_query(q, self.conn, params=args)

    # -- export ------------------------------------------------------------------------------
    def export(self, table: str, path: str | os.PathLike[str]) -> Path:
        """Write one table to Parquet or JSONL (chosen by the file suffix)."""
        if table not in {"items", "judgments", "annotations", "consensus", "spans"}:
            raise ValueError(f"unknown table {table!r}")
        out = Path(path)
        if table == "items":
            df = pd.DataFrame([asdict(it) for it in self.items()])
        elif table == "judgments":
            df = self.judgments_frame()  # one name per judge spec
        else:
            df = pd.read_sql_query(f"SELECT * FROM {table}", self.conn)
        if out.suffix == ".parquet":
            df.to_parquet(out, index=False)
        elif out.suffix in (".jsonl", ".json"):
            df.to_json(out, orient="records", lines=True, force_ascii=False)
        else:
            raise ValueError(f"{out}: export writes .parquet or .jsonl")
        return out

    # -- Label Studio ------------------------------------------------------------------------------
    # The only place that reads or writes the ls_* tables (see _LS_SCHEMA for what each holds).
    _LS_COPY_COLS = ("task_key", "project", "annotator", "project_id", "item_id", "flipped", "gold_label",
                     "gold_from", "position", "pushed_at")
    _LS_LABEL_COLS = ("project_id", "annotation_id", "task_key", "item_id", "annotator", "completed_by",
                      "updated_by", "choice", "status", "note", "updated_at")

    def ls_projects(self, project: str) -> dict[str, dict[str, Any]]:
        """annotator ('' for a shared project) -> project_id, org_id, overlap, seed of ``project``."""
        rows = self.conn.execute("SELECT annotator, project_id, org_id, overlap, seed FROM ls_projects "
                                 "WHERE project = ? ORDER BY created_at, annotator", (project,))
        return {a: {"project_id": p, "org_id": o, "overlap": ov, "seed": s} for a, p, o, ov, s in rows}

    def ls_save_project(self, project: str, annotator: str, project_id: int, org_id: int | None, overlap: int,
                        seed: int) -> None:
        self.conn.execute("INSERT INTO ls_projects VALUES (?, ?, ?, ?, ?, ?, strftime('%s', 'now')) "
                          "ON CONFLICT (project, annotator) DO UPDATE SET project_id = excluded.project_id, "
                          "org_id = excluded.org_id, overlap = excluded.overlap, seed = excluded.seed",
                          (project, annotator, project_id, org_id, overlap, seed))

    def ls_add_copies(self, rows: Iterable[dict[str, Any]]) -> int:
        """Record task copies sent to Label Studio (one transaction); returns how many."""
        data = [tuple(r[c] for c in self._LS_COPY_COLS) for r in rows]
        with self.transaction() as tx:
            tx.executemany(f"INSERT INTO ls_copies ({', '.join(self._LS_COPY_COLS)}) "
                           f"VALUES ({', '.join('?' for _ in self._LS_COPY_COLS)})", data)
        return len(data)

    def ls_copies_frame(self, project: str | None = None) -> pd.DataFrame:
        q, args = f"SELECT {', '.join(self._LS_COPY_COLS)} FROM ls_copies", []
        if project is not None:
            q, args = q + " WHERE project = ?", [project]
        return pd.read_sql_query(q + " ORDER BY annotator, position", self.conn, params=args)

    def ls_pushed_items(self, project: str | None = None) -> set[str]:
        """Items sent to ``project`` (to any project when ``None``)."""
        q, args = "SELECT DISTINCT item_id FROM ls_copies", []
        if project is not None:
            q, args = q + " WHERE project = ?", [project]
        return {r[0] for r in self.conn.execute(q, args)}

    def ls_gold(self, project: str | None = None) -> dict[str, str]:
        """item_id -> known label of the gold items sent to ``project`` (all projects when ``None``)."""
        q, args = "SELECT DISTINCT item_id, gold_label FROM ls_copies WHERE gold_label IS NOT NULL", []
        if project is not None:
            q, args = q + " AND project = ?", [project]
        return dict(self.conn.execute(q, args).fetchall())

    def ls_seen(self, project_ids: Iterable[int]) -> dict[tuple[int, int], str]:
        """(project_id, annotation_id) -> updated_at of every annotation already pulled from those projects."""
        ids = list(project_ids)
        if not ids:
            return {}
        q = (f"SELECT project_id, annotation_id, updated_at FROM ls_labels "
             f"WHERE project_id IN ({', '.join('?' for _ in ids)})")
        return {(int(p), int(a)): u for p, a, u in self.conn.execute(q, ids)}

    def ls_record_pull(self, anns: Iterable[Annotation], labels: Iterable[dict[str, Any]],
                       spans: Mapping[str, Iterable[Span]] | None = None, withdrawn: Iterable[str] = ()) -> None:
        """Store pulled annotations and what was learnt about each (ok, cancelled, rejected, flagged) at once.

        ``spans`` maps a span annotation's id (``ls:<project_id>:<annotation_id>``, kept in each span's
        ``note`` as ``{"annotation_id": ...}``) to its spans: they replace whatever that annotation, or the
        same rater's earlier annotation of the item in that project, left before. ``withdrawn`` names
        annotations (same ids) that no longer count: whatever an earlier pull stored of them is removed.
        """
        data = [tuple(r.get(c) for c in self._LS_LABEL_COLS) for r in labels]
        anns = list(anns)
        gone: list[tuple[str | None]] = [(ref,) for ref in withdrawn]
        with self.transaction() as tx:
            tx.executemany("DELETE FROM annotations WHERE annotation_id = ?", [(a.annotation_id,) for a in anns] + gone)
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND CASE WHEN json_valid(note) THEN "
                           "json_extract(note, '$.annotation_id') END = ?", gone)
            self.add_annotations(anns, conn=tx)
            groups = {k: list(v) for k, v in (spans or {}).items()}
            # an annotation's spans replace its former ones and the rater's earlier spans of that item
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND CASE WHEN json_valid(note) THEN "
                           "json_extract(note, '$.annotation_id') END = ?", [(k,) for k in groups])
            tx.executemany("DELETE FROM spans WHERE kind = 'human' AND item_id = ? AND rater = ? AND source = ?",
                           [(g[0].item_id, g[0].rater, g[0].source) for g in groups.values() if g])
            self.add_spans([sp for g in groups.values() for sp in g], conn=tx)
            tx.executemany(f"INSERT OR REPLACE INTO ls_labels ({', '.join(self._LS_LABEL_COLS)}) "
                           f"VALUES ({', '.join('?' for _ in self._LS_LABEL_COLS)})", data)

    def ls_labels_frame(self, project: str | None = None) -> pd.DataFrame:
        """Every pulled annotation with its status; ``project`` keeps those of that judgecal project."""
        cols = ", ".join(f"l.{c}" for c in self._LS_LABEL_COLS)
        q, args = f"SELECT {cols} FROM ls_labels l", []
        if project is not None:
            q += " WHERE l.project_id IN (SELECT project_id FROM ls_projects WHERE project = ?)"
            args = [project]
        return pd.read_sql_query(q + " ORDER BY l.project_id, l.annotation_id", self.conn, params=args)

    # -- spans -------------------------------------------------------------------------------------
    # The only place that reads or writes the spans table (see _SPANS_SCHEMA).
    def add_spans(self, spans: Iterable[Span], conn: sqlite3.Connection | None = None) -> int:
        """Insert spans (a span already stored is replaced, so re-importing is idempotent)."""
        if conn is None:
            with self.transaction() as tx:
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
        return pd.read_sql_query(q, self.conn, params=args)

    def replace_judge_spans(self, sources: Iterable[str], spans: Iterable[Span],
                            conn: sqlite3.Connection | None = None) -> int:
        """The judge spans of the judgments ``sources`` (their keys) become ``spans``: a judgment called
        again leaves no spans of its former answer behind."""
        if conn is None:
            with self.transaction() as tx:
                return self.replace_judge_spans(sources, spans, conn=tx)
        conn.executemany("DELETE FROM spans WHERE kind = 'judge' AND source = ?", [(s,) for s in sources])
        return self.add_spans(spans, conn=conn)

    # -- Stability -----------------------------------------------------------------------------------
    # The only place that reads or writes the stability_* tables (see _STABILITY_SCHEMA).
    _STAB_VARIANT_COLS = ("variant", "name", "axis", "level", "spec_hash", "reused_from", "calls", "paid", "env",
                          "prompt", "figures")

    def add_stability_run(self, run: Mapping[str, Any], variants: Iterable[Mapping[str, Any]],
                          verdicts: Iterable[tuple[int, str, str | None, str | None]]) -> None:
        """Store (or replace) one stability run: its row, its variants and per-item ``(variant, item_id,
        verdict, raw)`` rows, all or nothing. ``figures`` and ``config`` are JSON-encoded here."""
        rid = str(run["run_id"])
        rows = [tuple(json.dumps(v[c], sort_keys=True) if c == "figures" else v.get(c)
                      for c in self._STAB_VARIANT_COLS) for v in variants]
        with self.transaction() as tx:
            for table in ("stability_verdicts", "stability_variants", "stability_runs"):
                tx.execute(f"DELETE FROM {table} WHERE run_id = ?", (rid,))
            tx.execute("INSERT INTO stability_runs VALUES (?, ?, ?, ?, ?, ?)",
                       (rid, run["judge"], run.get("spec_hash"), run.get("origin", "cpu"),
                        float(run.get("created_at") or time.time()), json.dumps(run.get("config") or {}, sort_keys=True)))
            tx.executemany(f"INSERT INTO stability_variants (run_id, {', '.join(self._STAB_VARIANT_COLS)}) "
                           f"VALUES (?, {', '.join('?' for _ in self._STAB_VARIANT_COLS)})", [(rid, *r) for r in rows])
            tx.executemany("INSERT INTO stability_verdicts VALUES (?, ?, ?, ?, ?)", [(rid, *v) for v in verdicts])

    def stability_runs(self) -> list[dict[str, Any]]:
        """Every stored stability run, oldest first, ``config`` decoded."""
        cur = self.conn.execute("SELECT run_id, judge, spec_hash, origin, created_at, config FROM stability_runs "
                                "ORDER BY created_at, run_id")
        return [{"run_id": r[0], "judge": r[1], "spec_hash": r[2], "origin": r[3], "created_at": r[4],
                 "config": json.loads(r[5])} for r in cur]

    def stability_variants(self, run_id: str) -> list[dict[str, Any]]:
        """The variants of one run in order, ``figures`` decoded."""
        cols = ", ".join(self._STAB_VARIANT_COLS)
        cur = self.conn.execute(f"SELECT {cols} FROM stability_variants WHERE run_id = ? ORDER BY variant", (run_id,))
        out = [dict(zip(self._STAB_VARIANT_COLS, r, strict=True)) for r in cur]
        for v in out:
            v["figures"] = json.loads(v["figures"])
        return out

    def stability_verdicts(self, run_id: str) -> pd.DataFrame:
        """Per-item verdicts of one run: ``variant, item_id, verdict, raw``."""
        return pd.read_sql_query("SELECT variant, item_id, verdict, raw FROM stability_verdicts WHERE run_id = ? "
                                 "ORDER BY variant, item_id", self.conn, params=[run_id])

    # -- Explorer queries ------------------------------------------------------------------------------
    # Small reads for the explorer (apps/): one page's summary or one item at a time, never every judgment
    # to show one item; raw judge output and item texts are read only for the item shown.
    def explorer_items_index(self) -> pd.DataFrame:
        """One row per item, no texts: ``item_id, source, task, category, model_a, model_b``."""
        q = ("SELECT item_id, source, task, json_extract(data, '$.metadata.category'), "
             "json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model') "
             "FROM items ORDER BY rowid")
        return pd.DataFrame(self.conn.execute(q).fetchall(),
                            columns=["item_id", "source", "task", "category", "model_a", "model_b"])

    def explorer_item(self, item_id: str) -> Item | None:
        row = self.conn.execute("SELECT data FROM items WHERE item_id = ?", (item_id,)).fetchone()
        return Item.from_json(row[0]) if row else None

    def explorer_item_judgments(self, item_id: str,
                                names: Mapping[tuple[str, str], str] | None = None) -> pd.DataFrame:
        """Every judgment of one item (through the item index), raw text kept; each judge named per spec by
        ``names`` (:meth:`judge_names`, which reads every judgment: pass it once, cached)."""
        names = self.judge_names() if names is None else names
        df = pd.read_sql_query('SELECT judge, spec_hash, "order", mutation, sample, verdict, score, status, raw, '
                               "latency_s, cost_usd FROM judgments WHERE item_id = ? "
                               'ORDER BY judge, mutation, sample, "order"', self.conn, params=[item_id])
        df["judge"] = [names.get((j, h), j) for j, h in zip(df["judge"], df["spec_hash"], strict=True)]
        return df.drop(columns=["spec_hash"])

    def explorer_item_annotations(self, item_id: str) -> pd.DataFrame:
        return pd.read_sql_query("SELECT annotator, label, rationale, shown_order, time_spent_s, source FROM annotations "
                                 "WHERE item_id = ? ORDER BY rowid", self.conn, params=[item_id])

    def explorer_item_consensus(self, item_id: str) -> pd.DataFrame:
        return pd.read_sql_query("SELECT method, label, posterior FROM consensus WHERE item_id = ? ORDER BY method",
                                 self.conn, params=[item_id])

    def explorer_item_spans(self, item_id: str) -> pd.DataFrame:
        cols = ", ".join(f'"{f}"' for f in SPAN_FIELDS)
        return pd.read_sql_query(f"SELECT {cols} FROM spans WHERE item_id = ? ORDER BY rowid", self.conn,
                                 params=[item_id])

    def explorer_verdicts(self, judge: str | None = None) -> pd.DataFrame:
        """Per (item, judge): the verdict of the first sample of the unmutated prompt in each order
        (``AB``, ``BA``; ``None`` where not judged). No raw text is read. ``judge``: that judge only (a seek
        in the ``judgments_explorer`` index instead of a pass over every judgment)."""
        names = self.judge_names()
        where, args = "WHERE mutation = 'none' AND sample = 0", []
        if judge is not None:
            pairs = [pair for pair, n in names.items() if n == judge]
            where += " AND (" + (" OR ".join("(judge = ? AND spec_hash = ?)" for _ in pairs) or "0") + ")"
            args = [x for pair in pairs for x in pair]
        q = ("SELECT item_id, judge, spec_hash, MAX(CASE WHEN \"order\" = 'AB' THEN verdict END), "
             f"MAX(CASE WHEN \"order\" = 'BA' THEN verdict END) FROM judgments {where} "
             "GROUP BY judge, spec_hash, item_id")
        df = pd.DataFrame(self.conn.execute(q, args).fetchall(), columns=["item_id", "judge", "spec_hash", "AB", "BA"])
        df["judge"] = [names.get((j, h), j) for j, h in zip(df["judge"], df["spec_hash"], strict=True)]
        return df.drop(columns=["spec_hash"])

    def explorer_label_sources(self) -> pd.DataFrame:
        """``item_id, source`` of the human labels, each pair once."""
        return pd.read_sql_query("SELECT DISTINCT item_id, source FROM annotations", self.conn)

    def explorer_span_items(self) -> pd.DataFrame:
        """``item_id, kind`` of the items with spans (a rater's empty mark counts as looked at)."""
        return pd.read_sql_query("SELECT DISTINCT item_id, kind FROM spans", self.conn)

    # The Items page's item verdict (the audit's judgecal.audit.models.item_verdicts, invalid as a tie), in SQL over
    # columns ``ab`` and ``ba``: the two orders' common verdict, a tie when they differ, the one order's
    # verdict when only one was judged; ``invalid`` counts as a tie.
    _ITEM_VERDICT = ("CASE WHEN ab IS NULL THEN {b} WHEN ba IS NULL THEN {a} WHEN {a} = {b} THEN {a} ELSE 'tie' END"
                     .format(a="(CASE WHEN ab = 'invalid' THEN 'tie' ELSE ab END)",
                             b="(CASE WHEN ba = 'invalid' THEN 'tie' ELSE ba END)"))
    _ORDERS = ("MAX(CASE WHEN \"order\" = 'AB' THEN verdict END) AS ab, "
               "MAX(CASE WHEN \"order\" = 'BA' THEN verdict END) AS ba")
    _CATEGORY = "json_extract(data, '$.metadata.category')"  # the expressions of the items_* indexes
    _MODELS = ("json_extract(data, '$.candidates[0].model')", "json_extract(data, '$.candidates[1].model')")

    def explorer_judges(self) -> list[str]:
        """The judges (named per spec) with a verdict on the unmutated prompt (what the Items page shows)."""
        q = "SELECT 1 FROM judgments WHERE mutation = 'none' AND sample = 0 AND judge IS ? AND spec_hash IS ? LIMIT 1"
        return sorted({n for pair, n in self.judge_names().items() if self.conn.execute(q, pair).fetchone()})

    def explorer_categories(self) -> list[Any]:
        """Every distinct ``metadata.category`` of the items, as stored (text or a number), read from its index."""
        return [r[0] for r in self.conn.execute(f"SELECT DISTINCT {self._CATEGORY} FROM items "
                                                f"WHERE {self._CATEGORY} IS NOT NULL")]

    def explorer_models(self) -> list[Any]:
        """Every distinct model of the items' first two candidates, read from their indexes."""
        found = [r[0] for m in self._MODELS for r in self.conn.execute(f"SELECT DISTINCT {m} FROM items "
                                                                        f"WHERE {m} IS NOT NULL")]
        return list(dict.fromkeys(found))

    def explorer_label_source_names(self) -> list[str]:
        """Every source of a human label, sorted."""
        return [r[0] for r in self.conn.execute("SELECT DISTINCT source FROM annotations ORDER BY source")]

    def explorer_find_items(self, judge: str | None, consensus: str | None, *, humans: bool = False,
                            orders: bool = False, judges: bool = False, spans: bool = False,
                            categories: Sequence[Any] = (), models: Sequence[Any] = (),
                            label_sources: Sequence[str] = (), limit: int = 200) -> tuple[int, pd.DataFrame]:
        """The Items page's selection, made in SQLite: how many items match, and the first ``limit`` of them,
        shortest ids first (numeric ids then read in order).

        The items ``judge`` judged (every item when None), each with ``source, task, category, model_a,
        model_b``, the judge's verdict in each order (``judge AB``, ``judge BA``: the first sample of the
        unmutated prompt; only with a judge) and ``humans``, the label of consensus ``consensus`` (of the
        method before its ``:`` when that one has no rows). Filters, all of which must hold: ``humans`` the
        judge's item verdict (:attr:`_ITEM_VERDICT`) is not the humans' label; ``orders`` its two orders'
        verdicts differ; ``judges`` the judges' (each spec's) item verdicts on the item are not all the same;
        ``spans`` someone marked a span on it; ``categories`` its ``metadata.category`` is one of these;
        ``models`` either candidate's model is; ``label_sources`` a human label of it comes from one of
        these. ``humans`` and ``orders`` apply only with a judge.
        """
        cols = ["item_id", "source", "task", "category", "model_a", "model_b",
                *(["judge AB", "judge BA"] if judge is not None else []), "humans"]
        args: list[Any] = []
        if judge is None:
            mine = "SELECT item_id, NULL AS ab, NULL AS ba FROM items"
        else:
            pairs = [pair for pair, n in self.judge_names().items() if n == judge]
            if not pairs:
                return 0, pd.DataFrame(columns=cols)
            one = "FROM judgments WHERE mutation = 'none' AND sample = 0 AND judge IS ? AND spec_hash IS ?"
            mine = (f"SELECT item_id, {self._ORDERS} {one} GROUP BY item_id" if len(pairs) == 1 else
                    f"SELECT item_id, {self._ORDERS} FROM ("
                    + " UNION ALL ".join(f'SELECT item_id, "order", verdict {one}' for _ in pairs)
                    + ") GROUP BY item_id")
            args += [x for pair in pairs for x in pair]
        if consensus is not None and ":" in consensus and self.conn.execute(
                "SELECT 1 FROM consensus WHERE method = ? LIMIT 1", (consensus,)).fetchone() is None:
            consensus = consensus.split(":")[0]
        where: list[str] = []
        join = ""
        if humans and judge is not None:
            join = " JOIN consensus c ON c.item_id = m.item_id AND c.method = ?"
            args.append(consensus)
            where.append(f"({self._ITEM_VERDICT}) IS NOT c.label")
        if orders and judge is not None:
            where.append("m.ab IS NOT NULL AND m.ba IS NOT NULL AND m.ab <> m.ba")
        if judges:
            each = (f"SELECT item_id, {self._ORDERS} FROM judgments WHERE mutation = 'none' AND sample = 0 "
                    "GROUP BY judge, spec_hash, item_id")
            where.append(f"m.item_id IN (SELECT item_id FROM (SELECT item_id, {self._ITEM_VERDICT} AS v FROM ({each})) "
                         "GROUP BY item_id HAVING MIN(v) <> MAX(v))")
        if spans:
            where.append("EXISTS (SELECT 1 FROM spans s WHERE s.item_id = m.item_id)")
        if categories:
            where.append(f"m.item_id IN (SELECT item_id FROM items WHERE {self._CATEGORY} IN "
                         f"({', '.join('?' for _ in categories)}))")
            args += list(categories)
        if models:
            marks = ", ".join("?" for _ in models)
            where.append("(" + " OR ".join(f"m.item_id IN (SELECT item_id FROM items WHERE {m} IN ({marks}))"
                                           for m in self._MODELS) + ")")
            args += list(models) * len(self._MODELS)
        if label_sources:
            where.append("EXISTS (SELECT 1 FROM annotations a WHERE a.item_id = m.item_id AND a.source IN "
                         f"({', '.join('?' for _ in label_sources)}))")
            args += list(label_sources)
        hit = (f"SELECT m.item_id, m.ab, m.ba FROM ({mine}) m JOIN items i ON i.item_id = m.item_id{join}"
               + "".join(f" {'WHERE' if k == 0 else 'AND'} {w}" for k, w in enumerate(where)))
        q = (f"WITH hit AS MATERIALIZED ({hit}) "
             f"SELECT h.item_id, i.source, i.task, {self._CATEGORY}, {self._MODELS[0]}, {self._MODELS[1]}, h.ab, h.ba, "
             "c.label, (SELECT COUNT(*) FROM hit) FROM (SELECT * FROM hit ORDER BY length(item_id), item_id LIMIT ?) h "
             "JOIN items i ON i.item_id = h.item_id LEFT JOIN consensus c ON c.item_id = h.item_id AND c.method = ? "
             "ORDER BY length(h.item_id), h.item_id")
        rows = self.conn.execute(q, [*args, limit, consensus]).fetchall()
        found = pd.DataFrame([r[:9] for r in rows], columns=["item_id", "source", "task", "category", "model_a",
                                                             "model_b", "judge AB", "judge BA", "humans"])
        return (int(rows[0][9]) if rows else 0), found[cols]
