"""How long a judge may answer: the rubric's max_tokens by default (span rubrics quote text), an explicit
--max-tokens or a spec file's value wins, and the stored spec holds the value that ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgecal.judges.rubric import RubricError, load_rubric
from judgecal.judges.spec import DEFAULT_MAX_TOKENS, resolve_judge


def test_the_rubric_sets_the_default_and_an_explicit_value_wins(tmp_path):
    assert load_rubric("spans-hallucination").max_tokens == 256
    assert load_rubric("keyfacts-coverage").max_tokens == 256
    assert load_rubric("pairwise").max_tokens is None
    assert resolve_judge("local/smollm2")[0].max_tokens == DEFAULT_MAX_TOKENS == 8
    assert resolve_judge("local/smollm2", rubric="spans-hallucination")[0].max_tokens == 256
    assert resolve_judge("local/smollm2", rubric="spans-hallucination", max_tokens=16)[0].max_tokens == 16
    # a spec file: its own value wins over both; without one the rubric's applies
    f = tmp_path / "j.yaml"
    f.write_text("backend: local\nmodel: smollm2\nrubric: keyfacts-coverage\nparameters: {max_tokens: 32}\n")
    assert resolve_judge(str(f), max_tokens=16)[0].max_tokens == 32
    f.write_text("backend: local\nmodel: smollm2\nrubric: keyfacts-coverage\n")
    assert resolve_judge(str(f))[0].max_tokens == 256
    assert resolve_judge(str(f), max_tokens=64)[0].max_tokens == 64
    # the value is part of the judge: two values, two specs
    a, b = (resolve_judge("local/smollm2", rubric="spans-hallucination", max_tokens=m)[0] for m in (None, 16))
    assert a.to_dict()["max_tokens"] == 256 and a.spec_hash != b.spec_hash


@pytest.mark.parametrize("value", ["0", "many", "true", "2.5"])
def test_a_bad_max_tokens_is_named_with_its_file(tmp_path, value):
    body = (Path(__file__).parents[1] / "rubrics" / "pairwise.yaml").read_text("utf-8")
    f = tmp_path / "r.yaml"
    f.write_text(body + f"\nmax_tokens: {value}\n")
    with pytest.raises(RubricError, match=rf"^{f}: field 'max_tokens' must be an integer >= 1"):
        load_rubric(str(f))
    f.write_text(body + "\nmax_tokens: 40\n")
    assert load_rubric(str(f)).max_tokens == 40


def test_the_cli_runs_a_span_judge_with_the_rubrics_length_and_records_it(tmp_path, mirror):
    from judgecal.cli import main
    from judgecal.data.store import Workspace

    path = tmp_path / "ws"
    assert main(["import", "faithbench", "-w", str(path)]) == 0
    base = ["judge", "--judge", "local/smollm2", "--rubric", "spans-hallucination", "--items", "1",
            "--concurrency", "1", "--quiet", "-w", str(path)]
    assert main(base) == 0
    assert main([*base, "--max-tokens", "12"]) == 0
    with Workspace(path) as ws:
        specs = {h: s for h, (_, s) in ws.judgments_repo.judge_specs().items() if s.get("rubric") == "spans-hallucination"}
        j = ws.judgments_repo.judgments_frame(columns=["spec_hash", "completion_tokens", "status"])
    j = j[j["spec_hash"].isin(specs)]  # not the recorded judges FaithBench ships
    assert sorted(s["max_tokens"] for s in specs.values()) == [12, 256]
    assert len(j) == 2 and set(j["spec_hash"]) == set(specs)  # one judgment under each recorded spec
    for row in j.itertuples():  # each reply stayed within the length its spec records
        assert row.completion_tokens <= specs[row.spec_hash]["max_tokens"]
