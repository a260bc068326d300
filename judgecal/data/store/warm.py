"""Cache copies filled ahead, on a second connection, while the caller reads something else.

An audit's first read of a workspace, the judgments, is mostly Python work (an object for every cell). The
judges' environments are one GROUP BY over every judgment, which SQLite computes in a single step with Python's
GIL released: started in a thread on its own connection, it runs beside that read on another core. The thread
only fills the cache folder (:mod:`.snapshot`): the caller's own call waits for the copy
(:func:`.snapshot.filling`), then reads it if its key (the table's state) still holds, or else reads SQLite
itself, as it would have without the thread. Reads that step through their rows (the items' facts) are not
filled ahead: their thread would take the GIL back at every row from the caller, which gets slower.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence

from judgecal.data.store import snapshot
from judgecal.data.store.workspace import Workspace

# the repository methods (no arguments) whose copies can be filled ahead -> (the workspace's repository, the copy's name)
AHEAD = {"environment_counts": ("judgments_repo", "environments")}


@contextlib.contextmanager
def warmed(path: str | os.PathLike[str], reads: Sequence[str] = tuple(AHEAD)) -> Iterator[None]:
    """Within the block, ``reads`` (keys of :data:`AHEAD`) fill their copies of workspace ``path`` in a thread,
    in that order; the thread is waited for when the block ends. A read that fails there is left to the
    caller's own call, which meets (and reports) the same failure."""
    unknown = sorted(set(reads) - set(AHEAD))
    if unknown:
        raise ValueError(f"not a read that can be filled ahead: {', '.join(unknown)}")
    locks = [snapshot.fill_lock(path, AHEAD[read][1]) for read in reads]
    started = threading.Event()
    thread = threading.Thread(target=_fill, args=(path, list(zip(reads, locks, strict=True)), started),
                              name="judgecal-warm", daemon=True)
    thread.start()
    started.wait()  # the thread holds every copy's lock before the caller can ask for one
    try:
        yield
    finally:
        thread.join()


def _fill(path: str | os.PathLike[str], reads: list[tuple[str, threading.RLock]], started: threading.Event) -> None:
    left = []
    try:
        for _, lock in reads:
            lock.acquire()
            left.append(lock)
    finally:
        started.set()
    try:
        with Workspace(path, create=False) as ws:
            for read, lock in reads:
                with contextlib.suppress(Exception):
                    getattr(getattr(ws, AHEAD[read][0]), read)()
                lock.release()
                left.remove(lock)
    except Exception:  # noqa: S110 - the caller's own read meets the same failure and reports it
        pass
    finally:
        for lock in left:
            lock.release()
