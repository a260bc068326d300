"""Formats whose tool can write its own result file here: an Inspect eval log produced by inspect_ai
itself (its mock model as the evaluated model and as the grader, so no paid API), with a person's score
edit; and files in the published shapes of promptfoo, DeepEval and MLflow."""


import pytest

from judgecal.cli import main
from judgecal.data.formats import detect, map_file
from judgecal.data.store import Workspace


def _inspect_log(folder):
    """Run a real Inspect eval: three samples, a C/I grader (model_graded_qa) and a 1-10 rating scorer,
    then a person edits one rating, as `inspect score edit` does. Returns the .eval and .json logs."""
    ia = pytest.importorskip("inspect_ai")
    from inspect_ai.dataset import Sample
    from inspect_ai.log import ProvenanceData, edit_score, read_eval_log, write_eval_log
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, ScoreEdit, Target, mean, model_graded_qa, scorer
    from inspect_ai.solver import TaskState, generate

    def out(text, n):
        o = ModelOutput.from_content("mockllm/model", text)
        o.usage = ModelUsage(input_tokens=n, output_tokens=3, total_tokens=n + 3)  # no tokenizer download
        return o

    @scorer(metrics=[mean()])
    def rated():
        async def score(state: TaskState, target: Target) -> Score:
            got = await get_model(role="grader").generate(f"Rate 1-10: {state.output.completion}")
            return Score(value=float(got.completion.split()[-1]), explanation=got.completion)
        return score

    samples = [Sample(input="Capital of France?", target="Paris", id="q1"),
               Sample(input="Say nothing", target="", id="q2"), Sample(input="2+2?", target="4", id=3)]
    model = get_model("mockllm/model", custom_outputs=[out(a, 10) for a in ["Paris", "", "4"]])
    grader = get_model("mockllm/model", custom_outputs=[out(c, 50) for c in [
        "GRADE: C", "Rating 8", "GRADE: I", "Rating 2", "GRADE: C", "Rating 9"]])
    task = ia.Task(dataset=samples, solver=generate(), scorer=[model_graded_qa(model_role="grader"), rated()])
    log = ia.eval(task, model=model, model_roles={"grader": grader}, display="none", log_dir=str(folder),
                  log_format="eval", max_samples=1)[0]
    assert log.status == "success", log.error
    log = read_eval_log(log.location)
    edit_score(log, "q1", "rated", ScoreEdit(value=6.0, provenance=ProvenanceData(author="alice", reason="too generous")))
    write_eval_log(log, str(folder / "edited.eval"))
    write_eval_log(log, str(folder / "edited.json"))
    return folder / "edited.eval", folder / "edited.json"


def test_inspect_log_written_by_inspect_ai(tmp_path, capsys):
    ev, js = _inspect_log(tmp_path)
    for f in (ev, js):
        assert detect(f) == "inspect"
        m = map_file(f)
        assert sorted(m.items) == ["inspect/task/3", "inspect/task/q1", "inspect/task/q2"]
        assert m.items["inspect/task/q2"].candidates[0].text == "" and m.counts["empty_responses"] == 1
        got = sorted((j.item_id, j.judge, j.score, j.raw) for j in m.judgments.values())
        # the scorer's own 8 stays the judge's verdict; alice's edit to 6 is her label
        assert got == [("inspect/task/3", "rated", 9.0, "Rating 9"), ("inspect/task/q1", "rated", 8.0, "Rating 8"),
                       ("inspect/task/q2", "rated", 2.0, "Rating 2")]
        assert [(a.item_id, a.annotator, a.label, a.source) for a in m.annotations] == [
            ("inspect/task/q1", "alice", "6", "inspect:human")]
        assert m.waiting == {"model_graded_qa: verdicts that are not numbers (C/I/P, booleans or labels)": 3}
        assert m.specs["rated"].model == "mockllm/model"
    assert main(["import", str(ev), "-w", str(tmp_path / "ws")]) == 0
    out = capsys.readouterr().out
    assert "detected inspect" in out and "waiting 3: model_graded_qa" in out
    with Workspace(tmp_path / "ws") as ws:
        assert ws.judges() == ["rated"] and len(ws.annotations_frame()) == 1
