"""Columnar copies of what an audit reads from the judgments and items, kept in the workspace's ``cache/`` folder.

Reading a million judgments out of SQLite costs seconds (every cell becomes a Python object on the way); the
same frame read back from an Arrow IPC file costs a tenth of a second. Each copy carries the *state* of the
table it was made from (:func:`table_state`: a counter every write to the table advances, the largest rowid
and the schema version) and is used only while that state is unchanged, so a copy can be stale but is
never read stale. A copy that cannot be written (a full disk) or read (a damaged file) is
simply made again from the database: the database is the record, the cache folder can be deleted at any time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

CACHE_DIR = "cache"
_KEY = b"judgecal.state"
TABLES = ("judgments", "items")  # the tables with copies; meta '<table>_version' counts the writes to each


def bump_version(conn: sqlite3.Connection, table: str) -> None:
    """Advance ``table``'s write counter (inside the writer's own transaction)."""
    conn.execute("INSERT INTO meta (key, value) VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET "
                 "value = CAST(value AS INTEGER) + 1", (f"{table}_version",))


def table_state(conn: sqlite3.Connection, table: str, schema_version: int) -> str:
    """``table``'s state: write counter, largest rowid and schema version (an insert made outside the
    store takes a new rowid; an update or delete advances the counter by trigger)."""
    assert table in TABLES
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (f"{table}_version",)).fetchone()
    top = conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0]
    return f"{schema_version}:{row[0] if row else 0}:{top}"


def _path(folder: Path, name: str, suffix: str) -> Path:
    return folder / CACHE_DIR / f"{name}.{suffix}"


def _replace(target: Path, write: Any) -> None:
    """Write through a temporary file in the same folder and rename it over ``target`` (readers never see
    half a file); any failure leaves no file behind and is not an error (the copy is made again next time)."""
    try:
        target.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
        os.close(fd)
    except OSError:
        return
    try:
        write(tmp)
        os.replace(tmp, target)
    except (OSError, ValueError, TypeError, ImportError):
        Path(tmp).unlink(missing_ok=True)


def _plain(column: pd.Series) -> pd.Series:
    """A categorical column with its categories as plain Python strings, as the store reads them from SQLite
    (Arrow hands them back as pyarrow-backed strings, which are converted again on every lookup)."""
    if isinstance(column.dtype, pd.CategoricalDtype) and column.dtype.categories.dtype != object:
        cats = pd.Index(column.dtype.categories.to_numpy(dtype=object), dtype=object)
        return pd.Series(pd.Categorical.from_codes(column.cat.codes.to_numpy(), categories=cats, validate=False),
                         index=column.index, name=column.name)
    return column


def load_frame(folder: Path, name: str, key: str, columns: list[str]) -> pd.DataFrame | None:
    """``columns`` of the frame stored as ``name`` under ``key``; ``None`` when there is none, another key's,
    or a damaged one."""
    import pyarrow as pa

    path = _path(folder, name, "arrow")
    try:
        with pa.memory_map(str(path)) as source:
            table = pa.ipc.open_file(source).read_all()
    except (OSError, pa.ArrowException):
        return None
    if (table.schema.metadata or {}).get(_KEY) != key.encode() or any(c not in table.schema.names for c in columns):
        return None
    # one block per column, numbers read in place from the mapped file: the frame costs its own size once
    frame = table.select(columns).to_pandas(split_blocks=True, self_destruct=True)
    del table
    pa.default_memory_pool().release_unused()
    for c in frame.columns:
        frame[c] = _plain(frame[c])
    return frame


def load_columns(folder: Path, name: str, key: str, columns: list[str]) -> Iterator[pd.Series] | None:
    """The columns of the frame stored as ``name`` under ``key``, read one at a time (only that column's
    buffers are read, so a reader that keeps part of each holds one column at a time); ``None`` as
    :func:`load_frame`."""
    import pyarrow as pa

    path = _path(folder, name, "arrow")
    try:
        with pa.OSFile(str(path)) as source:
            reader = pa.ipc.open_file(source)
            if (reader.schema.metadata or {}).get(_KEY) != key.encode() or reader.num_record_batches != 1:
                return None
            names = reader.schema.names
    except (OSError, pa.ArrowException):
        return None
    if any(c not in names for c in columns):
        return None

    def read() -> Iterator[pd.Series]:
        for c in columns:
            options = pa.ipc.IpcReadOptions(included_fields=[names.index(c)])
            with pa.OSFile(str(path)) as source:
                table = pa.ipc.open_file(source, options=options).read_all()
            column = _plain(table.to_pandas(split_blocks=True, self_destruct=True)[c])
            del table
            pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed memory otherwise
            yield column

    return read()


def save_frame(folder: Path, name: str, key: str, frame: pd.DataFrame) -> None:
    """Store ``frame`` as ``name`` under ``key`` (dtypes, categoricals and nullable integers kept exactly)."""
    import pyarrow as pa

    def write(tmp: str) -> None:
        table = pa.Table.from_pandas(frame, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), _KEY: key.encode()})
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table.combine_chunks(), max_chunksize=max(1, table.num_rows))  # one batch

    _replace(_path(folder, name, "arrow"), write)


def load_json(folder: Path, name: str, key: str) -> Any:
    """The value stored as ``name`` under ``key``, or ``None``."""
    try:
        stored = json.loads(_path(folder, name, "json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored.get("value") if isinstance(stored, dict) and stored.get("state") == key else None


def save_json(folder: Path, name: str, key: str, value: Any) -> None:
    """Store a JSON value as ``name`` under ``key``."""
    _replace(_path(folder, name, "json"),
             lambda tmp: Path(tmp).write_text(json.dumps({"state": key, "value": value}), encoding="utf-8"))
