"""``judgecal`` command line: a thin layer over the library's APIs.

One module per command group, each building its own commands' parsers (``add_parser``) and running them
(:mod:`~judgecal.cli.data`, :mod:`~judgecal.cli.judging`, :mod:`~judgecal.cli.annotation`,
:mod:`~judgecal.cli.audit`, :mod:`~judgecal.cli.probe`, :mod:`~judgecal.cli.explore`,
:mod:`~judgecal.cli.stability`, :mod:`~judgecal.cli.loop`, :mod:`~judgecal.cli.monitor`,
:mod:`~judgecal.cli.serve`) and what they share (:mod:`~judgecal.cli.common`); here, the parser assembled from
them and :func:`main`, where errors become exit statuses once."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from judgecal import __version__
from judgecal.cli.judging import make_engine  # noqa: F401
from judgecal.inert import term

# pyarrow's default allocator (mimalloc) keeps what it has freed; with the C library's allocator an audit of 20k-50k
# items peaks 20-30 MB lower and runs 10-15% faster (benchmarks/results/peer.json). Set before pandas loads pyarrow
# (no module above imports it); a value the user set is kept.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line: ``judgecal judge: argument --items: ...``."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


# each command group's module registers its commands (``add_parser``); ``judgecal --help`` lists them in ORDER
ORDER = ("datasets", "import", "judge", "aggregate", "audit", "annotate", "annotators", "probe", "plan", "validate",
         "report", "export", "app", "demo", "stability", "gate", "regrade", "align", "cascade", "panel", "monitor",
         "serve")


def groups() -> tuple[ModuleType, ...]:
    """The command groups' modules, imported here: after the allocator above is set, as some load pandas."""
    from judgecal.cli import annotation, audit, data, explore, judging, loop, monitor, probe, serve, stability

    return data, judging, annotation, audit, probe, explore, stability, loop, monitor, serve


def _in_order(sub: Any, order: tuple[str, ...]) -> None:
    """The subcommands listed in ``order`` (argparse lists them as they were added: its choices and their help)."""
    choices = dict(sub.choices)
    assert set(choices) == set(order), sorted(set(choices) ^ set(order))
    sub.choices.clear()
    sub.choices.update((name, choices[name]) for name in order)
    sub._choices_actions.sort(key=lambda action: order.index(action.dest))


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="judgecal", description="Calibrate LLM judges against blind expert humans.")
    ap.add_argument("--version", action="version", version=f"judgecal {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    for group in groups():
        group.add_parser(sub)
    _in_order(sub, ORDER)
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
