"""Columnar copies of what an audit reads from the judgments and items, kept in the workspace's ``cache/`` folder.

Reading a million judgments out of SQLite costs seconds (every cell becomes a Python object on the way); the
same frame read back from an Arrow IPC file costs a tenth of a second. Each copy carries the *state* of the
table it was made from (:func:`table_state`: a random token every write to the table replaces, the largest
rowid and the schema version) and is used only while that state is unchanged, so a copy can be stale but is
never read stale. A write that only appended rows (new items, new judgments) remembers the token before it, so a
copy made before it is extended by the rows above its top instead of made again (:func:`appended_since`): adding
a week to a year of judgments reads the week. Copies are made and used only outside a write transaction (what it holds may still be rolled
back), and only of frames whose text columns are text (a stray BLOB would come back with another type). A copy that cannot be written (a full disk) or read (a damaged file) is
simply made again from the database: the database is the record, the cache folder can be deleted at any time.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pandas.api.types import union_categoricals

from judgecal.data.store.errors import WorkspaceError

CACHE_DIR = "cache"
_KEY = b"judgecal.state"
TABLES = ("judgments", "items")  # the tables with copies; meta '<table>_version' counts the writes to each


_LINKS = 1000  # the most appends one chain of write tokens remembers (a copy older than that is made again)


def _link_key(table: str, token: str) -> str:
    return f"{table}_parent:{token}"


def top_rowid(conn: sqlite3.Connection, table: str) -> int:
    """``table``'s largest rowid (0 when empty): what a writer reads before appending (:func:`bump_version`)."""
    assert table in TABLES
    return int(conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0] or 0)


def bump_version(conn: sqlite3.Connection, table: str, appended_after: int | None = None) -> None:
    """Give ``table`` a new write token (inside the writer's own transaction). ``appended_after``: the write only
    appended rows above that rowid (the table's top before it, :func:`top_rowid`) and changed no row there was;
    the new token then remembers the one before it and that top, so a copy made before the write is extended
    by the rows above its own top instead of made again (:func:`appended_since`). Any other write breaks the
    chain: every link of the table is forgotten."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (f"{table}_version",)).fetchone()
    # a fresh random token per write, not a counter: a database deleted and imported again, or restored from a
    # backup and then written to, never comes back to a state an old copy was made from
    token = secrets.token_hex(8)
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (f"{table}_version", token))
    link = None
    if appended_after is not None and row is not None:
        parent = conn.execute("SELECT value FROM meta WHERE key = ?", (_link_key(table, row[0]),)).fetchone()
        try:
            depth = int(str(parent[0]).rsplit(":", 1)[-1]) + 1 if parent else 1
        except ValueError:  # a link edited by hand: the chain starts again
            depth = _LINKS + 1
        link = None if depth > _LINKS else f"{row[0]}:{appended_after}:{depth}"
    if link is None:  # the chain is broken (or long enough): its links are forgotten
        conn.execute("DELETE FROM meta WHERE key >= ? AND key < ?", (f"{table}_parent:", f"{table}_parent;"))
    else:
        conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (_link_key(table, token), link))


def table_state(conn: sqlite3.Connection, table: str, schema_version: int) -> str:
    """``table``'s state: write token, largest rowid and schema version (an insert made outside the
    store takes a new rowid; an update or delete draws a new token by trigger)."""
    assert table in TABLES
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (f"{table}_version",)).fetchone()
    top = conn.execute(f"SELECT MAX(rowid) FROM {table}").fetchone()[0]
    return f"{schema_version}:{row[0] if row else 0}:{top}"


def appended_since(conn: sqlite3.Connection, table: str, stored: str | None, now: str) -> int | None:
    """The top rowid of a copy made at key ``stored`` when the table has since only had rows appended (the copy
    and the rows above that rowid are then the table as it is at key ``now``), else ``None``. A key is a
    :func:`table_state` with what the copy depends on besides written after it (``:...``), which must be the
    same. Walks the chain of write tokens :func:`bump_version` remembers back from the current one; the copy
    must have seen no row beyond the top the chain's first append started from (a database restored from a
    backup and then appended to does not reach the copy's token, or reaches it at a lower top)."""
    if stored is None or stored == now:
        return None
    old, new = stored.split(":", 3), now.split(":", 3)
    if len(old) < 3 or len(new) != len(old) or old[0] != new[0] or old[3:] != new[3:]:
        return None
    try:
        top = int(old[2]) if old[2] != "None" else 0
        limit = int(new[2]) if new[2] != "None" else 0
    except ValueError:
        return None
    token = new[1]
    for _ in range(_LINKS + 1):
        if token == old[1]:
            return top if top <= limit else None
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_link_key(table, token),)).fetchone()
        if row is None:
            return None
        parts = str(row[0]).rsplit(":", 2)
        if len(parts) != 3 or not parts[1].isdigit():  # a link edited by hand: no chain
            return None
        token, limit = parts[0], int(parts[1])
    return None


_FILLING: dict[tuple[str, str], threading.RLock] = {}
_FILLING_LOCK = threading.Lock()


def fill_lock(folder: str | os.PathLike[str], name: str) -> threading.RLock:
    """The lock a thread of this process holds while it looks for copy ``name`` of workspace ``folder`` and makes
    it when missing (:func:`filling`)."""
    key = (str(Path(folder).resolve()), name)
    with _FILLING_LOCK:
        return _FILLING.setdefault(key, threading.RLock())


@contextlib.contextmanager
def filling(folder: str | os.PathLike[str], name: str) -> Iterator[None]:
    """Held while this thread looks for copy ``name`` and makes it when missing: another thread asking for it
    meanwhile (an audit, while :mod:`.warm` fills it ahead) waits, then reads the copy instead of making it
    again."""
    with fill_lock(folder, name):
        yield


def _path(folder: Path, name: str, suffix: str) -> Path:
    return folder / CACHE_DIR / f"{name}.{suffix}"


def _replace(target: Path, write: Any) -> None:
    """Write through a temporary file in the same folder and rename it over ``target`` (readers never see
    half a file); any failure leaves no file behind and is not an error (the copy is made again next time)."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        target.parent.mkdir(exist_ok=True)
        write(str(tmp))  # created with the process's usual permissions, like the database
        os.replace(tmp, target)
    except BaseException as exc:  # an interrupted or failed write leaves no file behind
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if not isinstance(exc, (OSError, ValueError, TypeError, ImportError)):
            raise


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
    try:
        frame = table.select(columns).to_pandas(split_blocks=True, self_destruct=True)
    except (pa.ArrowException, ValueError, TypeError):
        return None
    del table
    pa.default_memory_pool().release_unused()
    for c in frame.columns:
        frame[c] = _plain(frame[c])
    return frame


def frame_key(folder: Path, name: str) -> str | None:
    """The key the frame stored as ``name`` was made under (``None``: none, or a damaged file)."""
    import pyarrow as pa

    try:
        with pa.memory_map(str(_path(folder, name, "arrow"))) as source:
            got = (pa.ipc.open_file(source).schema.metadata or {}).get(_KEY)
    except (OSError, pa.ArrowException):
        return None
    return got.decode("utf-8", "replace") if got is not None else None


def load_columns(folder: Path, name: str, key: str, columns: list[str]) -> Iterator[pd.Series] | None:
    """The columns of the frame stored as ``name`` under ``key``, read one at a time (only that column's
    buffers are read, so a reader that keeps part of each holds one column at a time); ``None`` as
    :func:`load_frame`."""
    import pyarrow as pa

    path = _path(folder, name, "arrow")
    try:  # the one file every column is read from: a copy written meanwhile replaces the name, not this file
        source = pa.OSFile(str(path))
    except (OSError, pa.ArrowException):
        return None
    try:
        reader = pa.ipc.open_file(source)
        ok = (reader.schema.metadata or {}).get(_KEY) == key.encode() and reader.num_record_batches == 1
        names = reader.schema.names
    except (OSError, pa.ArrowException):
        ok, names = False, []
    if not ok or any(c not in names for c in columns):
        source.close()
        return None

    def read() -> Iterator[pd.Series]:
        try:
            for c in columns:
                options = pa.ipc.IpcReadOptions(included_fields=[names.index(c)])
                table = pa.ipc.open_file(source, options=options).read_all()
                column = _plain(table.to_pandas(split_blocks=True, self_destruct=True)[c])
                del table
                pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed memory otherwise
                yield column
        finally:
            source.close()

    return read()


def save_frame(folder: Path, name: str, key: str, frame: pd.DataFrame) -> None:
    """Store ``frame`` as ``name`` under ``key`` (dtypes, categoricals and nullable integers kept exactly)."""
    import pyarrow as pa

    def write(tmp: str) -> None:
        for c in frame.columns:  # a stray BLOB among texts would be read back as bytes: no copy of such a frame
            values = frame[c].cat.categories if isinstance(frame[c].dtype, pd.CategoricalDtype) else frame[c]
            if values.dtype == object and not all(isinstance(v, str) for v in values.dropna()):
                raise TypeError(f"column {c} holds values that are not text")
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


def json_key(folder: Path, name: str) -> str | None:
    """The key the value stored as ``name`` was made under (``None``: none, or a damaged file)."""
    try:
        stored = json.loads(_path(folder, name, "json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stored.get("state") if isinstance(stored, dict) and isinstance(stored.get("state"), str) else None


def save_json(folder: Path, name: str, key: str, value: Any) -> None:
    """Store a JSON value as ``name`` under ``key``."""
    _replace(_path(folder, name, "json"),
             lambda tmp: Path(tmp).write_text(json.dumps({"state": key, "value": value}), encoding="utf-8"))


def _appended(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """``old``'s rows then ``new``'s, each column as one read of both would have typed it: a categorical's
    categories in order of first appearance, an integer column nullable when either part has a gap. ``old``'s
    columns are taken out of it one by one as they are joined (its columns are blocks of their own, as
    :func:`load_frame` reads them), so the two copies of a column, not of the frame, are held at once."""
    out: dict[str, Any] = {}
    columns = list(old.columns)
    for c in columns:
        a, b = old.pop(c), new[c]
        if isinstance(a.dtype, pd.CategoricalDtype) and isinstance(b.dtype, pd.CategoricalDtype):
            out[c] = _plain(pd.Series(union_categoricals([a, b]), name=c))
            continue
        if a.dtype != b.dtype and "Int64" in (str(a.dtype), str(b.dtype)):
            a, b = a.astype("Int64"), b.astype("Int64")
        out[c] = pd.concat([a, b], ignore_index=True)
        del a
    return pd.DataFrame(out, columns=columns, copy=False)


def kept_frame(conn: sqlite3.Connection, folder: Path, name: str, table: str, key: str, columns: list[str],
               read: Callable[[int | None], pd.DataFrame]) -> pd.DataFrame:
    """The frame kept as ``name`` under ``key`` (``columns`` of it), else made and kept: ``read(since)`` reads the
    rows of ``table`` with a rowid above ``since`` (every row when ``None``); when the table has only had rows
    appended since the kept copy was made (:func:`appended_since`), only those are read and added to it."""
    frame = load_frame(folder, name, key, columns)
    if frame is not None:
        return frame
    stored = frame_key(folder, name)
    since = appended_since(conn, table, stored, key)
    old = None if since is None or stored is None else load_frame(folder, name, stored, columns)
    if old is None:
        frame = read(None)
    else:
        frame = _appended(old, read(since))
        del old
    save_frame(folder, name, key, frame)
    return frame


def kept_value(conn: sqlite3.Connection, folder: Path, name: str, table: str, key: str,
               read: Callable[[int | None, Any], Any]) -> Any:
    """The JSON value kept as ``name`` under ``key``, else made and kept: ``read(since, old)`` reads the rows of
    ``table`` above rowid ``since`` and combines them with ``old``, the value kept before rows were only
    appended (``since`` and ``old`` ``None``: every row, nothing kept)."""
    found = load_json(folder, name, key)
    if found is not None:
        return found
    stored = json_key(folder, name)
    since = appended_since(conn, table, stored, key)
    old = None if since is None or stored is None else load_json(folder, name, stored)
    value = read(None, None) if old is None else read(since, old)
    save_json(folder, name, key, value)
    return value


class WeightFiles:
    """The item bootstrap's drawn weight matrices, kept in the cache folder between audits
    (:class:`judgecal.stats.bootstrap.WeightStore`). A matrix depends only on ``(n, n_boot, seed)`` and on
    NumPy's generator, whose version the file names; each file carries a BLAKE2b digest of its bytes, so a
    damaged one is drawn again, never read. At most :attr:`KEEP` files stay (the most recently used)."""

    KEEP = 8
    _MAGIC = b"judgecal.weights.2\n"  # 2: the halves of a byte hold items k and ceil(n / 2) + k

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder) / CACHE_DIR

    def _file(self, key: tuple[int, int, int]) -> Path:
        n, n_boot, seed = key
        return self.folder / f"bootstrap-{n}-{n_boot}-{seed}-numpy{np.__version__}.weights"

    def load(self, key: tuple[int, int, int], shape: tuple[int, int]) -> _RowsFile | None:
        """The packed matrix of ``key`` with ``shape``, read a block of replicates at a time from the file its
        digest was checked in (never held whole in memory), or ``None`` (absent, of another shape, or
        damaged)."""
        path = self._file(key)
        head = len(self._MAGIC) + 32
        try:
            fh = open(path, "rb")  # noqa: SIM115 - kept open for reading, closed by _RowsFile.close
        except OSError:
            return None
        try:
            ok = os.fstat(fh.fileno()).st_size == head + shape[0] * shape[1] and fh.read(len(self._MAGIC)) == self._MAGIC
            stated = fh.read(32)
            digest = hashlib.blake2b(digest_size=32)
            while ok and (block := fh.read(1 << 22)):
                digest.update(block)
            ok = ok and digest.digest() == stated
        except OSError:
            ok = False
        except BaseException:  # interrupted while checking: the file is not left open
            fh.close()
            raise
        if not ok:
            fh.close()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept when older files are let go
        return _RowsFile(fh, head, shape)

    def save(self, key: tuple[int, int, int], shape: tuple[int, int], blocks: Iterable[Any]) -> None:
        """Keep the packed matrix of ``key`` (``shape``), given as consecutive blocks of replicates, through a
        temporary file written as they come (the matrix is never held whole) and kept only when they make it up
        whole; then let the least recently used go. An exception ``blocks`` raises propagates, with no file
        left behind."""

        def write(tmp: str) -> None:
            digest, rows = hashlib.blake2b(digest_size=32), 0
            with open(tmp, "wb") as out:
                out.write(self._MAGIC + bytes(32))  # the digest, once every block is written
                for block in blocks:
                    body = np.ascontiguousarray(block, dtype=np.uint8)
                    if body.ndim != 2 or body.shape[1] != shape[1]:
                        raise ValueError(f"a block of {body.shape} is not replicates of a {shape} matrix")
                    digest.update(body.reshape(-1).data)
                    out.write(body.reshape(-1).data)
                    rows += len(body)
                if rows != shape[0]:
                    raise ValueError(f"{rows} replicates given of a {shape} matrix")
                out.seek(len(self._MAGIC))
                out.write(digest.digest())

        _replace(self._file(key), write)
        try:
            files = sorted(self.folder.glob("bootstrap-*.weights"), key=lambda p: p.stat().st_mtime, reverse=True)
        except OSError:  # one went meanwhile: left for the next time
            files = []
        for old in files[self.KEEP:]:
            with contextlib.suppress(OSError):  # one another audit holds open (Windows) keeps only itself
                old.unlink(missing_ok=True)


class _RowsFile:
    """A packed weight matrix in an open file, read a block of replicates at a time
    (:class:`judgecal.stats.bootstrap.PackedRows`)."""

    def __init__(self, fh: io.BufferedReader, offset: int, shape: tuple[int, int]) -> None:
        self.fh, self.offset, self._shape = fh, offset, shape
        self._lock = threading.Lock()  # one position in the file: a read is a seek and a read together

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    def rows(self, start: int, stop: int) -> NDArray[np.uint8]:
        stop = min(stop, self._shape[0])
        out = np.empty((max(stop - start, 0), self._shape[1]), dtype=np.uint8)
        if not out.size:
            return out
        with self._lock:
            self.fh.seek(self.offset + start * self._shape[1])
            got = self.fh.readinto(out.data.cast("B"))
        if got != out.size:  # the file was cut short after its check
            raise WorkspaceError(f"{self.fh.name}: changed while the audit read it; run the audit again")
        return out

    def close(self) -> None:
        self.fh.close()
