"""OpenAI-batch JSONL manifests: export the planned calls, import the results.

For ``vllm run-batch`` and provider batch APIs. ``custom_id`` is the call's cache key; the plan is
kept beside the manifest (``<manifest>.plan.jsonl``) so results map back to item, order and seed.
Export skips calls already answered and import skips results already stored, so both resume.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from judgecal.judges.base import Request, Response
from judgecal.judges.engine import Call, Engine


def export_manifest(engine: Engine, calls: list[Call], path: str | Path) -> int:
    """Write the calls not yet answered as OpenAI batch requests; returns how many were written."""
    out = Path(path)
    done = engine.ws.cached_keys(c.key for c in calls)
    todo = [c for c in calls if c.key not in done]
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


def _response_from_body(body: dict[str, object]) -> Response:
    choices = body.get("choices") or [{}]
    choice = choices[0] if isinstance(choices, list) and choices else {}
    assert isinstance(choice, dict)
    msg = choice.get("message") or {}
    top = None
    lp = choice.get("logprobs") or {}
    content = lp.get("content") if isinstance(lp, dict) else None
    if content:
        top = [(t["token"], float(t["logprob"])) for t in content[0].get("top_logprobs", [])]
    usage = body.get("usage") or {}
    assert isinstance(usage, dict) and isinstance(msg, dict)
    return Response(str(msg.get("content") or ""), top, usage.get("prompt_tokens"), usage.get("completion_tokens"))


def import_results(engine: Engine, manifest: str | Path, results: str | Path) -> dict[str, int]:
    """Store the batch results of ``manifest``; unknown ids and failed lines are counted, not guessed."""
    plan: dict[str, Call] = {}
    with open(_plan_path(Path(manifest)), encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            d["request"] = Request(())
            plan[d["key"]] = Call(**d)
    counts = {"stored": 0, "already": 0, "unknown": 0, "failed": 0}
    judgments = []
    done = engine.ws.cached_keys(plan)
    with open(results, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            key = row.get("custom_id")
            if key not in plan:
                counts["unknown"] += 1
                continue
            if key in done:
                counts["already"] += 1
                continue
            resp = row.get("response") or {}
            if row.get("error") or resp.get("status_code", 200) != 200:
                counts["failed"] += 1
                judgments.append(engine.to_judgment(plan[key], None, 0.0, json.dumps(row.get("error") or resp)[:500]))
                continue
            judgments.append(engine.to_judgment(plan[key], _response_from_body(resp.get("body") or {}), 0.0))
            counts["stored"] += 1
    engine.ws.add_judgments(judgments, replace=True)
    return counts
