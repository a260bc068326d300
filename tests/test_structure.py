"""The shape of the code, checked: only the store speaks SQL to the workspace database, and the CLI is one
module per command group (the layers themselves are import-linter's contract, run by `make lint`)."""

from __future__ import annotations

import re
from pathlib import Path

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


def test_the_cli_is_one_module_per_command_group() -> None:
    from judgecal.cli import build_parser

    groups = {"data": ("datasets", "import", "export"), "judging": ("judge",), "probe": ("probe",),
              "annotation": ("annotate", "aggregate", "annotators"), "audit": ("audit", "report", "plan", "validate"),
              "explore": ("app", "demo")}
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for module, commands in groups.items():
        for command in commands:
            func = sub.choices[command].get_default("func")
            assert func.__module__ == f"judgecal.cli.{module}", (command, func.__module__)
    assert len((ROOT / "judgecal/cli/__init__.py").read_text("utf-8").splitlines()) < 400
