"""The demo's audit is the golden one: ``judgecal demo``'s workspace (PandaLM, its two recorded judges, both
consensus methods, the embedded judge's calls on the demo's 60 items) audited as the demo audits it gives
``tests/golden/demo-audit.json``, apart from the version, the time and where it ran.

The embedded judge's calls are recorded (``tests/golden/demo-smollm2-judgments.jsonl``: every stored field of
each call but the machine's fingerprint) because its verdicts rest on the CPU's arithmetic: the golden check is
of the audit, not of llama.cpp. Record them again from a demo workspace with ``python
tests/test_golden_demo.py demo-workspace``; regenerate the golden audit after a change meant to move a figure
with ``JUDGECAL_GOLDEN_WRITE=1 pytest tests/test_golden_demo.py``, and say in the change why the figures moved."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import json_differences

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.audit.schema import AuditReport
from judgecal.data.records import JUDGMENT_FIELDS, Judgment

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "demo-audit.json"
CALLS = HERE / "golden" / "demo-smollm2-judgments.jsonl"
JUDGE = "local/smollm2"
VOLATILE = ("judgecal_version", "generated_at", "provenance")  # the release, the clock, the machine and paths


def _calls() -> tuple[dict[str, Any], list[Judgment]]:
    lines = [json.loads(line) for line in CALLS.read_text("utf-8").splitlines() if line.strip()]
    spec = lines[0]["spec"]
    return spec, [Judgment(**row) for row in lines[1:]]


@pytest.fixture(scope="module")
def demo_report(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> AuditReport:
    """The demo's workspace built as ``judgecal demo`` builds it, the embedded judge's calls read from the
    record instead of made, audited with the demo's options (``judgecal demo``: ds, invalid as tie, B = 2,000)."""
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.ingest import import_dataset
    from judgecal.data.store import Workspace

    spec, calls = _calls()
    ws = Workspace(tmp_path_factory.mktemp("demo") / "ws")
    try:
        import_dataset(ws, "pandalm")
        compute_consensus(ws, ("ds", "mv"))
        ws.judgments_repo.add_judge_specs([(calls[0].spec_hash, JUDGE, spec)])
        assert ws.judgments_repo.add_judgments(calls) == len(calls)
        return audit_workspace(ws, AuditOptions(consensus="ds", invalid_as="tie", n_boot=2000))
    finally:
        ws.close()


def test_the_record_is_the_demos_calls() -> None:
    spec, calls = _calls()
    assert spec["backend"] == "local" and spec["model"] == "smollm2" and spec["temperature"] == 0.0
    items = {c.item_id for c in calls}
    # the demo's 60 items, each in both orders, with the stored status of each call kept (unparsable ones too)
    assert len(items) == 60 and len(calls) == 120
    assert {(c.item_id, c.order) for c in calls} == {(i, o) for i in items for o in ("AB", "BA")}
    assert all(c.judge == JUDGE and c.env is None for c in calls)
    assert {c.status for c in calls} <= {"ok", "invalid"}


def test_the_demos_audit_is_the_golden_one(demo_report: AuditReport) -> None:
    data = {k: v for k, v in demo_report.to_json().items() if k not in VOLATILE}
    if os.environ.get("JUDGECAL_GOLDEN_WRITE"):
        GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
    golden = json.loads(GOLDEN.read_text("utf-8"))
    assert list(golden) == list(data)  # the sections in the order audit.json writes them
    diffs = json_differences(golden, data)
    assert not diffs, "\n".join(diffs[:20])
    judge = demo_report.judges[JUDGE]
    assert judge.n_judgments == 120 and judge.n_items == 60  # the live judge's figures rest on the demo's items
    assert set(demo_report.judges) == {JUDGE, "replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"}


def record(workspace: Path) -> None:
    """Write :data:`CALLS` from a demo workspace's database: the spec, then each call of the embedded judge in
    the order the demo stored them (the paired comparisons resample the items in the order the judgments list
    them)."""
    con = sqlite3.connect(f"file:{workspace / 'judgecal.sqlite'}?mode=ro", uri=True)
    fields = [f for f in JUDGMENT_FIELDS if f != "env"]  # the machine's fingerprint stays on the machine
    rows = con.execute(f"SELECT {', '.join(f'[{f}]' for f in fields)} FROM judgments WHERE judge = ? "
                       "ORDER BY rowid", (JUDGE,)).fetchall()
    (spec,) = {s for (s,) in con.execute("SELECT spec FROM judge_specs WHERE name = ?", (JUDGE,))}
    with CALLS.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"spec": json.loads(spec)}, sort_keys=True) + "\n")
        for row in rows:
            out.write(json.dumps(dict(zip(fields, row, strict=True)), ensure_ascii=False) + "\n")


if __name__ == "__main__":  # python tests/test_golden_demo.py demo-workspace
    record(Path(sys.argv[1]))
    print(CALLS)
