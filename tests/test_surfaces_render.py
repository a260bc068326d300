"""Surfaces only render: every figure they show is in the typed report, and they read it typed.

- The references a figure stands beside are computed once, in the audit, and stored: the consensus' chance
  accuracy ``Σ p_k²``, a stability figure's half-width ``1.96 σ``, a label part's trivial rater (against the
  consensus and like for like); an ``audit.json`` written before them gets them from what it holds.
- ``apps/`` and ``judgecal/report/`` read the typed report: no ``.get(`` on report data and no ``dict[str, Any]``
  annotation (the allow-lists below name each non-report use, with its reason).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from judgecal.audit.schema import AuditReport, read_report
from judgecal.report.labels import label_view
from judgecal.stats.trivial import chance_accuracy, majority_label, trivial_figures, trivial_rater

ROOT = Path(__file__).parents[1]
SURFACES = (ROOT / "apps", ROOT / "judgecal" / "report")
GOLDEN = Path(__file__).parent / "golden" / "pandalm-audit.json"

#: ``.get(`` on what is not report data: file -> receiver (``*``: every call in the file) -> why
GET_ALLOWED = {
    "apps/access.py": {"*": "ASGI middleware: the request's scope and headers"},
    "apps/serve.py": {"*": "ASGI middleware: the request's scope, headers and messages"},
    "apps/common.py": {"sys.modules": "the interpreter's loaded modules"},
    "apps/page_labels.py": {"st.session_state": "Streamlit's widget state",
                            "sets": "the store's label sets by item (a query of the workspace, not the report)"},
    "apps/page_overview.py": {"words": "the catalogue's flag words",
                              "order": "page one's rank of each judge, keyed by its place in audit.json"},
}
#: ``dict[str, Any]`` annotations on what is not report data: file -> why
DICT_ALLOWED: dict[str, str] = {}


def _sources() -> list[tuple[str, ast.Module]]:
    return [(str(p.relative_to(ROOT)), ast.parse(p.read_text("utf-8"))) for root in SURFACES
            for p in sorted(root.rglob("*.py"))]


def _annotations(tree: ast.Module) -> list[tuple[int, ast.expr]]:
    out: list[tuple[int, ast.expr]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
            out.append((node.lineno, node.annotation))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            out.append((node.lineno, node.returns))
    return out


def test_surfaces_call_no_get_on_report_data() -> None:
    """A ``.get(`` with a default hides a field the types do not name; the surfaces read attributes (or a typed
    mapping through :func:`judgecal.report.table.at`). Module constants (word and style tables, named in
    capitals) are not report data."""
    found = []
    for path, tree in _sources():
        allowed = GET_ALLOWED.get(path, {})
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"):
                continue
            receiver = ast.unparse(node.func.value)
            if "*" in allowed or receiver in allowed or receiver.isupper():
                continue
            found.append(f"{path}:{node.lineno}: {receiver}.get(")
    assert not found, "\n".join(found)


def test_surfaces_annotate_no_untyped_dicts() -> None:
    found = []
    for path, tree in _sources():
        if path in DICT_ALLOWED:
            continue
        for line, ann in _annotations(tree):
            for sub in ast.walk(ann):
                if isinstance(sub, ast.Subscript) and ast.unparse(sub).replace(" ", "") == "dict[str,Any]":
                    found.append(f"{path}:{line}: {ast.unparse(ann)}")
    assert not found, "\n".join(found)


def test_the_allow_lists_name_only_what_is_there() -> None:
    """An allow-list entry whose use is gone is removed, so the lists stay the exceptions they claim to be."""
    sources = dict(_sources())
    for path, receivers in GET_ALLOWED.items():
        used = {ast.unparse(n.func.value) for n in ast.walk(sources[path])
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get"}
        assert used, path
        assert set(receivers) - {"*"} <= used, path
    for path in DICT_ALLOWED:
        assert any(ast.unparse(s).replace(" ", "") == "dict[str,Any]" for _, a in _annotations(sources[path])
                   for s in ast.walk(a)), path


def test_no_report_model_judgecal_writes_keeps_unnamed_fields() -> None:
    """Every part of the report is closed, save the three meant to be extended by probes (a judge's probe sections, a
    metric's own fields, a probe's thresholds), and those type what they take: no part keeps a key as written."""
    import judgecal.audit.schema.models as models

    parts = [m for m in vars(models).values() if isinstance(m, type) and issubclass(m, AuditReport.__mro__[1])]
    assert len(parts) > 90
    open_ = {m for m in parts if m.model_config.get("extra") != "forbid"}
    assert open_ == {models.Judge, models.Thresholds} | {m for m in parts if issubclass(m, models.Figure)}, open_
    for m in open_:
        extra = next(c.__annotations__["__pydantic_extra__"] for c in m.__mro__
                     if "__pydantic_extra__" in getattr(c, "__annotations__", {}))
        assert "Any" not in str(extra) and ("Section" in str(extra) or "ThresholdValue" in str(extra)), (m, extra)


def test_a_key_no_part_names_is_refused_naming_it() -> None:
    from pydantic import ValidationError

    from judgecal.audit.schema.models import Annotator, Judge, Settings

    with pytest.raises(ValidationError, match="likely_spamer"):
        Annotator.model_validate({"n_labels": 3, "likely_spamer": True})  # a misspelt field is not kept
    settings = {"consensus": "ds", "truth_source": None, "invalid_as": "tie", "n_boot": 10, "seed": 0,
                "ci_level": 0.95, "bootstrap": "items"}
    with pytest.raises(ValidationError, match="n_bootstrap"):
        Settings.model_validate({**settings, "n_bootstrap": 3})
    judge = {"kind": "pairwise", "n_judgments": 2, "n_items": 1, "n_items_with_consensus": 1, "orders": ["AB"],
             "metrics": {}, "usage": {}, "flags": []}
    # a probe's section (a plugin's here): names to typed values, a figure read as one wherever it is
    got = Judge.model_validate({**judge, "my_probe": {"rate": {"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.4,
                                                                "n": 8}, "n_pairs": 8, "note": "x", "ok": True,
                                                       "by_order": [{"estimate": 0.5, "n": 4}]}})
    sec = got.section("my_probe")
    assert sec is not None and isinstance(sec["rate"], models_figure()) and sec["rate"].n == 8
    assert isinstance(sec["by_order"], list) and isinstance(sec["by_order"][0], models_figure())
    assert sec["n_pairs"] == 8 and type(sec["n_pairs"]) is int and sec["ok"] is True
    assert got.to_json()["my_probe"]["rate"] == {"estimate": 0.25, "ci_low": 0.1, "ci_high": 0.4, "n": 8}
    with pytest.raises(ValidationError, match="my_probe"):  # a section is a mapping
        Judge.model_validate({**judge, "my_probe": [1, 2]})
    with pytest.raises(ValidationError, match="my_probe"):  # of JSON values
        Judge.model_validate({**judge, "my_probe": {"when": object()}})


def models_figure() -> type:
    from judgecal.audit.schema.models import Figure

    return Figure


# -- the references, computed once ------------------------------------------------------------------------
def test_chance_accuracy_is_the_sum_of_squared_shares() -> None:
    assert chance_accuracy({"A": 6, "B": 3, "tie": 1}) == pytest.approx(0.36 + 0.09 + 0.01)
    assert chance_accuracy([5, 5]) == pytest.approx(0.5)
    assert chance_accuracy({"A": 0}) is None and chance_accuracy({}) is None


def test_the_trivial_rater_by_hand() -> None:
    """Always ``'a'`` on a truth of 6 a, 3 b, 1 c: accuracy 0.6, macro F1 = F1(a)/3 = (2·6/(2·6+4))/3 = 0.25,
    recall 1/0/0, precision 0.6 and undefined for the labels it never gives; κ 0."""
    got = trivial_figures(["a", "b", "c"], [6, 3, 1])
    assert got["accuracy"] == pytest.approx(0.6) and got["macro_f1"] == pytest.approx(0.25)
    assert got["cohen_kappa"] == 0.0 and got["recall_by_label.a"] == 1.0 and got["recall_by_label.b"] == 0.0
    assert got["precision_by_label.a"] == pytest.approx(0.6) and got["precision_by_label.c"] is None
    # binary, the commonest label is the negative one: TPR 0, TNR 1, precision undefined, F1 0
    binary = trivial_figures(["pass", "fail"], [2, 8], "binary", "pass")
    assert (binary["tpr"], binary["tnr"], binary["precision"], binary["f1"]) == (0.0, 1.0, None, 0.0)
    assert binary["balanced_accuracy"] == 0.5 and majority_label(["pass", "fail"], [2, 8]) == "fail"
    # a tie between the commonest labels: the first in the label set's order
    assert majority_label(["x", "y"], [4, 4]) == "x"
    assert trivial_figures(["x", "y"], [4, 0])["cohen_kappa"] is None  # the truth is one label: κ is 0/0
    assert trivial_rater(["x"], [0]) is None


def _label_judge(like_n: tuple[int, int] | None) -> dict[str, object]:
    labels: dict[str, object] = {"task": "binary", "labels": ["pass", "fail"], "positive": "pass",
                                 "confusion": {"labels": ["pass", "fail"], "counts": [[5, 1], [2, 2]]}}
    if like_n is not None:
        labels["like_for_like"] = {"definition": "pairs", "judge": {"recall_by_label": {
            "pass": {"estimate": 0.5, "n": like_n[0]}, "fail": {"estimate": 0.5, "n": like_n[1]}}}}
    return {"kind": "pointwise", "n_judgments": 10, "n_items": 10, "n_items_with_consensus": 10, "orders": [],
            "metrics": {"accuracy": {"estimate": 0.7}}, "usage": {}, "flags": [], "labels": labels}


def test_an_earlier_audit_gets_its_references_from_what_it_holds() -> None:
    """``audit.json`` written before the audit stored them: the upgrader fills the chance accuracy from the label
    counts, the trivial raters from the confusion's row totals and from the like-for-like pairs' counts."""
    golden = json.loads(GOLDEN.read_text("utf-8"))
    counts = golden["consensus"]["label_counts"]
    old = {**golden, "consensus": {k: v for k, v in golden["consensus"].items() if k != "chance_accuracy"},
           "judges": {"j": _label_judge((3, 9))}, "generated_at": "", "judgecal_version": ""}
    rep = read_report(old)
    total = sum(counts.values())
    assert rep.consensus.chance_accuracy == pytest.approx(sum((c / total) ** 2 for c in counts.values()))
    labels = rep.judges["j"].labels
    assert labels is not None and labels.trivial is not None and labels.like_for_like is not None
    assert labels.trivial.label == "pass" and labels.trivial.n == 10
    assert labels.trivial.figures["accuracy"] == pytest.approx(0.6) and labels.trivial.figures["tpr"] == 1.0
    like = labels.like_for_like.trivial
    assert like is not None and like.label == "fail" and like.figures["accuracy"] == pytest.approx(0.75)
    # the view shows what the report holds
    view = label_view(rep.judges["j"])
    assert view is not None and view.trivial_label == "pass" and view.trivial_like_label == "fail"
    acc = next(r for r in view.rates if r.name == "accuracy")
    assert acc.trivial_text == "0.600"
    # a value the report holds is never recomputed
    kept = {**old, "judges": {"j": {**_label_judge(None), "labels": {
        **_label_judge(None)["labels"], "trivial": {"label": "fail", "n": 10, "figures": {"accuracy": 0.4}}}}}}
    assert read_report(kept).judges["j"].labels.trivial.figures == {"accuracy": 0.4}  # type: ignore[union-attr]


def test_a_stability_figure_states_its_half_width(tmp_path: Path) -> None:
    from judgecal.report.view import stability_line

    stab = {"score": {"figure": "accuracy", "score": 90.0},
            "runs": [{"run_id": "r1", "variants": [{"variant": 0}, {"variant": 1}],
                      "figures": {"accuracy": {"figures": [0.7, 0.72], "sigma_pp": 1.0, "n_variants": 2,
                                               "score": 90.0}}}]}
    judge = {**_label_judge(None), "stability": stab}
    rep = read_report({"schema": "judgecal.audit/1", "judges": {"j": judge}})
    entry = rep.judges["j"]
    assert entry.stability is not None
    fig = entry.stability.runs[0].figures["accuracy"]
    assert fig.halfwidth_pp == pytest.approx(1.959963984540054)
    assert (stability_line(entry.stability) or "").startswith("stable within ±2.0 points at 95% confidence")


@pytest.mark.parametrize("name", ["pandalm-audit.json", "demo-audit.json"])
def test_the_audit_stores_the_consensus_chance(name: str) -> None:
    """The golden audits (what the audit writes, checked byte for byte by their own tests) hold Σ p_k²."""
    cons = json.loads((GOLDEN.parent / name).read_text("utf-8"))["consensus"]
    total = sum(cons["label_counts"].values())
    assert cons["chance_accuracy"] == pytest.approx(sum((c / total) ** 2 for c in cons["label_counts"].values()))


def test_a_loop_record_another_version_stored_is_shown_as_far_as_its_type_goes(tmp_path: Path) -> None:
    """gate.json and cascade.json are the loop commands' own files: a key this version does not know (a later one
    wrote it) stays in the file and is left out of the audit, which therefore still validates."""
    from judgecal.audit.loop_section import load_loop
    from judgecal.audit.schema.models import Loop

    gate = {"schema": "judgecal.gate/1", "baseline": "j1", "candidate": "j2", "passed": True, "from_the_future": 1,
            "metrics": {"accuracy": {"baseline": 0.7, "candidate": 0.72, "result": "not worse", "new_stat": 3}}}
    cascade = {"c": {"name": "c", "stages": [{"judge": "j1", "threshold": 0.9, "stage_note": "x"}],
                     "escalated": {"i1": 1.0}, "verdicts": {"i1": "A"}, "share_to_people": 0.2}}
    (tmp_path / "gate.json").write_text(json.dumps(gate), "utf-8")
    (tmp_path / "cascade.json").write_text(json.dumps(cascade), "utf-8")
    got = load_loop(tmp_path)
    assert "from_the_future" not in got["gate"] and "new_stat" not in got["gate"]["metrics"]["accuracy"]
    assert got["gate"]["metrics"]["accuracy"]["candidate"] == 0.72 and got["gate"]["passed"] is True
    assert got["cascades"]["c"]["stages"] == [{"judge": "j1", "threshold": 0.9}]
    assert "escalated" not in got["cascades"]["c"]  # the per-item maps stay in cascade.json
    loop = Loop.model_validate(got)
    assert loop.gate is not None and loop.gate.metrics["accuracy"].result == "not worse"
    assert json.loads((tmp_path / "gate.json").read_text("utf-8")) == gate  # the stored file is untouched


def test_a_key_another_version_wrote_is_left_out_of_what_surfaces_show(tmp_path: Path, capsys) -> None:
    """``read_report`` (the explorer's) reads what the types name of an audit.json holding a key they do not (one
    another version wrote): the rest is shown; ``judgecal report`` refuses that file, naming the key."""
    from judgecal.audit.schema import read_report
    from judgecal.cli import main

    data = {"judgecal_version": "0", "generated_at": "2026-01-01T00:00:00Z", **json.loads(GOLDEN.read_text("utf-8"))}
    name = next(iter(data["judges"]))
    data["settings"]["from_a_later_version"] = 1
    data["judges"][name]["usage"]["legacy_field"] = 3
    rep = read_report(data)
    assert "from_a_later_version" not in rep.settings.to_json() and "legacy_field" not in rep.judges[name].usage.to_json()
    assert rep.judges[name].figure("accuracy") is not None  # the rest is there
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data), "utf-8")
    assert main(["report", "html", str(path), "--out", str(tmp_path / "a.html")]) == 2
    assert "from_a_later_version" in capsys.readouterr().err


@pytest.mark.parametrize("level", [1e308, 1.5, 1.0, -0.95])
def test_a_confidence_level_edited_out_of_range_is_refused_naming_it(tmp_path: Path, capsys, level: float) -> None:
    """A hand-edited ``settings.ci_level`` that is no level (1e308 overflowed a z-quantile into an unexpected
    error) is refused with the field named, exit status 2, nothing written."""
    from judgecal.cli import main

    data = {"judgecal_version": "0", "generated_at": "2026-01-01T00:00:00Z", **json.loads(GOLDEN.read_text("utf-8"))}
    data["settings"]["ci_level"] = level
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data), "utf-8")
    assert main(["report", "html", str(path), "--out", str(tmp_path / "a.html")]) == 2
    assert "settings.ci_level" in capsys.readouterr().err
    assert not (tmp_path / "a.html").exists()
