"""The typed report (judgecal.audit.schema): the shipped JSON Schema is the one the types generate, an audit
validates against it and round-trips through the types unchanged, a bad audit.json is refused naming its field,
and PandaLM's audit is the golden one (apart from the version, the time and where it ran).

Regenerate the golden file after a change that is meant to move a figure: ``JUDGECAL_GOLDEN_WRITE=1 pytest
tests/test_audit_report.py``, and say in the change why the figures moved."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import json_differences

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.audit.schema import SCHEMA, SCHEMA_FILE, AuditReport, json_schema

GOLDEN = Path(__file__).parent / "golden" / "pandalm-audit.json"
VOLATILE = ("judgecal_version", "generated_at", "provenance")  # the release, the clock, the machine and paths


@pytest.fixture(scope="module")
def pandalm_report(pandalm_ws: Any) -> AuditReport:
    return audit_workspace(pandalm_ws, AuditOptions(consensus="ds", n_boot=300, seed=0))


def test_the_shipped_schema_is_generated_from_the_types() -> None:
    shipped = json.loads(SCHEMA_FILE.read_text("utf-8"))
    assert shipped == json_schema(), "run `python -m judgecal.audit.schema` to regenerate audit.schema.json"
    assert shipped["properties"]["schema"]["const"] == SCHEMA == "judgecal.audit/2"


def test_an_audit_validates_and_round_trips(pandalm_report: AuditReport) -> None:
    data = pandalm_report.to_json()
    jsonschema.validate(data, json.loads(SCHEMA_FILE.read_text("utf-8")))
    again = AuditReport.from_json(json.loads(json.dumps(data)))
    assert again.to_json() == data
    judge = again.judges["replay/pandalm/gpt-3.5-turbo"]
    assert judge.kind == "pairwise" and judge.metrics["accuracy"].n == 999
    assert judge.verdict is not None and judge.verdict.details[0].text == judge.verdict.reasons[0]
    assert judge.breakdown is not None and sum(map(sum, judge.breakdown.confusion)) == 999
    assert again.comparisons is not None and len(again.comparisons.pairs) == 1


def test_a_wrong_field_is_refused_by_the_schema_and_the_types(pandalm_report: AuditReport) -> None:
    from pydantic import ValidationError

    data = pandalm_report.to_json()
    data["judges"]["replay/pandalm/pandalm-7b"]["verdict"]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json_schema())
    with pytest.raises(ValidationError) as err:
        AuditReport.from_json(data)
    assert err.value.errors()[0]["loc"][:4] == ("judges", "replay/pandalm/pandalm-7b", "verdict", "status")


def test_report_command_names_the_bad_field(tmp_path: Path, pandalm_report: AuditReport) -> None:
    data = pandalm_report.to_json()
    data["judges"]["replay/pandalm/pandalm-7b"]["metrics"]["accuracy"]["estimate"] = "high"
    bad = tmp_path / "audit.json"
    bad.write_text(json.dumps(data), "utf-8")
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "report", "html", str(bad)], capture_output=True, text=True)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert f"{bad}: judges.replay/pandalm/pandalm-7b.metrics.accuracy.estimate:" in res.stderr
    assert not bad.with_suffix(".html").exists()


def test_pandalm_audit_is_the_golden_one(pandalm_report: AuditReport) -> None:
    data = {k: v for k, v in pandalm_report.to_json().items() if k not in VOLATILE}
    if os.environ.get("JUDGECAL_GOLDEN_WRITE"):
        GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", "utf-8")
    golden = json.loads(GOLDEN.read_text("utf-8"))
    diffs = json_differences(golden, data)
    assert not diffs, "\n".join(diffs[:20])
