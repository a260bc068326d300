"""The shape of the code, checked: only the store speaks SQL to the workspace database, and the CLI is one
module per command group (the layers themselves are import-linter's contract, run by `make lint`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_only_the_store_touches_the_database_connection() -> None:
    pattern = re.compile(r"\b(?:ws|workspace|self\.ws)\.conn\b|\bsqlite3\.connect\(")
    offenders = []
    for path in [*(ROOT / "judgecal").rglob("*.py"), *(ROOT / "apps").rglob("*.py")]:
        if path.relative_to(ROOT).as_posix() == "judgecal/data/store.py":
            continue
        for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_cli_is_one_module_per_command_group() -> None:
    from judgecal.cli import build_parser

    groups = {"data": ("datasets", "import", "export"), "judging": ("judge", "probe"),
              "annotation": ("annotate", "aggregate", "annotators"), "audit": ("audit", "report", "plan", "validate"),
              "explore": ("app", "demo")}
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for module, commands in groups.items():
        for command in commands:
            func = sub.choices[command].get_default("func")
            assert func.__module__ == f"judgecal.cli.{module}", (command, func.__module__)
    assert len((ROOT / "judgecal/cli/__init__.py").read_text("utf-8").splitlines()) < 400
