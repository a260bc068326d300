"""Data in and out: `judgecal datasets`, `judgecal import` (items, labels, verdicts, other tools' files), `judgecal export`."""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from judgecal.cli.common import UsageError, flagged, open_workspace, print_json, workspace_arg
from judgecal.data.registry import CALM_SETS
from judgecal.errors import InputError
from judgecal.inert import term


def cmd_datasets(args: argparse.Namespace) -> int:
    from judgecal.data import registry

    if args.action == "list":
        rows = [{"name": name, "description": spec.description, "repo": spec.files[0].repo,
                 "commit": registry.COMMITS[spec.files[0].repo], "license": registry.LICENSES[spec.files[0].repo]}
                for name, spec in registry.registry().items()]
        if args.json:
            print_json(rows)
            return 0
        for r in rows:
            print(f"{r['name']:32s} {r['description']}  [{r['repo']}@{r['commit'][:10]}, {r['license']}]")
        return 0
    paths = registry.fetch(args.name, progress=True)
    print(f"{args.name}: {len(paths)} files ready")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from judgecal.data import registry

    if args.kind == "judgments":
        return _import_judgments(args)
    if args.spec:
        raise UsageError("--spec applies to --as judgments only")
    from judgecal.data.label_tasks import declare

    declared = declare(args.task, args.labels, args.positive, args.ordinal, args.criteria)
    dataset = args.source in registry.registry()
    if declared is not None and (dataset or args.fmt):
        raise UsageError(f"--task {args.task} reads judgecal's own schema; a dataset or --from format declares "
                         "its own tasks")
    if not dataset and (args.fmt or _other_format(args.source)):
        return _import_format(args)
    if args.replace:
        raise UsageError("--replace applies to --as judgments and to --from formats")
    if not dataset:  # checked before the workspace is created
        from judgecal.data.importers import not_there

        if (why := not_there(Path(args.source))) is not None:
            raise UsageError(f"{args.source}: " + (why.replace("file does not exist", "no such file", 1) + (
                ", and not a dataset name (see `judgecal datasets list`)") if why.startswith("file") else why))
        if not Path(args.source).is_file():
            from judgecal.data.importers import not_a_file

            raise UsageError(f"{args.source}: {not_a_file(Path(args.source))}")
    from judgecal.data.importers import import_file, validate_file
    from judgecal.data.ingest import import_dataset
    from judgecal.data.rows import degenerate_note
    from judgecal.progress import Bar

    sets = tuple(getattr(args, "sets", None) or ())
    if sets and args.source != "calm":
        raise UsageError(f"--set chooses CALM's sets (judgecal import calm --set fact); {term(args.source)} has none")
    if dataset:
        with open_workspace(args) as ws:
            counts = import_dataset(ws, args.source, sets=sets or None)
        print(f"imported {term(args.source)}: {counts['items']} items, {counts['annotations']} human labels, "
              f"{counts['judgments']} recorded judgments from {counts['judges']} judges"
              + (f", {counts['spans']} spans" if counts.get("spans") else ""))
        for what, n in counts.get("notes", {}).items():
            print(f"  {what}: {n}")
        return 0
    with Bar(f"importing {args.source}", enabled=not args.quiet) as bar:  # checking, then writing, per record
        # a file is validated completely before the workspace is opened, so a bad file creates nothing
        parsed = validate_file(args.source, task=args.task, source=args.name, progress=bar.report, declared=declared)
        names = _file_names(parsed.items, parsed.annotations)
        with open_workspace(args) as ws:
            before = _stored_names(ws, (k for k, v in names.items() if v))
            res = import_file(ws, args.source, task=args.task, source=args.name, validated=parsed,
                              progress=bar.report, declared=declared)
        notes = _lookalike_notes(before, names)
    print("\n".join([_import_words(res, term(args.source)) + degenerate_note(res.counts), *notes]))
    return 0


NAME_KINDS = ("judges", "models", "annotators")


def _file_names(items: Iterable[Any], annotations: Iterable[Any], judges: Iterable[str] = ()) -> dict[str, set[str]]:
    """The judges, models and annotators a file names, by kind."""
    return {"judges": set(judges), "models": {c.model for it in items for c in it.candidates if c.model},
            "annotators": {a.annotator for a in annotations}}


def _stored_names(ws: Any, kinds: Iterable[str]) -> dict[str, set[str]]:
    """The workspace's judges, models or annotators (those of ``kinds``: the kinds a file names, so that the
    others are not read), before an import writes."""
    read = {"judges": lambda: set(ws.judgments_repo.judges()), "models": ws.items_repo.model_names,
            "annotators": ws.annotations_repo.annotator_names}
    return {kind: read[kind]() for kind in kinds}


def _lookalike_notes(before: dict[str, set[str]], names: dict[str, set[str]]) -> list[str]:
    """A line for each group of names that reads the same but for case, spacing or invisible characters
    (``"gpt-4"`` beside ``"gpt-4 "``, :func:`judgecal.data.names.lookalikes`), one of them new with this import
    (``names``: the file's, by kind; ``before``: the workspace's before it): they stay apart, and would be counted
    as two judges, models or annotators without a word. A file imported again adds no name, and no line."""
    from judgecal.data.names import lookalikes

    return [term(f"  note: the {kind} {', '.join(repr(n) for n in group)} differ only in case, spacing or invisible "
                 f"characters; they are kept as {len(group)} {kind} (give them one name to count them as one)")
            for kind in NAME_KINDS if kind in before
            for group in lookalikes(names[kind] - before[kind], before[kind] | names[kind])]


def _other_format(source: str) -> bool:
    """A file that is not in judgecal's own item schema but in one of the formats of ``--from``."""
    from judgecal.data.formats import claims

    return Path(source).is_file() and claims(Path(source))


def _import_format(args: argparse.Namespace) -> int:
    """``import FILE --from FORMAT`` (or a file detected as one): map it completely, then write it."""
    from judgecal.data.formats import format_summary, map_file, write

    if args.kind != "items":
        raise UsageError("--from maps a whole file (items, verdicts and labels, each source named by the format); "
                         "--as judgments is for judgecal's own schema")
    try:
        mapped = map_file(args.source, None if args.fmt in (None, "auto") else args.fmt, judge=args.name)
    except InputError as exc:  # no format, or several, claims the file
        raise flagged(exc, {"format": "--from FORMAT"}) from None
    if args.name and not mapped.specs:
        raise UsageError(f"{args.source}: --name names the judges of a --from file, and this file holds no verdicts "
                         "(its human labels keep the source the format names)")
    lines = format_summary(mapped, args.source, detected=args.fmt in (None, "auto"))
    if mapped.items or mapped.external:
        names = _file_names(mapped.items.values(), mapped.annotations, (j.judge for j in mapped.judgments.values()))
        with open_workspace(args, create=not mapped.external) as ws:
            before = _stored_names(ws, (k for k, v in names.items() if v))
            w = write(ws, mapped, replace_changed=args.replace)
        notes = _lookalike_notes(before, names)
        lines.append(f"  written: {w['items']} new items ({w['items_there']} already there), {w['judgments']} new "
                     f"judgments ({w['judgments_there']} already there" + (f", {w['replaced']} replaced" if w["replaced"]
                                                                             else "") + ")")
        lines.extend(notes)
    else:
        lines.append("  nothing imported: no record could be mapped")
    print(term("\n".join(lines), keep_lines=True))
    return 0


def _import_words(res: Any, source: str) -> str:
    """What an import wrote, in words: a re-import of the same file says that it wrote nothing."""
    w = res.written
    if not (w["items"] or w["annotations"] or w["changed_annotations"] or w["spans"]):
        return (f"nothing new in {source}: its {len(res.items)} items and {len(res.annotations)} human labels"
                + (f" and {len(res.spans)} spans" if res.spans else "") + " are already in the workspace")
    old = len(res.items) - w["items"]
    words = f"imported {w['items']} items" + (f" ({old} already there)" if old else "")
    words += f" and {w['annotations']} human labels"
    if w["changed_annotations"]:
        words += f" ({w['changed_annotations']} stored labels replaced by the file's)"
    if w["spans"]:
        words += f", {w['spans']} spans"
    return f"{words} from {source}"


def _import_judgments(args: argparse.Namespace) -> int:
    """Verdicts from the user's own pipeline, about items already in the workspace."""
    from judgecal.data.verdicts import import_verdicts
    from judgecal.judges.spec import load_spec

    if args.name:
        raise UsageError("--name applies to items; a judgment names its judge in the `judge` field")
    if args.task != "pairwise":
        raise UsageError("--task applies to items; a judgment's item says its task")
    source = Path(args.source)
    from judgecal.data.importers import not_there

    if (why := not_there(source)) is not None:
        raise UsageError(f"{args.source}: {why.replace('file does not exist', 'no such file', 1)}")
    if not source.is_file():
        from judgecal.data.importers import not_a_file

        raise UsageError(f"{args.source}: {not_a_file(source)}")
    spec = load_spec(args.spec) if args.spec else None  # a SpecError is a JudgecalError: one line, exit 2
    with open_workspace(args, create=False) as ws:
        before = _stored_names(ws, ["judges"])  # the file's judges are known once it is read
        res = import_verdicts(ws, args.source, replace=args.replace, spec=spec)
    notes = _lookalike_notes(before, {"judges": set(res.judges)})
    if spec is not None:
        from judgecal.judges.registry import BACKENDS

        # a recorded judge may have run anywhere (``backend: import`` says so); one judgecal cannot call again is said
        if spec.backend not in {*BACKENDS, "import", "replay", "metric"}:
            notes.append(term(f"  note: backend {spec.backend!r} of {args.spec} is not one judgecal runs (it runs "
                              f"{', '.join(sorted(BACKENDS))}): the verdicts are kept as recorded, and commands "
                              "that call the judge again (judge, regrade, stability) cannot run it; `backend: "
                              "import` marks a judge that ran elsewhere"))
    if not (res.new or res.replaced):
        print("\n".join([f"nothing new in {term(args.source)}: its {res.unchanged} judgments from {len(res.judges)} "
                         f"judge(s) ({term(', '.join(res.judges))}) are already stored", *notes]))
        return 0
    print(f"imported {res.new} new judgments from {len(res.judges)} judge(s) ({term(', '.join(res.judges))}) in "
          f"{term(args.source)}; {res.unchanged} already stored, {res.replaced} replaced"
          + (f"; {sum(len(v) for v in res.spans.values())} judge spans" if res.spans else "")
          + (f"; {res.zero_length_spans} zero-length span(s) dropped (they mark nothing)" if res.zero_length_spans else ""))
    for line in notes:
        print(line)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.file)
    if out.suffix not in (".parquet", ".jsonl", ".json"):
        raise UsageError(f"{out}: export writes .parquet or .jsonl (got {out.suffix or 'no suffix'!r})")
    if not out.parent.is_dir():
        raise UsageError(f"{out}: the folder {out.parent} does not exist")
    with open_workspace(args, create=False) as ws:
        print(f"wrote {ws.reports_repo.export(args.table, args.file)}")
    return 0


def _format_names() -> tuple[str, ...]:
    from judgecal.data.formats import FORMATS

    return tuple(FORMATS)


def add_parser(sub: Any) -> None:
    """Register ``datasets``, ``import``, ``export`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("datasets", help="list or fetch registered datasets")
    dsub = p.add_subparsers(dest="action", required=True)
    dsub.add_parser("list", help="list the registered datasets").add_argument(
        "--json", action="store_true", help="print the list as JSON")
    f = dsub.add_parser("fetch", help="download (or find in the mirror) and verify one dataset")
    f.add_argument("name")
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("import", help="import a file (JSONL/CSV/Parquet) or a registered dataset")
    p.add_argument("source", help="a file path or a dataset name such as pandalm or llmbar/Natural")
    p.add_argument("--task", choices=("pairwise", "pointwise", "binary", "categorical"), default="pairwise",
                   help="pairwise (two responses, A/B/tie), pointwise (one response, a score), binary (one "
                   "response, one of two labels: --positive) or categorical (one response, one of --labels)")
    p.add_argument("--positive", metavar="LABEL", help="--task binary: the label a pass rate counts (pass, yes, "
                   "true, 1, C: as the file writes it)")
    p.add_argument("--labels", metavar="A,B,...", help="--task categorical: the labels, lowest first with "
                   "--ordinal; --task binary: the two labels, when the file does not show both")
    p.add_argument("--ordinal", action="store_true", help="--task categorical: the labels are ordered (κ is "
                   "quadratic-weighted)")
    p.add_argument("--criteria", metavar="C1,C2,...", help="--task binary/categorical: each record is labelled "
                   "on these criteria (human_labels: annotator -> {criterion: label}); one item per criterion")
    p.add_argument("--name", help="own schema: the source name recorded on the items and labels (default: the file "
                   "stem); --from: the name of the file's judge (several judges: NAME/<judge> each), so a second "
                   "file of one tool, graded by the same grader, is another judge")
    p.add_argument("--from", dest="fmt", metavar="FORMAT", choices=("auto", *_format_names()),
                   help="the file's format: auto (detect it from the content) or one of "
                   f"{', '.join(_format_names())}; without --from, judgecal's own schema unless another "
                   "format is detected")
    p.add_argument("--as", dest="kind", choices=("items", "judgments"), default="items",
                   help="what the file holds: items (default) or judgments (verdicts about items already imported)")
    p.add_argument("--replace", action="store_true", help="with --as judgments or --from: overwrite stored "
                   "judgments whose content changed (default: refuse them; an unchanged re-import writes nothing)")
    p.add_argument("--spec", metavar="YAML", help="with --as judgments: the judge spec of the file's verdicts "
                   "(name, backend, model, rubric, parameters); every record's judge must be its name")
    p.add_argument("--set", dest="sets", action="append", choices=CALM_SETS,
                   help="judgecal import calm: one of CALM's sets (repeat for several; default all three)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    workspace_arg(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", help="export a table to Parquet or JSONL")
    p.add_argument("table", choices=("items", "judgments", "annotations", "consensus"))
    p.add_argument("file", help="output .parquet or .jsonl")
    workspace_arg(p)
    p.set_defaults(func=cmd_export)
