"""The documentation site: it builds with warnings as errors, its reference pages come from the code, a
broken link fails the build, and the README stays a short entry point."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("mkdocs")
pytest.importorskip("material")


def _mkdocs(config: Path, site: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin",
                                                               "PYTHONPATH": str(ROOT), **env}, timeout=600)


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
    from judgecal.audit.schema import json_schema

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
    assert len(readme.splitlines()) <= 300
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^make \w+", quick, flags=re.M)
    assert commands == ["make demo", "make test"]
    # every relative link of the README points at a file of the repository
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not re.match(r"[a-z]+:", target):
            assert (ROOT / target).exists(), target


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdicts_page_lists_every_rule_with_its_default(site: Path) -> None:
    from judgecal.audit.decision import DEFAULT_THRESHOLDS

    text = _text(site / "reference" / "verdicts" / "index.html")
    audit = ROOT / "judgecal" / "audit"
    source = "".join(f.read_text("utf-8") for f in (audit / "decision.py", audit / "section_rules.py",
                                                    *sorted((audit / "probes").glob("*.py"))))
    codes = set(re.findall(r'(?:_r|Effect)\(\d, "([a-z_]+)"', source))
    assert len(codes) > 20
    for code in codes:  # a rule added to the code and not to the page fails here
        assert code in text, code
    for status in ("aligned", "caution", "not aligned", "Underpowered", "Not tested"):
        assert status in text
    # the numbers are the code's defaults, filled in at build time
    assert f"{DEFAULT_THRESHOLDS['kappa_gap']['caution_above']:g} (kappa_gap.caution_above)" in text
    assert f"fewer than {DEFAULT_THRESHOLDS['min_items']:g} (min_items)" in text
    assert "<!-- generated" not in (site / "reference" / "verdicts" / "index.html").read_text("utf-8")


def test_thresholds_reference_has_every_key_and_the_draft_is_the_defaults(site: Path) -> None:
    from judgecal.audit.decision import DEFAULT_THRESHOLDS, load_thresholds

    text = _text(site / "reference" / "thresholds" / "index.html")

    def leaves(node: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        for k, v in node.items():
            out += leaves(v, f"{prefix}{k}.") if isinstance(v, dict) else [(prefix + k, v)]
        return out

    for key, value in leaves(DEFAULT_THRESHOLDS):
        assert key in text and json.dumps(value) in text, key
    notes = _hook()._threshold_comments()
    for key in DEFAULT_THRESHOLDS:  # each top-level key has its meaning, read from data/thresholds.yaml
        assert key == "version" or (len(notes.get(key, "")) > 20 and notes[key][:40].replace("`", "") in text), key
    assert "no note in" not in text
    assert load_thresholds(ROOT / "data" / "thresholds.yaml") == DEFAULT_THRESHOLDS


def test_rubric_and_judge_spec_references_come_from_the_files(site: Path) -> None:
    from judgecal.judges.rubric import KINDS, builtin_names, load_rubric
    from judgecal.judges.spec import FIELDS, PARAMETERS, shipped_specs

    rubrics = _text(site / "reference" / "rubrics" / "index.html")
    for name in builtin_names():
        assert re.search(rf"{re.escape(name)}\s+{load_rubric(name).kind}\s", rubrics), name
    for kind in KINDS:
        assert kind in rubrics
    specs = _text(site / "reference" / "judge-specs" / "index.html")
    for name in (*shipped_specs(), *FIELDS, *PARAMETERS, "example/acme-judge"):
        assert name in specs, name


def test_generated_pages_have_stubs_that_the_build_replaces(site: Path) -> None:
    """The repository's web view shows the stub (no dead link); the site shows the generated page."""
    for uri in _hook().PAGES:
        stub = (ROOT / "docs" / uri).read_text("utf-8")
        assert "generated from the code when the documentation site is built" in stub, uri
        built = _text(site / uri.removesuffix(".md") / "index.html")
        assert "replaces this placeholder" not in built, uri


def test_the_site_builds_with_the_core_and_docs_extra_only(tmp_path: Path) -> None:
    """The hooks (and the real audit they run) import nothing of the other extras: these are hidden."""
    hidden = ("streamlit", "plotly", "torch", "transformers", "label_studio_sdk", "ray", "playwright", "llama_cpp",
              "openai", "anthropic", "weasyprint", "dspy", "inspect_ai", "mlflow", "vllm", "statsmodels",
              "krippendorff", "ppi_py", "evalica", "jsonschema", "pytest", "alpaca_eval")
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(
        "import os, sys\n"
        "HIDDEN = set(os.environ['JUDGECAL_TEST_HIDE'].split(','))\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in HIDDEN:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Hide())\n", "utf-8")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path / "hide"), str(ROOT)]), "JUDGECAL_TEST_HIDE": ",".join(hidden)}
    probe = subprocess.run([sys.executable, "-c", "import streamlit"], capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin", **env})
    assert probe.returncode != 0 and "streamlit" in probe.stderr  # the hiding works
    res = _mkdocs(ROOT / "mkdocs.yml", tmp_path / "site", **env)
    assert res.returncode == 0, res.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "audit-fields" / "index.html").exists()


def test_make_docs_needs_only_the_docs_extra() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    target = re.search(r"^docs: (.*)$", makefile, flags=re.M)
    assert target is not None and target.group(1).split() == ["$(VENV)/.docs-installed"]
    stamp = makefile.split("$(VENV)/.docs-installed: ", 1)[1].split("\n\n", 1)[0]
    assert "-e '.[docs]'" in stamp and "torch" not in stamp
    assert "$(MAKE) docs" in makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
