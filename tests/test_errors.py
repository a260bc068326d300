"""One exception hierarchy: every error judgecal raises on purpose is a JudgecalError of one kind, naming the input
(never a flag: the command line adds it), mapped to an exit status once, at the command line."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import judgecal
from judgecal.errors import (
    EXIT_STATUS,
    BackendError,
    ConfigError,
    InputError,
    JudgecalError,
    StatsError,
    TransientError,
    UserError,
    exit_status,
)

KINDS = (UserError, ConfigError, BackendError, TransientError)
INTERNAL = {"judgecal.data.formats.base.Skip", "judgecal.data.importers.DuplicateKey", "judgecal.data.verdicts._Bad",
            "judgecal.stats.bootstrap._CountOver15"}  # control flow, never raised out
PACKAGE = Path(judgecal.__file__).parent
BUILTIN = {"ValueError", "RuntimeError", "KeyError", "TypeError"}
# The built-in errors that stay, each a programming error or local control flow, never about a user's input.
ALLOWED = {
    ("data/store/judgments.py", "ValueError"): "a caller names columns that are not judgment fields",
    ("data/store/snapshot.py", "TypeError"): "a frame of the store's own with a column that is not text",
    ("data/store/snapshot.py", "ValueError"): "bootstrap blocks of the wrong shape: an internal invariant",
    ("data/store/warm.py", "ValueError"): "a caller names a read that cannot be filled ahead",
    ("distributed/judge.py", "RuntimeError"): "generate() called on a backend that answers through run_on_ray",
    ("distributed/judge.py", "TypeError"): "run_on_ray given an engine that is not built on remote_backend",
    ("distributed/loopback.py", "RuntimeError"): "the local test cluster's kill_worker finds no raylet to kill",
    ("judges/backends/anthropic_api.py", "TypeError"): "a malformed reply: caught below, recorded as malformed",
    ("judges/backends/anthropic_api.py", "ValueError"): "a malformed reply: caught below, recorded as malformed",
    ("judges/backends/openai_api.py", "ValueError"): "a malformed reply: caught below, recorded as malformed",
    ("judges/backends/openai_http.py", "ValueError"): "a malformed reply: caught below, recorded as malformed",
    ("judges/batch.py", "ValueError"): "a malformed batch reply: caught by import_results, recorded as failed",
    ("report/pdf.py", "ValueError"): "WeasyPrint's URL fetcher refusing an external resource: WeasyPrint catches it",
}
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _errors() -> list[type[BaseException]]:
    found = []
    for mod in pkgutil.walk_packages(judgecal.__path__, "judgecal."):
        if mod.name.startswith(("judgecal.apps", "judgecal.annotation_assets")) or mod.name.endswith("__main__"):
            continue
        m = importlib.import_module(mod.name)
        for _, obj in inspect.getmembers(m, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == m.__name__:
                found.append(obj)
    return found


def _raises() -> list[tuple[str, int, ast.Raise]]:
    """Every ``raise`` of the package: (path under judgecal/, line, node)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        out += [(rel, n.lineno, n) for n in ast.walk(ast.parse(path.read_text("utf-8"))) if isinstance(n, ast.Raise)]
    return out


def _raised_name(node: ast.Raise) -> str | None:
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return exc.id if isinstance(exc, ast.Name) else exc.attr if isinstance(exc, ast.Attribute) else None


def _message(node: ast.AST) -> str:
    """The text of the string literals of a raise (an f-string's values as ``{}``), commands in backticks
    dropped: ``run `judgecal aggregate --method ds` first`` names a command to run, not a flag of this one."""
    parts, inner = [], set()
    for n in ast.walk(node):
        if isinstance(n, ast.JoinedStr):
            parts.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in n.values))
            inner |= {id(v) for v in n.values}
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in inner:
            parts.append(n.value)
    return re.sub(r"`[^`]*`", "", " ".join(parts))


def test_every_error_is_a_judgecal_error_of_one_kind():
    errors = [e for e in _errors() if f"{e.__module__}.{e.__qualname__}" not in INTERNAL]
    assert len(errors) >= 25  # the importers, store, judges, annotation, loop, stability, Ray, report
    for e in errors:
        assert issubclass(e, JudgecalError), e
        kinds = [k for k in KINDS if issubclass(e, k)]
        assert len(kinds) == 1 or e in (JudgecalError,), (e, kinds)


def test_the_library_raises_no_bare_builtin_error_outside_the_allow_list():
    """An input the library refuses is a JudgecalError (an InputError or StatsError is still a ValueError);
    a bare ValueError/RuntimeError/KeyError/TypeError is only a programming error or local control flow."""
    found = {(rel, line, _raised_name(n)) for rel, line, n in _raises() if _raised_name(n) in BUILTIN}
    bare = sorted((rel, line, name) for rel, line, name in found if (rel, name) not in ALLOWED)
    assert not bare, bare
    assert {(rel, name) for rel, _, name in found} == set(ALLOWED)  # no entry outlives its raise


def test_no_library_message_names_a_flag():
    """The library names the input (the judge, the strategy, the period); the command line adds the flag."""
    flagged = [f"{rel}:{line}: {_message(n.exc)[:90]}" for rel, line, n in _raises()
               if n.exc is not None and not rel.startswith("cli/") and FLAG.search(_message(n.exc))]
    assert not flagged, "\n".join(flagged)


def test_errors_keep_their_builtin_bases():
    from judgecal.data.registry import DatasetError
    from judgecal.judges.spec import SpecError
    from judgecal.loop import LoopError

    assert issubclass(SpecError, ValueError) and issubclass(LoopError, ValueError)
    assert issubclass(InputError, ValueError) and issubclass(StatsError, ValueError)
    assert issubclass(DatasetError, RuntimeError) and issubclass(TransientError, RuntimeError)
    assert TransientError("slow down", retry_after=3.0).retry_after == 3.0
    assert InputError("no such judge", name="judge").name == "judge"


def test_each_kind_has_its_exit_status():
    """2 for what the user can fix (argparse's usage status); sysexits.h's 69 (EX_UNAVAILABLE) for a service
    that failed and 75 (EX_TEMPFAIL) for one worth trying again later."""
    assert {UserError: 2, ConfigError: 2, BackendError: 69, TransientError: 75} == EXIT_STATUS
    for e in _errors():
        if issubclass(e, JudgecalError) and e is not JudgecalError:
            kind = next(k for k in KINDS if issubclass(e, k))
            assert exit_status(e.__new__(e)) == EXIT_STATUS[kind], e


@pytest.fixture
def ws(tmp_path, capsys) -> str:
    from judgecal.cli import main

    assert main(["import", "data/items.jsonl", "-w", str(tmp_path / "ws")]) == 0
    capsys.readouterr()
    return str(tmp_path / "ws")


def _run(argv: list[str], capsys) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    from judgecal.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "unexpected" not in err, err
    return code, err


@pytest.mark.parametrize("argv, line", [
    (["align", "--judge", "local/smollm2", "--method", "fewshot", "--consensus", "nosuch"],
     "judgecal align: --consensus: no consensus 'nosuch' in this workspace"),
    (["stability", "guard"], "judgecal stability: no stability run in this workspace"),
    (["plan", "--judge", "nosuch"], "judgecal plan: --judge: no judge 'nosuch' in this workspace"),
])
def test_a_user_error_is_exit_2(ws, capsys, argv, line):
    code, err = _run([*argv, "-w", ws], capsys)
    assert code == 2 and err.startswith(line)


def test_a_bad_file_is_exit_2_naming_file_and_line(ws, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{oops\n", "utf-8")
    code, err = _run(["import", str(bad), "-w", ws], capsys)
    assert code == 2 and err.startswith(f"judgecal import: {bad}:1: bad JSON")


def test_an_input_error_is_exit_2_led_by_the_flag_the_cli_adds(ws, capsys):
    """The library says which input (deterministic decoding), the command line which flag."""
    code, err = _run(["judge", "--judge", "openai/m", "--deterministic", "--quiet", "-w", ws], capsys)
    assert code == 2 and err.startswith("judgecal judge: --deterministic: deterministic decoding is not available "
                                        "for openai/ judges")


def test_a_config_error_is_exit_2(ws, capsys, monkeypatch):
    monkeypatch.setenv("JUDGECAL_LS_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("JUDGECAL_LS_TOKEN", raising=False)
    code, err = _run(["annotate", "pull", "-w", ws], capsys)
    assert code == 2 and err.startswith("judgecal annotate: JUDGECAL_LS_URL is set but JUDGECAL_LS_TOKEN is not")


def test_a_service_that_is_not_there_is_exit_69(ws, capsys):
    from conftest import free_port

    code, err = _run(["annotate", "pull", "-w", ws, "--port", str(free_port())], capsys)
    assert code == 69 and err.startswith("judgecal annotate: Label Studio for ") and "is not running" in err


def test_a_judge_server_that_is_not_there_is_exit_69(ws, capsys):
    """Every call failed because nothing listens at the address: EX_UNAVAILABLE, not 1 (some calls failed)."""
    from conftest import free_port

    from judgecal.cli import main

    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["judge", "--judge", "openai-http/m", "--base-url", url, "--items", "1", "--orders", "AB",
                 "--quiet", "-w", ws]) == 69
    err = capsys.readouterr().err
    assert f"the server at {url} could not be reached" in err and "Traceback" not in err


def test_a_server_still_starting_is_exit_75(ws, capsys):
    """The workspace's Label Studio process is alive but does not answer yet: EX_TEMPFAIL, try again later."""
    from conftest import free_port

    port = free_port()
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        root = Path(ws) / "label-studio"
        root.mkdir()
        (root / "server.json").write_text(json.dumps({"pid": alive.pid, "port": port, "host": "127.0.0.1",
                                                      "public_url": f"http://127.0.0.1:{port}"}))
        code, err = _run(["annotate", "server", "start", "-w", ws, "--port", str(port)], capsys)
    finally:
        alive.kill()
        alive.wait()
    assert code == 75 and f"(pid {alive.pid}) is starting or not answering" in err


def test_the_cli_reference_lists_every_exit_status():
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference_hook", Path(__file__).resolve().parents[1] / "docs"
                                                  / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    rows = "\n".join(hook.exit_statuses())
    for kind, code in EXIT_STATUS.items():
        assert f"| {code} | `{kind.__name__}` |" in rows
