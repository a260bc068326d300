"""The audit's alignment figures from judgments sharded over a Ray cluster.

Every alignment metric is a ratio (or a confusion-matrix function) of per-item sums
(:func:`judgecal.audit.alignment.judge_sums`), and the item bootstrap resamples items, so it needs
only those sums: ``theta* = f(w* @ S)`` for a resample ``w*`` of the ``n`` items and the item-by-column
sum matrix ``S``. Judgments are written as Parquet shards partitioned by item (a stable hash of the
item id), so both presentation orders of an item meet in one shard; a Ray task per shard computes the
sums of its items (:func:`shard_sums`); the driver adds them into ``S`` (items x columns per judge)
and runs the same bootstrap and metrics as the single-machine audit. The driver's memory thus grows
with items x judges, never with judgments.

Covered: each judge's ``metrics`` from the alignment probe (accuracy, macro_f1, cohen_kappa,
invalid_rate, position_consistency, first_position_rate, accuracy_AB, accuracy_BA, accuracy_both,
flip_rate: estimate, CI and n, equal to ``judgecal audit``'s) and ``n_judgments``,
``n_items_with_consensus``, ``orders``; and the position probe, whose figures are sums too: the pair
counts of the McNemar test (``b``, ``c``, flips, decisive pairs add over shards, since both orders of
an item share one), so ``first_position_rate``'s p and MDE and the ``position`` section, and the
swap-debiased accuracy (per-item sums, its own bootstrap as in the single path). Not covered: the other
probes (verbosity, self-preference, prompt sensitivity, padding, injection, calibration, selective
evaluation), usage, BH ``q`` values and flags.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from numpy.typing import NDArray

from judgecal.audit.alignment import SUM_COLUMNS, JudgeSums, judge_sums, metrics_from, sums_spec, truth_codes
from judgecal.audit.metric import Metric, clean
from judgecal.audit.position import debiased_from, debiased_sums, position_tests
from judgecal.errors import TransientError
from judgecal.stats import bootstrap as stats
from judgecal.stats.inference import mcnemar, mde_proportion

SHARD_COLUMNS = ("item_id", "judge", "order", "sample", "mutation", "verdict", "score", "status", "p_a", "p_b",
                 "p_tie")
SCHEMA = pa.schema([("item_id", pa.string()), ("judge", pa.string()), ("order", pa.string()),
                    ("sample", pa.int64()), ("mutation", pa.string()), ("verdict", pa.string()), ("score", pa.float64()),
                    ("status", pa.string()), ("p_a", pa.float64()), ("p_b", pa.float64()), ("p_tie", pa.float64())])
COVERED = ("accuracy", "macro_f1", "cohen_kappa", "invalid_rate", "position_consistency", "first_position_rate",
           "accuracy_AB", "accuracy_BA", "accuracy_both", "flip_rate", "debiased_accuracy")
PAIR_COUNTS = ("pairs", "decisive_pairs", "flips", "mcnemar_b", "mcnemar_c")


def shard_of(item_ids: NDArray[Any], n_shards: int) -> NDArray[np.int64]:
    """A stable shard per item id (pandas' keyed SipHash of the text: the same on every machine)."""
    return (pd.util.hash_array(np.asarray(item_ids, dtype=object)) % np.uint64(n_shards)).astype(np.int64)


def write_shards(frames: Iterable[pd.DataFrame], out_dir: str | Path, n_shards: int = 16) -> list[Path]:
    """Write judgment frames (``SHARD_COLUMNS``; the token probabilities may be left out) as ``n_shards``
    Parquet files partitioned by item, one frame at a time (a writer's memory holds one frame)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"judgments-{k:05d}.parquet" for k in range(n_shards)]
    writers: dict[int, pq.ParquetWriter] = {}
    try:
        for df in frames:
            df = df.assign(**{c: np.nan for c in ("score", "p_a", "p_b", "p_tie") if c not in df})  # optional
            df = df.loc[:, list(SHARD_COLUMNS)]
            shard = shard_of(df["item_id"].to_numpy(dtype=object), n_shards)
            for k in np.unique(shard):
                part = pa.Table.from_pandas(df[shard == k], schema=SCHEMA, preserve_index=False)
                if k not in writers:
                    writers[int(k)] = pq.ParquetWriter(paths[k], SCHEMA)
                writers[int(k)].write_table(part)
    finally:
        for w in writers.values():
            w.close()
    return [p for k, p in enumerate(paths) if k in writers]


def export_shards(ws: Any, out_dir: str | Path, n_shards: int = 16, chunk: int = 200_000) -> list[Path]:
    """A workspace's judgments as item-partitioned Parquet shards, read in chunks."""
    return write_shards(ws.judgments_repo.judgment_chunks(SHARD_COLUMNS, chunk), out_dir, n_shards)


def shard_sums(path: str | Path, truth: pd.Series, exclude: Sequence[str] = (),
               invalid_as: str = "tie", not_pairs: Sequence[str] = ()) -> dict[str, dict[str, Any]]:
    """One shard's per-item sums for every pairwise judge: only the rows of the shard's items with a
    consensus (``rows``: their index into ``truth``), the confusion ``classes``, and counts. Uses the
    audit's judgments: unmutated, probe pairs (``exclude``) left out; ``not_pairs``: the pointwise and
    labelled items (a judge of only those is no judge of pairs)."""
    cats = {c: pa.dictionary(pa.int32(), pa.string()) for c in ("judge", "order", "mutation", "verdict", "status")}
    table = pq.read_table(path, columns=list(SHARD_COLUMNS))
    df = table.cast(pa.schema([(f.name, cats.get(f.name, f.type)) for f in table.schema])).to_pandas()
    keep = (df["mutation"] == "none").to_numpy()
    if len(exclude):
        keep &= ~df["item_id"].isin(exclude).to_numpy()
    df = df[keep]
    out: dict[str, dict[str, Any]] = {}
    for judge, j in df.groupby("judge", sort=True, observed=True):
        entry: dict[str, Any] = {"n_judgments": len(j), "n_items": int(j["item_id"].nunique()),
                                 "orders": sorted(str(o) for o in j["order"].unique()),
                                 **_kind_evidence(j, truth, not_pairs)}
        entry["pairwise"] = entry["on_pairs"] and (entry["decisive"] or (entry["verdicts"] and not entry["scored"]))
        codes = truth_codes(j["item_id"], truth)
        rows, inverse = np.unique(codes, return_inverse=True)
        has_minus = bool(len(rows) and rows[0] < 0)
        local = np.where(codes >= 0, inverse - has_minus, -1).astype(np.int64)
        rows = rows[rows >= 0]
        js = judge_sums(j, local, truth.to_numpy()[rows], len(rows), invalid_as) if entry["pairwise"] else None
        if js is not None:
            entry.update(rows=rows, sums=js.sums, classes=js.classes)
        pos = position_tests(j) if entry["pairwise"] else {}
        if pos:  # the judge decides on the merged orders whether these count (both orders, as the probe)
            entry["pair_counts"] = {k: pos[k] for k in PAIR_COUNTS}
            deb, n_pairs = debiased_sums(j, truth.iloc[rows], invalid_as)
            entry.update(deb_sums=deb, deb_pairs=n_pairs)
        out[str(judge)] = entry
    return out


def _kind_evidence(j: pd.DataFrame, truth: pd.Series, not_pairs: Sequence[str] = ()) -> dict[str, bool]:
    """What one shard says of a judge's kind, merged over shards by :meth:`SumsReducer.is_pairwise` into the
    rule of :attr:`judgecal.audit.probe.JudgeInput.pairwise`: some pairwise item judged, and a verdict
    A / B / tie anywhere; otherwise verdicts (``invalid``) without any score, on items whose human labels
    (where any) are A / B / tie."""
    v = j["verdict"].astype(object)
    ids = pd.Index(j["item_id"].astype(str).unique())
    labels = truth.reindex(ids).dropna().astype(str)
    return {"on_pairs": not bool(ids.isin(not_pairs).all()) if len(not_pairs) else True,
            "decisive": bool(v.isin(("A", "B", "tie")).any()), "verdicts": bool(v.notna().any()),
            "scored": bool(j["score"].notna().any()), "pair_labels": bool(labels.isin(("A", "B", "tie")).all())}


class SumsReducer:
    """Adds shard sums into one items x columns matrix per judge (classes merged as the single path
    orders them: sorted)."""

    def __init__(self, n_items: int) -> None:
        self.n_items = n_items
        self.parts: dict[str, list[tuple[NDArray[np.int64], NDArray[np.float64], tuple[str, ...]]]] = {}
        self.dense: dict[str, tuple[tuple[str, ...], NDArray[np.float64]]] = {}
        self.counts: dict[str, dict[str, Any]] = {}
        self.pairs: dict[str, dict[str, int]] = {}  # the position test's pair counts
        self.debiased: dict[str, tuple[NDArray[np.float64], int]] = {}  # swap-debiased sums, pairs

    def add(self, shard: dict[str, dict[str, Any]]) -> None:
        for judge, e in shard.items():
            c = self.counts.setdefault(judge, {"n_judgments": 0, "n_items": 0, "n_items_with_consensus": 0,
                                               "orders": set(), "on_pairs": False, "decisive": False,
                                               "verdicts": False, "scored": False, "pair_labels": True})
            c["n_judgments"] += e["n_judgments"]
            c["n_items"] += e["n_items"]
            c["orders"].update(e["orders"])
            for k in ("on_pairs", "decisive", "verdicts", "scored"):
                c[k] |= e[k]
            c["pair_labels"] &= e["pair_labels"]
            if "sums" in e:
                c["n_items_with_consensus"] += len(e["rows"])
                self._add(judge, e["rows"], e["sums"], tuple(e["classes"]))
            if "pair_counts" in e:
                pc = self.pairs.setdefault(judge, dict.fromkeys(PAIR_COUNTS, 0))
                for k in PAIR_COUNTS:
                    pc[k] += e["pair_counts"][k]
                deb, n = self.debiased.get(judge, (np.zeros((self.n_items, 3)), 0))
                deb[e["rows"]] += e["deb_sums"]
                self.debiased[judge] = (deb, n + e["deb_pairs"])

    def _add(self, judge: str, rows: NDArray[np.int64], sums: NDArray[np.float64], classes: tuple[str, ...]) -> None:
        have, dense = self.dense.get(judge, ((), np.zeros((self.n_items, 0))))
        merged = tuple(sorted(set(have) | set(classes)))
        if merged != have:  # re-lay the confusion cells for the larger class set
            grown = np.zeros((self.n_items, len(SUM_COLUMNS) + len(merged) ** 2))
            if have:
                grown[:, :len(SUM_COLUMNS)] = dense[:, :len(SUM_COLUMNS)]
                grown[:, len(SUM_COLUMNS) + _cells(have, merged)] = dense[:, len(SUM_COLUMNS):]
            have, dense = merged, grown
        dense[rows, :len(SUM_COLUMNS)] += sums[:, :len(SUM_COLUMNS)]
        dense[np.ix_(rows, len(SUM_COLUMNS) + _cells(classes, merged))] += sums[:, len(SUM_COLUMNS):]
        self.dense[judge] = (have, dense)

    def is_pairwise(self, judge: str) -> bool:
        """The judge's kind from every shard's evidence (a shard alone may see only unreadable answers)."""
        c = self.counts[judge]
        return bool(c["on_pairs"] and (c["decisive"] or (c["verdicts"] and not c["scored"] and c["pair_labels"])))

    def judge_sums(self) -> dict[str, JudgeSums]:
        """Each pairwise judge's :class:`JudgeSums`, judges sorted by name (the audit's order)."""
        return {j: JudgeSums(d, sums_spec(d, len(cls)), cls) for j, (cls, d) in sorted(self.dense.items())
                if self.is_pairwise(j)}


def position_section(counts: dict[str, int]) -> dict[str, Any]:
    """:func:`judgecal.audit.position.position_tests`'s figures from its pair counts summed over shards."""
    b, c, n_dec = counts["mcnemar_b"], counts["mcnemar_c"], counts["decisive_pairs"]
    return {"pairs": counts["pairs"], "decisive_pairs": n_dec, "flips": counts["flips"],
            "flip_rate": counts["flips"] / n_dec if n_dec else float("nan"),
            "mcnemar_b": b, "mcnemar_c": c, "mcnemar_p": mcnemar(b, c), "mcnemar_midp": mcnemar(b, c, midp=True),
            "direction": "first" if b > c else "second" if c > b else "none",
            "first_position_mde": mde_proportion(n_dec)}


def _cells(classes: tuple[str, ...], merged: tuple[str, ...]) -> NDArray[np.int64]:
    at = {c: i for i, c in enumerate(merged)}
    k = len(merged)
    return np.array([at[t] * k + at[p] for t in classes for p in classes], dtype=np.int64)


def alignment_report(reducer: SumsReducer, *, n_boot: int = 2000, seed: int = 0,
                     level: float = 0.95) -> dict[str, dict[str, Any]]:
    """Per judge: counts and the alignment metrics (the alignment probe's maths, one shared bootstrap)."""
    sums = reducer.judge_sums()
    metrics: dict[str, dict[str, Any]] = {}
    if sums:
        boot = stats.bootstrap_sums(np.hstack([js.sums for js in sums.values()]), n_boot, seed)
        start = 0
        for judge, js in sums.items():
            w = js.sums.shape[1]
            got = metrics_from(js, boot[:, start:start + w], level)
            metrics[judge] = {k: Metric.of(v).to_json() for k, v in got.items()}
            start += w
    out = {}
    for judge, c in sorted(reducer.counts.items()):
        pairwise = reducer.is_pairwise(judge)
        out[judge] = {"kind": "pairwise" if pairwise else "pointwise", "n_judgments": c["n_judgments"],
                      "n_items": c["n_items"],
                      "n_items_with_consensus": c["n_items_with_consensus"] if pairwise else None,
                      "orders": sorted(c["orders"]), "metrics": metrics.get(judge, {})}
    _add_position(out, reducer, n_boot, seed, level)
    return out


def _add_position(out: dict[str, dict[str, Any]], reducer: SumsReducer, n_boot: int, seed: int,
                  level: float) -> None:
    """The position probe on the reduced counts: McNemar's p and the MDE on ``first_position_rate``, the
    ``position`` section, and the swap-debiased accuracy from one bootstrap of every judge's debiased
    sums (judges in name order, as the single path draws it)."""
    deb = {}
    for judge, counts in sorted(reducer.pairs.items()):
        if out[judge]["orders"] != ["AB", "BA"] or out[judge]["kind"] != "pairwise":
            continue
        pos = out[judge]["position"] = position_section(counts)
        m = out[judge]["metrics"].get("first_position_rate")
        if m is not None:
            m.update(p=clean(pos["mcnemar_p"]), null_value=0.5, mde=clean(pos["first_position_mde"]))
        if reducer.debiased[judge][1]:
            deb[judge] = reducer.debiased[judge]
    if deb:
        boot = stats.bootstrap_sums(np.hstack([s for s, _ in deb.values()]), n_boot, seed)
        for k, (judge, (sums, n_pairs)) in enumerate(deb.items()):
            got = debiased_from(sums, boot[:, 3 * k:3 * k + 3], n_pairs, level)
            out[judge]["metrics"]["debiased_accuracy"] = Metric.of(got["debiased_accuracy"]).to_json()
            out[judge]["position"]["paired_single_order_accuracy"] = got["paired_single_order_accuracy"]


def distributed_alignment(shards: Sequence[str | Path], truth: pd.Series, *, exclude: Sequence[str] = (),
                          invalid_as: str = "tie", n_boot: int = 2000, seed: int = 0, level: float = 0.95,
                          address: str | None = None, not_pairs: Sequence[str] = ()) -> dict[str, Any]:
    """The alignment section of ``audit.json`` from Parquet shards, the sums computed by Ray tasks
    (one per shard, retried if a node is lost) and reduced as they arrive."""
    from judgecal.distributed.cluster import connect

    ray = connect(address)
    t0 = time.perf_counter()
    truth_ref, exclude_ref, not_pairs_ref = ray.put(truth), ray.put(list(exclude)), ray.put(list(not_pairs))
    task = ray.remote(shard_sums).options(num_cpus=1, max_retries=5)
    pending = [task.remote(str(p), truth_ref, exclude_ref, invalid_as, not_pairs_ref) for p in shards]
    reducer = SumsReducer(len(truth))
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        reducer.add(ray.get(ready[0]))
    judges = alignment_report(reducer, n_boot=n_boot, seed=seed, level=level)
    return {"settings": {"invalid_as": invalid_as, "n_boot": n_boot, "seed": seed, "ci_level": level,
                         "bootstrap": "item-level cluster bootstrap, percentile interval",
                         "distributed": {"shards": len(shards), "covers": list(COVERED),
                                         "seconds": round(time.perf_counter() - t0, 3)}},
            "judges": judges}


def distributed_audit(ws: Any, shard_dir: str | Path, *, consensus: str = "ds", invalid_as: str = "tie",
                      n_boot: int = 2000, seed: int = 0, level: float = 0.95, n_shards: int = 16,
                      address: str | None = None) -> dict[str, Any]:
    """A workspace's alignment figures through shards: the truth as ``judgecal audit`` resolves it,
    judgments exported to ``shard_dir``, probe pairs left out as the audit leaves them out."""
    from judgecal.audit.truth import resolve_truth

    truth, about = resolve_truth(ws, consensus, n_boot=n_boot, seed=seed)
    facts = ws.items_repo.item_facts()
    probes = facts.index[facts["source"].str.startswith("probe:")].tolist()
    shards = export_shards(ws, shard_dir, n_shards)
    rep = distributed_alignment(shards, truth, exclude=probes, invalid_as=invalid_as, n_boot=n_boot, seed=seed,
                                level=level, address=address,
                                not_pairs=facts.index[facts["task"] != "pairwise"].tolist())
    rep["settings"].update(consensus=consensus, truth_source=about["source"])
    rep["consensus"] = about
    return rep


COUNTS = ("kind", "n_judgments", "n_items", "n_items_with_consensus", "orders")
LOCAL_PART = ("pointwise judges' agreement (their own section), every other metric, usage, the other probes' sections (verbosity, self-preference, prompt "
              "sensitivity, padding, injection, calibration, selective evaluation), Benjamini-Hochberg q values and "
              "flags, and the report-level sections (models, decision, stability, provenance)")


class WorkspaceChangedError(TransientError):
    """The judgments changed between the driver's and the cluster's reads of the workspace."""


def merge_into(report: dict[str, Any], dist: dict[str, Any], address: str | None) -> dict[str, Any]:
    """``report`` (``judgecal audit``'s, computed on this machine) with each judge's covered alignment
    metrics taken from the cluster's per-item sums ``dist``, and ``executor`` (top level) naming what was
    computed where. The counts both paths report must agree; if they do not, the workspace changed
    between the two reads (a judge run writing to it) and :class:`WorkspaceChangedError` is raised
    rather than writing a report of two different data sets."""
    for judge, d in dist["judges"].items():
        s = report["judges"].get(judge)
        counts = COUNTS if d["kind"] == "pairwise" else tuple(k for k in COUNTS if k != "n_items_with_consensus")
        differ = [k for k in counts if s is None or s.get(k) != d[k]]
        if differ:
            raise WorkspaceChangedError(f"judge {judge}: {', '.join(differ)} differ between this machine's read "
                                        "and the cluster's; the workspace changed during the audit: run it again")
        for name, m in d["metrics"].items():  # q (over the whole report) stays this machine's
            s["metrics"][name] = {**s["metrics"].get(name, {}), **{k: v for k, v in m.items() if k != "q"}}
        if "position" in d:
            s["position"] = d["position"]
    if set(report["judges"]) - set(dist["judges"]):
        missing = ", ".join(sorted(set(report["judges"]) - set(dist["judges"])))
        raise WorkspaceChangedError(f"judges {missing} are missing from the cluster's read of the workspace")
    info = dist["settings"]["distributed"]
    report["executor"] = {  # beside the settings: where a figure is computed changes no figure (nor config_hash)
        "name": "ray", "address": address or "auto", "shards": info["shards"], "cluster_seconds": info["seconds"],
        "computed_on_cluster": {"metrics": list(COVERED), "counts": list(COUNTS),
                                "sections": ["position"], "tests": ["first_position_rate: p, null_value, mde"]},
        "computed_locally": LOCAL_PART,
    }
    return report


def cluster_alignment(ws: Any, *, consensus: str = "ds", invalid_as: str = "tie", n_boot: int = 2000, seed: int = 0,
                      level: float = 0.95, n_shards: int = 16, shard_dir: str | Path | None = None,
                      address: str | None = None) -> dict[str, Any]:
    """``judgecal audit --executor ray``'s alignment step: the figures from Parquet shards on the cluster
    (:func:`distributed_audit`, same consensus, seed and bootstrap), which the audit then reads instead of
    computing them. The shards go to ``shard_dir`` (a folder every node reads at the same path; default a
    temporary folder inside the workspace, removed afterwards)."""
    import shutil
    import tempfile

    own = shard_dir is None
    folder = Path(tempfile.mkdtemp(prefix="audit-shards-", dir=ws.path)) if own else Path(str(shard_dir))
    try:
        return distributed_audit(ws, folder, consensus=consensus, invalid_as=invalid_as, n_boot=n_boot, seed=seed,
                                 level=level, n_shards=n_shards, address=address)
    finally:
        if own:
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class RayExecutor:
    """``judgecal audit --executor ray``: the alignment step of :func:`judgecal.audit.pipeline.audit_workspace`
    on a Ray cluster (:func:`cluster_alignment`), run before the rest of the audit, which reads its figures
    instead of computing them; :meth:`finish` checks both read the same judgments (:func:`merge_into`)."""

    address: str | None = None
    shard_dir: str | Path | None = None
    n_shards: int = 16

    def reach(self) -> None:
        from judgecal.distributed.cluster import connect

        connect(self.address)

    def alignment(self, ws: Any, options: Any) -> dict[str, Any]:
        return cluster_alignment(ws, consensus=options.consensus, invalid_as=options.invalid_as,
                                 n_boot=options.n_boot, seed=options.seed, level=options.level,
                                 n_shards=self.n_shards, shard_dir=self.shard_dir, address=self.address)

    def finish(self, report: dict[str, Any], computed: dict[str, Any]) -> dict[str, Any]:
        return merge_into(report, computed, self.address)
