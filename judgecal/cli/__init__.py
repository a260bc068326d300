"""``judgecal`` command line: a thin layer over the library's APIs."""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path
from typing import Any

from judgecal import __version__
from judgecal.errors import UserError
from judgecal.inert import term

WORKSPACE_ENV = "JUDGECAL_WORKSPACE"


def _ws_arg(p: argparse.ArgumentParser, default: str | None = None) -> None:
    p.add_argument("--workspace", "-w", default=os.environ.get(WORKSPACE_ENV, default),
                   help=f"workspace folder (default: ${WORKSPACE_ENV}{' or ' + default if default else ''})")


def _open_ws(args: argparse.Namespace, create: bool = True) -> Any:
    from judgecal.data.store import Workspace

    if not args.workspace:
        raise UsageError(f"no workspace: pass --workspace DIR or set {WORKSPACE_ENV}")
    return Workspace(args.workspace, create=create)


class UsageError(UserError, RuntimeError):
    """A command given what it cannot use (exit 2)."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``judgecal judge: argument --items: ...``."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _open_unit(text: str) -> float:
    """A number strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not between 0 and 1 (exclusive)")
    return value


def _count(text: str) -> int:
    """A positive whole number (argparse ``type``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not allowed; give a positive number (1 or more)")
    return value


# Resource-sized arguments: the most one command runs (time and memory grow with each), and seeds
# as the random generators take them (NumPy and llama.cpp: 32 bits).
MAX_SAMPLES = 1_000
MAX_N_BOOT = 100_000
MAX_CONCURRENCY = 4_096
MAX_SHARDS = 10_000
MAX_SEEDS = 100_000
MAX_ITEMS = 10_000_000
MAX_SEED = 2**31 - 1 - MAX_SAMPLES  # sample s uses seed + s


def _upto(hi: int, what: str) -> Any:
    """A positive whole number of at most ``hi`` (argparse ``type``): more would run for hours or
    exhaust memory instead of saying so."""
    def check(text: str) -> int:
        value = _count(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"{value:,} is more than {hi:,}, the most {what} one run takes")
        return value
    check.__name__ = "count"
    return check


def _natural(text: str) -> int:
    """A whole number, 0 or more (argparse ``type``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is not allowed; give 0 or more")
    return value


def _seed(text: str) -> int:
    """A seed from 0 to :data:`MAX_SEED` (argparse ``type``)."""
    value = _natural(text)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is too large; a seed is at most {MAX_SEED}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port; give 1-65535")
    return value


def _rate(text: str) -> float:
    """Calls per second: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value <= 1e6:
        raise argparse.ArgumentTypeError(f"{text} is not allowed; give a positive number of calls per second "
                                         "(at most 1e6)")
    return value


def _base_url(text: str) -> str:
    """An http(s) server address without credentials (:func:`judgecal.judges.spec.url_problem`)."""
    from judgecal.judges.spec import url_problem

    if why := url_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text


def _orders(text: str) -> list[str]:
    """``AB``, ``BA`` or ``AB,BA``."""
    orders = [o.strip().upper() for o in text.split(",")]
    bad = [o for o in orders if o not in ("AB", "BA")]
    if bad or len(set(orders)) != len(orders):
        raise argparse.ArgumentTypeError(f"{text!r}: give AB, BA or AB,BA")
    return orders


def _mutation(text: str) -> str:
    from judgecal.judges.mutations import MUTATIONS

    if text != "none" and text not in MUTATIONS:
        raise argparse.ArgumentTypeError(f"unknown mutation {text!r}; known: none, {', '.join(MUTATIONS)}")
    return text


def _temperature(text: str) -> float:
    """A finite sampling temperature, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{text} is not allowed; give a temperature from 0 to 100")
    return value


def _methods(text: str) -> tuple[str, ...]:
    """A comma list of known consensus methods."""
    from judgecal.aggregate.models import AGGREGATORS

    methods = tuple(m.strip() for m in text.split(","))
    bad = [m for m in methods if m not in AGGREGATORS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown method {bad[0]!r}; known: {', '.join(AGGREGATORS)}")
    return methods


def cmd_datasets(args: argparse.Namespace) -> int:
    from judgecal.data import registry

    if args.action == "list":
        rows = [{"name": name, "description": spec.description, "repo": spec.files[0].repo,
                 "commit": registry.COMMITS[spec.files[0].repo], "license": registry.LICENSES[spec.files[0].repo]}
                for name, spec in registry.registry().items()]
        if args.json:
            _print_json(rows)
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
    if args.replace or args.spec:
        raise UsageError("--replace and --spec apply to --as judgments only")
    from judgecal.data.label_tasks import declare

    declared = declare(args.task, args.labels, args.positive, args.ordinal, args.criteria)
    dataset = args.source in registry.registry()
    if declared is not None and (dataset or args.fmt):
        raise UsageError(f"--task {args.task} reads judgecal's own schema; a dataset or --from format declares "
                         "its own tasks")
    if not dataset and (args.fmt or _other_format(args.source)):
        return _import_format(args)
    if not dataset:  # checked before the workspace is created
        if not Path(args.source).exists():
            raise UsageError(f"{args.source}: no such file, and not a dataset name (see `judgecal datasets list`)")
        if not Path(args.source).is_file():
            from judgecal.data.importers import not_a_file

            raise UsageError(f"{args.source}: {not_a_file(Path(args.source))}")
    from judgecal.data.importers import import_file, validate_file
    from judgecal.data.ingest import import_dataset
    from judgecal.data.rows import degenerate_note
    from judgecal.progress import Bar

    if dataset:
        with _open_ws(args) as ws:
            counts = import_dataset(ws, args.source)
        print(f"imported {term(args.source)}: {counts['items']} items, {counts['annotations']} human labels, "
              f"{counts['judgments']} recorded judgments from {counts['judges']} judges"
              + (f", {counts['spans']} spans" if counts.get("spans") else ""))
        return 0
    with Bar(f"importing {args.source}", enabled=not args.quiet) as bar:  # checking, then writing, per record
        # a file is validated completely before the workspace is opened, so a bad file creates nothing
        parsed = validate_file(args.source, task=args.task, source=args.name, progress=bar.report, declared=declared)
        with _open_ws(args) as ws:
            res = import_file(ws, args.source, task=args.task, source=args.name, validated=parsed,
                              progress=bar.report, declared=declared)
    print(_import_words(res, term(args.source)) + degenerate_note(res.counts))
    return 0


def _other_format(source: str) -> bool:
    """A file that is not in judgecal's own item schema but in one of the formats of ``--from``."""
    from judgecal.data.formats import claims

    return Path(source).is_file() and claims(Path(source))


def _import_format(args: argparse.Namespace) -> int:
    """``import FILE --from FORMAT`` (or a file detected as one): map it completely, then write it."""
    from judgecal.data.formats import format_summary, map_file, write

    if args.kind != "items" or args.name:
        raise UsageError("--from maps a whole file (items, verdicts and labels, each source named by the format); "
                         "--as judgments and --name are for judgecal's own schema")
    mapped = map_file(args.source, None if args.fmt in (None, "auto") else args.fmt)
    lines = format_summary(mapped, args.source, detected=args.fmt in (None, "auto"))
    if mapped.items or mapped.external:
        with _open_ws(args, create=not mapped.external) as ws:
            write(ws, mapped)
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
    if not source.exists():
        raise UsageError(f"{args.source}: no such file")
    if not source.is_file():
        from judgecal.data.importers import not_a_file

        raise UsageError(f"{args.source}: {not_a_file(source)}")
    spec = load_spec(args.spec) if args.spec else None  # a SpecError is a JudgecalError: one line, exit 2
    with _open_ws(args, create=False) as ws:
        res = import_verdicts(ws, args.source, replace=args.replace, spec=spec)
    if not (res.new or res.replaced):
        print(f"nothing new in {term(args.source)}: its {res.unchanged} judgments from {len(res.judges)} judge(s) "
              f"({term(', '.join(res.judges))}) are already stored")
        return 0
    print(f"imported {res.new} new judgments from {len(res.judges)} judge(s) ({term(', '.join(res.judges))}) in "
          f"{term(args.source)}; {res.unchanged} already stored, {res.replaced} replaced"
          + (f"; {sum(len(v) for v in res.spans.values())} judge spans" if res.spans else "")
          + (f"; {res.zero_length_spans} zero-length span(s) dropped (they mark nothing)" if res.zero_length_spans else ""))
    return 0


def _select_items(ws: Any, source: str | None, n: int | None, seed: int) -> list[Any]:
    """Items of ``source`` (probe pairs only when asked for by source), a seeded sample of ``n``."""
    items = [it for it in ws.items(source=source) if source or not it.source.startswith("probe:")]
    if n is not None and n < len(items):
        items = random.Random(seed).sample(items, n)
    return list(items)


def make_engine(ws: Any, args: argparse.Namespace) -> Any:
    from judgecal.judges.engine import Engine
    from judgecal.judges.registry import make_backend
    from judgecal.judges.spec import resolve_judge

    # a spec file or shipped spec, or <backend>/<model> with this command's parameters
    spec, rubric = resolve_judge(args.judge, rubric=args.rubric, temperature=args.temperature,
                                 max_tokens=args.max_tokens, base_url=getattr(args, "base_url", None))
    if getattr(args, "deterministic", False):
        from judgecal.judges.determinism import deterministic_spec, enable

        try:
            spec = deterministic_spec(spec)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        enable(args.seed)
    opts: dict[str, Any] = spec.backend_options()
    timeout = getattr(args, "timeout", 120.0)
    if spec.backend in ("openai", "openai-http", "anthropic"):
        opts["timeout_s"] = timeout  # the SDK's own timeout, not shorter than the engine's
    if getattr(args, "executor", "local") == "ray":  # the backend lives on the cluster's workers
        from judgecal.distributed.judge import remote_backend

        backend: Any = remote_backend(f"{spec.backend}/{spec.model}", opts, args.address)
    else:
        backend = make_backend(f"{spec.backend}/{spec.model}", **opts)
    return Engine(ws, backend, rubric, spec=spec, concurrency=args.concurrency, progress=not args.quiet,
                  timeout_s=timeout, max_retry_after=getattr(args, "max_retry_after", 60.0))


def _refuse_together(pairs: list[tuple[str, bool, str]]) -> None:
    """Refuse flags that cannot apply as given: ``(flag, given, why)`` for each."""
    for flag, given, why in pairs:
        if given:
            raise UsageError(f"{flag} {why}; nothing was run")


def cmd_judge(args: argparse.Namespace) -> int:
    from judgecal.judges import batch
    from judgecal.judges.spec import without_credentials

    ray = args.executor == "ray"
    _refuse_together([
        ("--export-batch", bool(args.export_batch and args.import_batch), "and --import-batch cannot apply together "
         "(export a manifest, run it, then import its results)"),
        ("--address", args.address is not None and not ray, "applies to --executor ray only"),
        ("--rate-limit", args.rate_limit is not None and not ray, "applies to --executor ray only"),
        ("--executor ray", ray and bool(args.export_batch or args.import_batch),
         "makes no calls with --export-batch or --import-batch"),
    ])

    if args.judge.startswith("replay/"):
        from judgecal.judges.replay import replay

        with _open_ws(args, create=False) as ws:
            for name, n in replay(ws, args.judge).items():
                print(term(f"{args.judge}: {n} recorded judgments stored from {name}"))
        return 0
    from judgecal.judges.backends.metric import MetricError, metric_request, run_metric_judge

    try:
        metric = metric_request(args.judge)
    except MetricError as exc:
        raise UsageError(f"{args.judge}: {exc}") from None
    if metric is not None:  # a deterministic metric scores items, no model call
        model_only = [flag for flag, given in (
            ("--rubric", args.rubric != "pairwise"), ("--max-tokens", args.max_tokens is not None),
            ("--temperature", args.temperature != 0.0), ("--samples", args.samples != 1),
            ("--orders", list(args.orders) != ["AB", "BA"]), ("--mutation", bool(args.mutation)),
            ("--base-url", bool(args.base_url)), ("--executor", args.executor != "local"),
            ("--export-batch", bool(args.export_batch)), ("--import-batch", bool(args.import_batch)),
            ("--deterministic", args.deterministic)) if given]
        if model_only:
            raise UsageError(f"{args.judge}: a metric judge calls no model; {', '.join(model_only)} would be ignored "
                             "(its settings are options in a spec file)")
        with _open_ws(args, create=False) as ws:
            try:
                got = run_metric_judge(ws, metric[0], _select_items(ws, args.source, args.items, args.sample_seed),
                                       metric[1], metric[2])
            except MetricError as exc:
                raise UsageError(f"{args.judge}: {exc}") from None
        print(f"{term(got['judge'])} (spec {got['spec_hash']}): {got['scored']} items scored, {got['skipped']} skipped "
              "(not one response with a reference key fact)")
        return 0
    with _open_ws(args, create=False) as ws:
        items = _select_items(ws, args.source, args.items, args.sample_seed)
        if not items:
            if args.source:
                raise UsageError(f"no items from source {args.source!r} (sources in this workspace: "
                                 f"{', '.join(ws.sources()) or 'none'})")
            raise UsageError("no items to judge: import some first")
        engine = make_engine(ws, args)
        calls = [c for mut in (args.mutation or ["none"])
                 for c in engine.plan(items, orders=args.orders, samples=args.samples, seed=args.seed,
                                      mutation=mut)]
        if args.export_batch:
            n = batch.export_manifest(engine, calls, args.export_batch)
            print(f"wrote {n} requests to {args.export_batch} (plan beside it)")
            return 0
        if args.import_batch:
            counts = batch.import_results(engine, args.import_batch[0], args.import_batch[1])
            print(" ".join(f"{k}={v}" for k, v in counts.items()))
            return 0
        if args.executor == "ray":
            from judgecal.distributed.judge import run_on_ray

            if args.rate_limit is not None and not 0 < args.rate_limit < float("inf"):
                raise UsageError(f"--rate-limit {args.rate_limit}: give a positive number of calls per second")

            st = run_on_ray(engine, calls, rate_limit=args.rate_limit)
        else:
            st = engine.run(calls)
        name = ws.judge_names().get((engine.judge, engine.spec_hash), engine.judge)
        print(f"{term(name)} (spec {engine.spec_hash}): {st.planned} planned, {st.cached} cached, {st.done} run "
              f"({st.invalid} invalid, {st.errors} errors, {st.retries} retries) in {st.seconds:.1f}s")
        endpoint = engine.spec.endpoint or args.base_url or ""
        for line in _error_lines(st.error_messages, st.errors, without_credentials(endpoint)):
            print(line, file=sys.stderr)
    return 1 if st.errors else 0


# words of a failed connection in the error a backend records (httpx/openai/anthropic/asyncio)
_UNREACHABLE = ("Connect", "Refused", "gaierror", "Unreachable", "NameResolution", "TimeoutError", "OSError")


def _error_lines(messages: list[str], errors: int, endpoint: str) -> list[str]:
    """The first errors of a run, each distinct one once (with how often it was seen among them), and a
    server that could not be reached named once."""
    from collections import Counter

    lines = [f"  error: {term(m)}" + (f" (x{n})" if n > 1 else "") for m, n in Counter(messages).items()]
    if endpoint and any(w in m for m in messages for w in _UNREACHABLE):
        lines.append(f"  {errors} call(s) failed: the server at {term(endpoint)} could not be reached; is it "
                     "running, and is the address (--base-url) right?")
    return lines


def cmd_aggregate(args: argparse.Namespace) -> int:
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.sources import sources

    with _open_ws(args, create=False) as ws:
        judges = tuple(args.with_judges.split(",")) if args.with_judges else ()
        known = set(ws.judges()) | {stored for stored, _ in ws.judge_names()}
        unknown = [j for j in judges if j not in known]
        if unknown:
            raise UsageError(f"--with-judges: no judgments from {unknown[0]!r} in this workspace "
                             f"({len(known)} judges there; see `judgecal audit`)")
        present = sources(ws.annotations_frame())
        try:
            counts = compute_consensus(ws, tuple(args.method), judges=judges, source=args.source)
        except ValueError as exc:  # a source with no labels
            raise UsageError(str(exc)) from None
    if args.source is None and len(present) > 1:
        print(f"human labels from {len(present)} sources ({term(', '.join(present))}): each aggregated on its own; "
              "audit with --consensus METHOD:SOURCE (--source all pools them)")
    print(", ".join(f"{m}: {n} items" for m, n in counts.items()))
    return 0


def cmd_annotate(args: argparse.Namespace) -> int:
    import json

    from judgecal.annotation import tasks as lstasks
    from judgecal.annotation.server import ManagedServer, connection_for

    if args.action == "server":
        srv = ManagedServer(args.workspace or ".", args.port)
        if args.op == "start":
            conn = srv.start()
            print(f"Label Studio is up at {conn.url} (admin login in {srv.cred_path})")
        elif args.op == "stop":
            print("stopped" if srv.stop() else "not running")
        else:
            print(json.dumps(srv.status()))
        return 0
    with _open_ws(args, create=False) as ws:
        from judgecal.annotation.annotators import reviewers

        external = bool(os.environ.get("JUDGECAL_LS_URL"))
        conn = connection_for(args.workspace, args.port)
        ls = lstasks.client(conn)
        people = None if external else reviewers(ws.path)
        if args.action == "check":
            return _annotate_check(conn, people)
        if args.action == "push":
            from judgecal.annotation.select import select

            if external and not args.allow_shared_visibility:
                _refuse_shared(conn)
            from judgecal.annotation.kinds import DEFAULT_PROJECT
            from judgecal.judges.rubric import load_rubric

            project = args.project or DEFAULT_PROJECT[args.kind]
            try:
                items = select(ws, args.strategy, args.budget, source=args.source, seed=args.seed, judge=args.judge,
                               kind=args.kind)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
            gold = _gold(ws, args.gold_from, args.gold, project, set(items), args.seed)
            rubric = (load_rubric(args.rubric or "pointwise-5") if args.kind == "likert" else
                      load_rubric(args.rubric) if args.kind == "labels" and args.rubric else None)
            res = lstasks.push(ws, ls, items, project=project, overlap=args.overlap, gold=gold,
                               gold_from=args.gold_from, seed=args.seed, reviewers=people, kind=args.kind,
                               rubric=rubric)
            for m in res.messages:
                print(term(m))
            where = ", ".join(f"{p} ({who})" if who else str(p) for who, p in res.project_ids.items())
            print(f"project(s) {term(where)}: {res.created} new tasks ({res.gold} gold), {res.already} items already there")
            from judgecal.report.guidelines import write_review_page

            print(f"how to review (the projects' instructions as one page): {write_review_page(ws.reports_dir)}")
        elif args.action == "pull":
            from judgecal.progress import Bar

            copies = ws.ls_copies_frame()
            projects = [args.project] if args.project else sorted(set(copies["project"]))
            results = []
            with Bar("pulling", int(copies["project"].isin(projects).sum()), enabled=not args.quiet,
                     unit="tasks") as bar:  # per page of tasks, each project's annotators in turn
                for project in projects:
                    bar.report(bar.done, None, project)
                    results.append((project, lstasks.pull(ws, ls, project=project, reviewers=people, progress=bar)))
            for project, pulled in results:
                print(f"{term(project)}: {pulled.new} new and {pulled.updated} updated annotations, "
                      f"{pulled.cancelled} cancelled, {len(pulled.flagged)} not counted (made or changed by someone "
                      "other than the project's annotator)")
                for p in pulled.flagged:
                    print(f"  not counted: {term(p)}", file=sys.stderr)
                for p in pulled.problems:
                    print(f"  skipped: {term(p)}", file=sys.stderr)
        elif args.action == "annotators":
            from judgecal.annotation.annotators import create_annotators, list_annotators

            if args.add:
                if external:
                    raise UsageError("annotator accounts are made on the managed server only; on "
                                     f"{conn.url} create them in Label Studio")
                create_annotators(ManagedServer(args.workspace, args.port), args.add)
            logins = list_annotators(args.workspace)
            if args.json:
                _print_json([{k: a[k] for k in ("email", "password", "url")} for a in logins])
                return 0
            for a in logins:
                print(f"{term(a['email'])}\t{term(a['password'])}\t{term(a['url'])}")
    return 0


def _refuse_shared(conn: Any) -> None:
    """Stop a push to an external server where annotators would see each other's labels."""
    import httpx

    from judgecal.annotation.check import organiser_view

    with httpx.Client(base_url=conn.url, headers={"Authorization": f"Token {conn.token}"}, timeout=30) as c:
        why = organiser_view(c)
    if why:
        raise UsageError(f"labels would not be independent on {conn.url}: {'; '.join(why)}. See `judgecal annotate "
                         "check`; push anyway with --allow-shared-visibility")


def _annotate_check(conn: Any, people: list[dict[str, Any]] | None) -> int:
    """Report, as each annotator, what they can see and which writes into another's work the server refuses.

    Exit 0 only when every check ran and nothing got through; 1 when labels would not be independent or
    when nothing could be tried (an external server without annotator logins: "not checked").
    """
    import json

    import httpx

    from judgecal.annotation.annotators import login
    from judgecal.annotation.check import (
        annotator_area,
        organiser_view,
        probe,
        probe_writes,
        verdict,
        write_verdict,
    )

    report: dict[str, Any] = {}
    writes: dict[str, dict[str, str]] = {}
    sessions: dict[str, httpx.Client] = {}
    services: dict[str, httpx.Client] = {}
    try:
        for person in people or []:
            email = person["email"]
            sessions[email] = login(conn.url, email, person["password"])
            services[email] = httpx.Client(base_url=conn.url, timeout=30,
                                           headers={"Authorization": f"Token {person['service_token']}"})
            report[email] = probe(sessions[email])
        areas = {p["email"]: annotator_area(services[p["email"]]) for p in people or []}
        for me in people or []:
            mine = areas[me["email"]]
            if mine is None:
                writes[me["email"]] = {"writes": "not checked: no project of theirs yet (push first)"}
                continue
            writes[me["email"]] = {}
            for other in people or []:
                theirs = areas[other["email"]]
                if other is me or theirs is None:
                    continue
                writes[me["email"]].update(probe_writes(
                    sessions[me["email"]], {**me, **mine}, {**other, **theirs}, services[me["email"]],
                    services[other["email"]]))
    finally:
        for c in [*sessions.values(), *services.values()]:
            c.close()
    for email, checks in writes.items():
        report[email]["writes"] = checks or "not applicable: no other annotator"
    for k, token in enumerate(t for t in os.environ.get("JUDGECAL_LS_ANNOTATOR_TOKENS", "").split(",") if t):
        with httpx.Client(base_url=conn.url, headers={"Authorization": f"Token {token}"}, timeout=30) as c:
            r = probe(c)
            r["writes"] = "not checked: judgecal tries the writes on its managed server only"
            report[r.get("email") or f"token {k + 1}"] = r
    why = verdict(report) + write_verdict({e: w for e, w in writes.items() if "writes" not in w})
    with httpx.Client(base_url=conn.url, headers={"Authorization": f"Token {conn.token}"}, timeout=30) as c:
        why += organiser_view(c) if people is None else []
    unchecked = [e for e, r in report.items() if isinstance(r.get("writes"), str) and
                 r["writes"].startswith("not checked")]
    independent: bool | str = False if why else "not checked" if unchecked or not report else True
    print(json.dumps({"url": conn.url, "annotators": report, "independent": independent, "reasons": why,
                      "not_checked": unchecked if report else ["every check: no annotator logins"]}, indent=1))
    if not report:
        print("not checked: no annotator logins to check with; set JUDGECAL_LS_ANNOTATOR_TOKENS (comma-separated) "
              "for an external server", file=sys.stderr)
    elif independent == "not checked":
        print(f"not checked: the writes of {', '.join(unchecked)}", file=sys.stderr)
    return 0 if independent is True else 1


def _gold(ws: Any, source: str | None, n: int, project: str, exclude: set[str], seed: int) -> dict[str, str]:
    """Gold items still to send: answers from a named annotator, source or stored consensus, seeded draw."""
    from judgecal.annotation.gold import draw_gold

    return draw_gold(ws, source, n, project=project, exclude=exclude, seed=seed)


def cmd_annotators(args: argparse.Namespace) -> int:
    import json

    from judgecal.aggregate.annotators import annotators_report, by_source
    from judgecal.annotation.tasks import gold_labels

    with _open_ws(args, create=False) as ws:
        # agreement describes one group of people: never computed over a mix of sources
        rep = annotators_report(ws.annotations_frame(), gold_labels(ws), args.n_boot, args.source)
        per = by_source(rep)
        out = Path(args.out) if args.out else ws.reports_dir / "annotators.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rep, indent=2))
    if args.json:
        _print_json(rep)
        print(f"wrote {out}", file=sys.stderr)
        return 0
    from judgecal.catalogue import fmt_metric

    for src, r in per.items():
        if len(per) > 1:
            print(f"source {term(src)}:")
        for name, a in r["annotators"].items():
            flags = [f for f in ("likely_spammer", "systematic_bias") if a.get(f)]
            print(f"{term(name):40s} n={a['n_labels']:5d} leave-one-out accuracy {fmt_metric(a.get('loo_accuracy'))} "
                  f"{' '.join(flags)}")
        fk = r["fleiss_kappa"]
        print((f"Fleiss' kappa {fmt_metric(fk)}" if fk["n"] else
               "Fleiss' kappa not computable: no item was labelled by two annotators")
              + (f" (source {term(src)})" if src is not None else ""))
    print(f"wrote {out}")
    return 0


def _audit(ws: Any, out: Path, consensus: str, invalid_as: str, n_boot: int,
           selective: tuple[float, float] | None = None,
           cluster: dict[str, Any] | None = None, summary_only: bool = False,
           progress: Any = None) -> tuple[dict[str, Any], Path, Path]:
    """:func:`judgecal.audit.pipeline.audit_workspace`, then audit.json and audit.html written to ``out``."""
    from judgecal.audit.pipeline import AuditOptions, audit_workspace
    from judgecal.progress import Bar
    from judgecal.report.write import write_report

    bar = progress if progress is not None else Bar("audit", enabled=False)  # a judgecal.progress.Bar
    target, delta = selective if selective is not None else (None, None)
    executor = None
    if cluster is not None:  # --executor ray: the alignment figures from per-item sums on the cluster
        from judgecal.distributed.audit import RayExecutor

        executor = RayExecutor(cluster["address"], cluster["shard_dir"], cluster["n_shards"])
    options = AuditOptions(consensus=consensus, invalid_as=invalid_as, n_boot=n_boot, selective_target=target,
                           selective_delta=delta)
    report = audit_workspace(ws, options, executor, progress=bar.report).to_json()
    js, html = write_report(report, out, summary_only=summary_only)
    bar.report(bar.total or 0)  # the last step (the report: provenance, then these files) is done
    ws.record_report(js)  # the explorer opens the latest audit wherever --out put it
    return report, js, html


def print_summary(report: dict[str, Any]) -> None:
    from judgecal.report.terminal import print_summary as show

    show(report)


def cmd_audit(args: argparse.Namespace) -> int:
    local = args.executor == "local"
    _refuse_together([(flag, given and local, "applies to --executor ray only") for flag, given in (
        ("--address", args.address is not None), ("--shard-dir", args.shard_dir is not None),
        ("--shards", args.shards is not None))])
    from judgecal.progress import Bar

    with _open_ws(args, create=False) as ws, Bar("audit", enabled=not args.quiet) as bar:  # per probe and judge
        out = Path(args.out) if args.out else ws.reports_dir
        cluster = None if local else {"address": args.address, "shard_dir": args.shard_dir,
                                      "n_shards": args.shards or 16}
        report, js, html = _audit(ws, out, args.consensus, args.invalid_as, args.n_boot,
                                  (args.selective_target, args.selective_delta), cluster, args.summary_only, bar)
    written, no_pdf = [js, html], None
    if args.pdf:
        from judgecal.report.pdf import PdfError, write_pdf

        try:
            written.append(write_pdf(report, out / "audit.pdf", summary_only=args.summary_only))
        except PdfError as exc:
            no_pdf = str(exc)
    if args.json:
        _print_json(js.read_text("utf-8"))
    else:
        print_summary(report)
    print("\n".join(f"wrote {w}" for w in written), file=sys.stderr if args.json else sys.stdout)
    if no_pdf:  # audit.json and audit.html are written; the PDF that was asked for is not
        raise UsageError(no_pdf)
    return 0


def _print_json(obj: Any) -> None:
    """Machine-readable output of a command run with --json: JSON on stdout, nothing else there."""
    import json

    from judgecal.report.write import json_safe

    sys.stdout.write(obj if isinstance(obj, str) else json.dumps(json_safe(obj), indent=2, ensure_ascii=False,
                                                                   allow_nan=False, default=str))
    sys.stdout.write("\n")


READABLE = ("judgecal.audit/1", "judgecal.audit/2")  # audit.json schemas `judgecal report` renders


def cmd_report(args: argparse.Namespace) -> int:
    """Render a stored audit.json again: the HTML page or the printable PDF."""
    import json

    from pydantic import ValidationError

    from judgecal.audit.report import SCHEMA, AuditReport

    src = Path(args.audit)
    try:
        report = json.loads(src.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise UsageError(f"{src}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{src}: not UTF-8 text, so not an audit.json") from None
    if not isinstance(report, dict) or report.get("schema") not in READABLE or not isinstance(report.get("judges"), dict):
        raise UsageError(f"{src}: schema: not an audit.json of schema {SCHEMA} (write one with `judgecal audit`)")
    if report["schema"] == SCHEMA:  # an earlier schema's file is rendered as it is
        try:
            AuditReport.from_json(report)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise UsageError(f"{src}: {where}: {err['msg']} (not an audit.json of schema {SCHEMA})") from None
    out = Path(args.out) if args.out else src.with_suffix(f".{args.format}")
    if args.format == "pdf":
        from judgecal.report.pdf import PdfError, write_pdf

        try:
            write_pdf(report, out, summary_only=args.summary_only)
        except PdfError as exc:
            raise UsageError(str(exc)) from None
    else:
        from judgecal.report.write import render_html

        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(render_html(report, summary_only=args.summary_only), "utf-8")
    print(f"wrote {out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    out = Path(args.file)
    if out.suffix not in (".parquet", ".jsonl", ".json"):
        raise UsageError(f"{out}: export writes .parquet or .jsonl (got {out.suffix or 'no suffix'!r})")
    if not out.parent.is_dir():
        raise UsageError(f"{out}: the folder {out.parent} does not exist")
    with _open_ws(args, create=False) as ws:
        print(f"wrote {ws.export(args.table, args.file)}")
    return 0


def cmd_app(args: argparse.Namespace) -> int:
    import importlib.util

    ws = Path(args.workspace or "")
    if not (ws / "judgecal.sqlite").exists():
        raise UsageError(f"{ws}: not a judgecal workspace")
    spec = importlib.util.find_spec("judgecal.apps.explorer")
    script = spec.origin if spec and spec.origin else ""
    cmd = [sys.executable, "-m", "judgecal.apps.serve", "run", script, "--server.headless", "true",
           "--server.port", str(args.port), "--server.address", args.address,
           "--browser.gatherUsageStats", "false", "--client.toolbarMode", "viewer",
           "--server.fileWatcherType", "none",  # a served workspace view, not a development server
           "--", "--workspace", str(ws.resolve())]
    # become the server (no child process left behind when this one is stopped)
    sys.stdout.flush()
    os.execv(sys.executable, cmd)
    return 0  # pragma: no cover


DEMO_ITEMS = 60  # live items of the embedded judge (120 calls, ~0.8 CPU-s each on 2 cores): the demo stays short


def cmd_demo(args: argparse.Namespace) -> int:
    import time

    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.ingest import import_dataset

    t0 = time.perf_counter()
    with _open_ws(args) as ws:
        if "pandalm" not in ws.sources():
            counts = import_dataset(ws, "pandalm")
            print(f"imported PandaLM: {counts['items']} items, {counts['annotations']} human labels, "
                  f"2 recorded judges")
        compute_consensus(ws, ("ds", "mv"))
        items = _select_items(ws, "pandalm", args.items, args.sample_seed)
        n_all = len(ws.items(source="pandalm"))
        args.judge, args.rubric, args.temperature = "local/smollm2", "pairwise", 0.0
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(items, orders=("AB", "BA"), seed=args.seed))
        print(f"local/smollm2: {st.done} new calls, {st.cached} cached, {st.invalid} invalid, in {st.seconds:.1f}s")
        report, js, html = _audit(ws, ws.reports_dir, "ds", "tie", args.n_boot)
    print_summary(report)
    if len(items) < n_all:  # say what the live judge's figures rest on
        print(f"note: local/smollm2 judged {len(items)} of PandaLM's {n_all} items live (both orders) to keep the "
              f"demo short; its figures rest on those items, so its intervals are wider than the recorded "
              f"judges'. `judgecal demo --items {n_all}` judges every item (the calls already made are cached).")
    print(f"audit.json: {js}\naudit.html: {html}")
    from judgecal.report.pdf import PdfError, write_pdf

    try:
        pdf_line = f"trust report (PDF): {write_pdf(report, js.parent / 'audit.pdf')}"
    except PdfError as exc:  # the demo's results stand without the PDF: say what to install, and finish
        pdf_line = f"skipped the PDF trust report: {exc}"
    print(f"demo finished in {time.perf_counter() - t0:.0f}s")
    print(f"open the explorer: judgecal app --workspace {args.workspace}")
    print(pdf_line)
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Plan and run a live probe's extra judge calls (cached and resumable like any judging)."""
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.audit.injection import injected_items
    from judgecal.audit.padding import padded_items

    with _open_ws(args, create=False) as ws:
        n = None if args.kind == "injection" else args.items  # the same sample as `judgecal judge --items`
        base = [it for it in _select_items(ws, args.source, n, args.sample_seed) if not it.source.startswith("probe:")]
        if args.kind == "injection":
            if ws.consensus_frame("ds").empty:
                compute_consensus(ws, ("ds",))
            truth = ws.consensus_frame("ds").set_index("item_id")["label"]
            base = [it for it in base if truth.get(it.item_id) in ("A", "B")]
            base = base[: args.items] if args.items else base
            probes, what, metric = injected_items(base, truth), "injected", "injection_follow_rate"
        else:
            probes, what, metric = padded_items(base), "padded", "pad_pick_rate"
        ws.add_items(probes)
        engine = make_engine(ws, args)
        st = engine.run(engine.plan(base + probes, orders=("AB", "BA"), seed=args.seed))
        print(f"{args.judge}: {len(probes)} {what} pairs over {len(base)} items; {st.done} calls run, "
              f"{st.cached} cached; `judgecal audit` reports {metric}")
    return 1 if st.errors else 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Human labels needed for a target CI half-width, human-only and with PPI++ (judgecal.audit.models)."""
    import json

    from judgecal.audit.models import format_plan, plan_workspace
    from judgecal.data.sources import SourceError

    with _open_ws(args, create=False) as ws:
        try:
            res = plan_workspace(ws, args.consensus, args.target_halfwidth, judges=args.judge,
                                 n_unlabelled=args.unlabelled)
        except (ValueError, SourceError) as exc:
            raise UsageError(str(exc)) from None
    print(json.dumps(res, indent=1) if args.json else "\n".join(term(line) for line in format_plan(res)))
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    import json

    from judgecal.audit.validate import validate
    from judgecal.catalogue import fmt_interval, fmt_p

    res = validate(n_items=args.items, seeds=args.seeds if args.slow else 1, n_boot=args.n_boot)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    if args.json:
        _print_json(res)
        return 0 if res["ok"] else 1
    for c in res["checks"]:
        print(f"{'ok  ' if c['ok'] else 'FAIL'} {c['scenario']:16s} {c['check']}: "
              f"{fmt_interval(c['estimate'], c['ci'][0], c['ci'][1])} p {fmt_p(c['p'])}, q {fmt_p(c['q'])}")
    for key, c in res["coverage"].items():
        worst = min(c["by_scenario"].items(), key=lambda kv: kv[1])
        print(f"{'ok  ' if c['ok'] else 'FAIL'} coverage {key}: {c['coverage']:.3f} pooled (want 0.93-0.97), "
              f"lowest {worst[1]:.3f} ({worst[0]}, want >= 0.90)")
    print("all checks passed" if res["ok"] else "some checks FAILED")
    return 0 if res["ok"] else 1


def _judge_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rubric", default="pairwise", help="built-in rubric name or a YAML file (a judge spec "
                   "file's own rubric wins)")
    p.add_argument("--concurrency", type=_upto(MAX_CONCURRENCY, "concurrent calls"), default=16)
    p.add_argument("--max-tokens", type=_upto(1_000_000, "tokens"), help="reply length (default: the rubric's, e.g. 256 for span "
                   "rubrics, else 8; a judge spec file's own value wins)")
    p.add_argument("--temperature", type=_temperature, default=0.0)
    p.add_argument("--seed", type=_seed, default=0, help="seed of sample 0 (sample s uses seed + s)")
    p.add_argument("--sample-seed", type=_seed, default=0, help="seed for choosing the item sample")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--timeout", type=_seconds, default=120.0, metavar="S",
                   help="seconds one judge call may take before it is retried (default 120)")
    p.add_argument("--max-retry-after", type=_seconds, default=60.0, metavar="S",
                   help="wait at most this long when a server's Retry-After asks for more (default 60)")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of seconds (at most 86400, a day)")
    return value


def _format_names() -> tuple[str, ...]:
    from judgecal.data.formats import FORMATS

    return tuple(FORMATS)


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="judgecal", description="Calibrate LLM judges against blind expert humans.")
    ap.add_argument("--version", action="version", version=f"judgecal {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

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
    p.add_argument("--name", help="source name recorded on the items (default: the file stem)")
    p.add_argument("--from", dest="fmt", metavar="FORMAT", choices=("auto", *_format_names()),
                   help="the file's format: auto (detect it from the content) or one of "
                   f"{', '.join(_format_names())}; without --from, judgecal's own schema unless another "
                   "format is detected")
    p.add_argument("--as", dest="kind", choices=("items", "judgments"), default="items",
                   help="what the file holds: items (default) or judgments (verdicts about items already imported)")
    p.add_argument("--replace", action="store_true", help="with --as judgments: overwrite stored judgments "
                   "whose content changed (default: refuse them)")
    p.add_argument("--spec", metavar="YAML", help="with --as judgments: the judge spec of the file's verdicts "
                   "(name, backend, model, rubric, parameters); every record's judge must be its name")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _ws_arg(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("judge", help="run a judge over the workspace's items (cached, resumable)")
    p.add_argument("--judge", required=True,
                   help="<backend>/<model> (e.g. local/smollm2, openai/gpt-4o-mini, hf/smollm2: the default spec "
                   "with this command's parameters), a judge spec YAML file, a shipped spec name (e.g. "
                   "smollm2-greedy), or replay/pandalm/gpt-3.5-turbo")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=_upto(MAX_ITEMS, "items"), help="judge a random sample of this many items")
    p.add_argument("--orders", type=_orders, default="AB,BA", help="presentation orders (AB, BA or AB,BA)")
    p.add_argument("--samples", type=_upto(MAX_SAMPLES, "samples per order"), default=1,
                   help=f"repeated samples per order (at most {MAX_SAMPLES})")
    p.add_argument("--mutation", action="append", type=_mutation, help="prompt mutation(s) to run besides or instead of 'none': "
                   "whitespace, instruction_after, paraphrase, option_order, fewshot_ab, fewshot_ba (repeatable)")
    p.add_argument("--base-url", type=_base_url, help="OpenAI-compatible server URL for openai/<model> (no "
                   "credentials in it: the key comes from OPENAI_API_KEY)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where the calls run: this process (local) or a Ray cluster (ray; extra 'ray')")
    p.add_argument("--address", help="--executor ray: the cluster (auto, <head>:<port>, or ray://<head>:10001 "
                   "with ray[client]); default RAY_ADDRESS or auto")
    p.add_argument("--rate-limit", type=_rate, metavar="CALLS_PER_S",
                   help="--executor ray: one call rate for the whole cluster (a token bucket)")
    p.add_argument("--export-batch", metavar="FILE", help="write an OpenAI batch manifest instead of calling")
    p.add_argument("--import-batch", nargs=2, metavar=("MANIFEST", "RESULTS"), help="store batch results")
    p.add_argument("--deterministic", action="store_true", help="greedy decoding, every seed set (Python, NumPy, "
                   "torch, CUDA), torch deterministic algorithms, no prefix reuse (local), seeded vLLM without "
                   "prefix caching; a judge of its own")
    _judge_opts(p)
    _ws_arg(p)
    p.set_defaults(func=cmd_judge)

    p = sub.add_parser("aggregate", help="aggregate human labels into a consensus")
    p.add_argument("--method", type=_methods, default="ds,mv", help="comma list of ds, mv, onecoin, glad")
    p.add_argument("--source", help="whose labels: a source name (e.g. pandalm, 'label-studio:Blind review'), "
                   "experts (every label-studio source), dataset, gold, or all (pooled); stored as METHOD:SOURCE. "
                   "Default: one source -> METHOD; several -> each aggregated on its own")
    p.add_argument("--with-judges", help="also aggregate with these judges as extra annotators, stored apart "
                   "as <method>+judges")
    _ws_arg(p)
    p.set_defaults(func=cmd_aggregate)

    p = sub.add_parser("audit", help="audit every judge against the human consensus")
    p.add_argument("--out", help="folder for audit.json and audit.html (default: <workspace>/reports)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE]: ds, mv, onecoin, glad "
                   "(computed when missing), e.g. ds:experts or mv:pandalm, or any other stored method, e.g. "
                   "gold; a plain METHOD only while the labels come from one source")
    p.add_argument("--invalid-as", choices=("tie", "wrong"), default="tie")
    p.add_argument("--n-boot", type=_upto(MAX_N_BOOT, "bootstrap replicates"), default=2000)
    p.add_argument("--pdf", action="store_true", help="also write the printable trust report audit.pdf")
    p.add_argument("--summary-only", action="store_true", help="audit.html and audit.pdf hold page one only (each "
                   "judge's verdict, the reason that matters most, its like-for-like reference, what was not tested), "
                   "without the per-judge detail")
    p.add_argument("--json", action="store_true", help="print audit.json to stdout instead of the summary")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--selective-target", type=_open_unit, default=0.9, help="selective evaluation: the "
                   "agreement with the humans the kept items must reach (default 0.9)")
    p.add_argument("--selective-delta", type=_open_unit, default=0.1, help="selective evaluation: the "
                   "chance the guarantee may fail (default 0.1)")
    p.add_argument("--executor", choices=("local", "ray"), default="local", help="ray: the alignment metrics "
                   "from per-item sums computed by Ray tasks over Parquet shards of the judgments (extra 'ray'); "
                   "the rest on this machine, as audit.json's executor section says")
    p.add_argument("--address", help="--executor ray: the cluster (auto, <head>:<port>, or ray://<head>:10001 "
                   "with ray[client]); default RAY_ADDRESS or auto")
    p.add_argument("--shard-dir", help="--executor ray: where the judgment shards go, a folder every node reads "
                   "at the same path (default: a temporary folder in the workspace, removed afterwards)")
    p.add_argument("--shards", type=_upto(MAX_SHARDS, "shards"), help="--executor ray: number of Parquet shards "
                   "(default 16)")
    _ws_arg(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("annotate", help="blind expert review in Label Studio")
    asub = p.add_subparsers(dest="action", required=True)
    sp = asub.add_parser("server", help="start, stop or check the managed Label Studio server")
    sp.add_argument("op", choices=("start", "stop", "status"))
    sp = asub.add_parser("push", help="send a chosen sample as blind tasks (idempotent)")
    sp.add_argument("--strategy", choices=("random", "disagreement", "order_disagreement", "uncertainty", "escalate"),
                    default="random")
    sp.add_argument("--judge", help="with --strategy escalate: the judge whose escalated items go to people "
                    "(threshold from the last `judgecal audit`)")
    sp.add_argument("--budget", type=_upto(MAX_ITEMS, "items"), default=100, help="how many items")
    sp.add_argument("--overlap", type=_upto(100, "annotators per item"), default=3, help="annotators per item")
    sp.add_argument("--gold", type=_natural, default=0, help="mix in this many gold items with known labels")
    sp.add_argument("--gold-from", help="where gold answers come from: an annotator, a label source (items "
                    "its labels agree on) or consensus:METHOD (a stored consensus); drawn at random with --seed")
    sp.add_argument("--source", help="only items from this source")
    sp.add_argument("--seed", type=_seed, default=0, help="seeds the sample, the gold draw and each annotator's order")
    sp.add_argument("--allow-shared-visibility", action="store_true", help="on an external server, push even "
                    "when annotators would see each other's labels (see `annotate check`)")
    sp.add_argument("--kind", choices=("pairwise", "spans", "likert", "labels"), default="pairwise",
                    help="pairwise choices; spans: mark a response's unsupported stretches (its source shown); "
                    "likert: rate one response on --rubric's scale; labels: pick one of a binary or categorical "
                    "item's declared labels (a multi-criterion record is one task, a label per criterion) "
                    "(default project named after the kind)")
    sp.add_argument("--rubric", help="with --kind likert: the rubric (and scale) shown (default pointwise-5); with "
                    "--kind labels: the rubric whose text annotators see beside the labels (default none)")
    sp = asub.add_parser("pull", help="fetch new annotations (incremental, validated); every project unless --project")
    sp.add_argument("--quiet", action="store_true", help="no progress bar")
    asub.add_parser("check", help="what each annotator can see and do; exit 1 when labels would not be independent")
    sp = asub.add_parser("annotators", help="create annotator accounts and list their login details")
    sp.add_argument("--add", nargs="*", metavar="EMAIL")
    sp.add_argument("--json", action="store_true", help="print the login details as JSON")
    for sp in asub.choices.values():
        sp.add_argument("--project", help="the judgecal project (push: 'Blind review', 'Blind span review', "
                        "'Blind rating review' or 'Blind label review' by --kind)")
        sp.add_argument("--port", type=_port, default=8480)
        _ws_arg(sp)
    p.set_defaults(func=cmd_annotate)

    p = sub.add_parser("annotators", help="annotator quality and inter-annotator agreement")
    p.add_argument("--source", help="only these labels: a source name (e.g. 'label-studio:Blind review'), experts, "
                   "dataset, gold or all (default: each source on its own)")
    p.add_argument("--n-boot", type=_upto(MAX_N_BOOT, "bootstrap replicates"), default=2000)
    p.add_argument("--out", help="file for the JSON report (default: <workspace>/reports/annotators.json)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    _ws_arg(p)
    p.set_defaults(func=cmd_annotators)

    p = sub.add_parser("probe", help="run a live bias probe's extra judge calls (injection, padding)")
    p.add_argument("kind", choices=("injection", "padding"))
    p.add_argument("--judge", required=True, help="<backend>/<model>, a judge spec YAML file or a shipped spec name")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=_upto(MAX_ITEMS, "items"), help="at most this many base items")
    p.add_argument("--base-url", type=_base_url, help="OpenAI-compatible server URL for openai/<model>")
    _judge_opts(p)
    _ws_arg(p)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("plan", help="how many human labels a CI half-width needs, human-only and with PPI++")
    p.add_argument("--target-halfwidth", type=_open_unit, default=0.03,
                   help="the confidence interval's half-width on a win rate, between 0 and 1 (default 0.03)")
    p.add_argument("--judge", action="append", help="only this judge (repeatable)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--unlabelled", type=_upto(10**12, "items"), help="items the judge covers (default: as many as needed)")
    p.add_argument("--json", action="store_true")
    _ws_arg(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("validate", help="check the bias probes on a simulated judge with planted biases")
    p.add_argument("--slow", action="store_true", help="also measure 95%% CI coverage over many seeds")
    p.add_argument("--seeds", type=_upto(MAX_SEEDS, "seeds"), default=200)
    p.add_argument("--items", type=_upto(1_000_000, "simulated items"), default=1000)
    p.add_argument("--n-boot", type=_upto(MAX_N_BOOT, "bootstrap replicates"), default=1000)
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the checks")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("report", help="render a stored audit.json as the printable PDF or the HTML page")
    p.add_argument("format", choices=("pdf", "html"))
    p.add_argument("audit", help="an audit.json written by `judgecal audit`")
    p.add_argument("--out", help="output file (default: beside audit.json, audit.pdf or audit.html)")
    p.add_argument("--summary-only", action="store_true", help="page one only: the summary of every judge, "
                   "without the per-judge detail")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="export a table to Parquet or JSONL")
    p.add_argument("table", choices=("items", "judgments", "annotations", "consensus"))
    p.add_argument("file", help="output .parquet or .jsonl")
    _ws_arg(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("app", help="start the Streamlit explorer on a workspace")
    p.add_argument("--port", type=_port, default=8501)
    p.add_argument("--address", default="127.0.0.1")
    _ws_arg(p)
    p.set_defaults(func=cmd_app)

    p = sub.add_parser("demo", help="PandaLM + recorded judges + SmolLM2 live + Dawid-Skene + audit")
    p.add_argument("--items", type=_upto(MAX_ITEMS, "items"), default=DEMO_ITEMS,
                   help=f"PandaLM items the embedded judge judges live, in both orders (default {DEMO_ITEMS})")
    p.add_argument("--n-boot", type=_upto(MAX_N_BOOT, "bootstrap replicates"), default=2000)
    _judge_opts(p)
    _ws_arg(p, default="demo-workspace")
    p.set_defaults(func=cmd_demo)

    from judgecal.cli.stability import add_parser as add_stability_parser

    add_stability_parser(sub, _ws_arg, _count)
    from judgecal.cli.loop import add_parsers as add_loop_parsers

    add_loop_parsers(sub)  # gate, regrade, panel, align, cascade
    from judgecal.cli.serve import add_parser as add_serve_parser

    add_serve_parser(sub, _count, _port)
    return ap


def _return_large_frees_to_the_os() -> None:
    """Make glibc serve every allocation over 128 KiB by mmap, so a freed array leaves the process
    (glibc otherwise raises that threshold after the first large free and keeps later arrays on the
    heap, where an audit's transient arrays add up to hundreds of MB of resident memory)."""
    import contextlib
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if sys.platform.startswith("linux") and name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD


def main(argv: list[str] | None = None) -> int:
    import sqlite3

    from judgecal.errors import JudgecalError, exit_status

    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (already printed)
        return exc.code if isinstance(exc.code, int) else 2
    _return_large_frees_to_the_os()
    try:
        return int(args.func(args))
    except JudgecalError as exc:  # the one place the hierarchy becomes an exit status (judgecal/errors.py)
        print(f"judgecal {args.command}: {term(str(exc), keep_lines=True)}", file=sys.stderr)
        return exit_status(exc)
    except KeyboardInterrupt:
        print("interrupted; judgments so far are saved and a re-run resumes", file=sys.stderr)
        return 130
    except OSError as exc:  # a file or folder the command was given cannot be read or written
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"judgecal {args.command}: {term(where)}{term(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # a damaged database, or one another program holds
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        db = Path(args.workspace) / "judgecal.sqlite" if getattr(args, "workspace", None) else "workspace database"
        print(f"judgecal {args.command}: {term(db)}: {term(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last safety net: one line, the traceback only when asked for
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        first = (str(exc).splitlines() or [""])[0]
        print(f"judgecal {args.command}: unexpected error: {type(exc).__name__}: {term(first)} "
              "(set JUDGECAL_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
