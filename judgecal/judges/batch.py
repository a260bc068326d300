"""OpenAI-batch JSONL manifests: export the planned calls, import the results.

For ``vllm run-batch`` and provider batch APIs. ``custom_id`` is the call's cache key; the plan is
kept beside the manifest (``<manifest>.plan.jsonl``) so results map back to item, order and seed.
Export skips calls already answered and import skips results already stored, so both resume.
A file that cannot be read stops with one line naming the file and line (:class:`BatchFileError`);
a result whose body is not a chat completion is stored as an ``error`` judgment.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from judgecal.errors import UserError
from judgecal.judges.base import Request, Response, redact
from judgecal.judges.engine import Call, Engine

_CALL_FIELDS = {f.name for f in fields(Call)}


class BatchFileError(UserError, RuntimeError):
    """A batch manifest, plan or results file that cannot be read (``file:line: field``); nothing was stored."""


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; anything else is a :class:`BatchFileError`."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; open errors become one line
    except OSError as exc:
        raise BatchFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    with fh:
        for n, raw in enumerate(fh, 1):
            try:
                line = raw.decode("utf-8-sig" if n == 1 else "utf-8")
                if not line.strip():
                    continue
                row = json.loads(line)
            except (UnicodeDecodeError, ValueError, RecursionError) as exc:
                raise BatchFileError(f"{path}:{n}: not a JSON line ({type(exc).__name__}: {str(exc)[:120]})") from None
            if not isinstance(row, dict):
                raise BatchFileError(f"{path}:{n}: expected a JSON object, got {type(row).__name__}")
            yield n, row


def export_manifest(engine: Engine, calls: list[Call], path: str | Path) -> int:
    """Write the calls not yet answered as OpenAI batch requests; returns how many were written."""
    out = Path(path)
    done = engine.ws.judgments_repo.cached_keys(c.key for c in calls)
    todo = [c for c in calls if c.key not in done]
    if not out.parent.is_dir():
        raise BatchFileError(f"{out}: folder {out.parent} does not exist")
    if out.is_dir():
        raise BatchFileError(f"{out}: is a folder, not a file")
    with open(out, "w", encoding="utf-8") as fh, open(_plan_path(out), "w", encoding="utf-8") as plan:
        for c in todo:
            body: dict[str, object] = {"model": engine.backend.model, "messages": c.request.message_dicts(),
                                       "max_tokens": c.request.max_tokens, "temperature": c.request.temperature}
            if c.request.seed is not None:
                body["seed"] = c.request.seed
            if c.request.logprobs:
                body.update(logprobs=True, top_logprobs=c.request.top_logprobs)
            fh.write(json.dumps({"custom_id": c.key, "method": "POST", "url": "/v1/chat/completions",
                                 "body": body}, ensure_ascii=False) + "\n")
            plan.write(json.dumps({**asdict(c), "request": None}) + "\n")
    return len(todo)


def _plan_path(manifest: Path) -> Path:
    return manifest.with_name(manifest.name + ".plan.jsonl")


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise ValueError(what)


def _response_from_body(body: object) -> Response:
    """A chat-completion body as a :class:`Response`; ``ValueError`` when it is not one."""
    _need(isinstance(body, dict), f"the body is {type(body).__name__}, not an object")
    assert isinstance(body, dict)
    choices = body.get("choices")
    _need(isinstance(choices, list) and bool(choices), "no choices")
    assert isinstance(choices, list)
    choice = choices[0]
    msg = choice.get("message") if isinstance(choice, dict) else None
    _need(isinstance(msg, dict) and isinstance(msg.get("content"), str), "no message content")
    assert isinstance(choice, dict) and isinstance(msg, dict)
    top = None
    lp = choice.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else None
    if content:
        try:
            top = [(str(t["token"]), float(t["logprob"])) for t in content[0].get("top_logprobs", [])]
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            raise ValueError("unreadable logprobs") from None
    usage = body.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return Response(msg["content"], top, prompt if isinstance(prompt, int) else None,
                    completion if isinstance(completion, int) else None)


def _load_plan(manifest: Path) -> dict[str, Call]:
    path = _plan_path(manifest)
    plan: dict[str, Call] = {}
    for n, d in _json_lines(path):
        if set(d) != _CALL_FIELDS or not isinstance(d.get("key"), str):
            raise BatchFileError(f"{path}:{n}: not a plan line (fields {', '.join(sorted(_CALL_FIELDS))})")
        d["request"] = Request(())
        plan[d["key"]] = Call(**d)
    return plan


def import_results(engine: Engine, manifest: str | Path, results: str | Path) -> dict[str, int]:
    """Store the batch results of ``manifest``; unknown ids and failed lines are counted, not guessed.

    The whole results file is read before anything is stored: a bad line stores nothing."""
    plan = _load_plan(Path(manifest))
    counts = {"stored": 0, "already": 0, "unknown": 0, "failed": 0}
    judgments = []
    done = engine.ws.judgments_repo.cached_keys(plan)
    secrets = getattr(engine.backend, "secrets", ())
    for n, row in _json_lines(Path(results)):
        key = row.get("custom_id")
        if not isinstance(key, str):
            raise BatchFileError(f"{results}:{n}: custom_id: missing or not a string")
        if key not in plan:
            counts["unknown"] += 1
            continue
        if key in done:
            counts["already"] += 1
            continue
        resp = row.get("response") or {}
        if not isinstance(resp, dict):
            raise BatchFileError(f"{results}:{n}: response: expected an object, got {type(resp).__name__}")
        if row.get("error") or resp.get("status_code", 200) != 200:
            counts["failed"] += 1
            why = redact(json.dumps(row.get("error") or resp, ensure_ascii=False), secrets)[:500]
            judgments.append(engine.to_judgment(plan[key], None, 0.0, why))
            continue
        try:
            reply = _response_from_body(resp.get("body"))
        except ValueError as exc:
            counts["failed"] += 1
            judgments.append(engine.to_judgment(plan[key], None, 0.0, redact(f"malformed reply: {exc}", secrets)))
            continue
        judgments.append(engine.to_judgment(plan[key], reply, 0.0))
        counts["stored"] += 1
    engine.store(judgments)  # with a spans rubric, their spans too
    return counts
