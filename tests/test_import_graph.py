"""The import graph has no circle, counting the imports written inside functions (which import-linter's
layers do not see as a circle), and the explorer (``apps/``, installed as ``judgecal.apps``) sits above the
library: only the command line imports it, and it never imports the command line."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TREES = {"judgecal": ROOT / "judgecal", "judgecal.apps": ROOT / "apps"}


def _modules() -> dict[str, Path]:
    mods = {}
    for prefix, folder in TREES.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join([prefix, *parts])] = path
    return mods


def _owner(name: str, mods: dict[str, Path]) -> str | None:
    """The module of ``mods`` that importing ``name`` runs last (a name inside a module is that module)."""
    while name not in mods:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def import_graph() -> dict[str, set[str]]:
    """module -> the judgecal modules it imports anywhere in its body (functions included)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                names = [f"{base}.{a.name}" for a in node.names]
            for name in names:
                target = _owner(name, mods) if name.startswith("judgecal") else None
                if target and target != mod:
                    graph[mod].add(target)
    return graph


def test_no_module_takes_part_in_an_import_circle():
    graph = import_graph()
    assert "judgecal.audit.run" in graph and "judgecal.apps.common" in graph  # both trees are read
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"an import circle: {' -> '.join(exc.args[1])}") from None


def test_the_explorer_is_imported_by_the_command_line_only_and_never_imports_it():
    graph = import_graph()
    users = sorted(m for m, deps in graph.items() if not m.startswith("judgecal.apps")
                   and any(d.startswith("judgecal.apps") for d in deps))
    assert users and all(m.startswith("judgecal.cli") for m in users), users
    upward = sorted(m for m, deps in graph.items() if m.startswith("judgecal.apps")
                    and any(d.startswith("judgecal.cli") for d in deps))
    assert upward == [], upward
