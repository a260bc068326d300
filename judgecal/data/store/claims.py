"""Judge-call claims (tables ``runs`` and ``claims``): concurrent judge runs on one workspace never make the
same call twice."""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from judgecal.data.store._db import Repository


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
    """The outcome of :meth:`ClaimsRepository.claim`: keys this run now holds, keys another live run holds."""

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


class ClaimsRepository(Repository):
    """Claims on judge calls: claim, heartbeat, release."""

    def claim(self, keys: Sequence[str], owner: RunOwner, stale_s: float = 60.0) -> Claims:
        """In one write transaction: drop the claims of dead runs (same host and pid gone, or no
        heartbeat for ``stale_s``), then claim every key neither answered nor held by a live run."""
        now, out = time.time(), Claims()
        keys = list(dict.fromkeys(keys))
        with self._db.transaction() as tx:
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
        self._conn.execute("UPDATE runs SET heartbeat = ? WHERE owner = ?", (time.time(), owner.id))

    def release(self, owner: RunOwner) -> None:
        """Drop every claim of ``owner`` (a run that ended)."""
        with self._db.transaction() as tx:
            tx.execute("DELETE FROM claims WHERE owner = ?", (owner.id,))
            tx.execute("DELETE FROM runs WHERE owner = ?", (owner.id,))
