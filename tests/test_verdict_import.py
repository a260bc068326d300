"""Verdicts from one's own pipeline: `judgecal import FILE --as judgments`.

The example files in data/ go end to end through the CLI and their position figures are checked
against counts made here from the files; LLMBar's Swap strategies, converted into the import format,
reproduce the authors' statistics.json; bad files fail with file:line: field: message, exit code 2,
and leave the workspace as it was.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from judgecal.audit.decision import DEFAULT_THRESHOLDS, judge_verdict, load_thresholds
from judgecal.cli import main
from judgecal.data.importers import import_file
from judgecal.data.store import Workspace
from judgecal.data.verdicts import import_spec, import_verdicts, judgment_key
from judgecal.judges.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
ITEMS, VERDICTS, SPEC = (REPO / "data" / n for n in ("items.jsonl", "verdicts.jsonl", "judge.yaml"))
JUDGE = "example/acme-judge"


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", "utf-8")
    return path


def _dump(ws_dir: Path) -> list[str]:
    """Every row of the workspace database, to prove a failed import changed nothing."""
    con = sqlite3.connect(ws_dir / "judgecal.sqlite")
    try:
        return list(con.iterdump())
    finally:
        con.close()


def _ws_with_items(tmp_path: Path) -> Path:
    ws_dir = tmp_path / "ws"
    with Workspace(ws_dir) as ws:
        import_file(ws, ITEMS)
    return ws_dir


# -- the example files, end to end ---------------------------------------------------------------

def _by_hand() -> dict[str, float]:
    """The judge's figures counted straight from data/*.jsonl (majority of three humans as truth)."""
    truth = {}
    for it in _read(ITEMS):
        (label, votes), = Counter(it["human_labels"].values()).most_common(1)
        assert votes >= 2, "every example item has a human majority"
        truth[it["id"]] = label
    flip = {"A": "B", "B": "A"}
    item_verdict: dict[tuple[str, str], str] = {}
    shown_first = decisive = 0
    for v in _read(VERDICTS):
        shown = v["verdict"]
        item_verdict[v["item_id"], v["order"]] = flip.get(shown, shown) if v["order"] == "BA" else shown
        if shown in ("A", "B"):
            decisive += 1
            shown_first += shown == "A"
    ids = sorted(truth)
    n = len(ids)

    def right(i: str, order: str) -> bool:  # an unparsable verdict counts as a tie (--invalid-as tie)
        got = item_verdict[i, order]
        return (got if got != "invalid" else "tie") == truth[i]

    both_decisive = [i for i in ids if {item_verdict[i, "AB"], item_verdict[i, "BA"]} <= {"A", "B"}]
    return {
        "accuracy_AB": sum(right(i, "AB") for i in ids) / n,
        "accuracy_BA": sum(right(i, "BA") for i in ids) / n,
        "accuracy_both": sum(right(i, "AB") and right(i, "BA") for i in ids) / n,
        "position_consistency": sum(item_verdict[i, "AB"] == item_verdict[i, "BA"] for i in ids) / n,
        "first_position_rate": shown_first / decisive,
        "flip_rate": sum(item_verdict[i, "AB"] != item_verdict[i, "BA"] for i in both_decisive) / len(both_decisive),
        "invalid_rate": sum(v == "invalid" for v in item_verdict.values()) / (2 * n),
    }


def test_example_files_end_to_end(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", str(ITEMS), "-w", ws]) == 0
    for name in ("families.yaml", "thresholds.yaml"):  # as the README's example does
        shutil.copy(REPO / "data" / name, tmp_path / "ws" / name)
    assert main(["import", str(VERDICTS), "--as", "judgments", "--spec", str(SPEC), "-w", ws]) == 0
    assert "imported 40 new judgments from 1 judge(s) (example/acme-judge)" in capsys.readouterr().out
    with Workspace(tmp_path / "ws", create=False) as w:
        spec = load_spec(str(SPEC))
        assert w.judgments_repo.judge_specs() == {spec.spec_hash: (JUDGE, spec.to_dict())}
        assert set(w.judgments_repo.judgments_frame()["spec_hash"]) == {spec.spec_hash}
    assert main(["aggregate", "-w", ws]) == 0
    assert main(["audit", "--consensus", "mv", "--n-boot", "200", "-w", ws]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text("utf-8"))
    judge = report["judges"][JUDGE]
    assert judge["orders"] == ["AB", "BA"] and judge["n_judgments"] == 40
    hand = _by_hand()
    # the example was written with a visible first-position bias: 30 of 37 decisive verdicts pick the
    # response shown first and only 8 of 20 pairs survive the swap
    assert hand["first_position_rate"] == pytest.approx(30 / 37)
    assert hand["position_consistency"] == pytest.approx(8 / 20)
    for metric, value in hand.items():
        assert judge["metrics"][metric]["estimate"] == pytest.approx(value, abs=1e-9), metric
    assert judge["metrics"]["first_position_rate"]["ci_low"] > 0.5
    assert judge["position"]["direction"] == "first"
    assert judge["usage"]["cost_usd_per_1k"] == pytest.approx(
        1000 * sum(v["cost_usd"] for v in _read(VERDICTS)) / 40)
    # families.yaml makes acme-chat-7b the judge's own family: 8 items pit it against another family
    assert judge["self_preference"]["self_pick_when_lost"]["n"] > 0
    # the thresholds example reads as judgecal's defaults and calls this judge not aligned, for its bias
    thresholds = load_thresholds(tmp_path / "ws")
    assert thresholds == DEFAULT_THRESHOLDS
    verdict = judge_verdict(judge, thresholds)
    assert verdict["status"] == "not aligned"
    # the serious reasons come first
    serious = verdict["reasons"][:3]  # κ and agreement below the annotators', and the position it picks
    assert "picks the response shown first 81% of the time" in serious
    assert any("with each annotator beside the annotators'" in r and "below the humans'" in r for r in serious)


def test_reimport_is_idempotent_and_a_changed_verdict_needs_replace(tmp_path, capsys):
    ws_dir = _ws_with_items(tmp_path)
    ws = str(ws_dir)
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", ws]) == 0
    before = _dump(ws_dir)
    capsys.readouterr()
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", ws]) == 0
    out = capsys.readouterr().out  # a re-import that wrote nothing says so
    assert out.startswith(f"nothing new in {VERDICTS}: its 40 judgments") and "already stored" in out
    assert _dump(ws_dir) == before

    rows = _read(VERDICTS)
    assert rows[0]["verdict"] == "A" and rows[0]["order"] == "AB"
    rows[0]["verdict"] = "B"
    changed = _jsonl(tmp_path / "changed.jsonl", rows)
    assert main(["import", str(changed), "--as", "judgments", "-w", ws]) == 2
    err = capsys.readouterr().err
    assert f"{changed}:1: verdict: differs from the judgment already stored" in err and "--replace" in err
    assert _dump(ws_dir) == before

    assert main(["import", str(changed), "--as", "judgments", "--replace", "-w", ws]) == 0
    assert "1 replaced" in capsys.readouterr().out
    with Workspace(ws_dir, create=False) as w:
        jf = w.judgments_repo.judgments_frame(judge=JUDGE)
        assert len(jf) == 40
        key = judgment_key(JUDGE, "ex-01", "AB", 0, "none")
        assert jf.set_index("key").loc[key, "verdict"] == "B"
        assert set(jf["spec_hash"]) == {import_spec(JUDGE).spec_hash}
        assert w.judgments_repo.judge_specs()[import_spec(JUDGE).spec_hash] == (JUDGE, {"backend": "import", "model": JUDGE})


def test_orientation_and_probabilities_are_undone_once(tmp_path):
    ws_dir = _ws_with_items(tmp_path)
    f = _jsonl(tmp_path / "v.jsonl", [
        {"item_id": "ex-02", "judge": "j", "verdict": "A", "order": "BA", "p_a": 0.7, "p_b": 0.2, "p_tie": 0.1},
        {"item_id": "ex-02", "judge": "j", "verdict": "A", "p_a": 0.6, "p_b": 0.3},
        {"item_id": "ex-02", "judge": "j", "verdict": "tie", "order": "BA", "sample": 1, "mutation": "paraphrase"},
    ])
    with Workspace(ws_dir, create=False) as ws:
        import_verdicts(ws, f)
        jf = ws.judgments_repo.judgments_frame().sort_values(["order", "sample"]).reset_index(drop=True)
    # shown first in BA is the item's response_b: a shown "A" is the item's B, and p_a/p_b swap
    assert jf[["order", "verdict", "p_a", "p_b"]].iloc[1].tolist() == ["BA", "B", 0.2, 0.7]
    assert jf[["order", "verdict", "p_a", "p_b"]].iloc[0].tolist() == ["AB", "A", 0.6, 0.3]
    assert jf[["verdict", "sample", "mutation"]].iloc[2].tolist() == ["tie", 1, "paraphrase"]
    assert set(jf["status"]) == {"ok"}


def test_csv_and_parquet_store_the_same_judgments(tmp_path):
    rows = pd.DataFrame(_read(VERDICTS))
    rows.to_csv(tmp_path / "v.csv", index=False)
    rows.to_parquet(tmp_path / "v.parquet", index=False)
    frames = []
    for name in ("v.csv", "v.parquet"):
        ws_dir = _ws_with_items(tmp_path / name.split(".")[1])
        assert main(["import", str(tmp_path / name), "--as", "judgments", "-w", str(ws_dir)]) == 0
        with Workspace(ws_dir, create=False) as ws:
            frames.append(ws.judgments_repo.judgments_frame().drop(columns="created_at").sort_values("key").reset_index(drop=True))
    ws_dir = _ws_with_items(tmp_path / "jsonl")
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(ws_dir)]) == 0
    with Workspace(ws_dir, create=False) as ws:
        want = ws.judgments_repo.judgments_frame().drop(columns="created_at").sort_values("key").reset_index(drop=True)
    assert len(want) == 40 and want["status"].value_counts().to_dict() == {"ok": 39, "invalid": 1}
    for got in frames:
        pd.testing.assert_frame_equal(got, want, check_dtype=False)


def test_pointwise_scores(tmp_path):
    ws_dir = tmp_path / "ws"
    with Workspace(ws_dir) as ws:
        import_file(ws, _jsonl(tmp_path / "items.jsonl", [{"id": "p1", "prompt": "Say hi", "response": "hi"}]),
                    task="pointwise")
        import_verdicts(ws, _jsonl(tmp_path / "s.jsonl", [
            {"item_id": "p1", "judge": "scorer", "score": 4, "sample": 0},
            {"item_id": "p1", "judge": "scorer", "score": 3.5, "sample": 1},
            {"item_id": "p1", "judge": "scorer", "verdict": "invalid", "raw": "no score given", "sample": 2},
        ]))
        jf = ws.judgments_repo.judgments_frame().sort_values("sample")
    assert jf["score"].tolist()[:2] == [4.0, 3.5] and pd.isna(jf["score"].iloc[2])
    assert jf["status"].tolist() == ["ok", "ok", "invalid"]


# -- bad files -------------------------------------------------------------------------------------

OK = {"item_id": "ex-01", "judge": "other/judge", "verdict": "B", "order": "AB"}
CASES = {  # name: (records after one valid line, line, field, message fragment)
    "unknown_item": ([{**OK, "item_id": "ex-99"}], 2, "item_id", "unknown item 'ex-99'; import the items first"),
    "unknown_field": ([{**OK, "order": "BA", "verdikt": "A"}], 2, "verdikt", "unknown field for a judgment"),
    "bad_verdict": ([{**OK, "order": "BA", "verdict": "C"}], 2, "verdict", "unknown verdict 'C'; expected A, B, tie"),
    "bad_order": ([{**OK, "order": "ba"}], 2, "order", "unknown order 'ba'; expected AB or BA"),
    "missing_verdict": ([{k: v for k, v in OK.items() if k != "verdict"} | {"order": "BA"}], 2, "verdict",
                        "missing required field"),
    "missing_judge": ([{k: v for k, v in OK.items() if k != "judge"}], 2, "judge", "missing required field"),
    "score_on_pairwise": ([{**OK, "order": "BA", "verdict": None, "score": 3}], 2, "score",
                          "a pairwise item takes a verdict"),
    "bad_number": ([{**OK, "order": "BA", "latency_s": "fast"}], 2, "latency_s", "must be a number, got 'fast'"),
    "negative_tokens": ([{**OK, "order": "BA", "prompt_tokens": -3}], 2, "prompt_tokens", "must be >= 0"),
    "fractional_sample": ([{**OK, "sample": 1.5}], 2, "sample", "must be a whole number"),
    "probability_range": ([{**OK, "order": "BA", "p_a": 1.2}], 2, "p_a", "must be a probability in [0, 1]"),
    "probabilities_sum": ([{**OK, "order": "BA", "p_a": 0.6, "p_b": 0.6}], 2, "p_a", "more than 1"),
    "not_finite": ([{**OK, "order": "BA", "cost_usd": "inf"}], 2, "cost_usd", "must be a finite number"),
    "duplicate": ([OK], 2, "item_id", "duplicate judgment of 'other/judge' on item 'ex-01' (order AB, sample 0, "
                  "mutation 'none'; first on line 1)"),
    "bad_json": (['{"item_id": "ex-02", "judge": '], 2, None, "bad JSON"),
    "not_an_object": (["[1, 2]"], 2, None, "a record must be an object"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file_fails_cleanly(tmp_path, capsys, case):
    ws_dir = _ws_with_items(tmp_path)
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(ws_dir)]) == 0
    before = _dump(ws_dir)
    rest, line, field, fragment = CASES[case]
    rest = [{k: v for k, v in r.items() if v is not None} if isinstance(r, dict) else r for r in rest]
    f = _jsonl(tmp_path / "bad.jsonl", [OK, *rest])
    capsys.readouterr()
    assert main(["import", str(f), "--as", "judgments", "-w", str(ws_dir)]) == 2
    err = capsys.readouterr().err
    where = f"{f}:{line}: " + (f"{field}: " if field else "")
    assert re.search(re.escape(where) + r".*" + re.escape(fragment), err), err
    assert "Traceback" not in err and "nothing imported" in err
    assert _dump(ws_dir) == before


def test_csv_errors_name_the_csv_line(tmp_path, capsys):
    ws_dir = _ws_with_items(tmp_path)
    before = _dump(ws_dir)
    f = tmp_path / "bad.csv"
    pd.DataFrame([OK, {**OK, "order": "BA", "latency_s": "slow"}]).to_csv(f, index=False)
    assert main(["import", str(f), "--as", "judgments", "-w", str(ws_dir)]) == 2
    assert f"{f}:3: latency_s: must be a number, got 'slow'" in capsys.readouterr().err
    assert _dump(ws_dir) == before


def test_pointwise_rules(tmp_path):
    ws_dir = tmp_path / "ws"
    with Workspace(ws_dir) as ws:
        import_file(ws, _jsonl(tmp_path / "items.jsonl", [{"id": "p1", "prompt": "Say hi", "response": "hi"}]),
                    task="pointwise")
    f = _jsonl(tmp_path / "bad.jsonl", [{"item_id": "p1", "judge": "s", "verdict": "A"},
                                        {"item_id": "p1", "judge": "s", "score": 2, "order": "BA"},
                                        {"item_id": "p1", "judge": "s", "score": 2, "p_a": 0.5, "sample": 3}])
    before = _dump(ws_dir)
    assert main(["import", str(f), "--as", "judgments", "-w", str(ws_dir)]) == 2
    assert _dump(ws_dir) == before
    with Workspace(ws_dir, create=False) as ws, pytest.raises(ValueError) as info:
        import_verdicts(ws, f)
    got = {str(p) for p in info.value.problems}  # type: ignore[attr-defined]
    assert got == {f"{f}:1: verdict: a pointwise item takes a score, not the verdict 'A'",
                   f"{f}:2: order: a pointwise item is shown in one order: AB",
                   f"{f}:3: p_a: probabilities of A/B/tie apply to pairwise items only"}


def test_a_judge_name_of_another_spec_is_refused(tmp_path, capsys):
    from judgecal.data.datasets import replay_judgment

    ws_dir = _ws_with_items(tmp_path)
    with Workspace(ws_dir, create=False) as ws:
        ws.judgments_repo.add_judgments([replay_judgment(JUDGE, "ex-01", "A", "A", source="elsewhere")])
    before = _dump(ws_dir)
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(ws_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{VERDICTS}:1: judge: 'example/acme-judge' is already in the workspace as another judge" in err
    assert _dump(ws_dir) == before
    # the clash is named even when none of the judge's records is otherwise valid
    bad = _jsonl(tmp_path / "bad.jsonl", [{"item_id": "ex-01", "judge": JUDGE, "score": 3}])
    assert main(["import", str(bad), "--as", "judgments", "-w", str(ws_dir)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: score: a pairwise item takes a verdict" in err
    assert f"{bad}:1: judge: 'example/acme-judge' is already in the workspace" in err
    assert _dump(ws_dir) == before


def test_spec_file_names_the_judge_and_moving_to_it_needs_replace(tmp_path, capsys):
    ws_dir = _ws_with_items(tmp_path)
    ws = str(ws_dir)
    other = _jsonl(tmp_path / "other.jsonl", [{**OK, "judge": "someone/else"}])
    before = _dump(ws_dir)
    assert main(["import", str(other), "--as", "judgments", "--spec", str(SPEC), "-w", ws]) == 2
    assert f"{other}:1: judge: 'someone/else' is not the judge of the spec" in capsys.readouterr().err
    assert _dump(ws_dir) == before
    # imported first without a spec, the same name under the spec file is another judge ...
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", ws]) == 0
    before = _dump(ws_dir)
    assert main(["import", str(VERDICTS), "--as", "judgments", "--spec", str(SPEC), "-w", ws]) == 2
    err = capsys.readouterr().err
    assert f"{VERDICTS}:1: judge: 'example/acme-judge' is already in the workspace as another judge" in err
    assert err.count(str(VERDICTS)) == 1
    assert _dump(ws_dir) == before
    # ... unless the import is told to replace it: every judgment moves to the spec
    assert main(["import", str(VERDICTS), "--as", "judgments", "--spec", str(SPEC), "--replace", "-w", ws]) == 0
    out = capsys.readouterr().out
    assert "40 replaced" in out and "note" not in out  # backend: import, a judge that ran elsewhere
    with Workspace(ws_dir, create=False) as w:
        assert set(w.judgments_repo.judgments_frame()["spec_hash"]) == {load_spec(str(SPEC)).spec_hash}
        assert w.judgments_repo.judges() == [JUDGE]


def test_a_spec_naming_a_backend_judgecal_does_not_run_is_kept_and_said(tmp_path, capsys):
    ws_dir = _ws_with_items(tmp_path)
    spec = tmp_path / "bedrock.yaml"
    spec.write_text(f"name: {JUDGE}\nbackend: bedrock\nmodel: claude-x\n", "utf-8")
    assert main(["import", str(VERDICTS), "--as", "judgments", "--spec", str(spec), "-w", str(ws_dir)]) == 0
    out = capsys.readouterr().out
    assert "imported 40 new judgments" in out
    assert f"note: backend 'bedrock' of {spec} is not one judgecal runs" in out
    with Workspace(ws_dir, create=False) as w:
        assert set(w.judgments_repo.judgments_frame()["spec_hash"]) == {load_spec(str(spec)).spec_hash}


def test_bad_spec_file_is_a_usage_error(tmp_path, capsys):
    ws_dir = _ws_with_items(tmp_path)
    bad = tmp_path / "judge.yaml"
    bad.write_text("name: x\nbackend: import\nmodel: m\nparameters: {temprature: 0}\n", "utf-8")
    assert main(["import", str(VERDICTS), "--as", "judgments", "--spec", str(bad), "-w", str(ws_dir)]) == 2
    assert "field 'parameters.temprature' is unknown" in capsys.readouterr().err


def test_missing_workspace_is_not_created(tmp_path, capsys):
    assert main(["import", str(VERDICTS), "--as", "judgments", "-w", str(tmp_path / "none")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


# -- LLMBar's Swap strategies through the import -----------------------------------------------------

NATURAL = Path("princeton-nlp") / "LLMBar" / "Dataset" / "LLMBar" / "Natural"


def _frac(text: str) -> tuple[int, int]:
    m = re.match(r"(\d+) / (\d+) = ", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def _llmbar_files(root: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, dict]]:
    """LLMBar Natural as the user's own files: items with the gold label, and every Swap* result as
    verdicts in the order the evaluator saw the outputs."""
    rows = json.loads((root / "dataset.json").read_text("utf-8"))
    items = [{"id": f"natural-{i}", "prompt": r["input"], "response_a": r["output_1"], "response_b": r["output_2"],
              "human_labels": {"llmbar-gold": {1: "A", 2: "B"}[int(r["label"])]}} for i, r in enumerate(rows)]
    verdicts, stats = [], {}
    for result in sorted(root.glob("evaluators/*/Swap*/result.json")):
        judge = f"llmbar/{result.parent.parent.name}/{result.parent.name}"
        stats[judge] = json.loads((result.parent / "statistics.json").read_text("utf-8"))
        for i, row in enumerate(json.loads(result.read_text("utf-8"))):
            final = [e for e in row["results"] if isinstance(e, dict) and "swap = False" in e][-1]
            # "winner" names the output (1 or 2) whatever the order; with swap = True output 2 was shown first
            for order, k, shown in (("AB", "swap = False", {"1": "A", "2": "B"}),
                                    ("BA", "swap = True", {"1": "B", "2": "A"})):
                res = final[k]
                completion = res.get("completion")
                verdicts.append({"item_id": f"natural-{i}", "judge": judge, "order": order,
                                 "verdict": shown.get(str(res.get("winner")), "invalid"),
                                 "raw": str(completion[0]) if isinstance(completion, list) and completion else ""})
    return (_jsonl(tmp_path / "natural-items.jsonl", items), _jsonl(tmp_path / "natural-verdicts.jsonl", verdicts),
            stats)


def test_llmbar_swap_position_figures_reproduced(mirror, tmp_path):
    items, verdicts, stats = _llmbar_files(mirror / NATURAL, tmp_path)
    assert len(stats) == 12  # Swap and Swap_CoT of six evaluators
    ws = str(tmp_path / "ws")
    assert main(["import", str(items), "-w", ws]) == 0
    assert main(["import", str(verdicts), "--as", "judgments", "-w", ws]) == 0
    assert main(["audit", "--consensus", "mv", "--invalid-as", "wrong", "--n-boot", "50", "-w", ws]) == 0
    report = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text("utf-8"))
    assert sorted(report["judges"]) == sorted(stats)
    for judge, st in stats.items():
        m = report["judges"][judge]["metrics"]
        for key, metric in (("correct_False", "accuracy_AB"), ("correct_True", "accuracy_BA"),
                            ("correct_both", "accuracy_both"), ("equal", "position_consistency")):
            num, den = _frac(str(st[key]))
            assert m[metric]["n"] == den == 100, (judge, metric)
            assert m[metric]["estimate"] == pytest.approx(num / den, abs=1e-9), (judge, metric, st[key])
        avg = float(str(st["correct_average"]).rstrip("%")) / 100
        assert m["accuracy"]["estimate"] == pytest.approx(avg, abs=5e-4), judge
