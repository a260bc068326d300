"""Items (table ``items``): adding them and reading them back, whole or as per-item facts."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from judgecal.data.records import Item, LabelSet
from judgecal.data.store import snapshot
from judgecal.data.store._db import Repository
from judgecal.data.store._schema import SCHEMA_VERSION
from judgecal.data.store.errors import ItemConflictError

FACTS = ("item_id", "source", "task", "len_a", "len_b", "family_a", "family_b", "n_candidates", "model_a", "model_b",
         "prompt_key", "text_key_a", "text_key_b", "trap", "trap_answer")


# how a metadata value becomes text: part of a kept lookup's key, so a change to it is never served old copies
_METADATA_LOOKUP = 1


def _key(text: object) -> int:
    """A number per distinct text (equal texts, equal numbers: the first 8 bytes of its BLAKE2b digest, the same
    in every process, so facts kept and facts added later compare), so that responses and prompts compare
    without keeping their text; -1 for none."""
    return -1 if text is None else int.from_bytes(hashlib.blake2b(str(text).encode("utf-8", "surrogatepass"),
                                                                  digest_size=8).digest(), "big", signed=True)


class ItemsRepository(Repository):
    """The items: add, ids, tasks, facts, response clusters, label sets, metadata, sources."""

    def add_items(self, items: Iterable[Item], conn: sqlite3.Connection | None = None,
                  origins: Mapping[str, str] | None = None, progress: Callable[[int], None] | None = None) -> int:
        """Insert items; an id already stored with the same content is skipped (re-importing is
        idempotent), one stored with other content raises :class:`ItemConflictError` and writes
        nothing. Check and insert run in one write transaction (the caller's, when ``conn`` is
        given), so two concurrent imports cannot overwrite each other. ``origins`` maps an id to where
        it came from (``file:line``) for the message; ``progress(n)`` hears how many are inserted so far."""
        items = list(items)
        if conn is None:
            with self._db.transaction() as tx:
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
        top = snapshot.top_rowid(conn, "items")
        for i in range(0, len(items), 900):
            conn.executemany("INSERT OR IGNORE INTO items VALUES (?, ?, ?, ?)",
                             [(it.item_id, it.source, it.task, it.to_json()) for it in items[i : i + 900]])
            if progress is not None:
                progress(min(i + 900, len(items)))
        added = conn.total_changes - before
        if added:
            # the items' facts kept in the cache folder are out of date: extended by the new rows (only appended)
            snapshot.bump_version(conn, "items", appended_after=top)
        return added

    def ids_under(self, prefix: str) -> list[str]:
        """The stored item ids that start with ``prefix`` (a range on the primary key: no scan)."""
        q = "SELECT item_id FROM items WHERE item_id >= ? AND item_id < ? ORDER BY item_id"
        return [r[0] for r in self._conn.execute(q, (prefix, prefix + "\U0010ffff"))]

    def item_ids(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT item_id FROM items")}

    def items(self, source: str | None = None, ids: Iterable[str] | None = None) -> list[Item]:
        q, args = "SELECT data FROM items", []
        if source is not None:
            q, args = q + " WHERE source = ?", [source]
        out = [Item.from_json(r[0]) for r in self._conn.execute(q + " ORDER BY rowid", args)]
        if ids is not None:
            wanted = set(ids)
            out = [it for it in out if it.item_id in wanted]
        return out

    def item_tasks(self) -> dict[str, str]:
        """item_id -> its task (``pairwise``, ``pointwise``, ...)."""
        return {str(i): str(t) for i, t in self._conn.execute("SELECT item_id, task FROM items")}

    def item_facts(self) -> pd.DataFrame:
        """One row per item: source, task, the word lengths and families of its first two candidates, numbers
        standing for its prompt's and their texts (``prompt_key``, ``text_key_a``, ``text_key_b``: equal texts,
        equal numbers, within one computation) and its ``trap`` and ``trap_answer`` metadata (trap sets).

        Streamed from SQLite, so an audit never holds every response text at once, and kept in the cache
        folder while the items are unchanged (:mod:`.snapshot`): counting words is most of the cost.
        """
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            return self._item_facts(self._conn).set_index("item_id")
        folder = Path(self._db.path).parent
        with self._db.reading() as conn:
            key = snapshot.table_state(conn, "items", SCHEMA_VERSION)
            facts = snapshot.kept_frame(conn, folder, "item_facts", "items", key, list(FACTS),
                                        lambda since: self._item_facts(conn, since))
        return facts.set_index("item_id")

    def _item_facts(self, conn: sqlite3.Connection, since: int | None = None) -> pd.DataFrame:
        q = ("SELECT item_id, source, task, json_extract(data, '$.candidates[0].text'), "
             "json_extract(data, '$.candidates[1].text'), json_extract(data, '$.candidates[0].family'), "
             "json_extract(data, '$.candidates[1].family'), json_array_length(data, '$.candidates'), "
             "json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model'), "
             "json_extract(data, '$.prompt'), json_extract(data, '$.metadata.trap'), "
             "json_extract(data, '$.metadata.trap_answer') FROM items" + ("" if since is None else " WHERE rowid > ?")
             + " ORDER BY rowid")
        rows = [(i, src, task, len(str(a).split()) if a is not None else 0,
                 len(str(b).split()) if b is not None else 0, fa, fb, n, ma, mb, _key(p), _key(a), _key(b),
                 None if t is None else str(t), None if r is None else str(r))
                for i, src, task, a, b, fa, fb, n, ma, mb, p, t, r in conn.execute(q, () if since is None else (since,))]
        return pd.DataFrame(rows, columns=list(FACTS)).astype(
            {"prompt_key": np.int64, "text_key_a": np.int64, "text_key_b": np.int64})

    def response_clusters(self) -> pd.Series:
        """item_id -> cluster number of the pointwise items: items with the same prompt and response (several
        key facts checked against one summary) are one cluster (ranked in SQLite: no text leaves it)."""
        q = ("SELECT item_id, dense_rank() OVER (ORDER BY json_extract(data, '$.prompt'), "
             "json_extract(data, '$.candidates[0].text')) FROM items WHERE task = 'pointwise'")
        return pd.Series({i: int(c) for i, c in self._conn.execute(q)}, dtype=np.int64)

    def label_sets(self) -> pd.Series:
        """item_id -> :class:`LabelSet` of the binary and categorical items (streamed from SQLite)."""
        # instr() first: an item whose JSON never names the key is not parsed (most items, in a pairwise workspace)
        rows = self._conn.execute("SELECT item_id, json_extract(data, '$.label_set') FROM items "
                                  "WHERE instr(data, '\"label_set\"') > 0 AND json_extract(data, '$.label_set') IS NOT NULL "
                                  "ORDER BY rowid")
        cache: dict[str, LabelSet] = {}
        out = {}
        for i, blob in rows:
            if blob not in cache:
                cache[blob] = LabelSet.from_dict(json.loads(blob))
            out[i] = cache[blob]
        return pd.Series(out, dtype=object)

    def item_metadata(self, key: str) -> pd.Series:
        """item_id -> ``metadata[key]`` as text, for the items that carry it (streamed from SQLite, and kept in
        the cache folder while the items are unchanged, as :meth:`item_facts`)."""
        if self._conn.in_transaction:  # what it holds may still be rolled back: no copy
            return self._item_metadata(self._conn, key)
        folder = Path(self._db.path).parent
        name = "metadata-" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
        with self._db.reading() as conn:
            state = f"{snapshot.table_state(conn, 'items', SCHEMA_VERSION)}:{_METADATA_LOOKUP}:{json.dumps(key)}"

            def read(since: int | None, old: list[list[str]] | None) -> list[list[str]]:
                found = self._item_metadata(conn, key, since)
                return [[*(old or [[], []])[0], *found.index], [*(old or [[], []])[1], *found]]

            kept = snapshot.kept_value(conn, folder, name, "items", state, read)
        return pd.Series(kept[1], index=pd.Index(kept[0], dtype=object), dtype=object)

    @staticmethod
    def _item_metadata(conn: sqlite3.Connection, key: str, since: int | None = None) -> pd.Series:
        # an item whose JSON does not hold the quoted key is not parsed; a key that JSON would escape is looked up in
        # every item
        quoted = json.dumps(key) if re.fullmatch(r"[A-Za-z0-9_.-]+", key) else '"'
        rows = conn.execute("SELECT item_id, json_extract(data, '$.metadata.' || json_quote(?)) FROM items "
                            "WHERE instr(data, ?) > 0" + ("" if since is None else " AND rowid > ?") + " ORDER BY rowid",
                            (key, quoted) if since is None else (key, quoted, since))
        found = {i: str(v) for i, v in rows if v is not None}
        return pd.Series(list(found.values()), index=pd.Index(list(found), dtype=object), dtype=object)

    def model_names(self) -> set[str]:
        """Every model named by a stored item's first or second response (an item has one or two)."""
        q = "SELECT DISTINCT json_extract(data, '$.candidates[0].model'), json_extract(data, '$.candidates[1].model') FROM items"
        return {m for row in self._conn.execute(q) for m in row if isinstance(m, str)}

    def sources(self) -> list[str]:
        return [r[0] for r in self._conn.execute("SELECT DISTINCT source FROM items ORDER BY source")]
