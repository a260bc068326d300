"""MkDocs hook: the reference pages that are generated from the code at build time.

- ``reference/cli.md``: every command's ``--help``, read from ``judgecal.cli.build_parser``;
- ``reference/metrics.md``: the metric and flag catalogue (``judgecal.catalogue``), the registered probes
  (``judgecal.audit.probes.PROBES``) and how to run each optional one (``judgecal.audit.decision``);
- ``reference/audit-schema.md``: the typed parts of ``audit.json``, from its JSON Schema
  (``judgecal.audit.report.json_schema``, the types of :class:`judgecal.audit.report.AuditReport`);
- ``reference/audit-fields.md``: every field of an ``audit.json`` written by a real audit of the example
  files in ``data/`` (its path, JSON type and value there), the typed ones and the sections kept as written.

The pages exist only in the built site; ``mkdocs build --strict`` fails when one of them cannot be made.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
HELP_WIDTH = "100"


def _subcommands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) for the parser and every subcommand below it, depth first."""
    yield path, parser
    for action in parser._actions:  # argparse keeps its subparsers here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, (*path, name))


def cli_page() -> str:
    from judgecal.cli import build_parser

    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps help at the terminal's width
    out = ["# Command line", "",
           "Generated from `judgecal.cli.build_parser` when the site is built: each section is the command's "
           "own `--help`. Every command takes `--workspace DIR` (default: `$JUDGECAL_WORKSPACE`); a bad "
           "argument, file or workspace stops with one line on stderr naming it (exit status 2), and "
           "`JUDGECAL_DEBUG=1` shows the traceback of an unexpected error.", ""]
    for path, parser in _subcommands(build_parser()):
        name = " ".join(("judgecal", *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        out += [f"{level} `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def _md(text: str) -> str:
    """A catalogue string inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def metrics_page() -> str:
    from judgecal.audit.probes import PROBES, optional_probes, pairwise_only
    from judgecal.catalogue import FLAGS, METRICS, SEVERITIES, info

    out = ["# Metrics, flags and probes", "",
           "Generated from `judgecal/catalogue.py` and the registered probes when the site is built. The "
           "terminal, `audit.html`/`audit.pdf` and the explorer read the same catalogue, so the words here are "
           "the words they show. Every estimate in `audit.json` is `{estimate, ci_low, ci_high, n}` with an "
           "item-level (cluster) bootstrap percentile interval; a tested metric adds `null_value`, `p`, `q` "
           "(Benjamini–Hochberg over every tested metric of the report) and `mde`.", ""]
    groups: dict[str, list[Any]] = {}
    for name in METRICS:
        m = info(name)  # a label metric worded generically ("the positive label")
        groups.setdefault(m.group, []).append(m)
    out += ["## Metrics", ""]
    for group, ms in groups.items():
        out += [f"### {group.capitalize()}", "", "| key | title | definition | unit | read against | good | flag rule |",
                "|---|---|---|---|---|---|---|"]
        out += [f"| `{m.name}` | {_md(m.title)} | {_md(m.definition)} | {_md(m.unit)} | {_md(m.reference) or '—'} "
                f"| {_md(m.good)} | {_md(m.flag) or '—'} |" for m in ms]
        out.append("")
    out += ["## Flags", "", "A flag needs significance (BH q < α) *and* an effect at least the effect of interest "
            "(`settings.effect_of_interest`, 5 points by default).", "",
            "| severity | meaning |", "|---|---|"]
    out += [f"| `{k}` | {_md(v)} |" for k, v in SEVERITIES.items()]
    out += ["", "| code | title | in words | severity | metric |", "|---|---|---|---|---|"]
    out += [f"| `{f.code}` | {_md(f.title)} | {_md(f.words)} | {f.severity} | `{f.metric}` |" for f in FLAGS.values()]
    out += ["", "A probe whose test had too few items to rule out an effect of interest adds "
            "`<probe>:underpowered` (severity `underpowered`).", "",
            "## Probes", "", "Registered in `judgecal.audit.probes.PROBES` and run in this order; each reads the "
            "metrics of those before it.", "", "| probe | what it measures | runs on |", "|---|---|---|"]
    for p in PROBES:
        doc = _md(" ".join((inspect.getdoc(type(p)) or "").split()))
        runs = "every judge" if not p.needs_alignment else "pairwise judges with a human consensus"
        out.append(f"| `{p.name}` | {doc} | {runs} |")
    out += ["", "### Optional probes: what runs them", "",
            "A probe that was not run is reported as *not tested* with this hint, never as a dash.", "",
            "| metric | probe | how to run it | pairwise only |", "|---|---|---|---|"]
    out += [f"| `{m}` | {probe} | `{how}` | {'yes' if m in pairwise_only() else 'no'} |"
            for m, (probe, how) in optional_probes().items()]
    return "\n".join(out) + "\n"


def _example_audit() -> dict[str, Any]:
    """audit.json of a real audit of data/items.jsonl + data/verdicts.jsonl (a fresh temporary workspace)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryDirectory() as tmp:
        ws = str(Path(tmp) / "ws")
        steps = [["import", str(ROOT / "data/items.jsonl")],
                 ["import", str(ROOT / "data/verdicts.jsonl"), "--as", "judgments", "--spec", str(ROOT / "data/judge.yaml")],
                 ["aggregate"], ["audit", "--n-boot", "200"]]
        for step in steps:
            subprocess.run([sys.executable, "-m", "judgecal.cli", *step, "-w", ws], check=True, env=env,
                           capture_output=True, text=True, cwd=tmp)
        return json.loads((Path(ws) / "reports" / "audit.json").read_text("utf-8"))


def _walk(node: Any, path: str, rows: dict[str, tuple[str, str]], judges: set[str]) -> None:
    kind = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}[type(node)]
    if path:
        value = "" if isinstance(node, dict | list) else json.dumps(node, ensure_ascii=False)
        if isinstance(node, list):
            value = f"{len(node)} entries"
        rows.setdefault(path, (kind, value[:60] + ("…" if len(value) > 60 else "")))
    if isinstance(node, dict):
        for k, v in node.items():
            key = "<judge>" if k in judges else k
            _walk(v, f"{path}.{key}" if path else key, rows, judges)
    elif isinstance(node, list) and node and isinstance(node[0], dict):
        _walk(node[0], f"{path}[]", rows, judges)


def audit_fields_page() -> str:
    report = _example_audit()
    judges = set(report.get("judges", {}))
    rows: dict[str, tuple[str, str]] = {}
    _walk(report, "", rows, judges)
    out = ["# audit.json: every field of a real audit", "",
           f"Generated when the site is built: the example files in `data/` are imported into a fresh workspace, "
           f"aggregated and audited (`judgecal audit --n-boot 200`), and every field of the `audit.json` written "
           f"(schema `{report.get('schema')}`) is listed with its JSON type and its value there. A judge's name "
           f"is shown as `<judge>`; an array of objects is described by its first entry (`[]`).", "",
           "The typed parts (what every audit.json holds) are in the [schema](audit-schema.md); this inventory "
           "shows what one audit of pairwise verdicts writes; sections that need other data (stability runs, "
           "spans, pointwise judges, live probes, `--executor ray`) are absent here and described in "
           "[audit.json](audit-json.md).", "",
           "| field | type | value in the example |", "|---|---|---|"]
    out += [f"| `{p}` | {k} | {('`' + _md(v).replace('`', '') + '`') if v else ''} |" for p, (k, v) in rows.items()]
    return "\n".join(out) + "\n"


def _type(node: dict[str, Any]) -> str:
    """A JSON Schema node's type in words (``Figure``, ``array of string``, ``number or null``)."""
    if "$ref" in node:
        return f"[{node['$ref'].rsplit('/', 1)[-1]}](#{node['$ref'].rsplit('/', 1)[-1].lower()})"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " or ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "anyOf" in node:
        return " or ".join(_type(n) for n in node["anyOf"])
    t = node.get("type", "any")
    if t == "array":
        return f"array of {_type(node.get('items') or {})}"
    if t == "object" and isinstance(node.get("additionalProperties"), dict):
        return f"object of {_type(node['additionalProperties'])} by name"
    return str(t)


def audit_schema_page() -> str:
    from judgecal.audit.report import SCHEMA, json_schema

    schema = json_schema()
    out = ["# audit.json: the schema", "",
           f"Generated from the types of `judgecal.audit.report` (schema `{SCHEMA}`) when the site is built. The "
           "same JSON Schema ships with the package (`judgecal/audit/audit.schema.json`) for other tools to "
           "validate an audit.json with; `judgecal report` refuses a file that does not fit it, naming the field. "
           "An object marked *open* keeps the sections a probe or an analysis adds beside its typed fields "
           "([audit.json](audit-json.md) says what they mean).", ""]
    models = {"AuditReport": schema, **schema.get("$defs", {})}
    for name, node in models.items():
        doc = " ".join(str(node.get("description", "")).split())
        open_ = node.get("additionalProperties", False) is not False
        out += [f"## {name}", "", _md(doc) + (" *Open.*" if open_ else ""), "",
                "| field | type | required |", "|---|---|---|"]
        required = set(node.get("required", []))
        out += [f"| `{f}` | {_md(_type(p))} | {'yes' if f in required else 'no'} |"
                for f, p in node.get("properties", {}).items()]
        out.append("")
    return "\n".join(out) + "\n"


def datasets_page() -> str:
    from judgecal.data.registry import registry

    out = ["# Registered datasets: sources and pinned commits", "",
           "Generated from `judgecal.data.registry.registry()` when the site is built "
           "(`judgecal datasets list` prints the same). What each dataset becomes in a workspace: "
           "[Datasets](datasets.md).", "",
           "| name | what it holds | repository @ pinned commit | files |", "|---|---|---|---|"]
    for name, spec in registry().items():
        repos = "<br>".join(sorted({f"{f.repo}@{f.commit[:12]}" for f in spec.files}))
        out.append(f"| `{name}` | {_md(spec.description)} | {repos} | {len(spec.files)} |")
    return "\n".join(out) + "\n"


PAGES = {"reference/cli.md": cli_page, "reference/metrics.md": metrics_page,
         "reference/audit-schema.md": audit_schema_page, "reference/audit-fields.md": audit_fields_page, "reference/datasets-registry.md": datasets_page}


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(ROOT))  # this checkout's judgecal, not another installed copy
    for uri, make in PAGES.items():
        files.append(File.generated(config, uri, content=make()))
    return files
