"""One exception hierarchy: every error judgecal raises on purpose is a JudgecalError of one kind, mapped to an
exit status once, at the command line."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import judgecal
from judgecal.errors import BackendError, ConfigError, JudgecalError, TransientError, UserError, exit_status

KINDS = (UserError, ConfigError, BackendError, TransientError)
INTERNAL = {"judgecal.data.formats.base.Skip", "judgecal.data.importers.DuplicateKey", "judgecal.data.verdicts._Bad",
            "judgecal.stats.bootstrap._CountOver15"}  # control flow, never raised out


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


def test_every_error_is_a_judgecal_error_of_one_kind():
    errors = [e for e in _errors() if f"{e.__module__}.{e.__qualname__}" not in INTERNAL]
    assert len(errors) >= 25  # the importers, store, judges, annotation, loop, stability, Ray, report
    for e in errors:
        assert issubclass(e, JudgecalError), e
        kinds = [k for k in KINDS if issubclass(e, k)]
        assert len(kinds) == 1 or e in (JudgecalError,), (e, kinds)


def test_errors_keep_their_builtin_bases():
    from judgecal.data.registry import DatasetError
    from judgecal.judges.spec import SpecError
    from judgecal.loop import LoopError

    assert issubclass(SpecError, ValueError) and issubclass(LoopError, ValueError)
    assert issubclass(DatasetError, RuntimeError) and issubclass(TransientError, RuntimeError)
    assert TransientError("slow down", retry_after=3.0).retry_after == 3.0
    assert exit_status(LoopError("x")) == 2 and exit_status(TransientError("x")) == 2


@pytest.mark.parametrize("argv, line", [
    (["align", "--judge", "local/smollm2", "--method", "fewshot", "--consensus", "nosuch"],
     "judgecal align: no consensus 'nosuch' in this workspace"),
    (["stability", "guard"], "judgecal stability: no stability run in this workspace"),
])
def test_the_command_line_maps_them_once(tmp_path, capsys, argv, line):
    from judgecal.cli import main

    assert main(["import", "data/items.jsonl", "-w", str(tmp_path / "ws")]) == 0
    capsys.readouterr()
    assert main([*argv, "-w", str(tmp_path / "ws")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(line) and len(err.strip().splitlines()) == 1 and "unexpected" not in err
