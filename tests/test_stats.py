"""Estimators against scikit-learn and hand-computed values; the vectorised bootstrap against a loop."""

import contextlib

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, f1_score

from judgecal.stats import bootstrap as stats


def test_kappa_hand_computed():
    # 2x2: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4
    conf = np.array([[35, 15], [15, 35]]) / 100 * np.array([[1, 1], [1, 1]])
    conf = np.array([[40.0, 10.0], [20.0, 30.0]])
    po, pe = 0.7, (50 * 60 + 50 * 40) / 100**2
    assert stats.cohen_kappa_from_confusion(conf) == pytest.approx((po - pe) / (1 - pe))


@pytest.mark.parametrize("seed", range(5))
def test_against_sklearn(seed):
    rng = np.random.default_rng(seed)
    labels = ["A", "B", "tie"]
    y = rng.choice(labels, 300, p=[0.45, 0.45, 0.1])
    p = np.where(rng.random(300) < 0.6, y, rng.choice(labels, 300))
    conf = confusion_matrix(y, p, labels=labels).astype(float)
    assert stats.cohen_kappa_from_confusion(conf) == pytest.approx(cohen_kappa_score(y, p), abs=1e-12)
    assert stats.macro_f1_from_confusion(conf) == pytest.approx(f1_score(y, p, average="macro"), abs=1e-12)
    assert stats.accuracy_from_confusion(conf) == pytest.approx(np.mean(y == p))


def test_macro_f1_leaves_out_absent_classes_like_sklearn():
    y = np.array(["A", "A", "B", "B"])
    p = np.array(["A", "B", "B", "B"])
    conf = confusion_matrix(y, p, labels=["A", "B", "tie"]).astype(float)
    assert stats.macro_f1_from_confusion(conf) == pytest.approx(f1_score(y, p, average="macro"))


def test_edge_cases():
    assert np.isnan(stats.accuracy_from_confusion(np.zeros((3, 3))))
    # constant agreement: p_e = 1 -> kappa undefined (NaN), never a division error
    assert np.isnan(stats.cohen_kappa_from_confusion(np.array([[5.0, 0.0], [0.0, 0.0]])))
    assert stats.percentile_ci(np.array([]))[0] != stats.percentile_ci(np.array([]))[0]  # nan
    assert stats.bootstrap_sums(np.zeros((0, 2)), 10).shape == (0, 2)
    assert list(stats.bootstrap_weights(0, 10, np.random.default_rng(0))) == []


def test_vectorised_bootstrap_equals_the_loop():
    rng = np.random.default_rng(1)
    sums = rng.integers(0, 5, size=(57, 3)).astype(float)
    boot = stats.bootstrap_sums(sums, n_boot=300, seed=7)
    # the same index draws, one replicate at a time
    r = np.random.default_rng(7)
    idx = np.vstack([r.integers(0, 57, size=(c, 57)) for c in [300]])
    loop = np.array([sums[i].sum(0) for i in idx])
    assert np.allclose(boot, loop)
    w = next(stats.bootstrap_weights(57, 300, np.random.default_rng(7)))
    assert (w.sum(1) == 57).all()


def test_bootstrap_ci_covers_and_matches_theory():
    rng = np.random.default_rng(3)
    x = (rng.random(2000) < 0.3).astype(float)
    sums = np.column_stack([x, np.ones_like(x)])
    est, lo, hi = stats.estimate_with_ci(lambda m: stats.safe_ratio(m[:, 0], m[:, 1]), sums,
                                         stats.bootstrap_sums(sums, 2000, 0))
    se = np.sqrt(est * (1 - est) / len(x))
    assert lo < est < hi
    assert (hi - lo) == pytest.approx(2 * 1.96 * se, rel=0.1)


@pytest.mark.parametrize("kind", ["counts", "fractions", "large", "halves", "constant"])
def test_bootstrap_sums_equals_the_plain_product_in_double_precision(kind):
    """W @ S in double precision, however it is computed: single precision only where it is exact (integer
    sums whose replicated totals stay below 2**24), and the same replicates whatever the chunk size."""
    rng = np.random.default_rng(4)
    n = 3000
    sums = {"counts": rng.integers(0, 4, size=(n, 6)).astype(float),
            "fractions": rng.random((n, 6)),
            "large": rng.integers(0, 4, size=(n, 6)).astype(float) * 10_000,  # 3000 * 30000 > 2**24
            # ties counted a half, eighths; a constant column, a column twice and an empty one
            "halves": np.column_stack([rng.integers(0, 5, size=(n, 3)) / 2, rng.integers(0, 9, size=n) / 8,
                                       np.full(n, 0.5), np.zeros(n)]),
            "constant": np.column_stack([np.ones(n), (x := rng.integers(0, 3, size=n) / 2), x, np.full(n, 2.0),
                                         x * 2, np.zeros(n)])}[kind]
    r = np.random.default_rng(11)
    w = np.vstack([np.bincount(r.integers(0, n, size=n), minlength=n) for _ in range(250)]).astype(float)
    boot = stats.bootstrap_sums(sums, n_boot=250, seed=11)
    if kind == "fractions":
        assert np.allclose(boot, w @ sums, rtol=1e-12, atol=0)
    else:
        assert np.array_equal(boot, w @ sums)
    chunked = np.vstack(list(stats.bootstrap_weights(n, 250, np.random.default_rng(11), chunk=7)))
    assert np.array_equal(chunked, w)


def test_shared_weights_reuse_the_same_replicates_within_their_budget():
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 3, size=(401, 2)).astype(float), rng.random((401, 3))  # an odd count: half a byte left
    plain = [stats.bootstrap_sums(a, 300, 2), stats.bootstrap_sums(b, 300, 2), stats.bootstrap_sums(a, 300, 3)]
    with stats.shared_weights(budget_mb=1):
        shared = [stats.bootstrap_sums(a, 300, 2), stats.bootstrap_sums(b, 300, 2), stats.bootstrap_sums(a, 300, 3)]
        again = stats.bootstrap_sums(a, 300, 2)  # read back from the kept matrix
        assert stats.bootstrap_sums(np.zeros((0, 2)), 300, 2).shape == (0, 2)
    with stats.shared_weights(budget_mb=0):  # nothing fits: drawn each time
        tiny = stats.bootstrap_sums(a, 300, 2)
    for x, y in zip(plain, shared, strict=True):
        assert np.allclose(x, y, rtol=1e-12, atol=0)
    assert np.array_equal(again, plain[0]) and np.array_equal(tiny, plain[0])
    assert not np.array_equal(plain[0], plain[2])  # another seed, other replicates


@pytest.mark.parametrize("shared", [False, True])
def test_bootstrap_many_gives_each_request_its_own_replicates_bit_for_bit(shared, monkeypatch):
    """Requests multiplied side by side (exact ones of one size) or alone (the others) come out exactly as
    :func:`bootstrap_sums` of each; the side-by-side budget splits a group without changing a bit."""
    rng = np.random.default_rng(5)
    n = 400
    requests = [rng.integers(0, 3, size=(n, 4)).astype(float),  # counts
                rng.integers(0, 3, size=(n, 3)) / 2.0,  # halves (a tie counted half)
                np.ones((n, 2)),  # constant columns
                rng.random((n, 3)),  # not exact: alone, in double precision
                rng.integers(0, 3, size=(n // 2, 2)).astype(float),  # another number of items
                rng.integers(0, 3, size=(n, 4)).astype(float),
                np.full((n, 1), -0.0),  # a constant -0.0 stays -0.0
                # exact alone (40,000 x 400 items < 2**24) but not beside the halves (scaled by 2): a batch of its own
                rng.integers(0, 40_000, size=(n, 2)).astype(float)]
    requests.append(requests[0].copy())  # the same columns twice
    with stats.shared_weights() if shared else contextlib.nullcontext():
        one_by_one = [stats.bootstrap_sums(r, 150, 4) for r in requests]
        together = stats.bootstrap_many(requests, 150, 4)
        monkeypatch.setattr(stats, "STACK_BYTES", n * 8 * 5)  # five columns side by side at most
        split = stats.bootstrap_many(requests, 150, 4)
    for got in (together, split):
        assert len(got) == len(requests)
        for want, have in zip(one_by_one, got, strict=True):
            assert have.shape == want.shape
            np.testing.assert_array_equal(have, want)
            assert (np.signbit(have) == np.signbit(want)).all()
    # Replicates: each finish gets its own request's replicates, in the order added, and runs early once
    # the waiting sums pass its budget
    seen: dict[int, np.ndarray] = {}
    later = stats.Replicates(150, 4, budget=8 * 8 * (n + 300))  # eight columns of sums and replicates
    for k, r in enumerate(requests):
        later.add(r, lambda boot, k=k: seen.__setitem__(k, boot))
        if k == 1:
            assert not seen  # seven columns wait
        if k == 2:
            assert sorted(seen) == [0, 1, 2]  # nine: the budget ran them
    later.run()
    assert sorted(seen) == list(range(len(requests)))
    for k, want in enumerate(one_by_one):
        np.testing.assert_array_equal(seen[k], want)


def test_counts_kept_in_single_precision_bootstrap_to_the_same_replicates():
    """Integer counts given in single precision bootstrap to exactly the double-precision replicates; single
    precision sums that are not exact there (a fraction; totals past 2**24) are multiplied in double."""
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 5, size=(300, 7)).astype(float)
    single = counts.astype(np.float32)
    np.testing.assert_array_equal(stats.bootstrap_sums(single, 200, 1), stats.bootstrap_sums(counts, 200, 1))
    for inexact in (counts + 0.5, counts * 2.0**18 + 1):
        np.testing.assert_allclose(stats.bootstrap_sums(inexact.astype(np.float32), 100, 1),
                                   stats.bootstrap_sums(inexact.astype(np.float32).astype(np.float64), 100, 1),
                                   rtol=0)
    # a view of single-precision columns is summed alike, held row by row or column by column (the alignment
    # probe's matrix, summed without a copy)
    wide = np.hstack([single, single])
    np.testing.assert_array_equal(stats.bootstrap_sums(wide[:, 7:], 50, 2), stats.bootstrap_sums(counts, 50, 2))
    by_column = np.asfortranarray(np.hstack([single, np.full((300, 1), 2.0, dtype=np.float32)]))
    np.testing.assert_array_equal(stats.bootstrap_sums(by_column, 50, 2),
                                  stats.bootstrap_sums(by_column.astype(np.float64), 50, 2))
    # constant and repeated single-precision columns (a count that is 2 for every item, one judge's column
    # twice) are multiplied once or not at all, and come out as the double-precision product
    plain = np.hstack([counts, np.full((300, 1), 2.0), counts[:, :2], np.zeros((300, 1))])
    with stats.shared_weights():
        np.testing.assert_array_equal(stats.bootstrap_sums(plain.astype(np.float32), 200, 1),
                                      stats.bootstrap_sums(plain, 200, 1))
    w = np.vstack(list(stats.bootstrap_weights(300, 200, np.random.default_rng(1))))
    np.testing.assert_array_equal(stats.bootstrap_sums(plain.astype(np.float32), 200, 1), w @ plain)


class _DictStore:
    """A :class:`judgecal.stats.bootstrap.WeightStore` in memory, counting what it is asked."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, int, int], np.ndarray] = {}
        self.loads = self.saves = 0

    def load(self, key, shape):
        self.loads += 1
        got = self.kept.get(key)
        return stats.InMemory(got) if got is not None and got.shape == shape else None

    def save(self, key, shape, blocks):
        self.saves += 1
        packed = np.vstack(list(blocks))
        assert packed.shape == shape
        self.kept[key] = packed


def test_a_weight_store_gives_back_the_same_replicates_without_drawing_them(monkeypatch):
    monkeypatch.setattr(stats, "STORED_FROM", 50_000)  # the test's bootstraps of 501 items are stored too
    rng = np.random.default_rng(6)
    a = rng.integers(0, 3, size=(501, 3)).astype(float)
    plain = stats.bootstrap_sums(a, 400, 7)
    store = _DictStore()
    with stats.shared_weights(store=store):
        first = stats.bootstrap_sums(a, 400, 7)
        stats.bootstrap_sums(a[:10], 400, 7)  # 4,000 weights: drawn, not stored
    assert store.saves == 1 and store.loads == 2  # looked for, then read back from the store once left there
    monkeypatch.setattr(stats, "_counts", lambda *args: pytest.fail("drawn again"))
    with stats.shared_weights(store=store):
        again = stats.bootstrap_sums(a, 400, 7)
    with stats.shared_weights(budget_mb=0, store=store):  # read from the store: no memory of the budget held
        without_budget = stats.bootstrap_sums(a, 400, 7)
    assert np.array_equal(first, plain) and np.array_equal(again, plain) and np.array_equal(without_budget, plain)
    assert store.loads == 4 and store.saves == 1


def test_weights_drawn_ahead_in_a_thread_are_the_replicates_a_later_call_takes(tmp_path, monkeypatch):
    """draw_ahead's thread draws into the store, a few replicates at a time, the matrix the first bootstrap of
    that many items then reads (the same replicates); a guess no call takes is waited for when the block ends;
    with no store, outside the block, or for a matrix the store holds already, no thread starts."""
    import threading

    from judgecal.data.store.snapshot import WeightFiles

    monkeypatch.setattr(stats, "STORED_FROM", 50_000)
    a = np.random.default_rng(9).integers(0, 3, size=(401, 3)).astype(float)
    plain = stats.bootstrap_sums(a, 300, 4)
    chunks = [np.vstack(list(stats._packed_blocks(401, 300, 4, c))) for c in (7, 200)]
    assert np.array_equal(chunks[0], chunks[1]) and np.array_equal(chunks[0], stats._drawn_packed(401, 300, 4))
    drawn_in = []
    real = stats._packed_blocks

    def recording(*args):
        drawn_in.append((args[0], threading.current_thread().name))
        return real(*args)

    monkeypatch.setattr(stats, "_packed_blocks", recording)
    files = WeightFiles(tmp_path)
    with stats.shared_weights(store=files):
        stats.draw_ahead(401, 300, 4)
        stats.draw_ahead(401, 300, 4)  # asked twice: drawn once
        stats.draw_ahead(377, 300, 4)  # a guess no bootstrap takes
        ahead = stats._SHARED.get().ahead
        assert set(ahead) == {(401, 300, 4), (377, 300, 4)}
        got = stats.bootstrap_sums(a, 300, 4)
        assert set(ahead) == {(377, 300, 4)}  # taken once drawn
    assert np.array_equal(got, plain)
    assert sorted(n for n, _ in drawn_in) == [377, 401] and all(t.startswith("judgecal-weights") for _, t in drawn_in)
    assert ahead[(377, 300, 4)].done()  # the unused guess was waited for, not left running
    kept = files.load((401, 300, 4), (300, 201))
    assert kept is not None and np.array_equal(kept.rows(0, 300), chunks[0])  # left in the store, whole
    kept.close()
    drawn_in.clear()
    with stats.shared_weights(store=files):
        stats.draw_ahead(401, 300, 4)  # in the store already: read from there, not drawn
        assert not stats._SHARED.get().ahead
        assert np.array_equal(stats.bootstrap_sums(a, 300, 4), plain)
    stats.draw_ahead(401, 300, 5)  # outside the block: nothing
    with stats.shared_weights(budget_mb=128, store=None):  # no store: it would be held, not drawn ahead
        stats.draw_ahead(401, 300, 5)
        assert not stats._SHARED.get().ahead
    monkeypatch.setattr(stats, "STORED_UP_TO", 300 * 201 - 1)  # over what the store takes, and no memory budget
    with stats.shared_weights(budget_mb=0, store=files):
        stats.draw_ahead(401, 300, 5)
        assert not stats._SHARED.get().ahead
        assert np.array_equal(stats.bootstrap_sums(a, 300, 5), stats.bootstrap_sums(a, 300, 5))
        assert (401, 300, 5) in stats._SHARED.get().drawn_each_time
    assert not drawn_in and files.load((401, 300, 5), (300, 201)) is None
    monkeypatch.setattr(stats, "STORED_UP_TO", 300 * 201)
    with stats.shared_weights(budget_mb=0, store=files):  # over the memory budget: the store holds it, not memory
        stats.draw_ahead(401, 300, 5)
        assert set(stats._SHARED.get().ahead) == {(401, 300, 5)}
        assert np.array_equal(stats.bootstrap_sums(a, 300, 5), plain5 := stats.bootstrap_sums(a, 300, 5))
    assert [n for n, _ in drawn_in] == [401]
    with stats.shared_weights(budget_mb=0, store=files):
        monkeypatch.setattr(stats, "_counts", lambda *args: pytest.fail("drawn again"))
        assert np.array_equal(stats.bootstrap_sums(a, 300, 5), plain5)


def test_a_matrix_with_a_count_over_15_is_drawn_each_time_ahead_or_not(tmp_path, monkeypatch):
    """A count over 15 (half a byte) met part-way through a matrix: it is neither kept nor left half-written in
    the store, and the bootstrap's replicates are those of drawing it afresh."""
    from judgecal.data.store.snapshot import WeightFiles

    monkeypatch.setattr(stats, "STORED_FROM", 1)
    items = np.random.default_rng(3).integers(0, 3, size=(40, 2)).astype(float)
    plain = stats.bootstrap_sums(items, 500, 1)  # drawn 200 replicates at a time: three blocks
    real, calls = stats._pack, [0]

    def over_on_the_second_block(w):  # a count over 15 out of 40 items is too rare to draw in a test
        calls[0] += 1
        return None if calls[0] == 2 else real(w)

    monkeypatch.setattr(stats, "_pack", over_on_the_second_block)
    monkeypatch.setattr(stats, "AHEAD_CHUNK", 16)
    for ahead in (False, True):
        calls[0] = 0
        with stats.shared_weights(store=WeightFiles(tmp_path)):
            if ahead:
                stats.draw_ahead(40, 500, 1)
            got = stats.bootstrap_sums(items, 500, 1)
            assert (40, 500, 1) in stats._SHARED.get().drawn_each_time and calls[0] == 2
        assert np.array_equal(got, plain)
        assert not list((tmp_path / "cache").glob("*"))  # no file, not even a temporary one


@pytest.mark.parametrize("at_least, most", [(1, 10**9), (7, 301 * 5)])
def test_a_kept_matrix_read_in_many_blocks_gives_the_drawn_replicates(tmp_path, monkeypatch, at_least, most):
    """Blocks of a few replicates (the last one short), held in memory or read back from a file, in every path
    of bootstrap_sums: the replicates of drawing them afresh."""
    from judgecal.data.store.snapshot import WeightFiles

    # 301 items: 3 replicates a block (50 = 16 x 3 + 2), or at least 7 but at most 1505 weights: 5 a block
    monkeypatch.setattr(stats, "BLOCK_WEIGHTS", 1000)
    monkeypatch.setattr(stats, "BLOCK_REPLICATES", at_least)
    monkeypatch.setattr(stats, "BLOCK_WEIGHTS_MAX", most)
    blocks = []
    real = stats._unpack
    monkeypatch.setattr(stats, "_unpack", lambda rows, n, into: blocks.append(len(rows)) or real(rows, n, into))
    monkeypatch.setattr(stats, "STORED_FROM", 10_000)
    rng = np.random.default_rng(12)
    counts = rng.integers(0, 4, size=(301, 5)).astype(float)
    halves = counts / 2  # scaled to integers
    by_column = np.asfortranarray(counts.astype(np.float32))  # multiplied as they are
    inexact = rng.random((301, 2))  # in double precision
    w = np.vstack(list(stats.bootstrap_weights(301, 50, np.random.default_rng(4))))
    for store in (None, WeightFiles(tmp_path), WeightFiles(tmp_path)):  # drawn, then read back from the file
        with stats.shared_weights(store=store):
            for sums in (counts, halves, by_column, inexact):
                got = stats.bootstrap_sums(sums, 50, 4)
                np.testing.assert_allclose(got, w @ np.asarray(sums, dtype=np.float64), rtol=1e-12, atol=0)
    assert len(list((tmp_path / "cache").glob("bootstrap-301-50-4-*.weights"))) == 1
    # single precision (exact) at least 7 a block where 7 x 301 weights fit, else 5; double precision as before
    assert set(blocks) == ({3, 2} if at_least == 1 else {5, 3, 2})


def test_shared_weights_close_the_files_they_read(tmp_path, monkeypatch):
    from judgecal.data.store.snapshot import WeightFiles

    monkeypatch.setattr(stats, "STORED_FROM", 10_000)
    opened = []

    class Recording(WeightFiles):
        def load(self, key, shape):
            got = super().load(key, shape)
            if got is not None:
                opened.append(got)
            return got

    a = np.random.default_rng(2).integers(0, 3, size=(301, 2)).astype(float)
    with stats.shared_weights(store=Recording(tmp_path)):
        stats.bootstrap_sums(a, 50, 1)
        assert opened and not any(r.fh.closed for r in opened)
    assert all(r.fh.closed for r in opened)
    opened.clear()
    with pytest.raises(KeyError), stats.shared_weights(store=Recording(tmp_path)):
        stats.bootstrap_sums(a, 50, 1)
        raise KeyError("the audit failed")
    assert opened and all(r.fh.closed for r in opened)


def test_weight_files_are_read_back_only_whole_and_of_their_key(tmp_path, monkeypatch):
    from judgecal.data.store.errors import WorkspaceError
    from judgecal.data.store.snapshot import WeightFiles

    monkeypatch.setattr(stats, "STORED_FROM", 50_000)
    a = np.random.default_rng(8).integers(0, 4, size=(300, 2)).astype(float)
    plain = stats.bootstrap_sums(a, 200, 1)
    files = WeightFiles(tmp_path)
    with stats.shared_weights(store=files):
        assert np.array_equal(stats.bootstrap_sums(a, 200, 1), plain)
    (path,) = (tmp_path / "cache").glob("bootstrap-300-200-1-numpy*.weights")
    kept = files.load((300, 200, 1), (200, 150))
    assert kept is not None and kept.shape == (200, 150)
    whole = np.frombuffer(path.read_bytes()[-200 * 150:], dtype=np.uint8).reshape(200, 150)
    assert np.array_equal(kept.rows(0, 7), whole[:7]) and np.array_equal(kept.rows(190, 260), whole[190:])
    assert kept.rows(200, 210).shape == (0, 150)  # clipped to the matrix, as one held in memory
    kept.close()
    assert files.load((300, 200, 1), (200, 151)) is None  # another shape: not this matrix
    assert files.load((300, 200, 2), (200, 150)) is None  # another seed: no file
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x11  # one weight changed: the digest no longer holds
    path.write_bytes(bytes(data))
    assert files.load((300, 200, 1), (200, 150)) is None
    with stats.shared_weights(store=files):  # drawn again (the same replicates) and kept again
        assert np.array_equal(stats.bootstrap_sums(a, 200, 1), plain)
    assert files.load((300, 200, 1), (200, 150)) is not None
    data = bytearray(path.read_bytes())
    data[:len(WeightFiles._MAGIC)] = b"judgecal.weights.1\n"  # the earlier layout (interleaved halves): not read
    path.write_bytes(bytes(data))
    assert files.load((300, 200, 1), (200, 150)) is None
    with stats.shared_weights(store=files):
        assert np.array_equal(stats.bootstrap_sums(a, 200, 1), plain)
    kept = files.load((300, 200, 1), (200, 150))
    assert kept is not None
    w = np.vstack(list(stats.bootstrap_weights(300, 200, np.random.default_rng(1)))).astype(np.int64)
    rows = kept.rows(0, 200)  # item k in the low half of byte k, item 150 + k in its high half
    assert np.array_equal(rows & 15, w[:, :150]) and np.array_equal(rows >> 4, w[:, 150:])
    with open(path, "r+b") as fh:  # cut short after its check (by something else than judgecal)
        fh.truncate(path.stat().st_size - 10)
    with pytest.raises(WorkspaceError, match=r"bootstrap-300-200-1-.*changed while the audit read it"):
        kept.rows(150, 200)
    kept.close()
    for k in range(WeightFiles.KEEP + 2):  # the least recently used go
        files.save((10 + k, 1, 0), (1, 1), [np.zeros((1, 1), dtype=np.uint8)])
    assert len(list((tmp_path / "cache").glob("bootstrap-*.weights"))) == WeightFiles.KEEP
