"""The verdict rules, the thresholds, ``validate`` and the CLI read what probes declare and name none of them.

Each module is parsed (:mod:`ast`); a string literal equal to a registered probe's name, or an attribute of that
name, is a probe named outside its own module: its rule, live calls, thresholds or power check belong in the probe
(:class:`judgecal.audit.probe.Probe`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from judgecal.audit.probes import PROBES

ROOT = Path(__file__).resolve().parents[1] / "judgecal"
READERS = sorted([ROOT / "audit/decision.py", ROOT / "audit/thresholds.py", ROOT / "audit/validate.py",
                  *(ROOT / "cli").glob("*.py")])


def probe_names() -> set[str]:
    return {p.name for p in PROBES}


def named(path: Path, names: set[str]) -> list[str]:
    """``line: name`` for every string literal or attribute in ``path`` that is a probe's name."""
    out = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names:
            out.append(f"{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in names:
            out.append(f"{node.lineno}: .{node.attr}")
    return out


def test_the_registry_has_the_built_in_probes() -> None:
    assert {"alignment", "position", "verbosity", "padding", "injection", "bandwagon"} <= probe_names()


@pytest.mark.parametrize("path", READERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_names_no_probe(path: Path) -> None:
    assert named(path, probe_names()) == [], f"{path.relative_to(ROOT)} names a probe; read its declaration instead"


def test_the_check_finds_a_probe_named(tmp_path: Path) -> None:
    src = tmp_path / "m.py"
    src.write_text('x = "position"\ny = args.padding\nz = "position bias"\n', "utf-8")
    assert named(src, probe_names()) == ["1: 'position'", "2: .padding"]
