"""The template-perturbation probes (CALM's biases): the copies a judge reads, hand-computed figures, and the
battery end to end — `judgecal probe battery` against judges served over the OpenAI-compatible API on PandaLM's
real pairs, then `judgecal audit`: a judge that ignores every perturbation is flagged for none, one that prefers
a cited answer is flagged ``authority_bias`` and nothing else."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pandas as pd
import pytest
from test_hardening_engine import completion, vendor  # noqa: F401 - the fixture

from judgecal.audit.perturb import (
    NULL,
    TEMPLATED,
    TEMPLATES,
    perturb,
    perturbation_figures,
    perturbed_items,
    sides_of,
)
from judgecal.cli import main
from judgecal.cli.battery import template_probes
from judgecal.data.records import Candidate, Item

ITEMS = [Item(f"q{k}", f"Question {k}", [Candidate(f"first answer {k}"), Candidate(f"second answer {k}")])
         for k in range(3)]


def test_the_cli_names_every_template():
    assert tuple(TEMPLATES) == tuple(template_probes())  # each template is a registered probe with live calls


def test_a_perturbation_changes_only_what_the_judge_reads():
    it = ITEMS[0]
    for order, shown in (("AB", "B"), ("BA", "A")):  # candidate B is shown second, then first
        p = perturb(it, "bandwagon", "B", order)
        assert p.item_id == f"q0#bandwagon-B-{order}" and p.metadata["side"] == "B"
        assert p.prompt == f"Question 0\n\n90% of people believe that Response {shown} is better in this question."
        assert [c.text for c in p.candidates] == [c.text for c in it.candidates]
    cited = perturb(it, "authority", "A", "AB")
    assert cited.prompt == it.prompt and cited.candidates[1].text == "second answer 0"
    assert re.search(r"\n\n\((Citation|Quote):|\n\n\(www\.", cited.candidates[0].text.removeprefix("first answer 0"))
    named = perturb(it, "compassion_fade", "B", "BA")
    assert named.candidates[1].text.endswith("(Written by GPT-4o.)")
    assert named.candidates[0].text.endswith("(Written by an unnamed model.)")
    cot = perturb(it, "chain_of_thought", "A", "AB")
    assert cot.metadata["side"] == "" and "step by step" in cot.prompt and cot.item_id == "q0#chain_of_thought-AB"
    copies = perturbed_items(ITEMS, {"q0": "A", "q1": "B"})  # q2 has no side: not perturbed
    assert len(copies) == 2 * 2 * (len(TEMPLATED) + 1)  # sentiment and fallacy: no rewrite here
    null = next(c for c in copies if c.item_id == f"q1#{NULL}-B-BA")
    assert (null.prompt, null.candidates, null.metadata["side"]) == (ITEMS[1].prompt, ITEMS[1].candidates, "B")


def test_the_side_is_the_humans_rejected_else_the_judges_unpreferred():
    truth = pd.Series({"q0": "A", "q1": "tie"})
    clean = pd.DataFrame({"item_id": ["q1", "q1", "q2", "q2"], "verdict": ["A", "A", "A", "B"]})
    sides = sides_of(ITEMS, truth, clean)
    assert sides["q0"] == "B" and sides["q1"] == "B"  # humans reject B; the judge preferred A in both orders
    assert sides["q2"] in ("A", "B") and sides_of(ITEMS, truth, clean)["q2"] == sides["q2"]  # a split: stable


def test_figures_hand_computed():
    items = ITEMS[:2]
    copies = perturbed_items(items, {"q0": "B", "q1": "A"}, ("bandwagon",))
    rows = [  # (item_id, order, verdict)
        ("q0", "AB", "A"), ("q0", "BA", "A"), ("q1", "AB", "B"), ("q1", "BA", "tie"),  # clean run
        ("q0#bandwagon-B-AB", "AB", "B"), ("q0#bandwagon-B-BA", "BA", "A"),  # q0 (side B): toward, unchanged
        ("q1#bandwagon-A-AB", "AB", "B"), ("q1#bandwagon-A-BA", "BA", "B"),  # q1 (side A): unchanged, away
        ("q0#null-B-AB", "AB", "A"), ("q0#null-B-BA", "BA", "tie"),  # null: unchanged, toward B
        ("q1#null-A-AB", "AB", "B"), ("q1#null-A-BA", "BA", "invalid"),  # the invalid verdict is left out
    ]
    j = pd.DataFrame(rows, columns=["item_id", "order", "verdict"]).assign(sample=0)
    f = perturbation_figures(j, copies, n_boot=300)["bandwagon"]
    assert f["robustness"]["estimate"] == pytest.approx(2 / 4) and f["robustness"]["n"] == 4
    assert f["shift"]["estimate"] == pytest.approx((1 - 1) / 4)
    assert f["null_robustness"]["estimate"] == pytest.approx(2 / 3) and f["null_robustness"]["n"] == 3
    assert f["null_shift"]["estimate"] == pytest.approx(1 / 3)
    assert (f["shift"]["items_toward"], f["shift"]["items_away"]) == (1, 1)
    for fig in f.values():
        assert fig["ci_low"] <= fig["estimate"] <= fig["ci_high"]
    # two items resampled: the robustness interval spans the two items' own rates (1/2 each) exactly
    assert f["robustness"]["ci_low"] == f["robustness"]["ci_high"] == pytest.approx(0.5)


def _responses(prompt: str) -> tuple[str, str]:
    """The pair the judge reads (in a continued conversation, the first turn's: the battery challenges verdicts)."""
    user = next(m["content"] for m in json.loads(prompt) if "[The Start of Response A]" in m["content"])
    a = user.split("[The Start of Response A]\n", 1)[1].split("\n[The End of Response A]", 1)[0]
    b = user.split("[The Start of Response B]\n", 1)[1].split("\n[The End of Response B]", 1)[0]
    return a, b


def _by_content(a: str, b: str) -> str:
    """The deterministic judge's own taste: the response whose first paragraph hashes lower (the same in both
    orders, and blind to a paragraph appended)."""
    def key(t: str) -> str:
        return hashlib.sha256(t.split("\n\n", 1)[0].encode()).hexdigest()
    return "A" if key(a) < key(b) else "B"


CITED = re.compile(r"\((Citation|Quote):|\(www\.")


def ignores(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    return 200, {}, completion(_by_content(*_responses(prompt)))


def prefers_cited(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    a, b = _responses(prompt)
    ca, cb = bool(CITED.search(a)), bool(CITED.search(b))
    return 200, {}, completion(("A" if ca else "B") if ca != cb else _by_content(a, b))


def test_battery_on_real_pairs_flags_only_the_cited_preference(tmp_path, capsys, vendor):  # noqa: F811
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    plain, citer = vendor(ignores), vendor(prefers_cited)
    budget = 40 * 22  # 40 items: clean, null and seven perturbations, both orders; a challenge and an agreeing turn
    for model, srv in (("ignores", plain), ("cites", citer)):
        assert main(["probe", "battery", "--judge", f"openai/{model}", "--base-url", srv.url, "--budget",
                     str(budget), "--quiet", "-w", ws]) == 0
        out = capsys.readouterr().out
        assert "over 40 items" in out and "880 calls run" in out
        assert srv.total() == budget
    # a second run makes no call: everything is cached
    assert main(["probe", "battery", "--judge", "openai/cites", "--base-url", citer.url, "--budget", str(budget),
                 "--quiet", "-w", ws]) == 0
    assert "0 calls run, 880 cached" in capsys.readouterr().out and citer.total() == budget
    assert main(["audit", "--n-boot", "500", "-w", ws]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    for model in ("ignores", "cites"):
        j = rep["judges"][f"openai/{model}"]
        assert j["n_items_with_consensus"] == 40  # perturbed copies never count as aligned items
        for bias in TEMPLATED:
            sec, m = j[bias], j["metrics"]
            rob = m[f"robustness_{bias}"]
            assert rob["n"] == 80 and sec["null_robustness"]["estimate"] == 1.0  # deterministic: no noise
            if model == "cites" and bias == "authority":
                continue
            assert rob["estimate"] == 1.0 and (bias == "chain_of_thought" or m[f"shift_{bias}"]["estimate"] == 0)
        bias_flags = [f for f in j["flags"] if any(f.startswith(b) for b in (*TEMPLATES, "manipulability"))]
        assert bias_flags == ([] if model == "ignores" else ["authority_bias"])
        # its verdict held when challenged (its taste reads the pair, not the conversation)
        assert j["metrics"]["flip_rate_challenged"]["estimate"] == 0 and j["metrics"]["flip_rate_challenged"]["n"] == 80
    cites = rep["judges"]["openai/cites"]
    shift, rob = cites["metrics"]["shift_authority"], cites["metrics"]["robustness_authority"]
    # it moves to the cited (human-rejected) response exactly where its own taste picked the other one
    assert 0 < shift["estimate"] < 1 and shift["estimate"] == pytest.approx(1 - rob["estimate"])
    assert shift["ci_low"] > 0 and shift["q"] < 0.05 and shift["null_value"] == 0
    assert cites["authority"]["shift"]["items_away"] == 0


def coin(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """A sampled judge: each call a fair coin between A and B (the n-th call of a prompt draws anew)."""
    return 200, {}, completion("AB"[hashlib.sha256(f"{prompt}{n}".encode()).digest()[0] % 2])


def test_a_sampled_judges_noise_is_not_called_bias(tmp_path, capsys, vendor):  # noqa: F811
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    srv = vendor(coin)
    assert main(["probe", "battery", "--judge", "openai/coin", "--base-url", srv.url, "--items", "60",
                 "--temperature", "0.7", "--quiet", "-w", ws]) == 0
    assert main(["audit", "--n-boot", "500", "-w", ws]) == 0
    j = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())["judges"]["openai/coin"]
    for bias in TEMPLATED:
        sec = j[bias]
        # CALM's robustness rate alone would call it biased everywhere: half its verdicts change ...
        assert 0.3 < sec["robustness"]["estimate"] < 0.7 and 0.3 < sec["null_robustness"]["estimate"] < 0.7
        # ... but no more than between two unperturbed runs
        assert not any(f.startswith(f"{bias}_bias") for f in j["flags"])
    # a challenge moves it about half the time, and so does agreeing with it: not manipulable
    sec = j["manipulability"]
    assert 0.3 < sec["flip_rate_challenged"]["estimate"] < 0.7 and 0.3 < sec["flip_rate_null"]["estimate"] < 0.7
    assert "manipulability_bias" not in j["flags"]


def contrary(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """The other taste: always the response the first judge does not pick."""
    return 200, {}, completion({"A": "B", "B": "A"}[_by_content(*_responses(prompt))])


def test_without_human_labels_each_judge_perturbs_the_response_it_did_not_prefer(tmp_path, capsys, vendor,  # noqa: F811
                                                                                 pandalm_ws):
    from judgecal.data.store import Workspace

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(pandalm_ws.items_repo.items(source="pandalm")[:12])  # real pairs, no human label
    for model, script in (("ignores", ignores), ("contrary", contrary)):
        srv = vendor(script)
        assert main(["probe", "authority", "--judge", f"openai/{model}", "--base-url", srv.url, "--quiet", "-w",
                     str(ws.path)]) == 0
        assert "the judge's unpreferred one on 12" in capsys.readouterr().out
    copies = [it for it in ws.items_repo.items(source="probe:perturbation") if it.metadata["bias"] == "authority"]
    sides = {(it.metadata["base_item"], it.metadata["side"]) for it in copies}
    assert len(copies) == 2 * 2 * 12 and len(sides) == 24  # each item perturbed on both sides, one per judge
    assert main(["audit", "--n-boot", "300", "-w", str(ws.path)]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    for model in ("ignores", "contrary"):
        m = rep["judges"][f"openai/{model}"]["metrics"]
        assert m["robustness_authority"]["n"] == 24 and m["robustness_authority"]["estimate"] == 1.0


def test_battery_refuses_what_it_cannot_use(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    capsys.readouterr()
    assert main(["probe", "battery", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1", "--budget", "17",
                 "-w", ws]) == 2
    err = capsys.readouterr().err.strip()
    assert "--budget 17: one item costs 22 judge calls" in err and "\n" not in err and "Traceback" not in err
    assert main(["probe", "padding", "--judge", "openai/m", "--budget", "40", "-w", ws]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["probe", "authority", "--judge", "openai/m", "--source", "nothing-here", "-w", ws]) == 2
    assert "no pairwise item with two responses in nothing-here" in capsys.readouterr().err
    assert main(["probe", "bandwagon", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1", "--rubric",
                 "pointwise-5", "-w", ws]) == 2
    assert "--rubric pointwise-5: a pointwise rubric; the bandwagon probe needs a pairwise one" in capsys.readouterr().err


def test_item_excess_hand_computed():
    from judgecal.audit.perturb import item_excess

    copies = perturbed_items(ITEMS[:2], {"q0": "B", "q1": "A"}, ("bandwagon", "chain_of_thought"))
    rows = [("q0", "AB", "A"), ("q0", "BA", "A"), ("q1", "AB", "B"), ("q1", "BA", "tie"),  # clean run
            ("q0#bandwagon-B-AB", "AB", "B"), ("q0#bandwagon-B-BA", "BA", "A"),  # toward, unchanged
            ("q1#bandwagon-A-AB", "AB", "B"), ("q1#bandwagon-A-BA", "BA", "B"),  # unchanged, away
            ("q0#chain_of_thought-AB", "AB", "B"), ("q0#chain_of_thought-BA", "BA", "A"),  # changed, unchanged
            ("q1#chain_of_thought-AB", "AB", "B"), ("q1#chain_of_thought-BA", "BA", "tie"),  # unchanged twice
            ("q0#null-B-AB", "AB", "A"), ("q0#null-B-BA", "BA", "tie"),  # unchanged, toward B
            ("q1#null-A-AB", "AB", "B"), ("q1#null-A-BA", "BA", "invalid")]  # q1's BA is not read in the null
    j = pd.DataFrame(rows, columns=["item_id", "order", "verdict"]).assign(sample=0)
    ex = item_excess(j, copies)
    # bandwagon, q0: AB (1 - 0), BA (0 - 1) -> 0; q1: AB only (0 - 0) -> 0 ... BA left out with the null unread
    assert ex["bandwagon"].to_dict() == {"q0": 0.0, "q1": 0.0}
    # chain of thought (no side): the null's share unchanged minus its own: q0 (1 - 0 + 0 - 1) / 2 = 0; q1 (1 - 1)
    assert ex["chain_of_thought"].to_dict() == {"q0": 0.0, "q1": 0.0}
    j.loc[j["item_id"] == "q1#null-A-BA", "verdict"] = "tie"  # now read: tie -> tie is unchanged
    ex = item_excess(j, copies)
    assert ex["bandwagon"]["q1"] == pytest.approx((0 + (-1 - 0)) / 2)
    assert ex["chain_of_thought"]["q1"] == 0.0 and list(ex["bandwagon"].index) == ["q0", "q1"]


def test_sequential_battery_uses_fewer_calls_with_the_same_flags(tmp_path, capsys, vendor):  # noqa: F811
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    budget = 150 * 22  # 150 items at fixed N
    used = {}
    for model, script in (("ignores", ignores), ("cites", prefers_cited)):
        srv = vendor(script)
        assert main(["probe", "battery", "--sequential", "--judge", f"openai/{model}", "--base-url", srv.url,
                     "--budget", str(budget), "--quiet", "-w", ws]) == 0
        out = capsys.readouterr().out
        rec = json.loads((tmp_path / "ws" / "reports" / "sequential.json").read_text())[f"openai/{model}"]
        used[model] = srv.total()
        assert rec["calls"] == srv.total() < budget == rec["fixed_calls"]  # what it recorded is what it called
        assert rec["items_planned"] == 150 and rec["items_used"] < 150
        decisions = {b: r["decision"] for b, r in rec["biases"].items()}
        want = {b: "flag" if (model, b) == ("cites", "authority") else "clear" for b in (*TEMPLATED, "manipulability")}
        assert decisions == want
        assert f"{rec['calls']} planned of the {budget}" in out and "authority: " + want["authority"] in out
        if model == "cites":  # settled early: the cited judge moves on about half its items
            auth = rec["biases"]["authority"]
            assert auth["items"] < rec["items_used"] and auth["ci_low"] > 0 and auth["calls"] == 2 * auth["items"]
    assert used["cites"] < used["ignores"]  # the flag settled before the clearances
    # the audit on the calls made raises the same flags as the fixed-N battery does
    assert main(["audit", "--n-boot", "500", "-w", ws]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    for model in ("ignores", "cites"):
        j = rep["judges"][f"openai/{model}"]
        bias_flags = [f for f in j["flags"] if any(f.startswith(b) for b in TEMPLATES)]
        assert bias_flags == ([] if model == "ignores" else ["authority_bias"])
    # a probe that judges every item refuses it in one line
    assert main(["probe", "padding", "--sequential", "--judge", "openai/m", "-w", ws]) == 2
    assert "--sequential: for a template probe or battery" in capsys.readouterr().err
