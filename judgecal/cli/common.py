"""What every command shares: the workspace argument, the usage error, argument types with their bounds, JSON output."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Any

from judgecal.errors import InputError, UserError

WORKSPACE_ENV = "JUDGECAL_WORKSPACE"


def workspace_arg(p: argparse.ArgumentParser, default: str | None = None) -> None:
    p.add_argument("--workspace", "-w", default=os.environ.get(WORKSPACE_ENV, default),
                   help=f"workspace folder (default: ${WORKSPACE_ENV}{' or ' + default if default else ''})")


def open_workspace(args: argparse.Namespace, create: bool = True) -> Any:
    from judgecal.data.store import Workspace

    if not args.workspace:
        raise UsageError(f"no workspace: pass --workspace DIR or set {WORKSPACE_ENV}")
    return Workspace(args.workspace, create=create)


class UsageError(UserError, RuntimeError):
    """A command given what it cannot use (exit 2)."""


def flagged(exc: InputError, flags: dict[str, str] | None = None) -> UsageError:
    """``exc`` led by the flag of the input it names (``--judge: the escalate strategy needs a judge``): the
    library names its inputs, the command line its flags (``--`` and the name, unless ``flags`` spells it)."""
    if not exc.name:
        return UsageError(str(exc))
    return UsageError(f"{(flags or {}).get(exc.name) or '--' + exc.name.replace('_', '-')}: {exc}")


def parsed(text: str, kind: type[int] | type[float], what: str) -> Any:
    """``kind(text)``, or an argparse error saying ``text`` is not ``what``."""
    try:
        return kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def within(value: Any, ok: bool, why: str) -> Any:
    """``value`` when ``ok``, else an argparse error saying ``why``."""
    if not ok:
        raise argparse.ArgumentTypeError(why)
    return value


def as_open_unit(text: str) -> float:
    """A number strictly between 0 and 1."""
    value = parsed(text, float, "a number")
    return float(within(value, 0 < value < 1, f"{text} is not between 0 and 1 (exclusive)"))


def as_share(text: str) -> float:
    """A number from 0 to 1 (both included)."""
    value = parsed(text, float, "a number")
    return float(within(value, 0 <= value <= 1, f"{text} is not between 0 and 1"))


# The narrowest half-width `plan` computes: about 10^10 labels for a win rate near 0.5; narrower ones square to
# nothing or overflow the count (10^-160, 10^-170).
MIN_HALFWIDTH = 1e-5


def as_halfwidth(text: str) -> float:
    """A confidence interval's half-width: from :data:`MIN_HALFWIDTH` up to (not including) 1."""
    value = as_open_unit(text)
    return float(within(value, value >= MIN_HALFWIDTH, f"{text} is too small; give a half-width of at least "
                         f"{MIN_HALFWIDTH:g} (narrower needs more labels than can be counted)"))


def as_count(text: str) -> int:
    """A positive whole number (argparse ``type``)."""
    value = parsed(text, int, "a whole number")
    return int(within(value, value >= 1, f"{text} is not allowed; give a positive number (1 or more)"))


# Resource-sized arguments: the most one command runs (time and memory grow with each), and seeds
# as the random generators take them (NumPy and llama.cpp: 32 bits).
MAX_SAMPLES = 1_000
MAX_N_BOOT = 100_000
MAX_CONCURRENCY = 4_096
MAX_SHARDS = 10_000
MAX_SEEDS = 100_000
MAX_ITEMS = 10_000_000
MAX_SEED = 2**31 - 1 - MAX_SAMPLES  # sample s uses seed + s


def upto(hi: int, what: str) -> Any:
    """A positive whole number of at most ``hi`` (argparse ``type``): more would run for hours or
    exhaust memory instead of saying so."""
    def check(text: str) -> int:
        value = as_count(text)
        if value > hi:
            raise argparse.ArgumentTypeError(f"{value:,} is more than {hi:,}, the most {what} one run takes")
        return value
    check.__name__ = "count"
    return check


# The fewest bootstrap replicates whose 95% percentile interval has a whole replicate in each 2.5% tail
# (0.025 x 40 = 1): with fewer, an interval's ends are read off one or two replicates and can leave out its
# own estimate, and a difference "excluding 0" means nothing.
MIN_N_BOOT = 40


def as_n_boot(text: str) -> int:
    """Bootstrap replicates (argparse ``type``): from :data:`MIN_N_BOOT` to :data:`MAX_N_BOOT`."""
    value = upto(MAX_N_BOOT, "bootstrap replicates")(text)
    return int(within(value, value >= MIN_N_BOOT, f"{value} is too few; give at least {MIN_N_BOOT} bootstrap "
                       f"replicates (fewer leave the 95% interval's ends to one or two replicates)"))


def as_natural(text: str) -> int:
    """A whole number, 0 or more (argparse ``type``)."""
    value = parsed(text, int, "a whole number")
    return int(within(value, value >= 0, f"{text} is not allowed; give 0 or more"))


def as_seed(text: str) -> int:
    """A seed from 0 to :data:`MAX_SEED` (argparse ``type``)."""
    value = as_natural(text)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"{value} is too large; a seed is at most {MAX_SEED}")
    return value


def as_port(text: str) -> int:
    value = parsed(text, int, "a port number")
    return int(within(value, 1 <= value <= 65535, f"{value} is not a port; give 1-65535"))


def as_rate(text: str) -> float:
    """Calls per second: a positive finite number."""
    value = parsed(text, float, "a number")
    return float(within(value, 0 < value <= 1e6, f"{text} is not allowed; give a positive number of calls per "
                                                   "second (at most 1e6)"))


def as_base_url(text: str) -> str:
    """An http(s) server address without credentials (:func:`judgecal.judges.spec.url_problem`)."""
    from judgecal.judges.spec import url_problem

    if why := url_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text


def as_orders(text: str) -> list[str]:
    """``AB``, ``BA`` or ``AB,BA``."""
    orders = [o.strip().upper() for o in text.split(",")]
    bad = [o for o in orders if o not in ("AB", "BA")]
    if bad or len(set(orders)) != len(orders):
        raise argparse.ArgumentTypeError(f"{text!r}: give AB, BA or AB,BA")
    return orders


def as_mutation(text: str) -> str:
    from judgecal.judges.mutations import MUTATIONS

    if text != "none" and text not in MUTATIONS:
        raise argparse.ArgumentTypeError(f"unknown mutation {text!r}; known: none, {', '.join(MUTATIONS)}")
    return text


def _temperature(text: str) -> float:
    """A finite sampling temperature, 0 or more."""
    value = parsed(text, float, "a number")
    return float(within(value, 0 <= value <= 100, f"{text} is not allowed; give a temperature from 0 to 100"))


def as_methods(text: str) -> tuple[str, ...]:
    """A comma list of known consensus methods."""
    from judgecal.aggregate.models import AGGREGATORS

    methods = tuple(m.strip() for m in text.split(","))
    bad = [m for m in methods if m not in AGGREGATORS]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown method {bad[0]!r}; known: {', '.join(AGGREGATORS)}")
    return methods


def refuse_together(pairs: list[tuple[str, bool, str]]) -> None:
    """Refuse flags that cannot apply as given: ``(flag, given, why)`` for each."""
    for flag, given, why in pairs:
        if given:
            raise UsageError(f"{flag} {why}; nothing was run")


def output_file(path: str | os.PathLike[str], *, reading: tuple[str | os.PathLike[str], ...] = ()) -> Path:
    """The file a command is told to write (``--out``, ``--markdown``): refused, with nothing written, when it is a
    file the command reads, a folder, or a database (a workspace's ``judgecal.sqlite`` and its journal files, any
    SQLite file), so that writing a report never destroys the evidence it was made from."""
    out = Path(path)
    if out.is_dir():
        raise UsageError(f"{out}: is a folder; name the file to write")
    if not out.exists():
        return out
    for src in reading:
        with contextlib.suppress(OSError):
            if out.samefile(src):
                raise UsageError(f"{out}: is the file this command reads; write the result elsewhere")
    with contextlib.suppress(OSError), out.open("rb") as fh:
        head = fh.read(16)
        if head == b"SQLite format 3\x00" or out.name.startswith("judgecal.sqlite"):
            raise UsageError(f"{out}: is a database (a workspace's?); judgecal does not write over one")
    return out


def print_json(obj: Any) -> None:
    """Machine-readable output of a command run with --json: JSON on stdout, nothing else there."""
    import json

    from judgecal.inert import inert_json
    from judgecal.report.write import json_safe

    text = obj if isinstance(obj, str) else json.dumps(json_safe(obj), indent=2, ensure_ascii=False, allow_nan=False,
                                                       default=str)
    sys.stdout.write(inert_json(text))  # JSON text given as it was written (audit.json) is made inert too
    sys.stdout.write("\n")


def judge_opts(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rubric", default="pairwise", help="built-in rubric name or a YAML file (a judge spec "
                   "file's own rubric wins)")
    p.add_argument("--concurrency", type=upto(MAX_CONCURRENCY, "concurrent calls"), default=16)
    p.add_argument("--max-tokens", type=upto(1_000_000, "tokens"), help="reply length (default: the rubric's, e.g. 256 for span "
                   "rubrics, else 8; a judge spec file's own value wins)")
    p.add_argument("--temperature", type=_temperature, default=0.0)
    p.add_argument("--seed", type=as_seed, default=0, help="seed of sample 0 (sample s uses seed + s)")
    p.add_argument("--sample-seed", type=as_seed, default=0, help="seed for choosing the item sample")
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


def judgecal_command() -> str:
    """How to run this judgecal from the current folder, for a line a person pastes: ``judgecal`` when the
    ``judgecal`` on PATH is this one; otherwise this environment's script (relative to the current folder when
    inside it, e.g. ``.venv/bin/judgecal`` after ``make demo``), or ``python -m judgecal.cli``."""
    import shlex
    import shutil
    import sysconfig
    from pathlib import Path

    script = Path(sysconfig.get_path("scripts")) / "judgecal"
    on_path = shutil.which("judgecal")
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m judgecal.cli"
    if on_path and Path(on_path).resolve() == script.resolve():
        return "judgecal"
    try:
        shown = str(script.absolute().relative_to(Path.cwd()))
    except ValueError:  # not under the current folder
        shown = str(script.absolute())
    return shlex.quote(shown)
