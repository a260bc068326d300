"""Trap sets: EvalBiasBench registered and imported from the mirror, and the ``traps`` probe on its real pairs.

The rater is a real, simple one: it always picks the longer response (more characters; a tie when equal). Its
accuracy on each trap and on LLMBar Natural's ordinary pairs is counted here from the files themselves, and the
probe must report the same figures; its ``length bias`` trap (where the shorter response is the better one)
is fooled every time, and the audit flags it (audit.json schema-valid, audit.html, the terminal's ``--details``).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest

from judgecal.audit.check import check_probe
from judgecal.audit.probe import AuditConfig
from judgecal.audit.probes import TrapProbe
from judgecal.audit.traps import trap_accuracy
from judgecal.data.datasets import load
from judgecal.data.evalbiasbench import trap_slug
from judgecal.data.registry import COMMITS, expected_checksum, registry

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILE = ROOT / "judgecal/audit/audit.schema.json"
FILE = ("ncsoft", "offsetbias", "data/evalbiasbench/biasbench.json")
JUDGE = "rule/longer"


def longer(a: str, b: str) -> str:
    return "A" if len(a) > len(b) else "B" if len(b) > len(a) else "tie"


def _raw(mirror: Path) -> dict[str, list[dict[str, object]]]:
    data: dict[str, list[dict[str, object]]] = json.loads((mirror.joinpath(*FILE)).read_text("utf-8"))
    return data


def test_evalbiasbench_is_pinned_and_imported_with_its_traps(mirror: Path) -> None:
    (f,) = registry()["evalbiasbench"].files
    assert COMMITS[f.repo] == "0bd16e4ac935315999ed23480c69673b675884b0" and f.path == FILE[2]
    assert expected_checksum(f) == hashlib.sha256(mirror.joinpath(*FILE).read_bytes()).hexdigest()
    raw = _raw(mirror)
    ds = load("evalbiasbench")
    assert len(ds.items) == len(ds.annotations) == sum(len(v) for v in raw.values()) == 80
    by_id = {it.item_id: it for it in ds.items}
    for trap, rows in raw.items():
        for i, row in enumerate(rows):
            it = by_id[f"evalbiasbench/{trap_slug(trap)}/{i}"]
            assert (it.prompt, it.candidates[0].text, it.candidates[1].text) == (
                row["instruction"], row["response1"], row["response2"])
            assert it.metadata["trap"] == trap and it.metadata["trap_answer"] == {1: "A", 2: "B"}[row["label"]]
    gold = {a.item_id: a.label for a in ds.annotations}
    assert gold == {i: it.metadata["trap_answer"] for i, it in by_id.items()}
    assert {a.annotator for a in ds.annotations} == {"evalbiasbench-gold"}


def test_a_changed_file_is_refused(tmp_path: Path, mirror: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judgecal.data.registry import DatasetError

    bad = tmp_path.joinpath(*FILE)
    bad.parent.mkdir(parents=True)
    bad.write_bytes(mirror.joinpath(*FILE).read_bytes().replace(b"length bias", b"length bias!", 1))
    monkeypatch.setenv("JUDGECAL_DATA_MIRROR", str(tmp_path))
    with pytest.raises(DatasetError, match="sha256"):
        load("evalbiasbench")


def test_scores_ties_and_unreadable_verdicts() -> None:
    traps = pd.DataFrame({"trap": ["t", "t", "t", "t"], "answer": ["A", "B", "A", "B"]},
                         index=pd.Index(["i1", "i2", "i3", "i4"]))
    j = pd.DataFrame({"item_id": ["i1", "i2", "i3", "i4", "o1", "o2"],
                      "verdict": ["A", "A", "tie", "invalid", "B", "B"], "order": "AB", "sample": 0})
    truth = pd.Series({"o1": "B", "o2": "A", "o3": "tie"})
    got = trap_accuracy(j, traps, truth, n_boot=100)
    assert got["traps"]["t"]["accuracy"]["estimate"] == pytest.approx((1 + 0 + 0.5 + 0.5) / 4)
    assert got["ordinary"]["estimate"] == pytest.approx(0.5) and got["ordinary"]["n"] == 2
    assert got["traps"]["t"]["gap"]["estimate"] == pytest.approx(0.0)
    wrong = trap_accuracy(j, traps, truth, invalid_as="wrong", n_boot=100)
    assert wrong["traps"]["t"]["accuracy"]["estimate"] == pytest.approx(1.5 / 4)


def _rule_rows(items: list) -> list[dict[str, str]]:  # type: ignore[type-arg]
    """The longer-response rater's calls in both orders, verdicts as shown (B first in order BA)."""
    rows = []
    for it in items:
        v = longer(it.candidates[0].text, it.candidates[1].text)
        for order in ("AB", "BA"):
            shown = v if order == "AB" or v == "tie" else {"A": "B", "B": "A"}[v]
            rows.append({"item_id": it.item_id, "judge": JUDGE, "order": order, "verdict": shown, "raw": shown})
    return rows


def _by_hand(mirror: Path) -> tuple[dict[str, float], float]:
    """Per trap and on LLMBar Natural: the longer-response rater's share right (a tie 1/2), from the files."""
    def score(a: str, b: str, label: int) -> float:
        v = longer(a, b)
        return 0.5 if v == "tie" else float(v == {1: "A", 2: "B"}[label])

    traps = {t: float(np.mean([score(str(r["response1"]), str(r["response2"]), int(r["label"]))  # type: ignore[call-overload]
                               for r in rows])) for t, rows in _raw(mirror).items()}
    natural = json.loads((mirror / "princeton-nlp/LLMBar/Dataset/LLMBar/Natural/dataset.json").read_text("utf-8"))
    ordinary = float(np.mean([score(r["output_1"], r["output_2"], int(r["label"])) for r in natural]))
    return traps, ordinary


@pytest.fixture(scope="module")
def trap_ws(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> Path:
    """EvalBiasBench and LLMBar Natural imported, the longer-response rater's verdicts, audited with --details."""
    tmp = tmp_path_factory.mktemp("traps")
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    env = {**os.environ, "JUDGECAL_DATA_MIRROR": str(mirror), "COLUMNS": "100"}
    ws = tmp / "ws"

    def cli(*args: str) -> str:
        res = subprocess.run([sys.executable, "-m", "judgecal.cli", *args, "-w", str(ws)], env=env, cwd=tmp,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr
        return res.stdout

    cli("import", "evalbiasbench")
    cli("import", "llmbar/Natural")
    items = load("evalbiasbench").items + load("llmbar/Natural").items
    (tmp / "longer.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rule_rows(items)), "utf-8")
    cli("import", str(tmp / "longer.jsonl"), "--as", "judgments")
    (tmp / "terminal.txt").write_text(cli("audit", "--consensus", "ds:gold", "--n-boot", "400", "--details"), "utf-8")
    return tmp


def test_trap_accuracy_per_trap_is_the_hand_count(trap_ws: Path, mirror: Path) -> None:
    report = json.loads((trap_ws / "ws/reports/audit.json").read_text("utf-8"))
    jsonschema.validate(report, json.loads(SCHEMA_FILE.read_text("utf-8")))
    judge = report["judges"][JUDGE]
    traps, ordinary = _by_hand(mirror)
    sec = judge["traps"]
    assert set(sec["traps"]) == set(traps) and sec["chance"] == 0.5
    assert sec["ordinary"]["estimate"] == pytest.approx(ordinary) and sec["ordinary"]["n"] == 100
    for trap, acc in traps.items():
        part = sec["traps"][trap]
        assert part["accuracy"]["estimate"] == pytest.approx(acc)
        assert part["accuracy"]["ci_low"] <= acc <= part["accuracy"]["ci_high"]
        gap = judge["metrics"][f"trap_gap.{trap_slug(trap)}"]
        assert gap["estimate"] == pytest.approx(acc - ordinary) and gap["null_value"] == 0.0
        assert gap["q"] is not None
    assert traps["length bias"] == 0.0  # the shorter response is the better one on every length trap
    assert judge["metrics"]["trap_accuracy"]["estimate"] == pytest.approx(
        sum(traps[t] * len(r) for t, r in _raw(mirror).items()) / 80)
    pooled = judge["metrics"]["trap_gap"]
    assert pooled["estimate"] == pytest.approx(judge["metrics"]["trap_accuracy"]["estimate"] - ordinary)
    assert pooled["null_value"] == 0.0 and pooled["q"] is not None
    assert "falls_for_traps" in judge["flags"]
    # the recorded LLMBar judges never saw a trap pair: not tested, never a figure
    other = report["judges"]["replay/llmbar/GPT-4/Vanilla"]
    assert "trap_accuracy" not in other["metrics"] and "falls_for_traps" not in other["flags"]
    assert any(r.startswith("trap sets: not tested") for r in other["verdict"]["not_tested"])


def test_the_report_shows_the_traps(trap_ws: Path) -> None:
    page = html.unescape((trap_ws / "ws/reports/audit.html").read_text("utf-8"))
    assert "Trap sets: accuracy per trap" in page and "familiar knowledge preference bias" in page
    text = " ".join((trap_ws / "terminal.txt").read_text("utf-8").split())
    assert "is fooled by a trap set more often than it errs on ordinary pairs" in text
    assert "trap sets: not tested" in text  # the recorded judges


def test_check_probe_on_the_trap_workspace(trap_ws: Path) -> None:
    from judgecal.audit.run import judge_inputs
    from judgecal.audit.truth import resolve_truth
    from judgecal.data.store import Workspace

    ws = Workspace(trap_ws / "ws", create=False)
    try:
        truth, about = resolve_truth(ws, "ds:gold", n_boot=50)
        inputs = judge_inputs(ws, truth, [JUDGE, "replay/llmbar/GPT-4/Vanilla"], truth_source=about["source"])
    finally:
        ws.close()
    checked = check_probe(TrapProbe, inputs=inputs, cfg=AuditConfig(n_boot=200))
    assert "raises only declared flags" in checked
