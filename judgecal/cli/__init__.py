"""``judgecal`` command line: a thin layer over the library's APIs.

One module per command group (:mod:`~judgecal.cli.data`, :mod:`~judgecal.cli.judging`,
:mod:`~judgecal.cli.annotation`, :mod:`~judgecal.cli.audit`, :mod:`~judgecal.cli.explore`,
:mod:`~judgecal.cli.stability`, :mod:`~judgecal.cli.loop`, :mod:`~judgecal.cli.serve`) and what they share
(:mod:`~judgecal.cli.common`); here, the parser and :func:`main`, where errors become exit statuses once."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from judgecal import __version__
from judgecal.cli.annotation import add_server_options, cmd_aggregate, cmd_annotate, cmd_annotators
from judgecal.cli.audit import cmd_audit, cmd_plan, cmd_report, cmd_validate
from judgecal.cli.battery import TEMPLATE_PROBES
from judgecal.cli.common import (  # noqa: F401
    MAX_ITEMS,
    MAX_SAMPLES,
    MAX_SEEDS,
    MAX_SHARDS,
    UsageError,
    _base_url,
    _count,
    _format_names,
    _halfwidth,
    _judge_opts,
    _methods,
    _mutation,
    _n_boot,
    _natural,
    _open_unit,
    _open_ws,
    _orders,
    _Parser,
    _port,
    _rate,
    _seed,
    _share,
    _upto,
    _ws_arg,
)
from judgecal.cli.data import cmd_datasets, cmd_export, cmd_import
from judgecal.cli.explore import DEMO_ITEMS, cmd_app, cmd_demo
from judgecal.cli.judging import cmd_judge, make_engine  # noqa: F401
from judgecal.cli.probe import cmd_probe
from judgecal.inert import term

# pyarrow's default allocator (mimalloc) keeps what it has freed; with the C library's allocator an audit of 20k-50k
# items peaks 20-30 MB lower and runs 10-15% faster (benchmarks/results/peer.json). Set before pandas loads pyarrow
# (no module above imports it); a value the user set is kept.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


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
    p.add_argument("--set", dest="sets", action="append", choices=("alignment", "fact", "refinement"),
                   help="judgecal import calm: one of CALM's sets (repeat for several; default all three)")
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
    p.add_argument("--n-boot", type=_n_boot, default=2000)
    p.add_argument("--pdf", action="store_true", help="also write the printable trust report audit.pdf")
    p.add_argument("--summary-only", action="store_true", help="audit.html and audit.pdf hold page one only (each "
                   "judge's verdict, the reason that matters most, its like-for-like reference, what was not tested), "
                   "without the per-judge detail")
    p.add_argument("--json", action="store_true", help="print audit.json to stdout instead of the summary")
    p.add_argument("--details", action="store_true", help="after the table of judges, each judge's figures, "
                   "other reasons, flags and untested probes")
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
    add_server_options(sp)
    sp = asub.add_parser("push", help="send a chosen sample as blind tasks (idempotent)")
    sp.add_argument("--strategy", choices=("random", "disagreement", "order_disagreement", "uncertainty", "escalate",
                                           "active"), default="random",
                    help="active: each item drawn with a recorded probability that grows with the judges' "
                    "uncertainty, --budget items expected (the corrected estimates weigh each label by it)")
    sp.add_argument("--judge", help="with --strategy escalate: the judge whose escalated items go to people "
                    "(threshold from the last `judgecal audit`); with active: the judge whose uncertainty "
                    "(beside the other judges' verdicts) sets the probabilities (default all judges pooled)")
    sp.add_argument("--tau", type=_share, default=0.5, help="with --strategy active: the share of the budget drawn "
                    "by uncertainty, the rest uniform (default 0.5)")
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
    p.add_argument("--n-boot", type=_n_boot, default=2000)
    p.add_argument("--out", help="file for the JSON report (default: <workspace>/reports/annotators.json)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    _ws_arg(p)
    p.set_defaults(func=cmd_annotators)

    p = sub.add_parser("probe", help="run a live bias probe's extra judge calls (injection, padding, a template "
                       "perturbation, or battery: every template perturbation)")
    p.add_argument("kind", choices=("injection", "padding", *TEMPLATE_PROBES, "battery"))
    p.add_argument("--judge", required=True, help="<backend>/<model>, a judge spec YAML file or a shipped spec name")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=_upto(MAX_ITEMS, "items"), help="at most this many base items")
    p.add_argument("--base-url", type=_base_url, help="OpenAI-compatible server URL for openai/<model>")
    p.add_argument("--budget", type=_upto(10**9, "judge calls"), metavar="CALLS",
                   help="a template probe or battery: at most this many judge calls planned (cached ones count): "
                   "as many items as fit, each costing its clean run, a second unperturbed run and each "
                   "perturbation, in both orders")
    p.add_argument("--sequential", action="store_true",
                   help="a template probe or battery: judge the items in batches, each bias stopping once its "
                   "decision is settled (flagged, or the effect of interest excluded); the budget still caps; the "
                   "calls each bias used go to reports/sequential.json")
    p.add_argument("--batch", type=_upto(MAX_ITEMS, "items"), default=20,
                   help="with --sequential: items per batch, a look after each (default 20)")
    _judge_opts(p)
    _ws_arg(p)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("plan", help="how many human labels a CI half-width needs, human-only and with PPI++")
    p.add_argument("--target-halfwidth", type=_halfwidth, default=0.03,
                   help="the confidence interval's half-width on a win rate, between 0 and 1 (default 0.03)")
    p.add_argument("--judge", action="append", help="only this judge (repeatable)")
    p.add_argument("--consensus", default="ds", help="the truth, METHOD[:SOURCE] (as for audit)")
    p.add_argument("--unlabelled", type=_upto(10**12, "items"), help="items the judge covers (default: as many as needed)")
    p.add_argument("--strategy", choices=("ppi", "active"), default="ppi", help="ppi: human-only vs PPI++ (default); "
                   "active: a uniform vs an active draw over the workspace's pairwise items (annotate push --strategy "
                   "active), from the judge's own uncertainty")
    p.add_argument("--tau", type=_share, default=0.5, help="with --strategy active: the share of the budget drawn by "
                   "the judge's uncertainty, the rest uniform (default 0.5)")
    p.add_argument("--json", action="store_true")
    _ws_arg(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("validate", help="check the bias probes on a simulated judge with planted biases")
    p.add_argument("--slow", action="store_true", help="also measure 95%% CI coverage over many seeds")
    p.add_argument("--seeds", type=_upto(MAX_SEEDS, "seeds"), default=200)
    p.add_argument("--items", type=_upto(1_000_000, "simulated items"), default=1000)
    p.add_argument("--n-boot", type=_n_boot, default=1000)
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
    p.add_argument("--address", default="127.0.0.1",
                   help="listen address (default loopback only, no login); any other address needs "
                        "JUDGECAL_APP_TOKEN, checked on every request")
    _ws_arg(p)
    p.set_defaults(func=cmd_app)

    p = sub.add_parser("demo", help="PandaLM + recorded judges + SmolLM2 live + Dawid-Skene + audit")
    p.add_argument("--items", type=_upto(MAX_ITEMS, "items"), default=DEMO_ITEMS,
                   help=f"PandaLM items the embedded judge judges live, in both orders (default {DEMO_ITEMS})")
    p.add_argument("--n-boot", type=_n_boot, default=2000)
    p.add_argument("--details", action="store_true", help="after the table of judges, each judge's figures, "
                   "other reasons, flags and untested probes")
    _judge_opts(p)
    _ws_arg(p, default="demo-workspace")
    p.set_defaults(func=cmd_demo)

    from judgecal.cli.stability import add_parser as add_stability_parser

    add_stability_parser(sub, _ws_arg, _count)
    from judgecal.cli.loop import add_parsers as add_loop_parsers

    add_loop_parsers(sub)  # gate, regrade, panel, align, cascade
    from judgecal.cli.monitor import add_parser as add_monitor_parser

    add_monitor_parser(sub, _ws_arg)
    from judgecal.cli.serve import add_parser as add_serve_parser

    add_serve_parser(sub, _count, _port)
    return ap


def main(argv: list[str] | None = None) -> int:
    import sqlite3

    from judgecal.cli.common import flagged
    from judgecal.cli.shadow import warning
    from judgecal.errors import InputError, JudgecalError, exit_status, missing_extra

    shadowed = warning()  # another distribution installs the import package judgecal too: say so, once
    if shadowed:
        print(shadowed, file=sys.stderr)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (already printed)
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return int(args.func(args))
    except InputError as exc:  # the library names the input (the judge, the strategy); this command's flag leads
        shown = flagged(exc) if exc.name and hasattr(args, exc.name) else exc
        print(f"judgecal {args.command}: {term(str(shown), keep_lines=True)}", file=sys.stderr)
        return exit_status(exc)
    except JudgecalError as exc:  # the one place the hierarchy becomes an exit status (judgecal/errors.py)
        print(f"judgecal {args.command}: {term(str(exc), keep_lines=True)}", file=sys.stderr)
        return exit_status(exc)
    except KeyboardInterrupt:
        print("interrupted; judgments so far are saved and a re-run resumes", file=sys.stderr)
        return 130
    except OSError as exc:  # a file or folder the command was given cannot be read or written
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        from judgecal.data.store.errors import disk_full

        if disk_full(exc):
            print(f"judgecal {args.command}: {term(exc.filename or getattr(args, 'workspace', None) or '')}: "
                  "the disk is full (free some space and run the command again)", file=sys.stderr)
            return 2
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"judgecal {args.command}: {term(where)}{term(exc.strerror or exc)}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:  # a damaged database, or one another program holds
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        from judgecal.data.store.errors import disk_full

        db = Path(args.workspace) / "judgecal.sqlite" if getattr(args, "workspace", None) else "workspace database"
        why = "the disk is full (free some space and run the command again)" if disk_full(exc) else exc
        print(f"judgecal {args.command}: {term(db)}: {term(why)}", file=sys.stderr)
        return 2
    except Exception as exc:  # the last safety net: one line, the traceback only when asked for
        missing = missing_extra(exc)  # an optional dependency not installed: which extra brings it
        if missing is not None:
            print(f"judgecal {args.command}: {missing}", file=sys.stderr)
            return exit_status(missing)
        if os.environ.get("JUDGECAL_DEBUG") == "1":
            raise
        first = (str(exc).splitlines() or [""])[0]
        print(f"judgecal {args.command}: unexpected error: {type(exc).__name__}: {term(first)} "
              "(set JUDGECAL_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
