"""Incremental audits on real recorded verdicts (LLMBar Natural's pairs with their gold label, GPT-4's verdicts then
Falcon's, in four monthly periods: :mod:`drifting`): a period added computes only that period's figures; a
corrected label or a re-judged item recomputes exactly its own period; every look equals an audit from scratch
(the cache folder deleted), audit.json byte for byte. And live judge calls carry the time they were made, which
``monitor --by day`` reads but which gives a live-judged workspace no over-time section of its own."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from drifting import build_workspace, read_llmbar, write_files
from test_hardening_engine import _write_items, completion, vendor  # noqa: F401 - the fixture

from judgecal.audit.monitor import by_choices, default_by, monitor
from judgecal.audit.pipeline import audit_workspace
from judgecal.cli import main
from judgecal.data.records import Consensus, Judgment
from judgecal.data.store import Workspace

JUDGE = "production-judge"


@pytest.fixture(scope="module")
def llmbar(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> dict:
    return read_llmbar(tmp_path_factory.mktemp("llmbar"), mirror)


def _split(files: Path, last: str) -> Path:
    """Move period ``last``'s items and their verdicts out of ``files`` into ``files/later`` (a week to add)."""
    later = files / "later"
    later.mkdir()
    items = [json.loads(x) for x in (files / "items.jsonl").read_text().splitlines()]
    moved = {r["id"] for r in items if r["period"] == last}
    for name in ("items.jsonl", "verdicts.jsonl"):
        rows = [json.loads(x) for x in (files / name).read_text().splitlines()]
        keep = [r for r in rows if r.get("id", r.get("item_id")) not in moved]
        go = [r for r in rows if r.get("id", r.get("item_id")) in moved]
        assert go and keep
        (files / name).write_text("".join(json.dumps(r) + "\n" for r in keep))
        (later / name).write_text("".join(json.dumps(r) + "\n" for r in go))
    return later


def _look(ws_path: str) -> tuple[dict[str, Any], list[str]]:
    looked: list[str] = []
    with Workspace(ws_path) as ws:
        series = monitor(ws, JUDGE, by="period", looked=looked)
    return series, looked


def _scratch(ws_path: str, tmp: Path) -> tuple[dict[str, Any], str]:
    """The same workspace's series and audit.json with nothing cached (a copy without its cache folder)."""
    copy = tmp / f"scratch-{len(list(tmp.glob('scratch-*')))}"
    shutil.copytree(ws_path, copy)
    shutil.rmtree(copy / "cache", ignore_errors=True)
    series, looked = _look(str(copy))
    assert len(looked) == len(series["periods"])  # from scratch: every period computed
    return series, _audit(str(copy))


VOLATILE = ("judgecal_version", "generated_at", "provenance")  # the release, the clock, the machine and paths


def _audit(ws_path: str) -> str:
    """audit.json as written, without what the golden files leave out too (:data:`VOLATILE`)."""
    with Workspace(ws_path) as ws:
        data = {k: v for k, v in audit_workspace(ws).to_json().items() if k not in VOLATILE}
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)


def _period_of(ws_path: str) -> dict[str, str]:
    with Workspace(ws_path) as ws:
        return ws.items_repo.item_metadata("period").to_dict()


def test_a_period_added_computes_only_that_period_and_equals_an_audit_from_scratch(llmbar, tmp_path):
    files = write_files(llmbar, tmp_path / "f", switch=2)
    later = _split(files, "2024-04")
    ws = build_workspace(files, tmp_path / "ws")
    series, looked = _look(ws)
    assert looked == ["2024-01", "2024-02", "2024-03"]
    again, looked = _look(ws)
    assert looked == [] and again == series  # nothing changed: every figure read back, the same series
    first_audit = _audit(ws)
    assert first_audit == _audit(ws) and '"over_time"' in first_audit

    # a period added: only it is computed; the rest is read back, and everything equals a look from scratch
    assert main(["import", str(later / "items.jsonl"), "-w", ws]) == 0
    assert main(["import", str(later / "verdicts.jsonl"), "--as", "judgments", "-w", ws]) == 0
    assert main(["aggregate", "-w", ws]) == 0
    added, looked = _look(ws)
    assert looked == ["2024-04"]
    assert [r["period"] for r in added["periods"]] == ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert added["periods"][:1] == series["periods"][:1]  # the baseline's own figures, read back
    fresh, fresh_audit = _scratch(ws, tmp_path)
    assert added == fresh and added["drift"] and added["first_drift"] in ("2024-03", "2024-04")
    assert _audit(ws) == fresh_audit  # audit.json byte for byte, its over-time section from the partials


def test_a_corrected_label_or_a_rejudged_item_recomputes_exactly_its_own_period(llmbar, tmp_path):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=2), tmp_path / "ws")
    before, looked = _look(ws)
    assert len(looked) == 4
    _audit(ws)
    periods = _period_of(ws)
    rows = {r["period"]: r for r in before["periods"]}

    # a corrected label in 2024-02: the consensus of one item changes, so that period's agreement must move
    with Workspace(ws) as w:
        cons = w.annotations_repo.consensus_frame("ds")
        item = next(i for i in cons["item_id"] if periods[i] == "2024-02")
        old = cons.set_index("item_id").loc[item, "label"]
        new = "B" if old == "A" else "A"
        w.annotations_repo.set_consensus([Consensus(i, "ds", new if i == item else lab) for i, lab in zip(cons["item_id"], cons["label"],
                                                                                          strict=True)], "ds")
    after, looked = _look(ws)
    assert looked == ["2024-02"]
    moved = {r["period"]: r for r in after["periods"]}
    assert moved["2024-02"]["agreement"] != rows["2024-02"]["agreement"]  # a stale partial would keep the old one
    assert abs(moved["2024-02"]["agreement"] - rows["2024-02"]["agreement"]) == pytest.approx(1 / rows["2024-02"]["n"])
    assert all(moved[p] == rows[p] for p in ("2024-01",))
    fresh, fresh_audit = _scratch(ws, tmp_path)
    assert after == fresh and _audit(ws) == fresh_audit

    # a re-judged item in 2024-03: its verdict in both orders replaced by the other side
    with Workspace(ws) as w:
        jf = w.judgments_repo.judgments_frame(JUDGE)
        item = next(i for i in jf["item_id"] if periods[i] == "2024-03")
        mine = jf[jf["item_id"] == item]
        flip = {"A": "B", "B": "A", "tie": "A", "invalid": "A"}
        w.judgments_repo.add_judgments([Judgment(key=r.key, item_id=r.item_id, judge=r.judge, spec_hash=r.spec_hash, order=r.order,
                                  raw=flip[r.verdict], verdict=flip[r.verdict], period=r.period, time=r.time)
                         for r in mine.itertuples()], replace=True)
    rejudged, looked = _look(ws)
    assert looked == ["2024-03"]
    fresh, fresh_audit = _scratch(ws, tmp_path)
    assert rejudged == fresh and _audit(ws) == fresh_audit
    assert {r["period"]: r for r in rejudged["periods"]}["2024-03"] != moved["2024-03"]


def test_a_damaged_partial_file_is_computed_again(llmbar, tmp_path):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=None), tmp_path / "ws")
    series, _ = _look(ws)
    for f in (Path(ws) / "cache").glob("periods-*.json"):
        f.write_text("{not json")
    again, looked = _look(ws)
    assert again == series and len(looked) == 4


def test_live_calls_are_stamped_and_read_by_day_but_add_no_over_time_section(tmp_path, capsys, vendor):  # noqa: F811
    ws = str(tmp_path / "ws")
    assert main(["import", str(_write_items(tmp_path / "items.jsonl", 12)), "-w", ws]) == 0
    assert main(["aggregate", "-w", ws]) == 0
    srv = vendor(lambda prompt, headers, n: (200, {}, completion("[[A]]")))
    start = datetime.now(UTC)
    assert main(["judge", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "-w", ws]) == 0
    end = datetime.now(UTC)
    with Workspace(ws) as w:
        jf = w.judgments_repo.judgments_frame()
        assert len(jf) == 24 and jf["env"].notna().all()
        stamps = [datetime.fromisoformat(t) for t in jf["time"]]
        assert all(t.utcoffset() is not None and t.utcoffset().total_seconds() == 0 for t in stamps)  # UTC
        assert all(start <= t <= end for t in stamps)
        assert jf["period"].isna().all()
        assert by_choices(w, stamps=True) == ["day", "week", "month"] and default_by(w) is None
        assert by_choices(w) == []  # the explorer's Over time page stays "not run" until the records say when
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "day", "--json"]) == 0
    series = json.loads(capsys.readouterr().out)
    assert [r["period"] for r in series["periods"]] == sorted({t.strftime("%Y-%m-%d") for t in stamps})
    assert sum(r["n"] for r in series["periods"]) == 12
    # the stamps change no audit: audit.json is the one of the same workspace without them
    stamped = _audit(ws)
    assert '"over_time"' not in stamped
    unstamped = tmp_path / "unstamped"
    shutil.copytree(ws, unstamped)
    shutil.rmtree(unstamped / "cache", ignore_errors=True)
    with Workspace(unstamped) as w:
        w._db.conn.execute("UPDATE judgments SET time = NULL")
        w._db.conn.commit()
        assert not w.judgments_repo.judgments_with("time")
    assert _audit(str(unstamped)) == stamped
    # a period named on the records is an explicit grouping: the report then shows it
    with Workspace(ws) as w:
        w._db.conn.execute("UPDATE judgments SET period = 'batch-1'")
        w._db.conn.commit()
        assert default_by(w) == "period"


def test_a_periods_fingerprint_is_its_items_and_nothing_else():
    """The digest of a period depends on the set of its items' hashes (not their order), changes with any one
    item's value (a count as a number, a verdict as text, a missing value apart from every value), and only for
    that item's period."""
    import numpy as np
    import pandas as pd

    from judgecal.audit.period_cache import item_hashes, period_fingerprints, value_hashes

    ids = pd.Index([f"i{k}" for k in range(12)], dtype=object)
    period = pd.Series(["w1"] * 6 + ["w2"] * 5 + [None], index=ids, dtype=object)
    verdict = pd.Series(list("ABAB") + ["tie"] * 8, index=ids, dtype=object)
    calls = pd.Series(np.arange(12), index=ids)
    base = period_fingerprints(item_hashes({"verdict": verdict, "calls": calls}, ids), ids, period, "s")
    assert sorted(base) == ["w1", "w2"]  # the item without a period is in none
    flip = np.random.default_rng(0).permutation(12)
    assert period_fingerprints(item_hashes({"verdict": verdict, "calls": calls}, ids)[flip], ids[flip], period,
                               "s") == base
    for changed in ({"verdict": verdict.mask(ids == "i7", "A"), "calls": calls},
                    {"verdict": verdict, "calls": calls.mask(ids == "i7", 100)},
                    {"verdict": verdict, "calls": calls.astype(float).mask(ids == "i7")}):  # missing
        got = period_fingerprints(item_hashes(changed, ids), ids, period, "s")
        assert got["w1"] == base["w1"] and got["w2"] != base["w2"]
    assert period_fingerprints(item_hashes({"verdict": verdict, "calls": calls}, ids), ids, period, "t") != base
    assert period_fingerprints(np.zeros(0, dtype=np.uint64), ids[:0], period, "s") == {}
    # a number is hashed as a number: 1 and 1.0 alike, NaN apart from 0; text as text
    assert value_hashes(pd.Series([1, 0]), pd.RangeIndex(2)).tolist() == \
        value_hashes(pd.Series([1.0, 0.0]), pd.RangeIndex(2)).tolist()
    assert len(set(value_hashes(pd.Series([0.0, np.nan]), pd.RangeIndex(2)).tolist())) == 2
    assert len(set(value_hashes(pd.Series([2**53, 2**53 + 1, 2**63 - 1, 2**63 - 2]), pd.RangeIndex(4)).tolist())) == 4
    assert value_hashes(pd.Series(["A", None], dtype=object), pd.RangeIndex(3))[1] != \
        value_hashes(pd.Series(["A", None], dtype=object), pd.RangeIndex(3))[0]
