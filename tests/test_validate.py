"""`judgecal validate` fast mode: planted biases recovered within their CIs, silent at null."""

from judgecal.audit.validate import SCENARIOS, simulate, truths, validate
from judgecal.cli import main


def test_fast_validation_passes():
    res = validate(n_items=1000, seeds=1, n_boot=600)
    failed = [c for c in res["checks"] if not c["ok"]]
    assert not failed, failed
    assert len(res["checks"]) == 6  # 3 planted effects + 3 silent metrics at null
    assert res["ok"]


def test_simulation_matches_its_closed_form():
    sc = next(s for s in SCENARIOS if s.name == "position")
    sim = simulate(sc, 4000, 0)
    j = sim["judgments"]
    first = ((j["order"] == "AB") & (j["verdict"] == "A")) | ((j["order"] == "BA") & (j["verdict"] == "B"))
    assert abs(first.mean() - truths(sc)["first_position_rate"]) < 0.015


def test_cli_validate(capsys):
    assert main(["validate", "--items", "600", "--n-boot", "400"]) == 0
    out = capsys.readouterr().out
    assert "all checks passed" in out and "planted first_position_rate recovered" in out
