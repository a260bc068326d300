"""A judge over time: its agreement with the human truth period by period, and an anytime-valid drift decision.

The items counted are those with both the judge's verdict (its item verdict, as the audit reads it:
:func:`judgecal.audit.models.item_verdicts`, swap-debiased over the two orders, an invalid output a tie) and the
truth (the stored consensus the audit uses, :func:`judgecal.audit.truth.resolve_truth`). An item's period is the
judge's own record of it (a verdict's ``period`` or ``time``) or else the item's (``metadata.period`` /
``metadata.time``); ``by`` day, week or month reads the time, ``period`` the name. Periods are ordered by their
first time where they have one, else by name (its numbers as numbers: ``9`` before ``10``). The drift decision is
:func:`judgecal.stats.sequential.drift_sequence`: the baseline period against a window from each later period
on (the window with the most evidence is shown), valid at every look.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from judgecal.audit.human import annotator_matrix, loo_accuracy
from judgecal.audit.models import category_places, coded_verdicts, take, text_index
from judgecal.audit.period_cache import PeriodCache, item_hashes, period_fingerprints, value_hashes
from judgecal.audit.truth import resolve_truth
from judgecal.data.store import Workspace
from judgecal.data.times import BY, period_of
from judgecal.errors import InputError
from judgecal.stats.alt_test import cohen_kappa
from judgecal.stats.proportion import wilson_interval
from judgecal.stats.sequential import drift_sequence

MIN_BASELINE = 10  # fewer baseline items than this: too few to monitor against
METHOD = ("baseline: exact Clopper-Pearson interval at alpha/2; after it: a window from each period on, each a "
          "beta-binomial mixture confidence sequence (Howard et al., 2021) at (alpha/2)/((j+1)(j+2)); drift "
          "when a window's drop interval is above 0 and reaches the effect of interest")
COLUMNS = ["item_id", "judge", "order", "sample", "mutation", "verdict", "status", "time", "period", "env"]
CODED = ("item_id", "order", "mutation", "verdict", "status")  # only compared, counted or read whole: kept as codes


class MonitorError(InputError):
    """A monitor that cannot be run as asked (unknown judge, no time or period, too few items)."""


def _item_when(ws: Workspace) -> pd.DataFrame:
    """item_id -> the item's own ``time`` and ``period`` (metadata), where it has them."""
    return pd.DataFrame({"time": ws.items_repo.item_metadata("time"), "period": ws.items_repo.item_metadata("period")})


def _verdicts(jf: pd.DataFrame, codes: NDArray[np.intp], pairwise: NDArray[np.bool_]) -> NDArray[np.object_]:
    """The judge's item verdicts, item by item (``codes``: each row's item; ``pairwise``: which items are
    pairs): swap-debiased on pairs (:func:`~judgecal.audit.models.coded_verdicts`), the first sample's label
    elsewhere."""
    rows = pairwise[codes]
    out = coded_verdicts(jf[rows], codes[rows], len(pairwise)) if rows.any() else np.full(len(pairwise), None, object)
    other = np.flatnonzero(~rows)
    if len(other):
        sample = jf["sample"].to_numpy(dtype=np.float64, na_value=np.inf)  # a missing sample last
        other = other[np.argsort(sample[other], kind="stable")]
        item, first = np.unique(codes[other], return_index=True)
        out[item] = jf["verdict"].to_numpy(dtype=object)[other[first]]
    return out


def _invalid(jf: pd.DataFrame, codes: NDArray[np.intp], n: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The judge's invalid outputs and its calls on each item (``codes``: each row's item of ``n``)."""
    bad = np.bincount(codes, weights=(jf["status"] != "ok").to_numpy(), minlength=n)
    return bad.astype(np.int64), np.bincount(codes, minlength=n).astype(np.int64)


def _vector_periods(times: pd.Series, by: str) -> pd.Series | None:
    """item_id -> :func:`judgecal.data.times.period_of` of each time, computed on the column at once (``None``
    when a time does not parse that way: the caller then reads them one by one and names the bad one)."""
    try:
        dt = pd.to_datetime(times.astype(str), utc=True, format="ISO8601")
    except (ValueError, TypeError, OverflowError):
        return None
    if len(dt) and int(dt.dt.year.min()) < 1:  # before year 1 in UTC: not a time period_of reads
        return None
    if by == "day":
        out = dt.dt.strftime("%Y-%m-%d")
    elif by == "month":
        out = dt.dt.strftime("%Y-%m")
    else:
        iso = dt.dt.isocalendar()
        out = iso["year"].astype(str) + "-W" + iso["week"].astype(str).str.zfill(2)
    return pd.Series(out.to_numpy(dtype=object), index=times.index, dtype=object)


def _periods(when: pd.DataFrame, by: str) -> tuple[pd.Series, pd.Series]:
    """item_id -> its period under ``by`` (missing where it has none), and period -> its first time."""
    if by == "period":
        period = when["period"]
    else:
        vector = _vector_periods(when["time"].dropna(), by)
        if vector is None:  # one by one, so the first bad time is named
            found: dict[Any, str] = {}
            for i, t in when["time"].dropna().sort_index().items():  # the first bad one by id, whatever the order
                try:
                    found[i] = period_of(str(t), by)
                except (ValueError, OverflowError):  # past year 9999 in UTC: written by other means
                    raise MonitorError(f"item {i!r}: metadata.time {str(t)[:40]!r} is not an ISO 8601 time") from None
            vector = pd.Series(found, dtype=object)
        period = vector.reindex(when.index)
    first = when["time"].groupby(period).min()
    return period, first


def by_choices(ws: Workspace, stamps: bool = False) -> list[str]:
    """The groupings the workspace's records allow: ``period`` where a record names one, ``day``, ``week`` and
    ``month`` where one was given a time (none: nothing to monitor, and the explorer lists its Over time page as
    not run); ``stamps=True`` also counts the time stamped on live judge calls (a verdict made by judgecal's
    engine), which ``judgecal monitor --by day|week|month`` reads when asked."""
    out = []
    if ws.judgments_repo.judgments_with("period") or not ws.items_repo.item_metadata("period").empty:
        out.append("period")
    if ws.judgments_repo.judgments_with("time", stamps=stamps) or not ws.items_repo.item_metadata("time").empty:
        out += ["day", "week", "month"]
    return out


def default_by(ws: Workspace) -> str | None:
    """The grouping a report shows without being asked: ``judgecal monitor``'s default (``week``) where records
    were given a time (imported verdicts, items), else ``period``; ``None`` when no record was given a time or
    a period. The stamp of a live judge call does not count: a workspace judged live gets the same report as
    before until its records name a period or carry an imported time (``judgecal monitor --by day`` reads the
    stamps)."""
    choices = by_choices(ws)
    return None if not choices else "week" if "week" in choices else "period"


def settings(ws: Workspace) -> tuple[float, float]:
    """``judgecal monitor``'s defaults from the workspace's thresholds: ``alpha`` and the effect of interest
    (``accuracy_gap.caution_above``)."""
    from judgecal.audit.decision import load_thresholds

    limits = load_thresholds(ws.path)
    return float(limits["alpha"]), float(limits["accuracy_gap"]["caution_above"])


def _natural(name: str) -> str:
    """A period name's sort key: its text as it is, each run of digits compared as a number (``9`` before
    ``10``, ``week 2`` before ``week 10``): written as its length and its digits, without converting it."""
    return re.sub(r"[0-9]+", lambda m: f"{len(m[0].lstrip('0')):06d}{m[0].lstrip('0')}", name)


def _finite(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _read(ws: Workspace, consensus: str) -> dict[str, Any]:
    """What every judge's series reads alike: the truth, the items' facts, their own times and periods, and the
    annotators' labels (items x annotators); ``items``, every item id once (the items', then any other the
    truth names), the index that the per-item columns a look reads for each judge are aligned on once
    (:func:`_aligned`), so a judge's items are found among them with one lookup."""
    truth, _ = resolve_truth(ws, consensus, n_boot=0)
    facts = ws.items_repo.item_facts()
    index = pd.Index(np.asarray(facts.index, dtype=object))
    items = index.append(pd.Index(np.asarray(truth.index.unique().difference(index), dtype=object)))
    return {"truth": truth, "facts": facts, "when": _item_when(ws), "items": items,
            "wide": annotator_matrix(ws, consensus, truth) if not truth.empty else pd.DataFrame()}


def _label_rows(wide: pd.DataFrame) -> pd.Series:
    """item_id -> its annotators' labels as one JSON list (``null`` where one did not label it)."""
    if not len(wide):
        return pd.Series(dtype=object)
    return wide.apply(lambda r: json.dumps([None if pd.isna(x) else str(x) for x in r]), axis=1)


def _aligned(read: dict[str, Any], name: str, full: Callable[[], pd.Series | NDArray[Any]],
             missing: object = np.nan) -> NDArray[Any]:
    """``full()`` (item_id -> value; its first value where an id repeats) as an array on ``read["items"]``
    (``missing`` where it has none), found once per look and kept in ``read`` for the next judge; ``full()``
    may give that array itself."""
    kept = read.setdefault("aligned", {})
    if name not in kept:
        s = full()
        if isinstance(s, np.ndarray):
            kept[name] = s
        else:
            s = s[~s.index.duplicated()]
            at = s.index.get_indexer(read["items"])
            out = np.full(len(at), missing, dtype=object)
            out[at >= 0] = s.to_numpy(dtype=object)[at[at >= 0]]
            kept[name] = out
    return kept[name]  # type: ignore[no-any-return]


def _hashes(read: dict[str, Any], name: str, full: Callable[[], pd.Series], at: NDArray[np.intp],
            missing: object = None) -> NDArray[np.uint64]:
    """:func:`~judgecal.audit.period_cache.value_hashes` of ``full()`` at the items ``at`` (positions in
    ``read["items"]``; an item it lacks holding ``missing``), hashed over every item once per look."""
    def every() -> NDArray[np.uint64]:
        s = full()
        s = s[~s.index.duplicated()]
        gap = value_hashes(pd.Series([missing], dtype=object), pd.RangeIndex(1))[0]
        where = s.index.get_indexer(read["items"])
        out = np.full(len(where), gap, dtype=np.uint64)
        out[where >= 0] = value_hashes(s, s.index)[where[where >= 0]]
        return out

    return _aligned(read, "hash:" + name, every)[at]


def _item_periods(read: dict[str, Any], ids: pd.Index, by: str, at: NDArray[np.intp]) -> tuple[pd.Series, pd.Series]:
    """:func:`_periods` of the items ``ids`` (at ``at`` in ``read["items"]``) by their own times and periods:
    the items' periods found once per look for every item, and each period's first time among ``ids`` as the
    least of the times' ranks (the times sorted once per look)."""
    kept = read.setdefault("periods", {})
    if by not in kept:
        try:
            period = _periods(read["when"], by)[0]
            codes, names = pd.factorize(_aligned(read, "period:" + by, lambda: period))
            try:  # the times' order once: a period's first time is then its least rank (-1: no time)
                ranks, times = pd.factorize(_aligned(read, "time", lambda: read["when"]["time"]), sort=True)
            except TypeError:  # times that do not compare (text beside numbers): grouped as they are
                ranks, times = None, None
            kept[by] = (codes, pd.Index(names, dtype=object), ranks, times)
        except MonitorError:  # a time that does not parse: named for the judge whose items hold it
            kept[by] = None
    if kept[by] is None:
        return _periods(_items_when(read, ids, at), by)
    codes, names, ranks, times = kept[by]
    mine = codes[at]
    period = pd.Series(names.take(mine, allow_fill=True, fill_value=np.nan).to_numpy(dtype=object),
                       index=ids, dtype=object)
    if ranks is None:
        return period, _items_when(read, ids, at)["time"].groupby(period).min()
    got = mine >= 0
    r = ranks[at][got]
    least = pd.Series(np.where(r >= 0, r, len(times)), dtype=np.int64).groupby(mine[got]).min()
    first = np.asarray(times, dtype=object)[np.minimum(least.to_numpy(), len(times) - 1)] if len(times) else \
        np.full(len(least), np.nan, dtype=object)
    first[least.to_numpy() >= len(times)] = np.nan
    return period, pd.Series(first, index=names[least.index.to_numpy()], dtype=object)


def every_judge_rows(ws: Workspace) -> pd.DataFrame | None:
    """Every judge's rows of :data:`COLUMNS` from the judgments' columnar copy an audit leaves in the cache
    folder (``None`` without one: each judge is then read out of SQLite)."""
    return ws.judgments_repo.judgments_copy(COLUMNS)


def _judge_rows(ws: Workspace, judge: str, frame: pd.DataFrame | None) -> pd.DataFrame:
    """``judge``'s rows of :data:`COLUMNS`, from ``frame`` or the columnar copy where there is one (its text
    columns as plain objects, as SQLite gives them, but for those of :data:`CODED`), else out of SQLite."""
    if frame is None:
        frame = every_judge_rows(ws)
    if frame is None:
        return ws.judgments_repo.judgments_frame(judge, columns=COLUMNS)
    mine = frame[(frame["judge"] == judge).to_numpy()]
    return pd.DataFrame({c: mine[c].astype(object) if isinstance(mine[c].dtype, pd.CategoricalDtype) and c not in CODED
                         else mine[c] for c in COLUMNS}).reset_index(drop=True)


def _item_codes(col: pd.Series, read: dict[str, Any]) -> tuple[NDArray[np.intp], pd.Index, NDArray[np.intp]]:
    """Each row's item as a number ``0 .. n-1`` (-1: a row without one), the ``n`` item ids (plain strings), and
    where each is in ``read["items"]`` (-1: not there); a categorical column by its codes, its categories found
    among the items once per look."""
    items = read["items"]
    if not isinstance(col.dtype, pd.CategoricalDtype):
        codes, uniq = pd.factorize(col)
        ids = text_index(uniq)
        return codes, ids, items.get_indexer(ids)
    places = category_places(col, items, read)
    raw = col.cat.codes.to_numpy()
    present = np.zeros(len(places), dtype=bool)
    present[raw[raw >= 0]] = True
    used = np.flatnonzero(present)
    number = np.full(len(places), -1, dtype=np.intp)
    number[used] = np.arange(len(used))
    return take(number, raw), text_index(col.cat.categories[used]), places[used]


def _items_when(read: dict[str, Any], ids: pd.Index, at: NDArray[np.intp]) -> pd.DataFrame:
    """item_id (``ids``, at ``at`` in ``read["items"]``) -> the item's own ``time`` and ``period``."""
    return pd.DataFrame({"time": _aligned(read, "time", lambda: read["when"]["time"])[at],
                         "period": _aligned(read, "period", lambda: read["when"]["period"])[at]}, index=ids)


def _when(jf: pd.DataFrame, ids: pd.Index, read: dict[str, Any], at: NDArray[np.intp]) -> pd.DataFrame | None:
    """item_id -> its ``time`` and ``period``: the judge's own record of it where the record says (an imported
    verdict's time or period), else the item's (``metadata.time`` / ``metadata.period``), else the time the
    judge was called (a live call's stamp: a verdict with the environment fingerprint of judgecal's engine);
    ``None`` where that is every item's own (``at``: ``ids`` in ``read["items"]``)."""
    live = jf["env"].notna().to_numpy() if "env" in jf else np.zeros(len(jf), dtype=bool)
    said = {col: ~live & jf[col].notna().to_numpy() for col in ("time", "period")}
    stamped = live & jf["time"].notna().to_numpy()
    if not stamped.any() and not any(rows.any() for rows in said.values()):  # most records say neither
        return None
    items = _items_when(read, ids, at)
    when = items.copy()
    for col, rows in said.items():
        if rows.any():
            record = jf[rows][["item_id", col]].astype(object).drop_duplicates("item_id").set_index("item_id")[col]
            when[col] = record.reindex(ids).fillna(when[col])
    if stamped.any():
        stamp = jf[stamped][["item_id", "time"]].astype(object).drop_duplicates("item_id").set_index("item_id")["time"]
        when["time"] = when["time"].fillna(stamp.reindex(ids))
    return None if when.equals(items) else when


def monitor(ws: Workspace, judge: str | None = None, *, by: str = "period", baseline: str | None = None,
            consensus: str = "ds", alpha: float = 0.05, effect: float = 0.05,
            looked: list[str] | None = None, frame: pd.DataFrame | None = None,
            shared: dict[str, Any] | None = None) -> dict[str, Any]:
    """The series of ``judge`` (the one judge when ``None``) over its periods and the drift decision, as a
    JSON-ready dict (``periods``: one row each, those after the baseline with the running agreement since it and
    its anytime-valid sequence, the drop and the decision; ``drift``, ``first_drift``; the settings). Drift is
    declared where the running agreement's upper bound falls below the baseline's lower bound
    (``baseline_agreement.low``: the drift boundary) and the drop can reach the effect of interest.

    Each period's own figures are partials kept in the workspace's cache folder under a fingerprint of that
    period's inputs (:mod:`judgecal.audit.period_cache`): only new or changed periods are computed; the drift
    decision is combined from the periods' counts every time. ``looked``, when given, receives the names of the
    periods whose figures this call computed; ``frame``, every judge's rows of :data:`COLUMNS` (read once by a
    caller that monitors each judge, :func:`every_judge_rows`); ``shared``, a dict that keeps what every judge's
    series reads alike (the truth, the items' facts and times, the annotators' labels) for the next call."""
    if by not in BY:
        raise MonitorError(f"a period is one of {', '.join(BY)}, not {by!r}", name="by")
    judges = ws.judgments_repo.judges()
    if judge is None:
        if len(judges) != 1:
            raise MonitorError(f"name the judge: this workspace has {len(judges)} "
                               f"({', '.join(judges[:10]) or 'none'})", name="judge")
        judge = judges[0]
    if judge not in judges:
        raise MonitorError(f"unknown judge {judge!r}; this workspace has: {', '.join(judges[:10]) or 'none'}")
    if shared is None:
        shared = {}
    if consensus not in shared:
        shared[consensus] = _read(ws, consensus)
    read = shared[consensus]
    truth = read["truth"]
    if truth.empty:
        raise MonitorError(f"no consensus {consensus!r} is stored: run `judgecal aggregate` first (or name another)",
                           name="consensus")
    facts = read["facts"]
    jf = _judge_rows(ws, judge, frame)
    if "probe_items" not in read:  # a probe's copies are not the judge's verdicts on the traffic
        read["probe_items"] = facts.index[facts["source"].astype(str).str.startswith("probe:").to_numpy()]
    keep: NDArray[np.bool_] = (jf["mutation"] == "none").to_numpy()
    if len(read["probe_items"]):
        keep = keep & ~jf["item_id"].isin(read["probe_items"]).to_numpy()
    jf = jf[keep]
    # each item of the judge once, every per-item figure by its code; ``at``: where the items are among every
    # item, each per-item column read there
    codes, uniq, at = _item_codes(jf["item_id"], read)
    if (codes < 0).any():  # a row without an item: not a verdict on one
        jf, codes = jf[codes >= 0], codes[codes >= 0]
    task = _aligned(read, "task", lambda: facts["task"])
    pairwise = np.zeros(len(uniq), dtype=bool)
    pairwise[at >= 0] = task[at[at >= 0]] == "pairwise"
    found = _verdicts(jf, codes, pairwise)
    # a hashed lookup of plain strings: isin against an Arrow-backed index converts its values one by one
    in_truth = _aligned(read, "in truth", lambda: text_index(truth.index.unique()).get_indexer(read["items"]) >= 0)
    has = (at >= 0) & pd.notna(found)
    has[has] = in_truth[at[has]]
    if not has.any():
        raise MonitorError(f"{judge!r} has no verdict on an item with the truth {consensus!r}")
    bad, calls = (x[has] for x in _invalid(jf, codes, len(uniq)))
    verdict, at = pd.Series(found[has], index=uniq[has], dtype=object), at[has]
    when = _when(jf, verdict.index, read, at)  # None: every item's time and period its own
    period, first_time = _item_periods(read, verdict.index, by, at) if when is None else _periods(when, by)
    got = period.notna().to_numpy()
    kept = period[got]
    if kept.empty:
        what = "period" if by == "period" else "time"
        raise MonitorError(f"no item judged by {judge!r} with a human truth has a {what}: give the records a "
                           f"{what} (docs/how-to/monitor.md)" + ("; or group them by period" if by != "period" else ""),
                           name="by")
    names = sorted(kept.unique(), key=lambda p: (pd.isna(first_time.get(p)), str(first_time.get(p, "")), _natural(p), p))
    base = baseline if baseline is not None else names[0]
    if base not in names:
        raise MonitorError(f"unknown baseline period {base!r}; the periods are: {', '.join(names[:20])}")
    ids, at = kept.index, at[got]
    v = pd.Series(verdict.to_numpy(dtype=object)[got], index=ids, dtype=object)
    t = pd.Series(_aligned(read, "truth", lambda: truth)[at], index=ids, dtype=object)
    ok = pd.Series((v.to_numpy(dtype=object) == t.to_numpy(dtype=object)).astype(np.float64), index=ids)
    wide = read["wide"]
    invalid = pd.DataFrame({"sum": bad[got], "count": calls[got]}, index=ids)
    hashes = item_hashes({"verdict": v, "truth": _hashes(read, "truth", lambda: truth, at),
                          "time": _hashes(read, "time", lambda: read["when"]["time"], at) if when is None else when["time"],
                          "invalid": invalid["sum"], "calls": invalid["count"],
                          "labels": _hashes(read, "labels", lambda: _label_rows(wide), at,
                                            json.dumps([None] * len(wide.columns)) if len(wide) else None)}, ids,
                         _hashes(read, "ids", lambda: pd.Series(read["items"].astype(str), index=read["items"]), at))
    settings = json.dumps([judge, by, consensus, alpha, list(wide.columns)])
    fingerprints = period_fingerprints(hashes, ids, kept, settings)
    groups: dict[str, pd.Index] = {}  # each period's items, found when a period's figures are computed

    def figures(p: str) -> dict[str, Any]:
        if not groups:
            groups.update({str(q): idx for q, idx in kept.groupby(kept).groups.items()})
        got = groups[p]
        hits, n = float(ok[got].sum()), len(got)
        lo, hi = wilson_interval(hits, n, 1 - alpha)
        inv = invalid.reindex(got).sum()
        hum = loo_accuracy(wide.reindex(wide.index.intersection(got)), n_boot=200) if len(wide) else None
        return {"start": None if pd.isna(first_time.get(p)) else str(first_time[p]), "n": n, "hits": hits,
                "agreement": hits / n, "agreement_low": float(lo), "agreement_high": float(hi),
                "kappa": _finite(cohen_kappa(v.reindex(got).to_numpy(dtype=object),
                                             t.reindex(got).to_numpy(dtype=object))),
                "humans": None if hum is None or not hum["n"] else {"estimate": hum["estimate"], "n": hum["n"]},
                "invalid_rate": float(inv["sum"] / inv["count"]) if inv["count"] else 0.0}

    cache = PeriodCache(ws.path, settings)
    part = cache.figures(fingerprints, figures)
    if looked is not None:
        looked += cache.computed
    if part[base]["n"] < MIN_BASELINE:
        raise MonitorError(f"too few items in the baseline period {base!r}: {part[base]['n']} with a verdict and "
                           f"a truth; at least {MIN_BASELINE} are needed")
    base_at = names.index(base)
    after_names = names[base_at + 1:]
    # the combination step: the sequence reads the running sums at the periods' ends, so each period's count of
    # agreements and its size are all it needs (the order within a period does not change them)
    def ones(p: str) -> np.ndarray:
        return np.repeat([1.0, 0.0], [int(part[p]["hits"]), part[p]["n"] - int(part[p]["hits"])])

    post = np.concatenate([ones(p) for p in after_names]) if after_names else np.zeros(0)
    counts = np.cumsum([part[p]["n"] for p in after_names])
    seq = drift_sequence(ones(base), post, counts, alpha=alpha, effect=effect)
    rows = []
    for k, p in enumerate(names):
        fig = part[p]
        row: dict[str, Any] = {
            "period": str(p), "start": fig["start"], "n": fig["n"], "agreement": fig["agreement"],
            "agreement_low": fig["agreement_low"], "agreement_high": fig["agreement_high"], "kappa": fig["kappa"],
            "humans": fig["humans"], "invalid_rate": fig["invalid_rate"],
            "role": "before" if k < base_at else "baseline" if k == base_at else "after"}
        if k > base_at:
            j = k - base_at - 1
            row.update({"since_baseline": int(seq["n"][j]), "running": float(seq["running"][j]),
                        "window_from": str(after_names[int(seq["start"][j])]), "window_n": int(seq["window_n"][j]),
                        "window_agreement": float(seq["mean"][j]), "window_low": float(seq["lower"][j]),
                        "window_high": float(seq["upper"][j]),
                        "drop": float(seq["drop"][j]), "drop_low": float(seq["drop_lower"][j]),
                        "drop_high": float(seq["drop_upper"][j]), "drift": bool(seq["drift"][j])})
        rows.append(row)
    first = None if seq["first"] is None else after_names[seq["first"]]
    return {"judge": judge, "by": by, "consensus": consensus, "baseline": str(base), "alpha": alpha,
            "effect_of_interest": effect, "method": METHOD,
            "baseline_agreement": {"estimate": seq["baseline_mean"], "low": seq["baseline_lower"],
                                   "high": seq["baseline_upper"], "n": part[base]["n"]},
            "items_without_period": int(period.isna().sum()), "periods": rows, "drift": first is not None,
            "first_drift": first}
