"""CALM's data-based sets: `judgecal import calm` from the mirror (counts checked against the files themselves), bad
records named by file, line and field, the perturbed copies reading the published rewrites, and the sentiment and
fallacy-oversight probes end to end against deterministic judges served over the OpenAI-compatible API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_hardening_engine import completion, vendor  # noqa: F401 - the fixture
from test_perturbation_probes import _by_content, _responses

from judgecal.audit.perturb import TEMPLATED, TEMPLATES, perturb, perturbed_items
from judgecal.cli import main
from judgecal.data import calm
from judgecal.data.calm import load_calm
from judgecal.data.store import Workspace

ROOT = "Y0oMu/LLM-Judge-Bias-Dataset"
SENT = ("cheerful", "sad", "angry", "fear")


def _read(mirror: Path, name: str) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((mirror / ROOT / name).read_text("utf-8"))
    return data


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return r["question"], r["answer1"], r["answer2"]


def test_import_counts_match_the_files(tmp_path, capsys, mirror):
    fact, align = _read(mirror, calm.BASE["fact"]), _read(mirror, calm.BASE["alignment"])
    refine = _read(mirror, calm.BASE["refinement"])
    sentiment = _read(mirror, "bias_datasets/sentiment_bias_standardized.json")
    fallacy = _read(mirror, "bias_datasets/fallacy_oversight_bias_standardized.json")
    authority = _read(mirror, "bias_datasets/authority_bias_standardized.json")
    assert set(calm.FILES) == {*calm.BASE.values(), *(f for f, _, _ in calm.REWRITES.values()), calm.REFINEMENT_FILE}
    fact_keys = {_key(r) for r in fact}
    assert (len(fact), len(align), len(refine)) == (500, 439, 150)
    unmatched = sum(_key(r) not in fact_keys for r in fallacy)
    sent_partial = sum(any(f"answer{k}_{t}" not in r for k in (1, 2) for t in SENT) for r in sentiment)
    cited = [r for r in authority if any("_with_reference_" in k for k in r)]
    assert (unmatched, sent_partial, len(authority) - len(cited)) == (33, 6, 5)

    ws = str(tmp_path / "ws")
    assert main(["import", "calm", "-w", ws]) == 0
    out = capsys.readouterr().out
    assert "imported calm: 1089 items, 1089 human labels" in out
    assert f"fallacy_oversight: records matching no pair (skipped): {unmatched}" in out
    assert f"sentiment: records with some rewrites missing (kept): {sent_partial}" in out
    assert f"authority: records with no rewrite (skipped): {len(authority) - len(cited)}" in out
    assert f"authority: pairs with rewrites: {len(cited)}" in out
    w = Workspace(Path(ws))
    items = {it.item_id: it for it in w.items_repo.items()}
    assert sum(i.startswith("calm/fact/") for i in items) == 500 and sum(i.startswith("calm/alignment/") for i in items) == 439
    first = items["calm/fact/0"]
    assert (first.prompt, [c.text for c in first.candidates]) == (fact[0]["question"], [fact[0]["answer1"], fact[0]["answer2"]])
    s0 = next(r for r in sentiment if _key(r) == _key(fact[0]))
    assert first.metadata["rewrites"]["sentiment"]["B"]["cheerful"] == s0["answer2_cheerful"]
    ref = items["calm/refinement/7"]  # the polished answer is the chosen one, shown as A
    assert [c.text for c in ref.candidates] == [refine[7]["answer1_polished"], refine[7]["answer1"]]
    labels = w.annotations_repo.annotations_frame()
    assert len(labels) == 1089 and set(labels["label"]) == {"A"}  # answer1 is the chosen / correct one
    with_fallacy = sum("fallacy_oversight" in it.metadata.get("rewrites", {}) for it in items.values())
    assert with_fallacy == len(fallacy) - unmatched


def test_one_set_and_a_set_of_another_dataset(tmp_path, capsys):
    ws = str(tmp_path / "ws")
    assert main(["import", "calm", "--set", "refinement", "-w", ws]) == 0
    assert "150 items" in capsys.readouterr().out
    assert main(["import", "pandalm", "--set", "fact", "-w", ws]) == 2
    err = capsys.readouterr().err
    assert "--set chooses CALM's sets" in err and "Traceback" not in err


@pytest.mark.parametrize(("field", "value", "words"), [("answer2", None, "answer2: missing"),
                                                       ("answer1", 5, "answer1: expected text, got int")])
def test_a_bad_record_is_named_by_file_line_and_field(tmp_path, capsys, monkeypatch, mirror, field, value, words):
    files = {f: mirror / ROOT / f for f in calm.FILES}
    rows = _read(mirror, calm.BASE["fact"])
    if value is None:
        del rows[3][field]
    else:
        rows[3][field] = value
    bad = tmp_path / "fact_related_dataset.json"
    bad.write_text(json.dumps(rows, indent=1), "utf-8")
    line = [n for n, s in enumerate(bad.read_text().splitlines(), 1) if s == " {"][3]  # the fourth record's line
    monkeypatch.setattr(calm, "fetch", lambda name, offline=False: {**{str(k): v for k, v in files.items()},
                                                                     calm.BASE["fact"]: bad})
    assert main(["import", "calm", "--set", "fact", "-w", str(tmp_path / "ws")]) != 0
    err = capsys.readouterr().err
    assert f"{bad}:{line}: {words}" in err and "Traceback" not in err
    assert not (tmp_path / "ws" / "judgecal.sqlite").exists() or Workspace(tmp_path / "ws").items_repo.items() == []


def test_copies_read_the_published_rewrites(mirror):
    ds = load_calm(("fact", "alignment"))
    item = next(it for it in ds.items if "sentiment" in it.metadata.get("rewrites", {}))
    rw = item.metadata["rewrites"]
    sad = perturb(item, "sentiment", "B", "AB")  # cheerful on the perturbed (rejected) side, a negative tone on A
    assert sad.candidates[1].text == rw["sentiment"]["B"]["cheerful"]
    assert sad.candidates[0].text in {rw["sentiment"]["A"][t] for t in SENT[1:]}
    assert sad.metadata["perturbation"] == "published" and "rewrites" not in sad.metadata
    fallacy = perturbed_items([item], {item.item_id: "B"}, ("fallacy_oversight", "bandwagon"))
    broken = [c for c in fallacy if c.metadata["bias"] == "fallacy_oversight"]
    assert {c.metadata["side"] for c in broken} == {"A"}  # on the correct answer, whatever the pair's side
    assert broken[0].candidates[0].text == rw["fallacy_oversight"]["A"]["fallacy"]
    assert broken[0].candidates[1].text == item.candidates[1].text
    template = next(c for c in fallacy if c.metadata["bias"] == "bandwagon")
    assert template.metadata["perturbation"] == "template" and "90% of people" in template.prompt
    cited = next(it for it in ds.items if "authority" in it.metadata.get("rewrites", {}))
    copy = perturb(cited, "authority", "B", "BA")
    assert copy.candidates[1].text in cited.metadata["rewrites"]["authority"]["B"].values()
    plain = next(it for it in ds.items if not it.metadata.get("rewrites"))
    assert perturbed_items([plain], {plain.item_id: "B"}, ("sentiment", "fallacy_oversight")) == [
        c for c in perturbed_items([plain], {plain.item_id: "B"}, ()) if c.metadata["bias"] == "null"]


def _tables(mirror: Path) -> tuple[dict[str, str], set[str], set[str], set[str]]:
    """Every rewrite's original text, the cheerful rewrites, the fallacious ones and the longer ones, read from the
    files."""
    orig: dict[str, str] = {}
    cheerful: set[str] = set()
    for r in _read(mirror, "bias_datasets/sentiment_bias_standardized.json"):
        for k in (1, 2):
            for t in SENT:
                if f"answer{k}_{t}" in r:
                    orig[r[f"answer{k}_{t}"]] = r[f"answer{k}"]
            cheerful.add(r.get(f"answer{k}_cheerful", ""))
    fallacy = set()
    for r in _read(mirror, "bias_datasets/fallacy_oversight_bias_standardized.json"):
        orig[r["answer1_fallacy_oversight"]] = r["answer1"]
        fallacy.add(r["answer1_fallacy_oversight"])
    longer = set()
    for r in _read(mirror, "bias_datasets/verbosity_bias_standardized.json"):
        orig[r["answer2_longer"]] = r["answer2"]
        longer.add(r["answer2_longer"])
    return orig, cheerful - {""}, fallacy, longer


def _judges(mirror: Path) -> dict[str, Any]:
    orig, cheerful, fallacy, longer = _tables(mirror)

    def blind(a: str, b: str) -> str:  # its own taste, blind to every rewrite and template
        return _by_content(orig.get(a, a), orig.get(b, b))

    def sound(a: str, b: str) -> str:  # blind to tone, but a broken argument loses
        return ("B" if a in fallacy else "A") if (a in fallacy) != (b in fallacy) else blind(a, b)

    def cheery(a: str, b: str) -> str:  # sound, except that a cheerful answer wins
        return ("A" if a in cheerful else "B") if (a in cheerful) != (b in cheerful) else sound(a, b)

    def wordy(a: str, b: str) -> str:  # sound, except that the longer rewrite wins
        return ("A" if a in longer else "B") if (a in longer) != (b in longer) else sound(a, b)

    def serve(rule: Any) -> Any:
        return lambda prompt, headers, n: (200, {}, completion(rule(*_responses(prompt))))
    return {"sound": serve(sound), "cheerful": serve(cheery), "overlooks": serve(blind), "wordy": serve(wordy)}


def test_sentiment_and_fallacy_flags_on_real_pairs(tmp_path, capsys, vendor, mirror):  # noqa: F811
    ds = load_calm(("fact",))
    rw = {it.item_id: set(it.metadata.get("rewrites", {})) for it in ds.items}
    # the 150 pairs with the sentiment rewrites, and pairs with the fallacy one only until 180 carry it
    keep = [i for i, r in rw.items() if "sentiment" in r]
    keep += [i for i, r in rw.items() if r == {"fallacy_oversight", "verbosity"}][:180 - sum(
        "fallacy_oversight" in rw[i] for i in keep)]
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items([it for it in ds.items if it.item_id in keep])
    ws.annotations_repo.add_annotations([a for a in ds.annotations if a.item_id in set(keep)])
    n = len(keep)
    assert sum("sentiment" in rw[i] for i in keep) == 150 and sum("fallacy_oversight" in rw[i] for i in keep) == 180
    published = {TEMPLATES[b].key or b for b in TEMPLATES if TEMPLATES[b].data_only}
    assert published == {"sentiment", "fallacy_oversight", "verbosity"}
    assert sum("verbosity" in rw[i] for i in keep) >= 100
    # each item: its clean and second unperturbed runs and each perturbation it carries, both orders, and the
    # battery's challenge and agreeing turn after each clean verdict (manipulability)
    calls = sum(2 * (2 + len(TEMPLATED) + len(rw[i] & published)) + 4 for i in keep)
    for model, script in _judges(mirror).items():
        srv = vendor(script)
        assert main(["probe", "battery", "--judge", f"openai/{model}", "--base-url", srv.url, "--quiet", "-w",
                     str(ws.path)]) == 0
        assert srv.total() == calls
        assert f"over {n} items" in capsys.readouterr().out
    assert main(["audit", "--n-boot", "500", "-w", str(ws.path)]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    want = {"sound": [], "cheerful": ["sentiment_bias"], "overlooks": ["fallacy_oversight_bias"],
            "wordy": ["verbosity_rewrite_bias"]}
    for model, flags in want.items():
        j = rep["judges"][f"openai/{model}"]
        bias_flags = [f for f in j["flags"] if any(f.startswith(b) for b in TEMPLATES)]
        assert bias_flags == flags, model
        for bias in TEMPLATES:
            m = sum((TEMPLATES[bias].key or bias) in rw[i] for i in keep) if TEMPLATES[bias].data_only else n
            assert j["metrics"][f"robustness_{bias}"]["n"] == 2 * m and j[bias]["null_robustness"]["estimate"] == 1.0
        tested = {b["probe"]: b["status"] for b in j["biases"]}
        assert tested["sentiment"] == tested["fallacy_oversight"] == tested["verbosity_rewrite"] == "tested"
    cheer = rep["judges"]["openai/cheerful"]["metrics"]["shift_sentiment"]
    assert cheer["estimate"] > 0.05 and cheer["ci_low"] > 0 and cheer["q"] < 0.05
    # the wordy judge moves to the longer wrong answer wherever it preferred the other; the sound one never does
    wordy = rep["judges"]["openai/wordy"]
    moved = wordy["metrics"]["shift_verbosity_rewrite"]
    assert moved["estimate"] > 0.05 and moved["ci_low"] > 0 and moved["q"] < 0.05
    assert wordy["verbosity_rewrite"]["shift"]["items_away"] == 0
    assert rep["judges"]["openai/sound"]["metrics"]["shift_verbosity_rewrite"]["estimate"] == 0
    # the blind judge keeps the broken answer wherever it preferred it; the sound one moves away every time it can
    over = rep["judges"]["openai/overlooks"]
    assert over["metrics"]["shift_fallacy_oversight"]["estimate"] == 0 and over["fallacy_oversight"]["shift"]["items_away"] == 0
    sound = rep["judges"]["openai/sound"]["metrics"]["shift_fallacy_oversight"]
    assert sound["estimate"] < -0.05 and sound["ci_high"] < 0
    prof = {b["probe"]: b for b in rep["judges"]["openai/overlooks"]["biases"]}
    assert prof["fallacy_oversight"]["flagged"] and not prof["sentiment"]["flagged"]


def test_battery_without_the_rewrites_says_they_are_not_tested(tmp_path, capsys, vendor, pandalm_ws):  # noqa: F811
    ws = Workspace(tmp_path / "ws")
    ws.items_repo.add_items(pandalm_ws.items_repo.items(source="pandalm")[:4])
    srv = vendor(lambda prompt, headers, n: (200, {}, completion(_by_content(*_responses(prompt)))))
    assert main(["probe", "battery", "--judge", "openai/m", "--base-url", srv.url, "--quiet", "-w", str(ws.path)]) == 0
    assert "not tested: sentiment, fallacy_oversight, verbosity_rewrite" in capsys.readouterr().out
    assert main(["probe", "sentiment", "--judge", "openai/m", "--base-url", srv.url, "-w", str(ws.path)]) == 2
    assert "judgecal import calm --set fact" in capsys.readouterr().err
    assert main(["audit", "--n-boot", "200", "-w", str(ws.path)]) == 0
    rep = json.loads((tmp_path / "ws" / "reports" / "audit.json").read_text())
    prof = {b["probe"]: b for b in rep["judges"]["openai/m"]["biases"]}
    assert prof["sentiment"]["status"] == "not tested" and "import calm" in prof["sentiment"]["how_to_run"]
