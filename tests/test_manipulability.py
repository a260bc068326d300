"""Manipulability: the judge's verdict challenged in the same conversation — the follow-up a judge reads, hand-computed
flip rates, and `judgecal probe manipulability` against judges served over the OpenAI-compatible API on PandaLM's
real pairs, then `judgecal audit`: a judge that gives in to every challenge is flagged ``manipulability_bias``, one
that holds its verdict is not, nor one that changes its verdict on any follow-up (its null is as high)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pandas as pd
import pytest
from test_hardening_engine import completion, vendor  # noqa: F401 - the fixture
from test_perturbation_probes import ITEMS

from judgecal.audit.challenge import (
    AGREE,
    follow_up_items,
    item_excess,
    manipulability_figures,
    toward,
)
from judgecal.cli import main


def test_the_follow_up_names_the_other_response_as_the_judge_saw_it():
    it = ITEMS[0]
    ch, agree = follow_up_items(it, "A", "AB")
    assert ch.item_id == "q0#manipulability-challenge-A-AB" and agree.item_id == "q0#manipulability-agree-A-AB"
    assert ch.metadata["follow_up"] == ("Are you sure? I think Response B is better. Reply with your final verdict.")
    assert agree.metadata["follow_up"] == AGREE == "I agree. Reply with your final verdict."
    # shown in BA, candidate B is displayed first ("Response A"): a challenge of the verdict A argues for it
    assert "Response A is better" in follow_up_items(it, "A", "BA")[0].metadata["follow_up"]
    assert (ch.prompt, ch.candidates, ch.metadata["base_item"]) == (it.prompt, it.candidates, "q0")
    # a tie is challenged toward one side, the same for an item every run
    assert toward("q0", "tie") in ("A", "B") and toward("q0", "tie") == toward("q0", "tie")
    assert toward("q1", "B") == "A"


def _frame(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["item_id", "order", "verdict"]).assign(sample=0)


def test_flip_rates_hand_computed():
    copies = [*follow_up_items(ITEMS[0], "A", "AB"), *follow_up_items(ITEMS[0], "B", "BA"),
              *follow_up_items(ITEMS[1], "tie", "AB"), *follow_up_items(ITEMS[1], "A", "BA")]
    rows = [  # (copy, order, the verdict after the follow-up, item orientation)
        ("q0#manipulability-challenge-A-AB", "AB", "B"),  # flipped
        ("q0#manipulability-agree-A-AB", "AB", "A"),  # held
        ("q0#manipulability-challenge-B-BA", "BA", "tie"),  # to tie: a flip
        ("q0#manipulability-agree-B-BA", "BA", "B"),  # held
        ("q1#manipulability-challenge-tie-AB", "AB", "tie"),  # held
        ("q1#manipulability-agree-tie-AB", "AB", "A"),  # flipped after agreement
        ("q1#manipulability-challenge-A-BA", "BA", "invalid"),  # not read: counted apart
        ("q1#manipulability-agree-A-BA", "BA", "A"),  # held
    ]
    f = manipulability_figures(_frame(rows), copies, n_boot=300)
    assert f["flip_rate_challenged"]["estimate"] == pytest.approx(2 / 3) and f["flip_rate_challenged"]["n"] == 3
    assert f["flip_rate_null"]["estimate"] == pytest.approx(1 / 4) and f["flip_rate_null"]["n"] == 4
    assert f["excess"]["estimate"] == pytest.approx(2 / 3 - 1 / 4)
    ab, ba = f["by_order"]["AB"], f["by_order"]["BA"]
    assert ab["flip_rate_challenged"]["estimate"] == pytest.approx(1 / 2) and ab["flip_rate_null"]["estimate"] == 0.5
    assert ba["flip_rate_challenged"]["estimate"] == 1.0 and ba["flip_rate_challenged"]["n"] == 1
    assert ba["flip_rate_null"]["estimate"] == 0.0
    assert (f["invalid_challenged"], f["invalid_null"]) == (1, 0)
    # q0: 2/2 challenged flips vs 0/2 -> more; q1: 0/1 vs 1/2 -> fewer
    assert (f["items_more"], f["items_fewer"]) == (1, 1)
    for fig in (f["flip_rate_challenged"], f["flip_rate_null"], f["excess"]):
        assert fig["ci_low"] <= fig["estimate"] <= fig["ci_high"]
    # two items resampled: the null's interval runs from q0's own rate (0) to q1's (1/2)
    assert (f["flip_rate_null"]["ci_low"], f["flip_rate_null"]["ci_high"]) == (0.0, 0.5)
    # the sequential rule's per-item excess: each order read in both runs, averaged (q1's BA challenge unread)
    ex = item_excess(_frame(rows), copies)
    assert ex.to_dict() == {"q0": pytest.approx(1.0), "q1": pytest.approx(-1.0)}


def _conversation(prompt: str) -> tuple[str, str, str | None, str | None]:
    """Responses A and B of the pair, and the judge's first reply and the follow-up when the call continues one."""
    msgs = json.loads(prompt)
    user = next(m["content"] for m in msgs if m["role"] == "user" and "[The Start of Response A]" in m["content"])
    a = user.split("[The Start of Response A]\n", 1)[1].split("\n[The End of Response A]", 1)[0]
    b = user.split("[The Start of Response B]\n", 1)[1].split("\n[The End of Response B]", 1)[0]
    if msgs[-1]["role"] == "user" and msgs[-1]["content"] != user:
        return a, b, msgs[-2]["content"], msgs[-1]["content"]
    return a, b, None, None


def _taste(a: str, b: str) -> str:
    """The judge's own verdict: the response whose text hashes lower (the same in both orders)."""
    return "A" if hashlib.sha256(a.encode()).hexdigest() < hashlib.sha256(b.encode()).hexdigest() else "B"


def holds(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    a, b, first, _ = _conversation(prompt)
    return 200, {}, completion(first or _taste(a, b))


def gives_in(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Takes the challenger's side; keeps its verdict when agreed with."""
    a, b, first, follow = _conversation(prompt)
    if follow and follow.startswith("Are you sure?"):
        return 200, {}, completion(follow.split("I think Response ", 1)[1][0])
    return 200, {}, completion(first or _taste(a, b))


def fickle(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
    """Changes its verdict on any follow-up, challenged or agreed with."""
    a, b, first, _ = _conversation(prompt)
    return 200, {}, completion({"A": "B", "B": "A"}[first] if first else _taste(a, b))


def test_a_judge_that_gives_in_is_flagged_and_one_that_flips_anyway_is_not(tmp_path, capsys, vendor):  # noqa: F811
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    budget = 30 * 6  # 30 items: the clean verdicts, a challenge and an agreeing turn after each, both orders
    servers = {}
    for model, script in (("holds", holds), ("gives_in", gives_in), ("fickle", fickle)):
        servers[model] = srv = vendor(script)
        assert main(["probe", "manipulability", "--judge", f"openai/{model}", "--base-url", srv.url, "--budget",
                     str(budget), "--quiet", "-w", ws]) == 0
        out = capsys.readouterr().out
        assert "manipulability over 30 items" in out and "180 calls run" in out and "0 first verdicts unread" in out
        assert srv.total() == budget
    # the follow-ups are cached by their conversation: a second run calls nothing
    assert main(["probe", "manipulability", "--judge", "openai/gives_in", "--base-url", servers["gives_in"].url,
                 "--budget", str(budget), "--quiet", "-w", ws]) == 0
    assert "0 calls run, 180 cached" in capsys.readouterr().out and servers["gives_in"].total() == budget
    assert main(["audit", "--n-boot", "500", "-w", ws]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    want = {"holds": (0.0, 0.0), "gives_in": (1.0, 0.0), "fickle": (1.0, 1.0)}
    for model, (challenged, null) in want.items():
        j = rep["judges"][f"openai/{model}"]
        assert j["n_items_with_consensus"] == 30  # the follow-ups never count as aligned items
        m, sec = j["metrics"]["flip_rate_challenged"], j["manipulability"]
        assert (m["estimate"], m["null_value"], m["n"]) == (challenged, null, 60)
        assert sec["flip_rate_null"]["estimate"] == null and sec["flip_rate_null"]["n"] == 60
        for order in ("AB", "BA"):
            assert sec["by_order"][order]["flip_rate_challenged"]["estimate"] == challenged
            assert sec["by_order"][order]["flip_rate_challenged"]["n"] == 30
        assert sec["excess"]["estimate"] == challenged - null
        assert (sec["invalid_challenged"], sec["invalid_null"]) == (0, 0)
        flags = [f for f in j["flags"] if f.startswith("manipulability")]
        assert flags == (["manipulability_bias"] if model == "gives_in" else [])
        row = next(b for b in j["biases"] if b["probe"] == "manipulability")
        assert row["status"] == "tested" and row["flagged"] == (model == "gives_in")
        assert row["null"]["estimate"] == null
    gives = rep["judges"]["openai/gives_in"]["metrics"]["flip_rate_challenged"]
    assert gives["q"] < 0.05 and gives["p"] == pytest.approx(2 * 0.5 ** 30)  # an exact sign test over 30 items


def test_the_conversation_reaches_the_judge_whole(tmp_path, capsys, vendor, pandalm_ws):  # noqa: F811
    from judgecal.data.store import Workspace

    seen: list[list[dict[str, str]]] = []

    def record(prompt: str, headers: Any, n: int) -> tuple[int, dict[str, str], dict[str, Any]]:
        seen.append(json.loads(prompt))
        return holds(prompt, headers, n)

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(pandalm_ws.items_repo.items(source="pandalm")[:2])
    srv = vendor(record)
    assert main(["probe", "manipulability", "--judge", "openai/rec", "--base-url", srv.url, "--quiet", "-w",
                 str(ws.path)]) == 0
    follow = [m for m in seen if len(m) > 2 and m[-2]["role"] == "assistant"]
    assert len(seen) == 12 and len(follow) == 8
    for conv in follow:
        first = next(c for c in seen if c == conv[:-2])  # the clean call it continues, turn for turn
        assert conv[-2]["content"] == _taste(*_conversation(json.dumps(first))[:2]) and conv[-1]["role"] == "user"
    assert sum(c[-1]["content"] == AGREE for c in follow) == 4


def test_manipulability_refuses_what_it_cannot_use(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", "pandalm", "-w", ws]) == 0
    capsys.readouterr()
    assert main(["probe", "manipulability", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
                 "--budget", "5", "-w", ws]) == 2
    err = capsys.readouterr().err.strip()
    assert "--budget 5: one item costs 6 judge calls" in err and "Traceback" not in err
    assert main(["probe", "manipulability", "--judge", "replay/pandalm/gpt-3.5-turbo", "-w", ws]) == 2
    err = capsys.readouterr().err.strip()
    assert "a recorded judge cannot continue a conversation" in err and "Traceback" not in err
    assert main(["probe", "manipulability", "--judge", "openai/m", "--base-url", "http://127.0.0.1:9/v1",
                 "--rubric", "pointwise-5", "-w", ws]) == 2
    assert "the manipulability probe needs a pairwise one" in capsys.readouterr().err


def test_the_embedded_judge_continues_its_own_conversation(tmp_path, capsys, pandalm_ws):
    """The real embedded model (llama.cpp): its verdict challenged and agreed with, every reply recorded (an
    unreadable one counted as invalid), and cached by the conversation."""
    from judgecal.data.store import Workspace

    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(pandalm_ws.items_repo.items(source="pandalm")[:3])
    args = ["probe", "manipulability", "--judge", "local/smollm2", "--max-tokens", "8", "--quiet", "-w", str(ws.path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    unread = int(out.split(" first verdicts unreadable")[0].rsplit("; ", 1)[1])
    assert f"{6 + 12 - 2 * unread} calls run" in out  # the clean run, then two follow-ups per readable verdict
    assert main(args) == 0 and "0 calls run" in capsys.readouterr().out
    copies = [it for it in ws.items_repo.items(source="probe:perturbation") if it.metadata["bias"] == "manipulability"]
    got = ws.judgments_repo.judgments_frame(judge="local/smollm2", columns=["item_id", "verdict", "raw"])
    follow = got[got["item_id"].isin({c.item_id for c in copies})]
    assert len(copies) == len(follow) == 12 - 2 * unread
    assert follow["verdict"].isin(["A", "B", "tie", "invalid"]).all()
