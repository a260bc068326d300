"""`import --from labelstudio` on a JSON export written by a real Label Studio server (started by the test):
a project of our own making with a pairwise choice and a categorical control, tasks imported with a
judge's predictions, annotations submitted (one skipped), and the project exported through the API."""

import pytest
from conftest import free_port

from judgecal.annotation.server import ManagedServer
from judgecal.cli import main
from judgecal.data.formats import detect, map_file
from judgecal.data.store import Workspace

CONFIG = """<View>
  <Text name="prompt" value="$prompt"/>
  <Text name="response_a" value="$response_a"/>
  <Text name="response_b" value="$response_b"/>
  <Choices name="preference" toName="prompt" choice="single-radio">
    <Choice value="A better"/><Choice value="B better"/><Choice value="Tie"/>
  </Choices>
  <Choices name="topic" toName="prompt" choice="single-radio">
    <Choice value="Maths"/><Choice value="Other"/>
  </Choices>
</View>"""


def _choice(name, value):
    return {"from_name": name, "to_name": "prompt", "type": "choices", "value": {"choices": [value]}}


def test_labelstudio_export_from_a_real_server(tmp_path):
    pytest.importorskip("label_studio_sdk")
    server = ManagedServer(tmp_path / "lsws", port=free_port())
    try:
        conn = server.start()
    except Exception as exc:  # the suite's Label Studio environment is not installed here
        pytest.skip(f"Label Studio did not start: {exc}")
    import httpx

    try:
        with httpx.Client(base_url=conn.url, headers={"Authorization": f"Token {conn.token}"}, timeout=60) as http:
            pid = http.post("/api/projects", json={"title": "Mine", "label_config": CONFIG}).raise_for_status().json()["id"]
            tasks = [{"data": {"prompt": "2+2?", "response_a": "4", "response_b": "5"},
                      "predictions": [{"model_version": "judge-v1", "result": [_choice("preference", "A better")]}]},
                     {"data": {"prompt": "Say hi", "response_a": "Hello!", "response_b": ""},
                      "predictions": [{"model_version": "judge-v1", "result": [_choice("preference", "Tie")]}]},
                     {"data": {"prompt": "Capital of Peru?", "response_a": "Quito", "response_b": "Lima"}},
                     {"data": {"prompt": "Unlabelled", "response_a": "x", "response_b": "y"},
                      "predictions": [{"model_version": "judge-v1", "result": [_choice("preference", "B better")]}]}]
            http.post(f"/api/projects/{pid}/import", json=tasks).raise_for_status()
            ids = sorted(t["id"] for t in http.get(f"/api/tasks?project={pid}").raise_for_status().json()["tasks"])[:3]
            for tid, result, cancelled in [(ids[0], [_choice("preference", "A better"), _choice("topic", "Maths")], False),
                                           (ids[1], [_choice("preference", "B better")], False),
                                           (ids[2], [], True)]:
                http.post(f"/api/tasks/{tid}/annotations/", json={"result": result, "was_cancelled": cancelled,
                                                                   "lead_time": 4.5}).raise_for_status()
            export = http.get(f"/api/projects/{pid}/export",
                              params={"exportType": "JSON", "download_all_tasks": "true"}).raise_for_status()
            f = tmp_path / "project-export.json"
            f.write_bytes(export.content)
            me = http.get("/api/current-user/whoami").raise_for_status().json()["id"]
    finally:
        server.stop()
    assert detect(f) == "labelstudio"
    m = map_file(f)
    first, second, third = (f"labelstudio/{i}" for i in ids)
    assert len(m.items) == 4 and m.items[second].candidates[1].text == "" and m.counts["empty_responses"] == 1
    assert sorted((a.item_id, a.annotator, a.label, a.time_spent_s) for a in m.annotations) == [
        (first, f"ls-{me}", "A", 4.5), (second, f"ls-{me}", "B", 4.5)]
    assert m.counts["skipped_labels"] == 1  # the skipped task
    assert sorted((j.item_id, j.judge, j.verdict) for j in m.judgments.values()) == [
        (first, "judge-v1", "A"), (second, "judge-v1", "tie")]
    # the topic control is about the prompt of a pair, not one response: no label item; and Label Studio's
    # export names a prediction nobody annotated from by its id only
    assert m.dropped == {"predictions exported by id only (their result is not in the file)": 1,
                         "topic: people's choices on a pair that rate neither response alone (a label item rates "
                         "one response)": 1}
    ws = tmp_path / "ws"
    assert main(["import", str(f), "-w", str(ws)]) == 0
    with Workspace(ws) as w:
        assert w.judgments_repo.judges() == ["judge-v1"] and len(w.annotations_repo.annotations_frame()) == 2
