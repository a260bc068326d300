"""`judgecal monitor` on real recorded verdicts: LLMBar Natural's 100 pairs with their gold label, GPT-4's
verdicts (Swap: both orders) for the first period and Falcon's for the later ones under one judge name —
drift is declared at the switch (exit 1); the same items with GPT-4 throughout are not drifted (exit 0).
Records carry ``time``/``period`` (checked on import, file:line: field, exit 2), and usage errors are one line
with exit 2."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from drifting import GOOD, SIZES, WEAK, build_workspace, read_llmbar, write_files
from sklearn.metrics import cohen_kappa_score

from judgecal.cli import main
from judgecal.data.store import Workspace


@pytest.fixture(scope="module")
def llmbar(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> dict:
    """LLMBar Natural as read by judgecal (:func:`drifting.read_llmbar`)."""
    return read_llmbar(tmp_path_factory.mktemp("llmbar"), mirror)


def test_a_real_switch_to_a_weaker_judge_is_declared_drifted_at_the_switch(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=1), tmp_path / "ws")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "period", "--json"]) == 1
    series = json.loads(capsys.readouterr().out)
    assert series["baseline"] == "2024-01" and series["first_drift"] == "2024-02"
    rows = {r["period"]: r for r in series["periods"]}
    assert [rows[p]["n"] for p in sorted(rows)] == list(SIZES)
    # the agreement each period shows is the stored verdicts' own, counted here from the judges' records
    for k, p in enumerate(sorted(rows)):
        ids = [it.item_id for it in llmbar["items"][sum(SIZES[:k]):sum(SIZES[:k + 1])]]
        frame = llmbar["verdicts"][GOOD if k == 0 else WEAK]
        ab = frame[frame["order"] == "AB"].set_index("item_id")["verdict"]
        ba = frame[frame["order"] == "BA"].set_index("item_id")["verdict"]
        right = sum((ab[i] if ab[i] == ba[i] else "tie") == llmbar["gold"][i] for i in ids)
        assert rows[p]["agreement"] == pytest.approx(right / len(ids))
        said = [ab[i] if ab[i] == ba[i] else "tie" for i in ids]
        assert rows[p]["kappa"] == pytest.approx(cohen_kappa_score(said, [llmbar["gold"][i] for i in ids]))
    assert rows["2024-01"]["agreement"] - rows["2024-02"]["agreement"] > 0.4
    assert rows["2024-02"]["drift"] and rows["2024-02"]["drop_low"] > 0
    # drift: the window's upper bound below the baseline's lower bound (the boundary a chart draws); at the switch
    # the window is the period itself
    low = series["baseline_agreement"]["low"]
    assert rows["2024-02"]["window_high"] < low and rows["2024-02"]["drop_low"] == pytest.approx(
        low - rows["2024-02"]["window_high"])
    r = rows["2024-02"]
    assert r["window_from"] == "2024-02" and r["window_n"] == r["n"] == r["since_baseline"]
    assert r["window_low"] <= r["window_agreement"] == r["running"] <= r["window_high"]
    assert main(["monitor", "-w", ws, "--by", "period"]) == 1
    out = capsys.readouterr().out
    assert "drift declared at 2024-02" in out and "DRIFT" in out and "baseline" in out


def test_the_same_items_without_the_switch_are_not_drifted(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=None), tmp_path / "ws")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "period", "--json"]) == 0
    series = json.loads(capsys.readouterr().out)
    assert series["first_drift"] is None and not any(r.get("drift") for r in series["periods"])
    assert len(series["periods"]) == len(SIZES)


def test_times_group_by_month_and_week(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=1, when="time"), tmp_path / "ws")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "month", "--json"]) == 1
    series = json.loads(capsys.readouterr().out)
    assert [r["period"] for r in series["periods"]] == ["2024-01", "2024-02", "2024-03", "2024-04"]
    assert series["first_drift"] == "2024-02" and series["periods"][0]["start"] == "2024-01-01T00:00:00+00:00"
    assert main(["monitor", "-w", ws, "--by", "week", "--json"]) in (0, 1)
    weeks = [r["period"] for r in json.loads(capsys.readouterr().out)["periods"]]
    assert weeks[0] == "2024-W01" and weeks == sorted(weeks)
    assert main(["monitor", "-w", ws, "--by", "period"]) == 2  # times but no period names
    assert "has a period" in capsys.readouterr().err
    with Workspace(tmp_path / "ws") as w:  # a time written into metadata by other means is still checked
        w._db.conn.execute("UPDATE items SET data = json_set(data, '$.metadata.time', 'soon') WHERE "
                           "item_id = 'llmbar/Natural/3'")
    assert main(["monitor", "-w", ws, "--by", "month"]) == 2
    assert "item 'llmbar/Natural/3': metadata.time 'soon' is not an ISO 8601 time" in capsys.readouterr().err
    with Workspace(tmp_path / "ws") as w:  # one whose offset carries it before year 1 in UTC
        w._db.conn.execute("UPDATE items SET data = json_set(data, '$.metadata.time', '0001-01-01T00:00:00+05:00') "
                           "WHERE item_id = 'llmbar/Natural/3'")
    assert main(["monitor", "-w", ws, "--by", "month"]) == 2
    assert "item 'llmbar/Natural/3': metadata.time '0001-01-01T00:00:00+05:00' is not" in capsys.readouterr().err


@pytest.mark.parametrize("when", ["time", "period"])
def test_times_or_periods_on_the_verdicts_give_the_series_they_give_on_the_items(llmbar, tmp_path, capsys, when):
    # two ways to the same periods: the items' own (found once per look for every item) and the judge's records
    seen = {}
    for on in ("items", "verdicts"):
        ws = build_workspace(write_files(llmbar, tmp_path / on, switch=2, when=when, on=on), tmp_path / f"ws-{on}")
        for by in (["month", "week", "day"] if when == "time" else ["period"]):
            capsys.readouterr()
            rc = main(["monitor", "-w", ws, "--by", by, "--json"])
            seen[on, by] = {"rc": rc, **json.loads(capsys.readouterr().out)}
    for (_on, by), series in seen.items():
        assert series == seen["items", by]
        assert series["rc"] == int(series["drift"])
        if by in ("month", "period"):  # Falcon from the third month: drift is not declared before it
            assert series["first_drift"] in ("2024-03", "2024-04")
        else:
            first = [r for r in series["periods"] if r["period"] == series["first_drift"]]
            assert not first or first[0]["start"] >= "2024-03-01"
        starts = [r["start"] for r in series["periods"]]
        assert (starts == sorted(starts)) if when == "time" else starts == [None] * len(starts)
    if when == "time":  # each month starts at its first item's time
        assert [r["start"][:19] for r in seen["items", "month"]["periods"]] == [
            f"2024-{k:02d}-01T00:00:00" for k in range(1, 5)]


def test_usage_errors_are_one_line_with_exit_2(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=None), tmp_path / "ws")
    capsys.readouterr()
    for args, words in ((["--judge", "nobody"], "unknown judge 'nobody'"),
                        (["--by", "day"], "has a time"),
                        (["--baseline", "1999-01"], "unknown baseline period '1999-01'"),
                        (["--baseline", "2024-04", "--effect", "0.1"], None)):
        code = main(["monitor", "-w", ws, "--by", "period", *args] if "--by" not in args else ["monitor", "-w", ws, *args])
        err = capsys.readouterr().err
        if words is None:  # the last period as the baseline: nothing after it to drift
            assert code == 0
            continue
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
    assert main(["monitor", "-w", ws, "--by", "period", "--consensus", "mv:nobody"]) == 2
    assert "no consensus 'mv:nobody' is stored" in capsys.readouterr().err
    with Workspace(tmp_path / "ws") as w:  # a baseline of 9 items: too few
        w._db.conn.execute("DELETE FROM items WHERE json_extract(data, '$.metadata.period') = '2024-01' AND "
                           "CAST(substr(item_id, 16) AS INTEGER) >= 9")
    assert main(["monitor", "-w", ws, "--by", "period"]) == 2
    assert "too few items in the baseline period '2024-01': 9" in capsys.readouterr().err


def test_time_and_period_are_checked_and_stored(tmp_path, capsys):
    rec = {"id": "x1", "prompt": "p", "response_a": "a", "response_b": "b", "human_labels": {"ann": "A"}}
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({**rec, "time": "yesterday"}) + "\n" + json.dumps({**rec, "id": "x2", "period": ""})
                     + "\n", "utf-8")
    assert main(["import", str(items), "-w", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert f"{items}:1: time: is not an ISO 8601 date or time" in err and f"{items}:2: period: must be a non-empty" in err
    items.write_text(json.dumps({**rec, "time": "2024-03-01T10:00:00+02:00", "period": "spring"}) + "\n", "utf-8")
    assert main(["import", str(items), "-w", str(tmp_path / "ws")]) == 0
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"item_id": "x1", "judge": "j", "verdict": "A", "time": "2024-13-01"}) + "\n", "utf-8")
    assert main(["import", str(verdicts), "--as", "judgments", "-w", str(tmp_path / "ws")]) == 2
    assert f"{verdicts}:1: time: is not an ISO 8601 date or time" in capsys.readouterr().err
    verdicts.write_text(json.dumps({"item_id": "x1", "judge": "j", "verdict": "A", "time": "2024-03-02",
                                    "period": 7}) + "\n", "utf-8")
    assert main(["import", str(verdicts), "--as", "judgments", "-w", str(tmp_path / "ws")]) == 0
    with Workspace(tmp_path / "ws") as ws:
        assert ws.items_repo.items()[0].metadata == {"time": "2024-03-01T08:00:00+00:00", "period": "spring"}  # as UTC
        assert ws.judgments_repo.judgments_frame()[["time", "period"]].values.tolist() == [["2024-03-02T00:00:00+00:00", "7"]]


def test_an_older_workspace_gains_the_time_and_period_columns(tmp_path):
    from judgecal.data.records import Judgment
    from judgecal.data.store import SCHEMA_VERSION

    with Workspace(tmp_path / "ws") as ws:
        for col in ("time", "period"):
            ws._db.conn.execute(f'ALTER TABLE judgments DROP COLUMN "{col}"')
        ws._db.conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    with Workspace(tmp_path / "ws") as ws:
        ws.judgments_repo.add_judgments([Judgment("k", "i", "j", "h", verdict="A", time="2024-01-01T00:00:00+00:00", period="p")])
        assert ws.judgments_repo.judgments_frame()[["time", "period"]].values.tolist() == [["2024-01-01T00:00:00+00:00", "p"]]
    db = sqlite3.connect(tmp_path / "ws" / "judgecal.sqlite")
    assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    db.close()


def test_a_period_name_from_a_file_is_shown_inert(llmbar, tmp_path, capsys):
    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=1), tmp_path / "ws")
    with Workspace(tmp_path / "ws") as w:
        w._db.conn.execute("UPDATE items SET data = json_set(data, '$.metadata.period', char(27) || '[2J' || "
                           "json_extract(data, '$.metadata.period')) WHERE json_extract(data, '$.metadata.period') "
                           "= '2024-01'")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "period"]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "baseline \\x1b[2J2024-01:" in out and "drift declared at 2024-02" in out


def test_periods_named_by_numbers_are_ordered_as_numbers(llmbar, tmp_path, capsys):
    files = write_files(llmbar, tmp_path / "f", switch=1)  # periods 9, 10, 11, 12: as text, 10 would come before 9
    for name in ("items.jsonl", "verdicts.jsonl"):
        rows = [json.loads(line) for line in (files / name).read_text("utf-8").splitlines()]
        for r in rows:
            if "period" in r:
                r["period"] = int(r["period"][-2:]) + 8
        (files / name).write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    ws = build_workspace(files, tmp_path / "ws")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "period", "--json"]) == 1
    series = json.loads(capsys.readouterr().out)
    assert [r["period"] for r in series["periods"]] == ["9", "10", "11", "12"]
    assert series["baseline"] == "9" and series["first_drift"] == "10"


def test_a_time_beyond_the_calendar_in_utc_is_refused_in_one_line(tmp_path, capsys):
    rec = {"id": "x1", "prompt": "p", "response_a": "a", "response_b": "b", "human_labels": {"ann": "A"}}
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({**rec, "time": "0001-01-01T00:30:00+01:00"}) + "\n"
                     + json.dumps({**rec, "id": "x2", "time": "9999-12-31T23:30:00-01:00"}) + "\n", "utf-8")
    assert main(["import", str(items), "-w", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert f"{items}:1: time: " in err and f"{items}:2: time: " in err and "unexpected" not in err, err
    assert not (tmp_path / "ws").exists()
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"item_id": "x1", "judge": "j", "verdict": "A",
                                    "time": "0001-01-01T00:00:00+00:01"}) + "\n", "utf-8")
    rec_ok = tmp_path / "ok.jsonl"
    rec_ok.write_text(json.dumps({**rec, "time": "0001-01-01T00:00:00Z"}) + "\n", "utf-8")  # the first UTC instant
    assert main(["import", str(rec_ok), "-w", str(tmp_path / "ws")]) == 0
    assert main(["import", str(verdicts), "--as", "judgments", "-w", str(tmp_path / "ws")]) == 2
    assert f"{verdicts}:1: time: " in capsys.readouterr().err


def test_a_probe_copy_is_not_one_of_the_judges_verdicts_on_the_traffic(llmbar, tmp_path, capsys):
    """A probe's copy of an item (source ``probe:...``), even with a period and a truth, and a mutated verdict
    are left out of the series; the items' own verdicts stay."""
    from judgecal.data.records import Candidate, Consensus, Item, Judgment

    ws = build_workspace(write_files(llmbar, tmp_path / "f", switch=None), tmp_path / "ws")
    capsys.readouterr()
    assert main(["monitor", "-w", ws, "--by", "period", "--json"]) == 0
    before = json.loads(capsys.readouterr().out)["periods"]
    with Workspace(Path(ws), create=False) as w:
        (stored, spec), = w.judgments_repo.judge_spec_hashes(["production-judge"])
        first = llmbar["items"][0].item_id
        w.items_repo.add_items([Item("probe:position/x1", "p", [Candidate("a"), Candidate("b")], source="probe:position",
                                     metadata={"period": "2024-01"})])
        truth = w.annotations_repo.consensus_labels("ds")
        w.annotations_repo.set_consensus([*(Consensus(str(i), "ds", str(v)) for i, v in truth.items()),
                                          Consensus("probe:position/x1", "ds", "A")], "ds")
        w.judgments_repo.add_judgments([
            Judgment("k-probe", "probe:position/x1", stored, spec, verdict="B", raw="B"),
            Judgment("k-mutated", first, stored, spec, mutation="paraphrase", verdict="B", raw="B")])
    assert main(["monitor", "-w", ws, "--by", "period", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)["periods"]
    assert [(r["period"], r["n"], r["agreement"]) for r in after] == [(r["period"], r["n"], r["agreement"])
                                                                      for r in before]


@pytest.mark.parametrize("categorical", [True, False])
def test_a_row_without_an_item_is_no_verdict_on_one(categorical):
    from judgecal.audit.monitor import _item_codes

    rows = ["a", None, "a", "c"]
    col = pd.Series(pd.Categorical(rows, categories=["a", "b", "c"]) if categorical else pd.Series(rows, dtype=object))
    codes, ids, at = _item_codes(col, {"items": pd.Index(["c", "a", "z"], dtype=object)})
    assert list(codes) == [0, -1, 0, 1] and list(ids) == ["a", "c"] and list(at) == [1, 0]
