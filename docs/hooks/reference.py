"""MkDocs hook: the reference pages that are generated from the code at build time.

- ``reference/cli.md``: every command's ``--help``, read from ``judgecal.cli.build_parser``;
- ``reference/metrics.md``: the metric and flag catalogue (``judgecal.catalogue``), the registered probes
  (``judgecal.audit.probes.PROBES``) and how to run each optional one (``judgecal.audit.decision``);
- ``reference/audit-schema.md``: the typed parts of ``audit.json``, from its JSON Schema
  (``judgecal.audit.schema.json_schema``, the types of :class:`judgecal.audit.schema.AuditReport`);
- ``reference/audit-fields.md``: every field of an ``audit.json`` written by a real audit of the example
  files in ``data/`` (its path, JSON type and value there);
- ``reference/datasets-registry.md``: the registered datasets and their pinned commits;
- ``reference/thresholds.md``: every key of ``thresholds.yaml`` (``judgecal.audit.thresholds``) with the meaning
  written above it in ``data/thresholds.yaml``;
- ``reference/rubrics.md`` and ``reference/judge-specs.md``: the fields and the shipped files;
- the verdict rules' table, at the ``<!-- generated: verdict-rules -->`` line of ``reference/verdicts.md``.

Each generated page has a committed placeholder at its path (so links to it work on the repository's web view),
replaced here; ``mkdocs build --strict`` fails when a page cannot be made. The hook imports only the core and
the ``docs`` extra.
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
           "`JUDGECAL_DEBUG=1` shows the traceback of an unexpected error.", "", *exit_statuses()]
    for path, parser in _subcommands(build_parser()):
        name = " ".join(("judgecal", *path))
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        out += [f"{level} `{name}`", "", "```text", parser.format_help().rstrip(), "```", ""]
    return "\n".join(out)


# what a script does on each status, beside the kinds of judgecal.errors.EXIT_STATUS
_EXIT_MEANING = {
    "UserError": "fix the input the message names (a file:line: field, a flag, a name, a workspace); argparse's "
                 "usage errors too",
    "ConfigError": "fix the configuration file or the environment the message names",
    "BackendError": "a service judgecal needs failed (Label Studio, a Ray cluster, a judge server no call "
                    "reached): look at it; `EX_UNAVAILABLE` of sysexits.h",
    "TransientError": "worth trying again later (a server still starting, a workspace changed during the "
                      "run); `EX_TEMPFAIL` of sysexits.h",
}


def exit_statuses() -> list[str]:
    """The exit statuses section of the command-line page, from ``judgecal.errors.EXIT_STATUS``."""
    from judgecal.errors import EXIT_STATUS

    rows = [f"| {code} | `{kind.__name__}` | {_md(_EXIT_MEANING[kind.__name__])} |"
            for kind, code in sorted(EXIT_STATUS.items(), key=lambda kv: kv[1])]
    return ["## Exit statuses", "",
            "| status | error | what to do |", "|---|---|---|",
            "| 0 | | the command did what it was asked |",
            "| 1 | | some judge calls failed (a re-run retries them); `judgecal monitor`: drift declared; an "
            "unexpected error |",
            *rows,
            "| 130 | | interrupted (Ctrl-C); judgments so far are saved |", ""]


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
    from judgecal.audit.schema import SCHEMA, json_schema

    schema = json_schema()
    out = ["# audit.json: the schema", "",
           f"Generated from the types of `judgecal.audit.schema` (schema `{SCHEMA}`) when the site is built. The "
           "same JSON Schema ships with the package (`judgecal/audit/audit.schema.json`) for other tools to "
           "validate an audit.json with; `judgecal report` refuses a file that does not fit it, naming the field. "
           "Every object is closed (a key its type does not name is refused) but three that probes extend: a judge "
           "takes a section under each probe's name (a `ProbeSection`, built-in probes' and plugins' alike), a "
           "figure takes a metric's own fields and the thresholds take a probe's own, each of the type shown "
           "([audit.json](audit-json.md) says what they mean).", ""]
    models = {"AuditReport": schema, **schema.get("$defs", {})}
    for name, node in models.items():
        doc = " ".join(str(node.get("description", "")).split())
        extra = node.get("additionalProperties", False)
        more = f" *Other keys: {_type(extra)}.*" if isinstance(extra, dict) else ""
        out += [f"## {name}", "", _md(doc) + more, "",
                "| field | type | required |", "|---|---|---|"]
        required = set(node.get("required", []))
        out += [f"| `{f}` | {_md(_type(p))} | {'yes' if f in required else 'no'} |"
                for f, p in node.get("properties", {}).items()]
        out.append("")
    return "\n".join(out + _probe_sections(set(models))) + "\n"


def _probe_sections(described: set[str]) -> list[str]:
    """Each registered probe's own section type (``Probe.section``): what it writes under its name in a judge."""
    from judgecal.audit.probes import PROBES

    out = ["# The probes' sections", "",
           "Each probe states the type of the section it writes under its name in a judge's object "
           "(`Probe.section`); audit.json holds it as a `ProbeSection`, and `check_probe` holds the probe to its "
           "type. The probes of the template battery share one.", ""]
    seen = set(described)  # the report's own parts (Figure, ...) are described above
    by_type: dict[Any, list[str]] = {}
    for probe in PROBES:
        if probe.section is not None:
            by_type.setdefault(probe.section, []).append(probe.name)
    for section, names in by_type.items():
        schema = section.model_json_schema()
        parts = {section.__name__: schema, **schema.get("$defs", {})}
        out += [f"## {section.__name__}: {', '.join(f'`{n}`' for n in names)}", ""]
        for name, node in parts.items():
            if name in seen:
                continue
            seen.add(name)
            doc = " ".join(str(node.get("description", "")).split())
            props = node.get("properties", {})
            if not props:  # a mapping of parts (a RootModel)
                out += [_md(doc) + f" Values: {_md(_type(node.get('additionalProperties') or {}))}.", ""]
                continue
            out += ([f"### {name}", ""] if name != section.__name__ else []) + [
                _md(doc), "", "| field | type |", "|---|---|"]
            out += [f"| `{f}` | {_md(_type(p))} |" for f, p in props.items()]
            out.append("")
    return out


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


# The verdict's rules: (rule code, when it applies, the rule with {threshold.key} placeholders, status).
# Every code the rules give (judgecal/audit/decision.py, section_rules.py and the probes' verdict rules) must be
# listed (tests/test_docs.py checks it).
VERDICT_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("like_kappa_chance", "two or more annotators", "the judge's κ with each annotator has an interval reaching 0 "
     "(what a rater always giving one label gets) while the annotators are clearly above chance; a caution when "
     "neither is", "not aligned"),
    ("like_kappa_gap", "two or more annotators", "the annotators' κ with each other minus the judge's with them is "
     "above {kappa_gap.caution_above} and its paired interval excludes 0 (not aligned above "
     "{kappa_gap.not_aligned_above})", "caution"),
    ("like_kappa_human", "two or more annotators", "the gap's interval holds 0: agrees with people as well as they "
     "agree with each other", "aligned"),
    ("like_kappa_super", "two or more annotators", "the judge agrees with people more than they agree with each "
     "other, by more than {kappa_gap.caution_above}, significantly", "aligned"),
    ("humans_subjective", "two or more annotators", "the annotators' own κ is below {kappa.not_aligned_below}: the "
     "task is subjective, no single rater is reliable on it", "caution"),
    ("humans_moderate", "two or more annotators", "the annotators' own κ is below {kappa.aligned_at_least} (said, "
     "not counted)", "aligned"),
    ("like_accuracy_gap", "two or more annotators", "the annotators' agreement with each other minus the judge's "
     "is above {accuracy_gap.caution_above}, significantly (not aligned above {accuracy_gap.not_aligned_above}; "
     "with `business_loss` set, not aligned above the tolerated gap)", "caution"),
    ("like_accuracy_trivial", "two or more annotators", "the judge's agreement is no better than always answering "
     "the most common label, which the annotators beat", "caution"),
    ("kappa_z", "three or more annotator pairs", "the Judge's Verdict κ z-score and its class (said, not "
     "counted)", "aligned"),
    ("alt_test", "three or more annotators", "the alternative annotator test, passed or not (said, not counted)",
     "aligned"),
    ("kappa", "one annotator (a consensus)", "Cohen's κ with the consensus below {kappa.not_aligned_below}; a "
     "caution below {kappa.aligned_at_least}", "not aligned"),
    ("kappa_gap", "one annotator (a consensus)", "the humans' κ minus the judge's above {kappa_gap.caution_above} "
     "(not aligned above {kappa_gap.not_aligned_above})", "caution"),
    ("accuracy_gap", "one annotator (a consensus)", "an annotator's leave-one-out accuracy minus the judge's above "
     "{accuracy_gap.caution_above} (not aligned above {accuracy_gap.not_aligned_above}, or above the "
     "`business_loss` bound when set)", "caution"),
    ("kappa_undefined", "labelled items", "κ is 0/0 (the labels or the answers all on one level)", "caution"),
    ("no_human_labels", "always", "no item the judge judged has a human label: agreement not measured", "caution"),
    ("too_few_items", "always", "fewer than {min_items} items with a human label", "caution"),
    ("invalid_rate", "always", "more than {invalid_rate.caution_above} of the answers unusable (not aligned above "
     "{invalid_rate.not_aligned_above})", "caution"),
    ("position_severe", "pairwise judges, both orders", "significantly (q < {alpha}) picks one position in more "
     "than {position.not_aligned_beyond} of its decisive verdicts", "not aligned"),
    ("serious_bias", "every probe that declares its flag serious", "flagged, and its figure more than "
     "{serious_bias.not_aligned_beyond} from its null", "not aligned"),
    ("flag:<flag>", "every probe that ran", "a bias flag: significant (q < {alpha}) and its interval reaches the "
     "effect of interest", "caution"),
    ("flag:<probe>:underpowered", "every probe that ran", "not significant, but the interval still holds the "
     "effect of interest: too few items to rule it out", "caution"),
    ("no_sign", "every probe that ran", "the interval is pinned at the null: no sign of bias (said, not counted)",
     "aligned"),
    ("span_trivial", "span judges", "not clearly above the best trivial marker (everything, nothing, random "
     "spans)", "not aligned"),
    ("span_score", "span judges", "chance-corrected span score below {span_score.not_aligned_below}; a caution "
     "below {span_score.aligned_at_least}", "not aligned"),
    ("span_undefined", "span judges", "span F1 undefined on its items", "caution"),
    ("span_no_reference", "span judges", "no two annotators on its items", "caution"),
    ("span_no_scale", "span judges", "the annotators are no better than the trivial marker", "caution"),
    ("span_f1_ratio", "span judges without their texts", "span F1 below {span_f1_ratio.not_aligned_below} of the "
     "annotators' own; a caution below {span_f1_ratio.aligned_at_least}", "not aligned"),
    ("span_no_ceiling", "span judges without their texts", "no two annotators on its items", "caution"),
    ("label_never", "binary and categorical judges", "a label it never recognises (its recall is 0)",
     "not aligned"),
    ("balanced_accuracy", "binary judges", "balanced accuracy whose interval reaches 0.5 (always one label)",
     "not aligned"),
    ("label_rate_gap", "binary and categorical judges", "the annotators' TPR/TNR (per-label recall) with each "
     "other minus the judge's above {label_rate_gap.caution_above} (not aligned above "
     "{label_rate_gap.not_aligned_above})", "caution"),
    ("criterion", "judges of several criteria", "the worst criterion's status; the criteria it is trusted on are "
     "named", "caution"),
)


def _num(x: float) -> str:
    """A bound in words: ``1,000,000`` rather than ``1e+06``."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


def _threshold(key: str) -> Any:
    from judgecal.audit.decision import DEFAULT_THRESHOLDS

    node: Any = DEFAULT_THRESHOLDS
    for part in key.split("."):
        node = node[part]
    return node


def verdict_rules_table() -> str:
    """The rules of the verdict with their default thresholds, filled in from the code."""
    import re

    def fill(text: str) -> str:
        return re.sub(r"\{([a-z_.]+)\}", lambda m: f"**{_threshold(m.group(1)):g}** (`{m.group(1)}`)", text)

    out = ["| rule | applies to | when | status it gives |", "|---|---|---|---|"]
    out += [f"| `{code}` | {where} | {_md(fill(rule))} | {status} |" for code, where, rule, status in VERDICT_RULES]
    return "\n".join(out)


def _threshold_comments() -> dict[str, str]:
    """Each top-level key of the documented draft ``data/thresholds.yaml`` -> the comment above it."""
    notes: dict[str, str] = {}
    block: list[str] = []
    for line in (ROOT / "data" / "thresholds.yaml").read_text("utf-8").splitlines():
        if line.startswith("#"):
            block.append(line.lstrip("#").strip())
        elif not line.strip():
            block = []
        elif not line.startswith(" ") and ":" in line:
            key = line.split(":", 1)[0]
            notes[key] = " ".join(b for b in block if b and not b.startswith(("business_loss:", key + ":")))
            block = []
    return notes


def thresholds_page() -> str:
    import judgecal.audit.probes  # noqa: F401  (registering the probes adds their thresholds)
    from judgecal.audit.thresholds import (
        DEFAULT_THRESHOLDS,
        OPEN,
        ORDERED,
        RANGES,
        REFERENCES,
        THRESHOLDS_VERSION,
    )

    notes = _threshold_comments()
    notes["version"] = f"The format of the file; this judgecal reads version {THRESHOLDS_VERSION}."
    out = ["# thresholds.yaml", "",
           "Generated from `judgecal/audit/thresholds.py` (`DEFAULT_THRESHOLDS`, `RANGES`, with the thresholds each "
           "probe declares) and the comments of the "
           "documented draft `data/thresholds.yaml` when the site is built. `<workspace>/thresholds.yaml` "
           "overrides the defaults key by key (copy `data/thresholds.yaml` there to start); an unknown "
           "key, a value out of range or inverted bounds stop the audit with `file: field: message` (exit status "
           "2). How the rules read these numbers: [Verdicts](verdicts.md).", "",
           "| key | type | allowed | default |", "|---|---|---|---|"]
    rows: list[str] = []

    def walk(node: dict[str, Any], prefix: str) -> None:
        for key, value in node.items():
            name = prefix + key
            if isinstance(value, dict):
                walk(value, name + ".")
                continue
            if name in RANGES:
                lo, hi, whole = RANGES[name]
                kind = "whole number" if whole else "number"
                allowed = f"{lo:g} < x < {hi:g}" if name in OPEN else f"{_num(lo)} to {_num(hi)}"
            elif name == "reference":
                kind, allowed = "string", " or ".join(f"`{r}`" for r in REFERENCES)
            elif name == "business_loss":
                kind, allowed = "mapping or null", ("`tolerated_error_increase` (0 to 1), or `budget`, `requests` "
                                                    "and `cost_per_error` (positive)")
            else:  # version
                kind, allowed = "whole number", f"`{value}`"
            rows.append(f"| `{name}` | {kind} | {allowed} | `{json.dumps(value)}` |")

    walk(DEFAULT_THRESHOLDS, "")
    out += rows
    out += ["", "Bounds that must not be inverted (the first at most the second): " +
            ", ".join(f"`{a}` ≤ `{b}`" for a, b in ORDERED) + ".", "", "## What each key means", ""]
    for key in DEFAULT_THRESHOLDS:
        out += [f"### `{key}`", "", _md(notes.get(key, "")) or "(no note in `data/thresholds.yaml`)", ""]
    return "\n".join(out) + "\n"


RUBRIC_FIELDS: tuple[tuple[str, str, str], ...] = (
    ("name", "yes", "the rubric's name (a spec's `rubric:` names a built-in one, or gives a YAML path)"),
    ("kind", "yes", "one of {kinds}"),
    ("system", "yes", "the system message"),
    ("template", "yes", "the user message: `{{prompt}}`, `{{first}}`, `{{second}}` (pairwise), `{{reference}}`, "
     "`{{question}}`; a `labels` rubric also `{{options}}`, `{{positive}}`, `{{negative}}`, `{{criterion}}`"),
    ("description", "no", "one line of text for people"),
    ("labels", "no", "the verdicts of a pairwise rubric (default `[A, B, tie]`)"),
    ("scale", "no", "`{{min, max}}` of a pointwise rubric (default 1 to 5)"),
    ("question", "no", "the closing question, shown where the template says `{{question}}`; prompt mutations "
     "reword it"),
    ("options", "no", "the answer options, shown where the question says `{{options}}`"),
    ("paraphrase", "no", "`system` and/or `question` reworded (the paraphrase mutation)"),
    ("fewshot", "no", "worked examples in the rubric's format (`prompt`, `first`, `second`, `reference`, "
     "`answer`), used by the few-shot mutation"),
    ("shots", "no", "examples always shown before the item (written by `judgecal align --method fewshot`)"),
    ("max_tokens", "no", "the reply length the rubric needs (an integer ≥ 1; default {max_tokens})"),
    ("span_label", "no", "kind `spans`: the label the judge's spans get"),
    ("coverage", "no", "kind `spans`: coverage word -> score (`{{full: 1.0, partial: 0.5, none: 0.0}}`)"),
    ("criterion", "no", "kind `labels`: shown as `{{criterion}}` when the item's label set names none"),
)


def rubrics_page() -> str:
    import yaml

    from judgecal.judges.rubric import KINDS, builtin_names, load_rubric
    from judgecal.judges.spec import DEFAULT_MAX_TOKENS

    out = ["# Rubrics", "",
           "Generated from `judgecal/judges/rubric.py` and the files in `rubrics/` when the site is built. A rubric "
           "is a YAML prompt template; judgecal ships the ones below (they install inside the package), and a "
           "spec's `rubric:` may also give a path to a file of your own. A bad file stops with `file: field "
           "'…': message`. Changing a rubric changes its content hash and so the judge: two rubrics are two "
           "judges.", "", "## Fields", "", "| field | required | meaning |", "|---|---|---|"]
    out += [f"| `{f}` | {req} | {_md(text.format(kinds=', '.join(f'`{k}`' for k in KINDS), max_tokens=DEFAULT_MAX_TOKENS))} |"
            for f, req, text in RUBRIC_FIELDS]
    out += ["", "## Built-in rubrics", "", "| name | kind | answers | description |", "|---|---|---|---|"]
    for name in builtin_names():
        r = load_rubric(name)
        raw = yaml.safe_load((ROOT / "rubrics" / f"{name}.yaml").read_text("utf-8"))
        answers = ({"pairwise": " / ".join(r.labels), "pointwise": f"{r.scale_min} to {r.scale_max}",
                    "labels": "the item's own labels"}.get(r.kind)
                   or f"quoted spans labelled `{r.span_label}`" + (" and a coverage word" if r.coverage else ""))
        desc = " ".join(str(raw.get("description", "")).split())
        out.append(f"| `{name}` | {r.kind} | {_md(answers)} | {_md(desc)} |")
    return "\n".join(out) + "\n"


def judge_specs_page() -> str:
    import yaml

    from judgecal.judges.registry import BACKENDS
    from judgecal.judges.spec import FIELDS, LIMITS, PARAMETERS, RUN_OPTIONS, SECRET_OPTIONS, shipped_specs

    meaning = {"name": "the judge's name in reports (default `<backend>/<model>`); display only, not hashed",
               "description": "one line for people; not hashed",
               "backend": f"one of {', '.join(f'`{b}`' for b in BACKENDS)} (`import` for verdicts imported with "
                          "`--spec`)",
               "model": "the model as the backend names it",
               "rubric": "a built-in rubric's name or a YAML path relative to the spec file ([Rubrics](rubrics.md))",
               "parameters": f"{', '.join(f'`{p}`' for p in PARAMETERS)}",
               "options": "backend options (e.g. `base_url`); never a key: "
                          f"{', '.join(f'`{o}`' for o in sorted(SECRET_OPTIONS))} are refused"}
    out = ["# Judge specs", "",
           "Generated from `judgecal/judges/spec.py` and the files in `rubrics/judges/` when the site is built. A "
           "judge is a spec: backend, model, rubric and every parameter that changes its answers; its hash "
           "(every field but `name` and `description`) is recorded with each judgment, and two specs are two "
           "judges. Give one as `--judge <backend>/<model>` (the default spec with the command line's "
           "parameters), `--judge <shipped name>` or `--judge file.yaml`; verdicts from another tool come in "
           "with `judgecal import … --as judgments --spec file.yaml`, as `data/judge.yaml` shows.", "",
           "## Fields", "", "| field | meaning |", "|---|---|"]
    out += [f"| `{f}` | {_md(meaning[f])} |" for f in FIELDS]
    out += ["", "| parameter | allowed |", "|---|---|"]
    out += [f"| `{p}` | " + (f"{_num(LIMITS[p][0])} to {_num(LIMITS[p][1])}" if p in LIMITS else "`true` or `false`") + " |"
            for p in PARAMETERS]
    out += ["", "Options that change how a judge runs but never what it answers are passed on without entering "
            "the hash: " + ", ".join(f"`{o}`" for o in sorted(RUN_OPTIONS)) + ".", "",
            "## Shipped specs (`--judge NAME`)", "", "| name | backend/model | rubric | parameters |",
            "|---|---|---|---|"]
    for name in shipped_specs():
        raw = yaml.safe_load((ROOT / "rubrics" / "judges" / f"{name}.yaml").read_text("utf-8"))
        params = ", ".join(f"{k}={v}" for k, v in (raw.get("parameters") or {}).items())
        out.append(f"| `{name}` | `{raw['backend']}/{raw['model']}` | `{raw.get('rubric', 'pairwise')}` | "
                   f"{_md(params)} |")
    out += ["", "## Example", "", "`data/judge.yaml`, the spec of the example verdicts in `data/verdicts.jsonl`:",
            "", "```yaml", (ROOT / "data" / "judge.yaml").read_text("utf-8").rstrip(), "```"]
    return "\n".join(out) + "\n"


PAGES = {"reference/cli.md": cli_page, "reference/metrics.md": metrics_page,
         "reference/audit-schema.md": audit_schema_page, "reference/audit-fields.md": audit_fields_page,
         "reference/datasets-registry.md": datasets_page, "reference/thresholds.md": thresholds_page,
         "reference/rubrics.md": rubrics_page, "reference/judge-specs.md": judge_specs_page}
# a hand-written page's marker line -> what replaces it when the site is built
MARKERS = {"<!-- generated: verdict-rules -->": verdict_rules_table}


def on_files(files: Files, config: Any) -> Files:
    sys.path.insert(0, str(ROOT))  # this checkout's judgecal, not another installed copy
    for uri, make in PAGES.items():
        stub = files.get_file_from_path(uri)  # the committed stub that the repository's web view shows
        if stub is not None:
            files.remove(stub)
        files.append(File.generated(config, uri, content=make()))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    for marker, make in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, make())
    return markdown
