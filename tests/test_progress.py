"""Progress bars on the long commands (import, audit, annotate pull, judge): on stderr and only on a terminal,
never with --quiet, never in --json stdout, names inert. ``FORCE_COLOR`` makes rich treat the captured
stderr as a terminal, so the commands draw their bars as they would on a person's screen."""

from __future__ import annotations

import io
import json
import re

import pytest
from conftest import copy_workspace, free_port
from rich.console import Console

from judgecal.cli import main
from judgecal.progress import Bar

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _plain(text: str) -> str:
    """What a terminal shows of rich's output: escape codes gone, each redraw on a line of its own."""
    return ANSI.sub("", text).replace("\r", "\n")


def _terminal() -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=200)


@pytest.fixture
def on_a_terminal(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "250")


# -- the helper ---------------------------------------------------------------------------------------
def test_bar_draws_steps_on_a_terminal_and_keeps_names_inert():
    console = _terminal()
    with Bar("importing \x1b]8;;http://x\x07[bold]f.jsonl", unit="rows", console=console) as bar:
        assert bar.shown
        bar.report(500, 1000, "checking")
        bar.report(1000, 1000, "checking")
        bar.report(40, 2000, "writing")  # counting again from 0: a step of its own
        bar(10)
    out = _plain(console.file.getvalue())
    assert "importing \\x1b]8;;http://x\\x07[bold]f.jsonl: checking" in out  # escapes shown, markup literal
    assert "\x1b]8" not in console.file.getvalue()
    assert "500/1000" in out and "40/2000" in out and "50/2000" in out and "rows/s" in out  # each step drawn
    assert bar.done == 50 and bar.total == 2000


@pytest.mark.parametrize("why", ["quiet", "not a terminal", "nothing to do"])
def test_bar_draws_nothing_when_quiet_off_a_terminal_or_empty(why):
    console = Console(file=io.StringIO(), force_terminal=why != "not a terminal", width=200)
    with Bar("audit", 0 if why == "nothing to do" else 10, enabled=why != "quiet", console=console) as bar:
        bar(3)
        bar.report(5, 10, "verbosity")
    assert not bar.shown and console.file.getvalue() == ""
    assert bar.done == 5  # still counted: a caller may read where it is


# -- the commands -------------------------------------------------------------------------------------
def _items_file(path, n):  # type: ignore[no-untyped-def]
    path.write_text("".join(json.dumps({"id": f"x{k}", "prompt": f"Question {k}?", "response_a": f"yes {k}",
                                        "response_b": "no", "human_labels": {"ann": "AB"[k % 2]}}) + "\n"
                            for k in range(n)))


def test_import_shows_checking_then_writing(tmp_path, capsys, on_a_terminal):  # type: ignore[no-untyped-def]
    _items_file(tmp_path / "big.jsonl", 12000)
    assert main(["import", str(tmp_path / "big.jsonl"), "-w", str(tmp_path / "ws")]) == 0
    cap = capsys.readouterr()
    err = _plain(cap.err)
    assert f"importing {tmp_path / 'big.jsonl'}: checking" in err and "0/12000" in err  # per 1,000 records
    assert f"importing {tmp_path / 'big.jsonl'}: writing" in err and "24000/24000" in err  # items + labels
    assert cap.out == f"imported 12000 items and 12000 human labels from {tmp_path / 'big.jsonl'}\n"  # no bar here
    _items_file(tmp_path / "more.jsonl", 3000)
    assert main(["import", str(tmp_path / "more.jsonl"), "--quiet", "-w", str(tmp_path / "ws2")]) == 0
    assert capsys.readouterr().err == ""


def test_a_bad_file_ends_the_bar_with_one_line(tmp_path, capsys, on_a_terminal):  # type: ignore[no-untyped-def]
    _items_file(tmp_path / "bad.jsonl", 2000)
    with (tmp_path / "bad.jsonl").open("a") as f:
        f.write('{"id": "x1", "prompt": "again", "response_a": "a", "response_b": "b"}\n')
    assert main(["import", str(tmp_path / "bad.jsonl"), "-w", str(tmp_path / "ws")]) == 2
    err = _plain(capsys.readouterr().err)
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if "duplicate id" in line] == [
        f"judgecal import: {tmp_path / 'bad.jsonl'}:2001: id: duplicate id 'x1' (first on line 2) (nothing imported)"]
    assert not (tmp_path / "ws").exists()


@pytest.fixture(scope="module")
def llmbar(tmp_path_factory, mirror):  # type: ignore[no-untyped-def]
    import os

    os.environ["JUDGECAL_DATA_MIRROR"] = str(mirror)
    ws = str(tmp_path_factory.mktemp("progress") / "ws")
    assert main(["import", "llmbar/Natural", "--quiet", "-w", ws]) == 0
    return ws


def test_audit_shows_its_steps_and_json_stays_json(llmbar, tmp_path, capsys, on_a_terminal):  # type: ignore[no-untyped-def]
    from judgecal.audit.pipeline import AFTER
    from judgecal.audit.probes import PROBES
    from judgecal.audit.sections import SECTION_STEPS

    capsys.readouterr()
    assert main(["audit", "--json", "--n-boot", "50", "--out", str(tmp_path), "-w", llmbar]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out) == json.loads((tmp_path / "audit.json").read_text())  # nothing else on stdout
    err = _plain(cap.err)
    report = json.loads(cap.out)
    total = len(PROBES) + len(SECTION_STEPS) + len(report["judges"]) + 4  # then annotators, stability, loop, report
    assert AFTER == ("annotators", "stability", "loop", "report")
    assert f"{total}/{total}" in err
    steps = [p.name for p in PROBES] + list(SECTION_STEPS) + [f"reference and verdict of {j}" for j in report["judges"]]
    for step in [*steps, *AFTER]:  # each step is drawn as it starts
        assert f"audit: {step} " in err, step
    assert f"wrote {tmp_path / 'audit.json'}" in err
    assert main(["audit", "--json", "--quiet", "--n-boot", "50", "--out", str(tmp_path), "-w", llmbar]) == 0
    cap = capsys.readouterr()
    json.loads(cap.out)
    assert cap.err == f"wrote {tmp_path / 'audit.json'}\nwrote {tmp_path / 'audit.html'}\n"


def test_judge_bar_goes_to_stderr(llmbar, capsys, on_a_terminal):  # type: ignore[no-untyped-def]
    """The embedded judge on two items: the bar with its call rate is on stderr, the summary on stdout."""
    capsys.readouterr()
    argv = ["judge", "--judge", "local/smollm2", "--items", "2", "--orders", "AB", "--seed", "5", "-w", llmbar]
    assert main(argv) == 0
    cap = capsys.readouterr()
    err = _plain(cap.err)
    assert "local/smollm2" in err and "2/2" in err and "calls/s" in err
    assert "calls/s" not in cap.out and "2 planned" in cap.out
    assert main([*argv[:-2], "--items", "3", "--quiet", "-w", llmbar]) == 0
    assert "calls/s" not in capsys.readouterr().err


def test_pull_shows_tasks_per_page(tmp_path, pandalm_ws, capsys, on_a_terminal):  # type: ignore[no-untyped-def]
    """A real Label Studio server: five tasks pushed to one annotator's project, then pulled with a bar."""
    from judgecal.annotation.annotators import create_annotators
    from judgecal.annotation.server import ManagedServer

    ws = copy_workspace(pandalm_ws, tmp_path / "ws")
    server = ManagedServer(tmp_path / "ws", port=free_port())
    server.start()
    try:
        create_annotators(server, ["reviewer@example.org"])
        base = ["--workspace", str(ws.path), "--port", str(server.port)]
        assert main(["annotate", "push", *base, "--budget", "5", "--source", "pandalm", "--overlap", "1"]) == 0
        capsys.readouterr()
        assert main(["annotate", "pull", *base]) == 0
        cap = capsys.readouterr()
        err = _plain(cap.err)
        assert "pulling: Blind review" in err and "5/5" in err and "tasks/s" in err
        assert cap.out == ("Blind review: 0 new and 0 updated annotations, 0 cancelled, 0 not counted (made or "
                           "changed by someone other than the project's annotator)\n")
        assert main(["annotate", "pull", "--quiet", *base]) == 0
        assert capsys.readouterr().err == ""
    finally:
        server.stop()
        ws.close()
