"""Prompt mutations and the sensitivity probe, live on the embedded judge."""

import pytest

from judgecal.data.records import Candidate, Item
from judgecal.data.store import Workspace
from judgecal.judges.engine import Engine
from judgecal.judges.mutations import MUTATIONS, apply
from judgecal.judges.rubric import load_rubric

ITEM = Item("m", "What is 2 + 2?", [Candidate("4"), Candidate("5")])


def test_mutations_keep_the_content_and_change_the_prompt():
    rubric = load_rubric("pairwise")
    base = rubric.messages(ITEM, "AB")
    for name in MUTATIONS:
        mutated = apply(name, rubric, ITEM, "AB")
        text = "\n".join(m["content"] for m in mutated)
        assert "What is 2 + 2?" in text and "\n4\n" in text and "\n5\n" in text, name
        assert mutated != base, name
    after = apply("instruction_after", rubric, ITEM)[-1]["content"]
    assert after.index("[Instruction]") > after.index("Response B")
    assert after.rstrip().endswith("A, B, or tie.")
    assert apply("option_order", rubric, ITEM)[-1]["content"].endswith("Reply with exactly one word: tie, B, or A.")
    shots_ab = [m["content"] for m in apply("fewshot_ab", rubric, ITEM)]
    shots_ba = [m["content"] for m in apply("fewshot_ba", rubric, ITEM)]
    assert sorted(shots_ab) == sorted(shots_ba) and shots_ab != shots_ba
    with pytest.raises(ValueError, match="unknown mutation"):
        apply("shout", rubric, ITEM)


def test_sensitivity_probe_live_on_smollm2(tmp_path, local_backend, pandalm_ws):
    from judgecal.audit.sensitivity import prompt_sensitivity

    items = pandalm_ws.items_repo.items(source="pandalm")[:8]
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(items)
    eng = Engine(ws, local_backend, load_rubric("pairwise"), judge="local/smollm2", progress=False)
    for mut in ("none", "paraphrase", "instruction_after"):
        st = eng.run(eng.plan(items, mutation=mut))
        assert st.errors == 0
    df = ws.judgments_repo.judgments_frame()
    assert sorted(df["mutation"].unique()) == ["instruction_after", "none", "paraphrase"]
    assert df["key"].is_unique and len(df) == 8 * 2 * 3
    truth = pandalm_ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    res = prompt_sensitivity(df, truth, n_boot=300)
    for mut in ("paraphrase", "instruction_after"):
        fr = res["mutations"][mut]["flip_rate"]
        assert fr["n"] == 16 and 0 <= fr["estimate"] <= 1
        # hand count
        base = df[df["mutation"] == "none"].set_index(["item_id", "order"])["verdict"]
        other = df[df["mutation"] == mut].set_index(["item_id", "order"])["verdict"].reindex(base.index)
        assert fr["estimate"] == pytest.approx((other != base).mean())
    assert set(res["accuracy_by_template"]) == {"none", "paraphrase", "instruction_after"}
    assert res["accuracy_range"] >= 0
    assert res["fleiss_kappa_across_templates"]["n"] == 16


def test_cli_mutations_and_audit_report(tmp_path, capsys):
    import json

    from judgecal.cli import main

    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    assert main(["judge", "--judge", "local/smollm2", "--items", "4", "--quiet", "--mutation", "none",
                 "--mutation", "option_order", "-w", ws]) == 0
    assert "16 planned" in capsys.readouterr().out
    assert main(["audit", "--n-boot", "200", "-w", ws]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    local = rep["judges"]["local/smollm2"]
    assert local["n_judgments"] == 8  # alignment uses the unmutated prompt
    assert local["metrics"]["prompt_flip_rate"]["mutation"] == "option_order"
    assert set(local["prompt_sensitivity"]["accuracy_by_template"]) == {"none", "option_order"}
