"""Per-period partial results of a judge's series, kept in the workspace's ``cache/`` folder between audits.

A period's figures (its items, agreements, κ, interval, the annotators' leave-one-out agreement, invalid rate,
start) depend only on that period's own inputs: for each of its items, the judge's item verdict, the truth, the
judge's invalid and total call counts, the item's time and the annotators' labels. Each period's figures are
stored under a *fingerprint* of exactly those inputs (BLAKE2b over the period's rows sorted by item, with the
settings that change a figure: judge, grouping, truth, alpha), so a week added computes only that week's figures,
and a corrected label or a re-judged item changes its own period's fingerprint and so recomputes exactly that
period, never reading a stale figure. The drift decision over the periods is the cheap combination step: it
needs only each period's agreement count and size (:func:`judgecal.stats.sequential.drift_sequence` reads the
running sums at the periods' ends), so it is recomputed from the partials at every look. The cache folder can
be deleted at any time: a missing or unreadable file is computed again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.data.store import snapshot

VERSION = 1  # bump when a period's figures are computed differently: every stored partial is then recomputed


def value_hashes(s: pd.Series, index: pd.Index) -> NDArray[np.uint64]:
    """One 64-bit hash per item of ``index`` of the value ``s`` holds for it: a number's as a double (a missing
    one as NaN), anything else's as text (a missing value as ``None``)."""
    got = s.reindex(index)
    if pd.api.types.is_numeric_dtype(got.dtype) and not pd.api.types.is_bool_dtype(got.dtype):
        x = got.to_numpy(dtype=np.float64, na_value=np.nan)
        # every integer below 2**53 is a double of its own; beyond, two could be one: those are hashed as text
        if pd.api.types.is_float_dtype(got.dtype) or not (np.abs(x[np.isfinite(x)]) >= 2.0**53).any():
            return np.asarray(pd.util.hash_array(x), dtype=np.uint64)
    col = got.astype(object).where(got.notna(), None)
    if pd.api.types.infer_dtype(col, skipna=True) not in ("string", "empty"):
        col = col.astype(str)  # text and None hash alike either way; other values are written as text first
    return np.asarray(pd.util.hash_array(col.to_numpy(dtype=object)), dtype=np.uint64)


def item_hashes(parts: dict[str, pd.Series | NDArray[np.uint64]], index: pd.Index,
                ids: NDArray[np.uint64] | None = None) -> NDArray[np.uint64]:
    """One 64-bit hash per item of ``index`` over every series of ``parts`` (aligned on the item; a missing
    value hashes as such; a part already hashed, :func:`value_hashes` of it, is given as its array), the item's
    id included (``ids``: the ids' hashes, when already found)."""
    out = (np.asarray(pd.util.hash_array(np.asarray(index.astype(str), dtype=object)), dtype=np.uint64)
           if ids is None else ids)
    for name, s in parts.items():
        h = s if isinstance(s, np.ndarray) else value_hashes(s, index)
        salt = np.uint64(int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little"))
        out = np.asarray((out * np.uint64(1_000_003)) ^ h ^ salt, dtype=np.uint64)  # wraps modulo 2**64
    return out


def period_fingerprints(hashes: NDArray[np.uint64], ids: pd.Index, period: pd.Series, settings: str) -> dict[str, str]:
    """period -> the BLAKE2b digest of its items' hashes in ascending order, with ``settings`` (an item's hash
    holds its id, so the same items give the same digest in whatever order they come; sorting numbers, not ids,
    keeps this cheap for a judge's hundreds of thousands of items)."""
    p = period.reindex(ids).to_numpy(dtype=object)
    rows = np.flatnonzero(pd.notna(p))
    if not len(rows):
        return {}
    codes, names = pd.factorize(p[rows], sort=True)
    h = np.asarray(hashes, dtype=np.uint64)[rows]
    order = np.lexsort((h, codes))
    codes, h = codes[order], h[order]
    starts = np.flatnonzero(np.diff(codes)) + 1
    out = {}
    for code, part in zip(codes[np.r_[0, starts]], np.split(h, starts), strict=True):
        d = hashlib.blake2b(f"{VERSION}:{settings}".encode(), digest_size=16)
        d.update(part.tobytes())
        out[str(names[code])] = d.hexdigest()
    return out


class PeriodCache:
    """The partials of one series (a judge under one grouping, truth and alpha): ``period -> (fingerprint,
    figures)`` in one JSON file of the cache folder, read once and written once per look."""

    def __init__(self, folder: Path, settings: str) -> None:
        self.folder = Path(folder)
        self.name = "periods-" + hashlib.blake2b(settings.encode(), digest_size=8).hexdigest()
        self.key = f"{VERSION}:{settings}"
        stored = snapshot.load_json(self.folder, self.name, self.key)
        self.stored: dict[str, Any] = stored if isinstance(stored, dict) else {}
        self.computed: list[str] = []  # the periods whose figures this look computed (not read back)

    def figures(self, fingerprints: dict[str, str], compute: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """period -> its figures: read back where its fingerprint is stored, else computed (and stored)."""
        out: dict[str, Any] = {}
        for p, fp in fingerprints.items():
            hit = self.stored.get(p)
            if isinstance(hit, dict) and hit.get("fingerprint") == fp and isinstance(hit.get("figures"), dict):
                out[p] = hit["figures"]
            else:
                out[p] = json.loads(json.dumps(compute(p)))  # what a read back gives: JSON's own types
                self.computed.append(p)
        if self.computed or set(self.stored) != set(fingerprints):
            snapshot.save_json(self.folder, self.name, self.key,
                               {p: {"fingerprint": fingerprints[p], "figures": out[p]} for p in fingerprints})
        return out


__all__ = ["PeriodCache", "item_hashes", "period_fingerprints"]
