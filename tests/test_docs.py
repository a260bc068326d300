"""The documentation site: it builds with warnings as errors, its reference pages come from the code, a
broken link fails the build, and the README stays a short entry point."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs")
pytest.importorskip("material")


def _mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin",
                                                               "PYTHONPATH": str(ROOT)}, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    res = _mkdocs(ROOT / "mkdocs.yml", out)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def _text(page: Path) -> str:
    import html

    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text("utf-8")))


def test_cli_reference_has_every_command_and_option(site: Path) -> None:
    from judgecal.cli import build_parser

    text = _text(site / "reference" / "cli" / "index.html")

    def walk(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        assert "judgecal " + " ".join(path) in text or not path
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, (*path, name))
            for flag in a.option_strings:
                assert flag in text, (path, flag)

    walk(build_parser(), ())


def test_metric_reference_has_the_catalogue_and_probes(site: Path) -> None:
    from judgecal.audit.probes import PROBES
    from judgecal.catalogue import FLAGS, METRICS, info

    text = _text(site / "reference" / "metrics" / "index.html")
    for name in METRICS:
        m = info(name)  # a label metric worded generically ("the positive label")
        assert m.name in text and m.definition in text and "{" not in m.definition
    for f in FLAGS.values():
        assert f.code in text
    for p in PROBES:
        assert p.name in text


def test_audit_fields_come_from_a_real_audit(site: Path) -> None:
    text = _text(site / "reference" / "audit-fields" / "index.html")
    # the example judge of data/verdicts.jsonl, audited: its Fleiss kappa and the position figure are listed
    assert "judges.<judge>.metrics.first_position_rate.estimate" in text
    assert "consensus.n_labels" in text and "60" in text
    assert "typed parts (what every audit.json holds) are in the" in text


def test_audit_schema_page_comes_from_the_types(site: Path) -> None:
    from judgecal.audit.report import json_schema

    text = _text(site / "reference" / "audit-schema" / "index.html")
    schema = json_schema()
    for name, node in {"AuditReport": schema, **schema["$defs"]}.items():
        assert name in text
        for field in node.get("properties", {}):
            assert field in text, (name, field)


def test_statistics_page_carries_the_citations(site: Path) -> None:
    text = _text(site / "explanation" / "statistics" / "index.html")
    for cited in ("Fleiss (1971)", "Benjamini & Hochberg (1995)", "Angelopoulos, Duchi & Zrnic", "Calderon"):
        assert cited in text


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    """The project's own settings (strict, link validation), on a one-page site with a dead link."""
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))
    small = {k: cfg[k] for k in ("site_name", "strict", "validation", "markdown_extensions")}
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nSee [the guide](no-such-page.md).\n", "utf-8")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(small), "utf-8")
    res = _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert res.returncode != 0 and "no-such-page.md" in res.stderr
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nNo links.\n", "utf-8")
    assert _mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site").returncode == 0


def test_readme_is_a_short_entry_point() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 250
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^make \w+", quick, flags=re.M)
    assert commands == ["make demo", "make test"]
    # every relative link of the README points at a file of the repository
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not re.match(r"[a-z]+:", target):
            assert (ROOT / target).exists(), target
