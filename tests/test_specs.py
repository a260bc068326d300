"""A judge is a spec: two specs are two judges in the store, the audit and every export.

The pooling cases need a judge whose verdicts are known in advance (always right under one rubric,
always wrong under another), so an in-process backend answers from the prompt it is sent, as in
test_engine.py; the embedded SmolLM2 runs from spec files through the command line below.
"""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from judgecal.audit.pipeline import AuditOptions, audit_workspace
from judgecal.data.records import Candidate, Consensus, Item, Judgment
from judgecal.data.store import SCHEMA_VERSION, SPEC_DEFAULTS, Workspace, spec_names
from judgecal.judges.base import Request, Response
from judgecal.judges.engine import Engine
from judgecal.judges.mutations import MUTATIONS, MutationError, apply, mutate
from judgecal.judges.rubric import RubricError, load_rubric
from judgecal.judges.spec import JudgeSpec, SpecError, load_spec, resolve_judge, shipped_specs

CONTRARIAN = """\
name: contrarian
kind: pairwise
labels: [A, B, tie]
system: You are a contrarian judge.
template: |-
  [Instruction]
  {prompt}

  [The Start of Response A]
  {first}
  [The End of Response A]

  [The Start of Response B]
  {second}
  [The End of Response B]

  Which response is better? Reply with exactly one word: A, B, or tie.
"""


class Knowing:
    """Answers from the prompt: the response shown as "right" wins, unless the system prompt says
    "contrarian" (then it loses)."""

    name, model, max_concurrency = "scripted", "m", 4

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, request: Request) -> Response:
        self.calls += 1
        system = request.messages[0][1]
        user = request.messages[-1][1]
        first_is_right = user.index("right") < user.index("wrong")
        answer = "A" if first_is_right != ("contrarian" in system) else "B"
        return Response(answer, None, 50, 1)


def _workspace(path: Path, n: int) -> Workspace:
    """``n`` items whose right answer is A for even k and B for odd k, with that as the gold consensus."""
    ws = Workspace(path)
    items = [Item(f"i{k}", f"question {k}", [Candidate("right" if k % 2 == 0 else "wrong"),
                                              Candidate("wrong" if k % 2 == 0 else "right")]) for k in range(n)]
    ws.items_repo.add_items(items)
    ws.annotations_repo.set_consensus([Consensus(f"i{k}", "gold", "A" if k % 2 == 0 else "B") for k in range(n)], "gold")
    return ws


def test_two_rubrics_of_one_model_are_two_judges_in_the_audit(tmp_path):
    ws = _workspace(tmp_path / "ws", 10)
    (tmp_path / "contrarian.yaml").write_text(CONTRARIAN)
    backend = Knowing()
    for rubric in (load_rubric("pairwise"), load_rubric(str(tmp_path / "contrarian.yaml"))):
        eng = Engine(ws, backend, rubric, progress=False)
        assert eng.run(eng.plan(ws.items_repo.items())).errors == 0
    assert backend.calls == 40
    assert ws.judgments_repo.judges() == ["scripted/m", "scripted/m[rubric=contrarian]"]
    report = audit_workspace(ws, AuditOptions(consensus="gold", n_boot=200)).to_json()
    judges = report["judges"]
    assert set(judges) == {"scripted/m", "scripted/m[rubric=contrarian]"}
    assert judges["scripted/m"]["n_judgments"] == 20
    assert judges["scripted/m[rubric=contrarian]"]["n_judgments"] == 20
    assert judges["scripted/m"]["metrics"]["accuracy"]["estimate"] == pytest.approx(1.0)
    assert judges["scripted/m[rubric=contrarian]"]["metrics"]["accuracy"]["estimate"] == pytest.approx(0.0)
    # both specs are stored once, each with its rubric's name and content hash
    specs = ws.judgments_repo.judge_specs()
    assert sorted(s["rubric"] for _, s in specs.values()) == ["contrarian", "pairwise"]
    assert len({s["rubric_hash"] for _, s in specs.values()}) == 2


def test_a_rerun_at_another_temperature_is_a_second_judge_not_a_moved_n(tmp_path):
    ws = _workspace(tmp_path / "ws", 30)
    backend = Knowing()
    eng = Engine(ws, backend, load_rubric("pairwise"), judge="local/smollm2", progress=False)
    eng.run(eng.plan(ws.items_repo.items()))
    assert ws.judgments_repo.count_judgments("local/smollm2") == 60
    hot = Engine(ws, backend, load_rubric("pairwise"), judge="local/smollm2", temperature=0.7, progress=False)
    assert hot.spec_hash != eng.spec_hash
    hot.run(hot.plan(ws.items_repo.items()[:6]))
    assert ws.judgments_repo.judges() == ["local/smollm2", "local/smollm2[temperature=0.7]"]
    assert ws.judgments_repo.count_judgments("local/smollm2") == 60
    assert ws.judgments_repo.count_judgments("local/smollm2[temperature=0.7]") == 12
    assert len(ws.judgments_repo.judgments_frame("local/smollm2")) == 60
    report = audit_workspace(ws, AuditOptions(consensus="gold", n_boot=200)).to_json()
    assert report["judges"]["local/smollm2"]["n_judgments"] == 60
    assert report["judges"]["local/smollm2[temperature=0.7]"]["n_judgments"] == 12
    # a compact frame and an export name them the same way
    compact = ws.judgments_repo.judgments_frame(columns=("judge", "item_id"), compact=True)
    assert compact["judge"].value_counts().to_dict() == {"local/smollm2": 60, "local/smollm2[temperature=0.7]": 12}
    out = ws.reports_repo.export("judgments", tmp_path / "j.jsonl")
    names = [json.loads(line)["judge"] for line in out.read_text().splitlines()]
    assert names.count("local/smollm2[temperature=0.7]") == 12
    # judges as extra annotators (aggregate --with-judges): each spec is its own annotator
    from judgecal.aggregate.consensus import judges_as_annotators

    extra = judges_as_annotators(ws, ("local/smollm2", "local/smollm2[temperature=0.7]"))
    assert extra["annotator"].value_counts().to_dict() == {
        "judge:local/smollm2:AB": 30, "judge:local/smollm2:BA": 30,
        "judge:local/smollm2[temperature=0.7]:AB": 6, "judge:local/smollm2[temperature=0.7]:BA": 6}
    # the stored rows keep the base name: the suffix is the workspace's reading of two specs
    raw = dict(ws._db.conn.execute("SELECT judge, COUNT(*) FROM judgments GROUP BY judge").fetchall())
    assert raw == {"local/smollm2": 72}


def test_max_tokens_logprobs_and_a_spec_file_each_make_a_judge(tmp_path):
    ws = _workspace(tmp_path / "ws", 2)
    backend = Knowing()
    for kw in ({}, {"max_tokens": 16}, {"logprobs": False}):
        eng = Engine(ws, backend, load_rubric("pairwise"), progress=False, **kw)
        eng.run(eng.plan(ws.items_repo.items()))
    assert ws.judgments_repo.judges() == ["scripted/m", "scripted/m[logprobs=false]", "scripted/m[max_tokens=16]"]
    # the same spec run again (inline or from a file) is the same judge: every call cached
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"backend": "scripted", "model": "m", "parameters": {"max_tokens": 16}}))
    again = Engine(ws, backend, load_rubric("pairwise"), spec=load_spec(str(path)), progress=False)
    before = backend.calls
    st = again.run(again.plan(ws.items_repo.items()))
    assert (st.cached, backend.calls) == (4, before)
    assert len(ws.judgments_repo.judges()) == 3


def test_names_stay_readable_and_distinct():
    base = {"backend": "local", "model": "smollm2", "rubric": "pairwise", "rubric_hash": "aaa", **SPEC_DEFAULTS}
    units = [("a", "local/smollm2", base, "h1"),
             ("b", "local/smollm2", {**base, "temperature": 0.7, "max_tokens": 16}, "h2"),
             ("c", "local/smollm2", {**base, "rubric": "pointwise-5", "rubric_hash": "bbb"}, "h3"),
             ("d", "local/smollm2", {**base, "rubric_hash": "ccccccc"}, "h4"),
             ("e", "openai/x", None, "h5"), ("f", "openai/y", None, "h6"), ("g", "openai/y", None, "h7")]
    names = spec_names(units)
    assert names["e"] == "openai/x"
    assert names["b"] == "local/smollm2[rubric=pairwise@aaa;temperature=0.7;max_tokens=16]"
    assert names["c"] == "local/smollm2[rubric=pointwise-5@bbb]"
    assert names["d"] == "local/smollm2[rubric=pairwise@cccccc]"
    assert names["a"] == "local/smollm2[rubric=pairwise@aaa]"  # rubric_hash has no default: all named
    assert (names["f"], names["g"]) == ("openai/y[spec=h6]", "openai/y[spec=h7]")
    assert len(set(names.values())) == len(units)
    # the defaults JudgeSpec uses are the ones a bare name stands for
    spec = JudgeSpec("local", "smollm2")
    assert {k: getattr(spec, k) for k in SPEC_DEFAULTS} == SPEC_DEFAULTS


def test_replay_judges_keep_their_names(tmp_path, pandalm_ws):
    assert {"replay/pandalm/gpt-3.5-turbo", "replay/pandalm/pandalm-7b"} <= set(pandalm_ws.judgments_repo.judges())
    name, spec = pandalm_ws.judgments_repo.judge_specs()[JudgeSpec.replay("replay/pandalm/pandalm-7b").spec_hash]
    assert (name, spec) == ("replay/pandalm/pandalm-7b", {"backend": "replay", "model": "pandalm/pandalm-7b"})
    # a workspace imported before specs were stored: one recorded judge, one hash per subset, one name
    ws = Workspace(tmp_path / "old")
    ws.judgments_repo.add_judgments([Judgment(key=f"k{i}", item_id=f"i{i}", judge="replay/llmbar/GPT-4/Vanilla",
                               spec_hash=f"subset{i % 3}", verdict="A") for i in range(9)])
    ws.judgments_repo.add_judgments([Judgment(key=f"x{i}", item_id=f"i{i}", judge="import/acme", spec_hash=f"h{i % 2}",
                               verdict="A") for i in range(4)])
    assert ws.judgments_repo.judges() == ["import/acme[spec=h0]", "import/acme[spec=h1]", "replay/llmbar/GPT-4/Vanilla"]
    assert ws.judgments_repo.count_judgments("replay/llmbar/GPT-4/Vanilla") == 9
    assert ws.judgments_repo.count_judgments("import/acme") == 0  # an ambiguous name selects nothing, never a pool


def test_schema_migration_adds_the_spec_table(tmp_path):
    ws = Workspace(tmp_path / "ws")
    ws._db.conn.execute("DROP TABLE judge_specs")
    ws._db.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION - 1),))
    ws.close()
    with Workspace(tmp_path / "ws") as again:
        version = again._db.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        assert int(version) == SCHEMA_VERSION >= 4
        assert again.judgments_repo.judge_specs() == {}


# -- spec files ------------------------------------------------------------------------------


def test_spec_yaml_round_trip(tmp_path):
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "contrarian.yaml").write_text(CONTRARIAN)
    d = {"name": "smollm2-hot", "description": "sampled", "backend": "local", "model": "smollm2",
         "rubric": "rubrics/contrarian.yaml",
         "parameters": {"temperature": 0.7, "max_tokens": 16, "logprobs": False},
         "options": {"weights": "original", "n_threads": 2}}
    path = tmp_path / "hot.yaml"
    path.write_text(yaml.safe_dump(d))
    spec = load_spec(str(path))
    assert (spec.base_name, spec.temperature, spec.max_tokens, spec.logprobs) == ("smollm2-hot", 0.7, 16, False)
    assert spec.rubric == str(tmp_path / "rubrics" / "contrarian.yaml")  # relative to the spec file
    assert dict(spec.options) == {"weights": "original"} and dict(spec.run_options) == {"n_threads": 2}
    assert spec.backend_options() == {"weights": "original", "n_threads": 2}
    assert "top_logprobs" not in spec.to_dict()  # no log-probabilities: top_logprobs changes nothing
    # written back and read again: the same spec
    back = tmp_path / "back.yaml"
    back.write_text(yaml.safe_dump({"name": spec.name, "backend": spec.backend, "model": spec.model,
                                    "rubric": spec.rubric, "options": {**dict(spec.options), "n_threads": 1},
                                    "parameters": {"temperature": spec.temperature, "max_tokens": spec.max_tokens,
                                                   "logprobs": spec.logprobs}}))
    again = load_spec(str(back))
    assert again.spec_hash == spec.spec_hash  # run options (threads) are not part of the spec
    assert JudgeSpec("local", "smollm2", temperature=0.0).spec_hash != JudgeSpec("local", "smollm2",
                                                                                 temperature=0.7).spec_hash
    # a spec file's rubric that does not load is reported against the file's field
    path.write_text(yaml.safe_dump({**d, "rubric": "no-such-rubric"}))
    with pytest.raises(SpecError, match=r"hot\.yaml: field 'rubric': unknown rubric 'no-such-rubric'"):
        resolve_judge(str(path))


@pytest.mark.parametrize(("content", "field"), [
    ({"backend": "local"}, "'model' is required"),
    ({"backend": "local", "model": "smollm2", "temprature": 0.1}, "'temprature' is unknown"),
    ({"backend": "local", "model": "smollm2", "parameters": {"temperature": "hot"}}, "'parameters.temperature'"),
    ({"backend": "local", "model": "smollm2", "parameters": {"temperature": -1}}, "'parameters.temperature'"),
    ({"backend": "local", "model": "smollm2", "parameters": {"max_tokens": 0}}, "'parameters.max_tokens'"),
    ({"backend": "local", "model": "smollm2", "parameters": {"logprobs": "yes"}}, "'parameters.logprobs'"),
    ({"backend": "local", "model": "smollm2", "parameters": {"top_p": 0.9}}, "'parameters.top_p' is unknown"),
    ({"backend": "openai", "model": "x", "options": {"api_key": "sk-abc"}}, "'options.api_key' is a secret"),
    ({"backend": "local/smollm2", "model": "x"}, "'backend' is required"),
    ({"backend": "local", "model": "smollm2", "name": ""}, "'name' must be a non-empty string"),
    (["local", "smollm2"], "a judge spec is a mapping"),
])
def test_spec_file_errors_are_one_line_naming_file_and_field(tmp_path, content, field):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(SpecError) as err:
        load_spec(str(path))
    msg = str(err.value)
    assert msg.startswith(f"{path}: ") and field in msg and "\n" not in msg
    assert "sk-abc" not in msg


def test_spec_file_that_is_not_yaml_or_missing(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("backend: [local\n")
    with pytest.raises(SpecError, match=r"broken\.yaml: not valid YAML"):
        load_spec(str(path))
    with pytest.raises(SpecError, match="no such judge spec file"):
        load_spec(str(tmp_path / "absent.yaml"))
    with pytest.raises(SpecError, match="unknown judge spec 'nope'; shipped: "):
        load_spec("nope")
    with pytest.raises(SpecError, match=r"judge 'nope' is neither <backend>/<model> .* shipped spec \(gemma3-greedy, gpt-4o-mini, "):
        resolve_judge("nope")


def test_shipped_example_specs_load_and_are_distinct_judges():
    names = shipped_specs()
    assert {"smollm2-greedy", "smollm2-pointwise", "gpt-4o-mini", "smollm2-server"} <= set(names)
    loaded = {n: resolve_judge(n) for n in names}
    assert len({s.spec_hash for s, _ in loaded.values()}) == len(names)
    assert loaded["smollm2-pointwise"][1].name == "pointwise-5"
    assert dict(loaded["smollm2-server"][0].options) == {"base_url": "http://127.0.0.1:8000/v1"}
    # the shipped greedy spec is what `--judge local/smollm2` runs by default: the same judge
    assert loaded["smollm2-greedy"][0].spec_hash == resolve_judge("local/smollm2")[0].spec_hash
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"judges/*.yaml"' in pyproject  # shipped inside the package, not only in the repository


# -- mutations act on declared rubric fields ----------------------------------------------------------

ITEM = Item("m", "What is 2 + 2?\n\nShow the sum.", [Candidate("4"), Candidate("5\n\nfive")])
POINT = Item("p", "What is 2 + 2?", [Candidate("4")], task="pointwise")


def test_mutations_refuse_a_rubric_they_do_not_apply_to(tmp_path):
    with pytest.raises(MutationError) as err:
        mutate("option_order", load_rubric("pointwise-5"))
    msg = str(err.value)
    assert "pointwise-5" in msg and "option_order" in msg and "pairwise" in msg and "\n" not in msg
    (tmp_path / "contrarian.yaml").write_text(CONTRARIAN)  # declares no question, options, paraphrase, examples
    bare = load_rubric(str(tmp_path / "contrarian.yaml"))
    for name, field in (("paraphrase", "'paraphrase'"), ("option_order", "'options'"),
                        ("instruction_after", "'question'"), ("fewshot_ab", "'fewshot'"),
                        ("fewshot_ba", "'fewshot'")):
        with pytest.raises(MutationError, match=f"rubric contrarian .*contrarian.yaml.*{name}.* needs .*{field}"):
            mutate(name, bare)
    assert mutate("whitespace", bare).template != bare.template  # applies to any rubric
    with pytest.raises(MutationError, match="unknown mutation 'bogus'"):
        mutate("bogus", bare)


def test_mutations_use_the_rubric_own_fields():
    point = load_rubric("pointwise-5")
    para = apply("paraphrase", point, POINT)
    text = "\n".join(m["content"] for m in para)
    assert "two answers" not in text and "A, B, or tie" not in text
    assert para[0]["content"] == point.paraphrase_system and para[-1]["content"].endswith(point.paraphrase_question)
    shots = apply("fewshot_ab", point, POINT)
    assert [m["role"] for m in shots] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert [shots[2]["content"], shots[4]["content"]] == ["5", "1"]  # scores, not A/B
    assert "[The Start of the Response]" in shots[1]["content"]  # the pointwise format
    # pairwise-reference: the examples carry a reference, the paraphrase keeps it
    ref = load_rubric("pairwise-reference")
    ritem = Item("r", "2 + 2?", [Candidate("4"), Candidate("5")], reference="4")
    assert "[The Start of the Reference Answer]\n7" in apply("fewshot_ab", ref, ritem)[3]["content"]
    assert "reference" in apply("paraphrase", ref, ritem)[0]["content"]
    # every mutation leaves the prompt and the responses exactly as they are
    pair = load_rubric("pairwise")
    for name in MUTATIONS:
        user = apply(name, pair, ITEM, "BA")[-1]["content"]
        assert "What is 2 + 2?\n\nShow the sum." in user and "\n5\n\nfive\n" in user, name
    after = apply("instruction_after", pair, ITEM)[-1]["content"]
    assert after.index("Show the sum.") > after.index("[The End of Response B]")


def test_default_rubric_mutations_render_as_before():
    """The pairwise rubric's mutated prompts for single-paragraph texts are unchanged (cached calls hold)."""
    pair = load_rubric("pairwise")
    item = Item("m", "What is 2 + 2?", [Candidate("4"), Candidate("5")])
    user = apply("option_order", pair, item)[-1]["content"]
    assert user == ("[Instruction]\nWhat is 2 + 2?\n\n[The Start of Response A]\n4\n[The End of Response A]\n\n"
                    "[The Start of Response B]\n5\n[The End of Response B]\n\n"
                    "Which response is better? Reply with exactly one word: tie, B, or A.")
    para = apply("paraphrase", pair, item)
    assert para[0]["content"] == ("Act as a fair evaluator. Judge which of the two answers better satisfies the "
                                  "instruction; neither the position of an answer nor its length should matter.")
    assert para[-1]["content"].endswith("Which answer is better? Answer with a single word: A, B, or tie.")
    shots = apply("fewshot_ba", pair, item)
    assert shots[1]["content"].startswith("[Instruction]\nName a primary colour.") and shots[2]["content"] == "B"


@pytest.mark.parametrize(("patch", "field"), [
    ({"question": "Which is better?"}, "'template' must show the declared question"),
    ({"options": ["A", "B"]}, "'question' must show the declared options"),
    ({"paraphrase": {"system": "x", "tone": "y"}}, "'paraphrase' must be a mapping"),
    ({"fewshot": [{"prompt": "q", "first": "a", "answer": "A"}]}, "'fewshot[0].second'"),
    ({"fewshot": [{"prompt": "q", "first": "a", "second": "b", "answer": "C"}]}, "'fewshot[0].answer'"),
])
def test_rubric_declarations_are_validated(tmp_path, patch, field):
    d = {**yaml.safe_load(CONTRARIAN), **patch}
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(d))
    with pytest.raises(RubricError) as err:
        load_rubric(str(path))
    assert str(err.value).startswith(f"{path}: ") and field in str(err.value)


# -- the embedded judge from spec files, through the command line --------------------------------------


def test_cli_runs_the_embedded_judge_from_spec_files(tmp_path, capsys, pandalm_ws):
    from conftest import copy_workspace

    from judgecal.cli import main

    ws_path = tmp_path / "ws"
    copy_workspace(pandalm_ws, ws_path).close()
    spec = tmp_path / "pointwise.yaml"
    spec.write_text(yaml.safe_dump({"backend": "local", "model": "smollm2", "rubric": "pointwise-5",
                                    "parameters": {"max_tokens": 4}}))
    w = ["--items", "3", "--quiet", "-w", str(ws_path)]
    assert main(["judge", "--judge", "local/smollm2", *w]) == 0
    assert "local/smollm2 (spec " in capsys.readouterr().out
    # the shipped default spec is the same judge: nothing is called again
    assert main(["judge", "--judge", "smollm2-greedy", *w]) == 0
    assert "6 planned, 6 cached, 0 run" in capsys.readouterr().out
    assert main(["judge", "--judge", str(spec), *w]) == 0
    out = capsys.readouterr().out
    assert out.startswith("local/smollm2[rubric=pointwise-5;max_tokens=4] (spec ") and "6 planned" in out
    assert main(["judge", "--judge", "local/smollm2", "--mutation", "option_order", "--rubric", "pointwise-5",
                 *w]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("judgecal judge: rubric pointwise-5") and "option_order" in err and "\n" not in err
    with Workspace(ws_path) as ws:
        names = [n for n in ws.judgments_repo.judges() if not n.startswith("replay/")]
        assert names == ["local/smollm2", "local/smollm2[rubric=pointwise-5;max_tokens=4]"]
        frame = ws.judgments_repo.judgments_frame("local/smollm2[rubric=pointwise-5;max_tokens=4]")
        assert len(frame) == 6 and frame["score"].notna().sum() + (frame["status"] != "ok").sum() == 6
        assert set(frame["verdict"].dropna()) <= {"invalid"}
        assert len(ws.judgments_repo.judgments_frame("local/smollm2")) == 6
        stored = {s["rubric"]: s for _, s in ws.judgments_repo.judge_specs().values() if s["backend"] == "local"}
        assert stored["pointwise-5"]["max_tokens"] == 4 and stored["pairwise"]["max_tokens"] == 8
        assert stored["pairwise"]["identity"].startswith("smollm2")
    bad = tmp_path / "bad.yaml"
    bad.write_text("backend: local\nmodel: smollm2\nparameters: {temperature: warm}\n")
    assert main(["judge", "--judge", str(bad), *w]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"judgecal judge: {bad}: field 'parameters.temperature' must be a number from 0 to 100, got 'warm'"
    shutil.rmtree(ws_path)
