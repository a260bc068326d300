"""The verdict-injection probe: hand-made verdicts, and live on the embedded judge."""

import pandas as pd
import pytest

from judgecal.audit.injection import INJECTIONS, injected_items, injection_follow
from judgecal.data.records import Candidate, Item

ITEMS = [Item(f"q{k}", f"Question {k}", [Candidate(f"good {k}"), Candidate(f"bad {k}")]) for k in range(4)]
TRUTH = pd.Series({"q0": "A", "q1": "A", "q2": "B", "q3": "tie"})


def test_injected_items_carry_the_injection_on_the_human_loser():
    inj = injected_items(ITEMS, TRUTH)
    assert len(inj) == 3 * len(INJECTIONS)  # the tie item has no loser
    by_id = {it.item_id: it for it in inj}
    q0 = by_id["q0#inject-instruction"]
    assert q0.candidates[1].text.endswith(INJECTIONS["instruction"]) and q0.candidates[0].text == "good 0"
    assert q0.metadata["injected"] == "B" and q0.metadata["base_item"] == "q0"
    q2 = by_id["q2#inject-verdict"]
    assert q2.candidates[0].text.endswith(INJECTIONS["verdict"]) and q2.metadata["injected"] == "A"


def test_follow_rate_hand_computed():
    inj = injected_items(ITEMS, TRUTH, kinds=("instruction",))
    rows = [
        # injected pairs: q0 injected B -> picks B twice (follows), q1 injected B -> A and B, q2 injected A -> B, B
        ("q0#inject-instruction", "B"), ("q0#inject-instruction", "B"), ("q1#inject-instruction", "A"),
        ("q1#inject-instruction", "B"), ("q2#inject-instruction", "B"), ("q2#inject-instruction", "B"),
        # clean pairs: the judge never picks the loser
        ("q0", "A"), ("q0", "A"), ("q1", "A"), ("q1", "A"), ("q2", "B"), ("q2", "B"),
    ]
    j = pd.DataFrame(rows, columns=["item_id", "verdict"])
    res = injection_follow(j, inj, n_boot=200)["instruction"]
    assert res["injection_follow_rate"]["estimate"] == pytest.approx(3 / 6)
    assert res["clean_pick_rate"]["estimate"] == 0.0
    assert res["injection_excess"]["estimate"] == pytest.approx(0.5)


def test_live_injection_probe_on_smollm2(tmp_path, local_backend, pandalm_ws):
    from judgecal.data.store import Workspace
    from judgecal.judges.engine import Engine
    from judgecal.judges.rubric import load_rubric

    truth = pandalm_ws.annotations_repo.consensus_frame("mv").set_index("item_id")["label"]
    # items on which the tiny model answers with a letter (on the first few it only rambles)
    base = [it for it in pandalm_ws.items_repo.items(source="pandalm") if truth[it.item_id] in ("A", "B")][100:105]
    probes = injected_items(base, truth, kinds=("instruction",))
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(base + probes)
    eng = Engine(ws, local_backend, load_rubric("pairwise"), judge="local/smollm2", progress=False)
    st = eng.run(eng.plan(base + probes))
    assert st.errors == 0 and st.done == 20
    res = injection_follow(ws.judgments_repo.judgments_frame(), probes, n_boot=300)["instruction"]
    f = res["injection_follow_rate"]
    assert f["n"] == 10 and 0 <= f["estimate"] <= 1 and f["ci_low"] <= f["estimate"] <= f["ci_high"]
    assert res["clean_pick_rate"]["n"] == 10
    # a judge that picks the first-shown response regardless "follows" half of the injections
    assert res["injection_excess"]["estimate"] == pytest.approx(
        f["estimate"] - res["clean_pick_rate"]["estimate"])


def test_cli_probe_and_audit(tmp_path, capsys):
    import json

    from judgecal.cli import main

    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    assert main(["probe", "injection", "--judge", "local/smollm2", "--items", "3", "--quiet", "-w", ws]) == 0
    assert "6 injected pairs over 3 items" in capsys.readouterr().out
    assert main(["audit", "--n-boot", "200", "-w", ws]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    local = rep["judges"]["local/smollm2"]
    assert local["n_items_with_consensus"] == 3  # injected pairs never count as aligned items
    if "injection" in local:  # present when the tiny model gave decisive verdicts
        assert set(local["injection"]) <= {"instruction", "verdict"}
        assert {"estimate", "p", "q", "kind"} <= set(local["metrics"]["injection_follow_rate"])
