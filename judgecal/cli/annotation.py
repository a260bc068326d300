"""People: `judgecal annotate` (blind review in Label Studio), `judgecal aggregate` (consensus) and `judgecal annotators`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from judgecal.cli.common import (
    MAX_ITEMS,
    UsageError,
    as_methods,
    as_n_boot,
    as_natural,
    as_port,
    as_seed,
    as_share,
    open_workspace,
    print_json,
    upto,
    workspace_arg,
)
from judgecal.inert import term


def cmd_aggregate(args: argparse.Namespace) -> int:
    from judgecal.aggregate.consensus import compute_consensus
    from judgecal.data.sources import sources

    with open_workspace(args, create=False) as ws:
        judges = tuple(args.with_judges.split(",")) if args.with_judges else ()
        known = set(ws.judgments_repo.judges()) | {stored for stored, _ in ws.judgments_repo.judge_names()}
        unknown = [j for j in judges if j not in known]
        if unknown:
            raise UsageError(f"--with-judges: no judgments from {unknown[0]!r} in this workspace "
                             f"({len(known)} judges there; see `judgecal audit`)")
        present = sources(ws.annotations_repo.annotations_frame())
        counts = compute_consensus(ws, tuple(args.method), judges=judges, source=args.source)
    if args.source is None and len(present) > 1:
        print(f"human labels from {len(present)} sources ({term(', '.join(present))}): each aggregated on its own; "
              "audit with --consensus METHOD:SOURCE (--source all pools them)")
    print(", ".join(f"{m}: {n} items" for m, n in counts.items()))
    return 0


def _active_draw(ws: Any, args: argparse.Namespace, project: str) -> Any:
    """``--strategy active``'s draw (judgecal.annotation.active), recorded before any task is sent; a project
    holds one draw: pushing into it again sends that draw's items (a push cut short resumes), and a project that
    already holds other items is refused, so every label in it has a known probability."""
    from judgecal.annotation.active import active_draw

    if args.kind != "pairwise":
        raise UsageError(f"{args.kind} review draws its items at random: --strategy active draws pairwise items")
    kept = ws.labelstudio_repo.ls_active_frame(project)
    if not kept.empty:
        print(f"project {term(project)} holds an active draw already (seed {int(kept['seed'].iloc[0])}): "
              "sending its items again, the draw unchanged")
        return kept.set_index("item_id").astype({"drawn": bool})
    if ws.labelstudio_repo.ls_pushed_items(project):
        raise UsageError(f"project {project!r} already holds items: an active draw goes into a project of its own "
                         "(--project NAME), so every label in it has a known probability")
    drawn = active_draw(ws, args.budget, seed=args.seed, tau=args.tau, judge=args.judge, source=args.source)
    ws.labelstudio_repo.ls_record_active(project, drawn, seed=args.seed, tau=args.tau, budget=args.budget, judge=args.judge)
    print(f"active draw: {int(drawn['drawn'].sum())} of {len(drawn)} items drawn ({drawn['pi'].sum():.1f} expected), "
          "each with its inclusion probability recorded")
    return drawn


def cmd_annotate(args: argparse.Namespace) -> int:
    import json
    from urllib.parse import urlsplit

    from judgecal.annotation import tasks as lstasks
    from judgecal.annotation.server import ManagedServer, connection_for

    if args.action == "server":
        srv = ManagedServer(args.workspace or ".", args.port, getattr(args, "host", None),
                            getattr(args, "public_url", None))
        if args.op == "start":
            conn = srv.start()
            public = srv.public_url
            print(f"Label Studio is up at {term(public)} for annotators" +
                  (f" (judgecal talks to it at {conn.url})" if conn.url != public else "") +
                  f"; admin login in {srv.cred_path}")
            if public.startswith("http://") and urlsplit(public).hostname not in ("127.0.0.1", "localhost"):
                print("note: plain http: logins and labels cross the network unencrypted; put a reverse proxy with "
                      "TLS in front (docs/how-to/blind-review.md)", file=sys.stderr)
        elif args.op == "stop":
            print("stopped" if srv.stop() else "not running")
        else:
            print(json.dumps(srv.status()))
        return 0
    with open_workspace(args, create=False) as ws:
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
            drawn = None
            if args.strategy == "active":
                drawn = _active_draw(ws, args, project)
                items = drawn.index[drawn["drawn"]].tolist()
            else:
                items = select(ws, args.strategy, args.budget, source=args.source, seed=args.seed,
                               judge=args.judge, kind=args.kind)
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

            copies = ws.labelstudio_repo.ls_copies_frame()
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
                      "other than the project's annotator)"
                      + (f", {pulled.duplicates} of them the same label again (kept once)" if pulled.duplicates
                         else "")
                      + (f", {pulled.conflicts} item(s) labelled twice by one person with different labels (none "
                         "counted)" if pulled.conflicts else "")
                      + (f", {pulled.deleted} deleted in Label Studio since the last pull (withdrawn)"
                         if pulled.deleted else ""))
                for p in pulled.flagged:
                    print(f"  not counted: {term(p)}", file=sys.stderr)
                for p in pulled.problems:
                    print(f"  skipped: {term(p)}", file=sys.stderr)
                for p in pulled.withdrawn:
                    print(f"  withdrawn: {term(p)}", file=sys.stderr)
        elif args.action == "annotators":
            from judgecal.annotation.annotators import create_annotators, list_annotators

            if args.add:
                if external:
                    raise UsageError("annotator accounts are made on the managed server only; on "
                                     f"{conn.url} create them in Label Studio")
                create_annotators(ManagedServer(args.workspace, args.port), args.add)
            # the address annotators open now (the server's public URL), whatever it was when they were added
            public = conn.url if external else ManagedServer(args.workspace, args.port).public_url
            logins = [{**a, "url": public} for a in list_annotators(args.workspace)]
            if args.json:
                print_json([{k: a[k] for k in ("email", "password", "url")} for a in logins])
                return 0
            for a in logins:
                print(f"{term(a['email'])}\t{term(a['password'])}\t{term(a['url'])}")
    return 0


def _host(text: str) -> str:
    """The address the server binds (argparse ``type``)."""
    from judgecal.annotation.server import host_problem

    if why := host_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text


def _public_url(text: str) -> str:
    """The address annotators open (argparse ``type``)."""
    from judgecal.annotation.server import public_url_problem

    if why := public_url_problem(text):
        raise argparse.ArgumentTypeError(why)
    return text.rstrip("/")


def add_server_options(sp: argparse.ArgumentParser) -> None:
    """``annotate server``'s ``--host`` and ``--public-url``."""
    sp.add_argument("--host", type=_host, help="start: the address to listen on (default 127.0.0.1; 0.0.0.0 for "
                    "every address, with --public-url)")
    sp.add_argument("--public-url", type=_public_url, help="start: the address annotators open, e.g. "
                    "https://review.example.org behind a reverse proxy (default http://HOST:PORT); their links use it")


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
    from judgecal.annotation.tasks import gold_labels, skipped

    with open_workspace(args, create=False) as ws:
        # agreement describes one group of people: never computed over a mix of sources
        rep = annotators_report(ws.annotations_repo.annotations_frame(), gold_labels(ws), args.n_boot, args.source)
        per = by_source(rep)
        skips = {src: skipped(ws, src) for src in per}
        out = Path(args.out) if args.out else ws.reports_dir / "annotators.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(rep, indent=2))
    if args.json:
        print_json(rep)
        print(f"wrote {out}", file=sys.stderr)
        return 0
    from judgecal.catalogue import fmt_metric

    for src, r in per.items():
        if len(per) > 1:
            print(f"source {term(src)}:")
        for name, a in r["annotators"].items():
            flags = [f for f in ("likely_spammer", "systematic_bias") if a.get(f)]
            skip = skips[src].get(name)
            print(f"{term(name):40s} n={a['n_labels']:5d} leave-one-out accuracy {fmt_metric(a.get('loo_accuracy'))} "
                  + (f"skipped {skip} " if skip else "") + " ".join(flags))
        fk = r["fleiss_kappa"]
        print((f"Fleiss' kappa {fmt_metric(fk)}" if fk["n"] else
               "Fleiss' kappa not computable: no item was labelled by two annotators")
              + (f" (source {term(src)})" if src is not None else ""))
    print(f"wrote {out}")
    return 0


def add_parser(sub: Any) -> None:
    """Register ``aggregate``, ``annotate``, ``annotators`` on ``judgecal``'s subparsers."""
    p = sub.add_parser("aggregate", help="aggregate human labels into a consensus")
    p.add_argument("--method", type=as_methods, default="ds,mv", help="comma list of ds, mv, onecoin, glad")
    p.add_argument("--source", help="whose labels: a source name (e.g. pandalm, 'label-studio:Blind review'), "
                   "experts (every label-studio source), dataset, gold, or all (pooled); stored as METHOD:SOURCE. "
                   "Default: one source -> METHOD; several -> each aggregated on its own")
    p.add_argument("--with-judges", help="also aggregate with these judges as extra annotators, stored apart "
                   "as <method>+judges")
    workspace_arg(p)
    p.set_defaults(func=cmd_aggregate)

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
    sp.add_argument("--tau", type=as_share, default=0.5, help="with --strategy active: the share of the budget drawn "
                    "by uncertainty, the rest uniform (default 0.5)")
    sp.add_argument("--budget", type=upto(MAX_ITEMS, "items"), default=100, help="how many items")
    sp.add_argument("--overlap", type=upto(100, "annotators per item"), default=3, help="annotators per item")
    sp.add_argument("--gold", type=as_natural, default=0, help="mix in this many gold items with known labels")
    sp.add_argument("--gold-from", help="where gold answers come from: an annotator, a label source (items "
                    "its labels agree on) or consensus:METHOD (a stored consensus); drawn at random with --seed")
    sp.add_argument("--source", help="only items from this source")
    sp.add_argument("--seed", type=as_seed, default=0, help="seeds the sample, the gold draw and each annotator's order")
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
        sp.add_argument("--port", type=as_port, default=8480)
        workspace_arg(sp)
    p.set_defaults(func=cmd_annotate)

    p = sub.add_parser("annotators", help="annotator quality and inter-annotator agreement")
    p.add_argument("--source", help="only these labels: a source name (e.g. 'label-studio:Blind review'), experts, "
                   "dataset, gold or all (default: each source on its own)")
    p.add_argument("--n-boot", type=as_n_boot, default=2000)
    p.add_argument("--out", help="file for the JSON report (default: <workspace>/reports/annotators.json)")
    p.add_argument("--json", action="store_true", help="print the report as JSON instead of the table")
    workspace_arg(p)
    p.set_defaults(func=cmd_annotators)
