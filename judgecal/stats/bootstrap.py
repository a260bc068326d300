"""Pure, vectorised estimators. No I/O, no global state.

The item-level (cluster) bootstrap resamples items with replacement: replicate ``b`` weights
item ``i`` by ``W[b, i] ~ Multinomial(n, 1/n)``; any statistic that is a function of per-item sums
``S`` (n x m) is evaluated on ``W @ S`` for all replicates at once (Efron & Tibshirani, 1993;
Field & Welsh, 2007 for clustered data). Intervals are percentile intervals.

``W`` depends only on ``(n, n_boot, seed)``. Inside :func:`shared_weights` (the audit opens it once),
:func:`bootstrap_sums` draws each such ``W`` once and reuses it, as bytes, for every later call with the
same key: the same replicates as drawing them again, without the cost (drawing ``n x n_boot`` integers
is most of a narrow bootstrap's time). Outside it nothing is kept.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

import numpy as np
import pandas as pd
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def _counts(n: int, n_boot: int, rng: np.random.Generator, chunk: int) -> Iterator[NDArray[np.int64]]:
    """``(c, n)`` item counts of the next ``c <= chunk`` replicates, ``n_boot`` in all: replicate ``b`` is
    always the ``b``-th ``n`` draws of ``rng``, whatever ``chunk`` is."""
    chunk = max(1, min(chunk, 2_000_000 // n))  # bounds the transient memory to ~50 MB
    done = 0
    while done < n_boot:
        c = min(chunk, n_boot - done)
        idx = rng.integers(0, n, size=(c, n))
        counts = np.empty((c, n), dtype=np.int64)
        for k in range(c):  # a row at a time: twice as fast as one bincount over offset indices
            counts[k] = np.bincount(idx[k], minlength=n)
        yield counts
        done += c


def bootstrap_weights(n: int, n_boot: int, rng: np.random.Generator, chunk: int = 200,
                      dtype: type[np.float64] | type[np.float32] = np.float64) -> Iterator[FloatArray]:
    """Yield ``(c, n)`` weight matrices (item counts) for ``n_boot`` replicates, ``c <= chunk``; the same
    replicates whatever ``chunk`` is."""
    if n > 0:
        for w in _counts(n, n_boot, rng, chunk):
            yield w.astype(dtype)  # type: ignore[misc]


# float32 holds every integer below 2**24 exactly: integer sums whose replicated totals stay below it are
# multiplied in single precision (half the memory traffic, twice the speed) with exactly the same result.
_EXACT32 = 2**24
# sums that are multiples of 1/2, 1/4 or 1/8 (a tie counted a half, a mean over two or four orders or samples)
# are integers once scaled by that power of two, and dividing the product by it again is exact
_SCALES = (1.0, 2.0, 4.0, 8.0)


def _exact_scale(sums: FloatArray, block: int = 4096) -> float | None:
    """The least power of two (of :data:`_SCALES`) that makes every entry an integer with every partial total
    of ``W @ (scale * sums)`` below 2**24 in magnitude (a replicate's weights sum to ``n``), so that
    single-precision products and sums of the scaled values are exact; ``None`` when none does. Checked a
    block of rows at a time: no copy of ``sums``."""
    if sums.size == 0:
        return None
    big = max(float(sums.max()), -float(sums.min()))
    if not np.isfinite(big):
        return None
    for scale in _SCALES:
        if big * scale * sums.shape[0] >= _EXACT32:
            return None
        if all(np.array_equal(part, np.round(part)) for part in
               (sums[a:a + block] * scale for a in range(0, len(sums), block))):
            return scale
    return None


class PackedRows(Protocol):
    """A packed weight matrix (see :class:`_Shared`) read a block of replicates at a time: kept in memory
    (:class:`InMemory`) or read back from a file (:class:`judgecal.data.store.snapshot.WeightFiles`)."""

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_boot, ceil(n / 2))``."""

    def rows(self, start: int, stop: int) -> NDArray[np.uint8]:
        """Replicates ``start`` to ``stop`` (clipped to the matrix)."""

    def close(self) -> None:
        """Let go of what it holds (a file); nothing is read afterwards."""


class InMemory:
    """A packed matrix held in memory."""

    def __init__(self, packed: NDArray[np.uint8]) -> None:
        self.packed = packed

    @property
    def shape(self) -> tuple[int, int]:
        return self.packed.shape[0], self.packed.shape[1]

    def rows(self, start: int, stop: int) -> NDArray[np.uint8]:
        return self.packed[start:stop]

    def close(self) -> None:
        pass


class WeightStore(Protocol):
    """Where :func:`shared_weights` keeps a drawn weight matrix between audits (the workspace's cache folder,
    :class:`judgecal.data.store.snapshot.WeightFiles`): ``W`` depends only on its key ``(n, n_boot, seed)``."""

    def load(self, key: tuple[int, int, int], shape: tuple[int, int]) -> PackedRows | None:
        """The packed matrix of ``key`` (``shape``, see :class:`_Shared`), or ``None``; read a block of
        replicates at a time, not held in memory."""

    def save(self, key: tuple[int, int, int], shape: tuple[int, int], blocks: Iterable[NDArray[np.uint8]]) -> None:
        """Keep the packed matrix of ``key`` (``shape``), given as consecutive blocks of replicates and kept only
        when they make it up whole (written as they come, never held whole); a failure to keep it is not an
        error, an exception raised by ``blocks`` propagates."""


# drawing fewer weights than this is quicker than reading them back
STORED_FROM = 2**22
# a matrix of more packed bytes than this is not written to the store (drawn each time): 2,000 replicates of a
# million items; the store's files are read a block at a time, so what they hold is disk, not memory
STORED_UP_TO = 2**30
# replicates drawn at a time by draw_ahead: one (8 bytes an item of transient counts), so that what the thread's
# own malloc arena keeps after it ends is too small to add to the caller's peak (16 at a time added 20 MB at 50k)
AHEAD_CHUNK = 1
# a kept matrix is unpacked this many weights at a time (about 8 MB in single precision), and, for the exact
# single-precision products, at least BLOCK_REPLICATES replicates at a time where that takes at most
# BLOCK_WEIGHTS_MAX weights (64 MB): a block of a few replicates makes each product read every column of sums
# again for those few (at 265k items, 7 replicates a block took 5 times as long as 64); double-precision products
# keep their blocks, so their sums are added in the same order as before
BLOCK_WEIGHTS = 2_000_000
BLOCK_REPLICATES = 64
BLOCK_WEIGHTS_MAX = 16_000_000


class _Shared:
    """The weight matrices kept by :func:`shared_weights`: ``(n, n_boot, seed) ->`` ``W`` as 4-bit counts, two
    to a byte: with ``h = ceil(n / 2)``, item ``k`` in the low half of byte ``k`` and item ``h + k`` in its high
    half (each half unpacks into a contiguous run of columns, twice as fast as interleaved halves). Those held
    in memory count against the budget; those read back from the store's files, a block at a time, do not."""

    def __init__(self, budget_bytes: int, store: WeightStore | None = None) -> None:
        self.left = budget_bytes
        self.kept: dict[tuple[int, int, int], PackedRows] = {}
        self.drawn_each_time: set[tuple[int, int, int]] = set()  # neither in the store nor within the budget
        self.store = store
        self.ahead: dict[tuple[int, int, int], Future[bool]] = {}  # being drawn into the store (draw_ahead)


_SHARED: ContextVar[_Shared | None] = ContextVar("judgecal_shared_weights", default=None)


@contextmanager
def shared_weights(budget_mb: float = 128.0, store: WeightStore | None = None) -> Iterator[None]:
    """Within the block, :func:`bootstrap_sums` draws each ``(n, n_boot, seed)`` weight matrix once and
    reuses it. With a ``store``, a matrix of at least :data:`STORED_FROM` weights (and at most
    :data:`STORED_UP_TO` bytes packed) is read from it when there and left there when drawn, then read back
    from it a block of replicates at a time (the same replicates, neither drawn again nor held in memory, so
    ``budget_mb`` does not bound it). Other matrices are held in memory, at most ``budget_mb`` of them (half a
    byte a weight); larger ones are drawn each time."""
    shared = _Shared(int(budget_mb * 2**20), store)
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        try:
            with ExitStack() as readers:  # every reader closed, even when closing another one fails
                for kept in shared.kept.values():
                    readers.callback(kept.close)
                for drawing in shared.ahead.values():  # no thread outlives the block
                    readers.callback(wait, [drawing])
        finally:
            _SHARED.reset(token)


def draw_ahead(n: int, n_boot: int, seed: int) -> None:
    """Inside :func:`shared_weights` with a store, start drawing the weights of ``(n, n_boot, seed)`` into the
    store in a thread (NumPy's generator runs with the GIL released) while the caller reads its data; the first
    :func:`bootstrap_sums` of ``n`` items waits for the thread and reads them from there. Nothing when they are
    kept already, in the store, not stored (under :data:`STORED_FROM` weights, or over :data:`STORED_UP_TO`
    bytes) or outside the block. A guess no call takes costs the thread's work and a file in the store, not memory."""
    shared = _SHARED.get()
    key, shape = (n, n_boot, seed), (n_boot, (n + 1) // 2)
    if shared is None or shared.store is None or n <= 0 or n_boot <= 0 or n * n_boot < STORED_FROM \
            or shape[0] * shape[1] > STORED_UP_TO or key in shared.kept or key in shared.drawn_each_time \
            or key in shared.ahead:
        return
    found = shared.store.load(key, shape)
    if found is not None:
        shared.kept[key] = found
        return
    pool = ThreadPoolExecutor(1, thread_name_prefix="judgecal-weights")
    # a replicate at a time: the caller's reading holds its own peak meanwhile
    shared.ahead[key] = pool.submit(_stored, shared.store, key, shape, AHEAD_CHUNK)
    pool.shutdown(wait=False)  # the thread ends with its one task


def _pack(w: NDArray[np.int64]) -> NDArray[np.uint8] | None:
    """``w``'s counts as 4-bit halves of bytes; ``None`` when one is over 15 (a count no real bootstrap of
    more than a handful of items draws: about 2e-14 of them for Multinomial(n, 1/n))."""
    if w.max() > 15:
        return None
    n = w.shape[1]
    h = (n + 1) // 2
    packed = w[:, :h].astype(np.uint8)
    packed[:, :n - h] |= (w[:, h:] << 4).astype(np.uint8)
    return packed


def _unpack(packed: NDArray[np.uint8], n: int, into: FloatArray) -> FloatArray:
    """``packed``'s weights written into the first rows of ``into``, those rows returned."""
    out = into[:len(packed)]
    h = (n + 1) // 2
    np.bitwise_and(packed, 15, out=out[:, :h], casting="unsafe")
    np.right_shift(packed[:, :n - h], 4, out=out[:, h:], casting="unsafe")
    return out


def _weights(n: int, n_boot: int, seed: int, dtype: type[np.float64] | type[np.float32]) -> Iterator[FloatArray]:
    """:func:`bootstrap_weights` of ``default_rng(seed)``, kept for reuse inside :func:`shared_weights`.

    The blocks of a kept matrix are written into one buffer: each holds until the next is asked for (copy one
    to keep it), and the generator is used up inside the :func:`shared_weights` block that made it."""
    if n <= 0 or n_boot <= 0:
        return
    shared = _SHARED.get()
    matrix = _kept(shared, n, n_boot, seed) if shared is not None else None
    if matrix is None:  # drawn each time
        yield from bootstrap_weights(n, n_boot, np.random.default_rng(seed), dtype=dtype)
        return
    step = max(1, BLOCK_WEIGHTS // n)
    if dtype is np.float32:  # exact integer products: the block's size cannot change a replicate's sum
        step = max(step, min(BLOCK_REPLICATES, BLOCK_WEIGHTS_MAX // n))
    # one buffer for every block (each is used before the next is asked for): a fresh one each time would
    # fault its pages in again
    into: FloatArray = np.empty((min(step, n_boot), n), dtype=dtype)  # type: ignore[assignment]
    for a in range(0, n_boot, step):
        yield _unpack(matrix.rows(a, a + step), n, into)


def _kept(shared: _Shared, n: int, n_boot: int, seed: int) -> PackedRows | None:
    """The kept matrix of ``(n, n_boot, seed)``: already kept, read back from the store, or drawn now (or by
    :func:`draw_ahead`'s thread) into the store and read back from it, or held in memory within the budget
    (no store, or it could not keep the matrix); ``None``: drawn each time."""
    key = (n, n_boot, seed)
    if key in shared.kept or key in shared.drawn_each_time:
        return shared.kept.get(key)
    shape = (n_boot, (n + 1) // 2)
    store = shared.store if n * n_boot >= STORED_FROM else None
    drawing = shared.ahead.pop(key, None)
    packable = drawing.result() if drawing is not None else True  # the thread has left it in the store
    found = store.load(key, shape) if store is not None and packable else None
    if found is None and packable and store is not None and drawing is None and shape[0] * shape[1] <= STORED_UP_TO:
        packable = _stored(store, key, shape)  # written as drawn, read back a block at a time: no memory held
        found = store.load(key, shape) if packable else None
    if found is None and packable and shape[0] * shape[1] <= shared.left:  # no store, or it could not keep it
        packed = _drawn_packed(n, n_boot, seed)
        if packed is not None:
            found = InMemory(packed)
            shared.left -= packed.size
    if found is not None:
        shared.kept[key] = found
    else:  # a count over 15, or no room: not looked for again (a damaged file is not hashed on every call)
        shared.drawn_each_time.add(key)
    return found


class _CountOver15(Exception):
    """A drawn count does not fit in half a byte: that matrix is drawn each time."""


def _packed_blocks(n: int, n_boot: int, seed: int, chunk: int = 200) -> Iterator[NDArray[np.uint8]]:
    """The packed weights of ``default_rng(seed)`` (:func:`_pack`), ``chunk`` replicates at a time (the same
    weights whatever it is); :class:`_CountOver15` when one count is over 15."""
    for w in _counts(n, n_boot, np.random.default_rng(seed), chunk):
        packed = _pack(w)
        if packed is None:
            raise _CountOver15
        yield packed


def _drawn_packed(n: int, n_boot: int, seed: int) -> NDArray[np.uint8] | None:
    """The whole packed matrix of ``default_rng(seed)``, or ``None`` when one count is over 15."""
    found = np.empty((n_boot, (n + 1) // 2), dtype=np.uint8)
    done = 0
    try:
        for packed in _packed_blocks(n, n_boot, seed):
            found[done:done + len(packed)] = packed
            done += len(packed)
    except _CountOver15:
        return None
    return found


def _stored(store: WeightStore, key: tuple[int, int, int], shape: tuple[int, int], chunk: int = 200) -> bool:
    """Draw the matrix of ``key`` into ``store`` ``chunk`` replicates at a time (never held whole in memory);
    ``False`` when one count is over 15."""
    try:
        store.save(key, shape, _packed_blocks(*key, chunk))
    except _CountOver15:
        return False
    return True


def _distinct_columns(sums: NDArray[np.floating[Any]], columns: NDArray[np.intp]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Of ``sums``' ``columns``, the first of each distinct one and, per column, the place of its first copy
    among them."""
    first: dict[bytes, int] = {}
    keep: list[int] = []
    where = np.empty(len(columns), dtype=np.intp)
    for k, j in enumerate(columns):
        at = first.setdefault(np.ascontiguousarray(sums[:, j]).tobytes(), len(keep))
        if at == len(keep):
            keep.append(int(j))
        where[k] = at
    return np.asarray(keep, dtype=np.intp), where


def bootstrap_sums(sums: FloatArray, n_boot: int = 2000, seed: int = 0) -> FloatArray:
    """Replicated column totals ``W @ sums`` (``n_boot x m``) under the item bootstrap.

    Computed as ``(sums^T @ W^T)^T`` chunk by chunk (BLAS runs the long inner dimension fastest that way),
    in single precision when that is exact (:func:`_exact_scale`: integers, or halves, quarters or eighths
    scaled to integers, with totals below 2**24); the values are those of ``W @ sums`` in double precision
    either way. ``sums`` may be single precision already (integer counts a caller knows to be exact there;
    held column by column, ``sums.T`` C-contiguous, they are multiplied as they are, every column, without a
    copy). Otherwise each distinct column is multiplied once, and a constant column ``c`` is ``c * n`` without
    a product (every replicate's weights sum to ``n``). Where they are not exact (single-precision ones too),
    every column is multiplied in double precision.
    """
    sums = np.asarray(sums)
    if sums.dtype != np.float32:
        sums = np.asarray(sums, dtype=np.float64)
    n, m = sums.shape
    out = np.empty((max(n_boot, 0) if n else 0, m))
    if not out.size:
        return out
    scale = _exact_scale(sums)
    if scale is None:  # not exact in single precision: every column, in double precision
        cols: FloatArray = sums.T.astype(np.float64, copy=False)
        for done, w in _chunks(n, n_boot, seed, np.float64):
            out[done:done + len(w)] = (cols @ w.T).T
        return out
    if sums.dtype == np.float32 and scale == 1.0 and sums.T.flags.c_contiguous:
        # the caller's exact counts, held column by column: multiplied as they are, every column, without a copy
        for done, w in _chunks(n, n_boot, seed, np.float32):
            out[done:done + len(w)] = (sums.T @ w.T).T
        return out
    if sums.dtype != np.float32 or scale != 1.0:
        sums = np.asarray(sums, dtype=np.float64)
    constant = (sums == sums[:1]).all(axis=0)
    out[:, constant] = sums[0, constant].astype(np.float64) * n
    keep, where = _distinct_columns(sums, np.flatnonzero(~constant))
    if not keep.size:
        return out
    chunks = _chunks(n, n_boot, seed, np.float32)
    first = next(chunks)  # the weights are drawn (and kept) before the copy below: the draw's buffers are gone
    rows = np.empty((len(keep), n), dtype=np.float32)  # one row a distinct column, scaled to integers
    for k, j in enumerate(keep):
        np.multiply(sums[:, j], scale, out=rows[k], casting="same_kind")
    part = np.empty((out.shape[0], len(keep)))
    for done, w in itertools.chain([first], chunks):
        part[done:done + len(w)] = (rows @ w.T).T
    if scale != 1.0:
        part /= scale
    out[:, np.flatnonzero(~constant)] = part[:, where]
    return out


# what :func:`bootstrap_many` stacks for one pass over the weights: at most this many bytes of sums
STACK_BYTES = 128 * 2**20


def _footprint(n: int, cols: int, n_boot: int) -> int:
    """Bytes that ``cols`` columns of sums over ``n`` items take side by side, with their replicates (held twice
    while they are multiplied)."""
    return 8 * cols * (n + 2 * max(n_boot, 0))


def bootstrap_many(requests: Sequence[FloatArray], n_boot: int = 2000, seed: int = 0) -> list[FloatArray]:
    """:func:`bootstrap_sums` of each of ``requests``, the same values, for a fraction of the cost: those of
    the same number of items whose sums are exact in single precision (integers, halves, ...; :func:`_exact_scale`)
    are put side by side, so that the weights are drawn or unpacked and streamed through once for all of them
    (a statistic is the same function of its own columns of ``W @ [S_1 S_2 ...]``). A batch stays exact side by
    side (its largest value at its finest scale keeps every replicated total below 2**24), and exact sums give
    exact products, so the grouping does not change a bit; sums that are not exact are multiplied on their own,
    as :func:`bootstrap_sums` would. A batch and its replicates take at most :data:`STACK_BYTES`."""
    out: list[FloatArray | None] = [None] * len(requests)
    arrays = [np.asarray(r) for r in requests]
    groups: dict[int, list[tuple[int, float, float]]] = {}  # n -> (request, its scale, its largest magnitude)
    for k, a in enumerate(arrays):
        scale = _exact_scale(a) if a.ndim == 2 and a.size and a.dtype == np.float64 else None
        if scale is None:
            out[k] = bootstrap_sums(a, n_boot, seed)
        else:
            groups.setdefault(a.shape[0], []).append((k, scale, max(float(a.max()), -float(a.min()))))

    def run(n: int, batch: list[int]) -> None:
        boot = bootstrap_sums(np.hstack([arrays[j] for j in batch]), n_boot, seed)
        at = 0
        for j in batch:
            out[j] = boot[:, at:at + arrays[j].shape[1]]
            at += arrays[j].shape[1]

    for n, members in groups.items():
        batch: list[int] = []
        cols, scale, big = 0, 1.0, 0.0
        for k, sc, bg in members:
            wider = cols + arrays[k].shape[1]
            if batch and (_footprint(n, wider, n_boot) > STACK_BYTES or max(big, bg) * max(scale, sc) * n >= _EXACT32):
                run(n, batch)
                batch, cols, scale, big = [], 0, 1.0, 0.0
            batch.append(k)
            cols, scale, big = cols + arrays[k].shape[1], max(scale, sc), max(big, bg)
        run(n, batch)
    assert all(o is not None for o in out)
    return out  # type: ignore[return-value]


class Replicates:
    """Statistics that wait for their bootstrap replicates: :meth:`add` ``(sums, finish)`` now, and :meth:`run`
    calls each ``finish(W @ sums)``, all computed together by :func:`bootstrap_many` (one pass over the weights
    for many raters' statistics instead of one each).

    The columns of sums that are exact in single precision are kept once each: a column that several statistics
    share (whether an item was rated, the humans' scores beside every judge, one judge's scores in its win rates,
    its matrix and its alignment) is copied and multiplied once, and its replicates handed to each. Sums that are
    not exact are kept whole, as given (not copied). Once the columns waiting and their replicates reach
    ``budget`` bytes (half of :data:`STACK_BYTES` unless given) they are run at once, which bounds their memory."""

    def __init__(self, n_boot: int, seed: int, budget: int | None = None) -> None:
        self.n_boot, self.seed = n_boot, seed
        self.budget = STACK_BYTES // 2 if budget is None else budget
        self._columns: list[FloatArray] = []  # distinct exact columns, each (n, 1)
        self._seen: dict[tuple[int, bytes], int] = {}
        self._whole: list[FloatArray] = []  # sums that are not exact, as given
        # each statistic: its columns' places in _columns, or (None, its place in _whole); and its finish
        self._pending: list[tuple[list[int] | None, int, Callable[[FloatArray], None]]] = []
        self._bytes = 0

    def add(self, sums: FloatArray, finish: Callable[[FloatArray], None]) -> None:
        a = np.asarray(sums)
        if a.ndim == 2 and a.size and a.dtype == np.float64 and _exact_scale(a) is not None:
            places = []
            for j in range(a.shape[1]):
                col = np.ascontiguousarray(a[:, j])
                key = (a.shape[0], hashlib.blake2b(col.tobytes(), digest_size=16).digest())
                if key not in self._seen:
                    self._seen[key] = len(self._columns)
                    self._columns.append(col.reshape(-1, 1).copy())
                    self._bytes += _footprint(a.shape[0], 1, self.n_boot)
                places.append(self._seen[key])
            self._pending.append((places, 0, finish))
        else:
            self._whole.append(a)
            self._pending.append((None, len(self._whole) - 1, finish))
            self._bytes += _footprint(a.shape[0] if a.ndim else 0, a.shape[1] if a.ndim == 2 else 1, self.n_boot)
        if self._bytes >= self.budget:
            self.run()

    def run(self) -> None:
        columns, whole, pending = self._columns, self._whole, self._pending
        self._columns, self._seen, self._whole, self._pending, self._bytes = [], {}, [], [], 0
        boot = bootstrap_many([*columns, *whole], self.n_boot, self.seed)
        del columns
        for places, at, finish in pending:
            if places is None:
                finish(boot[len(boot) - len(whole) + at])
            else:
                finish(np.hstack([boot[k] for k in places]) if places else np.empty((max(self.n_boot, 0), 0)))


def _chunks(n: int, n_boot: int, seed: int,
            dtype: type[np.float64] | type[np.float32]) -> Iterator[tuple[int, FloatArray]]:
    """:func:`_weights` with the first replicate of each chunk (a kept matrix's chunks share one buffer: each
    holds until the next is asked for)."""
    done = 0
    for w in _weights(n, n_boot, seed, dtype):
        yield done, w
        done += len(w)


def percentile_ci(samples: FloatArray, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of bootstrap replicates, ignoring NaN; ``(nan, nan)`` when none."""
    s = np.asarray(samples, dtype=np.float64)
    s = s[np.isfinite(s)]
    if s.size == 0:
        return float("nan"), float("nan")
    a = (1 - level) / 2
    lo, hi = np.quantile(s, [a, 1 - a])
    return float(lo), float(hi)


def safe_ratio(num: FloatArray, den: FloatArray) -> FloatArray:
    """``num / den`` with NaN where ``den == 0``."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def accuracy_from_confusion(conf: FloatArray) -> FloatArray:
    """Trace over total for confusion matrices of shape ``(..., K, K)``."""
    conf = np.asarray(conf, dtype=np.float64)
    return safe_ratio(np.trace(conf, axis1=-2, axis2=-1), conf.sum(axis=(-2, -1)))


def macro_f1_from_confusion(conf: FloatArray) -> FloatArray:
    """Macro-averaged F1 over the classes present in truth or prediction (scikit-learn's rule).

    ``F1_k = 2 tp_k / (2 tp_k + fp_k + fn_k)``; a class with no support in either is left out.
    """
    conf = np.asarray(conf, dtype=np.float64)
    tp = np.diagonal(conf, axis1=-2, axis2=-1)
    true_tot, pred_tot = conf.sum(-1), conf.sum(-2)
    denom = true_tot + pred_tot
    f1 = safe_ratio(2 * tp, denom)
    present = denom > 0
    f1 = np.where(present, np.nan_to_num(f1), 0.0)
    return safe_ratio(f1.sum(-1), present.sum(-1))


def cohen_kappa_from_confusion(conf: FloatArray) -> FloatArray:
    """Cohen (1960): ``kappa = (p_o - p_e) / (1 - p_e)``, ``p_e = sum_k p_k. p_.k``."""
    conf = np.asarray(conf, dtype=np.float64)
    total = conf.sum(axis=(-2, -1))
    po = safe_ratio(np.trace(conf, axis1=-2, axis2=-1), total)
    pe = safe_ratio((conf.sum(-1) * conf.sum(-2)).sum(-1), total**2)
    return safe_ratio(po - pe, 1 - pe)


def item_codes(item_ids: object) -> tuple[NDArray[np.int64], NDArray[np.object_]]:
    """Sorted distinct item ids and each row's index into them (``np.unique(..., return_inverse=True)``
    without turning a million ids into fixed-width strings)."""
    if isinstance(getattr(item_ids, "dtype", None), pd.CategoricalDtype):
        # sorted by value, not by category order, so a compact frame resamples like a plain one
        cat = pd.Series(item_ids).cat.remove_unused_categories()
        names = np.asarray(cat.cat.categories, dtype=object)
        order = np.argsort(names.astype(str), kind="stable")
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        return rank[cat.cat.codes.to_numpy()], names[order]
    codes, uniques = pd.factorize(item_ids, sort=True)  # type: ignore[call-overload]
    return np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object)


def metric(est: float, lo: float, hi: float, n: int) -> dict[str, object]:
    """``{estimate, ci_low, ci_high, n}``; undefined (NaN) values become ``None``."""
    vals = [None if not np.isfinite(v) else round(float(v), 10) for v in (est, lo, hi)]
    return {"estimate": vals[0], "ci_low": vals[1], "ci_high": vals[2], "n": int(n)}


def estimate_with_ci(
    stat: Callable[[FloatArray], FloatArray], sums: FloatArray, boot: FloatArray, level: float = 0.95
) -> tuple[float, float, float]:
    """Point estimate ``stat(sums.sum(0))`` and the percentile CI of ``stat(boot)``. ``sums`` may be the
    column totals themselves (``1 x m``), which a caller evaluating several statistics sums once."""
    est = float(stat(sums.sum(0)[None, :])[0]) if sums.size else float("nan")
    lo, hi = percentile_ci(stat(boot), level) if boot.size else (float("nan"), float("nan"))
    return est, lo, hi
