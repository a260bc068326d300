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

    with Workspace(tmp_path / "ws") as ws:
        assert not hasattr(ws, "conn")
        public = {k: v for k, v in vars(ws).items() if not k.startswith("_")}
        assert not [k for k, v in public.items() if isinstance(v, sqlite3.Connection)]
        for repo in (v for k, v in public.items() if k.endswith("_repo")):
            assert not [k for k in vars(repo) if not k.startswith("_")], repo  # a repository exposes only methods


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


def test_the_workspace_has_no_forwarders_and_nothing_calls_one(tmp_path: Path) -> None:
    """Every caller reads and writes an area through its repository (``ws.items_repo.add_items``): the workspace
    itself defines no method of theirs, and no ``<name>.<repository method>`` call in the library, the explorer, the
    tests or the benchmarks is left on a workspace (one named ``ws``, ``w`` or ``*_ws``, as they are throughout)."""
    import ast

    from judgecal.data.store import Workspace
    from judgecal.data.store.annotations import AnnotationsRepository
    from judgecal.data.store.claims import ClaimsRepository
    from judgecal.data.store.explorer import ExplorerRepository
    from judgecal.data.store.items import ItemsRepository
    from judgecal.data.store.judgments import JudgmentsRepository
    from judgecal.data.store.labelstudio import LabelStudioRepository
    from judgecal.data.store.reports import ReportsRepository
    from judgecal.data.store.spans import SpansRepository
    from judgecal.data.store.stability import StabilityRepository

    repos = (AnnotationsRepository, ClaimsRepository, ExplorerRepository, ItemsRepository, JudgmentsRepository,
             LabelStudioRepository, ReportsRepository, SpansRepository, StabilityRepository)
    methods = {k for r in repos for k in vars(r) if not k.startswith("_")} - {"reports_dir"}
    assert len(methods) > 60 and not methods & set(vars(Workspace))
    offenders = []
    for root in ("judgecal", "apps", "tests", "benchmarks"):
        for path in (ROOT / root).rglob("*.py"):
            if path.is_relative_to(ROOT / "judgecal" / "data" / "store"):
                continue
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if (isinstance(node, ast.Attribute) and node.attr in methods and isinstance(node.value, ast.Name)
                        and (node.value.id in ("ws", "w") or node.value.id.endswith("_ws"))):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.id}.{node.attr}")
    # the explorer's cached queries name their repository and method: query("explorer_repo.explorer_item", ...)
    import re

    with Workspace(tmp_path / "ws") as probe:
        for path in (ROOT / "apps").rglob("*.py"):
            for name in re.findall(r'\bquery\("([^"]+)"', path.read_text("utf-8")):
                repo, _, method = name.partition(".")
                if not callable(getattr(getattr(probe, repo, None), method, None)):
                    offenders.append(f"{path.relative_to(ROOT)}: query({name!r}) names no repository method")
    assert offenders == [], "\n".join(offenders)
