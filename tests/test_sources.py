"""Label sources: PandaLM's own annotators and Label Studio experts are never pooled silently; the audit's
truth is named (method, source, annotators) and agreement is computed per source."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from conftest import copy_workspace
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from judgecal.aggregate.consensus import compute_consensus
from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.cli import main
from judgecal.data.records import Annotation
from judgecal.data.sources import SourceError, label_kind, select, split_name

EXPERTS = "label-studio:Blind review"
JUDGE = "replay/pandalm/gpt-3.5-turbo"


def _expert_labels() -> dict[str, list[str]]:
    """Three experts on 40 PandaLM items: item 497 as reported (tie, B, tie), the rest unanimous."""
    labels = {"pandalm/497": ["tie", "B", "tie"]}
    for i in range(39):
        labels[f"pandalm/{i}"] = [("B", "tie", "A")[i % 3]] * 3
    return labels


@pytest.fixture(scope="module")
def mixed_ws(pandalm_ws, tmp_path_factory):
    ws = copy_workspace(pandalm_ws, tmp_path_factory.mktemp("sources") / "ws")
    ws.annotations_repo.add_annotations([Annotation(item, f"expert{k}@example.org", lab, "AB", 12.0, EXPERTS, f"ls:1:{item}:{k}")
                        for item, labs in _expert_labels().items() for k, lab in enumerate(labs)])
    yield ws
    ws.close()


def test_selectors_name_sources_and_aliases():
    ann = pd.DataFrame({"item_id": list("abcdef"), "label": list("AAAAAA"),
                        "annotator": ["p1", "p2", "e1", "e2", "llmbar-gold", "x"],
                        "source": ["pandalm", "pandalm", EXPERTS, "label-studio:Other", "llmbar/Natural", "gold"]})
    assert label_kind(ann["source"], ann["annotator"]).tolist() == ["dataset", "dataset", "experts", "experts",
                                                                    "gold", "gold"]
    assert select(ann, "experts")["item_id"].tolist() == ["c", "d"]
    assert select(ann, "dataset")["item_id"].tolist() == select(ann, "crowd")["item_id"].tolist() == ["a", "b"]
    assert select(ann, "gold")["item_id"].tolist() == ["e", "f"]
    assert select(ann, EXPERTS)["item_id"].tolist() == ["c"]
    assert len(select(ann, "all")) == 6
    with pytest.raises(SourceError, match="no human labels from source 'nobody'.*pandalm"):
        select(ann, "nobody")
    assert split_name("ds:label-studio:Blind review") == ("ds", EXPERTS)
    assert split_name("mv") == ("mv", None)


def test_item_497_per_source_consensus(mixed_ws):
    counts = compute_consensus(mixed_ws, ("ds", "mv"))  # two sources, none chosen: each on its own
    assert counts == {f"ds:{EXPERTS}": 40, f"mv:{EXPERTS}": 40, "ds:pandalm": 999, "mv:pandalm": 999}
    assert mixed_ws.annotations_repo.consensus_frame(f"ds:{EXPERTS}").set_index("item_id").loc["pandalm/497", "label"] == "tie"
    own = mixed_ws.annotations_repo.consensus_frame("ds:pandalm").set_index("item_id").loc["pandalm/497"]
    assert own["label"] == "A" and json.loads(own["posterior"])["A"] > 0.99
    # the pooled consensus (the old default) only on request: there the crowd outvotes the experts
    compute_consensus(mixed_ws, ("ds",), source="all")
    assert mixed_ws.annotations_repo.consensus_frame("ds:all").set_index("item_id").loc["pandalm/497", "label"] == "A"
    compute_consensus(mixed_ws, ("ds",), source="experts")
    experts = mixed_ws.annotations_repo.consensus_frame("ds:experts").set_index("item_id")["label"]
    assert experts["pandalm/497"] == "tie" and len(experts) == 40
    assert all(experts[i] == labs[0] for i, labs in _expert_labels().items() if i != "pandalm/497")


def test_audit_against_the_experts_uses_their_labels_only(mixed_ws, tmp_path):
    compute_consensus(mixed_ws, ("ds",), source="experts")
    rep = audit_workspace(mixed_ws, AuditOptions(consensus="ds:experts", n_boot=200)).to_json()
    truth = mixed_ws.annotations_repo.consensus_frame("ds:experts").set_index("item_id")["label"]
    j = mixed_ws.judgments_repo.judgments_frame(JUDGE)
    j = j[j["item_id"].isin(truth.index)]
    expected = (j["verdict"].replace({"invalid": "tie"}).to_numpy() == truth.reindex(j["item_id"]).to_numpy()).mean()
    m = rep["judges"][JUDGE]["metrics"]["accuracy"]
    assert m["n"] == 40 and m["estimate"] == pytest.approx(expected, abs=1e-12)
    assert rep["judges"][JUDGE]["n_items_with_consensus"] == 40
    c = rep["consensus"]
    assert (c["method"], c["aggregator"], c["source"], c["sources"]) == ("ds:experts", "ds", "experts", [EXPERTS])
    assert (c["n_items"], c["n_annotators"], c["n_labels"]) == (40, 3, 120)
    assert rep["settings"]["consensus"] == "ds:experts" and rep["settings"]["truth_source"] == "experts"
    # the same workspace against PandaLM's own annotators: 999 items, another accuracy
    compute_consensus(mixed_ws, ("ds",), source="pandalm")
    own = audit_workspace(mixed_ws, AuditOptions(consensus="ds:pandalm", n_boot=200)).to_json()
    assert own["consensus"]["n_annotators"] == 3 and own["consensus"]["sources"] == ["pandalm"]
    assert own["judges"][JUDGE]["metrics"]["accuracy"]["n"] == 999


def test_plain_method_refuses_to_pool_sources(mixed_ws, tmp_path, capsys):
    with pytest.raises(SourceError, match="2 sources"):
        audit_workspace(mixed_ws, AuditOptions(consensus="ds", n_boot=50)).to_json()
    ws = str(mixed_ws.path)
    assert main(["audit", "-w", ws, "--n-boot", "50", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "ds:pandalm" in err and f"ds:{EXPERTS}" in err and "\n" not in err.strip()
    assert main(["aggregate", "-w", ws, "--source", "nobody"]) == 2
    assert "no human labels from source 'nobody'" in capsys.readouterr().err


def test_cli_names_the_truth_in_every_report(mixed_ws, tmp_path, capsys):
    ws, out = str(mixed_ws.path), tmp_path / "rep"
    assert main(["aggregate", "-w", ws, "--method", "ds", "--source", "experts"]) == 0
    assert "ds:experts: 40 items" in capsys.readouterr().out
    assert main(["audit", "-w", ws, "--consensus", "ds:experts", "--n-boot", "100", "--out", str(out)]) == 0
    term = " ".join(capsys.readouterr().out.split())  # as read, whatever the terminal's width
    assert "truth: ds of source experts (label-studio:Blind review): 3 annotators, 120 labels on 40 items" in term
    rep = json.loads((out / "audit.json").read_text())
    assert rep["consensus"]["source"] == "experts" and rep["consensus"]["fleiss_kappa"]["n"] == 40
    html = " ".join(re.sub(r"<[^>]+>", "", (out / "audit.html").read_text()).split())  # the text a reader sees
    assert "consensus ds:experts over 40 items, labels of source experts by 3 annotators (120 labels)" in html
    # a consensus not yet stored is computed for the named source
    assert main(["audit", "-w", ws, "--consensus", "mv:pandalm", "--n-boot", "50", "--out", str(out)]) == 0
    assert json.loads((out / "audit.json").read_text())["consensus"]["n_items"] == 999


def _statsmodels_kappa(ann: pd.DataFrame) -> float:
    wide = ann.pivot_table(index="item_id", columns="annotator", values="label", aggfunc="first")
    codes = wide.apply(lambda col: col.map({"A": 0, "B": 1, "tie": 2})).to_numpy(dtype=int)
    return float(sm_fleiss(aggregate_raters(codes)[0]))


def test_annotators_agreement_per_source(mixed_ws, tmp_path, capsys):
    ws = str(mixed_ws.path)
    assert main(["annotators", "-w", ws, "--n-boot", "100", "--out", str(tmp_path / "all.json")]) == 0
    out = capsys.readouterr().out
    assert f"source {EXPERTS}:" in out and "source pandalm:" in out
    rep = json.loads((tmp_path / "all.json").read_text())["by_source"]
    ann = mixed_ws.annotations_repo.annotations_frame()
    for src in ("pandalm", EXPERTS):
        got = rep[src]["fleiss_kappa"]
        assert got["estimate"] == pytest.approx(_statsmodels_kappa(ann[ann["source"] == src]), abs=1e-9)
    assert rep["pandalm"]["fleiss_kappa"]["estimate"] == pytest.approx(0.864, abs=5e-4)
    assert set(rep[EXPERTS]["annotators"]) == {f"expert{k}@example.org" for k in range(3)}
    pooled = _statsmodels_kappa(ann[ann["item_id"].isin(_expert_labels())])
    assert not np.isclose(rep[EXPERTS]["fleiss_kappa"]["estimate"], pooled)
    assert main(["annotators", "-w", ws, "--source", "experts", "--n-boot", "100",
                 "--out", str(tmp_path / "e.json")]) == 0
    one = json.loads((tmp_path / "e.json").read_text())
    assert one["source"] == "experts" and one["fleiss_kappa"] == rep[EXPERTS]["fleiss_kappa"]


def test_one_source_keeps_the_plain_method_name(pandalm_ws):
    rep = audit_workspace(pandalm_ws, AuditOptions(consensus="ds", n_boot=50)).to_json()
    c = rep["consensus"]
    assert (c["method"], c["source"], c["sources"], c["n_annotators"]) == ("ds", "pandalm", ["pandalm"], 3)
