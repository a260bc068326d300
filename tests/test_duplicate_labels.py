"""One person, one label per item, in every ``--from`` format (the shared record loop, ``Mapped.label``): the same
label given again is that label, counted as a duplicate; another label is refused, all or nothing, naming
``file:line: field``, and the summary's counts are what the workspace stores. Names in such one-line messages
never break the line."""

from __future__ import annotations

import json

from judgecal.cli import main
from judgecal.data.formats import map_file
from judgecal.data.store import Workspace


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _one_line(capsys):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def _jb(pid, label, question="1+1?"):
    return {"pair_id": pid, "question": question, "response_model": "gpt-4o", "response_A": "2",
            "response_B": "3", "label": label}


def _mt(qid, a, b, winner, judge="expert_5", turn=1):
    texts = {"alpaca-13b": "Alpaca answer", "vicuna-13b-v1.3": "Vicuna answer"}
    conv = lambda m: [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": texts[m]}]  # noqa: E731
    return {"question_id": qid, "model_a": a, "model_b": b, "winner": winner, "judge": judge,
            "conversation_a": conv(a), "conversation_b": conv(b), "turn": turn}


def _ls_task(tid, *choices):
    return {"id": tid, "data": {"prompt": "2+2?", "response_a": "4", "response_b": "5"},
            "annotations": [{"id": k, "completed_by": 3, "was_cancelled": False, "lead_time": 2.0,
                             "result": [{"from_name": "preference", "to_name": "prompt", "type": "choices",
                                         "value": {"choices": [c]}}]} for k, c in enumerate(choices, start=1)]}


def test_judgebench_pair_twice_with_opposite_labels_is_refused(tmp_path, capsys):
    f = _jsonl(tmp_path / "jb.jsonl", [_jb("p1", "A>B"), _jb("p2", "B>A", "2+2?"), _jb("p1", "B>A")])
    ws = tmp_path / "ws"
    assert main(["import", str(f), "--from", "judgebench", "-w", str(ws)]) == 2
    line = _one_line(capsys)
    assert f"{f}:3: label: 'gold' labels item 'judgebench/p1/@gpt-4o/@gpt-4o' 'B' here and 'A' in label at {f}:1" in line, line
    assert not ws.exists()  # nothing written, no workspace made


def test_judgebench_pair_twice_with_the_same_label_is_one_label(tmp_path, capsys):
    f = _jsonl(tmp_path / "jb.jsonl", [_jb("p1", "A>B"), _jb("p2", "B>A", "2+2?"), _jb("p1", "A>B")])
    ws = tmp_path / "ws"
    assert main(["import", str(f), "--from", "judgebench", "-w", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "2 items, 0 judgments from 0 judge(s), 2 human labels" in out, out
    assert "1 label(s) one person gave again, the same, kept once" in out, out
    with Workspace(ws) as w:
        assert sorted(zip(*w.annotations_repo.annotations_frame()[["item_id", "label"]].T.values, strict=True)) == [
            ("judgebench/p1/@gpt-4o/@gpt-4o", "A"), ("judgebench/p2/@gpt-4o/@gpt-4o", "B")]


def test_mt_bench_expert_twice_on_one_pair(tmp_path, capsys):
    """The same expert on the same question, turn and pair, shown in either order: the same verdict (undone to
    models) is one label; the opposite one is refused at its line, naming ``winner``."""
    same = _jsonl(tmp_path / "same.jsonl", [_mt(81, "alpaca-13b", "vicuna-13b-v1.3", "model_b"),
                                            _mt(81, "vicuna-13b-v1.3", "alpaca-13b", "model_a"),
                                            _mt(81, "alpaca-13b", "vicuna-13b-v1.3", "model_a", judge="author_2")])
    m = map_file(same)
    assert sorted((a.annotator, a.label) for a in m.annotations) == [("author_2", "A"), ("expert_5", "B")]
    assert m.counts["duplicate_labels"] == 1 and m.summary()["human_labels"] == 2
    other = _jsonl(tmp_path / "other.jsonl", [_mt(81, "alpaca-13b", "vicuna-13b-v1.3", "model_b"),
                                             _mt(81, "vicuna-13b-v1.3", "alpaca-13b", "model_b")])
    assert main(["import", str(other), "--from", "mt_bench", "-w", str(tmp_path / "ws")]) == 2
    line = _one_line(capsys)
    assert f"{other}:2: winner: 'expert_5' labels item" in line and f"'A' here and 'B' in winner at {other}:1" in line, line
    assert not (tmp_path / "ws").exists()


def test_labelstudio_user_annotating_a_task_twice(tmp_path, capsys):
    same = tmp_path / "same.json"
    same.write_text(json.dumps([_ls_task(11, "A better", "A better"), _ls_task(12, "B better")]))
    m = map_file(same)
    assert sorted((a.item_id, a.annotator, a.label) for a in m.annotations) == [
        ("labelstudio/11", "ls-3", "A"), ("labelstudio/12", "ls-3", "B")]
    assert m.counts["duplicate_labels"] == 1
    other = tmp_path / "other.json"
    other.write_text(json.dumps([_ls_task(11, "A better", "B better")]))
    assert main(["import", str(other), "--from", "labelstudio", "-w", str(tmp_path / "ws")]) == 2
    line = _one_line(capsys)
    assert (f"{other}:1: annotations[1]: 'ls-3' labels item 'labelstudio/11' 'B' here and 'A' in annotations[0] "
            f"at {other}:1") in line, line
    assert not (tmp_path / "ws").exists()


def test_labelstudio_classes_of_one_user_twice(tmp_path, capsys):
    """A classification control answered in two annotations by one user (votes settled per criterion)."""
    def task(tid, *values):
        return {"id": tid, "data": {"question": f"Q{tid}?", "text": f"Answer {tid}."}, "annotations": [
            {"id": 10 * tid + k, "completed_by": 7, "was_cancelled": False,
             "result": [{"from_name": "faithful", "to_name": "text", "type": "choices", "value": {"choices": [v]}}]}
            for k, v in enumerate(values)]}

    f = tmp_path / "classes.json"
    f.write_text(json.dumps([task(1, "Yes", "No"), task(2, "No")]))
    assert main(["import", str(f), "--from", "labelstudio", "-w", str(tmp_path / "ws")]) == 2
    line = _one_line(capsys)
    assert f"{f}:1: annotations[1]: 'ls-7' labels item 'labelstudio/1/faithful' 'No' here and 'Yes'" in line, line


def test_a_name_with_a_newline_stays_on_one_line(tmp_path, capsys):
    """A problem naming an annotator (own schema) or a file whose name holds a newline is one line."""
    own = _jsonl(tmp_path / "own.jsonl", [{"id": "q1", "prompt": "2+2?", "response_a": "4", "response_b": "5",
                                           "human_labels": {"x\ny\u202e": "Q"}}])
    assert main(["import", str(own), "-w", str(tmp_path / "ws")]) == 2
    line = _one_line(capsys)
    assert "human_labels.x\\x0ay\\u202e: unknown label 'Q'" in line, line
    odd = _jsonl(tmp_path / "jb\nfile.jsonl", [_jb("p1", "A>B"), _jb("p1", "B>A")])
    assert main(["import", str(odd), "--from", "judgebench", "-w", str(tmp_path / "ws2")]) == 2
    line = _one_line(capsys)
    assert "jb\\x0afile.jsonl:2: label: 'gold' labels item" in line, line


def test_own_schema_annotator_given_twice_in_one_record_is_refused(tmp_path, capsys):
    """JSON keeps the last of a repeated key without a word: an annotator twice in ``human_labels`` is refused."""
    f = tmp_path / "own.jsonl"
    f.write_text('{"id": "q1", "prompt": "2+2?", "response_a": "4", "response_b": "5", '
                 '"human_labels": {"x": "A", "x": "B"}}\n', "utf-8")
    assert main(["import", str(f), "-w", str(tmp_path / "ws")]) == 2
    line = _one_line(capsys)
    assert f"{f}:1: 'x' given twice in one object" in line, line
    assert not (tmp_path / "ws").exists()
