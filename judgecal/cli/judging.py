"""Judging: `judgecal judge` (the engine, locally or on Ray)."""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from judgecal.cli.common import (
    MAX_ITEMS,
    MAX_SAMPLES,
    UsageError,
    as_base_url,
    as_mutation,
    as_orders,
    as_rate,
    judge_opts,
    open_workspace,
    refuse_together,
    upto,
    workspace_arg,
)
from judgecal.inert import term


def _select_items(ws: Any, source: str | None, n: int | None, seed: int) -> list[Any]:
    """Items of ``source`` (probe pairs only when asked for by source), a seeded sample of ``n``."""
    items = [it for it in ws.items_repo.items(source=source) if source or not it.source.startswith("probe:")]
    if n is not None and n < len(items):
        items = random.Random(seed).sample(items, n)
    return list(items)


def probe_pairs(ws: Any, args: argparse.Namespace, does: str) -> list[Any]:
    """The pairs a live probe (``args.kind``) calls the judge on: the two-response pairwise items of ``--source``,
    never a probe's own copies; refused when there is none (``does``: what the probe does to them, in words)."""
    base = [it for it in ws.items_repo.items(source=args.source) if not it.source.startswith("probe:")
            and it.task == "pairwise" and len(it.candidates) == 2]
    if not base:
        raise UsageError(f"{ws.path}: no pairwise item with two responses"
                         f"{' in ' + term(args.source) if args.source else ''}; the {args.kind} probe {does}")
    return base


def within_budget(base: list[Any], args: argparse.Namespace, per: int, costs: str, shuffle: bool = False) -> list[Any]:
    """As many of ``base`` as ``--items`` and ``--budget`` allow at ``per`` judge calls an item (a seeded sample,
    ``--sample-seed``; ``shuffle``: in a random order even when all fit); refused when not one fits (``costs``:
    what an item's calls are, in words)."""
    n = min(len(base), args.items or len(base), (args.budget // per) if args.budget else len(base))
    if n == 0:
        raise UsageError(f"--budget {args.budget}: one item costs {per} judge calls ({args.kind}: {costs})")
    return random.Random(args.sample_seed).sample(base, n) if n < len(base) or shuffle else base


def pairwise_engine(ws: Any, args: argparse.Namespace) -> tuple[Any, str]:
    """The judge's engine for a live probe (``args.kind``), refused unless its rubric shows two responses
    together, and the judge's name in the workspace."""
    engine = make_engine(ws, args)
    if engine.rubric.kind != "pairwise":
        raise UsageError(f"--rubric {term(args.rubric)}: a {engine.rubric.kind} rubric; the {args.kind} probe "
                         "needs a pairwise one (two responses shown together)")
    return engine, ws.judgments_repo.judge_names().get((engine.judge, engine.spec_hash), engine.judge)


def make_engine(ws: Any, args: argparse.Namespace) -> Any:
    from judgecal.judges.engine import Engine
    from judgecal.judges.registry import make_backend
    from judgecal.judges.spec import resolve_judge

    # a spec file or shipped spec, or <backend>/<model> with this command's parameters
    spec, rubric = resolve_judge(args.judge, rubric=args.rubric, temperature=args.temperature,
                                 max_tokens=args.max_tokens, base_url=getattr(args, "base_url", None))
    if getattr(args, "deterministic", False):
        from judgecal.judges.determinism import deterministic_spec, enable

        spec = deterministic_spec(spec)  # refused for a vendor API, which decides itself how it samples
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


def cmd_judge(args: argparse.Namespace) -> int:
    from judgecal.judges import batch

    ray = args.executor == "ray"
    refuse_together([
        ("--export-batch", bool(args.export_batch and args.import_batch), "and --import-batch cannot apply together "
         "(export a manifest, run it, then import its results)"),
        ("--address", args.address is not None and not ray, "applies to --executor ray only"),
        ("--rate-limit", args.rate_limit is not None and not ray, "applies to --executor ray only"),
        ("--executor ray", ray and bool(args.export_batch or args.import_batch),
         "makes no calls with --export-batch or --import-batch"),
    ])

    if args.judge.startswith("replay/"):
        from judgecal.judges.replay import replay

        with open_workspace(args, create=False) as ws:
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
        with open_workspace(args, create=False) as ws:
            try:
                got = run_metric_judge(ws, metric[0], _select_items(ws, args.source, args.items, args.sample_seed),
                                       metric[1], metric[2])
            except MetricError as exc:
                raise UsageError(f"{args.judge}: {exc}") from None
        print(f"{term(got['judge'])} (spec {got['spec_hash']}): {got['scored']} items scored, {got['skipped']} skipped "
              "(not one response with a reference key fact)")
        return 0
    with open_workspace(args, create=False) as ws:
        items = _select_items(ws, args.source, args.items, args.sample_seed)
        if not items:
            if args.source:
                raise UsageError(f"no items from source {args.source!r} (sources in this workspace: "
                                 f"{', '.join(ws.items_repo.sources()) or 'none'})")
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
        name = ws.judgments_repo.judge_names().get((engine.judge, engine.spec_hash), engine.judge)
        print(f"{term(name)} (spec {engine.spec_hash}): {st.planned} planned, {st.cached} cached, {st.done} run "
              f"({st.invalid} invalid, {st.errors} errors, {st.retries} retries) in {st.seconds:.1f}s")
        print_errors(engine, st, args)
    return run_status(st)


def run_status(st: Any) -> int:
    """A judging run's exit status: 0 when no call failed; 69 (EX_UNAVAILABLE, a
    :class:`~judgecal.errors.BackendError`'s) when every call failed because the server could not be reached;
    else 1 (some calls failed: a re-run retries them)."""
    from judgecal.errors import EXIT_STATUS, BackendError

    if not st.errors:
        return 0
    down = st.errors == st.done and all(_unreachable(m) for m in st.error_messages)
    return EXIT_STATUS[BackendError] if down else 1


def print_errors(engine: Any, st: Any, args: argparse.Namespace) -> None:
    """A run's failed calls on stderr (:func:`_error_lines`), for every command that judges."""
    from judgecal.judges.spec import without_credentials

    endpoint = engine.spec.endpoint or getattr(args, "base_url", None) or ""
    for line in _error_lines(st.error_messages, st.errors, without_credentials(endpoint)):
        print(line, file=sys.stderr)


# words of a failed connection in the error a backend records (httpx/openai/anthropic/asyncio)
_UNREACHABLE = ("Connect", "Refused", "gaierror", "Unreachable", "NameResolution", "TimeoutError", "OSError")


def _unreachable(message: str) -> bool:
    """Whether a recorded error is a failed connection, read from the names of the errors only (``TransientError:
    ConnectError``, ``APIConnectionError: ...``): never from what a server sent back, whose text (a header echoed in a
    401's body) may hold any of these words."""
    names = [part.strip() for part in message.split(":", 2)[:2]]
    names = [n for n in names if n and all(c.isalnum() or c in "._" for c in n)]
    return any(w in n for n in names for w in _UNREACHABLE)


def _error_lines(messages: list[str], errors: int, endpoint: str) -> list[str]:
    """The first errors of a run, each distinct one once (with how often it was seen among them), and a
    server that could not be reached named once."""
    from collections import Counter

    lines = [f"  error: {term(m)}" + (f" (x{n})" if n > 1 else "") for m, n in Counter(messages).items()]
    if endpoint and any(_unreachable(m) for m in messages):
        lines.append(f"  {errors} call(s) failed: the server at {term(endpoint)} could not be reached; is it "
                     "running, and is the address (--base-url) right?")
    return lines


def add_parser(sub: Any) -> None:
    """Register ``judge`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("judge", help="run a judge over the workspace's items (cached, resumable)")
    p.add_argument("--judge", required=True,
                   help="<backend>/<model> (e.g. local/smollm2, openai/gpt-4o-mini, hf/smollm2: the default spec "
                   "with this command's parameters), a judge spec YAML file, a shipped spec name (e.g. "
                   "smollm2-greedy), or replay/pandalm/gpt-3.5-turbo")
    p.add_argument("--source", help="only items from this source")
    p.add_argument("--items", type=upto(MAX_ITEMS, "items"), help="judge a random sample of this many items")
    p.add_argument("--orders", type=as_orders, default="AB,BA", help="presentation orders (AB, BA or AB,BA)")
    p.add_argument("--samples", type=upto(MAX_SAMPLES, "samples per order"), default=1,
                   help=f"repeated samples per order (at most {MAX_SAMPLES})")
    p.add_argument("--mutation", action="append", type=as_mutation, help="prompt mutation(s) to run besides or instead of 'none': "
                   "whitespace, instruction_after, paraphrase, option_order, fewshot_ab, fewshot_ba (repeatable)")
    p.add_argument("--base-url", type=as_base_url, help="OpenAI-compatible server URL for openai/<model> (no "
                   "credentials in it: the key comes from OPENAI_API_KEY)")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where the calls run: this process (local) or a Ray cluster (ray; extra 'ray')")
    p.add_argument("--address", help="--executor ray: the cluster (auto, <head>:<port>, or ray://<head>:10001 "
                   "with ray[client]); default RAY_ADDRESS or auto")
    p.add_argument("--rate-limit", type=as_rate, metavar="CALLS_PER_S",
                   help="--executor ray: one call rate for the whole cluster (a token bucket)")
    p.add_argument("--export-batch", metavar="FILE", help="write an OpenAI batch manifest instead of calling")
    p.add_argument("--import-batch", nargs=2, metavar=("MANIFEST", "RESULTS"), help="store batch results")
    p.add_argument("--deterministic", action="store_true", help="greedy decoding, every seed set (Python, NumPy, "
                   "torch, CUDA), torch deterministic algorithms, no prefix reuse (local), seeded vLLM without "
                   "prefix caching; a judge of its own")
    judge_opts(p)
    workspace_arg(p)
    p.set_defaults(func=cmd_judge)
