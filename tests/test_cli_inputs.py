"""Bad command-line inputs: each is a one-line error naming the input (exit 2, no traceback) or is
accepted correctly. Every case runs the real entry point, ``judgecal.cli.main``, or the installed
command in a subprocess."""

import contextlib
import json
import os
import subprocess
import sys

import pytest

from judgecal.cli import main
from judgecal.data.store import Workspace

PAIR = {"id": "q1", "prompt": "What is 2+2?", "response_a": "4", "response_b": "5"}


def _one_line_error(capsys, *fragments):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for frag in fragments:
        assert frag in lines[0], (frag, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def ws_dir(tmp_path_factory, mirror):
    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)  # module scope: set before the per-test fixture does
    ws = tmp_path_factory.mktemp("inputs") / "ws"
    assert main(["import", "llmbar/Natural", "-w", str(ws)]) == 0
    return str(ws)


@pytest.mark.parametrize(("argv", "fragments"), [
    (["judge", "--judge", "local/smollm2", "--items", "-5"], ["--items", "-5 is not allowed"]),
    (["judge", "--judge", "local/smollm2", "--items", "0"], ["--items", "0 is not allowed", "positive"]),
    (["judge", "--judge", "local/smollm2", "--items", "many"], ["--items", "'many' is not a whole number"]),
    (["judge", "--judge", "local/smollm2", "--samples", "0"], ["--samples", "0 is not allowed"]),
    (["judge", "--judge", "local/smollm2", "--orders", "XY"], ["--orders", "'XY'", "AB, BA or AB,BA"]),
    (["judge", "--judge", "local/smollm2", "--orders", "AB,AB"], ["--orders", "'AB,AB'"]),
    (["judge", "--judge", "local/smollm2", "--mutation", "bogus"], ["--mutation", "unknown mutation 'bogus'"]),
    (["judge", "--judge", "local/smollm2", "--concurrency", "0"], ["--concurrency", "0 is not allowed"]),
    (["judge", "--judge", "local/smollm2", "--temperature", "nan"], ["--temperature", "nan is not allowed"]),
    (["judge", "--judge", "local/smollm2", "--temperature", "-3"], ["--temperature", "-3 is not allowed"]),
    (["aggregate", "--method", "bogus"], ["--method", "unknown method 'bogus'", "ds"]),
    (["aggregate", "--method", "ds,bogus"], ["--method", "unknown method 'bogus'"]),
    (["audit", "--n-boot", "0"], ["--n-boot", "0 is not allowed"]),
    (["annotators", "--n-boot", "-1"], ["--n-boot", "-1 is not allowed"]),
    (["demo", "--items", "0"], ["--items", "0 is not allowed"]),
])
def test_bad_option_values_are_one_line_usage_errors(ws_dir, capsys, argv, fragments):
    assert main([*argv, "-w", ws_dir]) == 2
    line = _one_line_error(capsys, *fragments)
    assert line.startswith(f"judgecal {argv[0]}: argument ")
    assert capsys.readouterr().out == ""


def test_a_usage_error_from_the_installed_command_is_one_line():
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "judge", "--judge", "local/smollm2", "--items",
                          "-5"], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "judgecal judge: argument --items: -5 is not allowed; give a positive number (1 or more) "
        "(see `judgecal judge --help`)"]


def test_no_items_from_a_named_source_says_which_sources_exist(ws_dir, capsys):
    assert main(["judge", "--judge", "local/smollm2", "--source", "nope", "-w", ws_dir]) == 2
    _one_line_error(capsys, "no items from source 'nope'", "llmbar/Natural")


def test_aggregate_with_an_unknown_judge(ws_dir, capsys):
    assert main(["aggregate", "--with-judges", "replay/llmbar/GPT-4/Nope", "-w", ws_dir]) == 2
    _one_line_error(capsys, "--with-judges: no judgments from 'replay/llmbar/GPT-4/Nope'")
    with Workspace(ws_dir) as w:
        assert not any(m.endswith("+judges") for m in w.annotations_repo.consensus_frame()["method"])


def test_annotators_with_a_single_annotator_is_accepted(tmp_path, capsys):
    f = tmp_path / "one.jsonl"
    f.write_text("".join(json.dumps({**PAIR, "id": f"o{i}", "human_labels": {"solo": "AB"[i % 2]}}) + "\n"
                         for i in range(6)))
    ws = str(tmp_path / "ws")
    assert main(["import", str(f), "-w", ws]) == 0
    assert main(["annotators", "-w", ws, "--n-boot", "50"]) == 0
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err
    assert "solo" in cap.out and "n=    6" in cap.out
    assert "not computable: no item was labelled by two annotators" in cap.out
    rep = json.loads((tmp_path / "ws" / "reports" / "annotators.json").read_text())
    assert rep["fleiss_kappa"]["estimate"] is None and rep["fleiss_kappa"]["n"] == 0
    assert rep["krippendorff_alpha"]["n"] == 0 and rep["pairwise_cohen_kappa"] == {}


@pytest.mark.parametrize(("name", "fragment"), [
    ("out.csv", "export writes .parquet or .jsonl (got '.csv')"),
    ("missing/out.jsonl", "does not exist"),
])
def test_export_to_a_wrong_suffix_or_a_missing_folder(ws_dir, tmp_path, capsys, name, fragment):
    out = tmp_path / name
    assert main(["export", "items", str(out), "-w", ws_dir]) == 2
    _one_line_error(capsys, str(out), fragment)
    assert not out.exists()


def test_workspace_that_is_a_file(tmp_path, capsys):
    f = tmp_path / "afile"
    f.write_text("not a folder")
    assert main(["audit", "-w", str(f)]) == 2
    _one_line_error(capsys, str(f), "is a file, not a workspace folder")
    assert main(["import", "llmbar/Natural", "-w", str(f)]) == 2
    _one_line_error(capsys, "is a file")


def test_corrupt_database(tmp_path, capsys):
    (tmp_path / "ws").mkdir()
    db = tmp_path / "ws" / "judgecal.sqlite"
    db.write_bytes(b"this is not a database, just text that happens to sit here\n" * 20)
    assert main(["aggregate", "-w", str(tmp_path / "ws")]) == 2
    _one_line_error(capsys, str(db), "not a judgecal workspace database")
    res = subprocess.run([sys.executable, "-m", "judgecal.cli", "audit", "-w", str(tmp_path / "ws")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_damaged_database_pages(tmp_path, capsys):
    ws = tmp_path / "ws"
    assert main(["import", "llmbar/Natural", "-w", str(ws)]) == 0
    with open(ws / "judgecal.sqlite", "r+b") as fh:  # a valid header, damaged pages behind it
        fh.seek(8192)
        fh.write(b"\xff" * 40960)
    capsys.readouterr()
    assert main(["audit", "-w", str(ws), "--n-boot", "40"]) == 2
    _one_line_error(capsys, f"judgecal audit: {ws / 'judgecal.sqlite'}: ")


@contextlib.contextmanager
def _read_only(path):
    """``path`` made read-only: by permissions, or (as root, whom permissions do not stop) by a read-only
    bind mount over it."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [path, *path.iterdir()]}
        for p in modes:
            p.chmod(0o555 if p.is_dir() else 0o444)
        try:
            yield
        finally:
            for p, m in modes.items():
                p.chmod(m)
        return
    bind = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot make a read-only file system here: {bind.stderr.decode().strip()}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], capture_output=True)
        if ro.returncode != 0:
            pytest.skip(f"cannot remount read-only: {ro.stderr.decode().strip()}")
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(path)], check=True)  # lazy: even while a file there is open


def test_read_only_workspace(tmp_path, capsys):
    ws = tmp_path / "ws"
    f = tmp_path / "a.jsonl"
    f.write_text(json.dumps({**PAIR, "human_labels": {"x": "A", "y": "A"}}) + "\n")
    assert main(["import", str(f), "-w", str(ws)]) == 0
    with _read_only(ws):
        with pytest.raises(OSError):
            (ws / "probe").write_text("x")
        assert main(["aggregate", "-w", str(ws)]) == 2
        _one_line_error(capsys, str(ws / "judgecal.sqlite"), "read-only")
    with Workspace(ws) as w:
        assert w.annotations_repo.consensus_frame().empty  # nothing was written


def test_judge_names_are_never_rich_markup(tmp_path, capsys, monkeypatch):
    import io

    from rich.console import Console

    from judgecal.data.records import Judgment
    from judgecal.progress import Bar

    monkeypatch.setenv("COLUMNS", "250")
    ws = str(tmp_path / "ws")
    assert main(["import", "llmbar/Natural", "-w", ws]) == 0
    with Workspace(ws) as w:
        ids = sorted(w.items_repo.item_ids())[:20]
        for name in ("openai/[/]", "openai/[/x]", "openai/[bold red]loud"):
            w.judgments_repo.add_judgments([Judgment(key=f"{name}{i}{o}", item_id=i, judge=name, spec_hash="s", order=o,
                                      verdict="A") for i in ids for o in ("AB", "BA")])
    capsys.readouterr()
    assert main(["audit", "-w", ws, "--n-boot", "50"]) == 0
    cap = capsys.readouterr()
    assert "Traceback" not in cap.err and cap.err == ""
    for name in ("openai/[/]", "openai/[/x]", "openai/[bold red]loud"):
        assert name in cap.out
    # the progress bar of a judge run shows the name as it is (on a terminal's stderr)
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    with Bar("openai/[/x]", 1, unit="calls", console=console) as advance:
        advance()
    assert "openai/[/x]" in console.file.getvalue()


def test_unexpected_errors_are_one_line_unless_debugging(ws_dir, tmp_path, capsys, monkeypatch):
    def boom(args):
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr("judgecal.cli.data.cmd_export", boom)  # the export command's own module builds its parser
    assert main(["export", "items", str(tmp_path / "x.jsonl"), "-w", ws_dir]) == 1
    _one_line_error(capsys, "judgecal export: unexpected error: RuntimeError: something broke", "JUDGECAL_DEBUG=1")
    monkeypatch.setenv("JUDGECAL_DEBUG", "1")
    with pytest.raises(RuntimeError, match="something broke"):
        main(["export", "items", str(tmp_path / "x.jsonl"), "-w", ws_dir])


# -- import files ---------------------------------------------------------------------------------


def _import(tmp_path, name, content, *extra):
    f = tmp_path / name
    if isinstance(content, bytes):
        f.write_bytes(content)
    else:
        f.write_text(content, "utf-8")
    return f, main(["import", str(f), "-w", str(tmp_path / "ws"), *extra])


def test_deeply_nested_json(tmp_path, capsys):
    deep = '{"id": "n1", "prompt": "p", "response_a": "a", "response_b": "b", "metadata": ' + \
        "[" * 100_000 + "]" * 100_000 + "}\n"
    f, rc = _import(tmp_path, "deep.jsonl", deep)
    assert rc == 2
    _one_line_error(capsys, f"{f}:1: bad JSON: nested more than 64 levels deep")
    # nesting Python can parse but no record needs is refused too
    f, rc = _import(tmp_path, "deep2.jsonl", json.dumps({**PAIR, "metadata": {"a": [[[[[]]]]]}}) +
                    "\n" + '{"id": "n2", "prompt": "p", "response_a": "a", "response_b": "b", "metadata": {"x": ' +
                    "[" * 200 + "]" * 200 + "}}\n")
    assert rc == 2
    _one_line_error(capsys, f"{f}:2: nested more than 64 levels deep")
    assert not (tmp_path / "ws" / "judgecal.sqlite").exists() or Workspace(tmp_path / "ws").items_repo.item_ids() == set()


def test_lone_surrogate(tmp_path, capsys):
    f, rc = _import(tmp_path, "s.jsonl", json.dumps(PAIR) + "\n" +
                    '{"id": "s2", "prompt": "p", "response_a": "ok \\ud800 here", "response_b": "b"}\n')
    assert rc == 2
    _one_line_error(capsys, f"{f}:2: response_a: holds a lone surrogate")
    f, rc = _import(tmp_path, "s2.jsonl", json.dumps({**PAIR, "human_labels": {"ann\ud800": "A"}},
                                                      ensure_ascii=True) + "\n")
    assert rc == 2
    _one_line_error(capsys, f"{f}:1: human_labels: holds a lone surrogate")
    assert Workspace(tmp_path / "ws").items_repo.item_ids() == set()


def test_directory_given_as_the_import_file(tmp_path, capsys):
    (tmp_path / "folder.jsonl").mkdir()
    assert main(["import", str(tmp_path / "folder.jsonl"), "-w", str(tmp_path / "ws")]) == 2
    _one_line_error(capsys, str(tmp_path / "folder.jsonl"), "is a folder")
    assert not (tmp_path / "ws").exists()


def test_missing_import_file_does_not_create_the_workspace(tmp_path, capsys):
    assert main(["import", str(tmp_path / "absent.jsonl"), "-w", str(tmp_path / "ws")]) == 2
    _one_line_error(capsys, str(tmp_path / "absent.jsonl"), "no such file")
    assert not (tmp_path / "ws").exists()


def test_pointwise_scores(tmp_path, capsys):
    rows = [{"id": "p1", "prompt": "p", "response": "r", "human_labels": {"a": 7.0, "b": "7.0", "c": " 8 "}}]
    f, rc = _import(tmp_path, "ok.jsonl", "".join(json.dumps(r) + "\n" for r in rows), "--task", "pointwise")
    assert rc == 0, capsys.readouterr().err
    ann = Workspace(tmp_path / "ws").annotations_repo.annotations_frame().set_index("annotator")["label"]
    assert ann.to_dict() == {"a": "7", "b": "7", "c": "8"}
    for bad, shown in (("\u00b2", "'²'"), (7.5, "7.5"), ("٣", "'٣'"), (True, "True")):
        f, rc = _import(tmp_path, "bad.jsonl", json.dumps({"id": "p2", "prompt": "p", "response": "r",
                                                            "human_labels": {"a": bad}}) + "\n", "--task", "pointwise")
        assert rc == 2
        _one_line_error(capsys, f"{f}:1: human_labels.a: unknown label {shown}; expected an integer 1-10")


def test_a_byte_order_mark_is_accepted_in_jsonl_and_csv(tmp_path, capsys):
    f, rc = _import(tmp_path, "bom.jsonl", b"\xef\xbb\xbf" + json.dumps(PAIR).encode() + b"\n")
    assert rc == 0, capsys.readouterr().err
    f, rc = _import(tmp_path, "bom.csv", b"\xef\xbb\xbfid,prompt,response_a,response_b\nq2,p,a,b\n")
    assert rc == 0, capsys.readouterr().err
    assert Workspace(tmp_path / "ws").items_repo.item_ids() == {"q1", "q2"}


def test_csv_errors_name_the_physical_line(tmp_path, capsys):
    text = ('id,prompt,response_a,response_b\n'
            'c1,"a prompt\nover three\nlines",a,b\n'   # lines 2-4
            '\n'                                        # line 5, blank
            'c2,,"two\nlines",b\n'                       # lines 6-7: an empty prompt cell
            'c3,p,a,b,extra\n')                          # line 8: one field too many
    f, rc = _import(tmp_path, "ml.csv", text)
    assert rc == 2
    err = capsys.readouterr().err
    assert f"{f}:6: prompt: is empty" in err  # an empty cell is named as empty, not as a missing field
    assert f"{f}:8: 5 fields, but the header names 4" in err
    assert "Traceback" not in err
    # and a good multi-line CSV keeps its text
    f, rc = _import(tmp_path, "good.csv", 'id,prompt,response_a,response_b\nc1,"one\ntwo",a,b\n')
    assert rc == 0
    assert Workspace(tmp_path / "ws").items_repo.items()[0].prompt == "one\ntwo"


def test_invalid_utf8_in_csv_names_the_line(tmp_path, capsys):
    f, rc = _import(tmp_path, "bad.csv", b"id,prompt,response_a,response_b\nq1,p,a,b\nq2,\xff,a,b\n")
    assert rc == 2
    _one_line_error(capsys, f"{f}:3: invalid UTF-8")


def test_a_failed_first_import_leaves_no_workspace(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "prompt": "p", "response_a": "a"}\n')
    ws = tmp_path / "new-ws"
    assert main(["import", str(bad), "-w", str(ws)]) == 2
    assert "bad.jsonl:1: response_b: missing required field" in capsys.readouterr().err
    assert not ws.exists()
