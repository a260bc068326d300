"""The shape of the code, checked: only the store speaks SQL to the workspace database, and the CLI is one
module per command group (the layers themselves are import-linter's contract, run by `make lint`)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def test_only_the_store_touches_the_database_connection() -> None:
    pattern = re.compile(r"\.conn\b|\b_db\.|\bsqlite3\.connect\(")
    store = ROOT / "judgecal" / "data" / "store"
    offenders = []
    for path in [*(ROOT / "judgecal").rglob("*.py"), *(ROOT / "apps").rglob("*.py")]:
        if path.is_relative_to(store):
            continue
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_workspace_has_no_public_connection(tmp_path: Path) -> None:
    import sqlite3

    from judgecal.data.store import Workspace
    from judgecal.data.store.workspace import _Delegate

    with Workspace(tmp_path / "ws") as ws:
        assert not hasattr(ws, "conn")
        public = {k: v for k, v in vars(ws).items() if not k.startswith("_")}
        assert not [k for k, v in public.items() if isinstance(v, sqlite3.Connection)]
        for repo in (v for k, v in public.items() if k.endswith("_repo")):
            assert not [k for k in vars(repo) if not k.startswith("_")], repo  # a repository exposes only methods
        assert ws.add_items.__self__ is ws.items_repo  # the Workspace methods are the repositories' own
        delegates = {k: v for k, v in vars(Workspace).items() if isinstance(v, _Delegate)}
        for name, d in delegates.items():  # each names its repository's method of that name
            assert (d.method.__name__, d.method.__qualname__.split(".")[0]) == (name, type(getattr(ws, d.repo)).__name__)


def _subcommands(parser: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every command and subcommand's parser, by its words after ``judgecal``."""
    out = [(path, parser)]
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _subcommands(sub, (*path, name))
    return out


def test_the_cli_is_one_module_per_command_group() -> None:
    """Each command group's module builds its own commands' parsers (``add_parser``); ``cli/__init__.py`` only
    assembles them, and each command runs a function of the module that registered it."""
    from judgecal.cli import ORDER, build_parser
    from judgecal.cli import groups as modules

    groups = {"data": ("datasets", "import", "export"), "judging": ("judge",), "probe": ("probe",),
              "annotation": ("annotate", "aggregate", "annotators"), "audit": ("audit", "report", "plan", "validate"),
              "explore": ("app", "demo"), "stability": ("stability",), "monitor": ("monitor",), "serve": ("serve",),
              "loop": ("gate", "regrade", "align", "cascade", "panel")}
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert list(sub.choices) == list(ORDER) and sorted(ORDER) == sorted(c for cs in groups.values() for c in cs)
    for group in modules():
        one = argparse.ArgumentParser().add_subparsers()
        group.add_parser(one)  # the module alone registers exactly its group's commands
        module = group.__name__.rsplit(".", 1)[1]
        assert sorted(one.choices) == sorted(groups[module]), module
        for command in groups[module]:
            func = sub.choices[command].get_default("func")
            assert func.__module__ == f"judgecal.cli.{module}", (command, func.__module__)
    init = (ROOT / "judgecal/cli/__init__.py").read_text("utf-8")
    # no command's parser is built here: the one argument is judgecal's own --version
    assert 'add_parser("' not in init and init.count(".add_argument(") == 1
    assert len(init.splitlines()) < 400


def test_every_command_has_help(capsys: Any) -> None:
    """``judgecal <command> [<subcommand>] --help`` prints that command's help and exits 0, for every one."""
    from judgecal.cli import build_parser, main

    paths = [path for path, _ in _subcommands(build_parser())]
    assert len(paths) > 30
    for path in paths:
        assert main([*path, "--help"]) == 0, path
        out = capsys.readouterr().out
        assert out.startswith(f"usage: {' '.join(('judgecal', *path))} "), (path, out[:80])


def test_the_library_calls_the_repositories_not_the_workspace_forwarders() -> None:
    """judgecal and the explorer call ``ws.<area>_repo.<method>``; ``Workspace``'s forwarders are left to tests and
    scripts (a workspace is named ``ws`` throughout the library; mypy sees the typed ones)."""
    import ast

    from judgecal.data.store import Workspace
    from judgecal.data.store.workspace import _Delegate

    forwarders = {k for k, v in vars(Workspace).items() if isinstance(v, _Delegate)}
    assert len(forwarders) > 60
    store = ROOT / "judgecal" / "data" / "store"
    offenders = []
    for path in [*(ROOT / "judgecal").rglob("*.py"), *(ROOT / "apps").rglob("*.py")]:
        if path.is_relative_to(store):
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (isinstance(node, ast.Attribute) and node.attr in forwarders and isinstance(node.value, ast.Name)
                    and node.value.id == "ws"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: ws.{node.attr}")
    assert offenders == [], "\n".join(offenders)
